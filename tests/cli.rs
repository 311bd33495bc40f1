//! What the `session-ledger` command line adds to the library, for `init`, `create`, `state`,
//! `raise`, `end`, `tree` and `demo`, and for every command alike: how arguments are read and
//! refused, exit codes, text and `--json` output, errors on stderr, the environment, and the
//! files the CLI refuses to open. The rules behind the commands are tested once, against the
//! library (tests/labels.rs, tests/sessions.rs, tests/rules_from_cli.rs and the others).
//!
//! Every test runs the real binary on a ledger in a temporary directory, always with an explicit
//! `--db` and with `SESSION_LEDGER_DB` removed from the environment. Bad input must give a
//! non-zero exit, exactly one line on stderr, no panic, and change nothing: `refused_unchanged`
//! (tests/common/cli.rs) compares every row of every table before and after. The flows of
//! `create`, `state`, `raise`, `end` and `tree` run once more, as `postgres::NAME`, on a ledger
//! in a PostgreSQL schema of its own (`--db postgres://...`); the tests of the files the CLI
//! opens or refuses stay on SQLite.

#[macro_use]
mod common;

use common::cli::*;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::Engine;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

impl Fixture {
    /// A SQLite ledger with a live root `conductor`, its live child `worker`, its ended child
    /// `retired`, and an ended root `gone`.
    fn populated() -> TestResult<Fixture> {
        Ok(Fixture::populated_on(Engine::Sqlite)?.expect("SQLite is always there"))
    }

    /// [`Fixture::populated`] on `engine`; `None` when the engine is not available here.
    fn populated_on(engine: Engine) -> TestResult<Option<Fixture>> {
        let Some(fx) = Fixture::init_on(engine)? else {
            return Ok(None);
        };
        fx.all_ok(&[
            &["create", "conductor", "--actor", "alice"],
            &["create", "worker", "--by", "conductor", "--actor", "alice"],
            &["create", "retired", "--by", "conductor", "--actor", "alice"],
            &["end", "retired", "--actor", "alice"],
            &["create", "gone", "--actor", "alice"],
            &["end", "gone", "--actor", "alice"],
        ])?;
        Ok(Some(fx))
    }

