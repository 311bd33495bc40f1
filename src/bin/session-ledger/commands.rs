//! The commands on a ledger: read a command's arguments, open the ledger the way it needs
//! (creating it, for writing, or for reading), call the library, and hand the result to the
//! renderer. A command that is more than an open and one call has a function of its own. Who
//! acts (`--actor` and its defaults) is decided here too.

use std::cell::Cell;
use std::io::Write;
use std::path::Path;

use session_ledger::{
    AuditHead, AuditQuery, Config, Created, Error, InputError, Ledger, Location, PostureLevel,
    Propagation, Raise, StorageError, Taint,
};

use crate::args::{
    AuditCommand, CheckpointCommand, EpochCommand, LedgerCommand, PatternCommand, ScopeCommand,
};
use crate::checkpoints;
use crate::error::CliError;
use crate::render::{self, Format, Report};

/// Where a command runs: the ledger, and who acts when it is given no `--actor`.
pub struct Context<'a> {
    /// The ledger: a file or a URL (`--db`).
    pub db: &'a Path,
    /// Who acts without `--actor`: `None` asks the environment (see [`actor`]); the demo names
    /// its own operator, as if `$SESSION_LEDGER_ACTOR` were set.
    pub default_actor: Option<&'a str>,
    /// Set when a read command opened the ledger as an immutable lone copy, which the reader
    /// is then told on stderr.
    read_immutable: Cell<bool>,
}

impl<'a> Context<'a> {
    /// A command's context: the ledger at `db`, and who acts without `--actor`.
    pub fn new(db: &'a Path, default_actor: Option<&'a str>) -> Context<'a> {
        Context {
            db,
            default_actor,
            read_immutable: Cell::new(false),
        }
    }
}

