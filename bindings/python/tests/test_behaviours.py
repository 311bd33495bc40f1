"""The ledger's rules (docs/design.md, "The rules"), replayed through Python on each engine.

Each test names the behaviour it holds. The rules themselves are the Rust library's, and its
own suites prove them in depth; these show that the binding hands them over whole: the right
call, every value across, nothing decided on the Python side.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import session_ledger
from session_ledger import Ledger, StalePreview

from conftest import ACTOR, Place


def trusted_conductor(ledger: Ledger, level: session_ledger.PostureLevel = "trust") -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", level, actor=ACTOR)


def test_a_trusted_conductors_worker_is_born_trusted(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    worker = ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    assert (worker.id, worker.created_by, worker.depth) == ("worker-1", "conductor", 1)
    assert (worker.inherited_trust, worker.inherited_trust_reads) == (True, False)
    state = ledger.state("worker-1")
    assert (state.trust, state.trust_reads) == (True, False)
    decision = ledger.decide("worker-1", "make deploy")
    assert decision.approved
    assert decision.admitted_by == "trust"
    assert decision.chain == ["conductor", "worker-1"]


def test_trust_reads_never_widens_to_trust(ledger: Ledger) -> None:
    trusted_conductor(ledger, "trust_reads")
    worker = ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    assert (worker.inherited_trust, worker.inherited_trust_reads) == (False, True)
    grandchild = ledger.create_child("worker-1.a", creator="worker-1", actor=ACTOR)
    assert (grandchild.inherited_trust, grandchild.inherited_trust_reads) == (False, True)
    asks = ledger.decide("worker-1.a", "rm -rf build")
    assert (asks.approved, asks.admitted_by, asks.reason) == (False, None, "nothing")
    reads = ledger.decide("worker-1.a", "ls -la", read_only=True)
    assert (reads.approved, reads.admitted_by) == (True, "trust_reads")
    assert reads.chain == ["conductor", "worker-1", "worker-1.a"]


def test_patterns_and_scopes_are_not_inherited(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    assert ledger.add_pattern("conductor", "npm test *", actor=ACTOR)
    scope = ledger.grant_scope("conductor", "deploy-window", ttl_seconds=600, actor=ACTOR)
    assert scope.expires_at - scope.granted_at == timedelta(seconds=600)
    by_pattern = ledger.decide("conductor", "npm test --watch")
    assert (by_pattern.approved, by_pattern.admitted_by, by_pattern.pattern) == (
        True,
        "pattern",
        "npm test *",
    )
    by_scope = ledger.decide("conductor", "make deploy")
    assert (by_scope.approved, by_scope.admitted_by, by_scope.scope) == (True, "scope", "deploy-window")

    worker = ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    assert (worker.inherited_trust, worker.inherited_trust_reads) == (False, False)
    assert ledger.patterns("worker-1") == []
    assert ledger.scopes("worker-1") == []
    for command in ["npm test --watch", "make deploy"]:
        decision = ledger.decide("worker-1", command)
        assert (decision.approved, decision.reason) == (False, "nothing"), command


def test_the_create_audit_records_what_the_child_was_born_with_on_both_outcomes(place: Place) -> None:
    ledger = place.open(max_live_children=1)
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    with pytest.raises(session_ledger.CreationRefused) as refused:
        ledger.create_child("worker-2", creator="conductor", actor=ACTOR)
    assert refused.value.reason == "child_limit"

    [created] = ledger.audit(session="worker-1", kind="session.create")
    assert created.detail["inherited_trust"] is True
    assert created.detail["inherited_trust_reads"] is False
    assert created.detail["creator"] == "conductor"
    [refusal] = ledger.audit(session="worker-2", kind="session.create_refused")
    assert refusal.detail["inherited_trust"] is False
    assert refusal.detail["inherited_trust_reads"] is False
    assert refusal.detail["reason"] == "child_limit"
    assert ledger.session("worker-2") is None


def test_a_spawned_sub_agent_inherits_its_parents_label_through_a_missing_middle_child(
    ledger: Ledger,
) -> None:
    ledger.create_root("mm-thread", actor=ACTOR)
    raised = ledger.raise_label("mm-thread", taint="secret", untrusted=True, actor=ACTOR)
    assert raised.changed
    assert (raised.before.taint, raised.before.untrusted) == ("private", False)
    assert (raised.after.taint, raised.after.untrusted) == ("secret", True)

    # sub-mm-thread-1, the middle, was never seen.
    nested = ledger.state("sub-sub-mm-thread-1-2")
    assert (nested.taint, nested.untrusted, nested.known, nested.materialized) == (
        "secret",
        True,
        True,
        True,
    )
    assert [s.id for s in ledger.ancestors("sub-sub-mm-thread-1-2")] == ["sub-mm-thread-1", "mm-thread"]
    middle = ledger.session("sub-mm-thread-1")
    assert middle is not None
    assert (middle.created_by, middle.origin, middle.depth) == ("mm-thread", "spawned", 1)
    assert ledger.state("sub-mm-thread-1").taint == "secret"


def test_reading_an_unknown_plain_id_gives_the_default_and_writes_nothing(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    head = ledger.audit_head()
    for plain in ["chat-1", "sub-x", "sub--1", "sub-a-1x"]:
        state = ledger.state(plain)
        assert (state.taint, state.untrusted, state.known, state.materialized) == (
            "private",
            False,
            False,
            False,
        ), plain
        assert ledger.session(plain) is None
    assert ledger.audit_head() == head
    unknown = ledger.decide("chat-1", "ls")
    assert (unknown.approved, unknown.reason) == (False, "unknown_session")


def test_a_preview_binds_its_cascade_and_a_stale_token_changes_nothing(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    preview = ledger.revoke("conductor", "preview", actor=ACTOR)
    assert (preview.propagation, preview.count) == ("preview", 2)
    assert preview.sessions == ["conductor", "worker-1"]
    assert preview.token is not None and len(preview.token) == 64
    assert ledger.state("worker-1").trust, "a preview changes nothing"

    # The tree moves on: a worker born trusted after the preview.
    ledger.create_child("worker-2", creator="conductor", actor=ACTOR)
    tree_before, head_before = ledger.tree("conductor"), ledger.audit_head()
    with pytest.raises(StalePreview) as stale:
        ledger.revoke("conductor", "cascade", actor=ACTOR, token=preview.token)
    assert stale.value.kind == "stale_preview"
    assert "changed since the preview" in str(stale.value)
    assert ledger.tree("conductor") == tree_before
    assert ledger.audit_head() == head_before
    assert all(node.trust for node in tree_before)

    again = ledger.revoke("conductor", "preview", actor=ACTOR)
    assert again.count == 3
    cascade = ledger.revoke("conductor", "cascade", actor=ACTOR, token=again.token)
    assert (cascade.propagation, cascade.count, cascade.token) == ("cascade", 3, None)
    assert cascade.sessions == again.sessions
    assert not any(node.trust or node.trust_reads for node in ledger.tree("conductor"))


def test_a_cascade_reaches_spawned_sub_agents_and_grandchildren(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    ledger.create_child("worker-1.a", creator="worker-1", actor=ACTOR)
    assert ledger.decide("sub-worker-1.a-1", "make").approved, "a spawn takes its parent's posture"
    cascade = ledger.revoke("conductor", "cascade", actor=ACTOR, unchecked=True)
    assert set(cascade.sessions) == {"conductor", "worker-1", "worker-1.a", "sub-worker-1.a-1"}
    for node in ledger.tree("conductor"):
        assert not node.trust, node


def test_a_local_revoke_names_the_descendants_still_holding_a_posture(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    local = ledger.revoke("conductor", "local", actor=ACTOR)
    assert (local.propagation, local.sessions, local.still_holding) == ("local", ["conductor"], ["worker-1"])
    assert not ledger.state("conductor").trust
    assert ledger.state("worker-1").trust


def test_the_global_revoke_clears_every_live_posture(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.create_root("reviewer", actor=ACTOR)
    ledger.grant("reviewer", "trust_reads", actor=ACTOR)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    everything = ledger.revoke_all(actor=ACTOR)
    assert (everything.propagation, everything.root, everything.count) == ("global", None, 3)
    assert not any(n.trust or n.trust_reads for n in ledger.forest())


def test_a_new_epoch_lapses_postures_unless_they_are_durable(place: Place) -> None:
    ledger = place.open()
    trusted_conductor(ledger)
    assert ledger.current_epoch() == 0
    boot = ledger.start_epoch(actor="dashboard")
    assert (boot.epoch, boot.durable, boot.lapsed, boot.carried) == (1, False, 1, 0)
    assert ledger.current_epoch() == 1
    lapsed = ledger.decide("conductor", "make deploy")
    assert (lapsed.approved, lapsed.reason) == (False, "nothing")
    posture = ledger.posture("conductor")
    assert posture is not None and not posture.current

    durable = place.open(durable_postures=True)
    durable.grant("conductor", "trust", actor=ACTOR)
    carried = durable.start_epoch(actor="dashboard")
    assert (carried.epoch, carried.durable, carried.carried) == (2, True, 1)
    assert ledger.decide("conductor", "make deploy").approved


def test_an_ended_session_asks_and_cannot_create(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ended = ledger.end("conductor", actor=ACTOR).session
    assert not ended.live and ended.ended_at is not None
    decision = ledger.decide("conductor", "ls")
    assert (decision.approved, decision.reason) == (False, "session_ended")
    with pytest.raises(session_ledger.Conflict) as refused:
        ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    assert refused.value.kind == "session_ended"


def test_the_tree_lists_the_subtree_with_labels_and_postures_and_writes_nothing(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.raise_label("conductor", taint="secret", actor=ACTOR)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    ledger.create_child("worker-1.a", creator="worker-1", actor=ACTOR)
    ledger.create_child("worker-2", creator="conductor", actor=ACTOR)
    head = ledger.audit_head()
    nodes = ledger.tree("conductor")
    assert [(n.id, n.created_by, n.depth, n.relative_depth) for n in nodes] == [
        ("conductor", None, 0, 0),
        ("worker-1", "conductor", 1, 1),
        ("worker-1.a", "worker-1", 2, 2),
        ("worker-2", "conductor", 1, 1),
    ]
    assert all((n.taint, n.untrusted, n.trust, n.trust_reads) == ("secret", False, True, False) for n in nodes)
    assert [n.materialized for n in nodes] == [True, False, False, False]
    assert ledger.audit_head() == head
    sub = ledger.tree("worker-1")
    assert [(n.id, n.depth, n.relative_depth) for n in sub] == [("worker-1", 1, 0), ("worker-1.a", 2, 1)]
    assert [s.id for s in ledger.children("conductor")] == ["worker-1", "worker-2"]


def test_audit_entries_carry_an_aware_time_and_a_dict_detail(ledger: Ledger) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    entries = ledger.audit()
    assert [e.kind for e in entries] == ["session.root", "posture.grant", "session.create"]
    assert [e.seq for e in entries] == [1, 2, 3]
    for entry in entries:
        assert entry.at.tzinfo is not None and entry.at.utcoffset() == timedelta(0)
        assert before <= entry.at <= datetime.now(timezone.utc) + timedelta(seconds=1)
        assert isinstance(entry.detail, dict)
        assert entry.actor == ACTOR
    assert entries[1].prev_hash == entries[0].hash
    assert ledger.audit(kind="posture.grant") == [entries[1]]
    assert ledger.audit(session="worker-1") == [entries[2]]
    assert ledger.audit(limit=2) == entries[1:]
    assert ledger.audit(limit=1, before=3) == [entries[1]]
    assert ledger.audit(subtree="worker-1") == [entries[2]]
    assert ledger.audit(since=entries[0].at) == entries
    assert ledger.audit(until=entries[0].at) == []
    detail = entries[2].detail
    detail["creator"] = "someone else"
    assert entries[2].detail["creator"] == "conductor", "each access gives a new dict"


def test_the_audit_trail_verifies_and_a_saved_head_checks_only_the_new_rows(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    saved = ledger.audit_head()
    assert (saved.seq, len(saved.hash)) == (1, 64)
    assert session_ledger.AuditHead.parse(str(saved)) == saved
    for i in range(3):
        ledger.create_root(f"root-{i}", actor=ACTOR)
    whole = ledger.verify()
    assert (whole.ok, whole.rows, whole.first_bad_seq, whole.problem) == (True, 4, None, None)
    assert whole.head == ledger.audit_head()
    assert ledger.verify(saved).ok
    since = ledger.verify_from(saved)
    assert (since.ok, since.rows) == (True, 4 - saved.seq + 1)


def test_explain_gives_the_posture_the_grant_and_the_grants_of_a_session(ledger: Ledger) -> None:
    trusted_conductor(ledger)
    ledger.create_child("worker-1", creator="conductor", actor=ACTOR)
    ledger.add_pattern("worker-1", "git status", actor=ACTOR)
    ledger.grant_scope("worker-1", "hotfix", ttl_seconds=60, actor=ACTOR)
    why = ledger.explain("worker-1")
    assert (why.session.id, why.session.created_by) == ("worker-1", "conductor")
    assert why.state.trust
    assert why.posture is not None
    assert (why.posture.source, why.posture.granted_on, why.posture.inherited_from) == (
        "inherited",
        "conductor",
        "conductor",
    )
    assert why.posture.chain == ["conductor", "worker-1"]
    assert why.grant is not None and (why.grant.kind, why.grant.session) == ("posture.grant", "conductor")
    assert why.patterns == ["git status"]
    assert [s.name for s in why.live_scopes] == ["hotfix"]
    assert [e.kind for e in why.audit] == ["session.create", "pattern.add", "scope.grant"]


def test_a_pattern_admits_each_simple_command_and_never_a_construct(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.add_pattern("conductor", "git status", actor=ACTOR)
    ledger.add_pattern("conductor", "npm test *", actor=ACTOR)
    assert ledger.decide("conductor", "git status && npm test --ci").approved
    for line in ["git status; rm -rf /", "npm test $(curl evil)", "git status > out.txt"]:
        assert not ledger.decide("conductor", line).approved, line
    assert not ledger.add_pattern("conductor", "git status", actor=ACTOR), "already there"
    ledger.remove_pattern("conductor", "git status", actor=ACTOR)
    assert ledger.patterns("conductor") == ["npm test *"]


def test_a_revoked_scope_admits_nothing_more(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant_scope("conductor", "hotfix", ttl_seconds=3600, actor=ACTOR)
    assert ledger.decide("conductor", "make deploy").admitted_by == "scope"
    ledger.revoke_scope("conductor", "hotfix", actor=ACTOR)
    assert not ledger.decide("conductor", "make deploy").approved
    [scope] = ledger.scopes("conductor")
    assert scope.name == "hotfix" and scope.revoked_at is not None
