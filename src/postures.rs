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

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Error, InputError};

/// A posture level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PostureLevel {
    /// Every tool call is auto-approved.
    Trust,
    /// Read-only commands are auto-approved; anything else asks.
    TrustReads,
}

impl PostureLevel {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            PostureLevel::Trust => "trust",
            PostureLevel::TrustReads => "trust_reads",
        }
    }

    pub(crate) fn from_db(s: &str) -> Option<PostureLevel> {
        match s {
            "trust" => Some(PostureLevel::Trust),
            "trust_reads" => Some(PostureLevel::TrustReads),
            _ => None,
        }
    }
}

impl fmt::Display for PostureLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a session's posture came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PostureSource {
    /// Granted by an operator on this session.
    Granted,
    /// Copied from the creator when this session was allocated.
    Inherited,
}

/// A posture a session holds, with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Posture {
    /// The session holding it.
    pub session: String,
    /// `trust` or `trust_reads`.
    pub level: PostureLevel,
    /// Granted here, or inherited.
    pub source: PostureSource,
    /// The operator whose grant it traces back to.
    pub granted_by: String,
    /// When the operator granted it.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub granted_at: DateTime<Utc>,
    /// The session the operator granted it on.
    pub granted_on: String,
    /// For an inherited posture, the creator it was copied from.
    pub inherited_from: Option<String>,
    /// When this session came to hold it (the grant, or its allocation).
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub allocated_at: DateTime<Utc>,
    /// The delegation chain: the session the operator granted it on first, this one last.
    pub chain: Vec<String>,
    /// The epoch it belongs to.
    pub epoch: i64,
    /// True when it counts now: it belongs to the current epoch.
    pub current: bool,
}

impl Posture {
    /// True when this posture admits `level` now for a session that is `live`: it is that
    /// level and belongs to the current epoch. An ended session's posture admits nothing.
    pub(crate) fn admits(posture: Option<&Posture>, live: bool, level: PostureLevel) -> bool {
        live && posture.is_some_and(|p| p.current && p.level == level)
    }
}

/// How far a revocation reaches (rule R1). There is no default: the caller always says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagation {
    /// This session only. The outcome lists the descendants that still hold a posture
    /// inherited through it.
    Local,
    /// This session and every descendant, created or spawned, at any depth, in one statement.
    /// With a token from a preview, refuses with [`Conflict::StalePreview`](crate::Conflict::StalePreview) if anything in the
    /// subtree changed since (rule R2).
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
        match self {
            Propagation::Local => "local",
            Propagation::Cascade { .. } => "cascade",
            Propagation::Preview => "preview",
        }
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

/// What a revocation did, or, for a preview, would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revocation {
    /// The session the revocation started from; `None` for a global revoke.
    pub root: Option<String>,
    /// `local`, `cascade`, `preview` or `global`.
    pub propagation: &'static str,
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
pub fn validate_preview_token(token: &str) -> Result<(), Error> {
    let ok = token.len() == 64
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(Error::Input(InputError::InvalidToken(token.to_owned())))
    }
}

impl FromStr for PostureLevel {
    type Err = Error;

    /// Parses `trust` or `trust_reads`.
    fn from_str(s: &str) -> Result<PostureLevel, Error> {
        PostureLevel::from_db(s)
            .ok_or_else(|| Error::Input(InputError::InvalidPosture(s.to_owned())))
    }
}

mod ops {
    use serde_json::json;
    use sha3::{Digest, Sha3_256};

    use super::{
        validate_preview_token, Affected, EpochStart, Posture, PostureLevel, Propagation,
        Revocation,
    };
    use crate::error::{Conflict, Corruption, Error, Result};
    use crate::ledger::{resolve, Ledger};
    use crate::sessions::{validate_actor, validate_id};
    use crate::storage::{self, postures::Removed, postures::SubtreeRow};

