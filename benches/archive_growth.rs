//! A ledger under a retention policy (docs/performance.md, "Archiving"): `GROWTH_DAYS` days
//! (default 30) of `GROWTH_SESSIONS` sessions a day (default 100,000), with an archive at the
//! end of each day of the trees that ended more than `GROWTH_KEEP` days ago (default 7).
//!
//! ```text
//! cargo bench --bench archive_growth                                   # SQLite
//! BENCH_ENGINES=postgres scripts/with-postgres --durable cargo bench --bench archive_growth
//! GROWTH_DAYS=10 GROWTH_SESSIONS=20000 cargo bench --bench archive_growth   # a short run
//! ```
//!
//! A day: trees of five sessions (a root and four children); each child's label read (so it is
//! materialized), one decision recorded per tree, every session ended; a checkpoint signed at
//! the day's end; then the archive of the trees that ended before the cut-off (the start of
//! the day `GROWTH_KEEP - 1` days back) and of the trail up to the checkpoint signed before it.
//! The ledger's clock is a `ManualClock`, one simulated day a day. The writes that build a day
//! do not wait for the disk (SQLite's `synchronous=NORMAL`, PostgreSQL's
//! `synchronous_commit=off`: the sim measures growth, not syncs); the operations measured, the
//! archive and the writer beside it run on handles with the default `Config`, every commit
//! synced.
//!
//! Measured on the first day with an archive and on the last, after that day's archive, each
//! the median of its calls: `create_root`, `decide` on a live session, `state` of a
//! materialized session, `tree` of a five-session tree, and `verify_checkpoint --fast` against
//! the day before's checkpoint (which reads the day's rows). Each day prints the archive's
//! time, the file's size and its pages in use, the longest the archive held the write lock at a
//! time (`ArchiveRun::longest_batch_us`), and what a writer creating (and ending) a root every
//! 5 ms beside the archive waited for each create (the longest, the 99th percentile, how many
//! over 50 ms), against the same writer beside nothing for as long; the kernel's dirty pages are
//! written back before each of the two (`sync`), so neither pays for the writes before it.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use session_ledger::{
    ArchiveRequest, CheckpointOptions, Config, Ledger, ManualClock, ReadOnly, SignerKey,
};
use support::{Engine, Place, ACTOR};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The nearest-rank `p`-th percentile of `times` ([`support::percentile`]); zero of none.
fn percentile_of(times: &[Duration], p: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    let secs: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    Duration::from_secs_f64(support::percentile(&secs, p))
}

/// What one measured day gave, each a median.
#[derive(Debug, Clone, Copy)]
struct Costs {
    create: Duration,
    decide: Duration,
    state: Duration,
    tree: Duration,
    verify: Duration,
}

/// The operations of [`Costs`], on `ledger`, on the trees of `day`, against `previous`.
fn measure(ledger: &Ledger, day: usize, trees: usize, previous: &str, key: &SignerKey) -> Costs {
    let time = |n: usize, mut call: Box<dyn FnMut(usize) + '_>| -> Duration {
        let times: Vec<Duration> = (0..n).map(|i| support::timed(|| call(i)).0).collect();
        percentile_of(&times, 50.0)
    };
    let create = time(
        1_000,
        Box::new(|i| {
            ledger
                .create_root(&format!("m{day}-{i}"), ACTOR)
                .expect("create");
        }),
    );
    for i in 0..1_000 {
        ledger.end(&format!("m{day}-{i}"), ACTOR).expect("end");
    }
    let decide = time(
        2_000,
        Box::new(|_| {
            ledger
                .decide("keeper-1", "git status", ReadOnly::Classify)
                .expect("decide");
        }),
    );
    let state = time(
        2_000,
        Box::new(|i| {
            ledger
                .state(&format!("d{day}-t{}-c1", i % trees))
                .expect("state");
        }),
    );
    let tree = time(
        500,
        Box::new(|i| {
            ledger
                .tree(&format!("d{day}-t{}", i % trees))
                .expect("tree");
        }),
    );
    let mut fast = CheckpointOptions::default();
    fast.fast = true;
    let verify = time(
        3,
        Box::new(|_| {
            let v = ledger
                .verify_checkpoint(previous, &key.verifier(), &fast)
                .expect("verify");
            assert!(v.ok, "{:?}", v.findings);
        }),
    );
    Costs {
        create,
        decide,
        state,
        tree,
        verify,
    }
}

