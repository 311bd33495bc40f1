//! What the command line adds to the library's authority half: the text and `--json`
//! output of `trust`, `revoke` and its three propagations, `revoke-all`, `pattern`, `scope`,
//! `decide` and `epoch`, `decide`'s exit code, that no command but `epoch start` starts an
//! epoch, and two flows end to end: a trusted conductor's worker born trusted until a previewed
//! cascade, and creates racing a cascade from other processes. The rules themselves (P1-P5,
//! R1-R4, A2) are tested against the library in tests/authority.rs and tests/rules_from_cli.rs;
//! refusals and their exit codes, for every command, in tests/cli.rs.
//!
//! Every test runs the real binary on a ledger in a temporary directory, always with an explicit
//! `--db` and with `SESSION_LEDGER_DB` and `SESSION_LEDGER_ACTOR` removed from the environment;
//! and once more, as `postgres::NAME`, on a ledger in a PostgreSQL schema of its own
//! (`--db postgres://...`).

#[macro_use]
mod common;

use common::cli::*;
use std::collections::BTreeSet;
use std::thread;
use std::time::Duration;

use common::Engine;
use serde_json::{json, Value};

// ------------------------------------------------------------------------------------------------
// helpers of this file (the shared ones are in tests/common/cli.rs)
// ------------------------------------------------------------------------------------------------

impl Fixture {
    fn ok(&self, args: &[&str]) -> TestResult<String> {
        ok(self, args)
    }

    fn json(&self, args: &[&str]) -> TestResult<Value> {
        ok_json(self, args)
    }

    /// The sessions holding a posture row, with the level, ordered by id.
    fn posture_rows(&self) -> TestResult<Vec<String>> {
        Ok(self
            .store()
            .column("SELECT session_id || ':' || posture FROM postures ORDER BY session_id"))
    }

    fn epoch_rows(&self) -> TestResult<i64> {
        Ok(self.store().count("epochs"))
    }
}

/// The ids of a revocation's `sessions` (or another list of affected sessions).
fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A trusted tree, with an unrelated trusted root beside it:
///
/// ```text
/// conductor   (trust, granted by alice)
/// ├── worker          (inherited)
/// │   ├── grandchild  (inherited)
/// │   └── sub-worker-1  spawned (inherited at its first read)
/// └── helper          (inherited)
/// bystander   (trust, granted by bob)
/// ```
fn trusted_tree_on(engine: Engine) -> TestResult<Option<Fixture>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    for args in [
        &["create", "conductor", "--actor", "alice"][..],
        &["trust", "conductor", "--full", "--actor", "alice"],
        &["create", "worker", "--by", "conductor", "--actor", "alice"],
        &["create", "grandchild", "--by", "worker", "--actor", "alice"],
        &["create", "helper", "--by", "conductor", "--actor", "alice"],
        &["state", "sub-worker-1"],
        &["create", "bystander", "--actor", "bob"],
        &["trust", "bystander", "--full", "--actor", "bob"],
    ] {
        fx.ok(args)?;
    }
    Ok(Some(fx))
}

// ------------------------------------------------------------------------------------------------
// trust and revoke
// ------------------------------------------------------------------------------------------------

fn trust_prints_the_granted_posture_in_text_and_json(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "conductor"])?;
    assert_eq!(
        fx.ok(&["trust", "conductor", "--full", "--actor", "alice"])?,
        "conductor: trust granted by alice (epoch 0)\n"
    );
    let posture = fx.json(&["trust", "conductor", "--reads", "--actor", "bob"])?;
    assert_eq!(posture["session"], "conductor", "{posture}");
    assert_eq!(posture["level"], "trust_reads", "{posture}");
    assert_eq!(posture["source"], "granted", "{posture}");
    assert_eq!(posture["granted_by"], "bob", "{posture}");
    assert_eq!(posture["chain"], json!(["conductor"]), "{posture}");
    Ok(())
}

