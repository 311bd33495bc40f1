"""session-ledger for Python: a ledger of agent sessions, in-process.

A conductor session dispatches workers; a worker may dispatch more, or spawn sub-agents. The
ledger records who created whom, so that labels (taint) and trust postures follow the dispatch
tree, a revocation reaches every descendant in one statement, and every change is in a
hash-chained audit trail. It runs on a SQLite file or a PostgreSQL database.

This package is a thin layer over the Rust library: ``Ledger`` and the result classes come from
the private extension module ``session_ledger._session_ledger``, and every call releases the
GIL while the ledger works, so one ``Ledger`` serves many threads (and ``asyncio`` through
``asyncio.to_thread``). docs/python.md has the guide; the types are in ``__init__.pyi``.

    >>> import session_ledger
    >>> with session_ledger.Ledger(path) as ledger:            # doctest: +SKIP
    ...     ledger.create_root("conductor", actor="alice")
    ...     ledger.grant("conductor", "trust", actor="alice")
    ...     ledger.create_child("worker-1", creator="conductor", actor="alice").inherited_trust
    True
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from ._errors import (
    Conflict,
    CorruptionError,
    CreationRefused,
    DecisionsUnknown,
    DurabilityUnknown,
    InvalidInput,
    LedgerError,
    StalePreview,
    StorageError,
    UnknownSession,
)
from ._session_ledger import (
    AUDIT_KINDS,
    OCSF_VERSION,
    SCHEMA_VERSION,
    AuditEntry,
    AuditHead,
    Created,
    Decision,
    EpochStart,
    Explanation,
    Label,
    Ledger,
    Posture,
    RaiseOutcome,
    Revocation,
    Scope,
    Session,
    SessionState,
    TreeNode,
    Verification,
    __version__,
    generate_key,
    restore,
    verifier_key,
    verify_receipt,
)

# The tree one level at a time (`Ledger.tree_level`).
from ._session_ledger import LevelNode, TreeLevel

# Everything that approves for a session, and what a stop leaves approving or takes.
from ._session_ledger import Affected, Authority, CommandPattern, Ended, StandingGrant, Withheld

# What a command does: the classifier, and what adding or reviewing a pattern says.
from ._session_ledger import Classification, ClassifiedPart, PatternAdded, PatternReview, classify

# Decision records: a decision recorded as it is made, or in batches by a recorder.
from ._session_ledger import DecisionRecord, DecisionRecorder, Integrated

# The words that cross the boundary, for annotating code that passes them on.
Taint = Literal["public", "private", "secret"]
PostureLevel = Literal["trust", "trust_reads"]
Propagation = Literal["local", "cascade", "preview"]
AdmittedBy = Literal["trust", "trust_reads", "pattern", "tool_rule", "scope"]
Origin = Literal["root", "created", "spawned"]
GrantKind = Literal["scope", "pattern"]
WithheldKind = Literal["session_ended", "lapsed_posture", "refused_pattern"]
Effect = Literal[
    "runs",
    "writes_to",
    "writes",
    "deletes",
    "sends",
    "escalates",
    "environment",
    "unknown",
    "construct",
]
Verdict = Literal["approve", "ask", "deny"]
DecisionAuthority = Literal[
    "trust",
    "trust_reads",
    "pattern",
    "tool_rule",
    "scope",
    "nothing",
    "session_ended",
    "unknown_session",
]
Reason = Literal[
    "trust",
    "trust_reads",
    "pattern",
    "tool_rule",
    "scope",
    "unknown_session",
    "session_ended",
    "nothing",
    "other",
]


class CreationRate(NamedTuple):
    """The creation-rate bound: at most ``max_creations`` sessions created by one creator
    within any ``per_seconds`` seconds (the library's default is 200 per 60 seconds).

    Pass it as ``Ledger(path, creation_rate=CreationRate(200, 60.0))``; a plain tuple
    ``(200, 60.0)`` is the same.
    """

    max_creations: int
    per_seconds: float


__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    "AUDIT_KINDS",
    "OCSF_VERSION",
    "generate_key",
    "verifier_key",
    "verify_receipt",
    "restore",
    "Ledger",
    "CreationRate",
    "Taint",
    "PostureLevel",
    "Propagation",
    "AdmittedBy",
    "Origin",
    "Reason",
    "AuditEntry",
    "AuditHead",
    "Created",
    "Decision",
    "EpochStart",
    "Explanation",
    "Label",
    "Posture",
    "RaiseOutcome",
    "Revocation",
    "Scope",
    "Session",
    "SessionState",
    "TreeNode",
    "Verification",
    "LedgerError",
    "InvalidInput",
    "Conflict",
    "UnknownSession",
    "StalePreview",
    "CreationRefused",
    "StorageError",
    "DurabilityUnknown",
    "CorruptionError",
]
__all__ += ["LevelNode", "TreeLevel"]
__all__ += ["DecisionRecord", "DecisionRecorder", "Integrated", "DecisionsUnknown", "Verdict", "DecisionAuthority"]
__all__ += [
    "Affected",
    "Authority",
    "CommandPattern",
    "Ended",
    "StandingGrant",
    "Withheld",
    "GrantKind",
    "WithheldKind",
]
__all__ += [
    "classify",
    "Classification",
    "ClassifiedPart",
    "Effect",
    "PatternAdded",
    "PatternReview",
]
