//! End-to-end tests of the `session-ledger` command line: every test runs the real binary on a
//! ledger in a temporary directory, always with an explicit `--db` and with `SESSION_LEDGER_DB`
//! removed from the environment.
//!
//! Bad input must give a non-zero exit, exactly one line on stderr, no panic, and change nothing:
//! `refused_unchanged` (tests/common/cli.rs) compares every row of every table before and after.

mod common;

use common::cli::*;
use std::fs;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

impl Fixture {
    /// A ledger with a live root `conductor`, its live child `worker`, its ended child
    /// `retired`, and an ended root `gone`.
    fn populated() -> TestResult<Fixture> {
        let fx = Fixture::init()?;
        ok(&fx.db, &["create", "conductor", "--actor", "alice"])?;
        ok(
            &fx.db,
            &["create", "worker", "--by", "conductor", "--actor", "alice"],
        )?;
        ok(
            &fx.db,
            &["create", "retired", "--by", "conductor", "--actor", "alice"],
        )?;
        ok(&fx.db, &["end", "retired", "--actor", "alice"])?;
        ok(&fx.db, &["create", "gone", "--actor", "alice"])?;
        ok(&fx.db, &["end", "gone", "--actor", "alice"])?;
        Ok(fx)
    }
}

fn session_ids(db: &Path) -> TestResult<Vec<String>> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    rows(&conn, "SELECT id FROM sessions ORDER BY seq")
}

