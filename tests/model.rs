//! A model-based test: random sequences of operations run against a real ledger and
//! against a plain in-memory model of the rules in docs/design.md (L1-L5, P1-P5, R1, R2, R4, S1,
//! S2 and, as a count of rows, A1), compared after every step; a divergence fails with the sequence
//! proptest has shrunk, printed as the concrete operations run.
//!
//! Each case is a fresh ledger file (a copy of a freshly migrated ledger, in `/dev/shm` when
//! there is one) opened with `Synchronous::Normal`, a `ManualClock` and small bounds (depth 4,
//! 3 live children, 3 creations a minute) so that every refusal happens; postures are durable
//! across epochs in about half the cases, and a close-and-reopen may switch that. Ids come from
//! a small space: four roots, eight child ids, spawned ids `sub-<id>-<n>` nested up to three
//! deep (`sub-sub-a-1-2`), malformed ids, and ids that only look spawned. Most operations name
//! a session the model has recorded (or a spawned id of one), chosen when they run.
//!
//! After every step the test compares: success or the error variant and its payload; the
//! `state` of a session (label, `known`, `trust`, `trust_reads`, provenance, posture row); what
//! a create was born with; a raise's before and after; the sessions a revocation changed or
//! would change (id, depth, posture, granted directly, current), its count, and the local
//! revoke's `still_holding`; a preview token's staleness; a decision's verdict and reason; an
//! epoch start's lapsed and carried; and the number of audit rows written (none for a read of a
//! materialized or unknown id, a preview, an unchanged raise, or an error other than a
//! refusal). After each case, and after each reopen, every session, label, posture, pattern and
//! scope the ledger holds is compared with the model through the read-only API, and at the end
//! of each case the audit chain must verify.
//!
//! Where the rules' wording and the code's documentation differ, the model follows the
//! documentation (doc comments and the rest of docs/design.md).
//!
//! The test runs on each engine (`sqlite::…`, `postgres::…`). `MODEL_CASES=N` sets the number
//! of sequences on SQLite (default 1,000), `MODEL_CASES_POSTGRES=N` on PostgreSQL (default 100).
//! The run prints how many cases,
//! operations and ledger calls it ran, and how often each outcome occurred
//! (`cargo test --test model -- --nocapture`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

#[macro_use]
mod common;

use chrono::{DateTime, TimeDelta, Utc};
use common::{postgres_place, Engine, TestResult};
use postgres_place::Place;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};
use session_ledger::{
    Affected, Config, Conflict, CreationRefused, Error, IdProblem, InputError, Label, Ledger,
    ManualClock, Materialized, Origin, Posture, PostureLevel, PostureSource, Propagation, Reason,
    Revocation, Synchronous, Taint, Verdict,
};

// ---------------------------------------------------------------------------------------------
// The bounds every case runs with (small, so that refusals happen).

const MAX_DEPTH: u32 = 4;
const MAX_LIVE: u32 = 3;
const RATE_MAX: u32 = 3;
const RATE_WINDOW_SECS: i64 = 60;
const START: &str = "2026-01-01T00:00:00.000Z";
const DEFAULT_CASES: u32 = 1_000;
const DEFAULT_CASES_POSTGRES: u32 = 100;
const MAX_OPS: usize = 40;

fn start() -> DateTime<Utc> {
    START.parse().expect("start time")
}

/// A time as milliseconds since [`START`]: the model's clock.
fn ms(t: DateTime<Utc>) -> i64 {
    (t - start()).num_milliseconds()
}

fn config(clock: &Arc<ManualClock>, durable: bool) -> Config {
    Config::default()
        .create_if_missing(true)
        .synchronous(Synchronous::Normal)
        .max_depth(MAX_DEPTH)
        .max_live_children(MAX_LIVE)
        .creation_rate(RATE_MAX, Duration::from_secs(RATE_WINDOW_SECS as u64))
        .durable_postures(durable)
        .pool_size(2)
        .clock(clock.clone())
}

// ---------------------------------------------------------------------------------------------
// Ids, by the rules' words (S1 and "spawned child"), written here independently of the crate.

fn id_problem(id: &str) -> Option<IdProblem> {
    let b = id.as_bytes();
    if b.is_empty() {
        Some(IdProblem::Empty)
    } else if b.len() > 128 {
        Some(IdProblem::TooLong)
    } else if !b[0].is_ascii_alphanumeric() {
        Some(IdProblem::BadStart)
    } else if !b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(c))
    {
        Some(IdProblem::BadCharacter)
    } else {
        None
    }
}

/// Strip `sub-`, split at the last `-`: digits on the right, a valid id on the left.
fn spawned_parent(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("sub-")?;
    let cut = rest.rfind('-')?;
    let (parent, n) = (&rest[..cut], &rest[cut + 1..]);
    let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    (digits && id_problem(parent).is_none()).then_some(parent)
}

/// `id`, then each parsed parent up to the first id that is not spawned.
fn chain(id: &str) -> Vec<String> {
    let mut out = vec![id.to_owned()];
    let mut cur = id;
    while let Some(p) = spawned_parent(cur) {
        out.push(p.to_owned());
        cur = p;
    }
    out
}

