//! The [`Ledger`] handle: owns the connection pool and every transaction.

use std::collections::HashMap;
use std::path::Path;

use chrono::DurationRound;
use rusqlite::Transaction;
use serde_json::json;

use crate::audit::LEDGER_ACTOR;
use crate::clock::format_ts;
use crate::config::Config;
use crate::error::{Conflict, Corruption, CreationRefused, Error, InputError, Result};
use crate::labels::{Label, Materialized, Raise, RaiseOutcome, SessionState, Taint};
use crate::postures::{Posture, PostureLevel};
use crate::sessions::{
    spawned_chain, validate_actor, validate_id, validate_new_id, Origin, Session, TreeEntry,
    TreeNode,
};
use crate::storage::{self, Storage};

/// An open ledger. Cheap to share: wrap it in an `Arc` and call it from many threads; each call
/// takes a pooled connection for its duration.
///
/// Every write is one `BEGIN IMMEDIATE` transaction holding the change and its audit rows.
#[derive(Debug)]
pub struct Ledger {
    pub(crate) storage: Storage,
    pub(crate) config: Config,
}

fn assert_send_sync<T: Send + Sync>() {}
const _: fn() = assert_send_sync::<Ledger>;

impl Ledger {
    /// Opens the ledger at `path` with the default [`Config`], creating and migrating the file
    /// if needed.
    ///
    /// # Errors
    ///
    /// [`StorageError::NotALedger`](crate::StorageError::NotALedger) for a file that is some other database or not a database,
    /// [`StorageError::SchemaTooNew`](crate::StorageError::SchemaTooNew) for a ledger written by a newer build, [`StorageError::ReadOnly`](crate::StorageError::ReadOnly) when
    /// the file cannot be written; in each case the file is left untouched.
    /// [`Error::Storage`] when the file cannot be opened at all.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let ledger = session_ledger::Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// # Ok(()) }
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger> {
        Ledger::open_with(path, Config::default())
    }

    /// Opens the ledger at `path` with `config`.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`], [`StorageError::NoLedger`](crate::StorageError::NoLedger) when the file does not exist and
    /// [`Config::create_if_missing`] is false, and [`InputError::InvalidConfig`](crate::InputError::InvalidConfig) for a `pool_size` of
    /// 0 or a `busy_timeout` beyond what SQLite takes (about 24.8 days), before anything is
    /// opened.
    pub fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Ledger> {
        let storage = Storage::open(path.as_ref(), &config)?;
        Ok(Ledger { storage, config })
    }

    /// The ledger's file.
    pub fn path(&self) -> &Path {
        self.storage.path()
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn now(&self) -> String {
        format_ts(self.config.clock.now())
    }

    /// The clock's time at the stored precision (whole milliseconds), so that a value built
    /// from it equals what a later read returns.
    fn wall_clock(&self) -> chrono::DateTime<chrono::Utc> {
        let now = self.config.clock.now();
        now.duration_trunc(chrono::TimeDelta::milliseconds(1))
            .unwrap_or(now)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, reading the clock once the write lock is
    /// held, so an operation never writes a time from before a change it waited for. The time
    /// is never earlier than the newest audit row's either: when the wall clock steps back (an
    /// NTP correction, a restored VM), the ledger's time stays where it was until the clock
    /// catches up. So the times written never decrease along the audit sequence, and a session
    /// recorded before the step can still be ended (`ended_at >= created_at`).
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>, &Now) -> Result<T>,
    ) -> Result<T> {
        self.storage.write(|tx| {
            let wall = self.wall_clock();
            let time = match storage::audit::latest_time(tx)? {
                Some(latest) if latest > wall => latest,
                _ => wall,
            };
            f(
                tx,
                &Now {
                    time,
                    text: format_ts(time),
                },
            )
        })
    }

