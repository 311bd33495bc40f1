//! The storage interface: what the concept modules need from a database, and the handle that
//! runs their transactions on an engine.
//!
//! Each concept has a pair of small traits, in the file of its name: `SessionReads` and
//! `SessionWrites` in `sessions.rs`, and so on for labels, postures, grants and audit; copying a
//! whole ledger has `ExportReads` and `Import` in `transfer.rs`. [`Read`]
//! is all the reads, [`Write`] all the writes of one write transaction. They speak the values of
//! `crate::model` and the rows defined beside them, never SQL text, and never a type of an engine.
//!
//! An engine implements them (`sqlite/` is the first) and runs them inside its own transactions:
//! [`Storage::read`] on a connection outside any explicit transaction, [`Storage::snapshot`]
//! inside one read transaction, and [`Storage::write`] inside a write transaction that holds the
//! engine's write lock from its first statement, with the engine's retry discipline inside it.
//! A write cannot run outside [`Storage::write`]: only a [`Write`] has the writing methods. The
//! invariants every engine enforces inside the database itself are listed in
//! docs/storage-contract.md.
//!
//! This module knows no rule of the ledger (those are the concepts'), and no engine knows the
//! handle that calls it.

mod archives;
mod audit;
mod decisions;
mod grants;
mod group_commit;
mod labels;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
mod postures;
mod sessions;
mod sqlite;
mod transfer;
mod tree;

pub(crate) use archives::{
    archive_header, create_archive_file, ArchiveFile, ArchiveHeader, ArchiveReads, ArchiveRow,
    ArchiveWrites, ArchivedSession, Part,
};
pub(crate) use audit::{AuditFilter, AuditReads, AuditWrites, ChainRow, NewAuditRow};
pub(crate) use decisions::{
    Append, Collected, DecisionFilter, DecisionReads, DecisionRow, DecisionWrites, NewDecision,
};
pub(crate) use grants::{GrantReads, GrantWrites, PatternRow};
pub(crate) use group_commit::GroupCommit;
pub(crate) use labels::{InheritedLabel, LabelReads, LabelWrites, StateRow, StoredLabel};
pub(crate) use options::{OptionReads, OptionWrites};
pub(crate) use postures::{
    DecisionFacts, HeldPosture, NewEpoch, PostureReads, PostureWrites, Reach, SubtreePosture,
};
pub(crate) use sessions::{
    CreationCounts, CreationFacts, LevelPage, LevelReads, LevelRow, NewSession, SessionReads,
    SessionWrites, TreeRow, TreeTop,
};
pub(crate) use transfer::{ExportReads, Import, Kind, Row, Table, Value};
pub(crate) use tree::{CheckpointRow, TreeNode, TreeReads, TreeWrites};

use std::fmt;
use std::path::Path;

use crate::config::Config;
use crate::error::{Corruption, Error, Location, Result};
use crate::model::CheckReport;

/// The whole-file check, which only the engine can run.
pub(crate) trait FileReads {
    /// The engine's own integrity check and every foreign key, in the read transaction the
    /// caller runs it in. Reads the whole database.
    fn check(&mut self) -> Result<CheckReport>;
}

/// Every read the concepts make, on a connection or inside a transaction.
pub(crate) trait Read:
    SessionReads
    + ArchiveReads
    + LevelReads
    + LabelReads
    + PostureReads
    + GrantReads
    + AuditReads
    + TreeReads
    + DecisionReads
    + OptionReads
    + FileReads
    + ExportReads
{
}

impl<T> Read for T where
    T: SessionReads
        + ArchiveReads
        + LevelReads
        + LabelReads
        + PostureReads
        + GrantReads
        + AuditReads
        + TreeReads
        + DecisionReads
        + OptionReads
        + FileReads
        + ExportReads
        + ?Sized
{
}

/// Every write the concepts make, inside one write transaction, and its reads.
pub(crate) trait Write:
    SessionWrites
    + ArchiveWrites
    + LabelWrites
    + PostureWrites
    + GrantWrites
    + AuditWrites
    + TreeWrites
    + DecisionWrites
    + OptionWrites
{
    /// The transaction's reads: they see its own writes.
    fn read(&mut self) -> &mut dyn Read;

    /// Marks the point that [`Write::rollback_to_savepoint`] returns to (one at a time).
    fn savepoint(&mut self) -> Result<()>;

    /// Undoes everything since [`Write::savepoint`] and ends the savepoint; the transaction
    /// goes on.
    fn rollback_to_savepoint(&mut self) -> Result<()>;

    /// Keeps everything since [`Write::savepoint`] and ends the savepoint.
    fn release_savepoint(&mut self) -> Result<()>;
}

