//! A failure of the database engine underneath the ledger, kept opaque.

use std::fmt;

use super::{Error, StorageError};

/// A failure of the engine underneath the ledger, kept opaque so that the public API does not
/// depend on one database engine. Its [`source`](std::error::Error::source) is the engine's
/// own error.
#[derive(Debug)]
pub struct EngineError {
    /// What failed, in a word or two: `sqlite`, `connection pool`, `migration`, `i/o`.
    what: &'static str,
    pub(super) busy: bool,
    source: Box<dyn std::error::Error + Send + Sync>,
    /// What the engine said beyond its error's own one line, when that line says too little
    /// (a PostgreSQL server's message is in the error's source, not its text).
    detail: Option<String>,
}

impl EngineError {
    /// An engine failure of `what`, from the engine's own error.
    pub(crate) fn new(
        what: &'static str,
        busy: bool,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> EngineError {
        EngineError {
            what,
            busy,
            source: source.into(),
            detail: None,
        }
    }

    /// This failure, with `detail` after the engine's own line.
    pub(crate) fn with_detail(mut self, detail: Option<String>) -> EngineError {
        self.detail = detail;
        self
    }

    /// This failure, with `hint` (what to do about it) after what the engine said.
    pub(crate) fn with_hint(mut self, hint: &str) -> EngineError {
        self.detail = Some(match self.detail.take() {
            Some(detail) => format!("{detail}; {hint}"),
            None => hint.to_owned(),
        });
        self
    }

    /// The engine's own error, to look into it (`downcast_ref`) inside an engine.
    pub(crate) fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)?;
        match &self.detail {
            Some(detail) => write!(f, ": {detail}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Error {
        Error::Storage(StorageError::Engine(e))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        EngineError::new("i/o", false, e).into()
    }
}
