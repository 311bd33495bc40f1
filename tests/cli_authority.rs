//! End-to-end tests of the authority half of the `session-ledger` command line (issue 3): `trust`,
//! `revoke` and its three propagations, `revoke-all`, `pattern`, `scope`, `decide`, `epoch` and
//! the authority part of `demo`. Every test runs the real binary on a ledger in a temporary
//! directory, always with an explicit `--db` and with `SESSION_LEDGER_DB` and
//! `SESSION_LEDGER_ACTOR` removed from the environment.
//!
//! Bad input must give a non-zero exit, exactly one line on stderr, no panic, and change nothing:
//! `refused_unchanged` (tests/common/cli.rs) compares every row of every table before and after.

mod common;

use common::cli::*;
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

// ------------------------------------------------------------------------------------------------
// helpers of this file (the shared ones are in tests/common/cli.rs)
// ------------------------------------------------------------------------------------------------

impl Fixture {
    fn ok(&self, args: &[&str]) -> TestResult<String> {
        ok(&self.db, args)
    }

    fn json(&self, args: &[&str]) -> TestResult<Value> {
        ok_json(&self.db, args)
    }

    fn run(&self, args: &[&str]) -> Run {
        run(&self.db, args)
    }

    /// `state --json ID` (which materializes the label on first read).
    fn state(&self, id: &str) -> TestResult<Value> {
        self.json(&["state", id])
    }

    /// `decide --json ID [--read-only] -- COMMAND...`, which must exit 0.
    fn decide(&self, id: &str, read_only: bool, command: &[&str]) -> TestResult<Value> {
        let mut args = vec!["decide", id];
        if read_only {
            args.push("--read-only");
        }
        args.push("--");
        args.extend_from_slice(command);
        self.json(&args)
    }

    fn audit(&self, filters: &[&str]) -> TestResult<Vec<Value>> {
        let mut args = vec!["audit"];
        args.extend_from_slice(filters);
        ok_json_lines(&self.db, &args)
    }

    fn conn(&self) -> TestResult<Connection> {
        Ok(Connection::open_with_flags(
            &self.db,
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?)
    }

    /// The sessions holding a posture row, with the level, ordered by id.
    fn posture_rows(&self) -> TestResult<Vec<String>> {
        rows(
            &self.conn()?,
            "SELECT session_id || ':' || posture FROM postures ORDER BY session_id",
        )
    }

    fn epoch_rows(&self) -> TestResult<i64> {
        Ok(self
            .conn()?
            .query_row("SELECT count(*) FROM epochs", [], |r| r.get(0))?)
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

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
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
fn trusted_tree() -> TestResult<Fixture> {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor", "--actor", "alice"])?;
    fx.ok(&["trust", "conductor", "--full", "--actor", "alice"])?;
    fx.ok(&["create", "worker", "--by", "conductor", "--actor", "alice"])?;
    fx.ok(&["create", "grandchild", "--by", "worker", "--actor", "alice"])?;
    fx.ok(&["create", "helper", "--by", "conductor", "--actor", "alice"])?;
    fx.state("sub-worker-1")?;
    fx.ok(&["create", "bystander", "--actor", "bob"])?;
    fx.ok(&["trust", "bystander", "--full", "--actor", "bob"])?;
    Ok(fx)
}

const TREE: [&str; 5] = [
    "conductor",
    "grandchild",
    "helper",
    "sub-worker-1",
    "worker",
];

// ------------------------------------------------------------------------------------------------
// trust, create and state
// ------------------------------------------------------------------------------------------------

#[test]
fn a_child_created_under_full_trust_is_born_with_trust_and_not_trust_reads() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    let created = fx.json(&["create", "worker", "--by", "conductor"])?;
    assert_eq!(created["id"], "worker", "{created}");
    assert_eq!(created["inherited_trust"], true, "{created}");
    assert_eq!(created["inherited_trust_reads"], false, "{created}");
    let state = fx.state("worker")?;
    assert_eq!(state["trust"], true, "{state}");
    assert_eq!(state["trust_reads"], false, "{state}");
    Ok(())
}

#[test]
fn a_child_created_under_trust_reads_is_born_with_trust_reads_and_never_with_trust() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--reads"])?;
    let created = fx.json(&["create", "worker", "--by", "conductor"])?;
    assert_eq!(created["inherited_trust"], false, "{created}");
    assert_eq!(created["inherited_trust_reads"], true, "{created}");
    let state = fx.state("worker")?;
    assert_eq!(state["trust"], false, "{state}");
    assert_eq!(state["trust_reads"], true, "{state}");
    assert_eq!(state["posture"]["level"], "trust_reads", "{state}");
    Ok(())
}

#[test]
fn a_child_of_a_creator_with_no_posture_is_born_with_neither() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    let created = fx.json(&["create", "worker", "--by", "conductor"])?;
    assert_eq!(created["inherited_trust"], false, "{created}");
    assert_eq!(created["inherited_trust_reads"], false, "{created}");
    let state = fx.state("worker")?;
    assert_eq!(state["trust"], false, "{state}");
    assert_eq!(state["trust_reads"], false, "{state}");
    assert!(state["posture"].is_null(), "{state}");
    Ok(())
}

#[test]
fn create_text_output_says_what_the_child_was_born_with() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    let out = fx.ok(&["create", "worker", "--by", "conductor"])?;
    assert!(out.contains("born with trust"), "{out:?}");
    fx.ok(&["create", "reader"])?;
    fx.ok(&["trust", "reader", "--reads"])?;
    let out = fx.ok(&["create", "reader-child", "--by", "reader"])?;
    assert!(out.contains("born with trust_reads"), "{out:?}");
    Ok(())
}

