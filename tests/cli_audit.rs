//! End-to-end tests of the audit half of the `session-ledger` command line (issue 4, rules A1-A3
//! of the brief): `verify` and `verify --head`, `audit head`, the tamper evidence of the hash
//! chain, `audit --json` with `--subtree`, `--since` and `--until`, and `explain`.
//!
//! Every test runs the real binary on a ledger in a temporary directory, always with an explicit
//! `--db` and with `SESSION_LEDGER_DB` and `SESSION_LEDGER_ACTOR` removed from the environment.
//! Tampering is done the way someone in the `sqlite3` shell would: through a plain SQLite
//! connection, after dropping the append-only triggers.

mod common;

use common::cli::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use sha3::{Digest, Sha3_256};

/// The `prev_hash` of the first audit row, as docs/audit.md states it.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Drops the triggers that make the audit table append-only, as a tamperer in the shell would.
const DROP_APPEND_ONLY: &str =
    "DROP TRIGGER audit_is_append_only_update; DROP TRIGGER audit_is_append_only_delete;";

// ------------------------------------------------------------------------------------------------
// helpers of this file (the shared ones are in tests/common/cli.rs)
// ------------------------------------------------------------------------------------------------

/// The seq of each row.
fn seqs(rows: &[Value]) -> Vec<i64> {
    rows.iter().filter_map(|r| r["seq"].as_i64()).collect()
}

/// A run that failed with exit code 1, one non-empty line on stderr and no panic.
fn assert_fails_with_one_line(r: &Run, what: &str) {
    assert_eq!(
        r.status.code(),
        Some(1),
        "{what}: expected exit code 1, got {} (stdout {:?}, stderr {:?})",
        r.status,
        r.stdout,
        r.stderr
    );
    assert_one_error_line(r, what);
}

/// A refusal: as [`assert_fails_with_one_line`], and nothing on stdout.
fn assert_refused(r: &Run, what: &str) {
    assert_fails_with_one_line(r, what);
    assert!(
        r.stdout.is_empty(),
        "{what}: printed on stdout: {:?}",
        r.stdout
    );
}

impl Fixture {
    /// A ledger with some of everything, built through the CLI:
    ///
    /// ```text
    /// conductor (trust by alice, raised secret, pattern 'npm test', scope hotfix)
    /// ├── worker-1                 (materialized by its spawned children's first reads)
    /// │   ├── worker-1a            (created by bob; not materialized)
    /// │   ├── sub-worker-1-1       (spawned)
    /// │   └── sub-worker-1-2       (spawned, the missing middle of the next one)
    /// │       └── sub-sub-worker-1-2-1
    /// └── worker-2                 (not materialized)
    /// other (carol)
    /// └── other-child
    /// ```
    ///
    /// and a durable `epoch.start` row, about no session.
    fn scenario() -> TestResult<Fixture> {
        let fx = Fixture::init()?;
        for args in [
            &["create", "conductor", "--actor", "alice"][..],
            &["trust", "conductor", "--full", "--actor", "alice"],
            &[
                "create",
                "worker-1",
                "--by",
                "conductor",
                "--actor",
                "alice",
            ],
            &[
                "create",
                "worker-2",
                "--by",
                "conductor",
                "--actor",
                "alice",
            ],
            &["create", "worker-1a", "--by", "worker-1", "--actor", "bob"],
            &[
                "raise",
                "conductor",
                "--taint",
                "secret",
                "--actor",
                "alice",
            ],
            &["state", "sub-worker-1-1"],
            &["state", "sub-sub-worker-1-2-1"],
            &["create", "other", "--actor", "carol"],
            &["create", "other-child", "--by", "other", "--actor", "carol"],
            &[
                "pattern",
                "add",
                "conductor",
                "npm test",
                "--actor",
                "alice",
            ],
            &[
                "scope",
                "grant",
                "conductor",
                "hotfix",
                "--ttl",
                "2h",
                "--actor",
                "alice",
            ],
            &["epoch", "start", "--durable", "--actor", "alice"],
        ] {
            ok(&fx.db, args)?;
        }
        Ok(fx)
    }
}

/// Runs `sql` on the ledger through a plain SQLite connection after dropping the append-only
/// triggers, as someone in the `sqlite3` shell could.
fn tamper(db: &Path, sql: &str) -> TestResult {
    let conn = Connection::open(db)?;
    conn.execute_batch(DROP_APPEND_ONLY)?;
    conn.execute_batch(sql)?;
    Ok(())
}

/// One audit row as stored: (seq, at, actor, kind, session_id, detail, prev_hash, hash).
type StoredRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    String,
    String,
    String,
);

fn stored_rows(db: &Path) -> TestResult<Vec<StoredRow>> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut stmt = conn.prepare(
        "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM audit ORDER BY seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
        ))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The chain hash exactly as docs/audit.md defines it, computed here with the `sha3` crate and
/// not with the library:
/// `sha3_256(prev_hash "|" seq "|" F(at) F(actor) F(kind) F(session_id) F(detail))`,
/// `F(x) = byte_length(x) ":" x "|"`, `F(NULL) = "-|"`.
fn documented_hash(row: &StoredRow) -> String {
    let (seq, at, actor, kind, session, detail, prev_hash, _) = row;
    let mut text = format!("{prev_hash}|{seq}|");
    for field in [
        Some(at.as_str()),
        Some(actor.as_str()),
        Some(kind.as_str()),
        session.as_deref(),
        Some(detail.as_str()),
    ] {
        match field {
            Some(x) => text.push_str(&format!("{}:{x}|", x.len())),
            None => text.push_str("-|"),
        }
    }
    Sha3_256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn is_lower_hex_64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `audit head`, parsed into (seq, hash).
/// Deletes the two newest rows of a trail whose head is `seq`, as a hand edit would.
fn drop_the_last_two_rows(db: &Path, seq: i64) -> TestResult {
    tamper(db, &format!("DELETE FROM audit WHERE seq > {};", seq - 2))
}

fn head(db: &Path) -> TestResult<(i64, String)> {
    let out = ok(db, &["audit", "head"])?;
    let line = out.trim_end_matches('\n');
    assert_eq!(
        out.lines().count(),
        1,
        "audit head is not one line: {out:?}"
    );
    let (seq, hash) = line
        .split_once(':')
        .ok_or_else(|| format!("audit head is not SEQ:HASH: {line:?}"))?;
    Ok((seq.parse()?, hash.to_owned()))
}

/// `--json verify ARGS...`, which may fail: (exit code, parsed stdout, the run).
fn verify_json(db: &Path, args: &[&str]) -> TestResult<(Option<i32>, Value, Run)> {
    let mut all = vec!["--json", "verify"];
    all.extend_from_slice(args);
    let r = run(db, &all);
    let v: Value = serde_json::from_str(&r.stdout).map_err(|e| {
        format!(
            "verify printed no JSON ({e}): {:?} / {:?}",
            r.stdout, r.stderr
        )
    })?;
    Ok((r.status.code(), v, r))
}

/// The distinct `at` values of `rows`, in order.
fn distinct_times(rows: &[Value]) -> Vec<String> {
    let set: BTreeSet<String> = rows
        .iter()
        .filter_map(|r| r["at"].as_str().map(str::to_owned))
        .collect();
    set.into_iter().collect()
}

/// The rows of `rows` whose `at` (stored text, fixed width, so comparable as text) passes `keep`.
fn rows_where(rows: &[Value], keep: impl Fn(&str) -> bool) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["at"].as_str().is_some_and(&keep))
        .cloned()
        .collect()
}

// ------------------------------------------------------------------------------------------------
// verify and audit head
// ------------------------------------------------------------------------------------------------

