//! Authority: everything that approves for a session now, and the stops that take it away.
//!
//! A session's **authority** is what can approve one of its commands without asking: its
//! posture, with the chain back to the operator's grant; its live override scopes, each of
//! which approves every command until it expires; and its command patterns, which approve the
//! lines they admit. Only the posture follows a delegation (rules P1, P4), so revoking
//! postures, even down a whole tree (R1, R4), leaves the grants standing: a stop lists what
//! still approves after it, and can take scopes and patterns with it in the same transaction
//! ([`AlsoRevoke`]). A preview's token binds a cascade to the postures and the grants it saw
//! (R2).
//!
//! This module owns the authority view, previews and their tokens, and revocations as events:
//! it calls `crate::postures` to remove postures and `crate::grants` to read and revoke
//! grants, and reads the session through `crate::sessions`.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha3::{Digest, Sha3_256};

use crate::audit;
use crate::clock::format_ts;
use crate::error::{Conflict, Result};
use crate::grants::{self, AlsoRevoke, CommandPattern};
use crate::model::{Grant, Id, Posture, PostureLevel, Scope, StandingGrant};
use crate::postures::{self, Revocation, RevocationEvent, RevocationKind};
use crate::sessions;
use crate::storage::{Reach, Read, SubtreePosture, Write};

/// Everything that approves for one session now ([`Ledger::authority`](crate::Ledger::authority)),
/// read in one snapshot: the answer to "what may this session do without asking?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Authority {
    /// The session.
    pub session: String,
    /// Whether it is live: nothing approves for an ended session.
    pub live: bool,
    /// Its posture row, with its chain back to the operator's grant; `current` says whether it
    /// counts (a posture of an earlier epoch does not).
    pub posture: Option<Posture>,
    /// Its override scopes live now: each approves every command until it expires.
    pub scopes: Vec<Scope>,
    /// Its command patterns: each approves the lines it admits, unless this build refuses it
    /// (`refused`).
    pub patterns: Vec<CommandPattern>,
    /// What keeps any of the above from approving now; empty when nothing does.
    pub withheld: Vec<Withheld>,
}

/// Why something a session holds does not approve now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Withheld {
    /// The session ended: every decision for it asks, whatever it holds.
    SessionEnded,
    /// Its posture belongs to an earlier epoch, which no longer counts (rule P5).
    LapsedPosture {
        /// The posture's epoch.
        epoch: i64,
    },
    /// A pattern stored under an earlier build's looser rules, which this build never lets
    /// admit anything.
    RefusedPattern {
        /// The pattern.
        pattern: String,
        /// Why this build refuses it.
        problem: String,
    },
}

impl Authority {
    /// True when something approves for the session now: a posture that counts, a live scope,
    /// or a pattern this build accepts, on a live session.
    pub fn approves_anything(&self) -> bool {
        self.live
            && (self.posture.as_ref().is_some_and(|p| p.current)
                || !self.scopes.is_empty()
                || self.patterns.iter().any(|p| p.refused.is_none()))
    }

    /// True when every command of the session is approved now: `trust` that counts, or a live
    /// scope, on a live session.
    pub fn approves_every_command(&self) -> bool {
        self.live
            && (Posture::admits(self.posture.as_ref(), true, PostureLevel::Trust)
                || !self.scopes.is_empty())
    }
}

/// Everything that approves for the recorded session `id` at `now`. Reads only; run it inside
/// one read transaction, so that the parts agree.
pub(crate) fn authority(r: &mut dyn Read, id: Id<'_>, now: DateTime<Utc>) -> Result<Authority> {
    let session = sessions::require(r, id)?;
    let live = session.is_live();
    let posture = r.posture(id)?;
    let scopes: Vec<Scope> = grants::scopes(r, id)?
        .into_iter()
        .filter(|s| s.is_live_at(now))
        .collect();
    let patterns = grants::patterns(r, id)?;
    let mut withheld = Vec::new();
    if !live {
        withheld.push(Withheld::SessionEnded);
    }
    if let Some(p) = posture.as_ref().filter(|p| !p.current) {
        withheld.push(Withheld::LapsedPosture { epoch: p.epoch });
    }
    for p in &patterns {
        if let Some(problem) = &p.refused {
            withheld.push(Withheld::RefusedPattern {
                pattern: p.pattern.clone(),
                problem: problem.clone(),
            });
        }
    }
    Ok(Authority {
        session: session.id,
        live,
        posture,
        scopes,
        patterns,
        withheld,
    })
}

