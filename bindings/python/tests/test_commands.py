"""What a command does, through Python: the module's `classify`, `decide` asking the
ledger to classify (`classify=True`), a wildcard kept from a word that runs a program, wrappers
read through, a pattern that admits any command refused unless the operator says so, its
warnings, and `review_patterns`. The rules are the library's (tests/wrappers.rs); these show
that the binding hands them over whole."""

from __future__ import annotations

import os
import pathlib
from typing import Any, Callable, List

import pytest

import session_ledger
from session_ledger import Classification, InvalidInput, Ledger

from conftest import ACTOR


def reader(ledger: Ledger) -> None:
    """A session holding `trust_reads`, and nothing else."""
    ledger.create_root("reader", actor=ACTOR)
    ledger.grant("reader", "trust_reads", actor=ACTOR)


def test_classify_names_find_exec_as_the_word_that_runs_a_program() -> None:
    verdict = session_ledger.classify("find . -exec rm -rf / ';'")
    assert isinstance(verdict, Classification)
    assert (verdict.read_only, verdict.word, verdict.effect) == (False, "-exec", "runs")
    assert verdict.reason == "find runs a program for each file it finds"
    assert (verdict.line, verdict.refused, verdict.refused_at) == ("find . -exec rm -rf / ';'", None, None)
    [part] = verdict.parts
    assert (part.text, part.read_only, part.word, part.effect) == ("find . -exec rm -rf / ';'", False, "-exec", "runs")


def test_classify_finds_git_status_read_only_and_names_its_program() -> None:
    verdict = session_ledger.classify("git status")
    assert (verdict.read_only, verdict.word, verdict.effect) == (True, "git", None)
    assert verdict.reason == "known to only read"
    assert [(p.text, p.read_only, p.effect, p.through) for p in verdict.parts] == [("git status", True, None, [])]


def test_each_part_of_a_classified_line_is_where_python_slices_it_with_its_wrappers_read_through() -> None:
    line = "echo café && timeout 5 cat notes.md | sed -i s/a/b/ f"
    verdict = session_ledger.classify(line)
    assert (verdict.read_only, verdict.word, verdict.effect) == (False, "-i", "writes")
    assert [line[p.start : p.end] for p in verdict.parts] == [p.text for p in verdict.parts]
    assert [p.text for p in verdict.parts] == ["echo café", "timeout 5 cat notes.md", "sed -i s/a/b/ f"]
    assert [(p.read_only, p.word, p.through) for p in verdict.parts] == [
        (True, "echo", []),
        (True, "cat", ["timeout"]),
        (False, "-i", []),
    ]


def test_a_line_the_grammar_refuses_is_never_read_only_and_names_the_construct() -> None:
    line = "cat café > notes.md"
    verdict = session_ledger.classify(line)
    assert (verdict.read_only, verdict.effect, verdict.refused) == (False, "construct", "redirection")
    assert verdict.refused_at is not None and line[verdict.refused_at :] == "> notes.md"
    assert verdict.parts == []
    assert session_ledger.classify("sudo ls").effect == "escalates"
    assert session_ledger.classify("frobnicate --now").effect == "unknown"


def test_a_classification_compares_by_value_and_its_repr_names_every_field() -> None:
    first, second = session_ledger.classify("ls -la"), session_ledger.classify("ls -la")
    assert first == second and hash(first) == hash(second) and first is not second
    assert first != session_ledger.classify("ls -l")
    assert repr(first) == (
        "Classification(line='ls -la', read_only=True, word='ls', effect=None, "
        "reason='known to only read', parts=[ClassifiedPart(text='ls -la', start=0, end=6, "
        "read_only=True, word='ls', effect=None, reason='known to only read', through=[])], "
        "refused=None, refused_at=None)"
    )
    with pytest.raises(TypeError) as wrong:
        session_ledger.classify(["ls"])  # type: ignore[arg-type]
    assert str(wrong.value) == "line must be a str, not list"


def test_decide_with_classify_approves_git_log_for_a_trust_reads_session(ledger: Ledger) -> None:
    reader(ledger)
    decision = ledger.decide("reader", "git log", classify=True)
    assert (decision.approved, decision.admitted_by, decision.reason) == (True, "trust_reads", "trust_reads")
    assert decision.classification == session_ledger.classify("git log")
    # Without classify=True nobody said it only reads: it asks, as before.
    plain = ledger.decide("reader", "git log")
    assert (plain.approved, plain.classification) == (False, None)


def test_decide_with_classify_asks_for_sed_in_place_and_names_the_i(ledger: Ledger) -> None:
    reader(ledger)
    decision = ledger.decide("reader", "sed -i s/a/b/ f", classify=True)
    assert (decision.approved, decision.admitted_by, decision.reason) == (False, None, "nothing")
    assert decision.classification is not None
    assert (decision.classification.read_only, decision.classification.word) == (False, "-i")
    assert decision.classification.effect == "writes"
    detail = ledger.decision_detail("reader", "sed -i s/a/b/ f", classify=True)
    assert detail["verdict"] == "ask"
    assert detail["reason"]["classification"]["word"] == "-i"


def test_read_only_and_classify_together_are_refused_as_invalid_input(ledger: Ledger) -> None:
    reader(ledger)
    calls: List[Callable[..., Any]] = [ledger.decide, ledger.decision_detail]
    for call in calls:
        with pytest.raises(InvalidInput) as both:
            call("reader", "git log", read_only=True, classify=True)
        assert both.value.kind == "invalid_classify"
        assert "give one, not both" in str(both.value)
    with pytest.raises(TypeError) as wrong:
        ledger.decide("reader", "git log", classify=1)  # type: ignore[arg-type]
    assert str(wrong.value) == "classify must be a bool, not int"