#[test]
fn verify_on_a_fresh_ledger_prints_ok_with_zero_rows_and_the_genesis_head_and_exits_0() -> TestResult
{
    let fx = Fixture::init()?;
    let r = run(&fx.db, &["verify"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(r.stdout, format!("OK: 0 rows verify; head 0:{GENESIS}\n"));
    assert!(r.stderr.is_empty(), "{r:?}");
    assert_eq!(ok(&fx.db, &["audit", "head"])?, format!("0:{GENESIS}\n"));
    Ok(())
}

#[test]
fn verify_on_a_busy_ledger_prints_ok_with_the_row_count_and_the_head_and_exits_0() -> TestResult {
    let fx = Fixture::scenario()?;
    let rows = audit_lines(&fx.db, &[])?;
    assert!(rows.len() > 15, "the scenario is not busy: {}", rows.len());
    let last = rows.last().ok_or("no rows")?;
    let r = run(&fx.db, &["verify"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!(
            "OK: {} rows verify; head {}:{}\n",
            rows.len(),
            last["seq"],
            last["hash"].as_str().ok_or("hash is not text")?
        )
    );
    assert!(r.stderr.is_empty(), "{r:?}");
    Ok(())
}

/// A ledger at `db` with a trusted root `conductor` and `workers` children under it
/// (`worker-0`, ...), each born trusted, written quickly (synchronous NORMAL, bounds lifted).
fn trusted_conductor_with_workers(
    db: &Path,
    workers: usize,
) -> Result<session_ledger::Ledger, session_ledger::Error> {
    use session_ledger::{Config, Ledger, PostureLevel, Synchronous};
    let config = Config::default()
        .max_live_children(5_000)
        .creation_rate(100_000, Duration::from_secs(60))
        .synchronous(Synchronous::Normal);
    let ledger = Ledger::open_with(db, config)?;
    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    for i in 0..workers {
        ledger.create_child(&format!("worker-{i}"), "conductor", "alice")?;
    }
    Ok(ledger)
}

#[test]
fn verify_passes_on_thousands_of_rows_written_by_creates_and_a_large_cascade() -> TestResult {
    use session_ledger::{Propagation, Raise, Taint};
    let fx = Fixture::empty()?;
    {
        let ledger = trusted_conductor_with_workers(&fx.db, 1_500)?;
        ledger.raise(
            "conductor",
            Raise {
                taint: Some(Taint::Secret),
                untrusted: true,
            },
            "alice",
        )?;
        ledger.state("sub-worker-7-1")?;
        // One transaction writing one audit row per session in the tree.
        ledger.revoke("conductor", Propagation::Cascade { token: None }, "carol")?;
        ledger.end("worker-3", "carol")?;
    }
    let v = ok_json(&fx.db, &["verify"])?;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["problem"], Value::Null, "{v}");
    let rows = v["rows"].as_u64().ok_or("rows is not a number")?;
    assert!(rows > 3_000, "expected thousands of rows, got {v}");
    let (seq, hash) = head(&fx.db)?;
    assert_eq!(v["head"]["seq"], seq);
    assert_eq!(v["head"]["hash"], hash.as_str());
    assert_eq!(u64::try_from(seq)?, rows, "seq and row count disagree: {v}");
    assert_eq!(
        ok(&fx.db, &["verify", "--head", &format!("{seq}:{hash}")])?,
        format!("OK: {rows} rows verify; head {seq}:{hash}\n")
    );
    Ok(())
}

#[test]
fn verify_json_has_exactly_ok_rows_head_first_bad_seq_and_problem() -> TestResult {
    let fx = Fixture::scenario()?;
    let rows = audit_lines(&fx.db, &[])?;
    let last = rows.last().ok_or("no rows")?;
    let (code, v, r) = verify_json(&fx.db, &[])?;
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(r.stdout.lines().count(), 1, "{r:?}");
    let keys: BTreeSet<&str> = v
        .as_object()
        .ok_or("verify --json is not an object")?
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["ok", "rows", "head", "first_bad_seq", "problem"]),
        "{v}"
    );
    let head_keys: BTreeSet<&str> = v["head"]
        .as_object()
        .ok_or("head is not an object")?
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(head_keys, BTreeSet::from(["seq", "hash"]), "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["rows"].as_u64(), Some(u64::try_from(rows.len())?));
    assert_eq!(v["head"]["seq"], last["seq"]);
    assert_eq!(v["head"]["hash"], last["hash"]);
    assert_eq!(v["first_bad_seq"], Value::Null);
    assert_eq!(v["problem"], Value::Null);
    Ok(())
}

#[test]
fn verify_json_on_a_fresh_ledger_reports_zero_rows_and_the_genesis_head() -> TestResult {
    let fx = Fixture::init()?;
    let v = ok_json(&fx.db, &["verify"])?;
    assert_eq!(
        v,
        serde_json::json!({
            "ok": true, "rows": 0, "head": {"seq": 0, "hash": GENESIS},
            "first_bad_seq": null, "problem": null
        })
    );
    Ok(())
}

#[test]
fn audit_head_prints_seq_colon_hash_of_the_last_row_of_audit_json() -> TestResult {
    let fx = Fixture::scenario()?;
    let rows = audit_lines(&fx.db, &[])?;
    let last = rows.last().ok_or("no rows")?;
    let (seq, hash) = head(&fx.db)?;
    assert_eq!(last["seq"], seq);
    assert_eq!(last["hash"], hash.as_str());
    assert!(is_lower_hex_64(&hash), "{hash}");
    let json = ok_json(&fx.db, &["audit", "head"])?;
    assert_eq!(json, serde_json::json!({ "seq": seq, "hash": hash }));
    Ok(())
}

#[test]
fn audit_head_moves_with_every_change() -> TestResult {
    let fx = Fixture::scenario()?;
    let before = head(&fx.db)?;
    ok(&fx.db, &["create", "late", "--actor", "dave"])?;
    let after = head(&fx.db)?;
    assert_eq!(after.0, before.0 + 1);
    assert_ne!(after.1, before.1);
    let last = audit_lines(&fx.db, &["--limit", "1"])?;
    assert_eq!(last[0]["prev_hash"], before.1.as_str());
    assert_eq!(last[0]["hash"], after.1.as_str());
    Ok(())
}

#[test]
fn verify_with_the_current_head_exits_0() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let saved = format!("{seq}:{hash}");
    let r = run(&fx.db, &["verify", "--head", &saved]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert!(r.stdout.starts_with("OK: "), "{r:?}");
    assert!(r.stdout.contains(&saved), "{r:?}");
    let (code, v, _) = verify_json(&fx.db, &["--head", &saved])?;
    assert_eq!(code, Some(0));
    assert_eq!(v["ok"], true, "{v}");
    Ok(())
}

#[test]
fn verify_with_a_head_saved_before_later_changes_still_exits_0() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    ok(&fx.db, &["create", "late", "--actor", "dave"])?;
    ok(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--actor", "carol"],
    )?;
    let r = run(&fx.db, &["verify", "--head", &format!("{seq}:{hash}")]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let (now, _) = head(&fx.db)?;
    assert!(now > seq);
    assert!(
        r.stdout.contains(&format!("head {now}:")),
        "verify reports the current head, not the saved one: {r:?}"
    );
    Ok(())
}

#[test]
fn verify_and_audit_head_write_nothing() -> TestResult {
    let fx = Fixture::scenario()?;
    let before = dump(&fx.db)?;
    let (seq, hash) = head(&fx.db)?;
    ok(&fx.db, &["verify"])?;
    ok(
        &fx.db,
        &["--json", "verify", "--head", &format!("{seq}:{hash}")],
    )?;
    ok(&fx.db, &["audit", "--subtree", "conductor"])?;
    assert_eq!(dump(&fx.db)?, before);
    Ok(())
}

#[test]
fn every_stored_hash_is_sha3_256_over_the_documented_encoding() -> TestResult {
    let fx = Fixture::scenario()?;
    let stored = stored_rows(&fx.db)?;
    assert!(
        stored.iter().any(|r| r.4.is_none()),
        "the scenario has a row about no session (F(NULL) is exercised)"
    );
    let mut previous = GENESIS.to_owned();
    for row in &stored {
        assert_eq!(
            row.6, previous,
            "row {} does not link to its predecessor",
            row.0
        );
        assert_eq!(
            row.7,
            documented_hash(row),
            "row {} is not hashed as docs/audit.md says",
            row.0
        );
        previous = row.7.clone();
    }
    // And the CLI's JSON carries the stored chain as it is.
    let json = audit_lines(&fx.db, &[])?;
    assert_eq!(json.len(), stored.len());
    for (j, s) in json.iter().zip(&stored) {
        assert_eq!(j["seq"], s.0);
        assert_eq!(j["prev_hash"], s.6.as_str());
        assert_eq!(j["hash"], s.7.as_str());
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// tampering
// ------------------------------------------------------------------------------------------------

#[test]
fn an_edited_row_fails_verify_at_that_row_with_hash_mismatch() -> TestResult {
    let fx = Fixture::scenario()?;
    let create = audit_lines(
        &fx.db,
        &["--session", "worker-1", "--kind", "session.create"],
    )?;
    let seq = create[0]["seq"].as_i64().ok_or("no seq")?;
    tamper(
        &fx.db,
        &format!("UPDATE audit SET actor = 'mallory' WHERE seq = {seq};"),
    )?;

    let r = run(&fx.db, &["verify"]);
    assert_fails_with_one_line(&r, "verify of an edited row");
    assert!(
        r.stdout.contains(&format!("row {seq}:")),
        "verify does not name row {seq}: {:?}",
        r.stdout
    );
    assert!(r.stdout.starts_with("FAILED"), "{:?}", r.stdout);
    assert!(
        !r.stdout.contains("OK"),
        "a failed verify says OK: {:?}",
        r.stdout
    );

    let (code, v, r) = verify_json(&fx.db, &[])?;
    assert_fails_with_one_line(&r, "--json verify of an edited row");
    assert_eq!(code, Some(1));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["first_bad_seq"], seq, "{v}");
    assert_eq!(v["problem"], "hash_mismatch", "{v}");
    Ok(())
}

#[test]
fn an_edited_detail_or_session_is_a_hash_mismatch_too() -> TestResult {
    for (what, set) in [
        ("detail", "detail = '{}'"),
        ("session", "session_id = NULL"),
        ("time", "at = '2000-01-01T00:00:00.000Z'"),
    ] {
        let fx = Fixture::scenario()?;
        let seq = audit_lines(&fx.db, &["--kind", "posture.grant"])?[0]["seq"]
            .as_i64()
            .ok_or("no seq")?;
        tamper(
            &fx.db,
            &format!("UPDATE audit SET {set} WHERE seq = {seq};"),
        )?;
        let (code, v, r) = verify_json(&fx.db, &[])?;
        assert_fails_with_one_line(&r, &format!("verify of an edited {what}"));
        assert_eq!(code, Some(1), "{what}");
        assert_eq!(v["first_bad_seq"], seq, "{what}: {v}");
        assert_eq!(v["problem"], "hash_mismatch", "{what}: {v}");
    }
    Ok(())
}

#[test]
fn an_edited_and_rehashed_row_fails_verify_at_the_next_row_with_broken_link() -> TestResult {
    let fx = Fixture::scenario()?;
    let seq = audit_lines(&fx.db, &["--kind", "posture.grant"])?[0]["seq"]
        .as_i64()
        .ok_or("no seq")?;
    let mut row = stored_rows(&fx.db)?
        .into_iter()
        .find(|r| r.0 == seq)
        .ok_or("the grant row is not stored")?;
    row.2 = "mallory".to_owned();
    let rehashed = documented_hash(&row);
    tamper(
        &fx.db,
        &format!("UPDATE audit SET actor = 'mallory', hash = '{rehashed}' WHERE seq = {seq};"),
    )?;
    let (code, v, r) = verify_json(&fx.db, &[])?;
    assert_fails_with_one_line(&r, "verify of a re-hashed row");
    assert_eq!(code, Some(1));
    assert_eq!(v["first_bad_seq"], seq + 1, "{v}");
    assert_eq!(v["problem"], "broken_link", "{v}");
    Ok(())
}

#[test]
fn a_row_deleted_in_the_middle_fails_verify_with_a_gap_at_the_next_seq() -> TestResult {
    let fx = Fixture::scenario()?;
    let (last, _) = head(&fx.db)?;
    let middle = last / 2;
    tamper(&fx.db, &format!("DELETE FROM audit WHERE seq = {middle};"))?;

    let r = run(&fx.db, &["verify"]);
    assert_fails_with_one_line(&r, "verify after deleting a middle row");
    assert!(
        r.stdout.contains(&format!("row {}:", middle + 1)),
        "verify does not name row {}: {:?}",
        middle + 1,
        r.stdout
    );

    let (code, v, r) = verify_json(&fx.db, &[])?;
    assert_fails_with_one_line(&r, "--json verify after deleting a middle row");
    assert_eq!(code, Some(1));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["first_bad_seq"], middle + 1, "{v}");
    assert_eq!(v["problem"], "gap", "{v}");
    assert_eq!(v["rows"].as_i64(), Some(last - 1), "{v}");
    Ok(())
}

#[test]
fn the_first_row_deleted_is_a_gap_at_row_2() -> TestResult {
    let fx = Fixture::scenario()?;
    tamper(&fx.db, "DELETE FROM audit WHERE seq = 1;")?;
    let (code, v, _) = verify_json(&fx.db, &[])?;
    assert_eq!(code, Some(1));
    assert_eq!(v["first_bad_seq"], 2, "{v}");
    assert_eq!(v["problem"], "gap", "{v}");
    Ok(())
}

#[test]
fn rows_deleted_from_the_end_pass_plain_verify_but_fail_verify_head_as_truncated() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let saved = format!("{seq}:{hash}");
    drop_the_last_two_rows(&fx.db, seq)?;

    // The chain that is left is whole: plain verify cannot tell.
    let r = run(&fx.db, &["verify"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert!(
        r.stdout
            .starts_with(&format!("OK: {} rows verify; head {}:", seq - 2, seq - 2)),
        "{r:?}"
    );

    // Against the saved head it can.
    let r = run(&fx.db, &["verify", "--head", &saved]);
    assert_fails_with_one_line(&r, "verify --head after truncation");
    assert!(r.stdout.starts_with("FAILED"), "{r:?}");
    assert!(r.stdout.contains(&format!("row {seq}:")), "{r:?}");

    let (code, v, r) = verify_json(&fx.db, &["--head", &saved])?;
    assert_fails_with_one_line(&r, "--json verify --head after truncation");
    assert_eq!(code, Some(1));
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["first_bad_seq"], seq, "{v}");
    assert_eq!(v["problem"], "truncated", "{v}");
    assert_eq!(v["head"]["seq"], seq - 2, "{v}");
    Ok(())
}

#[test]
fn a_tail_truncated_and_rewritten_past_the_saved_head_is_a_head_mismatch() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    drop_the_last_two_rows(&fx.db, seq)?;
    // The library extends the shortened chain as if nothing happened.
    ok(&fx.db, &["create", "forged-1", "--actor", "mallory"])?;
    ok(&fx.db, &["create", "forged-2", "--actor", "mallory"])?;
    assert_eq!(head(&fx.db)?.0, seq);
    assert!(ok(&fx.db, &["verify"])?.starts_with("OK"));

    let (code, v, r) = verify_json(&fx.db, &["--head", &format!("{seq}:{hash}")])?;
    assert_fails_with_one_line(&r, "verify --head after a rewritten tail");
    assert_eq!(code, Some(1));
    assert_eq!(v["first_bad_seq"], seq, "{v}");
    assert_eq!(v["problem"], "head_mismatch", "{v}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// a malformed --head
// ------------------------------------------------------------------------------------------------

#[test]
fn verify_refuses_a_malformed_head_with_one_line_and_exit_code_1() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let upper = format!("{seq}:{}", hash.to_uppercase());
    assert_ne!(upper, format!("{seq}:{hash}"), "the hash has letters");
    let short = format!("{seq}:{}", &hash[1..]);
    let long = format!("{seq}:{hash}0");
    let negative = format!("-1:{hash}");
    let no_seq = format!(":{hash}");
    let spaced = format!(" {seq}:{hash}");
    let before = dump(&fx.db)?;
    for bad in [
        "12",
        "x:y",
        upper.as_str(),
        short.as_str(),
        long.as_str(),
        negative.as_str(),
        no_seq.as_str(),
        spaced.as_str(),
        "",
        ":",
    ] {
        // `--head=VALUE`, so that clap takes `-1:...` as a value and not as a flag.
        let arg = format!("--head={bad}");
        for json in [false, true] {
            let args: Vec<&str> = if json {
                vec!["--json", "verify", &arg]
            } else {
                vec!["verify", &arg]
            };
            let r = run(&fx.db, &args);
            assert_refused(&r, &format!("verify --head {bad:?}"));
            assert_mentions(&r, "head");
        }
    }
    assert_eq!(dump(&fx.db)?, before, "a refused verify changed the ledger");
    Ok(())
}

#[test]
fn a_malformed_head_is_refused_before_the_ledger_is_read() -> TestResult {
    let fx = Fixture::empty()?;
    // No ledger here: the head is judged first, so the error is about the head.
    for bad in ["12", "x:y"] {
        let r = run(&fx.db, &["verify", "--head", bad]);
        assert_refused(&r, &format!("verify --head {bad:?} with no ledger"));
        assert_mentions(&r, "head");
        assert_mentions(&r, bad);
    }
    assert!(!fx.db.exists(), "verify created the ledger file");
    assert_eq!(std::fs::read_dir(fx.dir())?.count(), 0);
    Ok(())
}

#[test]
fn verify_of_a_missing_ledger_is_refused_without_creating_it() -> TestResult {
    let fx = Fixture::empty()?;
    for args in [
        &["verify"][..],
        &["audit", "head"],
        &["explain", "conductor"],
    ] {
        let r = run(&fx.db, args);
        assert_refused(&r, &args.join(" "));
        assert_mentions(&r, "no ledger");
    }
    assert!(!fx.db.exists());
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit --json
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_json_prints_one_object_per_line_with_exactly_the_documented_fields() -> TestResult {
    let fx = Fixture::scenario()?;
    let out = ok(&fx.db, &["--json", "audit"])?;
    let expected = BTreeSet::from([
        "seq",
        "at",
        "actor",
        "kind",
        "session",
        "detail",
        "prev_hash",
        "hash",
    ]);
    let mut previous_seq = 0;
    let mut saw_no_session = false;
    for line in out.lines() {
        let v: Value = serde_json::from_str(line)?;
        let obj = v.as_object().ok_or("an audit line is not an object")?;
        let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
        assert_eq!(keys, expected, "{line}");
        let seq = v["seq"].as_i64().ok_or("seq is not an integer")?;
        assert_eq!(
            seq,
            previous_seq + 1,
            "rows are not consecutive, oldest first"
        );
        previous_seq = seq;
        let at = v["at"].as_str().ok_or("at is not text")?;
        assert_eq!(at.len(), "2026-01-01T00:00:00.000Z".len(), "at: {at}");
        assert!(at.ends_with('Z'), "at: {at}");
        assert!(v["actor"].is_string() && v["kind"].is_string(), "{line}");
        assert!(v["session"].is_string() || v["session"].is_null(), "{line}");
        saw_no_session |= v["session"].is_null();
        assert!(v["detail"].is_object(), "{line}");
        for field in ["prev_hash", "hash"] {
            let h = v[field].as_str().ok_or("a hash is not text")?;
            assert!(is_lower_hex_64(h), "{field}: {h}");
        }
    }
    assert!(previous_seq > 15, "{out}");
    assert!(
        saw_no_session,
        "the epoch.start row has a null session: {out}"
    );
    Ok(())
}

#[test]
fn audit_json_rows_chain_each_prev_hash_to_the_previous_rows_hash() -> TestResult {
    let fx = Fixture::scenario()?;
    let rows = audit_lines(&fx.db, &[])?;
    assert_eq!(rows[0]["prev_hash"], GENESIS);
    for pair in rows.windows(2) {
        assert_eq!(pair[1]["prev_hash"], pair[0]["hash"], "{pair:?}");
    }
    let hashes: BTreeSet<&str> = rows.iter().filter_map(|r| r["hash"].as_str()).collect();
    assert_eq!(hashes.len(), rows.len(), "two rows share a hash");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit --subtree
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_subtree_keeps_rows_about_the_session_and_its_created_and_spawned_descendants_only(
) -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let subtree = [
        "worker-1",
        "worker-1a",
        "sub-worker-1-1",
        "sub-worker-1-2",
        "sub-sub-worker-1-2-1",
    ];
    let expected: Vec<Value> = all
        .iter()
        .filter(|r| r["session"].as_str().is_some_and(|s| subtree.contains(&s)))
        .cloned()
        .collect();
    let got = audit_lines(&fx.db, &["--subtree", "worker-1"])?;
    assert_eq!(got, expected);
    for id in subtree {
        assert!(
            got.iter().any(|r| r["session"] == id),
            "no row about {id} in the subtree of worker-1: {got:?}"
        );
    }
    assert!(
        got.iter().any(|r| r["kind"] == "session.spawn"),
        "spawned descendants are in the subtree: {got:?}"
    );
    assert!(got.len() < all.len());
    Ok(())
}

#[test]
fn audit_subtree_of_a_root_leaves_out_other_trees_and_rows_about_no_session() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let got = audit_lines(&fx.db, &["--subtree", "conductor"])?;
    let outside = ["other", "other-child"];
    let expected: Vec<Value> = all
        .iter()
        .filter(|r| r["session"].as_str().is_some_and(|s| !outside.contains(&s)))
        .cloned()
        .collect();
    assert_eq!(got, expected);
    assert!(got.iter().any(|r| r["session"] == "worker-2"));
    assert!(got.iter().any(|r| r["session"] == "sub-sub-worker-1-2-1"));

    let other = audit_lines(&fx.db, &["--subtree", "other"])?;
    let sessions: BTreeSet<&str> = other.iter().filter_map(|r| r["session"].as_str()).collect();
    assert_eq!(sessions, BTreeSet::from(["other", "other-child"]));
    Ok(())
}

#[test]
fn audit_subtree_of_a_leaf_is_its_own_rows_and_of_a_spawned_session_takes_in_its_spawned_child(
) -> TestResult {
    let fx = Fixture::scenario()?;
    assert_eq!(
        audit_lines(&fx.db, &["--subtree", "worker-1a"])?,
        audit_lines(&fx.db, &["--session", "worker-1a"])?
    );
    let all = audit_lines(&fx.db, &[])?;
    let expected: Vec<Value> = all
        .iter()
        .filter(|r| r["session"] == "sub-worker-1-2" || r["session"] == "sub-sub-worker-1-2-1")
        .cloned()
        .collect();
    assert!(expected.len() >= 2, "{expected:?}");
    assert_eq!(
        audit_lines(&fx.db, &["--subtree", "sub-worker-1-2"])?,
        expected
    );
    Ok(())
}

#[test]
fn audit_subtree_combines_with_kind_and_limit() -> TestResult {
    let fx = Fixture::scenario()?;
    let creates = audit_lines(
        &fx.db,
        &["--subtree", "conductor", "--kind", "session.create"],
    )?;
    let sessions: Vec<&str> = creates
        .iter()
        .filter_map(|r| r["session"].as_str())
        .collect();
    assert_eq!(sessions, ["worker-1", "worker-2", "worker-1a"]);
    let last = audit_lines(&fx.db, &["--subtree", "worker-1", "--limit", "2"])?;
    let whole = audit_lines(&fx.db, &["--subtree", "worker-1"])?;
    assert_eq!(last, whole[whole.len() - 2..]);
    Ok(())
}

#[test]
fn audit_subtree_of_an_unknown_id_lists_no_rows_and_succeeds() -> TestResult {
    let fx = Fixture::scenario()?;
    // The code lists nothing (an empty subtree), rather than refusing.
    for id in ["nobody", "sub-worker-1-9"] {
        let r = run(&fx.db, &["--json", "audit", "--subtree", id]);
        assert_eq!(r.status.code(), Some(0), "{id}: {r:?}");
        assert!(r.stdout.is_empty(), "{id}: {r:?}");
        assert!(r.stderr.is_empty(), "{id}: {r:?}");
    }
    // And looking did not record the spawned-looking id.
    assert!(audit_lines(&fx.db, &["--session", "sub-worker-1-9"])?.is_empty());
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sessions WHERE id = 'sub-worker-1-9'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(n, 0);
    Ok(())
}

#[test]
fn audit_subtree_refuses_a_malformed_id() -> TestResult {
    let fx = Fixture::scenario()?;
    let long = "x".repeat(129);
    for bad in ["a b", "", "a/b", long.as_str()] {
        let r = run(&fx.db, &["--json", "audit", "--subtree", bad]);
        assert_refused(&r, &format!("audit --subtree {bad:?}"));
        assert_mentions(&r, "id");
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit --since / --until
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_since_keeps_the_rows_at_or_after_the_time() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    assert!(times.len() >= 4, "the scenario's rows need distinct times");
    let since = times[times.len() / 2].clone();
    let got = audit_lines(&fx.db, &["--since", &since])?;
    assert_eq!(got, rows_where(&all, |at| at >= since.as_str()));
    assert!(
        got.iter().any(|r| r["at"] == since.as_str()),
        "a row exactly at --since is kept"
    );
    assert!(!got.is_empty() && got.len() < all.len());
    Ok(())
}

#[test]
fn audit_until_keeps_the_rows_before_the_time() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    let until = times[times.len() / 2].clone();
    let got = audit_lines(&fx.db, &["--until", &until])?;
    assert_eq!(got, rows_where(&all, |at| at < until.as_str()));
    assert!(
        got.iter().all(|r| r["at"] != until.as_str()),
        "a row exactly at --until is left out"
    );
    assert!(!got.is_empty() && got.len() < all.len());
    Ok(())
}

#[test]
fn audit_since_and_until_together_keep_a_window_and_combine_with_other_filters() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    let since = times[times.len() / 4].clone();
    let until = times[3 * times.len() / 4].clone();
    let got = audit_lines(&fx.db, &["--since", &since, "--until", &until])?;
    let expected = rows_where(&all, |at| at >= since.as_str() && at < until.as_str());
    assert_eq!(got, expected);
    assert!(!got.is_empty());
    assert!(got.len() < all.len() - 1);

    let in_subtree = audit_lines(
        &fx.db,
        &[
            "--subtree",
            "conductor",
            "--since",
            &since,
            "--until",
            &until,
        ],
    )?;
    let expected: Vec<Value> = expected
        .into_iter()
        .filter(|r| {
            r["session"].is_string() && r["session"] != "other" && r["session"] != "other-child"
        })
        .collect();
    assert_eq!(in_subtree, expected);

    // An empty window and an inverted one list nothing.
    assert!(audit_lines(&fx.db, &["--since", &since, "--until", &since])?.is_empty());
    assert!(audit_lines(&fx.db, &["--since", &until, "--until", &since])?.is_empty());
    Ok(())
}

