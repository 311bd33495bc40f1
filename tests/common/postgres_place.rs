//! A PostgreSQL ledger's place in the tests: a schema of its own in the database that
//! `SESSION_LEDGER_TEST_POSTGRES` names (`scripts/with-postgres` starts a server and sets it),
//! dropped with the fixture, and the hand edits and reads an operator could make in psql.
//!
//! When the variable is unset, a PostgreSQL test passes without running, and the first one to
//! find it unset says so on the terminal, once per test program; with
//! `SESSION_LEDGER_REQUIRE_POSTGRES=1` (as the README's test command sets) it fails instead.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use postgres::{Client, NoTls, SimpleQueryMessage};

/// The variable naming the test server's database, as the owner role.
pub const URL_VARIABLE: &str = "SESSION_LEDGER_TEST_POSTGRES";

/// The ledger's write lock, as the PostgreSQL engine takes it first in every write transaction
/// (`src/storage/postgres/mod.rs`): run on a connection to the ledger's schema, it holds that
/// ledger's writers until its transaction ends.
pub const WRITE_LOCK: &str =
    "SELECT pg_advisory_xact_lock(1818584167, 'audit'::regclass::oid::int4)";

/// The variable naming the same database as [`URL_VARIABLE`], as the same role, over TCP
/// (127.0.0.1) rather than the server's Unix socket.
pub const TCP_URL_VARIABLE: &str = "SESSION_LEDGER_TEST_POSTGRES_TCP";

/// A schema holding one test's ledger.
pub struct Place {
    base: String,
    schema: String,
}

static SKIPPED: Once = Once::new();
static PREPARED: Once = Once::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The server's URL, or `None` when the PostgreSQL tests cannot run here (said once).
pub fn server() -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("SESSION_LEDGER_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("{URL_VARIABLE} is not set, and SESSION_LEDGER_REQUIRE_POSTGRES=1");
            }
            SKIPPED.call_once(|| {
                // Straight to the terminal: the test harness hides what a passing test prints.
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIPPED: the PostgreSQL tests of this program do not run: {URL_VARIABLE} \
                     is not set (run them with scripts/with-postgres, or the README's test \
                     command) ***\n"
                );
            });
            None
        }
    }
}

/// The server's URL over TCP ([`TCP_URL_VARIABLE`]), or `None` when the PostgreSQL tests cannot
/// run here (as [`server`]). A server given without it, under
/// `SESSION_LEDGER_REQUIRE_POSTGRES=1`, is a failure.
pub fn server_over_tcp() -> Option<String> {
    server()?;
    match std::env::var(TCP_URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("SESSION_LEDGER_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("{TCP_URL_VARIABLE} is not set, and SESSION_LEDGER_REQUIRE_POSTGRES=1");
            }
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: a test over TCP: {TCP_URL_VARIABLE} is not set ***\n"
            );
            None
        }
    }
}

/// The password in a test server's URL (between `user:` and `@`).
pub fn password_of(url: &str) -> String {
    let after_scheme = url.split_once("://").expect("a URL").1;
    let userinfo = after_scheme.split_once('@').expect("credentials").0;
    userinfo.split_once(':').expect("a password").1.to_owned()
}

/// A client of the test server at `url`.
pub fn connect(url: &str) -> Client {
    Client::connect(url, NoTls).expect("connect to the test server")
}

/// The server's message for a failed statement, as psql prints it after `ERROR:`.
pub fn message(e: postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => e.to_string(),
    }
}

/// Every row of `sql` on `client`, each value as text (`None` for NULL).
pub fn rows(client: &mut Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let messages = client.simple_query(sql).expect(sql);
    messages
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// `url` with `search_path` set to `schema` first, then `public` (where pgcrypto is).
fn with_search_path(url: &str, schema: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}%2Cpublic")
}

