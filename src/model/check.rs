//! The report of the whole-file check: the engine's own integrity check and every reference.
//!
//! Values only: the check runs in the engine.

use serde::Serialize;

/// What [`Ledger::check`](crate::Ledger::check) found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CheckReport {
    /// True when the file is intact, every reference resolves and the audit tree matches the
    /// rows.
    pub ok: bool,
    /// The lines `PRAGMA integrity_check` printed: `["ok"]` for an intact file, otherwise one
    /// line per problem (SQLite stops after 100).
    pub integrity: Vec<String>,
    /// What `PRAGMA foreign_key_check` reported, one entry per table and foreign key: rows
    /// that reference a row that does not exist, for example after a hand edit in the `sqlite3`
    /// shell, where foreign keys are off.
    pub broken_references: Vec<BrokenReference>,
    /// The audit tree recomputed from the rows (rule A4): one line per stored node or recorded
    /// checkpoint that does not match them, at most 100; empty when all match.
    pub tree: Vec<String>,
}

/// A foreign key that some rows break: they reference a row that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BrokenReference {
    /// The table holding the rows.
    pub table: String,
    /// Its referencing columns, comma-separated.
    pub columns: String,
    /// The table the rows reference.
    pub references: String,
    /// How many rows break the reference.
    pub rows: u64,
    /// The values they reference that `references` does not hold, as text, at most 100.
    pub missing: Vec<String>,
}
