//! Sessions, lineage, creation bounds and the audit of each change: rules S1, S2 and A1.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use common::{Engine, Fixture, TestResult};
use session_ledger::{
    AuditKind, AuditQuery, Config, Conflict, CreationRefused, Error, IdProblem, InputError,
    ManualClock, Origin, Raise, Taint,
};

fn problem(result: Result<impl std::fmt::Debug, Error>) -> IdProblem {
    match result {
        Err(Error::Input(InputError::InvalidId { problem, .. })) => problem,
        other => panic!("expected InvalidId, got {other:?}"),
    }
}

fn ids_are_validated_at_every_entry_and_bad_ones_change_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let long = "x".repeat(129);
    let cases = [
        ("", IdProblem::Empty),
        (long.as_str(), IdProblem::TooLong),
        ("-a", IdProblem::BadStart),
        ("a b", IdProblem::BadCharacter),
        ("a/b", IdProblem::BadCharacter),
        ("a\0b", IdProblem::BadCharacter),
        ("é", IdProblem::BadStart),
        ("ab\n", IdProblem::BadCharacter),
    ];
    for (id, expected) in cases {
        assert_eq!(
            problem(f.ledger.create_root(id, "test")),
            expected,
            "{id:?}"
        );
        assert_eq!(
            problem(f.ledger.create_child(id, "root", "test")),
            expected,
            "{id:?}"
        );
        assert_eq!(
            problem(f.ledger.create_child("ok", id, "test")),
            expected,
            "{id:?}"
        );
        assert_eq!(problem(f.ledger.state(id)), expected, "{id:?}");
        assert_eq!(problem(f.ledger.stored_label(id)), expected, "{id:?}");
        let raise = Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        };
        assert_eq!(
            problem(f.ledger.raise(id, raise, "test")),
            expected,
            "{id:?}"
        );
        assert_eq!(problem(f.ledger.end(id, "test")), expected, "{id:?}");
        assert_eq!(problem(f.ledger.subtree(id)), expected, "{id:?}");
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn an_id_of_exactly_the_maximum_length_is_accepted(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let id = "x".repeat(session_ledger::MAX_ID_LEN);
    f.ledger.create_root(&id, "test")?;
    assert!(f.ledger.session(&id)?.is_some());
    Ok(())
}

fn the_spawned_form_is_reserved_for_spawned_sub_agents(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    assert_eq!(
        problem(f.ledger.create_root("sub-a-1", "test")),
        IdProblem::ReservedSpawnedForm
    );
    assert_eq!(
        problem(f.ledger.create_child("sub-root-1", "root", "test")),
        IdProblem::ReservedSpawnedForm
    );
    // Ids that only look similar are ordinary ids.
    f.ledger.create_child("sub-x", "root", "test")?;
    Ok(())
}

fn actor_names_are_validated(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    for actor in ["", "has space", &"a".repeat(65), "tab\t"] {
        assert!(
            matches!(
                f.ledger.create_root("r", actor),
                Err(Error::Input(InputError::InvalidActor(_)))
            ),
            "{actor:?}"
        );
    }
    assert_eq!(f.count("sessions"), 0);
    f.ledger.create_root("r", "alice@example.org")?;
    Ok(())
}

