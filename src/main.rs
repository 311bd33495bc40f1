//! `session-ledger`: the operator's command line for a session ledger.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use session_ledger::{
    AuditEntry, AuditQuery, Config, Error, LabelState, Ledger, Materialized, Raise, Session, Taint,
    TreeEntry,
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

    /// Print JSON instead of text.
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
    /// Show a session's label, inheriting it on first read.
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
    Audit {
        /// Only rows about this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Only rows of this kind (for example session.create, label.raise).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// Only the most recent N rows.
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
    },
    /// Build an example ledger in a new file of its own and walk through it.
    Demo {
        /// Where to write the demo ledger (must not exist); default a new file in the temp dir.
        #[arg(long, value_name = "PATH")]
        path: Option<PathBuf>,
    },
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
            eprintln!(
                "session-ledger: error: {} (see --help)",
                one_line(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("session-ledger: error: {e}");
            ExitCode::from(1)
        }
    }
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
    #[error(transparent)]
    Ledger(#[from] Error),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write output: {0}")]
    Io(#[from] io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
}

fn actor(explicit: &Option<String>) -> String {
    if let Some(a) = explicit {
        return a.clone();
    }
    ["SESSION_LEDGER_ACTOR", "USER"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|a| session_ledger::validate_actor(a).is_ok())
        .unwrap_or_else(|| "operator".to_owned())
}

fn open_existing(path: &Path) -> Result<Ledger, Error> {
    Ledger::open_with(path, Config::default().create_if_missing(false))
}

fn run(cli: &Cli) -> Result<(), CliError> {
    let out = &mut io::stdout().lock();
    match &cli.command {
        Command::Init => {
            let ledger = Ledger::open(&cli.db)?;
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
            let who = actor(who);
            let session = match by {
                Some(creator) => ledger.create_child(id, creator, &who)?,
                None => ledger.create_root(id, &who)?,
            };
            print_session(out, cli.json, &session, "created")?;
        }
        Command::State { id } => {
            let ledger = open_existing(&cli.db)?;
            let state = ledger.state(id)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string(&state)?)?;
            } else {
                writeln!(out, "{}", describe_state(&state))?;
            }
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
                &actor(who),
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
            let session = ledger.end(id, &actor(who))?;
            print_session(out, cli.json, &session, "ended")?;
        }
        Command::Tree { id } => {
            let ledger = open_existing(&cli.db)?;
            let entries = match id {
                Some(id) => ledger.subtree(id)?,
                None => ledger.forest()?,
            };
            print_tree(out, cli.json, &ledger, &entries)?;
        }
        Command::Audit {
            session,
            kind,
            limit,
        } => {
            let ledger = open_existing(&cli.db)?;
            let mut query = AuditQuery::all();
            query.session = session.clone();
            query.kind = kind.clone();
            query.limit = *limit;
            print_audit(out, cli.json, &ledger.audit(&query)?)?;
        }
        Command::Demo { path } => demo(out, path.as_deref())?,
    }
    Ok(())
}

fn label_words(label: session_ledger::Label) -> String {
    if label.untrusted {
        format!("{}, untrusted", label.taint)
    } else {
        format!("{}, trusted", label.taint)
    }
}

fn describe_state(state: &LabelState) -> String {
    let how = match (&state.materialized, state.known) {
        (_, false) => " (unknown id: the default, nothing recorded)".to_owned(),
        (Some(Materialized::Born), _) => " (root, born with the default)".to_owned(),
        (Some(Materialized::Inherited { from }), _) if from == &state.session => String::new(),
        (Some(Materialized::Inherited { from }), _) => format!(" (inherited from {from})"),
        (None, true) => String::new(),
    };
    let raised = if state.raised_at.is_some() {
        ", raised since"
    } else {
        ""
    };
    format!(
        "{}: {}{how}{raised}",
        state.session,
        label_words(state.label())
    )
}

fn print_session(
    out: &mut impl Write,
    json: bool,
    s: &Session,
    verb: &str,
) -> Result<(), CliError> {
    if json {
        writeln!(out, "{}", serde_json::to_string(s)?)?;
    } else {
        match &s.created_by {
            Some(by) => writeln!(out, "{verb} {} (by {by}, depth {})", s.id, s.depth)?,
            None => writeln!(out, "{verb} {} (root)", s.id)?,
        }
    }
    Ok(())
}

