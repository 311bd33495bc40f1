"""Decision records through Python (rules D1, D2): a decision asked to be recorded is on the
record when its answer comes back, listed with its authority and its whole reason, filtered and
paged; integration gives queued records their positions, which the feed follows; a batching
recorder appends what it holds on flush and when its block ends, and says which records it
could not append. On each engine."""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List

import pytest

import session_ledger
from session_ledger import (
    Decision,
    DecisionRecord,
    DecisionRecorder,
    DecisionsUnknown,
    Integrated,
    InvalidInput,
    Ledger,
    LedgerError,
    StorageError,
)

from conftest import ACTOR, Place, sqlite_shell

ASKER = "claude-code"
RECORD_ID = re.compile(r"[0-9a-f]{32}\Z")


def trusted_worker(ledger: Ledger) -> None:
    """A conductor the operator trusts, and a worker born with its trust."""
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    ledger.create_child("worker", creator="conductor", actor=ACTOR)


def test_a_recorded_decision_is_listed_with_its_authority_and_the_reason_s_chain_to_the_grant(ledger: Ledger) -> None:
    trusted_worker(ledger)
    decision = ledger.decide("worker", "make deploy", record=True, asked_by=ASKER, tool_use_id="toolu_01")
    assert isinstance(decision, Decision)
    assert (decision.approved, decision.admitted_by, decision.chain) == (True, "trust", ["conductor", "worker"])
    assert decision.record is not None and RECORD_ID.match(decision.record)

    [listed] = ledger.decisions(session="worker")
    assert isinstance(listed, DecisionRecord)
    assert listed.record == decision.record
    assert (listed.session, listed.tree, listed.tool, listed.input) == ("worker", "conductor", None, "make deploy")
    assert (listed.input_bytes, listed.input_sha256) == (11, None)
    assert (listed.verdict, listed.authority) == ("approve", "trust")
    assert (listed.asked_by, listed.tool_use_id) == (ASKER, "toolu_01")
    assert type(listed.reason) is dict
    assert listed.reason["kind"] == "trust"
    assert listed.reason["posture"]["chain"] == ["conductor", "worker"]
    assert listed.reason["posture"]["granted_by"] == ACTOR
    assert (listed.seq, listed.batch) == (None, None), "queued until integrated"
    assert type(listed.at) is datetime and listed.at.tzinfo == timezone.utc
    assert int(decision.record[:12], 16) == round(listed.at.timestamp() * 1000)
    assert ledger.decision(decision.record) == listed
    assert ledger.explain("worker").decisions == [listed]
    assert repr(listed).startswith(f"DecisionRecord(record={decision.record!r}, at=datetime.datetime(")

    # A decision not asked to be recorded is the answer it always was, and writes nothing.
    plain = ledger.decide("worker", "make deploy")
    assert plain.record is None
    assert plain == ledger.decide("worker", "make deploy")
    assert ledger.decisions() == [listed]
    assert ledger.decision("0" * 32) is None


