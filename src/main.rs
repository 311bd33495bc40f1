//! `session-ledger`: the operator's command line for a session ledger.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use session_ledger::{
    Affected, AuditEntry, AuditHead, AuditQuery, CheckReport, Config, Created, Decision, Error,
    Explanation, InputError, Ledger, Materialized, Posture, PostureLevel, PostureSource,
    Propagation, Raise, Reason, Revocation, RevocationKind, Session, SessionState, StorageError,
    Taint, TreeNode,
};

/// An embedded ledger of agent sessions: who created whom, and the labels that follow.
#[derive(Debug, Parser)]
#[command(name = "session-ledger", version, about, long_about = None)]
struct Cli {
    /// The ledger file.
    #[arg(
        long,
        global = true,
        env = "SESSION_LEDGER_DB",
        default_value = "session-ledger.db"
    )]
    db: PathBuf,

    /// Print JSON instead of text; an error is then one JSON object on stderr, {"kind", "message"}.
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the ledger file (or bring an existing one up to date).
    Init,
    /// Record a session: a root, or a child created by a live session.
    Create {
        /// The new session's id.
        id: String,
        /// The live session creating it; omit for a root.
        #[arg(long, value_name = "CREATOR")]
        by: Option<String>,
        /// Who is doing this (default: $SESSION_LEDGER_ACTOR, else $USER, else "operator").
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Show a session's label, inheriting it on first read (recorded when the ledger can be
    /// written; on a ledger this user may only read, answered without recording).
    State {
        /// The session's id.
        id: String,
    },
    /// Raise a session's label. Labels never go down.
    Raise {
        /// The session's id.
        id: String,
        /// The class to raise to: public, private or secret.
        #[arg(long, value_name = "CLASS")]
        taint: Option<String>,
        /// Mark the session as having read untrusted data.
        #[arg(long)]
        untrusted: bool,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// End a session. It stays in the ledger as a tombstone.
    End {
        /// The session's id.
        id: String,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Draw the dispatch tree under a session, or every tree.
    Tree {
        /// The session at the top; all roots when omitted.
        id: Option<String>,
    },
    /// List the audit trail, oldest first.
    #[command(args_conflicts_with_subcommands = true)]
    Audit {
        /// `head`: print the chain's head (SEQ:HASH) to keep elsewhere.
        #[command(subcommand)]
        command: Option<AuditCommand>,
        /// Only rows about this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only rows about this session or any of its descendants.
        #[arg(long, value_name = "ID")]
        subtree: Option<String>,
        /// Only rows of this kind.
        #[arg(
            long,
            value_name = "KIND",
            value_parser = clap::builder::PossibleValuesParser::new(
                session_ledger::AuditKind::ALL.iter().map(|k| k.as_str())
            )
        )]
        kind: Option<String>,
        /// Only rows at or after this time (RFC 3339, like 2026-11-30T12:00:00Z).
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Only rows before this time (RFC 3339).
        #[arg(long, value_name = "TIME")]
        until: Option<String>,
        /// Only the most recent N rows. When older rows match too, the last line on stderr
        /// says how to list the next page: `next page: --before SEQ`, or with --json
        /// `{"next_before": SEQ}`.
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// Only rows whose sequence number is smaller than SEQ: the next page after one whose
        /// oldest row is SEQ.
        #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(1..))]
        before: Option<i64>,
    },
    /// Walk the audit hash chain; exit 0 only when every row verifies.
    Verify {
        /// A head saved earlier (SEQ:HASH from `audit head`): also detect rows removed since.
        #[arg(long, value_name = "SEQ:HASH", allow_hyphen_values = true)]
        head: Option<String>,
        /// A head saved earlier (SEQ:HASH from `audit head`): check that its row is unchanged
        /// and walk only the rows after it, not the whole trail.
        #[arg(
            long,
            value_name = "SEQ:HASH",
            allow_hyphen_values = true,
            conflicts_with = "head"
        )]
        from: Option<String>,
    },
    /// Explain why a session holds what it holds: label, posture chain, grants, audit rows.
    Explain {
        /// The session's id.
        id: String,
    },
    /// Check the whole file: SQLite's integrity check and that every reference resolves;
    /// exit 0 only when both pass. Reads every page, so it takes as long as the file is large.
    Check,
    /// Grant a posture on a session: full trust, or trust for read-only commands.
    #[command(group(clap::ArgGroup::new("level").required(true).args(["full", "reads"])))]
    Trust {
        /// The session's id.
        id: String,
        /// Full trust: every tool call is approved.
        #[arg(long)]
        full: bool,
        /// Read-only trust: commands classified read-only are approved.
        #[arg(long)]
        reads: bool,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Revoke postures from a session: say how far (there is no default).
    #[command(group(clap::ArgGroup::new("propagation").required(true).args(["cascade", "local", "preview"])))]
    Revoke {
        /// The session's id.
        id: String,
        /// This session and every descendant, created or spawned, in one statement.
        #[arg(long)]
        cascade: bool,
        /// This session only; lists the descendants still holding a posture through it.
        #[arg(long)]
        local: bool,
        /// Change nothing: list who a cascade would change, with a token.
        #[arg(long)]
        preview: bool,
        /// Apply the cascade only if nothing changed since the preview that printed this token.
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Clear every session's posture.
    RevokeAll {
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Command patterns: grants for one session, never inherited.
    #[command(subcommand)]
    Pattern(PatternCommand),
    /// Override scopes: named grants with an expiry, never inherited.
    #[command(subcommand)]
    Scope(ScopeCommand),
    /// Decide whether a session may run a command now; exits 0 for approve and ask alike.
    Decide {
        /// The session's id.
        id: String,
        /// The caller classified the command as read-only.
        #[arg(long)]
        read_only: bool,
        /// The command line, after `--`.
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Posture epochs: the lifetime of one run of the dashboard.
    #[command(subcommand)]
    Epoch(EpochCommand),
    /// Build an example ledger in a new file of its own and walk through it.
    Demo {
        /// Where to write the demo ledger (must not exist); default a new file in the temp dir.
        #[arg(long, value_name = "PATH")]
        path: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Print the head of the audit chain, SEQ:HASH, to keep somewhere else.
    Head,
}

#[derive(Debug, Subcommand)]
enum PatternCommand {
    /// Allow a command pattern for a session: one simple command of plain words, where * matches
    /// any run of characters within a word and a last word * any further words (see
    /// docs/patterns.md). Each part of a command line must be admitted on its own.
    Add {
        /// The session's id.
        id: String,
        /// The pattern.
        pattern: String,
        /// A command line the pattern must admit; refused, writing nothing, if it does not.
        #[arg(long = "match", value_name = "EXAMPLE")]
        must_match: Vec<String>,
        /// A command line the pattern must not admit; refused, writing nothing, if it does.
        #[arg(long = "not-match", value_name = "EXAMPLE")]
        must_not_match: Vec<String>,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Show what a pattern would admit of a command line, part by part; writes nothing and
    /// needs no ledger.
    Test {
        /// The pattern.
        pattern: String,
        /// The command line, after `--`.
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a command pattern from a session.
    Remove {
        /// The session's id.
        id: String,
        /// The pattern.
        pattern: String,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// List a session's command patterns.
    List {
        /// The session's id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum ScopeCommand {
    /// Grant an override scope for a time: --ttl 30s, 15m, 2h, 1d.
    Grant {
        /// The session's id.
        id: String,
        /// The scope's name.
        name: String,
        /// How long it lasts.
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
        ttl: String,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Revoke a live override scope before it expires.
    Revoke {
        /// The session's id.
        id: String,
        /// The scope's name.
        name: String,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// List a session's override scopes.
    List {
        /// The session's id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum EpochCommand {
    /// Start a new epoch: postures of the previous one stop counting, unless --durable.
    Start {
        /// Carry the previous epoch's postures into the new one.
        #[arg(long)]
        durable: bool,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Show the current epoch.
    Show,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // The parser refused the arguments, so there is no `cli.json` to read: look for the
            // flag among them, before a `--` (the words after it are a command line).
            let json = std::env::args_os()
                .skip(1)
                .take_while(|a| a != "--")
                .any(|a| a == "--json");
            let message = format!("{} (see --help)", one_line(&e.to_string()));
            return fail(json, "usage", &message, 2);
        }
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`session-ledger audit | head -1`). Rust starts a
        // program with SIGPIPE ignored, so the write failed with EPIPE instead of ending the
        // process. End it quietly with 141 (128 + SIGPIPE), the status a shell gives a writer
        // killed by SIGPIPE, as `cat` would be: nobody is reading, and scripts that check the
        // status see the usual one. Mapping the error rather than restoring SIGPIPE's default
        // at startup keeps the binary free of `unsafe` and of a libc binding.
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(e) => fail(cli.json, e.kind(), &e.to_string(), e.exit_code()),
    }
}

/// Reports an error as one line on stderr, a JSON object `{"kind", "message"}` with `--json`
/// and `session-ledger: error: MESSAGE` without, and returns the exit status `code`.
fn fail(json: bool, kind: &str, message: &str, code: u8) -> ExitCode {
    if json {
        eprintln!(
            "{}",
            serde_json::json!({ "kind": kind, "message": message })
        );
    } else {
        eprintln!("session-ledger: error: {message}");
    }
    ExitCode::from(code)
}

/// Prints `value` as one line of JSON with `--json`, else the text `text` makes.
fn emit(
    out: &mut impl Write,
    json: bool,
    value: &impl serde::Serialize,
    text: impl FnOnce() -> String,
) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", serde_json::to_string(value)?)?;
    } else {
        writeln!(out, "{}", text())?;
    }
    Ok(())
}

/// clap's message on one line: its lines joined, without the usage and help hints.
fn one_line(rendered: &str) -> String {
    let text: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let joined = text.join(" ");
    joined.strip_prefix("error: ").unwrap_or(&joined).to_owned()
}

/// Errors of the command line itself, beside the ledger's.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{}", with_advice(.0))]
    Ledger(#[from] Error),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write output: {0}")]
    Io(#[from] io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the audit chain does not verify")]
    Unverified,
    #[error("the ledger check found problems")]
    CheckFailed,
}

/// The ledger's message, with what to run about it where this program has a command for that.
fn with_advice(e: &Error) -> String {
    let advice = match e {
        Error::Storage(StorageError::NoLedger(_)) => " (create one with `session-ledger init`)",
        Error::Input(InputError::InvalidHead(_)) => ", as `session-ledger audit head` prints it",
        _ => "",
    };
    format!("{e}{advice}")
}

impl CliError {
    /// The stable snake_case name `--json` prints as the error's `kind`: the ledger's own
    /// ([`Error::kind`]), or one of the command line's, named so as not to clash with those.
    fn kind(&self) -> &'static str {
        match self {
            CliError::Ledger(e) => e.kind(),
            CliError::Usage(_) => "usage",
            CliError::Io(_) => "io",
            CliError::Json(_) => "json_encoding",
            CliError::Unverified => "unverified_chain",
            CliError::CheckFailed => "check_failed",
        }
    }

    /// The exit status. A combination of arguments the CLI refuses is a bad argument, 2, like
    /// the ones the parser refuses; everything else, values the ledger checks included, is 1.
    fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}

fn parse_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>, Error> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| Error::Input(InputError::InvalidTime(text.to_owned())))
}

fn print_explanation(out: &mut impl Write, e: &Explanation) -> Result<(), CliError> {
    let s = &e.session;
    let origin = match &s.created_by {
        Some(by) => format!("{} by {by}, depth {}", s.origin.as_str(), s.depth),
        None => "root".to_owned(),
    };
    let ended = s.ended_at.map_or(String::new(), |t| {
        format!(", ended {}", session_ledger::format_ts(t))
    });
    writeln!(
        out,
        "{} ({origin}; recorded {}{ended})",
        s.id,
        session_ledger::format_ts(s.created_at)
    )?;
    let label = match &e.state.materialized {
        Some(Materialized::Born) => {
            format!("{} (born with the default)", label_words(e.state.label()))
        }
        Some(Materialized::Inherited { from }) => {
            format!("{} (inherited from {from})", label_words(e.state.label()))
        }
        Some(Materialized::Unrecorded { from }) => format!(
            "{} (inherited from {from}; not recorded: the ledger is open read-only)",
            label_words(e.state.label())
        ),
        None => "not materialized yet: its first read inherits its nearest materialized ancestor's"
            .to_owned(),
    };
    let raised = e.state.raised_at.map_or(String::new(), |t| {
        format!(", last raised {}", session_ledger::format_ts(t))
    });
    writeln!(out, "  label:    {label}{raised}")?;
    match &e.state.posture {
        Some(p) => {
            let counts = if e.state.trust || e.state.trust_reads {
                "counts now"
            } else {
                "does not count now"
            };
            writeln!(out, "  posture:  {} ({counts})", posture_words(p))?;
            if let Some(g) = &e.grant {
                writeln!(
                    out,
                    "  granted:  audit row {} at {} by {}",
                    g.seq,
                    session_ledger::format_ts(g.at),
                    g.actor
                )?;
            }
        }
        None => writeln!(out, "  posture:  none")?,
    }
    for p in &e.patterns {
        let refused = p.refused.as_ref().map_or(String::new(), |why| {
            format!("; REFUSED by this version, admits nothing: {why}")
        });
        writeln!(
            out,
            "  pattern:  {:?} (added by {}){refused}",
            p.pattern, p.added_by
        )?;
    }
    for sc in &e.live_scopes {
        writeln!(
            out,
            "  scope:    {} (granted by {}, until {})",
            sc.name,
            sc.granted_by,
            session_ledger::format_ts(sc.expires_at)
        )?;
    }
    writeln!(out, "  audit rows:")?;
    print_audit(out, false, &e.audit)?;
    Ok(())
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
fn open_existing(path: &Path) -> Result<Ledger, Error> {
    Ledger::open_with(path, cli_config().create_if_missing(false))
}

/// Opens the ledger for a command that only reads (`state`, `tree`, `audit`, `verify`,
/// `explain`, `check`, the lists): for writing when this user may write the file, as every
/// command did before, so that it also upgrades an older ledger; read-only otherwise, so that
/// it works with read permission alone. A `state` on a read-only ledger answers a first read
/// from the inheritance without recording it, and says so. The file's permissions are looked
/// at first, so that a reader opens one connection, not a refused one and then another.
fn open_for_reading(path: &Path) -> Result<Ledger, Error> {
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
        // read-only mount).
        Err(Error::Storage(StorageError::ReadOnly(_))) => {
            Ledger::open_with(path, cli_config().read_only(true))
        }
        opened => opened,
    }
}

fn run(cli: &Cli) -> Result<(), CliError> {
    let out = &mut io::stdout().lock();
    match &cli.command {
        Command::Init => {
            let ledger = Ledger::open_with(&cli.db, cli_config())?;
            let version = session_ledger::schema_version();
            if cli.json {
                let v = serde_json::json!({ "path": ledger.path(), "schema_version": version });
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "ledger ready at {} (schema version {version})",
                    ledger.path().display()
                )?;
            }
        }
        Command::Create { id, by, actor: who } => {
            let ledger = open_existing(&cli.db)?;
            let who = actor(who)?;
            let created = match by {
                Some(creator) => ledger.create_child(id, creator, &who)?,
                None => Created {
                    session: ledger.create_root(id, &who)?,
                    inherited_trust: false,
                    inherited_trust_reads: false,
                },
            };
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&created)?)?;
            } else {
                let born = match (created.inherited_trust, created.inherited_trust_reads) {
                    (true, _) => "; born with trust",
                    (_, true) => "; born with trust_reads",
                    _ if created.session.created_by.is_some() => "; born with no posture",
                    _ => "",
                };
                print_session(out, false, &created.session, "created", born)?;
            }
        }
        Command::State { id } => {
            let ledger = open_for_reading(&cli.db)?;
            let state = ledger.state(id)?;
            emit(out, cli.json, &state, || describe_state(&state))?;
        }
        Command::Raise {
            id,
            taint,
            untrusted,
            actor: who,
        } => {
            let taint = taint.as_deref().map(str::parse::<Taint>).transpose()?;
            let ledger = open_existing(&cli.db)?;
            let outcome = ledger.raise(
                id,
                Raise {
                    taint,
                    untrusted: *untrusted,
                },
                &actor(who)?,
            )?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&outcome)?)?;
            } else if outcome.changed {
                writeln!(
                    out,
                    "{id}: {} -> {}",
                    label_words(outcome.before),
                    label_words(outcome.after)
                )?;
            } else {
                writeln!(
                    out,
                    "{id}: already {}; nothing changed",
                    label_words(outcome.after)
                )?;
            }
        }
        Command::End { id, actor: who } => {
            let ledger = open_existing(&cli.db)?;
            let session = ledger.end(id, &actor(who)?)?;
            print_session(out, cli.json, &session, "ended", "")?;
        }
        Command::Tree { id } => {
            let ledger = open_for_reading(&cli.db)?;
            let nodes = match id {
                Some(id) => ledger.tree(id)?,
                None => ledger.forest()?,
            };
            print_tree(out, cli.json, &nodes)?;
        }
        Command::Audit {
            command: Some(AuditCommand::Head),
            ..
        } => {
            let head = open_for_reading(&cli.db)?.audit_head()?;
            emit(out, cli.json, &head, || head.to_string())?;
        }
        Command::Audit {
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
            // One row more than the page, to know whether an older page follows.
            query.limit = limit.map(|n| n.saturating_add(1));
            let ledger = open_for_reading(&cli.db)?;
            let mut rows = ledger.audit(&query)?;
            let more = limit.is_some_and(|n| rows.len() > n as usize);
            if more {
                rows.remove(0);
            }
            print_audit(out, cli.json, &rows)?;
            if let (true, Some(oldest)) = (more, rows.first()) {
                out.flush()?;
                let hint = if cli.json {
                    serde_json::json!({ "next_before": oldest.seq }).to_string()
                } else {
                    format!("next page: --before {}", oldest.seq)
                };
                // A closed stderr has nobody to tell.
                let _ = writeln!(io::stderr(), "{hint}");
            }
        }
        Command::Verify { head, from } => {
            let saved = head.as_deref().map(str::parse::<AuditHead>).transpose()?;
            let from = from.as_deref().map(str::parse::<AuditHead>).transpose()?;
            let ledger = open_for_reading(&cli.db)?;
            let v = match &from {
                Some(from) => ledger.verify_from(from)?,
                None => ledger.verify(saved.as_ref())?,
            };
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&v)?)?;
            } else if v.ok {
                match &from {
                    Some(from) => writeln!(
                        out,
                        "OK: {} rows verify from row {}; head {}",
                        v.rows, from.seq, v.head
                    )?,
                    None => writeln!(out, "OK: {} rows verify; head {}", v.rows, v.head)?,
                }
            } else {
                let seq = v.first_bad_seq.unwrap_or(0);
                let why = v
                    .problem
                    .as_ref()
                    .map_or("unknown".to_owned(), ToString::to_string);
                writeln!(
                    out,
                    "FAILED at row {seq}: {why} ({} rows read; head {})",
                    v.rows, v.head
                )?;
            }
            if !v.ok {
                return Err(CliError::Unverified);
            }
        }
        Command::Explain { id } => {
            let ledger = open_for_reading(&cli.db)?;
            let e = ledger.explain(id)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&e)?)?;
            } else {
                print_explanation(out, &e)?;
            }
        }
        Command::Check => {
            let report = open_for_reading(&cli.db)?.check()?;
            emit(out, cli.json, &report, || describe_check(&report))?;
            if !report.ok {
                return Err(CliError::CheckFailed);
            }
        }
        Command::Trust {
            id,
            full,
            reads: _,
            actor: who,
        } => {
            let ledger = open_existing(&cli.db)?;
            let level = if *full {
                PostureLevel::Trust
            } else {
                PostureLevel::TrustReads
            };
            let posture = ledger.grant(id, level, &actor(who)?)?;
            emit(out, cli.json, &posture, || {
                format!(
                    "{id}: {} granted by {} (epoch {})",
                    posture.level, posture.granted_by, posture.epoch
                )
            })?;
        }
        Command::Revoke {
            id,
            cascade,
            local,
            preview: _,
            token,
            actor: who,
        } => {
            if token.is_some() && !*cascade {
                return Err(CliError::Usage(
                    "--token applies a preview to a cascade: use it with --cascade".into(),
                ));
            }
            let propagation = if *cascade {
                Propagation::Cascade {
                    token: token.clone(),
                }
            } else if *local {
                Propagation::Local
            } else {
                Propagation::Preview
            };
            let ledger = open_existing(&cli.db)?;
            let revocation = ledger.revoke(id, propagation, &actor(who)?)?;
            print_revocation(out, cli.json, &revocation)?;
        }
        Command::RevokeAll { actor: who } => {
            let ledger = open_existing(&cli.db)?;
            let revocation = ledger.revoke_all(&actor(who)?)?;
            print_revocation(out, cli.json, &revocation)?;
        }
        Command::Pattern(command) => pattern(out, cli, command)?,
        Command::Scope(command) => scope(out, cli, command)?,
        Command::Decide {
            id,
            read_only,
            command,
        } => {
            let ledger = open_existing(&cli.db)?;
            let decision = ledger.decide(id, &command.join(" "), *read_only)?;
            if cli.json {
                let v =
                    serde_json::json!({ "verdict": decision.verdict, "reason": decision.reason });
                writeln!(out, "{v}")?;
            } else {
                writeln!(out, "{}", describe_decision(&decision))?;
            }
        }
        Command::Epoch(EpochCommand::Start {
            durable,
            actor: who,
        }) => {
            let ledger = open_existing(&cli.db)?;
            let start = ledger.start_epoch_with(*durable, &actor(who)?)?;
            emit(out, cli.json, &start, || {
                format!(
                    "epoch {} started: {} postures lapsed, {} carried over",
                    start.epoch, start.lapsed, start.carried
                )
            })?;
        }
        Command::Epoch(EpochCommand::Show) => {
            let ledger = open_for_reading(&cli.db)?;
            let epoch = ledger.current_epoch()?;
            emit(
                out,
                cli.json,
                &serde_json::json!({ "epoch": epoch }),
                || format!("current epoch: {epoch}"),
            )?;
        }
        Command::Demo { path } => demo(out, path.as_deref())?,
    }
    Ok(())
}

