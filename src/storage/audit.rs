//! SQL for the `audit` table and its hash chain.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use super::sessions::subtree_walk;
use super::ts;
use crate::audit::{
    chain_hash, AuditEntry, AuditHead, AuditQuery, ChainProblem, Verification, GENESIS_HASH,
};
use crate::clock::format_ts;
use crate::error::{Corruption, Error, Result};
use crate::postures::Posture;

/// The newest row's seq and hash. `max(seq)` of an `INTEGER PRIMARY KEY` is one descent of the
/// table's B-tree, and the row is then found by its key: the planner has only searches to
/// choose from (`ORDER BY seq DESC LIMIT 1` reads the same row, but its plan is a `SCAN`).
pub(crate) const HEAD_SQL: &str =
    "SELECT seq, hash FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// The newest row's time, found as [`HEAD_SQL`] finds its hash.
pub(crate) const LATEST_TIME_SQL: &str =
    "SELECT at FROM audit WHERE seq = (SELECT max(seq) FROM audit)";

/// From which seq the trail's times are known to be in order (schema version 8): every row
/// after it has a time no earlier than its predecessor's.
pub(crate) const ORDERED_FROM_SQL: &str = "SELECT ordered_from FROM audit_time_order WHERE id = 1";

/// The first row at or after a seq, with its time: one probe of the binary search by time.
pub(crate) const PROBE_SQL: &str = "SELECT seq, at FROM audit WHERE seq >= ?1 ORDER BY seq LIMIT 1";

/// Every row from a seq on, oldest first: the walk of [`verify`] (from the first row) and of
/// [`verify_from`] (from the saved head's row). SQLite steps through it one row at a time, so
/// the walk holds one row in memory, not the trail.
pub(crate) const WALK_SQL: &str = "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash
       FROM audit WHERE seq >= ?1 ORDER BY seq";

/// The head of the chain: the last row's seq and hash, or (0, genesis) for an empty trail.
pub(crate) fn head(conn: &Connection) -> Result<AuditHead> {
    let mut stmt = conn.prepare_cached(HEAD_SQL)?;
    let head = stmt
        .query_row([], |row| {
            Ok(AuditHead {
                seq: row.get(0)?,
                hash: row.get(1)?,
            })
        })
        .optional()?;
    Ok(head.unwrap_or_else(|| AuditHead {
        seq: 0,
        hash: GENESIS_HASH.to_owned(),
    }))
}

/// When the newest row was written: the latest time the ledger has recorded (every change
/// writes a row, and [`crate::Ledger`] never writes a time before the newest row's). `None` for
/// an empty trail.
pub(crate) fn latest_time(conn: &Connection) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    let mut stmt = conn.prepare_cached(LATEST_TIME_SQL)?;
    let at: Option<String> = stmt.query_row([], |row| row.get(0)).optional()?;
    at.map(|at| ts("audit.at", &at)).transpose()
}

/// Appends one row, extending the hash chain. Called inside the transaction of the change it
/// records; writes are serialized by BEGIN IMMEDIATE, so the head cannot move meanwhile.
pub(crate) fn append(
    tx: &Transaction<'_>,
    now: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &serde_json::Value,
) -> Result<i64> {
    let mut head = head(tx)?;
    push(
        tx,
        &mut head,
        now,
        actor,
        kind,
        session,
        &detail.to_string(),
    )
}

/// Appends one row per `(session, detail)`, all of one kind, reading the head once: the path
/// of a large cascade, where the chain costs one hash per row and nothing more. Each detail is
/// the JSON object's text, as it is stored and hashed.
pub(crate) fn append_all<'a>(
    tx: &Transaction<'_>,
    now: &str,
    actor: &str,
    kind: &str,
    rows: impl IntoIterator<Item = (&'a str, String)>,
) -> Result<()> {
    let mut head = head(tx)?;
    for (session, detail) in rows {
        push(tx, &mut head, now, actor, kind, Some(session), &detail)?;
    }
    Ok(())
}

