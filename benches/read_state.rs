//! `Ledger::state` of a materialized session: the dashboard's plain read. No write happens.
//!
//! Input, built once per engine before measuring (through the fast building handle, see
//! `benches/support/mod.rs`): a root `root` granted `trust`, and 10,000 sessions below it in a
//! tree of fan-out 10 created breadth-first, so each holds an inherited posture; every one is
//! then read once, which materializes its label. The ledger is settled (SQLite: checkpointed;
//! PostgreSQL: copied into its own schema, vacuumed and analyzed) and opened with the default
//! `Config`. Each measured call reads the next of the 10,000 ids, round-robin, so successive
//! reads touch different rows (all pages are in the OS page cache; SQLite's connection holds
//! what fits in its 16 MiB cache, PostgreSQL's shared buffers the rest).
//!
//! `cargo bench --bench read_state`: `read_state/sqlite/materialized`, and
//! `read_state/postgres/materialized` when `SESSION_LEDGER_BENCH_POSTGRES` names a server
//! (`scripts/with-postgres --durable cargo bench --bench read_state`).

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use support::{Engine, Place};

const SESSIONS: usize = 10_000;

fn read_state_on(c: &mut Criterion, engine: Engine) {
    let (place, ids) = Place::built(engine, |path| {
        support::trusted_materialized_tree(path, SESSIONS)
    });
    let ledger = place.open();
    for id in &ids {
        let state = ledger.state(id).unwrap();
        assert!(
            state.materialized.is_some() && state.trust,
            "{id} is materialized and trusted"
        );
    }

    let mut next = 0;
    let mut group = c.benchmark_group("read_state");
    group.bench_function(format!("{}/materialized", engine.name()), |b| {
        b.iter(|| {
            let id = &ids[next];
            next = (next + 1) % ids.len();
            black_box(ledger.state(black_box(id)).unwrap())
        })
    });
    group.finish();
    drop(ledger);
    drop(place);
}

fn read_state(c: &mut Criterion) {
    for engine in support::engines() {
        read_state_on(c, engine);
    }
}

criterion_group!(benches, read_state);
criterion_main!(benches);
