//! The handle's sessions and labels: creating, reading and raising, ending, and the views of
//! the dispatch tree.

use crate::error::Result;
use crate::labels::{self, Raise, RaiseOutcome, SessionState};
use crate::model::{validate_actor, validate_new_id, Id, Session};
use crate::sessions::{
    self, Bounds, CreateOutcome, Created, Ended, TreeEntry, TreeLevel, TreeNode,
};
use crate::storage::TreeTop;

use super::Ledger;

impl Ledger {
    /// Records a root session: no creator, depth 0, born with the default label (`private`,
    /// trusted). Ids of the spawned form `sub-<parent>-<n>` are reserved.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `SessionExists` (the id is or was in use); nothing written.
    pub fn create_root(&self, id: &str, actor: &str) -> Result<Session> {
        let id = validate_new_id(id)?;
        validate_actor(actor)?;
        let created = self.write(|tx, now| sessions::create_root(tx, id, actor, now));
        self.new_id_or_archived(id, created)
    }

    /// Records a session created by the live session `creator` (a spawned id seen for the
    /// first time is recorded first), within the bounds of rule S2, born with the creator's
    /// posture as it stands now (P1) and not materialized: its first read inherits (L2).
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `SessionEnded` (the creator's),
    /// `SessionExists`, with nothing written; [`Error::Refused`](crate::Error::Refused) by a
    /// bound, with one `session.create_refused` row written and nothing created.
    pub fn create_child(&self, id: &str, creator: &str, actor: &str) -> Result<Created> {
        let (id, creator) = (validate_new_id(id)?, Id::parse(creator)?);
        validate_actor(actor)?;
        let bounds = Bounds::from(&self.config);
        let created = self
            .write(|tx, now| sessions::create_child(tx, id, creator, actor, &bounds, None, now));
        match self.new_id_or_archived(id, created)? {
            CreateOutcome::Created(created) => Ok(created),
            CreateOutcome::Refused(refusal) => Err(refusal.into()),
        }
    }

    /// [`Ledger::create_child`], born with no posture whatever its creator holds, and `why` in
    /// its `session.create` audit row (as `withheld`, beside `inherited_trust: false`): for a
    /// child whose creator is known only as the nearest session that could have made it (rule
    /// G2: a sub-agent whose spawner cannot be established). Its label is inherited on first
    /// read as any child's (rule L2); patterns and scopes never are.
    ///
    /// # Errors
    ///
    /// As [`Ledger::create_child`]; `InvalidConfig` for an empty `why` or one longer than 1,000
    /// characters.
    pub fn create_child_withholding(
        &self,
        id: &str,
        creator: &str,
        actor: &str,
        why: &str,
    ) -> Result<Created> {
        let (id, creator) = (validate_new_id(id)?, Id::parse(creator)?);
        validate_actor(actor)?;
        if why.trim().is_empty() || why.chars().count() > 1_000 {
            return Err(crate::error::InputError::InvalidConfig(
                "the reason a posture is withheld must hold 1 to 1,000 characters".into(),
            )
            .into());
        }
        let bounds = Bounds::from(&self.config);
        let withheld = Some(why);
        let created = self.write(|tx, now| {
            sessions::create_child(tx, id, creator, actor, &bounds, withheld, now)
        });
        match self.new_id_or_archived(id, created)? {
            CreateOutcome::Created(created) => Ok(created),
            CreateOutcome::Refused(refusal) => Err(refusal.into()),
        }
    }

    /// The session's label and posture. A materialized session's is read without writing. A
    /// child's first read (rule L2) walks `created_by` up to the nearest materialized ancestor
    /// and gives its label to the child and every unmaterialized session on the way, with a
    /// `label.inherit` row each; a spawned id with no row (L3) first records its parsed chain.
    /// Any other unknown id (L4) reads as the default with `known: false`, writing nothing. On
    /// a [read-only](crate::Config::read_only) handle a first read answers the same and writes
    /// nothing: `materialized` is [`Materialized::Unrecorded`](crate::Materialized::Unrecorded).
    ///
    /// # Errors
    ///
    /// `InvalidId`; [`Error::Storage`](crate::Error::Storage).
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, Raise, Taint};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
    /// ledger.create_child("worker", "conductor", "alice")?;
    /// assert_eq!(ledger.state("worker")?.taint, Taint::Secret);
    /// assert_eq!(ledger.state("sub-worker-1")?.taint, Taint::Secret);
    /// assert!(!ledger.state("stranger")?.known);
    /// # Ok(()) }
    /// ```
    pub fn state(&self, id: &str) -> Result<SessionState> {
        let id = Id::parse(id)?;
        if let Some(stored) = self.storage.read(|r| labels::stored_state(r, id))? {
            return Ok(stored);
        }
        self.refuse_archived(id)?;
        if self.storage.is_read_only() {
            let now = self.wall_clock();
            return self
                .storage
                .snapshot(|r| labels::unrecorded_state(r, id, now));
        }
        if !self.storage.read(|r| sessions::is_anchored(r, id))? {
            return Ok(SessionState::unknown(id));
        }
        let stored = self.write(|tx, now| labels::materialize(tx, id, now))?;
        Ok(stored.unwrap_or_else(|| SessionState::unknown(id)))
    }

