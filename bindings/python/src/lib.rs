//! `session_ledger._session_ledger`: the private extension module behind the `session_ledger`
//! Python package (docs/python.md).
//!
//! The package (`python/session_ledger/`) re-exports what this module defines and adds the
//! exception classes; its hand-written `__init__.pyi` is the typed surface. Here: the
//! [`Ledger`](ledger::PyLedger) class, which calls the library with the GIL released, the
//! result classes ([`values`]), and the mapping of the library's errors ([`errors`]).

use std::time::Instant;

use pyo3::prelude::*;

mod arguments;
mod checkpoints;
mod commands;
mod errors;
mod ledger;
mod levels;
mod recorder;
mod repr;
mod values;

/// Times `iterations` calls of the library's `decide`, round-robin over `ids`, in Rust with
/// the GIL released, and returns the seconds they took: the Rust side of the comparison in
/// `bench/decide.py`, on the same ledger and in the same process as the Python side. Not part
/// of the package's interface.
#[pyfunction]
fn _time_decide(
    py: Python<'_>,
    ledger: &Bound<'_, ledger::PyLedger>,
    ids: Vec<String>,
    command: String,
    read_only: bool,
    iterations: usize,
) -> PyResult<f64> {
    let ledger = ledger.get().open_ledger(py)?;
    py.detach(move || {
        let start = Instant::now();
        for i in 0..iterations {
            let id = &ids[i % ids.len()];
            let decision = ledger.decide(id, &command, read_only)?;
            std::hint::black_box(decision);
        }
        Ok(start.elapsed().as_secs_f64())
    })
    .map_err(|e| errors::to_py(py, e))
}

#[pymodule]
fn _session_ledger(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", session_ledger::schema_version())?;
    m.add_class::<ledger::PyLedger>()?;
    m.add_class::<values::Created>()?;
    m.add_class::<values::Session>()?;
    m.add_class::<values::SessionState>()?;
    m.add_class::<values::Label>()?;
    m.add_class::<values::RaiseOutcome>()?;
    m.add_class::<values::Posture>()?;
    m.add_class::<values::Revocation>()?;
    m.add_class::<values::Affected>()?;
    m.add_class::<values::StandingGrant>()?;
    m.add_class::<values::Authority>()?;
    m.add_class::<values::CommandPattern>()?;
    m.add_class::<values::Withheld>()?;
    m.add_class::<values::Ended>()?;
    m.add_class::<values::EpochStart>()?;
    m.add_class::<values::Scope>()?;
    m.add_class::<values::Decision>()?;
    m.add_class::<values::DecisionRecord>()?;
    m.add_class::<values::Integrated>()?;
    m.add_class::<recorder::PyRecorder>()?;
    m.add_class::<values::PatternAdded>()?;
    m.add_class::<values::PatternReview>()?;
    m.add_class::<commands::Classification>()?;
    m.add_class::<commands::ClassifiedPart>()?;
    m.add_class::<values::TreeNode>()?;
    m.add_class::<values::AuditEntry>()?;
    m.add_class::<values::AuditHead>()?;
    m.add_class::<values::Verification>()?;
    m.add_class::<values::Explanation>()?;
    m.add_class::<levels::TreeLevel>()?;
    m.add_class::<levels::LevelNode>()?;
    m.add("OCSF_VERSION", session_ledger::OCSF_VERSION)?;
    let kinds: Vec<&str> = session_ledger::AuditKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    m.add("AUDIT_KINDS", kinds)?;
    m.add_function(wrap_pyfunction!(checkpoints::generate_key, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::verifier_key, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::verify_receipt, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoints::restore, m)?)?;
    m.add_function(wrap_pyfunction!(commands::classify, m)?)?;
    m.add_function(wrap_pyfunction!(_time_decide, m)?)?;
    Ok(())
}
