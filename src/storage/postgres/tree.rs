//! The `audit_tree` and `checkpoints` tables on PostgreSQL: nodes read and written a batch per
//! statement (a proof needs O(log n) nodes, read in one round trip), checkpoints by `seq`.
//!
//! Which nodes to write and what their hashes are is the audit concept's: this file stores and
//! reads.

use postgres::Row;

use super::{Conn, Tx};
use crate::error::{Corruption, Result};
use crate::storage::{CheckpointRow, TreeNode, TreeReads, TreeWrites};

/// How many leaves the stored tree has: one past its last leaf (one descent of the key,
/// backwards within level 0), or the newest archive's boundary where the leaves before it left
/// with it (one descent of that key).
pub(super) const LAST_LEAF: &str = "SELECT greatest(coalesce((SELECT idx + 1 FROM audit_tree
                                         WHERE level = 0 ORDER BY idx DESC LIMIT 1), 0),
                               coalesce((SELECT trail_size FROM archives
                                          WHERE archive = (SELECT max(archive) FROM archives)),
                                        0)) AS size";

/// Nodes by their keys, in the order asked, a missing one as NULL: one probe of the key each.
pub(super) const NODES: &str = "SELECT t.hash
       FROM unnest($1::smallint[], $2::bigint[]) WITH ORDINALITY AS u (level, idx, n)
       LEFT JOIN audit_tree AS t ON t.level = u.level AND t.idx = u.idx
      ORDER BY u.n";

/// The columns of a checkpoint, as [`checkpoint_of`] reads them by name.
macro_rules! checkpoint_columns {
    () => {
        "seq, tree_size, root_hash, origin, key_name, key_id, note, signed_at"
    };
}

/// The checkpoints after a seq, oldest first, by the key.
pub(super) const CHECKPOINTS: &str = concat!(
    "SELECT ",
    checkpoint_columns!(),
    " FROM checkpoints WHERE seq > $1 ORDER BY seq LIMIT $2"
);

/// The newest checkpoint: `max(seq)` is one descent of the key, and the row is then found by
/// it; the same statement as SQLite's, where `ORDER BY seq DESC LIMIT 1` plans as a scan.
pub(super) const LATEST_CHECKPOINT: &str = concat!(
    "SELECT ",
    checkpoint_columns!(),
    " FROM checkpoints WHERE seq = (SELECT max(seq) FROM checkpoints)"
);

/// Nodes, a batch in one statement.
pub(super) const APPEND_NODES: &str = "INSERT INTO audit_tree (level, idx, hash)
     SELECT level, idx, hash FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])
            AS u (level, idx, hash)";

pub(super) const APPEND_CHECKPOINT: &str = concat!(
    "INSERT INTO checkpoints (",
    checkpoint_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
);

/// A stored index or size, which the schema keeps non-negative.
fn count(column: &str, n: i64) -> Result<u64> {
    u64::try_from(n).map_err(|_| Corruption::new(format!("{column} holds {n}")).into())
}

fn checkpoint_of(row: &Row) -> Result<CheckpointRow> {
    Ok(CheckpointRow {
        seq: row.try_get("seq")?,
        tree_size: count("checkpoints.tree_size", row.try_get("tree_size")?)?,
        root_hash: row.try_get("root_hash")?,
        origin: row.try_get("origin")?,
        key_name: row.try_get("key_name")?,
        key_id: row.try_get("key_id")?,
        note: row.try_get("note")?,
        signed_at: row.try_get("signed_at")?,
    })
}

/// A tree index as the key stores it.
fn index(idx: u64) -> Result<i64> {
    i64::try_from(idx).map_err(|_| Corruption::new(format!("a tree index of {idx}")).into())
}

impl TreeReads for Conn<'_> {
    fn tree_size(&mut self) -> Result<u64> {
        match self.row(LAST_LEAF, &[])? {
            Some(row) => count("audit_tree.idx", row.try_get("size")?),
            None => Ok(0),
        }
    }

    fn tree_nodes(&mut self, coords: &[(u8, u64)]) -> Result<Vec<Option<[u8; 32]>>> {
        if coords.is_empty() {
            return Ok(Vec::new());
        }
        let levels: Vec<i16> = coords.iter().map(|(l, _)| i16::from(*l)).collect();
        let idxs = coords
            .iter()
            .map(|(_, i)| index(*i))
            .collect::<Result<Vec<i64>>>()?;
        let rows = self.rows(NODES, &[&levels, &idxs])?;
        rows.iter()
            .map(|row| {
                let hash: Option<Vec<u8>> = row.try_get("hash")?;
                hash.map(|h| {
                    h.try_into()
                        .map_err(|_| Corruption::new("an audit_tree node is not 32 bytes").into())
                })
                .transpose()
            })
            .collect()
    }

    fn checkpoints(&mut self, after: i64, limit: u32) -> Result<Vec<CheckpointRow>> {
        let limit = i64::from(limit);
        let rows = self.rows(CHECKPOINTS, &[&after, &limit])?;
        rows.iter().map(checkpoint_of).collect()
    }

    fn latest_checkpoint(&mut self) -> Result<Option<CheckpointRow>> {
        self.row(LATEST_CHECKPOINT, &[])?
            .as_ref()
            .map(checkpoint_of)
            .transpose()
    }
}

impl TreeWrites for Tx<'_> {
    fn append_tree_nodes(&mut self, nodes: &[TreeNode]) -> Result<()> {
        if nodes.is_empty() {
            return Ok(());
        }
        let levels: Vec<i16> = nodes.iter().map(|(l, _, _)| i16::from(*l)).collect();
        let idxs = nodes
            .iter()
            .map(|(_, i, _)| index(*i))
            .collect::<Result<Vec<i64>>>()?;
        let hashes: Vec<&[u8]> = nodes.iter().map(|(_, _, h)| &h[..]).collect();
        let written = self
            .read
            .execute(APPEND_NODES, &[&levels, &idxs, &hashes])?;
        if written != nodes.len() as u64 {
            return Err(Corruption::new(format!(
                "{written} of {} tree nodes were written",
                nodes.len()
            ))
            .into());
        }
        Ok(())
    }

    fn append_checkpoint(&mut self, row: &CheckpointRow) -> Result<()> {
        let size = i64::try_from(row.tree_size)
            .map_err(|_| Corruption::new(format!("a tree size of {}", row.tree_size)))?;
        self.read.execute(
            APPEND_CHECKPOINT,
            &[
                &row.seq,
                &size,
                &row.root_hash,
                &row.origin,
                &row.key_name,
                &row.key_id,
                &row.note,
                &row.signed_at,
            ],
        )?;
        Ok(())
    }
}
