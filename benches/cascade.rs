//! Cascade revoke: `Ledger::revoke(root, Propagation::CascadeUnchecked, ..)` of a
//! subtree of 1,000, 10,000 and 100,000 sessions, every one holding `trust`. One
//! `synchronous=FULL` transaction removes every posture in the subtree and writes one
//! `posture.revoke` audit row per session (so 1,000 to 100,000 chained audit rows); the
//! automatic checkpoint such a large commit triggers is part of the call, as it would be in use.
//!
//! Inputs: for each size, one template ledger built once, before that size is measured,
//! through the fast building handle (`support::cascade_template`): a root `root` granted
//! `trust` and N - 1 sessions below it, fan-out 10, created breadth-first, so each inherits
//! `trust`; then checkpointed into one SQLite file. The `iter_batched_ref` setup (not timed)
//! makes a fresh copy of the template on the engine measured (`support::Place::copy_of`: the
//! file copied and fsynced, or its rows copied into a new PostgreSQL schema, then vacuumed and
//! analyzed), opens it with the default `Config` and takes a pooled connection once so the
//! timed call does not open one. The copy is closed and removed after timing.
//!
//! Sampling is flat (the same number of iterations in each sample) with 10 samples, and the
//! measurement time grows with the size: 5 s, 10 s, 40 s. The 100,000 case runs about 20
//! cascades of ~2.5 s on SQLite here, about a minute and a half with its template and copies;
//! on PostgreSQL each copy of the template takes longer than its cascade. These settings are
//! fixed here, so `--measurement-time` and `--sample-size` on the command line do not change
//! them. Limit the sizes with `BENCH_CASCADE_MAX`, e.g.
//! `BENCH_CASCADE_MAX=10000 cargo bench --bench cascade` (a criterion name filter skips the
//! measuring but not the building of a size's template).
//!
//! `cargo bench --bench cascade`: `cascade/sqlite/N`, and `cascade/postgres/N` when
//! `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode};
use session_ledger::{Ledger, Propagation};
use support::{Engine, Place};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn max_size() -> usize {
    match std::env::var("BENCH_CASCADE_MAX") {
        Ok(v) => v
            .trim()
            .replace(['_', ','], "")
            .parse()
            .unwrap_or_else(|_| panic!("BENCH_CASCADE_MAX={v:?} is not a number")),
        Err(_) => usize::MAX,
    }
}

/// A scratch copy of a template on one engine, open with the default `Config`; closed and
/// removed on drop.
struct Scratch {
    ledger: Ledger,
    _place: Place,
}

impl Scratch {
    fn new(engine: Engine, template: &Path) -> Scratch {
        let place = Place::copy_of(engine, template);
        let ledger = place.open();
        ledger.current_epoch().expect("open a pooled connection");
        Scratch {
            ledger,
            _place: place,
        }
    }
}

fn cascade(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let max = max_size();
    let engines = support::engines();
    let mut group = c.benchmark_group("cascade");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    for n in SIZES.into_iter().filter(|&n| n <= max) {
        let template = dir.path().join(format!("template-{n}.db"));
        support::cascade_template(&template, n);
        group.measurement_time(Duration::from_secs(match n {
            0..=1_000 => 5,
            1_001..=10_000 => 10,
            _ => 40,
        }));
        for &engine in &engines {
            let id = BenchmarkId::new(engine.name(), n);
            group.bench_with_input(id, &n, |b, &n| {
                b.iter_batched_ref(
                    || Scratch::new(engine, &template),
                    |copy| {
                        let revoked = copy
                            .ledger
                            .revoke("root", Propagation::CascadeUnchecked, support::ACTOR)
                            .unwrap();
                        assert_eq!(revoked.count, n);
                        black_box(revoked)
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        std::fs::remove_file(&template).expect("remove the template");
    }
    group.finish();
    drop(dir);
}

criterion_group!(benches, cascade);
criterion_main!(benches);
