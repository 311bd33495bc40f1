//! The PostgreSQL engine: one ledger in one database schema, shared by every node of a
//! deployment, through a pool of connections per process.
//!
//! Reads run on a pooled connection; a snapshot is one `REPEATABLE READ READ ONLY` transaction.
//! Every write is one `READ COMMITTED` transaction whose first statement takes the ledger's own
//! transaction-level advisory lock (`pg_advisory_xact_lock`), so its writers queue on one lock
//! across processes and machines, as they queue on SQLite's write lock: a create and a cascade
//! never interleave (rule R3), and the audit trail stays one chain in one total order. Each
//! statement after the lock reads what the writer before committed. A transaction the server
//! aborts to break a deadlock or a serialization conflict (a hand edit holding rows, say) is run
//! again, a bounded number of times, and never surfaces as an error while the budget lasts. The
//! strategy is written down in `docs/postgres.md`; the schema, with the triggers that keep the
//! storage contract, is `migrations/postgres/`.
//!
//! Every statement is a constant next to the function that runs it, prepared once per
//! connection; every value a bound parameter; every row read by column name. The engine knows
//! no rule of the ledger and no handle that calls it.
//!
//! Round trips. Every write waits on the lock behind the writers before it, and each round
//! trip a writer makes under it (with a synchronous standby, its commit's too) is time the
//! next writer waits, so a write makes few (`tests/round_trips.rs` holds the budgets):
//!
//! * its first is one batch, `BEGIN`, the lock and the trail's head (`commit.rs`); from then on
//!   the transaction knows the head as it leaves it, and asks for it no more;
//! * writes that return nothing are held ([`Conn::held`], [`Conn::appended`]) and go to the
//!   server with the transaction's next statement, or before its commit: a created child, the
//!   posture it inherits and its audit row as one statement (`writes.rs`); the audit rows of a
//!   cascade in batches of [`APPEND_BATCH`] (100 round trips, not 100,000, for a subtree of
//!   100,000). Since any statement writes them first, every read in the transaction sees them;
//!   a row the database refuses fails that statement or the commit, and so the whole
//!   transaction, as its write would have.
//!
//! Failover (`failover.rs`, `commit.rs`, docs/postgres.md "High availability"): a connection
//! whose server went away or turned standby is dropped from the pool, and what met it before
//! its commit was sent runs again on a fresh one, within `Config::failover_wait`. A commit is
//! never sent twice: one whose connection was lost is looked for, and reported done or not
//! done; one the server could not vouch for (its synchronous standby's wait cancelled) is
//! reported as such, never as done.

#[cfg(test)]
#[path = "tests/appends.rs"]
mod appends;
mod archives;
mod audit;
mod columns;
mod commit;
mod decisions;
mod failover;
mod grants;
mod labels;
mod levels;
#[cfg(test)]
#[path = "tests/lock_queue.rs"]
mod lock_queue;
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
mod writes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{IsolationLevel, Row, Statement};

use super::{Append, Collected, Engine, FileReads, GroupCommit, Import, Read, Write};
use crate::error::{EngineError, Error, Location, Result, StorageError};
use crate::model::CheckReport;

