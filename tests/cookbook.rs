//! Every query in docs/audit.md, run through the real sqlite3 shell (read-only) against a
//! ledger built by the page's own commands, must print exactly what the page says.

mod common;

use std::process::Command;

use common::{cookbook, run_sqlite3, TestResult};

#[test]
fn every_documented_query_prints_what_the_cookbook_says() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("ledger.db");
    let (commands, queries) = cookbook();
    let script =
        format!("set -e\nsession-ledger() {{ \"$BIN\" --db \"$DB\" \"$@\"; }}\n{commands}");
    let built = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("BIN", env!("CARGO_BIN_EXE_session-ledger"))
        .env("DB", &db)
        .env_remove("SESSION_LEDGER_DB")
        .output()?;
    assert!(
        built.status.success(),
        "the cookbook's commands failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let head = Command::new(env!("CARGO_BIN_EXE_session-ledger"))
        .arg("--db")
        .arg(&db)
        .args(["audit", "head"])
        .output()?;
    let head = String::from_utf8(head.stdout)?;
    let (head_seq, head_hash) = head.trim().split_once(':').expect("SEQ:HASH");

    let names: Vec<&str> = queries.iter().map(|q| q.name.as_str()).collect();
    assert!(names.len() >= 10, "the cookbook lost queries: {names:?}");
    for query in &queries {
        // Placeholders (<...>) stand for the head an auditor saved: use this ledger's.
        let params: Vec<(String, String)> = query
            .params
            .iter()
            .map(|(k, v)| match (k.as_str(), v.contains('<')) {
                (":seq", true) => (k.clone(), head_seq.to_owned()),
                (":hash", true) => (k.clone(), format!("'{head_hash}'")),
                _ => (k.clone(), v.clone()),
            })
            .collect();
        let output = run_sqlite3(&db, &query.sql, &params);
        assert_eq!(
            output, query.expected,
            "query {} printed something else",
            query.name
        );
    }
    Ok(())
}
