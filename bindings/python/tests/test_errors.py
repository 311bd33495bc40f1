"""Every exception type, raised where it should be, with the Rust error's message and kind."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, Callable

import pytest

import session_ledger
from session_ledger import (
    Conflict,
    CorruptionError,
    CreationRefused,
    DecisionsUnknown,
    DurabilityUnknown,
    InvalidInput,
    Ledger,
    LedgerError,
    StalePreview,
    StorageError,
    UnknownSession,
)

from conftest import ACTOR, Place, sqlite_shell


def test_the_exceptions_follow_the_rust_error_split() -> None:
    for cls in [InvalidInput, Conflict, CreationRefused, StorageError, CorruptionError]:
        assert issubclass(cls, LedgerError)
    assert issubclass(InvalidInput, ValueError)
    assert issubclass(UnknownSession, Conflict) and issubclass(UnknownSession, KeyError)
    assert issubclass(StalePreview, Conflict)
    assert issubclass(DurabilityUnknown, StorageError) and issubclass(DecisionsUnknown, StorageError)
    assert issubclass(LedgerError, Exception)
    assert UnknownSession.__module__ == "session_ledger"


def test_a_malformed_id_or_actor_raises_invalid_input_which_is_also_a_value_error(ledger: Ledger) -> None:
    with pytest.raises(ValueError) as bad_id:
        ledger.create_root("a b", actor=ACTOR)
    assert isinstance(bad_id.value, InvalidInput)
    assert bad_id.value.kind == "invalid_id"
    assert str(bad_id.value) == 'invalid session id "a b": only ASCII letters, digits and . _ : - are allowed'
    with pytest.raises(InvalidInput) as reserved:
        ledger.create_root("sub-conductor-1", actor=ACTOR)
    assert "reserved for spawned sub-agents" in str(reserved.value)
    with pytest.raises(InvalidInput) as bad_actor:
        ledger.create_root("conductor", actor="")
    assert bad_actor.value.kind == "invalid_actor"
    assert ledger.session("conductor") is None, "nothing was written"


def test_an_unknown_session_raises_unknown_session_which_is_also_a_key_error(ledger: Ledger) -> None:
    calls: list[Callable[[], Any]] = [
        lambda: ledger.create_child("worker", creator="nobody", actor=ACTOR),
        lambda: ledger.grant("nobody", "trust", actor=ACTOR),
        lambda: ledger.tree("nobody"),
        lambda: ledger.explain("nobody"),
        lambda: ledger.raise_label("nobody", taint="secret", actor=ACTOR),
    ]
    for call in calls:
        with pytest.raises(KeyError) as unknown:
            call()
        assert isinstance(unknown.value, UnknownSession)
        assert unknown.value.kind == "unknown_session"
        # The Rust message as it is: not quoted the way a KeyError quotes its key.
        assert str(unknown.value) == 'no session "nobody" in the ledger'
        assert unknown.value.message == str(unknown.value)


def test_each_creation_bound_raises_creation_refused_with_its_reason(place: Place) -> None:
    deep = place.open(max_depth=1)
    deep.create_root("conductor", actor=ACTOR)
    deep.create_child("worker", creator="conductor", actor=ACTOR)
    with pytest.raises(CreationRefused) as depth:
        deep.create_child("worker.a", creator="worker", actor=ACTOR)
    assert (depth.value.reason, depth.value.kind) == ("depth_limit", "depth_limit")
    assert str(depth.value) == 'refused: "worker.a" would be at depth 2, deeper than the maximum 1'

    few = place.open(max_live_children=1)
    with pytest.raises(CreationRefused) as children:
        few.create_child("worker-2", creator="conductor", actor=ACTOR)
    assert children.value.reason == "child_limit"

    slow = place.open(creation_rate=session_ledger.CreationRate(1, 3600.0))
    slow.create_root("reviewer", actor=ACTOR)
    slow.create_child("review-1", creator="reviewer", actor=ACTOR)
    with pytest.raises(CreationRefused) as rate:
        slow.create_child("review-2", creator="reviewer", actor=ACTOR)
    assert rate.value.reason == "rate_limit"
    assert "in the last 3600s, the maximum is 1" in str(rate.value)
    assert [e.session for e in slow.audit(kind="session.create_refused")] == ["worker.a", "worker-2", "review-2"]


def test_other_conflicts_raise_conflict_told_apart_by_kind(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("session_exists", lambda: ledger.create_root("conductor", actor=ACTOR)),
        ("unknown_pattern", lambda: ledger.remove_pattern("conductor", "ls", actor=ACTOR)),
        ("unknown_scope", lambda: ledger.revoke_scope("conductor", "hotfix", actor=ACTOR)),
    ]
    ledger.create_root("gone", actor=ACTOR)
    ledger.end("gone", actor=ACTOR)
    cases.append(("session_ended", lambda: ledger.end("gone", actor=ACTOR)))
    for kind, call in cases:
        with pytest.raises(Conflict) as conflict:
            call()
        assert conflict.value.kind == kind
        assert not isinstance(conflict.value, (UnknownSession, StalePreview))


def test_archiving_conflicts_raise_conflict_and_an_archive_opened_to_write_raises_storage_error(
    place: Place,
) -> None:
    ledger = place.open()
    ledger.create_root("done", actor=ACTOR)
    ledger.end("done", actor=ACTOR)
    ledger.create_root("running", actor=ACTOR)
    archive = place.folder / "archive.db"
    ledger.archive(archive, tree="done", actor=ACTOR)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("session_archived", lambda: ledger.state("done")),
        ("session_archived", lambda: ledger.grant("done", "trust", actor=ACTOR)),
        ("session_archived", lambda: ledger.create_root("done", actor=ACTOR)),
        ("session_archived", lambda: ledger.create_child("done-2", creator="done", actor=ACTOR)),
        ("not_archivable", lambda: ledger.archive(place.folder / "none.db", actor=ACTOR)),
        ("not_archivable", lambda: ledger.archive(place.folder / "live.db", tree="running", actor=ACTOR)),
    ]
    for kind, call in cases:
        with pytest.raises(Conflict) as conflict:
            call()
        assert conflict.value.kind == kind, (kind, conflict.value)
        assert not isinstance(conflict.value, (UnknownSession, StalePreview))
    # An archive file is never written: a handle that may write is refused, a read-only one reads.
    with pytest.raises(StorageError) as refused:
        Ledger(archive)
    assert refused.value.kind == "is_archive"
    assert str(refused.value) == f"{archive} is an archive, which is never written: open it read-only"
    reader = Ledger(archive, read_only=True)
    done = reader.session("done")
    reader.close()
    assert done is not None and not done.live


def test_a_stale_preview_token_raises_stale_preview(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    preview = ledger.revoke("conductor", "preview", actor=ACTOR)
    ledger.grant("conductor", "trust_reads", actor=ACTOR)
    with pytest.raises(Conflict) as stale:
        ledger.revoke("conductor", "cascade", actor=ACTOR, token=preview.token)
    assert isinstance(stale.value, StalePreview)
    assert ledger.state("conductor").trust_reads


def test_revoke_takes_a_propagation_with_no_default(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    with pytest.raises(TypeError):
        ledger.revoke("conductor", actor=ACTOR)  # type: ignore[call-arg]
    with pytest.raises(InvalidInput) as unknown:
        ledger.revoke("conductor", "everything", actor=ACTOR)  # type: ignore[arg-type]
    assert unknown.value.kind == "invalid_propagation"
    assert str(unknown.value) == 'unknown propagation "everything": expected local, cascade or preview'
    token = ledger.revoke("conductor", "preview", actor=ACTOR).token
    with pytest.raises(InvalidInput) as misplaced:
        ledger.revoke("conductor", "local", actor=ACTOR, token=token)
    assert misplaced.value.kind == "invalid_token"
    with pytest.raises(InvalidInput) as malformed:
        ledger.revoke("conductor", "cascade", actor=ACTOR, token="not-a-token")
    assert malformed.value.kind == "invalid_token"


def test_values_out_of_range_raise_invalid_input(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("invalid_config", lambda: place.open(max_depth=-1)),
        ("invalid_config", lambda: place.open(max_live_children=2**32)),
        ("invalid_config", lambda: place.open(creation_rate=(10, -1.0))),
        ("invalid_config", lambda: place.open(creation_rate=[10, 60])),
        ("invalid_ttl", lambda: ledger.grant_scope("conductor", "s", ttl_seconds=0, actor=ACTOR)),
        ("invalid_ttl", lambda: ledger.grant_scope("conductor", "s", ttl_seconds=-5, actor=ACTOR)),
        ("invalid_ttl", lambda: ledger.grant_scope("conductor", "s", ttl_seconds=400 * 86400, actor=ACTOR)),
        ("invalid_scope_name", lambda: ledger.grant_scope("conductor", "a b", ttl_seconds=5, actor=ACTOR)),
        ("invalid_posture", lambda: ledger.grant("conductor", "admin", actor=ACTOR)),  # type: ignore[arg-type]
        ("invalid_taint", lambda: ledger.raise_label("conductor", taint="top", actor=ACTOR)),  # type: ignore[arg-type]
        ("nothing_to_raise", lambda: ledger.raise_label("conductor", actor=ACTOR)),
        ("invalid_pattern", lambda: ledger.add_pattern("conductor", "", actor=ACTOR)),
        (
            "invalid_pattern",
            lambda: ledger.add_pattern("conductor", "git *", actor=ACTOR, must_not_match=["git push"]),
        ),
        ("invalid_pattern", lambda: ledger.add_pattern("conductor", "sudo *", actor=ACTOR)),
        ("empty_command", lambda: ledger.decide("conductor", "")),
        ("invalid_classify", lambda: ledger.decide("conductor", "ls", read_only=True, classify=True)),
        ("invalid_audit_kind", lambda: ledger.audit(kind="session.created")),
        ("invalid_limit", lambda: ledger.audit(limit=-1)),
        ("invalid_head", lambda: session_ledger.AuditHead.parse("7:abc")),
    ]
    for kind, call in cases:
        with pytest.raises(InvalidInput) as invalid:
            call()
        assert invalid.value.kind == kind, (kind, invalid.value)
        assert isinstance(invalid.value, ValueError)
        assert str(invalid.value), kind
    assert ledger.patterns("conductor") == [] and ledger.scopes("conductor") == []


def test_a_file_that_is_not_a_ledger_raises_storage_error_and_is_left_as_it_is(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"these are my notes, not a ledger")
    with pytest.raises(StorageError) as refused:
        Ledger(notes)
    assert refused.value.kind == "not_a_ledger"
    assert str(refused.value) == f"{notes} is not a session-ledger database; it was left untouched"
    assert notes.read_bytes() == b"these are my notes, not a ledger"


def test_a_write_on_a_read_only_ledger_raises_storage_error(place: Place) -> None:
    place.open().create_root("conductor", actor=ACTOR)
    reader = place.open(read_only=True)
    assert reader.state("conductor").known
    with pytest.raises(StorageError) as refused:
        reader.create_root("other", actor=ACTOR)
    assert refused.value.kind == "read_only"
    assert reader.session("other") is None


def test_a_hand_edit_that_breaks_an_invariant_raises_corruption_error(sqlite_place: Place) -> None:
    ledger = sqlite_place.open()
    ledger.create_root("conductor", actor=ACTOR)
    # An operator drops the trigger that guards the trail's time-order record, and deletes it.
    sqlite_shell(sqlite_place.target, "DROP TRIGGER audit_time_order_is_fixed_delete; DELETE FROM audit_time_order;")
    with pytest.raises(CorruptionError) as broken:
        ledger.verify()
    assert broken.value.kind == "corruption"
    assert "audit_time_order has lost its row" in str(broken.value)
    assert isinstance(broken.value, LedgerError) and not isinstance(broken.value, ValueError)


def test_a_closed_ledger_raises_a_clear_error(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.close()
    assert ledger.closed
    ledger.close()  # twice does nothing
    with pytest.raises(LedgerError) as closed:
        ledger.state("conductor")
    assert closed.value.kind == "closed"
    assert str(closed.value) == f"the ledger at {ledger.location} is closed"
    assert type(closed.value) is LedgerError


def test_an_exception_pickles_with_its_message_kind_and_reason() -> None:
    refused = CreationRefused("refused: ...", "child_limit", "child_limit")
    back = pickle.loads(pickle.dumps(refused))
    assert (type(back), back.message, back.kind, back.reason) == (
        CreationRefused,
        "refused: ...",
        "child_limit",
        "child_limit",
    )
    records = ["0" * 32, "1" * 32]
    lost = pickle.loads(pickle.dumps(DecisionsUnknown("decision records ... unknown", "decisions_unknown", records)))
    assert (type(lost), lost.kind, lost.records) == (DecisionsUnknown, "decisions_unknown", records)
    unknown = pickle.loads(pickle.dumps(UnknownSession('no session "x" in the ledger', "unknown_session")))
    assert (str(unknown), unknown.kind) == ('no session "x" in the ledger', "unknown_session")