fn push(
    tx: &Transaction<'_>,
    head: &mut AuditHead,
    now: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &str,
) -> Result<i64> {
    let seq = head.seq + 1;
    #[cfg(not(session_ledger_unchained))]
    let hash = chain_hash(&head.hash, seq, now, actor, kind, session, detail);
    // Only in the baseline build of benches/chain_cost.sh, which measures what the chain
    // costs: the same rows with a constant hash. Never set in a build anyone runs.
    #[cfg(session_ledger_unchained)]
    let hash = GENESIS_HASH.to_owned();
    // Positional parameters: binding by name looks each name up among the eight, per row.
    let mut stmt = tx.prepare_cached(APPEND_SQL)?;
    stmt.execute((seq, now, actor, kind, session, detail, &head.hash, &hash))?;
    *head = AuditHead { seq, hash };
    Ok(seq)
}

/// Appends one row; positional parameters, in the order of the columns.
pub(crate) const APPEND_SQL: &str =
    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// Stored times have whole milliseconds, so for a stored time `a` and any bound `b`:
/// `a >= b` exactly when `a >= ceil_ms(b)`, and `a < b` exactly when `a < ceil_ms(b)`.
fn ceil_ms(t: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    use chrono::{DurationRound, TimeDelta};
    let ms = TimeDelta::milliseconds(1);
    let floor = t.duration_trunc(ms).unwrap_or(t);
    if floor == t {
        t
    } else {
        floor + ms
    }
}

/// A time bound as the stored text it is compared with.
fn bound(t: chrono::DateTime<chrono::Utc>) -> String {
    format_ts(ceil_ms(t))
}

/// [`list`]'s statement, with `$narrow` first in its `WHERE` clause. Every statement reads one
/// range of seqs, `:from <= seq < :to`, newest first; [`seq_ranges`] turns a time window and a
/// page's `before` into such ranges, so that the statement never reads rows outside them. The
/// optional filters that follow are each `:x IS NULL OR ...`, which SQLite cannot answer from
/// an index: within the range it reads the trail backwards from the newest row. `$narrow`
/// repeats the session or subtree filter in a form `audit_by_session` answers, with the range
/// as the second column of that index. The time filters stay, so a row outside the window is
/// never listed whatever the ranges are.
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

/// [`list`] for a query that names a session: its rows, through `audit_by_session`.
pub(crate) const LIST_BY_SESSION_SQL: &str = list_sql!("session_id = :session AND");

/// [`list`] for a query that names a subtree: its sessions' rows, through `audit_by_session`.
pub(crate) const LIST_BY_SUBTREE_SQL: &str =
    list_sql!("session_id IN (SELECT id FROM subtree) AND");

/// [`list`] for any other query: a range of seqs, through the table's key.
pub(crate) const LIST_SQL: &str = list_sql!("");

/// The statement for `query`: one that reads `audit_by_session` when the query names a session
/// or a subtree (a session's history, and the grant row behind a posture, cost what the session
/// has, not what the trail has), and the trail's key otherwise.
fn list_sql(query: &AuditQuery) -> &'static str {
    if query.session.is_some() {
        LIST_BY_SESSION_SQL
    } else if query.subtree.is_some() {
        LIST_BY_SUBTREE_SQL
    } else {
        LIST_SQL
    }
}

/// The seq from which the trail's times are in order ([`ORDERED_FROM_SQL`]).
fn ordered_from(conn: &Connection) -> Result<i64> {
    let mut stmt = conn.prepare_cached(ORDERED_FROM_SQL)?;
    stmt.query_row([], |row| row.get(0))
        .optional()?
        .ok_or_else(|| {
            Error::Corruption(Corruption::new(
                "audit_time_order has lost its row (a hand edit): the ledger cannot tell \
                 which part of the audit trail is in time order"
                    .to_owned(),
            ))
        })
}

