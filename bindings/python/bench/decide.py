"""``Ledger.decide`` from Python against the same call made in Rust, and from 8 threads.

    python bindings/python/bench/decide.py [--sessions N] [--calls N] [--rounds N]

with the binding installed (``pip install ./bindings/python``, a release build). It builds a
ledger shaped like ``benches/decide.rs``'s: a root ``trusted`` granted ``trust`` with N sessions
below it (fan-out 10, each born with the inherited posture) and a root ``asking`` with N sessions
below it, each with two command patterns that do not match. Each measured call decides
``make deploy`` for the next session of a tree, round-robin, as the Rust bench does.

It prints, for each tree, the median over the rounds of

- ``rust``: the library's ``Ledger::decide`` in a Rust loop over the same ledger, in this
  process, with no Python in the loop (``_session_ledger._time_decide``, which releases the
  GIL for the whole loop);
- ``python``: ``Ledger.decide`` called from a Python loop, each call converting its arguments,
  releasing and retaking the GIL, and building the ``Decision``;

and the ratio python / rust (target: at most 2). Then, for each tree, the throughput of
``decide`` from 1 and from 8 Python threads sharing one ``Ledger`` (target: 8 threads at least
1.5 times 1 thread), and the same from 8 threads each running the Rust loop: what the library
itself allows on this machine. Last, the same 1 against 8 threads when each Python call runs 1, 2, 4 or 8 decides in
Rust between releasing and retaking the GIL: how the gain grows with the work per release.
The rounds alternate the sides, so that a change in the machine's load falls on both.
Load averages are printed at the start and the end: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, List

from session_ledger import Ledger, _session_ledger

COMMAND = "make deploy"
ACTOR = "bench"


def grow_tree(ledger: Ledger, root: str, n: int, fanout: int = 10) -> List[str]:
    """`n` sessions below `root`, breadth-first, `fanout` children each, as benches/support."""
    made: List[str] = []
    parents = [root]
    while len(made) < n:
        next_parents: List[str] = []
        for parent in parents:
            for k in range(fanout):
                if len(made) == n:
                    return made
                child = f"{parent}.{k}"
                ledger.create_child(child, creator=parent, actor=ACTOR)
                made.append(child)
                next_parents.append(child)
        parents = next_parents
    return made


def python_loop(ledger: Ledger, ids: List[str], calls: int) -> float:
    """Seconds for `calls` decides from a Python loop."""
    count = len(ids)
    decide = ledger.decide
    start = time.perf_counter()
    for i in range(calls):
        decide(ids[i % count], COMMAND)
    return time.perf_counter() - start


def rust_loop(ledger: Ledger, ids: List[str], calls: int) -> float:
    """Seconds for `calls` decides from a Rust loop."""
    seconds: float = _session_ledger._time_decide(ledger, ids, COMMAND, False, calls)  # type: ignore[attr-defined]
    return seconds


def threaded(threads: int, work: Callable[[int], None]) -> float:
    """Wall seconds for `threads` threads each running `work(index)`, started together."""
    barrier = threading.Barrier(threads + 1)

    def run(index: int) -> None:
        barrier.wait()
        work(index)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in pool:
        thread.join()
    return time.perf_counter() - start


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000, help="sessions per tree (5000)")
    parser.add_argument("--calls", type=int, default=20000, help="calls per measurement (20000)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per side (7)")
    args = parser.parse_args()
    print(f"load average at start: {load()}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ledger.db"
        with Ledger(path, create=True, creation_rate=(1_000_000, 1.0)) as builder:
            builder.create_root("trusted", actor=ACTOR)
            builder.grant("trusted", "trust", actor=ACTOR)
            trusted = grow_tree(builder, "trusted", args.sessions)
            builder.create_root("asking", actor=ACTOR)
            asking = grow_tree(builder, "asking", args.sessions)
            for session in asking:
                for pattern in ["npm test *", "cargo check"]:
                    builder.add_pattern(session, pattern, actor=ACTOR)
        with Ledger(path) as ledger:
            for session in trusted:
                assert ledger.decide(session, COMMAND).admitted_by == "trust"
            for session in asking:
                assert not ledger.decide(session, COMMAND).approved
            for name, ids in [("inherited_trust", trusted), ("asks", asking)]:
                rust: List[float] = []
                python: List[float] = []
                for round in range(args.rounds):
                    sides = [(rust, rust_loop), (python, python_loop)]
                    for into, loop in sides if round % 2 == 0 else reversed(sides):
                        into.append(loop(ledger, ids, args.calls) / args.calls)
                r, p = statistics.median(rust), statistics.median(python)
                print(
                    f"decide/{name}: rust {r * 1e6:.2f} µs, python {p * 1e6:.2f} µs, "
                    f"ratio python/rust {p / r:.2f} (target ≤ 2)"
                )

            per_thread = args.calls // 8
            for name, ids in [("inherited_trust", trusted), ("asks", asking)]:
                one: List[float] = []
                two: List[float] = []
                eight: List[float] = []
                eight_rust: List[float] = []
                for round in range(args.rounds):
                    measurements = [
                        (one, 1, lambda i: python_loop(ledger, ids, per_thread * 8) and None),
                        (two, 2, lambda i: python_loop(ledger, ids[i::2], per_thread * 4) and None),
                        (eight, 8, lambda i: python_loop(ledger, ids[i::8], per_thread) and None),
                        (eight_rust, 8, lambda i: rust_loop(ledger, ids[i::8], per_thread) and None),
                    ]
                    if round % 2:
                        measurements.reverse()
                    for into, threads, work in measurements:
                        into.append(per_thread * 8 / threaded(threads, work))
                t1, t2, t8, r8 = (statistics.median(x) for x in (one, two, eight, eight_rust))
                print(
                    f"decide/{name} throughput: 1 thread {t1:,.0f}/s, 2 threads {t2:,.0f}/s "
                    f"({t2 / t1:.2f}), 8 threads {t8:,.0f}/s, ratio 8/1 {t8 / t1:.2f} (target ≥ 1.5); "
                    f"8 threads of the Rust loop {r8:,.0f}/s ({r8 / t1:.2f})"
                )
            # How the 8 threads' gain grows with the Rust work per GIL release: each Python
            # call runs `k` decides in Rust (`_time_decide` on one session) between releasing
            # and retaking the GIL.
            for k in (1, 2, 4, 8):
                calls_k = args.calls // k

                def batches(ids: List[str], n: int, k: int = k) -> None:
                    for j in range(n):
                        rust_loop(ledger, [ids[j % len(ids)]], k)

                single: List[float] = []
                many: List[float] = []
                for round in range(args.rounds):
                    for into, threads in [(single, 1), (many, 8)] if round % 2 == 0 else [(many, 8), (single, 1)]:
                        into.append(
                            calls_k * k / threaded(threads, lambda i: batches(trusted[i::threads], calls_k // threads))
                        )
                s1, s8 = statistics.median(single), statistics.median(many)
                print(
                    f"decide/inherited_trust, {k} per GIL release: 1 thread {s1:,.0f}/s, "
                    f"8 threads {s8:,.0f}/s, ratio {s8 / s1:.2f}"
                )
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
