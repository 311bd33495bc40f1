//! The ledger's error type.
//!
//! Errors come in three kinds, and callers should branch on the variant, never on the message:
//!
//! * **the caller's mistake**: a malformed id, an unknown or ended session, an id already used,
//!   nothing to raise. Nothing was changed and nothing was written.
//! * **a refusal by a bound** (rule S2): the create was well-formed but would exceed a limit.
//!   Nothing was created; the refusal itself was recorded in the audit trail.
//! * **the database**: a file that is not a ledger, a schema newer than this build, a read-only
//!   file, a broken invariant found in the data, or a storage failure underneath.
//!
//! [`Error::kind`] names each variant with a stable snake_case word, for a program that gets the
//! error as text (the CLI's `--json` errors carry it). A message quotes a value the caller gave
//! (an id, actor, pattern, scope name, ...) in full up to 64 characters; a longer one is cut
//! there, with an ellipsis and its full length, `"aaaa…" (10000 characters)`, while the variant's
//! field keeps the whole value.

use std::fmt;
use std::path::PathBuf;

/// A specialized `Result` for ledger operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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

/// Everything that can go wrong in a ledger operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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

    /// The session does not exist (and, where that applies, is not a spawned id of a known one).
    #[error("no session {0:?} in the ledger")]
    UnknownSession(String),

    /// The session has ended; it stays as a tombstone and cannot act.
    #[error("session {0:?} has ended")]
    SessionEnded(String),

    /// The id is or was in use; ids are never reused.
    #[error("session id {0:?} exists or existed; ids are never reused")]
    SessionExists(String),

    /// A posture name is not `trust` or `trust_reads`.
    #[error("unknown posture {}: expected trust or trust_reads", Quoted(.0))]
    InvalidPosture(String),

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

    /// A preview token is malformed (it is 64 lower-case hex digits).
    #[error("malformed preview token {}: expected the 64 hex digits a preview printed", Quoted(.0))]
    InvalidToken(String),

    /// Rule R2: the subtree changed since the preview whose token was given; nothing was
    /// revoked. Preview again.
    #[error(
        "the subtree of {root:?} changed since the preview; nothing was revoked (preview again)"
    )]
    StalePreview {
        /// The root of the revocation.
        root: String,
    },

    /// A saved audit head is malformed (it is `SEQ:HASH`).
    #[error(
        "malformed audit head {}: expected SEQ:HASH as `session-ledger audit head` prints it",
        Quoted(.0)
    )]
    InvalidHead(String),

    /// A time is malformed.
    #[error("malformed time {}: expected RFC 3339, like 2026-11-30T12:00:00Z", Quoted(.0))]
    InvalidTime(String),

    /// A raise named neither a taint class nor the untrusted flag.
    #[error("nothing to raise: give a taint class, the untrusted flag, or both")]
    NothingToRaise,

    /// Refused (rule S2): the child would be deeper than the configured maximum depth.
    #[error("refused: {child:?} would be at depth {depth}, deeper than the maximum {max}")]
    DepthLimit {
        /// The id that was refused.
        child: String,
        /// The depth it would have had.
        depth: u32,
        /// The configured maximum depth.
        max: u32,
    },

    /// Refused (rule S2): the creator already has the maximum number of live children.
    #[error("refused: {creator:?} already has {live} live children, the maximum is {max}")]
    ChildLimit {
        /// The creator.
        creator: String,
        /// Its live children now.
        live: u32,
        /// The configured maximum.
        max: u32,
    },

    /// Refused (rule S2): the creator made too many sessions within the rate window.
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

    /// A [`Config`](crate::Config) setting is out of the range the ledger can use; nothing was
    /// opened or created.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),

    /// There is no ledger at the path and the ledger was opened without creating one.
    #[error("no ledger at {0} (create one with `session-ledger init`)")]
    NoLedger(PathBuf),

    /// The file exists but is not a session ledger; it was left untouched.
    #[error("{0} is not a session-ledger database; it was left untouched")]
    NotALedger(PathBuf),

    /// The ledger was written by a newer version of this software; it was left untouched.
    #[error("the ledger's schema is version {found}, newer than the {supported} this build supports; upgrade session-ledger (the file was left untouched)")]
    SchemaTooNew {
        /// The schema version recorded in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },

    /// The ledger file (or its directory) cannot be written.
    #[error("the ledger at {0} is read-only")]
    ReadOnly(PathBuf),

    /// The data breaks one of the ledger's invariants; the file needs inspection.
    #[error("ledger invariant broken: {0}")]
    Corruption(String),

    /// The storage underneath failed (I/O, locking, SQL).
    #[error("storage error: {0}")]
    Storage(#[from] StorageError),
}

/// A failure of the storage underneath the ledger, kept opaque so the public API does not
/// depend on one database engine.
#[derive(Debug)]
pub struct StorageError {
    inner: StorageErrorInner,
}

#[derive(Debug)]
enum StorageErrorInner {
    Sqlite(rusqlite::Error),
    Pool(r2d2::Error),
    Migration(refinery::Error),
    Io(std::io::Error),
}

impl StorageError {
    /// True when the failure was the database being busy or locked by another writer for
    /// longer than the busy timeout.
    pub fn is_busy(&self) -> bool {
        match &self.inner {
            StorageErrorInner::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }

    pub(crate) fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        match &self.inner {
            StorageErrorInner::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => Some(e.code),
            _ => None,
        }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            StorageErrorInner::Sqlite(e) => write!(f, "sqlite: {e}"),
            StorageErrorInner::Pool(e) => write!(f, "connection pool: {e}"),
            StorageErrorInner::Migration(e) => write!(f, "migration: {e}"),
            StorageErrorInner::Io(e) => write!(f, "i/o: {e}"),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner {
            StorageErrorInner::Sqlite(e) => Some(e),
            StorageErrorInner::Pool(e) => Some(e),
            StorageErrorInner::Migration(e) => Some(e),
            StorageErrorInner::Io(e) => Some(e),
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Storage(StorageError {
            inner: StorageErrorInner::Sqlite(e),
        })
    }
}

impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        Error::Storage(StorageError {
            inner: StorageErrorInner::Pool(e),
        })
    }
}

