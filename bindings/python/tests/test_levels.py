"""The tree one level at a time, and a decision with every part of its reason: what a view
that opens the dispatch tree level by level, and shows why a command would be approved,
needs from the binding. On each engine."""

from __future__ import annotations

import pytest

import session_ledger
from session_ledger import Ledger

from conftest import ACTOR


def test_a_level_comes_a_page_at_a_time_with_labels_and_postures_and_writes_nothing(
    ledger: Ledger,
) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    for worker in ["w1", "w2", "w3"]:
        ledger.create_child(worker, creator="conductor", actor=ACTOR)
    ledger.create_child("w1.a", creator="w1", actor=ACTOR)
    ledger.raise_label("conductor", taint="secret", actor=ACTOR)
    head = ledger.audit_head()

    roots = ledger.tree_level()
    assert (roots.parent, [n.id for n in roots.nodes], roots.next) == (None, ["conductor"], None)
    first = ledger.tree_level("conductor", limit=2)
    assert [n.id for n in first.nodes] == ["w1", "w2"]
    assert first.next == "w2"
    w1 = first.nodes[0]
    assert (w1.taint, w1.materialized, w1.trust, w1.has_children, w1.origin) == (
        "secret",
        False,
        True,
        True,
        "created",
    )
    assert w1.posture is not None
    assert (w1.posture.source, w1.posture.chain) == ("inherited", ["conductor", "w1"])
    rest = ledger.tree_level("conductor", after=first.next, limit=2)
    assert ([n.id for n in rest.nodes], rest.next) == (["w3"], None)
    assert isinstance(rest, session_ledger.TreeLevel)
    assert isinstance(rest.nodes[0], session_ledger.LevelNode)
    assert ledger.audit_head() == head


def test_a_level_of_an_unknown_parent_or_with_a_negative_limit_is_refused(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    with pytest.raises(session_ledger.UnknownSession):
        ledger.tree_level("nobody")
    with pytest.raises(session_ledger.InvalidInput):
        ledger.tree_level("conductor", limit=-1)
    assert ledger.tree_level("conductor", after="nobody").nodes == []


def test_a_decisions_detail_names_the_pattern_of_each_part_or_the_construct_that_asks(
    ledger: Ledger,
) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.add_pattern("conductor", "npm test *", actor=ACTOR)
    ledger.add_pattern("conductor", "git status", actor=ACTOR)
    head = ledger.audit_head()

    approved = ledger.decision_detail("conductor", "npm test -- x && git status")
    assert approved["verdict"] == "approve"
    assert approved["reason"]["kind"] == "pattern"
    parts = [(p["text"], p["pattern"], p["added_by"]) for p in approved["reason"]["parts"]]
    assert parts == [("npm test -- x", "npm test *", ACTOR), ("git status", "git status", ACTOR)]

    unadmitted = ledger.decision_detail("conductor", "npm test && rm -rf /")
    assert unadmitted["verdict"] == "ask"
    assert unadmitted["reason"]["unadmitted"]["text"] == "rm -rf /"

    refused = ledger.decision_detail("conductor", "npm test $(curl x)")
    assert refused["reason"]["refused"]["construct"] == "command_substitution"
    assert ledger.audit_head() == head