    impl Ledger {
        /// An operator grants `level` on a live session, replacing any posture it held. The
        /// grant belongs to the current epoch. A spawned id of a recorded session is recorded
        /// first.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor), [`Conflict::UnknownSession`](crate::Conflict::UnknownSession),
        /// [`Conflict::SessionEnded`](crate::Conflict::SessionEnded); nothing is written in these cases.
        ///
        /// # Example
        ///
        /// ```
        /// # fn main() -> Result<(), session_ledger::Error> {
        /// # let dir = tempfile::tempdir().unwrap();
        /// use session_ledger::{Ledger, PostureLevel};
        /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
        /// ledger.create_root("conductor", "alice")?;
        /// ledger.grant("conductor", PostureLevel::Trust, "alice")?;
        /// let worker = ledger.create_child("worker", "conductor", "alice")?;
        /// assert!(worker.inherited_trust);
        /// # Ok(()) }
        /// ```
        pub fn grant(&self, id: &str, level: PostureLevel, actor: &str) -> Result<Posture> {
            validate_id(id)?;
            validate_actor(actor)?;
            self.write(|tx, now| {
                let session = resolve(tx, id, now)?
                    .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))?;
                if !session.is_live() {
                    return Err(Error::Conflict(Conflict::SessionEnded(id.to_owned())));
                }
                let previous = storage::postures::get(tx, id)?;
                storage::postures::grant(tx, id, level, actor, now)?;
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "posture.grant",
                    Some(id),
                    &json!({
                        "posture": level,
                        "previous": previous.map(|p| json!({
                            "posture": p.level, "source": p.source, "granted_on": p.granted_on,
                            "epoch": p.epoch,
                        })),
                    }),
                )?;
                storage::postures::get(tx, id)?.ok_or_else(|| {
                    Error::Corruption(Corruption::new(format!("the grant on {id:?} vanished")))
                })
            })
        }

        /// The posture row of a session, current or lapsed, or `None`.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Error::Storage`].
        pub fn posture(&self, id: &str) -> Result<Option<Posture>> {
            validate_id(id)?;
            self.storage.read(|c| storage::postures::get(c, id))
        }

        /// The current posture epoch (0 until the first is started).
        ///
        /// # Errors
        ///
        /// [`Error::Storage`].
        pub fn current_epoch(&self) -> Result<i64> {
            self.storage.read(storage::postures::current_epoch)
        }

        /// Revokes postures from `id` with an explicit propagation (rule R1):
        ///
        /// * [`Propagation::Local`]: this session only; the outcome lists, in `still_holding`,
        ///   the descendants that still hold a posture inherited through it.
        /// * [`Propagation::Cascade`]: this session and every descendant, created or spawned,
        ///   at any depth, in one statement inside one IMMEDIATE transaction, with a
        ///   `posture.revoke` audit row per session changed. With a preview's token, refuses
        ///   with [`Conflict::StalePreview`](crate::Conflict::StalePreview) when anything in the subtree changed since (R2).
        /// * [`Propagation::Preview`]: changes nothing; lists exactly the sessions a cascade
        ///   would change, and a token.
        ///
        /// Ended sessions can be revoked from: their descendants may still be running.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor), [`Conflict::UnknownSession`](crate::Conflict::UnknownSession),
        /// [`InputError::InvalidToken`](crate::InputError::InvalidToken), [`Conflict::StalePreview`](crate::Conflict::StalePreview); nothing is written in these cases.
        pub fn revoke(
            &self,
            id: &str,
            propagation: Propagation,
            actor: &str,
        ) -> Result<Revocation> {
            validate_id(id)?;
            validate_actor(actor)?;
            if let Propagation::Cascade { token: Some(token) } = &propagation {
                validate_preview_token(token)?;
            }
            if propagation == Propagation::Preview {
                let rows = self
                    .storage
                    .read(|c| storage::postures::subtree_with_postures(c, id))?;
                if rows.is_empty() {
                    return Err(Error::Conflict(Conflict::UnknownSession(id.to_owned())));
                }
                let token = digest(id, &rows);
                let mut sessions: Vec<Affected> = rows
                    .into_iter()
                    .filter_map(|r| {
                        r.posture.map(|p| Affected {
                            id: r.id,
                            depth: r.depth,
                            posture: p.level,
                            granted_directly: p.source == super::PostureSource::Granted,
                            current: p.current,
                        })
                    })
                    .collect();
                sessions.sort_by(|a, b| (a.depth, &a.id).cmp(&(b.depth, &b.id)));
                return Ok(Revocation {
                    root: Some(id.to_owned()),
                    propagation: "preview",
                    count: sessions.len(),
                    sessions,
                    still_holding: None,
                    token: Some(token),
                });
            }
            self.write(|tx, now| {
                if storage::sessions::get(tx, id)?.is_none() {
                    return Err(Error::Conflict(Conflict::UnknownSession(id.to_owned())));
                }
                let removed = match &propagation {
                    Propagation::Local => storage::postures::revoke_one(tx, id)?,
                    Propagation::Cascade { token } => {
                        if let Some(token) = token {
                            let rows = storage::postures::subtree_with_postures(tx, id)?;
                            if digest(id, &rows) != *token {
                                return Err(Error::Conflict(Conflict::StalePreview {
                                    root: id.to_owned(),
                                }));
                            }
                        }
                        storage::postures::revoke_subtree(tx, id)?
                    }
                    Propagation::Preview => unreachable!("handled above"),
                };
                audit_removed(tx, now, actor, propagation.as_str(), Some(id), &removed)?;
                let still_holding = match propagation {
                    Propagation::Local => Some(storage::postures::inherited_through(tx, id)?),
                    _ => None,
                };
                let sessions: Vec<Affected> = removed.into_iter().map(|r| r.affected).collect();
                Ok(Revocation {
                    root: Some(id.to_owned()),
                    propagation: propagation.as_str(),
                    count: sessions.len(),
                    sessions,
                    still_holding,
                    token: None,
                })
            })
        }

        /// Rule R4: clears every session's posture, in one statement, with an audit row each.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidActor`](crate::InputError::InvalidActor); [`Error::Storage`].
        pub fn revoke_all(&self, actor: &str) -> Result<Revocation> {
            validate_actor(actor)?;
            self.write(|tx, now| {
                let removed = storage::postures::revoke_all(tx)?;
                audit_removed(tx, now, actor, "global", None, &removed)?;
                let sessions: Vec<Affected> = removed.into_iter().map(|r| r.affected).collect();
                Ok(Revocation {
                    root: None,
                    propagation: "global",
                    count: sessions.len(),
                    sessions,
                    still_holding: None,
                    token: None,
                })
            })
        }

        /// Starts a new posture epoch (rule P5): the embedding backend calls this when it
        /// boots. Postures of the previous epoch stop counting, unless the ledger was opened
        /// with [`Config::durable_postures`](crate::Config::durable_postures), which carries
        /// them over. Audited with how many lapsed.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidActor`](crate::InputError::InvalidActor); [`Error::Storage`].
        pub fn start_epoch(&self, actor: &str) -> Result<EpochStart> {
            validate_actor(actor)?;
            let durable = self.config.durable_postures;
            self.write(|tx, now| {
                let (epoch, previous) = storage::postures::start_epoch(tx, actor, durable, now)?;
                let (lapsed, carried) = if durable { (0, previous) } else { (previous, 0) };
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "epoch.start",
                    None,
                    &json!({ "epoch": epoch, "durable": durable, "lapsed": lapsed, "carried": carried }),
                )?;
                Ok(EpochStart {
                    epoch,
                    durable,
                    lapsed,
                    carried,
                })
            })
        }
    }

    /// Writes one `posture.revoke` row per posture `removed`, each with the revocation
    /// event's identifier (`"revocation"`: the seq of the event's first row).
    fn audit_removed(
        tx: &rusqlite::Transaction<'_>,
        now: &str,
        actor: &str,
        propagation: &str,
        root: Option<&str>,
        removed: &[Removed],
    ) -> Result<()> {
        // Fields in alphabetical order: the same text `json!` gives (its map is sorted), built
        // without a map per row, which a 100,000-session cascade notices.
        #[derive(serde::Serialize)]
        struct Detail<'a> {
            current: bool,
            granted_on: &'a str,
            posture: PostureLevel,
            propagation: &'a str,
            revocation: i64,
            root: Option<&'a str>,
            source: &'a str,
        }
        // The event's identifier, shared by all its rows: the seq its first row is about to
        // take. Writes are serialized, so nothing else can take it first.
        let revocation = storage::audit::head(tx)?.seq + 1;
        let rows = removed.iter().map(|r| {
            let detail = Detail {
                current: r.affected.current,
                granted_on: &r.granted_on,
                posture: r.affected.posture,
                propagation,
                revocation,
                root,
                source: r.source,
            };
            let detail = serde_json::to_string(&detail)
                .expect("strings, booleans and a unit enum always serialize");
            (r.affected.id.as_str(), detail)
        });
        storage::audit::append_all(tx, now, actor, "posture.revoke", rows)
    }

    /// The preview token: SHA3-256 over the subtree's lineage, ended times and postures, in a
    /// line-per-session encoding (ids hold no tabs or newlines).
    fn digest(root: &str, rows: &[SubtreeRow]) -> String {
        let mut h = Sha3_256::new();
        h.update(b"session-ledger preview v1\n");
        h.update(root.as_bytes());
        h.update(b"\n");
        for r in rows {
            let posture = r.posture.as_ref().map_or(String::new(), |p| {
                format!(
                    "{}|{:?}|{}|{}|{}|{}|{}",
                    p.level,
                    p.source,
                    p.granted_on,
                    p.granted_by,
                    crate::clock::format_ts(p.allocated_at),
                    p.epoch,
                    p.current
                )
            });
            let line = format!(
                "{}\t{}\t{}\t{}\t{}\n",
                r.id,
                r.created_by.as_deref().unwrap_or(""),
                r.depth,
                r.ended_at.as_deref().unwrap_or(""),
                posture
            );
            h.update(line.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}