def test_a_git_wildcard_is_kept_from_git_c_and_the_ask_names_the_word_and_the_pattern(ledger: Ledger) -> None:
    ledger.create_root("worker", actor=ACTOR)
    assert ledger.add_pattern("worker", "git *", actor=ACTOR)
    assert ledger.decide("worker", "git log --oneline").approved
    decision = ledger.decide("worker", "git -c core.pager=sh log")
    assert (decision.approved, decision.reason) == (False, "nothing")
    assert (decision.kept_word, decision.kept_pattern) == ("-c", "git *")
    assert decision.kept_why is not None and "core.pager" in decision.kept_why
    assert ledger.decide("worker", "git log").kept_word is None


def test_a_pattern_for_npm_test_admits_it_run_through_timeout(ledger: Ledger) -> None:
    ledger.create_root("worker", actor=ACTOR)
    ledger.add_pattern("worker", "npm test", actor=ACTOR)
    decision = ledger.decide("worker", "timeout 5 npm test")
    assert (decision.approved, decision.admitted_by, decision.pattern) == (True, "pattern", "npm test")
    assert (decision.classification, decision.kept_word, decision.kept_pattern) == (None, None, None)
    detail = ledger.decision_detail("worker", "timeout 5 npm test")
    assert detail["reason"]["parts"][0]["inner"] == "npm test"
    # sudo is never read through: a pattern for the inner command does not admit it.
    assert not ledger.decide("worker", "sudo npm test").approved


def test_a_pattern_that_admits_any_command_is_refused_unless_the_operator_says_so(ledger: Ledger) -> None:
    ledger.create_root("w", actor=ACTOR)
    for pattern in ["sudo *", "*", "bash -c *"]:
        with pytest.raises(InvalidInput) as refused:
            ledger.add_pattern("w", pattern, actor=ACTOR)
        assert refused.value.kind == "invalid_pattern"
        assert "it admits any command" in str(refused.value)
        assert str(refused.value).endswith("takes an explicit choice (admit any command): pass admit_any_command=True")
    with pytest.raises(InvalidInput):
        ledger.add_pattern_checked("w", "sudo *", actor=ACTOR)
    assert ledger.patterns("w") == [] and ledger.audit(kind="pattern.add") == []
    assert ledger.add_pattern("w", "sudo *", actor=ACTOR, admit_any_command=True) is True
    assert ledger.patterns("w") == ["sudo *"]
    assert [e.detail["pattern"] for e in ledger.audit(kind="pattern.add")] == ["sudo *"]
    # Any other invalid pattern says nothing about the keyword: it would not help.
    with pytest.raises(InvalidInput) as malformed:
        ledger.add_pattern("w", "", actor=ACTOR)
    assert "admit_any_command" not in str(malformed.value)


def test_add_pattern_checked_answers_whether_it_added_and_the_warnings(ledger: Ledger) -> None:
    ledger.create_root("w", actor=ACTOR)
    added = ledger.add_pattern_checked("w", "rm -rf build/*", actor=ACTOR)
    assert added.added is True
    assert len(added.warnings) == 1 and "rm takes its target" in added.warnings[0]
    assert ledger.patterns("w") == ["rm -rf build/*"], "a pattern that warns is stored all the same"
    again = ledger.add_pattern_checked("w", "rm -rf build/*", actor=ACTOR)
    assert (again.added, again == added) == (False, False)
    plain = ledger.add_pattern_checked("w", "npm test *", actor=ACTOR, must_match=["npm test --watch"])
    assert repr(plain) == "PatternAdded(added=True, warnings=[])"
    # add_pattern keeps its answer: a bool.
    assert ledger.add_pattern("w", "npm test *", actor=ACTOR) is False


def test_review_patterns_lists_git_star_whose_wildcard_narrowed(ledger: Ledger) -> None:
    ledger.create_root("worker", actor=ACTOR)
    ledger.add_pattern("worker", "git *", actor="bob")
    ledger.add_pattern("worker", "npm test", actor=ACTOR)
    assert ledger.review_patterns() == ledger.review_patterns()
    [review] = ledger.review_patterns()
    assert (review.session, review.pattern, review.added_by) == ("worker", "git *", "bob")
    assert review.added_at == ledger.authority("worker").patterns[0].added_at
    assert review.reason.startswith("its wildcard no longer stands for -c ")
    ledger.end("worker", actor=ACTOR)
    assert ledger.review_patterns() == [], "only live sessions' patterns approve"


def test_decide_tool_approves_a_read_inside_the_rule_and_asks_outside_the_root(
    ledger: Ledger, tmp_path: "os.PathLike[str]"
) -> None:
    root = pathlib.Path(tmp_path) / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text("")
    ledger.create_root("tooled", actor=ACTOR)
    ledger.add_pattern("tooled", "Read(src/**)", actor=ACTOR)
    inside = ledger.decide_tool("tooled", "Read", path="src/lib.rs", root=root)
    assert inside.approved
    assert inside.reason == "tool_rule"
    assert inside.admitted_by == "tool_rule"
    assert inside.pattern == "Read(src/**)"
    outside = ledger.decide_tool("tooled", "Read", path="../escape", root=root)
    assert not outside.approved
    assert outside.reason == "nothing"
    fetch = ledger.decide_tool("tooled", "WebFetch", url="https://docs.rs/serde")
    assert not fetch.approved