fn dir_listing(dir: &Path) -> TestResult<Vec<String>> {
    let mut names = fs::read_dir(dir)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<TestResult<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

// ------------------------------------------------------------------------------------------------
// init and a missing ledger
// ------------------------------------------------------------------------------------------------

#[test]
fn init_creates_the_ledger_file() -> TestResult {
    let fx = Fixture::empty()?;
    assert!(!fx.db.exists());
    let out = ok(&fx.db, &["init"])?;
    assert!(fx.db.is_file(), "init did not create {}", fx.db.display());
    assert!(out.contains("ledger.db"), "init output: {out:?}");
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    assert_ne!(app_id, 0, "the ledger has no application_id");
    Ok(())
}

#[test]
fn init_json_reports_the_path_and_schema_version() -> TestResult {
    let fx = Fixture::empty()?;
    let v = ok_json(&fx.db, &["init"])?;
    assert!(
        v["path"].as_str().is_some_and(|p| p.ends_with("ledger.db")),
        "{v}"
    );
    assert!(v["schema_version"].as_i64().is_some_and(|n| n >= 1), "{v}");
    Ok(())
}

#[test]
fn init_on_an_existing_ledger_keeps_its_sessions_and_audit_trail() -> TestResult {
    let fx = Fixture::populated()?;
    let before = dump(&fx.db)?;
    ok(&fx.db, &["init"])?;
    assert_eq!(before, dump(&fx.db)?);
    Ok(())
}

#[test]
fn every_command_but_init_fails_on_a_missing_ledger_without_creating_it() -> TestResult {
    let fx = Fixture::empty()?;
    let commands: &[&[&str]] = &[
        &["create", "conductor"],
        &["create", "worker", "--by", "conductor"],
        &["state", "conductor"],
        &["--json", "state", "conductor"],
        &["raise", "conductor", "--taint", "secret"],
        &["end", "conductor"],
        &["tree"],
        &["tree", "conductor"],
        &["audit"],
        &["--json", "audit", "--limit", "3"],
    ];
    for args in commands {
        let r = run(&fx.db, args);
        assert_clean_failure(&r, &format!("`{}` on a missing ledger", args.join(" ")));
        assert_mentions(&r, "no ledger");
        assert!(
            !fx.db.exists(),
            "`{}` created the ledger file",
            args.join(" ")
        );
        assert_eq!(
            dir_listing(fx.dir())?,
            Vec::<String>::new(),
            "`{}` left files behind",
            args.join(" ")
        );
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// create, state, raise, end
// ------------------------------------------------------------------------------------------------

#[test]
fn create_records_a_root_that_reads_private_and_trusted() -> TestResult {
    let fx = Fixture::init()?;
    let out = ok(&fx.db, &["create", "conductor", "--actor", "alice"])?;
    assert!(out.contains("conductor"), "create output: {out:?}");
    let state = ok_json(&fx.db, &["state", "conductor"])?;
    for key in ["session", "taint", "untrusted", "known"] {
        assert!(
            state.get(key).is_some(),
            "state --json lacks {key:?}: {state}"
        );
    }
    assert_eq!(state["session"], "conductor");
    assert_eq!(state["taint"], "private");
    assert_eq!(state["untrusted"], false);
    assert_eq!(state["known"], true);
    let audit = audit_lines(&fx.db, &["--session", "conductor"])?;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["kind"], "session.root");
    assert_eq!(audit[0]["actor"], "alice");
    Ok(())
}

#[test]
fn create_json_prints_the_new_session_with_its_creator_and_depth() -> TestResult {
    let fx = Fixture::init()?;
    let root = ok_json(&fx.db, &["create", "conductor"])?;
    assert_eq!(root["id"], "conductor");
    assert_eq!(root["created_by"], Value::Null);
    assert_eq!(root["depth"], 0);
    let child = ok_json(&fx.db, &["create", "worker", "--by", "conductor"])?;
    assert_eq!(child["id"], "worker");
    assert_eq!(child["created_by"], "conductor");
    assert_eq!(child["depth"], 1);
    assert_eq!(child["origin"], "created");
    assert_eq!(child["ended_at"], Value::Null);
    Ok(())
}

#[test]
fn a_child_created_with_by_reads_its_creators_label_on_first_read() -> TestResult {
    let fx = Fixture::init()?;
    ok(&fx.db, &["create", "conductor"])?;
    ok(
        &fx.db,
        &["raise", "conductor", "--taint", "secret", "--untrusted"],
    )?;
    let out = ok(
        &fx.db,
        &["create", "worker", "--by", "conductor", "--actor", "bob"],
    )?;
    assert!(
        out.contains("worker") && out.contains("conductor"),
        "{out:?}"
    );
    let state = ok_json(&fx.db, &["state", "worker"])?;
    assert_eq!(state["session"], "worker");
    assert_eq!(state["taint"], "secret");
    assert_eq!(state["untrusted"], true);
    assert_eq!(state["known"], true);
    let create = audit_lines(&fx.db, &["--kind", "session.create"])?;
    assert_eq!(create.len(), 1, "{create:?}");
    assert_eq!(create[0]["session"], "worker");
    assert_eq!(create[0]["actor"], "bob");
    assert_eq!(create[0]["detail"]["creator"], "conductor");
    Ok(())
}

#[test]
fn state_of_an_unknown_id_is_the_default_and_writes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let before = dump(&fx.db)?;
    let state = ok_json(&fx.db, &["state", "stranger"])?;
    assert_eq!(state["session"], "stranger");
    assert_eq!(state["taint"], "private");
    assert_eq!(state["untrusted"], false);
    assert_eq!(state["known"], false);
    assert_eq!(before, dump(&fx.db)?);
    Ok(())
}

#[test]
fn state_of_a_spawned_sub_agent_inherits_and_records_it_under_its_parent() -> TestResult {
    let fx = Fixture::populated()?;
    ok(&fx.db, &["raise", "worker", "--untrusted"])?;
    let state = ok_json(&fx.db, &["state", "sub-worker-1"])?;
    assert_eq!(state["untrusted"], true);
    assert_eq!(state["known"], true);
    let spawn = audit_lines(&fx.db, &["--kind", "session.spawn"])?;
    assert_eq!(spawn.len(), 1, "{spawn:?}");
    assert_eq!(spawn[0]["session"], "sub-worker-1");
    let tree = ok(&fx.db, &["tree", "worker"])?;
    assert!(tree.contains("└── sub-worker-1"), "{tree}");
    Ok(())
}

#[test]
fn raise_with_taint_secret_and_untrusted_raises_both_and_audits_it() -> TestResult {
    let fx = Fixture::populated()?;
    let out = ok(
        &fx.db,
        &[
            "raise",
            "conductor",
            "--taint",
            "secret",
            "--untrusted",
            "--actor",
            "carol",
        ],
    )?;
    assert!(out.contains("conductor"), "{out:?}");
    let state = ok_json(&fx.db, &["state", "conductor"])?;
    assert_eq!(state["taint"], "secret");
    assert_eq!(state["untrusted"], true);
    let raises = audit_lines(&fx.db, &["--kind", "label.raise"])?;
    assert_eq!(raises.len(), 1, "{raises:?}");
    assert_eq!(raises[0]["session"], "conductor");
    assert_eq!(raises[0]["actor"], "carol");
    assert_eq!(raises[0]["detail"]["before"]["taint"], "private");
    assert_eq!(raises[0]["detail"]["after"]["taint"], "secret");
    assert_eq!(raises[0]["detail"]["after"]["untrusted"], true);
    Ok(())
}

#[test]
fn raise_json_reports_before_after_and_whether_it_changed() -> TestResult {
    let fx = Fixture::populated()?;
    let first = ok_json(&fx.db, &["raise", "conductor", "--taint", "secret"])?;
    assert_eq!(first["session"], "conductor");
    assert_eq!(first["before"]["taint"], "private");
    assert_eq!(first["after"]["taint"], "secret");
    assert_eq!(first["changed"], true);
    let again = ok_json(&fx.db, &["raise", "conductor", "--taint", "secret"])?;
    assert_eq!(again["changed"], false);
    Ok(())
}

#[test]
fn raise_to_a_lower_class_leaves_the_label_where_it_was_and_writes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    ok(
        &fx.db,
        &["raise", "conductor", "--taint", "secret", "--untrusted"],
    )?;
    let before = dump(&fx.db)?;
    let out = ok(&fx.db, &["raise", "conductor", "--taint", "public"])?;
    assert!(out.contains("nothing changed"), "{out:?}");
    assert_eq!(before, dump(&fx.db)?);
    let state = ok_json(&fx.db, &["state", "conductor"])?;
    assert_eq!(state["taint"], "secret");
    assert_eq!(state["untrusted"], true);
    Ok(())
}