/// A database engine holding one ledger: its connections and its transactions.
pub(crate) trait Engine: Send + Sync + fmt::Debug {
    /// Where the ledger is.
    fn location(&self) -> &Location;

    /// The newest schema version of this engine that this build knows.
    fn schema_version(&self) -> i64;

    /// True for a handle opened with [`Config::read_only`]: every write fails with
    /// [`StorageError::ReadOnly`](crate::StorageError::ReadOnly) before it begins.
    fn is_read_only(&self) -> bool;

    /// True for a read-only handle that reads a copy as it is, without taking the engine's
    /// locks, because it could not take them (a SQLite file opened immutable): it does not
    /// see a writer that changes the ledger meanwhile.
    fn is_immutable(&self) -> bool {
        false
    }

    /// True when a transaction waiting for the write lock is woken as it is released, ahead
    /// of any that asks for it later (PostgreSQL's lock queue); false when a waiter sleeps and
    /// tries again, and finds the lock free only if it still is then (SQLite's busy handler).
    fn queues_lock_waiters(&self) -> bool {
        false
    }

    /// Calls `f` on a connection, outside any explicit transaction; again on a fresh one when
    /// the engine's connection failed under it (a server gone away).
    fn read(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()>;

    /// Calls `f` inside one read transaction, so that every statement it runs reads the same
    /// state of the ledger; again in a fresh one as [`Engine::read`].
    fn snapshot(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()>;

    /// Calls `f` inside a write transaction that holds the write lock from its start, and
    /// commits when `f` returns `Ok`; an `Err` rolls everything back. An engine whose
    /// transactions can fail to serialize may call `f` again on a fresh transaction.
    fn write(&self, f: &mut dyn FnMut(&mut dyn Write) -> Result<()>) -> Result<()>;

    /// Calls `f` inside a transaction that appends decision records and nothing else, and
    /// takes no lock that the ledger's other writers take (rule D2): not the write lock of
    /// [`Engine::write`], on an engine that has one apart from the database's own (on SQLite,
    /// whose file has one writer at a time, it waits for the writer that holds the file, as
    /// every write does). Commits when `f` returns `Ok`. Durable as every write is (rule A5):
    /// a commit whose outcome is unknown is reported as such.
    fn append(&self, f: &mut dyn FnMut(&mut dyn Append) -> Result<()>) -> Result<()>;

    /// Calls `f` inside a write transaction on a ledger that holds nothing yet (no session, no
    /// audit row, no epoch after the first, which `f` brings), with the contract's triggers off
    /// until it returns, and commits when `f` returns `Ok`; may call `f` again as
    /// [`Engine::write`]. Fails with [`Conflict::NotEmpty`](crate::Conflict::NotEmpty) when
    /// the ledger holds anything, and with
    /// [`InputError::InvalidCopyTarget`](crate::InputError::InvalidCopyTarget) on an engine
    /// that cannot switch its triggers off.
    fn import(&self, f: &mut dyn FnMut(&mut dyn Import) -> Result<()>) -> Result<()>;

    /// Writes a consistent copy of the ledger as it stands at one moment into the new file
    /// `dest`, synced, while writers go on. Only an engine whose ledger is a file can:
    /// [`InputError::InvalidConfig`](crate::InputError::InvalidConfig) on the others.
    fn backup_into(&self, dest: &Path) -> Result<()>;
}

/// The handle the facade holds: one engine, and its transactions as closures that return
/// values.
#[derive(Debug)]
pub(crate) struct Storage {
    engine: Box<dyn Engine>,
}

impl Storage {
    /// Opens the ledger `target` names with `config`: a `postgres://` or `postgresql://` URL
    /// on a server, anything else the path of a SQLite file.
    pub(crate) fn open(target: &Path, config: &Config) -> Result<Storage> {
        let url = target.to_str().filter(|t| is_url(t));
        let engine: Box<dyn Engine> = match url {
            #[cfg(feature = "postgres")]
            Some(url) => Box::new(postgres::Postgres::open(url, config)?),
            #[cfg(not(feature = "postgres"))]
            Some(_) => {
                return Err(crate::error::InputError::InvalidConfig(
                    "this build has no PostgreSQL engine (the `postgres` feature is off)"
                        .to_owned(),
                )
                .into())
            }
            None => Box::new(sqlite::Sqlite::open(target, config)?),
        };
        Ok(Storage { engine })
    }

    /// Where the ledger is.
    pub(crate) fn location(&self) -> &Location {
        self.engine.location()
    }

    /// The schema version of the engine this build reads and writes.
    pub(crate) fn schema_version(&self) -> i64 {
        self.engine.schema_version()
    }

    /// True for a handle opened with [`Config::read_only`].
    pub(crate) fn is_read_only(&self) -> bool {
        self.engine.is_read_only()
    }

    /// True when a waiter for the write lock is woken as it is released
    /// ([`Engine::queues_lock_waiters`]).
    pub(crate) fn queues_lock_waiters(&self) -> bool {
        self.engine.queues_lock_waiters()
    }

    /// True for a handle that reads a copy as it is ([`Engine::is_immutable`]).
    pub(crate) fn is_immutable(&self) -> bool {
        self.engine.is_immutable()
    }

    /// Runs `f` on a connection, outside any explicit transaction. `f` may run more than once,
    /// each time on a fresh connection, when the first met a server gone away.
    pub(crate) fn read<T>(&self, mut f: impl FnMut(&mut dyn Read) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.engine.read(&mut |r| {
            out = Some(f(r)?);
            Ok(())
        })?;
        out.ok_or_else(not_run)
    }

    /// Runs `f` inside one read transaction: every statement reads the same state. `f` may run
    /// more than once, as [`Storage::read`]'s.
    pub(crate) fn snapshot<T>(&self, mut f: impl FnMut(&mut dyn Read) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.engine.snapshot(&mut |r| {
            out = Some(f(r)?);
            Ok(())
        })?;
        out.ok_or_else(not_run)
    }

    /// Runs `f` inside a write transaction and returns what it returned once the transaction
    /// committed. `f` may run more than once, each time on a fresh transaction.
    pub(crate) fn write<T>(&self, mut f: impl FnMut(&mut dyn Write) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.engine.write(&mut |tx| {
            out = Some(f(tx)?);
            Ok(())
        })?;
        out.ok_or_else(not_run)
    }

    /// [`Engine::backup_into`].
    pub(crate) fn backup_into(&self, dest: &Path) -> Result<()> {
        self.engine.backup_into(dest)
    }

    /// Runs `f` inside [`Engine::append`]'s transaction, once.
    pub(crate) fn append(&self, mut f: impl FnMut(&mut dyn Append) -> Result<()>) -> Result<()> {
        self.engine.append(&mut |a| f(a))
    }

    /// Runs `f` inside [`Engine::import`]'s transaction and returns what it returned once the
    /// transaction committed. `f` may run more than once, each time on a fresh transaction.
    pub(crate) fn import<T>(&self, mut f: impl FnMut(&mut dyn Import) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.engine.import(&mut |into| {
            out = Some(f(into)?);
            Ok(())
        })?;
        out.ok_or_else(not_run)
    }
}

/// An engine that broke the contract of a read or a transaction that succeeded without
/// running its closure.
fn not_run() -> Error {
    Corruption::new("the storage engine did not run a transaction's work exactly once").into()
}

/// True when `target` names a PostgreSQL server rather than a SQLite file.
pub(crate) fn is_url(target: &str) -> bool {
    target.starts_with("postgres://") || target.starts_with("postgresql://")
}

/// The newest schema version of the SQLite engine this build reads and writes.
pub(crate) fn supported_version() -> i64 {
    sqlite::supported_version()
}

impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        crate::error::EngineError::new("connection pool", false, e).into()
    }
}

impl From<refinery::Error> for Error {
    fn from(e: refinery::Error) -> Self {
        // refinery's line names the step and the engine error's kind ("db error"); what the
        // database said (the constraint a row broke) is the innermost error underneath.
        let mut innermost: &dyn std::error::Error = &e;
        while let Some(next) = innermost.source() {
            innermost = next;
        }
        let said = innermost.to_string();
        let detail = (!e.to_string().contains(&said)).then_some(said);
        crate::error::EngineError::new("migration", false, e)
            .with_detail(detail)
            .into()
    }
}
