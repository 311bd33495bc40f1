//! The `audit` table on PostgreSQL: its head, its rows by ranges of `seq`, and appending one.
//!
//! What a row means, and the chain's hash, are the audit concept's: this file stores and reads.
//! A time is hashed in its stored text form, `YYYY-MM-DDTHH:MM:SS.sssZ`: the walk gives it in
//! that form, exactly as `format_ts` writes the time that was appended.

use postgres::Row;

use super::columns::Time;
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Error, Result};
use crate::model::{AuditEntry, AuditHead, AuditKind};
use crate::storage::{AuditFilter, AuditReads, AuditWrites, ChainRow, NewAuditRow};

/// The newest row's seq and hash: `max(seq)` is one descent of the primary key.
pub(super) const HEAD: &str =
    "SELECT seq, hash FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// The newest row's seq, hash and time (in milliseconds since 1970, exact: times are stored
/// to the millisecond), found as [`HEAD`] finds its hash: what a write transaction reads once,
/// in its first batch, after the lock (`commit.rs`). The schema's function
/// `ledger_write_lock_and_head()` (migration V5) runs this statement, with its plan kept for
/// the connection; the text here is for the tests that hold its plan and hold the function's
/// body to it. The batch runs unprepared, so every value comes back as text, and the time in
/// this form is read back whatever the server's `DateStyle`.
#[cfg(test)]
pub(super) const HEAD_AT_LOCK: &str =
    "SELECT seq, hash, (extract(epoch FROM at) * 1000)::bigint AS at_ms
           FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// The trail's head as a write transaction knows it: read after the lock was taken, then
/// moved by each row the transaction appends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) seq: i64,
    pub(super) hash: String,
    /// The newest row's time; `None` for an empty trail.
    pub(super) at: Option<Time>,
}

impl Head {
    /// The head from [`HEAD_AT_LOCK`]'s row as text; `None` (no row) for an empty trail.
    pub(super) fn from_text(row: Option<&postgres::SimpleQueryRow>) -> Result<Head> {
        let Some(row) = row else {
            let genesis = AuditHead::genesis();
            return Ok(Head {
                seq: genesis.seq,
                hash: genesis.hash,
                at: None,
            });
        };
        let bad = || Error::from(Corruption::new("the audit head read back unreadable"));
        let text = |name: &str| row.try_get(name).ok().flatten().ok_or_else(bad);
        let seq: i64 = text("seq")?.parse().map_err(|_| bad())?;
        let hash = text("hash")?.to_owned();
        let at_ms: i64 = text("at_ms")?.parse().map_err(|_| bad())?;
        let at = chrono::DateTime::from_timestamp_millis(at_ms).ok_or_else(bad)?;
        Ok(Head {
            seq,
            hash,
            at: Some(at),
        })
    }
}

/// The newest row's time, found as [`HEAD`] finds its hash.
pub(super) const LATEST_TIME: &str =
    "SELECT at FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// From which seq the trail's times are known to be in order.
pub(super) const ORDERED_FROM: &str = "SELECT ordered_from FROM audit_time_order WHERE id = 1";

/// The first row at or after a seq, with its time: one probe of the binary search by time.
pub(super) const PROBE: &str = "SELECT seq, at FROM audit WHERE seq >= $1 ORDER BY seq LIMIT 1";

/// Every row of a range of seqs, oldest first, read a slice at a time so that a walk holds a few
/// rows in memory, not the trail.
pub(super) const WALK: &str = "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash
       FROM audit WHERE seq >= $1 AND seq < $2 ORDER BY seq LIMIT 1024";

/// The listing's statement, with `$narrow` first in its `WHERE` clause: one range of seqs,
/// `$7 <= seq < $8`, newest first, then the optional filters, each `$n IS NULL OR ...`.
/// `$narrow` repeats the session or subtree filter in a form `audit_by_session` answers.
macro_rules! list_sql {
    ($narrow:literal) => {
        concat!(
            subtree_walk!("id = $3::text"),
            "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM (
                 SELECT * FROM audit
                  WHERE ",
            $narrow,
            " seq >= $6 AND seq < $7
                    AND ($1::text IS NULL OR session_id = $1)
                    AND ($2::text IS NULL OR kind = $2)
                    AND ($3::text IS NULL OR session_id IN (SELECT id FROM subtree))
                    AND ($4::timestamptz IS NULL OR at >= $4)
                    AND ($5::timestamptz IS NULL OR at < $5)
                  ORDER BY seq DESC
                  LIMIT $8
             ) AS listed ORDER BY seq"
        )
    };
}

