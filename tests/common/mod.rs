//! Fixtures shared by the integration tests.
#![allow(dead_code)]

pub mod cli;

use std::path::{Path, PathBuf};

use session_ledger::{Config, Ledger, Raise, Taint};
use tempfile::TempDir;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A fresh ledger in a file of its own; the directory lives as long as the returned guard.
pub struct Fixture {
    pub dir: TempDir,
    pub ledger: Ledger,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with(Config::default())
    }

    pub fn with(config: Config) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = Ledger::open_with(dir.path().join("ledger.db"), config).expect("open ledger");
        Fixture { dir, ledger }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("ledger.db")
    }

    /// A plain connection to the file, as an auditor or the sqlite3 shell would have.
    pub fn sql(&self) -> rusqlite::Connection {
        raw(&self.path())
    }

    /// How many rows the table has.
    pub fn count(&self, table: &str) -> i64 {
        self.sql()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    }

    /// Every row of every table, as text, to compare a ledger before and after.
    pub fn snapshot(&self) -> Vec<String> {
        cli::dump(&self.path()).expect("read every table")
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

pub fn raw(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("raw open");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    conn
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
