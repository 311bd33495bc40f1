//! Fixtures shared by the integration tests.
//!
//! The behaviour suites run once per storage engine: a test is a function of the [`Engine`], it
//! takes its ledger with [`fixture!`], and [`engine_tests!`] makes a test per engine of it
//! (`sqlite::NAME`). A [`Fixture`] is a ledger open in a [`Store`], which offers what a test
//! needs of the database underneath in engine-neutral calls: [`Store::count`],
//! [`Store::snapshot`], hand edits ([`Store::exec`], [`Store::tamper`]) as someone with the
//! engine's own shell would make them, and that shell itself, kept open across statements
//! ([`Store::shell`]). Suites about one engine's file itself (the SQLite file's header, its WAL,
//! a read-only file, a crash) use [`Fixture::new`] and [`Store::sql`] directly.
#![allow(dead_code)]

pub mod cli;
pub mod stress;

use std::path::{Path, PathBuf};

use session_ledger::{Config, Ledger, Posture, PostureSource, Raise, Taint};
use tempfile::TempDir;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A storage engine the behaviour suites run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A SQLite file in a temporary folder.
    Sqlite,
    /// A schema of its own in the PostgreSQL database `SESSION_LEDGER_TEST_POSTGRES` names.
    Postgres,
}

pub mod postgres_place;
use postgres_place::Place;

/// Runs each named test once per engine: `fn NAME(engine: Engine) -> TestResult` becomes the
/// test `sqlite::NAME` (and one per further engine), so the test output names the engine. A
/// test function left out of the list is dead code, which the lints refuse.
#[macro_export]
macro_rules! engine_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() -> super::common::TestResult {
                    super::$name(super::common::Engine::Sqlite)
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() -> super::common::TestResult {
                    super::$name(super::common::Engine::Postgres)
                }
            )*
        }
    };
}

/// A fresh ledger on `engine`, with the default config or the one given; when the engine is not
/// available here, the test returns (having said so) instead.
#[macro_export]
macro_rules! fixture {
    ($engine:expr) => {
        fixture!(
            $engine,
            session_ledger::Config::default().create_if_missing(true)
        )
    };
    ($engine:expr, $config:expr $(,)?) => {
        match common::Fixture::on($engine, $config) {
            Some(fixture) => fixture,
            None => return Ok(()),
        }
    };
}

/// Where a test's ledger is kept, apart from any handle on it: a SQLite file in a temporary
/// folder, or a schema of its own on the test server (dropped with the store); and what someone
/// with the engine's own shell can do to it. A [`Fixture`] opens a `Ledger` in one; the CLI
/// suites point the binary at one (`cli::Fixture`).
pub struct Store {
    /// The temporary folder: the SQLite file's, and the binary's working folder.
    pub dir: TempDir,
    pub engine: Engine,
    place: Option<Place>,
}

impl Store {
    /// A new, empty place on `engine`; `None` when the engine is not available here (said
    /// once, or a failure under `SESSION_LEDGER_REQUIRE_POSTGRES=1`).
    pub fn on(engine: Engine) -> Option<Store> {
        let dir = tempfile::tempdir().expect("temp dir");
        let place = match engine {
            Engine::Sqlite => None,
            Engine::Postgres => Some(Place::new()?),
        };
        Some(Store { dir, engine, place })
    }

    /// What `session-ledger --db` and `Ledger::open` take to open this ledger: the file's path,
    /// or the database's URL.
    pub fn target(&self) -> String {
        match &self.place {
            Some(place) => place.url(),
            None => self.dir.path().join("ledger.db").display().to_string(),
        }
    }

    /// The PostgreSQL schema of this ledger.
    pub fn place(&self) -> &Place {
        self.place
            .as_ref()
            .expect("a PostgreSQL ledger has a place")
    }

    /// The SQLite ledger's file.
    pub fn path(&self) -> PathBuf {
        assert_eq!(
            self.engine,
            Engine::Sqlite,
            "only a SQLite ledger is a file"
        );
        self.dir.path().join("ledger.db")
    }

