"""The ledger in front of the real ACP agent for Claude Code (``@zed-industries/claude-agent-acp``),
driven through the protocol's Python SDK by a client whose ``request_permission`` asks
``session_ledger.acp.answer_permission``, against the scripted model server. Whether a command
ran is read on both sides: what came back to the model, and what is on disk and in the ledger.
On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Dict, List, cast

import model_server
from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from agent_programs import acp_agent, model  # noqa: F401 - fixtures
from conftest import ACTOR, Place
from session_ledger import Ledger
from session_ledger.acp import answer_permission, session_id_for


class LedgerClient:
    """An ACP client that answers every permission request from the ledger, unattended: what
    the ledger does not approve is rejected, once."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.session = ""
        self.chosen: List[str] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: List[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        answer = await asyncio.to_thread(
            answer_permission, self.ledger, self.session, tool_call, options, unattended=True
        )
        kinds = {o.option_id: o.kind for o in options}
        if answer.option_id is None:
            self.chosen.append("cancelled")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        self.chosen.append(kinds[answer.option_id])
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        pass


def _run(agent: Path, server: model_server.Server, client: LedgerClient, creator: str, work: Path,
         steps: List[Dict[str, Any]]) -> str:
    """Runs one ACP session of the agent in ``work``, recorded in the ledger as a child of
    ``creator``, prompting it with ``steps``; returns its ledger session."""

    async def session() -> str:
        # Beside ``work``, in pytest's own temporary folder: the agent's Claude Code may still
        # write its state there as it exits.
        home = str(work.parent / "home")
        os.makedirs(home, 0o700, exist_ok=True)
        # With IS_SANDBOX set and running as root the agent asks its Claude Code to skip
        # permissions, which Claude Code refuses as root: the agent gets no session.
        environment = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Its Claude Code's temporary files go under that home, not /tmp.
            "CLAUDE_CODE_TMPDIR": home,
            "TMPDIR": home,
        }
        # The client answers what this agent asks of it (permissions, updates), not files or
        # terminals, which it does not offer in its capabilities.
        as_client = cast(Client, client)
        async with spawn_agent_process(as_client, "node", str(agent), env=environment, cwd=str(work)) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            created = await conn.new_session(cwd=str(work))
            # The dashboard records the ACP session as a child of the session that dispatched it.
            client.session = session_id_for(created.session_id)
            client.ledger.create_child(client.session, creator=creator, actor=ACTOR)
            await asyncio.wait_for(
                conn.prompt(session_id=created.session_id, prompt=[text_block(model_server.script(steps))]),
                timeout=180,
            )
            return client.session

    return asyncio.run(session())


def test_an_acp_session_dispatched_by_a_trusted_conductor_runs_under_the_inherited_posture(
    place: Place, acp_agent: Path, model: model_server.Server, tmp_path: Path
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    work = tmp_path / "work"
    work.mkdir()
    client = LedgerClient(ledger)
    session = _run(acp_agent, model, client, "conductor", work, [{"run": "touch made-by-the-agent"}])
    touched = model.result_of("Bash", "command", "touch made-by-the-agent")
    assert touched is not None and not touched.is_error, touched
    assert (work / "made-by-the-agent").exists()
    assert client.chosen == ["allow_once"], "never an always option"
    [record] = ledger.decisions(session=session)
    assert (record.input, record.verdict, record.authority, record.asked_by) == (
        "touch made-by-the-agent", "approve", "trust", "acp"
    )
    assert record.tool_use_id == next(iter(model.calls))
    node = ledger.session(session)
    assert node is not None and node.created_by == "conductor"


def test_an_acp_session_is_refused_what_nothing_approves_and_its_creators_pattern_is_not_its(
    place: Place, acp_agent: Path, model: model_server.Server, tmp_path: Path
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    work = tmp_path / "work"
    work.mkdir()
    victim = work / "victim"
    victim.mkdir()
    ledger.add_pattern("conductor", f"rm -rf {victim}", actor=ACTOR)
    client = LedgerClient(ledger)
    session = _run(acp_agent, model, client, "conductor", work, [{"run": f"rm -rf {victim}"}])
    removed = model.result_of("Bash", "command", f"rm -rf {victim}")
    assert removed is not None and removed.is_error, removed
    assert victim.is_dir(), "the refused command did not run"
    assert client.chosen == ["reject_once"]
    [record] = ledger.decisions(session=session)
    assert (record.verdict, record.authority) == ("ask", "nothing")


OPTIONS = [
    {"optionId": "allow_always", "name": "Always", "kind": "allow_always"},
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def test_what_nothing_approves_is_left_to_a_person_unless_unattended_and_never_always(place: Place) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("worker", actor=ACTOR)
    call = {"toolCallId": "t1", "kind": "execute", "rawInput": {"command": "touch x"}}
    attended = answer_permission(ledger, "worker", call, OPTIONS)
    assert (attended.option_id, attended.allowed) == (None, False)
    unattended = answer_permission(ledger, "worker", call, OPTIONS, unattended=True)
    assert unattended.option_id == "reject"
    ledger.grant("worker", "trust", actor=ACTOR)
    allowed = answer_permission(ledger, "worker", call, OPTIONS)
    assert (allowed.option_id, allowed.allowed) == ("allow", True)
    assert allowed.record is not None and ledger.decision(allowed.record) is not None
    # Kinds the ledger has no rule for get no opinion, and no record.
    thought = answer_permission(ledger, "worker", {"toolCallId": "t2", "kind": "think"}, OPTIONS)
    assert (thought.option_id, thought.record) == (None, None)
    # A call to execute without a command is not approved, even under trust.
    empty = answer_permission(ledger, "worker", {"kind": "execute", "rawInput": {}}, OPTIONS, unattended=True)
    assert (empty.option_id, empty.allowed) == ("reject", False)
    ledger.end("worker", actor=ACTOR)
    ended = answer_permission(ledger, "worker", call, OPTIONS)
    assert ended.option_id == "reject", "an ended session's call is rejected, attended or not"


def test_read_and_edit_calls_are_decided_as_the_tools_of_their_kind(place: Place, tmp_path: Path) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("reader", actor=ACTOR)
    ledger.grant("reader", "trust_reads", actor=ACTOR)
    target = str(tmp_path / "notes.txt")
    read = {"toolCallId": "r", "kind": "read", "rawInput": {"file_path": target}}
    edit = {"toolCallId": "e", "kind": "edit", "locations": [{"path": target}]}
    fetch = {"toolCallId": "f", "kind": "fetch", "rawInput": {"url": "https://docs.rs/x"}}
    assert answer_permission(ledger, "reader", read, OPTIONS).allowed
    assert answer_permission(ledger, "reader", fetch, OPTIONS).allowed
    assert not answer_permission(ledger, "reader", edit, OPTIONS).allowed
    tools = {r.tool_use_id: (r.tool, r.input) for r in ledger.decisions(session="reader")}
    assert tools == {"r": ("Read", target), "e": ("Edit", target), "f": ("WebFetch", "https://docs.rs/x")}
