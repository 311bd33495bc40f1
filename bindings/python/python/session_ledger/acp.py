"""The ledger in front of an ACP agent (the Agent Client Protocol): the answer to its
``session/request_permission``, decided and recorded by the ledger (docs/agents.md, "ACP").

An ACP agent asks its client before a tool call, with the call (its ``kind``: ``execute``,
``read``, ``edit``, ``fetch``, ...; its ``rawInput``) and the options the client may choose
(``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``). A client built on the
``agent-client-protocol`` SDK calls :func:`answer_permission` from its ``request_permission``
and answers with the option it names. The ledger never picks an "always" option: that would
take the agent's later calls out of its hands.

This module needs nothing of the SDK: it reads the call and the options as the protocol's JSON
(``dict``) or as the SDK's models, which it turns into that JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from . import Decision, Ledger

#: Who the ledger records as having asked, unless told otherwise.
ACTOR = "acp"

#: What each kind of ACP tool call is decided as: the tool whose rules and class apply.
#: ``execute`` is decided on its command line; the kinds not here (``think``, ``switch_mode``,
#: ``other``) get no opinion from the ledger.
TOOL_OF_KIND = {
    "read": "Read",
    "search": "Grep",
    "edit": "Edit",
    "delete": "Edit",
    "move": "Edit",
    "fetch": "WebFetch",
}


@dataclass(frozen=True)
class PermissionAnswer:
    """What to answer an agent's permission request with.

    ``option_id`` is the option to select: the ``allow_once`` option when the ledger approves,
    the ``reject_once`` option when the call must not run (the session has ended, or nobody is
    there to ask: ``unattended``); ``None`` when a person must decide (nothing in the ledger
    approves, or the ledger has no opinion on this kind of call), which the client then asks
    as it would without the ledger. ``record`` is the decision record's id, when one was made.
    """

    option_id: Optional[str]
    allowed: bool
    reason: str
    record: Optional[str] = None


def session_id_for(acp_session_id: str) -> str:
    """The ledger id for an ACP session (``acp-<sessionId>``): create it with
    ``ledger.create_child(session_id_for(id), creator=..., actor=...)`` when ``session/new``
    answers, with the dispatching session as its creator, so that it is born with that
    session's posture (P1) and never its patterns or scopes."""
    return f"acp-{acp_session_id}"


def _json(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, exclude_none=True)
    return value


def _option(options: Sequence[Any], kind: str) -> Optional[str]:
    for option in options:
        option = _json(option)
        if isinstance(option, Mapping) and option.get("kind") == kind:
            found = option.get("optionId")
            return str(found) if found is not None else None
    return None


def _path(call: Mapping[str, Any], raw: Mapping[str, Any]) -> Optional[str]:
    for key in ("file_path", "path", "notebook_path"):
        value = raw.get(key)
        if isinstance(value, str):
            return value
    locations = call.get("locations") or []
    if locations and isinstance(locations[0], Mapping) and isinstance(locations[0].get("path"), str):
        return str(locations[0]["path"])
    return None


def answer_permission(
    ledger: Ledger,
    session: str,
    tool_call: Any,
    options: Sequence[Any],
    *,
    asked_by: str = ACTOR,
    unattended: bool = False,
    cwd: Optional[str] = None,
) -> PermissionAnswer:
    """Decides the tool call an ACP agent asks permission for, for the ledger session
    ``session``, records the decision with the call's ``toolCallId``, and says which option to
    answer with (:class:`PermissionAnswer`). A call the ledger cannot read (an ``execute``
    without a command) is not approved. Errors of the ledger are raised: a client answers them
    as it answers "a person must decide", never by allowing the call."""
    call = _json(tool_call)
    if not isinstance(call, Mapping):
        raise TypeError("tool_call: the protocol's ToolCallUpdate, as a dict or the SDK's model")
    raw = call.get("rawInput")
    raw = raw if isinstance(raw, Mapping) else {}
    kind = call.get("kind") or "other"
    tool_use_id = call.get("toolCallId")
    tool_use_id = str(tool_use_id) if tool_use_id is not None else None
    decision: Optional[Decision]
    if kind == "execute":
        command = raw.get("command")
        if not isinstance(command, str):
            return _refused(options, "the call to execute names no command", unattended)
        decision = ledger.decide(
            session, command, classify=True, record=True, asked_by=asked_by, tool_use_id=tool_use_id
        )
    elif kind in TOOL_OF_KIND:
        url = raw.get("url")
        decision = ledger.decide_tool(
            session,
            TOOL_OF_KIND[kind],
            path=_path(call, raw),
            url=url if isinstance(url, str) else None,
            root=cwd,
            record=True,
            asked_by=asked_by,
            tool_use_id=tool_use_id,
        )
    else:
        return PermissionAnswer(None, False, f"session-ledger has no opinion on a {kind!r} call")
    reason = f"session-ledger: {decision.reason}"
    if decision.approved:
        return PermissionAnswer(_option(options, "allow_once"), True, reason, decision.record)
    reject = unattended or decision.reason == "session_ended"
    chosen = _option(options, "reject_once") if reject else None
    return PermissionAnswer(chosen, False, reason, decision.record)


def _refused(options: Sequence[Any], why: str, unattended: bool) -> PermissionAnswer:
    chosen = _option(options, "reject_once") if unattended else None
    return PermissionAnswer(chosen, False, f"session-ledger: {why}")
