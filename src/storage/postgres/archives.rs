//! The `archives` and `archived_sessions` tables on PostgreSQL, the rows of one part of the
//! ledger as an archive takes them, and their removal, which the triggers of V11 allow only
//! behind an archive row (contract C42). The same statements as SQLite's, a batch per
//! statement where PostgreSQL takes arrays.
//!
//! What goes and when is the archive concept's: this file reads, stores and removes.

use chrono::{DateTime, Utc};
use postgres::Row as PgRow;

use super::transfer::select_list;
use super::{Conn, Tx};
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

pub(super) const ARCHIVES: &str = concat!(
    "SELECT ",
    archive_columns!(),
    " FROM archives AS a ORDER BY a.archive"
);

pub(super) const LAST_ARCHIVE: &str = concat!(
    "SELECT ",
    archive_columns!(),
    " FROM archives AS a WHERE a.archive = (SELECT max(archive) FROM archives)"
);

pub(super) const ARCHIVED_SESSION: &str = concat!(
    "SELECT s.id, s.tree, ",
    archive_columns!(),
    " FROM archived_sessions AS s JOIN archives AS a ON a.archive = s.archive WHERE s.id = $1"
);

/// The roots that began and ended before the cut-off, through `sessions_by_creator`.
pub(super) const ROOTS_ENDED_BEFORE: &str = "SELECT seq, id FROM sessions
      WHERE created_by IS NULL AND created_at < $1 AND ended_at < $1
      ORDER BY created_at, seq";

pub(super) const APPEND_ARCHIVE: &str = "INSERT INTO archives
         (archive, file, sha256, trail_size, trail_hash, log_size, trees, sessions, made_at,
          made_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// The sessions of the trees whose roots are in `$1` (an array), each with its tree's root:
/// a walk down `sessions_by_creator` from the roots. Each step looks up one session's
/// children (a lateral subquery that `OFFSET 0` keeps from being flattened into a join, so an
/// index lookup whatever the planner thinks of the table's size), and the statements after it
/// take the sessions by key (`= ANY(ARRAY(...))`): a batch costs its trees, never a scan of
/// the table (`tests/plans.rs` holds it).
macro_rules! trees_walk {
    () => {
        "WITH RECURSIVE subtree AS (
             SELECT id, id AS root FROM sessions WHERE id = ANY($1)
             UNION ALL
             SELECT child.id, subtree.root
               FROM subtree CROSS JOIN LATERAL
                    (SELECT s.id FROM sessions AS s WHERE s.created_by = subtree.id OFFSET 0) AS child
         ) "
    };
}

/// Trees' sessions moved out, the trees of a batch at once: their archived rows (each with
/// its tree's root), returning their ids; then, by those ids, what names them, then the
/// sessions themselves in one statement (so each creator leaves with its children). The tree
/// is walked once, by the first.
pub(super) const ARCHIVE_TREES: &str = concat!(
    trees_walk!(),
    "INSERT INTO archived_sessions (id, tree, archive) SELECT id, root, $2 FROM subtree
     RETURNING id"
);
pub(super) const REMOVE_TREES: [&str; 5] = [
    "DELETE FROM override_scopes WHERE session_id = ANY($1)",
    "DELETE FROM command_patterns WHERE session_id = ANY($1)",
    "DELETE FROM postures WHERE session_id = ANY($1)",
    "DELETE FROM labels WHERE session_id = ANY($1)",
    "DELETE FROM sessions WHERE id = ANY($1)",
];

pub(super) const REMOVE_CHECKPOINTS: &str = "DELETE FROM checkpoints WHERE seq > $1 AND seq <= $2";
pub(super) const REMOVE_LOG_AND_RECORDS: &str = "WITH gone AS (
         DELETE FROM decision_log WHERE batch > $1 AND batch <= $2 RETURNING decision)
     SELECT decision FROM gone";
pub(super) const REMOVE_DECISIONS: &str = "DELETE FROM decisions WHERE id = ANY($1)";
/// The oldest positions of batches up to a boundary, at most `$2`, by `decision_log_by_batch`.
pub(super) const REMOVE_OLDEST_LOG: &str = "WITH gone AS (
         DELETE FROM decision_log
          WHERE seq IN (SELECT seq FROM decision_log WHERE batch <= $1
                         ORDER BY batch, seq LIMIT $2)
         RETURNING decision)
     SELECT decision FROM gone";
