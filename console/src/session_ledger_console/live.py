"""Live updates: one watcher of the audit head for the whole console, and the chain's
verification state.

Every change to the ledger writes an audit row in its own transaction, whoever makes it (this
console, the command line in another process, another node on PostgreSQL), so the audit head
moves exactly when the ledger changes: watching it is one indexed read, however large the
ledger, where watching the tables would not be. The watcher reads the head every quarter of a
second while a browser listens, and each listener gets the new head as a Server-Sent Event; the
page then reloads the parts it shows.

The verification state is kept the same way an auditor's routine check is (docs/operations.md):
the whole chain is verified once in the background when the console starts, and from then on
only the rows written since the last verified head (``verify_from``), each time the audit page
is shown.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import AsyncIterator, Optional

from session_ledger import AuditHead, Ledger, LedgerError

#: How often the head is read while someone listens, in seconds.
POLL_SECONDS = 0.25


class HeadWatcher:
    """Reads the audit head while anyone listens, and wakes the listeners when it moves."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._head: Optional[AuditHead] = None
        # Made on first use, inside the server's event loop.
        self._condition: Optional[asyncio.Condition] = None
        self._listeners = 0
        self._task: Optional["asyncio.Task[None]"] = None

    @property
    def _changed(self) -> asyncio.Condition:
        if self._condition is None:
            self._condition = asyncio.Condition()
        return self._condition

    async def _read(self) -> AuditHead:
        return await asyncio.to_thread(self._ledger.audit_head)

    async def _poll(self) -> None:
        while self._listeners > 0:
            try:
                head: Optional[AuditHead] = await self._read()
            except LedgerError:
                head = self._head
            if head is not None and (self._head is None or head.seq > self._head.seq):
                async with self._changed:
                    self._head = head
                    self._changed.notify_all()
            await asyncio.sleep(POLL_SECONDS)
        self._task = None

    async def listen(self, keepalive: float) -> AsyncIterator[Optional[str]]:
        """Yields the head now, then each newer head, for as long as the caller iterates;
        `None` after `keepalive` seconds without a change, so that the stream shows it is
        alive. The head is read afresh first, so that a page that just loaded is not told of a
        change its own render already showed; later heads are only ever newer (the audit
        trail's `seq` only grows), never an older one the watcher read before."""
        self._listeners += 1
        if self._task is None:
            self._task = asyncio.create_task(self._poll())
        try:
            seen = await self._read()
            yield str(seen)
            while True:
                try:
                    async with self._changed:
                        await asyncio.wait_for(
                            self._changed.wait_for(
                                lambda: self._head is not None and self._head.seq > seen.seq
                            ),
                            keepalive,
                        )
                        assert self._head is not None
                        seen = self._head
                except asyncio.TimeoutError:
                    yield None
                    continue
                yield str(seen)
        finally:
            self._listeners -= 1


@dataclass
class ChainState:
    """What the console knows of the audit chain."""

    #: ``None`` until the first verification finished.
    ok: Optional[bool]
    rows: int
    head: Optional[AuditHead]
    first_bad_seq: Optional[int]
    problem: Optional[str]
    checked_at: Optional[datetime]


class Verifier:
    """The whole chain once, then only what was written since the last verified head."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._lock = threading.Lock()
        self.state = ChainState(None, 0, None, None, None, None)
        self.ready = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._first, name="verify-chain", daemon=True).start()

    def _first(self) -> None:
        try:
            with self._lock:
                v = self._ledger.verify()
                self.state = ChainState(v.ok, v.rows, v.head, v.first_bad_seq, v.problem, datetime.now(timezone.utc))
        except LedgerError as e:
            self.state = ChainState(False, 0, None, None, str(e), datetime.now(timezone.utc))
        finally:
            self.ready.set()

    def refresh(self) -> ChainState:
        """Verifies the rows written since the last verified head, when the first verification
        is done and the chain was intact; returns the state."""
        if not self.ready.is_set() or not self._lock.acquire(blocking=False):
            return self.state
        try:
            state = self.state
            if state.ok and state.head is not None:
                v = self._ledger.verify_from(state.head)
                rows = state.rows + max(v.rows - 1, 0)
                self.state = ChainState(v.ok, rows, v.head, v.first_bad_seq, v.problem, datetime.now(timezone.utc))
        except LedgerError as e:
            self.state = ChainState(False, self.state.rows, self.state.head, None, str(e), datetime.now(timezone.utc))
        finally:
            self._lock.release()
        return self.state