#[test]
fn audit_times_with_an_offset_mean_the_same_instant() -> TestResult {
    use chrono::{DateTime, FixedOffset, SecondsFormat};
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    let since = times[times.len() / 3].clone();
    let east = FixedOffset::east_opt(5 * 3600 + 30 * 60).ok_or("offset")?;
    let shifted = DateTime::parse_from_rfc3339(&since)?
        .with_timezone(&east)
        .to_rfc3339_opts(SecondsFormat::Millis, false);
    assert!(shifted.ends_with("+05:30"), "{shifted}");
    assert_eq!(
        audit_lines(&fx.db, &["--since", &shifted])?,
        audit_lines(&fx.db, &["--since", &since])?
    );
    assert_eq!(
        audit_lines(&fx.db, &["--until", &shifted])?,
        audit_lines(&fx.db, &["--until", &since])?
    );
    // Whole seconds, without a fraction, are RFC 3339 too.
    assert_eq!(
        audit_lines(&fx.db, &["--since", "2000-01-01T00:00:00Z"])?,
        all
    );
    assert!(audit_lines(&fx.db, &["--since", "2999-01-01T00:00:00Z"])?.is_empty());
    Ok(())
}

#[test]
fn audit_since_with_sub_millisecond_precision_leaves_out_a_row_just_before_it() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    let at = times[times.len() / 2].clone();
    // Half a millisecond after the row's time: the row is before the bound.
    let since = format!("{}5Z", at.trim_end_matches('Z'));
    let got = audit_lines(&fx.db, &["--since", &since])?;
    assert!(
        got.iter().all(|r| r["at"] != at.as_str()),
        "rows at {at} are before --since {since} but were kept: {:?}",
        seqs(&got)
    );
    assert_eq!(got, rows_where(&all, |t| t > at.as_str()));
    Ok(())
}

