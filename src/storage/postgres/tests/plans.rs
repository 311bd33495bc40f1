//! The query plans of the statements on the hot paths, on PostgreSQL, held by a test.
//!
//! Every statement that a state read, a first read, a raise, a create, a decision, an
//! explanation, a lineage walk, a tree view, a revocation or an audit listing runs must find
//! its rows through an index: a sequential scan of a table that grows with the ledger costs
//! what the ledger holds instead of what the answer holds. PostgreSQL's planner picks a
//! sequential scan of a small table whatever its indexes, so the test turns sequential scans
//! off (`enable_seqscan = off` makes them a last resort, not impossible): a statement that still
//! scans a table has no index that serves it. Each statement is planned as a generic plan, as
//! a prepared statement is, so the plan holds for any value of its parameters.
//!
//! The other statements' joins are the planner's choice, which depends on the tables' sizes: on
//! this test's small ledger it hashes whole tables where, on a large one, it searches keys (a
//! scan of a whole index, an index scan with no condition, is what such a hash becomes with
//! sequential scans off). The statements whose joins are key searches by construction
//! ([`KEY_SEARCHES_ONLY`]) are held to more: no index read whole either.
//!
//! It runs against the server `SESSION_LEDGER_TEST_POSTGRES` names, in a schema of its own, and
//! says it is skipped when the variable is unset.

use postgres::{Client, NoTls};

use super::{
    archives, audit, commit, decisions, grants, labels, levels, postures, sessions, tree, writes,
};
use crate::config::{Config, Synchronous};
use crate::{Ledger, PostureLevel, Propagation, Raise, Taint};

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
        (
            "create: creator, id, bounds, posture",
            sessions::CREATION_FACTS,
        ),
        ("create: child, posture, audit row", writes::CREATE_CHILD),
        ("create root: its label", labels::INSERT_BORN),
        (
            "decide: ended, posture, patterns, scope",
            postures::DECISION_FACTS,
        ),
        ("decide: live scope", grants::LIVE_SCOPE),
        ("decide, pattern list: patterns", grants::PATTERNS),
        ("scope list, explain: scopes", grants::SCOPES),
        ("pattern add", grants::ADD_PATTERN),
        ("pattern remove", grants::REMOVE_PATTERN),
        ("scope grant", grants::GRANT_SCOPE),
        ("scope revoke", grants::REVOKE_SCOPE),
        ("explain, posture: the posture row", postures::POSTURE),
        ("epoch: the current one", postures::CURRENT_EPOCH),
        ("grant: the posture it replaces", postures::CLEAR_FOR_GRANT),
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
        (
            "write: the head, once the lock is held",
            audit::HEAD_AT_LOCK,
        ),
        ("a lost commit: its audit row", commit::FIND_WRITTEN),
        ("audit: the newest time", audit::LATEST_TIME),
        ("audit: append", audit::APPEND),
        ("audit: append many", audit::APPEND_MANY),
        ("audit: where time order starts", audit::ORDERED_FROM),
        ("audit by time: the search's probe", audit::PROBE),
        ("audit by time, by page", audit::LIST),
        ("audit by session", audit::LIST_BY_SESSION),
        ("audit by subtree", audit::LIST_BY_SUBTREE),
        ("verify, verify --from: the walk", audit::WALK),
        ("tree: the last leaf", tree::LAST_LEAF),
        ("tree: nodes by key", tree::NODES),
        ("tree: append nodes", tree::APPEND_NODES),
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
        ("integrate: positions", decisions::INTEGRATE),
        ("integrate: out of the queue", decisions::DEQUEUE),
        ("export: records after a position", decisions::LOGGED_AFTER),
        ("verify: a batch's records", decisions::BATCH),
        // Not a hot path, but run beside one: a batch of an archive's move must cost its
        // trees, not the ledger, so that it holds the write lock briefly at any size.
        ("archive: the trees' archived rows", archives::ARCHIVE_TREES),
        ("archive: the trees' scopes", archives::REMOVE_TREES[0]),
        ("archive: the trees' patterns", archives::REMOVE_TREES[1]),
        ("archive: the trees' postures", archives::REMOVE_TREES[2]),
        ("archive: the trees' labels", archives::REMOVE_TREES[3]),
        ("archive: the trees' sessions", archives::REMOVE_TREES[4]),
    ]
}

