//! The result objects: frozen Python classes holding plain values (`str`, `bool`, `int`,
//! `datetime`, `dict`, `list`), each built from the library's value of the same meaning.
//!
//! They are frozen PyO3 classes rather than Python dataclasses built in the thin package: the
//! answer of a `decide`, made on every tool approval, is then built once, in Rust, without
//! running any Python code; they compare by value (`eq`, from the Rust `PartialEq`) and hash
//! when every field can; their `repr` names every field, as a dataclass's does.

use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use session_ledger as sl;

use crate::commands::Classification;
use crate::repr::{field_repr, repr_fields};

/// A session just recorded by `create_root` or `create_child`, and what it was born with.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Created {
    id: String,
    created_by: Option<String>,
    depth: u32,
    inherited_trust: bool,
    inherited_trust_reads: bool,
    created_at: DateTime<Utc>,
}
field_repr!(
    Created,
    [
        "id",
        "created_by",
        "depth",
        "inherited_trust",
        "inherited_trust_reads",
        "created_at",
    ]
);

impl From<sl::Created> for Created {
    fn from(c: sl::Created) -> Created {
        Created {
            id: c.session.id,
            created_by: c.session.created_by,
            depth: c.session.depth,
            inherited_trust: c.inherited_trust,
            inherited_trust_reads: c.inherited_trust_reads,
            created_at: c.session.created_at,
        }
    }
}

impl From<sl::Session> for Created {
    /// A root: born with nothing inherited.
    fn from(s: sl::Session) -> Created {
        Created::from(sl::Created {
            session: s,
            inherited_trust: false,
            inherited_trust_reads: false,
        })
    }
}

/// A recorded session: its lineage and its lifetime.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Session {
    id: String,
    created_by: Option<String>,
    depth: u32,
    origin: &'static str,
    created_at: DateTime<Utc>,
    ended_at: Option<DateTime<Utc>>,
    live: bool,
}
field_repr!(
    Session,
    [
        "id",
        "created_by",
        "depth",
        "origin",
        "created_at",
        "ended_at",
        "live",
    ]
);

impl From<sl::Session> for Session {
    fn from(s: sl::Session) -> Session {
        Session {
            live: s.is_live(),
            origin: s.origin.as_str(),
            id: s.id,
            created_by: s.created_by,
            depth: s.depth,
            created_at: s.created_at,
            ended_at: s.ended_at,
        }
    }
}

/// A session's label and posture, as `state` reads them.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SessionState {
    id: String,
    taint: &'static str,
    untrusted: bool,
    trust: bool,
    trust_reads: bool,
    known: bool,
    materialized: bool,
}
field_repr!(
    SessionState,
    [
        "id",
        "taint",
        "untrusted",
        "trust",
        "trust_reads",
        "known",
        "materialized",
    ]
);

impl From<sl::SessionState> for SessionState {
    fn from(s: sl::SessionState) -> SessionState {
        let materialized = matches!(
            s.materialized,
            Some(sl::Materialized::Born | sl::Materialized::Inherited { .. })
        );
        SessionState {
            id: s.session,
            taint: s.taint.as_str(),
            untrusted: s.untrusted,
            trust: s.trust,
            trust_reads: s.trust_reads,
            known: s.known,
            materialized,
        }
    }
}

/// A label: a taint class and the untrusted flag.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Label {
    taint: &'static str,
    untrusted: bool,
}
field_repr!(Label, ["taint", "untrusted",]);

impl From<sl::Label> for Label {
    fn from(l: sl::Label) -> Label {
        Label {
            taint: l.taint.as_str(),
            untrusted: l.untrusted,
        }
    }
}

