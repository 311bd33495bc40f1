//! Concurrency stress: many threads through the pool on one file, mixed operations, and no
//! SQLITE_BUSY or SQLITE_LOCKED reaching a caller; afterwards the rules still hold. Also: while
//! another process holds a write transaction, writers wait and then succeed.
//!
//! `STRESS_THREADS` (default 16) and `STRESS_OPS` (operations per thread, default 2,000) set the
//! size; the long run in docs/reliability.md uses larger values.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Fixture, TestResult};
use session_ledger::{
    AuditKind, AuditQuery, Config, Error, Label, PostureLevel, Propagation, Raise, Taint, Verdict,
};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic PRNG (xorshift64*), so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What one thread saw and did.
#[derive(Default)]
struct Log {
    reads: Vec<(String, Label)>,
    raises_changed: usize,
    creates: usize,
    grants: usize,
    ends: usize,
    ops: usize,
    refusals: usize,
}

fn worker(ledger: &session_ledger::Ledger, t: usize, ops: usize, pool: &[String]) -> Log {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((t as u64 + 1) * 0x1000_0001));
    let mut log = Log::default();
    let mut mine: Vec<String> = Vec::new();
    for i in 0..ops {
        let any = |rng: &mut Rng, mine: &[String]| -> String {
            if !mine.is_empty() && rng.below(2) == 0 {
                mine[rng.below(mine.len())].clone()
            } else {
                pool[rng.below(pool.len())].clone()
            }
        };
        let result: Result<(), Error> = match rng.below(20) {
            0..=3 => {
                let creator = any(&mut rng, &mine);
                let id = format!("t{t}-{i}");
                ledger.create_child(&id, &creator, "stress").map(|_| {
                    log.creates += 1;
                    mine.push(id);
                })
            }
            4..=8 => {
                let mut id = any(&mut rng, &mine);
                if rng.below(4) == 0 {
                    id = format!("sub-{id}-{}", rng.below(3));
                }
                ledger.state(&id).map(|s| {
                    if s.known {
                        log.reads.push((id, s.label()));
                    }
                })
            }
            9..=10 => {
                let id = any(&mut rng, &mine);
                let raise = Raise {
                    taint: [None, Some(Taint::Public), Some(Taint::Secret)][rng.below(3)],
                    untrusted: rng.below(3) == 0,
                };
                let raise = if raise.taint.is_none() && !raise.untrusted {
                    Raise {
                        untrusted: true,
                        ..raise
                    }
                } else {
                    raise
                };
                ledger.raise(&id, raise, "stress").map(|r| {
                    if r.changed {
                        log.raises_changed += 1;
                    }
                })
            }
            11 => {
                let id = any(&mut rng, &mine);
                let level = [PostureLevel::Trust, PostureLevel::TrustReads][rng.below(2)];
                ledger.grant(&id, level, "stress").map(|_| log.grants += 1)
            }
            12 => {
                let id = any(&mut rng, &mine);
                ledger.revoke(&id, Propagation::Local, "stress").map(|_| ())
            }
            13 if rng.below(3) == 0 => {
                let id = any(&mut rng, &mine);
                ledger
                    .revoke(&id, Propagation::Cascade { token: None }, "stress")
                    .map(|_| ())
            }
            13 => {
                let id = pool[rng.below(pool.len())].clone();
                ledger
                    .grant(&id, PostureLevel::Trust, "stress")
                    .map(|_| log.grants += 1)
            }
            14..=18 => {
                let id = any(&mut rng, &mine);
                ledger
                    .decide(&id, "make deploy", rng.below(2) == 0)
                    .map(|d| {
                        let _ = d.verdict == Verdict::Approve;
                    })
            }
            _ => {
                if rng.below(4) == 0 {
                    let id = any(&mut rng, &mine);
                    ledger.end(&id, "stress").map(|_| log.ends += 1)
                } else {
                    Ok(())
                }
            }
        };
        log.ops += 1;
        match result {
            Ok(()) => {}
            Err(e) if e.is_refusal() => log.refusals += 1,
            Err(e) if e.is_caller_error() => {}
            Err(e) => {
                panic!("thread {t}, op {i}: an infrastructure error reached the caller: {e:?}")
            }
        }
    }
    log
}

