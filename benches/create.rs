//! `Ledger::create_child` under a trusted creator: in one `synchronous=FULL` transaction, the
//! creation bounds (depth, live children, creation rate), the session row, the copy of the
//! creator's `trust` posture and the `session.create` audit row.
//!
//! Input, built before measuring through the fast building handle (see
//! `benches/support/mod.rs`): a root `conductor` granted `trust`, and 10,000 sessions below it
//! (fan-out 10) so the tables are not trivially small. Creators are children of `conductor`,
//! so each holds an inherited `trust`; the `iter_batched` setup hands out a fresh child id and
//! a creator, and opens a new creator (building handle, WAL fsynced, not timed) after every
//! 50 children. So the measured handle keeps the default `Config` bounds and never hits them:
//! 50 is the default `max_live_children` (the check refuses only at 50 live children) and
//! the default rate bound is 200 per creator per minute.
//!
//! A second case, `create/creator_with_10000_ended_children`, measures a create by a creator
//! that has made and ended 10,000 children before: the cost of counting rule S2's live
//! children must not grow with the ones that ended.
//!
//! `cargo bench --bench create`

mod support;

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use session_ledger::{Config, Ledger, PostureLevel};

const BASE_SESSIONS: usize = 10_000;

/// Hands out (creator, new child id) pairs, opening a new trusted creator when one has
/// `Config::default().max_live_children` children.
struct Creates<'a> {
    builder: &'a Ledger,
    path: &'a Path,
    per_creator: usize,
    made: usize,
    creator: String,
}

impl Creates<'_> {
    fn next(&mut self) -> (String, String) {
        if self.made % self.per_creator == 0 {
            self.creator = format!("creator{}", self.made / self.per_creator);
            let created = self
                .builder
                .create_child(&self.creator, "conductor", support::ACTOR)
                .unwrap();
            assert!(created.inherited_trust);
            support::flush_wal(self.path);
        }
        let child = format!("{}.w{}", self.creator, self.made % self.per_creator);
        self.made += 1;
        (self.creator.clone(), child)
    }
}

fn create(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let builder = support::builder(&path);
    builder.create_root("conductor", support::ACTOR).unwrap();
    builder
        .grant("conductor", PostureLevel::Trust, support::ACTOR)
        .unwrap();
    support::grow_tree(&builder, "conductor", BASE_SESSIONS, 10);
    support::checkpoint(&path);
    let ledger = Ledger::open(&path).expect("open the measured handle");
    let mut creates = Creates {
        builder: &builder,
        path: &path,
        per_creator: Config::default().max_live_children as usize,
        made: 0,
        creator: String::new(),
    };

    c.bench_function("create/trusted_creator", |b| {
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
    drop(ledger);
    drop(builder);
    drop(dir);
}

/// A create by a long-lived creator: `veteran` has made and ended `ENDED` children, and the
/// measured create is its only live child (the setup ends the previous one through the
/// building handle). Rule S2 counts the creator's live children on every create; this shows
/// whether that count grows with the children that already ended.
fn create_by_a_creator_with_ended_children(c: &mut Criterion) {
    const ENDED: usize = 10_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let builder = support::builder(&path);
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
    support::checkpoint(&path);
    // Default bounds, but the rate window is one millisecond: the veteran made its 10,000
    // children within the last minute, and a window holding them would measure the rate count
    // (bounded by the rate limit in real use) instead of the live count.
    let ledger = Ledger::open_with(
        &path,
        Config::default().creation_rate(u32::MAX, std::time::Duration::from_millis(1)),
    )
    .expect("open the measured handle");
    let mut made = 0_usize;
    c.bench_function("create/creator_with_10000_ended_children", |b| {
        b.iter_batched(
            || {
                if made > 0 {
                    builder
                        .end(&format!("new{:06}", made - 1), support::ACTOR)
                        .unwrap();
                    support::flush_wal(&path);
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
    drop(ledger);
    drop(builder);
    drop(dir);
}

criterion_group!(benches, create, create_by_a_creator_with_ended_children);
criterion_main!(benches);
