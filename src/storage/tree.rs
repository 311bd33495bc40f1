//! What the audit tree needs from a database: the stored nodes of the Merkle tree over the
//! trail, by level and index, and the checkpoints signed over it.
//!
//! Traits and rows only: no SQL and no rule (which nodes to write, and what their hashes are,
//! is the audit concept's).

use chrono::{DateTime, Utc};

use crate::error::Result;

/// A stored node: its level, its index within the level, and its hash.
pub(crate) type TreeNode = (u8, u64, [u8; 32]);

/// A checkpoint as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointRow {
    /// Its `checkpoint.sign` audit row.
    pub(crate) seq: i64,
    pub(crate) tree_size: u64,
    /// The root, as 64 lower-case hex digits.
    pub(crate) root_hash: String,
    pub(crate) origin: String,
    pub(crate) key_name: String,
    /// The key id, as 8 lower-case hex digits.
    pub(crate) key_id: String,
    /// The signed note.
    pub(crate) note: String,
    pub(crate) signed_at: DateTime<Utc>,
}

/// Reads of the tree, each by the key `(level, idx)`, and of the checkpoints, by `seq`.
pub(crate) trait TreeReads {
    /// How many leaves the stored tree has: one more than its last leaf's index (one descent of
    /// the key), 0 when it has none.
    fn tree_size(&mut self) -> Result<u64>;

    /// The stored hashes of the nodes at `coords` (level, index), in their order; `None` for a
    /// node that is not stored.
    fn tree_nodes(&mut self, coords: &[(u8, u64)]) -> Result<Vec<Option<[u8; 32]>>>;

    /// The recorded checkpoints whose `seq` is after `after`, oldest first, at most `limit`.
    fn checkpoints(&mut self, after: i64, limit: u32) -> Result<Vec<CheckpointRow>>;

    /// The newest recorded checkpoint.
    fn latest_checkpoint(&mut self) -> Result<Option<CheckpointRow>>;
}

/// Growing the tree and recording checkpoints. The database refuses a node out of order (C36)
/// and a checkpoint that does not follow the tree and the checkpoints before it (C37).
pub(crate) trait TreeWrites {
    /// Appends `nodes`, in order: leaves in index order, each node after its children.
    fn append_tree_nodes(&mut self, nodes: &[TreeNode]) -> Result<()>;

    /// Records a checkpoint, after its audit row.
    fn append_checkpoint(&mut self, row: &CheckpointRow) -> Result<()>;
}