#[test]
fn audit_until_with_sub_millisecond_precision_keeps_a_row_just_before_it() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let times = distinct_times(&all);
    let at = times[times.len() / 2].clone();
    let until = format!("{}5Z", at.trim_end_matches('Z'));
    let got = audit_lines(&fx.db, &["--until", &until])?;
    assert!(
        got.iter().any(|r| r["at"] == at.as_str()),
        "rows at {at} are before --until {until} but were left out: {:?}",
        seqs(&got)
    );
    assert_eq!(got, rows_where(&all, |t| t <= at.as_str()));
    Ok(())
}

#[test]
fn audit_refuses_a_malformed_time_with_one_line() -> TestResult {
    let fx = Fixture::scenario()?;
    let before = dump(&fx.db)?;
    for bad in [
        "yesterday",
        "2026-11-30",
        "2026-11-30T12:00:00",
        "2026-11-30 12:00",
        "2026-13-01T00:00:00Z",
        "",
    ] {
        for flag in ["--since", "--until"] {
            let r = run(&fx.db, &["--json", "audit", flag, bad]);
            assert_refused(&r, &format!("audit {flag} {bad:?}"));
            assert_mentions(&r, "time");
        }
    }
    assert_eq!(dump(&fx.db)?, before);
    Ok(())
}

