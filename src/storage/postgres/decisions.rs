//! The `decisions`, `decision_queue` and `decision_log` tables: appending records without the
//! ledger's lock, reading them by session, tree, time and id, and integrating the queued ones.
//!
//! An append is one statement run on its own (autocommit): one round trip, no `BEGIN`, no
//! lock of the ledger's, and a commit that waits for the synchronous standby as every write's
//! does. Its answer decides what the caller hears (rule A5):
//!
//! * the server answered, with no warning: done;
//! * it answered with a warning (a standby wait cancelled): the records are on the primary, and
//!   may not be on the standby: [`StorageError::DecisionsUnknown`];
//! * it refused the statement: nothing was written, and the error is the append's;
//! * the connection was lost: the append may or may not have committed. It is sent again on a
//!   fresh connection, in a transaction that first writes to the server's log of changes (so
//!   that its commit waits for the standby, covering the lost commit too) and inserts only the
//!   records that are not there (each record's own id is unique), until the failover wait is
//!   over; then [`StorageError::DecisionsUnknown`].
//!
//! Every append inserts only the records whose own id is not there yet (`ON CONFLICT (record)
//! DO NOTHING`): a record's id is drawn by the library, 80 of its bits at random, so an id
//! already there is the same record sent before. So appending again what was reported
//! unknown (a batching recorder does) keeps each record once, instead of failing on the key.

use std::time::Instant;

use chrono::{DateTime, Utc};
use postgres::Row;

use super::failover::{server_gone, Pause};
use super::sessions::subtree_walk;
use super::{Conn, PgConn, Postgres, Tx};
use crate::error::{Error, Result, StorageError};
use crate::storage::{DecisionFilter, DecisionReads, DecisionRow, DecisionWrites, NewDecision};

/// The records of one append, as arrays, in order; `session_tree_root` (migration V7) finds
/// each one's tree. The trigger `decisions_are_queued` queues them.
macro_rules! append_sql {
    ($conflict:literal) => {
        concat!(
            "INSERT INTO decisions
                  (record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict,
                   authority, reason, asked_by, tool_use_id)
             SELECT r.record, r.at, r.session, session_tree_root(r.session), r.tool, r.input,
                    r.input_bytes, r.input_sha256, r.verdict, r.authority, r.reason, r.asked_by,
                    r.tool_use_id
               FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[],
                           $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[],
                           $11::text[], $12::text[])
                    WITH ORDINALITY
                    AS r(record, at, session, tool, input, input_bytes, input_sha256, verdict,
                         authority, reason, asked_by, tool_use_id, n)
              ORDER BY r.n",
            $conflict
        )
    };
}

/// An append: the records already there (sent before) are left as they are.
pub(super) const APPEND: &str = append_sql!(" ON CONFLICT (record) DO NOTHING");

/// The confirming write of a resent append (as `commit.rs`'s look-up of a lost write).
const CONFIRMING_WRITE: &str =
    "SELECT pg_logical_emit_message(true, 'session-ledger', 'a lost append sent again')::text";

/// The columns of `decision_records` that [`row_of`] reads.
macro_rules! record_columns {
    () => {
        "id, record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict, \
         authority, reason, asked_by, tool_use_id, seq, batch"
    };
}

/// The listing, newest first, with `$narrow` first in its `WHERE` clause so that the index it
/// names answers it; the optional filters after it are checked on the rows read. Parameters:
/// $1 session, $2 subtree, $3 before, $4 verdict, $5 authority, $6 since, $7 until, $8 limit.
macro_rules! list_sql {
    ($with:expr, $narrow:literal) => {
        concat!(
            $with,
            "SELECT ",
            record_columns!(),
            " FROM decision_records WHERE ",
            $narrow,
            " ($1::text IS NULL OR session_id = $1::text)
               AND ($2::text IS NULL OR true)
               AND ($3::bigint IS NULL OR id < $3::bigint)
               AND ($4::text IS NULL OR verdict = $4::text)
               AND ($5::text IS NULL OR authority = $5::text)
               AND ($6::timestamptz IS NULL OR at >= $6::timestamptz)
               AND ($7::timestamptz IS NULL OR at < $7::timestamptz)
             ORDER BY id DESC LIMIT $8::bigint"
        )
    };
}

