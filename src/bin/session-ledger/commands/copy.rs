//! `copy`: a ledger moved, row for row, into a new PostgreSQL ledger.

use std::path::Path;

use session_ledger::{Error, InputError, Location};

use crate::context::{open_creating, open_existing};
use crate::error::CliError;
use crate::render::Report;

/// `copy`: the ledger at `from` into a new PostgreSQL ledger at `to`, then the copy's trail
/// verified from its first row. A `to` that names no server is refused before anything is
/// opened, so that no file is left behind.
pub fn copy(from: &Path, to: &Path) -> Result<Report, CliError> {
    if !to.to_str().is_some_and(session_ledger::is_postgres_url) {
        return Err(Error::from(InputError::InvalidCopyTarget(Location::File(to.into()))).into());
    }
    let source = open_existing(from)?;
    let target = open_creating(to)?;
    let copied = source.copy_into(&target)?;
    let verification = target.verify(None)?;
    if !verification.ok {
        return Err(CliError::Unverified);
    }
    Ok(Report::Copied {
        from: source.location().to_string(),
        to: target.location().to_string(),
        copied,
        verification,
    })
}