    /// The session's stored state, materializing nothing: `None` when it is not materialized.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `Storage`.
    pub fn stored_label(&self, id: &str) -> Result<Option<SessionState>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| labels::stored_state(r, id))
    }

    /// Raises the label (rule L1): the higher class, the flag ORed; an unmaterialized session
    /// inherits first (L5). A raise that changes nothing writes nothing. An ended session can
    /// be raised: a label records what the session saw.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `NothingToRaise`; `UnknownSession` for an id that is
    /// neither recorded nor a spawned id of a recorded session. Nothing is written.
    pub fn raise(&self, id: &str, raise: Raise, actor: &str) -> Result<RaiseOutcome> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        // A raise that asks for nothing is refused before the write lock is taken.
        raise.requested()?;
        self.write(|tx, now| labels::raise(tx, id, raise, actor, now))
    }

    /// Ends a live session and its spawned sub-agents (created children stay live), each a
    /// tombstone from then on, with a `session.end` row each. The outcome names the sub-agents
    /// that ended with it.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `SessionEnded`. Nothing is written.
    pub fn end(&self, id: &str, actor: &str) -> Result<Ended> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| sessions::end(tx, id, actor, now))
    }

    /// The recorded session with this id, or `None`.
    ///
    /// # Errors
    ///
    /// `InvalidId`; [`Error::Storage`](crate::Error::Storage).
    pub fn session(&self, id: &str) -> Result<Option<Session>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| r.session(id))
    }

    /// The creators of `id`, nearest first, ending with its root. Empty for a root.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn ancestors(&self, id: &str) -> Result<Vec<Session>> {
        let id = Id::parse(id)?;
        let found = self.storage.snapshot(|r| {
            sessions::require(r, id)?;
            r.ancestors(id)
        });
        self.archived_or(found)
    }

    /// The sessions `id` created or spawned (that the ledger has recorded), oldest first.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn children(&self, id: &str) -> Result<Vec<Session>> {
        let id = Id::parse(id)?;
        let found = self.storage.snapshot(|r| {
            sessions::require(r, id)?;
            r.children(id)
        });
        self.archived_or(found)
    }

    /// The subtree of `id` (itself and every descendant, created or spawned), depth-first,
    /// children oldest first, each with its depth below `id`.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn subtree(&self, id: &str) -> Result<Vec<TreeEntry>> {
        let id = Id::parse(id)?;
        let found = self.storage.read(|r| sessions::subtree(r, id));
        self.archived_or(found)
    }

    /// The subtree of `id` for a tree view: each session depth-first, children oldest first,
    /// with its label (stored, or the one its first read would give it), whether it is
    /// materialized, its posture, and how many live scopes and command patterns approve for it.
    /// One snapshot, one walk of the subtree, nothing written
    /// (the crate docs have an example).
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn tree(&self, id: &str) -> Result<Vec<TreeNode>> {
        let id = Id::parse(id)?;
        let now = self.wall_clock();
        let found = self
            .storage
            .snapshot(|r| sessions::tree(r, TreeTop::Session(id), now));
        self.archived_or(found)
    }

    /// Every session as a forest, as [`Ledger::tree`] gives one subtree: each root's subtree in
    /// the order the roots were opened. It reads the whole ledger.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn forest(&self) -> Result<Vec<TreeNode>> {
        let now = self.wall_clock();
        self.storage
            .snapshot(|r| sessions::tree(r, TreeTop::Roots, now))
    }

    /// One page of one level of the dispatch tree, for a view that opens the tree a level at a
    /// time: the roots (`parent` `None`) or the sessions `parent` created or spawned, oldest
    /// first, after the session `after` of that level (the `next` of the page before), at most
    /// `limit` of them. Each comes with its label (stored, or the one its first read would give
    /// it: `materialized` says which), its posture, its live scopes and patterns, and whether it
    /// has children. It costs what
    /// the page shows, however large the level or the ledger; one snapshot, nothing written.
    /// An `after` that is not a session of that level gives an empty page.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `parent` is not recorded.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, PostureLevel};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    /// for worker in ["w1", "w2", "w3"] {
    ///     ledger.create_child(worker, "conductor", "alice")?;
    /// }
    /// let page = ledger.tree_level(Some("conductor"), None, 2)?;
    /// assert_eq!(page.nodes.len(), 2);
    /// assert!(page.nodes[0].trust && !page.nodes[0].materialized);
    /// let rest = ledger.tree_level(Some("conductor"), page.next.as_deref(), 2)?;
    /// assert_eq!(rest.nodes[0].session.id, "w3");
    /// assert_eq!(rest.next, None);
    /// # Ok(()) }
    /// ```
    pub fn tree_level(
        &self,
        parent: Option<&str>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<TreeLevel> {
        let parent = parent.map(Id::parse).transpose()?;
        let after = after.map(Id::parse).transpose()?;
        let now = self.wall_clock();
        self.storage
            .snapshot(|r| sessions::level(r, parent, after, limit, now))
    }
}
