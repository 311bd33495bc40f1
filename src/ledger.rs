//! The [`Ledger`] handle: the one way in. It checks what a caller gives, opens the transaction
//! each operation needs, and calls the concept that owns the rule; it holds no rule itself. This
//! file opens a ledger and runs its transactions; the methods are in `ledger/`, by concept.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::audit;
use crate::clock::stored_precision;
use crate::config::Config;
use crate::error::{Location, Result};
use crate::storage::{Storage, Write};

// The handle's methods, by what they touch: sessions and labels; postures, grants and
// decisions; the audit trail and whole-ledger operations.
mod archives;
mod audit_trail;
mod authority;
mod backups;
mod checkpoints;
mod decision_log;
mod options;
mod sessions;

pub use backups::{Backup, Restored};
pub use checkpoints::{ConsistencyProof, RecordedCheckpoint};

/// An open ledger. Cheap to share: wrap it in an `Arc` and call it from many threads; each call
/// takes a pooled connection for its duration.
///
/// Every write is one transaction that takes the write lock before its first statement and
/// commits the change and its audit rows together. Methods that take an `actor` record it in
/// the audit trail: 1 to 64 characters from `[A-Za-z0-9._:@-]`. The errors each method lists
/// are named by their leaf: `InvalidId` is `Error::Input(InputError::InvalidId { .. })`,
/// `UnknownSession` is `Error::Conflict(Conflict::UnknownSession(_))`.
#[derive(Debug)]
pub struct Ledger {
    storage: Storage,
    config: Config,
}

fn assert_send_sync<T: Send + Sync>() {}
const _: fn() = assert_send_sync::<Ledger>;

impl Ledger {
    /// Opens the existing ledger at `path` with the default [`Config`], bringing an older
    /// schema up to date. A missing ledger is an error, not a new empty one: a mistyped path
    /// must not start a ledger of its own. [`Ledger::init`] creates one.
    ///
    /// # Errors
    ///
    /// [`StorageError`](crate::StorageError) `NoLedger` when there is no ledger at `path` (no
    /// file; on PostgreSQL, a database without the ledger's tables), `NotALedger` for a file
    /// that is some other database or not a database, `SchemaTooNew` for a ledger written by a
    /// newer build, `ReadOnly` when the file cannot be written (the file is left untouched in
    /// each case), `Engine` when it cannot be opened at all.
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger> {
        Ledger::open_with(path, Config::default())
    }

    /// Opens the ledger at `path`, creating it first when there is none, with the default
    /// [`Config`]: what `session-ledger init` does. A SQLite file's folder must exist.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`], but for `NoLedger`; `Engine` when the folder that would hold a new
    /// SQLite file does not exist.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Error, Ledger, StorageError};
    /// let path = dir.path().join("ledger.db");
    /// assert!(matches!(Ledger::open(&path), Err(Error::Storage(StorageError::NoLedger(_)))));
    /// Ledger::init(&path)?.create_root("conductor", "alice")?;
    /// assert!(Ledger::open(&path)?.session("conductor")?.is_some());
    /// # Ok(()) }
    /// ```
    pub fn init(path: impl AsRef<Path>) -> Result<Ledger> {
        Ledger::open_with(path, Config::default().create_if_missing(true))
    }

    /// Opens the ledger at `path` with `config`.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`]; `NoLedger` when the file does not exist and
    /// [`Config::create_if_missing`] is false; [`InputError::InvalidConfig`](crate::InputError::InvalidConfig) for a setting the
    /// engine cannot take, before anything is opened.
    pub fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Ledger> {
        let storage = Storage::open(path.as_ref(), &config)?;
        Ok(Ledger { storage, config })
    }

    /// Where the ledger is: its file, or its server and database (never with a password).
    pub fn location(&self) -> &Location {
        self.storage.location()
    }

    /// The schema version of this ledger's engine that this build reads and writes.
    pub fn schema_version(&self) -> i64 {
        self.storage.schema_version()
    }

    /// True for a [read-only](Config::read_only) handle on a lone copy of a SQLite ledger: a
    /// file with no `-wal` beside it, in a folder this user cannot write, which SQLite cannot
    /// open the usual way (a reader of a WAL database needs the `-shm` file and cannot create
    /// it). The copy is read as it is (SQLite's `immutable=1`), which is safe because without a
    /// `-wal` every committed row is in the file, and as long as nobody writes it while it is
    /// read: such a handle would not see the change. Tell the reader so.
    pub fn is_immutable(&self) -> bool {
        self.storage.is_immutable()
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The clock's time at the stored precision.
    fn wall_clock(&self) -> DateTime<Utc> {
        stored_precision(self.config.clock.now())
    }

    /// Runs `f` in one write transaction with the time of the write, read once the write lock
    /// is held ([`audit::write_time`]): an operation never writes a time from before a change
    /// it waited for, and times never go back along the trail.
    ///
    /// A session it did not find that was archived is said so (`SessionArchived`).
    fn write<T>(&self, mut f: impl FnMut(&mut dyn Write, DateTime<Utc>) -> Result<T>) -> Result<T> {
        let result = self.storage.write(|tx| {
            let now = audit::write_time(tx.read(), self.wall_clock())?;
            f(tx, now)
        });
        self.archived_or(result)
    }
}
