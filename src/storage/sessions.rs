//! SQL for the `sessions` table and the lineage walks over `created_by`.

use rusqlite::{named_params, Connection, OptionalExtension, Row, Transaction};

use super::labels::parse_taint;
use super::postures::{posture_columns, RawPosture};
use super::{opt_ts, ts};
use crate::error::{Corruption, Error, Result};
use crate::labels::Label;
use crate::postures::Posture;
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
            Error::Corruption(Corruption::new(format!(
                "session {:?} has origin {:?}",
                self.id, self.origin
            )))
        })?;
        let depth = u32::try_from(self.depth).map_err(|_| {
            Error::Corruption(Corruption::new(format!(
                "session {:?} has depth {}",
                self.id, self.depth
            )))
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
pub(crate) const SESSION: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE id = :id"
);

/// The session with this id, ended or not.
pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<Session>> {
    let mut stmt = conn.prepare_cached(SESSION)?;
    stmt.query_row(named_params! { ":id": id }, RawSession::from_row)
        .optional()?
        .map(RawSession::into_session)
        .transpose()
}

/// Records a session.
pub(crate) const INSERT: &str = "INSERT INTO sessions (id, created_by, depth, origin, created_at)
     VALUES (:id, :created_by, :depth, :origin, :now)";

/// Records a session.
pub(crate) fn insert(
    tx: &Transaction<'_>,
    id: &str,
    created_by: Option<&str>,
    depth: u32,
    origin: Origin,
    now: &str,
) -> Result<()> {
    let mut stmt = tx.prepare_cached(INSERT)?;
    stmt.execute(named_params! {
        ":id": id,
        ":created_by": created_by,
        ":depth": depth,
        ":origin": origin.as_str(),
        ":now": now,
    })?;
    Ok(())
}

/// Ends a live session.
pub(crate) const END: &str =
    "UPDATE sessions SET ended_at = :now WHERE id = :id AND ended_at IS NULL";

/// Ends a live session. Returns false when no live session has this id.
pub(crate) fn end(tx: &Transaction<'_>, id: &str, now: &str) -> Result<bool> {
    let mut stmt = tx.prepare_cached(END)?;
    Ok(stmt.execute(named_params! { ":id": id, ":now": now })? == 1)
}

/// Ends a session and every live spawned descendant reached through spawned sessions only.
/// The walk searches children through `sessions_by_creator` (as [`subtree_walk!`] does) and
/// the update finds each row by its `seq`.
pub(crate) const END_WITH_SPAWNED: &str = "WITH RECURSIVE spawned (seq, id) AS (
         SELECT seq, id FROM sessions WHERE id = :id
         UNION ALL
         SELECT s.seq, s.id
           FROM spawned CROSS JOIN sessions AS s INDEXED BY sessions_by_creator
             ON s.created_by = spawned.id
          WHERE s.origin = 'spawned'
     )
     UPDATE sessions SET ended_at = :now
      WHERE seq IN (SELECT seq FROM spawned) AND ended_at IS NULL
     RETURNING id, depth";

/// Ends `id` and every live spawned descendant reached through spawned sessions only.
/// Returns the ids ended, `id` first.
pub(crate) fn end_with_spawned(tx: &Transaction<'_>, id: &str, now: &str) -> Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(END_WITH_SPAWNED)?;
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
pub(crate) const CREATION_COUNTS: &str =
    "SELECT (SELECT count(*) FROM sessions INDEXED BY sessions_live_children
              WHERE created_by = :creator AND origin = 'created' AND ended_at IS NULL),
            (SELECT count(*) FROM sessions INDEXED BY sessions_by_creator
              WHERE created_by = :creator AND origin = 'created' AND created_at >= :since)";

/// See [`CREATION_COUNTS`].
pub(crate) fn creation_counts(conn: &Connection, creator: &str, since: &str) -> Result<(u32, u32)> {
    let mut stmt = conn.prepare_cached(CREATION_COUNTS)?;
    Ok(stmt.query_row(
        named_params! { ":creator": creator, ":since": since },
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?)
}

/// The creators of `id`, nearest first, up to its root: one primary-key search per level.
pub(crate) const ANCESTORS: &str = concat!(
    "WITH RECURSIVE ancestors (hops, ",
    session_columns!(),
    ") AS (
         SELECT 1, parent.id, parent.created_by, parent.depth, parent.origin, parent.created_at,
                parent.ended_at
           FROM sessions AS child CROSS JOIN sessions AS parent ON parent.id = child.created_by
          WHERE child.id = :id
         UNION ALL
         SELECT ancestors.hops + 1, s.id, s.created_by, s.depth, s.origin, s.created_at,
                s.ended_at
           FROM ancestors CROSS JOIN sessions AS s ON s.id = ancestors.created_by
     )
     SELECT ",
    session_columns!(),
    " FROM ancestors ORDER BY hops"
);

