//! The storage contract (docs/storage-contract.md) against the SQLite engine: since version 9,
//! every trigger names in its body the contract item it enforces, and is otherwise defined as
//! version 8 defined it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use common::{raw, TestResult};
use rusqlite::Connection;
use session_ledger::Ledger;

/// A time of the stored form, before anything the tests' ledgers write.
const T: &str = "2026-01-01T00:00:00.000Z";

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

/// Registers `sha3(X, 256)` on a plain connection, as the stock shell has it built in.
fn with_sha3(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "sha3",
        2,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8
            | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            use sha3::Digest;
            let text: String = ctx.get(0)?;
            Ok(sha3::Sha3_256::digest(text.as_bytes()).to_vec())
        },
    )
}

// ------------------------------------------------------------------------------------------------
// Version 9: the triggers as version 8 defined them, each naming its item
// ------------------------------------------------------------------------------------------------

/// Every object of the schema on `conn`: `(type, name) -> (tbl_name, sql)`.
fn schema(conn: &Connection) -> BTreeMap<(String, String), (String, Option<String>)> {
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))
        .expect("read the schema");
    rows.collect::<Result<_, _>>().expect("read the schema")
}

/// A ledger as version 8 of this software left it, at `path`.
fn version_8_ledger(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    // Version 3 chains existing rows with sha3(), which the library registers and the stock
    // shell has built in.
    with_sha3(&conn)?;
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(8))
        .run(&mut conn)
        .expect("migrate to version 8");
    conn.execute_batch("PRAGMA application_id = 1397515367;")?;
    Ok(conn)
}

/// A fresh ledger, created by the library and read with a plain connection.
fn fresh_ledger(dir: &Path) -> Connection {
    let path = dir.join("fresh.db");
    drop(Ledger::open(&path).expect("create a ledger"));
    raw(&path)
}

/// The `-- contract C<n>: words` lines of a trigger's SQL, with their line index.
fn contract_lines(sql: &str) -> Vec<(usize, String, String)> {
    sql.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let rest = line.trim_start().strip_prefix("-- contract ")?;
            let (item, words) = rest.split_once(':').unwrap_or((rest, ""));
            Some((i, item.to_owned(), words.trim().to_owned()))
        })
        .collect()
}

/// `sql` without its contract lines.
fn without_contract_lines(sql: &str) -> String {
    let lines: Vec<&str> = sql
        .split('\n')
        .filter(|l| !l.trim_start().starts_with("-- contract "))
        .collect();
    lines.join("\n")
}

#[test]
fn every_trigger_is_defined_as_in_version_8_apart_from_its_contract_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let v8 = schema(&version_8_ledger(&dir.path().join("v8.db"))?);
    let fresh = schema(&fresh_ledger(dir.path()));
    let mut problems = Vec::new();
    let keys: BTreeSet<_> = v8.keys().chain(fresh.keys()).collect();
    for key in keys {
        let (kind, name) = key;
        let (Some(old), Some(new)) = (v8.get(key), fresh.get(key)) else {
            problems.push(format!(
                "the {kind} `{name}` is in only one of version 8 and a fresh ledger"
            ));
            continue;
        };
        if kind == "trigger" {
            let sql = new.1.as_deref().unwrap_or("");
            let lines = contract_lines(sql);
            if lines.len() != 1 {
                problems.push(format!(
                    "the trigger `{name}` has {} contract lines; it needs one",
                    lines.len()
                ));
            }
            let same = old.0 == new.0 && old.1.as_deref() == Some(&without_contract_lines(sql));
            if !same {
                problems.push(format!(
                    "the trigger `{name}` differs from version 8's by more than its contract \
                     line:\n--- version 8\n{}\n--- now\n{sql}",
                    old.1.as_deref().unwrap_or("")
                ));
            }
        } else if old != new && name != "refinery_schema_history" {
            problems.push(format!("the {kind} `{name}` differs from version 8's"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Drift(problems.join("\n")).into())
    }
}

#[test]
fn a_version_8_ledger_upgrades_to_triggers_that_name_their_items_and_keeps_every_row() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    {
        let conn = version_8_ledger(&old)?;
        conn.execute_batch(&format!(
            "INSERT INTO sessions (id, depth, origin, created_at)
                  VALUES ('conductor', 0, 'root', '{T}');
             INSERT INTO sessions (id, created_by, depth, origin, created_at)
                  VALUES ('worker', 'conductor', 1, 'created', '{T}');
             INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
                  VALUES ('conductor', 'private', 0, '{T}', 'born');
             UPDATE labels SET taint = 'secret', raised_at = '{T}' WHERE session_id = 'conductor';
             INSERT INTO postures (session_id, posture, source, granted_by, granted_at,
                                   granted_on, inherited_from, allocated_at, chain, epoch)
                  VALUES ('conductor', 'trust', 'granted', 'alice', '{T}', 'conductor', NULL,
                          '{T}', '[\"conductor\"]', 0);
             INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
                  VALUES ('worker', 'npm test', 'alice', '{T}');"
        ))?;
        let mut prev = session_ledger::GENESIS_HASH.to_owned();
        for (seq, kind, session) in [
            (1, "session.root", "conductor"),
            (2, "session.create", "worker"),
            (3, "posture.grant", "conductor"),
        ] {
            let hash =
                session_ledger::chain_hash(&prev, seq, T, "alice", kind, Some(session), "{}");
            conn.execute(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES (?1, ?2, 'alice', ?3, ?4, '{}', ?5, ?6)",
                (seq, T, kind, session, &prev, &hash),
            )?;
            prev = hash;
        }
    }
    let rows = |path: &Path| -> Vec<String> {
        common::cli::dump(path)
            .expect("read every table")
            .into_iter()
            .filter(|r| !r.starts_with("refinery_schema_history:"))
            .collect()
    };
    let before = rows(&old);
    assert!(before.iter().any(|r| r.starts_with("audit:")));
    let ledger = Ledger::open(&old)?;
    assert!(ledger.verify(None)?.ok);
    drop(ledger);
    assert_eq!(rows(&old), before, "the upgrade changed rows");
    let conn = raw(&old);
    let version: i64 = conn.query_row(
        "SELECT max(version) FROM refinery_schema_history",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(version, session_ledger::schema_version());
    let upgraded = schema(&conn);
    for ((kind, name), (_, sql)) in &upgraded {
        if kind == "trigger" {
            assert_eq!(
                contract_lines(sql.as_deref().unwrap_or("")).len(),
                1,
                "{name}"
            );
        }
    }
    let fresh = schema(&fresh_ledger(dir.path()));
    let without_history = |s: &BTreeMap<(String, String), (String, Option<String>)>| {
        s.iter()
            .filter(|((_, name), _)| !name.starts_with("refinery"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(without_history(&upgraded), without_history(&fresh));
    Ok(())
}

/// The doc's problems, one a line; printed as they are when a test fails.
struct Drift(String);

impl fmt::Debug for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Drift {}