/// What `raise_label` did: what it asked for, the label before and after, and whether it
/// changed. `str()` says it in words, and why nothing changed: labels only rise.
#[pyclass(module = "session_ledger", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RaiseOutcome {
    #[pyo3(get)]
    id: String,
    #[pyo3(get)]
    requested_taint: Option<&'static str>,
    #[pyo3(get)]
    requested_untrusted: bool,
    #[pyo3(get)]
    before: Label,
    #[pyo3(get)]
    after: Label,
    #[pyo3(get)]
    changed: bool,
    /// The library's words for it.
    text: String,
}
#[pymethods]
impl RaiseOutcome {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let fields = [
            "id",
            "requested_taint",
            "requested_untrusted",
            "before",
            "after",
            "changed",
        ];
        repr_fields(slf.as_any(), "RaiseOutcome", &fields)
    }

    fn __str__(&self) -> &str {
        &self.text
    }
}

impl From<sl::RaiseOutcome> for RaiseOutcome {
    fn from(r: sl::RaiseOutcome) -> RaiseOutcome {
        RaiseOutcome {
            text: r.to_string(),
            requested_taint: r.requested.taint.map(sl::Taint::as_str),
            requested_untrusted: r.requested.untrusted,
            id: r.session,
            before: r.before.into(),
            after: r.after.into(),
            changed: r.changed,
        }
    }
}

/// A posture a session holds, with its provenance back to the operator's grant.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Posture {
    session: String,
    level: &'static str,
    source: &'static str,
    granted_by: String,
    granted_on: String,
    granted_at: DateTime<Utc>,
    inherited_from: Option<String>,
    chain: Vec<String>,
    epoch: i64,
    current: bool,
}
field_repr!(
    Posture,
    [
        "session",
        "level",
        "source",
        "granted_by",
        "granted_on",
        "granted_at",
        "inherited_from",
        "chain",
        "epoch",
        "current",
    ]
);

impl From<sl::Posture> for Posture {
    fn from(p: sl::Posture) -> Posture {
        Posture {
            session: p.session,
            level: p.level.as_str(),
            source: p.source.as_str(),
            granted_by: p.granted_by,
            granted_on: p.granted_on,
            granted_at: p.granted_at,
            inherited_from: p.inherited_from,
            chain: p.chain,
            epoch: p.epoch,
            current: p.current,
        }
    }
}

/// A session whose posture a revocation changed (or, for a preview, would change), or that
/// still holds one after a local revoke.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Affected {
    id: String,
    depth: u32,
    posture: &'static str,
    granted_directly: bool,
    current: bool,
}
field_repr!(
    Affected,
    ["id", "depth", "posture", "granted_directly", "current",]
);

impl From<sl::Affected> for Affected {
    fn from(a: sl::Affected) -> Affected {
        Affected {
            id: a.id,
            depth: a.depth,
            posture: a.posture.as_str(),
            granted_directly: a.granted_directly,
            current: a.current,
        }
    }
}

/// A scope or a command pattern on a live session that approves on its own, whatever its
/// posture: what a posture revocation leaves standing unless it is told to take it. The
/// library's `StandingGrant`, its `grant` spelled out as `kind`, `name` and `expires_at`.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct StandingGrant {
    session: String,
    depth: u32,
    kind: &'static str,
    name: String,
    expires_at: Option<DateTime<Utc>>,
    granted_by: String,
    granted_at: DateTime<Utc>,
}
field_repr!(
    StandingGrant,
    [
        "session",
        "depth",
        "kind",
        "name",
        "expires_at",
        "granted_by",
        "granted_at",
    ]
);

impl From<sl::StandingGrant> for StandingGrant {
    fn from(g: sl::StandingGrant) -> StandingGrant {
        let (kind, name, expires_at) = match g.grant {
            sl::Grant::Scope { scope, expires_at } => ("scope", scope, Some(expires_at)),
            sl::Grant::Pattern { pattern } => ("pattern", pattern, None),
            // A kind of grant this build does not name: shown, never hidden.
            _ => ("other", String::new(), None),
        };
        StandingGrant {
            session: g.session,
            depth: g.depth,
            kind,
            name,
            expires_at,
            granted_by: g.granted_by,
            granted_at: g.granted_at,
        }
    }
}

