"""The exceptions the ledger raises.

They follow the Rust library's ``Error``, by what the caller can do about a failure:

- ``InvalidInput``: a value given is malformed or out of range (an id, an actor, a pattern, a
  token, a setting). Fix the value; nothing was written. Also a ``ValueError``.
- ``Conflict``: the request is well-formed but the ledger's state does not allow it. Its
  subclasses ``UnknownSession`` (also a ``KeyError``) and ``StalePreview`` are the two a
  caller most often handles; the others (an ended session, an id that was used, an archived
  session) are ``Conflict`` itself, told apart by ``kind``. Nothing was written.
- ``CreationRefused``: a creation bound refused a create; ``reason`` says which. Nothing was
  created; the refusal was recorded in the audit trail.
- ``StorageError``: the database cannot serve the request. Its subclass ``DurabilityUnknown``
  is a write that reached its commit without the ledger being able to vouch for it: it may or
  may not last, and must not be run again before looking (``seq`` and ``hash`` name it).
  ``DecisionsUnknown`` is the same for decision records (``records`` names them).
- ``CorruptionError``: the data breaks one of the ledger's invariants.

Every one carries the Rust error's message (``str(e)``, ``e.message``) and its stable
snake_case ``kind`` (``"invalid_id"``, ``"session_ended"``, ``"child_limit"``, ...). Branch on
the class or on ``kind``, never on the message.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "LedgerError",
    "InvalidInput",
    "Conflict",
    "UnknownSession",
    "StalePreview",
    "CreationRefused",
    "StorageError",
    "DurabilityUnknown",
    "DecisionsUnknown",
    "CorruptionError",
]


class LedgerError(Exception):
    """The root of every error the ledger raises.

    ``message`` is the Rust error's message, which ``str()`` gives unchanged; ``kind`` is its
    stable snake_case name. Raised as itself for a ledger that was closed (``kind`` is
    ``"closed"``).
    """

    message: str
    kind: str

    def __init__(self, message: str, kind: str = "ledger_error") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        # A KeyError's own __str__ would quote the message.
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, kind={self.kind!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.kind))


class InvalidInput(LedgerError, ValueError):
    """A value given is malformed or out of range; nothing was written."""


class Conflict(LedgerError):
    """The ledger's state does not allow the request; nothing was written.

    ``kind`` tells the cases apart: ``"session_ended"``, ``"session_exists"``,
    ``"unknown_pattern"``, ``"unknown_scope"``, ``"not_empty"``; for archives,
    ``"session_archived"`` (the session's rows left for an archive file, which the message
    names; its id is never used again: ``Ledger.archived`` says where), ``"archived"`` (what
    was asked lies in the archived part of the trail) and ``"not_archivable"`` (an archive of a
    tree with a session still running, or asked for neither a cut-off nor a tree); and the two
    with classes of their own, ``"unknown_session"`` and ``"stale_preview"``.
    """


class UnknownSession(Conflict, KeyError):
    """The ledger has no such session (and it is not a spawned id of one it has)."""


class StalePreview(Conflict):
    """The subtree changed since the preview whose token was given: nothing was revoked.

    Preview again, show the new count, and apply with the new token.
    """


class CreationRefused(LedgerError):
    """A creation bound refused the create; the refusal was audited, nothing was created.

    ``reason`` is the bound: ``"depth_limit"``, ``"child_limit"`` or ``"rate_limit"``.
    """

    reason: str

    def __init__(self, message: str, kind: str = "creation_refused", reason: str = "") -> None:
        super().__init__(message, kind)
        self.reason = reason or kind

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.kind, self.reason))


class StorageError(LedgerError):
    """The database cannot serve the request.

    ``kind`` says why: ``"no_ledger"``, ``"not_a_ledger"``, ``"schema_too_new"``,
    ``"read_only"``, ``"is_archive"`` (an archive file opened without ``read_only``: it is never
    written), or ``"storage"`` for a failure of the engine underneath; on PostgreSQL
    also ``"standby"`` (the server reached takes no writes), ``"unavailable"`` (no server took
    the operation within the failover wait; nothing was written), ``"not_committed"`` (the
    connection was lost during a write's commit, and the ledger found the write not done:
    running it again is safe), and ``"durability_unknown"``, raised as ``DurabilityUnknown``;
    and ``"decisions_unknown"``, raised as ``DecisionsUnknown``.
    """


class DurabilityUnknown(StorageError):
    """A write reached its commit, and whether it lasts is unknown.

    The server committed it but could not confirm it on its synchronous standby (the wait was
    cancelled), or the connection was lost during the commit and no server could say whether it
    was done. It may be in the ledger now and gone after a failover. Do not run it again
    blindly: look for it first. ``seq`` and ``hash`` are its newest audit row, which no other
    write has: ``ledger.verify_from(AuditHead.parse(f"{e.seq}:{e.hash}"))`` passes while it is in
    the trail.
    """

    seq: int
    hash: str

    def __init__(
        self, message: str, kind: str = "durability_unknown", seq: int = 0, hash: str = ""
    ) -> None:
        super().__init__(message, kind)
        self.seq = seq
        self.hash = hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.kind, self.seq, self.hash))


class DecisionsUnknown(StorageError):
    """Decision records whose append may or may not last: ``records`` are their own ids.

    On PostgreSQL the connection was lost while a record was appended, and no server could
    confirm it; from a ``DecisionRecorder``, the last append of its batch failed, and the
    records it holds (kept in memory and tried again) are not in the ledger yet. Look each one
    up with ``Ledger.decision(record)`` before treating it as recorded or as lost; the decision
    it records was not returned.
    """

    records: list[str]

    def __init__(
        self, message: str, kind: str = "decisions_unknown", records: Sequence[str] = ()
    ) -> None:
        super().__init__(message, kind)
        self.records = list(records)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.kind, self.records))


class CorruptionError(LedgerError):
    """The data breaks one of the ledger's invariants; the file needs inspection.

    The ledger refuses and keeps the data as it is; nothing is repaired.
    """


# They are the package's: `session_ledger.UnknownSession` in tracebacks, reprs and pickles.
for _class in (
    LedgerError,
    InvalidInput,
    Conflict,
    UnknownSession,
    StalePreview,
    CreationRefused,
    StorageError,
    DurabilityUnknown,
    DecisionsUnknown,
    CorruptionError,
):
    _class.__module__ = "session_ledger"
del _class
