//! Decisions and explanations (rule A2): "may this session run this command now?", and "why
//! does it hold what it holds?".
//!
//! One call, on every tool approval, answers approve or ask, with the reason: full trust,
//! read-only trust for a read-only command, command patterns that admit every simple command of
//! the line, a live override scope, or nothing. An inherited posture's reason carries the chain
//! back to the operator's grant; a pattern approval names the pattern that admitted each part,
//! and an ask names the part no pattern admitted or the construct no pattern ever admits. An
//! explanation gathers a session's label, posture, grants and audit rows in one snapshot.
//!
//! This module only reads: it owns no table, and calls the concepts whose rows it explains.

use std::ops::Range;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::audit::{self, AuditQuery};
use crate::authority::{self, Authority};
use crate::commands::{
    classify_parsed, parse_command_line, Classification, Refusal, SimpleCommand,
};
use crate::decision_log::{self, Decided, DecisionQuery, DecisionRecord};
use crate::error::Result;
use crate::grants::CommandPattern;
use crate::labels::{self, SessionState};
use crate::model::{AuditEntry, Id, Label, Posture, PostureLevel, Scope, Session};
use crate::patterns::{
    admit, cached_pattern, is_tool_rule, kept_from, NotAdmitted, ToolCall, ToolRule,
    READ_ONLY_TOOLS,
};
use crate::sessions;
use crate::storage::Read;

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
    /// The command read through its wrappers, when that is what the pattern admitted
    /// (`npm test` of `timeout 5 npm test`, or one command of `bash -c '...'`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<String>,
}

/// A word a pattern's wildcard may not stand for, and the pattern that would otherwise have
/// admitted the part holding it ([`Reason::Nothing`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptWord {
    /// The word (`-c`, `-exec`, `rm`).
    pub word: String,
    /// The pattern whose wildcard would have matched it.
    pub pattern: String,
    /// What the word does (`find runs a program for each file it finds`).
    pub why: String,
}

/// Who says whether a command is read-only, for a session that holds `trust_reads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadOnly {
    /// The caller classified it as read-only.
    Yes,
    /// The caller did not classify it as read-only.
    #[default]
    No,
    /// The ledger classifies it ([`classify`](crate::classify)).
    Classify,
}

impl From<bool> for ReadOnly {
    fn from(read_only: bool) -> ReadOnly {
        if read_only {
            ReadOnly::Yes
        } else {
            ReadOnly::No
        }
    }
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
    /// The session holds `trust_reads` and the command is read-only: the caller said so, or
    /// the ledger's classifier did.
    TrustReads {
        /// The posture, with its chain back to the operator's grant.
        posture: Posture,
        /// The classifier's verdict, when the ledger classified the command.
        #[serde(skip_serializing_if = "Option::is_none")]
        classification: Option<Classification>,
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
    /// A tool rule of this session admits the tool call (`Read(src/**)`,
    /// `WebFetch(domain:docs.rs)`, `mcp__github`).
    ToolRule {
        /// The rule.
        rule: String,
        /// Who added it.
        added_by: String,
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
        /// The classifier's verdict that the command is not read-only, when the ledger
        /// classified it: it names the word that decided.
        #[serde(skip_serializing_if = "Option::is_none")]
        classification: Option<Classification>,
        /// The session holds a posture of an earlier epoch, which no longer counts.
        lapsed_epoch: Option<i64>,
        /// The session has command patterns, the line is plain simple commands, and this one
        /// (the first such) is admitted by none of them.
        unadmitted: Option<Part>,
        /// The session has command patterns, and the line holds this construct, which no
        /// pattern ever admits (`command substitution at byte 9`).
        refused: Option<Refusal>,
        /// A pattern that would admit the unadmitted part but for a word its wildcard may not
        /// stand for (`git -c`, `find -exec`, the program a wrapper runs).
        #[serde(skip_serializing_if = "Option::is_none")]
        kept: Option<KeptWord>,
        /// The session holds `trust`, and it did not approve: the session's label is untrusted,
        /// the call is not read-only, and the ledger's option
        /// [`UntrustedAsks`](crate::LedgerOption::UntrustedAsks) is on (rule G3).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        untrusted: bool,
    },
}

/// A decision and the id of its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recorded {
    /// The decision.
    #[serde(flatten)]
    pub decision: Decision,
    /// Its record's own id: 32 lower-case hex digits, the first 12 its time in milliseconds.
    pub record: String,
    /// True when the record was committed before this was returned; false when a batching
    /// [`DecisionRecorder`](crate::DecisionRecorder) holds it until its next flush.
    pub durable: bool,
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

impl Verdict {
    /// The word a decision record stores: `approve` or `ask`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Ask => "ask",
        }
    }
}

