//! The operator's check of the whole file: SQLite's own integrity check and every reference.
//!
//! Opening a ledger reads nothing that grows with it, so neither check runs at open: each
//! reads the whole file. They run after a migration (inside its transaction, for the
//! references) and when an operator asks, with [`Ledger::check`](crate::Ledger::check) or
//! `session-ledger check`.

use serde::Serialize;

/// What [`Ledger::check`](crate::Ledger::check) found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CheckReport {
    /// True when the file is intact and every reference resolves.
    pub ok: bool,
    /// The lines `PRAGMA integrity_check` printed: `["ok"]` for an intact file, otherwise one
    /// line per problem (SQLite stops after 100).
    pub integrity: Vec<String>,
    /// What `PRAGMA foreign_key_check` reported, one entry per table and foreign key: rows
    /// that reference a row that does not exist, for example after a hand edit in the `sqlite3`
    /// shell, where foreign keys are off.
    pub broken_references: Vec<BrokenReference>,
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

mod ops {
    use super::CheckReport;
    use crate::error::Result;
    use crate::ledger::Ledger;
    use crate::storage;

    impl Ledger {
        /// Checks the whole file: `PRAGMA integrity_check` (the b-trees, indexes and pages
        /// are sound) and `PRAGMA foreign_key_check` (every reference resolves), in one read
        /// transaction. Reads every page, so it costs what the file costs; opening a ledger
        /// runs neither. Writes nothing, and works on a ledger opened with
        /// [`Config::read_only`](crate::Config::read_only).
        ///
        /// Problems found are not an error: see [`CheckReport::ok`]. Nothing is repaired.
        ///
        /// # Errors
        ///
        /// [`Error::Storage`](crate::Error::Storage) when the file cannot be read at all.
        ///
        /// # Example
        ///
        /// ```
        /// # fn main() -> Result<(), session_ledger::Error> {
        /// # let dir = tempfile::tempdir().unwrap();
        /// let ledger = session_ledger::Ledger::open(dir.path().join("ledger.db"))?;
        /// ledger.create_root("conductor", "alice")?;
        /// let report = ledger.check()?;
        /// assert!(report.ok);
        /// assert_eq!(report.integrity, ["ok"]);
        /// # Ok(()) }
        /// ```
        pub fn check(&self) -> Result<CheckReport> {
            self.storage.read(storage::integrity)
        }
    }
}
