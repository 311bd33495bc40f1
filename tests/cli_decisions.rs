//! Decision records on the command line: `decide --record` (the verdict printed only once its
//! record is committed, and never on a ledger it cannot write), `decisions` and its filters,
//! its pages and its JSON, `decisions show` and `decisions integrate`, a record's receipt and
//! its offline check (`decisions prove`, `decisions verify-receipt`), the latest decisions at
//! the end of `explain`, and the decision log as a feed (`audit export --decisions`, as JSON
//! lines and as OCSF events) that resumes from a position with no record lost or repeated.
//! What a record holds and how it is integrated and verified is tests/decisions.rs's, against
//! the library.
//!
//! Every test runs the real binary, with an explicit `--db`, once on a SQLite file and once, as
//! `postgres::NAME`, on a ledger in a PostgreSQL schema of its own; those that need no ledger,
//! or a SQLite file the reader may not write, run once.

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use common::cli::*;
use common::Engine;
use serde_json::{json, Value};

// ------------------------------------------------------------------------------------------------
// helpers of this file (the shared ones are in tests/common/cli.rs)
// ------------------------------------------------------------------------------------------------

/// The keys of a record as `--json decisions` prints it.
const RECORD_KEYS: [&str; 16] = [
    "record",
    "at",
    "session",
    "tree",
    "tool",
    "input",
    "input_bytes",
    "input_sha256",
    "verdict",
    "authority",
    "reason",
    "asked_by",
    "tool_use_id",
    "seq",
    "batch",
    "id",
];

/// `--json decide ID --record ARGS...` for `[ID, ARGS...]`: the decision's JSON, the record's
/// id in it.
fn recorded(db: &(impl Db + ?Sized), args: &[&str]) -> TestResult<Value> {
    let mut all = vec!["decide", args[0], "--record"];
    all.extend_from_slice(&args[1..]);
    let v = ok_json(db, &all)?;
    assert!(v["record"].is_string(), "{v}");
    Ok(v)
}

/// The `record` of each record.
fn ids(records: &[Value]) -> Vec<&str> {
    records.iter().map(|r| text(&r["record"])).collect()
}

/// `--json decisions FILTERS...`: the records of its one array.
fn decisions(db: &(impl Db + ?Sized), filters: &[&str]) -> TestResult<Vec<Value>> {
    let mut args = vec!["decisions"];
    args.extend_from_slice(filters);
    ok_json_array(db, &args)
}

/// A ledger with six recorded decisions, each decided by another authority, returned oldest
/// first as `decide --record --json` printed them:
///
/// ```text
/// boss (trust)                      r1 "make deploy"            approve  trust        hook
/// conductor (trust_reads)           r2 "git log -3" --classify  approve  trust_reads  hook (toolu_01)
/// └── worker (born trust_reads)     r3 "rm -rf build"           ask      nothing      hook
///                                   r4 Read /etc/hosts          approve  trust_reads  hook
/// other (pattern "npm test")        r5 "npm test"               approve  pattern      dashboard
/// ghost (unknown)                   r6 "ls"                     ask      unknown_session dashboard
/// ```
fn recorded_ledger(engine: Engine) -> TestResult<Option<(Fixture, Vec<Value>)>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    for args in [
        &["create", "boss", "--actor", "alice"][..],
        &["trust", "boss", "--full", "--actor", "alice"],
        &["create", "conductor", "--actor", "alice"],
        &["trust", "conductor", "--reads", "--actor", "alice"],
        &["create", "worker", "--by", "conductor", "--actor", "alice"],
        &["create", "other", "--actor", "carol"],
        &["pattern", "add", "other", "npm test", "--actor", "carol"],
    ] {
        ok(&fx, args)?;
    }
    let made = vec![
        recorded(&fx, &["boss", "--actor", "hook", "--", "make deploy"])?,
        recorded(
            &fx,
            &[
                "conductor",
                "--classify",
                "--actor",
                "hook",
                "--tool-use-id",
                "toolu_01",
                "--",
                "git log -3",
            ],
        )?,
        recorded(&fx, &["worker", "--actor", "hook", "--", "rm -rf build"])?,
        recorded(
            &fx,
            &[
                "worker",
                "--tool",
                "Read",
                "--path",
                "/etc/hosts",
                "--actor",
                "hook",
            ],
        )?,
        recorded(&fx, &["other", "--actor", "dashboard", "--", "npm test"])?,
        recorded(&fx, &["ghost", "--actor", "dashboard", "--", "ls"])?,
    ];
    Ok(Some((fx, made)))
}