/// The smallest seq `x` in `from..=end` such that every row with a seq of at least `x` (up to
/// `end`, excluded) is at or after `time`, by binary search over seq: O(log n) lookups by the
/// table's key, each the first row at or after a probe ([`PROBE_SQL`]), so that a gap in the
/// seqs is stepped over. Right when the times of the rows from `from` on never decrease, which
/// the schema keeps from version 8 on (the trigger `audit_time_never_goes_back`) and
/// `audit_time_order` records for the rows before.
fn first_at_or_after(conn: &Connection, from: i64, end: i64, time: &str) -> Result<i64> {
    let mut probe = conn.prepare_cached(PROBE_SQL)?;
    let (mut lo, mut hi) = (from, end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let row: Option<(i64, String)> = probe
            .query_row([mid], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        match row {
            // No row at `mid` before it: rows up to it are too early, and so is every one
            // before, because times never decrease along seq.
            Some((seq, at)) if seq < hi && at.as_str() < time => lo = seq + 1,
            // At or after `time`, or no row in `mid..hi` at all.
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// The ranges of seqs, `(from, to)` with `from <= seq < to`, newest first, that hold every row
/// of `query`'s time window below its `before`. Without a time bound, one range. With one, the
/// bounds are found by [`first_at_or_after`] over the part of the trail known to be in time
/// order; rows before that part (only in a ledger whose times went back before schema version
/// 8) form a second range, read in full and filtered by time.
fn seq_ranges(conn: &Connection, query: &AuditQuery) -> Result<Vec<(i64, i64)>> {
    let mut to = query.before.unwrap_or(i64::MAX);
    if query.since.is_none() && query.until.is_none() {
        return Ok(vec![(i64::MIN, to)]);
    }
    let end = head(conn)?.seq.saturating_add(1);
    let ordered_from = ordered_from(conn)?.clamp(1, end);
    if let Some(until) = query.until {
        to = to.min(first_at_or_after(conn, ordered_from, end, &bound(until))?);
    }
    let Some(since) = query.since else {
        return Ok(vec![(i64::MIN, to)]);
    };
    let from = first_at_or_after(conn, ordered_from, end, &bound(since))?;
    let mut ranges = vec![(from, to)];
    if ordered_from > 1 {
        ranges.push((i64::MIN, ordered_from.min(to)));
    }
    Ok(ranges)
}

/// The rows matching `query`, oldest first. Run inside one read transaction, as every read of
/// several statements is (`Storage::snapshot`).
pub(crate) fn list(conn: &Connection, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let mut remaining = query.limit.map(i64::from);
    let mut pieces = Vec::new();
    for (from, to) in seq_ranges(conn, query)? {
        if remaining == Some(0) {
            break;
        }
        if from >= to {
            continue;
        }
        let rows = list_range(conn, query, from, to, remaining)?;
        if let Some(left) = remaining.as_mut() {
            *left -= rows.len() as i64;
        }
        pieces.push(rows);
    }
    Ok(pieces.into_iter().rev().flatten().collect())
}

/// The newest `limit` rows (all with `None`) matching `query` with `from <= seq < to`, oldest
/// first.
fn list_range(
    conn: &Connection,
    query: &AuditQuery,
    from: i64,
    to: i64,
    limit: Option<i64>,
) -> Result<Vec<AuditEntry>> {
    let mut stmt = conn.prepare_cached(list_sql(query))?;
    let rows = stmt.query_map(
        named_params! {
            ":session": query.session,
            ":kind": query.kind,
            ":subtree": query.subtree,
            ":since": query.since.map(bound),
            ":until": query.until.map(bound),
            ":from": from,
            ":to": to,
            ":limit": limit.unwrap_or(-1),
        },
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
                row.get::<_, String>(7)?,
            ))
        },
    )?;
    let mut entries = Vec::new();
    for row in rows {
        let (seq, at, actor, kind, session, detail, prev_hash, hash) = row?;
        let detail = serde_json::from_str(&detail).map_err(|e| {
            Error::Corruption(Corruption::new(format!(
                "audit row {seq} has a detail that is not JSON: {e}"
            )))
        })?;
        entries.push(AuditEntry {
            seq,
            at: ts("audit.at", &at)?,
            actor,
            kind,
            session,
            detail,
            prev_hash,
            hash,
        });
    }
    Ok(entries)
}

/// One audit row as the walk reads it.
struct WalkRow {
    seq: i64,
    at: String,
    actor: String,
    kind: String,
    session: Option<String>,
    detail: String,
    prev_hash: String,
    hash: String,
}

impl WalkRow {
    /// Reads a row of [`WALK_SQL`].
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<WalkRow> {
        Ok(WalkRow {
            seq: row.get(0)?,
            at: row.get(1)?,
            actor: row.get(2)?,
            kind: row.get(3)?,
            session: row.get(4)?,
            detail: row.get(5)?,
            prev_hash: row.get(6)?,
            hash: row.get(7)?,
        })
    }

    /// True when the row's hash is the hash of its contents and its own `prev_hash`.
    fn hash_matches(&self) -> bool {
        self.hash
            == chain_hash(
                &self.prev_hash,
                self.seq,
                &self.at,
                &self.actor,
                &self.kind,
                self.session.as_deref(),
                &self.detail,
            )
    }
}

/// A walk along the chain: what the next row must be, and the first problem found. It keeps
/// the last row's hash and time only, so it holds the same memory for any length of trail.
struct Walk {
    ordered_from: i64,
    next_seq: i64,
    prev_hash: String,
    prev_at: Option<String>,
    rows: u64,
    first: Option<(i64, ChainProblem)>,
}

impl Walk {
    /// A walk from the first row, whose predecessor is the genesis.
    fn from_genesis(ordered_from: i64) -> Walk {
        Walk {
            ordered_from,
            next_seq: 1,
            prev_hash: GENESIS_HASH.to_owned(),
            prev_at: None,
            rows: 0,
            first: None,
        }
    }

    fn found(&mut self, seq: i64, problem: Option<ChainProblem>) {
        if self.first.is_none() {
            self.first = problem.map(|p| (seq, p));
        }
    }

    /// Takes `row` as the next one and remembers it as the predecessor of the one after.
    fn advance(&mut self, row: WalkRow) {
        self.rows += 1;
        self.next_seq = row.seq + 1;
        self.prev_hash = row.hash;
        self.prev_at = Some(row.at);
    }

    /// Checks `row` against its predecessor: the next seq, linked to its hash, hashed right,
    /// and (in the part of the trail in time order) not earlier than it.
    fn check(&mut self, row: WalkRow) {
        if self.first.is_none() {
            let goes_back = row.seq > self.ordered_from
                && self
                    .prev_at
                    .as_deref()
                    .is_some_and(|prev| row.at.as_str() < prev);
            let problem = if row.seq != self.next_seq {
                Some(ChainProblem::Gap)
            } else if row.prev_hash != self.prev_hash {
                Some(ChainProblem::BrokenLink)
            } else if !row.hash_matches() {
                Some(ChainProblem::HashMismatch)
            } else if goes_back {
                Some(ChainProblem::TimeGoesBack)
            } else {
                None
            };
            self.found(row.seq, problem);
        }
        self.advance(row);
    }

    /// The result, with the newest row read as the head.
    fn finish(self) -> Verification {
        Verification {
            ok: self.first.is_none(),
            rows: self.rows,
            head: AuditHead {
                seq: self.next_seq - 1,
                hash: self.prev_hash,
            },
            first_bad_seq: self.first.as_ref().map(|(seq, _)| *seq),
            problem: self.first.map(|(_, p)| p),
        }
    }
}

/// Walks the whole chain and reports the first row that does not verify; with `saved`, also
/// checks that the saved head is still there. The caller runs it inside one read transaction
/// (`Storage::snapshot`), so its statements see one state of the trail.
pub(crate) fn verify(conn: &Connection, saved: Option<&AuditHead>) -> Result<Verification> {
    let mut walk = Walk::from_genesis(ordered_from(conn)?);
    let mut saved_hash: Option<String> = None;
    let mut stmt = conn.prepare_cached(WALK_SQL)?;
    let mut rows = stmt.query([i64::MIN])?;
    while let Some(row) = rows.next()? {
        let row = WalkRow::read(row)?;
        if saved.is_some_and(|h| h.seq == row.seq) {
            saved_hash = Some(row.hash.clone());
        }
        walk.check(row);
    }
    if walk.first.is_none() {
        if let Some(saved) = saved {
            if saved.seq == 0 {
                // The empty trail's head: the genesis hash.
                saved_hash = Some(GENESIS_HASH.to_owned());
            }
            let problem = match saved_hash {
                None => Some(ChainProblem::Truncated),
                Some(hash) if hash != saved.hash => Some(ChainProblem::HeadMismatch),
                Some(_) => None,
            };
            walk.found(saved.seq, problem);
        }
    }
    Ok(walk.finish())
}

/// Checks that the saved head's row still has its hash (and contents that give it), then walks
/// the chain from it to the newest row: it reads the rows from the saved head's seq on, by the
/// table's key, and none before. The saved head of an empty trail (seq 0) walks the whole trail.
pub(crate) fn verify_from(conn: &Connection, saved: &AuditHead) -> Result<Verification> {
    if saved.seq <= 0 {
        return verify(conn, Some(saved));
    }
    let ordered_from = ordered_from(conn)?;
    let mut stmt = conn.prepare_cached(WALK_SQL)?;
    let mut rows = stmt.query([saved.seq])?;
    let Some(first) = rows.next()? else {
        // Nothing at or after the saved head: rows were removed from the end.
        drop(rows);
        return Ok(Verification {
            ok: false,
            rows: 0,
            head: head(conn)?,
            first_bad_seq: Some(saved.seq),
            problem: Some(ChainProblem::Truncated),
        });
    };
    let first = WalkRow::read(first)?;
    let mut walk = Walk::from_genesis(ordered_from);
    let problem = if first.seq != saved.seq {
        // The saved head's row is gone, and rows after it are left.
        Some((first.seq, ChainProblem::Gap))
    } else if first.hash != saved.hash {
        Some((saved.seq, ChainProblem::HeadMismatch))
    } else if !first.hash_matches() {
        Some((saved.seq, ChainProblem::HashMismatch))
    } else {
        None
    };
    if let Some((seq, problem)) = problem {
        walk.found(seq, Some(problem));
    }
    walk.advance(first);
    while let Some(row) = rows.next()? {
        walk.check(WalkRow::read(row)?);
    }
    Ok(walk.finish())
}

/// The `posture.grant` row behind `posture`: on its `granted_on` session, at its `granted_at`,
/// by its `granted_by`, of its level. Times have whole milliseconds, so several grants on one
/// session can share one; the actor and the level tell them apart unless they say the same
/// thing, and then the newest is returned.
pub(crate) fn grant_row(conn: &Connection, posture: &Posture) -> Result<Option<AuditEntry>> {
    let rows = list(
        conn,
        &AuditQuery::all()
            .session(&posture.granted_on)
            .kind("posture.grant"),
    )?;
    Ok(rows.into_iter().rev().find(|r| {
        r.at == posture.granted_at
            && r.actor == posture.granted_by
            && r.detail["posture"] == posture.level.as_str()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::storage::Storage;

    /// SQLite's plan for `sql`, one line per step. The parameters stay unbound: a plan does not
    /// depend on their values.
    fn plan(conn: &Connection, sql: &str) -> Result<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
        let mut rows = stmt.raw_query();
        let mut steps = Vec::new();
        while let Some(row) = rows.next()? {
            steps.push(row.get::<_, String>(3)?);
        }
        Ok(steps.join("\n"))
    }

    #[test]
    fn a_sessions_history_and_a_subtrees_are_read_through_the_session_index() -> Result<()> {
        let dir = tempfile::tempdir().expect("temp dir");
        let storage = Storage::open(&dir.path().join("ledger.db"), &Config::default())?;
        storage.read(|conn| {
            for query in [
                AuditQuery::all().session("worker"),
                AuditQuery::all().session("worker").kind("posture.grant"),
                AuditQuery::all().subtree("conductor"),
            ] {
                let plan = plan(conn, list_sql(&query))?;
                assert!(
                    plan.contains("INDEX audit_by_session"),
                    "{query:?} reads:\n{plan}"
                );
            }
            Ok(())
        })
    }

    /// A ledger with a few hundred audit rows, some sessions and postures.
    fn populated(dir: &std::path::Path) -> Result<crate::Ledger> {
        let ledger = crate::Ledger::open(dir.join("ledger.db"))?;
        for r in 0..10 {
            let root = format!("root-{r}");
            ledger.create_root(&root, "op")?;
            ledger.grant(&root, crate::PostureLevel::Trust, "op")?;
            for c in 0..10 {
                let child = format!("child-{r}-{c}");
                ledger.create_child(&child, &root, "op")?;
                ledger.state(&child)?;
            }
            ledger.revoke(&root, crate::Propagation::Cascade { token: None }, "op")?;
        }
        Ok(ledger)
    }

    /// Fails when `plan` scans the audit table or builds an automatic index.
    fn assert_searches_only(what: &str, plan: &str) {
        assert!(
            !plan.contains("SCAN audit") && !plan.contains("AUTOMATIC"),
            "{what} reads:\n{plan}"
        );
        assert!(plan.contains("SEARCH audit"), "{what} reads:\n{plan}");
    }

    #[test]
    fn listing_by_time_paging_and_verify_from_read_ranges_of_seq_not_the_trail() -> Result<()> {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = populated(dir.path())?;
        ledger.storage.read(|conn| {
            // Every statement a listing by time or by page runs, and the walk of verify_from.
            for (what, sql) in [
                ("the head", HEAD_SQL),
                ("the newest time", LATEST_TIME_SQL),
                ("a probe of the search by time", PROBE_SQL),
                ("a range of seqs", LIST_SQL),
                ("a session's range of seqs", LIST_BY_SESSION_SQL),
                ("a subtree's range of seqs", LIST_BY_SUBTREE_SQL),
                ("the walk from a saved head", WALK_SQL),
            ] {
                assert_searches_only(what, &plan(conn, sql)?);
            }
            let order = plan(conn, ORDERED_FROM_SQL)?;
            assert!(order.contains("SEARCH audit_time_order"), "{order}");
            // The by-session listing keeps to its index, with the range as its second column.
            let by_session = plan(conn, LIST_BY_SESSION_SQL)?;
            assert!(
                by_session.contains("INDEX audit_by_session (session_id=? AND seq>? AND seq<?)"),
                "{by_session}"
            );
            Ok(())
        })
    }

    #[test]
    fn a_time_window_becomes_the_range_of_seqs_of_exactly_its_rows() -> Result<()> {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = populated(dir.path())?;
        let all = ledger.audit(&AuditQuery::all())?;
        let since = all[all.len() / 2].at;
        let until = all[all.len() / 2 + 40].at;
        ledger.storage.read(|conn| {
            let query = AuditQuery::all().since(since).until(until);
            let ranges = seq_ranges(conn, &query)?;
            assert_eq!(ranges.len(), 1, "{ranges:?}");
            let (from, to) = ranges[0];
            let listed: Vec<i64> = list(conn, &query)?.iter().map(|r| r.seq).collect();
            assert!(!listed.is_empty());
            assert_eq!(listed, (from..to).collect::<Vec<_>>());
            Ok(())
        })
    }
}
