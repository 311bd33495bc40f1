//! Writers wait for each other instead of failing.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{raw, Fixture, TestResult};
use session_ledger::{AuditKind, AuditQuery, PostureLevel};

#[test]
fn a_write_waits_for_another_connections_write_transaction_and_then_succeeds() -> TestResult {
    let f = Fixture::new();
    f.ledger.create_root("root", "test")?;
    f.ledger.grant("root", PostureLevel::Trust, "test")?;
    let path = f.path();
    let held = Arc::new(Barrier::new(2));
    // The other connection holds the write lock and, inside that transaction, starts a new
    // epoch by hand: the root's trust lapses when it commits.
    let holder = {
        let held = held.clone();
        std::thread::spawn(move || -> rusqlite::Result<()> {
            let conn = raw(&path);
            conn.execute_batch(
                "BEGIN IMMEDIATE;
                 INSERT INTO epochs (epoch, started_at, started_by, durable)
                 VALUES (1, '2026-01-01T00:00:00.000Z', 'other', 0);",
            )?;
            held.wait();
            std::thread::sleep(Duration::from_millis(300));
            conn.execute_batch("COMMIT")
        })
    };
    held.wait();
    let child = f.ledger.create_child("worker", "root", "test")?;
    // Had the create not waited for the lock, it would have run in epoch 0 and copied the
    // root's trust; it ran after the other transaction committed, so nothing was inherited.
    assert!(!child.inherited_trust);
    holder.join().expect("holder thread")?;
    Ok(())
}

#[test]
fn many_threads_creating_and_reading_at_once_all_succeed() -> TestResult {
    let f = Fixture::new();
    f.ledger.create_root("root", "test")?;
    let ledger = Arc::new(f.ledger);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let ledger = ledger.clone();
            std::thread::spawn(move || -> session_ledger::Result<()> {
                let worker = format!("w{t}");
                ledger.create_child(&worker, "root", "test")?;
                for i in 0..20 {
                    let child = format!("w{t}-{i}");
                    ledger.create_child(&child, &worker, "test")?;
                    ledger.state(&child)?;
                    ledger.state(&format!("sub-{child}-1"))?;
                }
                Ok(())
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread")?;
    }
    // 8 workers, 160 children, 160 spawned: each with its create or spawn row.
    assert_eq!(ledger.subtree("root")?.len(), 1 + 8 + 160 + 160);
    let inherits = ledger.audit(&AuditQuery::all().kind(AuditKind::LabelInherit))?;
    assert_eq!(inherits.len(), 8 + 160 + 160);
    Ok(())
}

#[test]
fn the_wal_file_outlives_the_last_connection_and_holds_nothing_uncheckpointed() -> TestResult {
    let Fixture { ledger, store } = Fixture::new();
    let dir = &store.dir;
    let path = dir.path().join("ledger.db");
    let wal = dir.path().join("ledger.db-wal");
    ledger.create_root("root", "test")?;
    ledger.grant("root", PostureLevel::Trust, "test")?;
    drop(ledger);
    // SQLite deletes the WAL when the last connection closes unless asked to keep it; the
    // ledger keeps it, so the next process commits into blocks that already exist.
    assert!(wal.exists(), "the WAL file was deleted on close");
    // The close checkpointed everything: the database file alone, read without the WAL,
    // holds both changes.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&path, &copy)?;
    let conn = raw(&copy);
    let rows: i64 = conn.query_row(
        "SELECT count(*) FROM postures WHERE session_id = 'root'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(rows, 1);
    // And a ledger reopened over the kept WAL reads and writes as before.
    let ledger = session_ledger::Ledger::init(&path)?;
    assert!(ledger.state("root")?.trust);
    ledger.create_child("worker", "root", "test")?;
    assert!(ledger.state("worker")?.trust);
    Ok(())
}
