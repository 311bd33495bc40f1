//! The `decisions`, `decision_queue` and `decision_log` tables: appending records, reading them
//! by session, tree, time and id, and integrating the queued ones.
//!
//! What a record means, its leaf hash and a batch's root are the decision log concept's: this
//! file stores and reads.

use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::time;
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::Result;
use crate::storage::{
    Append, DecisionFilter, DecisionReads, DecisionRow, DecisionWrites, NewDecision,
};

/// One record, with the root of its session's tree found by walking `created_by` up (a key
/// lookup per level); the session itself when the ledger has no row for it. The trigger
/// `decisions_are_queued` queues it.
pub(super) const APPEND: &str = "INSERT INTO decisions
         (record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict,
          authority, reason, asked_by, tool_use_id)
     VALUES (:record, :at, :session,
             coalesce((WITH RECURSIVE up (id, created_by) AS (
                           SELECT id, created_by FROM sessions WHERE id = :session
                           UNION ALL
                           SELECT s.id, s.created_by FROM up JOIN sessions AS s ON s.id = up.created_by
                       ) SELECT id FROM up WHERE created_by IS NULL), :session),
             :tool, :input, :input_bytes, :input_sha256, :verdict, :authority, :reason,
             :asked_by, :tool_use_id)";

/// The columns of `decision_records` that [`row_of`] reads.
macro_rules! record_columns {
    () => {
        "id, record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict, \
         authority, reason, asked_by, tool_use_id, seq, batch"
    };
}

/// The listing, newest first, with `$narrow` first in its `WHERE` clause so that the index it
/// names answers it in id order; the optional filters after it are checked on the rows read.
macro_rules! list_sql {
    ($with:expr, $narrow:literal) => {
        concat!(
            $with,
            "SELECT ",
            record_columns!(),
            " FROM decision_records WHERE ",
            $narrow,
            " (:before IS NULL OR id < :before)
               AND (:verdict IS NULL OR verdict = :verdict)
               AND (:authority IS NULL OR authority = :authority)
               AND (:since IS NULL OR at >= :since)
               AND (:until IS NULL OR at < :until)
             ORDER BY id DESC LIMIT :limit"
        )
    };
}

/// A session's records, through `decisions_by_session`: a page costs the page.
pub(super) const LIST_BY_SESSION: &str = list_sql!("", "session_id = :session AND");

/// A subtree's records: its sessions, each through `decisions_by_session`.
pub(super) const LIST_BY_SUBTREE: &str = list_sql!(
    subtree_walk!("id = :subtree"),
    "session_id IN (SELECT id FROM subtree) AND"
);

/// A time range's records, through `decisions_by_time`: the records in the range, sorted.
pub(super) const LIST_BY_TIME: &str = "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool,
            d.input, d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, l.seq, l.batch
       FROM decisions AS d INDEXED BY decisions_by_time
       LEFT JOIN decision_log AS l ON l.decision = d.id
      WHERE d.at >= :since
        AND (:before IS NULL OR d.id < :before)
        AND (:verdict IS NULL OR d.verdict = :verdict)
        AND (:authority IS NULL OR d.authority = :authority)
        AND (:until IS NULL OR d.at < :until)
      ORDER BY d.id DESC LIMIT :limit";

/// Every record, newest first, through the table's key.
pub(super) const LIST: &str = list_sql!("", "");

/// One record by its own id.
pub(super) const BY_RECORD: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM decision_records WHERE record = :record"
);

/// The oldest queued records, by id: the queue's key, then each record by its key.
pub(super) const QUEUED: &str =
    "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, NULL AS seq, NULL AS batch
       FROM decision_queue AS q JOIN decisions AS d ON d.id = q.id
      ORDER BY q.id LIMIT :limit";

/// How many records wait. The queue holds only what is not integrated yet.
pub(super) const QUEUED_COUNT: &str = "SELECT count(*) FROM decision_queue";

/// The log's last position: one descent of its key; the newest archive's last one when
/// every position left with it.
pub(super) const LOG_SIZE: &str = "SELECT coalesce((SELECT max(seq) FROM decision_log),
         (SELECT log_size FROM archives WHERE archive = (SELECT max(archive) FROM archives)),
         0)";

/// A batch's records, by position, through `decision_log_by_batch`.
pub(super) const BATCH: &str = "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, l.seq, l.batch
       FROM decision_log AS l JOIN decisions AS d ON d.id = l.decision
      WHERE l.batch = :batch ORDER BY l.seq";

/// The integrated records after a position, by the log's key.
pub(super) const LOGGED_AFTER: &str =
    "SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input,
            d.input_bytes, d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by,
            d.tool_use_id, l.seq, l.batch
       FROM decision_log AS l JOIN decisions AS d ON d.id = l.decision
      WHERE l.seq > :after ORDER BY l.seq LIMIT :limit";

/// The batches after an audit row, through `decision_log_by_batch`.
pub(super) const BATCHES: &str = "SELECT batch, min(seq) AS first, count(*) AS count
       FROM decision_log WHERE batch > :after GROUP BY batch ORDER BY batch";

/// A record's position.
pub(super) const LOG: &str =
    "INSERT INTO decision_log (seq, decision, batch) VALUES (:seq, :decision, :batch)";

/// A record out of the queue, once the log holds it.
pub(super) const DEQUEUE: &str = "DELETE FROM decision_queue WHERE id = :id";