/// A session's records, through `decisions_by_session`: a page costs the page.
pub(super) const LIST_BY_SESSION: &str = list_sql!("", "session_id = $1::text AND");

/// A subtree's records: its sessions, each through `decisions_by_session`.
pub(super) const LIST_BY_SUBTREE: &str = list_sql!(
    subtree_walk!("id = $2::text"),
    "session_id IN (SELECT id FROM subtree) AND"
);

/// A time range's records, through `decisions_by_time`.
pub(super) const LIST_BY_TIME: &str = list_sql!("", "at >= $6::timestamptz AND");

/// Every record, newest first, through the table's key.
pub(super) const LIST: &str = list_sql!("", "");

/// One record by its own id.
pub(super) const BY_RECORD: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM decision_records WHERE record = $1"
);

/// The oldest queued records, by id. Rows whose transaction has not committed are not seen.
/// The queue's first ids are taken first, by its key, then each record by its key: joined
/// whole, the planner may merge the two tables and read far more than the batch.
pub(super) const QUEUED: &str =
    "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, NULL::bigint AS seq, NULL::bigint AS batch
       FROM (SELECT id FROM decision_queue ORDER BY id LIMIT $1) AS q
       JOIN decisions AS d ON d.id = q.id
      ORDER BY q.id";

/// How many records wait. The queue holds only what is not integrated yet.
pub(super) const QUEUED_COUNT: &str = "SELECT count(*) AS n FROM decision_queue";

/// The log's last position; the newest archive's last one when every position left with it.
pub(super) const LOG_SIZE: &str = "SELECT coalesce((SELECT max(seq) FROM decision_log),
         (SELECT log_size FROM archives WHERE archive = (SELECT max(archive) FROM archives)),
         0) AS n";

/// A batch's records, by position, through `decision_log_by_batch`.
pub(super) const BATCH: &str = "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, l.seq, l.batch
       FROM decision_log AS l JOIN decisions AS d ON d.id = l.decision
      WHERE l.batch = $1 ORDER BY l.seq";

/// The integrated records after a position, by the log's key.
pub(super) const LOGGED_AFTER: &str =
    "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, l.seq, l.batch
       FROM decision_log AS l JOIN decisions AS d ON d.id = l.decision
      WHERE l.seq > $1 ORDER BY l.seq LIMIT $2";

/// The batches after an audit row, through `decision_log_by_batch`.
pub(super) const BATCHES: &str = "SELECT batch, min(seq) AS first, count(*) AS count
       FROM decision_log WHERE batch > $1 GROUP BY batch ORDER BY batch";

/// A batch's positions, one statement, then its records out of the queue.
pub(super) const INTEGRATE: &str = "WITH logged AS (
         INSERT INTO decision_log (seq, decision, batch)
         SELECT $2::bigint + n - 1, id, $1::bigint
           FROM unnest($3::bigint[]) WITH ORDINALITY AS b(id, n)
         RETURNING decision
     )
     SELECT count(*) AS n FROM logged";

/// The batch's records out of the queue, once the log holds them.
pub(super) const DEQUEUE: &str = "DELETE FROM decision_queue WHERE id = ANY($1::bigint[])";

/// A row of [`record_columns!`], by column name.
fn row_of(row: &Row) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: row.try_get("id")?,
        record: row.try_get("record")?,
        at: row.try_get::<_, DateTime<Utc>>("at")?,
        session: row.try_get("session_id")?,
        tree: row.try_get("tree")?,
        tool: row.try_get("tool")?,
        input: row.try_get("input")?,
        input_bytes: row.try_get("input_bytes")?,
        input_sha256: row.try_get("input_sha256")?,
        verdict: row.try_get("verdict")?,
        authority: row.try_get("authority")?,
        reason: row.try_get("reason")?,
        asked_by: row.try_get("asked_by")?,
        tool_use_id: row.try_get("tool_use_id")?,
        seq: row.try_get("seq")?,
        batch: row.try_get("batch")?,
    })
}