#[test]
fn state_json_shows_trust_booleans_and_a_posture_with_the_chain_back_to_the_grant() -> TestResult {
    let fx = trusted_tree()?;

    let root = fx.state("conductor")?;
    assert_eq!(root["trust"], true, "{root}");
    assert_eq!(root["trust_reads"], false, "{root}");
    let p = &root["posture"];
    assert_eq!(p["source"], "granted", "{root}");
    assert_eq!(p["granted_by"], "alice", "{root}");
    assert_eq!(p["granted_on"], "conductor", "{root}");
    assert_eq!(p["chain"], serde_json::json!(["conductor"]), "{root}");

    let grandchild = fx.state("grandchild")?;
    assert_eq!(grandchild["trust"], true, "{grandchild}");
    assert_eq!(grandchild["trust_reads"], false, "{grandchild}");
    let p = &grandchild["posture"];
    assert_eq!(p["level"], "trust", "{grandchild}");
    assert_eq!(p["source"], "inherited", "{grandchild}");
    assert_eq!(p["inherited_from"], "worker", "{grandchild}");
    assert_eq!(p["granted_by"], "alice", "{grandchild}");
    assert_eq!(p["granted_on"], "conductor", "{grandchild}");
    assert_eq!(
        p["chain"],
        serde_json::json!(["conductor", "worker", "grandchild"]),
        "{grandchild}"
    );

    let spawned = fx.state("sub-worker-1")?;
    assert_eq!(spawned["trust"], true, "{spawned}");
    assert_eq!(
        spawned["posture"]["chain"],
        serde_json::json!(["conductor", "worker", "sub-worker-1"]),
        "{spawned}"
    );
    Ok(())
}

#[test]
fn trust_json_prints_the_granted_posture_and_audits_the_grant() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    let posture = fx.json(&["trust", "conductor", "--reads", "--actor", "alice"])?;
    assert_eq!(posture["session"], "conductor", "{posture}");
    assert_eq!(posture["level"], "trust_reads", "{posture}");
    assert_eq!(posture["source"], "granted", "{posture}");
    assert_eq!(posture["granted_by"], "alice", "{posture}");
    let audit = fx.audit(&["--kind", "posture.grant"])?;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["session"], "conductor");
    assert_eq!(audit[0]["actor"], "alice");
    assert_eq!(audit[0]["detail"]["posture"], "trust_reads");
    Ok(())
}

#[test]
fn the_create_audit_row_records_what_the_child_was_born_with() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--reads"])?;
    fx.ok(&["create", "worker", "--by", "conductor"])?;
    fx.ok(&["create", "plain"])?;
    fx.ok(&["create", "plain-child", "--by", "plain"])?;
    let rows = fx.audit(&["--kind", "session.create"])?;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["session"], "worker");
    assert_eq!(rows[0]["detail"]["inherited_trust"], false, "{}", rows[0]);
    assert_eq!(
        rows[0]["detail"]["inherited_trust_reads"], true,
        "{}",
        rows[0]
    );
    assert_eq!(rows[1]["session"], "plain-child");
    assert_eq!(rows[1]["detail"]["inherited_trust"], false, "{}", rows[1]);
    assert_eq!(
        rows[1]["detail"]["inherited_trust_reads"], false,
        "{}",
        rows[1]
    );
    Ok(())
}

#[test]
fn a_create_refused_under_a_trusted_creator_is_audited_as_having_inherited_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    for i in 0..50 {
        fx.ok(&["create", &format!("w{i}"), "--by", "conductor"])?;
    }
    let postures = fx.posture_rows()?;
    let r = fx.run(&["create", "w50", "--by", "conductor"]);
    assert_clean_failure(&r, "the 51st live child");
    assert_eq!(
        fx.posture_rows()?,
        postures,
        "a refused create added a posture"
    );
    let refused = fx.audit(&["--kind", "session.create_refused"])?;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["session"], "w50");
    assert_eq!(
        refused[0]["detail"]["inherited_trust"], false,
        "{}",
        refused[0]
    );
    assert_eq!(
        refused[0]["detail"]["inherited_trust_reads"], false,
        "{}",
        refused[0]
    );
    Ok(())
}

#[test]
fn trust_without_full_or_reads_is_refused_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    let r = refused_unchanged(&fx.db, &["trust", "conductor"])?;
    assert_mentions(&r, "--full");
    refused_unchanged(
        &fx.db,
        &["--json", "trust", "conductor", "--actor", "alice"],
    )?;
    Ok(())
}

#[test]
fn trust_with_both_full_and_reads_is_refused_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    refused_unchanged(&fx.db, &["trust", "conductor", "--full", "--reads"])?;
    Ok(())
}

#[test]
fn revoke_without_a_propagation_is_refused_and_changes_nothing() -> TestResult {
    let fx = trusted_tree()?;
    let r = refused_unchanged(&fx.db, &["revoke", "conductor"])?;
    assert_mentions(&r, "--cascade");
    refused_unchanged(
        &fx.db,
        &["--json", "revoke", "conductor", "--actor", "alice"],
    )?;
    let token = "0".repeat(64);
    refused_unchanged(&fx.db, &["revoke", "conductor", "--token", &token])?;
    Ok(())
}

#[test]
fn revoke_with_two_propagations_is_refused_and_changes_nothing() -> TestResult {
    let fx = trusted_tree()?;
    refused_unchanged(&fx.db, &["revoke", "conductor", "--cascade", "--local"])?;
    refused_unchanged(&fx.db, &["revoke", "conductor", "--local", "--preview"])?;
    refused_unchanged(&fx.db, &["revoke", "conductor", "--cascade", "--preview"])?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// revoke: preview, cascade, local; revoke-all
// ------------------------------------------------------------------------------------------------

#[test]
fn revoke_preview_json_lists_who_a_cascade_would_change_with_a_token_and_changes_nothing(
) -> TestResult {
    let fx = trusted_tree()?;
    let postures_before = fx.posture_rows()?;
    let out = ok_unchanged(&fx.db, &["--json", "revoke", "conductor", "--preview"])?;
    assert_eq!(fx.posture_rows()?, postures_before);
    let preview: Value = serde_json::from_str(&out)?;
    for key in ["root", "count", "sessions", "token"] {
        assert!(
            preview.get(key).is_some(),
            "preview lacks {key:?}: {preview}"
        );
    }
    assert_eq!(preview["root"], "conductor", "{preview}");
    assert_eq!(preview["count"], 5, "{preview}");
    assert_eq!(sorted(ids(&preview["sessions"])), TREE, "{preview}");
    let token = preview["token"]
        .as_str()
        .ok_or("the token is not a string")?;
    assert_eq!(token.len(), 64, "{token:?}");
    // Each session says its depth, its posture and whether it was granted on it directly.
    for s in preview["sessions"]
        .as_array()
        .ok_or("sessions is not a list")?
    {
        assert_eq!(s["posture"], "trust", "{s}");
        assert_eq!(s["granted_directly"], s["id"] == "conductor", "{s}");
    }
    let depth_of = |id: &str| {
        preview["sessions"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["id"] == id))
            .map(|s| s["depth"].clone())
    };
    assert_eq!(depth_of("conductor"), Some(serde_json::json!(0)));
    assert_eq!(depth_of("grandchild"), Some(serde_json::json!(2)));
    // A second preview of the same state gives the same token.
    let again = fx.json(&["revoke", "conductor", "--preview"])?;
    assert_eq!(again["token"], preview["token"]);
    Ok(())
}