fn token_well_formed(t: &str) -> bool {
    t.len() == 64 && t.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `*` matches any run of characters; every other character is itself.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// A pattern against one simple command of the model's plain commands, word by word: `*`
/// within a word is [`glob`]; a last whole-word `*` matches any further words.
fn words_match(pattern: &str, part: &str) -> bool {
    let pwords: Vec<&str> = pattern.split(' ').collect();
    let words: Vec<&str> = part.split(' ').collect();
    let open = pwords.last() == Some(&"*");
    let fixed = if open {
        &pwords[..pwords.len() - 1]
    } else {
        &pwords[..]
    };
    let count_ok = if open {
        words.len() >= fixed.len()
    } else {
        words.len() == fixed.len()
    };
    count_ok
        && fixed
            .iter()
            .zip(&words)
            .all(|(p, w)| glob(p.as_bytes(), w.as_bytes()))
}

/// The simple commands of one of the model's [`COMMANDS`], split at `; ` and ` && `; `None`
/// for a line no pattern admits (a command substitution).
fn model_parts(command: &str) -> Option<Vec<&str>> {
    if command.contains("$(") {
        return None;
    }
    Some(command.split("; ").flat_map(|p| p.split(" && ")).collect())
}

// ---------------------------------------------------------------------------------------------
// The model.

#[derive(Clone, Debug)]
struct MSession {
    created_by: Option<String>,
    depth: u32,
    origin: Origin,
    created_at: i64,
    ended_at: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
struct MPosture {
    level: PostureLevel,
    source: PostureSource,
    granted_by: String,
    granted_at: i64,
    granted_on: String,
    inherited_from: Option<String>,
    allocated_at: i64,
    chain: Vec<String>,
    epoch: i64,
}

#[derive(Clone, Debug)]
struct MLabel {
    label: Label,
    /// `None`: born (a root); `Some(x)`: inherited from `x`.
    from: Option<String>,
    at: i64,
    raised_at: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
struct MScope {
    granted_by: String,
    granted_at: i64,
    expires_at: i64,
    revoked_at: Option<i64>,
}

impl MScope {
    fn live(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at > now
    }
}

/// The error the model expects, with the payload that identifies it.
#[derive(Clone, Debug)]
enum Want {
    InvalidId(String, IdProblem),
    UnknownSession(String),
    SessionEnded(String),
    SessionExists(String),
    DepthLimit { child: String, depth: u32 },
    ChildLimit { creator: String, live: u32 },
    RateLimit { creator: String, count: u32 },
    NothingToRaise,
    UnknownPattern(String),
    UnknownScope(String),
    InvalidToken,
    StalePreview(String),
}

impl Want {
    fn name(&self) -> &'static str {
        match self {
            Want::InvalidId(..) => "InvalidId",
            Want::UnknownSession(_) => "UnknownSession",
            Want::SessionEnded(_) => "SessionEnded",
            Want::SessionExists(_) => "SessionExists",
            Want::DepthLimit { .. } => "DepthLimit",
            Want::ChildLimit { .. } => "ChildLimit",
            Want::RateLimit { .. } => "RateLimit",
            Want::NothingToRaise => "NothingToRaise",
            Want::UnknownPattern(_) => "UnknownPattern",
            Want::UnknownScope(_) => "UnknownScope",
            Want::InvalidToken => "InvalidToken",
            Want::StalePreview(_) => "StalePreview",
        }
    }

    fn matches(&self, e: &Error) -> bool {
        match self {
            Want::InvalidId(id, p) => {
                matches!(e, Error::Input(InputError::InvalidId { id: i, problem }) if i == id && problem == p)
            }
            Want::UnknownSession(id) => {
                matches!(e, Error::Conflict(Conflict::UnknownSession(i)) if i == id)
            }
            Want::SessionEnded(id) => {
                matches!(e, Error::Conflict(Conflict::SessionEnded(i)) if i == id)
            }
            Want::SessionExists(id) => {
                matches!(e, Error::Conflict(Conflict::SessionExists(i)) if i == id)
            }
            Want::DepthLimit { child, depth } => matches!(e,
                Error::Refused(CreationRefused::DepthLimit { child: c, depth: d, max })
                    if c == child && d == depth && *max == MAX_DEPTH),
            Want::ChildLimit { creator, live } => matches!(e,
                Error::Refused(CreationRefused::ChildLimit { creator: c, live: l, max })
                    if c == creator && l == live && *max == MAX_LIVE),
            Want::RateLimit { creator, count } => matches!(e,
                Error::Refused(CreationRefused::RateLimit { creator: c, count: n, max, window_secs })
                    if c == creator && n == count && *max == RATE_MAX
                        && *window_secs == RATE_WINDOW_SECS as u64),
            Want::NothingToRaise => matches!(e, Error::Input(InputError::NothingToRaise)),
            Want::UnknownPattern(s) => {
                matches!(e, Error::Conflict(Conflict::UnknownPattern { session, .. }) if session == s)
            }
            Want::UnknownScope(s) => {
                matches!(e, Error::Conflict(Conflict::UnknownScope { session, .. }) if session == s)
            }
            Want::InvalidToken => matches!(e, Error::Input(InputError::InvalidToken(_))),
            Want::StalePreview(root) => {
                matches!(e, Error::Conflict(Conflict::StalePreview { root: r }) if r == root)
            }
        }
    }
}

type MResult<T> = Result<T, Want>;

/// A session a revocation changed: (id, depth, posture, granted directly, current).
type MAffected = (String, u32, PostureLevel, bool, bool);

/// What a preview token binds, as docs/design.md lists it: the root, and for each session of
/// the subtree its id, creator, depth, end time and posture (level, source, granted_on,
/// granted_by, allocated_at, epoch, whether it counts).
type PostureBits = (PostureLevel, PostureSource, String, String, i64, i64, bool);
type SubtreeLine = (
    String,
    Option<String>,
    u32,
    Option<i64>,
    Option<PostureBits>,
);
/// A standing grant of a live session of the subtree: (session, "scope" or "pattern", name or
/// text, expiry for a scope, granted_by, granted_at).
type StandingLine = (String, &'static str, String, Option<i64>, String, i64);
type Fingerprint = (String, Vec<SubtreeLine>, Vec<StandingLine>);

#[derive(Clone, Debug, PartialEq)]
enum MReason {
    Trust {
        chain: Vec<String>,
        epoch: i64,
    },
    TrustReads {
        chain: Vec<String>,
        epoch: i64,
    },
    Pattern(String),
    Scope {
        name: String,
        expires_at: i64,
    },
    UnknownSession,
    SessionEnded,
    Nothing {
        reads_only: bool,
        lapsed_epoch: Option<i64>,
    },
}

impl MReason {
    fn verdict(&self) -> Verdict {
        match self {
            MReason::Trust { .. }
            | MReason::TrustReads { .. }
            | MReason::Pattern(_)
            | MReason::Scope { .. } => Verdict::Approve,
            _ => Verdict::Ask,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            MReason::Trust { .. } => "trust",
            MReason::TrustReads { .. } => "trust_reads",
            MReason::Pattern(_) => "pattern",
            MReason::Scope { .. } => "scope",
            MReason::UnknownSession => "unknown_session",
            MReason::SessionEnded => "session_ended",
            MReason::Nothing { .. } => "nothing",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct MState {
    label: Label,
    known: bool,
    trust: bool,
    trust_reads: bool,
    /// `None` unknown; `Some(None)` born; `Some(Some(x))` inherited from x.
    materialized: Option<Option<String>>,
    posture: Option<MPosture>,
}

#[derive(Clone, Debug, Default)]
struct Model {
    sessions: BTreeMap<String, MSession>,
    /// The recorded ids in the order they were recorded.
    order: Vec<String>,
    labels: BTreeMap<String, MLabel>,
    postures: BTreeMap<String, MPosture>,
    /// session -> pattern -> (added_by, added_at)
    patterns: BTreeMap<String, BTreeMap<String, (String, i64)>>,
    /// session -> scope name -> scope
    scopes: BTreeMap<String, BTreeMap<String, MScope>>,
    epoch: i64,
    now: i64,
    durable: bool,
    /// The audit rows the ledger must have written so far (rule A1: one per change; none
    /// for a read of a materialized or unknown id, a preview, an unchanged raise, or an error
    /// other than a refusal).
    audit: i64,
}

const ACTOR: &str = "alice";

fn check_id(id: &str) -> MResult<()> {
    id_problem(id).map_or(Ok(()), |p| Err(Want::InvalidId(id.to_owned(), p)))
}

fn check_new_id(id: &str) -> MResult<()> {
    check_id(id)?;
    if spawned_parent(id).is_some() {
        return Err(Want::InvalidId(
            id.to_owned(),
            IdProblem::ReservedSpawnedForm,
        ));
    }
    Ok(())
}

impl Model {
    fn recorded(&self, id: &str) -> bool {
        self.sessions.contains_key(id)
    }

    fn live(&self, id: &str) -> bool {
        self.sessions.get(id).is_some_and(|s| s.ended_at.is_none())
    }

    fn counts(&self, p: &MPosture) -> bool {
        p.epoch == self.epoch
    }

    /// The nearest recorded id on the spawned chain above `id`.
    fn anchor(&self, id: &str) -> Option<String> {
        chain(id).into_iter().skip(1).find(|c| self.recorded(c))
    }

    /// P1/P3: the child copies the creator's posture of the current epoch, if any.
    fn inherit(&mut self, child: &str, creator: &str) -> Option<PostureLevel> {
        let p = self
            .postures
            .get(creator)
            .filter(|p| p.epoch == self.epoch)?
            .clone();
        let mut chain = p.chain.clone();
        chain.push(child.to_owned());
        let level = p.level;
        self.postures.insert(
            child.to_owned(),
            MPosture {
                source: PostureSource::Inherited,
                inherited_from: Some(creator.to_owned()),
                allocated_at: self.now,
                chain,
                ..p
            },
        );
        Some(level)
    }

    /// L3/P3: records a spawned id of a recorded session (and its missing middle ids), each
    /// taking its parent's posture, or recorded as ended under an ended parent. False when
    /// `id` is neither recorded nor a spawned id of a recorded session.
    fn resolve(&mut self, id: &str) -> bool {
        if self.recorded(id) {
            return true;
        }
        let Some(anchor) = self.anchor(id) else {
            return false;
        };
        let chain = chain(id);
        let top = chain
            .iter()
            .position(|c| *c == anchor)
            .expect("anchor on chain");
        for i in (0..top).rev() {
            let (child, parent) = (&chain[i], &chain[i + 1]);
            let parent_depth = self.sessions[parent].depth;
            let parent_live = self.live(parent);
            self.order.push(child.clone());
            self.sessions.insert(
                child.clone(),
                MSession {
                    created_by: Some(parent.clone()),
                    depth: parent_depth + 1,
                    origin: Origin::Spawned,
                    created_at: self.now,
                    ended_at: (!parent_live).then_some(self.now),
                },
            );
            if parent_live {
                self.inherit(child, parent);
            }
            self.audit += 1; // session.spawn
        }
        true
    }

    /// L2/L3: the label of `id`, materializing it and its unmaterialized path first.
    fn materialize(&mut self, id: &str) -> Option<MLabel> {
        if let Some(l) = self.labels.get(id) {
            return Some(l.clone());
        }
        if !self.resolve(id) {
            return None;
        }
        let mut path = Vec::new();
        let mut cur = id.to_owned();
        let (source, label) = loop {
            if let Some(l) = self.labels.get(&cur) {
                break (cur.clone(), l.label);
            }
            path.push(cur.clone());
            cur = self.sessions[&cur]
                .created_by
                .clone()
                .expect("every chain ends at a materialized root");
        };
        for p in path {
            self.labels.insert(
                p,
                MLabel {
                    label,
                    from: Some(source.clone()),
                    at: self.now,
                    raised_at: None,
                },
            );
            self.audit += 1; // label.inherit
        }
        self.labels.get(id).cloned()
    }

    fn state_of(&self, id: &str) -> MState {
        let l = &self.labels[id];
        let posture = self.postures.get(id).cloned();
        let holds = |level| {
            self.live(id)
                && posture
                    .as_ref()
                    .is_some_and(|p| self.counts(p) && p.level == level)
        };
        MState {
            label: l.label,
            known: true,
            trust: holds(PostureLevel::Trust),
            trust_reads: holds(PostureLevel::TrustReads),
            materialized: Some(l.from.clone()),
            posture,
        }
    }

    fn subtree(&self, id: &str) -> Vec<String> {
        let mut out = vec![id.to_owned()];
        let mut i = 0;
        while i < out.len() {
            let cur = out[i].clone();
            out.extend(
                self.sessions
                    .iter()
                    .filter(|(_, s)| s.created_by.as_deref() == Some(cur.as_str()))
                    .map(|(k, _)| k.clone()),
            );
            i += 1;
        }
        out
    }

    fn affected(&self, id: &str, p: &MPosture) -> MAffected {
        (
            id.to_owned(),
            self.sessions[id].depth,
            p.level,
            p.source == PostureSource::Granted,
            self.counts(p),
        )
    }

    fn remove_postures(&mut self, ids: &[String]) -> Vec<MAffected> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(p) = self.postures.get(id).cloned() {
                out.push(self.affected(id, &p));
                self.postures.remove(id);
            }
        }
        out.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        self.audit += out.len() as i64; // posture.revoke
        out
    }

    fn fingerprint(&self, root: &str) -> Fingerprint {
        let mut lines: Vec<SubtreeLine> = self
            .subtree(root)
            .into_iter()
            .map(|id| {
                let s = &self.sessions[&id];
                let posture = self.postures.get(&id).map(|p| {
                    (
                        p.level,
                        p.source,
                        p.granted_on.clone(),
                        p.granted_by.clone(),
                        p.allocated_at,
                        p.epoch,
                        self.counts(p),
                    )
                });
                (id, s.created_by.clone(), s.depth, s.ended_at, posture)
            })
            .collect();
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        let mut standing: Vec<StandingLine> = Vec::new();
        for id in self.subtree(root) {
            if self.sessions[&id].ended_at.is_some() {
                continue;
            }
            for (name, scope) in self.scopes.get(&id).into_iter().flatten() {
                if scope.live(self.now) {
                    standing.push((
                        id.clone(),
                        "scope",
                        name.clone(),
                        Some(scope.expires_at),
                        scope.granted_by.clone(),
                        scope.granted_at,
                    ));
                }
            }
            for (pattern, (by, at)) in self.patterns.get(&id).into_iter().flatten() {
                standing.push((
                    id.clone(),
                    "pattern",
                    pattern.clone(),
                    None,
                    by.clone(),
                    *at,
                ));
            }
        }
        standing.sort();
        (root.to_owned(), lines, standing)
    }

    // --- operations; an Err leaves the model as it was (the caller restores it) ------------

    fn create_root(&mut self, id: &str) -> MResult<()> {
        check_new_id(id)?;
        if self.recorded(id) {
            return Err(Want::SessionExists(id.to_owned()));
        }
        self.order.push(id.to_owned());
        self.sessions.insert(
            id.to_owned(),
            MSession {
                created_by: None,
                depth: 0,
                origin: Origin::Root,
                created_at: self.now,
                ended_at: None,
            },
        );
        self.labels.insert(
            id.to_owned(),
            MLabel {
                label: Label {
                    taint: Taint::Private,
                    untrusted: false,
                },
                from: None,
                at: self.now,
                raised_at: None,
            },
        );
        self.audit += 1;
        Ok(())
    }

    /// S2 and P1: returns the child's depth and the posture it was born with.
    fn create_child(&mut self, id: &str, creator: &str) -> MResult<(u32, Option<PostureLevel>)> {
        check_new_id(id)?;
        check_id(creator)?;
        if !self.resolve(creator) {
            return Err(Want::UnknownSession(creator.to_owned()));
        }
        if !self.live(creator) {
            return Err(Want::SessionEnded(creator.to_owned()));
        }
        if self.recorded(id) {
            return Err(Want::SessionExists(id.to_owned()));
        }
        let depth = self.sessions[creator].depth + 1;
        if depth > MAX_DEPTH {
            return Err(Want::DepthLimit {
                child: id.to_owned(),
                depth,
            });
        }
        let created =
            |s: &&MSession| s.created_by.as_deref() == Some(creator) && s.origin == Origin::Created;
        let live = self
            .sessions
            .values()
            .filter(created)
            .filter(|s| s.ended_at.is_none())
            .count() as u32;
        if live >= MAX_LIVE {
            return Err(Want::ChildLimit {
                creator: creator.to_owned(),
                live,
            });
        }
        let since = self.now - RATE_WINDOW_SECS * 1000;
        let count = self
            .sessions
            .values()
            .filter(created)
            .filter(|s| s.created_at >= since)
            .count() as u32;
        if count >= RATE_MAX {
            return Err(Want::RateLimit {
                creator: creator.to_owned(),
                count,
            });
        }
        self.order.push(id.to_owned());
        self.sessions.insert(
            id.to_owned(),
            MSession {
                created_by: Some(creator.to_owned()),
                depth,
                origin: Origin::Created,
                created_at: self.now,
                ended_at: None,
            },
        );
        self.audit += 1;
        Ok((depth, self.inherit(id, creator)))
    }

    /// L2, L3, L4.
    fn state(&mut self, id: &str) -> MResult<MState> {
        check_id(id)?;
        match self.materialize(id) {
            Some(_) => Ok(self.state_of(id)),
            None => Ok(MState {
                label: Label {
                    taint: Taint::Private,
                    untrusted: false,
                },
                known: false,
                trust: false,
                trust_reads: false,
                materialized: None,
                posture: None,
            }),
        }
    }

    /// L1, L5: (before, after, changed).
    fn raise(
        &mut self,
        id: &str,
        taint: Option<Taint>,
        untrusted: bool,
    ) -> MResult<(Label, Label, bool)> {
        check_id(id)?;
        if taint.is_none() && !untrusted {
            return Err(Want::NothingToRaise);
        }
        let before = self
            .materialize(id)
            .ok_or_else(|| Want::UnknownSession(id.to_owned()))?
            .label;
        let after = Label {
            taint: before.taint.max(taint.unwrap_or(Taint::Public)),
            untrusted: before.untrusted || untrusted,
        };
        if after != before {
            let now = self.now;
            let l = self.labels.get_mut(id).expect("materialized");
            l.label = after;
            l.raised_at = Some(now);
            self.audit += 1;
        }
        Ok((before, after, after != before))
    }

    /// Ends `id` and the spawned sessions reached from it through spawned sessions only.
    fn end(&mut self, id: &str) -> MResult<Vec<String>> {
        check_id(id)?;
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        if !self.live(id) {
            return Err(Want::SessionEnded(id.to_owned()));
        }
        let mut ended = Vec::new();
        let mut stack = vec![id.to_owned()];
        while let Some(cur) = stack.pop() {
            let now = self.now;
            let s = self.sessions.get_mut(&cur).expect("recorded");
            if s.ended_at.is_none() {
                s.ended_at = Some(now);
                ended.push(cur.clone());
            }
            stack.extend(
                self.sessions
                    .iter()
                    .filter(|(_, s)| {
                        s.created_by.as_deref() == Some(cur.as_str()) && s.origin == Origin::Spawned
                    })
                    .map(|(k, _)| k.clone()),
            );
        }
        self.audit += ended.len() as i64;
        Ok(ended)
    }

    /// A grant needs a live session; an unseen spawned id is recorded first.
    fn live_for_grant(&mut self, id: &str) -> MResult<()> {
        check_id(id)?;
        if !self.resolve(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        if !self.live(id) {
            return Err(Want::SessionEnded(id.to_owned()));
        }
        Ok(())
    }

    fn grant(&mut self, id: &str, level: PostureLevel, actor: &str) -> MResult<()> {
        self.live_for_grant(id)?;
        self.postures.insert(
            id.to_owned(),
            MPosture {
                level,
                source: PostureSource::Granted,
                granted_by: actor.to_owned(),
                granted_at: self.now,
                granted_on: id.to_owned(),
                inherited_from: None,
                allocated_at: self.now,
                chain: vec![id.to_owned()],
                epoch: self.epoch,
            },
        );
        self.audit += 1;
        Ok(())
    }

    fn add_pattern(&mut self, id: &str, pattern: &str) -> MResult<bool> {
        self.live_for_grant(id)?;
        let set = self.patterns.entry(id.to_owned()).or_default();
        if set.contains_key(pattern) {
            return Ok(false);
        }
        set.insert(pattern.to_owned(), (ACTOR.to_owned(), self.now));
        self.audit += 1;
        Ok(true)
    }

    fn remove_pattern(&mut self, id: &str, pattern: &str) -> MResult<()> {
        check_id(id)?;
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        match self.patterns.get_mut(id).and_then(|s| s.remove(pattern)) {
            Some(_) => {
                self.audit += 1;
                Ok(())
            }
            None => Err(Want::UnknownPattern(id.to_owned())),
        }
    }

    fn grant_scope(&mut self, id: &str, name: &str, ttl_secs: i64) -> MResult<i64> {
        self.live_for_grant(id)?;
        let expires_at = self.now + ttl_secs * 1000;
        self.scopes.entry(id.to_owned()).or_default().insert(
            name.to_owned(),
            MScope {
                granted_by: ACTOR.to_owned(),
                granted_at: self.now,
                expires_at,
                revoked_at: None,
            },
        );
        self.audit += 1;
        Ok(expires_at)
    }

    fn revoke_scope(&mut self, id: &str, name: &str) -> MResult<()> {
        check_id(id)?;
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        let now = self.now;
        match self.scopes.get_mut(id).and_then(|s| s.get_mut(name)) {
            Some(s) if s.live(now) => {
                s.revoked_at = Some(now);
                self.audit += 1;
                Ok(())
            }
            _ => Err(Want::UnknownScope(id.to_owned())),
        }
    }

    /// The decision, in the documented order.
    fn decide(&mut self, id: &str, command: &str, read_only: bool) -> MResult<MReason> {
        check_id(id)?;
        if !self.recorded(id) {
            if self.anchor(id).is_none() {
                return Ok(MReason::UnknownSession);
            }
            self.materialize(id);
        }
        if !self.live(id) {
            return Ok(MReason::SessionEnded);
        }
        let posture = self.postures.get(id);
        let current = posture.filter(|p| self.counts(p));
        match current {
            Some(p) if p.level == PostureLevel::Trust => {
                return Ok(MReason::Trust {
                    chain: p.chain.clone(),
                    epoch: p.epoch,
                })
            }
            Some(p) if p.level == PostureLevel::TrustReads && read_only => {
                return Ok(MReason::TrustReads {
                    chain: p.chain.clone(),
                    epoch: p.epoch,
                })
            }
            _ => {}
        }
        // Every simple command admitted by some pattern; the reason names the first part's.
        let admitting = |part: &str| {
            self.patterns
                .get(id)
                .into_iter()
                .flat_map(|s| s.keys())
                .find(|p| words_match(p, part))
                .cloned()
        };
        if let Some(parts) = model_parts(command) {
            let found: Vec<Option<String>> = parts.iter().map(|p| admitting(p)).collect();
            if found.iter().all(Option::is_some) {
                if let Some(Some(pattern)) = found.into_iter().next() {
                    return Ok(MReason::Pattern(pattern));
                }
            }
        }
        let live_scope = self
            .scopes
            .get(id)
            .into_iter()
            .flat_map(|s| s.iter())
            .filter(|(_, s)| s.live(self.now))
            // The one that expires last; among equals, the first name.
            .min_by(|a, b| b.1.expires_at.cmp(&a.1.expires_at).then(a.0.cmp(b.0)));
        if let Some((name, s)) = live_scope {
            return Ok(MReason::Scope {
                name: name.clone(),
                expires_at: s.expires_at,
            });
        }
        Ok(MReason::Nothing {
            reads_only: current.is_some_and(|p| p.level == PostureLevel::TrustReads),
            lapsed_epoch: posture.filter(|p| !self.counts(p)).map(|p| p.epoch),
        })
    }

    /// R1 local: (removed, still holding).
    fn revoke_local(&mut self, id: &str) -> MResult<(Vec<MAffected>, Vec<MAffected>)> {
        check_id(id)?;
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        let removed = self.remove_postures(&[id.to_owned()]);
        let mut still: Vec<MAffected> = self
            .subtree(id)
            .into_iter()
            .skip(1)
            .filter(|d| self.live(d))
            .filter_map(|d| {
                let p = self.postures.get(&d)?;
                (p.source == PostureSource::Inherited
                    && self.counts(p)
                    && p.chain.iter().any(|c| c == id))
                .then(|| self.affected(&d, p))
            })
            .collect();
        still.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok((removed, still))
    }

    /// R1 cascade and R2: `token` is the token given and what the model knows it bound
    /// (`None` for a token no preview printed).
    fn revoke_cascade(
        &mut self,
        id: &str,
        token: Option<(&str, Option<&Fingerprint>)>,
    ) -> MResult<Vec<MAffected>> {
        check_id(id)?;
        if let Some((t, _)) = token {
            if !token_well_formed(t) {
                return Err(Want::InvalidToken);
            }
        }
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        if let Some((_, bound)) = token {
            if bound != Some(&self.fingerprint(id)) {
                return Err(Want::StalePreview(id.to_owned()));
            }
        }
        let subtree = self.subtree(id);
        Ok(self.remove_postures(&subtree))
    }

    /// R1 preview: what a cascade would change, and what its token binds.
    fn preview(&self, id: &str) -> MResult<(Vec<MAffected>, Fingerprint)> {
        check_id(id)?;
        if !self.recorded(id) {
            return Err(Want::UnknownSession(id.to_owned()));
        }
        let mut would: Vec<MAffected> = self
            .subtree(id)
            .into_iter()
            .filter_map(|d| self.postures.get(&d).map(|p| self.affected(&d, p)))
            .collect();
        would.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok((would, self.fingerprint(id)))
    }

    /// R4.
    fn revoke_all(&mut self) -> Vec<MAffected> {
        let all: Vec<String> = self.postures.keys().cloned().collect();
        self.remove_postures(&all)
    }

    /// P5: (epoch, lapsed, carried).
    fn start_epoch(&mut self) -> (i64, u64, u64) {
        let old = self.epoch;
        self.epoch += 1;
        let mut n = 0;
        for p in self.postures.values_mut().filter(|p| p.epoch == old) {
            n += 1;
            if self.durable {
                p.epoch = self.epoch;
            }
        }
        self.audit += 1;
        if self.durable {
            (self.epoch, 0, n)
        } else {
            (self.epoch, n, 0)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Operations and their generators.

/// Root ids: `sub-x` is not a spawned id (nothing after a last `-`), but `sub-sub-x-1` is one
/// of it; `mm-thread` is docs/design.md's example.
const ROOTS: &[&str] = &["a", "b", "sub-x", "mm-thread"];
/// Child ids: `c0-1` makes `sub-c0-1-2` a spawned id of `c0-1`, not of `c0`.
const CHILDREN: &[&str] = &["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c0-1"];
/// The ids spawned ids are written from.
const BASES: &[&str] = &["a", "b", "sub-x", "mm-thread", "c0", "c1", "c2", "c0-1"];
/// Malformed ids, unknown plain ids, valid ids that only look spawned (`SUB-a-1`: the prefix
/// is `sub-`), and `sub-a-01`, a spawned id of `a` other than `sub-a-1`.
const ODD: &[&str] = &[
    "", "-x", "a b", "a\u{0}", "stranger", "a.b:c_d", "sub-", "sub--1", "sub-a-1x", "sub-a-",
    "sub-x", "sub-a-01", "SUB-a-1",
];
const PATTERNS: &[&str] = &["npm test", "npm test *", "git *", "ls -*"];
const COMMANDS: &[&str] = &[
    "npm test",
    "npm test --watch",
    "git status",
    "ls -la",
    "ls -la a",
    "rm -rf /",
    "npm test; git status",
    "npm test x; rm -rf /",
    "git status && rm -rf /",
    "npm test $(rm -rf /)",
];
const SCOPES: &[&str] = &["deploy", "ops"];
const ACTORS: &[&str] = &["alice", "bob"];
const TAINTS: &[Taint] = &[Taint::Public, Taint::Private, Taint::Secret];
const TTLS: &[i64] = &[30, 90, 3600];
const STEPS: &[i64] = &[1, 30, 61, 3600];

/// One operation. Generated with [`Target`]s, and run with the ids they stand for then.
#[derive(Clone, Debug)]
enum Op<I> {
    CreateRoot(I),
    CreateChild {
        id: I,
        creator: I,
    },
    /// Several `create_child` calls under one creator, one after the other, to reach the
    /// live-children bound; with `end_first`, the first child created is ended right away
    /// (an `end` call), so that the rate bound is reached below the live-children bound.
    CreateChildren {
        creator: I,
        ids: Vec<I>,
        end_first: bool,
    },
    State(I),
    Raise {
        id: I,
        taint: Option<Taint>,
        untrusted: bool,
    },
    Grant {
        id: I,
        level: PostureLevel,
        actor: &'static str,
    },
    AddPattern {
        id: I,
        pattern: &'static str,
    },
    RemovePattern {
        id: I,
        pattern: &'static str,
    },
    GrantScope {
        id: I,
        name: &'static str,
        ttl_secs: i64,
    },
    RevokeScope {
        id: I,
        name: &'static str,
    },
    Advance {
        secs: i64,
    },
    RevokeLocal(I),
    RevokeCascade(I),
    Preview(I),
    /// A cascade with the token of an earlier preview (the latest when `pick` is `None`), on
    /// its root or, with `elsewhere`, on another id.
    ApplyPreview {
        pick: Option<Index>,
        elsewhere: Option<I>,
    },
    /// A cascade with a token no preview printed (malformed, or well-formed and unknown).
    CascadeWithToken {
        id: I,
        token: String,
    },
    RevokeAll,
    End(I),
    StartEpoch,
    Decide {
        id: I,
        command: &'static str,
        read_only: bool,
    },
    Reopen {
        durable: bool,
    },
}

impl Op<String> {
    /// The session the operation is about (for a create, the creator), if any.
    fn subject(&self) -> Option<&String> {
        match self {
            Op::CreateRoot(id)
            | Op::State(id)
            | Op::Raise { id, .. }
            | Op::Grant { id, .. }
            | Op::AddPattern { id, .. }
            | Op::RemovePattern { id, .. }
            | Op::GrantScope { id, .. }
            | Op::RevokeScope { id, .. }
            | Op::RevokeLocal(id)
            | Op::RevokeCascade(id)
            | Op::Preview(id)
            | Op::CascadeWithToken { id, .. }
            | Op::End(id)
            | Op::Decide { id, .. } => Some(id),
            Op::CreateChild { creator, .. } | Op::CreateChildren { creator, .. } => Some(creator),
            Op::ApplyPreview { elsewhere, .. } => elsewhere.as_ref(),
            Op::Advance { .. } | Op::RevokeAll | Op::StartEpoch | Op::Reopen { .. } => None,
        }
    }
}

impl<I> Op<I> {
    fn map<J>(&self, f: impl Fn(&I) -> J) -> Op<J> {
        match self {
            Op::CreateRoot(id) => Op::CreateRoot(f(id)),
            Op::CreateChild { id, creator } => Op::CreateChild {
                id: f(id),
                creator: f(creator),
            },
            Op::CreateChildren {
                creator,
                ids,
                end_first,
            } => Op::CreateChildren {
                creator: f(creator),
                ids: ids.iter().map(&f).collect(),
                end_first: *end_first,
            },
            Op::State(id) => Op::State(f(id)),
            Op::Raise {
                id,
                taint,
                untrusted,
            } => Op::Raise {
                id: f(id),
                taint: *taint,
                untrusted: *untrusted,
            },
            Op::Grant { id, level, actor } => Op::Grant {
                id: f(id),
                level: *level,
                actor,
            },
            Op::AddPattern { id, pattern } => Op::AddPattern { id: f(id), pattern },
            Op::RemovePattern { id, pattern } => Op::RemovePattern { id: f(id), pattern },
            Op::GrantScope { id, name, ttl_secs } => Op::GrantScope {
                id: f(id),
                name,
                ttl_secs: *ttl_secs,
            },
            Op::RevokeScope { id, name } => Op::RevokeScope { id: f(id), name },
            Op::Advance { secs } => Op::Advance { secs: *secs },
            Op::RevokeLocal(id) => Op::RevokeLocal(f(id)),
            Op::RevokeCascade(id) => Op::RevokeCascade(f(id)),
            Op::Preview(id) => Op::Preview(f(id)),
            Op::ApplyPreview { pick, elsewhere } => Op::ApplyPreview {
                pick: *pick,
                elsewhere: elsewhere.as_ref().map(&f),
            },
            Op::CascadeWithToken { id, token } => Op::CascadeWithToken {
                id: f(id),
                token: token.clone(),
            },
            Op::RevokeAll => Op::RevokeAll,
            Op::End(id) => Op::End(f(id)),
            Op::StartEpoch => Op::StartEpoch,
            Op::Decide {
                id,
                command,
                read_only,
            } => Op::Decide {
                id: f(id),
                command,
                read_only: *read_only,
            },
            Op::Reopen { durable } => Op::Reopen { durable: *durable },
        }
    }
}

/// Which session an operation is about, chosen when it runs, so that most operations reach
/// sessions that exist.
#[derive(Clone, Debug)]
enum Target {
    /// A session the model has recorded, by its place in the order of recording.
    Known(Index),
    /// The subject of the previous operation (for a create, its creator).
    Again,
    /// `sub-<known>-<n>`: a spawned id of one (nested when the known one is spawned).
    Spawn(Index, u8),
    /// `sub-sub-<known>-<n>-<m>`.
    Nested(Index, u8, u8),
    /// An id as written.
    Lit(String),
}

/// Any id of the small id space, as written.
fn any_id() -> impl Strategy<Value = String> {
    let base = || prop::sample::select(BASES);
    prop_oneof![
        5 => base().prop_map(str::to_owned),
        4 => (base(), 1u8..=2).prop_map(|(b, n)| format!("sub-{b}-{n}")),
        2 => (base(), 1u8..=2, 1u8..=2).prop_map(|(b, n, m)| format!("sub-sub-{b}-{n}-{m}")),
        1 => (base(), 1u8..=2, 1u8..=2, 1u8..=2)
            .prop_map(|(b, n, m, k)| format!("sub-sub-sub-{b}-{n}-{m}-{k}")),
        1 => prop::sample::select(ODD).prop_map(str::to_owned),
        1 => prop_oneof![Just("x".repeat(128)), Just("x".repeat(129))],
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        5 => any::<Index>().prop_map(Target::Known),
        4 => Just(Target::Again),
        3 => (any::<Index>(), 1u8..=2).prop_map(|(i, n)| Target::Spawn(i, n)),
        1 => (any::<Index>(), 1u8..=2, 1u8..=2).prop_map(|(i, n, m)| Target::Nested(i, n, m)),
        2 => any_id().prop_map(Target::Lit),
    ]
}

/// A target that is most often the previous operation's subject: for operations whose
/// interesting outcomes need an earlier one on the same session (a decision after a pattern, a
/// local revoke after a grant and a create).
fn near() -> impl Strategy<Value = Target> {
    prop_oneof![3 => Just(Target::Again), 2 => target()]
}

fn root_id() -> impl Strategy<Value = Target> {
    prop_oneof![
        8 => prop::sample::select(ROOTS).prop_map(|r| Target::Lit(r.to_owned())),
        1 => any_id().prop_map(Target::Lit),
    ]
}

fn child_id() -> impl Strategy<Value = Target> {
    prop_oneof![
        8 => prop::sample::select(CHILDREN).prop_map(|c| Target::Lit(c.to_owned())),
        1 => any_id().prop_map(Target::Lit),
    ]
}

fn level() -> impl Strategy<Value = PostureLevel> {
    prop_oneof![Just(PostureLevel::Trust), Just(PostureLevel::TrustReads)]
}

fn taint() -> impl Strategy<Value = Option<Taint>> {
    prop::option::of(prop::sample::select(TAINTS))
}

fn op() -> impl Strategy<Value = Op<Target>> {
    let tokens = prop::sample::select(vec![
        "not-a-token".to_owned(),
        "A".repeat(64),
        "0".repeat(63),
        "0".repeat(64),
        "f".repeat(64),
    ]);
    prop_oneof![
        3 => root_id().prop_map(Op::CreateRoot),
        8 => (child_id(), target()).prop_map(|(id, creator)| Op::CreateChild { id, creator }),
        2 => (target(), prop::collection::vec(child_id(), 2..=4), any::<bool>())
            .prop_map(|(creator, ids, end_first)| Op::CreateChildren { creator, ids, end_first }),
        5 => target().prop_map(Op::State),
        3 => (target(), taint(), any::<bool>())
            .prop_map(|(id, taint, untrusted)| Op::Raise { id, taint, untrusted }),
        5 => (target(), level(), prop::sample::select(ACTORS))
            .prop_map(|(id, level, actor)| Op::Grant { id, level, actor }),
        2 => (target(), prop::sample::select(PATTERNS))
            .prop_map(|(id, pattern)| Op::AddPattern { id, pattern }),
        1 => (near(), prop::sample::select(PATTERNS))
            .prop_map(|(id, pattern)| Op::RemovePattern { id, pattern }),
        2 => (target(), prop::sample::select(SCOPES), prop::sample::select(TTLS))
            .prop_map(|(id, name, ttl_secs)| Op::GrantScope { id, name, ttl_secs }),
        1 => (near(), prop::sample::select(SCOPES))
            .prop_map(|(id, name)| Op::RevokeScope { id, name }),
        2 => prop::sample::select(STEPS).prop_map(|secs| Op::Advance { secs }),
        2 => near().prop_map(Op::RevokeLocal),
        2 => target().prop_map(Op::RevokeCascade),
        3 => target().prop_map(Op::Preview),
        3 => (prop::option::of(any::<Index>()), prop::option::weighted(0.2, target()))
            .prop_map(|(pick, elsewhere)| Op::ApplyPreview { pick, elsewhere }),
        1 => (target(), tokens).prop_map(|(id, token)| Op::CascadeWithToken { id, token }),
        1 => Just(Op::RevokeAll),
        3 => target().prop_map(Op::End),
        2 => Just(Op::StartEpoch),
        5 => (near(), prop::sample::select(COMMANDS), any::<bool>())
            .prop_map(|(id, command, read_only)| Op::Decide { id, command, read_only }),
        1 => any::<bool>().prop_map(|durable| Op::Reopen { durable }),
    ]
}

/// A case: whether the ledger starts with durable postures, and its operations, the first of
/// which opens the root `a` (so that the rest has something to work on).
fn case() -> impl Strategy<Value = (bool, Vec<Op<Target>>)> {
    (any::<bool>(), prop::collection::vec(op(), 0..MAX_OPS)).prop_map(|(durable, ops)| {
        let mut all = vec![Op::CreateRoot(Target::Lit("a".to_owned()))];
        all.extend(ops);
        (durable, all)
    })
}

// ---------------------------------------------------------------------------------------------
// Counting what happened, to show the run exercised what it claims to.

thread_local! {
    /// Per thread, as each engine's test runs on a thread of its own.
    static STATS: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

fn bump(key: impl Into<String>) {
    STATS.with_borrow_mut(|stats| *stats.entry(key.into()).or_default() += 1);
}

// ---------------------------------------------------------------------------------------------
// The harness: one real ledger and one model, stepped together.

struct PreviewRec {
    root: String,
    token: String,
    bound: Fingerprint,
}

struct Harness {
    /// Where the ledger lives: a file in a temporary folder, or a PostgreSQL schema.
    _dir: tempfile::TempDir,
    _place: Option<Rc<Place>>,
    target: String,
    clock: Arc<ManualClock>,
    ledger: Option<Ledger>,
    model: Model,
    previews: Vec<PreviewRec>,
    /// The subject of the last operation, for [`Target::Again`].
    last: Option<String>,
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

macro_rules! same {
    ($what:expr, $model:expr, $real:expr) => {{
        let (m, r) = (&$model, &$real);
        if m != r {
            return Err(format!("{}: model {:?}, ledger {:?}", $what, m, r));
        }
    }};
}

/// Both failed the same way (`None`), or both succeeded (`Some`); anything else is a divergence.
fn outcome<M, R: Debug>(
    name: &str,
    model: MResult<M>,
    real: Result<R, Error>,
) -> Result<Option<(M, R)>, String> {
    match (model, real) {
        (Ok(m), Ok(r)) => {
            bump("calls");
            bump(format!("{name}: ok"));
            Ok(Some((m, r)))
        }
        (Err(w), Err(e)) if w.matches(&e) => {
            bump("calls");
            bump(format!("{name}: {}", w.name()));
            Ok(None)
        }
        (Err(w), Err(e)) => Err(format!(
            "model expected error {w:?}, ledger failed with {e:?}"
        )),
        (Ok(_), Err(e)) => Err(format!("model expected success, ledger failed with {e:?}")),
        (Err(w), Ok(r)) => Err(format!("model expected error {w:?}, ledger returned {r:?}")),
    }
}

/// The parts of a revocation every propagation shares: its root, its name, its count, and
/// which of `token` and `still_holding` it carries.
fn revocation_shape(
    r: &Revocation,
    root: Option<&str>,
    propagation: &str,
    token: bool,
    still_holding: bool,
) -> Result<(), String> {
    let what = format!("{propagation} revocation from {root:?}");
    same!(
        format!("{what}: (root, propagation, count, token, still_holding)"),
        (root, propagation, r.sessions.len(), token, still_holding),
        (
            r.root.as_deref(),
            r.propagation.as_str(),
            r.count,
            r.token.is_some(),
            r.still_holding.is_some()
        )
    );
    Ok(())
}

fn real_affected(a: &[Affected]) -> Vec<MAffected> {
    a.iter()
        .map(|a| {
            (
                a.id.clone(),
                a.depth,
                a.posture,
                a.granted_directly,
                a.current,
            )
        })
        .collect()
}

fn compare_posture(
    what: &str,
    m: Option<&MPosture>,
    r: Option<&Posture>,
    epoch: i64,
) -> Result<(), String> {
    match (m, r) {
        (None, None) => Ok(()),
        (Some(m), Some(r)) => {
            let real = MPosture {
                level: r.level,
                source: r.source,
                granted_by: r.granted_by.clone(),
                granted_at: ms(r.granted_at),
                granted_on: r.granted_on.clone(),
                inherited_from: r.inherited_from.clone(),
                allocated_at: ms(r.allocated_at),
                chain: r.chain.clone(),
                epoch: r.epoch,
            };
            same!(format!("{what}: posture"), *m, real);
            same!(
                format!("{what}: posture counts"),
                m.epoch == epoch,
                r.current
            );
            Ok(())
        }
        _ => Err(format!("{what}: posture: model {m:?}, ledger {r:?}")),
    }
}

impl Harness {
    /// A fresh ledger on `engine`; `None` when the engine is not available here.
    fn new(engine: Engine, durable: bool) -> Option<Harness> {
        let dir = scratch_dir();
        let (place, target) = match engine {
            Engine::Sqlite => {
                let path = dir.path().join("ledger.db");
                std::fs::write(&path, template()).expect("write the template ledger");
                (None, path.display().to_string())
            }
            Engine::Postgres => {
                let place = reused_place()?;
                let url = place.url();
                (Some(place), url)
            }
        };
        let clock = Arc::new(ManualClock::new(start()));
        let ledger = Ledger::open_with(&target, config(&clock, durable)).expect("open the ledger");
        let audit = ledger.audit_head().expect("audit head").seq;
        Some(Harness {
            _dir: dir,
            _place: place,
            target,
            clock,
            ledger: Some(ledger),
            model: Model {
                durable,
                audit,
                ..Model::default()
            },
            previews: Vec::new(),
            last: None,
        })
    }

    fn ledger(&self) -> &Ledger {
        self.ledger.as_ref().expect("the ledger is open")
    }

    /// Runs `f` on the model; an error leaves the model exactly as it was, as a rolled-back
    /// transaction (or a refusal, which writes only its audit row) leaves the ledger.
    fn on_model<T>(&mut self, f: impl FnOnce(&mut Model) -> MResult<T>) -> MResult<T> {
        let before = self.model.clone();
        let out = f(&mut self.model);
        if let Err(want) = &out {
            self.model = before;
            if matches!(
                want,
                Want::DepthLimit { .. } | Want::ChildLimit { .. } | Want::RateLimit { .. }
            ) {
                self.model.audit += 1; // session.create_refused
            }
        }
        out
    }

    /// Rule A1 as a count: the ledger wrote exactly the audit rows the model's changes call
    /// for, and nothing for reads of materialized or unknown ids, previews or errors.
    fn audit_rows(&self) -> Result<(), String> {
        let head = self
            .ledger()
            .audit_head()
            .map_err(|e| format!("audit head: {e:?}"))?;
        same!("audit rows written so far", self.model.audit, head.seq);
        Ok(())
    }

    /// The id a target stands for now.
    fn id(&self, t: &Target) -> String {
        let known = |i: &Index| {
            let order = &self.model.order;
            if order.is_empty() {
                "a".to_owned()
            } else {
                order[i.index(order.len())].clone()
            }
        };
        match t {
            Target::Known(i) => known(i),
            Target::Again => self.last.clone().unwrap_or_else(|| "a".to_owned()),
            Target::Spawn(i, n) => format!("sub-{}-{n}", known(i)),
            Target::Nested(i, n, m) => format!("sub-sub-{}-{n}-{m}", known(i)),
            Target::Lit(id) => id.clone(),
        }
    }

    fn end(&mut self, id: &str) -> Result<(), String> {
        let m = self.on_model(|m| m.end(id));
        let r = self.ledger().end(id, ACTOR);
        if let Some((ended, s)) = outcome("end", m, r)? {
            same!(format!("{id} ended"), true, s.session.ended_at.is_some());
            same!(
                format!("{id} ended at"),
                Some(self.model.now),
                s.session.ended_at.map(ms)
            );
            bump(format!("end: with {} sub-agents", ended.len() - 1));
        }
        Ok(())
    }

    /// True when the child was created.
    fn create_child(&mut self, id: &str, creator: &str) -> Result<bool, String> {
        let m = self.on_model(|m| m.create_child(id, creator));
        let r = self.ledger().create_child(id, creator, ACTOR);
        if let Some(((depth, level), c)) = outcome("create_child", m, r)? {
            same!(
                "created child",
                (id, Some(creator), depth, Origin::Created, true),
                (
                    c.session.id.as_str(),
                    c.session.created_by.as_deref(),
                    c.session.depth,
                    c.session.origin,
                    c.session.ended_at.is_none()
                )
            );
            same!(
                "born with (inherited_trust, inherited_trust_reads)",
                (
                    level == Some(PostureLevel::Trust),
                    level == Some(PostureLevel::TrustReads)
                ),
                (c.inherited_trust, c.inherited_trust_reads)
            );
            bump(format!("create_child: born with {level:?}"));
            return Ok(true);
        }
        Ok(false)
    }

    fn step(&mut self, op: &Op<String>) -> Result<(), String> {
        let epoch = self.model.epoch;
        match op {
            Op::CreateRoot(id) => {
                let m = self.on_model(|m| m.create_root(id));
                let r = self.ledger().create_root(id, ACTOR);
                if let Some(((), s)) = outcome("create_root", m, r)? {
                    same!(
                        "root",
                        (id.as_str(), None, 0, Origin::Root),
                        (s.id.as_str(), s.created_by, s.depth, s.origin)
                    );
                }
            }
            Op::CreateChild { id, creator } => {
                self.create_child(id, creator)?;
            }
            Op::CreateChildren {
                creator,
                ids,
                end_first,
            } => {
                let mut first = *end_first;
                for id in ids {
                    if self.create_child(id, creator)? && first {
                        first = false;
                        self.end(id)?;
                    }
                }
            }
            Op::State(id) => {
                let m = self.on_model(|m| m.state(id));
                let r = self.ledger().state(id);
                if let Some((m, r)) = outcome("state", m, r)? {
                    let materialized = r.materialized.as_ref().map(|h| match h {
                        Materialized::Born => None,
                        Materialized::Inherited { from } => Some(from.clone()),
                        // A writable handle never answers without recording: make it differ.
                        Materialized::Unrecorded { from } => Some(format!("unrecorded {from}")),
                    });
                    same!(
                        format!("state of {id}: (label, known, trust, trust_reads, materialized)"),
                        (m.label, m.known, m.trust, m.trust_reads, &m.materialized),
                        (r.label(), r.known, r.trust, r.trust_reads, &materialized)
                    );
                    compare_posture(
                        &format!("state of {id}"),
                        m.posture.as_ref(),
                        r.posture.as_ref(),
                        epoch,
                    )?;
                    bump(format!("state: known {}", m.known));
                }
            }
            Op::Raise {
                id,
                taint,
                untrusted,
            } => {
                let m = self.on_model(|m| m.raise(id, *taint, *untrusted));
                let raise = session_ledger::Raise {
                    taint: *taint,
                    untrusted: *untrusted,
                };
                let r = self.ledger().raise(id, raise, ACTOR);
                if let Some((m, r)) = outcome("raise", m, r)? {
                    same!(
                        format!("raise of {id}: (before, after, changed)"),
                        m,
                        (r.before, r.after, r.changed)
                    );
                }
            }
            Op::Grant { id, level, actor } => {
                let m = self.on_model(|m| m.grant(id, *level, actor));
                let r = self.ledger().grant(id, *level, actor);
                if let Some(((), r)) = outcome("grant", m, r)? {
                    compare_posture(
                        &format!("grant on {id}"),
                        self.model.postures.get(id.as_str()),
                        Some(&r),
                        epoch,
                    )?;
                }
            }
            Op::AddPattern { id, pattern } => {
                let m = self.on_model(|m| m.add_pattern(id, pattern));
                let r = self.ledger().add_pattern(id, pattern, ACTOR);
                if let Some((m, r)) = outcome("add_pattern", m, r)? {
                    same!(format!("pattern {pattern:?} added to {id}"), m, r);
                }
            }
            Op::RemovePattern { id, pattern } => {
                let m = self.on_model(|m| m.remove_pattern(id, pattern));
                let r = self.ledger().remove_pattern(id, pattern, ACTOR);
                outcome("remove_pattern", m, r)?;
            }
            Op::GrantScope { id, name, ttl_secs } => {
                let m = self.on_model(|m| m.grant_scope(id, name, *ttl_secs));
                let ttl = Duration::from_secs(*ttl_secs as u64);
                let r = self.ledger().grant_scope(id, name, ttl, ACTOR);
                if let Some((expires, s)) = outcome("grant_scope", m, r)? {
                    same!(
                        format!("scope {name} on {id} expires"),
                        expires,
                        ms(s.expires_at)
                    );
                }
            }
            Op::RevokeScope { id, name } => {
                let m = self.on_model(|m| m.revoke_scope(id, name));
                let r = self.ledger().revoke_scope(id, name, ACTOR);
                outcome("revoke_scope", m, r)?;
            }
            Op::Advance { secs } => {
                self.clock.advance(TimeDelta::seconds(*secs));
                self.model.now += secs * 1000;
                bump("advance clock");
            }
            Op::RevokeLocal(id) => {
                let m = self.on_model(|m| m.revoke_local(id));
                let r = self.ledger().revoke(id, Propagation::Local, ACTOR);
                if let Some(((removed, still), r)) = outcome("revoke local", m, r)? {
                    same!(
                        format!("local revoke of {id}: changed"),
                        removed,
                        real_affected(&r.sessions)
                    );
                    same!(
                        format!("local revoke of {id}: count"),
                        removed.len(),
                        r.count
                    );
                    revocation_shape(&r, Some(id), "local", false, true)?;
                    let real_still = r.still_holding.as_deref().map(real_affected);
                    same!(
                        format!("local revoke of {id}: still holding"),
                        Some(still.clone()),
                        real_still
                    );
                    bump(format!(
                        "revoke local: still holding {}",
                        if still.is_empty() { "none" } else { "some" }
                    ));
                }
            }
            Op::RevokeCascade(id) => {
                let m = self.on_model(|m| m.revoke_cascade(id, None));
                let r = self
                    .ledger()
                    .revoke(id, Propagation::CascadeUnchecked, ACTOR);
                self.compare_cascade("revoke cascade", id, m, r)?;
            }
            Op::Preview(id) => {
                let m = self.model.preview(id);
                let r = self.ledger().revoke(id, Propagation::Preview, ACTOR);
                if let Some(((would, bound), r)) = outcome("revoke preview", m, r)? {
                    same!(
                        format!("preview of {id}: would change"),
                        would,
                        real_affected(&r.sessions)
                    );
                    same!(format!("preview of {id}: count"), would.len(), r.count);
                    revocation_shape(&r, Some(id), "preview", true, false)?;
                    let token = r.token.clone().ok_or("a preview without a token")?;
                    if !token_well_formed(&token) {
                        return Err(format!("malformed preview token {token:?}"));
                    }
                    self.previews.push(PreviewRec {
                        root: id.clone(),
                        token,
                        bound,
                    });
                }
            }
            Op::ApplyPreview { pick, elsewhere } => {
                if self.previews.is_empty() {
                    bump("apply preview: none yet");
                    return Ok(());
                }
                let i = pick.map_or(self.previews.len() - 1, |p| p.index(self.previews.len()));
                let rec = &self.previews[i];
                let (target, token, bound) = (
                    elsewhere.clone().unwrap_or_else(|| rec.root.clone()),
                    rec.token.clone(),
                    rec.bound.clone(),
                );
                let m = self.on_model(|m| m.revoke_cascade(&target, Some((&token, Some(&bound)))));
                let r = self.ledger().revoke(
                    &target,
                    Propagation::Cascade {
                        token: token.clone(),
                    },
                    ACTOR,
                );
                self.compare_cascade("cascade with a preview's token", &target, m, r)?;
            }
            Op::CascadeWithToken { id, token } => {
                let m = self.on_model(|m| m.revoke_cascade(id, Some((token, None))));
                let r = self.ledger().revoke(
                    id,
                    Propagation::Cascade {
                        token: token.clone(),
                    },
                    ACTOR,
                );
                self.compare_cascade("cascade with a made-up token", id, m, r)?;
            }
            Op::RevokeAll => {
                let m = self.model.revoke_all();
                let r = self.ledger().revoke_all(ACTOR);
                if let Some((m, r)) = outcome("revoke all", Ok(m), r)? {
                    same!("global revoke: changed", m, real_affected(&r.sessions));
                    same!("global revoke: count", m.len(), r.count);
                    revocation_shape(&r, None, "global", false, false)?;
                }
            }
            Op::End(id) => self.end(id)?,
            Op::StartEpoch => {
                let m = self.model.start_epoch();
                let r = self.ledger().start_epoch(ACTOR);
                if let Some(((e, lapsed, carried), r)) = outcome("start epoch", Ok(m), r)? {
                    same!(
                        "epoch start: (epoch, durable, lapsed, carried)",
                        (e, self.model.durable, lapsed, carried),
                        (r.epoch, r.durable, r.lapsed, r.carried)
                    );
                }
            }
            Op::Decide {
                id,
                command,
                read_only,
            } => {
                let m = self.on_model(|m| m.decide(id, command, *read_only));
                let r = self.ledger().decide(id, command, *read_only);
                if let Some((m, r)) = outcome("decide", m, r)? {
                    let real = match &r.reason {
                        Reason::Trust { posture } => MReason::Trust {
                            chain: posture.chain.clone(),
                            epoch: posture.epoch,
                        },
                        Reason::TrustReads { posture, .. } => MReason::TrustReads {
                            chain: posture.chain.clone(),
                            epoch: posture.epoch,
                        },
                        Reason::Pattern { pattern, .. } => MReason::Pattern(pattern.clone()),
                        Reason::Scope {
                            scope, expires_at, ..
                        } => MReason::Scope {
                            name: scope.clone(),
                            expires_at: ms(*expires_at),
                        },
                        Reason::UnknownSession => MReason::UnknownSession,
                        Reason::SessionEnded => MReason::SessionEnded,
                        Reason::Nothing {
                            reads_only,
                            lapsed_epoch,
                            ..
                        } => MReason::Nothing {
                            reads_only: *reads_only,
                            lapsed_epoch: *lapsed_epoch,
                        },
                        other => return Err(format!("an unexpected reason {other:?}")),
                    };
                    same!(
                        format!("decide {id} {command:?} read_only={read_only}: reason"),
                        m,
                        real
                    );
                    same!(
                        format!("decide {id} {command:?}: verdict"),
                        m.verdict(),
                        r.verdict
                    );
                    same!("decision's session", id, &r.session);
                    // The whole posture row (the chain back to the operator's grant), who added
                    // the pattern, who granted the scope.
                    let what = format!("decide {id}: reason");
                    match &r.reason {
                        Reason::Trust { posture } | Reason::TrustReads { posture, .. } => {
                            let want = self.model.postures.get(id.as_str());
                            compare_posture(&what, want, Some(posture), self.model.epoch)?;
                        }
                        Reason::Pattern {
                            pattern,
                            added_by,
                            parts,
                        } => {
                            let want = self.model.patterns.get(id).and_then(|p| p.get(pattern));
                            same!(what, want.map(|p| &p.0), Some(added_by));
                            // Each part named with a pattern of the session that admits it.
                            let parts_ok = parts.iter().all(|part| {
                                self.model
                                    .patterns
                                    .get(id)
                                    .is_some_and(|p| p.contains_key(&part.pattern))
                                    && words_match(&part.pattern, &part.part.text)
                            });
                            same!(format!("decide {id}: parts"), parts_ok, true);
                        }
                        Reason::Scope {
                            scope, granted_by, ..
                        } => {
                            let want = self.model.scopes.get(id).and_then(|s| s.get(scope));
                            same!(what, want.map(|s| &s.granted_by), Some(granted_by));
                        }
                        _ => {}
                    }
                    bump(format!("decide: {}", m.kind()));
                }
            }
            Op::Reopen { durable } => {
                self.ledger = None;
                let ledger = Ledger::open_with(&self.target, config(&self.clock, *durable))
                    .map_err(|e| format!("reopening the ledger: {e:?}"))?;
                self.ledger = Some(ledger);
                self.model.durable = *durable;
                bump("close and reopen");
                self.sweep()?;
            }
        }
        Ok(())
    }

    fn compare_cascade(
        &mut self,
        name: &str,
        id: &str,
        m: MResult<Vec<MAffected>>,
        r: Result<Revocation, Error>,
    ) -> Result<(), String> {
        if let Some((m, r)) = outcome(name, m, r)? {
            same!(
                format!("{name} from {id}: changed"),
                m,
                real_affected(&r.sessions)
            );
            same!(format!("{name} from {id}: count"), m.len(), r.count);
            revocation_shape(&r, Some(id), "cascade", false, false)?;
        }
        Ok(())
    }

    /// Every row the ledger holds, read without writing, against the model.
    fn sweep(&self) -> Result<(), String> {
        let l = self.ledger();
        let m = &self.model;
        let read = |what: &str, e: Error| format!("sweep: {what}: {e:?}");
        same!(
            "sweep: current epoch",
            m.epoch,
            l.current_epoch().map_err(|e| read("epoch", e))?
        );
        type Row = (Option<String>, u32, Origin, i64, Option<i64>);
        let real: BTreeMap<String, Row> = l
            .forest()
            .map_err(|e| read("forest", e))?
            .into_iter()
            .map(|t| {
                let s = t.session;
                let row = (
                    s.created_by,
                    s.depth,
                    s.origin,
                    ms(s.created_at),
                    s.ended_at.map(ms),
                );
                (s.id, row)
            })
            .collect();
        let model: BTreeMap<String, Row> = m
            .sessions
            .iter()
            .map(|(id, s)| {
                let row = (
                    s.created_by.clone(),
                    s.depth,
                    s.origin,
                    s.created_at,
                    s.ended_at,
                );
                (id.clone(), row)
            })
            .collect();
        same!(
            "sweep: sessions (creator, depth, origin, created, ended)",
            model,
            real
        );
        for id in m.sessions.keys() {
            let stored = l.stored_label(id).map_err(|e| read("stored label", e))?;
            let stored = stored.map(|s| {
                let from = match s.materialized {
                    Some(Materialized::Inherited { from }) => Some(from),
                    _ => None,
                };
                let at = s.materialized_at.map(ms);
                (s.taint, s.untrusted, from, at, s.raised_at.map(ms))
            });
            let want = m.labels.get(id).map(|l| {
                let (label, from) = (l.label, l.from.clone());
                (label.taint, label.untrusted, from, Some(l.at), l.raised_at)
            });
            same!(format!("sweep: stored label of {id}"), want, stored);
            let posture = l.posture(id).map_err(|e| read("posture", e))?;
            compare_posture(
                &format!("sweep: {id}"),
                m.postures.get(id),
                posture.as_ref(),
                m.epoch,
            )?;
            let patterns: BTreeMap<String, (String, i64)> = l
                .patterns(id)
                .map_err(|e| read("patterns", e))?
                .into_iter()
                .map(|p| (p.pattern, (p.added_by, ms(p.added_at))))
                .collect();
            same!(
                format!("sweep: patterns of {id}"),
                m.patterns.get(id).cloned().unwrap_or_default(),
                patterns
            );
            let scopes: BTreeMap<String, MScope> = l
                .scopes(id)
                .map_err(|e| read("scopes", e))?
                .into_iter()
                .map(|s| {
                    let scope = MScope {
                        granted_by: s.granted_by,
                        granted_at: ms(s.granted_at),
                        expires_at: ms(s.expires_at),
                        revoked_at: s.revoked_at.map(ms),
                    };
                    (s.name, scope)
                })
                .collect();
            let want = m.scopes.get(id).cloned().unwrap_or_default();
            same!(format!("sweep: scopes of {id}"), want, scopes);
        }
        // Labels, postures and grants only on recorded sessions.
        let orphans: BTreeSet<&String> = m
            .labels
            .keys()
            .chain(m.postures.keys())
            .chain(m.patterns.keys())
            .chain(m.scopes.keys())
            .filter(|id| !m.sessions.contains_key(*id))
            .collect();
        if !orphans.is_empty() {
            return Err(format!("model bug: rows for unrecorded ids {orphans:?}"));
        }
        Ok(())
    }
}

/// The bytes of a ledger made by this build and nothing else, migrated once; each case starts
/// from a copy. (Opening and migrating a new file costs more than a whole case in a debug
/// build.) Kept in memory, so that no file outlives the run.
fn template() -> &'static [u8] {
    static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = scratch_dir();
        let path = dir.path().join("template.db");
        drop(
            Ledger::open_with(&path, Config::default().create_if_missing(true))
                .expect("create the template ledger"),
        );
        std::fs::read(&path).expect("read the template ledger")
    })
}

thread_local! {
    /// The PostgreSQL schema the cases of this thread take in turn.
    static PLACE: RefCell<Option<Rc<Place>>> = const { RefCell::new(None) };
}

/// The schema for a PostgreSQL case, emptied by [`Place::reset`] when an earlier case used it
/// (a new schema and its migration cost more than a whole case); `None` without a server.
fn reused_place() -> Option<Rc<Place>> {
    PLACE.with_borrow_mut(|slot| {
        if let Some(place) = slot.as_ref() {
            place.reset();
        } else {
            *slot = Some(Rc::new(Place::new()?));
        }
        slot.clone()
    })
}

/// A fresh temporary directory, in memory when the system has `/dev/shm`: this test is about
/// the rules, not the disk, and fsyncs on opening and closing would dominate its run time.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().expect("temp dir")
}

fn run_case(engine: Engine, durable: bool, ops: &[Op<Target>]) -> Result<(), TestCaseError> {
    let Some(mut h) = Harness::new(engine, durable) else {
        return Ok(());
    };
    bump("cases");
    let mut trace = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        bump("operations");
        let op = op.map(|t| h.id(t));
        trace.push(format!("{i:>3}: {op:?}"));
        if let Some(subject) = op.subject() {
            h.last = Some(subject.clone());
        }
        h.step(&op).and_then(|()| h.audit_rows()).map_err(|e| {
            fail(format!(
                "step {i} diverged: {e}\nthe operations run:\n{}",
                trace.join("\n")
            ))
        })?;
    }
    h.sweep().map_err(|e| {
        fail(format!(
            "after the last step: {e}\nthe operations run:\n{}",
            trace.join("\n")
        ))
    })?;
    let v = h
        .ledger()
        .verify(None)
        .map_err(|e| fail(format!("verify: {e:?}")))?;
    prop_assert!(v.ok, "the audit chain does not verify: {v:?}");
    Ok(())
}

fn the_ledger_behaves_like_a_plain_model_of_the_rules_over_random_operation_sequences(
    engine: Engine,
) -> TestResult {
    // A PostgreSQL case costs many times a SQLite one (each statement a round trip to the
    // server, each case a reset of its schema), so that engine runs fewer by default.
    let (variable, default) = match engine {
        Engine::Sqlite => ("MODEL_CASES", DEFAULT_CASES),
        Engine::Postgres => ("MODEL_CASES_POSTGRES", DEFAULT_CASES_POSTGRES),
    };
    if engine == Engine::Postgres && postgres_place::server().is_none() {
        return Ok(());
    }
    let cases: u32 = std::env::var(variable)
        .ok()
        .map(|v| v.parse().expect("the number of cases is a number"))
        .unwrap_or(default);
    let mut runner = TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    });
    let started = Instant::now();
    let result = runner.run(&case(), |(durable, ops)| run_case(engine, durable, &ops));
    let elapsed = started.elapsed();
    // Dropped here, not with the thread: its connection cannot close in a thread's teardown.
    drop(PLACE.with_borrow_mut(Option::take));
    let stats = STATS.with_borrow(BTreeMap::clone);
    let count = |k: &str| stats.get(k).copied().unwrap_or(0);
    println!(
        "model on {engine:?}: {} cases, {} operations, {} ledger calls compared with the model, \
         in {:.1}s ({variable}={cases})",
        count("cases"),
        count("operations"),
        count("calls"),
        elapsed.as_secs_f64()
    );
    println!("outcomes:");
    for (k, v) in stats
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "cases" | "operations" | "calls"))
    {
        println!("  {k}: {v}");
    }
    if let Err(e) = result {
        panic!("the ledger and the model diverged: {e}");
    }
    Ok(())
}

engine_tests! {
    the_ledger_behaves_like_a_plain_model_of_the_rules_over_random_operation_sequences,
}
