//! # session-ledger
//!
//! An embedded SQLite ledger of agent sessions that knows who created whom.
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
//!   transaction that allocates it, and revoked with an explicit propagation: `Local`,
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
//! let ledger = Ledger::open(dir.path().join("ledger.db"))?;
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
//! The concurrency and durability strategy is in `docs/concurrency.md`; the schema, and how to
//! read a ledger with `sqlite3 -readonly`, in `docs/schema.md`.

#![warn(missing_docs)]
// One audited exception: `storage::keep_wal_file`, a file control rusqlite has no safe call for.
#![deny(unsafe_code)]

mod audit;
mod check;
mod clock;
mod commands;
mod config;
mod decisions;
mod error;
mod grants;
mod labels;
mod ledger;
mod postures;
mod sessions;
mod storage;
#[cfg(test)]
mod tests;

pub use audit::{
    chain_hash, AuditEntry, AuditHead, AuditQuery, ChainProblem, Explanation, Verification,
    AUDIT_KINDS, GENESIS_HASH, LEDGER_ACTOR,
};
pub use check::{BrokenReference, CheckReport};
pub use clock::{format_ts, Clock, ManualClock, SystemClock};
pub use commands::{parse_command_line, Construct, Refusal, SimpleCommand, MAX_COMMAND_LEN};
pub use config::{Config, Synchronous};
pub use decisions::{AdmittedPart, Decision, Part, Reason, Verdict};
pub use error::{
    Conflict, Corruption, CreationRefused, EngineError, Error, IdProblem, InputError, Location,
    Result, StorageError,
};
pub use grants::{
    check_pattern_examples, parse_ttl, pattern_matches, test_pattern, validate_pattern,
    validate_scope_name, CommandPattern, PartTest, Pattern, PatternTest, Scope, MAX_PATTERN_LEN,
    MAX_SCOPE_NAME_LEN, MAX_TTL,
};
pub use labels::{Label, Materialized, Raise, RaiseOutcome, SessionState, Taint};
pub use ledger::{Created, Ledger};
pub use postures::{
    validate_preview_token, Affected, EpochStart, Posture, PostureLevel, PostureSource,
    Propagation, Revocation,
};
pub use sessions::{
    spawned_chain, spawned_parent, validate_actor, validate_id, Origin, Session, TreeEntry,
    TreeNode, MAX_ACTOR_LEN, MAX_ID_LEN,
};

/// The newest schema version this build reads and writes.
pub fn schema_version() -> i64 {
    storage::supported_version()
}