/// One simulated day of `trees` trees on `builder`, the clock moved along it.
fn live_a_day(builder: &Ledger, clock: &ManualClock, day: usize, trees: usize) {
    // Five steps a tree, spread over the day's 24 hours.
    let step = TimeDelta::milliseconds((86_400_000 / (trees as i64 * 5 + 1)).max(1));
    let asked = session_ledger::AskedBy {
        actor: "claude-code",
        tool_use_id: None,
    };
    for t in 0..trees {
        let root = format!("d{day}-t{t}");
        builder.create_root(&root, ACTOR).expect("root");
        for c in 1..=4 {
            let child = format!("{root}-c{c}");
            builder.create_child(&child, &root, ACTOR).expect("child");
            builder.state(&child).expect("state");
            clock.advance(step);
        }
        builder
            .decide_and_record(&format!("{root}-c1"), "ls", ReadOnly::Classify, &asked)
            .expect("decide");
        for c in 1..=4 {
            builder.end(&format!("{root}-c{c}"), ACTOR).expect("end");
        }
        builder.end(&root, ACTOR).expect("end");
        clock.advance(step);
    }
}

/// The ledger's pages in use, in bytes: a SQLite file's size less its free pages; on
/// PostgreSQL the tables' and indexes' size, free space within them included.
fn in_use(place: &Place) -> u64 {
    if place.engine() == Engine::Postgres {
        return place.size_bytes();
    }
    let conn = rusqlite::Connection::open_with_flags(
        place.path(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open");
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .expect("page size");
    let count: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .expect("pages");
    let free: i64 = conn
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .expect("free pages");
    ((count - free) * page) as u64
}

/// How often the writer beside the archive creates (and ends) a root: a live load of 200
/// sessions a second, far above the day's 100,000 (1.2 a second), in another handle as another
/// process would be.
const BESIDE_EVERY: Duration = Duration::from_millis(5);

/// What a writer beside waited, per create.
struct Waits {
    longest: Duration,
    p99: Duration,
    over_50ms: usize,
    count: usize,
}

/// What a writer creating roots on `place` (opened with `config`, the simulation's clock
/// included) waited for each, while `during` runs. The kernel's dirty pages are written back
/// first (`sync`), so that neither phase pays for the writes of the one before it.
fn waits(place: &Place, config: &Config, day: usize, what: &str, during: impl FnOnce()) -> Waits {
    let synced = std::process::Command::new("sync").status().expect("sync");
    assert!(synced.success(), "sync failed");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let ledger = place.open_with(config.clone());
        let stop = Arc::clone(&stop);
        let what = what.to_owned();
        std::thread::spawn(move || {
            let mut waits = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let started = Instant::now();
                ledger
                    .create_root(&format!("w{day}-{what}-{i}"), ACTOR)
                    .expect("create beside");
                waits.push(started.elapsed());
                ledger
                    .end(&format!("w{day}-{what}-{i}"), ACTOR)
                    .expect("end");
                i += 1;
                std::thread::sleep(BESIDE_EVERY);
            }
            waits
        })
    };
    during();
    stop.store(true, Ordering::SeqCst);
    let waits = writer.join().expect("writer");
    Waits {
        longest: waits.iter().copied().max().unwrap_or_default(),
        p99: percentile_of(&waits, 99.0),
        over_50ms: waits
            .iter()
            .filter(|w| **w > Duration::from_millis(50))
            .count(),
        count: waits.len(),
    }
}

fn main() {
    let days = setting("GROWTH_DAYS", 30);
    let sessions = setting("GROWTH_SESSIONS", 100_000);
    let keep = setting("GROWTH_KEEP", 7);
    for engine in support::engines() {
        simulate(engine, days, sessions, keep);
    }
}

