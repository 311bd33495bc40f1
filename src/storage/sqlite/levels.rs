//! The tree one level at a time: a page of the roots, or of one session's children.
//!
//! Which label a session that is not materialized shows is the sessions concept's.

use super::columns::{grant_marks, posture_columns, tree_row_of};
use super::Conn;
use crate::clock::format_ts;
use crate::error::Result;
use crate::model::Id;
use crate::storage::{LevelPage, LevelReads, LevelRow};

/// A page of one level: the sessions `$level` selects from `sessions AS s`, in the order of
/// `sessions_by_creator` (`created_by`, `created_at`, and the rowid `seq` it ends with), so the
/// page is the index's next `:limit` entries and nothing is sorted; each with its label and
/// posture row by primary key, and whether `sessions_by_creator` holds a child of it. The
/// step to the page after a session is a range on the same index from that session's
/// (`created_at`, `seq`), found by primary key.
macro_rules! level_page {
    ($level:literal) => {
        concat!(
            "SELECT s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at,
                    l.taint, l.untrusted, ",
            posture_columns!(),
            ", ",
            grant_marks!("s", ":now"),
            ",
                    EXISTS (SELECT 1 FROM sessions AS c INDEXED BY sessions_by_creator
                             WHERE c.created_by = s.id) AS has_children
               FROM sessions AS s INDEXED BY sessions_by_creator
               LEFT JOIN labels AS l ON l.session_id = s.id
               LEFT JOIN postures AS p ON p.session_id = s.id
              WHERE ",
            $level,
            "
              ORDER BY s.created_at, s.seq
              LIMIT :limit"
        )
    };
}

/// The first page of the roots.
pub(super) const ROOTS: &str = level_page!("s.created_by IS NULL");

/// The page of the roots after the root `:after`.
pub(super) const ROOTS_AFTER: &str = level_page!(
    "s.created_by IS NULL
                AND (s.created_at, s.seq) > (SELECT a.created_at, a.seq FROM sessions AS a
                                              WHERE a.id = :after AND a.created_by IS NULL)"
);

/// The first page of the children of `:parent`.
pub(super) const CHILDREN: &str = level_page!("s.created_by = :parent");

/// The page of the children of `:parent` after its child `:after`.
pub(super) const CHILDREN_AFTER: &str = level_page!(
    "s.created_by = :parent
                AND (s.created_at, s.seq) > (SELECT a.created_at, a.seq FROM sessions AS a
                                              WHERE a.id = :after AND a.created_by = :parent)"
);

impl LevelReads for Conn<'_> {
    fn level(&mut self, page: LevelPage<'_>) -> Result<Vec<LevelRow>> {
        let parent = page.parent.map(Id::as_str);
        let after = page.after.map(Id::as_str);
        let now = format_ts(page.now);
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> =
            vec![(":limit", &page.limit), (":now", &now)];
        let sql = match (&parent, &after) {
            (None, None) => ROOTS,
            (None, Some(_)) => ROOTS_AFTER,
            (Some(_), None) => CHILDREN,
            (Some(_), Some(_)) => CHILDREN_AFTER,
        };
        if let Some(parent) = &parent {
            params.push((":parent", parent));
        }
        if let Some(after) = &after {
            params.push((":after", after));
        }
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params.as_slice())?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(LevelRow {
                has_children: row.get("has_children")?,
                row: tree_row_of(row)?,
            });
        }
        Ok(out)
    }
}
