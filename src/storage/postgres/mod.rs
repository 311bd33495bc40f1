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
//! Audit rows are the one write that does not go to the server at once: a write transaction
//! holds the rows appended to it ([`Conn::appended`]) and writes them in one statement, before
//! the next statement it runs, before its commit, or when [`APPEND_BATCH`] are waiting. Every
//! row is a round trip otherwise, and a cascade appends one per session: 100,000 round trips
//! for a subtree of 100,000, where the batches make 100. Since any statement writes them
//! first, every read in the transaction sees them; a row the database refuses fails that
//! statement or the commit, and so the whole transaction, as its append would have.

mod audit;
mod columns;
mod grants;
mod labels;
mod levels;
mod migrate;
mod open;
#[cfg(test)]
#[path = "tests/plans.rs"]
mod plans;
mod postures;
mod sessions;
mod transfer;
mod tree;

use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{IsolationLevel, Row, Statement};

use super::{Engine, FileReads, Import, Read, Write};
use crate::error::{EngineError, Error, Location, Result, StorageError};
use crate::model::CheckReport;

/// A ledger in a PostgreSQL database.
pub(crate) struct Postgres {
    pool: r2d2::Pool<open::Manager>,
    location: Location,
    read_only: bool,
    /// How long a writer waits for the ledger's lock, as `lock_timeout`.
    lock_timeout: String,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("location", &self.location)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// A pooled connection and the statements prepared on it.
pub(super) struct PgConn {
    client: postgres::Client,
    statements: HashMap<&'static str, Statement>,
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
        self.write_appended()?;
        let statement = self.statement(sql)?;
        Ok(match &mut self.on {
            On::Client(client) => client.query(&statement, params)?,
            On::Transaction(tx) => tx.query(&statement, params)?,
        })
    }

    /// The one row `sql` returns, if any.
    fn row(&mut self, sql: &'static str, params: Params<'_>) -> Result<Option<Row>> {
        self.write_appended()?;
        let statement = self.statement(sql)?;
        Ok(match &mut self.on {
            On::Client(client) => client.query_opt(&statement, params)?,
            On::Transaction(tx) => tx.query_opt(&statement, params)?,
        })
    }

    /// Runs `sql` and returns how many rows it changed.
    fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64> {
        self.write_appended()?;
        self.execute_now(sql, params)
    }

    /// [`Conn::execute`] without writing the appended rows first: for writing them.
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
        self.write_appended()?;
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
        self.write_appended()?;
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
        self.read.batch("SAVEPOINT undo")
    }

    fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.read
            .batch("ROLLBACK TO SAVEPOINT undo; RELEASE SAVEPOINT undo")
    }

    fn release_savepoint(&mut self) -> Result<()> {
        self.read.batch("RELEASE SAVEPOINT undo")
    }
}

impl FileReads for Conn<'_> {
    fn check(&mut self) -> Result<CheckReport> {
        migrate::integrity(self)
    }
}

/// The ledger's advisory lock: every write transaction takes it first. Its key is a pair: a
/// constant of the library (`ledg` in ASCII) and the oid of this ledger's `audit` table, found
/// through the connection's `search_path`, so each ledger of a database (one per schema) has a
/// lock of its own and its writers never wait for another ledger's.
const WRITE_LOCK: &str = "SELECT pg_advisory_xact_lock(1818584167, 'audit'::regclass::oid::int4)";

/// How long a writer waits for the lock: the config's busy timeout, for this transaction only.
const LOCK_TIMEOUT: &str = "SELECT set_config('lock_timeout', $1, true)";

/// How many times a write transaction the server aborted for a deadlock or a serialization
/// conflict is run before the failure is reported.
const WRITE_ATTEMPTS: u32 = 8;

/// True for a failure that running the same transaction again may not meet: the server broke a
/// deadlock by aborting it (`40P01`), or could not serialize it (`40001`).
fn worth_retrying(e: &Error) -> bool {
    matches!(
        sql_state(e).map(|code| code.code()),
        Some("40001" | "40P01")
    )
}

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

    fn read(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        let mut pooled = self.pool.get()?;
        let PgConn { client, statements } = &mut *pooled;
        let mut conn = Conn::new(On::Client(client), statements);
        f(&mut conn)
    }

    fn snapshot(&self, f: &mut dyn FnMut(&mut dyn Read) -> Result<()>) -> Result<()> {
        let mut pooled = self.pool.get()?;
        let PgConn { client, statements } = &mut *pooled;
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
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Write) -> Result<()>) -> Result<()> {
        self.transaction(&mut |tx| f(tx))
    }

    fn import(&self, f: &mut dyn FnMut(&mut dyn Import) -> Result<()>) -> Result<()> {
        self.transaction(&mut |tx| transfer::import(tx, &self.location, f))
            .map_err(for_the_owner)
    }
}

impl Postgres {
    /// Runs `f` in a write transaction that takes the ledger's lock first, committing when it
    /// returns `Ok`; runs it again on a fresh transaction after a deadlock or a serialization
    /// failure, within [`WRITE_ATTEMPTS`].
    fn transaction(&self, f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>) -> Result<()> {
        if self.read_only {
            return Err(StorageError::ReadOnly(self.location.clone()).into());
        }
        let mut pooled = self.pool.get()?;
        let mut attempt = 1;
        loop {
            let PgConn { client, statements } = &mut *pooled;
            let tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::ReadCommitted)
                .start()?;
            let mut write = Tx {
                read: Conn::new(On::Transaction(tx), statements),
            };
            let done = self.run_write(&mut write, f);
            let done = match (done, write.read.on) {
                (Ok(()), On::Transaction(tx)) => tx.commit().map_err(Error::from),
                (Err(e), On::Transaction(tx)) => {
                    // Dropping a transaction rolls it back; say so to the server now.
                    tx.rollback().ok();
                    Err(e)
                }
                (done, On::Client(_)) => done,
            };
            match done {
                Err(e) if attempt < WRITE_ATTEMPTS && worth_retrying(&e) => {
                    std::thread::sleep(Duration::from_millis(1 << attempt));
                    attempt += 1;
                }
                done => return done,
            }
        }
    }

    /// The lock first, then `f`, then the audit rows it appended that are not written yet.
    fn run_write(
        &self,
        write: &mut Tx<'_>,
        f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>,
    ) -> Result<()> {
        write.read.row(LOCK_TIMEOUT, &[&self.lock_timeout])?;
        write.read.row(WRITE_LOCK, &[])?;
        f(write)?;
        write.read.write_appended()
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

/// The SQLSTATE of an error from the server, when it has one.
fn sql_state(e: &Error) -> Option<&postgres::error::SqlState> {
    match e {
        Error::Storage(StorageError::Engine(engine)) => engine
            .inner()
            .downcast_ref::<postgres::Error>()
            .and_then(postgres::Error::code),
        _ => None,
    }
}