/// The simulation of the module comment, on `engine`.
fn simulate(engine: Engine, days: usize, sessions: usize, keep: usize) {
    let trees = sessions / 5;
    let start: DateTime<Utc> = "2026-01-01T00:00:00.000Z".parse().expect("a time");
    let clock = Arc::new(ManualClock::new(start));
    let place = Place::new(engine);
    let config = Config::default()
        .create_if_missing(true)
        .clock(clock.clone())
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1));
    let builder = place.open_unsynced(config.clone());
    let ledger = place.open_with(config.clone());
    let key = SignerKey::generate("example.org/ledger").expect("key");
    // A session that lives through every day, for `decide`.
    builder.create_root("keeper", ACTOR).expect("keeper");
    builder
        .create_child("keeper-1", "keeper", ACTOR)
        .expect("keeper-1");
    let dir = tempfile::tempdir().expect("a folder for the archives");
    println!(
        "{}: {days} days of {sessions} sessions ({trees} trees of 5), archived after {keep} days",
        engine.name()
    );
    println!(
        "day  archive_s  trees  sessions  audit_rows  file_MiB  in_use_MiB  held_ms  \
         beside: longest_ms  p99_ms  over_50ms/creates   quiet: longest_ms  p99_ms  over_50ms/creates"
    );
    let mut previous = builder
        .checkpoint(&key, None, ACTOR)
        .expect("first checkpoint")
        .note;
    let mut measured: Vec<(usize, Costs)> = Vec::new();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for day in 1..=days {
        let day_start = start + TimeDelta::days(day as i64 - 1);
        // The day starts at its midnight, whatever the day before left on the clock.
        let now = session_ledger::Clock::now(clock.as_ref());
        if now < day_start {
            clock.advance(day_start - now);
        }
        live_a_day(&builder, &clock, day, trees);
        let signed = builder.checkpoint(&key, None, ACTOR).expect("checkpoint");
        if day <= keep {
            previous = signed.note;
            continue;
        }
        // The trees that ended before the start of the day `keep - 1` days back.
        let cut = day_start - TimeDelta::days(keep as i64 - 1);
        let file = dir.path().join(format!("archive-day-{day}.db"));
        let mut took = Duration::ZERO;
        let mut made = None;
        let mut held_us = 0;
        let beside = waits(&place, &config, day, "archive", || {
            let started = Instant::now();
            let run = ledger
                .archive(&file, &ArchiveRequest::before(cut), ACTOR)
                .expect("archive");
            took = started.elapsed();
            held_us = run.longest_batch_us;
            made = run.made;
        });
        let quiet = waits(&place, &config, day, "quiet", || std::thread::sleep(took));
        let made = made.expect("a day's archive");
        println!(
            "{day:>3}  {:>9.2}  {:>5}  {:>8}  {:>10}  {:>8.1}  {:>10.1}  {:>7.1}  \
             {:>18.2}  {:>6.2}  {:>8}/{:<8}  {:>17.2}  {:>6.2}  {:>8}/{:<8}",
            took.as_secs_f64(),
            made.trees,
            made.sessions,
            made.trail_size - made.trail_from,
            place.size_bytes() as f64 / 1_048_576.0,
            in_use(&place) as f64 / 1_048_576.0,
            held_us as f64 / 1e3,
            ms(beside.longest),
            ms(beside.p99),
            beside.over_50ms,
            beside.count,
            ms(quiet.longest),
            ms(quiet.p99),
            quiet.over_50ms,
            quiet.count,
        );
        if day == keep + 1 || day == days {
            measured.push((day, measure(&ledger, day, trees, &previous, &key)));
        }
        previous = signed.note;
    }
    println!("\nmedians, ms        create    decide     state      tree  verify_fast");
    for (day, c) in &measured {
        println!(
            "day {day:<14} {:>7.3}  {:>8.4}  {:>8.4}  {:>8.4}  {:>11.1}",
            ms(c.create),
            ms(c.decide),
            ms(c.state),
            ms(c.tree),
            ms(c.verify)
        );
    }
    if let [(first, a), (last, b)] = measured.as_slice() {
        let r = |x: Duration, y: Duration| y.as_secs_f64() / x.as_secs_f64();
        println!(
            "day {last} / day {first}:  create {:.2}  decide {:.2}  state {:.2}  tree {:.2}  verify_fast {:.2}",
            r(a.create, b.create),
            r(a.decide, b.decide),
            r(a.state, b.state),
            r(a.tree, b.tree),
            r(a.verify, b.verify)
        );
    }
}
