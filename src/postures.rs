//! Postures: the supervision relationship, which follows a delegation; and their revocation.
//!
//! A **posture** is `trust` (every tool call is auto-approved) or `trust_reads` (read-only
//! commands are). An operator grants one on a session. A created child gets its creator's
//! posture as it stands at allocation, read inside the transaction that inserts the child
//! (rule P1); `trust_reads` never widens to `trust` (P2); a spawned child takes its parent's at
//! its first read (P3). Only postures of the current **epoch** count (P5).
//!
//! Revoking takes an explicit [`Propagation`] (rule R1): `Local` (this session only),
//! `Cascade` (the whole subtree, in one statement) or `Preview` (change nothing; list who a
//! cascade would change, with a token that binds a later cascade to exactly that state, R2).
//!
//! This module owns granting, inheriting and epochs, and removing the postures a revocation
//! reaches, with their audit rows. It writes its audit rows through `crate::audit` and calls no
//! other concept: finding the session to grant on (a spawned id is recorded first) is the
//! caller's, and a revocation as a whole (its preview and token, the grants it may take too)
//! is `crate::authority`'s.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit;
use crate::error::{Conflict, Corruption, Error, InputError, Result};
use crate::model::{AuditKind, Id, Posture, PostureLevel, PostureSource, Session, StandingGrant};
use crate::storage::{HeldPosture, Reach, Read, SubtreePosture, Write};

/// How far a revocation reaches (rule R1). There is no default: the caller always says, and a
/// cascade says what it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagation {
    /// This session only. The outcome lists the descendants that still hold a posture
    /// inherited through it.
    Local,
    /// This session and every descendant, created or spawned, at any depth, in one statement,
    /// bound to the preview that gave `token`: refused with
    /// [`Conflict::StalePreview`](crate::Conflict::StalePreview) if anything in the subtree
    /// changed since, its postures or its grants (rule R2). An empty or malformed token is
    /// refused with [`InputError::InvalidToken`](crate::InputError::InvalidToken).
    Cascade {
        /// The token of the preview to bind to.
        token: String,
    },
    /// The cascade of [`Propagation::Cascade`], reaching whatever the subtree holds when it
    /// commits, checked against no preview. For a caller that chose to apply a cascade without
    /// showing anyone what it reaches (the command line's `revoke --cascade` without
    /// `--token`); a caller that showed a preview binds to it instead.
    CascadeUnchecked,
    /// Change nothing; list exactly the sessions a cascade would change, with a token.
    Preview,
}

impl Propagation {
    /// The word used in audit rows and on the command line.
    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }

    /// What kind of revocation it asks for.
    pub fn kind(&self) -> RevocationKind {
        match self {
            Propagation::Local => RevocationKind::Local,
            Propagation::Cascade { .. } | Propagation::CascadeUnchecked => RevocationKind::Cascade,
            Propagation::Preview => RevocationKind::Preview,
        }
    }
}

impl fmt::Display for Propagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for RevocationKind {
    type Err = Error;

    /// Parses the propagation a caller may ask for: `local`, `cascade` or `preview` (a global
    /// revoke is a call of its own).
    fn from_str(s: &str) -> Result<RevocationKind> {
        match s {
            "local" => Ok(RevocationKind::Local),
            "cascade" => Ok(RevocationKind::Cascade),
            "preview" => Ok(RevocationKind::Preview),
            _ => Err(InputError::InvalidPropagation(s.to_owned()).into()),
        }
    }
}

/// What a [`Revocation`] was: one of the three propagations, or a global revoke (rule R4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RevocationKind {
    /// This session only.
    Local,
    /// The whole subtree.
    Cascade,
    /// Nothing changed: who a cascade would change.
    Preview,
    /// Every posture in the ledger.
    Global,
}

impl RevocationKind {
    /// The word used in audit rows (`propagation`) and in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            RevocationKind::Local => "local",
            RevocationKind::Cascade => "cascade",
            RevocationKind::Preview => "preview",
            RevocationKind::Global => "global",
        }
    }
}

impl fmt::Display for RevocationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A session whose posture a revocation changed, or would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Affected {
    /// The session.
    pub id: String,
    /// Its depth (0 for a root).
    pub depth: u32,
    /// The posture it held.
    pub posture: PostureLevel,
    /// True when the posture was granted on it directly rather than inherited.
    pub granted_directly: bool,
    /// True when the posture counted (it belonged to the current epoch).
    pub current: bool,
}

