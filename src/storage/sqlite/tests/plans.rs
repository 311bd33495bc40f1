//! The query plans of the statements on the hot paths, held by a test.
//!
//! Every statement that a state read, a first read, a raise, a create, a decision, an
//! explanation, a lineage walk, a tree view, a revocation or an audit listing runs must find
//! its rows through an index, on the bundled SQLite and on the Debian `sqlite3` shell's older
//! one alike: a `SCAN` of a table that grows with the ledger, or an `AUTOMATIC` index built for
//! one statement, costs what the ledger holds instead of what the answer holds. The statements
//! are written so that the planner has nothing else to choose (`CROSS JOIN` fixes the join
//! order, `INDEXED BY` names the index); this test makes sure it stays so.
//!
//! The library runs neither `ANALYZE` nor `PRAGMA optimize`, so the test does not either: the
//! plans checked are the ones a production ledger gets.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{audit, decisions, grants, labels, levels, postures, sessions, tree};
use crate::config::{Config, Synchronous};
use crate::{Ledger, PostureLevel, Propagation, Raise};

/// The statements on the hot paths, by a name that says what runs them.
fn hot_statements() -> Vec<(&'static str, &'static str)> {
    vec![
        ("state: stored label, ended, posture", labels::STATE),
        ("state: the session row", sessions::SESSION),
        ("first read: inherit the label", labels::MATERIALIZE_PATH),
        ("first read: record a spawned session", sessions::INSERT),
        ("first read, create: inherit the posture", postures::INHERIT),
        ("raise: the stored label", labels::LABEL),
        ("raise: store it", labels::RAISE),
        ("create: bounds", sessions::CREATION_COUNTS),
        ("create root: its label", labels::INSERT_BORN),
        ("decide: ended and posture", postures::DECISION_FACTS),
        ("decide: live scope", grants::LIVE_SCOPE),
        ("decide, pattern list: patterns", grants::PATTERNS),
        ("scope list, explain: scopes", grants::SCOPES),
        ("pattern add", grants::ADD_PATTERN),
        ("pattern remove", grants::REMOVE_PATTERN),
        ("scope grant", grants::GRANT_SCOPE),
        ("scope revoke", grants::REVOKE_SCOPE),
        ("explain, posture: the posture row", postures::POSTURE),
        ("epoch: the current one", postures::CURRENT_EPOCH),
        ("grant", postures::GRANT),
        ("end: with its spawned sessions", sessions::END_WITH_SPAWNED),
        ("end: one session", sessions::END),
        ("ancestors", sessions::ANCESTORS),
        ("children", sessions::CHILDREN),
        ("subtree", sessions::SUBTREE),
        ("tree", sessions::TREE),
        ("tree level: the roots", levels::ROOTS),
        ("tree level: the roots after one", levels::ROOTS_AFTER),
        ("tree level: children", levels::CHILDREN),
        ("tree level: children after one", levels::CHILDREN_AFTER),
        (
            "tree, read-only first read: the inherited label",
            labels::INHERITED,
        ),
        (
            "preview: subtree with postures",
            postures::SUBTREE_WITH_POSTURES,
        ),
        ("local revoke", postures::REVOKE_ONE),
        (
            "local revoke: who still holds through it",
            postures::INHERITED_THROUGH,
        ),
        ("cascade revoke", postures::REVOKE_SUBTREE),
        (
            "local revoke, authority: one session's standing grants",
            grants::STANDING_ONE,
        ),
        (
            "preview, cascade: the subtree's standing grants",
            grants::STANDING_SUBTREE,
        ),
        ("local revoke --scopes", grants::REVOKE_SCOPES_ONE),
        ("cascade --scopes", grants::REVOKE_SCOPES_SUBTREE),
        ("local revoke --patterns", grants::REMOVE_PATTERNS_ONE),
        ("cascade --patterns", grants::REMOVE_PATTERNS_SUBTREE),
        ("audit: the head", audit::HEAD),
        ("audit: the newest time", audit::LATEST_TIME),
        ("audit: append", audit::APPEND),
        ("audit: where time order starts", audit::ORDERED_FROM),
        ("audit by time: the search's probe", audit::PROBE),
        ("audit by time, by page", audit::LIST),
        ("audit by session", audit::LIST_BY_SESSION),
        ("audit by subtree", audit::LIST_BY_SUBTREE),
        ("verify, verify --from: the walk", audit::WALK),
        ("tree: the last leaf", tree::LAST_LEAF),
        ("tree: a node", tree::NODE),
        ("tree: append a node", tree::APPEND_NODE),
        ("checkpoints after a seq", tree::CHECKPOINTS),
        ("the latest checkpoint", tree::LATEST_CHECKPOINT),
        ("append a checkpoint", tree::APPEND_CHECKPOINT),
        ("decide --record: append", decisions::APPEND),
        (
            "decisions of a session, by page",
            decisions::LIST_BY_SESSION,
        ),
        (
            "decisions of a subtree, by page",
            decisions::LIST_BY_SUBTREE,
        ),
        ("decisions since a time", decisions::LIST_BY_TIME),
        ("a decision by its record id", decisions::BY_RECORD),
        ("integrate: the queued records", decisions::QUEUED),
        ("integrate: the log's size", decisions::LOG_SIZE),
        ("integrate: a position", decisions::LOG),
        ("integrate: out of the queue", decisions::DEQUEUE),
        ("export: records after a position", decisions::LOGGED_AFTER),
        ("verify: a batch's records", decisions::BATCH),
    ]
}