#[test]
fn revoke_preview_text_names_the_count_and_how_to_apply_the_token() -> TestResult {
    let fx = trusted_tree()?;
    let out = ok_unchanged(&fx.db, &["revoke", "conductor", "--preview"])?;
    assert!(out.contains("would change 5 sessions"), "{out}");
    assert!(out.contains("--cascade --token"), "{out}");
    for id in TREE {
        assert!(out.contains(id), "the preview omits {id}:\n{out}");
    }
    Ok(())
}

#[test]
fn revoke_cascade_with_the_previews_token_revokes_exactly_the_previewed_sessions() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    let applied = fx.json(&[
        "revoke",
        "conductor",
        "--cascade",
        "--token",
        token,
        "--actor",
        "carol",
    ])?;
    for key in ["root", "count", "sessions"] {
        assert!(
            applied.get(key).is_some(),
            "cascade lacks {key:?}: {applied}"
        );
    }
    assert!(
        applied.get("token").is_none(),
        "a cascade printed a token: {applied}"
    );
    assert_eq!(applied["root"], "conductor", "{applied}");
    assert_eq!(applied["count"], preview["count"], "{applied}");
    assert_eq!(applied["sessions"], preview["sessions"], "{applied}");

    for id in TREE {
        let state = fx.state(id)?;
        assert_eq!(state["trust"], false, "{id} kept trust: {state}");
        assert_eq!(state["trust_reads"], false, "{id}: {state}");
    }
    assert_eq!(
        fx.state("bystander")?["trust"],
        true,
        "the cascade left its tree"
    );
    assert_eq!(fx.posture_rows()?, ["bystander:trust"]);

    // One audit row per session changed, saying it was a cascade from the root, by whom.
    let revokes = fx.audit(&["--kind", "posture.revoke"])?;
    let audited: Vec<String> = revokes
        .iter()
        .filter_map(|r| r["session"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(sorted(audited), TREE, "{revokes:?}");
    for r in &revokes {
        assert_eq!(r["actor"], "carol", "{r}");
        assert_eq!(r["detail"]["propagation"], "cascade", "{r}");
        assert_eq!(r["detail"]["root"], "conductor", "{r}");
    }
    Ok(())
}

#[test]
fn revoke_cascade_without_a_token_reaches_created_and_spawned_descendants_and_only_them(
) -> TestResult {
    let fx = trusted_tree()?;
    // A spawned sub-agent of the grandchild, and a nested spawn under the spawned one.
    fx.state("sub-grandchild-7")?;
    fx.state("sub-sub-worker-1-2")?;
    let r = fx.json(&["revoke", "worker", "--cascade"])?;
    assert_eq!(r["root"], "worker", "{r}");
    assert_eq!(
        sorted(ids(&r["sessions"])),
        [
            "grandchild",
            "sub-grandchild-7",
            "sub-sub-worker-1-2",
            "sub-worker-1",
            "worker"
        ],
        "{r}"
    );
    assert_eq!(r["count"], 5, "{r}");
    assert_eq!(
        fx.posture_rows()?,
        ["bystander:trust", "conductor:trust", "helper:trust"],
        "the cascade from worker reached outside its subtree, or missed part of it"
    );
    Ok(())
}

#[test]
fn a_preview_token_is_refused_once_a_child_was_created_in_the_subtree() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    fx.ok(&["create", "late", "--by", "grandchild"])?;

    let r = refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", token],
    )?;
    assert_mentions(&r, "preview");
    assert_mentions(&r, "changed");
    let malformed = run(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", "abc"],
    );
    assert_ne!(
        r.stderr, malformed.stderr,
        "a stale token and a malformed one give the same error"
    );
    // Nothing revoked: the new child and the whole tree still hold trust.
    for id in TREE.iter().chain(["late"].iter()) {
        assert_eq!(fx.state(id)?["trust"], true, "{id} lost trust");
    }
    // A fresh preview includes the new child, and its token applies.
    let fresh = fx.json(&["revoke", "conductor", "--preview"])?;
    assert_eq!(fresh["count"], 6, "{fresh}");
    assert!(
        ids(&fresh["sessions"]).contains(&"late".to_owned()),
        "{fresh}"
    );
    let token = fresh["token"].as_str().ok_or("no token")?;
    let applied = fx.json(&["revoke", "conductor", "--cascade", "--token", token])?;
    assert_eq!(applied["sessions"], fresh["sessions"]);
    Ok(())
}

#[test]
fn a_preview_token_is_refused_once_a_posture_in_the_subtree_changed() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    fx.ok(&["trust", "helper", "--reads"])?;
    let r = refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", token],
    )?;
    assert_mentions(&r, "preview");
    Ok(())
}

#[test]
fn a_preview_token_is_refused_for_another_root() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    refused_unchanged(&fx.db, &["revoke", "worker", "--cascade", "--token", token])?;
    Ok(())
}

#[test]
fn a_malformed_or_unknown_token_is_refused_and_nothing_is_revoked() -> TestResult {
    let fx = trusted_tree()?;
    let r = refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", "abc"],
    )?;
    assert_mentions(&r, "token");
    let upper = "A".repeat(64);
    refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", &upper],
    )?;
    let wrong = "0".repeat(64);
    refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", &wrong],
    )?;
    refused_unchanged(&fx.db, &["revoke", "conductor", "--cascade", "--token", ""])?;
    Ok(())
}

#[test]
fn a_token_with_local_or_preview_is_refused_and_changes_nothing() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    let r = refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--local", "--token", token],
    )?;
    assert_mentions(&r, "--cascade");
    refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--preview", "--token", token],
    )?;
    Ok(())
}