fn label_words(label: session_ledger::Label) -> String {
    if label.untrusted {
        format!("{}, untrusted", label.taint)
    } else {
        label.taint.to_string()
    }
}

fn posture_words(p: &Posture) -> String {
    let lapsed = if p.current {
        String::new()
    } else {
        format!(", lapsed with epoch {}", p.epoch)
    };
    match p.source {
        PostureSource::Granted => format!("{} granted by {}{lapsed}", p.level, p.granted_by),
        PostureSource::Inherited => format!(
            "{} inherited via {} from {}'s grant on {}{lapsed}",
            p.level,
            p.chain.join(" > "),
            p.granted_by,
            p.granted_on
        ),
    }
}

fn pattern(out: &mut impl Write, cli: &Cli, command: &PatternCommand) -> Result<(), CliError> {
    if let PatternCommand::Test { pattern, command } = command {
        let test = session_ledger::test_pattern(pattern, &command.join(" "))?;
        if cli.json {
            writeln!(out, "{}", serde_json::to_string(&test)?)?;
        } else {
            let verdict = if test.admitted {
                "admits"
            } else {
                "does not admit"
            };
            writeln!(
                out,
                "pattern {:?} {verdict} {:?}",
                test.pattern, test.command
            )?;
            if let Some(r) = &test.refused {
                writeln!(out, "  never admitted by any pattern: {r}")?;
            }
            for (n, part) in test.parts.iter().enumerate() {
                let yes = if part.admitted {
                    "admitted"
                } else {
                    "NOT admitted"
                };
                writeln!(
                    out,
                    "  part {}: {:?} (bytes {}..{}, words {:?}): {yes}",
                    n + 1,
                    part.text,
                    part.range.start,
                    part.range.end,
                    part.words
                )?;
            }
        }
        return Ok(());
    }
    let ledger = if matches!(command, PatternCommand::List { .. }) {
        open_for_reading(&cli.db)?
    } else {
        open_existing(&cli.db)?
    };
    match command {
        PatternCommand::Add {
            id,
            pattern,
            must_match,
            must_not_match,
            actor: who,
        } => {
            let added = ledger.add_pattern_with_examples(
                id,
                pattern,
                &actor(who)?,
                must_match,
                must_not_match,
            )?;
            if cli.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "session": id, "pattern": pattern, "added": added })
                )?;
            } else if added {
                writeln!(out, "{id}: pattern {pattern:?} added")?;
            } else {
                writeln!(
                    out,
                    "{id}: already had pattern {pattern:?}; nothing changed"
                )?;
            }
        }
        PatternCommand::Remove {
            id,
            pattern,
            actor: who,
        } => {
            ledger.remove_pattern(id, pattern, &actor(who)?)?;
            emit(
                out,
                cli.json,
                &serde_json::json!({ "session": id, "pattern": pattern, "removed": true }),
                || format!("{id}: pattern {pattern:?} removed"),
            )?;
        }
        // Answered above, without a ledger.
        PatternCommand::Test { .. } => {}
        PatternCommand::List { id } => {
            for p in ledger.patterns(id)? {
                emit(out, cli.json, &p, || {
                    let refused = p.refused.as_ref().map_or(String::new(), |why| {
                        format!("  REFUSED by this version, admits nothing: {why}")
                    });
                    format!(
                        "{:?}  (added by {} at {}){refused}",
                        p.pattern,
                        p.added_by,
                        session_ledger::format_ts(p.added_at)
                    )
                })?;
            }
        }
    }
    Ok(())
}

