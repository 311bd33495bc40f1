//! Fixtures shared by the integration tests.
#![allow(dead_code)]

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

    /// Every row of the data tables, as text, to compare a ledger before and after.
    pub fn snapshot(&self) -> Vec<String> {
        let conn = self.sql();
        let mut out = Vec::new();
        for (table, order) in [
            ("sessions", "seq"),
            ("labels", "session_id"),
            ("audit", "seq"),
        ] {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
                .expect("prepare");
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |row| {
                    let cells: Vec<String> = (0..n)
                        .map(|i| format!("{:?}", row.get_ref(i).expect("cell")))
                        .collect();
                    Ok(format!("{table}: {}", cells.join(" | ")))
                })
                .expect("query");
            for row in rows {
                out.push(row.expect("row"));
            }
        }
        out
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