/// What a revocation changed, or for a preview would change, with the preview's token, and
/// the scopes and patterns it revoked or left approving.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Revocation {
    root: Option<String>,
    propagation: &'static str,
    sessions: Vec<String>,
    affected: Vec<Affected>,
    count: usize,
    token: Option<String>,
    still_holding: Vec<String>,
    grants_revoked: Vec<StandingGrant>,
    still_approving: Vec<StandingGrant>,
}
field_repr!(
    Revocation,
    [
        "root",
        "propagation",
        "sessions",
        "affected",
        "count",
        "token",
        "still_holding",
        "grants_revoked",
        "still_approving",
    ]
);

impl From<sl::Revocation> for Revocation {
    fn from(r: sl::Revocation) -> Revocation {
        let ids = |affected: &[sl::Affected]| affected.iter().map(|a| a.id.clone()).collect();
        let grants = |g: Vec<sl::StandingGrant>| g.into_iter().map(StandingGrant::from).collect();
        Revocation {
            root: r.root,
            propagation: r.propagation.as_str(),
            sessions: ids(&r.sessions),
            affected: r.sessions.into_iter().map(Affected::from).collect(),
            count: r.count,
            token: r.token,
            still_holding: r.still_holding.as_deref().map(ids).unwrap_or_default(),
            grants_revoked: grants(r.grants_revoked),
            still_approving: grants(r.still_approving),
        }
    }
}

/// A new posture epoch, and what happened to the postures of the one before.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct EpochStart {
    epoch: i64,
    durable: bool,
    lapsed: u64,
    carried: u64,
}
field_repr!(EpochStart, ["epoch", "durable", "lapsed", "carried",]);

impl From<sl::EpochStart> for EpochStart {
    fn from(e: sl::EpochStart) -> EpochStart {
        EpochStart {
            epoch: e.epoch,
            durable: e.durable,
            lapsed: e.lapsed,
            carried: e.carried,
        }
    }
}

/// An override scope on a session.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    session: String,
    name: String,
    granted_by: String,
    granted_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
}
field_repr!(
    Scope,
    [
        "session",
        "name",
        "granted_by",
        "granted_at",
        "expires_at",
        "revoked_at",
    ]
);

impl From<sl::Scope> for Scope {
    fn from(s: sl::Scope) -> Scope {
        Scope {
            session: s.session,
            name: s.name,
            granted_by: s.granted_by,
            granted_at: s.granted_at,
            expires_at: s.expires_at,
            revoked_at: s.revoked_at,
        }
    }
}

/// The answer of `decide`: approve or ask, what admitted the command, for a posture the chain
/// of sessions from the operator's grant down to this one, the ledger's classification when it
/// classified the command, the word a pattern's wildcard was kept from, and, for a decision
/// the caller asked to record, its record's own id (`None` otherwise).
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Decision {
    id: String,
    approved: bool,
    admitted_by: Option<&'static str>,
    chain: Vec<String>,
    reason: &'static str,
    pattern: Option<String>,
    scope: Option<String>,
    classification: Option<Classification>,
    kept_word: Option<String>,
    kept_pattern: Option<String>,
    kept_why: Option<String>,
    record: Option<String>,
}
field_repr!(
    Decision,
    [
        "id",
        "approved",
        "admitted_by",
        "chain",
        "reason",
        "pattern",
        "scope",
        "classification",
        "kept_word",
        "kept_pattern",
        "kept_why",
        "record",
    ]
);

impl From<sl::Recorded> for Decision {
    /// A recorded decision: the decision, with its record's own id.
    fn from(r: sl::Recorded) -> Decision {
        Decision {
            record: Some(r.record),
            ..Decision::from(r.decision)
        }
    }
}

