//! Writers wait for each other instead of failing.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{raw, Fixture, TestResult};
use session_ledger::{AuditQuery, Raise, Taint};

#[test]
fn a_write_waits_for_another_connections_write_transaction_and_then_succeeds() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    let path = f.path();
    let held = Arc::new(Barrier::new(2));
    let holder = {
        let held = held.clone();
        std::thread::spawn(move || -> rusqlite::Result<()> {
            let conn = raw(&path);
            conn.execute_batch("BEGIN IMMEDIATE")?;
            held.wait();
            std::thread::sleep(Duration::from_millis(500));
            conn.execute_batch("COMMIT")
        })
    };
    held.wait();
    let started = Instant::now();
    f.ledger.raise(
        "a",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        },
        "test",
    )?;
    // The raise could only commit after the other transaction let go of the lock.
    assert!(started.elapsed() >= Duration::from_millis(300));
    holder.join().expect("holder thread")?;
    assert_eq!(f.ledger.state("a")?.taint, Taint::Secret);
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
    let inherits = ledger.audit(&AuditQuery::all().kind("label.inherit"))?;
    assert_eq!(inherits.len(), 8 + 160 + 160);
    Ok(())
}
