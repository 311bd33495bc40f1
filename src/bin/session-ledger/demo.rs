//! The demo: an example ledger in a new file, built and shown one command at a time. Each step
//! is a command line, read by the same parser and run by the same dispatcher and renderers as
//! one typed at the shell, so what the demo prints under `$ session-ledger ...` is what that
//! command prints, its error line included. It stands above the dispatcher, as `main.rs` does:
//! it runs command lines, and no command group runs it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::args::{self, Cli, Command};
use crate::context::Context;
use crate::dispatch;
use crate::error::CliError;
use crate::render::{self, Report};
use crate::shell::shell_words;

/// Who every step acts as, as if `$SESSION_LEDGER_ACTOR` named them.
const ACTOR: &str = "operator";

/// Builds the example ledger at `path` (by default a new file in the temp directory), which must
/// not exist, and prints each step, run by the dispatcher, with its output on `out`.
///
/// # Errors
///
/// `path` exists, a step that should succeed fails, or `out` cannot be written.
pub fn run(out: &mut dyn Write, path: Option<&Path>) -> Result<(), CliError> {
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
    let mut demo = Demo { out, path };
    demo.walk()
}

struct Demo<'a> {
    out: &'a mut dyn Write,
    path: PathBuf,
}

impl Demo<'_> {
    fn walk(&mut self) -> Result<(), CliError> {
        let path = self.path.display().to_string();
        writeln!(self.out, "# demo ledger: {path}")?;
        writeln!(
            self.out,
            "# each step runs as: SESSION_LEDGER_ACTOR={ACTOR} session-ledger --db {} ...",
            shell_words(&[&path])
        )?;
        self.step(&["init"], "")?;

        self.section("an operator opens a conductor and trusts it; it dispatches two workers")?;
        self.step(&["create", "conductor"], "")?;
        self.step(&["trust", "conductor", "--full"], "")?;
        self.step(&["create", "worker-1", "--by", "conductor"], "")?;
        self.step(&["create", "worker-2", "--by", "conductor"], "")?;
        self.step(&["state", "worker-1"], "")?;

        self.section("the conductor reads a secret; worker-2 has not been read yet")?;
        self.step(&["raise", "conductor", "--taint", "secret"], "")?;
        self.step(
            &["state", "worker-2"],
            "first read: inherits from the conductor",
        )?;
        self.step(
            &["state", "worker-1"],
            "materialized before the raise: unchanged",
        )?;

        self.section("worker-2 spawns a sub-agent the ledger never saw being made")?;
        self.step(&["state", "sub-worker-2-1"], "")?;
        self.step(&["decide", "sub-worker-2-1", "--", "make", "deploy"], "")?;

        self.section("a tainted branch: worker-1 reads untrusted web content and dispatches")?;
        self.step(&["raise", "worker-1", "--untrusted"], "")?;
        self.step(&["create", "worker-1a", "--by", "worker-1"], "")?;
        self.step(&["state", "worker-1a"], "")?;
        self.step(
            &["state", "sub-sub-worker-1a-1-1"],
            "nested spawn, missing middle",
        )?;

        self.section("a grant judged for one session does not follow a delegation")?;
        self.step(&["create", "reviewer"], "")?;
        self.step(&["pattern", "add", "reviewer", "npm test"], "")?;
        self.step(&["create", "helper", "--by", "reviewer"], "")?;
        self.step(&["decide", "reviewer", "--", "npm", "test"], "")?;
        self.step(&["decide", "helper", "--", "npm", "test"], "")?;

        self.section("the operator revokes the conductor's trust across its whole tree")?;
        let preview = self.step(&["revoke", "conductor", "--preview"], "")?;
        // The cascade applies exactly what was previewed: it is bound to the preview's token.
        let token = match preview {
            Report::Revoked(r) => r.token,
            _ => None,
        };
        let mut cascade = vec!["revoke", "conductor", "--cascade"];
        if let Some(token) = &token {
            cascade.extend(["--token", token]);
        }
        self.step(&cascade, "")?;
        self.step(&["decide", "sub-worker-2-1", "--", "make", "deploy"], "")?;

        self.section("worker-2 ends; it stays as a tombstone and cannot dispatch")?;
        self.step(&["end", "worker-2"], "")?;
        self.refused_step(
            &["create", "worker-2b", "--by", "worker-2"],
            "refused: its creator has ended",
        )?;

        self.section("the tree")?;
        self.step(&["tree"], "")?;
        self.section("the audit trail")?;
        self.step(&["audit"], "")?;
        self.step(&["verify"], "the hash chain, as docs/audit.md explains")?;
        writeln!(
            self.out,
            "\nlook inside: sqlite3 -readonly -header -column {} \
             'SELECT path, origin, taint, untrusted, materialized_how FROM session_tree ORDER BY path'",
            shell_words(&[path.as_str()])
        )?;
        Ok(())
    }

    fn section(&mut self, title: &str) -> Result<(), CliError> {
        writeln!(self.out, "\n## {title}")?;
        Ok(())
    }

    /// Shows `session-ledger WORDS` (with `# note` when there is one) and runs it on the demo
    /// ledger, printing its output. Its failure ends the demo.
    fn step(&mut self, words: &[&str], note: &str) -> Result<Report, CliError> {
        self.show(words, note)?;
        self.execute(words)
    }

    /// Like [`Demo::step`] for a command the ledger refuses: shows the error line the command
    /// prints, and goes on.
    fn refused_step(&mut self, words: &[&str], note: &str) -> Result<(), CliError> {
        self.show(words, note)?;
        match self.execute(words) {
            Err(CliError::Io(e)) => Err(CliError::Io(e)),
            Err(e) => {
                let line = render::error_line(false, e.kind(), &e.to_string());
                writeln!(self.out, "{line}")?;
                Ok(())
            }
            Ok(_) => Ok(()),
        }
    }

    fn show(&mut self, words: &[&str], note: &str) -> Result<(), CliError> {
        let line = shell_words(words);
        if note.is_empty() {
            writeln!(self.out, "$ session-ledger {line}")?;
        } else {
            writeln!(self.out, "$ session-ledger {line}   # {note}")?;
        }
        Ok(())
    }

    /// Parses `session-ledger --db PATH WORDS` as the shell's arguments would be, and runs the
    /// command, as the demo's operator, with its output (and any note for stderr) on `out`.
    fn execute(&mut self, words: &[&str]) -> Result<Report, CliError> {
        let db = self.path.as_os_str();
        let argv = ["session-ledger".as_ref(), "--db".as_ref(), db]
            .into_iter()
            .chain(words.iter().map(|w| w.as_ref()));
        let cli = Cli::try_parse_from(argv)
            .map_err(|e| CliError::Usage(args::one_line(&e.to_string())))?;
        let Command::Ledger(command) = &cli.command else {
            return Err(CliError::Usage("the demo does not run itself".into()));
        };
        let ctx = Context::new(&cli.db, Some(ACTOR));
        let mut notes = Vec::new();
        let report = dispatch::ledger(&ctx, cli.format(), command, &mut *self.out, &mut notes);
        self.out.write_all(&notes)?;
        report
    }
}