pub(super) const REMOVE_AUDIT: &str = "DELETE FROM audit WHERE seq > $1 AND seq <= $2";

pub(super) const PRUNE_LEVEL: &str = "DELETE FROM audit_tree
      WHERE level = $1 AND idx IN (SELECT idx FROM audit_tree
                                    WHERE level = $1 AND idx < $2 ORDER BY idx LIMIT $3)";

pub(super) const NODES_IN: &str = "SELECT idx, hash FROM audit_tree
      WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx";

pub(super) const FIRST_AUDIT_SEQ: &str = "SELECT min(seq) AS seq FROM audit";

/// The log's last position in batches up to a boundary, or the newest archive's.
pub(super) const LOG_SIZE_AT: &str = "SELECT coalesce(
         (SELECT max(seq) FROM decision_log WHERE batch <= $1),
         (SELECT log_size FROM archives WHERE archive = (SELECT max(archive) FROM archives)),
         0) AS n";

pub(super) const ARCHIVED_COUNT: &str =
    "SELECT count(*) AS n FROM archived_sessions WHERE archive = $1";

/// The highest level a node can have (`audit_tree.level`'s CHECK).
const TOP_LEVEL: u8 = 62;

fn archive_of(row: &PgRow) -> Result<ArchiveRow> {
    let count = |column: &str| -> Result<u64> {
        let n: i64 = row.try_get(column)?;
        u64::try_from(n).map_err(|_| Corruption::new(format!("archives.{column} holds {n}")).into())
    };
    Ok(ArchiveRow {
        archive: row.try_get("archive")?,
        file: row.try_get("file")?,
        sha256: row.try_get("sha256")?,
        trail_size: count("trail_size")?,
        trail_hash: row.try_get("trail_hash")?,
        log_size: count("log_size")?,
        trees: count("trees")?,
        sessions: count("sessions")?,
        made_at: row.try_get("made_at")?,
        made_by: row.try_get("made_by")?,
    })
}