/// The statements whose every join is a key search by construction (a `LATERAL` join that
/// PostgreSQL cannot flatten), whatever the planner guesses of the rows: no plan of theirs may
/// read a growing table whole, not even through an index.
const KEY_SEARCHES_ONLY: &[&str] = &[
    "tree",
    "preview: subtree with postures",
    "tree level: the roots",
    "tree level: the roots after one",
    "tree level: children",
    "tree level: children after one",
    "archive: the trees' archived rows",
    "archive: the trees' scopes",
    "archive: the trees' patterns",
    "archive: the trees' postures",
    "archive: the trees' labels",
    "archive: the trees' sessions",
];

/// The tables that grow with the ledger: no hot statement may scan one.
const GROWING: &[&str] = &[
    "sessions",
    "labels",
    "postures",
    "audit",
    "audit_tree",
    "checkpoints",
    "command_patterns",
    "override_scopes",
    "decisions",
    "decision_log",
];

/// How a plan reads a relation whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Whole {
    /// A sequential scan.
    SeqScan,
    /// An index scan or index-only scan with no condition: every entry of the index.
    IndexRead,
}

/// The relations a plan reads whole, and how, from `EXPLAIN (FORMAT JSON)`'s tree.
fn scanned(plan: &serde_json::Value, out: &mut Vec<(String, Whole)>) {
    let whole = match plan["Node Type"].as_str() {
        Some("Seq Scan") => Some(Whole::SeqScan),
        Some("Index Scan" | "Index Only Scan") if plan.get("Index Cond").is_none() => {
            Some(Whole::IndexRead)
        }
        _ => None,
    };
    if let (Some(whole), Some(relation)) = (whole, plan["Relation Name"].as_str()) {
        out.push((relation.to_owned(), whole));
    }
    if let Some(children) = plan["Plans"].as_array() {
        for child in children {
            scanned(child, out);
        }
    }
}

/// A ledger with enough of everything that each statement has rows to find: two trees of a
/// thousand sessions, half of them read, a trusted branch, spawned sessions, patterns, scopes,
/// an ended session, revocations, and the audit rows all of that wrote.
fn build(url: &str) -> crate::Result<()> {
    let ledger = Ledger::open_with(
        url,
        Config::default()
            .create_if_missing(true)
            .synchronous(Synchronous::Normal)
            .max_depth(u32::MAX)
            .max_live_children(u32::MAX)
            .creation_rate(u32::MAX, std::time::Duration::from_secs(1)),
    )?;
    for r in 0..2 {
        let root = format!("r{r}");
        ledger.create_root(&root, "op")?;
        if r == 0 {
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
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: true,
    };
    ledger.raise("r1.1", secret, "op")?;
    ledger.add_pattern("r1.1", "cargo test", "op")?;
    ledger.grant_scope("r1.1", "deploy", std::time::Duration::from_secs(3600), "op")?;
    ledger.end("r1.2", "op")?;
    ledger.revoke("r0.1", Propagation::CascadeUnchecked, "op")?;
    ledger.revoke("r0", Propagation::Local, "op")?;
    let asked = crate::AskedBy::actor("op");
    for (i, id) in ["r0.1.1", "r1.1", "nobody"]
        .iter()
        .cycle()
        .take(300)
        .enumerate()
    {
        ledger.decide_and_record(id, &format!("make {i}"), false, &asked)?;
        if i == 200 {
            ledger.integrate_decisions("op")?;
        }
    }
    Ok(())
}

/// The test server's owner connection, a new schema named `NAME_PID` in it, and a URL whose
/// connections work in that schema; `None`, said to be skipped, without a server, and a
/// failure then when one is required.
pub(super) fn schema_of_its_own(name: &str) -> crate::Result<Option<(Client, String, String)>> {
    let Ok(base) = std::env::var("SESSION_LEDGER_TEST_POSTGRES") else {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED: a PostgreSQL test ({name}): SESSION_LEDGER_TEST_POSTGRES is not set ***\n"
        );
        assert_ne!(
            std::env::var("SESSION_LEDGER_REQUIRE_POSTGRES").as_deref(),
            Ok("1"),
            "SESSION_LEDGER_TEST_POSTGRES is not set, and SESSION_LEDGER_REQUIRE_POSTGRES=1"
        );
        return Ok(None);
    };
    let schema = format!("{name}_{}", std::process::id());
    let mut admin = Client::connect(&base, NoTls)?;
    // Two `CREATE EXTENSION IF NOT EXISTS` at once may both try to create it: one at a time.
    static SETUP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SETUP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    admin.batch_execute(&format!(
        "CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public;
         DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))?;
    let join = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{join}options=-c%20search_path%3D{schema}%2Cpublic");
    Ok(Some((admin, schema, url)))
}

