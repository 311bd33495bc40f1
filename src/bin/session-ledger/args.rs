//! The command line's grammar: every command, flag and help text, as clap reads them, and the
//! one-line form of a message clap refuses arguments with. Nothing here opens a ledger.

mod audit;
mod decisions;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use audit::{AuditCommand, AuditFilters, CheckpointCommand};
pub use decisions::{DecisionFilters, DecisionsCommand, RecordArgs};

/// A ledger of agent sessions, in a SQLite file or a PostgreSQL database: who created whom,
/// and the labels and postures that follow the dispatch tree.
#[derive(Debug, Parser)]
#[command(name = "session-ledger", version, about, long_about = None)]
pub struct Cli {
    /// The ledger: a SQLite file's path, or a postgres:// or postgresql:// URL. A URL with a
    /// password is best given in $SESSION_LEDGER_DB, which no help or message ever shows.
    // `hide_env_values`: clap would otherwise print the variable's value in every help text,
    // and with a URL that value holds a password.
    #[arg(
        long,
        global = true,
        env = "SESSION_LEDGER_DB",
        hide_env_values = true,
        default_value = "session-ledger.db",
        value_name = "FILE_OR_URL"
    )]
    pub db: PathBuf,

    /// Print JSON instead of text: one JSON value, a listing as one array (even when empty); an
    /// error is then one JSON object on stderr, {"kind", "message"}.
    #[arg(long, global = true)]
    pub json: bool,

    /// Print JSON, a listing (tree, audit, pattern list, scope list, checkpoint list) as one
    /// JSON object a line instead of one array; implies --json.
    #[arg(long, global = true)]
    pub json_lines: bool,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// How the command prints, from `--json` and `--json-lines`.
    pub fn format(&self) -> crate::render::Format {
        crate::render::Format::from_flags(self.json, self.json_lines)
    }
}

