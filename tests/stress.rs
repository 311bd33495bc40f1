//! Concurrency stress: many threads through the pool on one file, mixed operations, and no
//! SQLITE_BUSY or SQLITE_LOCKED reaching a caller; afterwards the rules still hold. Also: while
//! another process holds a write transaction, writers wait and then succeed.
//!
//! `STRESS_THREADS` (default 16) and `STRESS_OPS` (operations per thread, default 2,000) set the
//! size; the long run in docs/reliability.md uses larger values.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::stress::{self, env_usize, Log};
use common::{Fixture, TestResult};
use session_ledger::PostureLevel;

#[test]
fn many_threads_of_mixed_operations_never_see_busy_and_leave_the_rules_intact() -> TestResult {
    let threads = env_usize("STRESS_THREADS", 16);
    let ops = env_usize("STRESS_OPS", 2_000);
    let Fixture { ledger, store } = Fixture::with(stress::config());
    let pool = Arc::new(stress::setup(&ledger)?);
    let ledger = Arc::new(ledger);
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (ledger, pool) = (ledger.clone(), pool.clone());
            std::thread::spawn(move || stress::worker(&ledger, t, ops, &pool))
        })
        .collect();
    let logs: Vec<Log> = handles
        .into_iter()
        .map(|h| h.join().expect("a worker panicked"))
        .collect();
    let elapsed = started.elapsed();
    let checked = stress::check(&store, &ledger, &logs);
    let who = format!("stress, {threads} threads x {ops} ops");
    println!("{}", checked.report(&who, elapsed));
    Ok(())
}

/// The child: holds a write transaction on the file for `hold` ms, then commits. Inside it, it
/// starts a new posture epoch by hand, so every posture granted before lapses at its commit.
fn hold_lock(path: &str, hold: u64) {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         INSERT INTO epochs (epoch, started_at, started_by, durable)
         VALUES (1, '2026-01-01T00:00:00.000Z', 'other process', 0);",
    )
    .expect("lock");
    println!("\nHOLDING-WRITE-LOCK");
    std::thread::sleep(Duration::from_millis(hold));
    conn.execute_batch("COMMIT").expect("commit");
}

#[test]
fn writers_wait_for_another_process_holding_the_write_lock_and_then_succeed() -> TestResult {
    if let Ok(path) = std::env::var("SESSION_LEDGER_HOLD_LOCK") {
        hold_lock(&path, 1_000);
        return Ok(());
    }
    let f = Fixture::new();
    f.build("root > a");
    f.ledger.grant("root", PostureLevel::Trust, "op")?;
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "writers_wait_for_another_process_holding_the_write_lock_and_then_succeed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SESSION_LEDGER_HOLD_LOCK", f.path())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    loop {
        let line = lines.next().expect("the child reports its lock")?;
        if line.contains("HOLDING-WRITE-LOCK") {
            break;
        }
    }
    let ledger = Arc::new(f.ledger);
    let writers: Vec<_> = (0..4)
        .map(|i| {
            let ledger = ledger.clone();
            std::thread::spawn(move || ledger.create_child(&format!("w{i}"), "root", "op"))
        })
        .collect();
    for w in writers {
        let created = w.join().expect("writer")?;
        // Had a writer not waited for the other process's commit, it would have run in
        // epoch 0 and copied the root's trust.
        assert!(
            !created.inherited_trust,
            "{} did not wait",
            created.session.id
        );
    }
    assert!(child.wait()?.success());
    assert_eq!(ledger.children("root")?.len(), 5);
    Ok(())
}