fn an_id_that_exists_or_existed_cannot_be_created_again(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a b");
    f.ledger.end("b", "test")?;
    let before = f.snapshot();
    for id in ["root", "a", "b"] {
        assert!(
            matches!(f.ledger.create_root(id, "test"), Err(Error::Conflict(Conflict::SessionExists(ref x))) if x == id),
            "{id}"
        );
        assert!(
            matches!(
                f.ledger.create_child(id, "root", "test"),
                Err(Error::Conflict(Conflict::SessionExists(_)))
            ),
            "{id}"
        );
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn an_ended_session_stays_as_a_tombstone(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.raise("a", Some(Taint::Secret), false);
    let ended = f.ledger.end("a", "test")?;
    assert!(ended.session.ended_at.is_some());
    let again = f.ledger.session("a")?.expect("still recorded");
    assert_eq!(again.ended_at, ended.session.ended_at);
    assert_eq!(f.ledger.state("a")?.taint, Taint::Secret);
    assert_eq!(f.ledger.children("root")?.len(), 1);
    assert!(matches!(
        f.ledger.end("a", "test"),
        Err(Error::Conflict(Conflict::SessionEnded(_)))
    ));
    assert!(matches!(
        f.ledger.end("nobody", "test"),
        Err(Error::Conflict(Conflict::UnknownSession(_)))
    ));
    Ok(())
}

fn an_unknown_or_ended_creator_cannot_create_and_nothing_is_written(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.ledger.end("a", "test")?;
    let before = f.snapshot();
    assert!(matches!(
        f.ledger.create_child("x", "nobody", "test"),
        Err(Error::Conflict(Conflict::UnknownSession(ref c))) if c == "nobody"
    ));
    assert!(matches!(
        f.ledger.create_child("x", "a", "test"),
        Err(Error::Conflict(Conflict::SessionEnded(ref c))) if c == "a"
    ));
    // A spawned id of an unknown session is unknown too, and is not recorded on the way.
    assert!(matches!(
        f.ledger.create_child("x", "sub-nobody-1", "test"),
        Err(Error::Conflict(Conflict::UnknownSession(_)))
    ));
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_spawned_sub_agent_can_create_and_is_recorded_first(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > worker");
    f.ledger.create_child("helper", "sub-worker-2", "test")?;
    assert_eq!(
        f.shape("root"),
        [
            "root (root)",
            "  worker (created)",
            "    sub-worker-2 (spawned)",
            "      helper (created)",
        ]
    );
    Ok(())
}

fn refusals(f: &Fixture) -> Vec<(Option<String>, String)> {
    f.ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreateRefused))
        .expect("audit")
        .into_iter()
        .map(|e| {
            (
                e.session,
                e.detail["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn the_depth_bound_refuses_with_its_own_error_and_an_audit_row_and_nothing_else_changes(
    engine: Engine,
) -> TestResult {
    let f = fixture!(
        engine,
        Config::default().create_if_missing(true).max_depth(2)
    );
    f.build("root > a; a > b");
    let sessions = f.count("sessions");
    let err = f
        .ledger
        .create_child("c", "b", "test")
        .expect_err("too deep");
    assert!(
        matches!(err, Error::Refused(CreationRefused::DepthLimit { ref child, depth: 3, max: 2 }) if child == "c"),
        "{err}"
    );
    assert!(err.is_refusal());
    assert_eq!(f.count("sessions"), sessions);
    assert_eq!(
        refusals(&f),
        [(Some("c".to_owned()), "depth_limit".to_owned())]
    );
    Ok(())
}

fn the_live_children_bound_refuses_with_its_own_error_and_an_audit_row_and_nothing_else_changes(
    engine: Engine,
) -> TestResult {
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .max_live_children(2)
    );
    f.build("root > a b");
    let sessions = f.count("sessions");
    let err = f
        .ledger
        .create_child("c", "root", "test")
        .expect_err("too many");
    assert!(
        matches!(err, Error::Refused(CreationRefused::ChildLimit { ref creator, live: 2, max: 2 }) if creator == "root"),
        "{err}"
    );
    assert_eq!(f.count("sessions"), sessions);
    assert_eq!(
        refusals(&f),
        [(Some("c".to_owned()), "child_limit".to_owned())]
    );
    // Ending a child frees its place; spawned children do not take one.
    f.ledger.end("a", "test")?;
    f.ledger.state("sub-root-1")?;
    f.ledger.create_child("c", "root", "test")?;
    Ok(())
}

fn the_rate_bound_refuses_with_its_own_error_and_an_audit_row_until_the_window_passes(
    engine: Engine,
) -> TestResult {
    let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00.000Z".parse()?));
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .creation_rate(3, Duration::from_secs(60))
            .clock(clock.clone()),
    );
    f.build("root > a b");
    f.ledger.end("a", "test")?; // ended children still count toward the rate
    clock.advance(TimeDelta::seconds(30));
    f.ledger.create_child("c", "root", "test")?;
    let sessions = f.count("sessions");
    let err = f
        .ledger
        .create_child("d", "root", "test")
        .expect_err("too fast");
    assert!(
        matches!(
            err,
            Error::Refused(CreationRefused::RateLimit {
                count: 3,
                max: 3,
                window_secs: 60,
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(f.count("sessions"), sessions);
    assert_eq!(
        refusals(&f),
        [(Some("d".to_owned()), "rate_limit".to_owned())]
    );
    // 61 s after the first two creations, only one remains in the window.
    clock.advance(TimeDelta::seconds(31));
    f.ledger.create_child("d", "root", "test")?;
    Ok(())
}

fn a_refused_create_is_audited_with_its_actor_and_creator(engine: Engine) -> TestResult {
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .max_live_children(0)
    );
    f.ledger.create_root("root", "test")?;
    f.ledger
        .create_child("c", "root", "mallory")
        .expect_err("refused");
    let row = f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreateRefused))?
        .pop()
        .expect("refusal row");
    assert_eq!(row.actor, "mallory");
    assert_eq!(row.detail["creator"], "root");
    assert_eq!(row.detail["limit"], 0);
    Ok(())
}

fn every_change_writes_its_audit_row(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("root", "alice")?;
    f.ledger.create_child("a", "root", "bob")?;
    f.ledger.state("a")?;
    f.ledger.state("sub-a-1")?;
    f.raise("a", Some(Taint::Secret), false);
    f.ledger.end("a", "carol")?;
    let trail: Vec<(String, String, Option<String>)> = f
        .ledger
        .audit(&AuditQuery::all())?
        .into_iter()
        .map(|e| (e.actor, e.kind.to_string(), e.session))
        .collect();
    let expected = [
        ("alice", "session.root", "root"),
        ("bob", "session.create", "a"),
        ("ledger", "label.inherit", "a"),
        ("ledger", "session.spawn", "sub-a-1"),
        ("ledger", "label.inherit", "sub-a-1"),
        ("test", "label.raise", "a"),
        ("carol", "session.end", "a"),
        ("carol", "session.end", "sub-a-1"),
    ]
    .map(|(a, k, s)| (a.to_owned(), k.to_owned(), Some(s.to_owned())));
    assert_eq!(trail, expected);
    let create = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreate))?[0];
    assert_eq!(
        create.detail,
        serde_json::json!({
            "creator": "root",
            "depth": 1,
            "inherited_trust": false,
            "inherited_trust_reads": false,
        })
    );
    let raise = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::LabelRaise))?[0];
    assert_eq!(raise.detail["before"]["taint"], "private");
    assert_eq!(raise.detail["after"]["taint"], "secret");
    Ok(())
}