/// A listing that names a session: its rows, through `audit_by_session`.
pub(super) const LIST_BY_SESSION: &str = list_sql!("session_id = $1 AND");

/// A listing that names a subtree: its sessions' rows, through `audit_by_session`.
pub(super) const LIST_BY_SUBTREE: &str = list_sql!("session_id IN (SELECT id FROM subtree) AND");

/// Any other listing: a range of seqs, through the primary key.
pub(super) const LIST: &str = list_sql!("");

/// A row of [`WALK`] or a listing, as stored.
fn chain_row(row: &Row) -> Result<ChainRow> {
    let at: Time = row.try_get("at")?;
    Ok(ChainRow {
        seq: row.try_get("seq")?,
        at: format_ts(at),
        actor: row.try_get("actor")?,
        kind: row.try_get("kind")?,
        session: row.try_get("session_id")?,
        detail: row.try_get("detail")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

/// A listed row, read back into its values.
fn entry_of(row: &Row) -> Result<AuditEntry> {
    let seq: i64 = row.try_get("seq")?;
    let detail: String = row.try_get("detail")?;
    let detail = serde_json::from_str(&detail).map_err(|e| {
        Error::from(Corruption::new(format!(
            "audit row {seq} has a detail that is not JSON: {e}"
        )))
    })?;
    let kind: String = row.try_get("kind")?;
    let kind: AuditKind = kind.parse().map_err(|_| {
        Error::from(Corruption::new(format!(
            "audit row {seq} has the unknown kind {kind:?}"
        )))
    })?;
    Ok(AuditEntry {
        seq,
        at: row.try_get("at")?,
        actor: row.try_get("actor")?,
        kind,
        session: row.try_get("session_id")?,
        detail,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

impl AuditReads for Conn<'_> {
    fn audit_head(&mut self) -> Result<AuditHead> {
        if let Some(head) = &self.head {
            return Ok(AuditHead {
                seq: head.seq,
                hash: head.hash.clone(),
            });
        }
        Ok(match self.row(HEAD, &[])? {
            Some(row) => AuditHead {
                seq: row.try_get("seq")?,
                hash: row.try_get("hash")?,
            },
            // No row: a new ledger, or one whose every row left with an archive (never the
            // library's: the archive's own audit row stays), whose head is the boundary.
            None => match crate::storage::ArchiveReads::last_archive(self)? {
                Some(archive) => AuditHead {
                    seq: i64::try_from(archive.trail_size).unwrap_or(i64::MAX),
                    hash: archive.trail_hash,
                },
                None => AuditHead::genesis(),
            },
        })
    }

    fn latest_audit_time(&mut self) -> Result<Option<Time>> {
        if let Some(head) = &self.head {
            return Ok(head.at);
        }
        match self.row(LATEST_TIME, &[])? {
            Some(row) => Ok(Some(row.try_get("at")?)),
            None => Ok(None),
        }
    }

    fn audit_ordered_from(&mut self) -> Result<Option<i64>> {
        match self.row(ORDERED_FROM, &[])? {
            Some(row) => Ok(Some(row.try_get("ordered_from")?)),
            None => Ok(None),
        }
    }

    fn audit_probe(&mut self, seq: i64) -> Result<Option<(i64, Time)>> {
        match self.row(PROBE, &[&seq])? {
            Some(row) => Ok(Some((row.try_get("seq")?, row.try_get("at")?))),
            None => Ok(None),
        }
    }

    fn audit_rows(&mut self, filter: &AuditFilter<'_>) -> Result<Vec<AuditEntry>> {
        let sql = if filter.session.is_some() {
            LIST_BY_SESSION
        } else if filter.subtree.is_some() {
            LIST_BY_SUBTREE
        } else {
            LIST
        };
        let session = filter.session.map(|id| id.as_str());
        let kind = filter.kind.map(AuditKind::as_str);
        let subtree = filter.subtree.map(|id| id.as_str());
        let limit: Option<i64> = filter.limit.map(i64::from);
        let rows = self.rows(
            sql,
            &[
                &session,
                &kind,
                &subtree,
                &filter.since,
                &filter.until,
                &filter.from,
                &filter.to,
                &limit,
            ],
        )?;
        rows.iter().map(entry_of).collect()
    }

    fn audit_walk(
        &mut self,
        from: i64,
        to: i64,
        each: &mut dyn FnMut(ChainRow) -> Result<()>,
    ) -> Result<()> {
        let mut next = from;
        loop {
            let rows = self.rows(WALK, &[&next, &to])?;
            let Some(last) = rows.last() else {
                return Ok(());
            };
            let last_seq: i64 = last.try_get("seq")?;
            let full = rows.len() == 1024;
            for row in &rows {
                each(chain_row(row)?)?;
            }
            if !full {
                return Ok(());
            }
            next = last_seq.saturating_add(1);
        }
    }
}

/// Appends one row.
pub(super) const APPEND: &str =
    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Appends many rows, one from each position of the arrays, in the arrays' order. A row
/// trigger sees the rows the same statement inserted before its own, so the chain's trigger
/// checks each row against the one before it, as when they come one statement each.
pub(super) const APPEND_MANY: &str =
    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
     SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash
       FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[],
                   $6::text[], $7::text[], $8::text[])
            WITH ORDINALITY AS u (seq, at, actor, kind, session_id, detail, prev_hash, hash, n)
      ORDER BY n";

/// An appended row the transaction holds until it writes it (see the module comment of
/// `postgres`).
pub(super) struct Appended {
    pub(super) seq: i64,
    pub(super) at: Time,
    pub(super) actor: String,
    pub(super) kind: &'static str,
    pub(super) session: Option<String>,
    pub(super) detail: String,
    pub(super) prev_hash: String,
    pub(super) hash: String,
}

impl Conn<'_> {
    /// Writes the audit rows appended and not written yet: one with [`APPEND`], more with
    /// [`APPEND_MANY`].
    pub(super) fn write_appended(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.appended);
        let written = match rows.as_slice() {
            [] => return Ok(()),
            [row] => self.execute_now(
                APPEND,
                &[
                    &row.seq,
                    &row.at,
                    &row.actor,
                    &row.kind,
                    &row.session,
                    &row.detail,
                    &row.prev_hash,
                    &row.hash,
                ],
            )?,
            rows => {
                let column = |f: fn(&Appended) -> &str| rows.iter().map(f).collect::<Vec<_>>();
                let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
                let ats: Vec<Time> = rows.iter().map(|r| r.at).collect();
                let sessions: Vec<Option<&str>> =
                    rows.iter().map(|r| r.session.as_deref()).collect();
                self.execute_now(
                    APPEND_MANY,
                    &[
                        &seqs,
                        &ats,
                        &column(|r| &r.actor),
                        &column(|r| r.kind),
                        &sessions,
                        &column(|r| &r.detail),
                        &column(|r| &r.prev_hash),
                        &column(|r| &r.hash),
                    ],
                )?
            }
        };
        if written != rows.len() as u64 {
            return Err(Corruption::new(format!(
                "{written} of {} appended audit rows were written",
                rows.len()
            ))
            .into());
        }
        Ok(())
    }
}

impl AuditWrites for Tx<'_> {
    /// Holds the row for the transaction to write with others (see the module comment of
    /// `postgres`); writes the rows held once there are `APPEND_BATCH` of them. The row is the
    /// transaction's head from now on.
    fn append_audit(&mut self, row: &NewAuditRow<'_>) -> Result<()> {
        if let Some(head) = &mut self.read.head {
            *head = Head {
                seq: row.seq,
                hash: row.hash.to_owned(),
                at: Some(row.at),
            };
        }
        self.read.appended.push(Appended {
            seq: row.seq,
            at: row.at,
            actor: row.actor.to_owned(),
            kind: row.kind.as_str(),
            session: row.session.map(str::to_owned),
            detail: row.detail.to_owned(),
            prev_hash: row.prev_hash.to_owned(),
            hash: row.hash.to_owned(),
        });
        if self.read.appended.len() >= super::APPEND_BATCH {
            self.read.flush()?;
        }
        Ok(())
    }
}
