//! The `archives` and `archived_sessions` tables, the rows of one part of the ledger as an
//! archive takes them, and their removal, which the triggers of V15 allow only behind an
//! archive row (contract C42).
//!
//! What goes and when is the archive concept's: this file reads, stores and removes.

use rusqlite::{named_params, OptionalExtension, Row as SqlRow};

use super::columns::time;
use super::sessions::subtree_walk;
use super::transfer::table_rows;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::storage::{
    ArchiveReads, ArchiveRow, ArchiveWrites, ArchivedSession, Part, Row, Table, TreeNode,
};

/// The columns [`archive_of`] reads.
macro_rules! archive_columns {
    () => {
        "a.archive, a.file, a.sha256, a.trail_size, a.trail_hash, a.log_size, a.trees, \
         a.sessions, a.made_at, a.made_by"
    };
}

/// Every archive, oldest first.
pub(super) const ARCHIVES: &str = concat!(
    "SELECT ",
    archive_columns!(),
    " FROM archives AS a ORDER BY a.archive"
);

/// The newest archive, by one descent of the key.
pub(super) const LAST_ARCHIVE: &str = concat!(
    "SELECT ",
    archive_columns!(),
    " FROM archives AS a WHERE a.archive = (SELECT max(archive) FROM archives)"
);

/// Where one session went, by the key of `archived_sessions`.
pub(super) const ARCHIVED_SESSION: &str = concat!(
    "SELECT s.id, s.tree, ",
    archive_columns!(),
    " FROM archived_sessions AS s JOIN archives AS a ON a.archive = s.archive WHERE s.id = :id"
);

/// The roots that began and ended before the cut-off, through `sessions_by_creator` (roots
/// have no creator), oldest first.
pub(super) const ROOTS_ENDED_BEFORE: &str =
    "SELECT seq, id FROM sessions INDEXED BY sessions_by_creator
      WHERE created_by IS NULL AND created_at < :before AND ended_at < :before
      ORDER BY created_at, seq";

pub(super) const APPEND_ARCHIVE: &str = "INSERT INTO archives
         (archive, file, sha256, trail_size, trail_hash, log_size, trees, sessions, made_at,
          made_by)
     VALUES (:archive, :file, :sha256, :trail_size, :trail_hash, :log_size, :trees, :sessions,
             :made_at, :made_by)";

/// A tree's sessions, deepest first, so that each leaves before its creator.
pub(super) const TREE_SESSIONS: &str = concat!(
    subtree_walk!("id = :root"),
    "SELECT id FROM subtree ORDER BY depth DESC, seq DESC"
);

pub(super) const ARCHIVE_SESSION: &str =
    "INSERT INTO archived_sessions (id, tree, archive) VALUES (:id, :tree, :archive)";

/// What leaves with a session, each by the key of its table, in the order the references
/// allow: what names the session first, the session last.
pub(super) const REMOVE_SESSION: [&str; 5] = [
    "DELETE FROM override_scopes WHERE session_id = :id",
    "DELETE FROM command_patterns WHERE session_id = :id",
    "DELETE FROM postures WHERE session_id = :id",
    "DELETE FROM labels WHERE session_id = :id",
    "DELETE FROM sessions WHERE id = :id",
];

/// The trail's rows in a range, each by its table's key (the decision log by
/// `decision_log_by_batch`), in the order the references allow.
pub(super) const REMOVE_CHECKPOINTS: &str =
    "DELETE FROM checkpoints WHERE seq > :after AND seq <= :upto";
pub(super) const REMOVE_LOG: &str =
    "DELETE FROM decision_log WHERE batch > :after AND batch <= :upto RETURNING decision";
pub(super) const REMOVE_DECISION: &str = "DELETE FROM decisions WHERE id = :id";
/// The oldest positions of batches up to a boundary, at most `:limit`, by
/// `decision_log_by_batch`.
pub(super) const REMOVE_OLDEST_LOG: &str = "DELETE FROM decision_log
      WHERE seq IN (SELECT seq FROM decision_log WHERE batch <= :upto
                     ORDER BY batch, seq LIMIT :limit)
  RETURNING decision";
pub(super) const REMOVE_AUDIT: &str = "DELETE FROM audit WHERE seq > :after AND seq <= :upto";

/// The nodes of one level wholly left of the boundary's frontier, at most `:limit`.
pub(super) const PRUNE_LEVEL: &str = "DELETE FROM audit_tree
      WHERE level = :level AND idx IN (SELECT idx FROM audit_tree
                                        WHERE level = :level AND idx < :below
                                        ORDER BY idx LIMIT :limit)";

/// The nodes of one level in an index range, by the key.
pub(super) const NODES_IN: &str = "SELECT idx, hash FROM audit_tree
      WHERE level = :level AND idx >= :from AND idx < :to ORDER BY idx";

/// The lowest seq of the trail still stored: one descent of the key.
pub(super) const FIRST_AUDIT_SEQ: &str = "SELECT min(seq) FROM audit";

