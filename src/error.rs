//! The ledger's error type.
//!
//! An [`Error`] is one of five kinds, and the kind says what the caller can do about it:
//!
//! * [`Error::Input`]: a value the caller gave is malformed or out of range (an id, an actor, a
//!   pattern, a token, a setting). Fix the value; nothing was written.
//! * [`Error::Conflict`]: the request is well-formed but the ledger's state does not allow it (a
//!   session it does not know or that ended, an id that is or was in use, a pattern or scope
//!   the session does not have, a preview the tree has moved past). Look again at the ledger;
//!   nothing was written.
//! * [`Error::Refused`]: a creation bound refused a create (rule S2). Nothing was created; the
//!   refusal itself was recorded in the audit trail.
//! * [`Error::Storage`]: the database cannot serve the request: there is no ledger there, the
//!   file is something else or newer than this build, it cannot be written, or the engine
//!   underneath failed. On PostgreSQL also: no server took the operation within the failover
//!   wait, and a write whose commit the ledger cannot vouch for: `DurabilityUnknown` (it may or
//!   may not last: look before doing it again) and `NotCommitted` (it was not done).
//! * [`Error::Corruption`]: the data breaks one of the ledger's invariants; the file needs
//!   inspection.
//!
//! Branch on the variants, never on the message. [`Error::kind`] names each leaf with a stable
//! snake_case word, for a program that gets the error as text. A message quotes a value the
//! caller gave in full up to 64 characters; a longer one is cut there, with an ellipsis and its
//! full length, `"aaaa…" (10000 characters)`, while the variant's field keeps the whole value.
//! Messages describe the problem; what to run about it is for the program that shows them.
//!
//! This module knows no concept and no engine: an engine wraps its own error in an
//! [`EngineError`], and the concepts build the leaves.

use std::fmt;

/// A specialized `Result` for ledger operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a ledger operation, by what the caller can do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value the caller gave is malformed or out of range; nothing was written.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The ledger's state does not allow the request; nothing was written.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// A creation bound refused the create (rule S2); the refusal was recorded.
    #[error(transparent)]
    Refused(#[from] CreationRefused),
    /// The database cannot serve the request.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The data breaks one of the ledger's invariants.
    #[error(transparent)]
    Corruption(#[from] Corruption),
}

impl Error {
    /// A stable snake_case name for the error's leaf variant, one per variant, for a program
    /// that gets the error as text (the CLI prints it as `kind` in a `--json` error):
    /// `invalid_id`, `unknown_session`, `stale_preview`, `child_limit`, `read_only`, `storage`,
    /// ... (README.md lists them all). A name, once given, does not change.
    ///
    /// ```
    /// let e = session_ledger::validate_id("a b").unwrap_err();
    /// assert_eq!(e.kind(), "invalid_id");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Input(e) => e.kind(),
            Error::Conflict(e) => e.kind(),
            Error::Refused(e) => e.kind(),
            Error::Storage(e) => e.kind(),
            Error::Corruption(_) => "corruption",
        }
    }

    /// True for a refusal by one of the creation bounds of rule S2.
    pub fn is_refusal(&self) -> bool {
        matches!(self, Error::Refused(_))
    }

    /// True when the caller can act on the error by changing the request: bad input, or a
    /// request the ledger's state does not allow.
    pub fn is_caller_error(&self) -> bool {
        matches!(self, Error::Input(_) | Error::Conflict(_))
    }
}

/// Why an id was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdProblem {
    /// The id is the empty string.
    Empty,
    /// The id is longer than [`MAX_ID_LEN`](crate::MAX_ID_LEN) bytes.
    TooLong,
    /// The id does not start with an ASCII letter or digit.
    BadStart,
    /// The id holds a character outside `[A-Za-z0-9._:-]`.
    BadCharacter,
    /// The id has the form `sub-<parent>-<n>`, which is reserved for spawned sub-agents and
    /// cannot be given to a created session.
    ReservedSpawnedForm,
}

impl fmt::Display for IdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdProblem::Empty => "it is empty",
            IdProblem::TooLong => "it is longer than 128 characters",
            IdProblem::BadStart => "it must start with an ASCII letter or digit",
            IdProblem::BadCharacter => "only ASCII letters, digits and . _ : - are allowed",
            IdProblem::ReservedSpawnedForm => {
                "ids of the form sub-<parent>-<n> are reserved for spawned sub-agents"
            }
        })
    }
}

