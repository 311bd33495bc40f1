//! Sessions: creating them within the bounds (rule S2), recording spawned sub-agents when they
//! are first seen, ending them, and their lineage.
//!
//! Terms used throughout the crate:
//!
//! * a **root** is a session with no creator, opened by an operator; its **depth** is 0, and
//!   every other session's depth is its creator's depth + 1;
//! * a **created child** was made through [`Ledger::create_child`](crate::Ledger::create_child),
//!   so the ledger recorded its creator when it was made;
//! * a **spawned child** has an id of the form `sub-<parent>-<n>` that the ledger never saw
//!   being made; its parent is parsed from the id (see [`spawned_parent`](crate::spawned_parent))
//!   and it is recorded the first time it is read;
//! * the **subtree** of a session is the session and all its descendants, created or spawned.
//!
//! This module owns the `sessions` rows and the walks over them. A child's posture at
//! allocation is `crate::postures`' rule, which this module calls; it calls no concept that
//! calls it back.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit::{self, LEDGER_ACTOR};
use crate::config::Config;
use crate::error::{Conflict, Corruption, CreationRefused, Error, Result};
use crate::model::{AuditKind, Id, Label, Origin, Posture, PostureLevel, Session, Taint};
use crate::postures;
use crate::storage::{CreationCounts, NewSession, Read, TreeRow, TreeTop, Write};

mod levels;

pub(crate) use levels::level;
pub use levels::{LevelNode, TreeLevel};

/// A created child, and what it was born with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Created {
    /// The new session.
    #[serde(flatten)]
    pub session: Session,
    /// It inherited its creator's `trust` (rule P1).
    pub inherited_trust: bool,
    /// It inherited its creator's `trust_reads` (rule P1; never widened to `trust`, P2).
    pub inherited_trust_reads: bool,
}

/// How a create ended: the child was created, or a bound refused it. Either way the
/// transaction commits, because a refusal is audited.
pub(crate) enum CreateOutcome {
    Created(Created),
    Refused(CreationRefused),
}

/// The bounds of rule S2, from the [`Config`].
pub(crate) struct Bounds {
    max_depth: u32,
    max_live_children: u32,
    max_creations_per_window: u32,
    rate_window: Duration,
}

impl From<&Config> for Bounds {
    fn from(c: &Config) -> Bounds {
        Bounds {
            max_depth: c.max_depth,
            max_live_children: c.max_live_children,
            max_creations_per_window: c.max_creations_per_window,
            rate_window: c.rate_window,
        }
    }
}

/// An ended session, and the spawned sub-agents that ended with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ended {
    /// The session, as it is now (a tombstone).
    #[serde(flatten)]
    pub session: Session,
    /// The spawned sub-agents recorded under it, at any depth through spawned sessions, that
    /// were live and ended with it (created children are sessions of their own and stay live),
    /// by depth then id.
    pub spawned: Vec<String>,
}

/// A session in a drawn tree: the session and its depth below the tree's top.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeEntry {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its depth below the top of the tree that was asked for (0 for the top itself).
    pub relative_depth: u32,
}

/// A session in a tree view ([`Ledger::tree`](crate::Ledger::tree)): its lineage, its label
/// and its posture, all read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeNode {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its depth below the top of the tree that was asked for (0 for the top itself).
    pub relative_depth: u32,
    /// Its taint: the stored one when it is materialized, otherwise the one its first read
    /// would give it (its nearest materialized ancestor's, rule L2). Reading the tree writes
    /// nothing.
    pub taint: Taint,
    /// Its untrusted flag, as for `taint`.
    pub untrusted: bool,
    /// Whether its label is stored (false: `taint` and `untrusted` are inherited on read).
    pub materialized: bool,
    /// Its posture admits every command now (as `trust` in [`SessionState`](crate::SessionState)).
    pub trust: bool,
    /// Its posture admits read-only commands now.
    pub trust_reads: bool,
    /// Its posture row, current or not (`current` says which), with its source.
    pub posture: Option<Posture>,
    /// How many override scopes of its approve every command now (0 for an ended session).
    pub live_scopes: u32,
    /// How many command patterns of its approve the lines they admit (0 for an ended session).
    pub patterns: u32,
}

