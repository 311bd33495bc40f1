//! A durable raise that changes the label: `Ledger::raise` of a materialized `private` session
//! to `secret`, one `synchronous=FULL` transaction with the label update and its `label.raise`
//! audit row.
//!
//! Inputs: a root `root` and 10,000 sessions below it (fan-out 10), built before measuring
//! through the fast building handle (see `benches/support/mod.rs`). The `iter_batched` setup
//! (not timed) creates a fresh child of one of those sessions, round-robin, reads it once so
//! its label is materialized (`private`, inherited), and fsyncs the WAL. The timed call raises
//! that session through a handle opened with the default `Config`; every raise changes the
//! label, so every one writes.
//!
//! `cargo bench --bench raise`

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use session_ledger::{Ledger, Raise, Taint};

const BASE_SESSIONS: usize = 10_000;

fn raise(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let mut sessions = support::FreshSessions::new(&path, BASE_SESSIONS, "r");
    let ledger = Ledger::open(&path).expect("open the measured handle");

    let mut fresh = || {
        let id = sessions.next();
        assert_eq!(sessions.builder().state(&id).unwrap().taint, Taint::Private);
        support::flush_wal(&path);
        id
    };
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };

    c.bench_function("raise/private_to_secret", |b| {
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
    drop(ledger);
    drop(sessions);
    drop(dir);
}

criterion_group!(benches, raise);
criterion_main!(benches);