impl From<&HeldPosture> for Affected {
    fn from(held: &HeldPosture) -> Affected {
        Affected {
            id: held.id.clone(),
            depth: held.depth,
            posture: held.level,
            granted_directly: held.source == PostureSource::Granted,
            current: held.current,
        }
    }
}

/// What a revocation did, or, for a preview, would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revocation {
    /// The session the revocation started from; `None` for a global revoke.
    pub root: Option<String>,
    /// Which revocation it was.
    pub propagation: RevocationKind,
    /// How many sessions changed (or would change).
    pub count: usize,
    /// The sessions changed (or that would change), by depth then id.
    pub sessions: Vec<Affected>,
    /// For a local revoke: the descendants still holding a posture inherited through the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_holding: Option<Vec<Affected>>,
    /// For a preview: the token that binds a cascade to this exact state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The scopes it revoked and the command patterns it removed, when it was asked to
    /// ([`AlsoRevoke`](crate::AlsoRevoke)), by depth then session.
    pub grants_revoked: Vec<StandingGrant>,
    /// The scopes and command patterns of the live sessions it reached that still approve
    /// after it (for a preview: all of them, which only a cascade that includes them revokes),
    /// by depth then session. Empty when nothing it reached approves any more.
    pub still_approving: Vec<StandingGrant>,
}

impl Revocation {
    pub(crate) fn of(
        root: Option<Id<'_>>,
        propagation: RevocationKind,
        sessions: Vec<Affected>,
    ) -> Self {
        Revocation {
            root: root.map(|r| r.as_str().to_owned()),
            propagation,
            count: sessions.len(),
            sessions,
            still_holding: None,
            token: None,
            grants_revoked: Vec::new(),
            still_approving: Vec::new(),
        }
    }
}

/// The start of a new posture epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EpochStart {
    /// The new epoch.
    pub epoch: i64,
    /// Whether postures were carried into it (durable postures).
    pub durable: bool,
    /// Postures of the previous epoch that stopped counting.
    pub lapsed: u64,
    /// Postures of the previous epoch carried into this one.
    pub carried: u64,
}

/// Checks the form of a preview token: 64 lower-case hex digits.
///
/// # Errors
///
/// [`InputError::InvalidToken`](crate::InputError::InvalidToken).
pub fn validate_preview_token(token: &str) -> Result<()> {
    let ok = token.len() == 64
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(InputError::InvalidToken(token.to_owned()).into())
    }
}

/// What a child was born with (rule P1, P3): `(trust, trust_reads)`, for its audit row, where
/// `false` is positive evidence that nothing transferred (rule A1).
pub(crate) fn born_with(level: Option<PostureLevel>) -> (bool, bool) {
    (
        level == Some(PostureLevel::Trust),
        level == Some(PostureLevel::TrustReads),
    )
}

/// Rules P1 and P3: gives `child` exactly the posture `creator` holds in the current epoch, if
/// any, inside the transaction that allocates `child`. Returns the level copied.
pub(crate) fn inherit(
    tx: &mut dyn Write,
    child: Id<'_>,
    creator: Id<'_>,
    now: DateTime<Utc>,
) -> Result<Option<PostureLevel>> {
    tx.inherit_posture(child, creator, now)
}

