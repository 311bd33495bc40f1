//! `session-ledger`: the operator's command line for a session ledger. This file owns the
//! process: it reads the arguments, hands a command on a ledger to the dispatcher
//! (`dispatch.rs`) and the others to their runners (`copy`, `completions`, the demo), and turns
//! the outcome into an exit status and, for an error, one line on stderr.

mod args;
mod commands;
mod context;
mod demo;
mod dispatch;
mod error;
mod render;
mod shell;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, HookRuntime};
use crate::commands::{completions, copy, hook};
use crate::context::Context;
use crate::error::CliError;

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
                .any(|a| a == "--json" || a == "--json-lines");
            let message = format!("{} (see --help)", args::one_line(&e.to_string()));
            return fail(json, "usage", &message, 2);
        }
    };
    let outcome = run(&cli, &mut io::stdout().lock(), &mut io::stderr());
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`session-ledger audit | head -1`). Rust starts a
        // program with SIGPIPE ignored, so the write failed with EPIPE instead of ending the
        // process. End it quietly with 141 (128 + SIGPIPE), the status a shell gives a writer
        // killed by SIGPIPE, as `cat` would be: nobody is reading, and scripts that check the
        // status see the usual one. Mapping the error rather than restoring SIGPIPE's default
        // at startup keeps the binary free of `unsafe` and of a libc binding.
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(e) => fail(
            cli.format().is_json(),
            e.kind(),
            &e.to_string(),
            e.exit_code(),
        ),
    }
}

/// Runs the command `cli` names, with its output on `out` and any note for the reader on
/// `notes`.
///
/// # Errors
///
/// As [`dispatch::ledger`], and those of `copy`, `completions` and the demo.
fn run(cli: &Cli, out: &mut dyn Write, notes: &mut dyn Write) -> Result<(), CliError> {
    match &cli.command {
        Command::Ledger(command) => {
            let ctx = Context::new(&cli.db, None);
            dispatch::ledger(&ctx, cli.format(), command, out, notes)?;
        }
        Command::Copy { from, to } => {
            let report = copy::copy(from, to)?;
            render::report(out, cli.format(), &report)?;
        }
        Command::Completions { shell } => completions::completions(*shell, out)?,
        Command::Demo { path } => demo::run(out, path.as_deref())?,
        Command::Hook {
            runtime: HookRuntime::ClaudeCode { settings: true },
        } => hook::settings(&cli.db, out, notes)?,
        Command::Hook {
            runtime: HookRuntime::ClaudeCode { settings: false },
        } => hook::claude_code(&cli.db, &mut io::stdin().lock(), out, notes)?,
    }
    Ok(())
}

/// Reports an error as its one line on stderr and returns the exit status `code`.
fn fail(json: bool, kind: &str, message: &str, code: u8) -> ExitCode {
    eprintln!("{}", render::error_line(json, kind, message));
    ExitCode::from(code)
}