impl From<sl::Decision> for Decision {
    fn from(d: sl::Decision) -> Decision {
        let approved = d.verdict == sl::Verdict::Approve;
        // The ledger's classification, when it classified the command, and the word a
        // pattern's wildcard was kept from.
        let (mut classification, mut kept) = (None, None);
        // (the reason's word, the chain of a posture, the pattern, the scope)
        let (reason, chain, pattern, scope) = match d.reason {
            sl::Reason::Trust { posture } => ("trust", posture.chain, None, None),
            sl::Reason::TrustReads {
                posture,
                classification: c,
                ..
            } => {
                classification = c;
                ("trust_reads", posture.chain, None, None)
            }
            sl::Reason::Pattern { pattern, .. } => ("pattern", Vec::new(), Some(pattern), None),
            sl::Reason::Scope { scope, .. } => ("scope", Vec::new(), None, Some(scope)),
            sl::Reason::ToolRule { rule, .. } => ("tool_rule", Vec::new(), Some(rule), None),
            sl::Reason::UnknownSession => ("unknown_session", Vec::new(), None, None),
            sl::Reason::SessionEnded => ("session_ended", Vec::new(), None, None),
            sl::Reason::Nothing {
                classification: c,
                kept: k,
                ..
            } => {
                (classification, kept) = (c, k);
                ("nothing", Vec::new(), None, None)
            }
            // A reason this build does not name: the verdict still stands.
            _ => (
                if approved { "other" } else { "nothing" },
                Vec::new(),
                None,
                None,
            ),
        };
        let admitted_by = match reason {
            "trust" | "trust_reads" | "pattern" | "tool_rule" | "scope" if approved => Some(reason),
            _ => None,
        };
        Decision {
            id: d.session,
            approved,
            admitted_by,
            chain,
            reason,
            pattern,
            scope,
            classification: classification.map(Classification::from),
            kept_word: kept.as_ref().map(|k| k.word.clone()),
            kept_pattern: kept.as_ref().map(|k| k.pattern.clone()),
            kept_why: kept.map(|k| k.why),
            record: None,
        }
    }
}

/// A session in a tree view: its lineage, its label, whether it is materialized, whether its
/// posture counts now, and how many live scopes and command patterns it holds.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TreeNode {
    id: String,
    created_by: Option<String>,
    depth: u32,
    relative_depth: u32,
    taint: &'static str,
    untrusted: bool,
    materialized: bool,
    trust: bool,
    trust_reads: bool,
    live_scopes: u32,
    patterns: u32,
    live: bool,
}
field_repr!(
    TreeNode,
    [
        "id",
        "created_by",
        "depth",
        "relative_depth",
        "taint",
        "untrusted",
        "materialized",
        "trust",
        "trust_reads",
        "live_scopes",
        "patterns",
        "live",
    ]
);

impl From<sl::TreeNode> for TreeNode {
    fn from(n: sl::TreeNode) -> TreeNode {
        TreeNode {
            live: n.session.is_live(),
            id: n.session.id,
            created_by: n.session.created_by,
            depth: n.session.depth,
            relative_depth: n.relative_depth,
            taint: n.taint.as_str(),
            untrusted: n.untrusted,
            materialized: n.materialized,
            trust: n.trust,
            trust_reads: n.trust_reads,
            live_scopes: n.live_scopes,
            patterns: n.patterns,
        }
    }
}

/// One row of the audit trail.
#[pyclass(module = "session_ledger", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct AuditEntry {
    #[pyo3(get)]
    seq: i64,
    #[pyo3(get)]
    kind: &'static str,
    #[pyo3(get)]
    session: Option<String>,
    #[pyo3(get)]
    actor: String,
    #[pyo3(get)]
    at: DateTime<Utc>,
    detail: serde_json::Value,
    #[pyo3(get)]
    prev_hash: String,
    #[pyo3(get)]
    hash: String,
}
#[pymethods]
impl AuditEntry {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let fields = [
            "seq",
            "kind",
            "session",
            "actor",
            "at",
            "detail",
            "prev_hash",
            "hash",
        ];
        repr_fields(slf.as_any(), "AuditEntry", &fields)
    }

    /// Everything else the row records, as a new `dict` on each access.
    #[getter]
    fn detail<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.detail)
    }
}