#[test]
fn arguments_the_cli_refuses_in_combination_exit_2_like_those_the_parser_refuses() -> TestResult {
    let fx = trusted_tree()?;
    let token = "0".repeat(64);
    for args in [
        vec!["trust", "conductor", "--full", "--reads"],
        vec![
            "revoke",
            "conductor",
            "--preview",
            "--token",
            token.as_str(),
        ],
        vec!["revoke", "conductor", "--local", "--token", token.as_str()],
    ] {
        let r = refused_unchanged(&fx.db, &args)?;
        assert_eq!(
            r.status.code(),
            Some(2),
            "`{}`: {}",
            args.join(" "),
            r.stderr
        );
    }
    // A value the ledger checks is not a bad argument in that sense.
    let r = refused_unchanged(&fx.db, &["raise", "conductor", "--taint", "bogus"])?;
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    Ok(())
}

#[test]
fn revoke_local_json_revokes_only_the_session_and_lists_descendants_still_holding_its_posture(
) -> TestResult {
    let fx = trusted_tree()?;
    // A descendant holding a posture granted on it directly does not hold it through the root.
    fx.ok(&["trust", "helper", "--reads"])?;
    let r = fx.json(&["revoke", "conductor", "--local"])?;
    assert_eq!(r["root"], "conductor", "{r}");
    assert_eq!(r["count"], 1, "{r}");
    assert_eq!(ids(&r["sessions"]), ["conductor"], "{r}");
    let holding = r
        .get("still_holding")
        .ok_or_else(|| format!("the local revoke does not list who still holds: {r}"))?;
    assert_eq!(
        sorted(ids(holding)),
        ["grandchild", "sub-worker-1", "worker"],
        "{r}"
    );
    for s in holding.as_array().ok_or("still_holding is not a list")? {
        assert_eq!(s["granted_directly"], false, "{s}");
    }

    assert_eq!(fx.state("conductor")?["trust"], false);
    for id in ["worker", "grandchild", "sub-worker-1"] {
        assert_eq!(
            fx.state(id)?["trust"],
            true,
            "{id}: a local revoke reached it"
        );
    }
    assert_eq!(fx.state("helper")?["trust_reads"], true);
    let revokes = fx.audit(&["--kind", "posture.revoke"])?;
    assert_eq!(revokes.len(), 1, "{revokes:?}");
    assert_eq!(revokes[0]["detail"]["propagation"], "local");
    Ok(())
}

#[test]
fn revoke_local_text_reports_the_descendants_still_holding() -> TestResult {
    let fx = trusted_tree()?;
    let out = fx.ok(&["revoke", "worker", "--local"])?;
    assert!(out.contains("still hold"), "{out}");
    assert!(out.contains("grandchild"), "{out}");
    assert!(out.contains("sub-worker-1"), "{out}");
    Ok(())
}

#[test]
fn revoke_of_an_unknown_session_is_refused_for_every_propagation() -> TestResult {
    let fx = trusted_tree()?;
    for how in ["--cascade", "--local", "--preview"] {
        let r = refused_unchanged(&fx.db, &["revoke", "nobody", how])?;
        assert_mentions(&r, "nobody");
    }
    refused_unchanged(&fx.db, &["revoke", "bad id", "--cascade"])?;
    Ok(())
}

#[test]
fn revoke_all_clears_every_posture() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["create", "reader"])?;
    fx.ok(&["trust", "reader", "--reads"])?;
    let r = fx.json(&["revoke-all", "--actor", "carol"])?;
    assert!(r["root"].is_null(), "{r}");
    assert_eq!(r["count"], 7, "{r}");
    let mut everyone: Vec<String> = TREE.iter().map(|s| (*s).to_owned()).collect();
    everyone.extend(["bystander".to_owned(), "reader".to_owned()]);
    assert_eq!(sorted(ids(&r["sessions"])), sorted(everyone.clone()), "{r}");
    for id in &everyone {
        let state = fx.state(id)?;
        assert_eq!(state["trust"], false, "{id}: {state}");
        assert_eq!(state["trust_reads"], false, "{id}: {state}");
        let d = fx.decide(id, true, &["ls"])?;
        assert_eq!(d["verdict"], "ask", "{id}: {d}");
    }
    assert!(fx.posture_rows()?.is_empty());
    let revokes = fx.audit(&["--kind", "posture.revoke", "--session", "reader"])?;
    assert_eq!(revokes.len(), 1, "{revokes:?}");
    assert_eq!(revokes[0]["actor"], "carol");
    // With nothing left, a second global revoke changes nothing.
    let again = fx.json(&["revoke-all"])?;
    assert_eq!(again["count"], 0, "{again}");
    Ok(())
}

#[test]
fn creates_racing_a_cascade_leave_no_trusted_session_in_the_subtree() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    let db = fx.db.clone();
    let creators: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || {
                for i in 0..8 {
                    let id = format!("racer-{t}-{i}");
                    let r = run(&db, &["create", &id, "--by", "conductor"]);
                    assert!(r.status.success(), "{id}: {}", r.stderr);
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(50));
    let r = run(&db, &["revoke", "conductor", "--cascade"]);
    assert!(r.status.success(), "the cascade failed: {}", r.stderr);
    for c in creators {
        c.join().map_err(|_| "a creating thread panicked")?;
    }
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

#[test]
fn pattern_add_list_and_remove_round_trip_and_decide_follows_them() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    let added = fx.json(&["pattern", "add", "reviewer", "npm test", "--actor", "alice"])?;
    assert_eq!(added["added"], true, "{added}");
    fx.ok(&["pattern", "add", "reviewer", "git *"])?;
    let listed = ok_json_lines(&fx.db, &["pattern", "list", "reviewer"])?;
    let patterns: Vec<&str> = listed
        .iter()
        .filter_map(|p| p["pattern"].as_str())
        .collect();
    assert_eq!(
        sorted(patterns.iter().map(|p| (*p).to_owned()).collect()),
        ["git *", "npm test"]
    );
    assert!(
        listed.iter().any(|p| p["added_by"] == "alice"),
        "{listed:?}"
    );
    let text = fx.ok(&["pattern", "list", "reviewer"])?;
    assert!(
        text.contains("npm test") && text.contains("git *"),
        "{text}"
    );

    assert_eq!(
        fx.decide("reviewer", false, &["git", "status"])?["verdict"],
        "approve"
    );
    let removed = fx.json(&["pattern", "remove", "reviewer", "git *"])?;
    assert_eq!(removed["removed"], true, "{removed}");
    let d = fx.decide("reviewer", false, &["git", "status"])?;
    assert_eq!(d["verdict"], "ask", "a removed pattern still admits: {d}");
    let listed = ok_json_lines(&fx.db, &["pattern", "list", "reviewer"])?;
    assert_eq!(listed.len(), 1, "{listed:?}");

    let kinds: Vec<String> = fx
        .audit(&["--session", "reviewer"])?
        .iter()
        .filter_map(|r| r["kind"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        kinds,
        [
            "session.root",
            "pattern.add",
            "pattern.add",
            "pattern.remove"
        ]
    );
    Ok(())
}

#[test]
fn adding_a_pattern_the_session_already_has_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    fx.ok(&["pattern", "add", "reviewer", "npm test"])?;
    let out = ok_unchanged(
        &fx.db,
        &["--json", "pattern", "add", "reviewer", "npm test"],
    )?;
    let v: Value = serde_json::from_str(&out)?;
    assert_eq!(v["added"], false, "{v}");
    Ok(())
}

