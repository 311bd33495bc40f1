//! A write transaction from its first batch to what its commit proved (rule A5).
//!
//! A write is one transaction on one pooled connection, begun by hand so that its first round
//! trip is one batch: `BEGIN`, the ledger's lock, and the trail's head read once the lock is
//! held ([`BEGIN_WRITE`]). What it holds is written before `COMMIT`. Then the commit:
//!
//! * the server answered, and sent no warning with its answer: done;
//! * it answered with a warning: it committed on its own disk, but something about the commit
//!   went otherwise than the deployment asks, such as its wait for the synchronous standby
//!   cancelled (by an operator's `pg_cancel_backend`, a pooler): the write may not be on the
//!   standby, and a failover may lose it. [`StorageError::DurabilityUnknown`], never done;
//! * it refused the commit with an error and kept the connection: nothing was committed, and
//!   the error is the write's (a conflict is run again, as any before the commit);
//! * the connection was lost with the commit sent, its answer unknown: the write may be done
//!   or not. It is never run again: the ledger looks for it ([`Postgres::resolve`]) and says
//!   which, or [`StorageError::DurabilityUnknown`] when it cannot tell.
//!
//! A commit waits for the synchronous standby as long as the deployment makes it: the ledger
//! puts no bound of its own on a write's commit, only on its look-up of a lost one (and a
//! `statement_timeout` does not reach that wait: PostgreSQL stops the statement's timer before
//! it commits).
//!
//! Anything else that fails before the commit is sent fails a transaction that committed
//! nothing, and runs again where `failover.rs` says.

use std::sync::mpsc::RecvTimeoutError;
use std::time::Instant;

use super::audit::Head;
use super::failover::{conflict, server_gone, Pause};
use super::{write_lock, On, PgConn, Postgres, Tx, WRITE_ATTEMPTS};
use crate::error::{Error, Result, StorageError};

/// A write's first round trip: `BEGIN`, then the schema's `ledger_write_lock_and_head()`
/// (migration V5), which takes the ledger's lock ([`write_lock!`]'s) and, holding it, reads the
/// trail's head ([`super::audit::HEAD_AT_LOCK`]) with a fresh snapshot, so the head is the one
/// the writer before left. A function, so that the server keeps the head's plan for the
/// connection instead of planning it for every write under the lock. No value in it: it runs
/// as one simple query.
const BEGIN_WRITE: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; \
     SELECT seq, hash, at_ms FROM ledger_write_lock_and_head()";

/// An import's first batch, and a look-up's: `BEGIN` and the lock. An import writes the
/// trail's rows as they come, so its transaction keeps no head.
const BEGIN_LOCKED: &str = concat!("BEGIN ISOLATION LEVEL READ COMMITTED; ", write_lock!());

/// Which transaction runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A write of the storage interface.
    Write,
    /// A copy into an empty ledger.
    Import,
}

/// How one try of a transaction ended.
enum Ended {
    Committed,
    /// Failed before its commit was sent, or refused by the server at the commit: nothing was
    /// committed.
    Failed(Error),
    /// Committed, with a warning: its durability is unknown.
    Warned {
        written: Head,
        warning: String,
    },
    /// The connection was lost with the commit sent.
    Lost {
        written: Option<Head>,
        error: Error,
    },
}

impl Postgres {
    /// Runs `f` in a write transaction, committing when it returns `Ok`; runs it again after a
    /// deadlock or a serialization failure (within [`WRITE_ATTEMPTS`]), and on a fresh
    /// connection after one whose server went away, until the failover wait is over, as long
    /// as the commit was not sent.
    pub(super) fn transaction(
        &self,
        kind: Kind,
        f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>,
    ) -> Result<()> {
        let deadline = self.deadline();
        let mut pause = Pause::new();
        let mut attempt = 1;
        loop {
            let mut pooled = self.checkout(deadline)?;
            match attempt_once(&mut pooled, kind, f) {
                Ended::Committed => return Ok(()),
                Ended::Failed(e) if conflict(&e) && attempt < WRITE_ATTEMPTS => {
                    std::thread::sleep(std::time::Duration::from_millis(1 << attempt));
                    attempt += 1;
                }
                Ended::Failed(e) if server_gone(&e) => {
                    pooled.broken = true;
                    drop(pooled);
                    if Instant::now() >= deadline {
                        return Err(self.unavailable(&e));
                    }
                    pause.sleep(deadline);
                }
                Ended::Failed(e) => return Err(e),
                Ended::Warned { written, warning } => {
                    return Err(self.unknown(
                        &written,
                        format!(
                            "the server committed it, and warned: {warning}; it may not be on \
                             the synchronous standby, and a failover may lose it"
                        ),
                    ))
                }
                Ended::Lost { written, error } => {
                    pooled.broken = true;
                    drop(pooled);
                    return match written {
                        Some(written) => self.resolve(&written, &error),
                        // A copy is looked for by whoever runs it: the target is empty, or
                        // holds the whole copy.
                        None if kind == Kind::Import => Err(error),
                        // Nothing was appended, so nothing was written (rule A1): whether the
                        // commit went through changes nothing.
                        None => Ok(()),
                    };
                }
            }
        }
    }