/// Rule R1 `preview`: who a cascade from `root` would change, the standing grants of its live
/// sessions that would still approve after it, and the token that binds a cascade to exactly
/// this state (R2). Reads only; run it inside one read transaction.
pub(crate) fn preview(r: &mut dyn Read, root: Id<'_>, now: DateTime<Utc>) -> Result<Revocation> {
    let rows = r.subtree_postures(root)?;
    if rows.is_empty() {
        return Err(Conflict::UnknownSession(root.as_str().to_owned()).into());
    }
    let standing = grants::standing(r, Reach::Subtree(root), now)?;
    let mut revocation = Revocation::of(
        Some(root),
        RevocationKind::Preview,
        postures::holding(&rows),
    );
    revocation.token = Some(digest(root, &rows, &standing));
    revocation.still_approving = standing;
    Ok(revocation)
}

/// Rule R1 `local`: removes `root`'s posture alone, and the grants of its own that `also`
/// names; lists the live descendants that still hold a posture inherited through it, and what
/// of `root`'s own still approves.
pub(crate) fn revoke_local(
    tx: &mut dyn Write,
    root: Id<'_>,
    also: AlsoRevoke,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    sessions::require(tx.read(), root)?;
    let event = RevocationEvent::next(tx, RevocationKind::Local, Some(root))?;
    let mut revocation = stop(tx, Reach::One(root), &event, also, actor, now)?;
    revocation.still_holding = Some(postures::still_holding(tx.read(), root)?);
    Ok(revocation)
}

/// Rule R1 `cascade`: removes the postures of `root` and of every descendant, created or
/// spawned, at any depth, in one statement, and the grants `also` names of its live sessions.
/// With a preview's `token`, refuses with [`Conflict::StalePreview`] when the subtree's
/// lineage, postures or grants changed since (rule R2): the token's state is read in the same
/// transaction, under the write lock. `None` is the caller's explicit choice of no check.
pub(crate) fn revoke_cascade(
    tx: &mut dyn Write,
    root: Id<'_>,
    token: Option<&str>,
    also: AlsoRevoke,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    sessions::require(tx.read(), root)?;
    if let Some(token) = token {
        let rows = tx.read().subtree_postures(root)?;
        let standing = grants::standing(tx.read(), Reach::Subtree(root), now)?;
        if digest(root, &rows, &standing) != token {
            return Err(Conflict::StalePreview {
                root: root.as_str().to_owned(),
            }
            .into());
        }
    }
    let event = RevocationEvent::next(tx, RevocationKind::Cascade, Some(root))?;
    stop(tx, Reach::Subtree(root), &event, also, actor, now)
}

/// Rule R4: removes every posture in one statement, and the grants `also` names of every live
/// session; lists what still approves.
pub(crate) fn revoke_all(
    tx: &mut dyn Write,
    also: AlsoRevoke,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    let event = RevocationEvent::next(tx, RevocationKind::Global, None)?;
    stop(tx, Reach::All, &event, also, actor, now)
}

/// One revocation event over the sessions `reach` names: their postures, then the grants
/// `also` names, every row with the event's identifier; and what still approves after it.
fn stop(
    tx: &mut dyn Write,
    reach: Reach<'_>,
    event: &RevocationEvent<'_>,
    also: AlsoRevoke,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    let removed = postures::revoke(tx, reach, event, actor, now)?;
    let revoked = grants::revoke_standing(tx, reach, also, event, actor, now)?;
    let mut revocation = Revocation::of(event.root, event.kind, removed);
    revocation.grants_revoked = revoked;
    revocation.still_approving = grants::standing(tx.read(), reach, now)?;
    Ok(revocation)
}

/// The preview token: SHA3-256 over the subtree's lineage, ended times and postures, and the
/// standing grants of its live sessions, in a line-per-row encoding (ids, scope names and
/// times hold no tabs or newlines; a pattern is written with its length before it).
fn digest(root: Id<'_>, rows: &[SubtreePosture], standing: &[StandingGrant]) -> String {
    let mut h = Sha3_256::new();
    h.update(b"session-ledger preview v2\n");
    h.update(root.as_str().as_bytes());
    h.update(b"\n");
    for r in rows {
        let posture = r.posture.as_ref().map_or(String::new(), |p| {
            format!(
                "{}|{:?}|{}|{}|{}|{}|{}",
                p.level,
                p.source,
                p.granted_on,
                p.granted_by,
                format_ts(p.allocated_at),
                p.epoch,
                p.current
            )
        });
        let line = format!(
            "{}\t{}\t{}\t{}\t{}\n",
            r.id,
            r.created_by.as_deref().unwrap_or(""),
            r.depth,
            r.ended_at.map(format_ts).unwrap_or_default(),
            posture
        );
        h.update(line.as_bytes());
    }
    for g in standing {
        let what = match &g.grant {
            Grant::Scope { scope, expires_at } => {
                format!("scope\t{scope}\t{}", format_ts(*expires_at))
            }
            Grant::Pattern { pattern } => format!("pattern\t{}:{pattern}", pattern.len()),
        };
        let line = format!(
            "{}\t{what}\t{}\t{}\n",
            g.session,
            g.granted_by,
            format_ts(g.granted_at)
        );
        h.update(line.as_bytes());
    }
    audit::hex(&h.finalize())
}