fn print_tree(
    out: &mut impl Write,
    json: bool,
    ledger: &Ledger,
    entries: &[TreeEntry],
) -> Result<(), CliError> {
    if json {
        let mut rows = Vec::with_capacity(entries.len());
        for e in entries {
            let mut v = serde_json::to_value(e)?;
            let label = ledger.stored_label(&e.session.id)?;
            v["taint"] = serde_json::json!(label.as_ref().map(|l| l.taint));
            v["untrusted"] = serde_json::json!(label.as_ref().map(|l| l.untrusted));
            rows.push(v);
        }
        writeln!(out, "{}", serde_json::Value::Array(rows))?;
        return Ok(());
    }
    if entries.is_empty() {
        writeln!(out, "(no sessions)")?;
        return Ok(());
    }
    // For each depth, whether the ancestor at that depth has siblings still to come.
    let mut open: Vec<bool> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let depth = e.relative_depth as usize;
        let last = !entries[i + 1..]
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
        line.push_str(&e.session.id);
        let label = ledger.stored_label(&e.session.id)?;
        match label {
            Some(l) => line.push_str(&format!("  [{}]", label_words(l.label()))),
            None => line.push_str("  [not materialized]"),
        }
        if e.session.origin == session_ledger::Origin::Spawned {
            line.push_str("  spawned");
        }
        if !e.session.is_live() {
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
    let ledger = Ledger::open(&path)?;
    let op = "operator";
    writeln!(out, "# demo ledger: {}\n", path.display())?;

    writeln!(
        out,
        "## an operator opens a conductor; it dispatches two workers"
    )?;
    ledger.create_root("conductor", op)?;
    ledger.create_child("worker-1", "conductor", op)?;
    ledger.create_child("worker-2", "conductor", op)?;
    writeln!(out, "$ session-ledger state worker-1")?;
    writeln!(out, "{}", describe_state(&ledger.state("worker-1")?))?;

    writeln!(
        out,
        "\n## the conductor reads a secret; worker-2 has not been read yet"
    )?;
    let r = ledger.raise(
        "conductor",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        },
        op,
    )?;
    writeln!(out, "$ session-ledger raise conductor --taint secret")?;
    writeln!(
        out,
        "conductor: {} -> {}",
        label_words(r.before),
        label_words(r.after)
    )?;
    writeln!(
        out,
        "$ session-ledger state worker-2   # first read: inherits from the conductor"
    )?;
    writeln!(out, "{}", describe_state(&ledger.state("worker-2")?))?;
    writeln!(
        out,
        "$ session-ledger state worker-1   # materialized before the raise: unchanged"
    )?;
    writeln!(out, "{}", describe_state(&ledger.state("worker-1")?))?;

    writeln!(
        out,
        "\n## worker-2 spawns a sub-agent the ledger never saw being made"
    )?;
    writeln!(out, "$ session-ledger state sub-worker-2-1")?;
    writeln!(out, "{}", describe_state(&ledger.state("sub-worker-2-1")?))?;

    writeln!(
        out,
        "\n## a tainted branch: worker-1 reads untrusted web content and dispatches"
    )?;
    ledger.raise(
        "worker-1",
        Raise {
            taint: None,
            untrusted: true,
        },
        op,
    )?;
    ledger.create_child("worker-1a", "worker-1", op)?;
    writeln!(out, "$ session-ledger state worker-1a")?;
    writeln!(out, "{}", describe_state(&ledger.state("worker-1a")?))?;
    writeln!(
        out,
        "$ session-ledger state sub-sub-worker-1a-1-1   # nested spawn, missing middle"
    )?;
    writeln!(
        out,
        "{}",
        describe_state(&ledger.state("sub-sub-worker-1a-1-1")?)
    )?;

    writeln!(
        out,
        "\n## worker-2 ends; it stays as a tombstone and cannot dispatch"
    )?;
    ledger.end("worker-2", op)?;
    match ledger.create_child("worker-2b", "worker-2", op) {
        Err(e) => writeln!(
            out,
            "$ session-ledger create worker-2b --by worker-2\nrefused: {e}"
        )?,
        Ok(_) => writeln!(out, "unexpected: an ended session created a child")?,
    }

    writeln!(out, "\n## the tree")?;
    print_tree(out, false, &ledger, &ledger.forest()?)?;
    writeln!(out, "\n## the audit trail")?;
    print_audit(out, false, &ledger.audit(&AuditQuery::all())?)?;
    writeln!(
        out,
        "\nlook inside: sqlite3 -readonly {} 'SELECT * FROM session_tree'",
        path.display()
    )?;
    Ok(())
}