fn the_audit_query_filters_by_session_kind_and_limit(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a b c");
    let rows = f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreate).limit(2))?;
    let ids: Vec<_> = rows.iter().filter_map(|r| r.session.as_deref()).collect();
    assert_eq!(ids, ["b", "c"]);
    let rows = f.ledger.audit(&AuditQuery::all().session("a"))?;
    assert_eq!(rows.len(), 1);
    assert!(rows[0].seq < f.ledger.audit(&AuditQuery::all().session("c"))?[0].seq);
    Ok(())
}

fn ancestors_children_and_the_subtree_follow_created_by(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > w1 w2; w1 > w1a w1b; w1a > deep; other > x");
    f.ledger.state("sub-w2-1")?;
    assert_eq!(
        f.shape("conductor"),
        [
            "conductor (root)",
            "  w1 (created)",
            "    w1a (created)",
            "      deep (created)",
            "    w1b (created)",
            "  w2 (created)",
            "    sub-w2-1 (spawned)",
        ]
    );
    let ancestors: Vec<_> = f
        .ledger
        .ancestors("deep")?
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ancestors, ["w1a", "w1", "conductor"]);
    assert!(f.ledger.ancestors("conductor")?.is_empty());
    let children: Vec<_> = f.ledger.children("w1")?.into_iter().map(|s| s.id).collect();
    assert_eq!(children, ["w1a", "w1b"]);
    let deep = f.ledger.session("deep")?.expect("deep");
    assert_eq!((deep.depth, deep.origin), (3, Origin::Created));
    let forest: Vec<_> = f
        .ledger
        .forest()?
        .into_iter()
        .map(|e| (e.session.id, e.relative_depth))
        .collect();
    assert_eq!(forest.len(), 9);
    assert_eq!(forest[0], ("conductor".to_owned(), 0));
    assert_eq!(forest[7], ("other".to_owned(), 0));
    assert_eq!(forest[8], ("x".to_owned(), 1));
    assert!(matches!(
        f.ledger.subtree("nobody"),
        Err(Error::Conflict(Conflict::UnknownSession(_)))
    ));
    Ok(())
}