fn revoke_preview_prints_who_a_cascade_would_change_and_its_token_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = trusted_tree_on(engine)? else {
        return Ok(());
    };
    let preview: Value = serde_json::from_str(&ok_unchanged(
        &fx,
        &["--json", "revoke", "conductor", "--preview"],
    )?)?;
    assert_eq!(
        keys(&preview),
        BTreeSet::from([
            "root",
            "propagation",
            "count",
            "sessions",
            "token",
            "grants_revoked",
            "still_approving"
        ]),
        "{preview}"
    );
    assert_eq!(
        (&preview["root"], &preview["propagation"], &preview["count"]),
        (&json!("conductor"), &json!("preview"), &json!(5))
    );
    for s in preview["sessions"].as_array().ok_or("no sessions")? {
        assert_eq!(
            keys(s),
            BTreeSet::from(["id", "depth", "posture", "granted_directly", "current"]),
            "{s}"
        );
    }
    let token = text(&preview["token"]);
    assert_eq!(token.len(), 64, "{token:?}");
    assert_eq!(
        ok_unchanged(&fx, &["revoke", "conductor", "--preview"])?,
        format!(
            "a cascade from conductor would change 5 sessions:\n\
             \x20 conductor     depth 0  trust (granted)\n\
             \x20 helper        depth 1  trust (inherited)\n\
             \x20 worker        depth 1  trust (inherited)\n\
             \x20 grandchild    depth 2  trust (inherited)\n\
             \x20 sub-worker-1  depth 2  trust (inherited)\n\
             token: {token}\n\
             apply: session-ledger revoke conductor --cascade --token {token}\n"
        )
    );
    Ok(())
}

fn revoke_local_cascade_and_revoke_all_print_what_they_changed_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = trusted_tree_on(engine)? else {
        return Ok(());
    };
    assert_eq!(
        fx.ok(&["revoke", "worker", "--local"])?,
        "revoked 1 posture (local from worker)\n\
         \x20 worker  depth 1  trust (inherited)\n\
         2 descendants still hold a posture inherited through worker:\n\
         \x20 grandchild    depth 2  trust (inherited)\n\
         \x20 sub-worker-1  depth 2  trust (inherited)\n"
    );
    let local = fx.json(&["revoke", "conductor", "--local"])?;
    assert_eq!(
        keys(&local),
        BTreeSet::from([
            "root",
            "propagation",
            "count",
            "sessions",
            "still_holding",
            "grants_revoked",
            "still_approving"
        ]),
        "{local}"
    );
    assert_eq!(ids(&local["sessions"]), ["conductor"], "{local}");
    assert_eq!(
        ids(&local["still_holding"]),
        ["helper", "grandchild", "sub-worker-1"],
        "{local}"
    );
    assert_eq!(
        fx.ok(&["revoke", "helper", "--cascade"])?,
        "revoked 1 posture (cascade from helper)\n  helper  depth 1  trust (inherited)\n"
    );
    let cascade = fx.json(&["revoke", "grandchild", "--cascade", "--actor", "carol"])?;
    assert_eq!(
        keys(&cascade),
        BTreeSet::from([
            "root",
            "propagation",
            "count",
            "sessions",
            "grants_revoked",
            "still_approving"
        ]),
        "{cascade}"
    );
    assert_eq!(cascade["propagation"], "cascade", "{cascade}");
    assert_eq!(
        fx.ok(&["revoke-all"])?,
        "revoked 2 postures (global)\n\
         \x20 bystander     depth 0  trust (granted)\n\
         \x20 sub-worker-1  depth 2  trust (inherited)\n"
    );
    assert_eq!(
        fx.json(&["revoke-all"])?,
        json!({
            "root": null,
            "propagation": "global",
            "count": 0,
            "sessions": [],
            "grants_revoked": [],
            "still_approving": []
        })
    );
    Ok(())
}

