//! SQL for the `sessions` table and the lineage walks over `created_by`.

use rusqlite::{named_params, Connection, OptionalExtension, Row, Transaction};

use super::{opt_ts, ts};
use crate::error::{Error, Result};
use crate::sessions::{Origin, Session};

/// The columns [`RawSession::from_row`] reads, in its order; a macro so that the statements
/// are `concat!` literals, not strings formatted on every call.
macro_rules! session_columns {
    () => {
        "id, created_by, depth, origin, created_at, ended_at"
    };
}

/// A `sessions` row as stored, before its text is checked.
struct RawSession {
    id: String,
    created_by: Option<String>,
    depth: i64,
    origin: String,
    created_at: String,
    ended_at: Option<String>,
}

impl RawSession {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<RawSession> {
        Ok(RawSession {
            id: row.get(0)?,
            created_by: row.get(1)?,
            depth: row.get(2)?,
            origin: row.get(3)?,
            created_at: row.get(4)?,
            ended_at: row.get(5)?,
        })
    }

    fn into_session(self) -> Result<Session> {
        let origin = Origin::from_db(&self.origin).ok_or_else(|| {
            Error::Corruption(format!(
                "session {:?} has origin {:?}",
                self.id, self.origin
            ))
        })?;
        let depth = u32::try_from(self.depth).map_err(|_| {
            Error::Corruption(format!("session {:?} has depth {}", self.id, self.depth))
        })?;
        Ok(Session {
            created_at: ts("sessions.created_at", &self.created_at)?,
            ended_at: opt_ts("sessions.ended_at", self.ended_at)?,
            id: self.id,
            created_by: self.created_by,
            depth,
            origin,
        })
    }
}

fn collect(rows: impl Iterator<Item = rusqlite::Result<RawSession>>) -> Result<Vec<Session>> {
    rows.map(|r| r.map_err(Error::from).and_then(RawSession::into_session))
        .collect()
}

/// The session with this id, ended or not.
pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<Session>> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE id = :id"
    ))?;
    stmt.query_row(named_params! { ":id": id }, RawSession::from_row)
        .optional()?
        .map(RawSession::into_session)
        .transpose()
}

/// Records a session.
pub(crate) fn insert(
    tx: &Transaction<'_>,
    id: &str,
    created_by: Option<&str>,
    depth: u32,
    origin: Origin,
    now: &str,
) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO sessions (id, created_by, depth, origin, created_at)
         VALUES (:id, :created_by, :depth, :origin, :now)",
    )?;
    stmt.execute(named_params! {
        ":id": id,
        ":created_by": created_by,
        ":depth": depth,
        ":origin": origin.as_str(),
        ":now": now,
    })?;
    Ok(())
}

/// Ends a live session. Returns false when no live session has this id.
pub(crate) fn end(tx: &Transaction<'_>, id: &str, now: &str) -> Result<bool> {
    let mut stmt = tx.prepare_cached(
        "UPDATE sessions SET ended_at = :now WHERE id = :id AND ended_at IS NULL",
    )?;
    Ok(stmt.execute(named_params! { ":id": id, ":now": now })? == 1)
}

/// Ends `id` and every live spawned descendant reached through spawned sessions only.
/// Returns the ids ended, `id` first.
pub(crate) fn end_with_spawned(tx: &Transaction<'_>, id: &str, now: &str) -> Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(
        "WITH RECURSIVE spawned (id, hops) AS (
             SELECT id, 0 FROM sessions WHERE id = :id
             UNION ALL
             SELECT s.id, spawned.hops + 1
               FROM sessions AS s JOIN spawned ON s.created_by = spawned.id
              WHERE s.origin = 'spawned'
         )
         UPDATE sessions SET ended_at = :now
          WHERE id IN (SELECT id FROM spawned) AND ended_at IS NULL
         RETURNING id, depth",
    )?;
    let rows = stmt.query_map(named_params! { ":id": id, ":now": now }, |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    let mut ended = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    ended.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(ended.into_iter().map(|(id, _)| id).collect())
}

/// What the creation bounds count about `creator`'s created children, in one statement: how
/// many are live (from the partial index `sessions_live_children`, which holds only live ones,
/// so the count never reads the children that ended), and how many were created at or after
/// `since` (a range of `sessions_by_creator`). Spawned children are not counted: the bounds
/// govern the create call.
pub(crate) fn creation_counts(conn: &Connection, creator: &str, since: &str) -> Result<(u32, u32)> {
    let mut stmt = conn.prepare_cached(
        "SELECT (SELECT count(*) FROM sessions
                  WHERE created_by = :creator AND origin = 'created' AND ended_at IS NULL),
                (SELECT count(*) FROM sessions
                  WHERE created_by = :creator AND origin = 'created' AND created_at >= :since)",
    )?;
    Ok(stmt.query_row(
        named_params! { ":creator": creator, ":since": since },
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?)
}

/// The creators of `id`, nearest first, up to its root.
pub(crate) fn ancestors(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE ancestors (id, hops) AS (
             SELECT created_by, 1 FROM sessions WHERE id = :id AND created_by IS NOT NULL
             UNION ALL
             SELECT s.created_by, a.hops + 1
               FROM ancestors AS a JOIN sessions AS s ON s.id = a.id
              WHERE s.created_by IS NOT NULL
         )
         SELECT s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at
           FROM ancestors AS a JOIN sessions AS s ON s.id = a.id
          ORDER BY a.hops",
    )?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// The sessions `id` created or spawned, in the order the ledger recorded them.
pub(crate) fn children(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions WHERE created_by = :id ORDER BY seq"
    ))?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// `id` and every descendant, created or spawned, at any depth, in the order recorded.
pub(crate) fn subtree(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE subtree (id) AS (
             SELECT id FROM sessions WHERE id = :id
             UNION ALL
             SELECT s.id FROM sessions AS s JOIN subtree ON s.created_by = subtree.id
         )
         SELECT s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at
           FROM subtree JOIN sessions AS s ON s.id = subtree.id
          ORDER BY s.seq",
    )?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// Every session, in the order recorded.
pub(crate) fn all(conn: &Connection) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions ORDER BY seq"
    ))?;
    let rows = stmt.query_map([], RawSession::from_row)?;
    collect(rows)
}