    /// Runs each of `commands`, which must succeed.
    fn all_ok(&self, commands: &[&[&str]]) -> TestResult {
        for args in commands {
            ok(self, args)?;
        }
        Ok(())
    }
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
fn init_creates_the_ledger_and_says_where_and_at_which_schema_version_in_text_and_json(
) -> TestResult {
    let fx = Fixture::empty()?;
    let version = session_ledger::schema_version();
    let out = ok(&fx.db, &["init"])?;
    assert_eq!(
        out,
        format!(
            "ledger ready at {} (schema version {version})\n",
            fx.db.display()
        )
    );
    let conn = Connection::open_with_flags(&fx.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    assert_ne!(
        app_id, 0,
        "init wrote a file that is not marked as a ledger"
    );
    assert_eq!(
        ok_json(&fx.db, &["init"])?,
        json!({ "path": fx.db, "schema_version": version })
    );
    Ok(())
}

fn init_on_an_existing_ledger_keeps_its_sessions_and_audit_trail(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::populated_on(engine)? else {
        return Ok(());
    };
    let before = dump(&fx)?;
    ok(&fx, &["init"])?;
    assert_eq!(before, dump(&fx)?);
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
        &["audit", "head"],
        &["verify"],
        &["explain", "conductor"],
        &["trust", "conductor", "--full"],
        &["revoke", "conductor", "--preview"],
        &["revoke-all"],
        &["decide", "conductor", "--", "ls"],
        &["pattern", "list", "conductor"],
        &["scope", "list", "conductor"],
        &["epoch", "show"],
        &["epoch", "start"],
    ];
    for args in commands {
        let r = run(&fx.db, args);
        assert_clean_failure(&r, &format!("`{}` on a missing ledger", args.join(" ")));
        assert_mentions(&r, "no ledger");
        assert_eq!(
            dir_listing(fx.dir())?,
            Vec::<String>::new(),
            "`{}` left files behind",
            args.join(" ")
        );
    }
    Ok(())
}

#[test]
fn init_in_a_folder_that_does_not_exist_names_the_folder_and_says_to_create_it() -> TestResult {
    let fx = Fixture::empty()?;
    let folder = fx.dir().join("ledgers").join("team a");
    let db = folder.join("ledger.db");
    // In the folder above: `run` would start the binary in the ledger's folder, which is missing.
    let r = run_raw(
        fx.dir(),
        &["--db".as_ref(), db.as_os_str(), "init".as_ref()],
    );
    assert_clean_failure(&r, "init in a missing folder");
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    assert_mentions(&r, &format!("{} does not exist", folder.display()));
    assert_mentions(&r, "create the folder");
    assert_mentions(&r, &format!("mkdir -p '{}'", folder.display()));
    assert!(
        !r.stderr.contains("unable to open database file"),
        "{}",
        r.stderr
    );
    assert_eq!(
        dir_listing(fx.dir())?,
        Vec::<String>::new(),
        "init left files"
    );

    let json = run_raw(
        fx.dir(),
        &[
            "--json".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
            "init".as_ref(),
        ],
    );
    assert_eq!(
        json_error(&json, "init --json in a missing folder")?["kind"],
        "no_folder"
    );
    Ok(())
}

#[test]
fn init_under_a_file_says_the_folder_is_a_file_and_not_a_folder() -> TestResult {
    let fx = Fixture::empty()?;
    let file = fx.dir().join("notes.txt");
    fs::write(&file, "not a folder\n")?;
    let db = file.join("ledger.db");
    let r = run_raw(
        fx.dir(),
        &["--db".as_ref(), db.as_os_str(), "init".as_ref()],
    );
    assert_clean_failure(&r, "init under a file");
    assert_mentions(&r, &format!("{} is not a folder", file.display()));
    assert_eq!(fs::read_to_string(&file)?, "not a folder\n");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// create, state, raise, end
// ------------------------------------------------------------------------------------------------

fn create_prints_the_session_and_what_it_was_born_with_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    let created = |args: &[&str]| ok(&fx, args);
    assert_eq!(
        created(&["create", "conductor"])?,
        "created conductor (root)\n"
    );
    fx.all_ok(&[
        &["trust", "conductor", "--full"],
        &["create", "reader"],
        &["trust", "reader", "--reads"],
        &["create", "plain"],
    ])?;
    for (creator, child, born) in [
        ("conductor", "worker", "trust"),
        ("reader", "reader-child", "trust_reads"),
        ("plain", "plain-child", "no posture"),
    ] {
        assert_eq!(
            created(&["create", child, "--by", creator])?,
            format!("created {child} (by {creator}, depth 1; born with {born})\n")
        );
    }

    let root = ok_json(&fx, &["create", "second"])?;
    assert_eq!(
        keys(&root),
        BTreeSet::from([
            "id",
            "created_by",
            "depth",
            "origin",
            "created_at",
            "ended_at",
            "inherited_trust",
            "inherited_trust_reads"
        ]),
        "{root}"
    );
    assert_eq!(
        (&root["id"], &root["created_by"], &root["depth"]),
        (&json!("second"), &Value::Null, &json!(0)),
        "{root}"
    );
    assert_eq!(root["origin"], "root", "{root}");
    assert!(root["created_at"].is_string(), "{root}");
    for (creator, trust, trust_reads) in [("conductor", true, false), ("reader", false, true)] {
        let id = format!("json-child-of-{creator}");
        let child = ok_json(&fx, &["create", &id, "--by", creator])?;
        assert_eq!(child["created_by"], creator, "{child}");
        assert_eq!(child["depth"], 1, "{child}");
        assert_eq!(child["origin"], "created", "{child}");
        assert_eq!(child["ended_at"], Value::Null, "{child}");
        assert_eq!(child["inherited_trust"], trust, "{child}");
        assert_eq!(child["inherited_trust_reads"], trust_reads, "{child}");
    }
    Ok(())
}

fn state_prints_the_label_and_the_posture_with_its_chain_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.all_ok(&[
        &["create", "conductor", "--actor", "alice"],
        &["trust", "conductor", "--full", "--actor", "alice"],
        &["create", "worker", "--by", "conductor"],
        &["create", "grandchild", "--by", "worker"],
        &["create", "reader"],
        &["trust", "reader", "--reads", "--actor", "bob"],
    ])?;
    let text = |id: &str| ok(&fx, &["state", id]);
    assert_eq!(
        text("conductor")?,
        "conductor: private (root, born with the default); posture: trust granted by alice\n"
    );
    assert_eq!(
        text("grandchild")?,
        "grandchild: private (inherited from conductor); posture: trust inherited via \
         conductor > worker > grandchild from alice's grant on conductor\n"
    );
    assert_eq!(
        text("stranger")?,
        "stranger: private (unknown id: the default, nothing recorded)\n"
    );
    ok(&fx, &["raise", "reader", "--taint", "secret"])?;
    assert_eq!(
        text("reader")?,
        "reader: secret (root, born with the default), raised since; \
         posture: trust_reads granted by bob\n"
    );