fn a_trusted_conductors_worker_is_born_trusted_until_a_previewed_cascade_applied_with_its_token(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "conductor", "--actor", "alice"])?;
    fx.ok(&["trust", "conductor", "--full", "--actor", "alice"])?;
    let born = fx.ok(&["create", "worker", "--by", "conductor"])?;
    assert!(born.contains("born with trust"), "{born}");
    fx.ok(&["create", "bystander"])?;
    fx.ok(&["trust", "bystander", "--full"])?;
    let decide = |id: &str| fx.ok(&["decide", id, "--", "make", "deploy"]);
    assert_eq!(
        decide("worker")?,
        "approve: trust inherited via conductor > worker from alice's grant on conductor\n"
    );

    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    assert_eq!(
        ids(&preview["sessions"]),
        ["conductor", "worker"],
        "{preview}"
    );
    let token = text(&preview["token"]);
    let applied = fx.json(&[
        "revoke",
        "conductor",
        "--cascade",
        "--token",
        token,
        "--actor",
        "carol",
    ])?;
    assert_eq!(applied["sessions"], preview["sessions"], "{applied}");
    assert_eq!(applied["count"], preview["count"], "{applied}");
    for id in ["conductor", "worker"] {
        assert!(decide(id)?.starts_with("ask: "), "{id} still approves");
    }
    assert!(
        decide("bystander")?.starts_with("approve: "),
        "the cascade left its tree"
    );
    assert_eq!(fx.posture_rows()?, ["bystander:trust"]);
    let revokes = ok_json_array(&fx, &["audit", "--kind", "posture.revoke"])?;
    assert_eq!(revokes.len(), 2, "{revokes:?}");
    for r in &revokes {
        assert_eq!(r["actor"], "carol", "{r}");
        assert_eq!(r["detail"]["propagation"], "cascade", "{r}");
        assert_eq!(r["detail"]["root"], "conductor", "{r}");
    }
    Ok(())
}

