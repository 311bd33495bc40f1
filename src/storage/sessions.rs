//! What the sessions concept needs from a database: session rows and walks over `created_by`.
//!
//! Traits and rows only: no SQL and no rule.

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::{Id, Label, Origin, Posture, PostureLevel, Session};

/// A session to record.
pub(crate) struct NewSession<'a> {
    pub(crate) id: Id<'a>,
    /// `None` for a root.
    pub(crate) created_by: Option<Id<'a>>,
    pub(crate) depth: u32,
    pub(crate) origin: Origin,
    pub(crate) at: DateTime<Utc>,
}

/// What the creation bounds count about a creator's created children (rule S2).
pub(crate) struct CreationCounts {
    /// Its live created children.
    pub(crate) live: u32,
    /// Its created children recorded at or after the window's start.
    pub(crate) in_window: u32,
}

/// What a create checks about its creator and its new id, read at once under the write lock.
pub(crate) struct CreationFacts {
    /// The creator, when it is recorded.
    pub(crate) creator: Option<Session>,
    /// The new id is or was in use.
    pub(crate) taken: bool,
    /// The creator's created children, as the bounds count them.
    pub(crate) counts: CreationCounts,
    /// The posture the creator holds in the current epoch: what a child it creates now
    /// inherits (rule P1).
    pub(crate) creator_posture: Option<PostureLevel>,
}

/// Where a tree view starts.
#[derive(Clone, Copy)]
pub(crate) enum TreeTop<'a> {
    /// One session's subtree.
    Session(Id<'a>),
    /// Every root's subtree: the whole ledger.
    Roots,
}

/// One session of a tree view: the session, its stored label if it is materialized, its
/// posture row, current or not, and how many standing grants it holds.
pub(crate) struct TreeRow {
    pub(crate) session: Session,
    pub(crate) label: Option<Label>,
    pub(crate) posture: Option<Posture>,
    /// Its override scopes live at the view's time.
    pub(crate) live_scopes: u32,
    /// Its command patterns.
    pub(crate) patterns: u32,
}

/// Reads of sessions and lineage. Each costs what its answer holds, never what the ledger
/// holds: a walk down reads the subtree's rows through the index on `created_by`, a walk up one
/// row per level by key.
pub(crate) trait SessionReads {
    /// The session with this id, ended or not.
    fn session(&mut self, id: Id<'_>) -> Result<Option<Session>>;

    /// The creators of `id`, nearest first, up to its root; empty for a root or an unknown id.
    fn ancestors(&mut self, id: Id<'_>) -> Result<Vec<Session>>;

    /// The sessions `id` created or spawned, in the order they were recorded.
    fn children(&mut self, id: Id<'_>) -> Result<Vec<Session>>;

    /// `id` and every descendant, created or spawned, at any depth, in the order recorded;
    /// empty for an unknown id.
    fn subtree(&mut self, id: Id<'_>) -> Result<Vec<Session>>;

    /// The sessions of a tree view with their labels, postures and counts of scopes live at
    /// `now` and of patterns, in the order recorded, in one statement.
    fn tree(&mut self, top: TreeTop<'_>, now: DateTime<Utc>) -> Result<Vec<TreeRow>>;

    /// What a create of `child` by `creator` checks, in one read where the engine can: the
    /// creator's row, whether `child` is taken, how many live created children `creator` has
    /// and how many it created at or after `since` (spawned children are not counted: the
    /// bounds govern the create call), and the posture level it holds in the current epoch.
    fn creation_facts(
        &mut self,
        creator: Id<'_>,
        child: Id<'_>,
        since: DateTime<Utc>,
    ) -> Result<CreationFacts>;
}

/// Writes of sessions.
pub(crate) trait SessionWrites {
    /// Records a session. The database refuses an id in use, a creator that does not exist,
    /// and a depth other than the creator's + 1.
    fn insert_session(&mut self, new: &NewSession<'_>) -> Result<()>;

    /// Ends a live session; false when no live session has this id.
    fn end_session(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<bool>;

    /// Ends `id` and every live session reached from it through spawned sessions only, in one
    /// statement. Returns the ids ended, by depth then id.
    fn end_with_spawned(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<Vec<String>>;
}

/// Which page of one level of the tree a view shows: the children of one session, or the
/// roots, in the order they were recorded, after a given session of that level.
#[derive(Clone, Copy)]
pub(crate) struct LevelPage<'a> {
    /// Whose children; `None` for the roots.
    pub(crate) parent: Option<Id<'a>>,
    /// The last session of the page before; `None` for the first page.
    pub(crate) after: Option<Id<'a>>,
    /// At most this many sessions.
    pub(crate) limit: u32,
    /// The time at which a scope counts as live.
    pub(crate) now: DateTime<Utc>,
}

/// One session of a level's page: its row as a tree view has it, and whether it has children.
pub(crate) struct LevelRow {
    pub(crate) row: TreeRow,
    pub(crate) has_children: bool,
}

/// Reads of the tree one level at a time.
pub(crate) trait LevelReads {
    /// One page of one level, ordered by `created_at` and then the order recorded: each
    /// session with its stored label, its posture row and whether it has a child. Costs the
    /// page's rows and one index probe each, however many sessions the level or the ledger
    /// holds; an `after` that is not a session of the level gives an empty page.
    fn level(&mut self, page: LevelPage<'_>) -> Result<Vec<LevelRow>>;
}