    /// Records a root session: no creator, depth 0, born with the default label (`private`,
    /// trusted).
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId) or [`InputError::InvalidActor`](crate::InputError::InvalidActor) for malformed input (ids of the spawned
    /// form `sub-<parent>-<n>` are reserved), [`Conflict::SessionExists`](crate::Conflict::SessionExists) when the id is or was in
    /// use. Nothing is written in either case.
    pub fn create_root(&self, id: &str, actor: &str) -> Result<Session> {
        validate_new_id(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| {
            if storage::sessions::get(tx, id)?.is_some() {
                return Err(Error::Conflict(Conflict::SessionExists(id.to_owned())));
            }
            storage::sessions::insert(tx, id, None, 0, Origin::Root, now)?;
            storage::labels::insert_born(tx, id, now)?;
            storage::audit::append(tx, now, actor, "session.root", Some(id), &json!({}))?;
            Ok(Session {
                id: id.to_owned(),
                created_by: None,
                depth: 0,
                origin: Origin::Root,
                created_at: now.time,
                ended_at: None,
            })
        })
    }

    /// Records a session created by the live session `creator`, within the bounds of rule S2.
    /// The child is not materialized: its first read inherits its label (rule L2).
    ///
    /// `creator` may be a spawned id the ledger has not seen yet; it is recorded first.
    ///
    /// # Errors
    ///
    /// Caller mistakes, with nothing written: [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor),
    /// [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) (no such creator), [`Conflict::SessionEnded`](crate::Conflict::SessionEnded) (the creator
    /// ended), [`Conflict::SessionExists`](crate::Conflict::SessionExists) (the id is or was in use).
    ///
    /// Refusals, with nothing created and one `session.create_refused` audit row written:
    /// [`CreationRefused::DepthLimit`](crate::CreationRefused::DepthLimit), [`CreationRefused::ChildLimit`](crate::CreationRefused::ChildLimit), [`CreationRefused::RateLimit`](crate::CreationRefused::RateLimit).
    pub fn create_child(&self, id: &str, creator: &str, actor: &str) -> Result<Created> {
        validate_new_id(id)?;
        validate_id(creator)?;
        validate_actor(actor)?;
        self.write(|tx, now| {
            // A spawned creator seen for the first time is recorded now (and recorded as ended
            // under an ended session). If the create is refused, that recording is undone with
            // it: a refusal changes nothing but the audit trail.
            storage::savepoint(tx, "resolve_creator")?;
            let parent = resolve(tx, creator, now)?
                .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(creator.to_owned())))?;
            if !parent.is_live() {
                return Err(Error::Conflict(Conflict::SessionEnded(creator.to_owned())));
            }
            if storage::sessions::get(tx, id)?.is_some() {
                return Err(Error::Conflict(Conflict::SessionExists(id.to_owned())));
            }
            let depth = parent.depth + 1;
            if let Some((refusal, mut detail)) =
                self.check_bounds(tx, id, creator, depth, now.time)?
            {
                storage::rollback_to(tx, "resolve_creator")?;
                // Nothing transferred: recorded as positive evidence (rule A1).
                detail["inherited_trust"] = json!(false);
                detail["inherited_trust_reads"] = json!(false);
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "session.create_refused",
                    Some(id),
                    &detail,
                )?;
                return Ok(Err(refusal));
            }
            storage::release(tx, "resolve_creator")?;
            storage::sessions::insert(tx, id, Some(creator), depth, Origin::Created, now)?;
            // Rule P1: the creator's posture as it stands now, under the write lock.
            let posture = storage::postures::inherit(tx, id, creator, now)?;
            let (inherited_trust, inherited_trust_reads) = posture_flags(posture);
            storage::audit::append(
                tx,
                now,
                actor,
                "session.create",
                Some(id),
                &json!({
                    "creator": creator,
                    "depth": depth,
                    "inherited_trust": inherited_trust,
                    "inherited_trust_reads": inherited_trust_reads,
                }),
            )?;
            Ok(Ok(Created {
                session: Session {
                    id: id.to_owned(),
                    created_by: Some(creator.to_owned()),
                    depth,
                    origin: Origin::Created,
                    created_at: now.time,
                    ended_at: None,
                },
                inherited_trust,
                inherited_trust_reads,
            }))
        })?
    }

    /// The bounds of rule S2, checked under the write lock. Returns the refusal and the detail
    /// of its audit row, or `None` when the create may go ahead.
    fn check_bounds(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        creator: &str,
        depth: u32,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<(Error, serde_json::Value)>> {
        let c = &self.config;
        if depth > c.max_depth {
            return Ok(Some((
                Error::Refused(CreationRefused::DepthLimit {
                    child: id.to_owned(),
                    depth,
                    max: c.max_depth,
                }),
                json!({ "creator": creator, "reason": "depth_limit", "depth": depth, "limit": c.max_depth }),
            )));
        }
        let window = chrono::TimeDelta::from_std(c.rate_window).unwrap_or(chrono::TimeDelta::MAX);
        let since = now
            .checked_sub_signed(window)
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
        let (live, count) = storage::sessions::creation_counts(tx, creator, &format_ts(since))?;
        if live >= c.max_live_children {
            return Ok(Some((
                Error::Refused(CreationRefused::ChildLimit {
                    creator: creator.to_owned(),
                    live,
                    max: c.max_live_children,
                }),
                json!({ "creator": creator, "reason": "child_limit", "live_children": live, "limit": c.max_live_children }),
            )));
        }
        if count >= c.max_creations_per_window {
            return Ok(Some((
                Error::Refused(CreationRefused::RateLimit {
                    creator: creator.to_owned(),
                    count,
                    max: c.max_creations_per_window,
                    window_secs: c.rate_window.as_secs(),
                }),
                json!({ "creator": creator, "reason": "rate_limit", "created_in_window": count,
                        "limit": c.max_creations_per_window, "window_secs": c.rate_window.as_secs() }),
            )));
        }
        Ok(None)
    }

    /// The session's label.
    ///
    /// * A materialized session: its stored label, read without writing.
    /// * A created child not yet materialized (rule L2): one recursive CTE walks `created_by` up
    ///   to the nearest materialized ancestor; the child and every unmaterialized session on
    ///   that path get its label, in one IMMEDIATE transaction, with a `label.inherit` audit row
    ///   each. Two threads reading the same child at once both see that label; it is written once.
    /// * A spawned id `sub-<parent>-<n>` with no row (rule L3): the parsed parent chain is
    ///   recorded as rows (including a missing middle child), then inherits as above.
    /// * Any other unknown id (rule L4), or a spawned id none of whose parsed ancestors exists:
    ///   the default label (`private`, trusted) with `known: false`; nothing is written.
    ///
    /// On a handle opened with [`Config::read_only`], the first two cases answer the same label
    /// from the same walk, in one read snapshot, and write nothing: `materialized` is
    /// [`Materialized::Unrecorded`](crate::Materialized::Unrecorded) naming the ancestor it
    /// comes from, and `materialized_at` is `None`. The posture is the session's own row for a
    /// recorded session; for an unrecorded spawned id, the one its first read would copy down
    /// the chain (rule P3: its recorded ancestor's, when that one is live and its posture
    /// counts now), with `allocated_at` the time of this read.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId) for a malformed id; [`Error::Storage`] when the database fails.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, Raise, Taint};
    /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
    /// ledger.create_child("worker", "conductor", "alice")?;
    /// assert_eq!(ledger.state("worker")?.taint, Taint::Secret);
    /// assert_eq!(ledger.state("sub-worker-1")?.taint, Taint::Secret);
    /// assert!(!ledger.state("stranger")?.known);
    /// # Ok(()) }
    /// ```
    pub fn state(&self, id: &str) -> Result<SessionState> {
        validate_id(id)?;
        if let Some(stored) = self.storage.read(|c| storage::labels::get(c, id))? {
            return Ok(stored);
        }
        if self.storage.is_read_only() {
            let now = self.wall_clock();
            return self.storage.snapshot(|c| unrecorded_state(c, id, now));
        }
        let anchored = self.storage.read(|c| {
            Ok(storage::sessions::get(c, id)?.is_some() || spawn_anchor(c, id)?.is_some())
        })?;
        if !anchored {
            return Ok(unknown(id));
        }
        let stored = self.write(|tx, now| materialize(tx, id, now))?;
        Ok(stored.unwrap_or_else(|| unknown(id)))
    }

    /// The session's stored label, without materializing anything: `None` when the session is
    /// not materialized (or not recorded). For displays that must not write; to know a
    /// session's label, use [`Ledger::state`].
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Error::Storage`].
    pub fn stored_label(&self, id: &str) -> Result<Option<SessionState>> {
        validate_id(id)?;
        self.storage.read(|c| storage::labels::get(c, id))
    }

    /// Raises the session's label (rule L1): the higher taint class, and the untrusted flag
    /// ORed. An unmaterialized session inherits first (rule L5), so a raise cannot skip an
    /// ancestor's taint. A raise that would change nothing writes nothing.
    ///
    /// Ended sessions can be raised: a label records what the session saw, and its spawned
    /// children may still be read.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor), [`InputError::NothingToRaise`](crate::InputError::NothingToRaise), and
    /// [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) for an id that is neither recorded nor a spawned id of a
    /// recorded session. Nothing is written in any of these cases.
    pub fn raise(&self, id: &str, raise: Raise, actor: &str) -> Result<RaiseOutcome> {
        validate_id(id)?;
        validate_actor(actor)?;
        if raise.taint.is_none() && !raise.untrusted {
            return Err(Error::Input(InputError::NothingToRaise));
        }
        let requested = Label {
            taint: raise.taint.unwrap_or(Taint::Public),
            untrusted: raise.untrusted,
        };
        self.write(|tx, now| {
            // The stored label alone when there is one: a raise needs nothing else of the
            // session's state. Otherwise the session inherits first (rule L5).
            let before = match storage::labels::label(tx, id)? {
                Some(label) => label,
                None => materialize(tx, id, now)?
                    .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))?
                    .label(),
            };
            let after = before.join(requested);
            let changed = after != before;
            if changed {
                storage::labels::raise(tx, id, after, now)?;
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "label.raise",
                    Some(id),
                    &json!({ "before": before, "after": after }),
                )?;
            }
            Ok(RaiseOutcome {
                session: id.to_owned(),
                before,
                after,
                changed,
            })
        })
    }

    /// Ends a live session, and with it the spawned sub-agents recorded under it (a sub-agent
    /// lives and dies with the session that spawned it; created children are sessions of their
    /// own and stay live). Each stays in the ledger as a tombstone: its id is never reused and
    /// its lineage and label remain readable. One `session.end` audit row per session ended.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor), [`Conflict::UnknownSession`](crate::Conflict::UnknownSession),
    /// [`Conflict::SessionEnded`](crate::Conflict::SessionEnded) when it already ended. Nothing is written in these cases.
    pub fn end(&self, id: &str, actor: &str) -> Result<Session> {
        validate_id(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| {
            let session = storage::sessions::get(tx, id)?
                .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))?;
            if !session.is_live() {
                return Err(Error::Conflict(Conflict::SessionEnded(id.to_owned())));
            }
            let ended = storage::sessions::end_with_spawned(tx, id, now)?;
            let rows = ended.iter().map(|e| {
                let detail = if e == id {
                    json!({})
                } else {
                    json!({ "ended_with": id })
                };
                (e.as_str(), detail.to_string())
            });
            storage::audit::append_all(tx, now, actor, "session.end", rows)?;
            Ok(Session {
                ended_at: Some(now.time),
                ..session
            })
        })
    }

    /// The recorded session with this id, or `None`.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Error::Storage`].
    pub fn session(&self, id: &str) -> Result<Option<Session>> {
        validate_id(id)?;
        self.storage.read(|c| storage::sessions::get(c, id))
    }

    /// The creators of `id`, nearest first, ending with its root. Empty for a root.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) when `id` is not recorded.
    pub fn ancestors(&self, id: &str) -> Result<Vec<Session>> {
        self.require(id)?;
        self.storage.read(|c| storage::sessions::ancestors(c, id))
    }

    /// The sessions `id` created or spawned (that the ledger has recorded), oldest first.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) when `id` is not recorded.
    pub fn children(&self, id: &str) -> Result<Vec<Session>> {
        self.require(id)?;
        self.storage.read(|c| storage::sessions::children(c, id))
    }

    /// The subtree of `id` (itself and every recorded descendant, created or spawned, at any
    /// depth), in depth-first order with children oldest first, each with its depth below `id`.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) when `id` is not recorded.
    pub fn subtree(&self, id: &str) -> Result<Vec<TreeEntry>> {
        validate_id(id)?;
        let rows = self.storage.read(|c| storage::sessions::subtree(c, id))?;
        if rows.is_empty() {
            return Err(Error::Conflict(Conflict::UnknownSession(id.to_owned())));
        }
        Ok(depth_first(rows, &[id.to_owned()], |s| s)
            .into_iter()
            .map(|(session, relative_depth)| TreeEntry {
                session,
                relative_depth,
            })
            .collect())
    }

    /// The subtree of `id` for a tree view: each session, depth-first with children oldest
    /// first, with its label (stored, or the one its first read would give it), whether it is
    /// materialized, and its posture. Everything is read in one read transaction, so the view
    /// is one snapshot of the ledger, and it costs one walk of the subtree. Nothing is written:
    /// an unmaterialized session stays unmaterialized.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) when `id` is not recorded.
    ///
    /// # Example
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, PostureLevel, Raise, Taint};
    /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    /// ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
    /// ledger.create_child("worker", "conductor", "alice")?;
    /// let tree = ledger.tree("conductor")?;
    /// let worker = &tree[1];
    /// assert_eq!((worker.session.id.as_str(), worker.relative_depth), ("worker", 1));
    /// assert_eq!((worker.taint, worker.materialized, worker.trust), (Taint::Secret, false, true));
    /// # Ok(()) }
    /// ```
    pub fn tree(&self, id: &str) -> Result<Vec<TreeNode>> {
        validate_id(id)?;
        let (rows, inherited) = self.storage.snapshot(|c| {
            let rows = storage::sessions::tree(c, id.into())?;
            // The top's label, when it is not stored, comes from above the tree.
            let inherited = match rows.first() {
                Some(top) if top.label.is_none() => {
                    storage::labels::inherited(c, id)?.map(|(_, label)| label)
                }
                _ => None,
            };
            Ok((rows, inherited))
        })?;
        if rows.is_empty() {
            return Err(Error::Conflict(Conflict::UnknownSession(id.to_owned())));
        }
        tree_nodes(rows, &[id.to_owned()], inherited)
    }

    /// Every recorded session as a forest for a tree view, as [`Ledger::tree`] gives one
    /// subtree: each root's subtree in turn, roots in the order they were opened. It reads the
    /// whole ledger.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`].
    pub fn forest(&self) -> Result<Vec<TreeNode>> {
        let rows = self
            .storage
            .snapshot(|c| storage::sessions::tree(c, None))?;
        let roots: Vec<String> = rows
            .iter()
            .filter(|r| r.session.created_by.is_none())
            .map(|r| r.session.id.clone())
            .collect();
        tree_nodes(rows, &roots, None)
    }

    fn require(&self, id: &str) -> Result<Session> {
        self.session(id)?
            .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))
    }
}