/// What to do: one of the commands on a ledger, a copy, a completion script, or the demo, which
/// runs some of the ledger's commands itself.
#[derive(Debug, Subcommand)]
pub enum Command {
    // The commands on the ledger at `--db`; help lists them before `demo`.
    #[command(flatten)]
    Ledger(LedgerCommand),
    /// Copy a ledger, row for row, into a new PostgreSQL ledger: one transaction that commits
    /// only once the copy's audit trail verifies and ends at the source's head. Ignores --db.
    Copy {
        /// The ledger to copy: a SQLite file (or a postgres:// URL). It is only read; writers
        /// on it may go on.
        #[arg(long, value_name = "LEDGER")]
        from: PathBuf,
        /// The new ledger: a postgres:// or postgresql:// URL of a database (or schema, through
        /// search_path) that holds no ledger yet, as the role that owns its tables.
        #[arg(long, value_name = "URL")]
        to: PathBuf,
    },
    /// Print a completion script for a shell (bash, zsh, fish, ...). Ignores --db.
    ///
    /// bash: `source <(session-ledger completions bash)` in ~/.bashrc; zsh: save the zsh script
    /// as _session-ledger in a folder of $fpath; fish: save it as
    /// ~/.config/fish/completions/session-ledger.fish.
    Completions {
        /// The shell to complete for.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Answer an agent runtime's hook from the ledger at --db (docs/agents.md).
    Hook {
        #[command(subcommand)]
        runtime: HookRuntime,
    },
    /// Build an example ledger in a new file of its own and walk through it.
    Demo {
        /// Where to write the demo ledger (must not exist); default a new file in the temp dir.
        #[arg(long, value_name = "PATH")]
        path: Option<PathBuf>,
    },
}

/// The agent runtimes whose hooks `hook` answers.
#[derive(Debug, Subcommand)]
pub enum HookRuntime {
    /// Claude Code: reads one hook event (SessionStart, PreToolUse, PostToolUse, SubagentStart,
    /// SubagentStop, SessionEnd) on stdin and answers on stdout, always with exit status 0;
    /// anything that goes wrong is answered "ask". $SESSION_LEDGER_SESSION names the ledger
    /// session Claude Code works for (else one is recorded for it);
    /// $SESSION_LEDGER_TAINTING_TOOLS names MCP tools that bring in outside content.
    ClaudeCode {
        /// Print the settings.json `hooks` that run this binary for every event, and exit.
        #[arg(long)]
        settings: bool,
    },
}

/// The commands on the ledger at `--db` (and `pattern test`, which needs none).
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Create the ledger (a SQLite file, or the tables in a PostgreSQL database, as the role
    /// that owns them), or bring an existing one up to date.
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
        /// Draw it again each time the ledger changes, until interrupted. Each drawing starts
        /// with a line `--- tree at audit row SEQ, drawn TIME ---` (on a terminal, after the
        /// screen is cleared); with --json, each drawing is one array on a line of its own
        /// (--json-lines is refused).
        #[arg(long)]
        watch: bool,
        /// With --watch, how often to look for a change (one read of the audit trail's head),
        /// in milliseconds.
        #[arg(
            long,
            value_name = "MS",
            default_value_t = 1000,
            requires = "watch",
            value_parser = clap::value_parser!(u64).range(1..)
        )]
        interval: u64,
    },
    /// List the audit trail, oldest first.
    #[command(args_conflicts_with_subcommands = true)]
    Audit {
        /// `head`: print the chain's head (SEQ:HASH) to keep elsewhere; `prove`: a receipt for
        /// one row; `verify-receipt`: check one offline; `export`: the rows as a feed.
        #[command(subcommand)]
        command: Option<AuditCommand>,
        #[command(flatten)]
        filters: AuditFilters,
    },
    /// Walk the audit hash chain; exit 0 only when every row verifies.
    Verify {
        /// A head saved earlier (SEQ:HASH from `audit head`): also detect rows removed since.
        #[arg(long, value_name = "SEQ:HASH", allow_hyphen_values = true)]
        head: Option<String>,
        /// A signed checkpoint kept earlier (a file): check its signature, a consistency proof
        /// from it to the trail now, and the chain; one line per check, then a summary.
        #[arg(
            long,
            value_name = "FILE",
            requires = "verifier_key",
            conflicts_with_all = ["head", "from", "archive"]
        )]
        checkpoint: Option<PathBuf>,
        /// An archive file (`archive --to`): check it on its own (its trail from the boundary
        /// it starts after against its signed checkpoint, its decision batches, integrity,
        /// references, tree, and that every session in it had ended), then against the ledger
        /// at --db (it records this file, and its newest checkpoint extends the archive's)
        /// unless --alone; one line per check, then a summary.
        #[arg(
            long,
            value_name = "FILE",
            requires = "verifier_key",
            conflicts_with_all = ["head", "from"]
        )]
        archive: Option<PathBuf>,
        /// With --archive: check the archive alone, opening no ledger at --db.
        #[arg(long, requires = "archive")]
        alone: bool,
        /// The verifier key of the checkpoint's signer: its text (NAME+KEYID+BASE64), or a file
        /// holding it.
        #[arg(long, value_name = "KEY")]
        verifier_key: Option<String>,
        /// Keep the last checkpoint verified in FILE: a checkpoint smaller than it, forked
        /// from it or not provably its extension is refused; FILE moves on only on success.
        #[arg(long, value_name = "FILE", requires = "checkpoint")]
        state: Option<PathBuf>,
        /// Read only the rows after the checkpoint, trusting the stored tree below it (the
        /// output says what that leaves unchecked).
        #[arg(long, requires = "checkpoint")]
        fast: bool,
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
    /// Everything that may approve a session's commands now: its posture, live scopes and
    /// patterns, and what it holds that approves nothing.
    Authority {
        /// The session's id.
        id: String,
    },
    /// Check the whole ledger: that every row can be read (SQLite's integrity_check; on
    /// PostgreSQL, every table read whole) and that every reference resolves; exit 0 only when
    /// both pass. Reads everything, so it takes as long as the ledger is large.
    Check,
    /// Back up a SQLite ledger while writers go on: a consistent copy of it as it stands now,
    /// written beside the new file DEST and synced, then checked on its own (its trail verified
    /// from the first row, integrity, references, the stored audit tree and the checkpoints'
    /// roots), and named DEST only when it passes; exit 0 only then. On PostgreSQL use the
    /// server's tools (docs/operations.md).
    Backup {
        /// The new file.
        #[arg(value_name = "DEST")]
        dest: PathBuf,
    },
    /// Archive what is over (docs/operations.md, "Archiving"): the trees whose every session
    /// ended before --before, or the one tree --tree names, and the trail's rows up to the
    /// newest checkpoint signed before --before, written to the new file --to, synced and
    /// verified, then moved out of the live ledger in short batches (a run stopped half way is
    /// finished by the next one); exit 0 when done, or when there is nothing to take
    #[command(group(
        clap::ArgGroup::new("what")
            .required(true)
            .multiple(true)
            .args(["before", "tree"])
    ))]
    Archive {
        /// The cut-off (RFC 3339, like 2026-11-30T00:00:00Z): trees that began and ended
        /// before it, and the trail up to the newest checkpoint signed before it.
        #[arg(long, value_name = "TIME")]
        before: Option<String>,
        /// One tree, by its root, once every session of it has ended.
        #[arg(long, value_name = "ROOT")]
        tree: Option<String>,
        /// The new file the archive is written to.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Put a SQLite backup in the place --db names, where no ledger is: the backup is checked
    /// as `backup` checks a copy (and against --checkpoint, when given), and restored only when
    /// it passes, as a new file named --db once whole; exit 0 only then. Stop every process
    /// that uses the ledger and move its files aside first (docs/operations.md).
    Restore {
        /// The backup: a file `backup` wrote.
        #[arg(value_name = "BACKUP")]
        backup: PathBuf,
        /// A signed checkpoint kept elsewhere (a file): the backup's trail must extend it.
        #[arg(long, value_name = "FILE", requires = "verifier_key")]
        checkpoint: Option<PathBuf>,
        /// The verifier key of the checkpoint's signer: its text (NAME+KEYID+BASE64), or a file
        /// holding it.
        #[arg(long, value_name = "KEY", requires = "checkpoint")]
        verifier_key: Option<String>,
    },
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
        #[command(flatten)]
        also: AlsoRevokeArgs,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Clear every session's posture; lists the scopes and patterns that still approve.
    RevokeAll {
        #[command(flatten)]
        also: AlsoRevokeArgs,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Command patterns: grants for one session, never inherited.
    #[command(subcommand)]
    Pattern(PatternCommand),
    /// Override scopes: each approves every command of its session until it expires or is
    /// revoked; never inherited.
    #[command(subcommand)]
    Scope(ScopeCommand),
    /// Decide whether a session may run a command now (with --record, recorded before it is
    /// printed); exits 0 for approve and ask alike.
    Decide {
        /// The session's id.
        id: String,
        /// The caller classified the command as read-only.
        #[arg(long, conflicts_with_all = ["classify", "tool"])]
        read_only: bool,
        /// The ledger classifies the command (as `classify` does), for a session that holds
        /// trust_reads.
        #[arg(long, conflicts_with = "tool")]
        classify: bool,
        #[command(flatten)]
        tool: ToolCallArgs,
        #[command(flatten)]
        record: RecordArgs,
        /// The command line after `--`: one argument is the line as the shell reads it; several
        /// are its words, each quoted back as one word.
        #[arg(required_unless_present = "tool", last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// List the recorded decisions, newest first: `show` prints one whole, `integrate` gives
    /// the queued ones their positions in the decision log.
    #[command(args_conflicts_with_subcommands = true)]
    Decisions {
        #[command(subcommand)]
        command: Option<DecisionsCommand>,
        #[command(flatten)]
        filters: DecisionFilters,
    },
    /// Say whether a command line is known to only read, and the word that decided; writes
    /// nothing and needs no ledger (docs/patterns.md lists the rules).
    Classify {
        /// The command line after `--`: one argument is the line as the shell reads it; several
        /// are its words, each quoted back as one word.
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Posture epochs: the lifetime of one run of the dashboard.
    #[command(subcommand)]
    Epoch(EpochCommand),
    /// Show the ledger's options, or set one on or off for every handle on the ledger:
    /// untrusted-asks (a session that read content from outside is not approved by trust for
    /// what is not read-only; docs/agents.md).
    #[command(name = "option")]
    LedgerOption {
        /// The option; without it, every option is shown.
        #[arg(value_name = "OPTION")]
        name: Option<String>,
        /// `on` or `off`; without it, the option is shown.
        #[arg(value_name = "on|off", value_parser = ["on", "off"])]
        value: Option<String>,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Signed checkpoints of the audit trail, for auditors to keep (docs/audit.md).
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
}

/// A tool call other than a shell command, as `decide --tool` and `pattern test-tool` take it.
#[derive(Debug, Args)]
pub struct ToolCallArgs {
    /// Decide a tool call instead of a command line: the tool's name (Read, Edit, Write,
    /// WebFetch, mcp__SERVER__TOOL, ...).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The file or folder the tool reads or edits, absolute or relative to --root.
    #[arg(long, value_name = "PATH", requires = "tool")]
    pub path: Option<std::path::PathBuf>,
    /// The URL the tool fetches.
    #[arg(long, value_name = "URL", requires = "tool")]
    pub url: Option<String>,
    /// The session's working tree, which path rules are relative to.
    #[arg(long, value_name = "DIR", requires = "tool")]
    pub root: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum PatternCommand {
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
        /// Store a pattern written to admit any command (a lone *, `sudo *`, `bash -c *`,
        /// `env *`, `xargs *`), which is refused without this. Its wildcard still never stands
        /// for a word that runs a program (the program after sudo, a script after bash -c), so
        /// only a lone * then admits any plain command; name the commands instead.
        #[arg(long)]
        admit_any_command: bool,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// Show what a pattern would admit of a command line, part by part; writes nothing and
    /// needs no ledger.
    Test {
        /// The pattern.
        pattern: String,
        /// The command line after `--`: one argument is the line as the shell reads it; several
        /// are its words, each quoted back as one word.
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Show whether a tool rule (`Read(src/**)`, `Edit(docs/*.md)`, `WebFetch(domain:HOST)`,
    /// `mcp__SERVER__TOOL`) admits a tool call; writes nothing and needs no ledger.
    TestTool {
        /// The rule.
        rule: String,
        #[command(flatten)]
        call: ToolCallArgs,
    },
    /// List the stored patterns of live sessions that admit less than before wildcards were
    /// kept from words that run programs or write files (`git *` no longer admits
    /// `git -c ...`), and those that would be refused if added now; an upgrade check.
    Review,
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
pub enum ScopeCommand {
    /// Grant an override scope: while it is live, EVERY command of the session is approved,
    /// until it expires (--ttl 30s, 15m, 2h, 1d) or is revoked. Its name is a label for people
    /// and limits nothing; to allow only some commands, add a pattern (`pattern add`).
    Grant {
        /// The session's id.
        id: String,
        /// The scope's name: a label for people (`deploy`, `incident-42`); it limits nothing.
        name: String,
        /// How long every command is approved: a positive whole number and s, m, h or d,
        /// at most 366d.
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
pub enum EpochCommand {
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

/// clap's message on one line: its lines joined, without the usage and help hints.
pub fn one_line(rendered: &str) -> String {
    let text: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let joined = text.join(" ");
    joined.strip_prefix("error: ").unwrap_or(&joined).to_owned()
}

/// What a revocation takes besides postures: the grants that approve on their own and follow
/// no delegation, which a posture revocation otherwise leaves standing.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct AlsoRevokeArgs {
    /// Also revoke the live override scopes of the live sessions it reaches.
    #[arg(long)]
    pub scopes: bool,
    /// Also remove the command patterns of the live sessions it reaches.
    #[arg(long)]
    pub patterns: bool,
}
