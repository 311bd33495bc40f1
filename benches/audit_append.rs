//! The cost of one audited change: a small change that writes exactly one audit row (with its
//! SHA3-256 link in the hash chain) in the same `synchronous=FULL` transaction.
//!
//! * `audit_append/session_end`: `Ledger::end` of a live session that spawned nothing: the
//!   session row's `ended_at`, and one `session.end` audit row.
//! * `audit_append/pattern_add`: `Ledger::add_pattern` of a new pattern on a live session:
//!   one `command_patterns` row, and one `pattern.add` audit row.
//!
//! Both are whole calls (validation, the live-session check, the change, the audit row and the
//! commit's fsync), not the audit insert alone: they are the cheapest changes the API offers,
//! so they bound what appending to the trail costs a caller. Neither call's cost depends on
//! the session's history, but each iteration still gets a fresh session.
//!
//! Inputs: a root `root` and 10,000 sessions below it (fan-out 10), built before measuring
//! through the fast building handle (see `benches/support/mod.rs`). The `iter_batched` setup
//! (not timed) creates a fresh live child of one of those sessions, round-robin, and on SQLite
//! fsyncs the WAL. The timed call goes through a handle opened with the default `Config`.
//!
//! `cargo bench --bench audit_append`: `audit_append/sqlite/...`, and
//! `audit_append/postgres/...` when `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use session_ledger::Ledger;
use support::Engine;

const BASE_SESSIONS: usize = 10_000;
const PATTERN: &str = "npm test *";

fn audit_append_on(c: &mut Criterion, engine: Engine) {
    let mut sessions = support::FreshSessions::new(engine, BASE_SESSIONS, "a");
    let ledger = sessions.place().open();
    let mut fresh = || sessions.next();

    // Each measured call appends exactly one audit row.
    let changes: [fn(&Ledger, &str); 2] = [
        |l, id| drop(l.end(id, support::ACTOR).unwrap()),
        |l, id| assert!(l.add_pattern(id, PATTERN, support::ACTOR).unwrap()),
    ];
    for change in changes {
        let id = fresh();
        let before = ledger.audit_head().unwrap().seq;
        change(&ledger, &id);
        assert_eq!(ledger.audit_head().unwrap().seq, before + 1);
    }

    let mut group = c.benchmark_group("audit_append");
    group.bench_function(format!("{}/session_end", engine.name()), |b| {
        b.iter_batched(
            &mut fresh,
            |id| black_box(ledger.end(&id, support::ACTOR).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function(format!("{}/pattern_add", engine.name()), |b| {
        b.iter_batched(
            &mut fresh,
            |id| black_box(ledger.add_pattern(&id, PATTERN, support::ACTOR).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.finish();
    drop(ledger);
    drop(sessions);
}

fn audit_append(c: &mut Criterion) {
    for engine in support::engines() {
        audit_append_on(c, engine);
    }
}

criterion_group!(benches, audit_append);
criterion_main!(benches);
