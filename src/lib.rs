//! # session-ledger
//!
//! A ledger of agent sessions that knows who created whom: embedded in a SQLite file, or shared
//! by every node of a deployment in a PostgreSQL database.
//!
//! A conductor session dispatches workers; a worker may dispatch more, or spawn sub-agents.
//! The ledger records every session as a row with its creator, so that what must follow the
//! dispatch tree does:
//!
//! * **labels** (information flow): a taint class on the lattice `public < private < secret`
//!   and an `untrusted` flag. Labels only rise. A child is not *materialized* at birth; its
//!   first read copies the label of its nearest materialized ancestor, found with one recursive
//!   CTE up the `created_by` column, and records it.
//! * **lineage**: ancestors, children and subtrees, including *spawned* sub-agents
//!   (`sub-<parent>-<n>`) that the ledger never saw being made.
//! * **postures** (authority): `trust` or `trust_reads`, copied to a child inside the
//!   transaction that allocates it, and revoked with an explicit [`Propagation`]: `Local`,
//!   `Cascade` over the whole subtree in one statement, or `Preview` with a binding token.
//!   **Grants** (command patterns, override scopes) are judged for one session and never pass
//!   on. [`Ledger::decide`] answers "may this session run this command now?" with its reason.
//! * **the audit trail**: every change writes a row in the same transaction; the table is
//!   append-only, enforced by the schema, and SHA3-256 chained so that an edited, removed or
//!   truncated row is detected ([`Ledger::verify`]).
//!
//! ## Terms
//!
//! * **root**: a session with no creator. **depth**: 0 for a root, its creator's depth + 1
//!   otherwise.
//! * **created child**: made through [`Ledger::create_child`]. **spawned child**: an id
//!   `sub-<parent>-<n>` whose parent is parsed from the id (see [`spawned_parent`]).
//! * **materialized**: a session whose label has been written. Roots are materialized at birth
//!   with the default label; children on their first read or first raise.
//! * **subtree**: a session and all its descendants, created or spawned, at any depth.
//!
//! ## Example
//!
//! ```
//! # fn main() -> Result<(), session_ledger::Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! use session_ledger::{Ledger, Raise, Taint};
//!
//! let ledger = Ledger::init(dir.path().join("ledger.db"))?;
//! ledger.create_root("conductor", "alice")?;
//! ledger.create_child("worker-1", "conductor", "alice")?;
//!
//! // The conductor reads a secret; the worker was not materialized yet, so it inherits it.
//! ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
//! assert_eq!(ledger.state("worker-1")?.taint, Taint::Secret);
//!
//! // A sub-agent the worker spawned inherits too, and is recorded under it.
//! assert_eq!(ledger.state("sub-worker-1-1")?.taint, Taint::Secret);
//! assert_eq!(ledger.children("worker-1")?[0].id, "sub-worker-1-1");
//! # Ok(()) }
//! ```
//!
//! A tree view reads the labels and postures of a subtree in one snapshot, writing nothing:
//!
//! ```
//! # fn main() -> Result<(), session_ledger::Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! use session_ledger::{Ledger, PostureLevel, Raise, Taint};
//! let ledger = Ledger::init(dir.path().join("ledger.db"))?;
//! ledger.create_root("conductor", "alice")?;
//! ledger.grant("conductor", PostureLevel::Trust, "alice")?;
//! ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
//! ledger.create_child("worker", "conductor", "alice")?;
//! let worker = &ledger.tree("conductor")?[1];
//! assert_eq!((worker.session.id.as_str(), worker.relative_depth), ("worker", 1));
//! assert_eq!((worker.taint, worker.materialized, worker.trust), (Taint::Secret, false, true));
//! # Ok(()) }
//! ```
//!
//! `README.md` has another example, with postures, grants, decisions and a revocation, and the
//! command line. The concurrency and durability strategy is in `docs/concurrency.md`; the
//! schema, and how to read a ledger with `sqlite3 -readonly`, in `docs/schema.md`.
//!
//! ## How the crate is built
//!
//! [`Ledger`] is the one way in: it checks what a caller gives, opens a transaction and calls
//! the module that owns the rule. The rules live one concept per module (sessions, labels,
//! postures, grants and patterns, decisions, audit, copying a ledger), as functions over the storage interface;
//! the values they exchange with it are in one model module. The storage interface is a few
//! small traits, implemented by each database engine, which also enforces the invariants of
//! `docs/storage-contract.md` inside the database. `docs/design.md` draws the layers and says
//! where each rule lives. [`Error`] says what the caller can do about a failure.