#[test]
fn many_threads_of_mixed_operations_never_see_busy_and_leave_the_rules_intact() -> TestResult {
    let threads = env_usize("STRESS_THREADS", 16);
    let ops = env_usize("STRESS_OPS", 2_000);
    let f = Fixture::with(Config::default().max_depth(12));
    let mut pool = Vec::new();
    for r in 0..4 {
        let root = format!("root{r}");
        f.ledger.create_root(&root, "stress")?;
        if r % 2 == 0 {
            f.ledger.grant(&root, PostureLevel::Trust, "stress")?;
        }
        pool.push(root);
    }
    let ledger = Arc::new(f.ledger);
    let pool = Arc::new(pool);
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (ledger, pool) = (ledger.clone(), pool.clone());
            std::thread::spawn(move || worker(&ledger, t, ops, &pool))
        })
        .collect();
    let logs: Vec<Log> = handles
        .into_iter()
        .map(|h| h.join().expect("a worker panicked"))
        .collect();
    let elapsed = started.elapsed();

    // No label is lower than at any earlier read (L1).
    let mut highest: HashMap<String, Label> = HashMap::new();
    for (id, label) in logs.iter().flat_map(|l| l.reads.iter()) {
        let e = highest.entry(id.clone()).or_insert(*label);
        *e = e.join(*label);
    }
    for (id, seen) in &highest {
        let now = ledger.state(id)?.label();
        assert!(
            now.dominates(*seen),
            "{id} reads {now:?}, lower than {seen:?} read earlier"
        );
    }

    // Every change has its audit row: the counts the threads saw succeed are in the trail.
    let count = |kind: &str| -> usize {
        let kind = kind.parse().expect("a known kind");
        ledger
            .audit(&AuditQuery::all().kind(kind))
            .expect("audit")
            .len()
    };
    let sum = |f: fn(&Log) -> usize| -> usize { logs.iter().map(f).sum() };
    assert_eq!(count("session.create"), sum(|l| l.creates));
    assert_eq!(count("label.raise"), sum(|l| l.raises_changed));
    assert_eq!(count("posture.grant"), sum(|l| l.grants) + 2);
    assert_eq!(count("session.create_refused"), sum(|l| l.refusals));
    let ends = ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionEnd))?
        .into_iter()
        .filter(|e| e.detail.get("ended_with").is_none())
        .count();
    assert_eq!(ends, sum(|l| l.ends));

    // No session holds a posture allocated before a cascade from one of its ancestors (or
    // itself) committed (R3): each posture's allocating audit row comes after every cascade
    // row of every session on its path.
    let trail = ledger.audit(&AuditQuery::all())?;
    let mut cascades: BTreeMap<String, i64> = BTreeMap::new(); // root -> last cascade seq
    let mut allocated: HashMap<String, i64> = HashMap::new(); // session -> last allocation seq
    for row in &trail {
        let Some(session) = row.session.clone() else {
            continue;
        };
        match row.kind.as_str() {
            "posture.revoke" if row.detail["propagation"] == "cascade" => {
                let root = row.detail["root"].as_str().expect("root").to_owned();
                cascades.insert(root, row.seq);
            }
            "posture.grant" => {
                allocated.insert(session, row.seq);
            }
            "session.create" | "session.spawn"
                if row.detail["inherited_trust"] == true
                    || row.detail["inherited_trust_reads"] == true =>
            {
                allocated.insert(session, row.seq);
            }
            _ => {}
        }
    }
    let conn = common::raw(&f.dir.path().join("ledger.db"));
    let mut stmt = conn.prepare("SELECT session_id FROM postures")?;
    let holders: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for holder in &holders {
        let alloc = allocated[holder];
        let mut path = vec![holder.clone()];
        path.extend(ledger.ancestors(holder)?.into_iter().map(|s| s.id));
        for a in &path {
            if let Some(&cascade) = cascades.get(a) {
                assert!(
                    alloc > cascade,
                    "{holder} holds a posture allocated at row {alloc}, before the cascade from {a} at row {cascade}"
                );
            }
        }
    }

    // The run did cascade. How many postures survive to be checked depends on how the threads
    // interleaved (a late cascade can clear them all), so that count is reported, not asserted;
    // tests/authority.rs and tests/crash.rs check R3 where the outcome is fixed.
    assert!(!cascades.is_empty());

    let v = ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    println!(
        "stress: {threads} threads x {ops} ops = {} operations in {:.1} s; {} audit rows, \
         {} cascade roots, {} posture holders checked; 0 busy errors",
        sum(|l| l.ops),
        elapsed.as_secs_f64(),
        v.rows,
        cascades.len(),
        holders.len()
    );
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