impl Reason {
    /// The reason's kind, as its JSON's `kind` and a decision record's `authority` word:
    /// `trust`, `trust_reads`, `pattern`, `tool_rule`, `scope`, `unknown_session`,
    /// `session_ended`, `nothing`.
    pub fn kind(&self) -> &'static str {
        match self {
            Reason::Trust { .. } => "trust",
            Reason::TrustReads { .. } => "trust_reads",
            Reason::Pattern { .. } => "pattern",
            Reason::ToolRule { .. } => "tool_rule",
            Reason::Scope { .. } => "scope",
            Reason::UnknownSession => "unknown_session",
            Reason::SessionEnded => "session_ended",
            Reason::Nothing { .. } => "nothing",
        }
    }
}

impl Decision {
    /// What its record says was decided.
    pub(crate) fn decided(&self) -> Result<Decided<'_>> {
        Ok(Decided {
            session: &self.session,
            verdict: self.verdict.as_str(),
            authority: self.reason.kind(),
            reason: serde_json::to_string(&self.reason).map_err(|e| {
                crate::error::Corruption::new(format!("a reason that does not serialize: {e}"))
            })?,
        })
    }

    /// Ask, because the ledger has no such session.
    pub(crate) fn unknown(id: Id<'_>) -> Decision {
        Decision {
            session: id.as_str().to_owned(),
            verdict: Verdict::Ask,
            reason: Reason::UnknownSession,
        }
    }
}

/// Whether `command` only reads: as the caller said, or as the classifier finds, its verdict
/// then kept in `classification`; the line is parsed into `parsed` once, if not already.
fn only_reads(
    command: &str,
    read_only: ReadOnly,
    parsed: &mut Option<Result<Vec<SimpleCommand>, Refusal>>,
    classification: &mut Option<Classification>,
) -> bool {
    match read_only {
        ReadOnly::Yes => true,
        ReadOnly::No => false,
        ReadOnly::Classify => {
            let line = parsed.get_or_insert_with(|| parse_command_line(command));
            let verdict = classify_parsed(command, line);
            let reads = verdict.read_only;
            *classification = Some(verdict);
            reads
        }
    }
}