/// The most characters of a caller's value that an error message quotes.
const QUOTED_CHARS: usize = 64;

/// A value the caller gave, as an error message quotes it: as `{:?}` writes it when it has at
/// most [`QUOTED_CHARS`] characters; else its first [`QUOTED_CHARS`] characters, an ellipsis
/// and its full length, so that a 10,000-character id does not make a 10,000-character message.
/// The cut falls on a character boundary.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(QUOTED_CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((cut, _)) => {
                // `{:?}` of the kept part, escapes and all, with the ellipsis before its closing
                // quote.
                let kept = format!("{:?}", &self.0[..cut]);
                let open = kept.strip_suffix('"').unwrap_or(&kept);
                write!(f, "{open}…\" ({} characters)", self.0.chars().count())
            }
        }
    }
}

/// A value the caller gave is malformed or out of range. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A session id (or the creator's id) is malformed.
    #[error("invalid session id {}: {problem}", Quoted(.id))]
    InvalidId {
        /// The rejected id, as given.
        id: String,
        /// What is wrong with it.
        problem: IdProblem,
    },
    /// An actor name is malformed (1 to 64 characters from `[A-Za-z0-9._:@-]`).
    #[error("invalid actor name {}: use 1 to 64 ASCII letters, digits or . _ : @ -", Quoted(.0))]
    InvalidActor(String),
    /// A taint class name is not one of `public`, `private`, `secret`.
    #[error("unknown taint class {}: expected public, private or secret", Quoted(.0))]
    InvalidTaint(String),
    /// A posture name is not `trust` or `trust_reads`.
    #[error("unknown posture {}: expected trust or trust_reads", Quoted(.0))]
    InvalidPosture(String),
    /// A propagation name is not `local`, `cascade` or `preview`.
    #[error("unknown propagation {}: expected local, cascade or preview", Quoted(.0))]
    InvalidPropagation(String),
    /// An audit kind is not one the ledger knows.
    #[error("unknown audit kind {}", Quoted(.0))]
    InvalidAuditKind(String),
    /// A command pattern is malformed.
    #[error("invalid command pattern {}: {problem}", Quoted(.pattern))]
    InvalidPattern {
        /// The rejected pattern.
        pattern: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An override scope's name is malformed.
    #[error("invalid scope name {}: use 1 to 64 ASCII letters, digits or . _ : -, starting with a letter or digit", Quoted(.0))]
    InvalidScopeName(String),
    /// A time to live is malformed, zero, negative or too long.
    #[error("invalid TTL {}: use a positive whole number and a unit s, m, h or d (like 30s, 15m, 2h), at most 366d", Quoted(.0))]
    InvalidTtl(String),
    /// A decision was asked for an empty command line.
    #[error("empty command: nothing to decide")]
    EmptyCommand,
    /// A preview token is malformed (it is 64 lower-case hex digits).
    #[error("malformed preview token {}: expected the 64 hex digits a preview gave", Quoted(.0))]
    InvalidToken(String),
    /// A saved audit head is malformed (it is `SEQ:HASH`).
    #[error("malformed audit head {}: expected SEQ:HASH", Quoted(.0))]
    InvalidHead(String),
    /// A time is malformed.
    #[error("malformed time {}: expected RFC 3339, like 2026-11-30T12:00:00Z", Quoted(.0))]
    InvalidTime(String),
    /// A raise named neither a taint class nor the untrusted flag.
    #[error("nothing to raise: give a taint class, the untrusted flag, or both")]
    NothingToRaise,
    /// A [`Config`](crate::Config) setting is out of the range the ledger can use; nothing was
    /// opened or created.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),
    /// A copy was asked to write into a ledger whose engine cannot take one (a SQLite file: its
    /// triggers cannot be switched off for the copy); nothing was copied.
    #[error("{0} names a SQLite ledger: a copy goes into a new PostgreSQL ledger, named by a postgres:// URL (copy a SQLite file whole with sqlite3's .backup); nothing was copied")]
    InvalidCopyTarget(Location),
    /// A signer key, a verifier key, a checkpoint or a receipt is not of its text form (the C2SP
    /// signed-note, tlog-checkpoint and tlog-proof formats); what is wrong is in the message.
    #[error("{0}")]
    InvalidNote(String),
}