/// Runs `command`: its library call, its output on `out` in `format`, and a
/// note for the reader on `notes` (the next page of `audit --limit`). A `verify` or `check` that
/// found problems prints its report and then fails. Returns what was printed.
///
/// # Errors
///
/// The ledger's error, a combination of arguments the command refuses, a failed write to `out`,
/// or [`CliError::Unverified`] and [`CliError::CheckFailed`] after their report.
pub fn run(
    ctx: &Context<'_>,
    format: Format,
    command: &LedgerCommand,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<Report, CliError> {
    let report = match command {
        // A feed prints as it reads, and with --follow never ends.
        LedgerCommand::Audit {
            command:
                Some(AuditCommand::Export {
                    after,
                    follow,
                    format: feed,
                    poll,
                }),
            ..
        } => checkpoints::export(
            ctx,
            *after,
            *follow,
            feed,
            std::time::Duration::from_millis(*poll),
            out,
        )?,
        _ => execute(ctx, command)?,
    };
    render::report(out, format, &report)?;
    let immutable = ctx
        .read_immutable
        .get()
        .then(|| render::immutable_note(format.is_json(), ctx.db));
    for note in immutable
        .into_iter()
        .chain(render::note(format.is_json(), &report))
    {
        out.flush()?;
        // A closed stderr has nobody to tell.
        let _ = writeln!(notes, "{note}");
    }
    match &report {
        Report::Verified { verification, .. } if !verification.ok => Err(CliError::Unverified),
        Report::Checked(check) if !check.ok => Err(CliError::CheckFailed),
        Report::CheckpointVerified { verification, .. } if !verification.ok => {
            Err(CliError::CheckpointUnverified)
        }
        _ => Ok(report),
    }
}

/// The library's answer to `command`, not printed yet.
fn execute(ctx: &Context<'_>, command: &LedgerCommand) -> Result<Report, CliError> {
    match command {
        LedgerCommand::Init => init(ctx),
        LedgerCommand::Create { id, by, actor } => create(ctx, id, by.as_deref(), actor),
        LedgerCommand::State { id } => Ok(Report::State(open_for_reading(ctx)?.state(id)?)),
        LedgerCommand::Raise {
            id,
            taint,
            untrusted,
            actor,
        } => raise(ctx, id, taint.as_deref(), *untrusted, actor),
        LedgerCommand::End { id, actor } => {
            let ledger = open_existing(ctx.db)?;
            Ok(Report::Ended(ledger.end(id, &acting(ctx, actor)?)?))
        }
        LedgerCommand::Tree { id } => {
            let ledger = open_for_reading(ctx)?;
            Ok(Report::Tree(match id {
                Some(id) => ledger.tree(id)?,
                None => ledger.forest()?,
            }))
        }
        LedgerCommand::Audit {
            command: Some(AuditCommand::Head),
            ..
        } => Ok(Report::Head(open_for_reading(ctx)?.audit_head()?)),
        LedgerCommand::Audit {
            command: Some(AuditCommand::Prove { seq, checkpoint }),
            ..
        } => checkpoints::prove(ctx, *seq, checkpoint.as_deref()),
        LedgerCommand::Audit {
            command: Some(AuditCommand::Export { .. }),
            ..
        } => Ok(Report::Exported),
        LedgerCommand::Audit {
            command: None,
            session,
            subtree,
            kind,
            since,
            until,
            limit,
            before,
        } => {
            let mut query = AuditQuery::all();
            query.since = since.as_deref().map(parse_time).transpose()?;
            query.until = until.as_deref().map(parse_time).transpose()?;
            query.session = session.clone();
            query.subtree = subtree.clone();
            query.kind = kind.as_deref().map(str::parse).transpose()?;
            query.before = *before;
            audit(ctx, query, *limit)
        }
        LedgerCommand::Verify {
            checkpoint: Some(checkpoint),
            verifier_key,
            state,
            fast,
            ..
        } => checkpoints::verify(
            ctx,
            checkpoint,
            verifier_key.as_deref().unwrap_or_default(),
            state.as_deref(),
            *fast,
        ),
        LedgerCommand::Verify { head, from, .. } => verify(ctx, head.as_deref(), from.as_deref()),
        LedgerCommand::Explain { id } => Ok(Report::Explained(Box::new(
            open_for_reading(ctx)?.explain(id)?,
        ))),
        LedgerCommand::Check => Ok(Report::Checked(open_for_reading(ctx)?.check()?)),
        LedgerCommand::Trust {
            id, full, actor, ..
        } => trust(ctx, id, *full, actor),
        LedgerCommand::Revoke {
            id,
            cascade,
            local,
            token,
            actor,
            ..
        } => revoke(ctx, id, *cascade, *local, token, actor),
        LedgerCommand::RevokeAll { actor } => {
            let ledger = open_existing(ctx.db)?;
            Ok(Report::Revoked(ledger.revoke_all(&acting(ctx, actor)?)?))
        }
        LedgerCommand::Pattern(command) => pattern(ctx, command),
        LedgerCommand::Scope(command) => scope(ctx, command),
        LedgerCommand::Decide {
            id,
            read_only,
            command,
        } => {
            let ledger = open_existing(ctx.db)?;
            Ok(Report::Decided(ledger.decide(
                id,
                &command.join(" "),
                *read_only,
            )?))
        }
        LedgerCommand::Epoch(EpochCommand::Start { durable, actor }) => {
            let ledger = open_existing(ctx.db)?;
            let start = ledger.start_epoch_with(*durable, &acting(ctx, actor)?)?;
            Ok(Report::EpochStarted(start))
        }
        LedgerCommand::Epoch(EpochCommand::Show) => {
            Ok(Report::Epoch(open_for_reading(ctx)?.current_epoch()?))
        }
        LedgerCommand::Checkpoint(CheckpointCommand::Keygen { key, name }) => {
            checkpoints::keygen(key, name)
        }
        LedgerCommand::Checkpoint(CheckpointCommand::Sign { key, origin, actor }) => {
            checkpoints::sign(ctx, key, origin.as_deref(), actor)
        }
        LedgerCommand::Checkpoint(CheckpointCommand::List { after, limit }) => {
            checkpoints::list(ctx, *after, *limit)
        }
    }
}

/// `init`: the one command that creates the file.
fn init(ctx: &Context<'_>) -> Result<Report, CliError> {
    let ledger = Ledger::open_with(ctx.db, cli_config())?;
    Ok(Report::Ready {
        location: ledger.location().to_string(),
        schema_version: ledger.schema_version(),
    })
}

/// `copy`: the ledger at `from` into a new PostgreSQL ledger at `to`, then the copy's trail
/// verified from its first row. A `to` that names no server is refused before anything is
/// opened, so that no file is left behind.
pub fn copy(from: &Path, to: &Path) -> Result<Report, CliError> {
    if !to.to_str().is_some_and(session_ledger::is_postgres_url) {
        return Err(Error::from(InputError::InvalidCopyTarget(Location::File(to.into()))).into());
    }
    let source = open_existing(from)?;
    let target = Ledger::open_with(to, cli_config())?;
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

/// `create`: a root, or a child of a live `creator`.
fn create(
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

/// `raise`: the class is checked before the ledger is opened.
fn raise(
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

/// `audit`: one page of `query`, newest `limit` rows, and where the next page starts.
fn audit(ctx: &Context<'_>, mut query: AuditQuery, limit: Option<u32>) -> Result<Report, CliError> {
    // One row more than the page, to know whether an older page follows.
    query.limit = limit.map(|n| n.saturating_add(1));
    let ledger = open_for_reading(ctx)?;
    let mut rows = ledger.audit(&query)?;
    let more = limit.is_some_and(|n| rows.len() > n as usize);
    if more {
        rows.remove(0);
    }
    let next_before = if more {
        rows.first().map(|r| r.seq)
    } else {
        None
    };
    Ok(Report::Audit { rows, next_before })
}

/// `verify`: the whole chain (against a saved head, if given), or the rows after `from`.
fn verify(ctx: &Context<'_>, head: Option<&str>, from: Option<&str>) -> Result<Report, CliError> {
    let saved = head.map(str::parse::<AuditHead>).transpose()?;
    let from = from.map(str::parse::<AuditHead>).transpose()?;
    let ledger = open_for_reading(ctx)?;
    let verification = match &from {
        Some(from) => ledger.verify_from(from)?,
        None => ledger.verify(saved.as_ref())?,
    };
    Ok(Report::Verified {
        verification,
        from: from.map(|f| f.seq),
    })
}

/// `trust`: `--full` or (clap makes sure of one of them) `--reads`.
fn trust(
    ctx: &Context<'_>,
    id: &str,
    full: bool,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    let level = if full {
        PostureLevel::Trust
    } else {
        PostureLevel::TrustReads
    };
    let posture = ledger.grant(id, level, &acting(ctx, actor)?)?;
    Ok(Report::Granted {
        id: id.to_owned(),
        posture,
    })
}

/// `revoke`: `--cascade` (bound to a preview by `--token`), `--local`, or `--preview`.
fn revoke(
    ctx: &Context<'_>,
    id: &str,
    cascade: bool,
    local: bool,
    token: &Option<String>,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    if token.is_some() && !cascade {
        return Err(CliError::Usage(
            "--token applies a preview to a cascade: use it with --cascade".into(),
        ));
    }
    let propagation = if cascade {
        Propagation::Cascade {
            token: token.clone(),
        }
    } else if local {
        Propagation::Local
    } else {
        Propagation::Preview
    };
    let ledger = open_existing(ctx.db)?;
    Ok(Report::Revoked(ledger.revoke(
        id,
        propagation,
        &acting(ctx, actor)?,
    )?))
}

/// `pattern add`, `remove` and `list`, and `pattern test`, which needs no ledger.
fn pattern(ctx: &Context<'_>, command: &PatternCommand) -> Result<Report, CliError> {
    match command {
        PatternCommand::Test { pattern, command } => Ok(Report::PatternTested(
            session_ledger::test_pattern(pattern, &command.join(" "))?,
        )),
        PatternCommand::Add {
            id,
            pattern,
            must_match,
            must_not_match,
            actor,
        } => {
            let ledger = open_existing(ctx.db)?;
            let added = ledger.add_pattern_with_examples(
                id,
                pattern,
                &acting(ctx, actor)?,
                must_match,
                must_not_match,
            )?;
            Ok(Report::PatternAdded {
                id: id.clone(),
                pattern: pattern.clone(),
                added,
            })
        }
        PatternCommand::Remove { id, pattern, actor } => {
            let ledger = open_existing(ctx.db)?;
            ledger.remove_pattern(id, pattern, &acting(ctx, actor)?)?;
            Ok(Report::PatternRemoved {
                id: id.clone(),
                pattern: pattern.clone(),
            })
        }
        PatternCommand::List { id } => Ok(Report::Patterns(open_for_reading(ctx)?.patterns(id)?)),
    }
}

/// `scope grant`, `revoke` and `list`.
fn scope(ctx: &Context<'_>, command: &ScopeCommand) -> Result<Report, CliError> {
    match command {
        ScopeCommand::Grant {
            id,
            name,
            ttl,
            actor,
        } => {
            let ttl = session_ledger::parse_ttl(ttl)?;
            let ledger = open_existing(ctx.db)?;
            let scope = ledger.grant_scope(id, name, ttl, &acting(ctx, actor)?)?;
            Ok(Report::ScopeGranted {
                id: id.clone(),
                name: name.clone(),
                scope,
            })
        }
        ScopeCommand::Revoke { id, name, actor } => {
            let ledger = open_existing(ctx.db)?;
            ledger.revoke_scope(id, name, &acting(ctx, actor)?)?;
            Ok(Report::ScopeRevoked {
                id: id.clone(),
                name: name.clone(),
            })
        }
        ScopeCommand::List { id } => Ok(Report::Scopes(open_for_reading(ctx)?.scopes(id)?)),
    }
}

fn parse_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>, Error> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| Error::Input(InputError::InvalidTime(text.to_owned())))
}

/// Who a command acts as: `--actor`, else the context's default, else [`actor`]'s answer.
pub fn acting(ctx: &Context<'_>, explicit: &Option<String>) -> Result<String, CliError> {
    match (explicit, ctx.default_actor) {
        (None, Some(default)) => Ok(default.to_owned()),
        _ => actor(explicit),
    }
}

/// Who a command acts as: `--actor` (the library validates it), else `$SESSION_LEDGER_ACTOR`,
/// else `$USER` when it is a valid actor name, else `operator`. `$SESSION_LEDGER_ACTOR` is set
/// for this tool, like `--actor`, so an invalid one is an error rather than a reason to record
/// somebody else; an empty one counts as unset.
fn actor(explicit: &Option<String>) -> Result<String, CliError> {
    if let Some(a) = explicit {
        return Ok(a.clone());
    }
    if let Some(a) = std::env::var_os("SESSION_LEDGER_ACTOR").filter(|a| !a.is_empty()) {
        let a = a.into_string().map_err(|a| {
            CliError::Usage(format!("$SESSION_LEDGER_ACTOR {a:?} is not valid UTF-8"))
        })?;
        session_ledger::validate_actor(&a)
            .map_err(|e| CliError::Usage(format!("$SESSION_LEDGER_ACTOR: {e}")))?;
        return Ok(a);
    }
    Ok(std::env::var("USER")
        .ok()
        .filter(|u| session_ledger::validate_actor(u).is_ok())
        .unwrap_or_else(|| "operator".to_owned()))
}

/// The library's defaults. The `-wal` and `-shm` files stay beside the ledger when a command
/// ends, as they do for the library: a reader who may not write the folder (an auditor's
/// `sqlite3 -readonly`, or this tool's read commands) can open the ledger only when they exist.
fn cli_config() -> Config {
    Config::default()
}

/// Opens the ledger for a command that writes.
pub fn open_existing(path: &Path) -> Result<Ledger, Error> {
    Ledger::open_with(path, cli_config().create_if_missing(false))
}

/// Opens the ledger for a command that only reads (`state`, `tree`, `audit`, `verify`,
/// `explain`, `check`, the lists): for writing when this user may write the file, as every
/// command did before, so that it also upgrades an older ledger; read-only otherwise, so that
/// it works with read permission alone, a lone copy without its `-wal` included (read as an
/// immutable copy, and the reader is told so). A `state` on a read-only ledger answers a first read
/// from the inheritance without recording it, and says so. The file's permissions are looked
/// at first, so that a reader opens one connection, not a refused one and then another.
pub fn open_for_reading(ctx: &Context<'_>) -> Result<Ledger, Error> {
    let ledger = open_for_reading_at(ctx.db)?;
    if ledger.is_immutable() {
        ctx.read_immutable.set(true);
    }
    Ok(ledger)
}

/// [`open_for_reading`] the ledger at `path`.
fn open_for_reading_at(path: &Path) -> Result<Ledger, Error> {
    // Opened and closed before SQLite opens the file: closing a descriptor drops every POSIX
    // lock this process holds on the file, and at this point it holds none.
    let writable = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .is_ok();
    if !writable && path.exists() {
        return Ledger::open_with(path, cli_config().read_only(true));
    }
    match open_existing(path) {
        // Writable by its permissions, but SQLite could not write it (an immutable file, a
        // read-only mount); or a PostgreSQL standby, which serves reads only.
        Err(Error::Storage(StorageError::ReadOnly(_) | StorageError::Standby(_))) => {
            Ledger::open_with(path, cli_config().read_only(true))
        }
        opened => opened,
    }
}
