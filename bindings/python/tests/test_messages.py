"""What a Python caller reads when something is off: errors that name the argument and speak in
seconds, a saved head taken as the text the command line prints, a raise that says labels only
rise, a repr that shows every field, and no password anywhere."""

from __future__ import annotations

import re
from typing import Any, List

import pytest

import session_ledger
from session_ledger import AuditHead, InvalidInput, Ledger, LedgerError

from conftest import ACTOR, Place


def test_a_ttl_out_of_range_is_refused_in_seconds_naming_the_argument(ledger: Ledger) -> None:
    ledger.create_root("boss", actor=ACTOR)
    for bad in [0, -5, 0.0004, 31_622_401, float("inf"), float("nan")]:
        with pytest.raises(InvalidInput) as refused:
            ledger.grant_scope("boss", "deploy", ttl_seconds=bad, actor=ACTOR)
        message = str(refused.value)
        assert refused.value.kind == "invalid_ttl"
        assert "ttl_seconds" in message and "366 days" in message, message
        assert "ms" not in message.split() and "unit" not in message, message
    assert ledger.scopes("boss") == []
    assert ledger.grant_scope("boss", "deploy", ttl_seconds=31_622_400, actor=ACTOR).name == "deploy"


def test_a_ttl_that_is_not_a_number_is_a_type_error_naming_the_argument(ledger: Ledger) -> None:
    ledger.create_root("boss", actor=ACTOR)
    for bad in ["2h", None, True, [60]]:
        with pytest.raises(TypeError) as refused:
            ledger.grant_scope("boss", "deploy", ttl_seconds=bad, actor=ACTOR)  # type: ignore[arg-type]
        assert "ttl_seconds" in str(refused.value), str(refused.value)
        assert type(bad).__name__ in str(refused.value), str(refused.value)
    assert ledger.scopes("boss") == []


def test_verify_takes_a_saved_head_as_its_text_and_says_what_else_it_wants(ledger: Ledger) -> None:
    ledger.create_root("boss", actor=ACTOR)
    head = ledger.audit_head()
    ledger.create_root("other", actor=ACTOR)
    assert ledger.verify(str(head)) == ledger.verify(head)
    assert ledger.verify_from(str(head)) == ledger.verify_from(head)
    assert ledger.verify_from(str(head)).rows == 2
    with pytest.raises(InvalidInput) as refused:
        ledger.verify("6:abc")
    assert refused.value.kind == "invalid_head"
    for wrong in [6, head.seq, b"1:ab"]:
        with pytest.raises(TypeError) as typed:
            ledger.verify(wrong)  # type: ignore[arg-type]
        assert "AuditHead" in str(typed.value) and "SEQ:HASH" in str(typed.value)


def test_raising_a_label_to_a_lower_class_says_that_labels_only_rise(ledger: Ledger) -> None:
    ledger.create_root("boss", actor=ACTOR)
    lower = ledger.raise_label("boss", taint="public", actor=ACTOR)
    assert not lower.changed
    assert (lower.requested_taint, lower.requested_untrusted) == ("public", False)
    assert str(lower) == "boss: stays private; nothing changed: labels only rise, and public is below private"
    assert str(ledger.raise_label("boss", taint="private", actor=ACTOR)) == "boss: already private; nothing changed"
    up = ledger.raise_label("boss", untrusted=True, actor=ACTOR)
    assert up.requested_taint is None
    assert str(up) == "boss: private -> private, untrusted"


def _results(ledger: Ledger) -> List[Any]:
    """One of every result class the binding hands out."""
    root = ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    created = ledger.create_child("worker", creator="conductor", actor=ACTOR)
    state = ledger.state("worker")
    raised = ledger.raise_label("worker", taint="secret", actor=ACTOR)
    scope = ledger.grant_scope("worker", "deploy", ttl_seconds=60, actor=ACTOR)
    ledger.add_pattern("worker", "npm test", actor=ACTOR)
    decision = ledger.decide("worker", "npm test", record=True, asked_by=ACTOR)
    integrated = ledger.integrate_decisions(actor=ACTOR)
    [record] = ledger.decisions()
    explanation = ledger.explain("worker")
    preview = ledger.revoke("conductor", "preview", actor=ACTOR)
    epoch = ledger.start_epoch(actor=ACTOR)
    head = ledger.audit_head()
    level = ledger.tree_level()
    lapsed = ledger.authority("conductor")
    added = ledger.add_pattern_checked("worker", "git *", actor=ACTOR)
    [review] = ledger.review_patterns()
    classified = session_ledger.classify("timeout 5 cat x > y && ls")
    ledger.create_root("reader", actor=ACTOR)
    ledger.grant("reader", "trust_reads", actor=ACTOR)
    by_classifier = ledger.decide("reader", "timeout 5 cat x", classify=True)
    ended = ledger.end("worker", actor=ACTOR)
    return [
        added,
        review,
        classified,
        by_classifier.classification,
        session_ledger.classify("timeout 5 cat x").parts[0],
        by_classifier,
        preview.affected[0],
        preview.still_approving[0],
        explanation.authority,
        explanation.authority.patterns[0],
        lapsed.withheld[0],
        ended,
        level,
        level.nodes[0],
        root,
        created,
        ledger.session("worker"),
        state,
        raised.before,
        raised,
        explanation.posture,
        preview,
        epoch,
        scope,
        decision,
        integrated,
        record,
        ledger.tree("conductor")[0],
        ledger.audit(limit=1)[0],
        head,
        ledger.verify(),
        explanation,
    ]


