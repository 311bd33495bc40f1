//! The commands on sessions and their labels: `init` (the ledger itself), `create`, `state`,
//! `raise`, `end` and `tree`, which can also watch the ledger and draw it again.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use session_ledger::{Created, Ledger, Raise, Taint, TreeNode};

use crate::context::{acting, open_creating, open_existing, open_for_reading, Context};
use crate::error::CliError;
use crate::render::{self, Format, Report};

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
    Ok(Report::Tree(nodes(&ledger, id)?))
}

fn nodes(ledger: &Ledger, id: Option<&str>) -> Result<Vec<TreeNode>, CliError> {
    Ok(match id {
        Some(id) => ledger.tree(id)?,
        None => ledger.forest()?,
    })
}

/// Clears a terminal's screen and puts the cursor at its top left.
const CLEAR_SCREEN: &str = "\x1b[H\x1b[2J";

/// `tree --watch`: the tree drawn on `out`, then drawn again each time the ledger changes, until
/// the process is stopped. Every change writes an audit row, so a change is seen by reading the
/// trail's head every `interval` (one read of its key, whatever the ledger's size), and the tree
/// is read only when the head moved. In text, a line naming the head and the time starts each
/// drawing, so that a reader of a pipe or a file can tell the drawings apart; on a terminal the
/// screen is cleared before it. With `--json`, each drawing is one array on a line.
///
/// # Errors
///
/// `--json-lines`, whose drawings could not be told apart; the ledger's errors (an unknown
/// `id`); a failed write to `out`, a closed pipe included.
pub fn watch_tree(
    ctx: &Context<'_>,
    id: Option<&str>,
    interval: Duration,
    format: Format,
    out: &mut dyn Write,
) -> Result<Report, CliError> {
    if format == Format::JsonLines {
        return Err(CliError::Usage(
            "tree --watch prints each drawing as one array with --json; with --json-lines the \
             drawings could not be told apart"
                .into(),
        ));
    }
    let terminal = format == Format::Text && std::io::stdout().is_terminal();
    let ledger = open_for_reading(ctx)?;
    let mut drawn = None;
    loop {
        let head = ledger.audit_head()?;
        if drawn.as_ref() != Some(&head) {
            let tree = Report::Tree(nodes(&ledger, id)?);
            if terminal {
                write!(out, "{CLEAR_SCREEN}")?;
            }
            if format == Format::Text {
                writeln!(
                    out,
                    "--- tree at audit row {}, drawn {} ---",
                    head.seq,
                    session_ledger::format_ts(chrono::Utc::now())
                )?;
            }
            render::report(out, format, &tree)?;
            out.flush()?;
            drawn = Some(head);
        }
        std::thread::sleep(interval);
    }
}
