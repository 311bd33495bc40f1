//! The `audit` table: its head, its rows by ranges of `seq`, and appending one.
//!
//! What a row means, and the chain's hash, are the audit concept's: this file stores and reads.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::time;
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Error, Result};
use crate::model::{AuditEntry, AuditHead, AuditKind};
use crate::storage::{AuditFilter, AuditReads, AuditWrites, ChainRow, NewAuditRow};

/// The newest row's seq and hash. `max(seq)` of an `INTEGER PRIMARY KEY` is one descent of the
/// table's B-tree, and the row is then found by its key: the planner has only searches to
/// choose from (`ORDER BY seq DESC LIMIT 1` reads the same row, but its plan is a `SCAN`).
pub(super) const HEAD: &str =
    "SELECT seq, hash FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// The newest row's time, found as [`HEAD`] finds its hash.
pub(super) const LATEST_TIME: &str =
    "SELECT at FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// From which seq the trail's times are known to be in order.
pub(super) const ORDERED_FROM: &str = "SELECT ordered_from FROM audit_time_order WHERE id = 1";

/// The first row at or after a seq, with its time: one probe of the binary search by time.
pub(super) const PROBE: &str = "SELECT seq, at FROM audit WHERE seq >= :seq ORDER BY seq LIMIT 1";

/// Every row of a range of seqs, oldest first. SQLite steps through it one row at a time, so a walk
/// holds one row in memory, not the trail.
pub(super) const WALK: &str = "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash
       FROM audit WHERE seq >= :from AND seq < :to ORDER BY seq";

/// The listing's statement, with `$narrow` first in its `WHERE` clause. Every statement reads
/// one range of seqs, `:from <= seq < :to`, newest first. The optional filters that follow are
/// each `:x IS NULL OR ...`, which SQLite cannot answer from an index: within the range it reads
/// the trail backwards from the newest row. `$narrow` repeats the session or subtree filter in a
/// form `audit_by_session` answers, with the range as the second column of that index.
macro_rules! list_sql {
    ($narrow:literal) => {
        concat!(
            subtree_walk!("id = :subtree"),
            "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM (
                 SELECT * FROM audit
                  WHERE ",
            $narrow,
            " seq >= :from AND seq < :to
                    AND (:session IS NULL OR session_id = :session)
                    AND (:kind IS NULL OR kind = :kind)
                    AND (:subtree IS NULL OR session_id IN (SELECT id FROM subtree))
                    AND (:since IS NULL OR at >= :since)
                    AND (:until IS NULL OR at < :until)
                  ORDER BY seq DESC
                  LIMIT :limit
             ) ORDER BY seq"
        )
    };
}

/// A listing that names a session: its rows, through `audit_by_session`.
pub(super) const LIST_BY_SESSION: &str = list_sql!("session_id = :session AND");

/// A listing that names a subtree: its sessions' rows, through `audit_by_session`.
pub(super) const LIST_BY_SUBTREE: &str = list_sql!("session_id IN (SELECT id FROM subtree) AND");

/// Any other listing: a range of seqs, through the table's key.
pub(super) const LIST: &str = list_sql!("");