/// May `id` run `command` now? The decision for a recorded session, in the order the rules
/// take: an ended session asks; `trust` approves; `trust_reads` approves a command the caller,
/// or the ledger's classifier, says is read-only; command patterns approve a line whose every simple command one of
/// them admits; a live scope, checked against `now`, approves; otherwise ask. `None` when `id`
/// is not recorded. One read of indexed lookups (one statement on PostgreSQL); nothing
/// written.
pub(crate) fn decide(
    r: &mut dyn Read,
    id: Id<'_>,
    command: &str,
    read_only: ReadOnly,
    now: DateTime<Utc>,
) -> Result<Option<Decision>> {
    let Some(facts) = r.decision_facts(id, now)? else {
        return Ok(None);
    };
    let decision = |verdict, reason| Decision {
        session: id.as_str().to_owned(),
        verdict,
        reason,
    };
    if facts.ended {
        return Ok(Some(decision(Verdict::Ask, Reason::SessionEnded)));
    }
    let mut classification = None;
    // The line, parsed once for the classifier and the patterns, and only if either needs it.
    let mut parsed = None;
    let mut untrusted = false;
    let posture = match facts.posture {
        Some(p) if p.current && p.level == PostureLevel::Trust => {
            // Rule G3: with the option on, trust approves what an untrusted session runs
            // only when it only reads. Off, nothing more is read.
            let withheld = facts.untrusted_asks
                && !only_reads(command, read_only, &mut parsed, &mut classification)
                && labels::unrecorded_state(r, id, now)?.untrusted;
            if !withheld {
                return Ok(Some(decision(
                    Verdict::Approve,
                    Reason::Trust { posture: p },
                )));
            }
            untrusted = true;
            Some(p)
        }
        Some(p) if p.current && p.level == PostureLevel::TrustReads => {
            if only_reads(command, read_only, &mut parsed, &mut classification) {
                return Ok(Some(decision(
                    Verdict::Approve,
                    Reason::TrustReads {
                        posture: p,
                        classification,
                    },
                )));
            }
            Some(p)
        }
        other => other,
    };
    let (mut unadmitted, mut refused, mut kept) = (None, None, None);
    let mut stored = facts.patterns;
    if !stored.is_empty() {
        // The first pattern in text order that admits a part is the one named for it.
        stored.sort_by(|a, b| a.pattern.cmp(&b.pattern));
        let rows: Vec<_> = stored
            .into_iter()
            .filter_map(|row| cached_pattern(&row.pattern).map(|p| (p, row.added_by)))
            .collect();
        let patterns: Vec<_> = rows.iter().map(|(p, _)| p.as_ref()).collect();
        match parsed.get_or_insert_with(|| parse_command_line(command)) {
            Err(refusal) => refused = Some(refusal.clone()),
            Ok(commands) => {
                let mut parts = Vec::with_capacity(commands.len());
                for simple in commands.iter() {
                    let part = Part {
                        text: command[simple.range.clone()].to_owned(),
                        range: simple.range.clone(),
                    };
                    match admit(&patterns, &simple.words) {
                        Ok(admissions) => {
                            parts.extend(admissions.into_iter().map(|a| AdmittedPart {
                                part: part.clone(),
                                pattern: rows[a.pattern].0.text().to_owned(),
                                added_by: rows[a.pattern].1.clone(),
                                inner: a.inner,
                            }))
                        }
                        Err(NotAdmitted::Refused(refusal)) => {
                            refused = Some(Refusal {
                                at: part.range.start,
                                ..refusal
                            });
                            break;
                        }
                        Err(NotAdmitted::Command) => {
                            kept = kept_from(&patterns, &simple.words).map(|k| KeptWord {
                                word: k.word,
                                pattern: rows[k.pattern].0.text().to_owned(),
                                why: k.why.to_owned(),
                            });
                            unadmitted = Some(part);
                            break;
                        }
                    }
                }
                if let (None, None, Some(first)) = (&unadmitted, &refused, parts.first()) {
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
    if let Some(scope) = facts.live_scope {
        let reason = Reason::Scope {
            scope: scope.name,
            granted_by: scope.granted_by,
            expires_at: scope.expires_at,
        };
        return Ok(Some(decision(Verdict::Approve, reason)));
    }
    let current = posture.as_ref().filter(|p| p.current);
    Ok(Some(decision(
        Verdict::Ask,
        Reason::Nothing {
            reads_only: current.is_some_and(|p| p.level == PostureLevel::TrustReads),
            classification,
            lapsed_epoch: posture.filter(|p| !p.current).map(|p| p.epoch),
            unadmitted,
            refused,
            kept,
            untrusted,
        },
    )))
}

/// Why a session holds what it holds: its label's provenance, its posture's chain back to the
/// operator's grant, its grants, and the audit rows that did it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The session.
    pub session: Session,
    /// Its label and posture now (read without materializing: `materialized` is `None` while
    /// the session has no label of its own yet).
    pub state: SessionState,
    /// The audit row of the operator's grant its posture traces back to, if it holds one.
    pub grant: Option<AuditEntry>,
    /// Its command patterns.
    pub patterns: Vec<CommandPattern>,
    /// Its override scopes that are live now.
    pub live_scopes: Vec<Scope>,
    /// Every audit row about the session, oldest first.
    pub audit: Vec<AuditEntry>,
    /// Everything that approves for it now, and what withholds any of it.
    pub authority: Authority,
    /// Its latest recorded decisions, newest first (at most
    /// [`EXPLAINED_DECISIONS`]).
    pub decisions: Vec<DecisionRecord>,
}

/// How many of a session's latest decision records an explanation shows.
pub const EXPLAINED_DECISIONS: u32 = 10;

/// May `id` make the tool call `call` now? The same order as [`decide`]: an ended session asks;
/// `trust` approves; `trust_reads` approves a tool that only reads (`READ_ONLY_TOOLS`); a tool
/// rule of the session that admits the call approves; a live scope approves; otherwise ask.
/// `None` when `id` is not recorded. Nothing written.
pub(crate) fn decide_tool(
    r: &mut dyn Read,
    id: Id<'_>,
    call: &ToolCall<'_>,
    now: DateTime<Utc>,
) -> Result<Option<Decision>> {
    let Some(facts) = r.decision_facts(id, now)? else {
        return Ok(None);
    };
    let decision = |verdict, reason| {
        Some(Decision {
            session: id.as_str().to_owned(),
            verdict,
            reason,
        })
    };
    if facts.ended {
        return Ok(decision(Verdict::Ask, Reason::SessionEnded));
    }
    let reads = READ_ONLY_TOOLS.contains(&call.tool);
    let mut untrusted = false;
    let posture = match facts.posture {
        Some(p) if p.current && p.level == PostureLevel::Trust => {
            // Rule G3, as in `decide`.
            if !(facts.untrusted_asks && !reads && labels::unrecorded_state(r, id, now)?.untrusted)
            {
                return Ok(decision(Verdict::Approve, Reason::Trust { posture: p }));
            }
            untrusted = true;
            Some(p)
        }
        Some(p) if p.current && p.level == PostureLevel::TrustReads && reads => {
            let reason = Reason::TrustReads {
                posture: p,
                classification: None,
            };
            return Ok(decision(Verdict::Approve, reason));
        }
        other => other,
    };
    let mut rows = facts.patterns;
    rows.sort_by(|a, b| a.pattern.cmp(&b.pattern));
    let admitting = rows.into_iter().find(|row| {
        is_tool_rule(&row.pattern)
            && ToolRule::parse(&row.pattern).is_ok_and(|rule| rule.admits(call))
    });
    if let Some(row) = admitting {
        let reason = Reason::ToolRule {
            rule: row.pattern,
            added_by: row.added_by,
        };
        return Ok(decision(Verdict::Approve, reason));
    }
    if let Some(scope) = facts.live_scope {
        let reason = Reason::Scope {
            scope: scope.name,
            granted_by: scope.granted_by,
            expires_at: scope.expires_at,
        };
        return Ok(decision(Verdict::Approve, reason));
    }
    let current = posture.as_ref().filter(|p| p.current);
    Ok(decision(
        Verdict::Ask,
        Reason::Nothing {
            reads_only: current.is_some_and(|p| p.level == PostureLevel::TrustReads),
            classification: None,
            lapsed_epoch: posture.filter(|p| !p.current).map(|p| p.epoch),
            unadmitted: None,
            refused: None,
            kept: None,
            untrusted,
        },
    ))
}

/// Why `id` holds what it holds, at `now`. Reads only: an unmaterialized session is explained
/// as it stands, with the default label and its own posture. Run it inside one read
/// transaction, so that the parts agree with each other.
pub(crate) fn explain(r: &mut dyn Read, id: Id<'_>, now: DateTime<Utc>) -> Result<Explanation> {
    let session = sessions::require(r, id)?;
    let state = match labels::stored_state(r, id)? {
        Some(state) => state,
        None => SessionState::recorded(id, Label::default(), session.is_live(), r.posture(id)?),
    };
    let grant = match &state.posture {
        Some(p) => audit::grant_row(r, p)?,
        None => None,
    };
    let authority = authority::authority(r, id, now)?;
    Ok(Explanation {
        patterns: authority.patterns.clone(),
        live_scopes: authority.scopes.clone(),
        audit: audit::list(r, &AuditQuery::all().session(id.as_str()))?,
        decisions: decision_log::list(
            r,
            &DecisionQuery {
                session: Some(id.as_str().to_owned()),
                limit: Some(EXPLAINED_DECISIONS),
                ..DecisionQuery::default()
            },
        )?,
        authority,
        session,
        state,
        grant,
    })
}