impl From<sl::AuditEntry> for AuditEntry {
    fn from(e: sl::AuditEntry) -> AuditEntry {
        AuditEntry {
            seq: e.seq,
            kind: e.kind.as_str(),
            session: e.session,
            actor: e.actor,
            at: e.at,
            detail: e.detail,
            prev_hash: e.prev_hash,
            hash: e.hash,
        }
    }
}

/// A JSON value as plain Python: `dict`, `list`, `str`, `int`, `float`, `bool` or `None`.
pub(crate) fn json_to_py<'py>(
    py: Python<'py>,
    value: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// The head of the audit chain: the last row's `seq` and `hash`. `str()` gives `SEQ:HASH`,
/// which `AuditHead.parse` reads back.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct AuditHead {
    seq: i64,
    hash: String,
}
#[pymethods]
impl AuditHead {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        repr_fields(slf.as_any(), "AuditHead", &["seq", "hash"])
    }

    /// Reads a head saved as `SEQ:HASH`.
    #[staticmethod]
    fn parse(py: Python<'_>, text: String) -> PyResult<AuditHead> {
        text.parse::<sl::AuditHead>()
            .map(AuditHead::from)
            .map_err(|e| crate::errors::to_py(py, e))
    }

    fn __str__(&self) -> String {
        format!("{}:{}", self.seq, self.hash)
    }
}

impl From<sl::AuditHead> for AuditHead {
    fn from(h: sl::AuditHead) -> AuditHead {
        AuditHead {
            seq: h.seq,
            hash: h.hash,
        }
    }
}

impl From<&AuditHead> for sl::AuditHead {
    fn from(h: &AuditHead) -> sl::AuditHead {
        sl::AuditHead {
            seq: h.seq,
            hash: h.hash.clone(),
        }
    }
}

/// The result of walking the audit chain.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Verification {
    ok: bool,
    rows: u64,
    head: AuditHead,
    first_bad_seq: Option<i64>,
    problem: Option<String>,
}
field_repr!(
    Verification,
    ["ok", "rows", "head", "first_bad_seq", "problem",]
);

impl From<sl::Verification> for Verification {
    fn from(v: sl::Verification) -> Verification {
        // The problem's stable word (`hash_mismatch`, `gap`, ...), as the JSON output spells it.
        let problem = v.problem.map(|p| match serde_json::to_value(&p) {
            Ok(serde_json::Value::String(word)) => word,
            _ => p.to_string(),
        });
        Verification {
            ok: v.ok,
            rows: v.rows,
            head: v.head.into(),
            first_bad_seq: v.first_bad_seq,
            problem,
        }
    }
}

/// Why a session holds what it holds: its record, its label and posture, the audit row of the
/// operator's grant its posture traces back to, its grants, every audit row about it,
/// everything that approves for it now, and its latest recorded decisions.
#[pyclass(module = "session_ledger", frozen, eq, get_all)]
#[derive(Clone, PartialEq)]
pub struct Explanation {
    session: Session,
    state: SessionState,
    posture: Option<Posture>,
    grant: Option<AuditEntry>,
    patterns: Vec<String>,
    live_scopes: Vec<Scope>,
    audit: Vec<AuditEntry>,
    authority: Authority,
    decisions: Vec<DecisionRecord>,
}
field_repr!(
    Explanation,
    [
        "session",
        "state",
        "posture",
        "grant",
        "patterns",
        "live_scopes",
        "audit",
        "authority",
        "decisions",
    ]
);

impl From<sl::Explanation> for Explanation {
    fn from(e: sl::Explanation) -> Explanation {
        Explanation {
            posture: e.state.posture.clone().map(Posture::from),
            session: e.session.into(),
            state: e.state.into(),
            grant: e.grant.map(AuditEntry::from),
            patterns: e.patterns.into_iter().map(|p| p.pattern).collect(),
            live_scopes: e.live_scopes.into_iter().map(Scope::from).collect(),
            audit: e.audit.into_iter().map(AuditEntry::from).collect(),
            authority: e.authority.into(),
            decisions: e.decisions.into_iter().map(DecisionRecord::from).collect(),
        }
    }
}