#[test]
fn a_malformed_time_is_refused_before_the_ledger_is_read() -> TestResult {
    let fx = Fixture::empty()?;
    let r = run(&fx.db, &["audit", "--since", "yesterday"]);
    assert_refused(&r, "audit --since yesterday with no ledger");
    assert_mentions(&r, "yesterday");
    assert!(!fx.db.exists());
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// explain
// ------------------------------------------------------------------------------------------------

/// The lines of `explain` after its "audit rows:" line.
fn explained_audit_rows(text: &str) -> TestResult<Vec<String>> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == "audit rows:")
        .ok_or_else(|| format!("explain lists no audit rows: {text}"))?;
    Ok(lines.map(str::to_owned).collect())
}

#[test]
fn explain_text_shows_an_inherited_posture_chain_back_to_the_operator_and_the_grant_row(
) -> TestResult {
    let fx = Fixture::scenario()?;
    let grant = audit_lines(
        &fx.db,
        &["--session", "conductor", "--kind", "posture.grant"],
    )?;
    assert_eq!(grant.len(), 1);
    let grant_seq = grant[0]["seq"].as_i64().ok_or("no seq")?;

    let text = ok(&fx.db, &["explain", "worker-1"])?;
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("worker-1 "), "{text}");
    assert!(first.contains("by conductor"), "{text}");
    // The label: materialized by inheritance from the conductor.
    let label = text
        .lines()
        .find(|l| l.trim_start().starts_with("label:"))
        .ok_or_else(|| format!("no label line: {text}"))?;
    assert!(label.contains("inherited from conductor"), "{label}");
    // The posture: the chain and the operator who granted it at the top.
    let posture = text
        .lines()
        .find(|l| l.trim_start().starts_with("posture:"))
        .ok_or_else(|| format!("no posture line: {text}"))?;
    assert!(posture.contains("trust"), "{posture}");
    assert!(posture.contains("conductor > worker-1"), "{posture}");
    assert!(posture.contains("alice"), "{posture}");
    assert!(posture.contains("counts now"), "{posture}");
    // The grant's audit row.
    let granted = text
        .lines()
        .find(|l| l.trim_start().starts_with("granted:"))
        .ok_or_else(|| format!("no grant line: {text}"))?;
    assert!(
        granted.contains(&format!("audit row {grant_seq} ")),
        "{granted}"
    );
    assert!(granted.contains("alice"), "{granted}");
    // Every audit row about it, as `audit --session` prints them.
    let rows = explained_audit_rows(&text)?;
    let expected: Vec<String> = ok(&fx.db, &["audit", "--session", "worker-1"])?
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(expected.len() >= 2, "{expected:?}");
    assert_eq!(rows, expected);
    Ok(())
}

