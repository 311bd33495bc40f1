"""The ledger in front of the real Claude Code: its hooks (``session-ledger hook claude-code``,
installed as ``--settings`` prints them) answer every tool call, and what comes back to the
model shows whether the call ran. Each test reads both sides: the tool results the scripted
model server received, and what the ledger recorded. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from session_ledger import Ledger

from agent_programs import ClaudeCode, Pages, claude, claude_binary, ledger_binary, model, pages  # noqa: F401 - fixtures
from conftest import ACTOR, Place


def _git_repository(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


def test_a_conductor_with_a_pattern_runs_it_and_is_refused_what_it_does_not_admit(
    place: Place, claude: ClaudeCode
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.add_pattern("conductor", "git status", actor=ACTOR)
    _git_repository(claude.work)
    victim = claude.work / "victim"
    victim.mkdir()
    run = claude.run(
        [{"run": "git status"}, {"run": f"rm -rf {victim}"}],
        ledger=place.target,
        env={"SESSION_LEDGER_SESSION": "conductor"},
    )
    status = claude.model.result_of("Bash", "command", "git status")
    assert status is not None and not status.is_error, status
    assert "On branch" in status.content or "No commits yet" in status.content, status
    removed = claude.model.result_of("Bash", "command", f"rm -rf {victim}")
    assert removed is not None and removed.is_error, removed
    assert victim.is_dir(), "the refused command did not run"
    denied = [d["tool_input"].get("command") for d in run.result.get("permission_denials", [])]
    assert f"rm -rf {victim}" in denied, run.result

    records = ledger.decisions(session="conductor")
    assert [(r.input, r.verdict, r.asked_by) for r in records] == [
        (f"rm -rf {victim}", "ask", "claude-code"),
        ("git status", "approve", "claude-code"),
    ]
    ids = {r.input: r.tool_use_id for r in records}
    assert claude.model.calls[ids["git status"] or ""][1]["command"] == "git status"


def test_a_session_under_trust_reads_runs_ls_and_cat_but_not_touch(place: Place, claude: ClaudeCode) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("reader", actor=ACTOR)
    ledger.grant("reader", "trust_reads", actor=ACTOR)
    (claude.work / "notes.txt").write_text("hello from the notes\n")
    claude.run(
        [{"run": "ls"}, {"run": "cat notes.txt"}, {"run": "touch made-by-the-agent"}],
        ledger=place.target,
        env={"SESSION_LEDGER_SESSION": "reader"},
    )
    listed = claude.model.result_of("Bash", "command", "ls")
    assert listed is not None and not listed.is_error and "notes.txt" in listed.content, listed
    shown = claude.model.result_of("Bash", "command", "cat notes.txt")
    assert shown is not None and "hello from the notes" in shown.content, shown
    touched = claude.model.result_of("Bash", "command", "touch made-by-the-agent")
    assert touched is not None and touched.is_error, touched
    assert not (claude.work / "made-by-the-agent").exists()
    verdicts = {r.input: (r.verdict, r.authority) for r in ledger.decisions(session="reader")}
    assert verdicts == {
        "ls": ("approve", "trust_reads"),
        "cat notes.txt": ("approve", "trust_reads"),
        "touch made-by-the-agent": ("ask", "nothing"),
    }


def test_a_missing_ledger_keeps_the_call_from_running(claude: ClaudeCode, tmp_path: Path) -> None:
    claude.run([{"run": "touch ran-anyway"}], ledger=str(tmp_path / "no-such-ledger.db"))
    touched = claude.model.result_of("Bash", "command", "touch ran-anyway")
    assert touched is not None and touched.is_error, touched
    assert not (claude.work / "ran-anyway").exists()
    assert not (tmp_path / "no-such-ledger.db").exists()


def test_the_root_the_hook_records_ends_with_the_session_and_a_named_one_does_not(
    place: Place, claude: ClaudeCode
) -> None:
    ledger: Ledger = place.open()
    run = claude.run([{"run": "echo one"}], ledger=place.target)
    own = ledger.session(f"cc-{run.session_id}")
    assert own is not None and own.created_by is None and own.ended_at is not None, own
    asked = ledger.decisions(session=f"cc-{run.session_id}")
    assert [(r.input, r.verdict) for r in asked] == [("echo one", "ask")]

    ledger.create_root("worker", actor=ACTOR)
    ledger.grant("worker", "trust", actor=ACTOR)
    claude.run([{"run": "echo two"}], ledger=place.target, env={"SESSION_LEDGER_SESSION": "worker"})
    worker = ledger.session("worker")
    assert worker is not None and worker.ended_at is None, "its lifetime is its creator's"
    ran = claude.model.result_of("Bash", "command", "echo two")
    assert ran is not None and not ran.is_error and "two" in ran.content, ran


def test_a_trusted_conductors_sub_agent_runs_under_the_inherited_posture_until_a_cascade(
    place: Place, claude: ClaudeCode
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    named = {"SESSION_LEDGER_SESSION": "conductor"}
    first = claude.run([{"spawn": [{"run": "touch by-the-first"}]}], ledger=place.target, env=named)
    touched = claude.model.result_of("Bash", "command", "touch by-the-first")
    assert touched is not None and not touched.is_error, touched
    assert (claude.work / "by-the-first").exists()
    children = [c for c in ledger.children("conductor") if c.id.startswith(f"cc-{first.session_id}.")]
    assert len(children) == 1 and children[0].ended_at is not None, children
    [record] = ledger.decisions(session=children[0].id)
    assert (record.input, record.verdict, record.authority) == ("touch by-the-first", "approve", "trust")

    ledger.revoke("conductor", "cascade", actor=ACTOR, unchecked=True)
    claude.run([{"spawn": [{"run": "touch by-the-second"}]}], ledger=place.target, env=named)
    refused = claude.model.result_of("Bash", "command", "touch by-the-second")
    assert refused is not None and refused.is_error, refused
    assert not (claude.work / "by-the-second").exists()


def test_a_sub_agent_of_a_sub_agent_is_a_grandchild_with_the_right_creator(
    place: Place, claude: ClaudeCode
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust_reads", actor=ACTOR)
    run = claude.run(
        [{"spawn": [{"run": "echo outer"}, {"spawn": [{"run": "echo inner"}]}]}],
        ledger=place.target,
        env={"SESSION_LEDGER_SESSION": "conductor"},
    )
    inner = claude.model.result_of("Bash", "command", "echo inner")
    assert inner is not None and not inner.is_error and "inner" in inner.content, inner
    tree = {node.id: node for node in ledger.tree("conductor")}
    prefix = f"cc-{run.session_id}."
    agents = sorted((n for n in tree.values() if n.id.startswith(prefix)), key=lambda n: n.depth)
    assert [n.depth for n in agents] == [1, 2], list(tree)
    assert agents[0].created_by == "conductor"
    assert agents[1].created_by == agents[0].id
    deciders = {r.input: r.session for r in ledger.decisions(subtree="conductor")}
    assert deciders == {"echo outer": agents[0].id, "echo inner": agents[1].id}


def test_a_web_fetch_marks_the_session_untrusted_and_a_sub_agent_spawned_after_it_too(
    place: Place, claude: ClaudeCode, pages: Pages
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    claude.certificate = pages.certificate
    page = f"{pages.url}/page.html"
    run = claude.run(
        [{"run": "echo before"}, {"fetch": page}, {"spawn": [{"run": "echo after"}]}],
        ledger=place.target,
        env={"SESSION_LEDGER_SESSION": "conductor"},
    )
    fetched = claude.model.result_of("WebFetch", "url", page)
    assert fetched is not None and not fetched.is_error, fetched
    assert ledger.state("conductor").untrusted
    [sub_agent] = [c for c in ledger.children("conductor") if c.id.startswith(f"cc-{run.session_id}.")]
    assert ledger.state(sub_agent.id).untrusted, "inherited on its first read"
    raised = [r for r in ledger.audit(session="conductor") if r.kind == "label.raise"]
    assert [(r.actor, r.detail["after"]["untrusted"]) for r in raised] == [("claude-code", True)], raised


def test_with_untrusted_asks_on_a_fetch_makes_the_sessions_next_writes_and_its_sub_agents_ask(
    place: Place, claude: ClaudeCode, pages: Pages
) -> None:
    ledger: Ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    subprocess.run(
        [str(claude.hook), "--db", place.target, "option", "untrusted-asks", "on", "--actor", ACTOR],
        check=True,
        capture_output=True,
    )
    claude.certificate = pages.certificate
    page = f"{pages.url}/page.html"
    claude.run(
        [
            {"run": "touch before-the-fetch"},
            {"fetch": page},
            {"run": "ls"},
            {"run": "touch after-the-fetch"},
            {"spawn": [{"run": "touch by-a-later-sub-agent"}]},
        ],
        ledger=place.target,
        env={"SESSION_LEDGER_SESSION": "conductor"},
    )
    assert (claude.work / "before-the-fetch").exists(), "trust approved it before the fetch"
    listed = claude.model.result_of("Bash", "command", "ls")
    assert listed is not None and not listed.is_error, "what only reads still runs"
    for refused in ["touch after-the-fetch", "touch by-a-later-sub-agent"]:
        result = claude.model.result_of("Bash", "command", refused)
        assert result is not None and result.is_error, (refused, result)
    assert not (claude.work / "after-the-fetch").exists()
    assert not (claude.work / "by-a-later-sub-agent").exists()
    asked = [r for r in ledger.decisions(subtree="conductor") if r.verdict == "ask"]
    assert sorted(r.input for r in asked) == ["touch after-the-fetch", "touch by-a-later-sub-agent"]
    assert all(r.reason.get("untrusted") is True for r in asked), [r.reason for r in asked]


def test_a_locked_ledger_keeps_the_call_from_running(sqlite_place: Place, claude: ClaudeCode) -> None:
    ledger: Ledger = sqlite_place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    holder = sqlite3.connect(sqlite_place.target, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        claude.run(
            [{"run": "touch while-locked"}],
            ledger=sqlite_place.target,
            env={"SESSION_LEDGER_SESSION": "conductor"},
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    touched = claude.model.result_of("Bash", "command", "touch while-locked")
    assert touched is not None and touched.is_error, touched
    assert not (claude.work / "while-locked").exists()
    assert ledger.decisions(session="conductor") == [], "nothing half-written"
