//! What the check of an audit detail's one JSON form (contract C41: SQLite's trigger
//! `audit_detail_is_canonical`, PostgreSQL's `CHECK` of the same name) costs the writes that
//! append audit rows, on each engine: a cascade revocation of 10,000 sessions, which appends one
//! `posture.revoke` row per session, on a ledger with the check and on the same ledger with it
//! dropped, alternating, 5 of each (docs/performance.md, "The check of an audit detail").
//!
//! ```text
//! cargo bench --bench detail_check                                    # SQLite
//! scripts/with-postgres --durable cargo bench --bench detail_check    # and PostgreSQL
//! ```
//!
//! Each run builds its ledger (a trusted root, 100 children with 99 children each) with the
//! building handle, drops the check or not with the engine's own shell, and times
//! `revoke(root, CascadeUnchecked)` on a handle opened with the default `Config`. It prints
//! each run, then the medians and the time per audit row the check adds.

mod support;

use std::time::{Duration, Instant};

use session_ledger::{PostureLevel, Propagation};
use support::{Engine, Place, RawConn, ACTOR};

const RUNS: usize = 5;
const CHILDREN: usize = 100;
const GRANDCHILDREN: usize = 99;

fn one(engine: Engine, checked: bool) -> (Duration, usize) {
    let place = Place::new(engine);
    {
        let builder = place.builder();
        builder.create_root("r", ACTOR).expect("root");
        builder
            .grant("r", PostureLevel::Trust, ACTOR)
            .expect("grant");
        for c in 0..CHILDREN {
            let child = format!("c{c}");
            builder.create_child(&child, "r", ACTOR).expect("child");
            for g in 0..GRANDCHILDREN {
                builder
                    .create_child(&format!("{child}.{g}"), &child, ACTOR)
                    .expect("grandchild");
            }
        }
    }
    if !checked {
        let drop = match engine {
            Engine::Sqlite => "DROP TRIGGER audit_detail_is_canonical",
            Engine::Postgres => "ALTER TABLE audit DROP CONSTRAINT audit_detail_is_canonical",
        };
        RawConn::open(&place).batch(drop);
    }
    place.settle();
    let ledger = place.open();
    let started = Instant::now();
    let revoked = ledger
        .revoke("r", Propagation::CascadeUnchecked, ACTOR)
        .expect("cascade");
    (started.elapsed(), revoked.count)
}

fn main() {
    for engine in support::engines() {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let mut rows = 0;
        for run in 0..RUNS {
            // The side that goes first alternates.
            for checked in [run % 2 == 0, run % 2 != 0] {
                let (took, count) = one(engine, checked);
                rows = count;
                println!(
                    "run {run} {} checked={checked} cascade of {count}: {:.1} ms",
                    engine.name(),
                    took.as_secs_f64() * 1e3
                );
                if checked { &mut with } else { &mut without }.push(took);
            }
        }
        with.sort();
        without.sort();
        let (w, wo) = (with[RUNS / 2], without[RUNS / 2]);
        println!(
            "median {} cascade of {rows}: with the check {:.1} ms, without {:.1} ms, {:.2}x, {:.1} us more per audit row",
            engine.name(),
            w.as_secs_f64() * 1e3,
            wo.as_secs_f64() * 1e3,
            w.as_secs_f64() / wo.as_secs_f64(),
            (w.as_secs_f64() - wo.as_secs_f64()) * 1e6 / rows as f64
        );
    }
}
