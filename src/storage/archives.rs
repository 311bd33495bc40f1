//! What archiving needs from a database: the archives made and the sessions they took, the
//! ended trees an archive may take, the rows of one part of the ledger, and removing what an
//! archive holds; and the archive file itself, a SQLite file of the ledger's schema that holds
//! one archive's rows ([`ArchiveFile`], written and read by the SQLite engine whatever engine
//! the live ledger runs on).
//!
//! Traits and rows only: no SQL and no rule (what goes, when it may leave, and what an archive
//! must prove is the archive concept's, src/archive.rs). The database refuses a removal that no
//! archive row allows (contract C42).

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::Result;

use super::{Row, Table, TreeNode};

/// One archive as the live ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchiveRow {
    /// Its number: 1, 2, 3, ...
    pub(crate) archive: i64,
    /// The file, by its absolute path when it was written.
    pub(crate) file: String,
    /// SHA-256 of the file's bytes, 64 lower-case hex digits.
    pub(crate) sha256: String,
    /// The boundary: the trail's rows up to this size are archived.
    pub(crate) trail_size: u64,
    /// The chain hash of the boundary's last row (the genesis hash at 0).
    pub(crate) trail_hash: String,
    /// The decision log's last position in batches up to the boundary.
    pub(crate) log_size: u64,
    /// How many trees and sessions the file holds.
    pub(crate) trees: u64,
    pub(crate) sessions: u64,
    pub(crate) made_at: DateTime<Utc>,
    pub(crate) made_by: String,
}

/// An archived session: its id, its tree's root, and the archive that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchivedSession {
    pub(crate) id: String,
    pub(crate) tree: String,
    pub(crate) archive: ArchiveRow,
}

/// The rows of one part of the ledger.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    /// The rows of these trees (by their roots): sessions, labels, postures, patterns, scopes.
    Trees(&'a [String]),
    /// The trail's rows with `after < seq <= upto`: audit rows, the checkpoints they record,
    /// and the decision log's batches they name, with those batches' records.
    Trail { after: u64, upto: u64 },
    /// Every row of the table (the epochs).
    Whole,
}

/// Reads about archives, and the rows an archive takes.
pub(crate) trait ArchiveReads {
    /// Every archive, oldest first (one a run: a few hundred rows in years).
    fn archives(&mut self) -> Result<Vec<ArchiveRow>>;

    /// The newest archive: its boundary is where the live trail starts.
    fn last_archive(&mut self) -> Result<Option<ArchiveRow>>;

    /// Where the session `id` went, by the key of `archived_sessions`; `None` when it was
    /// never archived.
    fn archived_session(&mut self, id: &str) -> Result<Option<ArchivedSession>>;

    /// Calls `each` on the seq and id of every root that began and ended before `before`,
    /// oldest first: the trees an archive by age may take, once each of their sessions is
    /// found ended before it too.
    fn roots_ended_before(
        &mut self,
        before: DateTime<Utc>,
        each: &mut dyn FnMut(i64, String) -> Result<()>,
    ) -> Result<()>;

    /// Calls `each` on every row of `table` in `part`, in the order of the table's key (of
    /// several trees, tree by tree in that order or all together in it, as the engine reads
    /// them best).
    fn part_rows(
        &mut self,
        table: Table,
        part: Part<'_>,
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()>;

    /// The stored nodes of the audit tree that an archive from boundary `from` to `to`
    /// carries: every node wholly left of `to` that did not leave with an archive up to
    /// `from`, so the frontier at `from` and everything between. By level, then index.
    fn archive_nodes(&mut self, from: u64, to: u64) -> Result<Vec<TreeNode>>;

    /// The lowest seq of the trail still stored; `None` when it holds no row.
    fn first_audit_seq(&mut self) -> Result<Option<i64>>;

    /// How many sessions have left the live ledger with the archive `archive`, through the
    /// index on `archived_sessions.archive`.
    fn archived_count(&mut self, archive: i64) -> Result<u64>;

    /// The decision log's last position in batches whose audit row is at or before
    /// `boundary` (the newest archive's when none is), through `decision_log_by_batch`.
    fn log_size_at(&mut self, boundary: u64) -> Result<u64>;
}

/// Removing what an archive holds. Each is refused by the database unless the archive row (or
/// the archived session row written with it) allows it (C42).
pub(crate) trait ArchiveWrites {
    /// Records an archive whose file is written and verified.
    fn append_archive(&mut self, row: &ArchiveRow) -> Result<()>;

    /// Moves the trees of `roots` out: one `archived_sessions` row per session, and their
    /// scopes, patterns, postures, labels and sessions removed. Returns how many sessions.
    fn remove_trees(&mut self, archive: i64, roots: &[String]) -> Result<u64>;

    /// Removes the trail's rows with `after < seq <= upto`, the checkpoints they record, the
    /// decision log's batches they name and those batches' records. Returns how many audit
    /// rows.
    fn remove_trail(&mut self, after: u64, upto: u64) -> Result<u64>;

    /// Removes at most `limit` positions of the decision log whose batch's audit row is at or
    /// before `boundary`, oldest first, and their records. Returns how many.
    fn remove_records(&mut self, boundary: u64, limit: u32) -> Result<u64>;

    /// Removes at most `limit` stored nodes of the audit tree that no proof past `boundary`
    /// needs. Returns how many.
    fn prune_tree(&mut self, boundary: u64, limit: u32) -> Result<u64>;
}

/// What an archive file says of itself: its own row, which no live ledger has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchiveHeader {
    /// Its number in the ledger it came from.
    pub(crate) archive: i64,
    /// The boundary it starts from: the previous archive's (0 for the first).
    pub(crate) trail_from: u64,
    /// The boundary it ends at: its trail's last row.
    pub(crate) trail_size: u64,
    /// The signed checkpoint of size `trail_size`, as its note (`None` when that size is 0).
    pub(crate) checkpoint: Option<String>,
    /// The cut-off it was made with: trees that ended before it.
    pub(crate) before: Option<DateTime<Utc>>,
    /// The one tree it was asked for, when it was.
    pub(crate) tree: Option<String>,
    pub(crate) trees: u64,
    pub(crate) sessions: u64,
    pub(crate) made_at: DateTime<Utc>,
    pub(crate) made_by: String,
    /// Where the live ledger was, as its location reads (never a password).
    pub(crate) ledger: String,
}

/// Writing one archive file: a new SQLite file of the ledger's schema, whose rules for new
/// writes are off (it holds rows those rules judged elsewhere), filled, then synced and closed.
pub(crate) trait ArchiveFile {
    /// Appends `rows` to `table` as they are.
    fn append(&mut self, table: Table, rows: &[Row]) -> Result<()>;

    /// Appends stored nodes of the audit tree.
    fn append_nodes(&mut self, nodes: &[TreeNode]) -> Result<()>;

    /// Records the archives before this one, so that the file's trail starts at their
    /// boundary.
    fn append_previous(&mut self, archives: &[ArchiveRow]) -> Result<()>;

    /// Writes the file's own row, commits, syncs and closes it.
    fn finish(self: Box<Self>, header: &ArchiveHeader) -> Result<()>;
}

/// Creates the archive file at `path`, which must not exist.
pub(crate) fn create_archive_file(path: &Path) -> Result<Box<dyn ArchiveFile>> {
    super::sqlite::create_archive_file(path)
}

/// The header of the archive file at `path`; `None` when the file is a ledger but no archive.
pub(crate) fn archive_header(path: &Path) -> Result<Option<ArchiveHeader>> {
    super::sqlite::archive_header(path)
}
