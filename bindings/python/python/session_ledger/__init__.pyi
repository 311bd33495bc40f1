"""session-ledger for Python: a ledger of agent sessions, in-process.

The types of the ``session_ledger`` package, written by hand (the classes are defined in Rust).
docs/python.md is the guide. Words used throughout:

- a **root** is a session with no creator; its depth is 0, every other session's is its
  creator's + 1. A **created child** is made by ``create_child``; a **spawned child** has an id
  ``sub-<parent>-<n>`` that the ledger never saw being made, and is recorded on first sight.
- a **label** is a taint class (``"public"`` < ``"private"`` < ``"secret"``) and an
  ``untrusted`` flag; labels only rise. A session is **materialized** once its label is written:
  a child is not at birth, and its first read inherits its nearest materialized ancestor's.
- a **posture** (``"trust"``, ``"trust_reads"``) follows a delegation: a child is born with its
  creator's. A **grant** (command pattern, override scope) is judged for one session and never
  passes on.

Every ``actor`` is the name recorded in the audit trail: 1 to 64 characters from
``[A-Za-z0-9._:@-]``. Ids are 1 to 128 characters from ``[A-Za-z0-9._:-]``, starting with a
letter or digit.
"""

import os
from datetime import datetime
from typing import Any, Dict, List, Literal, NamedTuple, Optional, Sequence, Tuple, Type, Union, final
from types import TracebackType

from ._errors import (
    Conflict as Conflict,
    CorruptionError as CorruptionError,
    CreationRefused as CreationRefused,
    DecisionsUnknown as DecisionsUnknown,
    DurabilityUnknown as DurabilityUnknown,
    InvalidInput as InvalidInput,
    LedgerError as LedgerError,
    StalePreview as StalePreview,
    StorageError as StorageError,
    UnknownSession as UnknownSession,
)

