"""A scripted model server: the Anthropic Messages API as far as Claude Code uses it, answering
from a script that the prompt itself carries, so that the real agent programs can be tested with
no model and no network.

The prompt given to the agent holds ``SCRIPT`` followed by a JSON list of steps, each one tool
call the "model" makes, in order, one per turn:

* ``{"run": "git status"}``: the ``Bash`` tool with that command;
* ``{"read": "/abs/path"}``: the ``Read`` tool;
* ``{"fetch": "http://127.0.0.1:PORT/page"}``: the ``WebFetch`` tool;
* ``{"spawn": [steps...], "type": "general-purpose"}``: the ``Agent`` tool (Claude Code's
  sub-agent), whose prompt is ``SCRIPT`` and the inner steps, so sub-agents spawn sub-agents.

A conversation's next step is the number of tool calls its assistant turns already made; when
the steps are done the model answers with the text ``DONE``. A request without tools (a title,
a summary of a fetched page) is answered with a short text. Every request is kept, so a test can
read what came back to the model: each ``tool_result`` with its content and ``is_error``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple

MARK = "SCRIPT "


def script(steps: List[Dict[str, Any]]) -> str:
    """The prompt that makes the model take ``steps``."""
    return MARK + json.dumps(steps)


@dataclass
class ToolResult:
    """A tool call's result as the agent sent it back to the model."""

    tool_use_id: str
    content: str
    is_error: bool


@dataclass
class Server:
    """The running server; ``url`` is what ``ANTHROPIC_BASE_URL`` should be."""

    httpd: ThreadingHTTPServer
    requests: List[Dict[str, Any]] = field(default_factory=list)
    calls: Dict[str, Tuple[str, Dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def results(self) -> Dict[str, ToolResult]:
        """Every tool result the agent sent back, by tool-use id."""
        found: Dict[str, ToolResult] = {}
        with self.lock:
            requests = list(self.requests)
        for request in requests:
            for message in request.get("messages", []):
                content = message.get("content")
                if message.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if block.get("type") == "tool_result":
                        found[block["tool_use_id"]] = ToolResult(
                            block["tool_use_id"], _text(block.get("content")), bool(block.get("is_error"))
                        )
        return found

    def result_of(self, tool: str, key: str, value: str) -> Optional[ToolResult]:
        """The result of the call of ``tool`` whose input's ``key`` was ``value``."""
        with self.lock:
            calls = dict(self.calls)
        for tool_use_id, (name, tool_input) in calls.items():
            if name == tool and tool_input.get(key) == value:
                return self.results().get(tool_use_id)
        return None

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _steps_of(messages: List[Dict[str, Any]]) -> Optional[List[Dict[str, Any]]]:
    """The script of a conversation: its first user text that carries one."""
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        ]
        for text in texts:
            at = text.find(MARK)
            if at >= 0:
                decoder = json.JSONDecoder()
                steps, _ = decoder.raw_decode(text[at + len(MARK):])
                return list(steps)
    return None


def _tool_calls_made(messages: List[Dict[str, Any]]) -> int:
    made = 0
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            made += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return made


def _tool_use(step: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    if "run" in step:
        return "Bash", {"command": step["run"], "description": "a scripted command"}
    if "read" in step:
        return "Read", {"file_path": step["read"]}
    if "fetch" in step:
        return "WebFetch", {"url": step["fetch"], "prompt": "What does the page say?"}
    if "spawn" in step:
        return "Agent", {
            "description": "a scripted sub-agent",
            "prompt": script(step["spawn"]),
            "subagent_type": step.get("type", "general-purpose"),
        }
    raise ValueError(f"a step the model server does not know: {step!r}")


class _Handler(BaseHTTPRequestHandler):
    server_state: Server
    counter = iter(range(1, 1 << 62))
    counter_lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def do_HEAD(self) -> None:  # noqa: N802 - the base's name
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.startswith("/v1/messages/count_tokens"):
            return self._json({"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            self.send_response(404)
            self.end_headers()
            return
        state = self.server_state
        with state.lock:
            state.requests.append(body)
        messages = body.get("messages", [])
        blocks: List[Dict[str, Any]]
        steps = _steps_of(messages) if body.get("tools") else None
        if steps is None:
            blocks, stop = [{"type": "text", "text": "A scripted answer."}], "end_turn"
        else:
            made = _tool_calls_made(messages)
            if made < len(steps):
                name, tool_input = _tool_use(steps[made])
                with self.counter_lock:
                    n = next(self.counter)
                tool_use_id = f"toolu_scripted_{n:06d}"
                with state.lock:
                    state.calls[tool_use_id] = (name, tool_input)
                blocks = [{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}]
                stop = "tool_use"
            else:
                blocks, stop = [{"type": "text", "text": "DONE"}], "end_turn"
        if body.get("stream"):
            self._stream(body, blocks, stop)
        else:
            self._json(_message(body, blocks, stop))

    def _json(self, value: Dict[str, Any]) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: Dict[str, Any], blocks: List[Dict[str, Any]], stop: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        for event in _events(body, blocks, stop):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()


def _message(body: Dict[str, Any], content: List[Dict[str, Any]], stop: str) -> Dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-scripted"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _events(body: Dict[str, Any], blocks: List[Dict[str, Any]], stop: str) -> Iterator[Dict[str, Any]]:
    start = _message(body, [], stop)
    start["stop_reason"] = None
    start["usage"] = {"input_tokens": 10, "output_tokens": 1}
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            yield {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}}
        else:
            empty = dict(block, input={})
            yield {"type": "content_block_start", "index": index, "content_block": empty}
            partial = json.dumps(block["input"])
            yield {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}}
        yield {"type": "content_block_stop", "index": index}
    yield {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}
    yield {"type": "message_stop"}


def start() -> Server:
    """A server on 127.0.0.1, on a port the system picks, answering from its own thread."""
    class Handler(_Handler):
        pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state = Server(httpd)
    Handler.server_state = state
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return state