    /// A plain connection to the SQLite file, as an auditor or the sqlite3 shell would have.
    pub fn sql(&self) -> rusqlite::Connection {
        raw(&self.path())
    }

    /// How many rows the table has.
    pub fn count(&self, table: &str) -> i64 {
        let rows = self.query(&format!("SELECT count(*) FROM {table}"));
        rows[0][0]
            .as_deref()
            .expect("a count")
            .parse()
            .expect("a number")
    }

    /// Every row of every table, as text, to compare a ledger before and after.
    pub fn snapshot(&self) -> Vec<String> {
        match self.engine {
            Engine::Sqlite => cli::dump(&self.path()).expect("read every table"),
            Engine::Postgres => self.place().dump(),
        }
    }

    /// Runs `sql` (one statement or several) in one transaction, as a hand edit in the engine's
    /// own shell would: the schema's rules hold. The error is the database's message; a
    /// refused edit leaves nothing behind.
    pub fn exec(&self, sql: &str) -> Result<(), String> {
        match self.engine {
            Engine::Sqlite => {
                let conn = self.sql();
                let done = conn.execute_batch(&format!("BEGIN;\n{sql};\nCOMMIT;"));
                if done.is_err() {
                    conn.execute_batch("ROLLBACK").ok();
                }
                done.map_err(|e| e.to_string())
            }
            Engine::Postgres => self.place().exec(sql),
        }
    }

    /// Runs `sql` with the audit trail's guards turned off (the triggers of the trail, its tree
    /// and its checkpoints, and of the decision records and their log), as someone who
    /// controls the database could: the edits only a verifier can detect. The guards are back
    /// once it returns. Panics if the edit fails.
    pub fn tamper(&self, sql: &str) {
        match self.engine {
            Engine::Sqlite => tamper_at(&self.path(), sql),
            Engine::Postgres => self.place().tamper(sql),
        }
    }

    /// Every row `sql` returns, each value as text (`None` for NULL): a read in the engine's
    /// own shell.
    pub fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        match self.engine {
            Engine::Sqlite => sqlite_rows(&self.sql(), sql),
            Engine::Postgres => self.place().query(sql),
        }
    }

    /// The first column of every row `sql` returns, as text (`NULL` as an empty string).
    pub fn column(&self, sql: &str) -> Vec<String> {
        self.query(sql)
            .into_iter()
            .map(|row| row[0].clone().unwrap_or_default())
            .collect()
    }

    /// A session of the engine's own shell on this ledger (`sqlite3` on the file, `psql` as the
    /// owner role), kept open across statements: for a test that holds a transaction open while
    /// the library works beside it, or that sets its session up first.
    pub fn shell(&self) -> Shell {
        match self.engine {
            Engine::Sqlite => Shell::Sqlite(self.sql()),
            Engine::Postgres => Shell::Postgres(self.place().client()),
        }
    }

    /// The documented SQL verifier of the audit chain, run in the engine's own shell
    /// (docs/audit.md): `None` when every row verifies, else the first bad row's seq and its
    /// problem's word.
    pub fn verify_in_sql(&self) -> Option<(i64, String)> {
        let out = match self.engine {
            Engine::Sqlite => run_sqlite3(&self.path(), &doc_query("verify-chain").sql, &[]),
            Engine::Postgres => self.place().verify_in_psql(),
        };
        let line = out.lines().nth(1)?;
        let (seq, problem) = line.split_once('|').expect("seq|problem");
        Some((seq.parse().expect("seq"), problem.to_owned()))
    }

    /// The documented SQL check of a saved head: `ok`, `truncated` or `head_mismatch`.
    pub fn check_head_in_sql(&self, head: &session_ledger::AuditHead) -> String {
        let out = match self.engine {
            Engine::Sqlite => {
                let params = [
                    (":seq".to_owned(), head.seq.to_string()),
                    (":hash".to_owned(), format!("'{}'", head.hash)),
                ];
                run_sqlite3(&self.path(), &doc_query("check-head").sql, &params)
            }
            Engine::Postgres => self.place().check_head_in_psql(head.seq, &head.hash),
        };
        out.lines().nth(1).expect("one row").to_owned()
    }
}