#[test]
fn end_keeps_the_session_as_a_tombstone() -> TestResult {
    let fx = Fixture::populated()?;
    let ended = ok_json(&fx.db, &["end", "worker", "--actor", "dave"])?;
    assert_eq!(ended["id"], "worker");
    assert!(ended["ended_at"].is_string(), "{ended}");
    assert!(session_ids(&fx.db)?.contains(&"worker".to_owned()));
    let tree = ok(&fx.db, &["tree", "conductor"])?;
    let line = tree
        .lines()
        .find(|l| l.contains("worker"))
        .ok_or("worker is missing from the tree")?;
    assert!(line.contains("ended"), "{tree}");
    let ends = audit_lines(&fx.db, &["--session", "worker", "--kind", "session.end"])?;
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["actor"], "dave");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// tree
// ------------------------------------------------------------------------------------------------

/// conductor ─┬─ w1 ── w1a
///            └─ w2
/// second (another root)
fn branching() -> TestResult<Fixture> {
    let fx = Fixture::init()?;
    ok(&fx.db, &["create", "conductor"])?;
    ok(&fx.db, &["create", "w1", "--by", "conductor"])?;
    ok(&fx.db, &["create", "w2", "--by", "conductor"])?;
    ok(&fx.db, &["create", "w1a", "--by", "w1"])?;
    ok(&fx.db, &["create", "second"])?;
    Ok(fx)
}

/// The lines of a drawn tree with the annotations after the id cut off.
fn tree_shape(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.split("  [").next().unwrap_or(l).trim_end().to_owned())
        .collect()
}

#[test]
fn tree_draws_every_root_with_box_drawing_branches() -> TestResult {
    let fx = branching()?;
    let out = ok(&fx.db, &["tree"])?;
    assert_eq!(
        tree_shape(&out),
        ["conductor", "├── w1", "│   └── w1a", "└── w2", "second",],
        "tree output:\n{out}"
    );
    Ok(())
}

#[test]
fn tree_of_one_session_draws_only_its_subtree() -> TestResult {
    let fx = branching()?;
    let out = ok(&fx.db, &["tree", "w1"])?;
    assert_eq!(tree_shape(&out), ["w1", "└── w1a"], "tree output:\n{out}");
    Ok(())
}

#[test]
fn tree_does_not_materialize_the_labels_it_shows() -> TestResult {
    let fx = branching()?;
    let before = dump(&fx.db)?;
    let out = ok(&fx.db, &["tree"])?;
    assert!(out.contains("not materialized"), "{out}");
    assert_eq!(before, dump(&fx.db)?);
    Ok(())
}

#[test]
fn tree_shows_the_trust_a_session_holds_before_its_first_read() -> TestResult {
    let fx = Fixture::init()?;
    ok(&fx.db, &["create", "conductor"])?;
    ok(&fx.db, &["trust", "conductor", "--full"])?;
    ok(&fx.db, &["create", "worker", "--by", "conductor"])?;
    ok(&fx.db, &["create", "idle"])?;
    let out = ok(&fx.db, &["tree"])?;
    let line = |id: &str| {
        out.lines()
            .find(|l| {
                l.trim_start_matches(['│', '├', '└', '─', ' '])
                    .starts_with(id)
            })
            .unwrap_or_default()
            .to_owned()
    };
    // The worker was never read, and holds trust that counts now: an operator looking at the
    // tree before a revocation must see it.
    assert!(
        line("worker").contains("[not materialized; trust]"),
        "tree output:\n{out}"
    );
    assert!(line("idle").contains("[private]"), "tree output:\n{out}");
    Ok(())
}

#[test]
fn tree_json_is_an_array_of_every_session_with_its_depth() -> TestResult {
    let fx = branching()?;
    let v = ok_json(&fx.db, &["tree"])?;
    let rows = v.as_array().ok_or("tree --json is not an array")?;
    let ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, ["conductor", "w1", "w1a", "w2", "second"]);
    let depths: Vec<i64> = rows
        .iter()
        .filter_map(|r| r["relative_depth"].as_i64())
        .collect();
    assert_eq!(depths, [0, 1, 2, 1, 0]);
    assert_eq!(rows[2]["created_by"], "w1");
    let sub = ok_json(&fx.db, &["tree", "w1"])?;
    assert_eq!(sub.as_array().map(Vec::len), Some(2), "{sub}");
    Ok(())
}

#[test]
fn tree_json_of_an_empty_ledger_is_an_empty_array() -> TestResult {
    let fx = Fixture::init()?;
    assert_eq!(ok_json(&fx.db, &["tree"])?, Value::Array(vec![]));
    Ok(())
}

#[test]
fn tree_of_an_unknown_session_is_refused() -> TestResult {
    let fx = branching()?;
    let r = refused_unchanged(&fx.db, &["tree", "nobody"])?;
    assert_mentions(&r, "nobody");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// audit
// ------------------------------------------------------------------------------------------------

#[test]
fn audit_json_prints_one_object_per_line_with_the_audit_keys() -> TestResult {
    let fx = Fixture::populated()?;
    let out = ok(&fx.db, &["--json", "audit"])?;
    let lines: Vec<&str> = out.lines().collect();
    // conductor, worker, retired, end retired, gone, end gone.
    assert_eq!(lines.len(), 6, "{out}");
    let mut last_seq = 0;
    for line in lines {
        let v: Value = serde_json::from_str(line)?;
        let obj = v.as_object().ok_or("an audit line is not an object")?;
        for key in ["seq", "at", "actor", "kind", "session", "detail"] {
            assert!(obj.contains_key(key), "audit line lacks {key:?}: {line}");
        }
        let seq = v["seq"].as_i64().ok_or("seq is not a number")?;
        assert!(seq > last_seq, "audit is not oldest first: {out}");
        last_seq = seq;
        let at = v["at"].as_str().ok_or("at is not text")?;
        assert_eq!(at.len(), "2026-01-01T00:00:00.000Z".len(), "at: {at}");
        assert!(at.ends_with('Z'), "at: {at}");
        assert!(v["detail"].is_object(), "detail: {line}");
    }
    Ok(())
}

#[test]
fn audit_session_filter_lists_only_that_sessions_rows() -> TestResult {
    let fx = Fixture::populated()?;
    let rows = audit_lines(&fx.db, &["--session", "retired"])?;
    let kinds: Vec<&str> = rows.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["session.create", "session.end"]);
    assert!(rows.iter().all(|r| r["session"] == "retired"));
    Ok(())
}

