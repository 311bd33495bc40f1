//! The commands on sessions and their labels: `init` (the ledger itself), `create`, `state`,
//! `raise`, `end` and `tree`.

use session_ledger::{Created, Raise, Taint};

use crate::context::{acting, open_creating, open_existing, open_for_reading, Context};
use crate::error::CliError;
use crate::render::Report;

/// `init`: the one command that creates the file.
pub fn init(ctx: &Context<'_>) -> Result<Report, CliError> {
    let ledger = open_creating(ctx.db)?;
    Ok(Report::Ready {
        location: ledger.location().to_string(),
        schema_version: ledger.schema_version(),
    })
}

/// `create`: a root, or a child of a live `creator`.
pub fn create(
    ctx: &Context<'_>,
    id: &str,
    creator: Option<&str>,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    let who = acting(ctx, actor)?;
    let created = match creator {
        Some(creator) => ledger.create_child(id, creator, &who)?,
        None => Created {
            session: ledger.create_root(id, &who)?,
            inherited_trust: false,
            inherited_trust_reads: false,
        },
    };
    Ok(Report::Created(created))
}

/// `state`: the session's label, inherited on first read.
pub fn state(ctx: &Context<'_>, id: &str) -> Result<Report, CliError> {
    Ok(Report::State(open_for_reading(ctx)?.state(id)?))
}

/// `raise`: the class is checked before the ledger is opened.
pub fn raise(
    ctx: &Context<'_>,
    id: &str,
    taint: Option<&str>,
    untrusted: bool,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let taint = taint.map(str::parse::<Taint>).transpose()?;
    let ledger = open_existing(ctx.db)?;
    let outcome = ledger.raise(id, Raise { taint, untrusted }, &acting(ctx, actor)?)?;
    Ok(Report::Raised(outcome))
}

/// `end`: the session stays as a tombstone.
pub fn end(ctx: &Context<'_>, id: &str, actor: &Option<String>) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    Ok(Report::Ended(ledger.end(id, &acting(ctx, actor)?)?))
}

/// `tree`: the tree under `id`, or every tree.
pub fn tree(ctx: &Context<'_>, id: Option<&str>) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    Ok(Report::Tree(match id {
        Some(id) => ledger.tree(id)?,
        None => ledger.forest()?,
    }))
}
