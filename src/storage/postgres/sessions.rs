//! The `sessions` table and the walks over `created_by`, on PostgreSQL.
//!
//! The bounds on creating and the recording of spawned ids are the sessions concept's.

use super::columns::{
    depth, grant_marks, int, level, posture_columns, session_columns, session_of, tree_row_of, Time,
};
use super::writes::Held;
use super::{Conn, Tx};
use crate::error::Result;
use crate::model::{Id, Session};
use crate::storage::{
    CreationCounts, CreationFacts, NewSession, SessionReads, SessionWrites, TreeRow, TreeTop,
};

/// The session with this id, ended or not: a primary-key search.
pub(super) const SESSION: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions AS s WHERE s.id = $1"
);

/// The creators of a session, nearest first, up to its root. Each step is a search of the
/// creator by primary key; the anchor is a scalar subquery by key, so no planner joins it.
pub(super) const ANCESTORS: &str = concat!(
    "WITH RECURSIVE ancestors (hops, id) AS (
         SELECT 1, (SELECT created_by FROM sessions WHERE id = $1)
         UNION ALL
         SELECT ancestors.hops + 1, (SELECT created_by FROM sessions WHERE id = ancestors.id)
           FROM ancestors WHERE ancestors.id IS NOT NULL
     )
     SELECT ",
    session_columns!(),
    " FROM ancestors JOIN sessions AS s ON s.id = ancestors.id ORDER BY ancestors.hops"
);

/// The sessions a session created or spawned, in the order the ledger recorded them.
pub(super) const CHILDREN: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions AS s WHERE s.created_by = $1 ORDER BY s.seq"
);

/// The `WITH` clause that walks down `created_by` from the session `$anchor` names: `subtree`
/// holds it and every descendant, created or spawned, at any depth, with every column of
/// `sessions`. Each step searches the children of the rows found so far through
/// `sessions_by_creator`.
macro_rules! subtree_walk {
    ($anchor:literal) => {
        concat!(
            "WITH RECURSIVE subtree AS (
                 SELECT seq, id, created_by, depth, origin, created_at, ended_at
                   FROM sessions WHERE ",
            $anchor,
            "
                 UNION ALL
                 SELECT s.seq, s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at
                   FROM subtree JOIN sessions AS s ON s.created_by = subtree.id
             ) "
        )
    };
}
pub(super) use subtree_walk;

/// A session and every descendant, in the order recorded.
pub(super) const SUBTREE: &str = concat!(
    subtree_walk!("id = $1"),
    "SELECT ",
    session_columns!(),
    " FROM subtree AS s ORDER BY s.seq"
);

/// A tree view's columns after the [`subtree_walk!`]: the session, its label and its posture
/// row, joined as `$joins` says, and its grant marks at `$now`, in the order recorded.
macro_rules! tree_view {
    ($anchor:literal, $now:literal, $joins:literal) => {
        concat!(
            subtree_walk!($anchor),
            "SELECT ",
            session_columns!(),
            ", l.taint, l.untrusted, ",
            posture_columns!(),
            ", ",
            grant_marks!($now),
            "  FROM subtree AS s ",
            $joins,
            " ORDER BY s.seq"
        )
    };
}

/// The subtree of a session for a tree view, in one statement (one snapshot). Each session's
/// label and posture row is found by its primary key: each is joined `LATERAL` with
/// `OFFSET 0`, which PostgreSQL never flattens into a plain join, so a nested loop of key
/// searches is the only plan. The planner guesses any recursive walk at 1,001 rows, and with
/// plain joins it hashed the whole `labels` and `postures` tables instead of searching them
/// 1,001 times, once they were larger than that: a tree view of 111 sessions read every label
/// and posture of a 100,000-session ledger.
pub(super) const TREE: &str = tree_view!(
    "id = $1",
    "$2",
    "LEFT JOIN LATERAL (SELECT * FROM labels WHERE session_id = s.id OFFSET 0) AS l ON true
     LEFT JOIN LATERAL (SELECT * FROM postures WHERE session_id = s.id OFFSET 0) AS p ON true"
);

/// Every root's subtree for a tree view: the whole ledger, in one statement. It reads every
/// row of the three tables, so the planner may hash them.
pub(super) const FOREST: &str = tree_view!(
    "created_by IS NULL",
    "$1",
    "LEFT JOIN labels AS l ON l.session_id = s.id
     LEFT JOIN postures AS p ON p.session_id = s.id"
);