#[test]
fn explain_text_shows_a_roots_label_grant_patterns_and_live_scopes() -> TestResult {
    let fx = Fixture::scenario()?;
    let text = ok(&fx.db, &["explain", "conductor"])?;
    assert!(
        text.lines().next().unwrap_or_default().contains("root"),
        "{text}"
    );
    let label = text
        .lines()
        .find(|l| l.trim_start().starts_with("label:"))
        .ok_or_else(|| format!("no label line: {text}"))?;
    assert!(label.contains("secret"), "{label}");
    assert!(label.contains("born"), "{label}");
    assert!(
        label.contains("raised"),
        "the raise is part of the provenance: {label}"
    );
    let posture = text
        .lines()
        .find(|l| l.trim_start().starts_with("posture:"))
        .ok_or_else(|| format!("no posture line: {text}"))?;
    assert!(posture.contains("trust granted by alice"), "{posture}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("pattern:")
            && l.contains("\"npm test\"")
            && l.contains("alice")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("scope:")
            && l.contains("hotfix")
            && l.contains("alice")),
        "{text}"
    );
    assert_eq!(
        explained_audit_rows(&text)?,
        ok(&fx.db, &["audit", "--session", "conductor"])?
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn explain_of_an_unmaterialized_child_says_so_and_still_traces_its_posture() -> TestResult {
    let fx = Fixture::scenario()?;
    let text = ok(&fx.db, &["explain", "worker-1a"])?;
    let label = text
        .lines()
        .find(|l| l.trim_start().starts_with("label:"))
        .ok_or_else(|| format!("no label line: {text}"))?;
    assert!(label.contains("not materialized"), "{label}");
    let posture = text
        .lines()
        .find(|l| l.trim_start().starts_with("posture:"))
        .ok_or_else(|| format!("no posture line: {text}"))?;
    assert!(
        posture.contains("conductor > worker-1 > worker-1a"),
        "{posture}"
    );
    assert!(posture.contains("alice"), "{posture}");
    Ok(())
}

#[test]
fn explain_json_has_exactly_session_state_grant_patterns_live_scopes_and_audit() -> TestResult {
    let fx = Fixture::scenario()?;
    let grant = audit_lines(
        &fx.db,
        &["--session", "conductor", "--kind", "posture.grant"],
    )?;
    for id in ["conductor", "worker-1", "worker-1a", "other-child"] {
        let v = ok_json(&fx.db, &["explain", id])?;
        let keys: BTreeSet<&str> = v
            .as_object()
            .ok_or("explain --json is not an object")?
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            BTreeSet::from([
                "session",
                "state",
                "grant",
                "patterns",
                "live_scopes",
                "audit"
            ]),
            "{id}: {v}"
        );
        assert_eq!(v["session"]["id"], id, "{v}");
        assert_eq!(v["state"]["session"], id, "{v}");
        let audit = v["audit"].as_array().ok_or("audit is not an array")?;
        assert_eq!(*audit, audit_lines(&fx.db, &["--session", id])?, "{id}");
        if id == "other-child" {
            assert_eq!(v["grant"], Value::Null, "{v}");
            assert_eq!(v["state"]["posture"], Value::Null, "{v}");
        } else {
            assert_eq!(
                v["grant"], grant[0],
                "{id}: the grant is the operator's grant row"
            );
        }
    }
    Ok(())
}

#[test]
fn explain_json_carries_the_chain_the_label_provenance_and_the_grants() -> TestResult {
    let fx = Fixture::scenario()?;
    let v = ok_json(&fx.db, &["explain", "worker-1a"])?;
    assert_eq!(
        v["state"]["posture"]["chain"],
        serde_json::json!(["conductor", "worker-1", "worker-1a"])
    );
    assert_eq!(v["state"]["posture"]["granted_by"], "alice");
    assert_eq!(v["state"]["posture"]["granted_on"], "conductor");
    assert_eq!(v["state"]["materialized"], Value::Null, "{v}");
    assert_eq!(
        v["patterns"],
        serde_json::json!([]),
        "patterns are not inherited"
    );
    assert_eq!(
        v["live_scopes"],
        serde_json::json!([]),
        "scopes are not inherited"
    );

    let v = ok_json(&fx.db, &["explain", "conductor"])?;
    let patterns = v["patterns"].as_array().ok_or("patterns is not an array")?;
    assert_eq!(patterns.len(), 1, "{v}");
    assert_eq!(patterns[0]["pattern"], "npm test");
    assert_eq!(patterns[0]["added_by"], "alice");
    let scopes = v["live_scopes"]
        .as_array()
        .ok_or("live_scopes is not an array")?;
    assert_eq!(scopes.len(), 1, "{v}");
    assert_eq!(scopes[0]["name"], "hotfix");
    assert_eq!(v["grant"]["kind"], "posture.grant");
    assert_eq!(v["grant"]["actor"], "alice");
    assert_eq!(v["grant"]["session"], "conductor");

    let v = ok_json(&fx.db, &["explain", "sub-worker-1-1"])?;
    assert_eq!(v["session"]["origin"], "spawned", "{v}");
    assert_eq!(v["session"]["created_by"], "worker-1", "{v}");
    assert_eq!(v["state"]["materialized"]["how"], "inherited", "{v}");
    assert_eq!(v["state"]["materialized"]["from"], "conductor", "{v}");
    assert_eq!(v["state"]["taint"], "secret", "{v}");
    Ok(())
}

#[test]
fn explain_lists_only_live_scopes() -> TestResult {
    let fx = Fixture::scenario()?;
    ok(
        &fx.db,
        &[
            "scope",
            "grant",
            "conductor",
            "withdrawn",
            "--ttl",
            "2h",
            "--actor",
            "bob",
        ],
    )?;
    ok(
        &fx.db,
        &[
            "scope",
            "revoke",
            "conductor",
            "withdrawn",
            "--actor",
            "bob",
        ],
    )?;
    ok(
        &fx.db,
        &[
            "scope",
            "grant",
            "conductor",
            "brief",
            "--ttl",
            "1s",
            "--actor",
            "bob",
        ],
    )?;
    std::thread::sleep(Duration::from_millis(1_300));
    let v = ok_json(&fx.db, &["explain", "conductor"])?;
    let names: Vec<&str> = v["live_scopes"]
        .as_array()
        .ok_or("live_scopes is not an array")?
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["hotfix"], "{v}");
    let text = ok(&fx.db, &["explain", "conductor"])?;
    let scope_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("scope:"))
        .collect();
    assert_eq!(scope_lines.len(), 1, "{text}");
    assert!(scope_lines[0].contains("hotfix"), "{text}");
    Ok(())
}

