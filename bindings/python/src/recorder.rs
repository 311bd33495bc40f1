//! `session_ledger.DecisionRecorder`: the library's batching `DecisionRecorder` (rule D1's
//! exception, with its loss window stated), called with the GIL released.
//!
//! It decides at once and holds each record in memory; the library's own thread appends what
//! it holds as one transaction when the oldest has waited `window` seconds, or as soon as
//! `max_batch` wait. A crash of the process loses at most the records of the last window and
//! the batch in flight. `close()` (and leaving a `with` block) appends what it holds and stops
//! the thread; when that append fails it raises `DecisionsUnknown` and stays open, holding the
//! records, so that nothing is dropped without the caller hearing of it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use session_ledger as sl;

use crate::arguments;
use crate::errors::{self, Class};
use crate::ledger::{to_duration, tool_call, who_classifies, PyLedger};
use crate::values::Decision;

/// Decides, and records in batches: see the module's documentation. Safe to share between
/// threads; every call releases the GIL while the ledger works.
#[pyclass(module = "session_ledger", name = "DecisionRecorder", frozen)]
pub struct PyRecorder {
    /// The recorder; `None` once closed. Each call clones the `Arc` and releases the lock
    /// before it releases the GIL, as `Ledger` does with its handle.
    inner: Mutex<Option<Arc<sl::DecisionRecorder>>>,
    /// The `Ledger` it decides on: a decision is refused once that is closed (what is held is
    /// still appended).
    ledger: Py<PyLedger>,
    window: f64,
    max_batch: usize,
}

impl PyRecorder {
    /// The recorder, or the error that says it was closed; the error that says the ledger was
    /// closed, when it was.
    fn open(&self, py: Python<'_>) -> PyResult<Arc<sl::DecisionRecorder>> {
        self.ledger.get().open_ledger(py)?;
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| {
                errors::raise(
                    py,
                    Class::LedgerError,
                    "the decision recorder is closed".to_owned(),
                    "closed",
                    None,
                )
            })
    }

    /// Runs `f` on the recorder with the GIL released, and raises its error as an exception.
    fn call<T, F>(&self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send,
        F: FnOnce(&sl::DecisionRecorder) -> sl::Result<T> + Send,
    {
        let recorder = self.open(py)?;
        // Dropped inside: after a concurrent `close()` this call may hold the last reference,
        // and dropping the recorder appends what it holds and joins its thread.
        py.detach(move || f(&recorder))
            .map_err(|e| errors::to_py(py, e))
    }
}