#[test]
fn patterns_are_never_inherited_even_under_full_trust_and_the_creator_keeps_its_own() -> TestResult
{
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["pattern", "add", "conductor", "npm test"])?;
    fx.ok(&["trust", "conductor", "--full"])?;
    fx.ok(&["create", "worker", "--by", "conductor"])?;
    assert!(ok_json_lines(&fx.db, &["pattern", "list", "worker"])?.is_empty());
    assert!(fx.ok(&["pattern", "list", "worker"])?.trim().is_empty());
    assert_eq!(
        ok_json_lines(&fx.db, &["pattern", "list", "conductor"])?.len(),
        1
    );
    // The worker is approved by its inherited trust, never by the creator's pattern.
    let d = fx.decide("worker", false, &["npm", "test"])?;
    assert_eq!(d["reason"]["kind"], "trust", "{d}");
    fx.ok(&["revoke", "worker", "--local"])?;
    let d = fx.decide("worker", false, &["npm", "test"])?;
    assert_eq!(
        d["verdict"], "ask",
        "the creator's pattern admitted the worker: {d}"
    );
    Ok(())
}

#[test]
fn a_pattern_only_creators_child_asks() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    fx.ok(&["pattern", "add", "reviewer", "npm test"])?;
    let created = fx.json(&["create", "helper", "--by", "reviewer"])?;
    assert_eq!(created["inherited_trust"], false, "{created}");
    assert_eq!(created["inherited_trust_reads"], false, "{created}");
    let d = fx.decide("reviewer", false, &["npm", "test"])?;
    assert_eq!(d["verdict"], "approve", "{d}");
    let d = fx.decide("helper", false, &["npm", "test"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "nothing", "{d}");
    Ok(())
}

#[test]
fn scope_grant_with_a_ttl_of_15m_expires_fifteen_minutes_after_it_was_granted() -> TestResult {
    let fx = Fixture::init()?;
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
    assert_eq!(scope["session"], "conductor", "{scope}");
    assert_eq!(scope["name"], "deploy:prod", "{scope}");
    assert_eq!(scope["granted_by"], "alice", "{scope}");
    assert!(scope["revoked_at"].is_null(), "{scope}");
    let at = |k: &str| -> TestResult<chrono::DateTime<chrono::Utc>> {
        Ok(scope[k].as_str().ok_or("not a time")?.parse()?)
    };
    assert_eq!(
        at("expires_at")? - at("granted_at")?,
        chrono::TimeDelta::minutes(15),
        "{scope}"
    );
    let listed = ok_json_lines(&fx.db, &["scope", "list", "conductor"])?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0], scope);
    let text = fx.ok(&["scope", "list", "conductor"])?;
    assert!(
        text.contains("deploy:prod") && text.contains("expires"),
        "{text}"
    );
    let audit = fx.audit(&["--kind", "scope.grant"])?;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["detail"]["scope"], "deploy:prod");
    Ok(())
}

#[test]
fn scope_revoke_stops_the_scope_admitting_anything_and_list_shows_it_revoked() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["scope", "grant", "conductor", "ops", "--ttl", "2h"])?;
    assert_eq!(
        fx.decide("conductor", false, &["make", "deploy"])?["verdict"],
        "approve"
    );
    let r = fx.json(&["scope", "revoke", "conductor", "ops", "--actor", "alice"])?;
    assert_eq!(r["revoked"], true, "{r}");
    let d = fx.decide("conductor", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    let listed = ok_json_lines(&fx.db, &["scope", "list", "conductor"])?;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0]["revoked_at"].is_string(), "{listed:?}");
    assert!(fx.ok(&["scope", "list", "conductor"])?.contains("revoked"));
    let audit = fx.audit(&["--kind", "scope.revoke"])?;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["actor"], "alice");
    // Revoking it again is refused: it is no longer live.
    refused_unchanged(&fx.db, &["scope", "revoke", "conductor", "ops"])?;
    Ok(())
}

#[test]
fn scopes_are_never_inherited_and_never_turn_into_trust() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["scope", "grant", "conductor", "ops", "--ttl", "1h"])?;
    let state = fx.state("conductor")?;
    assert_eq!(state["trust"], false, "{state}");
    assert_eq!(state["trust_reads"], false, "{state}");
    assert!(state["posture"].is_null(), "{state}");
    let created = fx.json(&["create", "worker", "--by", "conductor"])?;
    assert_eq!(created["inherited_trust"], false, "{created}");
    assert_eq!(created["inherited_trust_reads"], false, "{created}");
    assert!(ok_json_lines(&fx.db, &["scope", "list", "worker"])?.is_empty());
    let d = fx.decide("worker", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "nothing", "{d}");
    // Nor does a spawned sub-agent get it.
    let d = fx.decide("sub-conductor-1", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    Ok(())
}