impl Place {
    /// A new, empty schema; `None` when there is no test server.
    pub fn new() -> Option<Place> {
        let base = server()?;
        let mut admin = connect(&base);
        PREPARED.call_once(|| {
            // Every ledger's migration asks for pgcrypto; in `public` it serves them all, and
            // it outlives the schemas the tests drop.
            admin
                .batch_execute(
                    "SELECT pg_advisory_lock(1);
                     CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public;
                     SELECT pg_advisory_unlock(1);",
                )
                .expect("pgcrypto in public");
        });
        let schema = format!(
            "test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .expect("a schema for the test");
        Some(Place { base, schema })
    }

    /// The ledger's schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The ledger's URL.
    pub fn url(&self) -> String {
        with_search_path(&self.base, &self.schema)
    }

    /// The ledger's URL on `base`: the same database reached another way (over TCP, say).
    pub fn url_on(&self, base: &str) -> String {
        with_search_path(base, &self.schema)
    }

    /// A new connection to the ledger, as the owner role.
    pub fn client(&self) -> Client {
        connect(&self.url())
    }

    /// Every row of `sql`, each value as text (`None` for NULL).
    pub fn query(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        rows(&mut self.client(), sql)
    }

    /// Every row of every table of the schema, as text, sorted: to compare before and after.
    pub fn dump(&self) -> Vec<String> {
        let tables = self.query(&format!(
            "SELECT tablename FROM pg_tables WHERE schemaname = '{}' ORDER BY 1",
            self.schema
        ));
        let mut out = Vec::new();
        for table in tables {
            let table = table[0].clone().expect("a name");
            for row in self.query(&format!("SELECT * FROM \"{table}\"")) {
                out.push(format!("{table}: {row:?}"));
            }
        }
        out.sort();
        out
    }

    /// `sql` in one transaction, as a hand edit in psql: the error is the server's message.
    pub fn exec(&self, sql: &str) -> Result<(), String> {
        let mut client = self.client();
        client
            .batch_execute(&format!("BEGIN;\n{sql};\nCOMMIT;"))
            .map_err(message)
    }

    /// `sql` with the triggers of the audit trail, its tree and its checkpoints switched off, as
    /// their owner could; they are on again once it returns.
    pub fn tamper(&self, sql: &str) {
        self.client()
            .batch_execute(&format!(
                "BEGIN;
                 ALTER TABLE audit DISABLE TRIGGER USER;
                 ALTER TABLE audit_tree DISABLE TRIGGER USER;
                 ALTER TABLE checkpoints DISABLE TRIGGER USER;
                 ALTER TABLE decisions DISABLE TRIGGER USER;
                 ALTER TABLE decision_log DISABLE TRIGGER USER;
                 ALTER TABLE decision_queue DISABLE TRIGGER USER;
                 {sql};
                 ALTER TABLE audit ENABLE TRIGGER USER;
                 ALTER TABLE audit_tree ENABLE TRIGGER USER;
                 ALTER TABLE checkpoints ENABLE TRIGGER USER;
                 ALTER TABLE decisions ENABLE TRIGGER USER;
                 ALTER TABLE decision_log ENABLE TRIGGER USER;
                 ALTER TABLE decision_queue ENABLE TRIGGER USER;
                 COMMIT;"
            ))
            .expect(sql);
    }

    /// Empties the ledger back to what its migration left (epoch 0, no sessions, an empty
    /// trail), with every table's triggers off for the while, as its owner could: a fresh
    /// ledger for much less than a new schema and a migration. Its handles must be closed.
    pub fn reset(&self) {
        let tables = self.query(&format!(
            "SELECT tablename FROM pg_tables WHERE schemaname = '{}' ORDER BY 1",
            self.schema
        ));
        let mut sql = String::from("BEGIN;\n");
        for t in &tables {
            let t = t[0].as_deref().expect("a name");
            sql += &format!("ALTER TABLE \"{t}\" DISABLE TRIGGER USER;\n");
        }
        sql += "TRUNCATE sessions, labels, postures, command_patterns, override_scopes, audit, \
                audit_tree, checkpoints, decisions, decision_queue, decision_log \
                RESTART IDENTITY;\n\
                DELETE FROM epochs WHERE epoch > 0;\n";
        for t in &tables {
            let t = t[0].as_deref().expect("a name");
            sql += &format!("ALTER TABLE \"{t}\" ENABLE TRIGGER USER;\n");
        }
        sql += "COMMIT;";
        self.client().batch_execute(&sql).expect("reset the ledger");
    }

    /// Runs a psql script file of the docs with `variables`, unaligned, with a header line:
    /// what psql prints.
    fn psql(&self, file: &str, variables: &[(&str, String)]) -> String {
        let mut command = std::process::Command::new("psql");
        command.arg(self.url()).args([
            "-X",
            "-q",
            "-A",
            "-P",
            "footer=off",
            "-v",
            "ON_ERROR_STOP=1",
        ]);
        for (name, value) in variables {
            command.arg("-v").arg(format!("{name}={value}"));
        }
        let out = command
            .arg("-f")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/").to_owned() + file)
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql -f {file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// docs/postgres-verify.sql's answer: a header line, then the first bad row, if any.
    pub fn verify_in_psql(&self) -> String {
        self.psql("postgres-verify.sql", &[])
    }

    /// docs/postgres-verify-tree.sql's answer: the stored tree hashes that differ from those
    /// recomputed from the rows, then the tree's size.
    pub fn verify_tree_in_psql(&self) -> String {
        self.psql("postgres-verify-tree.sql", &[])
    }

    /// docs/postgres-check-head.sql's answer for a saved head: a header line, then `ok`,
    /// `truncated` or `head_mismatch`.
    pub fn check_head_in_psql(&self, seq: i64, hash: &str) -> String {
        self.psql(
            "postgres-check-head.sql",
            &[("seq", seq.to_string()), ("hash", hash.to_owned())],
        )
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Ok(mut admin) = Client::connect(&self.base, NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}