/// Records a root: no creator, depth 0, born with the default label (`private`, trusted).
pub(crate) fn create_root(
    tx: &mut dyn Write,
    id: Id<'_>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Session> {
    if tx.read().session(id)?.is_some() {
        return Err(Conflict::SessionExists(id.as_str().to_owned()).into());
    }
    tx.insert_session(&NewSession {
        id,
        created_by: None,
        depth: 0,
        origin: Origin::Root,
        at: now,
    })?;
    tx.insert_born_label(id, Label::default(), now)?;
    audit::append(
        tx,
        now,
        actor,
        AuditKind::SessionRoot,
        Some(id.as_str()),
        &json!({}),
    )?;
    Ok(Session {
        id: id.as_str().to_owned(),
        created_by: None,
        depth: 0,
        origin: Origin::Root,
        created_at: now,
        ended_at: None,
    })
}

/// Records `id` as created by the live session `creator`, within `bounds` (rule S2), with its
/// creator's posture as it stands now, under the write lock (rule P1); or, when `withheld`
/// says why, with no posture at all, the reason in the audit row (rule G2: a sub-agent whose
/// spawner cannot be established). What the create checks is read at once
/// ([`CreationFacts`](crate::storage::CreationFacts)). A spawned creator seen for the first
/// time is recorded first; a refusal undoes that, and records only the refusal.
pub(crate) fn create_child(
    tx: &mut dyn Write,
    id: Id<'_>,
    creator: Id<'_>,
    actor: &str,
    bounds: &Bounds,
    withheld: Option<&str>,
    now: DateTime<Utc>,
) -> Result<CreateOutcome> {
    let since = bounds.window_start(now);
    let mut facts = tx.read().creation_facts(creator, id, since)?;
    // Only a creator recorded by this create needs undoing on a refusal.
    let recording_creator = facts.creator.is_none();
    if recording_creator {
        tx.savepoint()?;
        if resolve(tx, creator, now)?.is_some() {
            facts = tx.read().creation_facts(creator, id, since)?;
        }
    }
    let parent = facts
        .creator
        .ok_or_else(|| Error::from(Conflict::UnknownSession(creator.as_str().to_owned())))?;
    if !parent.is_live() {
        return Err(Conflict::SessionEnded(creator.as_str().to_owned()).into());
    }
    if facts.taken {
        return Err(Conflict::SessionExists(id.as_str().to_owned()).into());
    }
    let depth = parent.depth + 1;
    if let Some((refusal, mut detail)) = check_bounds(id, creator, depth, bounds, &facts.counts) {
        if recording_creator {
            tx.rollback_to_savepoint()?;
        }
        // Nothing transferred: recorded as positive evidence (rule A1).
        detail["inherited_trust"] = json!(false);
        detail["inherited_trust_reads"] = json!(false);
        let kind = AuditKind::SessionCreateRefused;
        audit::append(tx, now, actor, kind, Some(id.as_str()), &detail)?;
        return Ok(CreateOutcome::Refused(refusal));
    }
    if recording_creator {
        tx.release_savepoint()?;
    }
    tx.insert_session(&NewSession {
        id,
        created_by: Some(creator),
        depth,
        origin: Origin::Created,
        at: now,
    })?;
    // Rule P1: the posture the creator holds now, read under the write lock, and copied in
    // the same transaction; the database checks the copy is exactly the creator's.
    let (trust, trust_reads) = match withheld {
        None => {
            tx.inherit_known_posture(id, creator, now, facts.creator_posture)?;
            postures::born_with(facts.creator_posture)
        }
        Some(_) => (false, false),
    };
    let mut detail = json!({
        "creator": creator.as_str(),
        "depth": depth,
        "inherited_trust": trust,
        "inherited_trust_reads": trust_reads,
    });
    if let Some(why) = withheld {
        detail["withheld"] = json!(why);
    }
    audit::append(
        tx,
        now,
        actor,
        AuditKind::SessionCreate,
        Some(id.as_str()),
        &detail,
    )?;
    Ok(CreateOutcome::Created(Created {
        session: Session {
            id: id.as_str().to_owned(),
            created_by: Some(creator.as_str().to_owned()),
            depth,
            origin: Origin::Created,
            created_at: now,
            ended_at: None,
        },
        inherited_trust: trust,
        inherited_trust_reads: trust_reads,
    }))
}