#[pymethods]
impl PyRecorder {
    /// A recorder deciding on `ledger`, appending its records at most `window` seconds after
    /// each decision (at most 10), or as soon as `max_batch` wait.
    #[new]
    #[pyo3(signature = (ledger, *, window=0.05, max_batch=2000))]
    fn new(
        py: Python<'_>,
        ledger: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = arguments::window)] window: f64,
        #[pyo3(from_py_with = arguments::max_batch)] max_batch: i64,
    ) -> PyResult<PyRecorder> {
        let ledger = ledger.cast::<PyLedger>().map_err(|_| {
            let given = ledger
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "another type".to_owned());
            PyTypeError::new_err(format!("ledger must be a Ledger, not {given}"))
        })?;
        let mut options = sl::RecorderOptions::default();
        options.window = to_duration(py, "window", "invalid_config", window)?;
        options.max_batch = usize::try_from(max_batch).map_err(|_| {
            errors::invalid(
                py,
                "invalid_config",
                format!("max_batch must be a whole number of records, 1 or more, not {max_batch}"),
            )
        })?;
        let handle = ledger.get().open_ledger(py)?;
        let recorder = py
            .detach(move || sl::DecisionRecorder::new(handle, options))
            .map_err(|e| errors::to_py(py, e))?;
        Ok(PyRecorder {
            inner: Mutex::new(Some(Arc::new(recorder))),
            ledger: ledger.clone().unbind(),
            window: options.window.as_secs_f64(),
            max_batch: options.max_batch,
        })
    }

    /// `Ledger.decide`, its record held for the next batch: `record` names it.
    #[pyo3(signature = (id, command, *, asked_by, read_only=false, classify=false, tool_use_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::command)] command: String,
        #[pyo3(from_py_with = arguments::actor)] asked_by: String,
        #[pyo3(from_py_with = arguments::read_only)] read_only: bool,
        #[pyo3(from_py_with = arguments::classify)] classify: bool,
        #[pyo3(from_py_with = arguments::tool_use_id)] tool_use_id: Option<String>,
    ) -> PyResult<Decision> {
        let read_only = who_classifies(py, read_only, classify)?;
        self.call(py, |r| {
            let asked = sl::AskedBy {
                actor: &asked_by,
                tool_use_id: tool_use_id.as_deref(),
            };
            r.decide(&id, &command, read_only, &asked)
        })
        .map(Decision::from)
    }

    /// `Ledger.decide_tool`, its record held for the next batch.
    #[pyo3(signature = (id, tool, *, asked_by, path=None, url=None, root=None, tool_use_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn decide_tool(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = arguments::id)] id: String,
        #[pyo3(from_py_with = arguments::tool)] tool: String,
        #[pyo3(from_py_with = arguments::actor)] asked_by: String,
        #[pyo3(from_py_with = arguments::file)] path: Option<PathBuf>,
        #[pyo3(from_py_with = arguments::url)] url: Option<String>,
        #[pyo3(from_py_with = arguments::root)] root: Option<PathBuf>,
        #[pyo3(from_py_with = arguments::tool_use_id)] tool_use_id: Option<String>,
    ) -> PyResult<Decision> {
        self.call(py, |r| {
            let call = tool_call(&tool, path.as_deref(), url.as_deref(), root.as_deref());
            let asked = sl::AskedBy {
                actor: &asked_by,
                tool_use_id: tool_use_id.as_deref(),
            };
            r.decide_tool(&id, &call, &asked)
        })
        .map(Decision::from)
    }

    /// Appends everything held now and waits for it; returns how many records the recorder
    /// has appended since it started.
    fn flush(&self, py: Python<'_>) -> PyResult<u64> {
        let recorder = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match recorder {
            Some(recorder) => py
                .detach(move || recorder.flush())
                .map_err(|e| errors::to_py(py, e)),
            None => Err(errors::raise(
                py,
                Class::LedgerError,
                "the decision recorder is closed".to_owned(),
                "closed",
                None,
            )),
        }
    }

    /// How many records wait in memory now.
    fn held(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, |r| r.held())
    }

    /// Appends what the recorder holds, then stops it. When the append fails it raises
    /// `DecisionsUnknown` and the recorder stays open, holding the records (call `close()`
    /// again). Closing twice does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(recorder) = taken else {
            return Ok(());
        };
        let (recorder, flushed) = py.detach(move || {
            let flushed = recorder.flush();
            (recorder, flushed)
        });
        match flushed {
            Ok(_) => {
                // Joins its thread (after what a call still under way adds, if it holds the
                // last reference).
                py.detach(move || drop(recorder));
                Ok(())
            }
            Err(e) => {
                *self.inner.lock().unwrap_or_else(PoisonError::into_inner) = Some(recorder);
                Err(errors::to_py(py, e))
            }
        }
    }

    /// True once `close()` succeeded.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// The longest a record waits in memory, in seconds.
    #[getter]
    fn window(&self) -> f64 {
        self.window
    }

    /// How many records make a batch that is appended at once.
    #[getter]
    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let ledger = self.ledger.bind(py).repr()?;
        let state = if self.closed() { ", closed=True" } else { "" };
        Ok(format!(
            "DecisionRecorder({ledger}, window={}, max_batch={}{state})",
            self.window, self.max_batch
        ))
    }
}
