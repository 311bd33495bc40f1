//! What the audit hash chain costs a large cascade: one process builds a ledger whose root's
//! posture has spread to N sessions, then each `measure` run copies it, times one cascade revoke
//! of the whole tree (N posture rows and N audit rows, one transaction, synchronous=FULL), and
//! prints the milliseconds. `chain_cost.sh` (next to this crate's manifest) runs this binary
//! built normally and built with `--cfg session_ledger_unchained` (same rows, constant hash, no
//! chain trigger), interleaved, and prints the medians and their ratio.
//!
//! ```text
//! chain_cost build TEMPLATE N
//! chain_cost measure TEMPLATE WORKDIR
//! ```

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use session_ledger::{Config, Ledger, PostureLevel, Propagation, Synchronous};

fn build(template: &Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::default()
        .synchronous(Synchronous::Normal)
        .max_depth(u32::MAX)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1));
    let ledger = Ledger::open_with(template, config)?;
    ledger.create_root("root", "bench")?;
    ledger.grant("root", PostureLevel::Trust, "bench")?;
    // A tree of fan-out 10 below the root, created breadth-first, all inheriting trust.
    let mut made = 0;
    let mut parents = vec!["root".to_owned()];
    'fill: loop {
        let mut next = Vec::new();
        for parent in &parents {
            for k in 0..10 {
                if made == n - 1 {
                    break 'fill;
                }
                let id = format!("{parent}.{k}");
                ledger.create_child(&id, parent, "bench")?;
                next.push(id);
                made += 1;
            }
        }
        parents = next;
    }
    drop(ledger);
    let conn = rusqlite::Connection::open(template)?;
    conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
    let postures: i64 = conn.query_row("SELECT count(*) FROM postures", [], |r| r.get(0))?;
    println!(
        "built {n} sessions, {postures} holding trust, in {}",
        template.display()
    );
    Ok(())
}

fn measure(template: &Path, work: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let db = work.join(format!("run-{}.db", std::process::id()));
    std::fs::copy(template, &db)?;
    let unchained = cfg!(session_ledger_unchained);
    if unchained {
        rusqlite::Connection::open(&db)?.execute_batch("DROP TRIGGER audit_extends_the_chain")?;
    }
    let ledger = Ledger::open(&db)?;
    let started = Instant::now();
    let revoked = ledger.revoke("root", Propagation::Cascade { token: None }, "bench")?;
    let elapsed = started.elapsed();
    if !unchained {
        assert!(
            ledger.verify(None)?.ok,
            "the chain verifies after the cascade"
        );
    }
    println!(
        "{} {} {:.1} {}",
        if unchained { "unchained" } else { "chained" },
        revoked.count,
        elapsed.as_secs_f64() * 1000.0,
        support::peak_rss_kib()
    );
    drop(ledger);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.as_slice() {
        [cmd, template, n] if cmd == "build" => build(Path::new(template), n.parse()?),
        [cmd, template, work] if cmd == "measure" => measure(Path::new(template), Path::new(work)),
        _ => {
            eprintln!("run perf/chain_cost.sh (usage: chain_cost build TEMPLATE N | measure TEMPLATE WORKDIR)");
            Ok(())
        }
    }
}