/// A fresh ledger in a [`Store`] of its own, open as `ledger`, which lives as long as the
/// fixture. What the fixture's store offers (`f.snapshot()`, `f.exec(..)`, `f.dir`, ...) is
/// reached through the fixture itself.
pub struct Fixture {
    pub ledger: Ledger,
    pub store: Store,
}

impl std::ops::Deref for Fixture {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

impl Fixture {
    /// A fresh SQLite ledger, for the suites about the SQLite file itself.
    pub fn new() -> Fixture {
        Fixture::with(Config::default().create_if_missing(true))
    }

    /// [`Fixture::new`] with `config`.
    pub fn with(config: Config) -> Fixture {
        Fixture::on(Engine::Sqlite, config).expect("SQLite is always there")
    }

    /// A fresh ledger on `engine` with `config`; `None` when the engine is not available here
    /// (the test then passes having said so).
    pub fn on(engine: Engine, config: Config) -> Option<Fixture> {
        let store = Store::on(engine)?;
        let ledger = Ledger::open_with(store.target(), config).expect("open a fresh ledger");
        Some(Fixture { ledger, store })
    }

    /// Opens the same ledger again, as another handle or process would.
    pub fn reopen(&self, config: Config) -> Ledger {
        Ledger::open_with(self.target(), config).expect("reopen the ledger")
    }

    /// Builds a tree from a compact literal: `"a > b c; b > d"` makes root `a` with children
    /// `b` and `c`, and `d` under `b`. The first name of each clause must exist or is a root.
    pub fn build(&self, spec: &str) {
        for clause in spec.split(';') {
            let (parent, kids) = clause.split_once('>').expect("clause has '>'");
            let parent = parent.trim();
            if self.ledger.session(parent).expect("lookup").is_none() {
                self.ledger.create_root(parent, "test").expect("root");
            }
            for kid in kids.split_whitespace() {
                self.ledger
                    .create_child(kid, parent, "test")
                    .expect("child");
            }
        }
    }

    /// The subtree under `id` drawn as indented lines, one per session: `"  b (created)"`.
    pub fn shape(&self, id: &str) -> Vec<String> {
        self.ledger
            .subtree(id)
            .expect("subtree")
            .into_iter()
            .map(|e| {
                format!(
                    "{}{} ({})",
                    "  ".repeat(e.relative_depth as usize),
                    e.session.id,
                    e.session.origin.as_str()
                )
            })
            .collect()
    }

    pub fn raise(&self, id: &str, taint: Option<Taint>, untrusted: bool) {
        self.ledger
            .raise(id, Raise { taint, untrusted }, "test")
            .expect("raise");
    }
}

/// A session of an engine's own shell, kept open across statements ([`Store::shell`]). Each
/// call runs its statements as they are: no transaction is added, so a test can hold one open
/// across calls (`BEGIN` in one call, `COMMIT` in a later one).
pub enum Shell {
    /// A plain connection to the file, as the `sqlite3` shell has (foreign keys off).
    Sqlite(rusqlite::Connection),
    /// A connection to the database, as `psql` has.
    Postgres(postgres::Client),
}

impl Shell {
    /// A `psql` session at `url`: another role's, say, for the same database.
    pub fn postgres(url: &str) -> Shell {
        Shell::Postgres(postgres_place::connect(url))
    }

    /// Runs `sql` (one statement or several); the error is the database's message. After a
    /// failure inside a transaction the transaction is still open: `ROLLBACK` ends it.
    pub fn run(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Shell::Sqlite(conn) => conn.execute_batch(sql).map_err(|e| e.to_string()),
            Shell::Postgres(client) => client.batch_execute(sql).map_err(postgres_place::message),
        }
    }

    /// Every row `sql` returns, each value as text (`None` for NULL), as [`Store::query`].
    pub fn query(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        match self {
            Shell::Sqlite(conn) => sqlite_rows(conn, sql),
            Shell::Postgres(client) => postgres_place::rows(client, sql),
        }
    }
}