#[test]
fn an_expired_scope_admits_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["scope", "grant", "conductor", "brief", "--ttl", "1s"])?;
    thread::sleep(Duration::from_millis(1200));
    let d = fx.decide("conductor", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "ask", "an expired scope admitted: {d}");
    assert_eq!(d["reason"]["kind"], "nothing", "{d}");
    // An expired scope cannot be revoked either: it is not live.
    refused_unchanged(&fx.db, &["scope", "revoke", "conductor", "brief"])?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// bad input for grants
// ------------------------------------------------------------------------------------------------

#[test]
fn scope_grant_refuses_a_zero_negative_or_unparseable_ttl_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    for ttl in ["0s", "-5m", "soon", "1.5h", "0m", "15", ""] {
        let flag = format!("--ttl={ttl}");
        let r = refused_unchanged(&fx.db, &["scope", "grant", "conductor", "ops", &flag])?;
        assert_mentions(&r, "ttl");
    }
    // Written as two arguments, a negative TTL is refused too (clap reads it as a flag).
    refused_unchanged(
        &fx.db,
        &["scope", "grant", "conductor", "ops", "--ttl", "-5m"],
    )?;
    refused_unchanged(&fx.db, &["scope", "grant", "conductor", "ops"])?;
    assert!(ok_json_lines(&fx.db, &["scope", "list", "conductor"])?.is_empty());
    Ok(())
}

#[test]
fn pattern_add_refuses_an_empty_pattern_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    let r = refused_unchanged(&fx.db, &["pattern", "add", "reviewer", ""])?;
    assert_mentions(&r, "pattern");
    refused_unchanged(&fx.db, &["pattern", "remove", "reviewer", ""])?;
    Ok(())
}

#[test]
fn scope_grant_refuses_a_name_that_is_not_a_valid_name_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    for name in ["bad name", "", ".leading", "a/b", &"s".repeat(65)] {
        let r = refused_unchanged(
            &fx.db,
            &["scope", "grant", "conductor", name, "--ttl", "15m"],
        )?;
        assert_mentions(&r, "scope");
    }
    Ok(())
}

#[test]
fn trust_pattern_add_and_scope_grant_refuse_an_unknown_session_and_change_nothing() -> TestResult {
    let fx = trusted_tree()?;
    let commands: &[&[&str]] = &[
        &["trust", "nobody", "--full"],
        &["trust", "nobody", "--reads"],
        &["pattern", "add", "nobody", "npm test"],
        &["scope", "grant", "nobody", "ops", "--ttl", "15m"],
        // A spawned id whose parent the ledger does not know is just as unknown.
        &["trust", "sub-nobody-1", "--full"],
    ];
    for args in commands {
        let r = refused_unchanged(&fx.db, args)?;
        assert_mentions(&r, "nobody");
    }
    Ok(())
}

#[test]
fn trust_pattern_add_and_scope_grant_refuse_an_ended_session_and_change_nothing() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["end", "helper"])?;
    let commands: &[&[&str]] = &[
        &["trust", "helper", "--full"],
        &["trust", "helper", "--reads"],
        &["pattern", "add", "helper", "npm test"],
        &["scope", "grant", "helper", "ops", "--ttl", "15m"],
        // A sub-agent of an ended session is ended with it: refused, and not recorded either.
        &["trust", "sub-helper-1", "--full"],
        &["pattern", "add", "sub-helper-1", "npm test"],
        &["scope", "grant", "sub-helper-1", "ops", "--ttl", "15m"],
    ];
    for args in commands {
        let r = refused_unchanged(&fx.db, args)?;
        assert_mentions(&r, "ended");
    }
    Ok(())
}

#[test]
fn scope_revoke_of_a_scope_that_does_not_exist_is_refused_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    fx.ok(&["scope", "grant", "conductor", "ops", "--ttl", "15m"])?;
    let r = refused_unchanged(&fx.db, &["scope", "revoke", "conductor", "nope"])?;
    assert_mentions(&r, "nope");
    refused_unchanged(&fx.db, &["scope", "revoke", "nobody", "ops"])?;
    refused_unchanged(&fx.db, &["scope", "revoke", "conductor", "bad name"])?;
    Ok(())
}

#[test]
fn pattern_remove_of_a_pattern_the_session_lacks_is_refused_and_changes_nothing() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    fx.ok(&["pattern", "add", "reviewer", "npm test"])?;
    let r = refused_unchanged(&fx.db, &["pattern", "remove", "reviewer", "npm *"])?;
    assert_mentions(&r, "npm *");
    Ok(())
}

#[test]
fn errors_of_authority_commands_with_json_still_go_to_stderr_as_one_line() -> TestResult {
    let fx = trusted_tree()?;
    let cases: &[&[&str]] = &[
        &["--json", "trust", "nobody", "--full"],
        &["--json", "revoke", "conductor"],
        &[
            "--json",
            "revoke",
            "conductor",
            "--cascade",
            "--token",
            "abc",
        ],
        &[
            "--json",
            "scope",
            "grant",
            "conductor",
            "ops",
            "--ttl",
            "soon",
        ],
        &["--json", "pattern", "add", "conductor", ""],
        &["--json", "decide", "conductor", "--", ""],
        &["--json", "decide", "conductor"],
        &["--json", "decide", "bad id", "--", "ls"],
    ];
    for args in cases {
        refused_unchanged(&fx.db, args)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// decide
// ------------------------------------------------------------------------------------------------

fn assert_decision_shape(d: &Value) {
    let keys: Vec<&String> = d
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["reason", "verdict"], "decide --json keys: {d}");
    assert!(d["reason"]["kind"].is_string(), "{d}");
}

#[test]
fn decide_approves_through_an_inherited_trust_with_the_chain_back_to_the_operators_grant(
) -> TestResult {
    let fx = trusted_tree()?;
    let d = fx.decide("grandchild", false, &["make", "deploy"])?;
    assert_decision_shape(&d);
    assert_eq!(d["verdict"], "approve", "{d}");
    let reason = &d["reason"];
    assert_eq!(reason["kind"], "trust", "{d}");
    let p = &reason["posture"];
    assert_eq!(p["source"], "inherited", "{d}");
    assert_eq!(p["granted_by"], "alice", "{d}");
    assert_eq!(p["granted_on"], "conductor", "{d}");
    assert_eq!(
        p["chain"],
        serde_json::json!(["conductor", "worker", "grandchild"]),
        "{d}"
    );
    let text = fx.ok(&["decide", "grandchild", "--", "make", "deploy"])?;
    assert!(text.starts_with("approve"), "{text}");
    assert!(text.contains("conductor > worker > grandchild"), "{text}");
    assert!(text.contains("alice"), "{text}");
    Ok(())
}

#[test]
fn decide_approves_a_directly_granted_trust_with_a_chain_of_one() -> TestResult {
    let fx = trusted_tree()?;
    let d = fx.decide("bystander", false, &["rm", "-rf", "build"])?;
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "trust", "{d}");
    assert_eq!(d["reason"]["posture"]["source"], "granted", "{d}");
    assert_eq!(d["reason"]["posture"]["granted_by"], "bob", "{d}");
    assert_eq!(
        d["reason"]["posture"]["chain"],
        serde_json::json!(["bystander"])
    );
    Ok(())
}