#[test]
fn audit_kind_filter_lists_only_that_kind() -> TestResult {
    let fx = Fixture::populated()?;
    let rows = audit_lines(&fx.db, &["--kind", "session.end"])?;
    let sessions: Vec<&str> = rows.iter().filter_map(|r| r["session"].as_str()).collect();
    assert_eq!(sessions, ["retired", "gone"]);
    Ok(())
}

#[test]
fn audit_limit_keeps_the_most_recent_rows_oldest_first() -> TestResult {
    let fx = Fixture::populated()?;
    let all = audit_lines(&fx.db, &[])?;
    let last_two = audit_lines(&fx.db, &["--limit", "2"])?;
    assert_eq!(last_two, all[all.len() - 2..]);
    assert!(audit_lines(&fx.db, &["--limit", "0"])?.is_empty());
    Ok(())
}

#[test]
fn audit_filters_combine() -> TestResult {
    let fx = Fixture::populated()?;
    let rows = audit_lines(&fx.db, &["--session", "conductor", "--kind", "session.end"])?;
    assert!(rows.is_empty(), "{rows:?}");
    let rows = audit_lines(&fx.db, &["--kind", "session.create", "--limit", "1"])?;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["session"], "retired");
    Ok(())
}

#[test]
fn audit_text_prints_one_line_per_row() -> TestResult {
    let fx = Fixture::populated()?;
    let out = ok(&fx.db, &["audit"])?;
    assert_eq!(out.lines().count(), 6, "{out}");
    assert!(out.lines().all(|l| l.contains("alice")), "{out}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// bad input: refused with one line, nothing changed
// ------------------------------------------------------------------------------------------------

#[test]
fn create_refuses_an_empty_id_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", ""])?;
    assert_mentions(&r, "empty");
    refused_unchanged(&fx.db, &["create", "", "--by", "conductor"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--by", ""])?;
    Ok(())
}

#[test]
fn create_refuses_an_id_of_129_characters_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let long = "a".repeat(129);
    let r = refused_unchanged(&fx.db, &["create", &long])?;
    assert_mentions(&r, "128");
    refused_unchanged(&fx.db, &["create", &long, "--by", "conductor"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--by", &long])?;
    Ok(())
}

#[test]
fn create_accepts_an_id_of_exactly_128_characters() -> TestResult {
    let fx = Fixture::populated()?;
    let longest = "b".repeat(128);
    ok(&fx.db, &["create", &longest, "--by", "conductor"])?;
    assert!(session_ids(&fx.db)?.contains(&longest));
    Ok(())
}

#[test]
fn create_refuses_an_id_with_a_space_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "a b"])?;
    assert_mentions(&r, "a b");
    refused_unchanged(&fx.db, &["create", "a b", "--by", "conductor"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--by", "con ductor"])?;
    Ok(())
}

#[test]
fn create_refuses_other_badly_formed_ids() -> TestResult {
    let fx = Fixture::populated()?;
    for id in [".hidden", "_x", "a/b", "a;b", "caf\u{e9}", "x'y"] {
        refused_unchanged(&fx.db, &["create", id])?;
    }
    Ok(())
}

#[test]
fn an_id_with_a_newline_still_gives_a_one_line_error() -> TestResult {
    let fx = Fixture::populated()?;
    refused_unchanged(&fx.db, &["create", "a\nb"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--by", "con\nductor"])?;
    refused_unchanged(&fx.db, &["state", "a\nb"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--actor", "al\nice"])?;
    refused_unchanged(&fx.db, &["raise", "conductor", "--taint", "sec\nret"])?;
    Ok(())
}

#[test]
fn create_refuses_ids_of_the_spawned_form_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "sub-a-1"])?;
    assert_mentions(&r, "reserved");
    refused_unchanged(&fx.db, &["create", "sub-conductor-1", "--by", "conductor"])?;
    refused_unchanged(
        &fx.db,
        &["create", "sub-sub-conductor-1-2", "--by", "conductor"],
    )?;
    Ok(())
}

#[test]
fn ids_that_only_look_spawned_can_be_created() -> TestResult {
    let fx = Fixture::populated()?;
    for id in ["sub-x", "sub-a-1x", "chat-1"] {
        ok(&fx.db, &["create", id, "--by", "conductor"])?;
    }
    let ids = session_ids(&fx.db)?;
    for id in ["sub-x", "sub-a-1x", "chat-1"] {
        assert!(ids.contains(&id.to_owned()), "{id} missing from {ids:?}");
    }
    Ok(())
}

#[test]
fn create_refuses_an_unknown_creator_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "fresh", "--by", "nobody"])?;
    assert_mentions(&r, "nobody");
    // A spawned id whose parent is unknown is no creator either, and nothing gets recorded.
    refused_unchanged(&fx.db, &["create", "fresh", "--by", "sub-nobody-1"])?;
    Ok(())
}

#[test]
fn create_refuses_an_ended_creator_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "fresh", "--by", "retired"])?;
    assert_mentions(&r, "ended");
    let r = refused_unchanged(&fx.db, &["create", "fresh", "--by", "gone"])?;
    assert_mentions(&r, "ended");
    Ok(())
}