#[test]
fn no_hot_statement_scans_a_table_that_grows() -> crate::Result<()> {
    let Some((mut admin, schema, url)) = schema_of_its_own("plans")? else {
        return Ok(());
    };
    build(&url)?;
    let mut client = Client::connect(&url, NoTls)?;
    client.batch_execute(
        "ANALYZE; SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan",
    )?;
    let mut problems = Vec::new();
    for (name, sql) in hot_statements() {
        let parameters = client.prepare(sql)?.params().len();
        client.batch_execute(&format!("PREPARE hot AS {sql}"))?;
        let nulls = vec!["NULL"; parameters].join(", ");
        let execute = if parameters == 0 {
            "EXECUTE hot".to_owned()
        } else {
            format!("EXECUTE hot({nulls})")
        };
        let row = client.query_one(&format!("EXPLAIN (FORMAT JSON) {execute}"), &[])?;
        client.batch_execute("DEALLOCATE hot")?;
        let plan: serde_json::Value = row.try_get(0)?;
        let mut relations = Vec::new();
        scanned(&plan[0]["Plan"], &mut relations);
        for (relation, how) in relations {
            if !GROWING.contains(&relation.as_str()) {
                continue;
            }
            match how {
                Whole::SeqScan => problems.push(format!("{name}: Seq Scan on {relation}")),
                Whole::IndexRead if KEY_SEARCHES_ONLY.contains(&name) => {
                    problems.push(format!("{name}: a whole index of {relation} read"))
                }
                Whole::IndexRead => {}
            }
        }
    }
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    assert!(
        problems.is_empty(),
        "statements that read more than their answer:\n{}",
        problems.join("\n")
    );
    Ok(())
}

/// A write's first step runs in the schema's function `ledger_write_lock_and_head()`, where
/// the test above cannot see its head's statement: the function must take the lock every other
/// writer takes and run the statement whose plan that test holds.
#[test]
fn the_write_lock_and_head_function_runs_the_lock_and_the_statement_held_here() -> crate::Result<()>
{
    let Some((mut admin, schema, url)) = schema_of_its_own("write_begin")? else {
        return Ok(());
    };
    Ledger::init(&url)?;
    let mut client = Client::connect(&url, NoTls)?;
    let body: String = client
        .query_one(
            "SELECT prosrc FROM pg_proc WHERE oid = 'ledger_write_lock_and_head()'::regprocedure",
            &[],
        )?
        .try_get(0)?;
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let body = words(&body);
    for (what, statement) in [
        // PL/pgSQL runs as `PERFORM` what a batch runs as `SELECT`.
        (
            "the write lock",
            super::write_lock!().trim_start_matches("SELECT "),
        ),
        ("the head", audit::HEAD_AT_LOCK),
    ] {
        assert!(
            body.contains(&format!("{};", words(statement))),
            "ledger_write_lock_and_head() does not run {what}, {statement:?}:\n{body}"
        );
    }
    Ok(())
}

#[test]
fn the_plan_check_finds_a_sequential_scan_at_any_depth() {
    let plan = serde_json::json!({
        "Node Type": "Nested Loop",
        "Plans": [
            { "Node Type": "Index Scan", "Relation Name": "sessions", "Index Cond": "(id = $1)" },
            { "Node Type": "Hash", "Plans": [ { "Node Type": "Seq Scan", "Relation Name": "audit" } ] }
        ]
    });
    let mut relations = Vec::new();
    scanned(&plan, &mut relations);
    assert_eq!(relations, [("audit".to_owned(), Whole::SeqScan)]);
}

#[test]
fn the_plan_check_finds_an_index_read_whole() {
    let plan = serde_json::json!({
        "Node Type": "Hash Join",
        "Plans": [
            { "Node Type": "Index Scan", "Relation Name": "sessions", "Index Cond": "(id = $1)" },
            { "Node Type": "Hash", "Plans": [
                { "Node Type": "Index Only Scan", "Relation Name": "postures" }
            ] }
        ]
    });
    let mut relations = Vec::new();
    scanned(&plan, &mut relations);
    assert_eq!(relations, [("postures".to_owned(), Whole::IndexRead)]);
}