/// Every row `sql` returns on `conn`, each value as text (`None` for NULL).
fn sqlite_rows(conn: &rusqlite::Connection, sql: &str) -> Vec<Vec<Option<String>>> {
    let mut stmt = conn.prepare(sql).expect(sql);
    let columns = stmt.column_count();
    let rows = stmt
        .query_map([], |row| {
            (0..columns)
                .map(|i| {
                    Ok(match row.get::<_, rusqlite::types::Value>(i)? {
                        rusqlite::types::Value::Null => None,
                        rusqlite::types::Value::Integer(n) => Some(n.to_string()),
                        rusqlite::types::Value::Real(x) => Some(x.to_string()),
                        rusqlite::types::Value::Text(t) => Some(t),
                        rusqlite::types::Value::Blob(b) => {
                            Some(String::from_utf8_lossy(&b).into_owned())
                        }
                    })
                })
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .expect(sql);
    rows.collect::<rusqlite::Result<Vec<_>>>().expect(sql)
}

/// The statements that drop the triggers of the audit trail, its tree and its checkpoints, and
/// those that create them again as they are.
fn audit_guards(conn: &rusqlite::Connection) -> (String, String) {
    let mut stmt = conn
        .prepare(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'
                AND tbl_name IN ('audit', 'audit_tree', 'checkpoints', 'decisions',
                                 'decision_log', 'decision_queue')",
        )
        .expect("the guards' SQL");
    let guards = stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .expect("read the guards")
        .collect::<Result<Vec<_>, _>>()
        .expect("read the guards");
    assert!(guards.len() >= 3, "the audit table has its guards");
    let drops = guards
        .iter()
        .map(|(name, _)| format!("DROP TRIGGER {name};"))
        .collect();
    let creates = guards.iter().map(|(_, sql)| format!("{sql};\n")).collect();
    (drops, creates)
}

pub fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("raw open");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    conn
}

/// Runs `sql` on the SQLite ledger file at `path` with the audit trail's guards dropped for it
/// and put back after, as someone with the file would rewrite history.
pub fn tamper_at(path: &Path, sql: &str) {
    let conn = raw(path);
    let (drops, creates) = audit_guards(&conn);
    conn.execute_batch(&format!("BEGIN; {drops} {sql}; {creates} COMMIT;"))
        .expect(sql);
}

/// The `sqlite3` shell, which the audit cookbook is written for. CI installs it (`.ci/run`).
pub fn sqlite3_shell() -> std::path::PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("sqlite3"))
            .find(|candidate| candidate.is_file())
    });
    found.expect("the sqlite3 shell is needed by the audit tests: apt-get install sqlite3")
}