#[test]
fn create_refuses_an_id_that_exists_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "conductor"])?;
    assert_mentions(&r, "conductor");
    refused_unchanged(&fx.db, &["create", "worker", "--by", "conductor"])?;
    refused_unchanged(&fx.db, &["create", "conductor", "--by", "worker"])?;
    refused_unchanged(&fx.db, &["create", "worker"])?;
    Ok(())
}

#[test]
fn create_refuses_an_id_that_existed_and_ended_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create", "gone"])?;
    assert_mentions(&r, "gone");
    refused_unchanged(&fx.db, &["create", "retired", "--by", "conductor"])?;
    refused_unchanged(&fx.db, &["create", "retired"])?;
    Ok(())
}

#[test]
fn a_failed_create_by_a_spawned_creator_does_not_record_the_creator() -> TestResult {
    // The creator sub-conductor-1 would be recorded on the way; the create then fails because
    // the id is taken, and the whole transaction must roll back.
    let fx = Fixture::populated()?;
    refused_unchanged(&fx.db, &["create", "worker", "--by", "sub-conductor-1"])?;
    assert!(!session_ids(&fx.db)?.contains(&"sub-conductor-1".to_owned()));
    Ok(())
}

#[test]
fn raise_refuses_an_unknown_taint_class_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["raise", "conductor", "--taint", "top"])?;
    assert_mentions(&r, "top");
    refused_unchanged(&fx.db, &["raise", "conductor", "--taint", "Secret"])?;
    refused_unchanged(&fx.db, &["raise", "conductor", "--taint", ""])?;
    // Also for a child that is not materialized yet: the refusal must not materialize it.
    refused_unchanged(
        &fx.db,
        &["raise", "worker", "--taint", "top", "--untrusted"],
    )?;
    Ok(())
}

#[test]
fn raise_with_neither_taint_nor_untrusted_is_refused_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["raise", "conductor"])?;
    assert_mentions(&r, "nothing to raise");
    // worker is not materialized: refusing must not materialize it either.
    refused_unchanged(&fx.db, &["raise", "worker"])?;
    Ok(())
}

#[test]
fn raise_refuses_an_unknown_session_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["raise", "nobody", "--taint", "secret"])?;
    assert_mentions(&r, "nobody");
    refused_unchanged(&fx.db, &["raise", "sub-nobody-1", "--untrusted"])?;
    refused_unchanged(&fx.db, &["raise", "", "--untrusted"])?;
    refused_unchanged(&fx.db, &["raise", "a b", "--untrusted"])?;
    Ok(())
}

#[test]
fn end_refuses_an_unknown_or_already_ended_session_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["end", "nobody"])?;
    assert_mentions(&r, "nobody");
    let r = refused_unchanged(&fx.db, &["end", "retired"])?;
    assert_mentions(&r, "ended");
    refused_unchanged(&fx.db, &["end", ""])?;
    refused_unchanged(&fx.db, &["end", &"c".repeat(129)])?;
    Ok(())
}

#[test]
fn state_and_tree_refuse_badly_formed_ids() -> TestResult {
    let fx = Fixture::populated()?;
    refused_unchanged(&fx.db, &["state", ""])?;
    refused_unchanged(&fx.db, &["state", "a b"])?;
    refused_unchanged(&fx.db, &["state", &"d".repeat(129)])?;
    refused_unchanged(&fx.db, &["tree", "a b"])?;
    refused_unchanged(&fx.db, &["tree", ""])?;
    Ok(())
}

#[test]
fn an_invalid_actor_is_refused_by_create_raise_and_end_and_changes_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    let too_long = "e".repeat(65);
    for actor in ["", "two words", too_long.as_str(), "x/y"] {
        let r = refused_unchanged(&fx.db, &["create", "fresh", "--actor", actor])?;
        assert_mentions(&r, "actor");
        refused_unchanged(
            &fx.db,
            &["create", "fresh", "--by", "conductor", "--actor", actor],
        )?;
        refused_unchanged(
            &fx.db,
            &["raise", "conductor", "--taint", "secret", "--actor", actor],
        )?;
        // worker is not materialized: a refused raise must not materialize it.
        refused_unchanged(
            &fx.db,
            &["raise", "worker", "--untrusted", "--actor", actor],
        )?;
        refused_unchanged(&fx.db, &["end", "worker", "--actor", actor])?;
    }
    Ok(())
}

/// Runs `session-ledger --db DB ARGS...` with `SESSION_LEDGER_ACTOR` set to `actor` and `USER`
/// to `user`.
fn run_as(db: &Path, actor: &str, user: &str, args: &[&str]) -> Run {
    run_env(db, &[("SESSION_LEDGER_ACTOR", actor), ("USER", user)], args)
}