#![deny(missing_docs)]
// One audited exception: the SQLite engine's `keep_wal_file`, a file control its binding has no
// safe call for.
#![deny(unsafe_code)]

mod agents;
mod archive;
mod audit;
mod authority;
mod clock;
mod commands;
mod config;
mod copy;
mod decision_log;
mod decisions;
mod error;
mod files;
mod grants;
mod labels;
mod ledger;
mod model;
mod options;
mod patterns;
mod postures;
mod recorder;
mod sessions;
mod storage;

pub use agents::{claude_code, reason_line, Permission, ToolClass};
pub use archive::{ArchiveRequest, ArchiveRun, ArchiveVerification, Archived, ArchivedSession};
pub use audit::{
    audit_leaf, chain_hash, ocsf_event, verify_consistency, verify_inclusion, verify_receipt,
    AuditQuery, ChainProblem, Checkpoint, CheckpointOptions, CheckpointVerification, Finding,
    Receipt, ReceiptCheck, SignedCheckpoint, SignerKey, Verification, VerifierKey, LEDGER_ACTOR,
    OCSF_VERSION,
};
pub use authority::{Authority, Withheld};
pub use clock::{format_ts, Clock, ManualClock, SystemClock};
pub use commands::{
    classify, join_words, parse_command_line, Classification, ClassifiedPart, Construct, Effect,
    Refusal, SimpleCommand, MAX_COMMAND_LEN,
};
pub use config::{Config, Synchronous};
pub use copy::Copied;
pub use decision_log::ocsf_decision;
pub use decision_log::{
    verify_decision_receipt, AskedBy, DecisionQuery, DecisionReceipt, DecisionReceiptCheck,
    DecisionRecord, Integrated, AUTHORITIES, INTEGRATION_BATCH, MAX_RECORDED_INPUT, VERDICTS,
};
pub use decisions::{
    AdmittedPart, Decision, Explanation, KeptWord, Part, ReadOnly, Reason, Recorded, Verdict,
    EXPLAINED_DECISIONS,
};
pub use error::{
    Conflict, Corruption, CreationRefused, EngineError, Error, IdProblem, InputError, Location,
    Result, StorageError,
};
pub use grants::{
    parse_ttl, validate_scope_name, AlsoRevoke, CommandPattern, NewPattern, PatternAdded,
    PatternReview, MAX_SCOPE_NAME_LEN, MAX_TTL,
};
pub use labels::{Raise, RaiseOutcome, SessionState};
pub use ledger::{Backup, ConsistencyProof, Ledger, RecordedCheckpoint, Restored};
pub use model::{
    spawned_chain, spawned_parent, validate_actor, validate_id, AuditEntry, AuditHead, AuditKind,
    BrokenReference, CheckReport, Grant, Label, Materialized, Origin, Posture, PostureLevel,
    PostureSource, Scope, Session, StandingGrant, Taint, GENESIS_HASH, MAX_ACTOR_LEN, MAX_ID_LEN,
};
pub use options::LedgerOption;
pub use patterns::{
    check_pattern_examples, is_tool_rule, pattern_matches, test_pattern, validate_pattern,
    PartTest, PathGlob, Pattern, PatternTest, ToolCall, ToolRule, EDIT_TOOLS, MAX_PATTERN_LEN,
    READ_ONLY_TOOLS, READ_TOOLS,
};
pub use postures::{
    validate_preview_token, Affected, EpochStart, Propagation, Revocation, RevocationKind,
};
pub use recorder::{DecisionRecorder, RecorderOptions};
pub use sessions::{Created, Ended, LevelNode, TreeEntry, TreeLevel, TreeNode};

/// True when `target` names a PostgreSQL server (a `postgres://` or `postgresql://` URL), which
/// [`Ledger::open`] opens on the PostgreSQL engine; anything else is the path of a SQLite file.
pub fn is_postgres_url(target: &str) -> bool {
    storage::is_url(target)
}

/// The newest schema version this build reads and writes.
pub fn schema_version() -> i64 {
    storage::supported_version()
}

/// README.md's Rust examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
