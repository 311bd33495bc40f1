//! `completions`: a shell's completion script, made by clap's own generator from the same
//! grammar as the help texts (args.rs), so that it names every command and flag there is.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::Cli;
use crate::error::CliError;

/// Prints the completion script for `shell` on `out`. The script is made whole first, so that a
/// reader who goes away (a closed pipe) ends the command as any other, not the generator.
///
/// # Errors
///
/// A failed write to `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "session-ledger", &mut script);
    out.write_all(&script)?;
    out.flush()?;
    Ok(())
}