/// What a plan may scan: a CTE's own rows, a JSON array, a subquery's result, a constant row.
const MAY_SCAN: &[&str] = &["subtree", "ancestors", "spawned", "source", "link", "up"];

/// The scans that SQLite's plan of an insert into `sessions` lists but never runs: with foreign
/// keys on, an insert into a parent table checks whether the new row resolves a reference
/// that was missing, in the child tables whose referencing columns have no index
/// (`postures.granted_on`, `postures.inherited_from`, `labels.inherited_from`). That check is
/// guarded by the statement's count of violations (`OP_FkIfZero`), which is zero: every
/// reference is checked when it is written, so none is ever pending.
/// `inserting_a_session_runs_no_full_scan` holds that by running the insert.
const FOREIGN_KEY_GUARDS: &[&str] = &["SCAN postures", "SCAN labels"];

/// The queue is read in its key's order up to one batch (`LIMIT`): the plan says `SCAN`, and
/// the statement stops after the batch. The queue holds only what waits to be integrated.
const QUEUE_IN_KEY_ORDER: &str = "SCAN q";

/// The lines of `plan` that read a table whole or build an index for one statement.
fn offending(plan: &[String]) -> Vec<String> {
    plan.iter()
        .filter(|line| {
            if line.contains("AUTOMATIC") {
                return true;
            }
            match line.strip_prefix("SCAN ") {
                Some(rest) => {
                    let what = rest.split_whitespace().next().unwrap_or("");
                    !(MAY_SCAN.contains(&what)
                        || what.starts_with("(subquery-")
                        || rest.starts_with("CONSTANT ROW"))
                }
                None => false,
            }
        })
        .cloned()
        .collect()
}

/// The plan's lines as the bundled SQLite gives them.
fn bundled_plan(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    // Parameters left unbound are NULL: a plan does not depend on their values.
    let mut rows = stmt.raw_query();
    let mut plan = Vec::new();
    while let Some(row) = rows.next()? {
        plan.push(row.get::<_, String>(3)?);
    }
    Ok(plan)
}