    /// [`StorageError::DurabilityUnknown`] for the write whose newest audit row is `written`.
    fn unknown(&self, written: &Head, why: String) -> Error {
        StorageError::DurabilityUnknown {
            location: self.location.clone(),
            seq: written.seq,
            hash: written.hash.clone(),
            why,
        }
        .into()
    }

    /// Finds out whether the write whose commit's connection was lost was done: on a fresh
    /// connection, through every host of the URL, until the failover wait is over, it looks
    /// for the write's newest audit row, which no other write can have (its hash chains every
    /// row before it). `Ok` when it is there, [`StorageError::NotCommitted`] when it is not.
    fn resolve(&self, written: &Head, lost: &Error) -> Result<()> {
        let deadline = self.deadline();
        let mut pause = Pause::new();
        loop {
            let looked = self
                .checkout(deadline)
                .and_then(|mut pooled| look_for(&mut pooled, written, deadline));
            match looked {
                Ok(Found::Done) => return Ok(()),
                Ok(Found::NotDone) => {
                    return Err(StorageError::NotCommitted {
                        location: self.location.clone(),
                        seq: written.seq,
                        hash: written.hash.clone(),
                    }
                    .into())
                }
                Ok(Found::Unconfirmed(warning)) => {
                    return Err(self.unknown(
                        written,
                        format!(
                            "the connection was lost during its commit; the write is on the \
                             primary, but the server warned when asked to confirm it on the \
                             synchronous standby: {warning}"
                        ),
                    ))
                }
                Err(e) if server_gone(&e) && Instant::now() < deadline => pause.sleep(deadline),
                Err(e) => {
                    return Err(self.unknown(
                        written,
                        format!(
                            "the connection was lost during its commit ({lost}), and looking \
                             for it failed: {e}"
                        ),
                    ))
                }
            }
        }
    }
}

/// One try: the first batch, `f`, what it holds, the commit.
fn attempt_once(
    pooled: &mut PgConn,
    kind: Kind,
    f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>,
) -> Ended {
    // Until the transaction ends, a connection the pool got back would be inside it.
    pooled.broken = true;
    let (done, start, head) = match begin(&mut pooled.client, kind) {
        Err(e) => (Err(e), None, None),
        Ok(head) => {
            let PgConn {
                client, statements, ..
            } = &mut *pooled;
            let mut tx = Tx {
                read: super::Conn::new(On::Client(client), statements),
            };
            tx.read.head = head.clone();
            let done = f(&mut tx).and_then(|()| tx.read.flush());
            (done, head, tx.read.head.take())
        }
    };
    if let Err(e) = done {
        // The connection is good again once the server confirms the rollback.
        if pooled.client.batch_execute("ROLLBACK").is_ok() {
            pooled.broken = false;
        }
        return Ended::Failed(e);
    }
    // The newest row the transaction appended, if it appended any.
    let written = head.filter(|head| Some(head) != start.as_ref());
    pooled.take_warnings();
    let committed = pooled.client.batch_execute("COMMIT");
    let warnings = pooled.take_warnings();
    match committed {
        Ok(()) => {
            pooled.broken = false;
            match (written, warnings.into_iter().next()) {
                (Some(written), Some(warning)) => Ended::Warned { written, warning },
                _ => Ended::Committed,
            }
        }
        // The server refused the commit and is still there: it rolled the transaction back.
        Err(e) if refused(&e, &pooled.client) => {
            pooled.broken = false;
            Ended::Failed(e.into())
        }
        Err(e) => Ended::Lost {
            written,
            error: e.into(),
        },
    }
}