fn a_spawned_id_under_an_ended_session_cannot_create_and_is_not_recorded_by_trying(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > gone");
    f.ledger.end("gone", "test")?;
    let before = f.snapshot();
    let err = f
        .ledger
        .create_child("kid", "sub-gone-1", "test")
        .expect_err("a sub-agent of an ended session");
    assert!(
        matches!(err, Error::Conflict(Conflict::SessionEnded(ref id)) if id == "sub-gone-1"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);
    // Its label can still be read: taint follows the tree whatever the session's state.
    assert!(f.ledger.state("sub-gone-1")?.known);
    Ok(())
}

fn ending_a_session_ends_its_spawned_sub_agents_but_not_its_created_children(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > conductor; conductor > worker");
    f.ledger.state("sub-sub-conductor-1-1")?;
    f.ledger.state("sub-worker-1")?;
    f.ledger.end("conductor", "op")?;
    let live = |id: &str| {
        f.ledger
            .session(id)
            .expect("lookup")
            .expect("recorded")
            .is_live()
    };
    assert!(!live("conductor"));
    assert!(!live("sub-conductor-1"));
    assert!(!live("sub-sub-conductor-1-1"));
    assert!(live("worker"));
    assert!(live("sub-worker-1"));
    let ended = f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionEnd))?;
    let ids: Vec<_> = ended.iter().filter_map(|e| e.session.as_deref()).collect();
    assert_eq!(
        ids,
        ["conductor", "sub-conductor-1", "sub-sub-conductor-1-1"]
    );
    assert_eq!(ended[1].detail["ended_with"], "conductor");
    // A sub-agent first seen after its session ended is recorded as ended.
    f.ledger.state("sub-conductor-2")?;
    assert!(!live("sub-conductor-2"));
    Ok(())
}

fn a_refused_create_by_an_unseen_spawned_creator_records_only_the_refusal(
    engine: Engine,
) -> TestResult {
    let f = fixture!(
        engine,
        Config::default().create_if_missing(true).max_depth(1)
    );
    f.ledger.create_root("r", "test")?;
    let before = f.count("sessions");
    let err = f
        .ledger
        .create_child("kid", "sub-r-1", "test")
        .expect_err("too deep");
    assert!(
        matches!(
            err,
            Error::Refused(CreationRefused::DepthLimit { depth: 2, .. })
        ),
        "{err}"
    );
    assert_eq!(f.count("sessions"), before);
    let kinds: Vec<_> = f
        .ledger
        .audit(&AuditQuery::all())?
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["session.root", "session.create_refused"]);
    Ok(())
}

fn a_clock_that_steps_back_still_lets_a_session_end_and_the_trail_keeps_its_order(
    engine: Engine,
) -> TestResult {
    let clock = Arc::new(ManualClock::new("2026-01-01T00:00:10.000Z".parse()?));
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.ledger.create_root("conductor", "op")?;
    f.ledger
        .grant("conductor", session_ledger::PostureLevel::Trust, "op")?;
    f.ledger.create_child("worker", "conductor", "op")?;
    f.ledger.state("sub-worker-1")?;
    // The wall clock steps back (an NTP correction, a VM restored): the worker and its spawned
    // child were recorded "in the future".
    clock.advance(TimeDelta::seconds(-5));
    let ended = f.ledger.end("worker", "op")?;
    let ended_at = ended.session.ended_at.expect("ended");
    assert!(ended_at >= ended.session.created_at, "{ended:?}");
    for id in ["worker", "sub-worker-1"] {
        assert!(!f.ledger.state(id)?.trust, "{id} kept its trust");
    }
    let trail = f.ledger.audit(&AuditQuery::all())?;
    assert!(
        trail.windows(2).all(|w| w[0].at <= w[1].at),
        "the trail's times go back: {:?}",
        trail.iter().map(|r| r.at).collect::<Vec<_>>()
    );
    Ok(())
}

engine_tests! {
    ids_are_validated_at_every_entry_and_bad_ones_change_nothing,
    an_id_of_exactly_the_maximum_length_is_accepted,
    the_spawned_form_is_reserved_for_spawned_sub_agents,
    actor_names_are_validated,
    an_id_that_exists_or_existed_cannot_be_created_again,
    an_ended_session_stays_as_a_tombstone,
    an_unknown_or_ended_creator_cannot_create_and_nothing_is_written,
    a_spawned_sub_agent_can_create_and_is_recorded_first,
    a_refused_create_is_audited_with_its_actor_and_creator,
    every_change_writes_its_audit_row,
    the_audit_query_filters_by_session_kind_and_limit,
    ancestors_children_and_the_subtree_follow_created_by,
    a_spawned_id_under_an_ended_session_cannot_create_and_is_not_recorded_by_trying,
    ending_a_session_ends_its_spawned_sub_agents_but_not_its_created_children,
    a_refused_create_by_an_unseen_spawned_creator_records_only_the_refusal,
    a_clock_that_steps_back_still_lets_a_session_end_and_the_trail_keeps_its_order,
    the_depth_bound_refuses_with_its_own_error_and_an_audit_row_and_nothing_else_changes,
    the_live_children_bound_refuses_with_its_own_error_and_an_audit_row_and_nothing_else_changes,
    the_rate_bound_refuses_with_its_own_error_and_an_audit_row_until_the_window_passes,
}