/// A session that `end` ended, and the spawned sub-agents that ended with it.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Ended {
    session: Session,
    spawned: Vec<String>,
}
field_repr!(Ended, ["session", "spawned"]);

impl From<sl::Ended> for Ended {
    fn from(e: sl::Ended) -> Ended {
        Ended {
            session: e.session.into(),
            spawned: e.spawned,
        }
    }
}

/// A command pattern on a session, with who added it, and why this build refuses it if it
/// does (a refused pattern admits nothing).
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CommandPattern {
    session: String,
    pattern: String,
    added_by: String,
    added_at: DateTime<Utc>,
    refused: Option<String>,
}
field_repr!(
    CommandPattern,
    ["session", "pattern", "added_by", "added_at", "refused",]
);

impl From<sl::CommandPattern> for CommandPattern {
    fn from(p: sl::CommandPattern) -> CommandPattern {
        CommandPattern {
            session: p.session,
            pattern: p.pattern,
            added_by: p.added_by,
            added_at: p.added_at,
            refused: p.refused,
        }
    }
}

/// What `add_pattern_checked` did: whether it added the pattern (False when the session
/// already had it, and nothing was written), and the warnings the pattern raises.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PatternAdded {
    added: bool,
    warnings: Vec<String>,
}
field_repr!(PatternAdded, ["added", "warnings"]);

impl From<sl::PatternAdded> for PatternAdded {
    fn from(p: sl::PatternAdded) -> PatternAdded {
        PatternAdded {
            added: p.added,
            warnings: p.warnings,
        }
    }
}

/// A stored pattern of a live session that admits less than it did before wildcards were kept
/// from words that run programs or write files (`Ledger.review_patterns`), and why.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PatternReview {
    session: String,
    pattern: String,
    added_by: String,
    added_at: DateTime<Utc>,
    reason: String,
}
field_repr!(
    PatternReview,
    ["session", "pattern", "added_by", "added_at", "reason",]
);

impl From<sl::PatternReview> for PatternReview {
    fn from(p: sl::PatternReview) -> PatternReview {
        PatternReview {
            session: p.session,
            pattern: p.pattern,
            added_by: p.added_by,
            added_at: p.added_at,
            reason: p.reason,
        }
    }
}

/// Why something a session holds approves nothing now: `kind` is `"session_ended"`,
/// `"lapsed_posture"` (with the posture's `epoch`) or `"refused_pattern"` (with the `pattern`
/// and the `problem` this build has with it).
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Withheld {
    kind: &'static str,
    epoch: Option<i64>,
    pattern: Option<String>,
    problem: Option<String>,
}
field_repr!(Withheld, ["kind", "epoch", "pattern", "problem"]);

impl From<sl::Withheld> for Withheld {
    fn from(w: sl::Withheld) -> Withheld {
        let (kind, epoch, pattern, problem) = match w {
            sl::Withheld::SessionEnded => ("session_ended", None, None, None),
            sl::Withheld::LapsedPosture { epoch } => ("lapsed_posture", Some(epoch), None, None),
            sl::Withheld::RefusedPattern { pattern, problem } => {
                ("refused_pattern", None, Some(pattern), Some(problem))
            }
            // A reason this build does not name: still shown as withholding something.
            _ => ("other", None, None, None),
        };
        Withheld {
            kind,
            epoch,
            pattern,
            problem,
        }
    }
}