/// The columns of a line of `decisions`' text: the seven before the input, and the input.
fn columns(line: &str) -> (Vec<&str>, &str) {
    let mut rest = line;
    let mut words = Vec::new();
    for _ in 0..7 {
        rest = rest.trim_start();
        let end = rest.find(' ').unwrap_or(rest.len());
        words.push(&rest[..end]);
        rest = &rest[end..];
    }
    (words, rest.trim_start())
}

// ------------------------------------------------------------------------------------------------
// decide --record
// ------------------------------------------------------------------------------------------------

fn decide_record_prints_the_verdict_then_the_record_and_decisions_lists_it_with_its_authority(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&fx, &["create", "conductor", "--actor", "alice"])?;
    ok(&fx, &["trust", "conductor", "--reads", "--actor", "alice"])?;
    // Without --record, nothing is written.
    let plain = ok_unchanged(
        &fx,
        &["decide", "conductor", "--classify", "--", "git status"],
    )?;
    assert_eq!(decisions(&fx, &[])?, Vec::<Value>::new());
    let out = ok(
        &fx,
        &[
            "decide",
            "conductor",
            "--classify",
            "--record",
            "--actor",
            "claude-code",
            "--",
            "git status",
        ],
    )?;
    let listed = decisions(&fx, &[])?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let record = &listed[0];
    assert_eq!(
        out,
        format!("{plain}recorded {}\n", text(&record["record"]))
    );
    assert_eq!(
        keys(record),
        BTreeSet::from(RECORD_KEYS),
        "the record's JSON: {record}"
    );
    assert_eq!(
        (
            text(&record["session"]),
            text(&record["verdict"]),
            text(&record["authority"]),
            text(&record["asked_by"]),
            text(&record["input"]),
        ),
        (
            "conductor",
            "approve",
            "trust_reads",
            "claude-code",
            "git status"
        )
    );
    assert_eq!(record["seq"], Value::Null, "queued until integrated");
    assert_eq!(record["reason"]["kind"], "trust_reads");
    // The text listing: a header, then the record's line.
    let text_out = ok(&fx, &["decisions"])?;
    let mut lines = text_out.lines();
    let header = lines.next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "AT",
            "SEQ",
            "RECORD",
            "SESSION",
            "VERDICT",
            "AUTHORITY",
            "ASKED_BY",
            "INPUT"
        ]
    );
    let (words, input) = columns(lines.next().unwrap_or_default());
    assert_eq!(
        words,
        [
            text(&record["at"]),
            "queued",
            text(&record["record"]),
            "conductor",
            "approve",
            "trust_reads",
            "claude-code"
        ]
    );
    assert_eq!(input, "\"git status\"");
    assert_eq!(lines.next(), None, "{text_out}");
    Ok(())
}

fn decide_record_json_is_the_decision_with_its_record_and_a_tool_call_is_recorded_as_one(
    engine: Engine,
) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    for v in &made {
        assert_eq!(
            keys(v),
            BTreeSet::from(["session", "verdict", "reason", "record", "durable"]),
            "{v}"
        );
        assert_eq!(v["durable"], true, "{v}");
        let id = text(&v["record"]);
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    // The decision is the one `decide` gives without --record.
    let plain = ok_json(&fx, &["decide", "worker", "--", "rm -rf build"])?;
    assert_eq!(
        (&made[2]["verdict"], &made[2]["reason"]),
        (&plain["verdict"], &plain["reason"])
    );
    let listed = decisions(&fx, &[])?;
    let read = &listed[listed.len() - 4];
    assert_eq!(read["record"], made[3]["record"]);
    assert_eq!(
        (&read["tool"], &read["input"], &read["authority"]),
        (&json!("Read"), &json!("/etc/hosts"), &json!("trust_reads"))
    );
    let git = &listed[listed.len() - 2];
    assert_eq!(
        (&git["tool"], &git["tool_use_id"], &git["asked_by"]),
        (&Value::Null, &json!("toolu_01"), &json!("hook"))
    );
    // Each record names the authority that decided.
    let authorities: Vec<&str> = listed.iter().rev().map(|r| text(&r["authority"])).collect();
    assert_eq!(
        authorities,
        [
            "trust",
            "trust_reads",
            "nothing",
            "trust_reads",
            "pattern",
            "unknown_session"
        ]
    );
    Ok(())
}

