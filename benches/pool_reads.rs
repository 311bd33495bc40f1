//! Reads through the connection pool from 1 and 2 threads: `Ledger::state` of materialized
//! sessions, with the `Ledger` in an `Arc` shared by the threads, each call borrowing a pooled
//! connection (default `Config`: up to 8). Reported per read: the wall time of a batch of
//! reads divided by the number of reads in it, across all threads (criterion's throughput line
//! gives the same as reads per second). With 2 threads on 2 cores, perfect scaling would halve
//! the 1-thread figure.
//!
//! Input, built once before measuring through the fast building handle (see
//! `benches/support/mod.rs`): the same ledger as `benches/read_state.rs`, a root `root`
//! granted `trust` and 10,000 sessions below it (fan-out 10), each read once so its label is
//! materialized; then settled (SQLite: checkpointed; PostgreSQL: copied into its own schema,
//! vacuumed and analyzed) and opened with the default `Config`. Each thread reads the ids
//! round-robin from its own starting point. On PostgreSQL each pooled connection is a server
//! process of its own, so the 2-thread figure also shows whether the server's side scales.
//!
//! Timing (`iter_custom`): for a batch of N reads, the threads are spawned, take one pooled
//! connection each (a warm-up read), and meet at a barrier; the clock starts when the main
//! thread passes the barrier and stops when the last thread has done its share of N and been
//! joined. Thread creation is outside the timed span; joining the threads is inside it.
//!
//! `cargo bench --bench pool_reads`: `pool_reads/sqlite/threads/N`, and
//! `pool_reads/postgres/threads/N` when `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use session_ledger::Ledger;
use support::{Engine, Place};

const SESSIONS: usize = 10_000;
const THREADS: [usize; 2] = [1, 2];

/// Does `reads` state reads on `threads` threads sharing `ledger`; returns the wall time.
fn timed_reads(
    ledger: &Arc<Ledger>,
    ids: &Arc<Vec<String>>,
    threads: usize,
    reads: u64,
) -> Duration {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (ledger, ids, barrier) =
                (Arc::clone(ledger), Arc::clone(ids), Arc::clone(&barrier));
            // Split `reads` as evenly as possible.
            let share = reads / threads as u64 + u64::from((t as u64) < reads % threads as u64);
            std::thread::spawn(move || {
                let mut next = t * ids.len() / threads;
                ledger.state(&ids[next]).unwrap();
                barrier.wait();
                for _ in 0..share {
                    next = (next + 1) % ids.len();
                    black_box(ledger.state(black_box(&ids[next])).unwrap());
                }
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    for handle in handles {
        handle.join().expect("a reader thread panicked");
    }
    started.elapsed()
}

fn pool_reads_on(c: &mut Criterion, engine: Engine) {
    let (place, ids) = Place::built(engine, |path| {
        support::trusted_materialized_tree(path, SESSIONS)
    });
    let ledger = Arc::new(place.open());
    for id in &ids {
        assert!(ledger.state(id).unwrap().materialized.is_some());
    }
    let ids = Arc::new(ids);

    let mut group = c.benchmark_group("pool_reads");
    group.throughput(Throughput::Elements(1));
    for threads in THREADS {
        group.bench_with_input(
            BenchmarkId::new(format!("{}/threads", engine.name()), threads),
            &threads,
            |b, &threads| b.iter_custom(|reads| timed_reads(&ledger, &ids, threads, reads)),
        );
    }
    group.finish();
    drop(ledger);
    drop(place);
}

fn pool_reads(c: &mut Criterion) {
    for engine in support::engines() {
        pool_reads_on(c, engine);
    }
}

criterion_group!(benches, pool_reads);
criterion_main!(benches);