fn scope(out: &mut impl Write, cli: &Cli, command: &ScopeCommand) -> Result<(), CliError> {
    match command {
        ScopeCommand::Grant {
            id,
            name,
            ttl,
            actor: who,
        } => {
            let ttl = session_ledger::parse_ttl(ttl)?;
            let ledger = open_existing(&cli.db)?;
            let scope = ledger.grant_scope(id, name, ttl, &actor(who)?)?;
            emit(out, cli.json, &scope, || {
                format!(
                    "{id}: scope {name} granted until {}",
                    session_ledger::format_ts(scope.expires_at)
                )
            })?;
        }
        ScopeCommand::Revoke {
            id,
            name,
            actor: who,
        } => {
            let ledger = open_existing(&cli.db)?;
            ledger.revoke_scope(id, name, &actor(who)?)?;
            emit(
                out,
                cli.json,
                &serde_json::json!({ "session": id, "scope": name, "revoked": true }),
                || format!("{id}: scope {name} revoked"),
            )?;
        }
        ScopeCommand::List { id } => {
            let ledger = open_for_reading(&cli.db)?;
            for s in ledger.scopes(id)? {
                if cli.json {
                    writeln!(out, "{}", serde_json::to_string(&s)?)?;
                } else {
                    let state = match s.revoked_at {
                        Some(at) => format!("revoked at {}", session_ledger::format_ts(at)),
                        None => format!("expires {}", session_ledger::format_ts(s.expires_at)),
                    };
                    writeln!(out, "{}  granted by {}, {state}", s.name, s.granted_by)?;
                }
            }
        }
    }
    Ok(())
}