    let state = ok_json(&fx, &["state", "grandchild"])?;
    assert_eq!(
        keys(&state),
        BTreeSet::from([
            "session",
            "taint",
            "untrusted",
            "known",
            "materialized",
            "materialized_at",
            "raised_at",
            "trust",
            "trust_reads",
            "posture"
        ]),
        "{state}"
    );
    assert_eq!(
        (&state["session"], &state["taint"], &state["untrusted"]),
        (&json!("grandchild"), &json!("private"), &json!(false))
    );
    assert_eq!(
        (&state["known"], &state["trust"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(state["trust_reads"], false);
    assert_eq!(
        state["materialized"],
        json!({ "how": "inherited", "from": "conductor" })
    );
    let p = &state["posture"];
    assert_eq!(
        keys(p),
        BTreeSet::from([
            "session",
            "level",
            "source",
            "granted_by",
            "granted_at",
            "granted_on",
            "inherited_from",
            "allocated_at",
            "chain",
            "epoch",
            "current"
        ]),
        "{state}"
    );
    assert_eq!(
        (&p["level"], &p["source"]),
        (&json!("trust"), &json!("inherited"))
    );
    assert_eq!(
        (&p["granted_by"], &p["granted_on"]),
        (&json!("alice"), &json!("conductor"))
    );
    assert_eq!(p["inherited_from"], "worker");
    assert_eq!(p["chain"], json!(["conductor", "worker", "grandchild"]));
    assert_eq!((&p["epoch"], &p["current"]), (&json!(0), &json!(true)));

    let reader = ok_json(&fx, &["state", "reader"])?;
    assert_eq!(reader["materialized"], json!({ "how": "born" }));
    assert!(reader["raised_at"].is_string(), "{reader}");
    assert_eq!(
        (&reader["trust"], &reader["trust_reads"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(reader["posture"]["level"], "trust_reads");
    assert_eq!(reader["posture"]["source"], "granted");
    assert_eq!(reader["posture"]["chain"], json!(["reader"]));
    let stranger = ok_json(&fx, &["state", "stranger"])?;
    assert_eq!(
        (
            &stranger["known"],
            &stranger["posture"],
            &stranger["materialized"]
        ),
        (&json!(false), &Value::Null, &Value::Null)
    );
    Ok(())
}

fn raise_prints_before_and_after_or_that_nothing_changed_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::populated_on(engine)? else {
        return Ok(());
    };
    let raised = ok(
        &fx,
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
    assert_eq!(raised, "conductor: private -> secret, untrusted\n");
    let rows = audit_lines(&fx, &["--kind", "label.raise"])?;
    assert_eq!(rows[0]["actor"], "carol", "{rows:?}");
    assert_eq!(
        ok(&fx, &["raise", "conductor", "--taint", "public"])?,
        "conductor: stays secret, untrusted; nothing changed: labels only rise, and public is \
         below secret\n"
    );
    ok(&fx, &["create", "fresh"])?;
    assert_eq!(
        ok_json(&fx, &["raise", "fresh", "--taint", "secret"])?,
        json!({
            "session": "fresh",
            "requested": { "taint": "secret", "untrusted": false },
            "before": { "taint": "private", "untrusted": false },
            "after": { "taint": "secret", "untrusted": false },
            "changed": true,
        })
    );
    let again = ok_json(&fx, &["raise", "fresh", "--taint", "secret"])?;
    assert_eq!(again["changed"], false, "{again}");
    Ok(())
}

fn end_prints_the_ended_session_in_text_and_json(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::populated_on(engine)? else {
        return Ok(());
    };
    assert_eq!(
        ok(&fx, &["end", "worker", "--actor", "dave"])?,
        "ended worker (by conductor, depth 1)\n"
    );
    let ends = audit_lines(&fx, &["--session", "worker", "--kind", "session.end"])?;
    assert_eq!(ends[0]["actor"], "dave", "{ends:?}");
    let ended = ok_json(&fx, &["end", "conductor"])?;
    assert_eq!(ended["id"], "conductor", "{ended}");
    assert_eq!(ended["created_by"], Value::Null, "{ended}");
    assert!(ended["ended_at"].is_string(), "{ended}");
    Ok(())
}

fn the_actor_is_actor_else_session_ledger_actor_else_a_valid_user_else_operator(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    // (environment, flags, the actor recorded)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], &'a str);
    let cases: &[Case] = &[
        (
            &[("SESSION_LEDGER_ACTOR", "alice"), ("USER", "root")],
            &[],
            "alice",
        ),
        (
            &[("SESSION_LEDGER_ACTOR", "alice")],
            &["--actor", "bob"],
            "bob",
        ),
        (&[("USER", "carol")], &[], "carol"),
        (
            &[("SESSION_LEDGER_ACTOR", ""), ("USER", "dave")],
            &[],
            "dave",
        ),
        (&[("USER", "not a name")], &[], "operator"),
    ];
    for (i, (vars, flags, actor)) in cases.iter().enumerate() {
        let id = format!("session-{i}");
        let mut args = vec!["create", id.as_str()];
        args.extend_from_slice(flags);
        let r = run_env(&fx, vars, &args);
        assert!(r.status.success(), "{vars:?}: {}", r.stderr);
        let rows = audit_lines(&fx, &["--session", &id])?;
        assert_eq!(rows[0]["actor"], *actor, "{vars:?} {flags:?}");
    }
    // $SESSION_LEDGER_ACTOR is set for this tool: an invalid one is a bad argument.
    for actor in ["alice smith", "x/y"] {
        let before = dump(&fx)?;
        let r = run_env(
            &fx,
            &[("SESSION_LEDGER_ACTOR", actor)],
            &["create", "fresh"],
        );
        assert_clean_failure(&r, &format!("SESSION_LEDGER_ACTOR={actor:?}"));
        assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
        assert_mentions(&r, "SESSION_LEDGER_ACTOR");
        assert_eq!(before, dump(&fx)?, "{actor:?} changed the ledger");
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// tree
// ------------------------------------------------------------------------------------------------

/// ```text
/// conductor (trust) ─┬─ w1 ── w1a (ended)
///                    └─ w2 ── sub-w2-1 (spawned)
/// second (secret, untrusted)
/// reader (trust_reads)
/// ```
/// Only `conductor`, `w2`, `sub-w2-1`, `second` and `reader` are materialized.
fn branching_on(engine: Engine) -> TestResult<Option<Fixture>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    fx.all_ok(&[
        &["create", "conductor"],
        &["trust", "conductor", "--full"],
        &["create", "w1", "--by", "conductor"],
        &["create", "w2", "--by", "conductor"],
        &["create", "w1a", "--by", "w1"],
        &["end", "w1a"],
        &["state", "sub-w2-1"],
        &["create", "second"],
        &["raise", "second", "--taint", "secret", "--untrusted"],
        &["create", "reader"],
        &["trust", "reader", "--reads"],
    ])?;
    Ok(Some(fx))
}

fn tree_draws_every_root_or_one_subtree_with_each_sessions_label_posture_and_state(
    engine: Engine,
) -> TestResult {
    let Some(empty) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(ok(&empty, &["tree"])?, "(no sessions)\n");
    let Some(fx) = branching_on(engine)? else {
        return Ok(());
    };
    assert_eq!(
        ok(&fx, &["tree"])?,
        "conductor  [private; trust]\n\
         ├── w1  [not materialized; trust]\n\
         │   └── w1a  [not materialized]  ended\n\
         └── w2  [private; trust]\n    \
             └── sub-w2-1  [private; trust]  spawned\n\
         second  [secret, untrusted]\n\
         reader  [private; trust_reads]\n"
    );
    assert_eq!(
        ok(&fx, &["tree", "w1"])?,
        "w1  [not materialized; trust]\n└── w1a  [not materialized]  ended\n"
    );
    Ok(())
}

fn tree_json_is_an_array_of_every_session_with_its_depth_and_of_none_an_empty_one(
    engine: Engine,
) -> TestResult {
    let Some(empty) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(ok_json(&empty, &["tree"])?, json!([]));
    let Some(fx) = branching_on(engine)? else {
        return Ok(());
    };
    let v = ok_json(&fx, &["tree"])?;
    let rows = v.as_array().ok_or("tree --json is not an array")?;
    let ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "conductor",
            "w1",
            "w1a",
            "w2",
            "sub-w2-1",
            "second",
            "reader"
        ]
    );
    let depths: Vec<i64> = rows
        .iter()
        .filter_map(|r| r["relative_depth"].as_i64())
        .collect();
    assert_eq!(depths, [0, 1, 2, 1, 2, 0, 0]);
    assert_eq!(rows[2]["created_by"], "w1");
    let sub = ok_json(&fx, &["tree", "w1"])?;
    assert_eq!(sub.as_array().map(Vec::len), Some(2), "{sub}");
    Ok(())
}

fn tree_watch_draws_the_tree_again_each_time_the_ledger_changes_and_only_then(
    engine: Engine,
) -> TestResult {
    let Some(fx) = branching_on(engine)? else {
        return Ok(());
    };
    let lines_of = |out: String| out.lines().map(str::to_owned).collect::<Vec<_>>();
    let watch = Lines::start(&fx, &["tree", "--watch", "--interval", "50"])?;
    // Not a terminal: each drawing starts with a separator line, then the tree as `tree` draws it.
    let first = watch.next()?;
    assert!(first.starts_with("--- "), "no separator first: {first:?}");
    let drawn = lines_of(ok(&fx, &["tree"])?);
    assert_eq!(watch.take(drawn.len())?, drawn);
    // Nothing changed, nothing is drawn, however many times the head is looked at.
    assert!(
        watch.quiet_for(std::time::Duration::from_millis(400)),
        "drew again with no change"
    );
    // Another process changes the ledger: the tree is drawn again, with the new child.
    ok(&fx, &["create", "w3", "--by", "conductor"])?;
    let separator = watch.next()?;
    assert!(separator.starts_with("--- "), "no separator: {separator:?}");
    assert_ne!(separator, first, "the separator names the head it drew");
    let drawn = lines_of(ok(&fx, &["tree"])?);
    assert!(drawn.iter().any(|l| l.contains("w3")), "{drawn:?}");
    assert_eq!(watch.take(drawn.len())?, drawn);
    drop(watch);

    // --json: one array a line, a drawing each, as `--json tree` prints it.
    let watch = Lines::start(&fx, &["--json", "tree", "--watch", "--interval", "50"])?;
    let first: Value = serde_json::from_str(&watch.next()?)?;
    assert_eq!(first, ok_json(&fx, &["tree"])?);
    ok(&fx, &["end", "w3"])?;
    let second: Value = serde_json::from_str(&watch.next()?)?;
    assert_eq!(second, ok_json(&fx, &["tree"])?);
    assert_ne!(first, second);
    Ok(())
}

#[test]
fn tree_watch_refuses_json_lines_and_interval_needs_watch() -> TestResult {
    let fx = Fixture::init()?;
    for args in [
        &["--json-lines", "tree", "--watch"][..],
        &["tree", "--interval", "50"],
        &["tree", "--watch", "--interval", "0"],
    ] {
        let r = refused_unchanged(&fx.db, args)?;
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.stderr);
    }
    let r = run(&fx.db, &["--json-lines", "tree", "--watch"]);
    assert_mentions(&r, "--json");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// errors: exit codes, and where and how they are printed
// ------------------------------------------------------------------------------------------------

#[test]
fn argument_errors_exit_2_with_one_line_naming_the_problem_and_change_nothing() -> TestResult {
    let fx = Fixture::populated()?;
    ok(&fx.db, &["trust", "conductor", "--full"])?;
    let token = "0".repeat(64);
    let head = format!("1:{}", "a".repeat(64));
    let cases: &[(&[&str], &str)] = &[
        (&["frobnicate"], "'frobnicate'"),
        (&["create"], "<ID>"),
        (&["state"], "<ID>"),
        (&["create", "a", "b"], "'b'"),
        (&["create", "fresh", "--by"], "--by <CREATOR>"),
        (&["raise", "conductor", "--taint"], "--taint <CLASS>"),
        (&["raise", "conductor", "--colour", "red"], "'--colour'"),
        (&["tree", "a", "b"], "'b'"),
        (&["audit", "--limit", "-1"], "'-1'"),
        (&["audit", "--limit", "abc"], "'abc'"),
        (&["audit", "--before=0"], "--before"),
        (&["audit", "--before=-3"], "--before"),
        (&["audit", "--before=x"], "--before"),
        (&["trust", "conductor"], "<--full|--reads>"),
        (&["trust", "conductor", "--full", "--reads"], "--reads"),
        (&["revoke", "conductor"], "<--cascade|--local|--preview>"),
        (&["revoke", "conductor", "--token", &token], "--cascade"),
        (&["revoke", "conductor", "--cascade", "--local"], "--local"),
        (
            &["revoke", "conductor", "--local", "--preview"],
            "--preview",
        ),
        (
            &["revoke", "conductor", "--cascade", "--preview"],
            "--preview",
        ),
        // Combinations the CLI refuses itself are bad arguments too, exit 2.
        (
            &["revoke", "conductor", "--local", "--token", &token],
            "--cascade",
        ),
        (
            &["revoke", "conductor", "--preview", "--token", &token],
            "--cascade",
        ),
        (&["scope", "grant", "conductor", "ops"], "--ttl"),
        (&["decide", "conductor"], "<COMMAND>"),
        (&["verify", "--from", &head, "--head", &head], "--head"),
    ];
    for (args, mention) in cases {
        let r = refused_unchanged(&fx.db, args)?;
        assert_eq!(
            r.status.code(),
            Some(2),
            "`{}`: {}",
            args.join(" "),
            r.stderr
        );
        assert_mentions(&r, mention);
    }
    Ok(())
}

#[test]
fn an_error_under_json_is_one_json_object_with_a_kind_and_the_same_message_as_the_text(
) -> TestResult {
    let fx = Fixture::populated()?;
    ok(&fx.db, &["trust", "conductor", "--full"])?;
    let preview = ok_json(&fx.db, &["revoke", "conductor", "--preview"])?;
    let stale = preview["token"].as_str().ok_or("no token")?.to_owned();
    ok(&fx.db, &["create", "late", "--by", "conductor"])?;
    // (arguments after --json, kind, exit code as documented in README.md)
    let cases: &[(&[&str], &str, i32)] = &[
        (&["state", "a b"], "invalid_id", 1),
        (&["create", ""], "invalid_id", 1),
        (&["create", "fresh", "--by", "nobody"], "unknown_session", 1),
        (&["tree", "nobody"], "unknown_session", 1),
        (&["trust", "nobody", "--full"], "unknown_session", 1),
        (&["create", "fresh", "--by", "retired"], "session_ended", 1),
        (&["end", "retired"], "session_ended", 1),
        (&["create", "conductor"], "session_exists", 1),
        (
            &["raise", "conductor", "--taint", "top"],
            "invalid_taint",
            1,
        ),
        (&["raise", "conductor"], "nothing_to_raise", 1),
        (
            &["create", "fresh", "--actor", "two words"],
            "invalid_actor",
            1,
        ),
        (&["audit", "--since", "yesterday"], "invalid_time", 1),
        (
            &["revoke", "conductor", "--cascade", "--token", "abc"],
            "invalid_token",
            1,
        ),
        (
            &["revoke", "conductor", "--cascade", "--token", &stale],
            "stale_preview",
            1,
        ),
        (
            &["scope", "grant", "conductor", "ops", "--ttl", "soon"],
            "invalid_ttl",
            1,
        ),
        // Written as two arguments, a negative TTL is still read as the TTL.
        (
            &["scope", "grant", "conductor", "ops", "--ttl", "-5m"],
            "invalid_ttl",
            1,
        ),
        (&["pattern", "add", "conductor", ""], "invalid_pattern", 1),
        (&["decide", "conductor", "--", ""], "empty_command", 1),
        (&["frobnicate"], "usage", 2),
        (&["audit", "--limit", "many"], "usage", 2),
        (&["revoke", "conductor"], "usage", 2),
        (
            &["revoke", "conductor", "--local", "--token", "t"],
            "usage",
            2,
        ),
        (&["decide", "conductor"], "usage", 2),
    ];
    for (args, kind, code) in cases {
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let what = format!("`{}`", with_json.join(" "));
        let r = refused_unchanged(&fx.db, &with_json)?;
        assert_eq!(r.status.code(), Some(*code), "{what}: {}", r.stderr);
        let e = json_error(&r, &what)?;
        assert_eq!(e["kind"], *kind, "{what}: {e}");
        // The message is the text the command prints without --json.
        let text = run(&fx.db, args);
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
    let missing = Fixture::empty()?;
    let r = run(&missing.db, &["--json", "state", "x"]);
    assert_clean_failure(&r, "--json state on a missing ledger");
    assert_eq!(json_error(&r, "a missing ledger")?["kind"], "no_ledger");
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
fn a_newline_in_a_value_still_gives_a_one_line_error() -> TestResult {
    let fx = Fixture::populated()?;
    // Ids with control characters on the command line: tests/hostile.rs.
    refused_unchanged(&fx.db, &["create", "fresh", "--by", "con\nductor"])?;
    refused_unchanged(&fx.db, &["create", "fresh", "--actor", "al\nice"])?;
    refused_unchanged(&fx.db, &["raise", "conductor", "--taint", "sec\nret"])?;
    refused_unchanged(&fx.db, &["--json", "audit", "--since", "to\nday"])?;
    Ok(())
}

#[test]
fn a_long_value_in_an_error_is_cut_on_its_one_line_with_its_full_length() -> TestResult {
    // Which errors cut which values: tests/rules_from_cli.rs. Here, that the line stays short.
    let fx = Fixture::populated()?;
    let id = "a".repeat(10_000);
    let time = "9".repeat(5_000);
    for (args, full) in [
        (["state", id.as_str()], "(10000 characters)"),
        (["audit", &format!("--since={time}")], "(5000 characters)"),
    ] {
        let r = refused_unchanged(&fx.db, &args)?;
        assert!(r.stderr.len() < 300, "{} bytes", r.stderr.len());
        assert!(r.stderr.contains(&format!("…\" {full}")), "{:?}", r.stderr);
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// files that are not ledgers, or newer ones, and a --db that looks like a URI
// ------------------------------------------------------------------------------------------------

#[test]
fn every_command_refuses_a_file_that_is_not_a_ledger_of_this_version_and_leaves_it_as_it_was(
) -> TestResult {
    let garbage = Fixture::empty()?;
    let noise: Vec<u8> = (0u32..8192)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&garbage.db, &noise)?;
    let notes = Fixture::empty()?;
    fs::write(&notes.db, "these are my notes, not a ledger\n")?;
    let invoices = Fixture::empty()?;
    Connection::open(&invoices.db)?.execute_batch(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL);
         INSERT INTO invoices (amount) VALUES (10), (20);",
    )?;
    let newer = Fixture::populated()?;
    let from_the_future =
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
                           VALUES (999, 'from_the_future', '2099-01-01T00:00:00Z', '0')";
    Connection::open(&newer.db)?.execute(from_the_future, [])?;
    let commands: &[&[&str]] = &[
        &["init"],
        &["create", "conductor"],
        &["create", "worker", "--by", "conductor"],
        &["state", "conductor"],
        &["raise", "conductor", "--taint", "secret"],
        &["end", "conductor"],
        &["tree"],
        &["--json", "audit"],
        &["verify"],
    ];
    for (fx, mention) in [
        (&garbage, "not a session-ledger database"),
        (&notes, "not a session-ledger database"),
        (&invoices, "not a session-ledger database"),
        (&newer, "newer"),
    ] {
        let original = fs::read(&fx.db)?;
        let listing = dir_listing(fx.dir())?;
        for args in commands {
            let r = run(&fx.db, args);
            let what = format!(
                "`{}` on a file that must be refused ({mention})",
                args.join(" ")
            );
            assert_clean_failure(&r, &what);
            assert_mentions(&r, mention);
            assert!(fs::read(&fx.db)? == original, "{what} changed the file");
            assert_eq!(
                dir_listing(fx.dir())?,
                listing,
                "{what} left files beside it"
            );
        }
    }
    let conn = Connection::open_with_flags(&newer.db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
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

/// The number in "... would change N sessions" or "revoked N postures (cascade ...".
fn number_after(text: &str, before: &str) -> Option<u64> {
    let at = text.find(before)? + before.len();
    text[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
}

#[test]
fn demo_writes_an_example_ledger_and_walks_from_a_worker_born_trusted_to_a_previewed_cascade(
) -> TestResult {
    let fx = Fixture::empty()?;
    let path = fx.dir().join("demo.db");
    let p = path.to_str().ok_or("non-UTF-8 temp path")?;
    // --db is given explicitly (and ignored by demo) so nothing can fall back to a default file.
    let out = ok(&fx.db, &["demo", "--path", p])?;
    assert!(path.is_file(), "demo did not write {p}");
    assert!(!fx.db.exists(), "demo touched --db");
    assert!(
        out.contains("├── ") && out.contains("└── "),
        "no tree:\n{out}"
    );
    assert!(
        out.contains("born with trust"),
        "no worker born with trust:\n{out}"
    );
    let previewed = number_after(&out, "would change ")
        .ok_or_else(|| format!("the demo shows no preview count:\n{out}"))?;
    assert!(previewed >= 2, "{out}");
    assert!(
        out.contains("token: "),
        "the preview shows no token:\n{out}"
    );
    let cascaded = number_after(&out, "revoked ")
        .ok_or_else(|| format!("the demo shows no revocation:\n{out}"))?;
    assert_eq!(
        previewed, cascaded,
        "the cascade is not what was previewed:\n{out}"
    );
    let preview_at = out.find("would change").ok_or("no preview")?;
    let cascade_at = out
        .find("(cascade from conductor)")
        .ok_or_else(|| format!("no cascade from the conductor:\n{out}"))?;
    assert!(
        preview_at < cascade_at,
        "the cascade comes before its preview:\n{out}"
    );

    // The demo ledger is a real ledger: the CLI reads it, and it agrees with what was shown.
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
    let revokes = audit_lines(&path, &["--kind", "posture.revoke"])?;
    let cascade_rows = revokes
        .iter()
        .filter(|r| r["detail"]["propagation"] == "cascade")
        .count();
    assert_eq!(u64::try_from(cascade_rows)?, cascaded);
    Ok(())
}

#[test]
fn demo_refuses_a_path_that_exists_ledger_or_not_and_leaves_it_unchanged() -> TestResult {
    let fx = Fixture::empty()?;
    let ledger = fx.dir().join("demo.db");
    let p = ledger.to_str().ok_or("non-UTF-8 temp path")?;
    ok(&fx.db, &["demo", "--path", p])?;
    let notes = fx.dir().join("notes.txt");
    fs::write(&notes, "keep me\n")?;
    for path in [&ledger, &notes] {
        let before = fs::read(path)?;
        let listing = dir_listing(fx.dir())?;
        let r = run(
            &fx.db,
            &["demo", "--path", path.to_str().ok_or("non-UTF-8")?],
        );
        assert_clean_failure(&r, &format!("a demo onto {}", path.display()));
        assert_mentions(&r, "exists");
        assert!(
            fs::read(path)? == before,
            "the demo changed {}",
            path.display()
        );
        assert_eq!(dir_listing(fx.dir())?, listing);
    }
    Ok(())
}

/// One `$ session-ledger ...` step of the demo: the command line as shown, and the lines the
/// demo printed under it.
struct DemoStep {
    line: String,
    output: Vec<String>,
}

/// The demo's steps. Every other line must be the header (before the first step), a section
/// title, a blank line between sections, or the closing `look inside:` line: text printed
/// outside a step is text no command printed.
fn demo_steps(out: &str) -> TestResult<Vec<DemoStep>> {
    let mut steps: Vec<DemoStep> = Vec::new();
    let mut in_step = false;
    for line in out.lines() {
        if let Some(command) = line.strip_prefix("$ session-ledger ") {
            steps.push(DemoStep {
                line: command.to_owned(),
                output: Vec::new(),
            });
            in_step = true;
        } else if line.is_empty() || line.starts_with("## ") {
            in_step = false;
        } else if let (true, Some(step)) = (in_step, steps.last_mut()) {
            step.output.push(line.to_owned());
        } else {
            let header = steps.is_empty() && line.starts_with("# ");
            if !header && !line.starts_with("look inside: ") {
                return Err(format!("the demo printed {line:?} outside any step").into());
            }
        }
    }
    Ok(steps)
}

/// A command line's words as a POSIX shell splits them, for the plain words, single quotes and
/// backslashes the demo shows; a word starting with `#` starts a comment.
fn shell_split(line: &str) -> TestResult<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars();
    let mut word: Option<String> = None;
    while let Some(c) = chars.next() {
        match c {
            ' ' => words.extend(word.take()),
            '#' if word.is_none() => break,
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("an unclosed quote in {line:?}").into()),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// `line` with each timestamp (`2026-11-30T12:00:00.000Z`) and each 64-digit hex digest (a
/// row's hash, a preview token) masked, and the digests it held, in order: two runs of the same
/// commands differ in these and nothing else.
fn masked(line: &str) -> (String, Vec<&str>) {
    const TIME: &[u8] = b"dddd-dd-ddTdd:dd:dd.dddZ";
    let is_time = |b: &[u8]| {
        b.len() >= TIME.len()
            && TIME.iter().zip(b).all(|(&t, &c)| {
                if t == b'd' {
                    c.is_ascii_digit()
                } else {
                    t == c
                }
            })
    };
    let is_hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    let b = line.as_bytes();
    let (mut text, mut digests) = (String::new(), Vec::new());
    let (mut i, mut plain) = (0, 0);
    while i < b.len() {
        if is_time(&b[i..]) {
            text.push_str(&line[plain..i]);
            text.push_str("<time>");
            i += TIME.len();
            plain = i;
            continue;
        }
        let run = b[i..].iter().take_while(|c| is_hex(c)).count();
        if run == 64 {
            text.push_str(&line[plain..i]);
            text.push_str("<digest>");
            digests.push(&line[i..i + 64]);
            plain = i + 64;
        }
        i += run.max(1);
    }
    text.push_str(&line[plain..]);
    (text, digests)
}

#[test]
fn every_line_the_demo_prints_under_a_step_is_what_that_command_prints_after_the_steps_before_it(
) -> TestResult {
    let fx = Fixture::empty()?;
    let path = fx.dir().join("demo.db");
    let p = path.to_str().ok_or("non-UTF-8 temp path")?;
    let out = ok(&fx.db, &["demo", "--path", p])?;
    // The demo says how its steps run; the replay runs them so, on a ledger of its own.
    let actor = ("SESSION_LEDGER_ACTOR", "operator");
    let how = format!(
        "# each step runs as: {}={} session-ledger --db {p} ...",
        actor.0, actor.1
    );
    assert!(out.lines().any(|l| l == how), "no {how:?} in:\n{out}");
    let steps = demo_steps(&out)?;
    assert_eq!(
        steps.first().map(|s| s.line.as_str()),
        Some("init"),
        "the demo does not start with its ledger's init:\n{out}"
    );

    let replay = Fixture::empty()?;
    let replay_path = replay.db.to_str().ok_or("non-UTF-8 temp path")?;
    // A digest the demo printed, and the one the replay printed in its place.
    let mut digests: std::collections::HashMap<String, String> = Default::default();
    for step in &steps {
        let words: Vec<String> = shell_split(&step.line)?
            .into_iter()
            .map(|w| digests.get(&w).cloned().unwrap_or(w))
            .collect();
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let r = run_env(&replay.db, &[actor], &args);
        let printed: Vec<&str> = r.stdout.lines().chain(r.stderr.lines()).collect();
        let shown: Vec<String> = step
            .output
            .iter()
            .map(|l| l.replace(p, replay_path))
            .collect();
        let what = format!("`session-ledger {}` ({})", step.line, r.status);
        assert_eq!(
            shown.len(),
            printed.len(),
            "{what}: the demo shows {shown:#?}\nthe command prints {printed:#?}"
        );
        for (shown, printed) in shown.iter().zip(&printed) {
            let (shown_text, shown_digests) = masked(shown);
            let (printed_text, printed_digests) = masked(printed);
            assert_eq!(shown_text, printed_text, "{what}");
            for (d, r) in shown_digests.into_iter().zip(printed_digests) {
                digests.insert(d.to_owned(), r.to_owned());
            }
        }
    }
    // Every change writes an audit row, and the `audit` step's rows matched one by one: the
    // demo changed nothing it did not show.
    assert!(
        steps.iter().any(|s| s.line == "audit"),
        "the demo shows no audit trail:\n{out}"
    );
    // A refused step shows the one line the command prints on stderr.
    let refusals = steps
        .iter()
        .filter(|s| {
            s.output
                .iter()
                .any(|l| l.starts_with("session-ledger: error: "))
        })
        .count();
    assert_eq!(refusals, 1, "the demo shows one refusal:\n{out}");
    Ok(())
}

engine_tests! {
    init_on_an_existing_ledger_keeps_its_sessions_and_audit_trail,
    create_prints_the_session_and_what_it_was_born_with_in_text_and_json,
    state_prints_the_label_and_the_posture_with_its_chain_in_text_and_json,
    raise_prints_before_and_after_or_that_nothing_changed_in_text_and_json,
    end_prints_the_ended_session_in_text_and_json,
    the_actor_is_actor_else_session_ledger_actor_else_a_valid_user_else_operator,
    tree_draws_every_root_or_one_subtree_with_each_sessions_label_posture_and_state,
    tree_json_is_an_array_of_every_session_with_its_depth_and_of_none_an_empty_one,
    tree_watch_draws_the_tree_again_each_time_the_ledger_changes_and_only_then,
}