/// Every statement's plan as the `sqlite3` shell gives it, in one run of the shell.
fn shell_plans(path: &Path, statements: &[(&str, &str)]) -> Vec<Vec<String>> {
    const MARK: &str = "-- next statement --";
    let mut script = String::from("PRAGMA foreign_keys = ON;\n");
    for (_, sql) in statements {
        script.push_str(&format!(".print '{MARK}'\nEXPLAIN QUERY PLAN {sql};\n"));
    }
    let mut child = Command::new("sqlite3")
        .arg("-readonly")
        .arg("-bail")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the sqlite3 shell runs (.ci/run installs it: apt-get install sqlite3)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("the script goes to the shell");
    let output = child.wait_with_output().expect("the shell ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "sqlite3 failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut plans: Vec<Vec<String>> = Vec::new();
    for line in stdout.lines() {
        if line == MARK {
            plans.push(Vec::new());
        } else if let Some(plan) = plans.last_mut() {
            let line = line.trim_start_matches(['|', '`', '-', ' ']);
            if !line.is_empty() && line != "QUERY PLAN" {
                plan.push(line.to_owned());
            }
        }
    }
    plans
}

/// A ledger with enough of everything that each statement has rows to find: a few thousand
/// sessions in trees of a thousand, half of them read, trusted branches, spawned sessions,
/// patterns, scopes, ended sessions, revocations, and the audit rows all of that wrote.
fn build(path: &Path) -> crate::Result<()> {
    let ledger = Ledger::open_with(
        path,
        Config::default()
            .create_if_missing(true)
            .synchronous(Synchronous::Normal)
            .max_depth(u32::MAX)
            .max_live_children(u32::MAX)
            .creation_rate(u32::MAX, Duration::from_secs(1)),
    )?;
    for r in 0..4 {
        let root = format!("r{r}");
        ledger.create_root(&root, "op")?;
        if r % 2 == 0 {
            ledger.grant(&root, PostureLevel::Trust, "op")?;
        }
        let mut level = vec![root];
        for _ in 0..3 {
            let mut next = Vec::new();
            for parent in &level {
                for k in 0..10 {
                    let id = format!("{parent}.{k}");
                    ledger.create_child(&id, parent, "op")?;
                    next.push(id);
                }
            }
            level = next;
        }
        for (i, id) in level.iter().enumerate() {
            if i % 2 == 0 {
                ledger.state(id)?;
            }
        }
    }
    ledger.state("sub-r1.2.3-1")?;
    ledger.raise(
        "r1.1",
        Raise {
            taint: Some(crate::Taint::Secret),
            untrusted: true,
        },
        "op",
    )?;
    ledger.add_pattern("r1.1", "cargo test", "op")?;
    ledger.grant_scope("r1.1", "deploy", Duration::from_secs(3600), "op")?;
    ledger.end("r1.2", "op")?;
    ledger.revoke("r0.1", Propagation::CascadeUnchecked, "op")?;
    ledger.revoke("r2", Propagation::Local, "op")?;
    let asked = crate::AskedBy::actor("op");
    for (i, id) in ["r0.1.1.1", "r1.1", "r3.2.2", "nobody"]
        .iter()
        .cycle()
        .take(400)
        .enumerate()
    {
        ledger.decide_and_record(id, &format!("make {i}"), false, &asked)?;
        if i == 300 {
            ledger.integrate_decisions("op")?;
        }
    }
    Ok(())
}

#[test]
fn no_hot_statement_scans_a_table_that_grows_or_builds_an_automatic_index() -> crate::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    build(&path)?;
    let statements = hot_statements();
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    // As the library's connections have it: the foreign-key checks are part of each plan.
    conn.pragma_update(None, "foreign_keys", true)?;
    let shell = shell_plans(&path, &statements);
    assert_eq!(
        shell.len(),
        statements.len(),
        "one shell plan per statement"
    );
    let mut problems = Vec::new();
    for ((name, sql), shell_plan) in statements.iter().zip(&shell) {
        let bundled = bundled_plan(&conn, sql)?;
        for (engine, plan) in [("bundled SQLite", &bundled), ("sqlite3 shell", shell_plan)] {
            for line in offending(plan) {
                if *sql == sessions::INSERT && FOREIGN_KEY_GUARDS.contains(&line.as_str()) {
                    continue;
                }
                if *sql == decisions::QUEUED && line == QUEUE_IN_KEY_ORDER {
                    continue;
                }
                problems.push(format!("{name} ({engine}): {line}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "statements that read more than their answer:\n{}",
        problems.join("\n")
    );
    Ok(())
}

#[test]
fn inserting_a_session_runs_no_full_scan() -> crate::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    build(&path)?;
    let mut conn = Connection::open(&path)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    let tx = conn.transaction()?;
    let mut stmt = tx.prepare(sessions::INSERT)?;
    stmt.execute(rusqlite::named_params! {
        ":id": "r1.1.1.1.1",
        ":created_by": "r1.1.1.1",
        ":depth": 4,
        ":origin": "created",
        ":now": "2026-12-01T00:00:00.000Z",
    })?;
    assert_eq!(
        stmt.get_status(rusqlite::StatementStatus::FullscanStep),
        0,
        "the insert stepped through a full scan"
    );
    Ok(())
}

#[test]
fn listings_of_a_session_or_a_subtree_keep_to_the_session_index_with_the_seq_range(
) -> crate::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    build(&path)?;
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    for sql in [audit::LIST_BY_SESSION, audit::LIST_BY_SUBTREE] {
        let plan = bundled_plan(&conn, sql)?.join("\n");
        assert!(plan.contains("INDEX audit_by_session"), "{plan}");
    }
    let by_session = bundled_plan(&conn, audit::LIST_BY_SESSION)?.join("\n");
    assert!(
        by_session.contains("INDEX audit_by_session (session_id=? AND seq>? AND seq<?)"),
        "{by_session}"
    );
    let order = bundled_plan(&conn, audit::ORDERED_FROM)?.join("\n");
    assert!(order.contains("SEARCH audit_time_order"), "{order}");
    Ok(())
}

#[test]
fn the_plan_check_catches_a_scan_and_an_automatic_index() {
    let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        offending(&lines(&[
            "SCAN s",
            "SCAN subtree",
            "SCAN CONSTANT ROW",
            "SCAN (subquery-2)"
        ])),
        ["SCAN s"]
    );
    assert_eq!(
        offending(&lines(&[
            "SEARCH s USING AUTOMATIC COVERING INDEX (created_by=?)",
            "SEARCH s USING INDEX sessions_by_creator (created_by=?)",
            "SCAN sessions USING COVERING INDEX sessions_by_creator",
        ])),
        [
            "SEARCH s USING AUTOMATIC COVERING INDEX (created_by=?)",
            "SCAN sessions USING COVERING INDEX sessions_by_creator"
        ]
    );
}

#[test]
fn a_page_of_a_tree_level_is_a_range_of_the_creator_index_in_its_order_with_nothing_sorted(
) -> crate::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    build(&path)?;
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    for (sql, range) in [
        (levels::ROOTS, "(created_by=?)"),
        (levels::ROOTS_AFTER, "(created_by=? AND created_at>?)"),
        (levels::CHILDREN, "(created_by=?)"),
        (levels::CHILDREN_AFTER, "(created_by=? AND created_at>?)"),
    ] {
        let plan = bundled_plan(&conn, sql)?.join("\n");
        assert!(
            plan.contains(&format!("SEARCH s USING INDEX sessions_by_creator {range}")),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "a page is sorted:\n{plan}");
    }
    Ok(())
}

#[test]
fn a_page_of_a_sessions_decisions_walks_its_index_newest_first_with_nothing_sorted(
) -> crate::Result<()> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.db");
    build(&path)?;
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let plan = bundled_plan(&conn, decisions::LIST_BY_SESSION)?;
    assert!(
        plan.iter().any(|line| line
            .starts_with("SEARCH d USING INDEX decisions_by_session (session_id=? AND rowid<?)")
            || line.starts_with("SEARCH d USING INDEX decisions_by_session (session_id=?)")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|line| line.contains("TEMP B-TREE")),
        "a page is read in the index's order, not sorted: {plan:?}"
    );
    Ok(())
}
