"""What crosses the boundary: plain Python values, result objects that compare by value and
print readably, and the Ledger's own handling (paths, settings, closing)."""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import pytest

import session_ledger
from session_ledger import CreationRate, CreationRefused, Ledger

from conftest import ACTOR, Place


def test_results_compare_by_value_hash_by_value_and_print_every_field(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    first, second = ledger.state("conductor"), ledger.state("conductor")
    assert first == second and first is not second
    assert hash(first) == hash(second)
    assert len({first, second}) == 1
    assert first != ledger.state("worker-unknown")
    assert first != "conductor"
    assert repr(first) == (
        "SessionState(id='conductor', taint='private', untrusted=False, trust=True, "
        "trust_reads=False, known=True, materialized=True)"
    )
    decision = ledger.decide("conductor", "make deploy")
    assert repr(decision) == (
        "Decision(id='conductor', approved=True, admitted_by='trust', chain=['conductor'], "
        "reason='trust', pattern=None, scope=None, classification=None, kept_word=None, "
        "kept_pattern=None, kept_why=None, record=None)"
    )
    assert decision == ledger.decide("conductor", "make deploy")
    entry = ledger.audit(limit=1)[0]
    assert repr(entry).startswith("AuditEntry(seq=2, kind='posture.grant', session='conductor', actor='alice', at=datetime.datetime(")
    assert entry == ledger.audit(limit=1)[0]


def test_values_are_plain_python(ledger: Ledger) -> None:
    created = ledger.create_root("conductor", actor=ACTOR)
    assert type(created.id) is str and type(created.depth) is int
    assert type(created.inherited_trust) is bool and created.created_by is None
    assert type(created.created_at) is datetime and created.created_at.tzinfo == timezone.utc
    ledger.grant("conductor", "trust", actor=ACTOR)
    posture = ledger.posture("conductor")
    assert posture is not None and type(posture.chain) is list
    entry = ledger.audit(kind="posture.grant")[0]
    assert type(entry.detail) is dict
    head = ledger.audit_head()
    assert str(head) == f"{head.seq}:{head.hash}"


def test_result_objects_cannot_be_changed_or_made_by_hand(ledger: Ledger) -> None:
    created = ledger.create_root("conductor", actor=ACTOR)
    with pytest.raises(AttributeError):
        created.id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        session_ledger.Created()


def test_a_ledger_opens_from_a_path_like_and_closes_as_a_context_manager(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger(path, create=True) as ledger:
        assert ledger.location == str(path)
        assert repr(ledger) == f"Ledger({str(path)!r})"
        ledger.create_root("conductor", actor=ACTOR)
        assert not ledger.closed
    assert ledger.closed
    assert repr(ledger) == f"Ledger({str(path)!r}, closed=True)"
    with Ledger(str(path)) as again:
        assert again.state("conductor").known


def test_the_creation_rate_is_a_count_within_a_window_of_seconds(place: Place) -> None:
    first = place.open(creation_rate=CreationRate(max_creations=2, per_seconds=3600.0))
    first.create_root("conductor", actor=ACTOR)
    for worker in ["worker-1", "worker-2"]:
        first.create_child(worker, creator="conductor", actor=ACTOR)
    with pytest.raises(CreationRefused) as refused:
        first.create_child("worker-3", creator="conductor", actor=ACTOR)
    assert refused.value.reason == "rate_limit"
    assert "created 2 sessions in the last 3600s, the maximum is 2" in str(refused.value)
    # A plain tuple is the same; the window is any number of seconds.
    roomier = place.open(creation_rate=(3, 0.5))
    assert roomier.create_child("worker-3", creator="conductor", actor=ACTOR).id == "worker-3"
    assert CreationRate(2, 60.0) == (2, 60.0)


def test_a_read_only_ledger_answers_a_first_read_without_recording_it(place: Place) -> None:
    writer = place.open()
    writer.create_root("conductor", actor=ACTOR)
    writer.raise_label("conductor", taint="secret", actor=ACTOR)
    writer.create_child("worker", creator="conductor", actor=ACTOR)
    reader = place.open(read_only=True)
    state = reader.state("worker")
    assert (state.taint, state.known, state.materialized) == ("secret", True, False)
    assert writer.audit(session="worker", kind="label.inherit") == []


def test_the_installed_package_carries_its_stub_and_says_it_is_typed() -> None:
    # What the stub says is held against the module by stubtest (scripts/test-python).
    package = resources.files("session_ledger")
    assert package.joinpath("py.typed").is_file()
    assert "class Ledger" in package.joinpath("__init__.pyi").read_text()