#[test]
fn decide_approves_a_read_only_command_under_trust_reads_and_asks_for_any_other() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reader"])?;
    fx.ok(&["trust", "reader", "--reads"])?;
    fx.ok(&["create", "reader-child", "--by", "reader"])?;
    let d = fx.decide("reader-child", true, &["cat", "README.md"])?;
    assert_decision_shape(&d);
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "trust_reads", "{d}");
    assert_eq!(
        d["reason"]["posture"]["chain"],
        serde_json::json!(["reader", "reader-child"]),
        "{d}"
    );
    let d = fx.decide("reader-child", false, &["rm", "README.md"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "nothing", "{d}");
    assert_eq!(d["reason"]["reads_only"], true, "{d}");
    Ok(())
}

#[test]
fn decide_approves_through_a_matching_pattern_and_names_it() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "reviewer"])?;
    fx.ok(&[
        "pattern",
        "add",
        "reviewer",
        "npm test *",
        "--actor",
        "alice",
    ])?;
    let d = fx.decide("reviewer", false, &["npm", "test", "--", "--watch"])?;
    assert_decision_shape(&d);
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "pattern", "{d}");
    assert_eq!(d["reason"]["pattern"], "npm test *", "{d}");
    assert_eq!(d["reason"]["added_by"], "alice", "{d}");
    // The pattern is matched against the whole command line.
    let d = fx.decide("reviewer", false, &["npm", "install"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    Ok(())
}

#[test]
fn decide_approves_through_a_live_scope_and_names_it_with_its_expiry() -> TestResult {
    let fx = Fixture::init()?;
    fx.ok(&["create", "conductor"])?;
    let scope = fx.json(&[
        "scope",
        "grant",
        "conductor",
        "ops",
        "--ttl",
        "30m",
        "--actor",
        "alice",
    ])?;
    let d = fx.decide("conductor", false, &["make", "deploy"])?;
    assert_decision_shape(&d);
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "scope", "{d}");
    assert_eq!(d["reason"]["scope"], "ops", "{d}");
    assert_eq!(d["reason"]["granted_by"], "alice", "{d}");
    assert_eq!(d["reason"]["expires_at"], scope["expires_at"], "{d}");
    Ok(())
}

#[test]
fn decide_asks_with_its_reason_for_an_unknown_an_ended_and_an_unadmitted_session() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["end", "helper"])?;
    fx.ok(&["create", "plain"])?;

    let d = fx.decide("nobody", false, &["ls"])?;
    assert_decision_shape(&d);
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "unknown_session", "{d}");

    // helper inherited trust, but it has ended.
    let d = fx.decide("helper", false, &["ls"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "session_ended", "{d}");

    let d = fx.decide("plain", true, &["ls"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["kind"], "nothing", "{d}");
    assert_eq!(d["reason"]["reads_only"], false, "{d}");
    assert!(d["reason"]["lapsed_epoch"].is_null(), "{d}");
    Ok(())
}

#[test]
fn decide_exits_zero_for_approve_and_ask_with_and_without_json() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["create", "plain"])?;
    for json in [true, false] {
        for (id, verdict) in [("worker", "approve"), ("plain", "ask"), ("nobody", "ask")] {
            let mut args = vec![];
            if json {
                args.push("--json");
            }
            args.extend(["decide", id, "--", "make", "deploy"]);
            let r = fx.run(&args);
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

#[test]
fn decide_writes_nothing() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["create", "plain"])?;
    fx.ok(&["create", "reviewer"])?;
    fx.ok(&["pattern", "add", "reviewer", "npm test"])?;
    fx.ok(&["scope", "grant", "plain", "ops", "--ttl", "1h"])?;
    fx.ok(&["create", "unread", "--by", "conductor"])?;
    fx.ok(&["end", "helper"])?;
    let cases: &[&[&str]] = &[
        &["--json", "decide", "grandchild", "--", "make", "deploy"],
        &["--json", "decide", "conductor", "--read-only", "--", "ls"],
        &["--json", "decide", "reviewer", "--", "npm", "test"],
        &["--json", "decide", "plain", "--", "make", "deploy"],
        &["--json", "decide", "helper", "--", "ls"],
        &["--json", "decide", "nobody", "--", "ls"],
        // Never read: deciding must not materialize its label either.
        &["--json", "decide", "unread", "--", "ls"],
        &["decide", "worker", "--", "ls"],
    ];
    for args in cases {
        ok_unchanged(&fx.db, args)?;
    }
    Ok(())
}

