//! Opening costs nothing that grows with the ledger, and the whole-file checks are an operator's
//! explicit command: `Ledger::check` and `session-ledger check` run `PRAGMA integrity_check` and
//! `PRAGMA foreign_key_check` and report what they find; opening runs neither (a migration still
//! checks every reference inside its transaction: tests/schema.rs).

mod common;

use common::cli::{ok, ok_json, run, TestResult};
use common::raw;
use session_ledger::{Config, Ledger};

/// A ledger with a root and a command pattern on a session that does not exist: a hand edit in
/// the `sqlite3` shell, where foreign keys are off.
fn with_a_broken_reference(path: &std::path::Path) -> TestResult {
    {
        let ledger = Ledger::init(path)?;
        ledger.create_root("conductor", "alice")?;
    }
    let conn = raw(path);
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
              VALUES ('ghost', 'ls', 'mallory', '2026-01-01T00:00:00.000Z');",
    )?;
    Ok(())
}

#[test]
fn a_ledger_with_a_broken_reference_opens_and_check_reports_the_reference() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    with_a_broken_reference(&path)?;
    // Opening reads nothing that grows with the ledger, so it no longer scans for this.
    let ledger = Ledger::init(&path)?;
    assert!(ledger.state("conductor")?.known);
    let report = ledger.check()?;
    assert!(!report.ok, "{report:?}");
    assert_eq!(report.integrity, ["ok"]);
    assert_eq!(report.broken_references.len(), 1, "{report:?}");
    let broken = &report.broken_references[0];
    assert_eq!(broken.table, "command_patterns");
    assert_eq!(broken.columns, "session_id");
    assert_eq!(broken.references, "sessions");
    assert_eq!(broken.rows, 1);
    assert_eq!(broken.missing, ["ghost"]);
    Ok(())
}

#[test]
fn session_ledger_check_lists_a_broken_reference_and_exits_1() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    with_a_broken_reference(&path)?;

    let r = run(&path, &["check"]);
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.stdout);
    assert_eq!(
        lines[0],
        "broken reference: 1 row of command_patterns has a session_id that no sessions row \
         holds: \"ghost\""
    );
    assert_eq!(lines[1], "FAILED: 1 problem");
    assert_eq!(
        r.stderr.trim(),
        "session-ledger: error: the ledger check found problems"
    );

    let r = run(&path, &["--json", "check"]);
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout)?;
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["integrity"], serde_json::json!(["ok"]));
    assert_eq!(
        report["broken_references"],
        serde_json::json!([{
            "table": "command_patterns",
            "columns": "session_id",
            "references": "sessions",
            "rows": 1,
            "missing": ["ghost"],
        }])
    );

    // Every other command works on it as before.
    assert!(ok(&path, &["state", "conductor"])?.starts_with("conductor: private"));
    Ok(())
}

#[test]
fn check_reports_the_lines_of_integrity_check_for_a_damaged_index() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    {
        let ledger = Ledger::init(&path)?;
        ledger.create_root("conductor", "alice")?;
        ledger.create_child("worker", "conductor", "alice")?;
    }
    // The index's definition no longer matches what it holds.
    raw(&path).execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE INDEX audit_by_session ON audit (actor, seq)'
          WHERE name = 'audit_by_session';",
    )?;
    let report = Ledger::init(&path)?.check()?;
    assert!(!report.ok, "{report:?}");
    assert!(report.broken_references.is_empty(), "{report:?}");
    assert_ne!(report.integrity, ["ok"]);
    assert!(
        report
            .integrity
            .iter()
            .all(|line| line.contains("audit_by_session")),
        "{report:?}"
    );

    let r = run(&path, &["check"]);
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    assert!(r
        .stdout
        .lines()
        .next()
        .is_some_and(|l| l.starts_with("integrity: ")));
    assert!(r
        .stdout
        .trim_end()
        .ends_with(&format!("FAILED: {} problems", report.integrity.len())));
    Ok(())
}

#[test]
fn check_of_a_sound_ledger_is_ok_and_exits_0() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    ok(&path, &["init"])?;
    ok(&path, &["create", "conductor"])?;
    assert_eq!(
        ok(&path, &["check"])?.trim(),
        "OK: integrity ok; every reference resolves"
    );
    let report = ok_json(&path, &["check"])?;
    assert_eq!(
        report,
        serde_json::json!({ "ok": true, "integrity": ["ok"], "broken_references": [], "tree": [] })
    );
    Ok(())
}

#[test]
fn opening_a_current_ledger_takes_no_write_lock() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    Ledger::init(&path)?.create_root("conductor", "alice")?;
    // A writer in another process holds the lock through a long transaction.
    let holder = raw(&path);
    holder.execute_batch("BEGIN IMMEDIATE")?;
    let config = Config::default()
        .create_if_missing(true)
        .busy_timeout(std::time::Duration::from_millis(50));
    let ledger = Ledger::open_with(&path, config)?;
    assert!(ledger.state("conductor")?.known);
    holder.execute_batch("ROLLBACK")?;
    ledger.create_root("second", "alice")?;
    Ok(())
}
