//! `session_ledger.Ledger`: the library's `Ledger`, called with the GIL released.
//!
//! Each method converts its Python arguments to Rust values, takes a reference to the open
//! ledger, releases the GIL for the whole library call (`Python::detach`), and converts the
//! answer or the error back. It checks nothing the library checks and decides nothing: a
//! value it cannot hand over at all (a negative count) is the only error it makes itself.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use session_ledger as sl;
use sl::{
    AlsoRevoke, AuditKind, AuditQuery, Config, Ledger, NewPattern, PostureLevel, Propagation,
    Raise, ReadOnly, RevocationKind, Taint,
};

use crate::arguments;
use crate::checkpoints;
use crate::errors::{self, Class};
use crate::levels::TreeLevel;
use crate::values::{
    AuditEntry, AuditHead, Authority, Created, Decision, DecisionRecord, Ended, EpochStart,
    Explanation, Integrated, PatternAdded, PatternReview, Posture, RaiseOutcome, Revocation, Scope,
    Session, SessionState, TreeNode, Verification,
};

/// An open ledger: a SQLite file or a PostgreSQL database. Safe to share between threads;
/// every call releases the GIL while the ledger works.
#[pyclass(module = "session_ledger", name = "Ledger", frozen)]
pub struct PyLedger {
    /// The open ledger; `None` once closed. Each call clones the `Arc` and releases the lock
    /// before it releases the GIL, so a `close()` never waits for a call, and a call under
    /// way finishes on the ledger it started with.
    inner: Mutex<Option<Arc<Ledger>>>,
    /// Where it is, for `repr` and errors (never with a password).
    location: String,
}

/// A whole number from Python, as a `u32`.
pub(crate) fn to_u32(py: Python<'_>, name: &str, kind: &str, value: i64) -> PyResult<u32> {
    u32::try_from(value).map_err(|_| {
        errors::invalid(
            py,
            kind,
            format!(
                "{name} must be a whole number from 0 to {}, not {value}",
                u32::MAX
            ),
        )
    })
}

/// A number of seconds from Python, as a `Duration`.
pub(crate) fn to_duration(
    py: Python<'_>,
    name: &str,
    kind: &str,
    seconds: f64,
) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        errors::invalid(
            py,
            kind,
            format!("{name} must be a finite, non-negative number of seconds, not {seconds}"),
        )
    })
}

/// `ttl_seconds` as a scope's time to live, in Python's terms: a number of seconds (an `int`
/// or a `float`, not a `bool`), at least a millisecond (what the ledger stores) and at most
/// [`sl::MAX_TTL`].
fn to_ttl(py: Python<'_>, ttl_seconds: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let max = sl::MAX_TTL.as_secs();
    let seconds: f64 = match ttl_seconds.extract() {
        Ok(seconds) if !ttl_seconds.is_instance_of::<pyo3::types::PyBool>() => seconds,
        _ => {
            let given = ttl_seconds.get_type().name()?;
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "ttl_seconds must be a number of seconds (an int or a float), not {given}"
            )));
        }
    };
    let ttl = Duration::try_from_secs_f64(seconds).ok();
    match ttl {
        Some(ttl) if ttl >= Duration::from_millis(1) && ttl <= sl::MAX_TTL => Ok(ttl),
        _ => Err(errors::invalid(
            py,
            "invalid_ttl",
            format!(
                "ttl_seconds must be more than 0 (at least 0.001) and at most {max} (366 days), \
                 not {seconds}"
            ),
        )),
    }
}

/// A saved audit head from Python: an `AuditHead`, or its text `SEQ:HASH` (what `str()` of
/// one, and the command line's `audit head`, print).
fn to_head(py: Python<'_>, name: &str, saved: &Bound<'_, PyAny>) -> PyResult<sl::AuditHead> {
    if let Ok(head) = saved.cast::<AuditHead>() {
        return Ok(sl::AuditHead::from(head.get()));
    }
    if let Ok(text) = saved.extract::<String>() {
        return text
            .parse::<sl::AuditHead>()
            .map_err(|e| errors::to_py(py, e));
    }
    let given = saved.get_type().name()?;
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{name} must be an AuditHead or its text 'SEQ:HASH', as audit_head() gives, not {given}"
    )))
}

/// Who says whether a command is read-only: the caller (`read_only`), the ledger (`classify`),
/// or nobody. Both at once is refused: the caller's word would silently win or lose.
pub(crate) fn who_classifies(
    py: Python<'_>,
    read_only: bool,
    classify: bool,
) -> PyResult<ReadOnly> {
    match (read_only, classify) {
        (true, true) => Err(errors::invalid(
            py,
            "invalid_classify",
            "read_only=True says the command is read-only and classify=True asks the ledger \
             whether it is: give one, not both"
                .to_owned(),
        )),
        (true, false) => Ok(ReadOnly::Yes),
        (false, true) => Ok(ReadOnly::Classify),
        (false, false) => Ok(ReadOnly::No),
    }
}

