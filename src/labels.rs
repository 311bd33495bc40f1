//! Labels: what a session may have seen (rules L1 to L5).
//!
//! A label is a taint class on the ordered lattice `public < private < secret` and an
//! `untrusted` flag. Labels only rise (L1): a raise takes the higher class and ORs the flag. A
//! session is **materialized** once its label has been written; a child is not materialized at
//! birth, and its first read copies the label of its nearest materialized ancestor (L2), through
//! a spawned id's parsed chain too (L3). An id the ledger does not know reads as the default and
//! writes nothing (L4). A raise of an unmaterialized session inherits first (L5).
//!
//! This module owns reading, materializing and raising labels. It records spawned ids through
//! `crate::sessions` and audit rows through `crate::audit`.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit::{self, LEDGER_ACTOR};
use crate::error::{Conflict, Corruption, Error, InputError, Result};
use crate::model::{
    AuditKind, Id, Label, Materialized, Posture, PostureLevel, PostureSource, Taint,
};
use crate::sessions;
use crate::storage::{Read, StateRow, Write};

/// The answer to "what is this session's state?": its label and its posture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionState {
    /// The session asked about.
    pub session: String,
    /// Its taint class.
    pub taint: Taint,
    /// Whether it has read untrusted data.
    pub untrusted: bool,
    /// False when the ledger does not know the id at all (rule L4): the label is the default
    /// and nothing was written.
    pub known: bool,
    /// How the label was first written; `None` when `known` is false.
    /// [`Materialized::Unrecorded`] when a read-only handle answered without writing it.
    pub materialized: Option<Materialized>,
    /// When the label was first written; `None` when it was not.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub materialized_at: Option<DateTime<Utc>>,
    /// When the label was last raised, if ever.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub raised_at: Option<DateTime<Utc>>,
    /// True when the session is live and holds `trust` in the current epoch.
    pub trust: bool,
    /// True when the session is live and holds `trust_reads` in the current epoch.
    pub trust_reads: bool,
    /// The posture row it holds, current or lapsed, with its provenance.
    pub posture: Option<Posture>,
}

impl SessionState {
    /// The label itself.
    pub fn label(&self) -> Label {
        Label {
            taint: self.taint,
            untrusted: self.untrusted,
        }
    }

    /// The state of an id the ledger does not know (rule L4): the default label, no posture.
    pub(crate) fn unknown(id: Id<'_>) -> SessionState {
        let label = Label::default();
        SessionState {
            session: id.as_str().to_owned(),
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

    /// A recorded session's state with `label` and its posture, whether it is live or not.
    pub(crate) fn recorded(
        id: Id<'_>,
        label: Label,
        live: bool,
        posture: Option<Posture>,
    ) -> SessionState {
        let counts = |level| Posture::admits(posture.as_ref(), live, level);
        SessionState {
            session: id.as_str().to_owned(),
            taint: label.taint,
            untrusted: label.untrusted,
            known: true,
            materialized: None,
            materialized_at: None,
            raised_at: None,
            trust: counts(PostureLevel::Trust),
            trust_reads: counts(PostureLevel::TrustReads),
            posture,
        }
    }
}

/// What a raise asks for: a class to raise to, the untrusted flag, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Raise {
    /// Raise the taint class to at least this.
    pub taint: Option<Taint>,
    /// Set the untrusted flag.
    pub untrusted: bool,
}

impl Raise {
    /// The label this raise merges in: the class asked for (or `public`, the bottom, when
    /// only the flag is), and the flag.
    pub(crate) fn requested(self) -> Result<Label> {
        if self.taint.is_none() && !self.untrusted {
            return Err(InputError::NothingToRaise.into());
        }
        Ok(Label {
            taint: self.taint.unwrap_or(Taint::Public),
            untrusted: self.untrusted,
        })
    }
}

/// The result of a raise. Its `Display` says what changed, or why nothing did: labels only
/// rise, so a class below the session's leaves the label as it is, and the text says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RaiseOutcome {
    /// The session raised.
    pub session: String,
    /// What the raise asked for.
    pub requested: Raise,
    /// The label before the raise (after any first-read inheritance).
    pub before: Label,
    /// The label after it.
    pub after: Label,
    /// False when the label already dominated the request: nothing was written.
    pub changed: bool,
}

impl fmt::Display for RaiseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = &self.session;
        let (before, after) = (self.before, self.after);
        match self.requested.taint {
            _ if self.changed => write!(f, "{id}: {before} -> {after}"),
            Some(asked) if asked < before.taint => write!(
                f,
                "{id}: stays {after}; nothing changed: labels only rise, and {asked} is below {}",
                before.taint
            ),
            _ => write!(f, "{id}: already {after}; nothing changed"),
        }
    }
}

/// The stored state of a materialized session; `None` when it is not materialized.
pub(crate) fn stored_state(r: &mut dyn Read, id: Id<'_>) -> Result<Option<SessionState>> {
    Ok(r.state(id)?.map(|row| state_of(id, row)))
}