impl InputError {
    fn kind(&self) -> &'static str {
        match self {
            InputError::InvalidId { .. } => "invalid_id",
            InputError::InvalidActor(_) => "invalid_actor",
            InputError::InvalidTaint(_) => "invalid_taint",
            InputError::InvalidPosture(_) => "invalid_posture",
            InputError::InvalidPropagation(_) => "invalid_propagation",
            InputError::InvalidAuditKind(_) => "invalid_audit_kind",
            InputError::InvalidPattern { .. } => "invalid_pattern",
            InputError::InvalidScopeName(_) => "invalid_scope_name",
            InputError::InvalidTtl(_) => "invalid_ttl",
            InputError::EmptyCommand => "empty_command",
            InputError::InvalidToken(_) => "invalid_token",
            InputError::InvalidHead(_) => "invalid_head",
            InputError::InvalidTime(_) => "invalid_time",
            InputError::NothingToRaise => "nothing_to_raise",
            InputError::InvalidConfig(_) => "invalid_config",
            InputError::InvalidCopyTarget(_) => "invalid_copy_target",
            InputError::InvalidNote(_) => "invalid_note",
        }
    }
}

/// The request is well-formed but the ledger's state does not allow it. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Conflict {
    /// The session does not exist (and, where that applies, is not a spawned id of a known one).
    #[error("no session {0:?} in the ledger")]
    UnknownSession(String),
    /// The session has ended; it stays as a tombstone and cannot act.
    #[error("session {0:?} has ended")]
    SessionEnded(String),
    /// The id is or was in use; ids are never reused.
    #[error("session id {0:?} exists or existed; ids are never reused")]
    SessionExists(String),
    /// The session has no such command pattern.
    #[error("session {session:?} has no command pattern {}", Quoted(.pattern))]
    UnknownPattern {
        /// The session.
        session: String,
        /// The pattern.
        pattern: String,
    },
    /// The session has no live override scope of that name.
    #[error("session {session:?} has no live scope {name:?}")]
    UnknownScope {
        /// The session.
        session: String,
        /// The scope's name.
        name: String,
    },
    /// Rule R2: the subtree changed since the preview whose token was given; nothing was
    /// revoked. Preview again.
    #[error(
        "the subtree of {root:?} changed since the preview; nothing was revoked (preview again)"
    )]
    StalePreview {
        /// The root of the revocation.
        root: String,
    },
    /// A copy goes only into a new ledger, and this one holds sessions, audit rows or epochs
    /// already; nothing was copied.
    #[error(
        "the ledger at {0} is not empty: a copy goes only into a new ledger; nothing was copied"
    )]
    NotEmpty(Location),
    /// A receipt was asked against the ledger's latest checkpoint, and it has signed none.
    #[error("the ledger has signed no checkpoint yet (sign one with `checkpoint sign`)")]
    NoCheckpoint,
    /// The audit row asked about is not among the rows a checkpoint covers: it is newer (sign
    /// a later checkpoint), or there is no such row.
    #[error("audit row {seq} is not in the checkpoint of the first {size} rows")]
    NotInCheckpoint {
        /// The row asked about.
        seq: i64,
        /// How many rows the checkpoint covers.
        size: u64,
    },
    /// A receipt was asked for a decision record that the checkpoint does not cover: the
    /// ledger has no such record, it waits to be integrated, or its batch is newer than the
    /// checkpoint.
    #[error("decision record {record} is not covered by the checkpoint: {why}")]
    NotCovered {
        /// The record's own id.
        record: String,
        /// Why, in words.
        why: String,
    },
    /// The session was archived: its rows left for an archive file; its id is never used again.
    #[error("session {id:?} was archived on {made_at} in {file} (archive {archive})")]
    SessionArchived {
        /// The session.
        id: String,
        /// The archive's number.
        archive: i64,
        /// Its file, by its absolute path when it was written.
        file: String,
        /// When it was made (RFC 3339, UTC).
        made_at: String,
    },
    /// What was asked lies in what left with an archive; the message names the archive.
    #[error("{0}")]
    Archived(String),
    /// An archive was asked of what cannot go (a tree with a session still running, no root).
    #[error("{0}")]
    NotArchivable(String),
}