/// An operator grants `level` on the live `session`, replacing any posture it held, in the
/// current epoch.
pub(crate) fn grant(
    tx: &mut dyn Write,
    session: &Session,
    level: PostureLevel,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Posture> {
    let id = Id::stored(&session.id);
    if !session.is_live() {
        return Err(Conflict::SessionEnded(session.id.clone()).into());
    }
    let previous = tx.read().posture(id)?;
    tx.grant_posture(id, level, actor, now)?;
    let detail = json!({
        "posture": level,
        "previous": previous.map(|p| json!({
            "posture": p.level, "source": p.source, "granted_on": p.granted_on,
            "epoch": p.epoch,
        })),
    });
    audit::append(
        tx,
        now,
        actor,
        AuditKind::PostureGrant,
        Some(id.as_str()),
        &detail,
    )?;
    tx.read()
        .posture(id)?
        .ok_or_else(|| Corruption::new(format!("the grant on {id:?} vanished")).into())
}

/// The sessions of a subtree that hold a posture, as a preview lists them: by depth then id.
pub(crate) fn holding(rows: &[SubtreePosture]) -> Vec<Affected> {
    let mut sessions: Vec<Affected> = rows
        .iter()
        .filter_map(|r| {
            r.posture.as_ref().map(|p| Affected {
                id: r.id.clone(),
                depth: r.depth,
                posture: p.level,
                granted_directly: p.source == PostureSource::Granted,
                current: p.current,
            })
        })
        .collect();
    sessions.sort_by(|a, b| (a.depth, &a.id).cmp(&(b.depth, &b.id)));
    sessions
}

/// One revocation event: what kind, from which root, and its identifier (`"revocation"` in
/// each of its audit rows: the seq its first row takes).
pub(crate) struct RevocationEvent<'a> {
    pub(crate) kind: RevocationKind,
    pub(crate) root: Option<Id<'a>>,
    pub(crate) revocation: i64,
}

impl<'a> RevocationEvent<'a> {
    /// The event about to be written: its identifier is the seq its first row is about to
    /// take. Writes are serialized, so nothing else can take it first.
    pub(crate) fn next(
        tx: &mut dyn Write,
        kind: RevocationKind,
        root: Option<Id<'a>>,
    ) -> Result<RevocationEvent<'a>> {
        Ok(RevocationEvent {
            kind,
            root,
            revocation: tx.read().audit_head()?.seq + 1,
        })
    }
}

/// Rules R1 and R4: removes the postures of the sessions `reach` names, in one statement, with
/// one `posture.revoke` row each. Returns what it removed, by depth then id.
pub(crate) fn revoke(
    tx: &mut dyn Write,
    reach: Reach<'_>,
    event: &RevocationEvent<'_>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Affected>> {
    let removed = tx.revoke_postures(reach)?;
    record(tx, now, actor, event, &removed)?;
    Ok(removed.iter().map(Affected::from).collect())
}

/// The live descendants of `root` still holding a posture inherited through it, after a local
/// revoke of its own.
pub(crate) fn still_holding(r: &mut dyn Read, root: Id<'_>) -> Result<Vec<Affected>> {
    Ok(r.inherited_through(root)?
        .iter()
        .map(Affected::from)
        .collect())
}

/// Rule P5: starts the next epoch. Postures of the previous one stop counting, unless `carry`
/// moves them into the new one (durable postures).
pub(crate) fn start_epoch(
    tx: &mut dyn Write,
    carry: bool,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<EpochStart> {
    let started = tx.start_epoch(actor, carry, now)?;
    let (lapsed, carried) = if carry {
        (0, started.previous)
    } else {
        (started.previous, 0)
    };
    let detail = json!({
        "epoch": started.epoch, "durable": carry, "lapsed": lapsed, "carried": carried,
    });
    audit::append(tx, now, actor, AuditKind::EpochStart, None, &detail)?;
    Ok(EpochStart {
        epoch: started.epoch,
        durable: carry,
        lapsed,
        carried,
    })
}

/// Writes one `posture.revoke` row per posture `removed`, each with the revocation event's
/// identifier.
fn record(
    tx: &mut dyn Write,
    now: DateTime<Utc>,
    actor: &str,
    event: &RevocationEvent<'_>,
    removed: &[HeldPosture],
) -> Result<()> {
    // Fields in alphabetical order: the same text `json!` gives (its map is sorted), built
    // without a map per row, which a 100,000-session cascade notices.
    #[derive(Serialize)]
    struct Detail<'a> {
        current: bool,
        granted_on: &'a str,
        posture: PostureLevel,
        propagation: &'a str,
        revocation: i64,
        root: Option<&'a str>,
        source: &'a str,
    }
    let rows = removed.iter().map(|r| {
        let detail = Detail {
            current: r.current,
            granted_on: &r.granted_on,
            posture: r.level,
            propagation: event.kind.as_str(),
            revocation: event.revocation,
            root: event.root.map(Id::as_str),
            source: r.source.as_str(),
        };
        let detail = serde_json::to_string(&detail)
            .expect("strings, booleans and a unit enum always serialize");
        (r.id.as_str(), detail)
    });
    audit::append_all(tx, now, actor, AuditKind::PostureRevoke, rows)
}
