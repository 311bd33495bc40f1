//! The tree one level at a time on PostgreSQL: a page of the roots, or of one session's
//! children.
//!
//! Which label a session that is not materialized shows is the sessions concept's.

use super::columns::{grant_marks, posture_columns, session_columns, tree_row_of};
use super::Conn;
use crate::error::Result;
use crate::model::Id;
use crate::storage::{LevelPage, LevelReads, LevelRow};

/// A page of one level: the sessions `$level` selects, the next `$limit` in
/// `sessions_by_creator`'s order (`created_by`, `created_at`), ties by `seq`, found in a
/// subquery so that the joins run for the page's rows only; then each one's label and posture
/// row, joined `LATERAL` with `OFFSET 0` (which PostgreSQL never flattens, so they are key
/// searches whatever the planner guesses), and whether `sessions_by_creator` holds a child of
/// it. The page after a session starts from that session's `created_at` (an index condition)
/// and its `seq` among equal times, both found by primary key.
macro_rules! level_page {
    ($level:literal, $now:literal) => {
        concat!(
            "SELECT ",
            session_columns!(),
            ", l.taint, l.untrusted, ",
            posture_columns!(),
            ", ",
            grant_marks!($now),
            ",
                    EXISTS (SELECT 1 FROM sessions AS c WHERE c.created_by = s.id) AS has_children
               FROM (SELECT * FROM sessions WHERE ",
            $level,
            "
                      ORDER BY created_at, seq LIMIT $1) AS s
               LEFT JOIN LATERAL (SELECT * FROM labels WHERE session_id = s.id OFFSET 0) AS l
                      ON true
               LEFT JOIN LATERAL (SELECT * FROM postures WHERE session_id = s.id OFFSET 0) AS p
                      ON true
              ORDER BY s.created_at, s.seq"
        )
    };
}

/// The first page of the roots.
pub(super) const ROOTS: &str = level_page!("created_by IS NULL", "$2");

/// The page of the roots after the root `$2`.
pub(super) const ROOTS_AFTER: &str = level_page!(
    "created_by IS NULL
                        AND created_at >= (SELECT created_at FROM sessions
                                            WHERE id = $2 AND created_by IS NULL)
                        AND (created_at, seq) > (SELECT created_at, seq FROM sessions
                                                  WHERE id = $2 AND created_by IS NULL)",
    "$3"
);

/// The first page of the children of `$2`.
pub(super) const CHILDREN: &str = level_page!("created_by = $2", "$3");

/// The page of the children of `$2` after its child `$3`.
pub(super) const CHILDREN_AFTER: &str = level_page!(
    "created_by = $2
                        AND created_at >= (SELECT created_at FROM sessions
                                            WHERE id = $3 AND created_by = $2)
                        AND (created_at, seq) > (SELECT created_at, seq FROM sessions
                                                  WHERE id = $3 AND created_by = $2)",
    "$4"
);

impl LevelReads for Conn<'_> {
    fn level(&mut self, page: LevelPage<'_>) -> Result<Vec<LevelRow>> {
        let limit = i64::from(page.limit);
        let now = page.now;
        let rows = match (page.parent.map(Id::as_str), page.after.map(Id::as_str)) {
            (None, None) => self.rows(ROOTS, &[&limit, &now])?,
            (None, Some(after)) => self.rows(ROOTS_AFTER, &[&limit, &after, &now])?,
            (Some(parent), None) => self.rows(CHILDREN, &[&limit, &parent, &now])?,
            (Some(parent), Some(after)) => {
                self.rows(CHILDREN_AFTER, &[&limit, &parent, &after, &now])?
            }
        };
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(LevelRow {
                has_children: row.try_get("has_children")?,
                row: tree_row_of(row)?,
            });
        }
        Ok(out)
    }
}
