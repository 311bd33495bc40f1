//! Decisions: "may this session run this command now?" (rule A2).
//!
//! One call, on every tool approval, answers approve or ask, with the reason: full trust,
//! read-only trust for a read-only command, command patterns that admit every simple command of
//! the line, a live override scope, or nothing. An inherited posture's reason carries the chain
//! back to the operator's grant; a pattern approval names the pattern that admitted each part,
//! and an ask names the part no pattern admitted or the construct no pattern ever admits.

use std::ops::Range;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::commands::Refusal;
use crate::postures::Posture;

/// One simple command of a command line: its text and where it is in the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Part {
    /// The simple command as written in the line.
    pub text: String,
    /// Its bytes in the line.
    pub range: Range<usize>,
}

/// A simple command and the pattern that admitted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdmittedPart {
    /// The part.
    #[serde(flatten)]
    pub part: Part,
    /// The pattern that admitted it.
    pub pattern: String,
    /// Who added that pattern.
    pub added_by: String,
}

/// The answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Run it without asking.
    Approve,
    /// Ask the operator.
    Ask,
}

/// Why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Reason {
    /// The session holds `trust`.
    Trust {
        /// The posture, with its chain back to the operator's grant.
        posture: Posture,
    },
    /// The session holds `trust_reads` and the caller classified the command as read-only.
    TrustReads {
        /// The posture, with its chain back to the operator's grant.
        posture: Posture,
    },
    /// The command line is simple commands of plain words, and each is admitted by a command
    /// pattern of this session.
    Pattern {
        /// The pattern that admitted the first part (the only one, for a line of one command).
        pattern: String,
        /// Who added it.
        added_by: String,
        /// Every part of the line, in order, with the pattern that admitted it.
        parts: Vec<AdmittedPart>,
    },
    /// A live override scope on this session.
    Scope {
        /// The scope's name.
        scope: String,
        /// Who granted it.
        granted_by: String,
        /// When it stops admitting anything.
        #[serde(serialize_with = "crate::clock::serialize_ts")]
        expires_at: DateTime<Utc>,
    },
    /// The ledger does not know the session.
    UnknownSession,
    /// The session has ended.
    SessionEnded,
    /// Nothing admits the command.
    Nothing {
        /// The session holds `trust_reads` but the command was not classified read-only.
        reads_only: bool,
        /// The session holds a posture of an earlier epoch, which no longer counts.
        lapsed_epoch: Option<i64>,
        /// The session has command patterns, the line is plain simple commands, and this one
        /// (the first such) is admitted by none of them.
        unadmitted: Option<Part>,
        /// The session has command patterns, and the line holds this construct, which no
        /// pattern ever admits (`command substitution at byte 9`).
        refused: Option<Refusal>,
    },
}

/// A decision and its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The session asked about.
    pub session: String,
    /// Approve or ask.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
}

mod ops {
    use super::{AdmittedPart, Decision, Part, Reason, Verdict};
    use crate::commands::parse_command_line;
    use crate::error::{Error, InputError, Result};
    use crate::grants::cached_pattern;
    use crate::ledger::{materialize, spawn_anchor, Ledger};
    use crate::postures::PostureLevel;
    use crate::sessions::validate_id;
    use crate::storage;

