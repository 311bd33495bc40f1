//! The SQLite engine: one ledger file, a pool of connections to it, and the storage interface
//! as SQL.
//!
//! Reads run on a pooled connection; a snapshot is one `BEGIN DEFERRED` transaction; every write
//! is one `BEGIN IMMEDIATE` transaction, which takes the write lock before its first statement,
//! so writers queue on the lock (`busy_timeout`) and never fail a transaction half way with
//! `SQLITE_BUSY`; a handle's own writers queue first among themselves, in the order they asked
//! (`writers.rs`). Nothing is retried: a write that waited its whole timeout fails. The strategy
//! is written down in `docs/concurrency.md`; the schema, with the triggers that keep the storage
//! contract, is in `migrations/sqlite/` and `docs/schema.md`.
//!
//! Every statement is a constant next to the function that runs it, every value a bound
//! parameter, every row read by column name. `tests/plans.rs` holds the hot statements' query
//! plans with a test.

mod archive_file;
mod archives;
mod audit;
mod columns;
mod connection;
mod decisions;
mod grants;
mod labels;
mod levels;
mod migrate;
mod open;
mod options;
#[cfg(test)]
#[path = "tests/plans.rs"]
mod plans;
mod postures;
mod sessions;
mod transfer;
mod tree;
mod writers;

use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use rusqlite::{Connection, TransactionBehavior};

use super::{Append, Collected, Engine, FileReads, GroupCommit, Import, Read, Write};
use crate::error::{EngineError, Error, InputError, Location, Result, StorageError};
use crate::model::CheckReport;

pub(crate) use archive_file::{archive_header, create_archive_file};
pub(crate) use migrate::supported_version;

/// A ledger in a SQLite file.
pub(crate) struct Sqlite {
    pool: r2d2::Pool<open::Manager>,
    location: Location,
    read_only: bool,
    /// True when opened read-only as an immutable lone copy (`Sqlite::open_read_only`).
    immutable: bool,
    /// The decision records of this handle's threads, committed in groups.
    appends: GroupCommit,
    /// This handle's writers, in the order they asked.
    writers: writers::Writers,
    /// How long a writer waits for the writers before it, of this handle and others.
    busy_timeout: std::time::Duration,
    /// How many connections to the file this handle has opened, the setup connection included.
    #[cfg_attr(not(test), allow(dead_code))]
    opened: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite")
            .field("location", &self.location)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Sqlite {
    /// How many connections to the file this handle has opened so far, the setup connection
    /// included.
    #[cfg(test)]
    fn connections_opened(&self) -> usize {
        self.opened.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The reads of the storage interface, on one connection (or inside a transaction on it).
pub(super) struct Conn<'c> {
    conn: &'c Connection,
}

/// The writes of the storage interface, inside one `BEGIN IMMEDIATE` transaction.
pub(super) struct Tx<'c> {
    read: Conn<'c>,
}

impl Tx<'_> {
    fn conn(&self) -> &Connection {
        self.read.conn
    }
}

/// The one savepoint a write transaction may hold.
const SAVEPOINT: &str = "SAVEPOINT undo";
const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO undo; RELEASE undo";
const RELEASE_SAVEPOINT: &str = "RELEASE undo";

impl Write for Tx<'_> {
    fn read(&mut self) -> &mut dyn Read {
        &mut self.read
    }

    fn savepoint(&mut self) -> Result<()> {
        Ok(self.conn().execute_batch(SAVEPOINT)?)
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        Ok(self.conn().execute_batch(ROLLBACK_TO_SAVEPOINT)?)
    }

    fn release_savepoint(&mut self) -> Result<()> {
        Ok(self.conn().execute_batch(RELEASE_SAVEPOINT)?)
    }
}

impl FileReads for Conn<'_> {
    fn check(&mut self) -> Result<CheckReport> {
        migrate::integrity(self.conn)
    }
}

impl Sqlite {
    /// Runs `f` on a pooled connection in this writer's turn among the handle's writers
    /// (`writers.rs`), with what is left of the busy timeout for a writer of another process.
    fn in_turn(&self, f: &mut dyn FnMut(&mut Connection) -> Result<()>) -> Result<()> {
        let (_turn, left) = self.writers.turn(self.busy_timeout)?;
        let mut conn = self.pool.get()?;
        conn.busy_timeout(left)?;
        let done = f(&mut conn);
        let reset = conn.busy_timeout(self.busy_timeout);
        done?;
        Ok(reset?)
    }
}

impl Engine for Sqlite {
    fn location(&self) -> &Location {
        &self.location
    }