/// Who asked for a decision the caller wants recorded (`record=True`): `asked_by` is then
/// required, and without `record=True` neither it nor `tool_use_id` may be given, since
/// nothing would record them. `None` when nothing is to be recorded.
pub(crate) fn who_asked(
    py: Python<'_>,
    record: bool,
    asked_by: Option<String>,
    tool_use_id: Option<String>,
) -> PyResult<Option<(String, Option<String>)>> {
    match (record, asked_by) {
        (true, Some(actor)) => Ok(Some((actor, tool_use_id))),
        (true, None) => Err(errors::invalid(
            py,
            "missing_asked_by",
            "record=True records who asked for the decision: pass asked_by (the name of the \
             program or operator asking, as an actor: \"claude-code\"); nothing was decided or \
             recorded"
                .to_owned(),
        )),
        (false, None) if tool_use_id.is_none() => Ok(None),
        (false, _) => Err(errors::invalid(
            py,
            "missing_record",
            "asked_by and tool_use_id say who asked for a recorded decision: pass record=True \
             to record it, or leave them out; nothing was decided or recorded"
                .to_owned(),
        )),
    }
}

/// A tool call from `decide_tool`'s arguments.
pub(crate) fn tool_call<'a>(
    tool: &'a str,
    path: Option<&'a std::path::Path>,
    url: Option<&'a str>,
    root: Option<&'a std::path::Path>,
) -> sl::ToolCall<'a> {
    sl::ToolCall {
        tool,
        path,
        url,
        root,
    }
}

/// The checks `add_pattern` and `add_pattern_checked` run before storing a pattern.
fn new_pattern(
    must_match: Vec<String>,
    must_not_match: Vec<String>,
    admit_any_command: bool,
) -> NewPattern {
    let mut checks = NewPattern::new().admit_any_command(admit_any_command);
    checks.must_match = must_match;
    checks.must_not_match = must_not_match;
    checks
}

/// The settings the constructor's keywords name, over the library's defaults.
fn config(
    py: Python<'_>,
    max_depth: Option<i64>,
    max_live_children: Option<i64>,
    creation_rate: Option<&Bound<'_, PyAny>>,
    durable_postures: Option<bool>,
    read_only: bool,
    create: bool,
) -> PyResult<Config> {
    let mut config = Config::default()
        .read_only(read_only)
        .create_if_missing(create);
    if let Some(depth) = max_depth {
        config = config.max_depth(to_u32(py, "max_depth", "invalid_config", depth)?);
    }
    if let Some(n) = max_live_children {
        config = config.max_live_children(to_u32(py, "max_live_children", "invalid_config", n)?);
    }
    if let Some(rate) = creation_rate {
        let (count, seconds): (i64, f64) = rate.extract().map_err(|_| {
            errors::invalid(
                py,
                "invalid_config",
                format!(
                    "creation_rate must be (max_creations, per_seconds), like (200, 60.0), not {}",
                    rate.repr().map(|r| r.to_string()).unwrap_or_default()
                ),
            )
        })?;
        let count = to_u32(py, "creation_rate's max_creations", "invalid_config", count)?;
        let window = to_duration(py, "creation_rate's per_seconds", "invalid_config", seconds)?;
        config = config.creation_rate(count, window);
    }
    if let Some(durable) = durable_postures {
        config = config.durable_postures(durable);
    }
    Ok(config)
}

impl PyLedger {
    /// The open ledger, or the error that says it was closed.
    pub(crate) fn open_ledger(&self, py: Python<'_>) -> PyResult<Arc<Ledger>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.clone().ok_or_else(|| {
            errors::raise(
                py,
                Class::LedgerError,
                format!("the ledger at {} is closed", self.location),
                "closed",
                None,
            )
        })
    }

    /// Runs `f` on the ledger with the GIL released, and raises its error as an exception.
    fn call<T, F>(&self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send,
        F: FnOnce(&Ledger) -> sl::Result<T> + Send,
    {
        let ledger = self.open_ledger(py)?;
        // The `Arc` is dropped inside too: after a concurrent `close()` this call may hold the
        // last reference, and closing the pool waits for its connections.
        py.detach(move || f(&ledger))
            .map_err(|e| errors::to_py(py, e))
    }

    /// `add_pattern_checked` for `add_pattern` and `add_pattern_checked`. A refusal because the
    /// pattern admits any command also names the keyword that stores it anyway.
    fn add_checked(
        &self,
        py: Python<'_>,
        (id, pattern, actor): (String, String, String),
        checks: NewPattern,
    ) -> PyResult<sl::PatternAdded> {
        let ledger = self.open_ledger(py)?;
        // The `Arc` is dropped inside, as in `call`.
        let result = py.detach(move || {
            ledger
                .add_pattern_checked(&id, &pattern, &actor, &checks)
                .map_err(|e| {
                    let any_command =
                        matches!(e, sl::Error::Input(sl::InputError::InvalidPattern { .. }))
                            && !checks.admit_any_command
                            && sl::Pattern::parse(&pattern)
                                .is_ok_and(|p| p.admits_any_command().is_some());
                    (e, any_command)
                })
        });
        result.map_err(|(e, any_command)| {
            if any_command {
                errors::raise(
                    py,
                    Class::InvalidInput,
                    format!("{e}: pass admit_any_command=True"),
                    e.kind(),
                    None,
                )
            } else {
                errors::to_py(py, e)
            }
        })
    }
}

