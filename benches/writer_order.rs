//! The order of a SQLite ledger's writers: threads sharing one handle, which serves its writers
//! first come first served (`src/storage/sqlite/writers.rs`), against the same threads each with
//! a handle of its own, whose writers meet only SQLite's busy handler (sleeps of 1, 2, 5, ... up
//! to 100 ms between tries), as every writer did before the queue.
//!
//! ```text
//! cargo bench --bench writer_order           # WRITER_ORDER_ROUNDS=N to change the 3 rounds
//! ```
//!
//! Each round, on a new ledger of 8 trusted roots, runs for 4 s: 8 threads of `create_child`
//! (each under a root of its own), alone, and then with 8 more threads of `decide_and_record`
//! beside them; both ways (one shared handle, a handle each), in an order that alternates from
//! round to round. It prints each run's rates and the longest single call, and the medians.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use session_ledger::{AskedBy, Config, Ledger, PostureLevel};

const THREADS: usize = 8;
const SECONDS: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Handles {
    /// One handle for every thread: its writers queue in order.
    Shared,
    /// A handle per thread: writers meet SQLite's busy handler.
    EachItsOwn,
}

struct Outcome {
    creates_per_s: f64,
    records_per_s: f64,
    longest: Duration,
}

fn config() -> Config {
    Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

fn run(handles: Handles, recorders: bool, round: usize) -> Outcome {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("ledger.db");
    let setup = Ledger::open_with(&path, config()).expect("a new ledger");
    for w in 0..THREADS {
        setup.create_root(&format!("w{w}"), "op").expect("a root");
        setup
            .grant(&format!("w{w}"), PostureLevel::Trust, "op")
            .expect("trust");
    }
    let writers = 2 * THREADS;
    let opened: Vec<Ledger> = match handles {
        Handles::Shared => vec![setup],
        Handles::EachItsOwn => (0..writers)
            .map(|_| Ledger::open_with(&path, config()).expect("a handle"))
            .collect(),
    };
    let handle = |i: usize| &opened[i % opened.len()];
    let (created, recorded) = (AtomicU64::new(0), AtomicU64::new(0));
    let longest = Mutex::new(Duration::ZERO);
    let started = Instant::now();
    let timed = |f: &mut dyn FnMut()| {
        let at = Instant::now();
        f();
        let took = at.elapsed();
        let mut most = longest.lock().expect("the longest call");
        *most = (*most).max(took);
    };
    let (created_ref, recorded_ref, timed_ref) = (&created, &recorded, &timed);
    std::thread::scope(|s| {
        for w in 0..THREADS {
            let (ledger, created, timed) = (handle(w), created_ref, timed_ref);
            s.spawn(move || {
                let mut n = 0;
                while started.elapsed() < Duration::from_secs(SECONDS) {
                    let child = format!("w{w}.r{round}.{n}");
                    timed(&mut || {
                        ledger
                            .create_child(&child, &format!("w{w}"), "op")
                            .expect("create");
                    });
                    created.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
            });
            if recorders {
                let (ledger, recorded, timed) = (handle(THREADS + w), recorded_ref, timed_ref);
                s.spawn(move || {
                    let asked = AskedBy::actor("bench");
                    while started.elapsed() < Duration::from_secs(SECONDS) {
                        timed(&mut || {
                            ledger
                                .decide_and_record(&format!("w{w}"), "make", false, &asked)
                                .expect("decide and record");
                        });
                        recorded.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    Outcome {
        creates_per_s: created.into_inner() as f64 / seconds,
        records_per_s: recorded.into_inner() as f64 / seconds,
        longest: longest.into_inner().expect("the longest call"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("WRITER_ORDER_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("WRITER_ORDER_ROUNDS: a number"))
        .unwrap_or(3);
    let mut results: Vec<(Handles, bool, Outcome)> = Vec::new();
    for round in 0..rounds {
        let mut order = [Handles::Shared, Handles::EachItsOwn];
        if round % 2 == 1 {
            order.reverse();
        }
        for handles in order {
            for recorders in [false, true] {
                let outcome = run(handles, recorders, round);
                println!(
                    "round {round} {handles:?} recorders={recorders}: creates {:.0}/s, records {:.0}/s, longest call {:.1} ms",
                    outcome.creates_per_s,
                    outcome.records_per_s,
                    outcome.longest.as_secs_f64() * 1e3
                );
                results.push((handles, recorders, outcome));
            }
        }
    }
    for handles in [Handles::Shared, Handles::EachItsOwn] {
        for recorders in [false, true] {
            let of: Vec<&Outcome> = results
                .iter()
                .filter(|(h, r, _)| *h == handles && *r == recorders)
                .map(|(_, _, o)| o)
                .collect();
            println!(
                "median {handles:?} recorders={recorders}: creates {:.0}/s, records {:.0}/s, longest call {:.1} ms",
                median(of.iter().map(|o| o.creates_per_s).collect()),
                median(of.iter().map(|o| o.records_per_s).collect()),
                median(of.iter().map(|o| o.longest.as_secs_f64() * 1e3).collect()),
            );
        }
    }
}
