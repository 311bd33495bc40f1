//! First-read inheritance: `Ledger::state` of a created child that has never been read, at
//! depths 1, 8 and 64 below its nearest materialized ancestor. One call walks `created_by` up
//! to that ancestor and, in one `synchronous=FULL` transaction, writes a label and a
//! `label.inherit` audit row for every session on the path (1, 8 or 64 of each).
//!
//! Inputs (the `iter_batched` setup, not timed): a fresh chain of `depth` created sessions,
//! each the child of the one before, below a root whose label is materialized (roots are born
//! materialized; each root is raised to `secret` so the inherited label is not the default).
//! Chains are built through the fast building handle (see `benches/support/mod.rs`), and on
//! SQLite the WAL is fsynced before timing; a new root is opened every 256 chains, so no
//! session collects an unusual number of children. The timed call reads the bottom of the
//! chain through a handle opened with the default `Config` (`synchronous=FULL`): each is a real
//! first read. The ledger grows as the bench runs (up to ~100,000 sessions at depth 64 in a
//! full run).
//!
//! `cargo bench --bench first_read`: `first_read/sqlite/depth/N`, and
//! `first_read/postgres/depth/N` (a ledger in its own schema, built there) when
//! `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use session_ledger::{AuditKind, AuditQuery, Ledger, Raise, Taint};
use support::{Engine, Place};

const DEPTHS: [usize; 3] = [1, 8, 64];
const CHAINS_PER_ROOT: usize = 256;

/// Builds fresh unmaterialized chains below materialized roots.
struct Chains<'a> {
    builder: &'a Ledger,
    place: &'a Place,
    made: usize,
    root: String,
}

impl Chains<'_> {
    /// A new chain of `depth` sessions; returns the id at its bottom, unmaterialized.
    fn next(&mut self, depth: usize) -> String {
        if self.made % CHAINS_PER_ROOT == 0 {
            self.root = format!("root{}", self.made / CHAINS_PER_ROOT);
            self.builder
                .create_root(&self.root, support::ACTOR)
                .unwrap();
            let secret = Raise {
                taint: Some(Taint::Secret),
                untrusted: false,
            };
            self.builder
                .raise(&self.root, secret, support::ACTOR)
                .unwrap();
        }
        let chain = self.made;
        self.made += 1;
        let mut parent = self.root.clone();
        for level in 1..=depth {
            let id = format!("c{chain}-d{depth}-{level}");
            self.builder
                .create_child(&id, &parent, support::ACTOR)
                .unwrap();
            parent = id;
        }
        self.place.flush();
        parent
    }
}

fn first_read_on(c: &mut Criterion, engine: Engine) {
    let place = Place::new(engine);
    let builder = place.builder();
    let ledger = place.open();
    let mut chains = Chains {
        builder: &builder,
        place: &place,
        made: 0,
        root: String::new(),
    };

    // The measured call is a first read that inherits the whole path.
    let inherits = || {
        ledger
            .audit(&AuditQuery::all().kind(AuditKind::LabelInherit))
            .unwrap()
            .len()
    };
    for depth in DEPTHS {
        let bottom = chains.next(depth);
        assert!(builder.stored_label(&bottom).unwrap().is_none());
        let before = inherits();
        assert_eq!(ledger.state(&bottom).unwrap().taint, Taint::Secret);
        assert_eq!(
            inherits() - before,
            depth,
            "one label.inherit row per session"
        );
    }

    let mut group = c.benchmark_group("first_read");
    for depth in DEPTHS {
        let id = BenchmarkId::new(format!("{}/depth", engine.name()), depth);
        group.bench_with_input(id, &depth, |b, &depth| {
            b.iter_batched(
                || chains.next(depth),
                |bottom| black_box(ledger.state(&bottom).unwrap()),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    drop(ledger);
    drop(builder);
    drop(place);
}

fn first_read(c: &mut Criterion) {
    for engine in support::engines() {
        first_read_on(c, engine);
    }
}

criterion_group!(benches, first_read);
criterion_main!(benches);