/// Everything that approves for one session now, read in one snapshot (`Ledger.authority`):
/// its posture with the chain back to the operator's grant, its live scopes, its command
/// patterns, and what withholds any of them.
#[pyclass(module = "session_ledger", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Authority {
    #[pyo3(get)]
    session: String,
    #[pyo3(get)]
    live: bool,
    #[pyo3(get)]
    posture: Option<Posture>,
    #[pyo3(get)]
    scopes: Vec<Scope>,
    #[pyo3(get)]
    patterns: Vec<CommandPattern>,
    #[pyo3(get)]
    withheld: Vec<Withheld>,
    /// The library's answers, computed once from its own value.
    anything: bool,
    every_command: bool,
}
#[pymethods]
impl Authority {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let fields = [
            "session", "live", "posture", "scopes", "patterns", "withheld",
        ];
        repr_fields(slf.as_any(), "Authority", &fields)
    }

    /// True when something approves for the session now: a posture that counts, a live
    /// scope, or a pattern this build accepts, on a live session.
    fn approves_anything(&self) -> bool {
        self.anything
    }

    /// True when every command of the session is approved now: `trust` that counts, or a
    /// live scope, on a live session.
    fn approves_every_command(&self) -> bool {
        self.every_command
    }
}

impl From<sl::Authority> for Authority {
    fn from(a: sl::Authority) -> Authority {
        Authority {
            anything: a.approves_anything(),
            every_command: a.approves_every_command(),
            session: a.session,
            live: a.live,
            posture: a.posture.map(Posture::from),
            scopes: a.scopes.into_iter().map(Scope::from).collect(),
            patterns: a.patterns.into_iter().map(CommandPattern::from).collect(),
            withheld: a.withheld.into_iter().map(Withheld::from).collect(),
        }
    }
}

/// A recorded decision (rules D1, D2), as `Ledger.decisions` lists it: what was asked, the
/// verdict and the authority that decided, the whole reason, who asked, and its place in the
/// decision log once integrated.
#[pyclass(module = "session_ledger", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct DecisionRecord {
    #[pyo3(get)]
    record: String,
    #[pyo3(get)]
    at: DateTime<Utc>,
    #[pyo3(get)]
    session: String,
    #[pyo3(get)]
    tree: String,
    #[pyo3(get)]
    tool: Option<String>,
    #[pyo3(get)]
    input: String,
    #[pyo3(get)]
    input_bytes: u64,
    #[pyo3(get)]
    input_sha256: Option<String>,
    #[pyo3(get)]
    verdict: String,
    #[pyo3(get)]
    authority: String,
    reason: serde_json::Value,
    #[pyo3(get)]
    asked_by: String,
    #[pyo3(get)]
    tool_use_id: Option<String>,
    #[pyo3(get)]
    seq: Option<u64>,
    #[pyo3(get)]
    batch: Option<i64>,
    #[pyo3(get)]
    id: i64,
}
#[pymethods]
impl DecisionRecord {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let fields = [
            "record",
            "at",
            "session",
            "tree",
            "tool",
            "input",
            "input_bytes",
            "input_sha256",
            "verdict",
            "authority",
            "reason",
            "asked_by",
            "tool_use_id",
            "seq",
            "batch",
            "id",
        ];
        repr_fields(slf.as_any(), "DecisionRecord", &fields)
    }

    /// The reason, as the ledger recorded it, as a new `dict` on each access.
    #[getter]
    fn reason<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.reason)
    }
}

impl From<sl::DecisionRecord> for DecisionRecord {
    fn from(r: sl::DecisionRecord) -> DecisionRecord {
        DecisionRecord {
            record: r.record,
            at: r.at,
            session: r.session,
            tree: r.tree,
            tool: r.tool,
            input: r.input,
            input_bytes: r.input_bytes,
            input_sha256: r.input_sha256,
            verdict: r.verdict,
            authority: r.authority,
            reason: r.reason,
            asked_by: r.asked_by,
            tool_use_id: r.tool_use_id,
            seq: r.seq,
            batch: r.batch,
            id: r.id,
        }
    }
}

/// What `Ledger.integrate_decisions` did.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Integrated {
    records: u64,
    batches: u64,
    log_size: u64,
    queued: u64,
}
field_repr!(Integrated, ["records", "batches", "log_size", "queued"]);

impl From<sl::Integrated> for Integrated {
    fn from(i: sl::Integrated) -> Integrated {
        Integrated {
            records: i.records,
            batches: i.batches,
            log_size: i.log_size,
            queued: i.queued,
        }
    }
}