fn describe_decision(d: &Decision) -> String {
    let why = match &d.reason {
        Reason::Trust { posture } | Reason::TrustReads { posture } => posture_words(posture),
        Reason::Pattern {
            pattern,
            added_by,
            parts,
        } if parts.len() <= 1 => format!("pattern {pattern:?} added by {added_by}"),
        Reason::Pattern { parts, .. } => {
            let each: Vec<String> = parts
                .iter()
                .map(|p| {
                    format!(
                        "{:?} by pattern {:?} (added by {})",
                        p.part.text, p.pattern, p.added_by
                    )
                })
                .collect();
            format!("every part admitted: {}", each.join("; "))
        }
        Reason::Scope {
            scope,
            granted_by,
            expires_at,
        } => format!(
            "scope {scope} granted by {granted_by}, until {}",
            session_ledger::format_ts(*expires_at)
        ),
        Reason::UnknownSession => "the ledger does not know this session".to_owned(),
        Reason::SessionEnded => "the session has ended".to_owned(),
        Reason::Nothing {
            reads_only,
            lapsed_epoch,
            unadmitted,
            refused,
        } => {
            let base = match (reads_only, lapsed_epoch) {
                (true, _) => "trust_reads covers read-only commands only".to_owned(),
                (_, Some(epoch)) => format!("its posture lapsed with epoch {epoch}"),
                _ => "no posture, pattern or scope admits it".to_owned(),
            };
            match (refused, unadmitted) {
                (Some(r), _) => format!("{base}; no pattern ever admits {r}"),
                (_, Some(p)) => format!(
                    "{base}; no pattern admits the part {:?} at bytes {}..{}",
                    p.text, p.range.start, p.range.end
                ),
                _ => base,
            }
        }
        _ => "see --json".to_owned(),
    };
    let verdict = match d.verdict {
        session_ledger::Verdict::Approve => "approve",
        session_ledger::Verdict::Ask => "ask",
    };
    format!("{verdict}: {why}")
}