/// The log's last position in batches up to a boundary, or the newest archive's.
pub(super) const LOG_SIZE_AT: &str = "SELECT coalesce(
         (SELECT max(seq) FROM decision_log WHERE batch <= :boundary),
         (SELECT log_size FROM archives WHERE archive = (SELECT max(archive) FROM archives)),
         0)";

/// How many sessions left with one archive, through `archived_sessions_by_archive`.
pub(super) const ARCHIVED_COUNT: &str =
    "SELECT count(*) FROM archived_sessions WHERE archive = :archive";

/// The highest level a node can have (`audit_tree.level`'s CHECK).
const TOP_LEVEL: u8 = 62;

fn archive_of(row: &SqlRow<'_>) -> Result<ArchiveRow> {
    let count = |column: &str| -> Result<u64> {
        let n: i64 = row.get(column)?;
        u64::try_from(n).map_err(|_| Corruption::new(format!("archives.{column} holds {n}")).into())
    };
    Ok(ArchiveRow {
        archive: row.get("archive")?,
        file: row.get("file")?,
        sha256: row.get("sha256")?,
        trail_size: count("trail_size")?,
        trail_hash: row.get("trail_hash")?,
        log_size: count("log_size")?,
        trees: count("trees")?,
        sessions: count("sessions")?,
        made_at: time("archives.made_at", &row.get::<_, String>("made_at")?)?,
        made_by: row.get("made_by")?,
    })
}

/// A size or index as SQLite stores it.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The statement that reads `table`'s rows in `part`; the names are the constants of
/// [`Table`], so nothing is bound but the part's values.
fn part_sql(table: Table, part: Part<'_>) -> Result<String> {
    let names: Vec<&str> = table.columns().iter().map(|(name, _)| *name).collect();
    let select = format!("SELECT {} FROM {}", names.join(", "), table.name());
    let order = table.key();
    Ok(match (part, table) {
        (Part::Whole, _) => format!("{select} ORDER BY {order}"),
        (Part::Trees(_), Table::Sessions) => {
            format!(
                "{} {select} WHERE id IN (SELECT id FROM subtree) ORDER BY {order}",
                subtree_walk!("id = :root")
            )
        }
        (
            Part::Trees(_),
            Table::Labels | Table::Postures | Table::CommandPatterns | Table::OverrideScopes,
        ) => format!(
            "{} {select} WHERE session_id IN (SELECT id FROM subtree) ORDER BY {order}",
            subtree_walk!("id = :root")
        ),
        (Part::Trail { .. }, Table::Audit | Table::Checkpoints) => {
            format!("{select} WHERE seq > :after AND seq <= :upto ORDER BY {order}")
        }
        (Part::Trail { .. }, Table::DecisionLog) => {
            format!("{select} WHERE batch > :after AND batch <= :upto ORDER BY {order}")
        }
        (Part::Trail { .. }, Table::Decisions) => format!(
            "{select} WHERE id IN (SELECT decision FROM decision_log
                                    WHERE batch > :after AND batch <= :upto) ORDER BY {order}"
        ),
        (part, table) => {
            return Err(Corruption::new(format!(
                "an archive takes no rows of {} as {part:?}",
                table.name()
            ))
            .into())
        }
    })
}

