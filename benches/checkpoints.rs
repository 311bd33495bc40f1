//! The checkpoints bench: what signing a checkpoint, proving and verifying a consistency
//! proof, and verifying the trail against a checkpoint cost on a ledger of many audit rows
//! (docs/performance.md, "Checkpoints").
//!
//! ```text
//! cargo bench --bench checkpoints                              # 100,000 rows
//! CHECKPOINT_ROWS=1000000 cargo bench --bench checkpoints      # 1,000,000 rows
//! ```
//!
//! The ledger is a SQLite file whose audit trail is written straight into the file, chained as
//! the library chains it, in one transaction (minutes faster than a million library writes, and
//! the tree does not care what the rows say). Every measured call goes through a handle opened
//! with the default `Config`. Lines (times in ms):
//!
//! ```text
//! load START
//! ledger rows=.. build_s=..
//! sign first lag=ROWS ms=..                      the first checkpoint: the whole tree built
//! sign lag=1 n=.. p50_ms=.. p99_ms=..            a checkpoint right after the last one
//! sign lag=1000 n=.. p50_ms=.. p99_ms=..         with 1,000 rows written since
//! prove consistency n=.. p50_ms=.. p99_ms=.. hashes=..   from a random size to the head
//! verify consistency n=.. p50_us=.. p99_us=..    checking such a proof, in memory
//! verify_checkpoint fast rows_after=.. ms=..
//! verify_checkpoint full rows=.. ms=..
//! load END
//! ```
//!
//! Nothing here asserts a time.

use std::path::Path;
use std::time::{Duration, Instant};

use session_ledger::{
    chain_hash, verify_consistency, CheckpointOptions, Config, Ledger, SignerKey, GENESIS_HASH,
};

const DEFAULT_ROWS: u64 = 100_000;

fn rows_wanted() -> u64 {
    std::env::var("CHECKPOINT_ROWS")
        .ok()
        .map(|v| v.parse().expect("CHECKPOINT_ROWS is a number of rows"))
        .unwrap_or(DEFAULT_ROWS)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

/// Appends `n` chained `session.root` rows after the head of the ledger at `path`, in one
/// transaction on a plain connection: the schema's triggers check each, as they check the
/// library's.
fn append_rows(path: &Path, n: u64) {
    let mut conn = rusqlite::Connection::open(path).expect("open the file");
    let tx = conn.transaction().expect("begin");
    // The head, and its time (rows never go back in time): the first build's rows all carry
    // one time, and later ones the time of the checkpoint row before them.
    let (mut seq, mut prev, at): (i64, String, String) = tx
        .query_row(
            "SELECT coalesce(max(seq), 0),
                    coalesce((SELECT hash FROM audit WHERE seq = (SELECT max(seq) FROM audit)), ?1),
                    coalesce((SELECT at FROM audit WHERE seq = (SELECT max(seq) FROM audit)),
                             '2026-01-01T00:00:00.000Z')
               FROM audit",
            [GENESIS_HASH],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the head");
    let at = at.as_str();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES (?1, ?2, 'bench', 'session.root', ?3, '{}', ?4, ?5)",
            )
            .expect("prepare");
        for _ in 0..n {
            seq += 1;
            let session = format!("s{seq}");
            let hash = chain_hash(
                &prev,
                seq,
                at,
                "bench",
                "session.root",
                Some(&session),
                "{}",
            );
            insert
                .execute((seq, at, &session, &prev, &hash))
                .expect("insert a row");
            prev = hash;
        }
    }
    tx.commit().expect("commit");
}

fn percentile(times: &mut [Duration], p: f64) -> f64 {
    times.sort();
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[i].as_secs_f64() * 1000.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for the list of benches: there is none to run.
    }
    println!("load START {}", load());
    let rows = rows_wanted();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("ledger.db");
    drop(Ledger::init(&path).expect("create the ledger"));
    let started = Instant::now();
    append_rows(&path, rows);
    println!(
        "ledger rows={rows} build_s={:.1}",
        started.elapsed().as_secs_f64()
    );

    let ledger = Ledger::open_with(&path, Config::default().create_if_missing(true)).expect("open");
    let key = SignerKey::generate("example.com/bench").expect("a key");
    let started = Instant::now();
    let first = ledger.checkpoint(&key, None, "bench").expect("sign");
    println!(
        "sign first lag={rows} ms={:.1}",
        started.elapsed().as_secs_f64() * 1000.0
    );

    let mut lag1 = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        ledger.checkpoint(&key, None, "bench").expect("sign");
        lag1.push(started.elapsed());
    }
    println!(
        "sign lag=1 n={} p50_ms={:.2} p99_ms={:.2}",
        lag1.len(),
        percentile(&mut lag1, 0.5),
        percentile(&mut lag1, 0.99)
    );
    let mut lag1000 = Vec::new();
    for _ in 0..10 {
        append_rows(&path, 1000);
        let started = Instant::now();
        ledger.checkpoint(&key, None, "bench").expect("sign");
        lag1000.push(started.elapsed());
    }
    println!(
        "sign lag=1000 n={} p50_ms={:.2} p99_ms={:.2}",
        lag1000.len(),
        percentile(&mut lag1000, 0.5),
        percentile(&mut lag1000, 0.99)
    );

    let head = ledger.audit_head().expect("head").seq as u64;
    let mut prove = Vec::new();
    let mut check = Vec::new();
    let mut hashes = 0;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..50 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let old = 1 + state % (head - 1);
        let started = Instant::now();
        let p = ledger.consistency_proof(old, None).expect("a proof");
        prove.push(started.elapsed());
        hashes = p.proof.len();
        let started = Instant::now();
        let ok = verify_consistency(p.old, p.new, &p.old_root, &p.new_root, &p.proof);
        check.push(started.elapsed());
        assert!(ok, "a proof the ledger gives verifies");
    }
    println!(
        "prove consistency n={} p50_ms={:.3} p99_ms={:.3} hashes={hashes} rows={head}",
        prove.len(),
        percentile(&mut prove, 0.5),
        percentile(&mut prove, 0.99)
    );
    println!(
        "verify consistency n={} p50_us={:.1} p99_us={:.1}",
        check.len(),
        percentile(&mut check, 0.5) * 1000.0,
        percentile(&mut check, 0.99) * 1000.0
    );

    let mut fast = CheckpointOptions::default();
    fast.fast = true;
    let started = Instant::now();
    let v = ledger
        .verify_checkpoint(&first.note, &key.verifier(), &fast)
        .expect("verify");
    println!(
        "verify_checkpoint fast rows_after={} ms={:.1} ok={}",
        head - first.checkpoint.size,
        started.elapsed().as_secs_f64() * 1000.0,
        v.ok
    );
    let started = Instant::now();
    let v = ledger
        .verify_checkpoint(&first.note, &key.verifier(), &CheckpointOptions::default())
        .expect("verify");
    println!(
        "verify_checkpoint full rows={head} ms={:.1} ok={}",
        started.elapsed().as_secs_f64() * 1000.0,
        v.ok
    );
    println!("load END {}", load());
}