impl DecisionReads for Conn<'_> {
    fn decision_rows(&mut self, filter: &DecisionFilter<'_>) -> Result<Vec<DecisionRow>> {
        let sql = if filter.session.is_some() {
            LIST_BY_SESSION
        } else if filter.subtree.is_some() {
            LIST_BY_SUBTREE
        } else if filter.since.is_some() {
            LIST_BY_TIME
        } else {
            LIST
        };
        let session = filter.session.map(|id| id.as_str());
        let subtree = filter.subtree.map(|id| id.as_str());
        let limit = i64::from(filter.limit);
        let rows = self.rows(
            sql,
            &[
                &session,
                &subtree,
                &filter.before,
                &filter.verdict,
                &filter.authority,
                &filter.since,
                &filter.until,
                &limit,
            ],
        )?;
        rows.iter().map(row_of).collect()
    }

    fn decision_by_record(&mut self, record: &str) -> Result<Option<DecisionRow>> {
        self.row(BY_RECORD, &[&record])?
            .as_ref()
            .map(row_of)
            .transpose()
    }

    fn queued_decisions(&mut self, limit: u32) -> Result<Vec<DecisionRow>> {
        let rows = self.rows(QUEUED, &[&i64::from(limit)])?;
        rows.iter().map(row_of).collect()
    }

    fn queued_count(&mut self) -> Result<i64> {
        let row = self.row(QUEUED_COUNT, &[])?;
        Ok(row.map(|r| r.try_get("n")).transpose()?.unwrap_or(0))
    }

    fn decision_log_size(&mut self) -> Result<i64> {
        let row = self.row(LOG_SIZE, &[])?;
        Ok(row.map(|r| r.try_get("n")).transpose()?.unwrap_or(0))
    }

    fn logged_after(&mut self, after: i64, limit: u32) -> Result<Vec<DecisionRow>> {
        let rows = self.rows(LOGGED_AFTER, &[&after, &i64::from(limit)])?;
        rows.iter().map(row_of).collect()
    }

    fn decision_batch(&mut self, batch: i64) -> Result<Vec<DecisionRow>> {
        let rows = self.rows(BATCH, &[&batch])?;
        rows.iter().map(row_of).collect()
    }

    fn decision_batches(&mut self, after: i64) -> Result<Vec<(i64, i64, i64)>> {
        let rows = self.rows(BATCHES, &[&after])?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("batch")?,
                    r.try_get("first")?,
                    r.try_get("count")?,
                ))
            })
            .collect()
    }
}

impl DecisionWrites for Tx<'_> {
    fn integrate_decisions(&mut self, batch: i64, first: i64, ids: &[i64]) -> Result<()> {
        let ids = ids.to_vec();
        self.read.rows(INTEGRATE, &[&batch, &first, &ids])?;
        self.read.execute(DEQUEUE, &[&ids])?;
        Ok(())
    }
}

/// The columns of `records` as the arrays [`APPEND`] takes.
struct Columns {
    record: Vec<String>,
    at: Vec<DateTime<Utc>>,
    session: Vec<String>,
    tool: Vec<Option<String>>,
    input: Vec<String>,
    input_bytes: Vec<i64>,
    input_sha256: Vec<Option<String>>,
    verdict: Vec<&'static str>,
    authority: Vec<&'static str>,
    reason: Vec<String>,
    asked_by: Vec<String>,
    tool_use_id: Vec<Option<String>>,
}

impl Columns {
    fn of(records: &[NewDecision]) -> Columns {
        Columns {
            record: records.iter().map(|d| d.record.clone()).collect(),
            at: records.iter().map(|d| d.at).collect(),
            session: records.iter().map(|d| d.session.clone()).collect(),
            tool: records.iter().map(|d| d.tool.clone()).collect(),
            input: records.iter().map(|d| d.input.clone()).collect(),
            input_bytes: records.iter().map(|d| d.input_bytes).collect(),
            input_sha256: records.iter().map(|d| d.input_sha256.clone()).collect(),
            verdict: records.iter().map(|d| d.verdict).collect(),
            authority: records.iter().map(|d| d.authority).collect(),
            reason: records.iter().map(|d| d.reason.clone()).collect(),
            asked_by: records.iter().map(|d| d.asked_by.clone()).collect(),
            tool_use_id: records.iter().map(|d| d.tool_use_id.clone()).collect(),
        }
    }

