"""The examples run, on each engine: examples/python/dashboard_hooks.py shows each touch point,
and docs/python.md's worked example, its example of what a command does, and its example of
recording decisions, print exactly the lines the guide shows under them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from session_ledger import Ledger

from conftest import Place

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python" / "dashboard_hooks.py"
GUIDE = ROOT / "docs" / "python.md"
# The path the guide's snippet opens, which the test points at the test's own ledger.
GUIDE_PATH = '"/var/lib/dashboard/ledger.db"'


def guide_example(heading: str = "A worked example") -> tuple[str, str]:
    """An example of docs/python.md's section ``heading``: the Python snippet, and the text
    block that the line "Running the example prints:" introduces."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(
        r"```python\n(.*?)```\n\nRunning the example prints:\n\n```text\n(.*?)```", section, re.DOTALL
    )
    assert found, f"docs/python.md's {heading!r}: a python block, then 'Running the example prints:' and a text block"
    return found.group(1), found.group(2)


def run_guide_example(place: Place, heading: str) -> None:
    """Runs the example of the guide's section ``heading`` on the test's ledger, and compares
    what it prints with what the guide shows."""
    snippet, shown = guide_example(heading)
    assert snippet.count(GUIDE_PATH) == 1, "the snippet opens its ledger at one path"
    code = snippet.replace(GUIDE_PATH, repr(place.target))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=place.folder)
    assert run.returncode == 0, run.stderr
    assert run.stdout == shown


def test_the_dashboard_hooks_example_runs_and_shows_each_touch_point(place: Place) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), place.target],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "boot: posture epoch 1 started (0 postures lapsed, 0 carried)" in lines
    assert "create worker-1 by conductor, depth 1: born with trust" in lines
    assert (
        "approve worker-1.review: 'make deploy' runs, admitted by trust "
        "(conductor -> worker-1 -> worker-1.review)"
    ) in lines
    assert (
        "trust off conductor: 4 sessions would lose their posture: "
        "conductor, worker-1, sub-worker-1-1, worker-1.review"
    ) in lines
    assert "trust off conductor: revoked from 4 sessions" in lines
    assert "approve worker-1.review: 'make deploy' asks the operator (nothing)" in lines
    assert "create reviewer.1 by reviewer, depth 1: born with trust_reads" in lines
    assert "boot: posture epoch 2 started (2 postures lapsed, 0 carried)" in lines
    assert lines[-1].endswith("chain verifies: True")

    with Ledger(place.target, read_only=True) as ledger:
        assert ledger.current_epoch() == 2
        assert [e.kind for e in ledger.audit(kind="epoch.start")] == ["epoch.start"] * 2


def test_the_guide_s_worked_example_prints_exactly_what_the_guide_shows(place: Place) -> None:
    run_guide_example(place, "A worked example")


def test_the_guide_s_command_example_prints_exactly_what_the_guide_shows(place: Place) -> None:
    run_guide_example(place, "What a command does")


def test_the_guide_s_recording_example_prints_exactly_what_the_guide_shows(place: Place) -> None:
    run_guide_example(place, "Recording decisions")