fn affected_line(a: &Affected) -> String {
    let how = if a.granted_directly {
        "granted"
    } else {
        "inherited"
    };
    let lapsed = if a.current { "" } else { ", lapsed" };
    format!("{}  depth {}  {} ({how}{lapsed})", a.id, a.depth, a.posture)
}

/// "1 session", "2 sessions".
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn print_revocation(out: &mut impl Write, json: bool, r: &Revocation) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", serde_json::to_string(r)?)?;
        return Ok(());
    }
    let root = r.root.as_deref().unwrap_or("every session");
    match r.propagation {
        RevocationKind::Preview => writeln!(
            out,
            "a cascade from {root} would change {}:",
            count(r.count, "session", "sessions")
        )?,
        RevocationKind::Global => writeln!(
            out,
            "revoked {} (global)",
            count(r.count, "posture", "postures")
        )?,
        how => writeln!(
            out,
            "revoked {} ({how} from {root})",
            count(r.count, "posture", "postures")
        )?,
    }
    for a in &r.sessions {
        writeln!(out, "  {}", affected_line(a))?;
    }
    if let Some(holding) = &r.still_holding {
        let (n, verb) = match holding.len() {
            1 => ("1 descendant".to_owned(), "holds"),
            n => (format!("{n} descendants"), "hold"),
        };
        let colon = if holding.is_empty() { "" } else { ":" };
        writeln!(
            out,
            "{n} still {verb} a posture inherited through {root}{colon}"
        )?;
        for a in holding {
            writeln!(out, "  {}", affected_line(a))?;
        }
    }
    if let Some(token) = &r.token {
        writeln!(out, "token: {token}")?;
        writeln!(
            out,
            "apply: session-ledger revoke {root} --cascade --token {token}"
        )?;
    }
    Ok(())
}

