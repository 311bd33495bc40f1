"""One Ledger shared by threads and by asyncio: every call releases the GIL while it works.

The tests that hold the SQLite write lock from another process (as another writer would) run on
SQLite only: a call waiting for that lock must leave the other threads, and the event loop, free
to run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, List

from session_ledger import Created, Ledger, LedgerError, SessionState

from conftest import ACTOR, Place, WriteLockHolder

# How long a thread may take before a test calls it stuck.
PATIENCE = 60.0


def run_threads(targets: List[Callable[[], None]]) -> List[BaseException]:
    """Runs each target in its own thread, joins them all, and returns what they raised."""
    errors: List[BaseException] = []

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as e:  # reported to the test, which fails on it
                errors.append(e)

        return run

    # Daemons: a stuck thread fails its test and does not keep the test run from ending.
    threads = [threading.Thread(target=guarded(t), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE)
        assert not thread.is_alive(), "a thread is stuck"
    return errors


def test_a_create_racing_a_cascade_from_another_thread_leaves_no_trusted_child(place: Place) -> None:
    # Bounds lifted: the creating thread makes as many children as the race takes.
    ledger = place.open(max_live_children=100_000, creation_rate=(100_000, 60.0))
    for round in range(4):
        conductor = f"conductor-{round}"
        ledger.create_root(conductor, actor=ACTOR)
        ledger.grant(conductor, "trust", actor=ACTOR)
        created: List[Created] = []
        cascaded = threading.Event()
        deadline = time.monotonic() + PATIENCE

        def create() -> None:
            # Creates until three children exist that began after the cascade committed.
            after = 0
            while after < 3 and time.monotonic() < deadline:
                began_after = cascaded.is_set()
                created.append(ledger.create_child(f"{conductor}.w{len(created)}", creator=conductor, actor=ACTOR))
                after += began_after
                # A breather: back to back, one thread's creates can keep the waiting cascade
                # from the write lock for a long while (a waiting SQLite writer polls).
                time.sleep(0.001)

        def cascade() -> None:
            while len(created) < 3 and time.monotonic() < deadline:
                time.sleep(0.001)
            ledger.revoke(conductor, "cascade", actor=ACTOR, unchecked=True)
            cascaded.set()

        assert run_threads([create, cascade]) == []
        assert cascaded.is_set()
        nodes = ledger.tree(conductor)
        assert len(nodes) == len(created) + 1
        trusted = [n.id for n in nodes if n.trust or n.trust_reads]
        assert trusted == [], f"round {round}: trusted after the cascade: {trusted}"
        born_trusted = [c.id for c in created if c.inherited_trust]
        assert born_trusted, "some children were created before the cascade"
        assert not created[-1].inherited_trust, "a child created after the cascade inherits nothing"
        for child in born_trusted:
            assert ledger.audit(session=child, kind="posture.revoke"), f"{child} was not caught by the cascade"


def test_eight_threads_sharing_one_ledger_make_progress_together(ledger: Ledger) -> None:
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    workers = [f"worker-{i}" for i in range(8)]
    for worker in workers:
        ledger.create_child(worker, creator="conductor", actor=ACTOR)
        ledger.state(worker)
    barrier = threading.Barrier(len(workers))
    first_done: List[float] = []
    last_started: List[float] = []
    rounds = 40

    def work(worker: str) -> Callable[[], None]:
        def run() -> None:
            barrier.wait(PATIENCE)
            for i in range(rounds):
                if i == rounds - 1:
                    last_started.append(time.monotonic())
                decision = ledger.decide(worker, "make deploy")
                assert decision.approved and decision.chain == ["conductor", worker]
                assert ledger.state(worker).trust
                if i % 10 == 5:
                    # Writes too: a child, and a spawned sub-agent's first read.
                    assert ledger.create_child(f"{worker}.{i}", creator=worker, actor=ACTOR).inherited_trust
                    assert ledger.state(f"sub-{worker}-{i}").trust
                if i == 0:
                    first_done.append(time.monotonic())

        return run

    assert run_threads([work(w) for w in workers]) == []
    # Every thread had its first answers before any began its last round: they ran together,
    # not one after the other.
    assert len(first_done) == len(last_started) == len(workers)
    assert max(first_done) < min(last_started)
    assert len(ledger.tree("conductor")) == 1 + 8 + 8 * 4 + 8 * 4


def test_a_call_waiting_for_the_write_lock_does_not_stop_other_threads_reads(sqlite_place: Place) -> None:
    ledger = sqlite_place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)
    holder = WriteLockHolder(sqlite_place.target)
    outcome: List[Created] = []
    writer = threading.Thread(
        target=lambda: outcome.append(ledger.create_child("worker", creator="conductor", actor=ACTOR))
    )
    try:
        writer.start()
        time.sleep(0.3)
        assert writer.is_alive(), "the create should be waiting for the write lock"
        reads: List[SessionState] = []

        def read() -> None:
            for _ in range(50):
                reads.append(ledger.state("conductor"))

        # Were the waiting call holding the GIL, none of these could even start.
        started = time.monotonic()
        assert run_threads([read for _ in range(4)]) == []
        assert len(reads) == 200 and all(r.trust for r in reads)
        assert writer.is_alive(), "the create is still waiting: the reads went past it"
        assert time.monotonic() - started < 10
    finally:
        holder.release()
    writer.join(PATIENCE)
    assert not writer.is_alive()
    assert [c.inherited_trust for c in outcome] == [True]


def test_asyncio_callers_use_to_thread_and_the_loop_runs_while_a_call_waits(sqlite_place: Place) -> None:
    ledger = sqlite_place.open()
    ledger.create_root("conductor", actor=ACTOR)
    ledger.grant("conductor", "trust", actor=ACTOR)

    async def main() -> None:
        holder = WriteLockHolder(sqlite_place.target)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        create = asyncio.create_task(
            asyncio.to_thread(ledger.create_child, "worker", creator="conductor", actor=ACTOR)
        )
        try:
            await asyncio.sleep(0.3)
            assert not create.done(), "the create should be waiting for the write lock"
            assert ticks >= 10, f"the event loop ran only {ticks} ticks while the create waited"
            states = await asyncio.gather(*(asyncio.to_thread(ledger.state, "conductor") for _ in range(8)))
            assert all(s.trust for s in states)
            decisions = await asyncio.gather(
                *(asyncio.to_thread(ledger.decide, "conductor", "make deploy") for _ in range(8))
            )
            assert all(d.approved for d in decisions)
        finally:
            holder.release()
        created = await asyncio.wait_for(create, PATIENCE)
        assert created.inherited_trust
        ticker.cancel()

    asyncio.run(main())


def test_closing_while_other_threads_call_lets_each_call_finish_or_say_closed(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("conductor", actor=ACTOR)
    outcomes: List[str] = []
    go = threading.Barrier(5)

    def call() -> None:
        go.wait(PATIENCE)
        for _ in range(200):
            try:
                ledger.decide("conductor", "ls")
                outcomes.append("answered")
            except LedgerError as e:
                assert e.kind == "closed", e
                outcomes.append("closed")
                return

    def close() -> None:
        go.wait(PATIENCE)
        time.sleep(0.01)
        ledger.close()

    assert run_threads([call, call, call, call, close]) == []
    assert ledger.closed
    assert "answered" in outcomes