/// What a create reads about its creator and its new id, in one statement and one row: the
/// creator's session row (all NULL when it is not recorded), whether the new id is taken, what
/// the creation bounds count of the creator's created children (how many are live, from the
/// partial index `sessions_live_children`, which holds only those; how many were created at or
/// after `$3`, a range of `sessions_by_creator`), and the posture level the creator holds in
/// the current epoch, which the child will inherit. Primary-key searches and two index ranges.
pub(super) const CREATION_FACTS: &str = concat!(
    "SELECT ",
    session_columns!(),
    ",
            EXISTS (SELECT 1 FROM sessions WHERE id = $2) AS taken,
            (SELECT count(*) FROM sessions
              WHERE created_by = $1 AND origin = 'created' AND ended_at IS NULL) AS live,
            (SELECT count(*) FROM sessions
              WHERE created_by = $1 AND origin = 'created' AND created_at >= $3) AS in_window,
            (SELECT posture FROM postures
              WHERE session_id = $1 AND epoch = (SELECT max(epoch) FROM epochs))
              AS creator_posture
       FROM (SELECT 1) AS one LEFT JOIN sessions AS s ON s.id = $1"
);

fn sessions(conn: &mut Conn<'_>, sql: &'static str, id: Id<'_>) -> Result<Vec<Session>> {
    conn.rows(sql, &[&id.as_str()])?
        .iter()
        .map(session_of)
        .collect()
}

impl SessionReads for Conn<'_> {
    fn session(&mut self, id: Id<'_>) -> Result<Option<Session>> {
        self.row(SESSION, &[&id.as_str()])?
            .as_ref()
            .map(session_of)
            .transpose()
    }

    fn ancestors(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self, ANCESTORS, id)
    }

    fn children(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self, CHILDREN, id)
    }

    fn subtree(&mut self, id: Id<'_>) -> Result<Vec<Session>> {
        sessions(self, SUBTREE, id)
    }

    fn tree(&mut self, top: TreeTop<'_>, now: Time) -> Result<Vec<TreeRow>> {
        let rows = match top {
            TreeTop::Session(id) => self.rows(TREE, &[&id.as_str(), &now])?,
            TreeTop::Roots => self.rows(FOREST, &[&now])?,
        };
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(tree_row_of(row)?);
        }
        Ok(out)
    }

    fn creation_facts(
        &mut self,
        creator: Id<'_>,
        child: Id<'_>,
        since: Time,
    ) -> Result<CreationFacts> {
        let row = self
            .row(
                CREATION_FACTS,
                &[&creator.as_str(), &child.as_str(), &since],
            )?
            .ok_or_else(|| crate::error::Corruption::new("a create's read returned no row"))?;
        let count = |name: &str| -> Result<u32> {
            let n: i64 = row.try_get(name)?;
            Ok(u32::try_from(n).unwrap_or(u32::MAX))
        };
        let recorded: Option<String> = row.try_get("id")?;
        let posture: Option<String> = row.try_get("creator_posture")?;
        Ok(CreationFacts {
            creator: recorded.map(|_| session_of(&row)).transpose()?,
            taken: row.try_get("taken")?,
            counts: CreationCounts {
                live: count("live")?,
                in_window: count("in_window")?,
            },
            creator_posture: posture.map(|p| level(creator.as_str(), &p)).transpose()?,
        })
    }
}

/// Records a session.
pub(super) const INSERT: &str =
    "INSERT INTO sessions (id, created_by, depth, origin, created_at) VALUES ($1, $2, $3, $4, $5)";

/// Ends a live session.
pub(super) const END: &str = "UPDATE sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL";

/// Ends a session and every live session reached from it through spawned sessions only.
pub(super) const END_WITH_SPAWNED: &str = "WITH RECURSIVE spawned (id) AS (
         SELECT id FROM sessions WHERE id = $1
         UNION ALL
         SELECT s.id FROM spawned JOIN sessions AS s ON s.created_by = spawned.id
          WHERE s.origin = 'spawned'
     )
     UPDATE sessions SET ended_at = $2
      WHERE id IN (SELECT id FROM spawned) AND ended_at IS NULL
     RETURNING id, depth";

impl SessionWrites for Tx<'_> {
    /// Held, and written with the transaction's next statement (`writes.rs`).
    fn insert_session(&mut self, new: &NewSession<'_>) -> Result<()> {
        self.read.held.push(Held::Session {
            id: new.id.as_str().to_owned(),
            created_by: new.created_by.map(|c| c.as_str().to_owned()),
            depth: int(new.depth),
            origin: new.origin.as_str(),
            at: new.at,
        });
        Ok(())
    }

    fn end_session(&mut self, id: Id<'_>, at: Time) -> Result<bool> {
        Ok(self.read.execute(END, &[&id.as_str(), &at])? == 1)
    }

    fn end_with_spawned(&mut self, id: Id<'_>, at: Time) -> Result<Vec<String>> {
        let rows = self.read.rows(END_WITH_SPAWNED, &[&id.as_str(), &at])?;
        let mut ended = Vec::with_capacity(rows.len());
        for row in &rows {
            let ended_id: String = row.try_get("id")?;
            ended.push((depth(&ended_id, row.try_get("depth")?)?, ended_id));
        }
        ended.sort();
        Ok(ended.into_iter().map(|(_, id)| id).collect())
    }
}