impl Conflict {
    fn kind(&self) -> &'static str {
        match self {
            Conflict::UnknownSession(_) => "unknown_session",
            Conflict::SessionEnded(_) => "session_ended",
            Conflict::SessionExists(_) => "session_exists",
            Conflict::UnknownPattern { .. } => "unknown_pattern",
            Conflict::UnknownScope { .. } => "unknown_scope",
            Conflict::StalePreview { .. } => "stale_preview",
            Conflict::NotEmpty(_) => "not_empty",
            Conflict::NoCheckpoint => "no_checkpoint",
            Conflict::NotInCheckpoint { .. } => "not_in_checkpoint",
            Conflict::NotCovered { .. } => "not_covered",
            Conflict::SessionArchived { .. } => "session_archived",
            Conflict::Archived(_) => "archived",
            Conflict::NotArchivable(_) => "not_archivable",
        }
    }
}

/// A create refused by a creation bound (rule S2). Nothing was created; the refusal was
/// recorded in the audit trail with what the child would have been born with (nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CreationRefused {
    /// The child would be deeper than the configured maximum depth.
    #[error("refused: {child:?} would be at depth {depth}, deeper than the maximum {max}")]
    DepthLimit {
        /// The id that was refused.
        child: String,
        /// The depth it would have had.
        depth: u32,
        /// The configured maximum depth.
        max: u32,
    },
    /// The creator already has the maximum number of live children.
    #[error("refused: {creator:?} already has {live} live children, the maximum is {max}")]
    ChildLimit {
        /// The creator.
        creator: String,
        /// Its live children now.
        live: u32,
        /// The configured maximum.
        max: u32,
    },
    /// The creator made too many sessions within the rate window.
    #[error("refused: {creator:?} created {count} sessions in the last {window_secs}s, the maximum is {max}")]
    RateLimit {
        /// The creator.
        creator: String,
        /// Sessions it created within the window.
        count: u32,
        /// The configured maximum within one window.
        max: u32,
        /// The window's length in seconds.
        window_secs: u64,
    },
}

impl CreationRefused {
    fn kind(&self) -> &'static str {
        match self {
            CreationRefused::DepthLimit { .. } => "depth_limit",
            CreationRefused::ChildLimit { .. } => "child_limit",
            CreationRefused::RateLimit { .. } => "rate_limit",
        }
    }

    /// The word the audit row of the refusal records as its `reason`.
    pub fn reason(&self) -> &'static str {
        self.kind()
    }
}