    /// Runs `sql` with these columns on `client`, as one statement.
    fn run<T>(&self, client: &mut impl postgres::GenericClient, sql: &T) -> Result<u64>
    where
        T: ?Sized + postgres::ToStatement,
    {
        Ok(client.execute(
            sql,
            &[
                &self.record,
                &self.at,
                &self.session,
                &self.tool,
                &self.input,
                &self.input_bytes,
                &self.input_sha256,
                &self.verdict,
                &self.authority,
                &self.reason,
                &self.asked_by,
                &self.tool_use_id,
            ],
        )?)
    }
}

impl Postgres {
    /// Appends `records` as the module says.
    pub(super) fn append_records(&self, records: &[NewDecision]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let columns = Columns::of(records);
        let deadline = self.deadline();
        let mut pooled = self.checkout(deadline)?;
        pooled.broken = true;
        pooled.take_warnings();
        let sent = prepared(&mut pooled, APPEND)
            .and_then(|statement| columns.run(&mut pooled.client, &statement));
        let warnings = pooled.take_warnings();
        match sent {
            Ok(_) => {
                pooled.broken = false;
                match warnings.into_iter().next() {
                    None => Ok(()),
                    Some(warning) => Err(self.records_unknown(
                        records,
                        format!(
                            "the server committed them, and warned: {warning}; they may not be \
                             on the synchronous standby, and a failover may lose them"
                        ),
                    )),
                }
            }
            Err(e) if !server_gone(&e) && !pooled.client.is_closed() => {
                pooled.broken = false;
                Err(e)
            }
            Err(lost) => {
                drop(pooled);
                self.append_again(&columns, records, &lost, deadline)
            }
        }
    }

    /// Sends an append whose connection was lost again, as the module says.
    fn append_again(
        &self,
        columns: &Columns,
        records: &[NewDecision],
        lost: &Error,
        deadline: Instant,
    ) -> Result<()> {
        let mut pause = Pause::new();
        loop {
            let tried = self.checkout(deadline).and_then(|mut pooled| {
                let done = send_again(&mut pooled, columns);
                if done.is_ok() {
                    pooled.broken = false;
                }
                done
            });
            match tried {
                Ok(None) => return Ok(()),
                Ok(Some(warning)) => {
                    return Err(self.records_unknown(
                        records,
                        format!(
                            "the connection was lost during the append; sent again, the server \
                             warned at the commit: {warning}"
                        ),
                    ))
                }
                Err(e) if server_gone(&e) && Instant::now() < deadline => pause.sleep(deadline),
                Err(e) => {
                    return Err(self.records_unknown(
                        records,
                        format!(
                            "the connection was lost during the append ({lost}), and sending it \
                             again failed: {e}"
                        ),
                    ))
                }
            }
        }
    }

    /// [`StorageError::DecisionsUnknown`] for `records`.
    fn records_unknown(&self, records: &[NewDecision], why: String) -> Error {
        StorageError::DecisionsUnknown {
            location: self.location.clone(),
            records: records.iter().map(|d| d.record.clone()).collect(),
            why,
        }
        .into()
    }
}

/// `sql`, prepared on the connection the first time it runs there.
fn prepared(pooled: &mut PgConn, sql: &'static str) -> Result<postgres::Statement> {
    if let Some(statement) = pooled.statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = pooled.client.prepare(sql)?;
    pooled.statements.insert(sql, statement.clone());
    Ok(statement)
}

/// One resend: the confirming write, the records that are not there yet, the commit; the
/// commit's warning, if any.
fn send_again(pooled: &mut PgConn, columns: &Columns) -> Result<Option<String>> {
    pooled.broken = true;
    let mut tx = pooled.client.transaction()?;
    tx.batch_execute(CONFIRMING_WRITE)?;
    columns.run(&mut tx, APPEND)?;
    tx.commit()?;
    Ok(pooled.take_warnings().into_iter().next())
}