/// Runs `sql` through `sqlite3 -readonly -header` on `db` with the given parameters
/// (`(":name", "SQL literal")`), returning stdout; panics with stderr on failure.
pub fn run_sqlite3(db: &Path, sql: &str, params: &[(String, String)]) -> String {
    use std::io::Write;
    let mut cmd = std::process::Command::new(sqlite3_shell());
    cmd.arg("-readonly").arg("-header");
    for (name, value) in params {
        cmd.arg("-cmd")
            .arg(format!(".parameter set {name} \"{value}\""));
    }
    let mut child = cmd
        .arg(db)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run sqlite3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(sql.as_bytes())
        .expect("write query");
    let out = child.wait_with_output().expect("sqlite3 output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "sqlite3 failed: {stderr}\n{sql}"
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// One query of docs/audit.md: its name, SQL, parameters and the output printed under it.
pub struct DocQuery {
    pub name: String,
    pub sql: String,
    pub params: Vec<(String, String)>,
    pub expected: String,
}

/// The audit cookbook, read from docs/audit.md: the commands that build its ledger and its
/// queries.
pub fn cookbook() -> (String, Vec<DocQuery>) {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit.md"))
        .expect("docs/audit.md");
    let block = |start: usize, fence: &str| -> (String, usize) {
        let body = doc[start..].find(fence).expect("fence") + start + fence.len();
        let end = doc[body..].find("```").expect("closing fence") + body;
        (doc[body..end].to_owned(), end + 3)
    };
    let (commands, _) = block(0, "```sh cookbook\n");
    let mut queries = Vec::new();
    let mut at = 0;
    while let Some(found) = doc[at..].find("```sql\n") {
        let (sql, after) = block(at + found, "```sql\n");
        let (expected, next) = block(after, "```text\n");
        let name = sql
            .lines()
            .find_map(|l| l.strip_prefix("-- name: "))
            .expect("every cookbook query has a name")
            .to_owned();
        let params = sql
            .lines()
            .filter_map(|l| l.strip_prefix("-- param: "))
            .map(|p| {
                let (k, v) = p.split_once(" = ").expect("-- param: :name = value");
                (k.to_owned(), v.to_owned())
            })
            .collect();
        queries.push(DocQuery {
            name,
            sql,
            params,
            expected,
        });
        at = next;
    }
    (commands, queries)
}

/// The documented query named `name`.
pub fn doc_query(name: &str) -> DocQuery {
    cookbook()
        .1
        .into_iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("docs/audit.md has no query {name}"))
}

/// A posture as a tree view shows it in one word: `granted` or `inherited` while it counts,
/// `lapsed` when its epoch has passed, `-` for none.
pub fn posture_source(posture: Option<&Posture>) -> &'static str {
    match posture.map(|p| (&p.source, p.current)) {
        Some((PostureSource::Granted, true)) => "granted",
        Some((PostureSource::Inherited, true)) => "inherited",
        Some((_, false)) => "lapsed",
        None => "-",
    }
}

/// A working tree for tool rules: `src/lib.rs`, `docs/a.md`, and `src/escape`, a symbolic link
/// to a folder outside it that holds `secret`. Both folders go when the value is dropped.
pub struct WorkingTree {
    /// The tree, the root a call names.
    pub root: TempDir,
    /// The folder outside it that `src/escape` leads to.
    pub outside: TempDir,
}

impl WorkingTree {
    pub fn new() -> Result<WorkingTree, Box<dyn std::error::Error>> {
        let root = tempfile::tempdir()?;
        let outside = tempfile::tempdir()?;
        std::fs::create_dir_all(root.path().join("src"))?;
        std::fs::create_dir_all(root.path().join("docs"))?;
        std::fs::write(root.path().join("src/lib.rs"), "")?;
        std::fs::write(root.path().join("docs/a.md"), "")?;
        std::fs::write(outside.path().join("secret"), "")?;
        std::os::unix::fs::symlink(outside.path(), root.path().join("src/escape"))?;
        Ok(WorkingTree { root, outside })
    }
}

/// A verdict as the docs' tables write it: `approve` or `ask`.
pub fn verdict_word(verdict: session_ledger::Verdict) -> &'static str {
    match verdict {
        session_ledger::Verdict::Approve => "approve",
        session_ledger::Verdict::Ask => "ask",
    }
}

/// What docs/audit.md's `audit-leaves` program prints (each row's leaf, then the root at
/// `size`) for the JSON rows `rows` (`--json-lines audit`), run with the system's `python3` in
/// the folder `dir`.
pub fn audit_leaves(
    dir: &Path,
    rows: &[u8],
    size: u64,
) -> Result<String, Box<dyn std::error::Error>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit.md"))?;
    let open = "```python audit-leaves\n";
    let start = doc
        .find(open)
        .ok_or("docs/audit.md has no audit-leaves program")?
        + open.len();
    let program = &doc[start..start + doc[start..].find("```").ok_or("a closing fence")?];
    let script = dir.join("audit_leaves.py");
    std::fs::write(&script, program)?;
    let mut python = std::process::Command::new("python3")
        .arg(&script)
        .arg(size.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(&mut python.stdin.take().ok_or("stdin")?, rows)?;
    let out = python.wait_with_output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// A small xorshift, for kill times and other random choices of a sweep: seed it from the
/// clock and print the seed, so that a failing run can be repeated.
pub struct Random(pub u64);

impl Random {
    /// A number below `n` (0 for `n` of 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