pub(crate) fn unknown(id: &str) -> SessionState {
    let label = Label::default();
    SessionState {
        session: id.to_owned(),
        taint: label.taint,
        untrusted: label.untrusted,
        known: false,
        materialized: None,
        materialized_at: None,
        raised_at: None,
        trust: false,
        trust_reads: false,
        posture: None,
    }
}

/// `(inherited_trust, inherited_trust_reads)` for the audit of an allocation.
pub(crate) fn posture_flags(level: Option<PostureLevel>) -> (bool, bool) {
    (
        level == Some(PostureLevel::Trust),
        level == Some(PostureLevel::TrustReads),
    )
}

/// The time of a write, read under its write lock: as a time and in the stored form.
pub(crate) struct Now {
    pub(crate) time: chrono::DateTime<chrono::Utc>,
    pub(crate) text: String,
}

impl std::ops::Deref for Now {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

/// A created child, and what it was born with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Created {
    /// The new session.
    #[serde(flatten)]
    pub session: Session,
    /// It inherited its creator's `trust` (rule P1).
    pub inherited_trust: bool,
    /// It inherited its creator's `trust_reads` (rule P1; never widened to `trust`, P2).
    pub inherited_trust_reads: bool,
}

fn fetch(tx: &Transaction<'_>, id: &str) -> Result<Session> {
    storage::sessions::get(tx, id)?.ok_or_else(|| {
        Error::Corruption(Corruption::new(format!(
            "session {id:?} vanished inside its transaction"
        )))
    })
}