fn creates_racing_a_cascade_from_other_processes_leave_no_trusted_session_in_the_subtree(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    thread::scope(|s| -> TestResult {
        let creators: Vec<_> = (0..4)
            .map(|t| {
                let fx = &fx;
                s.spawn(move || {
                    for i in 0..8 {
                        let id = format!("racer-{t}-{i}");
                        let r = run(fx, &["create", &id, "--by", "conductor"]);
                        assert!(r.status.success(), "{id}: {}", r.stderr);
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(50));
        let r = run(&fx, &["revoke", "conductor", "--cascade"]);
        assert!(r.status.success(), "the cascade failed: {}", r.stderr);
        for c in creators {
            c.join().map_err(|_| "a creating thread panicked")?;
        }
        Ok(())
    })?;
    let tree = fx.json(&["tree", "conductor"])?;
    assert_eq!(tree.as_array().map(Vec::len), Some(33), "{tree}");
    assert_eq!(
        fx.posture_rows()?,
        Vec::<String>::new(),
        "a session in the subtree is trusted after the cascade"
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// patterns and scopes
// ------------------------------------------------------------------------------------------------

fn pattern_add_list_and_remove_print_in_text_and_json(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "reviewer"])?;
    let add = ["pattern", "add", "reviewer", "npm test", "--actor", "alice"];
    assert_eq!(fx.ok(&add)?, "reviewer: pattern \"npm test\" added\n");
    assert_eq!(
        ok_unchanged(&fx, &add)?,
        "reviewer: already had pattern \"npm test\"; nothing changed\n"
    );
    assert_eq!(
        fx.json(&["pattern", "add", "reviewer", "git *", "--actor", "bob"])?,
        json!({ "session": "reviewer", "pattern": "git *", "added": true, "warnings": [] })
    );
    let out = ok_unchanged(&fx, &["--json", "pattern", "add", "reviewer", "git *"])?;
    assert_eq!(
        serde_json::from_str::<Value>(&out)?["added"],
        false,
        "{out}"
    );

    let listed = ok_json_array(&fx, &["pattern", "list", "reviewer"])?;
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for p in &listed {
        assert_eq!(
            keys(p),
            BTreeSet::from(["session", "pattern", "added_by", "added_at", "refused"]),
            "{p}"
        );
        seen.push((text(&p["pattern"]), text(&p["added_by"])));
    }
    seen.sort();
    assert_eq!(seen, [("git *", "bob"), ("npm test", "alice")]);
    let lines: Vec<String> = listed
        .iter()
        .map(|p| {
            format!(
                "{:?}  (added by {} at {})",
                text(&p["pattern"]),
                text(&p["added_by"]),
                text(&p["added_at"])
            )
        })
        .collect();
    let listing = fx.ok(&["pattern", "list", "reviewer"])?;
    assert_eq!(listing.lines().collect::<Vec<_>>(), lines);

    assert_eq!(
        fx.ok(&["pattern", "remove", "reviewer", "npm test"])?,
        "reviewer: pattern \"npm test\" removed\n"
    );
    assert_eq!(
        fx.json(&["pattern", "remove", "reviewer", "git *"])?,
        json!({ "session": "reviewer", "pattern": "git *", "removed": true })
    );
    assert_eq!(fx.ok(&["pattern", "list", "reviewer"])?, "");
    Ok(())
}

fn scope_grant_list_and_revoke_print_in_text_and_json(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "conductor"])?;
    let scope = fx.json(&[
        "scope",
        "grant",
        "conductor",
        "deploy:prod",
        "--ttl",
        "15m",
        "--actor",
        "alice",
    ])?;
    assert_eq!(
        keys(&scope),
        BTreeSet::from([
            "session",
            "name",
            "granted_by",
            "granted_at",
            "expires_at",
            "revoked_at"
        ]),
        "{scope}"
    );
    assert_eq!(
        (&scope["session"], &scope["name"], &scope["granted_by"]),
        (&json!("conductor"), &json!("deploy:prod"), &json!("alice"))
    );
    assert!(scope["revoked_at"].is_null(), "{scope}");
    let at =
        |k: &str| -> TestResult<chrono::DateTime<chrono::Utc>> { Ok(text(&scope[k]).parse()?) };
    assert_eq!(
        at("expires_at")? - at("granted_at")?,
        chrono::TimeDelta::minutes(15),
        "{scope}"
    );
    let granted = fx.ok(&[
        "scope",
        "grant",
        "conductor",
        "ops",
        "--ttl",
        "2h",
        "--actor",
        "bob",
    ])?;
    let listed = ok_json_array(&fx, &["scope", "list", "conductor"])?;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0], scope);
    let ops_until = text(&listed[1]["expires_at"]);
    assert_eq!(
        granted,
        format!(
            "conductor: scope ops granted: every command of conductor is approved until \
             {ops_until} (a scope limits no command; a pattern does)\n"
        )
    );
    assert_eq!(
        fx.ok(&["scope", "list", "conductor"])?,
        format!(
            "deploy:prod  granted by alice, expires {}\nops  granted by bob, expires {ops_until}\n",
            text(&scope["expires_at"])
        )
    );

    assert_eq!(
        fx.ok(&["scope", "revoke", "conductor", "ops"])?,
        "conductor: scope ops revoked\n"
    );
    assert_eq!(
        fx.json(&["scope", "revoke", "conductor", "deploy:prod"])?,
        json!({ "session": "conductor", "scope": "deploy:prod", "revoked": true })
    );
    let listed = ok_json_array(&fx, &["scope", "list", "conductor"])?;
    let revoked: Vec<&str> = listed.iter().map(|s| text(&s["revoked_at"])).collect();
    assert!(revoked.iter().all(|at| !at.is_empty()), "{listed:?}");
    assert_eq!(
        fx.ok(&["scope", "list", "conductor"])?,
        format!(
            "deploy:prod  granted by alice, revoked at {}\nops  granted by bob, revoked at {}\n",
            revoked[0], revoked[1]
        )
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// decide
// ------------------------------------------------------------------------------------------------

fn decide_prints_the_verdict_and_what_admitted_it_or_why_it_asks_in_text_and_json(
    engine: Engine,
) -> TestResult {
    let Some(fx) = trusted_tree_on(engine)? else {
        return Ok(());
    };
    for args in [
        &["end", "helper"][..],
        &["create", "plain"],
        &["create", "idle"],
        &["create", "reader"],
        &["trust", "reader", "--reads", "--actor", "carol"],
        &["create", "reviewer"],
        &[
            "pattern",
            "add",
            "reviewer",
            "npm test *",
            "--actor",
            "alice",
        ],
    ] {
        fx.ok(args)?;
    }
    let scope = fx.json(&[
        "scope", "grant", "plain", "ops", "--ttl", "30m", "--actor", "dave",
    ])?;
    let until = text(&scope["expires_at"]);
    let grandchild_trust = "trust inherited via conductor > worker > grandchild from alice's \
                            grant on conductor";
    let scoped = format!("scope ops granted by dave: every command, until {until}");
    // (session, --read-only, command words after `--`, reason's kind, the text line)
    let cases: &[(&str, bool, &[&str], &str, &str)] = &[
        (
            "grandchild",
            false,
            &["make", "deploy"],
            "trust",
            &format!("approve: {grandchild_trust}"),
        ),
        (
            "bystander",
            false,
            &["rm", "-rf", "build"],
            "trust",
            "approve: trust granted by bob",
        ),
        (
            "reader",
            true,
            &["cat", "README.md"],
            "trust_reads",
            "approve: trust_reads granted by carol",
        ),
        (
            "reader",
            false,
            &["rm", "README.md"],
            "nothing",
            "ask: trust_reads covers read-only commands only",
        ),
        // The words after `--` are one command line, `--` and all.
        (
            "reviewer",
            false,
            &["npm", "test", "--", "--watch"],
            "pattern",
            "approve: pattern \"npm test *\" added by alice",
        ),
        (
            "plain",
            false,
            &["make", "deploy"],
            "scope",
            &format!("approve: {scoped}"),
        ),
        (
            "plain",
            true,
            &["ls"],
            "scope",
            &format!("approve: {scoped}"),
        ),
        (
            "nobody",
            false,
            &["ls"],
            "unknown_session",
            "ask: the ledger does not know this session",
        ),
        (
            "helper",
            false,
            &["ls"],
            "session_ended",
            "ask: the session has ended",
        ),
        (
            "idle",
            false,
            &["npm", "install"],
            "nothing",
            "ask: no posture, pattern or scope admits it",
        ),
    ];
    for (id, read_only, command, kind, line) in cases {
        let mut args = vec!["decide", id];
        if *read_only {
            args.push("--read-only");
        }
        args.push("--");
        args.extend_from_slice(command);
        assert_eq!(fx.ok(&args)?, format!("{line}\n"), "{args:?}");
        let d = fx.json(&args)?;
        assert_eq!(keys(&d), BTreeSet::from(["reason", "verdict"]), "{d}");
        assert_eq!(
            d["verdict"],
            line.split(':').next().unwrap_or_default(),
            "{d}"
        );
        assert_eq!(d["reason"]["kind"], *kind, "{args:?}: {d}");
    }

    let d = fx.json(&["decide", "grandchild", "--", "make", "deploy"])?;
    let p = &d["reason"]["posture"];
    assert_eq!(
        (&p["source"], &p["granted_by"]),
        (&json!("inherited"), &json!("alice"))
    );
    assert_eq!(p["granted_on"], "conductor", "{d}");
    assert_eq!(
        p["chain"],
        json!(["conductor", "worker", "grandchild"]),
        "{d}"
    );
    let d = fx.json(&["decide", "reviewer", "--", "npm", "test", "--", "--watch"])?;
    assert_eq!(d["reason"]["pattern"], "npm test *", "{d}");
    assert_eq!(d["reason"]["added_by"], "alice", "{d}");
    assert_eq!(
        d["reason"]["parts"][0]["text"], "npm test -- --watch",
        "{d}"
    );
    let d = fx.json(&["decide", "plain", "--", "make", "deploy"])?;
    assert_eq!(
        (
            &d["reason"]["scope"],
            &d["reason"]["granted_by"],
            &d["reason"]["expires_at"]
        ),
        (&json!("ops"), &json!("dave"), &scope["expires_at"])
    );
    for (id, reads_only) in [("reader", true), ("idle", false)] {
        let d = fx.json(&["decide", id, "--", "rm", "README.md"])?;
        assert_eq!(
            (&d["reason"]["reads_only"], &d["reason"]["lapsed_epoch"]),
            (&json!(reads_only), &Value::Null),
            "{d}"
        );
    }
    Ok(())
}

fn decide_exits_zero_for_approve_and_ask_with_and_without_json(engine: Engine) -> TestResult {
    let Some(fx) = trusted_tree_on(engine)? else {
        return Ok(());
    };
    fx.ok(&["create", "plain"])?;
    for json in [true, false] {
        for (id, verdict) in [("worker", "approve"), ("plain", "ask"), ("nobody", "ask")] {
            let mut args = vec![];
            if json {
                args.push("--json");
            }
            args.extend(["decide", id, "--", "make", "deploy"]);
            let r = run(&fx, &args);
            assert_eq!(
                r.status.code(),
                Some(0),
                "`{}`: {}",
                args.join(" "),
                r.stderr
            );
            assert!(r.stderr.is_empty(), "{}", r.stderr);
            assert_eq!(r.stdout.lines().count(), 1, "{:?}", r.stdout);
            if json {
                let v: Value = serde_json::from_str(&r.stdout)?;
                assert_eq!(v["verdict"], verdict, "{id}: {v}");
            } else {
                assert!(r.stdout.starts_with(verdict), "{id}: {:?}", r.stdout);
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// epochs
// ------------------------------------------------------------------------------------------------

fn epoch_show_and_start_print_the_epoch_in_text_and_json_and_a_lapsed_posture_says_so(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(fx.json(&["epoch", "show"])?, json!({ "epoch": 0 }));
    assert_eq!(ok_unchanged(&fx, &["epoch", "show"])?, "current epoch: 0\n");
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full", "--actor", "alice"])?;
    assert_eq!(
        fx.json(&["epoch", "start", "--actor", "alice"])?,
        json!({ "epoch": 1, "durable": false, "lapsed": 1, "carried": 0 })
    );
    assert_eq!(
        fx.ok(&["state", "conductor"])?,
        "conductor: private (root, born with the default); \
         posture: trust granted by alice, lapsed with epoch 0\n"
    );
    assert_eq!(
        fx.ok(&["decide", "conductor", "--", "ls"])?,
        "ask: its posture lapsed with epoch 0\n"
    );
    let d = fx.json(&["decide", "conductor", "--", "ls"])?;
    assert_eq!(d["reason"]["lapsed_epoch"], 0, "{d}");
    fx.ok(&["trust", "conductor", "--full"])?;
    // --durable reaches the ledger: the posture of epoch 1 is carried into epoch 2.
    assert_eq!(
        fx.ok(&["epoch", "start", "--durable"])?,
        "epoch 2 started: 0 postures lapsed, 1 carried over\n"
    );
    assert_eq!(fx.ok(&["epoch", "show"])?, "current epoch: 2\n");
    let d = fx.json(&["decide", "conductor", "--", "ls"])?;
    assert_eq!(d["reason"]["posture"]["epoch"], 2, "{d}");
    Ok(())
}

fn no_command_but_epoch_start_adds_an_epoch(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(fx.epoch_rows()?, 1, "a new ledger starts in one epoch");
    let commands: &[&[&str]] = &[
        &["init"],
        &["create", "conductor"],
        &["trust", "conductor", "--full"],
        &["create", "worker", "--by", "conductor"],
        &["state", "worker"],
        &["state", "sub-worker-1"],
        &["raise", "worker", "--taint", "secret"],
        &["tree"],
        &["audit"],
        &["decide", "worker", "--", "ls"],
        &["pattern", "add", "worker", "ls"],
        &["pattern", "list", "worker"],
        &["pattern", "remove", "worker", "ls"],
        &["scope", "grant", "worker", "ops", "--ttl", "1h"],
        &["scope", "list", "worker"],
        &["scope", "revoke", "worker", "ops"],
        &["revoke", "conductor", "--preview"],
        &["revoke", "worker", "--local"],
        &["revoke", "conductor", "--cascade"],
        &["revoke-all"],
        &["epoch", "show"],
        &["end", "worker"],
        &["init"],
    ];
    for args in commands {
        fx.ok(args)?;
        assert_eq!(fx.epoch_rows()?, 1, "`{}` started an epoch", args.join(" "));
    }
    assert_eq!(fx.json(&["epoch", "show"])?["epoch"], 0);
    fx.ok(&["epoch", "start"])?;
    assert_eq!(fx.epoch_rows()?, 2);
    fx.ok(&["epoch", "start", "--durable"])?;
    assert_eq!(fx.epoch_rows()?, 3);
    Ok(())
}

engine_tests! {
    trust_prints_the_granted_posture_in_text_and_json,
    revoke_preview_prints_who_a_cascade_would_change_and_its_token_in_text_and_json,
    revoke_local_cascade_and_revoke_all_print_what_they_changed_in_text_and_json,
    a_trusted_conductors_worker_is_born_trusted_until_a_previewed_cascade_applied_with_its_token,
    creates_racing_a_cascade_from_other_processes_leave_no_trusted_session_in_the_subtree,
    pattern_add_list_and_remove_print_in_text_and_json,
    scope_grant_list_and_revoke_print_in_text_and_json,
    decide_prints_the_verdict_and_what_admitted_it_or_why_it_asks_in_text_and_json,
    decide_exits_zero_for_approve_and_ask_with_and_without_json,
    epoch_show_and_start_print_the_epoch_in_text_and_json_and_a_lapsed_posture_says_so,
    no_command_but_epoch_start_adds_an_epoch,
}
