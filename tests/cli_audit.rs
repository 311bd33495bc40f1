//! What the command line adds to the library's audit half: the text and `--json`
//! output and exit codes of `verify` and `audit head`, `audit` and its flags (which must narrow
//! the listing exactly as the library's query does), the times it reads, its paging hints on
//! stderr, `explain`, that the read commands write nothing, a closed stdout, and one flow end to
//! end: a head saved with `audit head` and checked later with `verify --head` and `--from`. The
//! rules (A1-A3: the chain, its tamper evidence, the query's filters) are tested against the
//! library in tests/audit.rs, tests/sessions.rs and tests/rules_from_cli.rs.
//!
//! Every test runs the real binary on a ledger in a temporary directory, always with an explicit
//! `--db` and with `SESSION_LEDGER_DB` and `SESSION_LEDGER_ACTOR` removed from the environment.
//! The flows on a ledger (`verify`, `audit head`, `audit`, `explain`, the read commands) run
//! once more, as `postgres::NAME`, on a ledger in a PostgreSQL schema of its own
//! (`--db postgres://...`); those that refuse input before a ledger is read, and the closed
//! stdout, stay on SQLite.

#[macro_use]
mod common;

use common::cli::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::Engine;
use serde_json::{json, Value};
use session_ledger::{AuditKind, AuditQuery, Ledger};

/// The `prev_hash` of the first audit row, as docs/audit.md states it.
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

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
        Ok(Fixture::scenario_on(Engine::Sqlite)?.expect("SQLite is always there"))
    }

    /// [`Fixture::scenario`] on `engine`; `None` when the engine is not available here.
    fn scenario_on(engine: Engine) -> TestResult<Option<Fixture>> {
        let Some(fx) = Fixture::init_on(engine)? else {
            return Ok(None);
        };
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
            ok(&fx, args)?;
        }
        Ok(Some(fx))
    }
}

