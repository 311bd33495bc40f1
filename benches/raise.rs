//! A durable raise that changes the label: `Ledger::raise` of a materialized `private` session
//! to `secret`, one `synchronous=FULL` transaction with the label update and its `label.raise`
//! audit row.
//!
//! Inputs: a root `root` and 10,000 sessions below it (fan-out 10), built before measuring
//! through the fast building handle (see `benches/support/mod.rs`). The `iter_batched` setup
//! (not timed) creates a fresh child of one of those sessions, round-robin, reads it once so
//! its label is materialized (`private`, inherited), and on SQLite fsyncs the WAL. The timed
//! call raises that session through a handle opened with the default `Config`; every raise
//! changes the label, so every one writes.
//!
//! `cargo bench --bench raise`: `raise/sqlite/private_to_secret`, and
//! `raise/postgres/private_to_secret` when `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use session_ledger::{Raise, Taint};
use support::Engine;

const BASE_SESSIONS: usize = 10_000;

fn raise_on(c: &mut Criterion, engine: Engine) {
    let mut sessions = support::FreshSessions::new(engine, BASE_SESSIONS, "r");
    let ledger = sessions.place().open();

    let mut fresh = || {
        let id = sessions.next();
        assert_eq!(sessions.builder().state(&id).unwrap().taint, Taint::Private);
        sessions.place().flush();
        id
    };
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };

    let mut group = c.benchmark_group("raise");
    group.bench_function(format!("{}/private_to_secret", engine.name()), |b| {
        b.iter_batched(
            &mut fresh,
            |id| {
                let outcome = ledger.raise(&id, secret, support::ACTOR).unwrap();
                assert!(outcome.changed);
                black_box(outcome)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    drop(ledger);
    drop(sessions);
}

fn raise(c: &mut Criterion) {
    for engine in support::engines() {
        raise_on(c, engine);
    }
}

criterion_group!(benches, raise);
criterion_main!(benches);