/// The database cannot serve the request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// There is no ledger there, and the ledger was opened without creating one.
    #[error("no ledger at {0}")]
    NoLedger(Location),
    /// There is something else there: not a session-ledger database. It was left untouched.
    #[error("{0} is not a session-ledger database; it was left untouched")]
    NotALedger(Location),
    /// The ledger was written by a newer version of this software; it was left untouched.
    #[error("the ledger's schema is version {found}, newer than the {supported} this build supports; upgrade session-ledger (the ledger was left untouched)")]
    SchemaTooNew {
        /// The schema version recorded in the ledger.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The ledger cannot be written: the file or its folder, or the handle (opened
    /// [read-only](crate::Config::read_only)).
    #[error("the ledger at {0} is read-only")]
    ReadOnly(Location),
    /// The file is an archive (`Ledger::archive` wrote it), which is never written: it opens
    /// [read-only](crate::Config::read_only) only.
    #[error("{0} is an archive, which is never written: open it read-only")]
    IsArchive(Location),
    /// The engine underneath failed: I/O, locking, SQL, the connection pool, a migration.
    #[error("storage error: {0}")]
    Engine(EngineError),
    /// The PostgreSQL server the URL reached is a standby (in recovery): it serves reads, and
    /// no write. Nothing was written; writes go to the primary (a URL with
    /// `target_session_attrs=read-write`), reads to a handle opened
    /// [read-only](crate::Config::read_only).
    #[error("the server of the ledger at {0} is a standby: it takes no writes")]
    Standby(Location),
    /// No server of the ledger's URL took the operation within
    /// [`Config::failover_wait`](crate::Config::failover_wait): each had gone away, was a
    /// standby, or refused the connection. A write never sent its commit: nothing was written.
    #[error("no server of the ledger at {location} took the operation within {waited:?}: {cause}")]
    Unavailable {
        /// The ledger.
        location: Location,
        /// How long the operation kept trying.
        waited: std::time::Duration,
        /// What the last try met.
        cause: String,
    },
    /// A write reached its commit, and whether it lasts is unknown (rule A5): the server
    /// committed it but stopped waiting for its synchronous standby, so a failover may still
    /// lose it; or the connection was lost during the commit and no server could say whether
    /// it was done. It is not done as far as the caller knows, and it is not undone: it may be
    /// in the trail now, and gone after a failover. Never run it again blindly; look for its
    /// audit row (`seq` and `hash`: the newest row it wrote, unique to it) once the servers
    /// agree again: `Ledger::verify_from` with that head passes only when the row is there.
    #[error(
        "the write whose audit row is {seq} ({hash}) at {location} may or may not last: {why}"
    )]
    DurabilityUnknown {
        /// The ledger.
        location: Location,
        /// The sequence number of the newest audit row the write appended.
        seq: i64,
        /// That row's hash.
        hash: String,
        /// What the ledger saw.
        why: String,
    },
    /// A write's connection was lost during its commit, and the ledger found out: the write is
    /// not on the ledger's primary (it looked for its audit row, under the write lock, on a
    /// server that takes writes). Nothing was written; running it again is safe.
    #[error("the write whose audit row would have been {seq} ({hash}) was not committed: the connection to {location} was lost during its commit, and the write is not on the server")]
    NotCommitted {
        /// The ledger.
        location: Location,
        /// The sequence number its newest audit row would have had.
        seq: i64,
        /// That row's hash.
        hash: String,
    },
    /// Decision records reached their commit, and whether they last is unknown (rules A5,
    /// D1): the server committed them but stopped waiting for its synchronous standby, or the
    /// connection was lost and sending them again failed. They are not on the record as far
    /// as the caller knows; look for them by their ids (`Ledger::decision`) once the servers
    /// agree again.
    #[error("{count} decision record(s) at {location} may or may not last: {why}", count = records.len())]
    DecisionsUnknown {
        /// The ledger.
        location: Location,
        /// The records' own ids.
        records: Vec<String>,
        /// What the ledger saw.
        why: String,
    },
}

impl StorageError {
    fn kind(&self) -> &'static str {
        match self {
            StorageError::NoLedger(_) => "no_ledger",
            StorageError::NotALedger(_) => "not_a_ledger",
            StorageError::SchemaTooNew { .. } => "schema_too_new",
            StorageError::ReadOnly(_) => "read_only",
            StorageError::IsArchive(_) => "is_archive",
            StorageError::Engine(_) => "storage",
            StorageError::Standby(_) => "standby",
            StorageError::Unavailable { .. } => "unavailable",
            StorageError::DurabilityUnknown { .. } => "durability_unknown",
            StorageError::NotCommitted { .. } => "not_committed",
            StorageError::DecisionsUnknown { .. } => "decisions_unknown",
        }
    }

    /// True when the failure was the database being busy or locked by another writer for
    /// longer than the busy timeout.
    pub fn is_busy(&self) -> bool {
        matches!(self, StorageError::Engine(e) if e.busy)
    }
}

/// The data breaks one of the ledger's invariants: a row the library cannot read back, a
/// session without a materialized ancestor, a row that vanished inside its transaction. Found,
/// never repaired: the ledger refuses and keeps the file as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ledger invariant broken: {0}")]
pub struct Corruption(String);

impl Corruption {
    /// A broken invariant, described.
    pub(crate) fn new(what: impl Into<String>) -> Corruption {
        Corruption(what.into())
    }

    /// What is broken.
    pub fn message(&self) -> &str {
        &self.0
    }
}

mod engine;
mod location;
#[cfg(test)]
mod tests;

pub use engine::EngineError;
pub use location::Location;