#[test]
fn the_actor_from_the_environment_is_recorded_and_an_invalid_one_is_refused() -> TestResult {
    let fx = Fixture::populated()?;
    let r = run_as(&fx.db, "alice", "root", &["create", "by-alice"]);
    assert!(r.status.success(), "{}", r.stderr);
    let rows = audit_lines(&fx.db, &["--session", "by-alice"])?;
    assert_eq!(rows[0]["actor"], "alice", "{rows:?}");
    for actor in ["alice smith", "x/y"] {
        let before = dump(&fx.db)?;
        let r = run_as(&fx.db, actor, "root", &["create", "fresh"]);
        assert_clean_failure(&r, &format!("SESSION_LEDGER_ACTOR={actor:?}"));
        assert_eq!(r.status.code(), Some(2), "a bad argument: {}", r.stderr);
        assert_mentions(&r, "SESSION_LEDGER_ACTOR");
        assert_eq!(before, dump(&fx.db)?, "{actor:?} changed the ledger");
    }
    Ok(())
}

#[test]
fn a_create_beyond_fifty_live_children_is_refused_with_an_audit_row_and_no_session() -> TestResult {
    let fx = Fixture::init()?;
    ok(&fx.db, &["create", "conductor"])?;
    for i in 0..50 {
        ok(&fx.db, &["create", &format!("w{i}"), "--by", "conductor"])?;
    }
    let sessions_before = session_ids(&fx.db)?;
    let audit_before = audit_lines(&fx.db, &[])?;

    let r = run(&fx.db, &["create", "w50", "--by", "conductor"]);
    assert_clean_failure(&r, "the 51st live child");
    assert_mentions(&r, "50");

    assert_eq!(
        session_ids(&fx.db)?,
        sessions_before,
        "a refused create added a session"
    );
    let audit_after = audit_lines(&fx.db, &[])?;
    assert_eq!(audit_after[..audit_before.len()], audit_before[..]);
    let new = &audit_after[audit_before.len()..];
    assert_eq!(new.len(), 1, "expected one refusal row: {new:?}");
    assert_eq!(new[0]["kind"], "session.create_refused");
    assert_eq!(new[0]["session"], "w50");
    assert_eq!(new[0]["detail"]["creator"], "conductor");

    // Ending one child frees a place.
    ok(&fx.db, &["end", "w0"])?;
    ok(&fx.db, &["create", "w50", "--by", "conductor"])?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// files that are not ledgers, or newer ones
// ------------------------------------------------------------------------------------------------

/// Every command, `init` included, on a file that must be refused: one clean error each, the
/// file byte-identical, and no file added beside it.
fn assert_every_command_refuses(db: &Path, mention: &str) -> TestResult {
    let original = fs::read(db)?;
    let listing = dir_listing(db.parent().ok_or("no parent")?)?;
    let commands: &[&[&str]] = &[
        &["init"],
        &["create", "conductor"],
        &["create", "worker", "--by", "conductor"],
        &["state", "conductor"],
        &["raise", "conductor", "--taint", "secret"],
        &["end", "conductor"],
        &["tree"],
        &["--json", "audit"],
    ];
    for args in commands {
        let r = run(db, args);
        let what = format!("`{}` on {}", args.join(" "), db.display());
        assert_clean_failure(&r, &what);
        assert_mentions(&r, mention);
        assert!(fs::read(db)? == original, "{what} changed the file");
        assert_eq!(
            dir_listing(db.parent().ok_or("no parent")?)?,
            listing,
            "{what} left files beside it"
        );
    }
    Ok(())
}

#[test]
fn a_file_of_garbage_bytes_is_refused_and_left_byte_identical() -> TestResult {
    let fx = Fixture::empty()?;
    let garbage: Vec<u8> = (0u32..8192)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&fx.db, &garbage)?;
    assert_every_command_refuses(&fx.db, "not a session-ledger database")?;
    assert_eq!(fs::read(&fx.db)?, garbage);
    Ok(())
}

#[test]
fn a_short_text_file_is_refused_and_left_byte_identical() -> TestResult {
    let fx = Fixture::empty()?;
    fs::write(&fx.db, "these are my notes, not a ledger\n")?;
    assert_every_command_refuses(&fx.db, "not a session-ledger database")
}

#[test]
fn a_plain_sqlite_database_is_refused_and_left_byte_identical() -> TestResult {
    let fx = Fixture::empty()?;
    {
        let conn = Connection::open(&fx.db)?;
        conn.execute_batch(
            "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL);
             INSERT INTO invoices (amount) VALUES (10), (20);",
        )?;
    }
    assert_every_command_refuses(&fx.db, "not a session-ledger database")?;
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let tables = rows(
        &conn,
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    )?;
    assert_eq!(tables, ["invoices"]);
    Ok(())
}

#[test]
fn a_ledger_with_a_newer_schema_is_refused_and_left_byte_identical() -> TestResult {
    let fx = Fixture::populated()?;
    {
        let conn = Connection::open(&fx.db)?;
        conn.execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES (999, 'from_the_future', '2099-01-01T00:00:00Z', '0')",
            [],
        )?;
    }
    assert_every_command_refuses(&fx.db, "newer")?;
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let max: i64 = conn.query_row(
        "SELECT max(version) FROM refinery_schema_history",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(max, 999, "the newer schema's history row is gone");
    Ok(())
}

