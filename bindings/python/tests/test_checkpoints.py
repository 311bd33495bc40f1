"""Checkpoints of the audit trail through Python, on each engine: a dashboard backend signs one
now and then; an auditor verifies the trail against one with the verifier key alone; a receipt
checks offline; the trail read as a feed, as JSON rows or as OCSF events that the OCSF
schema (version ``session_ledger.OCSF_VERSION``) validates; and a SQLite ledger backed up and
put back.

The attacks (rewrites, shrinks, forks, flipped bits) are the Rust suites' (tests/checkpoints.rs);
these show that the binding hands the library's answers over whole.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from ocsf_json_schema import OcsfJsonSchemaEmbedded, get_ocsf_schema  # type: ignore[import-untyped]

import session_ledger
from session_ledger import Ledger

from conftest import ACTOR, Place


def busy(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    ledger.create_child("worker", creator="conductor", actor=ACTOR)
    ledger.state("worker")
    ledger.add_pattern("worker", "npm test", actor=ACTOR)
    ledger.revoke("conductor", "cascade", actor="carol", unchecked=True)
    ledger.end("worker", actor="carol")
    ledger.start_epoch(actor="dashboard")


def test_a_checkpoint_signed_by_the_backend_verifies_with_the_verifier_key_alone(
    ledger: Ledger,
) -> None:
    busy(ledger)
    key = session_ledger.generate_key("example.com/ledger")
    verifier = session_ledger.verifier_key(key)
    signed = ledger.checkpoint(key, actor=ACTOR)
    assert signed["origin"] == "example.com/ledger"
    # The key's base64 (which may itself hold a "+") is nowhere in what the ledger recorded.
    assert key.split("+", 4)[4] not in str(ledger.checkpoints())
    ledger.create_root("later", actor=ACTOR)
    result = ledger.verify_checkpoint(signed["note"], verifier)
    assert result["ok"], result["findings"]
    assert [f["check"] for f in result["findings"]] == [
        "signature",
        "rows",
        "tree",
        "consistency",
        "chain",
        "decisions",
    ]
    quick = ledger.verify_checkpoint(signed["note"], verifier, fast=True)
    assert quick["ok"] and quick["not_checked"]
    stranger = session_ledger.verifier_key(session_ledger.generate_key("example.com/ledger"))
    refused = ledger.verify_checkpoint(signed["note"], stranger)
    assert not refused["ok"]
    assert refused["findings"][-1]["problem"] == "not_signed_by_key"
    later = ledger.checkpoint(key, actor=ACTOR)
    older = ledger.verify_checkpoint(signed["note"], verifier, previous=later["note"])
    assert [f["problem"] for f in older["findings"] if not f["valid"]] == ["smaller"]


def test_a_receipt_checks_offline_with_the_row_and_the_key(ledger: Ledger) -> None:
    busy(ledger)
    key = session_ledger.generate_key("example.com/ledger")
    ledger.checkpoint(key, actor=ACTOR)
    revoke = ledger.audit(kind="posture.revoke")[0]
    receipt = ledger.prove(revoke.seq)
    row = ledger.export(revoke.seq - 1, limit=1)[0]
    verifier = session_ledger.verifier_key(key)
    assert session_ledger.verify_receipt(receipt, verifier, row)["ok"]
    assert session_ledger.verify_receipt(receipt, verifier)["ok"]
    changed = dict(row, actor="mallory")
    check = session_ledger.verify_receipt(receipt, verifier, changed)
    assert not check["ok"] and check["why"]


def test_the_feed_resumes_exactly_from_a_saved_seq(ledger: Ledger) -> None:
    busy(ledger)
    first = ledger.export(0, limit=4)
    rest: List[Dict[str, Any]] = []
    after = first[-1]["seq"]
    while page := ledger.export(after, limit=3):
        rest.extend(page)
        after = page[-1]["seq"]
    seqs = [r["seq"] for r in first + rest]
    assert seqs == list(range(1, ledger.audit_head().seq + 1))
    assert [r["hash"] for r in first] == [e.hash for e in ledger.audit(limit=4, before=5)]


def test_every_kind_exported_as_ocsf_validates_against_the_ocsf_schema(ledger: Ledger) -> None:
    busy(ledger)
    ledger.raise_label("conductor", taint="secret", actor=ACTOR)
    ledger.grant_scope("conductor", "hotfix", ttl_seconds=60, actor=ACTOR)
    ledger.revoke_scope("conductor", "hotfix", actor=ACTOR)
    ledger.remove_pattern("worker", "npm test", actor=ACTOR)
    # A recorded decision: signing integrates it first, in a decisions.integrate row.
    ledger.decide("conductor", "ls", record=True, asked_by="claude-code")
    ledger.checkpoint(session_ledger.generate_key("example.com/ledger"), actor=ACTOR)
    events = ledger.export(0, format="ocsf")
    rows = ledger.export(0)
    schema = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=session_ledger.OCSF_VERSION))
    validators: Dict[int, Any] = {}
    for event, row in zip(events, rows):
        uid = event["class_uid"]
        if uid not in validators:
            name = schema.lookup_class_name_from_uid(class_uid=uid)
            validators[uid] = Draft202012Validator(schema.get_class_schema(class_name=name, profiles=[]))
        errors = [e.message for e in validators[uid].iter_errors(event)]
        assert errors == [], (row["kind"], errors)
        assert event["metadata"]["sequence"] == row["seq"]
        assert event["metadata"]["uid"] == row["hash"]
        assert event["metadata"]["version"] == session_ledger.OCSF_VERSION
    kinds = {row["kind"] for row in rows}
    assert kinds >= {
        "session.root",
        "session.create",
        "session.end",
        "label.inherit",
        "label.raise",
        "posture.grant",
        "posture.revoke",
        "pattern.add",
        "pattern.remove",
        "scope.grant",
        "scope.revoke",
        "epoch.start",
        "checkpoint.sign",
        "decisions.integrate",
    }
    # The validator refuses what the schema does not allow: the test would catch a bad mapping.
    wrong = dict(events[0], type_uid=1)
    assert list(validators[events[0]["class_uid"]].iter_errors(wrong))


def test_every_verdict_exported_as_ocsf_validates_against_the_ocsf_schema(ledger: Ledger) -> None:
    ledger.create_root("worker", actor=ACTOR)
    ledger.grant("worker", "trust_reads", actor=ACTOR)
    ledger.add_pattern("worker", "npm test", actor=ACTOR)
    for command in ["git log -3", "npm test", "rm -rf build"]:
        ledger.decide("worker", command, classify=True, record=True, asked_by="claude-code")
    ledger.decide_tool(
        "worker",
        "WebFetch",
        url="https://docs.rs",
        record=True,
        asked_by="claude-code",
        tool_use_id="toolu_01",
    )
    ledger.integrate_decisions(actor=ACTOR)
    events = ledger.export_decisions(0, format="ocsf")
    records = ledger.export_decisions(0)
    assert len(events) == len(records) == 4
    schema = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=session_ledger.OCSF_VERSION))
    name = schema.lookup_class_name_from_uid(class_uid=events[0]["class_uid"])
    # The decision, its disposition and the authorizations are the security_control profile's.
    validator = Draft202012Validator(
        schema.get_class_schema(class_name=name, profiles=["security_control"])
    )
    for event, record in zip(events, records):
        errors = [e.message for e in validator.iter_errors(event)]
        assert errors == [], (record["verdict"], errors)
        assert event["metadata"]["uid"] == record["record"]
        assert event["metadata"]["sequence"] == record["seq"]
        assert event["authorizations"][0]["decision"] == record["verdict"]
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert ledger.export_decisions(2) == records[2:], "the feed resumes after a position"
    assert {r["verdict"] for r in records} == {"approve", "ask"}
    # The validator refuses what the schema does not allow: the test would catch a bad mapping.
    assert list(validator.iter_errors(dict(events[0], type_uid=1)))


def test_a_backup_taken_by_the_backend_is_checked_and_restored_only_against_a_checkpoint_it_extends(
    place: Place,
) -> None:
    ledger = place.open()
    busy(ledger)
    if place.engine == "postgres":
        # The server's tools back up a PostgreSQL ledger (docs/operations.md); the binding says so.
        with pytest.raises(session_ledger.InvalidInput) as refused:
            ledger.backup(place.folder / "copy.db")
        assert refused.value.kind == "invalid_config" and "pg_dump" in str(refused.value)
        return
    key = session_ledger.generate_key("example.com/ledger")
    early = ledger.backup(place.folder / "early.db")
    assert early["ok"] and early["verification"]["ok"] and early["check"]["ok"]
    head = ledger.audit_head()
    assert early["head"] == {"seq": head.seq, "hash": head.hash}
    ledger.create_root("reviewer", actor=ACTOR)
    signed = ledger.checkpoint(key, actor=ACTOR)
    late = ledger.backup(place.folder / "late.db")
    assert late["ok"]
    with pytest.raises(session_ledger.InvalidInput):
        ledger.backup(place.folder / "late.db")

    verifier = session_ledger.verifier_key(key)
    to = place.folder / "restored.db"
    refused_backup = session_ledger.restore(
        place.folder / "early.db", to, checkpoint=signed["note"], verifier_key=verifier
    )
    assert not refused_backup["ok"] and refused_backup["checkpoint"]["ok"] is False
    assert not to.exists()
    restored = session_ledger.restore(
        place.folder / "late.db", to, checkpoint=signed["note"], verifier_key=verifier
    )
    assert restored["ok"] and restored["head"] == late["head"]
    again = Ledger(str(to), read_only=True)
    assert again.audit_head().seq == late["head"]["seq"]
    assert again.audit_head().hash == late["head"]["hash"]
    again.close()
    with pytest.raises(session_ledger.InvalidInput) as taken:
        session_ledger.restore(place.folder / "late.db", to)
    assert taken.value.kind == "invalid_config"
