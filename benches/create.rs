//! `Ledger::create_child` under a trusted creator: in one durable transaction, the creation
//! bounds (depth, live children, creation rate), the session row, the copy of the creator's
//! `trust` posture and the `session.create` audit row.
//!
//! Input, built before measuring through the fast building handle (see
//! `benches/support/mod.rs`): a root `conductor` granted `trust`, and 10,000 sessions below it
//! (fan-out 10) so the tables are not trivially small. Creators are children of `conductor`,
//! so each holds an inherited `trust`; the `iter_batched` setup hands out a fresh child id and
//! a creator, and opens a new creator (building handle, not timed) after every 50 children
//! ([`support::TrustedCreators`]). So the measured handle keeps the default `Config` bounds and
//! never hits them: 50 is the default `max_live_children` (the check refuses only at 50 live
//! children) and the default rate bound is 200 per creator per minute.
//!
//! A second case, `create/ENGINE/creator_with_10000_ended_children`, measures a create by a
//! creator that has made and ended 10,000 children before: the cost of counting rule S2's live
//! children must not grow with the ones that ended.
//!
//! `cargo bench --bench create`: `create/sqlite/...`, and `create/postgres/...` when
//! `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use session_ledger::{Config, PostureLevel};
use support::{Engine, Place, TrustedCreators};

const BASE_SESSIONS: usize = 10_000;

fn create_on(c: &mut Criterion, engine: Engine) {
    let (place, ()) = Place::built(engine, |path| {
        let builder = support::builder(path);
        builder.create_root("conductor", support::ACTOR).unwrap();
        builder
            .grant("conductor", PostureLevel::Trust, support::ACTOR)
            .unwrap();
        support::grow_tree(&builder, "conductor", BASE_SESSIONS, 10);
    });
    let builder = place.builder();
    let ledger = place.open();
    let mut creates = TrustedCreators::new(&builder, &place, "conductor");

    let mut group = c.benchmark_group("create");
    group.bench_function(format!("{}/trusted_creator", engine.name()), |b| {
        b.iter_batched(
            || creates.next(),
            |(creator, child)| {
                let created = ledger
                    .create_child(&child, &creator, support::ACTOR)
                    .unwrap();
                assert!(created.inherited_trust);
                black_box(created)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    drop(ledger);
    drop(builder);
    drop(place);
}

/// A create by a long-lived creator: `veteran` has made and ended `ENDED` children, and the
/// measured create is its only live child (the setup ends the previous one through the
/// building handle). Rule S2 counts the creator's live children on every create; this shows
/// whether that count grows with the children that already ended.
fn create_by_a_creator_with_ended_children(c: &mut Criterion, engine: Engine) {
    const ENDED: usize = 10_000;
    let (place, ()) = Place::built(engine, |path| {
        let builder = support::builder(path);
        builder.create_root("veteran", support::ACTOR).unwrap();
        builder
            .grant("veteran", PostureLevel::Trust, support::ACTOR)
            .unwrap();
        for i in 0..ENDED {
            let child = format!("old{i:05}");
            builder
                .create_child(&child, "veteran", support::ACTOR)
                .unwrap();
            builder.end(&child, support::ACTOR).unwrap();
        }
    });
    let builder = place.builder();
    // Default bounds, but the rate window is one millisecond: the veteran made its 10,000
    // children within the last minute, and a window holding them would measure the rate count
    // (bounded by the rate limit in real use) instead of the live count.
    let ledger = place.open_with(
        Config::default()
            .create_if_missing(true)
            .creation_rate(u32::MAX, std::time::Duration::from_millis(1)),
    );
    let mut made = 0_usize;
    let mut group = c.benchmark_group("create");
    let name = format!("{}/creator_with_10000_ended_children", engine.name());
    group.bench_function(name, |b| {
        b.iter_batched(
            || {
                if made > 0 {
                    builder
                        .end(&format!("new{:06}", made - 1), support::ACTOR)
                        .unwrap();
                    place.flush();
                }
                made += 1;
                format!("new{:06}", made - 1)
            },
            |child| {
                let created = ledger
                    .create_child(&child, "veteran", support::ACTOR)
                    .unwrap();
                assert!(created.inherited_trust);
                black_box(created)
            },
            // One input per batch: each setup ends the child the previous iteration made.
            BatchSize::PerIteration,
        )
    });
    group.finish();
    drop(ledger);
    drop(builder);
    drop(place);
}

fn create(c: &mut Criterion) {
    for engine in support::engines() {
        create_on(c, engine);
        create_by_a_creator_with_ended_children(c, engine);
    }
}

criterion_group!(benches, create);
criterion_main!(benches);