/// A ledger in a PostgreSQL database.
pub(crate) struct Postgres {
    pool: r2d2::Pool<open::Manager>,
    location: Location,
    read_only: bool,
    /// How long an operation keeps trying on fresh connections after its server went away.
    failover_wait: Duration,
    /// The decision records of this handle's threads, committed in groups.
    appends: GroupCommit,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("location", &self.location)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// A pooled connection, the statements prepared on it, and what the pool must know of it.
pub(super) struct PgConn {
    client: postgres::Client,
    statements: HashMap<&'static str, Statement>,
    /// The warnings the server sent on this connection since they were last taken: its notice
    /// callback (`open.rs`) puts them here, as they arrive, before the answer they came with.
    warnings: Arc<Mutex<Vec<String>>>,
    /// Set while a write transaction is open on it, and for good once an operation on it met a
    /// server gone away or unable to write: the pool drops it rather than hand it out again.
    broken: bool,
}

impl PgConn {
    /// The warnings received since the last call.
    fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// What a statement runs on: the connection itself, or a transaction on it.
enum On<'c> {
    Client(&'c mut postgres::Client),
    Transaction(postgres::Transaction<'c>),
}

/// The reads of the storage interface, on one connection or inside a transaction on it.
pub(super) struct Conn<'c> {
    on: On<'c>,
    statements: &'c mut HashMap<&'static str, Statement>,
    /// Audit rows appended and not yet written: always empty outside a write transaction.
    appended: Vec<audit::Appended>,
    /// Other writes held until the next statement: always empty outside a write transaction.
    held: Vec<writes::Held>,
    /// In a write transaction: the trail's head as the transaction leaves it, read once after
    /// the lock was taken and moved by each row appended since.
    head: Option<audit::Head>,
    /// The head when the savepoint was taken, to go back to with it.
    head_at_savepoint: Option<audit::Head>,
}

/// How many appended audit rows a write transaction holds before it writes them.
const APPEND_BATCH: usize = 1_000;

/// The writes of the storage interface, inside one write transaction holding the ledger's lock.
pub(super) struct Tx<'c> {
    read: Conn<'c>,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl<'c> Conn<'c> {
    /// A connection, or a transaction on one, with nothing appended.
    fn new(on: On<'c>, statements: &'c mut HashMap<&'static str, Statement>) -> Conn<'c> {
        Conn {
            on,
            statements,
            appended: Vec::new(),
            held: Vec::new(),
            head: None,
            head_at_savepoint: None,
        }
    }

    /// `sql`, prepared on this connection the first time it runs.
    fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = match &mut self.on {
            On::Client(client) => client.prepare(sql)?,
            On::Transaction(tx) => tx.prepare(sql)?,
        };
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// The rows `sql` returns.
    fn rows(&mut self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>> {
        self.flush()?;
        self.rows_now(sql, params)
    }

    /// [`Conn::rows`] without writing what is held first: for writing it.
    fn rows_now(&mut self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>> {
        let statement = self.statement(sql)?;
        Ok(match &mut self.on {
            On::Client(client) => client.query(&statement, params)?,
            On::Transaction(tx) => tx.query(&statement, params)?,
        })
    }

    /// The column `name` of every row `sql` returns.
    fn column<T>(&mut self, sql: &'static str, params: Params<'_>, name: &str) -> Result<Vec<T>>
    where
        T: for<'a> postgres::types::FromSql<'a>,
    {
        let rows = self.rows(sql, params)?;
        let values = rows.iter().map(|row| row.try_get(name));
        Ok(values.collect::<std::result::Result<_, _>>()?)
    }

    /// The one row `sql` returns, if any.
    fn row(&mut self, sql: &'static str, params: Params<'_>) -> Result<Option<Row>> {
        self.flush()?;
        self.row_now(sql, params)
    }

    /// [`Conn::row`] without writing what is held first.
    fn row_now(&mut self, sql: &'static str, params: Params<'_>) -> Result<Option<Row>> {
        let statement = self.statement(sql)?;
        Ok(match &mut self.on {
            On::Client(client) => client.query_opt(&statement, params)?,
            On::Transaction(tx) => tx.query_opt(&statement, params)?,
        })
    }

    /// Runs `sql` and returns how many rows it changed.
    fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64> {
        self.flush()?;
        self.execute_now(sql, params)
    }

    /// [`Conn::execute`] without writing what is held first.
    fn execute_now(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64> {
        let statement = self.statement(sql)?;
        Ok(match &mut self.on {
            On::Client(client) => client.execute(&statement, params)?,
            On::Transaction(tx) => tx.execute(&statement, params)?,
        })
    }

    /// The first column of every row of `sql`, as text: for statements built from catalog
    /// names (quoted identifiers, no value), run unprepared.
    fn query_text(&mut self, sql: &str) -> Result<Vec<String>> {
        self.flush()?;
        let messages = match &mut self.on {
            On::Client(client) => client.simple_query(sql)?,
            On::Transaction(tx) => tx.simple_query(sql)?,
        };
        Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect())
    }

    /// Runs statements that take no parameters, as one batch (not prepared).
    fn batch(&mut self, sql: &str) -> Result<()> {
        self.flush()?;
        match &mut self.on {
            On::Client(client) => client.batch_execute(sql)?,
            On::Transaction(tx) => tx.batch_execute(sql)?,
        }
        Ok(())
    }
}

impl Write for Tx<'_> {
    fn read(&mut self) -> &mut dyn Read {
        &mut self.read
    }

    fn savepoint(&mut self) -> Result<()> {
        self.read.batch("SAVEPOINT undo")?;
        self.read.head_at_savepoint = self.read.head.clone();
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.read
            .batch("ROLLBACK TO SAVEPOINT undo; RELEASE SAVEPOINT undo")?;
        self.read.head = self.read.head_at_savepoint.take();
        Ok(())
    }

    fn release_savepoint(&mut self) -> Result<()> {
        self.read.batch("RELEASE SAVEPOINT undo")?;
        self.read.head_at_savepoint = None;
        Ok(())
    }
}

impl FileReads for Conn<'_> {
    fn check(&mut self) -> Result<CheckReport> {
        migrate::integrity(self)
    }
}

/// The ledger's advisory lock: every write transaction takes it first (`commit.rs`). Its key
/// is a pair: a constant of the library (`ledg` in ASCII) and the oid of this ledger's `audit`
/// table, found through the connection's `search_path`, so each ledger of a database (one per
/// schema) has a lock of its own and its writers never wait for another ledger's. How long a
/// writer waits for it is the config's busy timeout, set as `lock_timeout` on each connection
/// (`open.rs`). A macro, so that the batches that take it are constants.
macro_rules! write_lock {
    () => {
        "SELECT pg_advisory_xact_lock(1818584167, 'audit'::regclass::oid::int4)"
    };
}
use write_lock;

/// How many times a write transaction the server aborted for a deadlock or a serialization
/// conflict is run before the failure is reported.
const WRITE_ATTEMPTS: u32 = 8;

impl Engine for Postgres {
    fn location(&self) -> &Location {
        &self.location
    }