    fn schema_version(&self) -> i64 {
        migrate::supported_version()
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn is_immutable(&self) -> bool {
        self.immutable
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        let conn = self.pool.get()?;
        f(&mut Conn { conn: &conn })
    }

    fn snapshot(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        let mut conn = self.pool.get()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        f(&mut Conn { conn: &tx })?;
        tx.commit()?;
        Ok(())
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Write) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        self.in_turn(&mut |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            f(&mut Tx {
                read: Conn { conn: &tx },
            })?;
            tx.commit()?;
            Ok(())
        })
    }

    /// SQLite has one writer per file: an append is a `BEGIN IMMEDIATE` transaction like any
    /// write, which waits for the writer holding the file (`busy_timeout`), and holds it for
    /// its `INSERT`s and its commit only: it reads nothing, and never the audit chain. The
    /// records of this handle's threads appending at once share one (`GroupCommit`).
    fn append(&self, f: &mut dyn FnMut(&mut dyn Append) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        let mut collected = Collected::default();
        f(&mut collected)?;
        self.appends.append(collected.0, &|records| {
            self.in_turn(&mut |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                Tx {
                    read: Conn { conn: &tx },
                }
                .append_decisions(records)?;
                tx.commit()?;
                Ok(())
            })
        })
    }

    fn import(&self, _: &mut dyn FnMut(&mut dyn Import) -> Result<()>) -> Result<()> {
        Err(InputError::InvalidCopyTarget(self.location.clone()).into())
    }

    /// `VACUUM INTO`: one read transaction copies every page as it stands at its start, so
    /// writers go on (and the copy holds none of their later commits); then the copy and its
    /// folder are synced. A `dest` that exists is refused before anything is written.
    fn backup_into(&self, dest: &Path) -> Result<()> {
        if dest.exists() {
            return Err(InputError::InvalidConfig(format!(
                "{} exists: a backup is written to a new file only",
                dest.display()
            ))
            .into());
        }
        let target = open::literal_path(dest);
        let conn = self.pool.get()?;
        conn.execute("VACUUM INTO ?1", [target.to_string_lossy().as_ref()])?;
        drop(conn);
        std::fs::File::open(dest)?.sync_all()?;
        if let Some(folder) = dest.parent().filter(|f| !f.as_os_str().is_empty()) {
            std::fs::File::open(folder)?.sync_all()?;
        }
        Ok(())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        let busy = matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        EngineError::new("sqlite", busy, e).into()
    }
}

/// The SQLite result code of an error, when it has one.
fn sqlite_code(e: &Error) -> Option<rusqlite::ErrorCode> {
    match e {
        Error::Storage(StorageError::Engine(engine)) => engine
            .inner()
            .downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code),
        _ => None,
    }
}

/// Turns the errors that mean "this is not a ledger" or "read-only" into their own variants.
fn classify(e: rusqlite::Error, path: &Path) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            Error::Storage(StorageError::NotALedger(Location::File(path.to_path_buf())))
        }
        Some(rusqlite::ErrorCode::ReadOnly) => {
            Error::Storage(StorageError::ReadOnly(Location::File(path.to_path_buf())))
        }
        _ => Error::from(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use r2d2::ManageConnection;

    #[test]
    fn a_handle_used_by_one_caller_at_a_time_opens_the_file_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.db");
        for config in [
            Config::default().create_if_missing(true),
            Config::default().read_only(true),
        ] {
            let sqlite = Sqlite::open(&path, &config).expect("open");
            // The setup connection, kept for the pool's first call.
            assert_eq!(sqlite.connections_opened(), 1);
            for _ in 0..3 {
                Engine::read(&sqlite, &mut |r| {
                    r.session(crate::model::Id::stored("x")).map(drop)
                })
                .expect("read");
            }
            if !config.read_only {
                Engine::write(&sqlite, &mut |tx| tx.read().audit_head().map(drop)).expect("write");
            }
            assert_eq!(
                sqlite.connections_opened(),
                1,
                "read_only: {}: a connection beside the setup connection",
                config.read_only
            );
        }
    }

    #[test]
    fn a_connection_handed_back_inside_a_transaction_is_reported_broken() {
        let manager = open::Manager::in_memory();
        let mut conn = manager.connect().expect("connect");
        assert!(!manager.has_broken(&mut conn));
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        assert!(manager.has_broken(&mut conn));
        conn.execute_batch("ROLLBACK").expect("rollback");
        assert!(!manager.has_broken(&mut conn));
    }
}