#[test]
fn a_db_path_starting_with_file_colon_names_a_file_and_is_never_read_as_a_uri() -> TestResult {
    // The issue: "Open the file without URI interpretation." `--db file:NAME` (relative to the
    // working directory) must name the file `file:NAME`, not the file NAME or an in-memory db.
    let fx = Fixture::empty()?;
    // The ledger, and the -wal and -shm files every writer leaves beside it for readers who
    // cannot create them.
    let r = run_raw(fx.dir(), &["--db", "file:ledger.db?mode=memory", "init"]);
    assert!(r.status.success(), "init failed: {}", r.stderr);
    assert_eq!(
        dir_listing(fx.dir())?,
        [
            "file:ledger.db?mode=memory",
            "file:ledger.db?mode=memory-shm",
            "file:ledger.db?mode=memory-wal"
        ]
    );

    let fx = Fixture::empty()?;
    let r = run_raw(fx.dir(), &["--db", "file:ledger.db", "init"]);
    assert!(r.status.success(), "init failed: {}", r.stderr);
    assert_eq!(
        dir_listing(fx.dir())?,
        ["file:ledger.db", "file:ledger.db-shm", "file:ledger.db-wal"]
    );
    let r = run_raw(fx.dir(), &["--db", "file:ledger.db", "create", "conductor"]);
    assert!(r.status.success(), "create failed: {}", r.stderr);
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// demo
// ------------------------------------------------------------------------------------------------

#[test]
fn demo_with_a_path_writes_an_example_ledger_there() -> TestResult {
    let fx = Fixture::empty()?;
    let path = fx.dir().join("demo.db");
    let p = path.to_str().ok_or("non-UTF-8 temp path")?;
    // --db is given explicitly (and ignored by demo) so nothing can fall back to a default file.
    let out = ok(&fx.db, &["demo", "--path", p])?;
    assert!(out.contains("conductor"), "demo output:\n{out}");
    assert!(
        out.contains("└── ") || out.contains("├── "),
        "demo draws no tree:\n{out}"
    );
    assert!(path.is_file(), "demo did not write {p}");
    assert!(!fx.db.exists(), "demo touched --db");

    // The demo ledger is a real ledger: the CLI reads it.
    let tree = ok_json(&path, &["tree"])?;
    let ids: Vec<&str> = tree
        .as_array()
        .ok_or("tree --json is not an array")?
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(ids.contains(&"conductor"), "{ids:?}");
    assert!(
        ids.iter().any(|id| id.starts_with("sub-")),
        "no spawned sub-agent: {ids:?}"
    );
    assert!(ids.len() >= 4, "{ids:?}");
    assert!(!audit_lines(&path, &[])?.is_empty());
    Ok(())
}

#[test]
fn demo_refuses_a_path_that_exists_and_leaves_it_unchanged() -> TestResult {
    let fx = Fixture::empty()?;
    let path = fx.dir().join("demo.db");
    let p = path.to_str().ok_or("non-UTF-8 temp path")?;
    ok(&fx.db, &["demo", "--path", p])?;
    let first = fs::read(&path)?;
    let listing = dir_listing(fx.dir())?;

    let r = run(&fx.db, &["demo", "--path", p]);
    assert_clean_failure(&r, "a second demo on the same path");
    assert_mentions(&r, "exists");
    assert!(fs::read(&path)? == first, "the second demo changed {p}");
    assert_eq!(dir_listing(fx.dir())?, listing);
    Ok(())
}

#[test]
fn demo_refuses_to_overwrite_a_file_that_is_not_a_ledger() -> TestResult {
    let fx = Fixture::empty()?;
    let path = fx.dir().join("notes.txt");
    fs::write(&path, "keep me\n")?;
    let r = run(
        &fx.db,
        &["demo", "--path", path.to_str().ok_or("non-UTF-8")?],
    );
    assert_clean_failure(&r, "demo onto an existing file");
    assert_eq!(fs::read_to_string(&path)?, "keep me\n");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// errors: where and how they are printed
// ------------------------------------------------------------------------------------------------

#[test]
fn json_errors_still_go_to_stderr_as_one_line() -> TestResult {
    let fx = Fixture::populated()?;
    let cases: &[&[&str]] = &[
        &["--json", "create", ""],
        &["--json", "create", "conductor"],
        &["--json", "create", "fresh", "--by", "nobody"],
        &["--json", "create", "fresh", "--by", "retired"],
        &["--json", "raise", "conductor", "--taint", "top"],
        &["--json", "raise", "conductor"],
        &["--json", "end", "retired"],
        &["--json", "tree", "nobody"],
        &["--json", "state", "a b"],
        &["--json", "frobnicate"],
        &["--json", "audit", "--limit", "many"],
    ];
    for args in cases {
        let r = refused_unchanged(&fx.db, args)?;
        assert!(
            serde_json::from_str::<Value>(&r.stdout).is_err(),
            "`{}` printed JSON on stdout",
            args.join(" ")
        );
    }
    let missing = Fixture::empty()?;
    let r = run(&missing.db, &["--json", "state", "x"]);
    assert_clean_failure(&r, "--json state on a missing ledger");
    Ok(())
}

#[test]
fn argument_errors_are_one_line_with_a_non_zero_exit() -> TestResult {
    let fx = Fixture::populated()?;
    let cases: &[&[&str]] = &[
        &["frobnicate"],
        &["create"],
        &["create", "a", "b"],
        &["create", "fresh", "--by"],
        &["raise", "conductor", "--taint"],
        &["raise", "conductor", "--colour", "red"],
        &["audit", "--limit", "-1"],
        &["audit", "--limit", "abc"],
        &["tree", "a", "b"],
    ];
    for args in cases {
        refused_unchanged(&fx.db, args)?;
    }
    Ok(())
}

#[test]
fn a_missing_argument_is_named_in_the_one_line_error() -> TestResult {
    let fx = Fixture::populated()?;
    let r = refused_unchanged(&fx.db, &["create"])?;
    assert_mentions(&r, "<ID>");
    let r = refused_unchanged(&fx.db, &["state"])?;
    assert_mentions(&r, "<ID>");
    Ok(())
}

#[test]
fn an_error_under_json_is_one_json_object_with_a_kind_and_the_text_message() -> TestResult {
    let fx = Fixture::populated()?;
    let missing = Fixture::empty()?;
    // (ledger, arguments after --json, kind, exit code as documented in README.md)
    let cases: &[(&Path, &[&str], &str, i32)] = &[
        (&fx.db, &["state", "a b"], "invalid_id", 1),
        (
            &fx.db,
            &["create", "fresh", "--by", "nobody"],
            "unknown_session",
            1,
        ),
        (
            &fx.db,
            &["create", "fresh", "--by", "retired"],
            "session_ended",
            1,
        ),
        (&fx.db, &["create", "conductor"], "session_exists", 1),
        (
            &fx.db,
            &["raise", "conductor", "--taint", "top"],
            "invalid_taint",
            1,
        ),
        (&fx.db, &["raise", "conductor"], "nothing_to_raise", 1),
        (
            &fx.db,
            &["create", "fresh", "--actor", "two words"],
            "invalid_actor",
            1,
        ),
        (
            &fx.db,
            &["audit", "--since", "yesterday"],
            "invalid_time",
            1,
        ),
        (&missing.db, &["state", "x"], "no_ledger", 1),
        (&fx.db, &["frobnicate"], "usage", 2),
        (&fx.db, &["audit", "--limit", "many"], "usage", 2),
        (
            &fx.db,
            &["revoke", "conductor", "--local", "--token", "t"],
            "usage",
            2,
        ),
    ];
    for (db, args, kind, code) in cases {
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let what = format!("`{}`", with_json.join(" "));
        let r = run(db, &with_json);
        assert_clean_failure(&r, &what);
        assert_eq!(r.status.code(), Some(*code), "{what}: {}", r.stderr);
        let e = json_error(&r, &what)?;
        assert_eq!(e["kind"], *kind, "{what}: {e}");
        // The message is the text the command prints without --json.
        let text = run(db, args);
        assert_eq!(text.status.code(), Some(*code), "{what} without --json");
        assert_eq!(
            text.stderr,
            format!(
                "session-ledger: error: {}\n",
                e["message"].as_str().unwrap_or("")
            ),
            "{what}: the JSON message and the text differ"
        );
    }
    // --json counts wherever it stands, also when the parser refuses the rest.
    let r = run(&fx.db, &["state", "conductor", "--json", "--colour"]);
    assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
    assert_eq!(
        json_error(&r, "--json after the subcommand")?["kind"],
        "usage"
    );
    Ok(())
}

#[test]
fn an_invalid_id_is_quoted_cut_to_a_readable_length_with_its_full_length() -> TestResult {
    let fx = Fixture::populated()?;
    let long = "a".repeat(10_000);
    for args in [
        &["state", long.as_str()][..],
        &["create", &long],
        &["create", "fresh", "--by", &long],
        &["tree", &long],
    ] {
        let what = format!("`{}` with a 10,000-character id", args[0]);
        let r = refused_unchanged(&fx.db, args)?;
        assert!(r.stderr.len() < 200, "{what}: {} bytes", r.stderr.len());
        assert!(
            r.stderr
                .contains("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
                && r.stderr.contains("a…\" (10000 characters)"),
            "{what}: {:?}",
            r.stderr
        );
        assert_mentions(&r, "longer than 128 characters");
    }
    Ok(())
}

#[test]
fn other_long_values_in_errors_are_quoted_cut_with_their_full_length() -> TestResult {
    let fx = Fixture::populated()?;
    let long = "x".repeat(5_000);
    let long_ttl = "9".repeat(5_000);
    let head = format!("--head={long}");
    for args in [
        &["create", "fresh", "--actor", long.as_str()][..],
        &["raise", "conductor", "--taint", &long],
        &["pattern", "add", "conductor", &long],
        &["scope", "grant", "conductor", &long, "--ttl", "1h"],
        &["scope", "grant", "conductor", "hotfix", "--ttl", &long_ttl],
        &["revoke", "conductor", "--cascade", "--token", &long],
        &["audit", "--since", &long],
        &["verify", &head],
    ] {
        let what = format!("`{} {}` with a 5,000-character value", args[0], args[1]);
        let r = refused_unchanged(&fx.db, args)?;
        assert!(r.stderr.len() < 300, "{what}: {} bytes", r.stderr.len());
        assert!(
            r.stderr.contains("…\" (5000 characters)"),
            "{what}: {:?}",
            r.stderr
        );
    }
    Ok(())
}