    impl Ledger {
        /// May `id` run `command` now? Approve or ask, with the reason (rule A2).
        ///
        /// In order: an ended or unknown session asks; `trust` approves; `trust_reads`
        /// approves a command the caller classified as read-only; command patterns approve a line
        /// that parses into simple commands of plain words joined by `;`, newline, `&&`, `||`
        /// or `|` when each of them is admitted by some pattern of this session (a pattern that
        /// this build refuses admits nothing); a live override scope,
        /// checked against the clock now, approves; otherwise ask. Postures of an earlier
        /// epoch do not count.
        ///
        /// Indexed lookups only and no write, with one exception: a spawned id of a recorded
        /// session seen for the first time is allocated (rule P3) before deciding.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::EmptyCommand`](crate::InputError::EmptyCommand); [`Error::Storage`].
        ///
        /// # Example
        ///
        /// ```
        /// # fn main() -> Result<(), session_ledger::Error> {
        /// # let dir = tempfile::tempdir().unwrap();
        /// use session_ledger::{Ledger, PostureLevel, Verdict};
        /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
        /// ledger.create_root("conductor", "alice")?;
        /// ledger.grant("conductor", PostureLevel::TrustReads, "alice")?;
        /// assert_eq!(ledger.decide("conductor", "ls -la", true)?.verdict, Verdict::Approve);
        /// assert_eq!(ledger.decide("conductor", "rm -rf build", false)?.verdict, Verdict::Ask);
        /// # Ok(()) }
        /// ```
        pub fn decide(&self, id: &str, command: &str, read_only: bool) -> Result<Decision> {
            validate_id(id)?;
            if command.is_empty() {
                return Err(Error::Input(InputError::EmptyCommand));
            }
            let decide = |c: &rusqlite::Connection| -> Result<Option<Decision>> {
                let Some((ended, posture)) = storage::postures::decision_facts(c, id)? else {
                    return Ok(None);
                };
                let decision = |verdict, reason| Decision {
                    session: id.to_owned(),
                    verdict,
                    reason,
                };
                if ended {
                    return Ok(Some(decision(Verdict::Ask, Reason::SessionEnded)));
                }
                let posture = match posture {
                    Some(p) if p.current && p.level == PostureLevel::Trust => {
                        let reason = Reason::Trust { posture: p };
                        return Ok(Some(decision(Verdict::Approve, reason)));
                    }
                    Some(p) if p.current && p.level == PostureLevel::TrustReads && read_only => {
                        let reason = Reason::TrustReads { posture: p };
                        return Ok(Some(decision(Verdict::Approve, reason)));
                    }
                    other => other,
                };
                let current = posture.as_ref().filter(|p| p.current);
                let stored = storage::grants::pattern_texts(c, id)?;
                let (mut unadmitted, mut refused) = (None, None);
                if !stored.is_empty() {
                    let patterns: Vec<_> = stored
                        .into_iter()
                        .filter_map(|(text, by)| cached_pattern(&text).map(|p| (p, by)))
                        .collect();
                    match parse_command_line(command) {
                        Err(refusal) => refused = Some(refusal),
                        Ok(commands) => {
                            let mut parts = Vec::with_capacity(commands.len());
                            for simple in commands {
                                let part = Part {
                                    text: command[simple.range.clone()].to_owned(),
                                    range: simple.range,
                                };
                                match patterns.iter().find(|(p, _)| p.admits(&simple.words)) {
                                    Some((p, by)) => parts.push(AdmittedPart {
                                        part,
                                        pattern: p.text().to_owned(),
                                        added_by: by.clone(),
                                    }),
                                    None => {
                                        unadmitted = Some(part);
                                        break;
                                    }
                                }
                            }
                            if unadmitted.is_none() {
                                if let Some(first) = parts.first() {
                                    let reason = Reason::Pattern {
                                        pattern: first.pattern.clone(),
                                        added_by: first.added_by.clone(),
                                        parts,
                                    };
                                    return Ok(Some(decision(Verdict::Approve, reason)));
                                }
                            }
                        }
                    }
                }
                if let Some((scope, granted_by, expires_at)) =
                    storage::grants::live_scope(c, id, &self.now())?
                {
                    let expires_at = storage::ts("override_scopes.expires_at", &expires_at)?;
                    return Ok(Some(decision(
                        Verdict::Approve,
                        Reason::Scope {
                            scope,
                            granted_by,
                            expires_at,
                        },
                    )));
                }
                Ok(Some(decision(
                    Verdict::Ask,
                    Reason::Nothing {
                        reads_only: current.is_some_and(|p| p.level == PostureLevel::TrustReads),
                        lapsed_epoch: posture.filter(|p| !p.current).map(|p| p.epoch),
                        unadmitted,
                        refused,
                    },
                )))
            };
            if let Some(decision) = self.storage.read(decide)? {
                return Ok(decision);
            }
            // First sight of a spawned id: its allocation (rule P3), then the decision.
            if self.storage.read(|c| spawn_anchor(c, id))?.is_some() {
                self.write(|tx, now| materialize(tx, id, now))?;
                if let Some(decision) = self.storage.read(decide)? {
                    return Ok(decision);
                }
            }
            Ok(Decision {
                session: id.to_owned(),
                verdict: Verdict::Ask,
                reason: Reason::UnknownSession,
            })
        }
    }
}