/// The creators of `id`, nearest first, up to its root.
pub(crate) fn ancestors(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(ANCESTORS)?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// The sessions a session created or spawned, in the order the ledger recorded them.
pub(crate) const CHILDREN: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions INDEXED BY sessions_by_creator WHERE created_by = :id ORDER BY seq"
);

/// The sessions `id` created or spawned, in the order the ledger recorded them.
pub(crate) fn children(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(CHILDREN)?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// The `WITH` clause that walks down `created_by` from the sessions matching `$anchor` (a
/// condition on `sessions`, with its own parameters): `subtree` holds each of them and every
/// descendant, created or spawned, at any depth, with all of its `sessions` columns. Every
/// statement that walks a subtree starts with it, so they all walk alike.
///
/// Each step searches the children of the rows found so far through `sessions_by_creator`.
/// The step is written so that no planner can choose anything else: `CROSS JOIN` keeps
/// `subtree` as the outer loop (SQLite never reorders it), and `INDEXED BY` names the index
/// (a statement whose index is gone fails to prepare rather than scanning). The rows carry
/// every column, so no statement has to join back to `sessions` for them. The walk reads the
/// subtree's rows and index entries, whatever the size of the ledger.
macro_rules! subtree_walk {
    ($anchor:literal) => {
        concat!(
            "WITH RECURSIVE subtree (seq, id, created_by, depth, origin, created_at, ended_at) AS (
                 SELECT seq, id, created_by, depth, origin, created_at, ended_at
                   FROM sessions WHERE ",
            $anchor,
            "
                 UNION ALL
                 SELECT s.seq, s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at
                   FROM subtree CROSS JOIN sessions AS s INDEXED BY sessions_by_creator
                     ON s.created_by = subtree.id
             ) "
        )
    };
}
pub(crate) use subtree_walk;

/// `id` and every descendant, created or spawned, at any depth, in the order recorded.
pub(crate) const SUBTREE: &str = concat!(
    subtree_walk!("id = :id"),
    "SELECT id, created_by, depth, origin, created_at, ended_at FROM subtree ORDER BY seq"
);

/// `id` and every descendant, created or spawned, at any depth, in the order recorded.
pub(crate) fn subtree(conn: &Connection, id: &str) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(SUBTREE)?;
    let rows = stmt.query_map(named_params! { ":id": id }, RawSession::from_row)?;
    collect(rows)
}

/// One row of a tree view: the session, its stored label (if any) and its posture row.
pub(crate) struct TreeRow {
    pub(crate) session: Session,
    pub(crate) label: Option<Label>,
    pub(crate) posture: Option<Posture>,
}

/// A tree view's columns after the [`subtree_walk!`]: the session, its label and its posture
/// row, each found by primary key, in the order recorded.
macro_rules! tree_view {
    ($anchor:literal) => {
        concat!(
            subtree_walk!($anchor),
            "SELECT subtree.id, subtree.created_by, subtree.depth, subtree.origin,
                    subtree.created_at, subtree.ended_at, l.taint, l.untrusted,
                    p.session_id IS NOT NULL, ",
            posture_columns!(),
            "  FROM subtree
               LEFT JOIN labels AS l ON l.session_id = subtree.id
               LEFT JOIN postures AS p ON p.session_id = subtree.id
              ORDER BY subtree.seq"
        )
    };
}

/// The subtree of a session for a tree view, in one statement (one snapshot).
pub(crate) const TREE: &str = tree_view!("id = :id");

/// Every root's subtree for a tree view: the whole ledger, in one statement.
pub(crate) const FOREST: &str = tree_view!("created_by IS NULL");

/// The subtree of `id` (or with `None`, every session) with labels and postures.
pub(crate) fn tree(conn: &Connection, id: Option<&str>) -> Result<Vec<TreeRow>> {
    let mut stmt = conn.prepare_cached(if id.is_some() { TREE } else { FOREST })?;
    let params = match id {
        Some(id) => vec![(":id", id)],
        None => Vec::new(),
    };
    let rows = stmt.query_map(params.as_slice(), |row| {
        let has_posture: bool = row.get(8)?;
        Ok((
            RawSession::from_row(row)?,
            row.get::<_, Option<String>>(6)?,
            row.get::<_, Option<bool>>(7)?,
            if has_posture {
                Some(RawPosture::from_row(row, 9)?)
            } else {
                None
            },
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (raw, taint, untrusted, posture) = row?;
        let session = raw.into_session()?;
        let label = match (taint, untrusted) {
            (Some(taint), Some(untrusted)) => Some(Label {
                taint: parse_taint(&session.id, &taint)?,
                untrusted,
            }),
            _ => None,
        };
        out.push(TreeRow {
            label,
            posture: posture.map(RawPosture::into_posture).transpose()?,
            session,
        });
    }
    Ok(out)
}