def test_a_tool_call_is_recorded_with_its_tool_and_its_path_as_the_input(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("reviewer", actor=ACTOR)
    ledger.add_pattern("reviewer", "Read(src/**)", actor=ACTOR)
    root = place.folder / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("")
    read = ledger.decide_tool(
        "reviewer", "Read", path=str(root / "src" / "lib.rs"), root=str(root), record=True, asked_by=ASKER
    )
    fetch = ledger.decide_tool("reviewer", "WebFetch", url="https://evil.example/x", record=True, asked_by=ASKER)
    assert (read.approved, read.reason, fetch.approved) == (True, "tool_rule", False)
    newest, oldest = ledger.decisions(session="reviewer")
    assert (oldest.record, oldest.tool, oldest.authority, oldest.verdict) == (read.record, "Read", "tool_rule", "approve")
    assert oldest.input == str(root / "src" / "lib.rs")
    assert oldest.reason == {"kind": "tool_rule", "rule": "Read(src/**)", "added_by": ACTOR}
    assert (newest.record, newest.tool, newest.input) == (fetch.record, "WebFetch", "https://evil.example/x")
    assert (newest.verdict, newest.authority) == ("ask", "nothing")


def test_record_without_asked_by_is_refused_and_nothing_is_decided_or_recorded(place: Place) -> None:
    ledger = place.open()
    trusted_worker(ledger)
    head = ledger.audit_head()
    cases: List[tuple[str, Callable[[], Any]]] = [
        ("missing_asked_by", lambda: ledger.decide("worker", "ls", record=True)),
        ("missing_asked_by", lambda: ledger.decide("worker", "ls", record=True, tool_use_id="toolu_01")),
        ("missing_asked_by", lambda: ledger.decide_tool("worker", "Read", path="x", record=True)),
        ("missing_record", lambda: ledger.decide("worker", "ls", asked_by=ASKER)),
        ("missing_record", lambda: ledger.decide("worker", "ls", tool_use_id="toolu_01")),
        ("missing_record", lambda: ledger.decide_tool("worker", "Read", path="x", asked_by=ASKER)),
        ("invalid_actor", lambda: ledger.decide("worker", "ls", record=True, asked_by="")),
        ("invalid_actor", lambda: ledger.decide("worker", "ls", record=True, asked_by="claude code")),
        ("invalid_config", lambda: ledger.decide("worker", "ls", record=True, asked_by=ASKER, tool_use_id="")),
        ("invalid_config", lambda: ledger.decide("worker", "ls", record=True, asked_by=ASKER, tool_use_id="a\nb")),
        ("invalid_classify", lambda: ledger.decide("worker", "ls", read_only=True, classify=True, record=True, asked_by=ASKER)),
        ("empty_command", lambda: ledger.decide("worker", "", record=True, asked_by=ASKER)),
    ]
    for kind, call in cases:
        with pytest.raises(InvalidInput) as refused:
            call()
        assert refused.value.kind == kind, (kind, refused.value)
        assert isinstance(refused.value, ValueError)
    with pytest.raises(TypeError, match="^record must be a bool, not str"):
        ledger.decide("worker", "ls", record="yes", asked_by=ASKER)  # type: ignore[arg-type]
    assert ledger.decisions() == []
    assert ledger.audit_head() == head

    # A read-only handle decides, and refuses to record.
    reader = place.open(read_only=True)
    assert reader.decide("worker", "ls").approved
    with pytest.raises(StorageError) as read_only:
        reader.decide("worker", "ls", record=True, asked_by=ASKER)
    assert read_only.value.kind == "read_only"
    assert ledger.decisions() == []


def recorded_mix(ledger: Ledger) -> List[Decision]:
    """Four recorded decisions, oldest first: worker's trust, reviewer's pattern and ask,
    worker's tool call."""
    trusted_worker(ledger)
    ledger.create_root("reviewer", actor=ACTOR)
    ledger.add_pattern("reviewer", "npm test", actor=ACTOR)
    return [
        ledger.decide("worker", "make deploy", record=True, asked_by=ASKER),
        ledger.decide("reviewer", "npm test", record=True, asked_by="dashboard"),
        ledger.decide("reviewer", "rm -rf /", record=True, asked_by=ASKER),
        ledger.decide_tool("worker", "WebFetch", url="https://docs.rs", record=True, asked_by=ASKER),
    ]


def records(listed: List[DecisionRecord]) -> List[str]:
    return [r.record for r in listed]


def test_decisions_are_listed_newest_first_and_filtered_by_session_subtree_verdict_authority_and_time(
    ledger: Ledger,
) -> None:
    made = [d.record for d in recorded_mix(ledger)]
    newest_first = list(reversed(made))
    assert records(ledger.decisions()) == newest_first
    assert records(ledger.decisions(session="reviewer")) == [made[2], made[1]]
    assert records(ledger.decisions(subtree="conductor")) == [made[3], made[0]]
    assert records(ledger.decisions(session="worker", subtree="conductor")) == [made[3], made[0]]
    assert records(ledger.decisions(verdict="ask")) == [made[2]]
    assert records(ledger.decisions(authority="pattern")) == [made[1]]
    assert records(ledger.decisions(authority="trust", verdict="approve")) == [made[3], made[0]]
    assert records(ledger.decisions(session="reviewer", verdict="approve")) == [made[1]]
    assert records(ledger.decisions(limit=2)) == newest_first[:2]
    tomorrow = datetime.now(timezone.utc) + timedelta(days=1)
    yesterday = tomorrow - timedelta(days=2)
    assert ledger.decisions(since=tomorrow) == []
    assert records(ledger.decisions(since=yesterday, until=tomorrow)) == newest_first
    assert ledger.decisions(until=yesterday) == []
    assert ledger.decisions(session="nobody") == []
    cases: List[tuple[str, Callable[[], Any]]] = [
        ("invalid_config", lambda: ledger.decisions(verdict="maybe")),  # type: ignore[arg-type]
        ("invalid_config", lambda: ledger.decisions(authority="root")),  # type: ignore[arg-type]
        ("invalid_config", lambda: ledger.decisions(limit=0)),
        ("invalid_config", lambda: ledger.decisions(limit=10_001)),
        ("invalid_limit", lambda: ledger.decisions(limit=-1)),
        ("invalid_id", lambda: ledger.decisions(session="a b")),
        ("invalid_config", lambda: ledger.decision("ABC")),
    ]
    for kind, call in cases:
        with pytest.raises(InvalidInput) as refused:
            call()
        assert refused.value.kind == kind, (kind, refused.value)
    with pytest.raises(TypeError, match="^since must be a timezone-aware datetime"):
        ledger.decisions(since=datetime(2026, 1, 1))


def test_decisions_page_by_the_id_of_the_last_record_of_a_page(ledger: Ledger) -> None:
    trusted_worker(ledger)
    made = [ledger.decide("worker", f"echo {n}", record=True, asked_by=ASKER).record for n in range(23)]
    pages: List[List[DecisionRecord]] = []
    before = None
    while True:
        page = ledger.decisions(session="worker", limit=10, before=before)
        if not page:
            break
        pages.append(page)
        before = page[-1].id
    assert [len(p) for p in pages] == [10, 10, 3]
    assert [r.record for p in pages for r in p] == list(reversed(made))
    assert [r.input for r in pages[2]] == ["echo 2", "echo 1", "echo 0"]


def test_integration_gives_queued_records_dense_positions_that_the_feed_resumes_from(place: Place) -> None:
    ledger = place.open()
    made = [d.record for d in recorded_mix(ledger)]
    assert [r.seq for r in ledger.decisions()] == [None] * 4
    assert ledger.decisions_after(0) == []

    done = ledger.integrate_decisions(actor=ACTOR)
    assert isinstance(done, Integrated)
    assert (done.records, done.batches, done.log_size, done.queued) == (4, 1, 4, 0)
    [row] = ledger.audit(kind="decisions.integrate")
    assert (row.actor, row.detail["count"], row.detail["first"]) == (ACTOR, 4, 1)
    assert re.fullmatch(r"[0-9a-f]{64}", row.detail["root"])
    listed = ledger.decisions()
    assert [(r.record, r.seq, r.batch) for r in listed] == [
        (made[3], 4, row.seq), (made[2], 3, row.seq), (made[1], 2, row.seq), (made[0], 1, row.seq),
    ]

    # The feed: by position, oldest first, resumed from the last position kept.
    first = ledger.decisions_after(0, limit=3)
    assert [(r.seq, r.record) for r in first] == [(1, made[0]), (2, made[1]), (3, made[2])]
    assert [r.record for r in ledger.decisions_after(3)] == [made[3]]
    assert ledger.decisions_after(4) == []
    later = ledger.decide("worker", "cargo test", record=True, asked_by=ASKER).record
    assert ledger.decisions_after(4) == [], "in the feed once integrated"
    again = ledger.integrate_decisions(actor=ACTOR)
    assert (again.records, again.batches, again.log_size, again.queued) == (1, 1, 5, 0)
    assert [(r.seq, r.record) for r in ledger.decisions_after(4)] == [(5, later)]
    nothing = ledger.integrate_decisions(actor=ACTOR)
    assert (nothing.records, nothing.batches, nothing.log_size) == (0, 0, 5)
    assert len(ledger.audit(kind="decisions.integrate")) == 2

    # A checkpoint integrates first: it covers every record committed before it.
    last = ledger.decide("worker", "cargo build", record=True, asked_by=ASKER).record
    assert last is not None
    ledger.checkpoint(session_ledger.generate_key("example.com/ledger"), actor=ACTOR)
    found = ledger.decision(last)
    assert found is not None and found.seq == 6

    refusals: List[tuple[str, Callable[[], Any]]] = [
        ("invalid_position", lambda: ledger.decisions_after(-1)),
        ("invalid_config", lambda: ledger.decisions_after(0, limit=0)),
        ("invalid_actor", lambda: ledger.integrate_decisions(actor="")),
    ]
    for kind, call in refusals:
        with pytest.raises(InvalidInput) as refused:
            call()
        assert refused.value.kind == kind, (kind, refused.value)
    # An auditor's read-only handle integrates nothing: with records queued, it refuses.
    ledger.decide("worker", "cargo doc", record=True, asked_by=ASKER)
    with pytest.raises(StorageError) as read_only:
        place.open(read_only=True).integrate_decisions(actor=ACTOR)
    assert read_only.value.kind == "read_only"
    assert ledger.decisions(limit=1)[0].seq is None


def test_a_recorder_appends_what_it_holds_on_flush_and_when_its_block_ends(place: Place) -> None:
    ledger = place.open()
    trusted_worker(ledger)
    made: List[str] = []
    with DecisionRecorder(ledger, window=0.5, max_batch=7) as recorder:
        assert (recorder.window, recorder.max_batch, recorder.closed) == (0.5, 7, False)
        for n in range(20):
            decision = recorder.decide("worker", f"echo {n}", asked_by=ASKER, tool_use_id=f"toolu_{n}")
            assert decision.approved and decision.record is not None
            made.append(decision.record)
        tool = recorder.decide_tool("worker", "WebFetch", url="https://docs.rs", asked_by=ASKER)
        assert tool.record is not None
        made.append(tool.record)
        assert recorder.flush() == 21
        assert recorder.held() == 0
        listed = ledger.decisions(session="worker")
        assert [r.record for r in reversed(listed)] == made, "every record, in the order decided"
        assert listed[0].tool == "WebFetch" and listed[1].tool_use_id == "toolu_19"
        for n in range(20, 25):
            made.append(recorder.decide("worker", f"echo {n}", asked_by=ASKER).record or "")
    assert recorder.closed and recorder.held() == 0
    assert [r.record for r in reversed(ledger.decisions(session="worker"))] == made
    with pytest.raises(LedgerError) as closed:
        recorder.decide("worker", "ls", asked_by=ASKER)
    assert closed.value.kind == "closed"
    recorder.close()  # twice does nothing
    assert repr(recorder).startswith(f"DecisionRecorder(Ledger({ledger.location!r}), window=0.5, max_batch=7")


def test_a_recorder_shared_by_threads_records_every_decision(place: Place) -> None:
    ledger = place.open()
    trusted_worker(ledger)
    with DecisionRecorder(ledger) as recorder:
        errors: List[BaseException] = []

        def decide(n: int) -> None:
            try:
                for i in range(25):
                    recorder.decide("worker", f"echo {n}.{i}", asked_by=ASKER)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=decide, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
    assert len(ledger.decisions(limit=1000)) == 100


def test_a_recorder_is_refused_on_a_read_only_ledger_and_with_settings_out_of_range(place: Place) -> None:
    ledger = place.open()
    with pytest.raises(StorageError) as read_only:
        DecisionRecorder(place.open(read_only=True))
    assert read_only.value.kind == "read_only"
    settings: List[Dict[str, Any]] = [
        {"window": 0}, {"window": -1.0}, {"window": 11}, {"window": float("nan")}, {"max_batch": 0}, {"max_batch": -5},
    ]
    for options in settings:
        with pytest.raises(InvalidInput) as refused:
            DecisionRecorder(ledger, **options)
        assert refused.value.kind == "invalid_config", options
    loose: Any = DecisionRecorder
    wrong_types: List[tuple[str, Callable[[], Any]]] = [
        ("ledger", lambda: loose(place.target)),
        ("window", lambda: loose(ledger, window=True)),
        ("window", lambda: loose(ledger, window="1")),
        ("max_batch", lambda: loose(ledger, max_batch=2.0)),
    ]
    for argument, call in wrong_types:
        with pytest.raises(TypeError) as wrong:
            call()
        assert str(wrong.value).startswith(f"{argument} must be "), wrong.value


def test_a_recorder_refuses_to_decide_once_its_ledger_is_closed(place: Place) -> None:
    ledger = place.open()
    trusted_worker(ledger)
    recorder = DecisionRecorder(ledger)
    kept = recorder.decide("worker", "ls", asked_by=ASKER).record
    ledger.close()
    with pytest.raises(LedgerError) as closed:
        recorder.decide("worker", "ls", asked_by=ASKER)
    assert closed.value.kind == "closed"
    recorder.close()  # appends what it held
    assert kept is not None
    assert place.open().decision(kept) is not None


def refuse_records_by_hand(place: Place) -> Callable[[], None]:
    """Makes the database refuse every new decision record, as a hand edit; returns what
    undoes it."""
    if place.engine == "sqlite":
        sqlite_shell(
            place.target,
            "CREATE TRIGGER refused_by_hand BEFORE INSERT ON decisions "
            "BEGIN SELECT RAISE(ABORT, 'refused by hand'); END;",
        )
        return lambda: sqlite_shell(place.target, "DROP TRIGGER refused_by_hand;")
    from conftest import _sql

    _sql(
        place.target,
        "CREATE FUNCTION refused_by_hand() RETURNS trigger LANGUAGE plpgsql AS "
        "$$BEGIN RAISE EXCEPTION 'refused by hand'; END$$; "
        "CREATE TRIGGER refused_by_hand BEFORE INSERT ON decisions "
        "FOR EACH ROW EXECUTE FUNCTION refused_by_hand()",
    )
    return lambda: _sql(place.target, "DROP TRIGGER refused_by_hand ON decisions; DROP FUNCTION refused_by_hand()")


def test_a_recorder_whose_append_fails_names_the_records_it_holds_and_appends_them_once_it_can(place: Place) -> None:
    ledger = place.open()
    trusted_worker(ledger)
    undo = refuse_records_by_hand(place)
    recorder = DecisionRecorder(ledger, window=0.01)
    held = [recorder.decide("worker", f"echo {n}", asked_by=ASKER).record for n in range(3)]
    with pytest.raises(DecisionsUnknown) as unknown:
        recorder.flush()
    assert isinstance(unknown.value, StorageError) and unknown.value.kind == "decisions_unknown"
    assert unknown.value.records == held
    assert "refused by hand" in str(unknown.value)
    # Meanwhile nothing is decided: no answer comes without its record being safe.
    with pytest.raises(DecisionsUnknown):
        recorder.decide("worker", "ls", asked_by=ASKER)
    # Closing cannot append them either: it says so, and keeps them.
    with pytest.raises(DecisionsUnknown):
        recorder.close()
    assert not recorder.closed and recorder.held() == 3
    assert ledger.decisions() == []

    undo()
    for _ in range(2000):  # the recorder tries again after each window; a flush in between still fails
        try:
            assert recorder.flush() == 3
            break
        except DecisionsUnknown:
            threading.Event().wait(0.01)
    else:
        pytest.fail("the recorder never appended its records once it could")
    recorder.close()
    assert [r.record for r in reversed(ledger.decisions())] == held
