"""examples/python/dashboard_hooks.py runs, on each engine, and shows each touch point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from session_ledger import Ledger

from conftest import Place

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "dashboard_hooks.py"


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