#[pymethods]
impl PyLedger {
    /// Opens the ledger at `path_or_url`; creates one there only when `create` is true (the
    /// command line's rule: a mistyped path is an error, not a new empty ledger).
    #[new]
    #[pyo3(signature = (
        path_or_url, *, create=false, max_depth=None, max_live_children=None, creation_rate=None,
        durable_postures=None, read_only=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::path_or_url)] path_or_url: PathBuf,
        #[pyo3(from_py_with = arguments::create)] create: bool,
        #[pyo3(from_py_with = arguments::max_depth)] max_depth: Option<i64>,
        #[pyo3(from_py_with = arguments::max_live_children)] max_live_children: Option<i64>,
        creation_rate: Option<Bound<'_, PyAny>>,
        #[pyo3(from_py_with = arguments::durable_postures)] durable_postures: Option<bool>,
        #[pyo3(from_py_with = arguments::read_only)] read_only: bool,
    ) -> PyResult<PyLedger> {
        let config = config(
            py,
            max_depth,
            max_live_children,
            creation_rate.as_ref(),
            durable_postures,
            read_only,
            create,
        )?;
        let ledger = py
            .detach(|| Ledger::open_with(&path_or_url, config))
            .map_err(|e| match e {
                sl::Error::Storage(sl::StorageError::NoLedger(_)) => errors::raise(
                    py,
                    Class::StorageError,
                    format!("{e} (Ledger(..., create=True) creates one)"),
                    e.kind(),
                    None,
                ),
                e => errors::to_py(py, e),
            })?;
        Ok(PyLedger {
            location: ledger.location().to_string(),
            inner: Mutex::new(Some(Arc::new(ledger))),
        })
    }

    /// Closes the ledger: its connections are released (a call still under way in another
    /// thread finishes first). Calls after this raise `LedgerError` with kind `"closed"`.
    /// Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let taken = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        py.detach(move || drop(taken));
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Where the ledger is: its file, or its server and database (never with a password).
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let location = PyString::new(py, &self.location).repr()?;
        let state = if self.closed() { ", closed=True" } else { "" };
        Ok(format!("Ledger({location}{state})"))
    }

    /// Records a root session (no creator, depth 0, the default label).
    #[pyo3(signature = (id, *, actor))]
    fn create_root(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Created> {
        self.call(py, |l| l.create_root(&id, &actor))
            .map(Created::from)
    }

    /// Records a session created by the live session `creator`, born with its posture.
    #[pyo3(signature = (id, *, creator, actor))]
    fn create_child(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::creator)] creator: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Created> {
        self.call(py, |l| l.create_child(&id, &creator, &actor))
            .map(Created::from)
    }

    /// The session's label and posture; a first read inherits and records its label.
    fn state(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<SessionState> {
        self.call(py, |l| l.state(&id)).map(SessionState::from)
    }

    /// Raises the session's label: the higher class, the flag ORed.
    #[pyo3(signature = (id, *, taint=None, untrusted=false, actor))]
    fn raise_label(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::taint)] taint: Option<String>,
        #[pyo3(from_py_with = arguments::untrusted)] untrusted: bool,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<RaiseOutcome> {
        self.call(py, |l| {
            let taint = taint.as_deref().map(str::parse::<Taint>).transpose()?;
            l.raise(&id, Raise { taint, untrusted }, &actor)
        })
        .map(RaiseOutcome::from)
    }

    /// Ends a live session and its spawned sub-agents, which the answer names; each stays as
    /// a tombstone.
    #[pyo3(signature = (id, *, actor))]
    fn end(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Ended> {
        self.call(py, |l| l.end(&id, &actor)).map(Ended::from)
    }

    /// The recorded session with this id, or `None`.
    fn session(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Option<Session>> {
        self.call(py, |l| l.session(&id))
            .map(|s| s.map(Session::from))
    }

    /// The creators of `id`, nearest first, ending with its root.
    fn ancestors(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Vec<Session>> {
        self.call(py, |l| l.ancestors(&id))
            .map(|v| v.into_iter().map(Session::from).collect())
    }

    /// The sessions `id` created or spawned, oldest first.
    fn children(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Vec<Session>> {
        self.call(py, |l| l.children(&id))
            .map(|v| v.into_iter().map(Session::from).collect())
    }

    /// The subtree of `id`, depth-first, with labels and postures; writes nothing.
    fn tree(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Vec<TreeNode>> {
        self.call(py, |l| l.tree(&id))
            .map(|v| v.into_iter().map(TreeNode::from).collect())
    }

    /// Every session, as each root's tree in the order the roots were opened.
    fn forest(&self, py: Python<'_>) -> PyResult<Vec<TreeNode>> {
        self.call(py, |l| l.forest())
            .map(|v| v.into_iter().map(TreeNode::from).collect())
    }

    /// An operator grants `"trust"` or `"trust_reads"` on a live session.
    #[pyo3(signature = (id, level, *, actor))]
    fn grant(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::level)] level: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Posture> {
        self.call(py, |l| l.grant(&id, level.parse::<PostureLevel>()?, &actor))
            .map(Posture::from)
    }

    /// The posture row of a session, current or lapsed, or `None`.
    fn posture(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Option<Posture>> {
        self.call(py, |l| l.posture(&id))
            .map(|p| p.map(Posture::from))
    }

    /// Revokes postures from `id`: `"local"`, `"cascade"` (bound to a preview by `token`, or
    /// to nothing with `unchecked=True`) or `"preview"`. There is no default. `scopes` and
    /// `patterns` also take the standing grants of the sessions it reaches.
    #[pyo3(signature = (
        id, propagation, *, actor, token=None, unchecked=false, scopes=false, patterns=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn revoke(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::propagation)] propagation: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::token)] token: Option<String>,
        #[pyo3(from_py_with = arguments::unchecked)] unchecked: bool,
        #[pyo3(from_py_with = arguments::scopes)] scopes: bool,
        #[pyo3(from_py_with = arguments::patterns)] patterns: bool,
    ) -> PyResult<Revocation> {
        let kind = propagation
            .parse::<RevocationKind>()
            .map_err(|e| errors::to_py(py, e))?;
        let only_for = |what: &str, kind: &str| {
            errors::invalid(
                py,
                kind,
                format!("{what}: revoke with \"cascade\", not {propagation:?}"),
            )
        };
        let propagation =
            match (kind, token, unchecked) {
                (RevocationKind::Cascade, Some(_), true) => return Err(errors::invalid(
                    py,
                    "invalid_token",
                    "a cascade is bound to a preview's token or, with unchecked=True, to nothing: \
                     not both"
                        .to_owned(),
                )),
                // The token goes to the library as given: an empty one is refused there, never
                // read as "no check".
                (RevocationKind::Cascade, Some(token), false) => Propagation::Cascade { token },
                (RevocationKind::Cascade, None, true) => Propagation::CascadeUnchecked,
                (RevocationKind::Cascade, None, false) => {
                    return Err(errors::invalid(
                        py,
                        "missing_token",
                        "a cascade needs the token of the preview it applies \
                     (revoke(id, \"preview\", ...).token), or unchecked=True to apply it to \
                     whatever the subtree holds when it runs"
                            .to_owned(),
                    ))
                }
                (_, Some(_), _) => {
                    return Err(only_for(
                        "a preview's token applies to a cascade",
                        "invalid_token",
                    ))
                }
                (_, None, true) => {
                    return Err(only_for(
                        "unchecked=True applies to a cascade",
                        "invalid_propagation",
                    ))
                }
                (RevocationKind::Preview, None, false) if scopes || patterns => {
                    return Err(errors::invalid(
                        py,
                        "invalid_propagation",
                        "a preview changes nothing: it lists the scopes and patterns that would \
                     still approve, and the cascade that applies it takes them with \
                     scopes=True, patterns=True"
                            .to_owned(),
                    ))
                }
                (RevocationKind::Preview, None, false) => Propagation::Preview,
                (RevocationKind::Local, None, false) => Propagation::Local,
                // A kind that is not a propagation to ask for (a global revoke is `revoke_all`).
                (other, None, false) => {
                    return Err(errors::invalid(
                        py,
                        "invalid_propagation",
                        format!(
                            "propagation must be \"local\", \"cascade\" or \"preview\", not {:?}",
                            other.as_str()
                        ),
                    ))
                }
            };
        let also = AlsoRevoke { scopes, patterns };
        self.call(py, |l| l.revoke_with(&id, propagation, also, &actor))
            .map(Revocation::from)
    }

    /// Removes every session's posture (the global trust button); `scopes` and `patterns`
    /// also take every live session's standing grants.
    #[pyo3(signature = (*, actor, scopes=false, patterns=false))]
    fn revoke_all(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::scopes)] scopes: bool,
        #[pyo3(from_py_with = arguments::patterns)] patterns: bool,
    ) -> PyResult<Revocation> {
        let also = AlsoRevoke { scopes, patterns };
        self.call(py, |l| l.revoke_all_with(also, &actor))
            .map(Revocation::from)
    }

    /// Everything that approves for `id` now: posture and chain, live scopes, patterns, and
    /// what withholds any of them.
    fn authority(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Authority> {
        self.call(py, |l| l.authority(&id)).map(Authority::from)
    }

    /// Starts a new posture epoch: the embedding backend calls it when it boots.
    #[pyo3(signature = (*, actor, durable=None))]
    fn start_epoch(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::durable)] durable: Option<bool>,
    ) -> PyResult<EpochStart> {
        self.call(py, |l| match durable {
            Some(durable) => l.start_epoch_with(durable, &actor),
            None => l.start_epoch(&actor),
        })
        .map(EpochStart::from)
    }

    /// The current posture epoch (0 until the first is started).
    fn current_epoch(&self, py: Python<'_>) -> PyResult<i64> {
        self.call(py, |l| l.current_epoch())
    }

    /// Allows a command pattern for one live session; never inherited. A pattern that admits
    /// any command is refused unless `admit_any_command` says so. Whether it was added.
    #[pyo3(signature = (
        id, pattern, *, actor, must_match=Vec::new(), must_not_match=Vec::new(),
        admit_any_command=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn add_pattern(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::pattern)] pattern: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::must_match)] must_match: Vec<String>,
        #[pyo3(from_py_with = arguments::must_not_match)] must_not_match: Vec<String>,
        #[pyo3(from_py_with = arguments::admit_any_command)] admit_any_command: bool,
    ) -> PyResult<bool> {
        self.add_checked(
            py,
            (id, pattern, actor),
            new_pattern(must_match, must_not_match, admit_any_command),
        )
        .map(|added| added.added)
    }

    /// `add_pattern`, answered with whether it was added and the warnings the pattern raises
    /// (a wildcard where `rm`, `dd` or `chmod -R` takes its target).
    #[pyo3(signature = (
        id, pattern, *, actor, must_match=Vec::new(), must_not_match=Vec::new(),
        admit_any_command=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn add_pattern_checked(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::pattern)] pattern: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::must_match)] must_match: Vec<String>,
        #[pyo3(from_py_with = arguments::must_not_match)] must_not_match: Vec<String>,
        #[pyo3(from_py_with = arguments::admit_any_command)] admit_any_command: bool,
    ) -> PyResult<PatternAdded> {
        self.add_checked(
            py,
            (id, pattern, actor),
            new_pattern(must_match, must_not_match, admit_any_command),
        )
        .map(PatternAdded::from)
    }

    /// Every stored pattern of a live session that admits less than it did before wildcards
    /// were kept from words that run programs or write files, by session then pattern.
    fn review_patterns(&self, py: Python<'_>) -> PyResult<Vec<PatternReview>> {
        self.call(py, |l| l.review_patterns())
            .map(|v| v.into_iter().map(PatternReview::from).collect())
    }

    /// Removes a command pattern from a session.
    #[pyo3(signature = (id, pattern, *, actor))]
    fn remove_pattern(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::pattern)] pattern: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<()> {
        self.call(py, |l| l.remove_pattern(&id, &pattern, &actor))
    }

    /// The command patterns on a session, oldest first.
    fn patterns(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Vec<String>> {
        self.call(py, |l| l.patterns(&id))
            .map(|v| v.into_iter().map(|p| p.pattern).collect())
    }

    /// Grants an override scope: every command of the session is approved until it expires
    /// after `ttl_seconds` or is revoked; never inherited.
    #[pyo3(signature = (id, name, *, ttl_seconds, actor))]
    fn grant_scope(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::name)] name: String,
        ttl_seconds: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Scope> {
        let ttl = to_ttl(py, ttl_seconds)?;
        self.call(py, |l| l.grant_scope(&id, &name, ttl, &actor))
            .map(Scope::from)
    }

    /// Revokes a live override scope before it expires.
    #[pyo3(signature = (id, name, *, actor))]
    fn revoke_scope(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::name)] name: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<()> {
        self.call(py, |l| l.revoke_scope(&id, &name, &actor))
    }

    /// The override scopes on a session, live or not, oldest first.
    fn scopes(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Vec<Scope>> {
        self.call(py, |l| l.scopes(&id))
            .map(|v| v.into_iter().map(Scope::from).collect())
    }

    /// May `id` run `command` now? Approve or ask, with what admitted it. `read_only` says the
    /// caller classified the command as read-only; `classify` asks the ledger to classify it.
    /// With `record=True`, the decision is recorded (by `asked_by`) before it is returned, and
    /// `record` names its record.
    #[pyo3(signature = (
        id, command, *, read_only=false, classify=false, record=false, asked_by=None,
        tool_use_id=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::command)] command: String,
        #[pyo3(from_py_with = arguments::read_only)] read_only: bool,
        #[pyo3(from_py_with = arguments::classify)] classify: bool,
        #[pyo3(from_py_with = arguments::record)] record: bool,
        #[pyo3(from_py_with = arguments::asked_by)] asked_by: Option<String>,
        #[pyo3(from_py_with = arguments::tool_use_id)] tool_use_id: Option<String>,
    ) -> PyResult<Decision> {
        let read_only = who_classifies(py, read_only, classify)?;
        match who_asked(py, record, asked_by, tool_use_id)? {
            None => self
                .call(py, |l| l.decide(&id, &command, read_only))
                .map(Decision::from),
            Some((actor, tool_use_id)) => self
                .call(py, |l| {
                    let asked = sl::AskedBy {
                        actor: &actor,
                        tool_use_id: tool_use_id.as_deref(),
                    };
                    l.decide_and_record(&id, &command, read_only, &asked)
                })
                .map(Decision::from),
        }
    }

    /// May `id` make a tool call other than a shell command now (`Read`, `Edit`, `WebFetch`,
    /// an MCP tool)? By its posture, its tool rules (`Read(src/**)`, `WebFetch(domain:HOST)`,
    /// `mcp__SERVER__TOOL`) and its live scopes; `path` is resolved against `root`. Recorded
    /// as `decide` records.
    #[pyo3(signature = (
        id, tool, *, path=None, url=None, root=None, record=false, asked_by=None, tool_use_id=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn decide_tool(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::tool)] tool: String,
        #[pyo3(from_py_with = arguments::file)] path: Option<PathBuf>,
        #[pyo3(from_py_with = arguments::url)] url: Option<String>,
        #[pyo3(from_py_with = arguments::root)] root: Option<PathBuf>,
        #[pyo3(from_py_with = arguments::record)] record: bool,
        #[pyo3(from_py_with = arguments::asked_by)] asked_by: Option<String>,
        #[pyo3(from_py_with = arguments::tool_use_id)] tool_use_id: Option<String>,
    ) -> PyResult<Decision> {
        let asked = who_asked(py, record, asked_by, tool_use_id)?;
        self.call(py, |l| {
            let call = tool_call(&tool, path.as_deref(), url.as_deref(), root.as_deref());
            match &asked {
                None => l.decide_tool(&id, &call).map(Decision::from),
                Some((actor, tool_use_id)) => {
                    let asked = sl::AskedBy {
                        actor,
                        tool_use_id: tool_use_id.as_deref(),
                    };
                    l.decide_tool_and_record(&id, &call, &asked)
                        .map(Decision::from)
                }
            }
        })
    }

    /// The recorded decisions the keywords name, newest first: about `session` (or any session
    /// in `subtree`), with `verdict`, decided by `authority`, at or after `since` and before
    /// `until`, appended before the record whose `id` is `before`, at most `limit` (100 by
    /// default).
    #[pyo3(signature = (
        *, session=None, subtree=None, verdict=None, authority=None, since=None, until=None,
        before=None, limit=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn decisions(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::session)] session: Option<String>,
        #[pyo3(from_py_with = arguments::subtree)] subtree: Option<String>,
        #[pyo3(from_py_with = arguments::verdict)] verdict: Option<String>,
        #[pyo3(from_py_with = arguments::authority)] authority: Option<String>,
        #[pyo3(from_py_with = arguments::since)] since: Option<DateTime<Utc>>,
        #[pyo3(from_py_with = arguments::until)] until: Option<DateTime<Utc>>,
        #[pyo3(from_py_with = arguments::before)] before: Option<i64>,
        #[pyo3(from_py_with = arguments::limit)] limit: Option<i64>,
    ) -> PyResult<Vec<DecisionRecord>> {
        let limit = limit
            .map(|n| to_u32(py, "limit", "invalid_limit", n))
            .transpose()?;
        let query = sl::DecisionQuery {
            session,
            subtree,
            verdict,
            authority,
            since,
            until,
            before,
            limit,
        };
        self.call(py, |l| l.decisions(&query))
            .map(|v| v.into_iter().map(DecisionRecord::from).collect())
    }

    /// The recorded decision whose own id is `record`, or `None`.
    fn decision(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::record_id)] record: String,
    ) -> PyResult<Option<DecisionRecord>> {
        self.call(py, |l| l.decision(&record))
            .map(|r| r.map(DecisionRecord::from))
    }

    /// The integrated records after position `after` of the decision log, oldest first, at
    /// most `limit`: a feed that resumes from the last `seq` kept.
    #[pyo3(signature = (after, *, limit=1000))]
    fn decisions_after(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::position_after)] after: i64,
        #[pyo3(from_py_with = arguments::whole_limit)] limit: i64,
    ) -> PyResult<Vec<DecisionRecord>> {
        let after = u64::try_from(after).map_err(|_| {
            errors::invalid(
                py,
                "invalid_position",
                format!("after is a position of the decision log, 0 or more, not {after}"),
            )
        })?;
        let limit = to_u32(py, "limit", "invalid_limit", limit)?;
        self.call(py, |l| l.decisions_after(after, limit))
            .map(|v| v.into_iter().map(DecisionRecord::from).collect())
    }

    /// Integrates the queued decision records into the decision log, in batches, each with
    /// its `decisions.integrate` audit row by `actor`.
    #[pyo3(signature = (*, actor))]
    fn integrate_decisions(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Integrated> {
        self.call(py, |l| l.integrate_decisions(&actor))
            .map(Integrated::from)
    }

    /// Why `id` holds what it holds, in one snapshot.
    fn explain(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Explanation> {
        self.call(py, |l| l.explain(&id)).map(Explanation::from)
    }

    /// Audit rows, oldest first, filtered by the keywords given.
    #[pyo3(signature = (*, session=None, kind=None, limit=None, subtree=None, since=None, until=None, before=None))]
    #[allow(clippy::too_many_arguments)]
    fn audit(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::session)] session: Option<String>,
        #[pyo3(from_py_with = arguments::kind)] kind: Option<String>,
        #[pyo3(from_py_with = arguments::limit)] limit: Option<i64>,
        #[pyo3(from_py_with = arguments::subtree)] subtree: Option<String>,
        #[pyo3(from_py_with = arguments::since)] since: Option<DateTime<Utc>>,
        #[pyo3(from_py_with = arguments::until)] until: Option<DateTime<Utc>>,
        #[pyo3(from_py_with = arguments::before)] before: Option<i64>,
    ) -> PyResult<Vec<AuditEntry>> {
        let limit = limit
            .map(|n| to_u32(py, "limit", "invalid_limit", n))
            .transpose()?;
        self.call(py, |l| {
            let mut query = AuditQuery::all();
            if let Some(session) = session {
                query = query.session(session);
            }
            if let Some(kind) = kind {
                query = query.kind(kind.parse::<AuditKind>()?);
            }
            if let Some(limit) = limit {
                query = query.limit(limit);
            }
            if let Some(subtree) = subtree {
                query = query.subtree(subtree);
            }
            if let Some(since) = since {
                query = query.since(since);
            }
            if let Some(until) = until {
                query = query.until(until);
            }
            if let Some(before) = before {
                query = query.before(before);
            }
            l.audit(&query)
        })
        .map(|v| v.into_iter().map(AuditEntry::from).collect())
    }

    /// The head of the audit chain, to keep somewhere else.
    fn audit_head(&self, py: Python<'_>) -> PyResult<AuditHead> {
        self.call(py, |l| l.audit_head()).map(AuditHead::from)
    }

    /// Walks the whole audit chain; with a saved head (an `AuditHead` or its `SEQ:HASH`
    /// text), also detects rows removed since.
    #[pyo3(signature = (saved=None))]
    fn verify(&self, py: Python<'_>, saved: Option<Bound<'_, PyAny>>) -> PyResult<Verification> {
        let saved = saved.map(|h| to_head(py, "saved", &h)).transpose()?;
        self.call(py, |l| l.verify(saved.as_ref()))
            .map(Verification::from)
    }

    /// Verifies only the rows written since `saved` (an `AuditHead` or its `SEQ:HASH` text).
    fn verify_from(&self, py: Python<'_>, saved: Bound<'_, PyAny>) -> PyResult<Verification> {
        let saved = to_head(py, "saved", &saved)?;
        self.call(py, |l| l.verify_from(&saved))
            .map(Verification::from)
    }

    /// One page of one level of the tree: the roots, or the sessions `parent` created or
    /// spawned, oldest first, after the session `after` of that level, at most `limit`.
    #[pyo3(signature = (parent=None, *, after=None, limit=50))]
    fn tree_level(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::parent)] parent: Option<String>,
        #[pyo3(from_py_with = arguments::after)] after: Option<String>,
        #[pyo3(from_py_with = arguments::whole_limit)] limit: i64,
    ) -> PyResult<TreeLevel> {
        let limit = to_u32(py, "limit", "invalid_limit", limit)?;
        self.call(py, |l| {
            l.tree_level(parent.as_deref(), after.as_deref(), limit)
        })
        .map(TreeLevel::from)
    }

    /// `decide`, answered with every part of its reason, as a `dict`: what the command line's
    /// `--json decide` prints (`verdict`, and `reason` with its `kind` and, for patterns, each
    /// simple command's `text`, `range` and the `pattern` that admitted it, or the first part
    /// no pattern admits, or the construct none ever admits, and the classification when the
    /// ledger classified the command).
    #[pyo3(signature = (id, command, *, read_only=false, classify=false))]
    fn decision_detail<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::command)] command: String,
        #[pyo3(from_py_with = arguments::read_only)] read_only: bool,
        #[pyo3(from_py_with = arguments::classify)] classify: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let read_only = who_classifies(py, read_only, classify)?;
        let decision = self.call(py, |l| l.decide(&id, &command, read_only))?;
        let value = serde_json::to_value(&decision).map_err(|e| {
            errors::raise(
                py,
                Class::LedgerError,
                format!("the decision could not be encoded: {e}"),
                "json_encoding",
                None,
            )
        })?;
        crate::values::json_to_py(py, &value)
    }

    /// Signs a checkpoint of the whole trail with `key` (a signing key's text, from
    /// `generate_key`), records it with its audit row, and returns it as a `dict`:
    /// `{"origin", "size", "root", "note"}`; `note` is the text to keep.
    #[pyo3(signature = (key, *, actor, origin=None))]
    fn checkpoint<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::key)] key: String,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
        #[pyo3(from_py_with = arguments::origin)] origin: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key: sl::SignerKey = key.parse().map_err(|e| errors::to_py(py, e))?;
        let signed = self.call(py, |l| l.checkpoint(&key, origin.as_deref(), &actor))?;
        checkpoints::to_dict(py, &signed)
    }

    /// Brings the stored audit tree up to the trail's head; returns its size.
    fn integrate_tree(&self, py: Python<'_>) -> PyResult<u64> {
        self.call(py, |l| l.integrate_tree())
    }

    /// The checkpoints the ledger signed after audit row `after`, oldest first, as `dict`s.
    #[pyo3(signature = (*, after=0, limit=1000))]
    fn checkpoints<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::row_after)] after: i64,
        #[pyo3(from_py_with = arguments::whole_limit)] limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limit = to_u32(py, "limit", "invalid_limit", limit)?;
        let list = self.call(py, |l| l.checkpoints(after, limit))?;
        checkpoints::to_dict(py, &list)
    }

    /// Verifies the trail against `checkpoint` (a note kept earlier) with `verifier_key`;
    /// `previous` is the checkpoint verified last time, `fast` reads only the rows after the
    /// checkpoint. Returns `{"ok", "checkpoint", "head", "fast", "findings", "not_checked"}`.
    #[pyo3(signature = (checkpoint, verifier_key, *, fast=false, previous=None))]
    fn verify_checkpoint<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::checkpoint_note)] checkpoint: String,
        #[pyo3(from_py_with = arguments::verifier_key)] verifier_key: String,
        #[pyo3(from_py_with = arguments::fast)] fast: bool,
        #[pyo3(from_py_with = arguments::previous)] previous: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key: sl::VerifierKey = verifier_key.parse().map_err(|e| errors::to_py(py, e))?;
        let mut options = sl::CheckpointOptions::default();
        options.fast = fast;
        options.previous = previous;
        let v = self.call(py, |l| l.verify_checkpoint(&checkpoint, &key, &options))?;
        checkpoints::to_dict(py, &v)
    }

    /// Writes a consistent copy of this SQLite ledger to the new file `dest` while writers go
    /// on, checks it on its own, and names it `dest` only when it passes. Returns `{"to",
    /// "head", "verification", "check", "ok"}`.
    fn backup<'py>(&self, py: Python<'py>, dest: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let backup = self.call(py, |l| l.backup(&dest))?;
        checkpoints::to_dict(py, &backup)
    }

    /// Moves what is over out of the live ledger into the new archive file `to` (rule K1): the
    /// trees whose every session ended before `before`, or the one tree whose root is `tree`,
    /// and the trail up to the newest checkpoint signed before `before`. Returns `{"finished",
    /// "made"}`; `made` is `None` when there was nothing to take (and no file is written).
    #[pyo3(signature = (to, *, before=None, tree=None, actor))]
    fn archive<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::to)] to: PathBuf,
        #[pyo3(from_py_with = arguments::cut_off)] before: Option<DateTime<Utc>>,
        #[pyo3(from_py_with = arguments::tree)] tree: Option<String>,
        #[pyo3(from_py_with = arguments::actor)] actor: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        // The request is non-exhaustive: built from its default, field by field. Neither
        // given is the library's refusal (`not_archivable`), not the binding's.
        let mut request = sl::ArchiveRequest::default();
        request.before = before;
        request.tree = tree;
        let run = self.call(py, |l| l.archive(&to, &request, &actor))?;
        checkpoints::to_dict(py, &run)
    }

    /// Checks the archive file `file` with `verifier_key`: on its own and then against this
    /// ledger, or, with `alone`, on its own only (no live ledger is read). Returns `{"ok",
    /// "file", "archive", "trail_from", "trail_size", "trees", "sessions", "sha256",
    /// "findings"}`; a failed check is no exception.
    #[pyo3(signature = (file, verifier_key, *, alone=false))]
    fn verify_archive<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::archive_file)] file: PathBuf,
        #[pyo3(from_py_with = arguments::verifier_key)] verifier_key: String,
        #[pyo3(from_py_with = arguments::alone)] alone: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key: sl::VerifierKey = verifier_key.parse().map_err(|e| errors::to_py(py, e))?;
        let verification = if alone {
            // The library's check without a ledger: it needs no open handle either.
            py.detach(|| Ledger::verify_archive_file(&file, &key))
                .map_err(|e| errors::to_py(py, e))?
        } else {
            self.call(py, |l| l.verify_archive(&file, &key, true))?
        };
        checkpoints::to_dict(py, &verification)
    }

    /// Where the session `id` went when it was archived, as `{"id", "tree", "archive",
    /// "file", "archived_at"}`, or `None` when it was not archived.
    fn archived<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::id)] id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let found = self.call(py, |l| l.archived(&id))?;
        checkpoints::to_dict(py, &found)
    }

    /// A receipt (C2SP tlog-proof text) for audit row `seq` against `checkpoint`, or against
    /// the newest checkpoint the ledger signed.
    #[pyo3(signature = (seq, *, checkpoint=None))]
    fn prove(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::seq)] seq: i64,
        #[pyo3(from_py_with = arguments::checkpoint_or_newest)] checkpoint: Option<String>,
    ) -> PyResult<String> {
        self.call(py, |l| l.prove(seq, checkpoint.as_deref()))
            .map(|r| r.to_text())
    }

    /// At most `limit` audit rows after row `after`, oldest first: a feed that resumes from the
    /// last `seq` kept. `format="ocsf"` gives each as an OCSF event `dict` instead.
    #[pyo3(signature = (after, *, limit=1000, format=String::from("jsonl")))]
    fn export<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::row_after)] after: i64,
        #[pyo3(from_py_with = arguments::whole_limit)] limit: i64,
        #[pyo3(from_py_with = arguments::format)] format: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ocsf = ocsf_format(py, &format)?;
        let limit = to_u32(py, "limit", "invalid_limit", limit)?;
        let rows = self.call(py, |l| l.audit_after(after, limit))?;
        feed(py, &rows, ocsf.then_some(sl::ocsf_event))
    }

    /// At most `limit` integrated decision records after position `after` of the decision
    /// log, oldest first, each as the command line's `--json decisions` object or, with
    /// `format="ocsf"`, as an OCSF API Activity event: the decision feed.
    #[pyo3(signature = (after, *, limit=1000, format=String::from("jsonl")))]
    fn export_decisions<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = arguments::position_after)] after: i64,
        #[pyo3(from_py_with = arguments::whole_limit)] limit: i64,
        #[pyo3(from_py_with = arguments::format)] format: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ocsf = ocsf_format(py, &format)?;
        let limit = to_u32(py, "limit", "invalid_limit", limit)?;
        let after = u64::try_from(after).map_err(|_| {
            errors::invalid(
                py,
                "invalid_position",
                format!("after is a position of the decision log, 0 or more, not {after}"),
            )
        })?;
        let records = self.call(py, |l| l.decisions_after(after, limit))?;
        feed(py, &records, ocsf.then_some(sl::ocsf_decision))
    }
}

/// True for a feed's `format` of `"ocsf"`, false for `"jsonl"`; anything else is refused.
fn ocsf_format(py: Python<'_>, format: &str) -> PyResult<bool> {
    match format {
        "jsonl" => Ok(false),
        "ocsf" => Ok(true),
        _ => Err(errors::invalid(
            py,
            "invalid_format",
            format!("format must be \"jsonl\" or \"ocsf\", not {format:?}"),
        )),
    }
}

/// A feed's page as a list of `dict`s: each item as OCSF when `ocsf` maps it, else as its JSON.
fn feed<'py, T: serde::Serialize>(
    py: Python<'py>,
    items: &[T],
    ocsf: Option<fn(&T) -> serde_json::Value>,
) -> PyResult<Bound<'py, PyAny>> {
    let values: Vec<serde_json::Value> = match ocsf {
        Some(map) => items.iter().map(map).collect(),
        None => items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|e| errors::invalid(py, "json_encoding", e.to_string()))?,
    };
    checkpoints::to_dict(py, &values)
}
