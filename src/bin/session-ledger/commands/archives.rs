//! Archives: `archive` moves what is over into a file and out of the live ledger, and
//! `verify --archive` checks such a file, alone and against the ledger it came from.

use std::path::Path;

use session_ledger::{ArchiveRequest, Ledger};

use crate::context::{acting, open_existing, open_for_reading, parse_time, verifier_key, Context};
use crate::error::CliError;
use crate::render::Report;

/// `archive --before TIME | --tree ROOT --to FILE`.
pub fn archive(
    ctx: &Context<'_>,
    before: Option<&str>,
    tree: Option<&str>,
    to: &Path,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let mut request = match tree {
        Some(root) => ArchiveRequest::tree(root),
        None => ArchiveRequest::default(),
    };
    request.before = before.map(parse_time).transpose()?;
    let ledger = open_existing(ctx.db)?;
    let actor = acting(ctx, actor)?;
    Ok(Report::Archived {
        run: ledger.archive(to, &request, &actor)?,
        to: to.to_path_buf(),
    })
}

/// `verify --archive FILE --verifier-key KEY [--alone]`: the file on its own, then against the
/// ledger at `--db` unless `alone`.
pub fn verify(ctx: &Context<'_>, file: &Path, key: &str, alone: bool) -> Result<Report, CliError> {
    let key = verifier_key(key)?;
    let verification = if alone {
        Ledger::verify_archive_file(file, &key)?
    } else {
        open_for_reading(ctx)?.verify_archive(file, &key, true)?
    };
    Ok(Report::ArchiveVerified(verification))
}
