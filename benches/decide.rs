//! `Ledger::decide`, the call made on every tool approval, for a command that is not
//! read-only (`make deploy`), in its two common outcomes. Neither writes.
//!
//! * `decide/inherited_trust`: the session holds `trust` inherited from the root it descends
//!   from, so the answer is approve, with the posture and its chain back to the grant.
//! * `decide/asks`: the session holds no posture and has two command patterns (`npm test *`,
//!   `cargo check`), neither matching, and no scope; every check runs and the answer is ask.
//!
//! Input, built once before measuring through the fast building handle (see
//! `benches/support/mod.rs`): a root `trusted` granted `trust` with 5,000 sessions below it
//! (fan-out 10, each born with the inherited posture), and a root `asking` with no posture and
//! 5,000 sessions below it, each given the two patterns. The WAL is checkpointed and the file
//! reopened with the default `Config`. Each measured call decides for the next session of its
//! tree (roots excluded), round-robin.
//!
//! `cargo bench --bench decide`

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use session_ledger::{Ledger, PostureLevel, PostureSource, Reason, Verdict};

const PER_TREE: usize = 5_000;
const COMMAND: &str = "make deploy";

fn decide(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    let (trusted, asking) = {
        let builder = support::builder(&path);
        builder.create_root("trusted", support::ACTOR).unwrap();
        builder
            .grant("trusted", PostureLevel::Trust, support::ACTOR)
            .unwrap();
        let trusted = support::grow_tree(&builder, "trusted", PER_TREE, 10);
        builder.create_root("asking", support::ACTOR).unwrap();
        let asking = support::grow_tree(&builder, "asking", PER_TREE, 10);
        for id in &asking {
            for pattern in ["npm test *", "cargo check"] {
                assert!(builder.add_pattern(id, pattern, support::ACTOR).unwrap());
            }
        }
        (trusted, asking)
    };
    support::checkpoint(&path);
    let ledger = Ledger::open(&path).expect("open the measured handle");
    for id in &trusted {
        let d = ledger.decide(id, COMMAND, false).unwrap();
        assert_eq!(d.verdict, Verdict::Approve);
        let Reason::Trust { posture } = d.reason else {
            panic!("{id}: {:?}", d.reason)
        };
        assert_eq!(posture.source, PostureSource::Inherited);
    }
    for id in &asking {
        let d = ledger.decide(id, COMMAND, false).unwrap();
        assert_eq!(d.verdict, Verdict::Ask);
        assert!(
            matches!(d.reason, Reason::Nothing { .. }),
            "{id}: {:?}",
            d.reason
        );
    }

    let mut group = c.benchmark_group("decide");
    for (name, ids) in [("inherited_trust", &trusted), ("asks", &asking)] {
        let mut next = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let id = &ids[next];
                next = (next + 1) % ids.len();
                black_box(
                    ledger
                        .decide(black_box(id), black_box(COMMAND), false)
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
    drop(ledger);
    drop(dir);
}

criterion_group!(benches, decide);
criterion_main!(benches);