/// The statement for `filter`: one that reads `audit_by_session` when it names a session or a
/// subtree (a session's history, and the grant row behind a posture, cost what the session
/// has, not what the trail has), and the trail's key otherwise.
pub(super) fn list_sql(filter: &AuditFilter<'_>) -> &'static str {
    if filter.session.is_some() {
        LIST_BY_SESSION
    } else if filter.subtree.is_some() {
        LIST_BY_SUBTREE
    } else {
        LIST
    }
}

/// A row of [`WALK`] or a listing, as stored.
fn chain_row(row: &Row<'_>) -> rusqlite::Result<ChainRow> {
    Ok(ChainRow {
        seq: row.get("seq")?,
        at: row.get("at")?,
        actor: row.get("actor")?,
        kind: row.get("kind")?,
        session: row.get("session_id")?,
        detail: row.get("detail")?,
        prev_hash: row.get("prev_hash")?,
        hash: row.get("hash")?,
    })
}

/// A listed row, read back into its values.
fn entry_of(row: ChainRow) -> Result<AuditEntry> {
    let seq = row.seq;
    let detail = serde_json::from_str(&row.detail).map_err(|e| {
        Error::from(Corruption::new(format!(
            "audit row {seq} has a detail that is not JSON: {e}"
        )))
    })?;
    let kind: AuditKind = row.kind.parse().map_err(|_| {
        Error::from(Corruption::new(format!(
            "audit row {seq} has the unknown kind {:?}",
            row.kind
        )))
    })?;
    Ok(AuditEntry {
        seq,
        at: time("audit.at", &row.at)?,
        actor: row.actor,
        kind,
        session: row.session,
        detail,
        prev_hash: row.prev_hash,
        hash: row.hash,
    })
}

impl AuditReads for Conn<'_> {
    fn audit_head(&mut self) -> Result<AuditHead> {
        let mut stmt = self.conn.prepare_cached(HEAD)?;
        let head = stmt
            .query_row([], |row| {
                Ok(AuditHead {
                    seq: row.get("seq")?,
                    hash: row.get("hash")?,
                })
            })
            .optional()?;
        match head {
            Some(head) => Ok(head),
            // No row: a new ledger, or an archive that holds no row of the trail, whose head is
            // the boundary it starts after.
            None => Ok(match crate::storage::ArchiveReads::last_archive(self)? {
                Some(archive) => AuditHead {
                    seq: i64::try_from(archive.trail_size).unwrap_or(i64::MAX),
                    hash: archive.trail_hash,
                },
                None => AuditHead::genesis(),
            }),
        }
    }

    fn latest_audit_time(&mut self) -> Result<Option<DateTime<Utc>>> {
        let mut stmt = self.conn.prepare_cached(LATEST_TIME)?;
        let at: Option<String> = stmt.query_row([], |row| row.get("at")).optional()?;
        at.map(|at| time("audit.at", &at)).transpose()
    }

    fn audit_ordered_from(&mut self) -> Result<Option<i64>> {
        let mut stmt = self.conn.prepare_cached(ORDERED_FROM)?;
        Ok(stmt
            .query_row([], |row| row.get("ordered_from"))
            .optional()?)
    }

    fn audit_probe(&mut self, seq: i64) -> Result<Option<(i64, DateTime<Utc>)>> {
        let mut stmt = self.conn.prepare_cached(PROBE)?;
        let found: Option<(i64, String)> = stmt
            .query_row(named_params! { ":seq": seq }, |row| {
                Ok((row.get("seq")?, row.get("at")?))
            })
            .optional()?;
        found
            .map(|(seq, at)| Ok((seq, time("audit.at", &at)?)))
            .transpose()
    }

    fn audit_rows(&mut self, filter: &AuditFilter<'_>) -> Result<Vec<AuditEntry>> {
        let mut stmt = self.conn.prepare_cached(list_sql(filter))?;
        let rows = stmt.query_map(
            named_params! {
                ":session": filter.session.map(|id| id.as_str()),
                ":kind": filter.kind.map(AuditKind::as_str),
                ":subtree": filter.subtree.map(|id| id.as_str()),
                ":since": filter.since.map(format_ts),
                ":until": filter.until.map(format_ts),
                ":from": filter.from,
                ":to": filter.to,
                ":limit": filter.limit.map_or(-1, i64::from),
            },
            chain_row,
        )?;
        let mut entries = Vec::new();
        for row in rows {
            entries.push(entry_of(row?)?);
        }
        Ok(entries)
    }

    fn audit_walk(
        &mut self,
        from: i64,
        to: i64,
        each: &mut dyn FnMut(ChainRow) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(WALK)?;
        let mut rows = stmt.query(named_params! { ":from": from, ":to": to })?;
        while let Some(row) = rows.next()? {
            each(chain_row(row)?)?;
        }
        Ok(())
    }
}

/// Appends one row; positional parameters in the order of the columns: binding by name looks
/// each name up among the eight, once per row, which a large cascade notices.
pub(super) const APPEND: &str =
    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

impl AuditWrites for Tx<'_> {
    fn append_audit(&mut self, row: &NewAuditRow<'_>) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(APPEND)?;
        stmt.execute((
            row.seq,
            format_ts(row.at),
            row.actor,
            row.kind.as_str(),
            row.session,
            row.detail,
            row.prev_hash,
            row.hash,
        ))?;
        Ok(())
    }
}
