//! What the postures concept needs from a database: posture rows, their epochs, and
//! revocation as one statement.
//!
//! Traits and rows only: no SQL and no rule.

use chrono::{DateTime, Utc};

use crate::error::{Corruption, Result};
use crate::model::{Id, Posture, PostureLevel, PostureSource, Scope};
use crate::storage::PatternRow;

/// A posture row as a revocation sees it: the session holding it, and where it came from.
pub(crate) struct HeldPosture {
    pub(crate) id: String,
    pub(crate) depth: u32,
    pub(crate) level: PostureLevel,
    pub(crate) source: PostureSource,
    pub(crate) granted_on: String,
    /// It belonged to the current epoch.
    pub(crate) current: bool,
}

/// One session of a subtree with its lineage and posture row: the state a preview token binds
/// (rule R2).
pub(crate) struct SubtreePosture {
    pub(crate) id: String,
    pub(crate) created_by: Option<String>,
    pub(crate) depth: u32,
    pub(crate) ended_at: Option<DateTime<Utc>>,
    pub(crate) posture: Option<Posture>,
}

/// Everything a decision needs about a recorded session.
pub(crate) struct DecisionFacts {
    pub(crate) ended: bool,
    pub(crate) posture: Option<Posture>,
    /// The ledger's option `untrusted_asks` is on (rule G3).
    pub(crate) untrusted_asks: bool,
    /// Its command patterns, oldest first (then by text).
    pub(crate) patterns: Vec<PatternRow>,
    /// Its scope that is live at the decision's time and lasts longest (then by name).
    pub(crate) live_scope: Option<Scope>,
}

/// Which sessions a revocation reaches: whose postures it removes, and whose grants it reads
/// or revokes with them.
#[derive(Clone, Copy)]
pub(crate) enum Reach<'a> {
    /// This session alone.
    One(Id<'a>),
    /// This session and every descendant, created or spawned, at any depth.
    Subtree(Id<'a>),
    /// Every session in the ledger.
    All,
}

/// A started epoch.
pub(crate) struct NewEpoch {
    pub(crate) epoch: i64,
    /// How many postures the previous epoch held (lapsed, or carried over).
    pub(crate) previous: u64,
}

/// Reads of postures.
pub(crate) trait PostureReads {
    /// The current posture epoch: the highest.
    fn current_epoch(&mut self) -> Result<i64>;

    /// The posture row of `id`, current or not.
    fn posture(&mut self, id: Id<'_>) -> Result<Option<Posture>>;

    /// Whether `id` ended, its posture row, its patterns and its scope live at `now`, in one
    /// statement where the engine can; `None` when not recorded.
    fn decision_facts(&mut self, id: Id<'_>, now: DateTime<Utc>) -> Result<Option<DecisionFacts>>;

    /// The subtree of `root` with each session's posture row, ordered by id.
    fn subtree_postures(&mut self, root: Id<'_>) -> Result<Vec<SubtreePosture>>;

    /// The live descendants of `root` (not `root` itself) holding a posture of the current
    /// epoch inherited through it, by depth then id.
    fn inherited_through(&mut self, root: Id<'_>) -> Result<Vec<HeldPosture>>;
}

/// Writes of postures. The database refuses an inherited posture that is not exactly what the
/// creator holds in the same epoch (rules P1, P2), and any change to a posture row but a move
/// into a later epoch.
pub(crate) trait PostureWrites {
    /// An operator's grant on `id` in the current epoch, replacing any posture it held.
    fn grant_posture(
        &mut self,
        id: Id<'_>,
        level: PostureLevel,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()>;

    /// Rules P1 and P3 in one statement: gives `child` exactly the posture `creator` holds in
    /// the current epoch, if any. Returns the level copied.
    fn inherit_posture(
        &mut self,
        child: Id<'_>,
        creator: Id<'_>,
        at: DateTime<Utc>,
    ) -> Result<Option<PostureLevel>>;

    /// [`PostureWrites::inherit_posture`] for a caller that read, in this transaction, the
    /// posture `creator` holds: the copy must be `expected`, or the transaction fails. As it
    /// returns nothing, an engine may hold it and write it with the transaction's next
    /// statement.
    fn inherit_known_posture(
        &mut self,
        child: Id<'_>,
        creator: Id<'_>,
        at: DateTime<Utc>,
        expected: Option<PostureLevel>,
    ) -> Result<()> {
        let copied = self.inherit_posture(child, creator, at)?;
        if copied == expected {
            return Ok(());
        }
        Err(Corruption::new(format!(
            "{:?} inherited {copied:?}, not the {expected:?} its creator was read to hold",
            child.as_str()
        ))
        .into())
    }

    /// Removes the postures `which` names, in one statement. Returns what it removed, by depth
    /// then id.
    fn revoke_postures(&mut self, which: Reach<'_>) -> Result<Vec<HeldPosture>>;

    /// Starts the next epoch; with `carry`, moves the previous epoch's postures into it.
    fn start_epoch(&mut self, actor: &str, carry: bool, at: DateTime<Utc>) -> Result<NewEpoch>;
}
