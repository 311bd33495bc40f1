//! What the audit hash chain costs a large cascade, and a cascade's peak memory. `chain_cost.sh`
//! (next to this crate's manifest) drives it: `build` makes the ledgers once, then each
//! `measure` process copies the template, times one side once, and prints
//! `SIDE COUNT MILLISECONDS PEAK_KIB`; the script interleaves the sides round by round and
//! prints the medians.
//!
//! The input is one ledger (the template) whose root's `trust` has spread to N sessions. The
//! sides, each on a fresh copy of it, each one durable transaction (`synchronous=FULL`):
//!
//! * `ledger`: the library's cascade revoke of the whole tree (N postures removed, N
//!   `posture.revoke` audit rows), the operation itself; the chain verifies afterwards;
//! * `chained`: the same cascade replayed with plain SQL on the ledger's file: the ledger's
//!   cascade statement ([`support::CASCADE_DELETE`]), then the very rows the library wrote
//!   (captured from a reference run of the library's cascade on another copy), each linked with
//!   [`chain_hash`] and checked by the schema's chain trigger. Afterwards its head must be the
//!   reference's, hash for hash;
//! * `unchained`: the same replay with the chain trigger dropped and a constant hash in every
//!   row: the same statement, the same rows of the same size, and every other trigger.
//!
//! `chained` and `unchained` differ only in the chain (a SHA3-256 per row, and the trigger's
//! check of the previous row), so their difference is what the chain costs; against `ledger` it
//! is the chain's share of the real cascade. No special build of the library is needed.
//! The replays hold the captured rows in memory, so only `ledger`'s peak memory is the cascade's.
//!
//! ```text
//! chain_cost build WORKDIR N
//! chain_cost measure ledger|chained|unchained WORKDIR
//! ```

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use session_ledger::{chain_hash, Ledger, Propagation, GENESIS_HASH};

fn template(work: &Path) -> PathBuf {
    work.join("template.db")
}

fn reference(work: &Path) -> PathBuf {
    work.join("reference.db")
}

/// The newest audit row's seq and hash.
fn head(conn: &Connection) -> rusqlite::Result<(i64, String)> {
    conn.query_row(
        "SELECT seq, hash FROM audit WHERE seq = (SELECT max(seq) FROM audit)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Builds the template (N sessions holding trust) and the reference: a copy of the template
/// after the library's cascade, whose new audit rows the replays write again.
fn build(work: &Path, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    support::cascade_template(&template(work), n);
    support::copy_ledger(&template(work), &reference(work));
    let ledger = Ledger::init(reference(work))?;
    let revoked = ledger.revoke("root", Propagation::CascadeUnchecked, support::ACTOR)?;
    assert!(ledger.verify(None)?.ok, "the reference's chain verifies");
    drop(ledger);
    support::checkpoint(&reference(work));
    println!(
        "built {n} sessions, {} holding trust, in {}",
        revoked.count,
        work.display()
    );
    Ok(())
}

/// An audit row as the library's cascade wrote it in the reference: seq, at, actor, kind,
/// session, detail.
type Row = (i64, String, String, String, Option<String>, String);

/// The reference's rows after the template's head, and the reference's head hash.
fn captured(after: i64, work: &Path) -> Result<(Vec<Row>, String), Box<dyn std::error::Error>> {
    let conn = Connection::open(reference(work))?;
    let rows = conn
        .prepare(
            "SELECT seq, at, actor, kind, session_id, detail FROM audit WHERE seq > ?1 ORDER BY seq",
        )?
        .query_map([after], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?
        .collect::<Result<Vec<Row>, _>>()?;
    Ok((rows, head(&conn)?.1))
}

/// The replay: the cascade statement, then `rows` appended after the head, each hashed with the
/// chain or given the constant hash, in one IMMEDIATE transaction. Returns the postures removed.
fn replay(conn: &Connection, rows: &[Row], chained: bool) -> rusqlite::Result<usize> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let removed = conn
        .prepare(support::CASCADE_DELETE)?
        .query_map(rusqlite::named_params! { ":root": "root" }, |r| {
            r.get::<_, String>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?
        .len();
    let (mut seq, mut prev) = head(conn)?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (_, at, actor, kind, session, detail) in rows {
        seq += 1;
        let hash = if chained {
            chain_hash(&prev, seq, at, actor, kind, session.as_deref(), detail)
        } else {
            GENESIS_HASH.to_owned()
        };
        insert.execute((seq, at, actor, kind, session, detail, &prev, &hash))?;
        prev = hash;
    }
    drop(insert);
    conn.execute_batch("COMMIT")?;
    Ok(removed)
}

fn measure(side: &str, work: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let db = work.join(format!("run-{}.db", std::process::id()));
    support::copy_ledger(&template(work), &db);
    let (count, elapsed) = match side {
        "ledger" => {
            let ledger = Ledger::init(&db)?;
            let started = Instant::now();
            let revoked = ledger.revoke("root", Propagation::CascadeUnchecked, support::ACTOR)?;
            let elapsed = started.elapsed();
            assert!(
                ledger.verify(None)?.ok,
                "the chain verifies after the cascade"
            );
            (revoked.count, elapsed)
        }
        "chained" | "unchained" => {
            let chained = side == "chained";
            let conn = support::raw_connection(&db);
            if !chained {
                conn.execute_batch("DROP TRIGGER audit_extends_the_chain")?;
            }
            let (after, _) = head(&conn)?;
            let (rows, reference_head) = captured(after, work)?;
            assert_eq!(
                rows.first().map(|r| r.0),
                Some(after + 1),
                "rows follow the head"
            );
            let started = Instant::now();
            let removed = replay(&conn, &rows, chained)?;
            let elapsed: Duration = started.elapsed();
            assert_eq!(removed, rows.len(), "one audit row per posture removed");
            if chained {
                assert_eq!(
                    head(&conn)?.1,
                    reference_head,
                    "the replay is the library's chain"
                );
            }
            (removed, elapsed)
        }
        _ => return Err(format!("unknown side {side:?}").into()),
    };
    println!(
        "{side} {count} {:.1} {}",
        elapsed.as_secs_f64() * 1000.0,
        support::peak_rss_kib()
    );
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
        [cmd, work, n] if cmd == "build" => build(Path::new(work), n.parse()?),
        [cmd, side, work] if cmd == "measure" => measure(side, Path::new(work)),
        _ => {
            eprintln!(
                "run perf/chain_cost.sh (usage: chain_cost build WORKDIR N | measure ledger|chained|unchained WORKDIR)"
            );
            Ok(())
        }
    }
}