#[test]
fn decide_on_a_spawned_sub_agent_allocates_it_once_with_its_parents_posture_and_then_writes_nothing(
) -> TestResult {
    let fx = trusted_tree()?;
    let d = fx.decide("sub-helper-3", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "trust", "{d}");
    assert_eq!(
        d["reason"]["posture"]["chain"],
        serde_json::json!(["conductor", "helper", "sub-helper-3"]),
        "{d}"
    );
    let spawns = fx.audit(&["--kind", "session.spawn", "--session", "sub-helper-3"])?;
    assert_eq!(spawns.len(), 1, "{spawns:?}");
    assert_eq!(
        spawns[0]["detail"]["inherited_trust"], true,
        "{}",
        spawns[0]
    );
    // Allocated now: a second decision is a pure read.
    ok_unchanged(
        &fx.db,
        &["--json", "decide", "sub-helper-3", "--", "make", "deploy"],
    )?;
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// epochs
// ------------------------------------------------------------------------------------------------

#[test]
fn epoch_show_prints_the_current_epoch() -> TestResult {
    let fx = Fixture::init()?;
    assert_eq!(
        fx.json(&["epoch", "show"])?,
        serde_json::json!({ "epoch": 0 })
    );
    assert!(fx.ok(&["epoch", "show"])?.contains('0'));
    let started = fx.json(&["epoch", "start"])?;
    assert_eq!(started["epoch"], 1, "{started}");
    assert_eq!(
        fx.json(&["epoch", "show"])?,
        serde_json::json!({ "epoch": 1 })
    );
    let text = ok_unchanged(&fx.db, &["epoch", "show"])?;
    assert!(text.contains("current epoch: 1"), "{text:?}");
    Ok(())
}

#[test]
fn a_new_epoch_makes_postures_of_the_older_epoch_ask_with_the_lapsed_epoch() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["create", "reader"])?;
    fx.ok(&["trust", "reader", "--reads"])?;
    let started = fx.json(&["epoch", "start", "--actor", "alice"])?;
    assert_eq!(started["epoch"], 1, "{started}");
    assert_eq!(started["durable"], false, "{started}");
    assert_eq!(started["lapsed"], 7, "{started}");
    assert_eq!(started["carried"], 0, "{started}");

    for id in ["conductor", "grandchild", "bystander"] {
        let d = fx.decide(id, false, &["make", "deploy"])?;
        assert_eq!(d["verdict"], "ask", "{id}: {d}");
        assert_eq!(d["reason"]["kind"], "nothing", "{id}: {d}");
        assert_eq!(d["reason"]["lapsed_epoch"], 0, "{id}: {d}");
        let state = fx.state(id)?;
        assert_eq!(state["trust"], false, "{id}: {state}");
        assert_eq!(state["posture"]["current"], false, "{id}: {state}");
    }
    let d = fx.decide("reader", true, &["ls"])?;
    assert_eq!(d["verdict"], "ask", "{d}");
    assert_eq!(d["reason"]["lapsed_epoch"], 0, "{d}");
    assert_eq!(fx.state("reader")?["trust_reads"], false);

    // A lapsed posture is not inherited either.
    let created = fx.json(&["create", "late", "--by", "conductor"])?;
    assert_eq!(created["inherited_trust"], false, "{created}");
    // A grant in the new epoch counts.
    fx.ok(&["trust", "conductor", "--full"])?;
    let d = fx.decide("conductor", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["posture"]["epoch"], 1, "{d}");
    Ok(())
}

#[test]
fn epoch_start_is_audited_with_how_many_postures_lapsed() -> TestResult {
    let fx = trusted_tree()?;
    fx.ok(&["epoch", "start", "--actor", "alice"])?;
    let rows = fx.audit(&["--kind", "epoch.start"])?;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["actor"], "alice");
    assert_eq!(rows[0]["detail"]["epoch"], 1, "{}", rows[0]);
    assert_eq!(rows[0]["detail"]["lapsed"], 6, "{}", rows[0]);
    assert_eq!(rows[0]["detail"]["durable"], false, "{}", rows[0]);
    Ok(())
}

#[test]
fn a_durable_epoch_start_carries_postures_into_the_new_epoch() -> TestResult {
    let fx = trusted_tree()?;
    let started = fx.json(&["epoch", "start", "--durable"])?;
    assert_eq!(started["epoch"], 1, "{started}");
    assert_eq!(started["durable"], true, "{started}");
    assert_eq!(started["carried"], 6, "{started}");
    assert_eq!(started["lapsed"], 0, "{started}");
    let d = fx.decide("grandchild", false, &["make", "deploy"])?;
    assert_eq!(d["verdict"], "approve", "{d}");
    assert_eq!(d["reason"]["kind"], "trust", "{d}");
    assert_eq!(d["reason"]["posture"]["epoch"], 1, "{d}");
    assert_eq!(
        d["reason"]["posture"]["chain"],
        serde_json::json!(["conductor", "worker", "grandchild"]),
        "{d}"
    );
    assert_eq!(fx.state("conductor")?["trust"], true);
    let created = fx.json(&["create", "late", "--by", "worker"])?;
    assert_eq!(created["inherited_trust"], true, "{created}");
    Ok(())
}

#[test]
fn no_command_but_epoch_start_adds_an_epoch() -> TestResult {
    let fx = Fixture::init()?;
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

#[test]
fn a_preview_token_is_refused_once_an_epoch_started() -> TestResult {
    let fx = trusted_tree()?;
    let preview = fx.json(&["revoke", "conductor", "--preview"])?;
    let token = preview["token"].as_str().ok_or("no token")?;
    fx.ok(&["epoch", "start"])?;
    refused_unchanged(
        &fx.db,
        &["revoke", "conductor", "--cascade", "--token", token],
    )?;
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
fn demo_shows_a_worker_born_with_trust_a_preview_with_its_count_and_the_cascade() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("ledger.db");
    let path = dir.path().join("demo.db");
    let out = ok(
        &db,
        &["demo", "--path", path.to_str().ok_or("non-UTF-8 path")?],
    )?;
    assert!(!db.exists(), "demo touched --db");

    assert!(
        out.contains("born with trust"),
        "the demo shows no worker born with trust:\n{out}"
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
    assert!(
        out.contains("(cascade from conductor)"),
        "no cascade:\n{out}"
    );
    assert_eq!(
        previewed, cascaded,
        "the cascade changed other than the preview said:\n{out}"
    );
    let preview_at = out.find("would change").ok_or("no preview")?;
    let cascade_at = out.find("(cascade from").ok_or("no cascade")?;
    assert!(
        preview_at < cascade_at,
        "the cascade comes before its preview:\n{out}"
    );

    // The demo ledger agrees: after the cascade no session under the conductor holds a posture.
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let cascade_rows: i64 = conn.query_row(
        "SELECT count(*) FROM audit WHERE kind = 'posture.revoke'
            AND json_extract(detail, '$.propagation') = 'cascade'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(u64::try_from(cascade_rows)?, cascaded);
    Ok(())
}
