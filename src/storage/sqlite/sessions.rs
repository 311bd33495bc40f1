//! The `sessions` table and the walks over `created_by`.
//!
//! The bounds on creating and the recording of spawned ids are the sessions concept's.

use chrono::{DateTime, Utc};
use rusqlite::named_params;

use super::columns::{grant_marks, posture_columns, session_columns, session_of, tree_row_of};
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::Result;
use crate::model::{Id, Session};
use crate::storage::{
    CreationCounts, CreationFacts, NewSession, PostureReads, SessionReads, SessionWrites, TreeRow,
    TreeTop,
};

/// Runs a statement returning sessions.
fn sessions(conn: &rusqlite::Connection, sql: &str, id: Id<'_>) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(session_of(row)?);
    }
    Ok(out)
}

/// The session with this id, ended or not.
pub(super) const SESSION: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE id = :id"
);

/// The creators of a session, nearest first, up to its root: one primary-key search per level.
pub(super) const ANCESTORS: &str = concat!(
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

/// The sessions a session created or spawned, in the order the ledger recorded them.
pub(super) const CHILDREN: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions INDEXED BY sessions_by_creator WHERE created_by = :id ORDER BY seq"
);

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
pub(super) use subtree_walk;

/// A session and every descendant, created or spawned, at any depth, in the order recorded.
pub(super) const SUBTREE: &str = concat!(
    subtree_walk!("id = :id"),
    "SELECT id, created_by, depth, origin, created_at, ended_at FROM subtree ORDER BY seq"
);

/// A tree view's columns after the [`subtree_walk!`]: the session, its label and its posture
/// row, each found by primary key, and its grant marks at `:now`, in the order recorded.
macro_rules! tree_view {
    ($anchor:literal) => {
        concat!(
            subtree_walk!($anchor),
            "SELECT subtree.id, subtree.created_by, subtree.depth, subtree.origin,
                    subtree.created_at, subtree.ended_at, l.taint, l.untrusted, ",
            posture_columns!(),
            ", ",
            grant_marks!("subtree", ":now"),
            "  FROM subtree
               LEFT JOIN labels AS l ON l.session_id = subtree.id
               LEFT JOIN postures AS p ON p.session_id = subtree.id
              ORDER BY subtree.seq"
        )
    };
}

/// The subtree of a session for a tree view, in one statement (one snapshot).
pub(super) const TREE: &str = tree_view!("id = :id");

/// Every root's subtree for a tree view: the whole ledger, in one statement.
pub(super) const FOREST: &str = tree_view!("created_by IS NULL");

/// What the creation bounds count about a creator's created children, in one statement: how
/// many are live (from the partial index `sessions_live_children`, which holds only live ones,
/// so the count never reads the children that ended), and how many were created at or after
/// `since` (a range of `sessions_by_creator`).
pub(super) const CREATION_COUNTS: &str =
    "SELECT (SELECT count(*) FROM sessions INDEXED BY sessions_live_children
              WHERE created_by = :creator AND origin = 'created' AND ended_at IS NULL) AS live,
            (SELECT count(*) FROM sessions INDEXED BY sessions_by_creator
              WHERE created_by = :creator AND origin = 'created' AND created_at >= :since)
              AS in_window";

impl SessionReads for Conn<'_> {
    fn session(&mut self, id: Id<'_>) -> Result<Option<Session>> {
        let mut stmt = self.conn.prepare_cached(SESSION)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        rows.next()?.map(session_of).transpose()
    }

    fn ancestors(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self.conn, ANCESTORS, id)
    }

    fn children(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self.conn, CHILDREN, id)
    }

    fn subtree(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self.conn, SUBTREE, id)
    }

    fn tree(&mut self, top: TreeTop<'_>, now: DateTime<Utc>) -> Result<Vec<TreeRow>> {
        let now = format_ts(now);
        let (sql, params) = match top {
            TreeTop::Session(id) => (TREE, vec![(":id", id.as_str()), (":now", now.as_str())]),
            TreeTop::Roots => (FOREST, vec![(":now", now.as_str())]),
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params.as_slice())?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(tree_row_of(row)?);
        }
        Ok(out)
    }

    fn creation_facts(
        &mut self,
        creator: Id<'_>,
        child: Id<'_>,
        since: DateTime<Utc>,
    ) -> Result<CreationFacts> {
        // SQLite runs in the process: four statements cost what one would.
        let recorded = self.session(creator)?;
        let taken = self.session(child)?.is_some();
        let mut stmt = self.conn.prepare_cached(CREATION_COUNTS)?;
        let params = named_params! { ":creator": creator.as_str(), ":since": format_ts(since) };
        let counts = stmt.query_row(params, |row| {
            Ok(CreationCounts {
                live: row.get("live")?,
                in_window: row.get("in_window")?,
            })
        })?;
        let posture = self.posture(creator)?;
        Ok(CreationFacts {
            creator: recorded,
            taken,
            counts,
            creator_posture: posture.filter(|p| p.current).map(|p| p.level),
        })
    }
}

/// Records a session.
pub(super) const INSERT: &str = "INSERT INTO sessions (id, created_by, depth, origin, created_at)
     VALUES (:id, :created_by, :depth, :origin, :now)";

/// Ends a live session.
pub(super) const END: &str =
    "UPDATE sessions SET ended_at = :now WHERE id = :id AND ended_at IS NULL";

/// Ends a session and every live spawned descendant reached through spawned sessions only.
/// The walk searches children through `sessions_by_creator` (as [`subtree_walk!`] does) and
/// the update finds each row by its `seq`.
pub(super) const END_WITH_SPAWNED: &str = "WITH RECURSIVE spawned (seq, id) AS (
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

impl SessionWrites for Tx<'_> {
    fn insert_session(&mut self, new: &NewSession<'_>) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(INSERT)?;
        stmt.execute(named_params! {
            ":id": new.id.as_str(),
            ":created_by": new.created_by.map(Id::as_str),
            ":depth": new.depth,
            ":origin": new.origin.as_str(),
            ":now": format_ts(new.at),
        })?;
        Ok(())
    }

    fn end_session(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<bool> {
        let mut stmt = self.conn().prepare_cached(END)?;
        Ok(stmt.execute(named_params! { ":id": id.as_str(), ":now": format_ts(at) })? == 1)
    }

    fn end_with_spawned(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<Vec<String>> {
        let mut stmt = self.conn().prepare_cached(END_WITH_SPAWNED)?;
        let params = named_params! { ":id": id.as_str(), ":now": format_ts(at) };
        let rows = stmt.query_map(params, |row| {
            Ok((row.get::<_, String>("id")?, row.get::<_, i64>("depth")?))
        })?;
        let mut ended = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        ended.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok(ended.into_iter().map(|(id, _)| id).collect())
    }
}