/// `audit head`, parsed into (seq, hash).
fn head(db: &(impl Db + ?Sized)) -> TestResult<(i64, String)> {
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
fn verify_json(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<(Option<i32>, Value, Run)> {
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

fn is_lower_hex_64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

// ------------------------------------------------------------------------------------------------
// verify and audit head
// ------------------------------------------------------------------------------------------------

fn verify_prints_ok_with_the_row_count_and_the_head_and_exits_0_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fresh) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    let r = run(&fresh, &["verify"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(r.stdout, format!("OK: 0 rows verify; head 0:{GENESIS}\n"));
    assert!(r.stderr.is_empty(), "{r:?}");
    assert_eq!(
        ok_json(&fresh, &["verify"])?,
        json!({
            "ok": true, "rows": 0, "head": {"seq": 0, "hash": GENESIS},
            "first_bad_seq": null, "problem": null
        })
    );

    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let rows = audit_lines(&fx, &[])?;
    let last = rows.last().ok_or("no rows")?;
    let r = run(&fx, &["verify"]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!(
            "OK: {} rows verify; head {}:{}\n",
            rows.len(),
            last["seq"],
            text(&last["hash"])
        )
    );
    assert!(r.stderr.is_empty(), "{r:?}");
    let (code, v, r) = verify_json(&fx, &[])?;
    assert_eq!((code, r.stdout.lines().count()), (Some(0), 1), "{r:?}");
    assert_eq!(
        keys(&v),
        BTreeSet::from(["ok", "rows", "head", "first_bad_seq", "problem"]),
        "{v}"
    );
    assert_eq!(keys(&v["head"]), BTreeSet::from(["seq", "hash"]), "{v}");
    assert_eq!(v["rows"].as_u64(), Some(u64::try_from(rows.len())?));
    assert_eq!(
        (&v["head"]["seq"], &v["head"]["hash"]),
        (&last["seq"], &last["hash"])
    );
    Ok(())
}

fn verify_prints_failed_at_the_first_bad_row_exits_1_and_under_json_names_an_unverified_chain(
    engine: Engine,
) -> TestResult {
    // Every kind of tampering and what each verifier finds: tests/audit.rs.
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let create = audit_lines(&fx, &["--session", "worker-1", "--kind", "session.create"])?;
    let seq = create[0]["seq"].as_i64().ok_or("no seq")?;
    fx.store().tamper(&format!(
        "UPDATE audit SET actor = 'mallory' WHERE seq = {seq}"
    ));

    let r = run(&fx, &["verify"]);
    assert_fails_with_one_line(&r, "verify of an edited row");
    assert!(
        r.stdout.starts_with(&format!(
            "FAILED at row {seq}: its hash does not match its contents (edited) ("
        )),
        "{r:?}"
    );
    assert_eq!(
        r.stderr,
        "session-ledger: error: the audit chain does not verify\n"
    );

    let (code, v, r) = verify_json(&fx, &[])?;
    assert_eq!(code, Some(1), "{r:?}");
    assert_eq!(
        (&v["ok"], &v["first_bad_seq"], &v["problem"]),
        (&json!(false), &json!(seq), &json!("hash_mismatch")),
        "{v}"
    );
    let e = json_error(&r, "--json verify of an edited row")?;
    assert_eq!(e["kind"], "unverified_chain", "{e}");
    Ok(())
}

fn audit_head_prints_seq_colon_hash_of_the_last_row_in_text_and_json(engine: Engine) -> TestResult {
    let Some(fresh) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(ok(&fresh, &["audit", "head"])?, format!("0:{GENESIS}\n"));
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let rows = audit_lines(&fx, &[])?;
    let last = rows.last().ok_or("no rows")?;
    let (seq, hash) = head(&fx)?;
    assert_eq!(
        (&last["seq"], text(&last["hash"])),
        (&json!(seq), hash.as_str())
    );
    assert!(is_lower_hex_64(&hash), "{hash}");
    assert_eq!(
        ok_json(&fx, &["audit", "head"])?,
        json!({ "seq": seq, "hash": hash })
    );
    Ok(())
}

fn a_head_saved_with_audit_head_verifies_later_with_head_and_with_from(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let (seq, hash) = head(&fx)?;
    let saved = format!("{seq}:{hash}");
    for i in 0..5 {
        ok(&fx, &["create", &format!("later-{i}"), "--actor", "dave"])?;
    }
    let (now, now_hash) = head(&fx)?;
    let r = run(&fx, &["verify", "--head", &saved]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!("OK: {now} rows verify; head {now}:{now_hash}\n"),
        "verify reports the current head, not the saved one"
    );
    let r = run(&fx, &["verify", "--from", &saved]);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        format!("OK: 6 rows verify from row {seq}; head {now}:{now_hash}\n")
    );
    let (code, v, _) = verify_json(&fx, &["--from", &saved])?;
    assert_eq!(
        (code, &v["ok"], &v["rows"]),
        (Some(0), &json!(true), &json!(6)),
        "{v}"
    );
    Ok(())
}

#[test]
fn verify_refuses_a_malformed_head_or_from_with_one_line_and_exit_1_before_reading_a_ledger(
) -> TestResult {
    // Which heads are malformed: tests/audit.rs and tests/rules_from_cli.rs.
    let fx = Fixture::empty()?;
    let negative = format!("-1:{}", "a".repeat(64));
    for flag in ["--head", "--from"] {
        // `-1:...` as a separate argument: taken as the value, not as a flag.
        for bad in ["12", "x:y", negative.as_str()] {
            for json in [false, true] {
                let mut args = if json { vec!["--json"] } else { vec![] };
                args.extend(["verify", flag, bad]);
                let r = run(&fx.db, &args);
                let what = args.join(" ");
                assert_fails_with_one_line(&r, &what);
                assert!(r.stdout.is_empty(), "{what}: {r:?}");
                assert_mentions(&r, "head");
                // A long value is quoted cut (tests/rules_from_cli.rs): its start is named.
                assert_mentions(&r, &bad[..bad.len().min(12)]);
            }
        }
        let r = run(&fx.db, &["verify", &format!("{flag}=")]);
        assert_fails_with_one_line(&r, &format!("verify {flag}="));
        assert_mentions(&r, "head");
    }
    assert_eq!(
        std::fs::read_dir(fx.dir())?.count(),
        0,
        "verify created a file"
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit
// ------------------------------------------------------------------------------------------------

fn audit_json_prints_one_array_of_objects_with_exactly_the_documented_fields(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let out = ok(&fx, &["--json-lines", "audit"])?;
    let lines: Vec<Value> = out
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(
        lines,
        audit_lines(&fx, &[])?,
        "--json-lines and --json list the same rows"
    );
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
        assert_eq!(keys(&v), expected, "{line}");
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

/// `audit`'s text for `rows` (as `--json audit` printed them): a header naming the columns, then
/// one line per row, each column as wide as its widest value or its name.
fn audit_text(rows: &[Value]) -> Vec<String> {
    let width = |name: &str, f: &dyn Fn(&Value) -> String| {
        rows.iter()
            .map(|r| f(r).len())
            .chain([name.len()])
            .max()
            .unwrap_or(0)
    };
    let seq_w = width("SEQ", &|r| r["seq"].to_string());
    let at_w = width("AT", &|r| text(&r["at"]).to_owned());
    let actor_w = width("ACTOR", &|r| text(&r["actor"]).to_owned());
    let kind_w = width("KIND", &|r| text(&r["kind"]).to_owned());
    let session_w = width("SESSION", &|r| {
        r["session"].as_str().unwrap_or("-").to_owned()
    });
    let mut lines = vec![format!(
        "{:>seq_w$}  {:<at_w$}  {:<actor_w$}  {:<kind_w$}  {:<session_w$}  {}",
        "SEQ", "AT", "ACTOR", "KIND", "SESSION", "DETAIL"
    )];
    lines.extend(rows.iter().map(|r| {
        format!(
            "{:>seq_w$}  {:<at_w$}  {:<actor_w$}  {:<kind_w$}  {:<session_w$}  {}",
            r["seq"].as_i64().unwrap_or_default(),
            text(&r["at"]),
            text(&r["actor"]),
            text(&r["kind"]),
            r["session"].as_str().unwrap_or("-"),
            r["detail"]
        )
    }));
    lines
}

fn audit_text_prints_a_header_naming_its_columns_then_one_line_per_row_with_its_seq_time_actor_kind_session_and_detail(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let rows = audit_lines(&fx, &[])?;
    let out = ok(&fx, &["audit"])?;
    assert_eq!(out.lines().collect::<Vec<_>>(), audit_text(&rows));
    let header = out.lines().next().unwrap_or_default();
    let names: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(names, ["SEQ", "AT", "ACTOR", "KIND", "SESSION", "DETAIL"]);
    // A page keeps the header, and so does a listing with no row, so that a script can always
    // skip exactly one line.
    let page = ok(&fx, &["audit", "--limit", "2"])?;
    assert_eq!(
        page.lines().collect::<Vec<_>>(),
        audit_text(&rows[rows.len() - 2..])
    );
    let none = ok(&fx, &["audit", "--session", "nobody-at-all"])?;
    assert_eq!(
        none.split_whitespace().collect::<Vec<_>>(),
        names,
        "an empty listing: {none:?}"
    );
    // --json and --json-lines stay the rows alone.
    let lines = ok(&fx, &["--json-lines", "audit"])?;
    assert!(!lines.contains("SEQ"), "{lines}");
    assert_eq!(lines.lines().count(), rows.len());
    Ok(())
}

fn audit_flags_narrow_the_listing_exactly_as_the_librarys_query_does(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let all = audit_lines(&fx, &[])?;
    let at = |i: usize| text(&all[i]["at"]).to_owned();
    let (since, until) = (at(all.len() / 4), at(3 * all.len() / 4));
    let t = |s: &str| -> TestResult<chrono::DateTime<chrono::Utc>> { Ok(s.parse()?) };
    let q = AuditQuery::all;
    let cases: Vec<(Vec<&str>, AuditQuery)> = vec![
        (vec!["--session", "conductor"], q().session("conductor")),
        (vec!["--subtree", "worker-1"], q().subtree("worker-1")),
        (
            vec!["--kind", "session.create"],
            q().kind(AuditKind::SessionCreate),
        ),
        (vec!["--limit", "3"], q().limit(3)),
        (vec!["--before", "9"], q().before(9)),
        (vec!["--since", &since], q().since(t(&since)?)),
        (vec!["--until", &until], q().until(t(&until)?)),
        (
            vec![
                "--since",
                &since,
                "--until",
                &until,
                "--subtree",
                "conductor",
            ],
            q().since(t(&since)?).until(t(&until)?).subtree("conductor"),
        ),
        (
            vec![
                "--subtree",
                "conductor",
                "--kind",
                "session.create",
                "--limit",
                "2",
            ],
            q().subtree("conductor")
                .kind(AuditKind::SessionCreate)
                .limit(2),
        ),
        (
            vec!["--session", "conductor", "--before", "9"],
            q().session("conductor").before(9),
        ),
    ];
    let ledger = Ledger::init(fx.store().target())?;
    for (flags, query) in cases {
        let listed = seqs(&audit_lines(&fx, &flags)?);
        let expected: Vec<i64> = ledger.audit(&query)?.iter().map(|r| r.seq).collect();
        assert_eq!(listed, expected, "{flags:?}");
        assert!(
            !listed.is_empty() && listed.len() < all.len(),
            "{flags:?} does not narrow the trail: {listed:?}"
        );
    }
    assert!(audit_lines(&fx, &["--limit", "0"])?.is_empty());
    Ok(())
}

#[test]
fn audit_reads_times_in_rfc_3339_with_any_offset_whole_seconds_or_below_a_millisecond() -> TestResult
{
    use chrono::{DateTime, FixedOffset, SecondsFormat, TimeDelta, Utc};
    let fx = Fixture::scenario()?;
    let all = audit_lines(&fx.db, &[])?;
    let at = text(&all[all.len() / 2]["at"]).to_owned();
    let instant: DateTime<Utc> = at.parse()?;
    let east = FixedOffset::east_opt(5 * 3600 + 30 * 60).ok_or("offset")?;
    let shifted = instant
        .with_timezone(&east)
        .to_rfc3339_opts(SecondsFormat::Millis, false);
    assert!(shifted.ends_with("+05:30"), "{shifted}");
    // Half a millisecond after a row's time: that row is before the bound.
    let finer = format!("{}5Z", at.trim_end_matches('Z'));
    let forms = [
        (at.clone(), instant),
        (shifted, instant),
        (finer, instant + TimeDelta::microseconds(500)),
        (
            "2000-01-01T00:00:00Z".to_owned(),
            "2000-01-01T00:00:00Z".parse()?,
        ),
    ];
    let ledger = Ledger::init(&fx.db)?;
    for (written, meant) in forms {
        for (flag, query) in [
            ("--since", AuditQuery::all().since(meant)),
            ("--until", AuditQuery::all().until(meant)),
        ] {
            let listed = seqs(&audit_lines(&fx.db, &[flag, &written])?);
            let expected: Vec<i64> = ledger.audit(&query)?.iter().map(|r| r.seq).collect();
            assert_eq!(listed, expected, "{flag} {written}");
        }
    }
    Ok(())
}

#[test]
fn audit_refuses_a_malformed_time_with_one_line_before_reading_a_ledger() -> TestResult {
    let fx = Fixture::empty()?;
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
            let what = format!("audit {flag} {bad:?}");
            assert_fails_with_one_line(&r, &what);
            assert!(r.stdout.is_empty(), "{what}: {r:?}");
            assert_mentions(&r, "time");
        }
    }
    let r = run(&fx.db, &["audit", "--since", "yesterday"]);
    assert_mentions(&r, "yesterday");
    assert_eq!(
        std::fs::read_dir(fx.dir())?.count(),
        0,
        "audit created a file"
    );
    Ok(())
}

/// `audit ARGS...` (with `--json` when asked): (rows' seqs, stderr).
fn audit_page(
    db: &(impl Db + ?Sized),
    json: bool,
    args: &[&str],
) -> TestResult<(Vec<i64>, String)> {
    let mut all = Vec::new();
    if json {
        all.push("--json");
    }
    all.push("audit");
    all.extend_from_slice(args);
    let r = run(db, &all);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let seqs = if json {
        serde_json::from_str::<Vec<Value>>(&r.stdout)?
            .iter()
            .map(|row| Ok(row["seq"].as_i64().ok_or("seq")?))
            .collect::<TestResult<Vec<i64>>>()?
    } else {
        let mut lines = r.stdout.lines();
        let header = lines.next().unwrap_or_default();
        assert!(header.trim_start().starts_with("SEQ "), "{header:?}");
        lines
            .map(|l| Ok(l.split_whitespace().next().ok_or("empty line")?.parse()?))
            .collect::<TestResult<Vec<i64>>>()?
    };
    Ok((seqs, r.stderr))
}

fn audit_limit_names_the_next_page_on_stderr_only_while_older_rows_match(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let all = seqs(&audit_lines(&fx, &[])?);
    for json in [false, true] {
        let mut walked: Vec<Vec<i64>> = Vec::new();
        let mut args = vec!["--limit".to_owned(), "4".to_owned()];
        loop {
            let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
            let (page, stderr) = audit_page(&fx, json, &borrowed)?;
            let oldest = *page.first().ok_or("an empty page")?;
            walked.push(page);
            if stderr.is_empty() {
                break;
            }
            assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
            let next = if json {
                let hint: Value = serde_json::from_str(&stderr)?;
                assert_eq!(keys(&hint), BTreeSet::from(["next_before"]), "{hint}");
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
    // Exactly the whole trail in one page, a larger limit, and no limit at all: no hint.
    let n = all.len().to_string();
    for args in [&["--limit", n.as_str()][..], &["--limit", "10000"], &[]] {
        for json in [false, true] {
            let (page, stderr) = audit_page(&fx, json, args)?;
            assert_eq!(page, all);
            assert!(stderr.is_empty(), "{args:?}: {stderr:?}");
        }
    }
    Ok(())
}

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

// ------------------------------------------------------------------------------------------------
// explain
// ------------------------------------------------------------------------------------------------

/// `explain ID`, and the lines it should print, made from `explain --json ID` and
/// `audit --session ID`: the header, then `label`, `posture`, `granted`, each pattern and each
/// live scope as the lines given, then the audit rows, and (none recorded here) the decisions.
fn explained(db: &(impl Db + ?Sized), id: &str, middle: &[String]) -> TestResult<(String, String)> {
    let v = ok_json(db, &["explain", id])?;
    let mut lines = vec![format!(
        "{id} ({}; recorded {})",
        match v["session"]["created_by"].as_str() {
            Some(by) => format!(
                "{} by {by}, depth {}",
                text(&v["session"]["origin"]),
                v["session"]["depth"]
            ),
            None => "root".to_owned(),
        },
        text(&v["session"]["created_at"])
    )];
    lines.extend(middle.iter().cloned());
    lines.push("  audit rows:".to_owned());
    lines.push(ok(db, &["audit", "--session", id])?.trim_end().to_owned());
    lines.push("  decisions: none recorded\n".to_owned());
    Ok((ok(db, &["explain", id])?, lines.join("\n")))
}

fn explain_text_shows_the_label_the_posture_chain_the_grant_row_patterns_scopes_what_approves_and_audit_rows(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let conductor = ok_json(&fx, &["explain", "conductor"])?;
    let grant = &conductor["grant"];
    let granted = format!(
        "  granted:  audit row {} at {} by alice",
        grant["seq"],
        text(&grant["at"])
    );
    let (got, expected) = explained(
        &fx,
        "conductor",
        &[
            format!(
                "  label:    secret (born with the default), last raised {}",
                text(&conductor["state"]["raised_at"])
            ),
            "  posture:  trust granted by alice (counts now)".to_owned(),
            granted.clone(),
            "  pattern:  \"npm test\" (added by alice)".to_owned(),
            format!(
                "  scope:    hotfix (granted by alice, until {})",
                text(&conductor["live_scopes"][0]["expires_at"])
            ),
            "  approves: every command".to_owned(),
        ],
    )?;
    assert_eq!(got, expected);
    let (got, expected) = explained(
        &fx,
        "worker-1",
        &[
            "  label:    secret (inherited from conductor)".to_owned(),
            "  posture:  trust inherited via conductor > worker-1 from alice's grant on conductor \
             (counts now)"
                .to_owned(),
            granted.clone(),
            "  approves: every command".to_owned(),
        ],
    )?;
    assert_eq!(got, expected);
    let (got, expected) = explained(
        &fx,
        "worker-1a",
        &[
            "  label:    not materialized yet: its first read inherits its nearest materialized \
             ancestor's"
                .to_owned(),
            "  posture:  trust inherited via conductor > worker-1 > worker-1a from alice's grant \
             on conductor (counts now)"
                .to_owned(),
            granted,
            "  approves: every command".to_owned(),
        ],
    )?;
    assert_eq!(got, expected);
    let (got, expected) = explained(
        &fx,
        "other-child",
        &[
            "  label:    not materialized yet: its first read inherits its nearest materialized \
             ancestor's"
                .to_owned(),
            "  posture:  none".to_owned(),
            "  approves: nothing: every command asks".to_owned(),
        ],
    )?;
    assert_eq!(got, expected);
    Ok(())
}

fn explain_json_has_exactly_session_state_grant_patterns_live_scopes_audit_authority_and_decisions(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let grant = audit_lines(&fx, &["--session", "conductor", "--kind", "posture.grant"])?;
    for id in [
        "conductor",
        "worker-1",
        "worker-1a",
        "sub-worker-1-1",
        "other-child",
    ] {
        let v = ok_json(&fx, &["explain", id])?;
        assert_eq!(
            keys(&v),
            BTreeSet::from([
                "session",
                "state",
                "grant",
                "patterns",
                "live_scopes",
                "audit",
                "authority",
                "decisions"
            ]),
            "{id}: {v}"
        );
        assert_eq!(
            (&v["session"]["id"], &v["state"]["session"]),
            (&json!(id), &json!(id))
        );
        let audit = v["audit"].as_array().ok_or("audit is not an array")?;
        assert_eq!(*audit, audit_lines(&fx, &["--session", id])?, "{id}");
        let expected_grant = if id == "other-child" {
            &Value::Null
        } else {
            &grant[0]
        };
        assert_eq!(
            &v["grant"], expected_grant,
            "{id}: the grant is the operator's grant row"
        );
    }
    let v = ok_json(&fx, &["explain", "conductor"])?;
    assert_eq!(v["patterns"][0]["pattern"], "npm test", "{v}");
    assert_eq!(v["patterns"][0]["added_by"], "alice", "{v}");
    assert_eq!(v["live_scopes"][0]["name"], "hotfix", "{v}");
    let v = ok_json(&fx, &["explain", "worker-1a"])?;
    assert_eq!(
        v["state"]["posture"]["chain"],
        json!(["conductor", "worker-1", "worker-1a"])
    );
    assert_eq!(v["state"]["materialized"], Value::Null, "{v}");
    assert_eq!(
        (&v["patterns"], &v["live_scopes"]),
        (&json!([]), &json!([]))
    );
    let v = ok_json(&fx, &["explain", "sub-worker-1-1"])?;
    assert_eq!(
        (&v["session"]["origin"], &v["session"]["created_by"]),
        (&json!("spawned"), &json!("worker-1"))
    );
    assert_eq!(
        v["state"]["materialized"],
        json!({ "how": "inherited", "from": "conductor" })
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// read commands, and a closed stdout
// ------------------------------------------------------------------------------------------------

fn the_read_commands_write_nothing(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::scenario_on(engine)? else {
        return Ok(());
    };
    let (seq, hash) = head(&fx)?;
    let saved = format!("{seq}:{hash}");
    let before = dump(&fx)?;
    for args in [
        &["verify"][..],
        &["--json", "verify", "--head", &saved],
        &["verify", "--from", &saved],
        &["audit"],
        &["--json", "audit", "--subtree", "conductor"],
        &["audit", "head"],
        &["tree"],
        &["--json", "tree", "worker-1"],
        &["state", "conductor"],
        &["pattern", "list", "conductor"],
        &["scope", "list", "conductor"],
        &["epoch", "show"],
        &["check"],
        // Not materialized, and spawned: explaining records neither.
        &["explain", "worker-1a"],
        &["--json", "explain", "worker-2"],
        &["explain", "sub-sub-worker-1-2-1"],
        &["explain", "conductor"],
    ] {
        ok(&fx, args)?;
        assert_eq!(dump(&fx)?, before, "`{}` wrote", args.join(" "));
    }
    Ok(())
}

/// A ledger at `db` with a trusted root `conductor` and `workers` children under it
/// (`worker-0`, ...), each born trusted, written quickly (synchronous NORMAL, bounds lifted).
fn trusted_conductor_with_workers(
    db: &Path,
    workers: usize,
) -> Result<Ledger, session_ledger::Error> {
    use session_ledger::{Config, PostureLevel, Synchronous};
    let config = Config::default()
        .create_if_missing(true)
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
fn a_closed_stdout_ends_the_command_quietly_with_the_sigpipe_status() -> TestResult {
    use session_ledger::Propagation;
    use std::io::Read;
    use std::process::Stdio;
    let fx = Fixture::empty()?;
    {
        // About 2,000 rows: far more output than a pipe holds, so the command is still writing
        // when the reader goes away.
        let ledger = trusted_conductor_with_workers(&fx.db, 1_000)?;
        ledger.revoke("conductor", Propagation::CascadeUnchecked, "alice")?;
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

engine_tests! {
    verify_prints_ok_with_the_row_count_and_the_head_and_exits_0_in_text_and_json,
    verify_prints_failed_at_the_first_bad_row_exits_1_and_under_json_names_an_unverified_chain,
    audit_head_prints_seq_colon_hash_of_the_last_row_in_text_and_json,
    a_head_saved_with_audit_head_verifies_later_with_head_and_with_from,
    audit_json_prints_one_array_of_objects_with_exactly_the_documented_fields,
    audit_text_prints_a_header_naming_its_columns_then_one_line_per_row_with_its_seq_time_actor_kind_session_and_detail,
    audit_flags_narrow_the_listing_exactly_as_the_librarys_query_does,
    audit_limit_names_the_next_page_on_stderr_only_while_older_rows_match,
    explain_text_shows_the_label_the_posture_chain_the_grant_row_patterns_scopes_what_approves_and_audit_rows,
    explain_json_has_exactly_session_state_grant_patterns_live_scopes_audit_authority_and_decisions,
    the_read_commands_write_nothing,
}