/// A folder the test's user wrote a ledger in, then made readable and not writable by the
/// reader: as root (whom permission bits do not stop), the reader is uid 65534, run through
/// `setpriv` (util-linux), as tests/readonly.rs does; as any other user, the folder and its
/// files lose their write bits and the reader is that user.
struct ReadOnlyCopy {
    fx: Fixture,
    binary: Option<tempfile::TempDir>,
}

impl ReadOnlyCopy {
    fn root() -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }

    fn lock(fx: Fixture) -> TestResult<ReadOnlyCopy> {
        use std::os::unix::fs::PermissionsExt;
        let (folder, file) = if Self::root() {
            (0o755, 0o644)
        } else {
            (0o555, 0o444)
        };
        for entry in std::fs::read_dir(fx.dir())? {
            std::fs::set_permissions(entry?.path(), std::fs::Permissions::from_mode(file))?;
        }
        std::fs::set_permissions(fx.dir(), std::fs::Permissions::from_mode(folder))?;
        // The reader's own copy of the binary, in a folder it can reach.
        let binary = if Self::root() {
            let dir = tempfile::tempdir()?;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
            std::fs::copy(BIN, dir.path().join("session-ledger"))?;
            Some(dir)
        } else {
            None
        };
        Ok(ReadOnlyCopy { fx, binary })
    }

    /// `session-ledger --db DB ARGS...` as the reader.
    fn run(&self, args: &[&str]) -> TestResult<Run> {
        let mut command = match &self.binary {
            Some(dir) => {
                let mut c = std::process::Command::new("setpriv");
                c.args([
                    "--reuid",
                    "65534",
                    "--regid",
                    "65534",
                    "--clear-groups",
                    "--",
                ])
                .arg(dir.path().join("session-ledger"));
                c
            }
            None => std::process::Command::new(BIN),
        };
        let out = command
            .arg("--db")
            .arg(&self.fx.db)
            .args(args)
            .current_dir(self.fx.dir())
            .env_remove("SESSION_LEDGER_DB")
            .env_remove("SESSION_LEDGER_ACTOR")
            .output()?;
        Ok(Run {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

impl Drop for ReadOnlyCopy {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        // So that the temporary folder can be removed when the tests do not run as root.
        let _ = std::fs::set_permissions(self.fx.dir(), std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn decide_record_on_a_ledger_the_reader_cannot_write_fails_as_read_only_and_prints_no_verdict(
) -> TestResult {
    let Some((fx, _)) = recorded_ledger(Engine::Sqlite)? else {
        return Ok(());
    };
    ok(&fx.db, &["decisions", "integrate", "--actor", "alice"])?;
    let before = dump(&fx.db)?;
    let copy = ReadOnlyCopy::lock(fx)?;
    for args in [
        &["decide", "boss", "--record", "--", "make deploy"][..],
        &["--json", "decide", "boss", "--record", "--", "make deploy"],
        &[
            "decide",
            "worker",
            "--tool",
            "Read",
            "--path",
            "/etc/hosts",
            "--record",
        ],
    ] {
        let r = copy.run(args)?;
        assert_eq!(r.status.code(), Some(1), "{args:?}: {r:?}");
        assert_eq!(
            r.stdout, "",
            "{args:?}: a verdict printed without its record"
        );
        assert_one_error_line(&r, &format!("{args:?}"));
        assert_mentions(&r, "read-only");
    }
    // What an auditor does with the records works with read access alone.
    let listed = copy.run(&["--json", "decisions"])?;
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(serde_json::from_str::<Vec<Value>>(&listed.stdout)?.len(), 6);
    let feed = copy.run(&["audit", "export", "--decisions", "--after", "0"])?;
    assert!(feed.status.success(), "{feed:?}");
    assert_eq!(feed.stdout.lines().count(), 6);
    assert_eq!(dump(&copy.fx.db)?, before);
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// decisions: filters, pages, JSON
// ------------------------------------------------------------------------------------------------

fn decisions_filters_by_session_subtree_verdict_authority_and_time(engine: Engine) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let all = decisions(&fx, &[])?;
    // Newest first.
    let mut newest_first = ids(&made);
    newest_first.reverse();
    assert_eq!(ids(&all), newest_first);
    let picked = |which: &[usize]| -> Vec<&str> {
        which
            .iter()
            .rev()
            .map(|&i| text(&made[i]["record"]))
            .collect()
    };
    for (filters, expected) in [
        (&["--session", "worker"][..], picked(&[2, 3])),
        (&["--subtree", "conductor"], picked(&[1, 2, 3])),
        (&["--verdict", "ask"], picked(&[2, 5])),
        (&["--authority", "trust_reads"], picked(&[1, 3])),
        (&["--authority", "pattern"], picked(&[4])),
        (
            &["--subtree", "conductor", "--verdict", "ask"],
            picked(&[2]),
        ),
        (&["--session", "ghost"], picked(&[5])),
        (&["--verdict", "deny"], vec![]),
    ] {
        assert_eq!(ids(&decisions(&fx, filters)?), expected, "{filters:?}");
    }
    // --since is inclusive, --until exclusive, as for `audit`.
    let since = text(&all[2]["at"]).to_owned();
    let until = text(&all[1]["at"]).to_owned();
    let between: Vec<&str> = all
        .iter()
        .filter(|r| text(&r["at"]) >= since.as_str() && text(&r["at"]) < until.as_str())
        .map(|r| text(&r["record"]))
        .collect();
    assert!(between.contains(&text(&all[2]["record"])));
    assert_eq!(
        ids(&decisions(&fx, &["--since", &since, "--until", &until])?),
        between
    );
    // Values the ledger does not know are refused before anything is read.
    for bad in [
        &["decisions", "--verdict", "maybe"][..],
        &["decisions", "--authority", "root"],
        &["decisions", "--since", "yesterday"],
        &["decisions", "--limit", "0"],
    ] {
        let r = run(&fx, bad);
        assert_clean_failure(&r, &format!("{bad:?}"));
    }
    Ok(())
}

fn decisions_pages_with_before_and_says_on_stderr_where_the_next_page_starts(
    engine: Engine,
) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let all = decisions(&fx, &[])?;
    let mut pages = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = vec!["--json", "decisions", "--limit", "4"];
        if let Some(b) = &before {
            args.extend(["--before", b.as_str()]);
        }
        let r = run(&fx, &args);
        assert!(r.status.success(), "{r:?}");
        let page: Vec<Value> = serde_json::from_str(&r.stdout)?;
        pages.push(
            ids(&page)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        );
        if r.stderr.is_empty() {
            break;
        }
        // The note names the id of the page's oldest record.
        let note: Value = serde_json::from_str(r.stderr.trim_end())?;
        assert_eq!(note["next_before"], page[page.len() - 1]["id"], "{note}");
        before = Some(note["next_before"].to_string());
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [4, 2]);
    let joined: Vec<String> = pages.concat();
    assert_eq!(joined, ids(&all));
    assert_eq!(joined.len(), made.len());
    // In text the note is a line on stderr, and a page that holds every match has none.
    let r = run(&fx, &["decisions", "--limit", "5"]);
    assert_eq!(r.stdout.lines().count(), 6, "a header and five lines");
    assert_eq!(
        r.stderr,
        format!("next page: --before {}\n", all[4]["id"]),
        "{r:?}"
    );
    let r = run(&fx, &["decisions", "--limit", "6"]);
    assert_eq!((r.stdout.lines().count(), r.stderr.as_str()), (7, ""));
    // --json-lines: one record a line.
    let lines = ok(&fx, &["--json-lines", "decisions", "--limit", "3"])?;
    let parsed: Vec<Value> = lines
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(parsed[..], all[..3]);
    Ok(())
}

fn decisions_integrate_gives_queued_records_positions_and_says_what_it_did(
    engine: Engine,
) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let out = ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    assert_eq!(
        out,
        "integrated 6 records in 1 batch; the decision log holds 6 records; 0 still queued\n"
    );
    let all = decisions(&fx, &[])?;
    let positions: Vec<Value> = all.iter().rev().map(|r| r["seq"].clone()).collect();
    assert_eq!(positions, (1..=6).map(|n| json!(n)).collect::<Vec<_>>());
    // Each batch is an audit row by the actor, and the records name it.
    let rows = audit_lines(&fx, &["--kind", "decisions.integrate"])?;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["actor"], "alice");
    assert!(all.iter().all(|r| r["batch"] == rows[0]["seq"]), "{all:?}");
    // In text the position takes the place of `queued`.
    let text_out = ok(&fx, &["decisions", "--session", "boss"])?;
    let (words, _) = columns(text_out.lines().nth(1).unwrap_or_default());
    assert_eq!(words[1], "1");
    // Nothing queued: nothing to do, and no audit row.
    recorded(&fx, &["boss", "--actor", "hook", "--", "make test"])?;
    let v = ok_json(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    assert_eq!(
        v,
        json!({ "records": 1, "batches": 1, "log_size": 7, "queued": 0 })
    );
    let v = ok_json(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    assert_eq!(
        v,
        json!({ "records": 0, "batches": 0, "log_size": 7, "queued": 0 })
    );
    assert_eq!(
        audit_lines(&fx, &["--kind", "decisions.integrate"])?.len(),
        2
    );
    assert_eq!(made.len() + 1, decisions(&fx, &[])?.len());
    Ok(())
}

fn decisions_prove_prints_a_receipt_that_verify_receipt_checks_with_the_key_alone(
    engine: Engine,
) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let key = fx.dir().join("ledger.key");
    let key = key.to_str().unwrap();
    let verifier = ok(
        &fx,
        &[
            "checkpoint",
            "keygen",
            "--key",
            key,
            "--name",
            "example.com/l",
        ],
    )?;
    let verifier = verifier.trim();
    let record = text(&made[2]["record"]);
    // Not covered before a checkpoint: it waits in the queue.
    let r = run(&fx, &["--json", "decisions", "prove", record]);
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert_eq!(json_error(&r, "prove")?["kind"], "not_covered");
    // Signing integrates first; the receipt is then against that checkpoint.
    ok(
        &fx,
        &["checkpoint", "sign", "--key", key, "--actor", "alice"],
    )?;
    let receipt = ok(&fx, &["decisions", "prove", record])?;
    let file = fx.dir().join("receipt.json");
    std::fs::write(&file, &receipt)?;
    let file = file.to_str().unwrap();
    // Offline: no ledger is opened.
    let checked = run_raw(
        fx.dir(),
        &[
            "decisions",
            "verify-receipt",
            file,
            "--verifier-key",
            verifier,
        ],
    );
    assert_eq!(checked.status.code(), Some(0), "{checked:?}");
    let said = checked.stdout.clone();
    assert!(
        said.contains(&format!("decision record {record} is at position 3")),
        "{said}"
    );
    // A receipt whose record says something else fails, naming the decision check.
    let forged = receipt.replace("rm -rf build", "rm -rf buile");
    assert_ne!(forged, receipt);
    std::fs::write(file, forged)?;
    let r = run_raw(
        fx.dir(),
        &[
            "--json",
            "decisions",
            "verify-receipt",
            file,
            "--verifier-key",
            verifier,
        ],
    );
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout)?;
    assert_eq!(v["ok"], false);
    assert!(
        text(&v["why"]).contains("not the one the batch holds"),
        "{v}"
    );
    Ok(())
}

fn decisions_show_prints_one_record_whole_and_an_unknown_one_fails(engine: Engine) -> TestResult {
    let Some((fx, made)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let id = text(&made[1]["record"]);
    let listed = decisions(&fx, &["--session", "conductor"])?;
    assert_eq!(ok_json(&fx, &["decisions", "show", id])?, listed[0]);
    let out = ok(&fx, &["decisions", "show", id])?;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("record:    {id}"));
    for expected in [
        "session:   conductor (in the tree of conductor)",
        "tool:      none: a command line",
        "input:     \"git log -3\"",
        "           10 bytes",
        "verdict:   approve",
        "authority: trust_reads",
        "asked by:  hook, tool use \"toolu_01\"",
        "position:  queued: not integrated into the decision log yet (`decisions integrate` \
         does it)",
        "reason:",
        "  {",
        "    \"kind\": \"trust_reads\",",
    ] {
        assert!(lines.contains(&expected), "no line {expected:?} in:\n{out}");
    }
    // The reason whole, as indented JSON.
    let at = lines.iter().position(|l| *l == "reason:").unwrap_or(0);
    let reason: Value = serde_json::from_str(&lines[at + 1..].join("\n"))?;
    assert_eq!(reason, listed[0]["reason"]);
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    let batch = audit_lines(&fx, &["--kind", "decisions.integrate"])?[0]["seq"].clone();
    assert!(
        ok(&fx, &["decisions", "show", id])?.contains(&format!(
            "position:  2 in the decision log, integrated by audit row {batch}"
        )),
        "the position once integrated"
    );
    let r = run(
        &fx,
        &[
            "--json",
            "decisions",
            "show",
            "0123456789abcdef0123456789abcdef",
        ],
    );
    assert_eq!(r.status.code(), Some(1), "{r:?}");
    assert_eq!(
        json_error(&r, "show an unknown record")?["kind"],
        "unknown_record"
    );
    let r = run(&fx, &["decisions", "show", "not-a-record"]);
    assert_clean_failure(&r, "show a malformed id");
    Ok(())
}

fn input_from_the_agent_is_printed_escaped_in_the_listing_and_in_show(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&fx, &["create", "worker", "--actor", "alice"])?;
    // A line that would recolour a terminal and read backwards, and a tool name with a
    // zero-width space.
    let line = "echo ok \u{1b}[31m\u{202e}txt.exe";
    recorded(&fx, &["worker", "--actor", "hook", "--", line])?;
    recorded(
        &fx,
        &[
            "worker",
            "--tool",
            "Re\u{200b}ad",
            "--path",
            "/tmp/a\u{7}b",
            "--actor",
            "hook",
        ],
    )?;
    let out = ok(&fx, &["decisions"])?;
    let inputs: Vec<&str> = out.lines().skip(1).map(|l| columns(l).1).collect();
    assert_eq!(
        inputs,
        [
            "\"Re\\u{200b}ad\" \"/tmp/a\\u{7}b\"",
            "\"echo ok \\u{1b}[31m\\u{202e}txt.exe\""
        ]
    );
    let listed = decisions(&fx, &[])?;
    assert_eq!(
        listed[1]["input"], line,
        "the record keeps the input as it was"
    );
    let shown = ok(&fx, &["decisions", "show", text(&listed[1]["record"])])?;
    assert!(
        shown.contains("input:     \"echo ok \\u{1b}[31m\\u{202e}txt.exe\""),
        "{shown}"
    );
    for (what, printed) in [("decisions", &out), ("decisions show", &shown)] {
        assert!(
            !printed.contains(['\u{1b}', '\u{202e}', '\u{200b}', '\u{7}']),
            "{what} printed a character that does not show: {printed:?}"
        );
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// explain
// ------------------------------------------------------------------------------------------------

fn explain_ends_with_the_sessions_latest_decisions_in_text_and_in_json(
    engine: Engine,
) -> TestResult {
    let Some((fx, _)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    let worker = decisions(&fx, &["--session", "worker"])?;
    let v = ok_json(&fx, &["explain", "worker"])?;
    assert_eq!(v["decisions"], json!(worker));
    let out = ok(&fx, &["explain", "worker"])?;
    let listing = ok(&fx, &["decisions", "--session", "worker"])?;
    assert!(
        out.ends_with(&format!("  latest decisions, newest first:\n{listing}")),
        "{out}"
    );
    // A session with no record says so.
    ok(&fx, &["create", "quiet", "--actor", "alice"])?;
    assert!(ok(&fx, &["explain", "quiet"])?.ends_with("  decisions: none recorded\n"));
    assert_eq!(ok_json(&fx, &["explain", "quiet"])?["decisions"], json!([]));
    // At most the latest ten.
    for n in 0..11 {
        recorded(
            &fx,
            &["boss", "--actor", "hook", "--", &format!("make step-{n}")],
        )?;
    }
    let v = ok_json(&fx, &["explain", "boss"])?;
    assert_eq!(
        v["decisions"],
        json!(decisions(&fx, &["--session", "boss", "--limit", "10"])?)
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit export --decisions
// ------------------------------------------------------------------------------------------------

/// The positions (`seq`) of a feed's JSON lines.
fn positions(out: &str) -> Vec<u64> {
    out.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("a JSON line")["seq"]
                .as_u64()
                .expect("seq")
        })
        .collect()
}

fn audit_export_decisions_resumes_from_a_position_with_no_record_lost_or_repeated(
    engine: Engine,
) -> TestResult {
    let Some((fx, _)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    // Queued records are not in the feed yet.
    assert_eq!(
        ok(&fx, &["audit", "export", "--decisions", "--after", "0"])?,
        ""
    );
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    // A reader that stops after some lines, keeps the last position, and starts again there.
    let mut child = command(&fx, &["audit", "export", "--decisions", "--after", "0"])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut first = String::new();
    let mut reader = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    for _ in 0..4 {
        reader.read_line(&mut first)?;
    }
    drop(reader);
    let _ = child.kill();
    child.wait()?;
    let saved = positions(&first).last().copied().ok_or("no line")?;
    for n in 0..3 {
        recorded(
            &fx,
            &[
                "worker",
                "--actor",
                "hook",
                "--",
                &format!("cargo test {n}"),
            ],
        )?;
    }
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    let rest = ok(
        &fx,
        &[
            "audit",
            "export",
            "--decisions",
            "--after",
            &saved.to_string(),
        ],
    )?;
    let mut all = positions(&first);
    all.extend(positions(&rest));
    assert_eq!(all, (1..=9).collect::<Vec<_>>());
    // Each line is the record as `--json decisions` lists it.
    let mut listed = decisions(&fx, &[])?;
    listed.reverse();
    let exported: Vec<Value> = first
        .lines()
        .chain(rest.lines())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(exported, listed);
    // From the end: nothing.
    assert_eq!(
        ok(&fx, &["audit", "export", "--decisions", "--after", "9"])?,
        ""
    );
    Ok(())
}

fn audit_export_decisions_follow_prints_records_as_they_are_integrated(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&fx, &["create", "worker", "--actor", "alice"])?;
    recorded(&fx, &["worker", "--actor", "hook", "--", "ls"])?;
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    let follow = [
        "audit",
        "export",
        "--decisions",
        "--after",
        "0",
        "--follow",
        "--poll",
        "50",
    ];
    let feed = Lines::start(&fx, &follow)?;
    assert_eq!(positions(&feed.next()?), [1]);
    recorded(&fx, &["worker", "--actor", "hook", "--", "pwd"])?;
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    assert_eq!(positions(&feed.next()?), [2]);
    Ok(())
}

/// Checks an event against what OCSF 1.7.0 requires of an API Activity event (class 6003) with
fn assert_api_activity(event: &Value) {
    let what = event.to_string();
    for key in [
        "class_uid",
        "category_uid",
        "activity_id",
        "type_uid",
        "severity_id",
        "time",
    ] {
        assert!(event[key].is_u64(), "{key} is no integer: {what}");
    }
    assert_eq!(
        (&event["class_uid"], &event["category_uid"]),
        (&json!(6003), &json!(6))
    );
    let activity = event["activity_id"].as_u64().unwrap_or(u64::MAX);
    assert!([0, 1, 2, 3, 4, 99].contains(&activity), "{what}");
    assert_eq!(event["type_uid"].as_u64(), Some(600_300 + activity));
    assert!([0, 1, 2, 3, 4, 5, 6, 99].contains(&event["severity_id"].as_u64().unwrap_or(7)));
    assert!([0, 1, 2, 99].contains(&event["status_id"].as_u64().unwrap_or(7)));
    assert!([0, 1, 2, 3, 4, 99].contains(&event["action_id"].as_u64().unwrap_or(7)));
    assert!((0..=27)
        .chain([99])
        .any(|d| event["disposition_id"].as_u64() == Some(d)));
    let meta = &event["metadata"];
    assert!(meta["product"]["name"].is_string(), "{what}");
    assert_eq!(meta["version"], session_ledger::OCSF_VERSION);
    assert_eq!(meta["profiles"], json!(["security_control"]));
    let actor = &event["actor"];
    assert!(
        actor["user"]["name"].is_string() || actor["session"]["uid"].is_string(),
        "{what}"
    );
    assert!(event["api"]["operation"].is_string(), "{what}");
    // A request, when there is one, has its uid.
    assert!(event["api"]["request"]["uid"].is_string(), "{what}");
    assert!(
        event["src_endpoint"]["uid"].is_string() || event["src_endpoint"]["name"].is_string(),
        "{what}"
    );
    let authorizations = event["authorizations"].as_array().expect("authorizations");
    assert_eq!(authorizations.len(), 1, "{what}");
    // A policy names itself by one of name, type or uid.
    assert!(authorizations[0]["policy"]["name"].is_string(), "{what}");
}

fn audit_export_decisions_in_ocsf_maps_each_record_to_an_api_activity_event_with_its_verdict(
    engine: Engine,
) -> TestResult {
    let Some((fx, _)) = recorded_ledger(engine)? else {
        return Ok(());
    };
    ok(&fx, &["decisions", "integrate", "--actor", "alice"])?;
    let mut records = decisions(&fx, &[])?;
    records.reverse();
    let events: Vec<Value> = ok(
        &fx,
        &[
            "audit",
            "export",
            "--decisions",
            "--after",
            "0",
            "--format",
            "ocsf",
        ],
    )?
    .lines()
    .map(serde_json::from_str)
    .collect::<Result<_, _>>()?;
    assert_eq!(events.len(), records.len());
    for (event, record) in events.iter().zip(&records) {
        assert_api_activity(event);
        assert_eq!(event["metadata"]["uid"], record["record"]);
        assert_eq!(event["metadata"]["sequence"], record["seq"]);
        assert_eq!(event["metadata"]["log_name"], "decisions");
        assert_eq!(event["authorizations"][0]["decision"], record["verdict"]);
        assert_eq!(
            event["authorizations"][0]["policy"]["name"],
            record["authority"]
        );
        assert_eq!(event["actor"]["user"]["name"], record["asked_by"]);
        assert_eq!(event["actor"]["session"]["uid"], record["session"]);
        assert_eq!(event["api"]["request"]["uid"], record["record"]);
        assert_eq!(event["api"]["request"]["data"]["input"], record["input"]);
        assert_eq!(event["unmapped"]["reason"], record["reason"]);
        assert_eq!(event["unmapped"]["tree"], record["tree"]);
        let (action, disposition, status) = match text(&record["verdict"]) {
            "approve" => (1, 1, 1),
            "ask" => (99, 99, 99),
            other => panic!("verdict {other}"),
        };
        assert_eq!(
            (
                &event["action_id"],
                &event["disposition_id"],
                &event["status_id"]
            ),
            (&json!(action), &json!(disposition), &json!(status)),
            "{event}"
        );
        let operation = record["tool"].as_str().unwrap_or("command");
        assert_eq!(event["api"]["operation"], operation);
        // The time is the record's, in milliseconds.
        let at = chrono::DateTime::parse_from_rfc3339(text(&record["at"]))?;
        assert_eq!(event["time"], json!(at.timestamp_millis()));
    }
    assert_eq!(events[1]["metadata"]["correlation_uid"], "toolu_01");
    assert_eq!(events[2]["disposition"], "Approval Required");
    assert_eq!(events[2]["action"], "Ask");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// help and completions
// ------------------------------------------------------------------------------------------------

#[test]
fn help_lists_decisions_and_the_completions_name_it_and_its_subcommands() -> TestResult {
    let dir = tempfile::tempdir()?;
    let top = run_raw(dir.path(), &["--help"]);
    assert!(
        top.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("decisions ")),
        "{}",
        top.stdout
    );
    let help = run_raw(dir.path(), &["decisions", "--help"]).stdout;
    for word in [
        "show",
        "integrate",
        "--authority",
        "trust_reads",
        "--before",
    ] {
        assert!(help.contains(word), "decisions --help lacks {word}: {help}");
    }
    let export = run_raw(dir.path(), &["audit", "export", "--help"]).stdout;
    assert!(export.contains("--decisions"), "{export}");
    let decide = run_raw(dir.path(), &["decide", "--help"]).stdout;
    for word in ["--record", "--tool-use-id"] {
        assert!(
            decide.contains(word),
            "decide --help lacks {word}: {decide}"
        );
    }
    for shell in ["bash", "zsh", "fish"] {
        let script = run_raw(dir.path(), &["completions", shell]);
        assert!(script.status.success(), "{shell}: {}", script.stderr);
        for word in ["decisions", "integrate", "tool-use-id"] {
            assert!(
                script.stdout.contains(word),
                "the {shell} completions do not name {word}"
            );
        }
    }
    // --actor and --tool-use-id say who asked for a record: without --record they are refused.
    let r = run_raw(
        dir.path(),
        &["--db", "x.db", "decide", "s", "--actor", "hook", "--", "ls"],
    );
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(!Path::new(&dir.path().join("x.db")).exists());
    Ok(())
}

engine_tests! {
    decisions_prove_prints_a_receipt_that_verify_receipt_checks_with_the_key_alone,
    decide_record_prints_the_verdict_then_the_record_and_decisions_lists_it_with_its_authority,
    decide_record_json_is_the_decision_with_its_record_and_a_tool_call_is_recorded_as_one,
    decisions_filters_by_session_subtree_verdict_authority_and_time,
    decisions_pages_with_before_and_says_on_stderr_where_the_next_page_starts,
    decisions_integrate_gives_queued_records_positions_and_says_what_it_did,
    decisions_show_prints_one_record_whole_and_an_unknown_one_fails,
    input_from_the_agent_is_printed_escaped_in_the_listing_and_in_show,
    explain_ends_with_the_sessions_latest_decisions_in_text_and_in_json,
    audit_export_decisions_resumes_from_a_position_with_no_record_lost_or_repeated,
    audit_export_decisions_follow_prints_records_as_they_are_integrated,
    audit_export_decisions_in_ocsf_maps_each_record_to_an_api_activity_event_with_its_verdict,
}