/// The nearest recorded session on the spawned chain above `id` (excluding `id` itself).
pub(crate) fn spawn_anchor(conn: &rusqlite::Connection, id: &str) -> Result<Option<Session>> {
    for ancestor in spawned_chain(id).into_iter().skip(1) {
        if let Some(session) = storage::sessions::get(conn, ancestor)? {
            return Ok(Some(session));
        }
    }
    Ok(None)
}

/// Finds `id` inside a write transaction, recording it (and any missing spawned ancestors) when
/// it is a spawned id of a recorded session. `None` when it is neither.
pub(crate) fn resolve(tx: &Transaction<'_>, id: &str, now: &str) -> Result<Option<Session>> {
    if let Some(session) = storage::sessions::get(tx, id)? {
        return Ok(Some(session));
    }
    let Some(anchor) = spawn_anchor(tx, id)? else {
        return Ok(None);
    };
    let chain = spawned_chain(id);
    let top = chain.iter().position(|c| *c == anchor.id).ok_or_else(|| {
        Error::Corruption(Corruption::new(format!(
            "{:?} is not on the chain of {id:?}",
            anchor.id
        )))
    })?;
    // A sub-agent lives and dies with the session that spawned it: under an ended anchor, every
    // link recorded now is recorded as ended, so the whole chain shares the anchor's liveness.
    let parent_live = anchor.is_live();
    let mut depth = anchor.depth;
    for i in (0..top).rev() {
        depth += 1;
        let (child, parent) = (chain[i], chain[i + 1]);
        storage::sessions::insert(tx, child, Some(parent), depth, Origin::Spawned, now)?;
        // Rule P3: a spawned child's first sight is its allocation; an ended parent's posture
        // does not count, so it passes nothing on.
        let posture = if parent_live {
            storage::postures::inherit(tx, child, parent, now)?
        } else {
            storage::sessions::end(tx, child, now)?;
            None
        };
        let (inherited_trust, inherited_trust_reads) = posture_flags(posture);
        storage::audit::append(
            tx,
            now,
            LEDGER_ACTOR,
            "session.spawn",
            Some(child),
            &json!({
                "created_by": parent,
                "depth": depth,
                "inherited_trust": inherited_trust,
                "inherited_trust_reads": inherited_trust_reads,
                "ended": !parent_live,
            }),
        )?;
    }
    fetch(tx, id).map(Some)
}

