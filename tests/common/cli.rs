//! Running the `session-ledger` binary in tests: always with an explicit `--db`, in the ledger's
//! directory, with the ledger's environment variables removed.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, ExitStatus};

use serde_json::Value;

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

/// Runs `session-ledger --db DB ARGS...` in DB's directory.
pub fn run(db: &Path, args: &[&str]) -> Run {
    run_env(db, &[], args)
}

/// Runs `session-ledger --db DB ARGS...` in DB's directory with `vars` set in its environment.
pub fn run_env(db: &Path, vars: &[(&str, &str)], args: &[&str]) -> Run {
    run_in(in_dir_of(db), &with_db(db, args), vars)
}

/// `--db DB ARGS...`.
fn with_db<'a>(db: &'a Path, args: &[&'a str]) -> Vec<&'a OsStr> {
    let mut all: Vec<&OsStr> = vec![OsStr::new("--db"), db.as_os_str()];
    all.extend(args.iter().map(|a| OsStr::new(*a)));
    all
}

/// The directory the ledger `db` sits in, where the binary runs.
fn in_dir_of(db: &Path) -> &Path {
    db.parent().expect("the ledger sits in a directory")
}

/// `session-ledger --db DB ARGS...` in DB's directory, not started yet: for a test that drives
/// the process's pipes itself.
pub fn command(db: &Path, args: &[&str]) -> Command {
    command_in(in_dir_of(db), &with_db(db, args), &[])
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
pub fn ok(db: &Path, args: &[&str]) -> TestResult<String> {
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
pub fn ok_json(db: &Path, args: &[&str]) -> TestResult<Value> {
    let all = with_json(args);
    let out = ok(db, &all)?;
    serde_json::from_str(&out)
        .map_err(|e| format!("`{}` printed no JSON value ({e}): {out:?}", all.join(" ")).into())
}

/// Runs the binary with `--json`, requires success, and parses each stdout line as JSON.
pub fn ok_json_lines(db: &Path, args: &[&str]) -> TestResult<Vec<Value>> {
    let all = with_json(args);
    ok(db, &all)?
        .lines()
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                format!(
                    "`{}` printed a line that is not JSON ({e}): {l:?}",
                    all.join(" ")
                )
                .into()
            })
        })
        .collect()
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

/// A temporary directory holding `ledger.db`. Each test file adds the ledgers it needs in an
/// `impl Fixture` of its own.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub db: std::path::PathBuf,
}

impl Fixture {
    /// A directory with no ledger in it yet.
    pub fn empty() -> TestResult<Fixture> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("ledger.db");
        Ok(Fixture { _dir: dir, db })
    }

    /// An initialized, empty ledger.
    pub fn init() -> TestResult<Fixture> {
        let fx = Fixture::empty()?;
        ok(&fx.db, &["init"])?;
        Ok(fx)
    }

    /// The directory the ledger sits in.
    pub fn dir(&self) -> &Path {
        self.db.parent().expect("the ledger sits in a directory")
    }
}

/// The first column of each row of `sql`, as text.
pub fn rows(conn: &rusqlite::Connection, sql: &str) -> TestResult<Vec<String>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// `--json audit FILTERS...`: one JSON object a line.
pub fn audit_lines(db: &Path, filters: &[&str]) -> TestResult<Vec<Value>> {
    let mut args = vec!["audit"];
    args.extend_from_slice(filters);
    ok_json_lines(db, &args)
}

/// Every row of every table, as stored, sorted: to show that a command wrote nothing.
pub fn dump(db: &Path) -> TestResult<Vec<String>> {
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
pub fn refused_unchanged(db: &Path, args: &[&str]) -> TestResult<Run> {
    let before = dump(db)?;
    let r = run(db, args);
    assert_clean_failure(&r, &format!("`{}`", args.join(" ")));
    assert_eq!(before, dump(db)?, "`{}` changed the ledger", args.join(" "));
    Ok(r)
}

/// Runs a command that must succeed and change nothing; returns its stdout.
pub fn ok_unchanged(db: &Path, args: &[&str]) -> TestResult<String> {
    let before = dump(db)?;
    let out = ok(db, args)?;
    assert_eq!(before, dump(db)?, "`{}` changed the ledger", args.join(" "));
    Ok(out)
}