fn describe_state(state: &SessionState) -> String {
    let how = match (&state.materialized, state.known) {
        (_, false) => " (unknown id: the default, nothing recorded)".to_owned(),
        (Some(Materialized::Born), _) => " (root, born with the default)".to_owned(),
        (Some(Materialized::Inherited { from }), _) if from == &state.session => String::new(),
        (Some(Materialized::Inherited { from }), _) => format!(" (inherited from {from})"),
        (Some(Materialized::Unrecorded { from }), _) => {
            format!(" (inherited from {from}; not recorded: the ledger is open read-only)")
        }
        (None, true) => String::new(),
    };
    let raised = if state.raised_at.is_some() {
        ", raised since"
    } else {
        ""
    };
    let posture = match &state.posture {
        Some(p) => format!("; posture: {}", posture_words(p)),
        None => String::new(),
    };
    format!(
        "{}: {}{how}{raised}{posture}",
        state.session,
        label_words(state.label())
    )
}

/// `check`'s text: one line when all is well, else one line per problem and a count.
fn describe_check(report: &CheckReport) -> String {
    if report.ok {
        return "OK: integrity ok; every reference resolves".to_owned();
    }
    let mut lines = Vec::new();
    let mut problems = 0;
    for line in report.integrity.iter().filter(|l| *l != "ok") {
        lines.push(format!("integrity: {line}"));
        problems += 1;
    }
    for b in &report.broken_references {
        let missing: Vec<String> = b.missing.iter().map(|m| format!("{m:?}")).collect();
        let values = if missing.is_empty() {
            String::new()
        } else {
            format!(": {}", missing.join(", "))
        };
        lines.push(format!(
            "broken reference: {} of {} {} a {} that no {} row holds{values}",
            count(usize::try_from(b.rows).unwrap_or(usize::MAX), "row", "rows"),
            b.table,
            if b.rows == 1 { "has" } else { "have" },
            b.columns,
            b.references,
        ));
        problems += 1;
    }
    lines.push(format!(
        "FAILED: {}",
        count(problems, "problem", "problems")
    ));
    lines.join("\n")
}