#[test]
fn explain_after_a_cascade_shows_no_posture_and_the_revocation_row() -> TestResult {
    let fx = Fixture::scenario()?;
    ok(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--actor", "carol"],
    )?;
    let v = ok_json(&fx.db, &["explain", "worker-1"])?;
    assert_eq!(v["state"]["posture"], Value::Null, "{v}");
    assert_eq!(v["grant"], Value::Null, "{v}");
    let audit = v["audit"].as_array().ok_or("audit is not an array")?;
    let revoke = audit
        .iter()
        .find(|r| r["kind"] == "posture.revoke")
        .ok_or_else(|| format!("no revocation row: {v}"))?;
    assert_eq!(revoke["actor"], "carol");
    assert_eq!(revoke["detail"]["propagation"], "cascade");
    let text = ok(&fx.db, &["explain", "worker-1"])?;
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("posture:") && l.contains("none")),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("granted:")),
        "{text}"
    );
    Ok(())
}

#[test]
fn explain_of_an_unknown_id_is_refused() -> TestResult {
    let fx = Fixture::scenario()?;
    let before = dump(&fx.db)?;
    for args in [
        &["explain", "nobody"][..],
        &["--json", "explain", "nobody"],
        &["explain", "sub-worker-1-9"],
        &["explain", "sub-sub-worker-2-4-1"],
    ] {
        let r = run(&fx.db, args);
        assert_refused(&r, &args.join(" "));
        assert_mentions(&r, args.last().copied().unwrap_or_default());
    }
    // Explaining an unrecorded spawned id did not record it (or its parent chain).
    assert_eq!(dump(&fx.db)?, before);
    Ok(())
}

#[test]
fn explain_refuses_a_malformed_id() -> TestResult {
    let fx = Fixture::scenario()?;
    for bad in ["a b", "", "a/b"] {
        let r = run(&fx.db, &["explain", bad]);
        assert_refused(&r, &format!("explain {bad:?}"));
        assert_mentions(&r, "id");
    }
    Ok(())
}

#[test]
fn explain_writes_nothing_and_an_unmaterialized_child_stays_unmaterialized() -> TestResult {
    let fx = Fixture::scenario()?;
    let before = dump(&fx.db)?;
    let audit_before = ok(&fx.db, &["--json", "audit"])?;
    for id in ["worker-1a", "worker-2", "conductor", "sub-sub-worker-1-2-1"] {
        ok(&fx.db, &["explain", id])?;
        ok(&fx.db, &["--json", "explain", id])?;
    }
    assert_eq!(ok(&fx.db, &["--json", "audit"])?, audit_before);
    assert_eq!(dump(&fx.db)?, before);
    // Still unmaterialized: no label row, and explain still says so.
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM labels WHERE session_id IN ('worker-1a', 'worker-2')",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(n, 0, "explain materialized a label");
    assert_eq!(
        ok_json(&fx.db, &["explain", "worker-2"])?["state"]["materialized"],
        Value::Null
    );
    // The first real read still inherits, from the conductor as it is now.
    let state = ok_json(&fx.db, &["state", "worker-2"])?;
    assert_eq!(state["taint"], "secret", "{state}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// pages: --limit and --before
// ------------------------------------------------------------------------------------------------

/// `audit ARGS...` (with `--json` when asked): (rows' seqs, stderr).
fn audit_page(db: &Path, json: bool, args: &[&str]) -> TestResult<(Vec<i64>, String)> {
    let mut all = Vec::new();
    if json {
        all.push("--json");
    }
    all.push("audit");
    all.extend_from_slice(args);
    let r = run(db, &all);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let seqs = if json {
        r.stdout
            .lines()
            .map(|l| {
                Ok(serde_json::from_str::<Value>(l)?["seq"]
                    .as_i64()
                    .ok_or("seq")?)
            })
            .collect::<TestResult<Vec<i64>>>()?
    } else {
        r.stdout
            .lines()
            .map(|l| Ok(l.split_whitespace().next().ok_or("empty line")?.parse()?))
            .collect::<TestResult<Vec<i64>>>()?
    };
    Ok((seqs, r.stderr))
}

#[test]
fn audit_before_lists_the_newest_rows_before_that_seq_oldest_first() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seqs, _) = audit_page(&fx.db, true, &["--before", "9"])?;
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7, 8]);
    let (seqs, _) = audit_page(&fx.db, true, &["--before", "9", "--limit", "3"])?;
    assert_eq!(seqs, [6, 7, 8]);
    let (seqs, _) = audit_page(&fx.db, true, &["--before", "9", "--session", "conductor"])?;
    let expected: Vec<i64> = seqs_where(&fx.db, "session_id = 'conductor' AND seq < 9")?;
    assert_eq!(seqs, expected);
    for bad in ["0", "-3", "x"] {
        let r = run(&fx.db, &["audit", &format!("--before={bad}")]);
        assert_eq!(r.status.code(), Some(2), "--before {bad}: {r:?}");
        assert_one_error_line(&r, "a bad --before");
    }
    Ok(())
}

/// The seqs of the audit rows matching `condition`, by seq, read with SQL.
fn seqs_where(db: &Path, condition: &str) -> TestResult<Vec<i64>> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut stmt = conn.prepare(&format!(
        "SELECT seq FROM audit WHERE {condition} ORDER BY seq"
    ))?;
    let seqs = stmt.query_map([], |r| r.get(0))?;
    Ok(seqs.collect::<Result<_, _>>()?)
}

#[test]
fn audit_limit_names_the_next_page_on_stderr_and_the_pages_cover_the_trail() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = seqs(&audit_lines(&fx.db, &[])?);
    for json in [false, true] {
        let mut walked: Vec<Vec<i64>> = Vec::new();
        let mut args = vec!["--limit".to_owned(), "4".to_owned()];
        loop {
            let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
            let (page, stderr) = audit_page(&fx.db, json, &borrowed)?;
            let oldest = *page.first().ok_or("an empty page")?;
            walked.push(page);
            if stderr.is_empty() {
                break;
            }
            assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
            let next = if json {
                let hint: Value = serde_json::from_str(&stderr)?;
                assert_eq!(
                    hint.as_object().map(|o| o.len()),
                    Some(1),
                    "only next_before: {hint}"
                );
                hint["next_before"].as_i64().ok_or("next_before")?
            } else {
                stderr
                    .trim_end()
                    .strip_prefix("next page: --before ")
                    .ok_or_else(|| format!("no next page hint: {stderr:?}"))?
                    .parse()?
            };
            assert_eq!(next, oldest, "the next page starts before this one");
            args = vec![
                "--limit".to_owned(),
                "4".to_owned(),
                "--before".to_owned(),
                next.to_string(),
            ];
        }
        assert!(walked.len() > 3, "{walked:?}");
        let joined: Vec<i64> = walked.into_iter().rev().flatten().collect();
        assert_eq!(joined, all, "json {json}");
    }
    Ok(())
}

