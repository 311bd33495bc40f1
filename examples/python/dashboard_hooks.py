"""The dashboard's four touch points on the ledger, as the backend calls them.

1. Boot: ``on_boot`` starts a new posture epoch, so trust given before a restart stops counting.
2. Session control: ``create_session`` records a session with its creator; the worker of a
   trusted conductor is born trusted, and the call says so.
3. The approval path: ``approve_tool_call`` is the per-slot "is this slot trusted?" check, made
   on every tool approval.
4. The trust toggle: ``trust_on`` grants; ``trust_off`` previews the revocation, shows the
   operator how many sessions it reaches, and applies the cascade with the preview's token, so
   that what is revoked is exactly what was shown.

Run it as ``python examples/python/dashboard_hooks.py [PATH_OR_URL]``: a SQLite file (a new one
in a temporary folder by default) or a ``postgres://`` URL. It prints what the dashboard would
show at each step.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable

import session_ledger
from session_ledger import Ledger, Revocation

OPERATOR = "operator:alice"
BACKEND = "dashboard"


def on_boot(ledger: Ledger) -> None:
    """Touch point 1: the backend boots. Postures of the previous run stop counting, as the
    in-memory trust of the old dashboard did (unless the ledger keeps them durable)."""
    epoch = ledger.start_epoch(actor=BACKEND)
    print(f"boot: posture epoch {epoch.epoch} started ({epoch.lapsed} postures lapsed, {epoch.carried} carried)")


def create_session(ledger: Ledger, session_id: str, creator: str | None) -> None:
    """Touch point 2: a new session, opened by the operator or dispatched by another session."""
    if creator is None:
        created = ledger.create_root(session_id, actor=OPERATOR)
    else:
        created = ledger.create_child(session_id, creator=creator, actor=BACKEND)
    if created.inherited_trust:
        born = "trust"
    elif created.inherited_trust_reads:
        born = "trust_reads"
    else:
        born = "nothing (it asks)"
    by = f"by {created.created_by}" if created.created_by else "by the operator"
    print(f"create {created.id} {by}, depth {created.depth}: born with {born}")


def approve_tool_call(ledger: Ledger, session_id: str, command: str, read_only: bool = False) -> bool:
    """Touch point 3: may this session's tool call run without asking the operator?"""
    decision = ledger.decide(session_id, command, read_only=read_only)
    if decision.approved:
        via = " -> ".join(decision.chain) if decision.chain else decision.pattern or decision.scope
        print(f"approve {session_id}: {command!r} runs, admitted by {decision.admitted_by} ({via})")
    else:
        print(f"approve {session_id}: {command!r} asks the operator ({decision.reason})")
    return decision.approved


def trust_on(ledger: Ledger, session_id: str) -> None:
    """Touch point 4, on: the operator trusts a session; what it dispatches from now on is
    born trusted."""
    posture = ledger.grant(session_id, "trust", actor=OPERATOR)
    print(f"trust on {session_id}: {posture.level} granted by {posture.granted_by}")


def trust_off(ledger: Ledger, session_id: str, confirm: Callable[[Revocation], bool]) -> bool:
    """Touch point 4, off: preview, show the count, and cascade with the preview's token. If
    the tree moved between the two, the ledger refuses and the operator is shown the new
    preview."""
    while True:
        preview = ledger.revoke(session_id, "preview", actor=OPERATOR)
        print(f"trust off {session_id}: {preview.count} sessions would lose their posture: {', '.join(preview.sessions)}")
        if not confirm(preview):
            print(f"trust off {session_id}: cancelled")
            return False
        try:
            done = ledger.revoke(session_id, "cascade", actor=OPERATOR, token=preview.token)
        except session_ledger.StalePreview as stale:
            print(f"trust off {session_id}: {stale}")
            continue
        print(f"trust off {session_id}: revoked from {done.count} sessions")
        return True


def main(path_or_url: str) -> None:
    with Ledger(path_or_url, create=True) as ledger:
        on_boot(ledger)
        create_session(ledger, "conductor", creator=None)
        trust_on(ledger, "conductor")
        create_session(ledger, "worker-1", creator="conductor")
        create_session(ledger, "worker-1.review", creator="worker-1")
        approve_tool_call(ledger, "worker-1.review", "make deploy")
        # A sub-agent the worker spawned: the ledger never saw it made, and it is trusted too.
        approve_tool_call(ledger, "sub-worker-1-1", "cargo test")

        # The operator turns trust off; the dashboard shows the count and asks for a yes.
        trust_off(ledger, "conductor", confirm=lambda preview: preview.count > 0)
        approve_tool_call(ledger, "worker-1.review", "make deploy")
        create_session(ledger, "worker-2", creator="conductor")

        # A read-only posture never widens: the reviewer's worker runs reads only.
        create_session(ledger, "reviewer", creator=None)
        ledger.grant("reviewer", "trust_reads", actor=OPERATOR)
        create_session(ledger, "reviewer.1", creator="reviewer")
        approve_tool_call(ledger, "reviewer.1", "git log", read_only=True)
        approve_tool_call(ledger, "reviewer.1", "git push")

        # The backend restarts: trust given in the previous run no longer counts.
        on_boot(ledger)
        approve_tool_call(ledger, "reviewer.1", "git log", read_only=True)
        print(f"audit: {len(ledger.audit())} rows, chain verifies: {ledger.verify().ok}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(str(Path(folder) / "ledger.db"))
