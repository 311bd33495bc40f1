//! Where a read's time goes, for docs/performance.md: the ledger's read statement built up
//! table by table and run raw on a ledger's own file, the same point SELECT inside an open read
//! transaction (what SQLite's implicit transaction costs), a create against a raw insert and a
//! raise, with `synchronous=NORMAL` (what each costs besides its fsync), the WAL frames one
//! create and one raise write, a first read at depth 64 without its sync, and what an open
//! costs with and without the kept WAL file.
//!
//! `cargo bench -p session-ledger-perf --bench read_layout` prints one line per measurement,
//! each the median of 7 rounds of 20,000 statements (2,000 transactions for the writes).

mod support;

use std::time::{Duration, Instant};

use session_ledger::{Config, Ledger, PostureLevel, Synchronous};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rounds(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let v = (0..7)
        .map(|r| {
            let t = Instant::now();
            for i in 0..n {
                f(r * n + i);
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    median(v)
}

/// `synchronous=NORMAL` and no creation bounds: the measurements here leave the sync out.
fn unbounded_normal() -> Config {
    Config::default()
        .create_if_missing(true)
        .synchronous(Synchronous::Normal)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let config = unbounded_normal();
    let ledger = Ledger::open_with(&path, config.clone()).expect("ledger");
    ledger.create_root("c", "bench").expect("root");
    ledger
        .grant("c", PostureLevel::Trust, "bench")
        .expect("grant");
    let ids: Vec<String> = (0..2_000).map(|i| format!("s{i:06}")).collect();
    for id in &ids {
        ledger.create_child(id, "c", "bench").expect("create");
        ledger.state(id).expect("materialize");
    }
    let pick = |i: usize| &ids[(i * 7919) % ids.len()];

    let conn = rusqlite::Connection::open(&path).expect("raw");
    let steps = [
        (
            "labels only",
            "SELECT taint, untrusted FROM labels WHERE session_id = ?1",
        ),
        (
            "+ sessions",
            "SELECT l.taint, l.untrusted, s.ended_at FROM labels l
               JOIN sessions s ON s.id = l.session_id WHERE l.session_id = ?1",
        ),
        (
            "+ postures",
            "SELECT l.taint, l.untrusted, s.ended_at, p.posture, p.chain, p.epoch FROM labels l
               JOIN sessions s ON s.id = l.session_id
               LEFT JOIN postures p ON p.session_id = l.session_id WHERE l.session_id = ?1",
        ),
        (
            "+ current epoch",
            "SELECT l.taint, l.untrusted, s.ended_at, p.posture, p.chain,
                    p.epoch = (SELECT max(epoch) FROM epochs) FROM labels l
               JOIN sessions s ON s.id = l.session_id
               LEFT JOIN postures p ON p.session_id = l.session_id WHERE l.session_id = ?1",
        ),
    ];
    for (name, sql) in steps {
        let us = rounds(20_000, |i| {
            let mut stmt = conn.prepare_cached(sql).expect("prepare");
            let taint: String = stmt.query_row([pick(i)], |r| r.get(0)).expect("row");
            std::hint::black_box(taint);
        });
        println!("raw read, {name}: {us:.2} µs");
    }
    conn.execute_batch("BEGIN").expect("begin");
    let us = rounds(20_000, |i| {
        let mut stmt = conn.prepare_cached(steps[0].1).expect("prepare");
        let taint: String = stmt.query_row([pick(i)], |r| r.get(0)).expect("row");
        std::hint::black_box(taint);
    });
    conn.execute_batch("COMMIT").expect("commit");
    println!("raw read, labels only, inside one open read transaction: {us:.2} µs");
    let us = rounds(20_000, |i| {
        std::hint::black_box(ledger.state(pick(i)).expect("state"));
    });
    println!("Ledger::state: {us:.2} µs");

    // Writes without fsync: what a create costs besides its commit's sync.
    support::trusted_creators(&ledger);
    let us = rounds(2_000, |i| {
        ledger
            .create_child(
                &format!("w{i:06}"),
                &format!("creator{:03}", i % 100),
                "bench",
            )
            .expect("create");
    });
    println!("Ledger::create_child, synchronous=NORMAL: {us:.1} µs");
    // A raise of a materialized session, once per session: what a raise costs besides its sync.
    for i in 0..7 * 2_000 {
        ledger
            .create_root(&format!("r{i:06}"), "bench")
            .expect("root");
    }
    let secret = session_ledger::Raise {
        taint: Some(session_ledger::Taint::Secret),
        untrusted: false,
    };
    let us = rounds(2_000, |i| {
        let raised = ledger
            .raise(&format!("r{i:06}"), secret, "bench")
            .expect("raise");
        assert!(raised.changed);
    });
    println!("Ledger::raise, synchronous=NORMAL: {us:.1} µs");
    let raw = rusqlite::Connection::open(dir.path().join("raw.db")).expect("raw");
    raw.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
        .expect("wal");
    raw.pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    raw.execute_batch(
        "CREATE TABLE sessions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                                created_by TEXT, depth INTEGER NOT NULL,
                                created_at TEXT NOT NULL) STRICT;",
    )
    .expect("schema");
    let us = rounds(2_000, |i| {
        raw.execute_batch("BEGIN IMMEDIATE").expect("begin");
        raw.prepare_cached(
            "INSERT INTO sessions (id, created_by, depth, created_at) VALUES (?1, ?2, 1, ?3)",
        )
        .expect("prepare")
        .execute((
            format!("w{i:06}"),
            format!("creator{:03}", i % 100),
            "2026-01-01T00:00:00.000Z",
        ))
        .expect("insert");
        raw.execute_batch("COMMIT").expect("commit");
    });
    println!("raw one-row INSERT transaction, synchronous=NORMAL: {us:.1} µs");

    pages_and_depth(dir.path());
    opening(dir.path());
}

/// Creates `n` children named `<prefix>00000` onward, spread over `creator000` to
/// `creator099` (see [`support::trusted_creators`]).
fn children_of_creators(ledger: &Ledger, prefix: &str, n: usize) {
    for i in 0..n {
        ledger
            .create_child(
                &format!("{prefix}{i:05}"),
                &format!("creator{:03}", i % 100),
                "bench",
            )
            .expect("create");
    }
}

/// How many WAL frames (pages) one create and one raise commit, counted by checkpointing before
/// and after ten of each; and a first read at depth 64 with `synchronous=NORMAL`, so without
/// its sync: what that read costs the CPU.
fn pages_and_depth(dir: &std::path::Path) {
    let path = dir.join("pages.db");
    let config = unbounded_normal();
    let ledger = Ledger::open_with(&path, config).expect("ledger");
    support::trusted_creators(&ledger);
    children_of_creators(&ledger, "w", 2_000);
    let raw = rusqlite::Connection::open(&path).expect("raw");
    // Frames in the WAL since the last reset; TRUNCATE then resets it.
    let frames = || -> i64 {
        let logged: i64 = raw
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .expect("checkpoint");
        raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
        .expect("truncate");
        logged
    };
    frames();
    children_of_creators(&ledger, "x", 10);
    println!("WAL frames per create: {:.1}", frames() as f64 / 10.0);
    let secret = session_ledger::Raise {
        taint: Some(session_ledger::Taint::Secret),
        untrusted: false,
    };
    for i in 0..10 {
        ledger
            .raise(&format!("creator{i:03}"), secret, "bench")
            .expect("raise");
    }
    println!("WAL frames per raise: {:.1}", frames() as f64 / 10.0);

    ledger.create_root("deep", "bench").expect("root");
    let chains = 70;
    for chain in 0..chains {
        let mut parent = "deep".to_owned();
        for depth in 1..=64 {
            let id = format!("d{chain}-{depth}");
            ledger.create_child(&id, &parent, "bench").expect("chain");
            parent = id;
        }
    }
    let mut next = 0;
    let us = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..10 {
                    let state = ledger.state(&format!("d{next}-64")).expect("first read");
                    assert!(state.known);
                    next += 1;
                }
                t.elapsed().as_secs_f64() * 1e6 / 10.0
            })
            .collect(),
    );
    println!("first read at depth 64, synchronous=NORMAL: {us:.0} µs");
}