/// A row of [`record_columns!`], by column name.
fn row_of(row: &Row<'_>) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: row.get("id")?,
        record: row.get("record")?,
        at: time("decisions.at", &row.get::<_, String>("at")?)?,
        session: row.get("session_id")?,
        tree: row.get("tree")?,
        tool: row.get("tool")?,
        input: row.get("input")?,
        input_bytes: row.get("input_bytes")?,
        input_sha256: row.get("input_sha256")?,
        verdict: row.get("verdict")?,
        authority: row.get("authority")?,
        reason: row.get("reason")?,
        asked_by: row.get("asked_by")?,
        tool_use_id: row.get("tool_use_id")?,
        seq: row.get("seq")?,
        batch: row.get("batch")?,
    })
}

/// Every row of `rows`, read by [`row_of`].
fn rows_of(mut rows: rusqlite::Rows<'_>) -> Result<Vec<DecisionRow>> {
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(row_of(row)?);
    }
    Ok(out)
}

/// The statement for `filter`: the narrowest index it can use.
pub(super) fn list_sql(filter: &DecisionFilter<'_>) -> &'static str {
    if filter.session.is_some() {
        LIST_BY_SESSION
    } else if filter.subtree.is_some() {
        LIST_BY_SUBTREE
    } else if filter.since.is_some() {
        LIST_BY_TIME
    } else {
        LIST
    }
}

impl DecisionReads for Conn<'_> {
    fn decision_rows(&mut self, filter: &DecisionFilter<'_>) -> Result<Vec<DecisionRow>> {
        let sql = list_sql(filter);
        let mut stmt = self.conn.prepare_cached(sql)?;
        let (since, until) = (filter.since.map(format_ts), filter.until.map(format_ts));
        let (session, subtree) = (
            filter.session.map(|id| id.as_str()),
            filter.subtree.map(|id| id.as_str()),
        );
        let limit = i64::from(filter.limit);
        let mut params = named_params! {
            ":before": filter.before,
            ":verdict": filter.verdict,
            ":authority": filter.authority,
            ":since": since,
            ":until": until,
            ":limit": limit,
            ":session": session,
            ":subtree": subtree,
        }
        .to_vec();
        // A statement takes only the parameters it names.
        params.retain(|(name, _)| sql.contains(name));
        let rows = stmt.query(params.as_slice())?;
        rows_of(rows)
    }

    fn decision_by_record(&mut self, record: &str) -> Result<Option<DecisionRow>> {
        let mut stmt = self.conn.prepare_cached(BY_RECORD)?;
        stmt.query_row(named_params! { ":record": record }, |row| Ok(row_of(row)))
            .optional()?
            .transpose()
    }

    fn queued_decisions(&mut self, limit: u32) -> Result<Vec<DecisionRow>> {
        let mut stmt = self.conn.prepare_cached(QUEUED)?;
        let rows = stmt.query(named_params! { ":limit": i64::from(limit) })?;
        rows_of(rows)
    }

    fn queued_count(&mut self) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(QUEUED_COUNT)?;
        Ok(stmt.query_row([], |row| row.get(0))?)
    }

    fn decision_log_size(&mut self) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(LOG_SIZE)?;
        Ok(stmt.query_row([], |row| row.get(0))?)
    }

    fn logged_after(&mut self, after: i64, limit: u32) -> Result<Vec<DecisionRow>> {
        let mut stmt = self.conn.prepare_cached(LOGGED_AFTER)?;
        let rows = stmt.query(named_params! { ":after": after, ":limit": i64::from(limit) })?;
        rows_of(rows)
    }

    fn decision_batch(&mut self, batch: i64) -> Result<Vec<DecisionRow>> {
        let mut stmt = self.conn.prepare_cached(BATCH)?;
        let rows = stmt.query(named_params! { ":batch": batch })?;
        rows_of(rows)
    }

    fn decision_batches(&mut self, after: i64) -> Result<Vec<(i64, i64, i64)>> {
        let mut stmt = self.conn.prepare_cached(BATCHES)?;
        let rows = stmt.query_map(named_params! { ":after": after }, |row| {
            Ok((row.get("batch")?, row.get("first")?, row.get("count")?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl DecisionWrites for Tx<'_> {
    fn integrate_decisions(&mut self, batch: i64, first: i64, ids: &[i64]) -> Result<()> {
        let conn = self.conn();
        let mut log = conn.prepare_cached(LOG)?;
        for (seq, id) in (first..).zip(ids) {
            log.execute(named_params! { ":seq": seq, ":decision": id, ":batch": batch })?;
        }
        let mut dequeue = conn.prepare_cached(DEQUEUE)?;
        for id in ids {
            dequeue.execute(named_params! { ":id": id })?;
        }
        Ok(())
    }
}

impl Append for Tx<'_> {
    fn append_decisions(&mut self, records: &[NewDecision]) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(APPEND)?;
        for d in records {
            stmt.execute(named_params! {
                ":record": d.record,
                ":at": format_ts(d.at),
                ":session": d.session,
                ":tool": d.tool,
                ":input": d.input,
                ":input_bytes": d.input_bytes,
                ":input_sha256": d.input_sha256,
                ":verdict": d.verdict,
                ":authority": d.authority,
                ":reason": d.reason,
                ":asked_by": d.asked_by,
                ":tool_use_id": d.tool_use_id,
            })?;
        }
        Ok(())
    }
}
