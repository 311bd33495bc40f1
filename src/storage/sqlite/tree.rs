//! The `audit_tree` and `checkpoints` tables: stored nodes by their key, and checkpoints by
//! `seq`.
//!
//! Which nodes to write and what their hashes are is the audit concept's: this file stores and
//! reads.

use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::time;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::storage::{CheckpointRow, TreeNode, TreeReads, TreeWrites};

/// How many leaves the stored tree has: one past its last leaf (one descent of the key,
/// backwards within level 0), or the newest archive's boundary where the leaves before it left
/// with it (one descent of that key).
pub(super) const LAST_LEAF: &str = "SELECT max(coalesce((SELECT idx + 1 FROM audit_tree
                                         WHERE level = 0 ORDER BY idx DESC LIMIT 1), 0),
                               coalesce((SELECT trail_size FROM archives
                                          WHERE archive = (SELECT max(archive) FROM archives)),
                                        0)) AS size";

/// One node, by its key.
pub(super) const NODE: &str = "SELECT hash FROM audit_tree WHERE level = ?1 AND idx = ?2";

/// The columns of a checkpoint, in the order [`checkpoint_of`] reads them by name.
macro_rules! checkpoint_columns {
    () => {
        "seq, tree_size, root_hash, origin, key_name, key_id, note, signed_at"
    };
}

/// The checkpoints after a seq, oldest first, by the table's key.
pub(super) const CHECKPOINTS: &str = concat!(
    "SELECT ",
    checkpoint_columns!(),
    " FROM checkpoints WHERE seq > :after ORDER BY seq LIMIT :limit"
);

/// The newest checkpoint: `max(seq)` is one descent of the key, and the row is then found by
/// it (`ORDER BY seq DESC LIMIT 1` reads the same row, but SQLite plans it as a scan).
pub(super) const LATEST_CHECKPOINT: &str = concat!(
    "SELECT ",
    checkpoint_columns!(),
    " FROM checkpoints WHERE seq = (SELECT max(seq) FROM checkpoints)"
);

pub(super) const APPEND_NODE: &str =
    "INSERT INTO audit_tree (level, idx, hash) VALUES (?1, ?2, ?3)";

pub(super) const APPEND_CHECKPOINT: &str = concat!(
    "INSERT INTO checkpoints (",
    checkpoint_columns!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
);

/// A stored index or size, which the schema keeps non-negative.
fn count(column: &str, n: i64) -> Result<u64> {
    u64::try_from(n).map_err(|_| Corruption::new(format!("{column} holds {n}")).into())
}

fn checkpoint_of(row: &Row<'_>) -> Result<CheckpointRow> {
    Ok(CheckpointRow {
        seq: row.get("seq")?,
        tree_size: count("checkpoints.tree_size", row.get("tree_size")?)?,
        root_hash: row.get("root_hash")?,
        origin: row.get("origin")?,
        key_name: row.get("key_name")?,
        key_id: row.get("key_id")?,
        note: row.get("note")?,
        signed_at: time("checkpoints.signed_at", &row.get::<_, String>("signed_at")?)?,
    })
}

impl TreeReads for Conn<'_> {
    fn tree_size(&mut self) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(LAST_LEAF)?;
        let size: i64 = stmt.query_row([], |row| row.get("size"))?;
        count("audit_tree.idx", size)
    }

    fn tree_nodes(&mut self, coords: &[(u8, u64)]) -> Result<Vec<Option<[u8; 32]>>> {
        let mut stmt = self.conn.prepare_cached(NODE)?;
        let mut out = Vec::with_capacity(coords.len());
        for (level, idx) in coords {
            let idx = i64::try_from(*idx).unwrap_or(i64::MAX);
            let hash: Option<Vec<u8>> = stmt
                .query_row((level, idx), |row| row.get("hash"))
                .optional()?;
            out.push(match hash {
                Some(hash) => Some(hash.try_into().map_err(|_| {
                    Corruption::new(format!("audit_tree node ({level}, {idx}) is not 32 bytes"))
                })?),
                None => None,
            });
        }
        Ok(out)
    }

    fn checkpoints(&mut self, after: i64, limit: u32) -> Result<Vec<CheckpointRow>> {
        let mut stmt = self.conn.prepare_cached(CHECKPOINTS)?;
        let mut rows = stmt.query(named_params! { ":after": after, ":limit": limit })?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(checkpoint_of(row)?);
        }
        Ok(out)
    }

    fn latest_checkpoint(&mut self) -> Result<Option<CheckpointRow>> {
        let mut stmt = self.conn.prepare_cached(LATEST_CHECKPOINT)?;
        let mut rows = stmt.query([])?;
        rows.next()?.map(checkpoint_of).transpose()
    }
}

impl TreeWrites for Tx<'_> {
    fn append_tree_nodes(&mut self, nodes: &[TreeNode]) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(APPEND_NODE)?;
        for (level, idx, hash) in nodes {
            let idx = i64::try_from(*idx)
                .map_err(|_| Corruption::new(format!("a tree index of {idx}")))?;
            stmt.execute((level, idx, &hash[..]))?;
        }
        Ok(())
    }

    fn append_checkpoint(&mut self, row: &CheckpointRow) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(APPEND_CHECKPOINT)?;
        let size = i64::try_from(row.tree_size)
            .map_err(|_| Corruption::new(format!("a tree size of {}", row.tree_size)))?;
        stmt.execute((
            row.seq,
            size,
            &row.root_hash,
            &row.origin,
            &row.key_name,
            &row.key_id,
            &row.note,
            format_ts(row.signed_at),
        ))?;
        Ok(())
    }
}
