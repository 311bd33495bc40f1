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
//! This module owns granting, inheriting, revoking and epochs. It writes its audit rows through
//! `crate::audit` and calls no other concept: finding the session to grant on (a spawned id is
//! recorded first) is the caller's.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sha3::{Digest, Sha3_256};

use crate::audit;
use crate::clock::format_ts;
use crate::error::{Conflict, Corruption, Error, InputError, Result};
use crate::model::{AuditKind, Id, Posture, PostureLevel, PostureSource, Session};
use crate::storage::{HeldPosture, Read, Revoke, SubtreePosture, Write};

/// How far a revocation reaches (rule R1). There is no default: the caller always says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagation {
    /// This session only. The outcome lists the descendants that still hold a posture
    /// inherited through it.
    Local,
    /// This session and every descendant, created or spawned, at any depth, in one statement.
    /// With a token from a preview, refuses with
    /// [`Conflict::StalePreview`](crate::Conflict::StalePreview) if anything in the subtree
    /// changed since (rule R2).
    Cascade {
        /// The token of a preview to bind to, if any.
        token: Option<String>,
    },
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
            Propagation::Cascade { .. } => RevocationKind::Cascade,
            Propagation::Preview => RevocationKind::Preview,
        }
    }
}

impl fmt::Display for Propagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Propagation {
    type Err = Error;

    /// Parses `local`, `cascade` (with no token) or `preview`.
    fn from_str(s: &str) -> Result<Propagation> {
        match s {
            "local" => Ok(Propagation::Local),
            "cascade" => Ok(Propagation::Cascade { token: None }),
            "preview" => Ok(Propagation::Preview),
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
}

impl Revocation {
    fn of(root: Option<Id<'_>>, propagation: RevocationKind, sessions: Vec<Affected>) -> Self {
        Revocation {
            root: root.map(|r| r.as_str().to_owned()),
            propagation,
            count: sessions.len(),
            sessions,
            still_holding: None,
            token: None,
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

/// Rule R1 `preview`: who a cascade from `root` would change, and the token binding a cascade
/// to exactly this state (R2). Reads one statement; writes nothing.
pub(crate) fn preview(r: &mut dyn Read, root: Id<'_>) -> Result<Revocation> {
    let rows = r.subtree_postures(root)?;
    if rows.is_empty() {
        return Err(Conflict::UnknownSession(root.as_str().to_owned()).into());
    }
    let token = digest(root, &rows);
    let mut sessions: Vec<Affected> = rows
        .into_iter()
        .filter_map(|r| {
            r.posture.map(|p| Affected {
                id: r.id,
                depth: r.depth,
                posture: p.level,
                granted_directly: p.source == PostureSource::Granted,
                current: p.current,
            })
        })
        .collect();
    sessions.sort_by(|a, b| (a.depth, &a.id).cmp(&(b.depth, &b.id)));
    let mut revocation = Revocation::of(Some(root), RevocationKind::Preview, sessions);
    revocation.token = Some(token);
    Ok(revocation)
}

/// Rule R1 `local`: removes `root`'s posture alone, and lists the live descendants that still
/// hold a posture inherited through it.
pub(crate) fn revoke_local(
    tx: &mut dyn Write,
    root: Id<'_>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    require_recorded(tx.read(), root)?;
    let removed = tx.revoke_postures(Revoke::One(root))?;
    record(tx, now, actor, RevocationKind::Local, Some(root), &removed)?;
    let still: Vec<Affected> = tx
        .read()
        .inherited_through(root)?
        .iter()
        .map(Affected::from)
        .collect();
    let mut revocation = Revocation::of(
        Some(root),
        RevocationKind::Local,
        removed.iter().map(Affected::from).collect(),
    );
    revocation.still_holding = Some(still);
    Ok(revocation)
}

/// Rule R1 `cascade`: removes the posture of `root` and of every descendant, created or
/// spawned, at any depth, in one statement. With a preview's `token`, refuses with
/// [`Conflict::StalePreview`] when anything in the subtree changed since (rule R2); the token's
/// state is read in the same transaction, under the write lock.
pub(crate) fn revoke_cascade(
    tx: &mut dyn Write,
    root: Id<'_>,
    token: Option<&str>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    require_recorded(tx.read(), root)?;
    if let Some(token) = token {
        let rows = tx.read().subtree_postures(root)?;
        if digest(root, &rows) != token {
            return Err(Conflict::StalePreview {
                root: root.as_str().to_owned(),
            }
            .into());
        }
    }
    let removed = tx.revoke_postures(Revoke::Subtree(root))?;
    record(
        tx,
        now,
        actor,
        RevocationKind::Cascade,
        Some(root),
        &removed,
    )?;
    Ok(Revocation::of(
        Some(root),
        RevocationKind::Cascade,
        removed.iter().map(Affected::from).collect(),
    ))
}

/// Rule R4: removes every posture, in one statement.
pub(crate) fn revoke_all(
    tx: &mut dyn Write,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Revocation> {
    let removed = tx.revoke_postures(Revoke::All)?;
    record(tx, now, actor, RevocationKind::Global, None, &removed)?;
    Ok(Revocation::of(
        None,
        RevocationKind::Global,
        removed.iter().map(Affected::from).collect(),
    ))
}

fn require_recorded(r: &mut dyn Read, id: Id<'_>) -> Result<()> {
    match r.session(id)? {
        Some(_) => Ok(()),
        None => Err(Conflict::UnknownSession(id.as_str().to_owned()).into()),
    }
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
/// identifier (`"revocation"`: the seq of the event's first row).
fn record(
    tx: &mut dyn Write,
    now: DateTime<Utc>,
    actor: &str,
    kind: RevocationKind,
    root: Option<Id<'_>>,
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
    // The event's identifier, shared by all its rows: the seq its first row is about to take.
    // Writes are serialized, so nothing else can take it first.
    let revocation = tx.read().audit_head()?.seq + 1;
    let rows = removed.iter().map(|r| {
        let detail = Detail {
            current: r.current,
            granted_on: &r.granted_on,
            posture: r.level,
            propagation: kind.as_str(),
            revocation,
            root: root.map(Id::as_str),
            source: r.source.as_str(),
        };
        let detail = serde_json::to_string(&detail)
            .expect("strings, booleans and a unit enum always serialize");
        (r.id.as_str(), detail)
    });
    audit::append_all(tx, now, actor, AuditKind::PostureRevoke, rows)
}

/// The preview token: SHA3-256 over the subtree's lineage, ended times and postures, in a
/// line-per-session encoding (ids hold no tabs or newlines).
fn digest(root: Id<'_>, rows: &[SubtreePosture]) -> String {
    let mut h = Sha3_256::new();
    h.update(b"session-ledger preview v1\n");
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
    audit::hex(&h.finalize())
}