fn print_session(
    out: &mut impl Write,
    json: bool,
    s: &Session,
    verb: &str,
    note: &str,
) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", serde_json::to_string(s)?)?;
    } else {
        match &s.created_by {
            Some(by) => writeln!(out, "{verb} {} (by {by}, depth {}{note})", s.id, s.depth)?,
            None => writeln!(out, "{verb} {} (root{note})", s.id)?,
        }
    }
    Ok(())
}

fn print_tree(out: &mut impl Write, json: bool, nodes: &[TreeNode]) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", serde_json::to_string(nodes)?)?;
        return Ok(());
    }
    if nodes.is_empty() {
        writeln!(out, "(no sessions)")?;
        return Ok(());
    }
    // For each depth, whether the ancestor at that depth has siblings still to come.
    let mut open: Vec<bool> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let depth = node.relative_depth as usize;
        let last = !nodes[i + 1..]
            .iter()
            .take_while(|n| n.relative_depth as usize >= depth)
            .any(|n| n.relative_depth as usize == depth);
        open.truncate(depth);
        let mut line = String::new();
        if depth > 0 {
            for &more in &open[1..] {
                line.push_str(if more { "│   " } else { "    " });
            }
            line.push_str(if last { "└── " } else { "├── " });
        }
        open.push(!last);
        line.push_str(&node.session.id);
        let posture = match (node.trust, node.trust_reads) {
            (true, _) => "; trust",
            (_, true) => "; trust_reads",
            _ => "",
        };
        let words = if node.materialized {
            label_words(session_ledger::Label {
                taint: node.taint,
                untrusted: node.untrusted,
            })
        } else {
            "not materialized".to_owned()
        };
        line.push_str(&format!("  [{words}{posture}]"));
        if node.session.origin == session_ledger::Origin::Spawned {
            line.push_str("  spawned");
        }
        if !node.session.is_live() {
            line.push_str("  ended");
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn print_audit(out: &mut impl Write, json: bool, rows: &[AuditEntry]) -> Result<(), CliError> {
    for r in rows {
        if json {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        } else {
            writeln!(
                out,
                "{:>5}  {}  {:<10}  {:<22}  {:<16}  {}",
                r.seq,
                session_ledger::format_ts(r.at),
                r.actor,
                r.kind,
                r.session.as_deref().unwrap_or("-"),
                r.detail
            )?;
        }
    }
    Ok(())
}

fn demo(out: &mut impl Write, path: Option<&Path>) -> Result<(), CliError> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => std::env::temp_dir().join(format!(
            "session-ledger-demo-{}-{}.db",
            chrono::Utc::now().format("%Y%m%dT%H%M%S"),
            std::process::id()
        )),
    };
    if path.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; the demo writes a new file of its own",
            path.display()
        )));
    }
    let ledger = Ledger::open_with(&path, cli_config())?;
    let op = "operator";
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    let untrusted = Raise {
        taint: None,
        untrusted: true,
    };
    writeln!(out, "# demo ledger: {}", path.display())?;

    section(
        out,
        "an operator opens a conductor and trusts it; it dispatches two workers",
    )?;
    ledger.create_root("conductor", op)?;
    ledger.grant("conductor", PostureLevel::Trust, op)?;
    let w1 = ledger.create_child("worker-1", "conductor", op)?;
    ledger.create_child("worker-2", "conductor", op)?;
    let born = if w1.inherited_trust {
        "trust"
    } else {
        "no posture"
    };
    step(
        out,
        "create worker-1 --by conductor",
        &format!("created worker-1 (by conductor, depth 1; born with {born})"),
    )?;
    step(
        out,
        "state worker-1",
        &describe_state(&ledger.state("worker-1")?),
    )?;

    section(
        out,
        "the conductor reads a secret; worker-2 has not been read yet",
    )?;
    let r = ledger.raise("conductor", secret, op)?;
    step(
        out,
        "raise conductor --taint secret",
        &format!(
            "conductor: {} -> {}",
            label_words(r.before),
            label_words(r.after)
        ),
    )?;
    step(
        out,
        "state worker-2   # first read: inherits from the conductor",
        &describe_state(&ledger.state("worker-2")?),
    )?;
    step(
        out,
        "state worker-1   # materialized before the raise: unchanged",
        &describe_state(&ledger.state("worker-1")?),
    )?;

    section(
        out,
        "worker-2 spawns a sub-agent the ledger never saw being made",
    )?;
    step(
        out,
        "state sub-worker-2-1",
        &describe_state(&ledger.state("sub-worker-2-1")?),
    )?;
    step(
        out,
        "decide sub-worker-2-1 -- make deploy",
        &describe_decision(&ledger.decide("sub-worker-2-1", "make deploy", false)?),
    )?;

    section(
        out,
        "a tainted branch: worker-1 reads untrusted web content and dispatches",
    )?;
    ledger.raise("worker-1", untrusted, op)?;
    ledger.create_child("worker-1a", "worker-1", op)?;
    step(
        out,
        "state worker-1a",
        &describe_state(&ledger.state("worker-1a")?),
    )?;
    step(
        out,
        "state sub-sub-worker-1a-1-1   # nested spawn, missing middle",
        &describe_state(&ledger.state("sub-sub-worker-1a-1-1")?),
    )?;

    section(
        out,
        "a grant judged for one session does not follow a delegation",
    )?;
    ledger.create_root("reviewer", op)?;
    ledger.add_pattern("reviewer", "npm test", op)?;
    ledger.create_child("helper", "reviewer", op)?;
    step(
        out,
        "pattern add reviewer 'npm test'",
        "reviewer: pattern \"npm test\" added",
    )?;
    step(
        out,
        "create helper --by reviewer",
        "created helper (by reviewer, depth 1; born with no posture)",
    )?;
    let decide = |id| {
        ledger
            .decide(id, "npm test", false)
            .map(|d| describe_decision(&d))
    };
    step(out, "decide reviewer -- npm test", &decide("reviewer")?)?;
    step(out, "decide helper -- npm test", &decide("helper")?)?;

    section(
        out,
        "the operator revokes the conductor's trust across its whole tree",
    )?;
    let preview = ledger.revoke("conductor", Propagation::Preview, op)?;
    step(out, "revoke conductor --preview", "")?;
    print_revocation(out, false, &preview)?;
    let applied = ledger.revoke(
        "conductor",
        Propagation::Cascade {
            token: preview.token.clone(),
        },
        op,
    )?;
    step(out, "revoke conductor --cascade --token ...", "")?;
    print_revocation(out, false, &applied)?;
    step(
        out,
        "decide sub-worker-2-1 -- make deploy",
        &describe_decision(&ledger.decide("sub-worker-2-1", "make deploy", false)?),
    )?;

    section(
        out,
        "worker-2 ends; it stays as a tombstone and cannot dispatch",
    )?;
    ledger.end("worker-2", op)?;
    let refused = match ledger.create_child("worker-2b", "worker-2", op) {
        Err(e) => format!("refused: {e}"),
        Ok(_) => "unexpected: an ended session created a child".to_owned(),
    };
    step(out, "create worker-2b --by worker-2", &refused)?;

    section(out, "the tree")?;
    print_tree(out, false, &ledger.forest()?)?;
    section(out, "the audit trail")?;
    print_audit(out, false, &ledger.audit(&AuditQuery::all())?)?;
    let v = ledger.verify(None)?;
    let verdict = if v.ok {
        format!("OK: {} rows verify; head {}", v.rows, v.head)
    } else {
        format!("FAILED at row {:?}", v.first_bad_seq)
    };
    step(
        out,
        "verify   # the hash chain, as docs/audit.md explains",
        &verdict,
    )?;
    writeln!(
        out,
        "\nlook inside: sqlite3 -readonly {} 'SELECT * FROM session_tree'",
        path.display()
    )?;
    Ok(())
}

fn section(out: &mut impl Write, title: &str) -> io::Result<()> {
    writeln!(out, "\n## {title}")
}

fn step(out: &mut impl Write, command: &str, output: &str) -> io::Result<()> {
    writeln!(out, "$ session-ledger {command}")?;
    if !output.is_empty() {
        writeln!(out, "{output}")?;
    }
    Ok(())
}