    fn schema_version(&self) -> i64 {
        migrate::supported_version()
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Every write transaction waits for the ledger's advisory lock in the server's lock
    /// queue, which grants it in turn as it is released.
    fn queues_lock_waiters(&self) -> bool {
        true
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        self.with_connection(&mut |pooled| {
            let PgConn {
                client, statements, ..
            } = pooled;
            f(&mut Conn::new(On::Client(client), statements))
        })
    }

    fn snapshot(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        self.with_connection(&mut |pooled| {
            let PgConn {
                client, statements, ..
            } = pooled;
            let tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let mut conn = Conn::new(On::Transaction(tx), statements);
            f(&mut conn)?;
            if let On::Transaction(tx) = conn.on {
                tx.commit()?;
            }
            Ok(())
        })
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Write) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        self.transaction(commit::Kind::Write, &mut |tx| f(tx))
    }

    /// One statement on its own, no lock of the ledger's (`decisions.rs`), for the records of
    /// every thread of this handle appending at once (`GroupCommit`).
    fn append(&self, f: &mut dyn FnMut(&mut dyn Append) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        let mut collected = Collected::default();
        f(&mut collected)?;
        self.appends
            .append(collected.0, &|records| self.append_records(records))
    }

    fn backup_into(&self, _: &std::path::Path) -> Result<()> {
        Err(crate::error::InputError::InvalidConfig(
            "a PostgreSQL ledger is backed up with the server's own tools (pg_dump, or a base \
             backup), then checked with verify --checkpoint: docs/operations.md"
                .to_owned(),
        )
        .into())
    }

    fn import(&self, f: &mut dyn FnMut(&mut dyn Import) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        self.transaction(commit::Kind::Import, &mut |tx| {
            transfer::import(tx, &self.location, f)
        })
        .map_err(for_the_owner)
    }
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        // A lock not obtained within lock_timeout is the busy of this engine.
        let busy = e.code().is_some_and(|c| c.code() == "55P03");
        // The error's own line is a word ("db error"); the server's message, or the cause of a
        // failed connection, is its source. Neither carries the URL or a password.
        let detail = match e.as_db_error() {
            Some(db) => Some(format!("{} (SQLSTATE {})", db.message(), db.code().code())),
            None => std::error::Error::source(&e).map(ToString::to_string),
        };
        EngineError::new("postgres", busy, e)
            .with_detail(detail)
            .into()
    }
}

/// What to do when a role lacks a privilege only the schema's owner has.
const RUN_AS_OWNER: &str = "creating, upgrading or copying into a ledger needs the role that owns \
     its schema: run this as the owner role (docs/postgres.md, \"Setting up the database and the \
     roles\")";

/// `e`, saying to run as the owner role when the server refused it for a missing privilege
/// (SQLSTATE `42501`, found anywhere in its sources: refinery wraps the server's error): for
/// the steps that only the owner may take, creating or upgrading the schema and copying into
/// it.
fn for_the_owner(e: Error) -> Error {
    let Error::Storage(StorageError::Engine(engine)) = e else {
        return e;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(engine.inner());
    let mut refused = false;
    while let Some(s) = source {
        let code = match (
            s.downcast_ref::<postgres::Error>(),
            s.downcast_ref::<postgres::error::DbError>(),
        ) {
            (Some(pg), _) => pg.code(),
            (None, Some(db)) => Some(db.code()),
            (None, None) => None,
        };
        refused |= code == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
        source = s.source();
    }
    if refused {
        engine.with_hint(RUN_AS_OWNER).into()
    } else {
        engine.into()
    }
}

/// The error from the server or the driver underneath `e`, when it has one.
fn driver_error(e: &Error) -> Option<&postgres::Error> {
    match e {
        Error::Storage(StorageError::Engine(engine)) => {
            engine.inner().downcast_ref::<postgres::Error>()
        }
        _ => None,
    }
}