fn state_of(id: Id<'_>, row: StateRow) -> SessionState {
    SessionState {
        materialized: Some(row.stored.materialized),
        materialized_at: Some(row.stored.materialized_at),
        raised_at: row.stored.raised_at,
        ..SessionState::recorded(id, row.stored.label, !row.ended, row.posture)
    }
}

/// Rules L2 and L3 inside a write transaction: the stored state of `id`, materializing it (and
/// its unmaterialized path, and for a spawned id its missing rows) first if needed, with one
/// `label.inherit` row per label written. `None` when `id` is unknown and not a spawned id of a
/// recorded session.
pub(crate) fn materialize(
    tx: &mut dyn Write,
    id: Id<'_>,
    now: DateTime<Utc>,
) -> Result<Option<SessionState>> {
    if let Some(stored) = stored_state(tx.read(), id)? {
        return Ok(Some(stored));
    }
    if sessions::resolve(tx, id, now)?.is_none() {
        return Ok(None);
    }
    let written = tx.materialize_path(id, now)?;
    let rows = written.iter().map(|w| {
        let detail = json!({
            "from": w.from,
            "taint": w.label.taint,
            "untrusted": w.label.untrusted,
        });
        (w.session.as_str(), detail.to_string())
    });
    audit::append_all(tx, now, LEDGER_ACTOR, AuditKind::LabelInherit, rows)?;
    stored_state(tx.read(), id)?
        .map(Some)
        .ok_or_else(|| no_materialized_ancestor(id))
}

fn no_materialized_ancestor(id: Id<'_>) -> Error {
    Corruption::new(format!("{id:?} has no materialized ancestor")).into()
}

/// Rules L2, L3 and P3 without writing, for a read-only handle: the state a first read would
/// record for `id`, read in one snapshot. The stored state when `id` is materialized; the
/// default with `known: false` when `id` is neither recorded nor a spawned id of a recorded
/// session (rule L4).
pub(crate) fn unrecorded_state(
    r: &mut dyn Read,
    id: Id<'_>,
    now: DateTime<Utc>,
) -> Result<SessionState> {
    if let Some(stored) = stored_state(r, id)? {
        return Ok(stored);
    }
    let (walk_from, live, posture) = match r.session(id)? {
        // A recorded session holds its posture from its allocation (rule P1 or P3).
        Some(session) => (session.id.clone(), session.is_live(), r.posture(id)?),
        None => {
            let Some(anchor) = sessions::spawn_anchor(r, id)? else {
                return Ok(SessionState::unknown(id));
            };
            let posture = spawned_posture(r, id, &anchor, now)?;
            (anchor.id.clone(), anchor.is_live(), posture)
        }
    };
    let (from, label) = r
        .nearest_label(Id::stored(&walk_from))?
        .ok_or_else(|| no_materialized_ancestor(id))?;
    Ok(SessionState {
        materialized: Some(Materialized::Unrecorded { from }),
        ..SessionState::recorded(id, label, live, posture)
    })
}

/// The posture recording the spawned chain of `id` would give it: its recorded `anchor`'s of
/// the current epoch, passed down the chain, under a live anchor only (see
/// [`sessions::resolve`]).
fn spawned_posture(
    r: &mut dyn Read,
    id: Id<'_>,
    anchor: &crate::model::Session,
    now: DateTime<Utc>,
) -> Result<Option<Posture>> {
    let Some(held) = r.posture(Id::stored(&anchor.id))? else {
        return Ok(None);
    };
    if !anchor.is_live() || !held.current {
        return Ok(None);
    }
    let chain = id.spawned_chain();
    let top = sessions::chain_position(&chain, id, anchor)?;
    let mut links = held.chain.clone();
    links.extend(chain[..top].iter().rev().map(|c| c.as_str().to_owned()));
    Ok(Some(Posture {
        session: id.as_str().to_owned(),
        source: PostureSource::Inherited,
        inherited_from: chain.get(1).map(|c| c.as_str().to_owned()),
        allocated_at: now,
        chain: links,
        current: true,
        ..held
    }))
}

/// Rule L1 (and L5): raises the label of `id` to at least `requested`; an unmaterialized
/// session inherits first, so a raise cannot skip an ancestor's taint. A raise that would
/// change nothing writes nothing.
pub(crate) fn raise(
    tx: &mut dyn Write,
    id: Id<'_>,
    asked: Raise,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<RaiseOutcome> {
    let requested = asked.requested()?;
    // The stored label alone when there is one: a raise needs nothing else of the session's
    // state. Otherwise the session inherits first (rule L5).
    let before = match tx.read().label(id)? {
        Some(label) => label,
        None => materialize(tx, id, now)?
            .ok_or_else(|| Error::from(Conflict::UnknownSession(id.as_str().to_owned())))?
            .label(),
    };
    let after = before.join(requested);
    let changed = after != before;
    if changed {
        tx.raise_label(id, after, now)?;
        let detail = json!({ "before": before, "after": after });
        audit::append(
            tx,
            now,
            actor,
            AuditKind::LabelRaise,
            Some(id.as_str()),
            &detail,
        )?;
    }
    Ok(RaiseOutcome {
        session: id.as_str().to_owned(),
        requested: asked,
        before,
        after,
        changed,
    })
}