def test_every_repr_names_every_field_of_its_object(ledger: Ledger) -> None:
    results = _results(ledger)
    classes = {type(r).__name__ for r in results}
    exported = {
        name
        for name in dir(session_ledger)
        if isinstance(getattr(session_ledger, name), type)
        and getattr(getattr(session_ledger, name), "__module__", "") == "session_ledger"
        and not issubclass(getattr(session_ledger, name), BaseException)
    }
    assert exported - {"Ledger", "CreationRate", "DecisionRecorder"} <= classes, exported - classes
    for result in results:
        text = repr(result)
        fields = [
            name
            for name in dir(type(result))
            if not name.startswith("_") and not callable(getattr(result, name))
        ]
        assert fields, type(result).__name__
        assert text.startswith(type(result).__name__ + "("), text
        for name in fields:
            assert re.search(rf"[(, ]{name}=", text), f"{type(result).__name__}: no {name} in {text}"


def test_no_repr_or_error_shows_the_password_of_a_postgres_url(place: Place) -> None:
    if place.engine != "postgres":
        pytest.skip("a SQLite path holds no password")
    url = place.target
    password = re.match(r"postgres(?:ql)?://[^:/@]+:([^@]+)@", url)
    assert password, "the test server's URL has a password"
    secret = password.group(1)
    ledger = place.open()
    texts = [repr(ledger), str(ledger.verify()), repr(ledger.verify())]
    wrong = url.replace(f":{secret}@", ":not-the-password-7c2e@", 1)
    elsewhere = re.sub(r"/[^/?]+\?", "/no_such_database?", url, count=1)
    for target in [wrong, elsewhere]:
        with pytest.raises(LedgerError) as failed:
            Ledger(target)
        texts += [str(failed.value), repr(failed.value), str(failed.value.__cause__)]
    for text in texts:
        assert secret not in text and "not-the-password-7c2e" not in text, text


def test_an_argument_of_the_wrong_type_is_a_type_error_that_names_it(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("boss", actor=ACTOR)
    # Called as an untyped caller would: these are the types the stub refuses.
    loose: Any = ledger
    open_loose: Any = Ledger
    calls: List[Any] = [
        ("id", lambda: loose.state(5)),
        ("actor", lambda: loose.create_root("x", actor=5)),
        ("creator", lambda: loose.create_child("x", creator=None, actor=ACTOR)),
        ("taint", lambda: loose.raise_label("boss", taint=3, actor=ACTOR)),
        ("untrusted", lambda: loose.raise_label("boss", untrusted="yes", actor=ACTOR)),
        ("read_only", lambda: loose.decide("boss", "ls", read_only="yes")),
        ("command", lambda: loose.decide("boss", ["ls"])),
        ("level", lambda: loose.grant("boss", 5, actor=ACTOR)),
        ("token", lambda: loose.revoke("boss", "cascade", actor=ACTOR, token=5)),
        ("must_match", lambda: loose.add_pattern("boss", "ls", actor=ACTOR, must_match="ls")),
        ("limit", lambda: loose.audit(limit="3")),
        ("since", lambda: loose.audit(since="2026-01-01")),
        ("max_depth", lambda: open_loose(place.target, max_depth="3")),
        ("path_or_url", lambda: open_loose(5)),
    ]
    before = ledger.audit()
    for argument, call in calls:
        with pytest.raises(TypeError) as refused:
            call()
        message = str(refused.value)
        assert message.startswith(f"{argument} must be "), message
    assert ledger.audit() == before