/// Rules L2 and L3 inside a write transaction: the stored label of `id`, materializing it (and
/// its unmaterialized path, and for a spawned id its missing rows) first if needed. `None` when
/// `id` is unknown and not a spawned id of a recorded session.
pub(crate) fn materialize(
    tx: &Transaction<'_>,
    id: &str,
    now: &str,
) -> Result<Option<SessionState>> {
    if let Some(stored) = storage::labels::get(tx, id)? {
        return Ok(Some(stored));
    }
    if resolve(tx, id, now)?.is_none() {
        return Ok(None);
    }
    let written = storage::labels::materialize_path(tx, id, now)?;
    let rows = written.iter().map(|w| {
        let detail = json!({
            "from": w.from,
            "taint": w.label.taint,
            "untrusted": w.label.untrusted,
        });
        (w.session.as_str(), detail.to_string())
    });
    storage::audit::append_all(tx, now, LEDGER_ACTOR, "label.inherit", rows)?;
    storage::labels::get(tx, id)?.map(Some).ok_or_else(|| {
        Error::Corruption(Corruption::new(format!(
            "{id:?} has no materialized ancestor"
        )))
    })
}

/// Rules L2, L3 and P3 without writing, for a read-only handle: the state a first read would
/// record for `id`, read on `conn` (one snapshot). The stored state when `id` is materialized;
/// the default with `known: false` when `id` is neither recorded nor a spawned id of a
/// recorded session (rule L4).
fn unrecorded_state(
    conn: &rusqlite::Connection,
    id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<SessionState> {
    if let Some(stored) = storage::labels::get(conn, id)? {
        return Ok(stored);
    }
    let (walk_from, live, posture) = match storage::sessions::get(conn, id)? {
        // A recorded session holds its posture from its allocation (rule P1 or P3).
        Some(session) => (
            session.id.clone(),
            session.is_live(),
            storage::postures::get(conn, id)?,
        ),
        None => {
            let Some(anchor) = spawn_anchor(conn, id)? else {
                return Ok(unknown(id));
            };
            // Recording the chain would give each link its parent's posture of the current
            // epoch, under a live anchor only (see `resolve`): the anchor's, passed down.
            let posture = match storage::postures::get(conn, &anchor.id)? {
                Some(p) if anchor.is_live() && p.current => {
                    let chain = spawned_chain(id);
                    let top = chain.iter().position(|c| *c == anchor.id).ok_or_else(|| {
                        Error::Corruption(Corruption::new(format!(
                            "{:?} is not on the chain of {id:?}",
                            anchor.id
                        )))
                    })?;
                    let mut links = p.chain.clone();
                    links.extend(chain[..top].iter().rev().map(|c| (*c).to_owned()));
                    Some(crate::postures::Posture {
                        session: id.to_owned(),
                        source: crate::postures::PostureSource::Inherited,
                        inherited_from: chain.get(1).map(|c| (*c).to_owned()),
                        allocated_at: now,
                        chain: links,
                        current: true,
                        ..p
                    })
                }
                _ => None,
            };
            (anchor.id.clone(), anchor.is_live(), posture)
        }
    };
    let (from, label) = storage::labels::inherited(conn, &walk_from)?.ok_or_else(|| {
        Error::Corruption(Corruption::new(format!(
            "{id:?} has no materialized ancestor"
        )))
    })?;
    let counts = |level| crate::postures::Posture::admits(posture.as_ref(), live, level);
    Ok(SessionState {
        session: id.to_owned(),
        taint: label.taint,
        untrusted: label.untrusted,
        known: true,
        materialized: Some(Materialized::Unrecorded { from }),
        materialized_at: None,
        raised_at: None,
        trust: counts(PostureLevel::Trust),
        trust_reads: counts(PostureLevel::TrustReads),
        posture,
    })
}

/// Orders `rows` depth-first from `tops`, children in the order given, each with its depth
/// below its top.
fn depth_first<T>(
    rows: Vec<T>,
    tops: &[String],
    session: impl Fn(&T) -> &Session,
) -> Vec<(T, u32)> {
    let mut by_id: HashMap<String, T> = HashMap::with_capacity(rows.len());
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows {
        let s = session(&row);
        if let Some(parent) = &s.created_by {
            children
                .entry(parent.clone())
                .or_default()
                .push(s.id.clone());
        }
        by_id.insert(s.id.clone(), row);
    }
    let mut out = Vec::with_capacity(by_id.len());
    let mut stack: Vec<(String, u32)> = tops.iter().rev().map(|t| (t.clone(), 0)).collect();
    while let Some((id, rel)) = stack.pop() {
        if let Some(kids) = children.get(&id) {
            stack.extend(kids.iter().rev().map(|k| (k.clone(), rel + 1)));
        }
        if let Some(row) = by_id.remove(&id) {
            out.push((row, rel));
        }
    }
    out
}

/// A tree view's nodes from its rows, depth-first from `tops`. A session that is not
/// materialized shows the label its first read would give it: its creator's as shown (the
/// creator comes first in depth-first order), or for a top, `top_label`.
fn tree_nodes(
    rows: Vec<storage::sessions::TreeRow>,
    tops: &[String],
    top_label: Option<Label>,
) -> Result<Vec<TreeNode>> {
    let mut shown: HashMap<String, Label> = HashMap::new();
    let mut nodes = Vec::with_capacity(rows.len());
    for (row, relative_depth) in depth_first(rows, tops, |r| &r.session) {
        let materialized = row.label.is_some();
        let label = match row.label {
            Some(label) => label,
            None => {
                let above = match (relative_depth, &row.session.created_by) {
                    (0, _) | (_, None) => top_label,
                    (_, Some(creator)) => shown.get(creator).copied(),
                };
                above.ok_or_else(|| {
                    Error::Corruption(Corruption::new(format!(
                        "{:?} has no materialized ancestor",
                        row.session.id
                    )))
                })?
            }
        };
        let live = row.session.is_live();
        let counts = |level| Posture::admits(row.posture.as_ref(), live, level);
        shown.insert(row.session.id.clone(), label);
        nodes.push(TreeNode {
            trust: counts(PostureLevel::Trust),
            trust_reads: counts(PostureLevel::TrustReads),
            relative_depth,
            taint: label.taint,
            untrusted: label.untrusted,
            materialized,
            posture: row.posture,
            session: row.session,
        });
    }
    Ok(nodes)
}
