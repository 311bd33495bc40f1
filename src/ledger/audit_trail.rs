//! The handle's audit trail and whole-ledger operations: listing and verifying the trail,
//! checking the database, and copying a ledger (backing up and restoring: `backups.rs`).

use crate::audit::{self, AuditQuery, Verification};
use crate::copy::{self, Copied};
use crate::error::Result;
use crate::model::{AuditEntry, AuditHead, CheckReport};

use super::Ledger;

impl Ledger {
    /// The audit rows matching `query`, oldest first, in one snapshot. What it reads is said
    /// on [`AuditQuery`].
    ///
    /// # Errors
    ///
    /// `InvalidId` for a malformed session or subtree id; `Corruption` for a row the library
    /// cannot read back, or when `audit_time_order` lost its one row (a hand edit).
    pub fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        self.storage.snapshot(|r| audit::list(r, query))
    }

    /// The head of the audit chain, to keep somewhere else.
    ///
    /// # Errors
    ///
    /// `Storage`.
    pub fn audit_head(&self) -> Result<AuditHead> {
        self.storage.read(|r| r.audit_head())
    }

    /// Walks the whole chain in one snapshot for the first row that does not verify (rule A3),
    /// and with a saved head, rows removed from the end since. A failed chain is no error.
    ///
    /// # Errors
    ///
    /// `Storage`; `Corruption` when the one row of `audit_time_order` was deleted by hand.
    pub fn verify(&self, saved: Option<&AuditHead>) -> Result<Verification> {
        self.storage.snapshot(|r| audit::verify(r, saved))
    }

    /// Verifies only what was written since `saved`, a head kept from [`Ledger::audit_head`]:
    /// that its row still has its hash and contents, then the chain from it to the newest row,
    /// reading no row before it (a daily check costs a day's rows). A
    /// [`ChainProblem`](crate::ChainProblem) `Truncated`, `HeadMismatch` or `Gap` says the
    /// saved head's row is past the end, changed or gone.
    ///
    /// # Errors
    ///
    /// As [`Ledger::verify`].
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let ledger = session_ledger::Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// let yesterday = ledger.audit_head()?;
    /// ledger.create_root("reviewer", "bob")?;
    /// let v = ledger.verify_from(&yesterday)?;
    /// assert!(v.ok);
    /// assert_eq!(v.rows, 2); // the saved head's row and the one after it
    /// # Ok(()) }
    /// ```
    pub fn verify_from(&self, saved: &AuditHead) -> Result<Verification> {
        self.storage.snapshot(|r| audit::verify_from(r, saved))
    }

    /// Checks the whole file in one read transaction: the engine's integrity check, every
    /// foreign key, and the audit tree against the rows (every stored node recomputed, and every
    /// recorded checkpoint's root). Reads every page (opening runs neither) and writes nothing, on a read-only
    /// handle too. Problems are not an error ([`CheckReport::ok`]); nothing is repaired.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage) when the file cannot be read at all.
    pub fn check(&self) -> Result<CheckReport> {
        self.storage.snapshot(|r| {
            let mut report = r.check()?;
            report.tree = audit::tree::check(r)?;
            report.ok &= report.tree.is_empty();
            Ok(report)
        })
    }

    /// Copies this ledger, row for row as it stood at one moment, into `target`, a new
    /// PostgreSQL ledger opened by the schema's owner, in one transaction that commits only once
    /// the copied trail verifies and ends at this ledger's head. Writers here may go on.
    ///
    /// # Errors
    ///
    /// `NotEmpty` when `target` holds anything; `InvalidCopyTarget` for a SQLite target;
    /// `Corruption` when this ledger's trail does not verify; `Storage` (a role that does not
    /// own the tables among them). Nothing is copied in each case.
    pub fn copy_into(&self, target: &Ledger) -> Result<Copied> {
        copy::copy(&self.storage, &target.storage)
    }
}
