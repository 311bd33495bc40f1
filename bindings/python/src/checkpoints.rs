//! Signed checkpoints of the audit trail from Python (docs/audit.md, "Checkpoints"): keys as
//! their text, results as plain `dict`s of the library's JSON forms, and receipts checked
//! offline. The ledger's own methods (`checkpoint`, `verify_checkpoint`, `prove`, ...) are on
//! `Ledger`; these functions need no ledger.

use std::path::PathBuf;

use pyo3::prelude::*;
use session_ledger as sl;

use crate::errors;
use crate::values::json_to_py;

/// A library value as a plain Python `dict`, through its JSON form.
pub(crate) fn to_dict<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|e| errors::invalid(py, "json_encoding", e.to_string()))?;
    json_to_py(py, &json)
}

/// A Python value (a `dict` of a row, say) as JSON, through the standard `json` module.
pub(crate) fn from_python(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| errors::invalid(py, "invalid_note", e.to_string()))
}

/// A new Ed25519 signing key named `name`, as the text of its key file
/// (`PRIVATE+KEY+NAME+KEYID+BASE64`): keep it out of the database, and its verifier key
/// (`verifier_key(key)`) with the auditors.
#[pyfunction]
pub(crate) fn generate_key(py: Python<'_>, name: String) -> PyResult<String> {
    py.detach(move || sl::SignerKey::generate(&name))
        .map(|k| k.to_string())
        .map_err(|e| errors::to_py(py, e))
}

/// The verifier key (`NAME+KEYID+BASE64`) of a signing key's text.
#[pyfunction]
pub(crate) fn verifier_key(py: Python<'_>, key: String) -> PyResult<String> {
    key.parse::<sl::SignerKey>()
        .map(|k| k.verifier().to_string())
        .map_err(|e| errors::to_py(py, e))
}

/// Checks a receipt (from `Ledger.prove`) offline with the verifier key, for `row` (a `dict` as
/// `AuditEntry.to_dict()` or the command line's `--json audit` gives it), or the row the
/// receipt carries. Returns `{"ok", "seq", "checkpoint", "why"}`.
#[pyfunction]
#[pyo3(signature = (receipt, verifier_key, row=None))]
pub(crate) fn verify_receipt<'py>(
    py: Python<'py>,
    receipt: String,
    verifier_key: String,
    row: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let row = row.map(|r| from_python(py, &r)).transpose()?;
    let key: sl::VerifierKey = verifier_key.parse().map_err(|e| errors::to_py(py, e))?;
    let check = py
        .detach(|| sl::verify_receipt(&receipt, row.as_ref(), &key))
        .map_err(|e| errors::to_py(py, e))?;
    to_dict(py, &check)
}

/// Puts the SQLite backup `backup` in the place `to`, where no ledger is, once it passes the
/// checks a backup gets (and verifies against `checkpoint` with `verifier_key`, when given).
/// Returns `{"from", "to", "head", "verification", "check", "checkpoint", "ok"}`; nothing is
/// written unless `ok`.
#[pyfunction]
#[pyo3(signature = (backup, to, *, checkpoint=None, verifier_key=None))]
pub(crate) fn restore<'py>(
    py: Python<'py>,
    backup: PathBuf,
    to: PathBuf,
    checkpoint: Option<String>,
    verifier_key: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = match (&checkpoint, verifier_key) {
        (Some(_), Some(key)) => Some(
            key.parse::<sl::VerifierKey>()
                .map_err(|e| errors::to_py(py, e))?,
        ),
        (None, None) => None,
        _ => {
            return Err(errors::invalid(
                py,
                "invalid_config",
                "a checkpoint and its verifier_key go together".to_owned(),
            ))
        }
    };
    let against = checkpoint.as_deref().zip(key.as_ref());
    let restored = py
        .detach(|| sl::Ledger::restore(&backup, &to, against))
        .map_err(|e| errors::to_py(py, e))?;
    to_dict(py, &restored)
}
