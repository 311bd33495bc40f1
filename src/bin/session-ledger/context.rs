//! What every command shares: where it runs ([`Context`]: the ledger at `--db`, who acts by
//! default, and whether a read found an immutable lone copy), how it opens the ledger (creating
//! it, for writing, or for reading), who acts (`--actor` and its defaults), and reading the
//! files an operator hands a command (a key, a checkpoint, a receipt) and the times it filters
//! by. Every command module uses this one; it uses none of them.

use std::cell::Cell;
use std::path::Path;

use session_ledger::{Config, Error, InputError, Ledger, StorageError, VerifierKey};

use crate::error::CliError;

/// Where a command runs: the ledger, and who acts when it is given no `--actor`.
pub struct Context<'a> {
    /// The ledger: a file or a URL (`--db`).
    pub db: &'a Path,
    /// Who acts without `--actor`: `None` asks the environment (see [`acting`]); the demo names
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

    /// True once a read command of this context opened the ledger as an immutable lone copy.
    pub fn read_immutable(&self) -> bool {
        self.read_immutable.get()
    }
}

/// The command line a command was given after `--`: one argument is the line itself, read as
/// the shell would read it; several are its words, each quoted back as one word (a shell has
/// already removed their quotes, so `-- git status '>' x` is the word `>`, not a redirection).
pub fn command_line(args: &[String]) -> String {
    match args {
        [line] => line.clone(),
        words => session_ledger::join_words(words),
    }
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

/// Opens the ledger at `path`, creating it when it does not exist yet: for `init`, and for the
/// new ledger `copy` fills. A file is created only in a folder that exists, and is never a
/// folder too: a missing folder is named, with how to create it, rather than left to SQLite's
/// "unable to open database file".
pub fn open_creating(path: &Path) -> Result<Ledger, CliError> {
    let is_url = path.to_str().is_some_and(session_ledger::is_postgres_url);
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
    if let Some(folder) = folder.filter(|f| !is_url && !f.is_dir()) {
        return Err(CliError::NoFolder {
            folder: folder.to_owned(),
            ledger: path.to_owned(),
            exists: folder.exists(),
        });
    }
    Ok(Ledger::open_with(
        path,
        cli_config().create_if_missing(true),
    )?)
}

/// Opens the ledger for a command that writes.
pub fn open_existing(path: &Path) -> Result<Ledger, Error> {
    Ledger::open_with(path, cli_config())
}

/// [`open_existing`], waiting at most `busy` for another writer: for a hook, which must answer
/// within its runtime's timeout.
pub fn open_existing_waiting(path: &Path, busy: std::time::Duration) -> Result<Ledger, Error> {
    Ledger::open_with(path, cli_config().busy_timeout(busy))
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
        // read-only mount); a PostgreSQL standby, which serves reads only; or an archive, which
        // is never written.
        Err(Error::Storage(
            StorageError::ReadOnly(_) | StorageError::Standby(_) | StorageError::IsArchive(_),
        )) => Ledger::open_with(path, cli_config().read_only(true)),
        opened => opened,
    }
}

/// A time as `--since` and `--until` take it: RFC 3339 (`2026-11-30T12:00:00Z`).
pub fn parse_time(text: &str) -> Result<chrono::DateTime<chrono::Utc>, Error> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| Error::Input(InputError::InvalidTime(text.to_owned())))
}

/// A file's text, or an error that names the file as `what`.
pub fn read_file(path: &Path, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {what} {}: {e}", path.display())))
}

/// The verifier key given as its text, or as a file holding it.
pub fn verifier_key(given: &str) -> Result<VerifierKey, CliError> {
    match given.parse::<VerifierKey>() {
        Ok(key) => Ok(key),
        Err(_) if Path::new(given).is_file() => {
            Ok(read_file(Path::new(given), "the verifier key file")?.parse()?)
        }
        Err(e) => Err(e.into()),
    }
}
