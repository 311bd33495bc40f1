//! `Ledger::state` of a materialized session: the dashboard's plain read. No write happens.
//!
//! Input, built once before measuring (through the fast building handle, see
//! `benches/support/mod.rs`): a root `root` granted `trust`, and 10,000 sessions below it in a
//! tree of fan-out 10 created breadth-first, so each holds an inherited posture; every one is
//! then read once, which materializes its label. The WAL is checkpointed, and the file is
//! reopened with the default `Config`. Each measured call reads the next of the 10,000 ids,
//! round-robin, so successive reads touch different rows (all pages are in the OS page cache;
//! the connection's own cache holds what fits in SQLite's default 2 MB).
//!
//! `cargo bench --bench read_state`

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use session_ledger::Ledger;

const SESSIONS: usize = 10_000;

fn read_state(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let ids = support::trusted_materialized_tree(&path, SESSIONS);
    let ledger = Ledger::open(&path).expect("open the measured handle");
    for id in &ids {
        let state = ledger.state(id).unwrap();
        assert!(
            state.materialized.is_some() && state.trust,
            "{id} is materialized and trusted"
        );
    }

    let mut next = 0;
    c.bench_function("read_state/materialized", |b| {
        b.iter(|| {
            let id = &ids[next];
            next = (next + 1) % ids.len();
            black_box(ledger.state(black_box(id)).unwrap())
        })
    });
    drop(ledger);
    drop(dir);
}

criterion_group!(benches, read_state);
criterion_main!(benches);