impl From<refinery::Error> for Error {
    fn from(e: refinery::Error) -> Self {
        Error::Storage(StorageError {
            inner: StorageErrorInner::Migration(e),
        })
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Storage(StorageError {
            inner: StorageErrorInner::Io(e),
        })
    }
}

impl Error {
    /// A stable snake_case name for the variant, one per variant, for a program that gets the
    /// error as text (the CLI prints it as `kind` in a `--json` error). It is the variant's name
    /// in snake_case: `invalid_id`, `unknown_session`, `stale_preview`, `child_limit`,
    /// `read_only`, `storage`, ... (README.md lists them all). A name, once given, does not
    /// change; branch on it, or on the variant, never on the message.
    ///
    /// ```
    /// let e = session_ledger::validate_id("a b").unwrap_err();
    /// assert_eq!(e.kind(), "invalid_id");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidId { .. } => "invalid_id",
            Error::InvalidActor(_) => "invalid_actor",
            Error::InvalidTaint(_) => "invalid_taint",
            Error::UnknownSession(_) => "unknown_session",
            Error::SessionEnded(_) => "session_ended",
            Error::SessionExists(_) => "session_exists",
            Error::InvalidPosture(_) => "invalid_posture",
            Error::InvalidPattern { .. } => "invalid_pattern",
            Error::InvalidScopeName(_) => "invalid_scope_name",
            Error::InvalidTtl(_) => "invalid_ttl",
            Error::EmptyCommand => "empty_command",
            Error::UnknownPattern { .. } => "unknown_pattern",
            Error::UnknownScope { .. } => "unknown_scope",
            Error::InvalidToken(_) => "invalid_token",
            Error::StalePreview { .. } => "stale_preview",
            Error::InvalidHead(_) => "invalid_head",
            Error::InvalidTime(_) => "invalid_time",
            Error::NothingToRaise => "nothing_to_raise",
            Error::DepthLimit { .. } => "depth_limit",
            Error::ChildLimit { .. } => "child_limit",
            Error::RateLimit { .. } => "rate_limit",
            Error::InvalidConfig(_) => "invalid_config",
            Error::NoLedger(_) => "no_ledger",
            Error::NotALedger(_) => "not_a_ledger",
            Error::SchemaTooNew { .. } => "schema_too_new",
            Error::ReadOnly(_) => "read_only",
            Error::Corruption(_) => "corruption",
            Error::Storage(_) => "storage",
        }
    }

    /// True for a refusal by one of the creation bounds of rule S2.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Error::DepthLimit { .. } | Error::ChildLimit { .. } | Error::RateLimit { .. }
        )
    }

    /// True when the error is the caller's mistake (bad input, unknown or ended session).
    pub fn is_caller_error(&self) -> bool {
        matches!(
            self,
            Error::InvalidId { .. }
                | Error::InvalidActor(_)
                | Error::InvalidTaint(_)
                | Error::UnknownSession(_)
                | Error::SessionEnded(_)
                | Error::SessionExists(_)
                | Error::NothingToRaise
                | Error::InvalidPosture(_)
                | Error::InvalidPattern { .. }
                | Error::InvalidScopeName(_)
                | Error::InvalidTtl(_)
                | Error::EmptyCommand
                | Error::UnknownPattern { .. }
                | Error::UnknownScope { .. }
                | Error::InvalidToken(_)
                | Error::StalePreview { .. }
                | Error::InvalidHead(_)
                | Error::InvalidTime(_)
                | Error::InvalidConfig(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// One error of each variant. The match below has no wildcard, so a new variant does not
    /// compile until it is added there, and the test fails until it has a sample here.
    fn one_of_each() -> Vec<Error> {
        let samples = vec![
            Error::InvalidId {
                id: "a b".into(),
                problem: IdProblem::BadCharacter,
            },
            Error::InvalidActor("x/y".into()),
            Error::InvalidTaint("top".into()),
            Error::UnknownSession("nobody".into()),
            Error::SessionEnded("gone".into()),
            Error::SessionExists("conductor".into()),
            Error::InvalidPosture("all".into()),
            Error::InvalidPattern {
                pattern: String::new(),
                problem: "it is empty".into(),
            },
            Error::InvalidScopeName("a b".into()),
            Error::InvalidTtl("0s".into()),
            Error::EmptyCommand,
            Error::UnknownPattern {
                session: "conductor".into(),
                pattern: "npm test".into(),
            },
            Error::UnknownScope {
                session: "conductor".into(),
                name: "hotfix".into(),
            },
            Error::InvalidToken("xyz".into()),
            Error::StalePreview {
                root: "conductor".into(),
            },
            Error::InvalidHead("12".into()),
            Error::InvalidTime("yesterday".into()),
            Error::NothingToRaise,
            Error::DepthLimit {
                child: "deep".into(),
                depth: 65,
                max: 64,
            },
            Error::ChildLimit {
                creator: "conductor".into(),
                live: 50,
                max: 50,
            },
            Error::RateLimit {
                creator: "conductor".into(),
                count: 100,
                max: 100,
                window_secs: 60,
            },
            Error::InvalidConfig("max_depth 0".into()),
            Error::NoLedger("ledger.db".into()),
            Error::NotALedger("notes.txt".into()),
            Error::SchemaTooNew {
                found: 99,
                supported: 7,
            },
            Error::ReadOnly("ledger.db".into()),
            Error::Corruption("a cycle".into()),
            Error::from(std::io::Error::other("disk on fire")),
        ];
        let mut variants = BTreeSet::new();
        for e in &samples {
            let variant = match e {
                Error::InvalidId { .. } => 0,
                Error::InvalidActor(_) => 1,
                Error::InvalidTaint(_) => 2,
                Error::UnknownSession(_) => 3,
                Error::SessionEnded(_) => 4,
                Error::SessionExists(_) => 5,
                Error::InvalidPosture(_) => 6,
                Error::InvalidPattern { .. } => 7,
                Error::InvalidScopeName(_) => 8,
                Error::InvalidTtl(_) => 9,
                Error::EmptyCommand => 10,
                Error::UnknownPattern { .. } => 11,
                Error::UnknownScope { .. } => 12,
                Error::InvalidToken(_) => 13,
                Error::StalePreview { .. } => 14,
                Error::InvalidHead(_) => 15,
                Error::InvalidTime(_) => 16,
                Error::NothingToRaise => 17,
                Error::DepthLimit { .. } => 18,
                Error::ChildLimit { .. } => 19,
                Error::RateLimit { .. } => 20,
                Error::InvalidConfig(_) => 21,
                Error::NoLedger(_) => 22,
                Error::NotALedger(_) => 23,
                Error::SchemaTooNew { .. } => 24,
                Error::ReadOnly(_) => 25,
                Error::Corruption(_) => 26,
                Error::Storage(_) => 27,
            };
            variants.insert(variant);
        }
        assert_eq!(variants.len(), 28, "a variant has no sample in one_of_each");
        samples
    }

    #[test]
    fn every_variant_has_a_distinct_snake_case_kind() {
        let samples = one_of_each();
        let mut kinds = BTreeSet::new();
        for e in &samples {
            let kind = e.kind();
            assert!(
                !kind.is_empty()
                    && kind.starts_with(|c: char| c.is_ascii_lowercase())
                    && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    && !kind.ends_with('_')
                    && !kind.contains("__"),
                "{kind:?} is not snake_case"
            );
            assert!(kinds.insert(kind), "two variants are named {kind:?}");
        }
        assert_eq!(kinds.len(), samples.len());
    }

    #[test]
    fn a_long_value_is_quoted_cut_on_a_character_boundary_with_its_full_length() {
        // Three-byte characters: a cut at byte 64 would fall inside one, and slicing there panics.
        let message = Error::InvalidActor("€".repeat(1_000)).to_string();
        assert!(
            message.starts_with(&format!(
                "invalid actor name \"{}…\" (1000 characters): ",
                "€".repeat(64)
            )),
            "{message}"
        );

        let id = format!("{}\n{}", "a".repeat(63), "b".repeat(100));
        let message = Error::InvalidId {
            id,
            problem: IdProblem::TooLong,
        }
        .to_string();
        assert_eq!(
            message,
            format!(
                "invalid session id \"{}\\n…\" (164 characters): it is longer than 128 characters",
                "a".repeat(63)
            )
        );
    }

    #[test]
    fn a_value_of_at_most_64_characters_is_quoted_whole() {
        let pattern = "x".repeat(64);
        assert_eq!(
            Error::InvalidPattern {
                pattern: pattern.clone(),
                problem: "it holds a NUL".into(),
            }
            .to_string(),
            format!("invalid command pattern {pattern:?}: it holds a NUL")
        );
        assert_eq!(
            Error::InvalidTaint("x'y\"z".into()).to_string(),
            r#"unknown taint class "x'y\"z": expected public, private or secret"#
        );
    }
}
