//! Cascade revoke: `Ledger::revoke(root, Propagation::Cascade { token: None }, ..)` of a
//! subtree of 1,000, 10,000 and 100,000 sessions, every one holding `trust`. One
//! `synchronous=FULL` transaction removes every posture in the subtree and writes one
//! `posture.revoke` audit row per session (so 1,000 to 100,000 chained audit rows); the
//! automatic checkpoint such a large commit triggers is part of the call, as it would be in use.
//!
//! Inputs: for each size, one template ledger built once, before that size is measured,
//! through the fast building handle (see `benches/support/mod.rs`): a root `root` granted
//! `trust` and N - 1 sessions below it, fan-out 10, created breadth-first, so each inherits
//! `trust`; then checkpointed into one file. The `iter_batched_ref` setup (not timed) copies
//! the template to a new file, fsyncs the copy, opens it with the default `Config` and takes a
//! pooled connection once so the timed call does not open one. The copy is closed and deleted
//! after timing.
//!
//! Sampling is flat (the same number of iterations in each sample) with 10 samples, and the
//! measurement time grows with the size: 5 s, 10 s, 40 s. The 100,000 case runs about 20
//! cascades of ~2.5 s here, about a minute and a half with its template and copies. These
//! settings are fixed here, so `--measurement-time` and `--sample-size` on the command line do
//! not change them. Limit the sizes with `BENCH_CASCADE_MAX`, e.g.
//! `BENCH_CASCADE_MAX=10000 cargo bench --bench cascade` (a criterion name filter skips the
//! measuring but not the building of a size's template).

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode};
use session_ledger::{Ledger, PostureLevel, Propagation};

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

/// Builds the template ledger of `n` sessions, all under `root` and all holding `trust`.
fn template(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("template-{n}.db"));
    {
        let builder = support::builder(&path);
        builder.create_root("root", support::ACTOR).unwrap();
        builder
            .grant("root", PostureLevel::Trust, support::ACTOR)
            .unwrap();
        support::grow_tree(&builder, "root", n - 1, 10);
    }
    support::checkpoint(&path);
    path
}

/// A scratch copy of a template, open with the default `Config`; closed and deleted on drop.
struct Scratch {
    ledger: Option<Ledger>,
    path: PathBuf,
}

impl Scratch {
    fn new(template: &Path, path: PathBuf) -> Scratch {
        std::fs::copy(template, &path).expect("copy the template");
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .expect("fsync the copy");
        let ledger = Ledger::open(&path).expect("open the copy");
        ledger.current_epoch().expect("open a pooled connection");
        Scratch {
            ledger: Some(ledger),
            path,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        drop(self.ledger.take());
        for suffix in ["", "-wal", "-shm"] {
            let mut name = self.path.as_os_str().to_owned();
            name.push(suffix);
            let _ = std::fs::remove_file(name);
        }
    }
}

fn cascade(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let max = max_size();
    let mut group = c.benchmark_group("cascade");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    let mut runs = 0;
    for n in SIZES.into_iter().filter(|&n| n <= max) {
        let template = template(dir.path(), n);
        group.measurement_time(Duration::from_secs(match n {
            0..=1_000 => 5,
            1_001..=10_000 => 10,
            _ => 40,
        }));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(
                || {
                    runs += 1;
                    Scratch::new(&template, dir.path().join(format!("run-{runs}.db")))
                },
                |copy| {
                    let ledger = copy.ledger.as_ref().unwrap();
                    let revoked = ledger
                        .revoke("root", Propagation::Cascade { token: None }, support::ACTOR)
                        .unwrap();
                    assert_eq!(revoked.count, n);
                    black_box(revoked)
                },
                BatchSize::PerIteration,
            )
        });
        std::fs::remove_file(&template).expect("remove the template");
    }
    group.finish();
    drop(dir);
}

criterion_group!(benches, cascade);
criterion_main!(benches);