impl Bounds {
    /// The start of the creation-rate window that ends at `now`.
    fn window_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let window = TimeDelta::from_std(self.rate_window).unwrap_or(TimeDelta::MAX);
        now.checked_sub_signed(window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

/// The bounds of rule S2, checked against what was read under the write lock. Returns the
/// refusal and the detail of its audit row, or `None` when the create may go ahead.
fn check_bounds(
    id: Id<'_>,
    creator: Id<'_>,
    depth: u32,
    b: &Bounds,
    counts: &CreationCounts,
) -> Option<(CreationRefused, serde_json::Value)> {
    let creator_id = creator.as_str();
    if depth > b.max_depth {
        return Some((
            CreationRefused::DepthLimit {
                child: id.as_str().to_owned(),
                depth,
                max: b.max_depth,
            },
            json!({ "creator": creator_id, "reason": "depth_limit", "depth": depth,
                    "limit": b.max_depth }),
        ));
    }
    if counts.live >= b.max_live_children {
        return Some((
            CreationRefused::ChildLimit {
                creator: creator_id.to_owned(),
                live: counts.live,
                max: b.max_live_children,
            },
            json!({ "creator": creator_id, "reason": "child_limit",
                    "live_children": counts.live, "limit": b.max_live_children }),
        ));
    }
    if counts.in_window >= b.max_creations_per_window {
        let window_secs = b.rate_window.as_secs();
        return Some((
            CreationRefused::RateLimit {
                creator: creator_id.to_owned(),
                count: counts.in_window,
                max: b.max_creations_per_window,
                window_secs,
            },
            json!({ "creator": creator_id, "reason": "rate_limit",
                    "created_in_window": counts.in_window,
                    "limit": b.max_creations_per_window, "window_secs": window_secs }),
        ));
    }
    None
}

/// The nearest recorded session on the spawned chain above `id` (excluding `id` itself).
pub(crate) fn spawn_anchor(r: &mut dyn Read, id: Id<'_>) -> Result<Option<Session>> {
    for ancestor in id.spawned_chain().into_iter().skip(1) {
        if let Some(session) = r.session(ancestor)? {
            return Ok(Some(session));
        }
    }
    Ok(None)
}

/// True when `id` is recorded, or is a spawned id whose chain reaches a recorded session: a
/// first read of it has something to inherit from.
pub(crate) fn is_anchored(r: &mut dyn Read, id: Id<'_>) -> Result<bool> {
    Ok(r.session(id)?.is_some() || spawn_anchor(r, id)?.is_some())
}

/// The position of `anchor` on `id`'s spawned chain.
pub(crate) fn chain_position(chain: &[Id<'_>], id: Id<'_>, anchor: &Session) -> Result<usize> {
    chain.iter().position(|c| *c == *anchor.id).ok_or_else(|| {
        Corruption::new(format!("{:?} is not on the chain of {id:?}", anchor.id)).into()
    })
}

/// Finds `id` inside a write transaction, recording it (and any missing spawned ancestors) when
/// it is a spawned id of a recorded session. `None` when it is neither.
pub(crate) fn resolve(
    tx: &mut dyn Write,
    id: Id<'_>,
    now: DateTime<Utc>,
) -> Result<Option<Session>> {
    if let Some(session) = tx.read().session(id)? {
        return Ok(Some(session));
    }
    let Some(anchor) = spawn_anchor(tx.read(), id)? else {
        return Ok(None);
    };
    let chain = id.spawned_chain();
    let top = chain_position(&chain, id, &anchor)?;
    // A sub-agent lives and dies with the session that spawned it: under an ended anchor, every
    // link recorded now is recorded as ended, so the whole chain shares the anchor's liveness.
    let parent_live = anchor.is_live();
    let mut depth = anchor.depth;
    for i in (0..top).rev() {
        depth += 1;
        let (child, parent) = (chain[i], chain[i + 1]);
        tx.insert_session(&NewSession {
            id: child,
            created_by: Some(parent),
            depth,
            origin: Origin::Spawned,
            at: now,
        })?;
        // Rule P3: a spawned child's first sight is its allocation; an ended parent's posture
        // does not count, so it passes nothing on.
        let posture = if parent_live {
            postures::inherit(tx, child, parent, now)?
        } else {
            tx.end_session(child, now)?;
            None
        };
        let (trust, trust_reads) = postures::born_with(posture);
        let detail = json!({
            "created_by": parent.as_str(),
            "depth": depth,
            "inherited_trust": trust,
            "inherited_trust_reads": trust_reads,
            "ended": !parent_live,
        });
        let kind = AuditKind::SessionSpawn;
        audit::append(tx, now, LEDGER_ACTOR, kind, Some(child.as_str()), &detail)?;
    }
    tx.read().session(id)?.map(Some).ok_or_else(|| {
        Corruption::new(format!("session {id:?} vanished inside its transaction")).into()
    })
}

/// [`resolve`], for an operation that needs a live session: an unknown id or an ended session
/// is the caller's conflict.
pub(crate) fn resolve_live(tx: &mut dyn Write, id: Id<'_>, now: DateTime<Utc>) -> Result<Session> {
    let session = resolve(tx, id, now)?
        .ok_or_else(|| Error::from(Conflict::UnknownSession(id.as_str().to_owned())))?;
    if session.is_live() {
        Ok(session)
    } else {
        Err(Conflict::SessionEnded(id.as_str().to_owned()).into())
    }
}

/// The recorded session `id`; an unknown one is the caller's conflict.
pub(crate) fn require(r: &mut dyn Read, id: Id<'_>) -> Result<Session> {
    r.session(id)?
        .ok_or_else(|| Conflict::UnknownSession(id.as_str().to_owned()).into())
}

/// Ends a live session, and with it the spawned sub-agents recorded under it (a sub-agent lives
/// and dies with the session that spawned it; created children are sessions of their own and
/// stay live). One `session.end` row per session ended.
pub(crate) fn end(
    tx: &mut dyn Write,
    id: Id<'_>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Ended> {
    let session = require(tx.read(), id)?;
    if !session.is_live() {
        return Err(Conflict::SessionEnded(id.as_str().to_owned()).into());
    }
    let ended = tx.end_with_spawned(id, now)?;
    let rows = ended.iter().map(|e| {
        let detail = if *e == *id.as_str() {
            json!({})
        } else {
            json!({ "ended_with": id.as_str() })
        };
        (e.as_str(), detail.to_string())
    });
    audit::append_all(tx, now, actor, AuditKind::SessionEnd, rows)?;
    let spawned = ended.into_iter().filter(|e| *e != *id.as_str()).collect();
    Ok(Ended {
        session: Session {
            ended_at: Some(now),
            ..session
        },
        spawned,
    })
}

/// The subtree of `id` in depth-first order, children oldest first, each with its depth below
/// `id`.
pub(crate) fn subtree(r: &mut dyn Read, id: Id<'_>) -> Result<Vec<TreeEntry>> {
    let rows = r.subtree(id)?;
    if rows.is_empty() {
        return Err(Conflict::UnknownSession(id.as_str().to_owned()).into());
    }
    Ok(depth_first(rows, &[id.as_str().to_owned()], |s| s)
        .into_iter()
        .map(|(session, relative_depth)| TreeEntry {
            session,
            relative_depth,
        })
        .collect())
}

/// A tree view from `top`, in one read: each session depth-first with its label (stored, or
/// what its first read would give it), its posture, and its grants that approve at `now`.
/// Writes nothing. Run it inside one read transaction, so that the view is one state of the
/// ledger.
pub(crate) fn tree(
    r: &mut dyn Read,
    top: TreeTop<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<TreeNode>> {
    let rows = r.tree(top, now)?;
    let (tops, top_label) = match top {
        TreeTop::Session(id) => {
            if rows.is_empty() {
                return Err(Conflict::UnknownSession(id.as_str().to_owned()).into());
            }
            // The top's label, when it is not stored, comes from above the tree.
            let inherited = match rows.first() {
                Some(first) if first.label.is_none() => r.nearest_label(id)?.map(|(_, l)| l),
                _ => None,
            };
            (vec![id.as_str().to_owned()], inherited)
        }
        TreeTop::Roots => {
            let roots = rows
                .iter()
                .filter(|row| row.session.created_by.is_none())
                .map(|row| row.session.id.clone())
                .collect();
            (roots, None)
        }
    };
    tree_nodes(rows, &tops, top_label)
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
    rows: Vec<TreeRow>,
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
                    Corruption::new(format!("{:?} has no materialized ancestor", row.session.id))
                })?
            }
        };
        let live = row.session.is_live();
        let counts = |level| Posture::admits(row.posture.as_ref(), live, level);
        shown.insert(row.session.id.clone(), label);
        let (live_scopes, patterns) = grant_marks(&row);
        nodes.push(TreeNode {
            trust: counts(PostureLevel::Trust),
            trust_reads: counts(PostureLevel::TrustReads),
            live_scopes,
            patterns,
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

/// A tree row's live scopes and patterns, as a view shows them: none on an ended session, for
/// which nothing approves.
pub(crate) fn grant_marks(row: &TreeRow) -> (u32, u32) {
    if row.session.is_live() {
        (row.live_scopes, row.patterns)
    } else {
        (0, 0)
    }
}