__all__ = [
    "__version__",
    "SCHEMA_VERSION",
    "AUDIT_KINDS",
    "OCSF_VERSION",
    "generate_key",
    "verifier_key",
    "verify_receipt",
    "restore",
    "classify",
    "Ledger",
    "CreationRate",
    "Taint",
    "PostureLevel",
    "Propagation",
    "AdmittedBy",
    "Origin",
    "Reason",
    "GrantKind",
    "WithheldKind",
    "Effect",
    "Verdict",
    "DecisionAuthority",
    "AuditEntry",
    "AuditHead",
    "Affected",
    "Authority",
    "Classification",
    "ClassifiedPart",
    "CommandPattern",
    "Created",
    "Decision",
    "DecisionRecord",
    "DecisionRecorder",
    "Integrated",
    "Ended",
    "EpochStart",
    "Explanation",
    "Label",
    "PatternAdded",
    "PatternReview",
    "Posture",
    "RaiseOutcome",
    "Revocation",
    "Scope",
    "Session",
    "SessionState",
    "StandingGrant",
    "TreeNode",
    "Verification",
    "Withheld",
    "LevelNode",
    "TreeLevel",
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

__version__: str
"""The package's version (the Rust crate's)."""

SCHEMA_VERSION: int
"""The newest SQLite schema version this build reads and writes."""

OCSF_VERSION: str
"""The OCSF schema version of ``Ledger.export(..., format="ocsf")``'s events."""

AUDIT_KINDS: list[str]
"""Every kind of audit row this build writes, as ``audit(kind=...)`` takes them."""

def generate_key(name: str) -> str:
    """A new Ed25519 signing key named ``name`` (a schema-less URL, like
    ``"example.com/ledger"``), as its key file's text: keep it out of the database."""

def verifier_key(key: str) -> str:
    """The verifier key (``NAME+KEYID+BASE64``) of a signing key's text, for auditors."""

def verify_receipt(
    receipt: str, verifier_key: str, row: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """Checks a receipt from ``Ledger.prove`` offline with the verifier key, for ``row`` (the
    row as a ``dict`` of the command line's ``--json audit`` form) or the row the receipt
    carries: ``{"ok", "seq", "checkpoint", "why"}``."""

def restore(
    backup: Union[str, "os.PathLike[str]"],
    to: Union[str, "os.PathLike[str]"],
    *,
    checkpoint: Optional[str] = None,
    verifier_key: Optional[str] = None,
) -> Dict[str, Any]:
    """Puts the SQLite backup ``backup`` (a file ``Ledger.backup`` or ``session-ledger
    backup`` wrote) in the place ``to``, where no ledger is, once it passes the checks a backup
    gets, and, with ``checkpoint`` (a note kept elsewhere) and its ``verifier_key``, verifies
    against it. Returns ``{"from", "to", "head", "verification", "check", "checkpoint", "ok"}``;
    nothing is written unless ``ok``. Raises ``InvalidInput`` (kind ``"invalid_config"``) when
    ``to`` or its ``-wal``, ``-shm`` or ``-journal`` exists: stop every process that uses the
    ledger and move its files aside first."""

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
"""What a word makes a command do besides reading: ``"runs"`` another program (``find -exec``,
``git -c``, ``rg --pre``, a wrapper's command), ``"writes_to"`` a file an option names
(``sort -o``, ``curl -o``), ``"writes"`` files or state (``rm``, ``git commit``, ``sed -i``),
``"deletes"`` what it finds (``find -delete``), ``"sends"`` data (``curl -X POST``),
``"escalates"`` privileges (``sudo``, ``doas``), changes the ``"environment"`` of what it runs
(``NAME=value``), is ``"unknown"`` to the classifier (an allowlist: a program, subcommand or
option it has no rule for), or is a ``"construct"`` of the line that is never read-only (a
redirection, a substitution, an expansion)."""
Verdict = Literal["approve", "ask", "deny"]
"""A recorded decision's verdict (``DecisionRecord.verdict``)."""
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
"""What decided a recorded decision (``DecisionRecord.authority``): what approved it, or why
nothing did."""
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

def classify(line: str) -> Classification:
    """Is ``line`` known to only read? The ledger's classifier, with no ledger: the line is read
    as ``decide`` and command patterns read it, wrappers are read through (``timeout 5 cat x``
    is ``cat x``, ``bash -c 'ls; pwd'`` is its two commands; ``sudo`` is never read-only), and
    each program's rule looks at its words. A line is read-only only when every simple command
    in it is a program the classifier knows, used in a way known not to write, run another
    program, escalate or send; an unknown program is not read-only, and a construct the
    grammar refuses (a redirection, a substitution, an expansion) never is. Every verdict names
    the word that decided it. Releases the GIL while it reads."""

class CreationRate(NamedTuple):
    """The creation-rate bound: at most ``max_creations`` sessions created by one creator
    within any ``per_seconds`` seconds (the library's default is 200 per 60 seconds).

    ``CreationRate(200, 60.0)``; a plain tuple ``(200, 60.0)`` is the same.
    """

    max_creations: int
    per_seconds: float

@final
class Created:
    """A session just recorded by ``create_root`` or ``create_child``, and what it was born
    with. A root inherits nothing; a child inherits its creator's posture as it stood when the
    child was allocated (``trust_reads`` never widens to ``trust``)."""

    @property
    def id(self) -> str:
        """The session's id."""
    @property
    def created_by(self) -> Optional[str]:
        """Its creator; ``None`` for a root."""
    @property
    def depth(self) -> int:
        """0 for a root, its creator's depth + 1 otherwise."""
    @property
    def inherited_trust(self) -> bool:
        """It was born holding its creator's ``trust``."""
    @property
    def inherited_trust_reads(self) -> bool:
        """It was born holding its creator's ``trust_reads``."""
    @property
    def created_at(self) -> datetime:
        """When the ledger recorded it (aware, UTC)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Session:
    """A recorded session: its lineage and its lifetime."""

    @property
    def id(self) -> str:
        """The session's id."""
    @property
    def created_by(self) -> Optional[str]:
        """The session that created or spawned it; ``None`` for a root."""
    @property
    def depth(self) -> int:
        """0 for a root, its creator's depth + 1 otherwise."""
    @property
    def origin(self) -> Origin:
        """``"root"``, ``"created"`` (by ``create_child``) or ``"spawned"`` (a ``sub-<parent>-<n>``
        id recorded on first sight)."""
    @property
    def created_at(self) -> datetime:
        """When the ledger recorded it (aware, UTC)."""
    @property
    def ended_at(self) -> Optional[datetime]:
        """When it ended; ``None`` while it is live."""
    @property
    def live(self) -> bool:
        """True while it has not ended. An ended session stays as a tombstone; its id is
        never reused."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class SessionState:
    """A session's label and posture, as ``Ledger.state`` reads them."""

    @property
    def id(self) -> str:
        """The session asked about."""
    @property
    def taint(self) -> Taint:
        """Its taint class."""
    @property
    def untrusted(self) -> bool:
        """Whether it has read untrusted data."""
    @property
    def trust(self) -> bool:
        """It is live and holds ``trust`` in the current epoch."""
    @property
    def trust_reads(self) -> bool:
        """It is live and holds ``trust_reads`` in the current epoch."""
    @property
    def known(self) -> bool:
        """False when the ledger does not know the id at all: the label is the default
        (``"private"``, trusted) and nothing was written."""
    @property
    def materialized(self) -> bool:
        """Its label is stored. False for an unknown id, and on a read-only ledger for a
        session whose first read would have recorded an inherited label (the label given is
        that inherited one, not recorded)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Label:
    """A label: a taint class and the untrusted flag."""

    @property
    def taint(self) -> Taint:
        """The taint class."""
    @property
    def untrusted(self) -> bool:
        """The untrusted flag."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class RaiseOutcome:
    """What ``raise_label`` did. ``str()`` says it in words, and why nothing changed when a
    class below the session's was asked for: labels only rise."""

    @property
    def id(self) -> str:
        """The session raised."""
    @property
    def requested_taint(self) -> Optional[Taint]:
        """The class asked for, or ``None`` when only ``untrusted`` was."""
    @property
    def requested_untrusted(self) -> bool:
        """Whether ``untrusted`` was asked for."""
    @property
    def before(self) -> Label:
        """Its label before (after any first-read inheritance)."""
    @property
    def after(self) -> Label:
        """Its label after."""
    @property
    def changed(self) -> bool:
        """False when the label already dominated the request: nothing was written."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __str__(self) -> str: ...

@final
class Posture:
    """A posture a session holds, with its provenance back to the operator's grant."""

    @property
    def session(self) -> str:
        """The session holding it."""
    @property
    def level(self) -> PostureLevel:
        """``"trust"`` or ``"trust_reads"``."""
    @property
    def source(self) -> Literal["granted", "inherited"]:
        """Granted on this session, or inherited from its creator."""
    @property
    def granted_by(self) -> str:
        """The operator whose grant it traces back to."""
    @property
    def granted_on(self) -> str:
        """The session the operator granted it on."""
    @property
    def granted_at(self) -> datetime:
        """When the operator granted it."""
    @property
    def inherited_from(self) -> Optional[str]:
        """For an inherited posture, the creator it was copied from."""
    @property
    def chain(self) -> list[str]:
        """The delegation chain: the session the operator granted it on first, this one last."""
    @property
    def epoch(self) -> int:
        """The posture epoch it belongs to."""
    @property
    def current(self) -> bool:
        """It counts now: it belongs to the current epoch."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Revocation:
    """What a revocation changed, or, for a preview, would change."""

    @property
    def root(self) -> Optional[str]:
        """The session it started from; ``None`` for ``revoke_all``."""
    @property
    def propagation(self) -> Literal["local", "cascade", "preview", "global"]:
        """Which revocation it was."""
    @property
    def sessions(self) -> list[str]:
        """The ids of the sessions whose posture changed (or would change), by depth then id."""
    @property
    def affected(self) -> list[Affected]:
        """The same sessions, each with its depth and the posture it held (granted or
        inherited, counting or lapsed)."""
    @property
    def count(self) -> int:
        """How many: the number to show the operator before a cascade."""
    @property
    def token(self) -> Optional[str]:
        """For a preview, the token that binds a cascade to exactly this state."""
    @property
    def still_holding(self) -> list[str]:
        """For a local revoke, the descendants still holding a posture inherited through the
        session; empty otherwise."""
    @property
    def grants_revoked(self) -> list[StandingGrant]:
        """The scopes it revoked and the patterns it removed, when asked to (``scopes=True``,
        ``patterns=True``), by depth then session."""
    @property
    def still_approving(self) -> list[StandingGrant]:
        """The scopes and patterns of the live sessions it reached that still approve after it
        (for a preview: all of them; the cascade takes them with ``scopes=True``,
        ``patterns=True``), by depth then session. Empty when nothing reached approves any
        more. A posture revocation alone never removes them: they are not inherited, and
        approve on their own."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Affected:
    """A session whose posture a revocation changed, or for a preview would change."""

    @property
    def id(self) -> str:
        """The session."""
    @property
    def depth(self) -> int:
        """Its depth (0 for a root)."""
    @property
    def posture(self) -> PostureLevel:
        """The posture it held."""
    @property
    def granted_directly(self) -> bool:
        """The posture was granted on it, not inherited."""
    @property
    def current(self) -> bool:
        """The posture counted (it belonged to the current epoch)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class StandingGrant:
    """A scope or a command pattern on a live session that approves on its own, whatever the
    session's posture: a posture revocation, even down a whole tree, leaves it standing unless
    told to take it."""

    @property
    def session(self) -> str:
        """The session holding it."""
    @property
    def depth(self) -> int:
        """That session's depth (0 for a root)."""
    @property
    def kind(self) -> GrantKind:
        """``"scope"`` (approves every command until it expires) or ``"pattern"`` (approves
        the lines it admits)."""
    @property
    def name(self) -> str:
        """The scope's name, or the pattern's text."""
    @property
    def expires_at(self) -> Optional[datetime]:
        """When a scope stops approving; ``None`` for a pattern."""
    @property
    def granted_by(self) -> str:
        """Who granted (or added) it."""
    @property
    def granted_at(self) -> datetime:
        """When."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class CommandPattern:
    """A command pattern on a session, as ``Authority.patterns`` lists it."""

    @property
    def session(self) -> str:
        """The session."""
    @property
    def pattern(self) -> str:
        """The pattern, as the operator typed it."""
    @property
    def added_by(self) -> str:
        """Who added it."""
    @property
    def added_at(self) -> datetime:
        """When."""
    @property
    def refused(self) -> Optional[str]:
        """Why this build refuses the pattern (an earlier build stored it under looser rules);
        a refused pattern admits nothing. ``None`` for a pattern in force."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Withheld:
    """Why something a session holds approves nothing now."""

    @property
    def kind(self) -> WithheldKind:
        """``"session_ended"`` (every decision asks), ``"lapsed_posture"`` (its posture belongs
        to an earlier epoch) or ``"refused_pattern"`` (a pattern this build never lets admit
        anything)."""
    @property
    def epoch(self) -> Optional[int]:
        """For a lapsed posture, its epoch."""
    @property
    def pattern(self) -> Optional[str]:
        """For a refused pattern, the pattern."""
    @property
    def problem(self) -> Optional[str]:
        """For a refused pattern, why this build refuses it."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Authority:
    """Everything that approves for one session now, read in one snapshot: the answer to
    "what may this session do without asking?" (``Ledger.authority``)."""

    @property
    def session(self) -> str:
        """The session."""
    @property
    def live(self) -> bool:
        """Whether it is live: nothing approves for an ended session."""
    @property
    def posture(self) -> Optional[Posture]:
        """Its posture row with its chain back to the operator's grant; ``current`` says
        whether it counts (a posture of an earlier epoch does not)."""
    @property
    def scopes(self) -> list[Scope]:
        """Its override scopes live now: each approves every command until it expires."""
    @property
    def patterns(self) -> list[CommandPattern]:
        """Its command patterns: each approves the lines it admits, unless refused."""
    @property
    def withheld(self) -> list[Withheld]:
        """What keeps any of the above from approving now; empty when nothing does."""
    def approves_anything(self) -> bool:
        """True when something approves for the session now: a posture that counts, a live
        scope, or a pattern this build accepts, on a live session."""
    def approves_every_command(self) -> bool:
        """True when every command of the session is approved now: ``trust`` that counts, or
        a live scope, on a live session."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Ended:
    """What ``Ledger.end`` ended: the session, and the spawned sub-agents that ended with it."""

    @property
    def session(self) -> Session:
        """The session, as it is now: a tombstone."""
    @property
    def spawned(self) -> list[str]:
        """The spawned sub-agents recorded under it (at any depth through spawned sessions)
        that were live and ended with it, by depth then id. Created children are sessions of
        their own and stay live."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class EpochStart:
    """A new posture epoch."""

    @property
    def epoch(self) -> int:
        """The new epoch."""
    @property
    def durable(self) -> bool:
        """Whether postures were carried into it."""
    @property
    def lapsed(self) -> int:
        """Postures of the previous epoch that stopped counting."""
    @property
    def carried(self) -> int:
        """Postures of the previous epoch carried into this one."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Scope:
    """An override scope on a session: while live, it approves every command of the session,
    until it expires or is revoked. Its name is a label for people and limits nothing; a
    command pattern is the grant that limits commands."""

    @property
    def session(self) -> str:
        """The session."""
    @property
    def name(self) -> str:
        """The scope's name."""
    @property
    def granted_by(self) -> str:
        """Who granted it."""
    @property
    def granted_at(self) -> datetime:
        """When."""
    @property
    def expires_at(self) -> datetime:
        """When it stops admitting anything."""
    @property
    def revoked_at(self) -> Optional[datetime]:
        """When it was revoked, if it was."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class ClassifiedPart:
    """One simple command of a classified line, with its own verdict."""

    @property
    def text(self) -> str:
        """The part as written in the line."""
    @property
    def start(self) -> int:
        """Where it starts in the line, as a ``str`` index: ``line[start:end] == text``. (The
        library and the command line's ``--json`` count bytes.)"""
    @property
    def end(self) -> int:
        """Where it ends in the line, as a ``str`` index (one past its last character)."""
    @property
    def read_only(self) -> bool:
        """It is known to only read."""
    @property
    def word(self) -> str:
        """The word that decided: the first that makes it more than a read, or for a read-only
        part its program."""
    @property
    def effect(self) -> Optional[Effect]:
        """What that word does; ``None`` for a read-only part."""
    @property
    def reason(self) -> str:
        """Why, in words (``"find runs a program for each file it finds"``)."""
    @property
    def through(self) -> list[str]:
        """The wrappers read through to reach the command judged, outermost first
        (``["timeout"]``, ``["a shell's -c"]``); empty for a command that has none."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Classification:
    """The classifier's verdict on a command line (``classify``, and
    ``Decision.classification``)."""

    @property
    def line(self) -> str:
        """The line."""
    @property
    def read_only(self) -> bool:
        """Every simple command of the line is known to only read."""
    @property
    def word(self) -> str:
        """The word that decided: for a line that is not read-only, the first word that made
        it so (``"-exec"``; the start of the construct, for a refused line); for a read-only
        line, the program of its first part."""
    @property
    def effect(self) -> Optional[Effect]:
        """What that word does; ``None`` when the line is read-only."""
    @property
    def reason(self) -> str:
        """Why, in words (the library's; a place it names is counted in bytes)."""
    @property
    def parts(self) -> list[ClassifiedPart]:
        """Each simple command, in order, with its verdict; empty when the line was refused."""
    @property
    def refused(self) -> Optional[str]:
        """The construct that stops the line, as a snake_case word (``"redirection"``,
        ``"command_substitution"``, ``"parameter_expansion"``, ...): such a line is never
        read-only. ``None`` when the line is plain simple commands."""
    @property
    def refused_at(self) -> Optional[int]:
        """Where that construct starts in the line, as a ``str`` index; ``None`` with
        ``refused``."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class PatternAdded:
    """What ``Ledger.add_pattern_checked`` did."""

    @property
    def added(self) -> bool:
        """False when the session already had the pattern: nothing was written. (What
        ``add_pattern`` returns.)"""
    @property
    def warnings(self) -> list[str]:
        """Why the pattern may be broader than meant, if it may: a wildcard where ``rm``,
        ``dd``, ``mkfs`` or ``chmod -R`` takes its target. The pattern is stored all the same;
        show them to the operator."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class PatternReview:
    """A stored pattern of a live session that admits less than it did before wildcards were
    kept from words that run programs or write files (``Ledger.review_patterns``)."""

    @property
    def session(self) -> str:
        """The session holding it."""
    @property
    def pattern(self) -> str:
        """The pattern."""
    @property
    def added_by(self) -> str:
        """Who added it."""
    @property
    def added_at(self) -> datetime:
        """When."""
    @property
    def reason(self) -> str:
        """What it no longer admits (``"its wildcard no longer stands for -c ..."``), or why it
        would be refused if added now."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Decision:
    """The answer of ``Ledger.decide``: approve or ask, and why."""

    @property
    def id(self) -> str:
        """The session asked about."""
    @property
    def approved(self) -> bool:
        """Run the command without asking; False: ask the operator."""
    @property
    def admitted_by(self) -> Optional[AdmittedBy]:
        """What admitted the command: ``"trust"``, ``"trust_reads"``, ``"pattern"``,
        ``"tool_rule"`` (``decide_tool``), ``"scope"``; ``None`` when the answer is ask."""
    @property
    def chain(self) -> list[str]:
        """For a posture, the sessions from the one the operator granted it on down to this
        one (just this one for a posture granted here); empty otherwise."""
    @property
    def reason(self) -> Reason:
        """Why, in a word: what admitted it, or for an ask ``"unknown_session"``,
        ``"session_ended"`` or ``"nothing"``."""
    @property
    def pattern(self) -> Optional[str]:
        """The command pattern that admitted it (the first part's, for a line of several), or
        the tool rule that admitted a ``decide_tool`` call."""
    @property
    def scope(self) -> Optional[str]:
        """The override scope that admitted it."""
    @property
    def classification(self) -> Optional[Classification]:
        """The ledger's verdict on the command, when ``decide(..., classify=True)`` asked for a
        session holding ``trust_reads``: read-only (the reason is ``"trust_reads"``), or the word
        that made it not so. ``None`` when the ledger did not classify (it classifies only where
        the answer depends on it)."""
    @property
    def kept_word(self) -> Optional[str]:
        """For an ask: a word of the command a pattern's wildcard would have matched but may not
        stand for, because it runs another program, writes a file it names or sets the
        environment (``"-c"`` of ``git -c ...`` under ``git *``, ``"-exec"`` under ``find *``,
        the program a wrapper runs). A pattern admits such a word only by naming it."""
    @property
    def kept_pattern(self) -> Optional[str]:
        """The pattern that would otherwise have admitted the part holding ``kept_word``."""
    @property
    def kept_why(self) -> Optional[str]:
        """What ``kept_word`` does, in words."""
    @property
    def record(self) -> Optional[str]:
        """For a decision the caller asked to record (``decide(..., record=True)``, or a
        ``DecisionRecorder``'s), its record's own id: 32 lower-case hex digits, the first 12 its
        time in milliseconds (``Ledger.decision(record)`` reads it back). ``None`` for a
        decision that was not recorded."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class DecisionRecord:
    """A recorded decision, as ``Ledger.decisions`` lists it. A record is never changed or
    removed; once integrated it has a position in the decision log (``seq``), covered by the
    signed checkpoints from its batch's audit row (``batch``) on."""

    @property
    def record(self) -> str:
        """Its own id: 32 lower-case hex digits, the first 12 its time in milliseconds."""
    @property
    def at(self) -> datetime:
        """When the decision was made (aware, UTC, whole milliseconds)."""
    @property
    def session(self) -> str:
        """The session asked about."""
    @property
    def tree(self) -> str:
        """The root of its tree when the decision was made."""
    @property
    def tool(self) -> Optional[str]:
        """The tool asked about (``decide_tool``); ``None`` for a command line."""
    @property
    def input(self) -> str:
        """The command line, or the tool call's path or URL, cut at 4096 bytes (on a character
        boundary). It is the agent's text, untrusted: show it escaped."""
    @property
    def input_bytes(self) -> int:
        """The whole input's length in bytes."""
    @property
    def input_sha256(self) -> Optional[str]:
        """The whole input's SHA-256, hex, when it was cut; ``None`` otherwise."""
    @property
    def verdict(self) -> Verdict:
        """``"approve"``, ``"ask"`` or ``"deny"``."""
    @property
    def authority(self) -> DecisionAuthority:
        """What decided: what approved (``"trust"``, ``"trust_reads"``, ``"pattern"``,
        ``"tool_rule"``, ``"scope"``), or why nothing did (``"nothing"``,
        ``"session_ended"``, ``"unknown_session"``): the reason's ``kind``."""
    @property
    def reason(self) -> dict[str, Any]:
        """The whole reason, as a new ``dict`` on each access, in ``decision_detail``'s form:
        its ``kind``, and for a posture the ``posture`` with its ``chain`` back to the grant;
        for a pattern each part with the pattern that admitted it; ..."""
    @property
    def asked_by(self) -> str:
        """Who asked (an actor: ``"claude-code"``, an operator)."""
    @property
    def tool_use_id(self) -> Optional[str]:
        """The agent's id for the tool call, when it gave one."""
    @property
    def seq(self) -> Optional[int]:
        """Its position in the decision log (1, 2, 3, ... without gaps); ``None`` while it is
        queued, until ``integrate_decisions`` (or a checkpoint) gives it one."""
    @property
    def batch(self) -> Optional[int]:
        """The ``seq`` of its batch's ``decisions.integrate`` audit row; ``None`` while queued."""
    @property
    def id(self) -> int:
        """The order it was appended in on this ledger: pass the last of a page as
        ``decisions(before=...)`` for the next page."""
    def __eq__(self, value: object, /) -> bool: ...

@final
class Integrated:
    """What ``Ledger.integrate_decisions`` did."""

    @property
    def records(self) -> int:
        """How many records it gave positions."""
    @property
    def batches(self) -> int:
        """How many batches (``decisions.integrate`` audit rows) that took: one per 10,000
        records at most."""
    @property
    def log_size(self) -> int:
        """The decision log's size after it: the position of its newest record."""
    @property
    def queued(self) -> int:
        """How many records were still queued when it stopped (appended meanwhile)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class DecisionRecorder:
    """Decides, and records in batches: for a process that decides often and can state a loss
    window (rule D1 lets a batched mode trade the record-before-the-answer promise for speed).

    Each ``decide`` answers at once, with the decision's ``record`` set, and holds the record in
    memory; the recorder's own thread appends what it holds as one transaction when the oldest
    has waited ``window`` seconds, or as soon as ``max_batch`` wait. A crash of the process
    (kill -9, power) loses at most the records of the last ``window`` and the batch in flight:
    always the newest, never one from between two that were kept. While an append fails, the
    records stay held and are tried again, and every call raises ``DecisionsUnknown``.

    ``close()``, or leaving a ``with`` block, appends what it holds and stops; if that append
    fails it raises ``DecisionsUnknown`` and stays open, holding the records. Decisions are
    refused once the ``Ledger`` is closed: close the recorder first.
    """

    def __new__(cls, ledger: Ledger, *, window: float = 0.05, max_batch: int = 2000) -> "DecisionRecorder":
        """A recorder deciding on ``ledger``. ``window``: the longest a record waits in memory,
        in seconds, more than 0 and at most 10; ``max_batch``: at least 1.

        Raises ``InvalidInput`` (kind ``"invalid_config"``) for either out of range;
        ``StorageError`` (kind ``"read_only"``) for a read-only ledger."""
    def decide(
        self,
        id: str,
        command: str,
        *,
        asked_by: str,
        read_only: bool = False,
        classify: bool = False,
        tool_use_id: Optional[str] = None,
    ) -> Decision:
        """``Ledger.decide``, with its record held for the next batch (``record`` names it).
        Raises as ``Ledger.decide(..., record=True)``, and ``DecisionsUnknown`` while the last
        append failed (no decision is made then)."""
    def decide_tool(
        self,
        id: str,
        tool: str,
        *,
        asked_by: str,
        path: Optional[Union[str, "os.PathLike[str]"]] = None,
        url: Optional[str] = None,
        root: Optional[Union[str, "os.PathLike[str]"]] = None,
        tool_use_id: Optional[str] = None,
    ) -> Decision:
        """``Ledger.decide_tool``, with its record held for the next batch."""
    def flush(self) -> int:
        """Appends everything held now and waits for it; returns how many records the recorder
        has appended since it started. Raises ``DecisionsUnknown`` when the append failed (the
        records stay held, and are tried again)."""
    def held(self) -> int:
        """How many records wait in memory now (0 once closed)."""
    def close(self) -> None:
        """Appends what it holds and stops its thread. Raises ``DecisionsUnknown`` when that
        append fails, and stays open. Later calls raise ``LedgerError`` with kind ``"closed"``;
        closing twice does nothing."""
    @property
    def closed(self) -> bool:
        """True once ``close()`` succeeded."""
    @property
    def window(self) -> float:
        """The longest a record waits in memory, in seconds."""
    @property
    def max_batch(self) -> int:
        """How many held records make a batch that is appended at once."""
    def __enter__(self) -> "DecisionRecorder": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

@final
class TreeNode:
    """A session in a tree view: lineage, label and posture, and how many scopes and patterns
    it holds, read in one snapshot."""

    @property
    def id(self) -> str:
        """The session's id."""
    @property
    def created_by(self) -> Optional[str]:
        """Its creator; ``None`` for a root."""
    @property
    def depth(self) -> int:
        """Its depth in the ledger (0 for a root)."""
    @property
    def relative_depth(self) -> int:
        """Its depth below the session the tree was asked for (0 for that one)."""
    @property
    def taint(self) -> Taint:
        """Its taint: stored, or the one its first read would give it."""
    @property
    def untrusted(self) -> bool:
        """Its untrusted flag, as for ``taint``."""
    @property
    def materialized(self) -> bool:
        """Its label is stored (False: ``taint`` and ``untrusted`` are inherited on read)."""
    @property
    def trust(self) -> bool:
        """Its posture admits every command now."""
    @property
    def trust_reads(self) -> bool:
        """Its posture admits read-only commands now."""
    @property
    def live_scopes(self) -> int:
        """How many override scopes it holds that are live now: each approves every command."""
    @property
    def patterns(self) -> int:
        """How many command patterns it holds."""
    @property
    def live(self) -> bool:
        """It has not ended."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class AuditEntry:
    """One row of the audit trail."""

    @property
    def seq(self) -> int:
        """Its position in the trail, increasing."""
    @property
    def kind(self) -> str:
        """What happened, as ``<subject>.<event>``: ``"session.create"``, ``"posture.revoke"``,
        ... (docs/schema.md lists them)."""
    @property
    def session(self) -> Optional[str]:
        """Which session it happened to."""
    @property
    def actor(self) -> str:
        """Who made the change (``"ledger"`` for what the ledger did itself)."""
    @property
    def at(self) -> datetime:
        """When (aware, UTC, whole milliseconds)."""
    @property
    def detail(self) -> dict[str, Any]:
        """Everything else the row records, as a new ``dict`` on each access."""
    @property
    def prev_hash(self) -> str:
        """The previous row's hash."""
    @property
    def hash(self) -> str:
        """This row's hash."""
    def __eq__(self, value: object, /) -> bool: ...

@final
class AuditHead:
    """The head of the audit chain: the last row's ``seq`` and ``hash``. Keep it somewhere
    else; ``str()`` gives ``SEQ:HASH``, which ``AuditHead.parse`` reads back."""

    @property
    def seq(self) -> int:
        """The last row's sequence number (0 for an empty trail)."""
    @property
    def hash(self) -> str:
        """Its hash."""
    @staticmethod
    def parse(text: str) -> AuditHead:
        """Reads a head saved as ``SEQ:HASH``.

        Raises ``InvalidInput`` (kind ``"invalid_head"``) for any other text."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Verification:
    """The result of walking the audit chain. A chain that fails is a result, not an error."""

    @property
    def ok(self) -> bool:
        """Every row verifies (and the saved head, if given, matches)."""
    @property
    def rows(self) -> int:
        """How many rows were read and checked."""
    @property
    def head(self) -> AuditHead:
        """The chain's head as found."""
    @property
    def first_bad_seq(self) -> Optional[int]:
        """The first row that does not verify."""
    @property
    def problem(self) -> Optional[str]:
        """What is wrong with it: ``"gap"``, ``"broken_link"``, ``"hash_mismatch"``,
        ``"truncated"``, ``"head_mismatch"`` or ``"time_goes_back"``."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Explanation:
    """Why a session holds what it holds, read in one snapshot."""

    @property
    def session(self) -> Session:
        """The session's record."""
    @property
    def state(self) -> SessionState:
        """Its label and posture now (read without materializing anything)."""
    @property
    def posture(self) -> Optional[Posture]:
        """Its posture row, current or lapsed, with the chain back to the grant."""
    @property
    def grant(self) -> Optional[AuditEntry]:
        """The audit row of the operator's grant its posture traces back to."""
    @property
    def patterns(self) -> list[str]:
        """Its command patterns, oldest first."""
    @property
    def live_scopes(self) -> list[Scope]:
        """Its override scopes that are live now."""
    @property
    def audit(self) -> list[AuditEntry]:
        """Every audit row about it, oldest first."""
    @property
    def authority(self) -> Authority:
        """Everything that approves for it now, and what withholds any of it."""
    @property
    def decisions(self) -> list[DecisionRecord]:
        """Its latest recorded decisions (at most 10), newest first."""
    def __eq__(self, value: object, /) -> bool: ...

@final
class LevelNode:
    """A session in a page of one level of the tree (``Ledger.tree_level``): its lineage, its
    label and posture as a ``TreeNode`` shows them, and whether it has children."""
    @property
    def id(self) -> str: ...
    @property
    def created_by(self) -> Optional[str]:
        """Its creator; ``None`` for a root."""
    @property
    def depth(self) -> int: ...
    @property
    def origin(self) -> Origin: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def ended_at(self) -> Optional[datetime]:
        """When it ended; ``None`` while it is live. An ended session stays in its level."""
    @property
    def live(self) -> bool: ...
    @property
    def taint(self) -> Taint:
        """The stored taint, or the one its first read would give it (``materialized`` says)."""
    @property
    def untrusted(self) -> bool: ...
    @property
    def materialized(self) -> bool:
        """Whether its label is stored; reading a level writes nothing."""
    @property
    def trust(self) -> bool:
        """Its posture admits every command now."""
    @property
    def trust_reads(self) -> bool:
        """Its posture admits read-only commands now."""
    @property
    def posture(self) -> Optional[Posture]:
        """Its posture row, current or lapsed (``current`` says), granted or inherited."""
    @property
    def live_scopes(self) -> int:
        """How many override scopes it holds that are live now."""
    @property
    def patterns(self) -> int:
        """How many command patterns it holds."""
    @property
    def has_children(self) -> bool:
        """Whether it created or spawned a session the ledger has recorded."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class TreeLevel:
    """One page of one level of the tree: the roots, or one session's children."""
    @property
    def parent(self) -> Optional[str]:
        """Whose children these are; ``None`` for the roots."""
    @property
    def nodes(self) -> list[LevelNode]: ...
    @property
    def next(self) -> Optional[str]:
        """The id to pass as ``after`` for the next page; ``None`` on the level's last page."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Ledger:
    """An open ledger: a SQLite file, or a PostgreSQL database named by a ``postgres://`` URL.

    One ``Ledger`` may be shared by any number of threads: every call releases the GIL while
    the ledger works, and takes a pooled connection for as long as it runs. From ``asyncio``,
    call it through ``asyncio.to_thread``. Use it as a context manager, or call ``close()``.

    Every method that changes the ledger is one transaction, with its audit rows.
    """

    def __new__(
        cls,
        path_or_url: Union[str, "os.PathLike[str]"],
        *,
        create: bool = False,
        max_depth: Optional[int] = None,
        max_live_children: Optional[int] = None,
        creation_rate: Optional[Tuple[int, float]] = None,
        durable_postures: Optional[bool] = None,
        read_only: bool = False,
    ) -> "Ledger":
        """Opens the ledger at ``path_or_url``, bringing its schema up to date. With
        ``create=True`` a missing ledger is created (a new SQLite file, or the tables in an
        empty PostgreSQL schema); without it, a path that holds no ledger raises
        ``StorageError`` with kind ``"no_ledger"`` and creates nothing, as the command line
        refuses without ``init``: a mistyped path is an error, not a new empty ledger.

        ``max_depth`` (default 64), ``max_live_children`` per creator (default 50) and
        ``creation_rate`` (a ``CreationRate(max_creations, per_seconds)``, default 200 per 60
        seconds) bound creation; ``durable_postures`` carries postures into each new epoch
        (default False). ``read_only`` opens for reading only: every write raises
        ``StorageError`` (kind ``"read_only"``).

        Raises ``StorageError`` when there is no ledger there (and ``create`` is False),
        something else is there, a newer ledger, or the database cannot be reached;
        ``InvalidInput`` for a setting out of range."""
    def close(self) -> None:
        """Closes the ledger and releases its connections; a call under way in another thread
        finishes first. Later calls raise ``LedgerError`` with kind ``"closed"``. Closing twice
        does nothing."""
    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
    @property
    def location(self) -> str:
        """Where the ledger is: its file, or its server and database (never with a password)."""
    def __enter__(self) -> "Ledger": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...
    def create_root(self, id: str, *, actor: str) -> Created:
        """Records a root session: no creator, depth 0, the default label (``"private"``,
        trusted), no posture.

        Raises ``InvalidInput`` for a malformed id (the spawned form ``sub-<parent>-<n>`` is
        reserved) or actor; ``Conflict`` (kind ``"session_exists"``) when the id is or was in
        use, or (kind ``"session_archived"``) when it was archived."""
    def create_child(self, id: str, *, creator: str, actor: str) -> Created:
        """Records a session created by the live session ``creator``, born with the creator's
        posture as it stands now, read in the same transaction (``inherited_trust``,
        ``inherited_trust_reads``). Its label is inherited on its first read.

        Raises ``UnknownSession`` for an unknown creator; ``Conflict`` when the creator has
        ended (kind ``"session_ended"``) or the id was used; ``CreationRefused`` when a bound
        refuses it (the refusal is audited, nothing is created)."""
    def state(self, id: str) -> SessionState:
        """The session's label and posture. A child's first read inherits the label of its
        nearest materialized ancestor and records it; a spawned id ``sub-<parent>-<n>`` of a
        known session is recorded first, through any missing middle. An unknown plain id reads
        as the default with ``known`` False, and writes nothing.

        Raises ``InvalidInput`` for a malformed id; ``Conflict`` (kind ``"session_archived"``)
        for an archived one (``archived`` says where it went)."""
    def raise_label(
        self, id: str, *, taint: Optional[Taint] = None, untrusted: bool = False, actor: str
    ) -> RaiseOutcome:
        """Raises the session's label: the higher taint class, the flag ORed. An unmaterialized
        session inherits first. Nothing lowers a label.

        Raises ``InvalidInput`` when neither ``taint`` nor ``untrusted`` is given, or for an
        unknown taint word; ``UnknownSession``."""
    def end(self, id: str, *, actor: str) -> Ended:
        """Ends a live session and its spawned sub-agents (created children stay live), and
        names those sub-agents in ``spawned``. Each stays as a tombstone: it can no longer
        create, and every decision for it asks.

        Raises ``UnknownSession``; ``Conflict`` (kind ``"session_ended"``)."""
    def session(self, id: str) -> Optional[Session]:
        """The recorded session with this id, or ``None``."""
    def ancestors(self, id: str) -> list[Session]:
        """The creators of ``id``, nearest first, ending with its root. Raises
        ``UnknownSession``."""
    def children(self, id: str) -> list[Session]:
        """The sessions ``id`` created or spawned, oldest first. Raises ``UnknownSession``."""
    def tree(self, id: str) -> list[TreeNode]:
        """The subtree of ``id`` (itself first), depth-first, children oldest first, with each
        session's label and posture. One snapshot; writes nothing. Raises ``UnknownSession``."""
    def forest(self) -> list[TreeNode]:
        """Every session, as each root's tree in the order the roots were opened."""
    def grant(self, id: str, level: PostureLevel, *, actor: str) -> Posture:
        """An operator grants ``"trust"`` or ``"trust_reads"`` on a live session, replacing
        any posture it held, in the current epoch. Children created from now on are born
        with it.

        Raises ``InvalidInput`` for another level; ``UnknownSession``; ``Conflict``."""
    def posture(self, id: str) -> Optional[Posture]:
        """The posture row of a session, current or lapsed, or ``None``."""
    def revoke(
        self,
        id: str,
        propagation: Propagation,
        *,
        actor: str,
        token: Optional[str] = None,
        unchecked: bool = False,
        scopes: bool = False,
        patterns: bool = False,
    ) -> Revocation:
        """Revokes postures from ``id``; ``propagation`` has no default:

        - ``"local"``: this session's only; ``still_holding`` lists the descendants that hold
          a posture inherited through it;
        - ``"cascade"``: this session's and every descendant's, created or spawned, in one
          statement, bound to the preview whose ``token`` it is given: if anything in the
          subtree changed since (a session, a posture, a scope or a pattern), it raises
          ``StalePreview`` and changes nothing. Without a token it raises ``InvalidInput``
          (kind ``"missing_token"``), unless ``unchecked=True`` says to apply it to whatever
          the subtree holds when it runs. An empty or malformed token raises ``InvalidInput``
          (kind ``"invalid_token"``): it never means "no check";
        - ``"preview"``: changes nothing; ``sessions`` and ``count`` are exactly who a cascade
          would change, ``still_approving`` the scopes and patterns that would still approve
          after it, and ``token`` binds a cascade to all of that.

        Scopes and patterns are not postures: a revocation leaves them approving, and lists
        them in ``still_approving``. ``scopes=True`` also revokes the live scopes, and
        ``patterns=True`` removes the patterns, of the live sessions it reaches, in the same
        transaction (``grants_revoked``).

        Raises ``InvalidInput`` for another word, a token or ``unchecked`` with anything but
        ``"cascade"``, or ``scopes``/``patterns`` with ``"preview"``; ``UnknownSession``;
        ``StalePreview``."""
    def revoke_all(self, *, actor: str, scopes: bool = False, patterns: bool = False) -> Revocation:
        """Removes every session's posture, in one statement (the global trust button).
        ``still_approving`` lists the scopes and patterns of the live sessions that still
        approve after it; ``scopes=True`` and ``patterns=True`` take them in the same
        transaction, leaving nothing approving."""
    def authority(self, id: str) -> Authority:
        """Everything that approves for ``id`` now, in one snapshot: its posture and the chain
        back to the operator's grant, its live scopes with their expiry and grantor, its
        command patterns, and what withholds any of them (an ended session, a lapsed epoch, a
        pattern this build refuses). Raises ``UnknownSession``."""
    def start_epoch(self, *, actor: str, durable: Optional[bool] = None) -> EpochStart:
        """Starts a new posture epoch: the backend calls it when it boots, so that trust does
        not outlive the process that gave it. Postures of the previous epoch stop counting,
        unless ``durable`` (default: the ledger's ``durable_postures``) carries them over.
        Opening a ledger never starts one; with several nodes on one PostgreSQL ledger, call
        it once per full restart of the deployment."""
    def current_epoch(self) -> int:
        """The current posture epoch (0 until the first is started)."""
    def add_pattern(
        self,
        id: str,
        pattern: str,
        *,
        actor: str,
        must_match: Sequence[str] = ...,
        must_not_match: Sequence[str] = ...,
        admit_any_command: bool = False,
    ) -> bool:
        """Allows a command pattern for one live session (never inherited). With examples,
        first checks that the pattern matches each of ``must_match`` and none of
        ``must_not_match``. Returns False, writing nothing, when the session already had it.
        ``add_pattern_checked`` is the same call, answered with the pattern's warnings too.

        A pattern that admits any command (a lone ``*``, a wildcard as the program, ``sudo *``,
        ``bash -c *``, ``env *``, ``xargs *``, ``eval *``) is refused with ``InvalidInput``
        (kind ``"invalid_pattern"``, the message says why) unless ``admit_any_command=True``
        says it is meant. A pattern's wildcard never stands for a word that runs another
        program or writes a file it names (``git -c``, ``find -exec``, ``sort -o``), and a
        pattern for a command admits it run through ``timeout``, ``nice``, ``nohup``, ``time``,
        ``stdbuf``, ``command``, ``env`` or a shell's ``-c`` (docs/patterns.md).

        Raises ``InvalidInput`` for a malformed pattern, one that admits any command, or an
        example that disagrees; ``UnknownSession``; ``Conflict``."""
    def add_pattern_checked(
        self,
        id: str,
        pattern: str,
        *,
        actor: str,
        must_match: Sequence[str] = ...,
        must_not_match: Sequence[str] = ...,
        admit_any_command: bool = False,
    ) -> PatternAdded:
        """``add_pattern``, answered with whether the pattern was added and the warnings it
        raises (a wildcard where a destructive program takes its target: ``rm -rf build/*``):
        a pattern that warns is stored all the same. Raises as ``add_pattern``."""
    def review_patterns(self) -> list[PatternReview]:
        """Every stored pattern of a live session that admits less than it did before
        wildcards were kept from words that run programs or write files (``git *`` no longer
        admits ``git -c ...``), or that would be refused if added now (``sudo *``), by session
        then pattern: the lines such a pattern approved and now asks about. An upgrade check:
        it reads every pattern of the live sessions."""
    def remove_pattern(self, id: str, pattern: str, *, actor: str) -> None:
        """Removes a command pattern from a session. Raises ``Conflict`` (kind
        ``"unknown_pattern"``) when it has none such."""
    def patterns(self, id: str) -> list[str]:
        """The command patterns on a session, oldest first."""
    def grant_scope(self, id: str, name: str, *, ttl_seconds: float, actor: str) -> Scope:
        """Grants an override scope: every command of the live session ``id`` is approved until
        it expires after ``ttl_seconds`` or is revoked. ``name`` is a label for people and limits
        nothing; to allow only some commands, add a pattern. ``ttl_seconds`` is a number of
        seconds, at least 0.001 and at most 31,622,400 (366 days). A scope of the same name is
        replaced. Never inherited, never turned into a posture.

        Raises ``InvalidInput`` for a malformed name or an out-of-range ``ttl_seconds``;
        ``TypeError`` when ``ttl_seconds`` is not a number; ``UnknownSession``; ``Conflict``."""
    def revoke_scope(self, id: str, name: str, *, actor: str) -> None:
        """Revokes a live override scope before it expires. Raises ``Conflict`` (kind
        ``"unknown_scope"``) when it has no live scope of that name."""
    def scopes(self, id: str) -> list[Scope]:
        """The override scopes on a session, live or not, oldest first."""
    def decide_tool(
        self,
        id: str,
        tool: str,
        *,
        path: Optional[Union[str, "os.PathLike[str]"]] = None,
        url: Optional[str] = None,
        root: Optional[Union[str, "os.PathLike[str]"]] = None,
        record: bool = False,
        asked_by: Optional[str] = None,
        tool_use_id: Optional[str] = None,
    ) -> Decision:
        """May ``id`` make a tool call other than a shell command now (``"Read"``, ``"Edit"``,
        ``"WebFetch"``, ``"mcp__SERVER__TOOL"``)? ``trust`` approves; ``trust_reads`` approves a
        tool that only reads; a tool rule of the session (``Read(src/**)``, ``Edit(docs/*.md)``,
        ``WebFetch(domain:HOST)``, ``mcp__SERVER__TOOL``, added with ``add_pattern``) that admits
        the call approves; a live scope approves; otherwise ask. ``path`` is resolved (``..``,
        symbolic links) against ``root`` and never matches outside it. ``record=True`` records
        the decision as ``decide`` does: the tool's name, and its path or URL as the input.

        Raises ``InvalidInput`` for a malformed id or an empty tool name, and as ``decide`` for
        ``record``, ``asked_by`` and ``tool_use_id``."""
    def decide(
        self,
        id: str,
        command: str,
        *,
        read_only: bool = False,
        classify: bool = False,
        record: bool = False,
        asked_by: Optional[str] = None,
        tool_use_id: Optional[str] = None,
    ) -> Decision:
        """May ``id`` run ``command`` now? The call made on every tool approval. An ended or
        unknown session asks; ``trust`` approves; ``trust_reads`` approves a command that is
        read-only, as the caller says (``read_only=True``) or as the ledger's classifier finds
        (``classify=True``: the verdict is the decision's ``classification``); command patterns
        approve a line whose every simple command one of them admits, wrappers read through; a
        live scope approves; otherwise ask. Reads only (a spawned id seen for the first time is
        recorded first).

        With ``record=True`` the decision is recorded before it is returned (rule D1): the
        command line (cut at 4096 bytes, with its SHA-256 when cut), the verdict, the whole
        reason, ``asked_by`` (required: the asking program's or operator's name, an actor) and
        ``tool_use_id`` (the agent's id for the call, if any), and the answer's ``record`` names
        the record. The record is appended without the ledger's write lock (rule D2) and waits
        in a queue until ``integrate_decisions`` gives it a position. Without ``record=True``
        nothing is written and ``record`` is ``None``.

        Raises ``InvalidInput`` for a malformed id or an empty command, (kind
        ``"invalid_classify"``) for ``read_only=True`` with ``classify=True``, (kind
        ``"missing_asked_by"``) for ``record=True`` without ``asked_by``, (kind
        ``"missing_record"``) for ``asked_by`` or ``tool_use_id`` without ``record=True``, and
        for a malformed ``asked_by`` or ``tool_use_id``: in each case nothing is recorded.
        With ``record=True``, ``StorageError`` (kind ``"read_only"``) on a read-only ledger and
        ``DecisionsUnknown`` when the record's commit may or may not last: the decision is
        never returned without its record."""
    def decisions(
        self,
        *,
        session: Optional[str] = None,
        subtree: Optional[str] = None,
        verdict: Optional[Verdict] = None,
        authority: Optional[DecisionAuthority] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        before: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> list[DecisionRecord]:
        """Recorded decisions, newest first, queued and integrated alike: only about
        ``session`` (or any session in ``subtree``), only with ``verdict``, only decided by
        ``authority``, only at or after ``since`` and before ``until`` (aware datetimes), only
        appended before the record whose ``id`` is ``before`` (the next page: the ``id`` of the
        last record of this one), and only the newest ``limit`` (1 to 10,000; 100 by default).

        Raises ``InvalidInput`` for a malformed id, an unknown verdict or authority, or a
        limit out of range."""
    def decision(self, record: str) -> Optional[DecisionRecord]:
        """The recorded decision whose own id is ``record`` (``Decision.record``), or ``None``.
        Raises ``InvalidInput`` for an id that is not 32 lower-case hex digits."""
    def decisions_after(self, after: int, *, limit: int = 1000) -> list[DecisionRecord]:
        """At most ``limit`` (1 to 10,000) integrated records after position ``after`` of the
        decision log, oldest first: a feed that resumes exactly from the last ``seq`` kept.
        Positions have no gaps and never change; a record is in the feed once integrated."""
    def integrate_decisions(self, *, actor: str) -> Integrated:
        """Gives the queued decision records positions in the decision log, in batches of at
        most 10,000, each one write transaction with one ``decisions.integrate`` audit row by
        ``actor`` holding the batch's first position, count and Merkle root: a checkpoint signed
        after it covers every record of the batch. ``checkpoint`` runs it first."""
    def explain(self, id: str) -> Explanation:
        """Why ``id`` holds what it holds: label, posture and the grant it traces back to,
        grants, its audit rows, and its ``authority``, in one snapshot. Raises
        ``UnknownSession``."""
    def audit(
        self,
        *,
        session: Optional[str] = None,
        kind: Optional[str] = None,
        limit: Optional[int] = None,
        subtree: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        before: Optional[int] = None,
    ) -> list[AuditEntry]:
        """Audit rows, oldest first, in one snapshot: only about ``session`` (or any session in
        ``subtree``), only of ``kind`` (like ``"posture.revoke"``), only at or after ``since``
        and before ``until`` (aware datetimes), only with ``seq`` below ``before``, and only the
        newest ``limit`` of those.

        Raises ``InvalidInput`` for an unknown kind or a malformed id; ``CorruptionError`` for
        a row the library cannot read back."""
    def audit_head(self) -> AuditHead:
        """The head of the audit chain, to keep somewhere else for ``verify_from``."""
    def verify(self, saved: Union[AuditHead, str, None] = None) -> Verification:
        """Walks the whole audit chain for the first row that does not verify; with a saved
        head (an ``AuditHead``, or its text ``"SEQ:HASH"`` as ``str()`` of one and the command
        line's ``audit head`` print it), also detects rows removed from the end since. A text
        that is not ``SEQ:HASH`` raises ``InvalidInput`` (kind ``"invalid_head"``); any other
        type, ``TypeError``. Raises ``CorruptionError`` when
        the ledger's record of the trail's time order was removed by hand."""
    def verify_from(self, saved: Union[AuditHead, str]) -> Verification:
        """Verifies only the rows written since ``saved`` (a head from ``audit_head``, or its
        ``"SEQ:HASH"`` text): that its row is unchanged, then the chain from it to the newest
        row."""
    def tree_level(
        self, parent: Optional[str] = None, *, after: Optional[str] = None, limit: int = 50
    ) -> TreeLevel:
        """One page of one level of the tree: the roots (``parent`` ``None``) or the sessions
        ``parent`` created or spawned, oldest first, after the session ``after`` of that level
        (the ``next`` of the page before), at most ``limit``. Costs what the page shows, however
        large the ledger; writes nothing. An ``after`` not on that level gives an empty page.

        Raises ``UnknownSession`` for an unknown ``parent``, ``InvalidInput`` for a malformed
        id or a negative ``limit``."""
    def decision_detail(
        self, id: str, command: str, *, read_only: bool = False, classify: bool = False
    ) -> dict[str, Any]:
        """``decide``, answered with every part of its reason as a ``dict``, as the command
        line's ``--json decide`` prints it: ``verdict`` (``"approve"`` or ``"ask"``) and
        ``reason``, whose ``kind`` is a ``Reason`` word; for ``"pattern"``, ``parts``: each simple
        command's ``text``, ``range`` and the ``pattern`` and ``added_by`` that admitted it; for
        ``"nothing"``, ``unadmitted`` (the first part no pattern admits) or ``refused`` (the
        construct no pattern ever admits, ``{"construct", "at"}``) and ``kept`` (the word a
        wildcard may not stand for: ``{"word", "pattern", "why"}``); ``classification`` when the
        ledger classified the command (``classify=True``). Places are counted in bytes, as the
        command line counts them. Reads only, as ``decide``.

        Raises as ``decide``."""
    def checkpoint(self, key: str, *, actor: str, origin: Optional[str] = None) -> Dict[str, Any]:
        """Signs a checkpoint of the whole trail with ``key`` (a signing key's text), records it
        with its ``checkpoint.sign`` audit row, and returns ``{"origin", "size", "root",
        "note"}``: ``note`` is the signed text an auditor keeps. The key is never stored. It
        integrates the queued decision records first (``integrate_decisions``), so that it
        covers every record committed before it."""
    def integrate_tree(self) -> int:
        """Brings the stored audit tree up to the trail's head; returns its size."""
    def checkpoints(self, *, after: int = 0, limit: int = 1000) -> List[Dict[str, Any]]:
        """The checkpoints the ledger signed after audit row ``after``, oldest first."""
    def verify_checkpoint(
        self,
        checkpoint: str,
        verifier_key: str,
        *,
        fast: bool = False,
        previous: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Verifies the trail against ``checkpoint`` (a note kept earlier): its signature, a
        consistency proof from it to the trail now, and the chain, every leaf recomputed from
        its row unless ``fast``; against ``previous`` (the checkpoint verified last), a smaller,
        forked or unprovable checkpoint fails. Returns ``{"ok", "checkpoint", "head", "fast",
        "findings", "not_checked"}``, one finding per check."""
    def backup(self, dest: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
        """Writes a consistent copy of this SQLite ledger to the new file ``dest`` while
        writers go on, checks it on its own (its trail from the first row, integrity,
        references, the stored tree and the checkpoints' roots), and names it ``dest`` only
        when it passes: ``{"to", "head", "verification", "check", "ok"}``. Raises
        ``InvalidInput`` (kind ``"invalid_config"``) for a ``dest`` that exists, and on
        PostgreSQL, which the server's tools back up."""
    def archive(
        self,
        to: Union[str, "os.PathLike[str]"],
        *,
        before: Optional[datetime] = None,
        tree: Optional[str] = None,
        actor: str,
    ) -> Dict[str, Any]:
        """Moves what is over out of the live ledger into the new archive file ``to`` (a SQLite
        file, on either engine): the trees whose every session ended before ``before`` (a
        timezone-aware ``datetime``), or the one tree whose root is ``tree``, with their labels,
        postures, patterns and scopes; and, with ``before``, the trail's rows up to the newest
        checkpoint signed before it, with their decision records. The file is written and
        verified before anything leaves; an archived id is never used again. A run stopped
        part-way is finished by the next one.

        Returns ``{"finished", "made"}``: ``finished``, the archives an earlier run left
        unfinished and this one finished; ``made``, ``None`` when there was nothing to take (no
        file is written), else ``{"archive", "file", "sha256", "trail_from", "trail_size",
        "trees", "sessions", "decision_records", "stayed_live"}``.

        Raises ``Conflict`` (kind ``"not_archivable"``) when neither ``before`` nor ``tree``
        is given, for a tree with a session still running, or a session that is no root;
        ``UnknownSession`` for an unknown root; ``InvalidInput`` (kind ``"invalid_config"``)
        when ``to`` exists."""
    def verify_archive(
        self, file: Union[str, "os.PathLike[str]"], verifier_key: str, *, alone: bool = False
    ) -> Dict[str, Any]:
        """Checks the archive file ``file`` with ``verifier_key``: its trail against its signed
        checkpoint, its decision batches, its integrity and references, and that every session
        in it had ended; then, unless ``alone``, against this ledger: that the ledger recorded
        this file (same SHA-256 and boundary) and that its newest checkpoint extends the
        archive's. With ``alone`` no ledger is read. Returns ``{"ok", "file", "archive",
        "trail_from", "trail_size", "trees", "sessions", "sha256", "findings"}``, one finding
        per check; a failed check is no exception. Raises ``InvalidInput`` (kind
        ``"invalid_config"``) for a file that is no archive."""
    def archived(self, id: str) -> Optional[Dict[str, Any]]:
        """Where the session ``id`` went when it was archived: ``{"id", "tree", "archive",
        "file", "archived_at"}`` (``archived_at`` as RFC 3339 text, UTC), or ``None`` when it
        was not archived."""
    def prove(self, seq: int, *, checkpoint: Optional[str] = None) -> str:
        """A receipt for audit row ``seq``: its inclusion proof against ``checkpoint``, or the
        newest checkpoint signed, as C2SP tlog-proof text. Raises ``Conflict`` (kind
        ``"no_checkpoint"`` or ``"not_in_checkpoint"``) when there is none to prove against."""
    def export(
        self, after: int, *, limit: int = 1000, format: Literal["jsonl", "ocsf"] = "jsonl"
    ) -> List[Dict[str, Any]]:
        """At most ``limit`` audit rows after row ``after``, oldest first, each as the command
        line's ``--json audit`` object or, with ``format="ocsf"``, as an OCSF event: a feed
        that resumes exactly from the last ``seq`` kept."""
    def export_decisions(
        self, after: int, *, limit: int = 1000, format: Literal["jsonl", "ocsf"] = "jsonl"
    ) -> List[Dict[str, Any]]:
        """At most ``limit`` integrated decision records after position ``after`` of the
        decision log, oldest first, each as the command line's ``--json decisions`` object or,
        with ``format="ocsf"``, as an OCSF 1.7.0 API Activity event with the
        ``security_control`` profile (the verdict in ``authorizations[0].decision``): the
        decision feed, which resumes exactly from the last position kept."""
