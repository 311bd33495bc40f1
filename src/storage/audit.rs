//! SQL for the `audit` table and its hash chain.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use super::ts;
use crate::audit::{
    chain_hash, AuditEntry, AuditHead, AuditQuery, ChainProblem, Verification, GENESIS_HASH,
};
use crate::clock::format_ts;
use crate::error::{Error, Result};
use crate::postures::Posture;

/// The head of the chain: the last row's seq and hash, or (0, genesis) for an empty trail.
pub(crate) fn head(conn: &Connection) -> Result<AuditHead> {
    let mut stmt = conn.prepare_cached("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")?;
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
    let mut stmt = conn.prepare_cached("SELECT at FROM audit ORDER BY seq DESC LIMIT 1")?;
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
    let mut stmt = tx.prepare_cached(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    stmt.execute((seq, now, actor, kind, session, detail, &head.hash, &hash))?;
    *head = AuditHead { seq, hash };
    Ok(seq)
}

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

/// [`list`]'s statement, with `$narrow` first in its `WHERE` clause. The optional filters that
/// follow are each `:x IS NULL OR ...`, which SQLite cannot answer from an index, so without a
/// narrowing predicate the statement reads the trail backwards from its newest row. `$narrow`
/// repeats the session or subtree filter in a form `audit_by_session` answers.
macro_rules! list_sql {
    ($narrow:literal) => {
        concat!(
            "WITH RECURSIVE subtree (id) AS (
                 SELECT id FROM sessions WHERE id = :subtree
                 UNION ALL
                 SELECT s.id FROM sessions AS s JOIN subtree ON s.created_by = subtree.id
             )
             SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM (
                 SELECT * FROM audit
                  WHERE ",
            $narrow,
            " (:session IS NULL OR session_id = :session)
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

/// The statement for `query`: one that reads `audit_by_session` when the query names a session
/// or a subtree (a session's history, and the grant row behind a posture, cost what the session
/// has, not what the trail has), and the whole trail otherwise.
fn list_sql(query: &AuditQuery) -> &'static str {
    if query.session.is_some() {
        list_sql!("session_id = :session AND")
    } else if query.subtree.is_some() {
        list_sql!("session_id IN (SELECT id FROM subtree) AND")
    } else {
        list_sql!("")
    }
}

/// The rows matching `query`, oldest first.
pub(crate) fn list(conn: &Connection, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let mut stmt = conn.prepare_cached(list_sql(query))?;
    let limit = query.limit.map_or(-1, i64::from);
    let rows = stmt.query_map(
        named_params! {
            ":session": query.session,
            ":kind": query.kind,
            ":subtree": query.subtree,
            ":since": query.since.map(ceil_ms).map(format_ts),
            ":until": query.until.map(ceil_ms).map(format_ts),
            ":limit": limit,
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
            Error::Corruption(format!(
                "audit row {seq} has a detail that is not JSON: {e}"
            ))
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

/// Walks the whole chain in one statement (one consistent snapshot) and reports the first row
/// that does not verify; with `saved`, also checks that the saved head is still there.
pub(crate) fn verify(conn: &Connection, saved: Option<&AuditHead>) -> Result<Verification> {
    let mut stmt = conn.prepare(
        "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM audit ORDER BY seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut expected_seq = 1_i64;
    let mut expected_prev = GENESIS_HASH.to_owned();
    let mut count = 0_u64;
    let mut first: Option<(i64, ChainProblem)> = None;
    let mut saved_hash: Option<String> = None;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let at: String = row.get(1)?;
        let actor: String = row.get(2)?;
        let kind: String = row.get(3)?;
        let session: Option<String> = row.get(4)?;
        let detail: String = row.get(5)?;
        let prev_hash: String = row.get(6)?;
        let hash: String = row.get(7)?;
        count += 1;
        if first.is_none() {
            let problem = if seq != expected_seq {
                Some(ChainProblem::Gap)
            } else if prev_hash != expected_prev {
                Some(ChainProblem::BrokenLink)
            } else if hash
                != chain_hash(
                    &prev_hash,
                    seq,
                    &at,
                    &actor,
                    &kind,
                    session.as_deref(),
                    &detail,
                )
            {
                Some(ChainProblem::HashMismatch)
            } else {
                None
            };
            first = problem.map(|p| (seq, p));
        }
        if saved.is_some_and(|h| h.seq == seq) {
            saved_hash = Some(hash.clone());
        }
        expected_seq = seq + 1;
        expected_prev = hash;
    }
    let head = AuditHead {
        seq: expected_seq - 1,
        hash: expected_prev,
    };
    if first.is_none() {
        if let Some(saved) = saved {
            if saved.seq == 0 {
                // The empty trail's head: the genesis hash.
                saved_hash = Some(GENESIS_HASH.to_owned());
            }
            first = match saved_hash {
                None => Some((saved.seq, ChainProblem::Truncated)),
                Some(hash) if hash != saved.hash => Some((saved.seq, ChainProblem::HeadMismatch)),
                Some(_) => None,
            };
        }
    }
    Ok(Verification {
        ok: first.is_none(),
        rows: count,
        head,
        first_bad_seq: first.as_ref().map(|(seq, _)| *seq),
        problem: first.map(|(_, p)| p),
    })
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
            let plan = plan(conn, list_sql(&AuditQuery::all().kind("posture.grant")))?;
            assert!(plan.contains("SCAN audit"), "{plan}");
            Ok(())
        })
    }
}