#[test]
fn audit_names_no_next_page_when_nothing_older_matches() -> TestResult {
    let fx = Fixture::scenario()?;
    let all = seqs(&audit_lines(&fx.db, &[])?);
    let n = all.len().to_string();
    // Exactly the whole trail in one page, a larger limit, and no limit at all.
    for args in [&["--limit", n.as_str()][..], &["--limit", "10000"], &[]] {
        for json in [false, true] {
            let (page, stderr) = audit_page(&fx.db, json, args)?;
            assert_eq!(page, all);
            assert!(stderr.is_empty(), "{args:?}: {stderr:?}");
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// verify --from
// ------------------------------------------------------------------------------------------------

#[test]
fn verify_from_a_saved_head_checks_only_the_rows_after_it() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let saved = format!("{seq}:{hash}");
    for i in 0..5 {
        ok(
            &fx.db,
            &["create", &format!("later-{i}"), "--actor", "dave"],
        )?;
    }
    let (now, now_hash) = head(&fx.db)?;
    let r = run(&fx.db, &["verify", "--from", &saved]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!("OK: 6 rows verify from row {seq}; head {now}:{now_hash}\n")
    );

    // A row edited before the saved head: verify --from passes, the full walk does not.
    tamper(&fx.db, "UPDATE audit SET actor = 'mallory' WHERE seq = 2;")?;
    let (code, v, r) = verify_json(&fx.db, &["--from", &saved])?;
    assert_eq!(code, Some(0), "{r:?}");
    assert_eq!(v["rows"], 6, "{v}");
    let (code, v, _) = verify_json(&fx.db, &[])?;
    assert_eq!(
        (code, &v["first_bad_seq"]),
        (Some(1), &Value::from(2)),
        "{v}"
    );

    // A row edited after it fails verify --from at that row (the triggers are gone already).
    Connection::open(&fx.db)?.execute(
        "UPDATE audit SET actor = 'mallory' WHERE seq = ?1",
        [seq + 2],
    )?;
    let r = run(&fx.db, &["verify", "--from", &saved]);
    assert_fails_with_one_line(&r, "verify --from after an edit past the head");
    assert!(
        r.stdout.starts_with(&format!("FAILED at row {}:", seq + 2)),
        "{r:?}"
    );
    let (_, v, _) = verify_json(&fx.db, &["--from", &saved])?;
    assert_eq!(v["problem"], "hash_mismatch", "{v}");
    Ok(())
}

#[test]
fn verify_from_a_head_cut_off_or_replaced_fails() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let saved = format!("{seq}:{hash}");
    drop_the_last_two_rows(&fx.db, seq)?;
    let (code, v, r) = verify_json(&fx.db, &["--from", &saved])?;
    assert_fails_with_one_line(&r, "verify --from after truncation");
    assert_eq!(code, Some(1));
    assert_eq!(
        (&v["first_bad_seq"], &v["problem"]),
        (&Value::from(seq), &Value::from("truncated")),
        "{v}"
    );
    ok(&fx.db, &["create", "forged-1", "--actor", "mallory"])?;
    ok(&fx.db, &["create", "forged-2", "--actor", "mallory"])?;
    let (code, v, _) = verify_json(&fx.db, &["--from", &saved])?;
    assert_eq!(code, Some(1));
    assert_eq!(v["problem"], "head_mismatch", "{v}");
    Ok(())
}

#[test]
fn verify_from_and_head_together_are_refused_as_bad_arguments() -> TestResult {
    let fx = Fixture::scenario()?;
    let (seq, hash) = head(&fx.db)?;
    let saved = format!("{seq}:{hash}");
    let r = run(&fx.db, &["verify", "--from", &saved, "--head", &saved]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert_one_error_line(&r, "verify --from --head");
    for bad in ["12", "x:y", ""] {
        let r = run(&fx.db, &["verify", &format!("--from={bad}")]);
        assert_refused(&r, &format!("verify --from {bad:?}"));
        assert_mentions(&r, "head");
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// revocation events
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_json_shows_the_revocation_id_every_row_of_a_cascade_shares() -> TestResult {
    let fx = Fixture::scenario()?;
    let first = head(&fx.db)?.0 + 1;
    ok(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--actor", "carol"],
    )?;
    ok(
        &fx.db,
        &["trust", "conductor", "--full", "--actor", "alice"],
    )?;
    ok(
        &fx.db,
        &[
            "create",
            "worker-3",
            "--by",
            "conductor",
            "--actor",
            "alice",
        ],
    )?;
    let second = head(&fx.db)?.0 + 1;
    ok(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--actor", "carol"],
    )?;
    let revokes = audit_lines(&fx.db, &["--kind", "posture.revoke"])?;
    let ids: Vec<(i64, i64)> = revokes
        .iter()
        .map(|r| {
            (
                r["seq"].as_i64().unwrap_or(0),
                r["detail"]["revocation"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert!(ids.len() >= 4, "{ids:?}");
    for (seq, id) in &ids {
        let expected = if *seq < second { first } else { second };
        assert_eq!(*id, expected, "{ids:?}");
    }
    assert_eq!(
        ids.iter().filter(|(_, id)| *id == second).count(),
        2,
        "{ids:?}"
    );
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let events: i64 = conn.query_row(
        "SELECT count(DISTINCT revocation) FROM revocations",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(events, 2);
    assert!(ok(&fx.db, &["verify"])?.starts_with("OK"));
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// the command line's small promises: known kinds, a broken chain under --json, a closed stdout
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_kind_refuses_an_unknown_kind_with_a_usage_error_that_lists_the_known_kinds() -> TestResult
{
    let fx = Fixture::scenario()?;
    for bad in ["session.craete", "bogus", "SESSION.CREATE", "label.*"] {
        let r = refused_unchanged(&fx.db, &["audit", "--kind", bad])?;
        assert_eq!(r.status.code(), Some(2), "--kind {bad:?}: {}", r.stderr);
        for kind in session_ledger::AuditKind::ALL {
            assert_mentions(&r, kind.as_str());
        }
    }
    let r = run(&fx.db, &["--json", "audit", "--kind", "bogus"]);
    assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
    let e = json_error(&r, "--json audit --kind bogus")?;
    assert_eq!(e["kind"], "usage", "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("session.create_refused")),
        "{e}"
    );
    // Every known kind is still accepted, and filters.
    for kind in session_ledger::AuditKind::ALL {
        let rows = audit_lines(&fx.db, &["--kind", kind.as_str()])?;
        assert!(
            rows.iter().all(|r| r["kind"] == kind.as_str()),
            "--kind {kind}"
        );
    }
    Ok(())
}

#[test]
fn a_chain_that_does_not_verify_under_json_is_an_unverified_chain_error_on_stderr() -> TestResult {
    let fx = Fixture::scenario()?;
    tamper(&fx.db, "UPDATE audit SET actor = 'mallory' WHERE seq = 2;")?;
    let (code, v, r) = verify_json(&fx.db, &[])?;
    assert_eq!(code, Some(1), "{}", r.stderr);
    assert_eq!(v["ok"], false, "{v}");
    let e = json_error(&r, "--json verify of an edited row")?;
    assert_eq!(e["kind"], "unverified_chain", "{e}");
    Ok(())
}

#[test]
fn a_closed_stdout_ends_the_command_quietly_with_the_sigpipe_status() -> TestResult {
    use session_ledger::Propagation;
    use std::io::Read;
    use std::process::Stdio;
    let fx = Fixture::empty()?;
    {
        // About 2,000 rows: far more output than a pipe holds, so the command is still writing
        // when the reader goes away.
        let ledger = trusted_conductor_with_workers(&fx.db, 1_000)?;
        ledger.revoke("conductor", Propagation::Cascade { token: None }, "alice")?;
    }
    for args in [&["audit"][..], &["--json", "audit"]] {
        let what = format!("`{} | head -c 16`", args.join(" "));
        let mut child = command(&fx.db, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first)?;
        drop(stdout);
        let out = child.wait_with_output()?;
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "{what}: printed on stderr"
        );
        // 141 = 128 + SIGPIPE, what a shell reports for a writer whose reader went away.
        assert_eq!(out.status.code(), Some(141), "{what}: {}", out.status);
    }
    Ok(())
}