impl ArchiveReads for Conn<'_> {
    fn archives(&mut self) -> Result<Vec<ArchiveRow>> {
        let mut stmt = self.conn.prepare_cached(ARCHIVES)?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(archive_of(row)?);
        }
        Ok(out)
    }

    fn last_archive(&mut self) -> Result<Option<ArchiveRow>> {
        let mut stmt = self.conn.prepare_cached(LAST_ARCHIVE)?;
        stmt.query_row([], |row| Ok(archive_of(row)))
            .optional()?
            .transpose()
    }

    fn archived_session(&mut self, id: &str) -> Result<Option<ArchivedSession>> {
        let mut stmt = self.conn.prepare_cached(ARCHIVED_SESSION)?;
        stmt.query_row(named_params! { ":id": id }, |row| {
            Ok((|| {
                Ok(ArchivedSession {
                    id: row.get("id")?,
                    tree: row.get("tree")?,
                    archive: archive_of(row)?,
                })
            })())
        })
        .optional()?
        .transpose()
    }

    fn roots_ended_before(
        &mut self,
        before: chrono::DateTime<chrono::Utc>,
        each: &mut dyn FnMut(i64, String) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(ROOTS_ENDED_BEFORE)?;
        let mut rows = stmt.query(named_params! { ":before": format_ts(before) })?;
        while let Some(row) = rows.next()? {
            each(row.get("seq")?, row.get("id")?)?;
        }
        Ok(())
    }

    fn part_rows(
        &mut self,
        table: Table,
        part: Part<'_>,
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let sql = part_sql(table, part)?;
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut read = |rows: &mut rusqlite::Rows<'_>| table_rows(table, rows, each);
        match part {
            Part::Whole => read(&mut stmt.query([])?),
            Part::Trees(roots) => {
                for root in roots {
                    read(&mut stmt.query(named_params! { ":root": root })?)?;
                }
                Ok(())
            }
            Part::Trail { after, upto } => read(&mut stmt.query(named_params! {
                ":after": int(after),
                ":upto": int(upto),
            })?),
        }
    }

    fn archive_nodes(&mut self, from: u64, to: u64) -> Result<Vec<TreeNode>> {
        let mut stmt = self.conn.prepare_cached(NODES_IN)?;
        let mut out = Vec::new();
        for level in 0..=TOP_LEVEL {
            // Left of `to` wholly; not left of `from`'s frontier (what left with it).
            let first = (from >> (level + 1)) << 1;
            let end = to >> level;
            if end == 0 {
                break;
            }
            if first >= end {
                continue;
            }
            let mut rows = stmt.query(named_params! {
                ":level": level,
                ":from": int(first),
                ":to": int(end),
            })?;
            while let Some(row) = rows.next()? {
                let idx: i64 = row.get("idx")?;
                let hash: Vec<u8> = row.get("hash")?;
                let hash: [u8; 32] = hash.try_into().map_err(|_| {
                    Corruption::new(format!("audit_tree node ({level}, {idx}) is not 32 bytes"))
                })?;
                out.push((level, u64::try_from(idx).unwrap_or(0), hash));
            }
        }
        Ok(out)
    }

    fn first_audit_seq(&mut self) -> Result<Option<i64>> {
        let mut stmt = self.conn.prepare_cached(FIRST_AUDIT_SEQ)?;
        Ok(stmt.query_row([], |row| row.get(0))?)
    }

    fn log_size_at(&mut self, boundary: u64) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(LOG_SIZE_AT)?;
        let n: i64 = stmt.query_row(named_params! { ":boundary": int(boundary) }, |row| {
            row.get(0)
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn archived_count(&mut self, archive: i64) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(ARCHIVED_COUNT)?;
        let n: i64 = stmt.query_row(named_params! { ":archive": archive }, |row| row.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

impl ArchiveWrites for Tx<'_> {
    fn append_archive(&mut self, row: &ArchiveRow) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(APPEND_ARCHIVE)?;
        stmt.execute(named_params! {
            ":archive": row.archive,
            ":file": row.file,
            ":sha256": row.sha256,
            ":trail_size": int(row.trail_size),
            ":trail_hash": row.trail_hash,
            ":log_size": int(row.log_size),
            ":trees": int(row.trees),
            ":sessions": int(row.sessions),
            ":made_at": format_ts(row.made_at),
            ":made_by": row.made_by,
        })?;
        Ok(())
    }

    fn remove_trees(&mut self, archive: i64, roots: &[String]) -> Result<u64> {
        let conn = self.conn();
        let mut sessions = conn.prepare_cached(TREE_SESSIONS)?;
        let mut archived = conn.prepare_cached(ARCHIVE_SESSION)?;
        let mut removals = REMOVE_SESSION
            .iter()
            .map(|sql| conn.prepare_cached(sql))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut count = 0;
        for root in roots {
            let ids = sessions
                .query_map(named_params! { ":root": root }, |row| {
                    row.get::<_, String>(0)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            for id in &ids {
                archived
                    .execute(named_params! { ":id": id, ":tree": root, ":archive": archive })?;
                for removal in &mut removals {
                    removal.execute(named_params! { ":id": id })?;
                }
                count += 1;
            }
        }
        Ok(count)
    }

    fn remove_trail(&mut self, after: u64, upto: u64) -> Result<u64> {
        let conn = self.conn();
        let range = named_params! { ":after": int(after), ":upto": int(upto) };
        conn.prepare_cached(REMOVE_CHECKPOINTS)?.execute(range)?;
        let decisions = conn
            .prepare_cached(REMOVE_LOG)?
            .query_map(range, |row| row.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut remove = conn.prepare_cached(REMOVE_DECISION)?;
        for id in decisions {
            remove.execute(named_params! { ":id": id })?;
        }
        let rows = conn.prepare_cached(REMOVE_AUDIT)?.execute(range)?;
        Ok(rows as u64)
    }

    fn remove_records(&mut self, boundary: u64, limit: u32) -> Result<u64> {
        let conn = self.conn();
        let decisions = conn
            .prepare_cached(REMOVE_OLDEST_LOG)?
            .query_map(
                named_params! { ":upto": int(boundary), ":limit": i64::from(limit) },
                |row| row.get::<_, i64>(0),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut remove = conn.prepare_cached(REMOVE_DECISION)?;
        for id in &decisions {
            remove.execute(named_params! { ":id": id })?;
        }
        Ok(decisions.len() as u64)
    }

    fn prune_tree(&mut self, boundary: u64, limit: u32) -> Result<u64> {
        let mut stmt = self.conn().prepare_cached(PRUNE_LEVEL)?;
        let mut removed = 0u64;
        for level in 0..TOP_LEVEL {
            // A node leaves when its parent ends at or before the boundary.
            let below = (boundary >> (level + 1)) << 1;
            if below == 0 {
                break;
            }
            let left = u64::from(limit).saturating_sub(removed);
            if left == 0 {
                break;
            }
            removed += stmt.execute(named_params! {
                ":level": level,
                ":below": int(below),
                ":limit": int(left),
            })? as u64;
        }
        Ok(removed)
    }
}