/// What keeping the WAL file costs an open: a ledger written by 3,000 creates is closed, then
/// opened and read once, seven times, with and without `Config::keep_wal_file`. With it, the
/// first connection of each open reads the kept WAL back (SQLite's recovery).
fn opening(dir: &std::path::Path) {
    let build = |name: &str, keep: bool| {
        let path = dir.join(name);
        let config = unbounded_normal().keep_wal_file(keep);
        let ledger = Ledger::open_with(&path, config).expect("open");
        ledger.create_root("r", "bench").expect("root");
        for i in 0..3_000 {
            ledger
                .create_child(&format!("c{i:05}"), "r", "bench")
                .expect("create");
        }
        path
    };
    for (name, keep) in [("kept.db", true), ("deleted.db", false)] {
        let path = build(name, keep);
        let wal = std::fs::metadata(format!("{}-wal", path.display())).map_or(0, |m| m.len());
        let times: Vec<f64> = (0..7)
            .map(|_| {
                let t = Instant::now();
                let ledger = Ledger::open_with(
                    &path,
                    Config::default()
                        .create_if_missing(true)
                        .keep_wal_file(keep),
                )
                .expect("open");
                ledger.state("c00001").expect("read");
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        println!(
            "open + first read, keep_wal_file={keep} (WAL left by the last close: {} KiB): {:.2} ms",
            wal / 1024,
            median(times)
        );
    }
}
