//! The ledger's errors as Python exceptions.
//!
//! The exception classes are plain Python classes (`session_ledger/_errors.py`), so that
//! `InvalidInput` can also be a `ValueError` and `UnknownSession` a `KeyError`. Each is raised
//! with the Rust error's whole message and its stable `kind` word (`Error::kind`), and the class
//! follows the Rust error's split: input, conflict, refusal, storage, corruption. A write whose
//! durability is unknown is a storage error with a class of its own, carrying the `seq` and
//! `hash` of its newest audit row; so are decision records whose append may or may not last,
//! carrying their ids.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use session_ledger::{Conflict, Error, StorageError};

/// The Python module that defines the exception classes.
const MODULE: &str = "session_ledger._errors";

/// The exception classes, imported once.
macro_rules! classes {
    ($($name:ident => $class:literal,)*) => {
        /// An exception class of `session_ledger`.
        #[derive(Clone, Copy)]
        pub(crate) enum Class {
            $($name,)*
        }

        impl Class {
            fn get(self, py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
                match self {
                    $(Class::$name => {
                        static CELL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
                        CELL.import(py, MODULE, $class)
                    })*
                }
            }
        }
    };
}

classes! {
    LedgerError => "LedgerError",
    InvalidInput => "InvalidInput",
    Conflict => "Conflict",
    UnknownSession => "UnknownSession",
    StalePreview => "StalePreview",
    CreationRefused => "CreationRefused",
    StorageError => "StorageError",
    DurabilityUnknown => "DurabilityUnknown",
    DecisionsUnknown => "DecisionsUnknown",
    CorruptionError => "CorruptionError",
}

/// An exception of `class` with `message` and `kind`, and `reason` for a refusal.
pub(crate) fn raise(
    py: Python<'_>,
    class: Class,
    message: String,
    kind: &str,
    reason: Option<&str>,
) -> PyErr {
    match class.get(py) {
        Ok(class) => match reason {
            Some(reason) => {
                PyErr::from_type(class.clone(), (message, kind.to_owned(), reason.to_owned()))
            }
            None => PyErr::from_type(class.clone(), (message, kind.to_owned())),
        },
        // The package is broken (its _errors module cannot be imported): that error says so.
        Err(e) => e,
    }
}

/// The exception for a ledger error: its class by the error's kind, its message the error's.
pub(crate) fn to_py(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    let kind = error.kind();
    match &error {
        Error::Input(_) => raise(py, Class::InvalidInput, message, kind, None),
        Error::Conflict(Conflict::UnknownSession(_)) => {
            raise(py, Class::UnknownSession, message, kind, None)
        }
        Error::Conflict(Conflict::StalePreview { .. }) => {
            raise(py, Class::StalePreview, message, kind, None)
        }
        Error::Conflict(_) => raise(py, Class::Conflict, message, kind, None),
        Error::Refused(refusal) => raise(
            py,
            Class::CreationRefused,
            message,
            kind,
            Some(refusal.reason()),
        ),
        Error::Storage(StorageError::DurabilityUnknown { seq, hash, .. }) => {
            match Class::DurabilityUnknown.get(py) {
                Ok(class) => PyErr::from_type(
                    class.clone(),
                    (message, kind.to_owned(), *seq, hash.clone()),
                ),
                Err(e) => e,
            }
        }
        Error::Storage(StorageError::DecisionsUnknown { records, .. }) => {
            match Class::DecisionsUnknown.get(py) {
                Ok(class) => {
                    PyErr::from_type(class.clone(), (message, kind.to_owned(), records.clone()))
                }
                Err(e) => e,
            }
        }
        Error::Storage(_) => raise(py, Class::StorageError, message, kind, None),
        Error::Corruption(_) => raise(py, Class::CorruptionError, message, kind, None),
        _ => raise(py, Class::LedgerError, message, kind, None),
    }
}

/// A value given from Python that the binding cannot hand to the library at all (a negative
/// count, a token with a propagation that takes none): `InvalidInput`, named by `kind`.
pub(crate) fn invalid(py: Python<'_>, kind: &str, message: String) -> PyErr {
    raise(py, Class::InvalidInput, message, kind, None)
}
