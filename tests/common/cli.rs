//! Running the `session-ledger` binary in tests: always with an explicit `--db`, in the ledger's
//! directory, with the ledger's environment variables removed.
//!
//! Every helper takes the ledger as a [`Db`]: a SQLite file's path, or a [`Fixture`], whose
//! ledger is a file or a PostgreSQL schema (`--db postgres://...`). The end-to-end flows take the
//! engine as a parameter (`engine_tests!`) and pass the fixture; the tests of the SQLite file
//! itself pass its path.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use serde_json::Value;

use super::{Engine, Store};

pub type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

pub const BIN: &str = env!("CARGO_BIN_EXE_session-ledger");

#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// The binary to run in `cwd` with exactly `args`, with the ledger's environment variables
/// removed and then `vars` set.
fn command_in<S: AsRef<OsStr>>(cwd: &Path, args: &[S], vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("SESSION_LEDGER_DB")
        .env_remove("SESSION_LEDGER_ACTOR")
        .envs(vars.iter().copied());
    command
}

/// Runs the binary in `cwd` with exactly `args`, with the ledger's environment variables removed
/// and then `vars` set.
fn run_in<S: AsRef<OsStr>>(cwd: &Path, args: &[S], vars: &[(&str, &str)]) -> Run {
    let out = command_in(cwd, args, vars)
        .output()
        .expect("the session-ledger binary runs");
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the binary in `cwd` with exactly `args`, with the ledger's environment variables removed.
pub fn run_raw<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Run {
    run_in(cwd, args, &[])
}

/// Runs the binary in `cwd` with exactly `args`, with the ledger's environment variables removed
/// and then `vars` set (`SESSION_LEDGER_DB`, say).
pub fn run_raw_env<S: AsRef<OsStr>>(cwd: &Path, vars: &[(&str, &str)], args: &[S]) -> Run {
    run_in(cwd, args, vars)
}

/// A ledger the binary is pointed at.
pub trait Db {
    /// What `--db` is given: the file's path, or the database's URL.
    fn target(&self) -> OsString;
    /// The directory the binary runs in: the file's.
    fn cwd(&self) -> &Path;
    /// Every row of every table, as stored, sorted.
    fn rows(&self) -> TestResult<Vec<String>>;
}

/// A SQLite ledger file.
impl Db for Path {
    fn target(&self) -> OsString {
        self.as_os_str().to_owned()
    }

    fn cwd(&self) -> &Path {
        self.parent().expect("the ledger sits in a directory")
    }

    fn rows(&self) -> TestResult<Vec<String>> {
        dump_file(self)
    }
}

impl Db for PathBuf {
    fn target(&self) -> OsString {
        self.as_path().target()
    }

    fn cwd(&self) -> &Path {
        self.as_path().cwd()
    }

    fn rows(&self) -> TestResult<Vec<String>> {
        self.as_path().rows()
    }
}

/// Runs `session-ledger --db DB ARGS...` in DB's directory.
pub fn run(db: &(impl Db + ?Sized), args: &[&str]) -> Run {
    run_env(db, &[], args)
}

/// Runs `session-ledger --db DB ARGS...` in DB's directory with `vars` set in its environment.
pub fn run_env(db: &(impl Db + ?Sized), vars: &[(&str, &str)], args: &[&str]) -> Run {
    run_in(db.cwd(), &with_db(db, args), vars)
}

/// `--db DB ARGS...`.
fn with_db(db: &(impl Db + ?Sized), args: &[&str]) -> Vec<OsString> {
    let mut all = vec![OsString::from("--db"), db.target()];
    all.extend(args.iter().map(OsString::from));
    all
}

/// `session-ledger --db DB ARGS...` in DB's directory, not started yet: for a test that drives
/// the process's pipes itself.
pub fn command(db: &(impl Db + ?Sized), args: &[&str]) -> Command {
    command_in(db.cwd(), &with_db(db, args), &[])
}

/// The error of a failed `--json` run: stderr is exactly one line, one JSON object with a
/// snake_case `kind` and a non-empty `message`. Returns that object.
pub fn json_error(r: &Run, what: &str) -> TestResult<Value> {
    assert_one_error_line(r, what);
    let v: Value = serde_json::from_str(&r.stderr)
        .map_err(|e| format!("{what}: stderr is not one JSON value ({e}): {:?}", r.stderr))?;
    let kind = v["kind"]
        .as_str()
        .ok_or_else(|| format!("{what}: no string `kind` in {v}"))?;
    assert!(
        !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "{what}: the kind {kind:?} is not snake_case"
    );
    assert!(
        v["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: no non-empty `message` in {v}"
    );
    Ok(v)
}

/// Runs the binary, requires success, and returns its stdout.
pub fn ok(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<String> {
    let r = run(db, args);
    if !r.status.success() {
        return Err(format!("`{}` failed ({}): {}", args.join(" "), r.status, r.stderr).into());
    }
    Ok(r.stdout)
}

/// `--json ARGS...`.
fn with_json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    all
}

/// Runs the binary with `--json`, requires success, and parses its stdout as one JSON value.
pub fn ok_json(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<Value> {
    let all = with_json(args);
    let out = ok(db, &all)?;
    serde_json::from_str(&out)
        .map_err(|e| format!("`{}` printed no JSON value ({e}): {out:?}", all.join(" ")).into())
}

/// Runs the binary with `--json` on a listing, requires success, and returns the items of the
/// one array it printed.
pub fn ok_json_array(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<Vec<Value>> {
    match ok_json(db, args)? {
        Value::Array(items) => Ok(items),
        other => Err(format!("`--json {}` printed no array: {other}", args.join(" ")).into()),
    }
}

/// The keys of a JSON object (none for any other value).
pub fn keys(v: &Value) -> std::collections::BTreeSet<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// A JSON string's text; empty for any other value.
pub fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A failure as the issue requires: non-zero exit code (not a signal), exactly one line on
/// stderr, no panic, nothing on stdout.
pub fn assert_clean_failure(r: &Run, what: &str) {
    assert!(
        !r.status.success(),
        "{what}: succeeded, stdout: {}",
        r.stdout
    );
    assert!(
        matches!(r.status.code(), Some(c) if c != 0),
        "{what}: no exit code ({})",
        r.status
    );
    assert_one_error_line(r, what);
    assert!(
        r.stdout.is_empty(),
        "{what}: printed on stdout: {:?}",
        r.stdout
    );
}

/// The error output of a failed run: one non-empty line, and no panic.
pub fn assert_one_error_line(r: &Run, what: &str) {
    assert!(
        !r.stderr.contains("panicked"),
        "{what}: panicked: {}",
        r.stderr
    );
    assert_eq!(
        r.stderr.lines().count(),
        1,
        "{what}: stderr is not one line: {:?}",
        r.stderr
    );
    assert!(
        !r.stderr.trim().is_empty(),
        "{what}: the error line is empty"
    );
}

pub fn assert_mentions(r: &Run, words: &str) {
    assert!(
        r.stderr.to_lowercase().contains(&words.to_lowercase()),
        "expected the error to mention {words:?}, got {:?}",
        r.stderr
    );
}

/// A ledger for the binary, in a temporary directory where the binary runs: `ledger.db` in it,
/// or a PostgreSQL schema of its own ([`Store`]). Each test file adds the ledgers it needs in an
/// `impl Fixture` of its own.
pub struct Fixture {
    store: Store,
    /// `ledger.db` in the directory: the ledger itself on SQLite. On PostgreSQL nothing is
    /// there, and the fixture itself is the [`Db`] to pass.
    pub db: PathBuf,
}

impl Fixture {
    /// A directory with no SQLite ledger in it yet.
    pub fn empty() -> TestResult<Fixture> {
        Ok(Fixture::empty_on(Engine::Sqlite).expect("SQLite is always there"))
    }

    /// No ledger yet on `engine` (an empty schema on PostgreSQL); `None` when the engine is not
    /// available here (the test then passes having said so).
    pub fn empty_on(engine: Engine) -> Option<Fixture> {
        let store = Store::on(engine)?;
        let db = store.dir.path().join("ledger.db");
        Some(Fixture { store, db })
    }

    /// An initialized, empty SQLite ledger.
    pub fn init() -> TestResult<Fixture> {
        Ok(Fixture::init_on(Engine::Sqlite)?.expect("SQLite is always there"))
    }

    /// An initialized, empty ledger on `engine` (`session-ledger init`); `None` as
    /// [`Fixture::empty_on`].
    pub fn init_on(engine: Engine) -> TestResult<Option<Fixture>> {
        let Some(fx) = Fixture::empty_on(engine) else {
            return Ok(None);
        };
        ok(&fx, &["init"])?;
        Ok(Some(fx))
    }

    /// The directory the binary runs in, where a SQLite ledger sits.
    pub fn dir(&self) -> &Path {
        self.store.dir.path()
    }

    /// The ledger's place, for what a test reads or edits beside the binary.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// The fixture's ledger, on its engine.
impl Db for Fixture {
    fn target(&self) -> OsString {
        self.store.target().into()
    }

    fn cwd(&self) -> &Path {
        self.dir()
    }

    fn rows(&self) -> TestResult<Vec<String>> {
        Ok(self.store.snapshot())
    }
}

/// The first column of each row of `sql`, as text.
pub fn rows(conn: &rusqlite::Connection, sql: &str) -> TestResult<Vec<String>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// `--json audit FILTERS...`: the rows of its one array.
pub fn audit_lines(db: &(impl Db + ?Sized), filters: &[&str]) -> TestResult<Vec<Value>> {
    let mut args = vec!["audit"];
    args.extend_from_slice(filters);
    ok_json_array(db, &args)
}

/// Every row of every table, as stored, sorted: to show that a command wrote nothing.
pub fn dump(db: &(impl Db + ?Sized)) -> TestResult<Vec<String>> {
    db.rows()
}

/// Every row of every table of a SQLite ledger file, as stored, sorted.
fn dump_file(db: &Path) -> TestResult<Vec<String>> {
    use rusqlite::{Connection, OpenFlags};
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let tables = rows(
        &conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
          ORDER BY name",
    )?;
    let mut out = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\""))?;
        let columns = stmt.column_count();
        let rows = stmt.query_map([], |row| {
            (0..columns)
                .map(|i| row.get::<_, rusqlite::types::Value>(i))
                .collect::<Result<Vec<_>, _>>()
        })?;
        for row in rows {
            out.push(format!("{table}: {:?}", row?));
        }
    }
    out.sort();
    Ok(out)
}

/// Runs a command that must be refused: a clean failure, and the ledger unchanged. Returns the
/// run so the caller can check the message.
pub fn refused_unchanged(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<Run> {
    let before = dump(db)?;
    let r = run(db, args);
    assert_clean_failure(&r, &format!("`{}`", args.join(" ")));
    assert_eq!(before, dump(db)?, "`{}` changed the ledger", args.join(" "));
    Ok(r)
}

/// Runs a command that must succeed and change nothing; returns its stdout.
pub fn ok_unchanged(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<String> {
    let before = dump(db)?;
    let out = ok(db, args)?;
    assert_eq!(before, dump(db)?, "`{}` changed the ledger", args.join(" "));
    Ok(out)
}

/// The lines a running command prints on stdout, read on a thread of their own so that a test
/// can wait for the next one with a deadline, and can tell that none came.
pub struct Lines {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Lines {
    /// Starts `session-ledger --db DB ARGS...` with its stdout read line by line.
    pub fn start(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<Lines> {
        use std::io::BufRead;
        let mut child = command(db, args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Lines { child, lines })
    }

    /// The next line, waiting up to a minute for it.
    pub fn next(&self) -> TestResult<String> {
        Ok(self
            .lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .map_err(|e| format!("no next line: {e}"))?)
    }

    /// The next `n` lines.
    pub fn take(&self, n: usize) -> TestResult<Vec<String>> {
        (0..n).map(|_| self.next()).collect()
    }

    /// True when no line comes within `wait`.
    pub fn quiet_for(&self, wait: std::time::Duration) -> bool {
        self.lines.recv_timeout(wait).is_err()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