/// True for an error the server answered a statement with, on a connection that goes on.
fn refused(e: &postgres::Error, client: &postgres::Client) -> bool {
    use postgres::error::Severity;
    let answered = e
        .as_db_error()
        .is_some_and(|db| matches!(db.parsed_severity(), Some(Severity::Error) | None));
    answered && !client.is_closed()
}

/// The first batch of a transaction of `kind`: for a write, the head it returns.
fn begin(client: &mut postgres::Client, kind: Kind) -> Result<Option<Head>> {
    match kind {
        Kind::Import => {
            client.batch_execute(BEGIN_LOCKED)?;
            Ok(None)
        }
        Kind::Write => {
            let messages = client.simple_query(BEGIN_WRITE)?;
            // The head's row (none for an empty trail), the one row of the batch.
            let row = messages.iter().find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row)
                    if row.columns().first().map(|c| c.name()) == Some("seq") =>
                {
                    Some(row)
                }
                _ => None,
            });
            Head::from_text(row).map(Some)
        }
    }
}

/// What looking for a lost write found.
enum Found {
    /// Its row is on the primary, and the commit after it was confirmed as the deployment
    /// asks: it is done, and lasts.
    Done,
    /// Its row is not on the primary: it was not committed.
    NotDone,
    /// Its row is on the primary, but the confirming commit came back with this warning.
    Unconfirmed(String),
}

/// The look-up of a write by its newest audit row: the primary key, and the hash.
pub(super) const FIND_WRITTEN: &str =
    "SELECT EXISTS (SELECT 1 FROM audit WHERE seq = $1 AND hash = $2) AS found";

/// The confirming write: a message in the server's log of changes (WAL), which changes no
/// table, needs no privilege, and makes the transaction's commit one that waits for the
/// synchronous standby, as any write's. A standby refuses it (`25006`): the look-up then
/// moves on to another server.
const CONFIRMING_WRITE: &str =
    "SELECT pg_logical_emit_message(true, 'session-ledger', 'a lost commit looked for')::text";

/// Looks for `written` under the ledger's lock, in a transaction that writes and commits
/// through the synchronous standby: the lock waits for a transaction still holding it (the
/// lost one, if its server is still at its commit), so the answer is final; and the write
/// proves the server a primary, whose confirmed commit covers every commit before it.
///
/// All of it ends by `deadline`: then the server is asked to cancel what runs (a commit's wait
/// for the standby ends with its warning; no `statement_timeout` reaches that wait).
fn look_for(pooled: &mut PgConn, written: &Head, deadline: Instant) -> Result<Found> {
    pooled.broken = true;
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let cancel = pooled.client.cancel_token();
    let watchdog = std::thread::spawn(move || {
        let left = deadline.saturating_duration_since(Instant::now());
        // Only the deadline cancels: `done` dropped ends the wait without one.
        if let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(left) {
            // Nothing to do if the server cannot be reached: the look-up fails on its own.
            let _ = cancel.cancel_query(postgres::NoTls);
        }
    });
    let found = confirm(pooled, written);
    drop(done);
    let _ = watchdog.join();
    let (found, warning) = found?;
    Ok(match (found, warning) {
        (false, _) => Found::NotDone,
        (true, None) => Found::Done,
        (true, Some(warning)) => Found::Unconfirmed(warning),
    })
}

/// The look-up's transaction: whether `written` is there, and the warning its commit came
/// back with, if any.
fn confirm(pooled: &mut PgConn, written: &Head) -> Result<(bool, Option<String>)> {
    let client = &mut pooled.client;
    client.batch_execute(BEGIN_LOCKED)?;
    client.batch_execute(CONFIRMING_WRITE)?;
    let found: bool = client
        .query_one(FIND_WRITTEN, &[&written.seq, &written.hash])?
        .try_get("found")?;
    pooled.take_warnings();
    pooled.client.batch_execute("COMMIT")?;
    pooled.broken = false;
    Ok((found, pooled.take_warnings().into_iter().next()))
}