/// A size or index as PostgreSQL stores it.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The statement that reads `table`'s rows in `part`, with `$1` the root (trees) or `$1` and
/// `$2` the range (trail); the names are the constants of [`Table`].
fn part_sql(table: Table, part: Part<'_>) -> Result<String> {
    let select = format!("SELECT {} FROM {}", select_list(table), table.name());
    let order = table.key();
    Ok(match (part, table) {
        (Part::Whole, _) => format!("{select} ORDER BY {order}"),
        (Part::Trees(_), Table::Sessions) => format!(
            "{} {select} WHERE id = ANY(ARRAY(SELECT id FROM subtree)) ORDER BY {order}",
            trees_walk!()
        ),
        (
            Part::Trees(_),
            Table::Labels | Table::Postures | Table::CommandPatterns | Table::OverrideScopes,
        ) => format!(
            "{} {select} WHERE session_id = ANY(ARRAY(SELECT id FROM subtree)) ORDER BY {order}",
            trees_walk!()
        ),
        (Part::Trail { .. }, Table::Audit | Table::Checkpoints) => {
            format!("{select} WHERE seq > $1 AND seq <= $2 ORDER BY {order}")
        }
        (Part::Trail { .. }, Table::DecisionLog) => {
            format!("{select} WHERE batch > $1 AND batch <= $2 ORDER BY {order}")
        }
        (Part::Trail { .. }, Table::Decisions) => format!(
            "{select} WHERE id IN (SELECT decision FROM decision_log
                                    WHERE batch > $1 AND batch <= $2) ORDER BY {order}"
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
        self.rows(ARCHIVES, &[])?.iter().map(archive_of).collect()
    }

    fn last_archive(&mut self) -> Result<Option<ArchiveRow>> {
        self.row(LAST_ARCHIVE, &[])?
            .as_ref()
            .map(archive_of)
            .transpose()
    }

    fn archived_session(&mut self, id: &str) -> Result<Option<ArchivedSession>> {
        self.row(ARCHIVED_SESSION, &[&id])?
            .map(|row| {
                Ok(ArchivedSession {
                    id: row.try_get("id")?,
                    tree: row.try_get("tree")?,
                    archive: archive_of(&row)?,
                })
            })
            .transpose()
    }

    fn roots_ended_before(
        &mut self,
        before: DateTime<Utc>,
        each: &mut dyn FnMut(i64, String) -> Result<()>,
    ) -> Result<()> {
        for row in self.rows(ROOTS_ENDED_BEFORE, &[&before])? {
            each(row.try_get("seq")?, row.try_get("id")?)?;
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
        match part {
            Part::Whole => self.table_rows(&sql, &[], table, each),
            Part::Trees(roots) => self.table_rows(&sql, &[&roots], table, each),
            Part::Trail { after, upto } => {
                self.table_rows(&sql, &[&int(after), &int(upto)], table, each)
            }
        }
    }

    fn archive_nodes(&mut self, from: u64, to: u64) -> Result<Vec<TreeNode>> {
        let mut out = Vec::new();
        for level in 0..=TOP_LEVEL {
            let first = (from >> (level + 1)) << 1;
            let end = to >> level;
            if end == 0 {
                break;
            }
            if first >= end {
                continue;
            }
            let rows = self.rows(NODES_IN, &[&i16::from(level), &int(first), &int(end)])?;
            for row in rows {
                let idx: i64 = row.try_get("idx")?;
                let hash: Vec<u8> = row.try_get("hash")?;
                let hash: [u8; 32] = hash.try_into().map_err(|_| {
                    Corruption::new(format!("audit_tree node ({level}, {idx}) is not 32 bytes"))
                })?;
                out.push((level, u64::try_from(idx).unwrap_or(0), hash));
            }
        }
        Ok(out)
    }

    fn first_audit_seq(&mut self) -> Result<Option<i64>> {
        match self.row(FIRST_AUDIT_SEQ, &[])? {
            Some(row) => Ok(row.try_get("seq")?),
            None => Ok(None),
        }
    }

    fn log_size_at(&mut self, boundary: u64) -> Result<u64> {
        let n: i64 = self
            .row(LOG_SIZE_AT, &[&int(boundary)])?
            .map_or(Ok(0), |row| row.try_get("n"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn archived_count(&mut self, archive: i64) -> Result<u64> {
        let n: i64 = self
            .row(ARCHIVED_COUNT, &[&archive])?
            .map_or(Ok(0), |row| row.try_get("n"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

impl ArchiveWrites for Tx<'_> {
    fn append_archive(&mut self, row: &ArchiveRow) -> Result<()> {
        self.read.execute(
            APPEND_ARCHIVE,
            &[
                &row.archive,
                &row.file,
                &row.sha256,
                &int(row.trail_size),
                &row.trail_hash,
                &int(row.log_size),
                &int(row.trees),
                &int(row.sessions),
                &row.made_at,
                &row.made_by,
            ],
        )?;
        Ok(())
    }

    fn remove_trees(&mut self, archive: i64, roots: &[String]) -> Result<u64> {
        if roots.is_empty() {
            return Ok(0);
        }
        let ids: Vec<String> = self.read.column(ARCHIVE_TREES, &[&roots, &archive], "id")?;
        for sql in REMOVE_TREES {
            self.read.execute(sql, &[&ids])?;
        }
        Ok(ids.len() as u64)
    }

    fn remove_trail(&mut self, after: u64, upto: u64) -> Result<u64> {
        let (after, upto) = (int(after), int(upto));
        self.read.execute(REMOVE_CHECKPOINTS, &[&after, &upto])?;
        let decisions: Vec<i64> =
            self.read
                .column(REMOVE_LOG_AND_RECORDS, &[&after, &upto], "decision")?;
        if !decisions.is_empty() {
            self.read.execute(REMOVE_DECISIONS, &[&decisions])?;
        }
        self.read.execute(REMOVE_AUDIT, &[&after, &upto])
    }

    fn remove_records(&mut self, boundary: u64, limit: u32) -> Result<u64> {
        let limit = i64::from(limit);
        let decisions: Vec<i64> =
            self.read
                .column(REMOVE_OLDEST_LOG, &[&int(boundary), &limit], "decision")?;
        if !decisions.is_empty() {
            self.read.execute(REMOVE_DECISIONS, &[&decisions])?;
        }
        Ok(decisions.len() as u64)
    }

    fn prune_tree(&mut self, boundary: u64, limit: u32) -> Result<u64> {
        let mut removed = 0u64;
        for level in 0..TOP_LEVEL {
            let below = (boundary >> (level + 1)) << 1;
            if below == 0 {
                break;
            }
            let left = u64::from(limit).saturating_sub(removed);
            if left == 0 {
                break;
            }
            removed += self
                .read
                .execute(PRUNE_LEVEL, &[&i16::from(level), &int(below), &int(left)])?;
        }
        Ok(removed)
    }
}
