//! Library rules that only the command-line suites used to test, through the binary: each is
//! tested here once, against `Ledger`, so that the CLI suites can keep to what the CLI adds.

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use common::{Engine, Fixture, TestResult};
use session_ledger::{
    AuditEntry, AuditHead, AuditKind, AuditQuery, ChainProblem, Config, Conflict, CreationRefused,
    Error, IdProblem, InputError, ManualClock, PostureLevel, PostureSource, Propagation, Raise,
    Reason, Taint, Verdict,
};

/// A value built for a test, or the error that stopped it.
type Built<T> = Result<T, Box<dyn std::error::Error>>;

const SECRET: Raise = Raise {
    taint: Some(Taint::Secret),
    untrusted: false,
};

const UNTRUSTED: Raise = Raise {
    taint: None,
    untrusted: true,
};

fn cascade() -> Propagation {
    Propagation::CascadeUnchecked
}

fn with_token(token: &str) -> Propagation {
    Propagation::Cascade {
        token: token.to_owned(),
    }
}

/// A clock that moves only when the test moves it.
fn stopped_clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        "2026-01-01T00:00:00.000Z".parse().expect("a time"),
    ))
}

/// A trusted root `conductor` (granted by alice) with `spec` built under it.
fn trust_conductor(f: &Fixture, spec: &str) -> Built<()> {
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build(spec);
    Ok(())
}

fn approves(f: &Fixture, id: &str) -> Built<bool> {
    Ok(f.ledger.decide(id, "make deploy", false)?.verdict == Verdict::Approve)
}

/// The ids of `rows`, each once, in the order they first appear.
fn sessions_of(rows: &[AuditEntry]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in rows.iter().filter_map(|r| r.session.clone()) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

// ------------------------------------------------------------------------------------------------
// sessions and labels
// ------------------------------------------------------------------------------------------------

fn an_id_may_hold_dots_underscores_and_colons_but_not_start_with_one_nor_hold_other_punctuation(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    for (id, expected) in [
        (".hidden", IdProblem::BadStart),
        ("_x", IdProblem::BadStart),
        ("a;b", IdProblem::BadCharacter),
        ("x'y", IdProblem::BadCharacter),
    ] {
        let r = f.ledger.create_root(id, "test");
        assert!(
            matches!(r, Err(Error::Input(InputError::InvalidId { problem, .. })) if problem == expected),
            "{id:?}"
        );
    }
    assert_eq!(f.count("sessions"), 0);
    f.ledger.create_root("a.b_c:d", "test")?;
    Ok(())
}

fn a_nested_spawned_id_is_reserved_and_ids_that_only_look_spawned_can_be_created(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let r = f.ledger.create_child("sub-sub-root-1-2", "root", "test");
    assert!(
        matches!(
            r,
            Err(Error::Input(InputError::InvalidId {
                problem: IdProblem::ReservedSpawnedForm,
                ..
            }))
        ),
        "{r:?}"
    );
    assert_eq!(f.snapshot(), before);
    for id in ["sub-a-1x", "chat-1"] {
        let created = f.ledger.create_child(id, "root", "test")?;
        assert_eq!(
            created.session.origin,
            session_ledger::Origin::Created,
            "{id}"
        );
    }
    Ok(())
}

fn a_create_refused_because_its_id_is_taken_does_not_record_its_unseen_spawned_creator(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let r = f.ledger.create_child("a", "sub-root-1", "test");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::SessionExists(ref id))) if id == "a"),
        "{r:?}"
    );
    assert_eq!(f.snapshot(), before, "sub-root-1 was recorded on the way");
    Ok(())
}

#[test]
fn a_taint_class_is_one_of_three_lower_case_words() {
    for (word, taint) in [
        ("public", Taint::Public),
        ("private", Taint::Private),
        ("secret", Taint::Secret),
    ] {
        assert_eq!(word.parse::<Taint>().ok(), Some(taint), "{word}");
    }
    for bad in ["top", "Secret", "", "secret "] {
        assert!(
            matches!(bad.parse::<Taint>(), Err(Error::Input(InputError::InvalidTaint(ref w))) if w == bad),
            "{bad:?}"
        );
    }
}

fn raising_a_spawned_id_of_an_unknown_session_is_refused_and_records_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let r = f.ledger.raise("sub-nobody-1", UNTRUSTED, "test");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::UnknownSession(_)))),
        "{r:?}"
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn an_invalid_actor_is_refused_by_every_write_and_changes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.ledger.state("root")?;
    let before = f.snapshot();
    let too_long = "e".repeat(65);
    for actor in ["", "two words", too_long.as_str(), "x/y"] {
        let outcomes = [
            f.ledger.create_root("fresh", actor).map(drop),
            f.ledger.create_child("fresh", "root", actor).map(drop),
            f.ledger.raise("root", SECRET, actor).map(drop),
            // `a` is not materialized: a refused raise must not materialize it either.
            f.ledger.raise("a", UNTRUSTED, actor).map(drop),
            f.ledger.end("a", actor).map(drop),
        ];
        for r in outcomes {
            assert!(
                matches!(r, Err(Error::Input(InputError::InvalidActor(_)))),
                "{actor:?}: {r:?}"
            );
        }
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn the_default_bound_is_fifty_live_children_and_a_refused_create_under_trust_inherits_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > w0")?;
    for i in 1..50 {
        f.ledger
            .create_child(&format!("w{i}"), "conductor", "alice")?;
    }
    let (sessions, postures) = (f.count("sessions"), f.count("postures"));
    let err = f
        .ledger
        .create_child("w50", "conductor", "bob")
        .expect_err("the 51st live child");
    assert!(
        matches!(
            err,
            Error::Refused(CreationRefused::ChildLimit {
                live: 50,
                max: 50,
                ..
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("50"), "{err}");
    assert_eq!(
        (f.count("sessions"), f.count("postures")),
        (sessions, postures)
    );
    let refused = f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreateRefused))?;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].session.as_deref(), Some("w50"));
    assert_eq!(refused[0].actor, "bob");
    assert_eq!(refused[0].detail["creator"], "conductor");
    assert_eq!(refused[0].detail["inherited_trust"], false);
    assert_eq!(refused[0].detail["inherited_trust_reads"], false);
    // Ending one child frees a place.
    f.ledger.end("w0", "alice")?;
    f.ledger.create_child("w50", "conductor", "alice")?;
    Ok(())
}

fn an_error_that_quotes_a_long_value_cuts_it_to_a_readable_length_with_its_full_length(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > worker");
    let id = "a".repeat(10_000);
    for r in [
        f.ledger.state(&id).map(drop),
        f.ledger.create_root(&id, "test").map(drop),
        f.ledger.create_child("fresh", &id, "test").map(drop),
        f.ledger.tree(&id).map(drop),
    ] {
        let message = r.expect_err("a 10,000-character id").to_string();
        assert!(message.len() < 200, "{} bytes", message.len());
        assert!(
            message.contains(&format!("\"{}", "a".repeat(40)))
                && message.contains("a…\" (10000 characters)")
                && message.contains("longer than 128 characters"),
            "{message}"
        );
    }
    let long = "x".repeat(5_000);
    let errors = [
        f.ledger.create_root("fresh", &long).map(drop),
        long.parse::<Taint>().map(drop),
        f.ledger.add_pattern("conductor", &long, "test").map(drop),
        f.ledger
            .grant_scope("conductor", &long, Duration::from_secs(60), "test")
            .map(drop),
        session_ledger::parse_ttl(&"9".repeat(5_000)).map(drop),
        f.ledger
            .revoke("conductor", with_token(&long), "test")
            .map(drop),
        long.parse::<AuditHead>().map(drop),
        Err(Error::Input(InputError::InvalidTime(long.clone()))),
    ];
    for r in errors {
        let message = r.expect_err("a 5,000-character value").to_string();
        assert!(message.len() < 300, "{} bytes: {message}", message.len());
        assert!(message.contains("…\" (5000 characters)"), "{message}");
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// postures, revocation and decisions
// ------------------------------------------------------------------------------------------------

fn the_create_audit_row_of_a_child_born_under_trust_reads_records_inherited_trust_reads(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("reader", "op")?;
    f.ledger.grant("reader", PostureLevel::TrustReads, "op")?;
    f.ledger.create_child("worker", "reader", "op")?;
    let create = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::SessionCreate))?[0];
    assert_eq!(create.detail["inherited_trust"], false, "{create:?}");
    assert_eq!(create.detail["inherited_trust_reads"], true, "{create:?}");
    Ok(())
}

fn two_previews_of_the_same_state_give_the_same_token(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker; worker > helper")?;
    let first = f.ledger.revoke("conductor", Propagation::Preview, "op")?;
    let again = f.ledger.revoke("conductor", Propagation::Preview, "op")?;
    assert!(first.token.is_some());
    assert_eq!(first.token, again.token);
    Ok(())
}

fn a_cascade_token_applies_only_to_the_latest_preview_of_its_own_root_in_the_same_epoch(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    let preview = f.ledger.revoke("conductor", Propagation::Preview, "op")?;
    let token = preview.token.expect("a preview's token");
    let before = f.snapshot();
    let r = f.ledger.revoke("worker", with_token(&token), "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::StalePreview { .. }))),
        "another root: {r:?}"
    );
    for malformed in ["abc", &"A".repeat(64), ""] {
        let r = f.ledger.revoke("conductor", with_token(malformed), "op");
        assert!(
            matches!(r, Err(Error::Input(InputError::InvalidToken(_)))),
            "{malformed:?}: {r:?}"
        );
    }
    let r = f
        .ledger
        .revoke("conductor", with_token(&"0".repeat(64)), "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::StalePreview { .. }))),
        "no such preview: {r:?}"
    );
    assert_eq!(f.snapshot(), before, "a refused cascade changed something");
    f.ledger.start_epoch("dashboard")?;
    let r = f.ledger.revoke("conductor", with_token(&token), "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::StalePreview { .. }))),
        "a new epoch: {r:?}"
    );
    Ok(())
}

fn a_local_revoke_counts_spawned_descendants_among_those_still_holding(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    f.ledger.state("sub-worker-1")?;
    f.ledger.state("sub-sub-conductor-2-1")?;
    let r = f.ledger.revoke("conductor", Propagation::Local, "op")?;
    let mut holding: Vec<String> = r
        .still_holding
        .expect("a local revoke lists who still holds")
        .into_iter()
        .map(|a| a.id)
        .collect();
    holding.sort();
    assert_eq!(
        holding,
        [
            "sub-conductor-2",
            "sub-sub-conductor-2-1",
            "sub-worker-1",
            "worker"
        ]
    );
    assert!(approves(&f, "sub-worker-1")? && approves(&f, "sub-sub-conductor-2-1")?);
    Ok(())
}

fn revoking_an_unknown_or_malformed_session_is_refused_for_every_propagation(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    let before = f.snapshot();
    for how in [Propagation::Local, Propagation::Preview, cascade()] {
        let r = f.ledger.revoke("nobody", how.clone(), "op");
        assert!(
            matches!(r, Err(Error::Conflict(Conflict::UnknownSession(_)))),
            "{how:?}: {r:?}"
        );
        let r = f.ledger.revoke("bad id", how.clone(), "op");
        assert!(
            matches!(r, Err(Error::Input(InputError::InvalidId { .. }))),
            "{how:?}: {r:?}"
        );
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_global_revoke_with_no_posture_left_changes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    assert_eq!(f.ledger.revoke_all("op")?.count, 2);
    let before = f.snapshot();
    let again = f.ledger.revoke_all("op")?;
    assert_eq!((again.count, again.sessions.len()), (0, 0));
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_decision_names_a_direct_grant_with_a_chain_of_one_and_under_trust_reads_says_reads_only(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("bystander", "op")?;
    f.ledger.grant("bystander", PostureLevel::Trust, "bob")?;
    let d = f.ledger.decide("bystander", "rm -rf build", false)?;
    let Reason::Trust { posture } = d.reason else {
        panic!("expected trust, got {:?}", d.reason);
    };
    assert_eq!(posture.source, PostureSource::Granted);
    assert_eq!(posture.granted_by, "bob");
    assert_eq!(posture.chain, ["bystander"]);

    f.ledger.create_root("reader", "op")?;
    f.ledger.grant("reader", PostureLevel::TrustReads, "op")?;
    f.ledger.create_child("reader-child", "reader", "op")?;
    let d = f.ledger.decide("reader-child", "cat README.md", true)?;
    let Reason::TrustReads { posture, .. } = d.reason else {
        panic!("expected trust_reads, got {:?}", d.reason);
    };
    assert_eq!(posture.chain, ["reader", "reader-child"]);
    let d = f.ledger.decide("reader-child", "rm README.md", false)?;
    assert_eq!(d.verdict, Verdict::Ask);
    assert!(
        matches!(
            d.reason,
            Reason::Nothing {
                reads_only: true,
                ..
            }
        ),
        "{:?}",
        d.reason
    );
    Ok(())
}

fn a_decision_writes_nothing_for_an_unread_child_an_ended_session_or_a_scope(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > unread helper")?;
    f.ledger.end("helper", "op")?;
    f.ledger.create_root("plain", "op")?;
    f.ledger
        .grant_scope("plain", "ops", Duration::from_secs(3_600), "op")?;
    let before = f.snapshot();
    for id in ["unread", "helper", "plain"] {
        f.ledger.decide(id, "make deploy", false)?;
        f.ledger.decide(id, "ls", true)?;
    }
    assert_eq!(f.snapshot(), before);
    assert_eq!(
        f.ledger.stored_label("unread")?,
        None,
        "deciding materialized it"
    );
    Ok(())
}

fn a_decision_on_an_unseen_spawned_id_records_it_once_with_its_parents_posture(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > helper")?;
    let d = f.ledger.decide("sub-helper-3", "make deploy", false)?;
    let Reason::Trust { posture } = d.reason else {
        panic!("expected trust, got {:?}", d.reason);
    };
    assert_eq!(posture.chain, ["conductor", "helper", "sub-helper-3"]);
    let spawns = f.ledger.audit(
        &AuditQuery::all()
            .session("sub-helper-3")
            .kind(AuditKind::SessionSpawn),
    )?;
    assert_eq!(spawns.len(), 1, "{spawns:?}");
    assert_eq!(spawns[0].detail["inherited_trust"], true);
    let before = f.snapshot();
    f.ledger.decide("sub-helper-3", "make deploy", false)?;
    assert_eq!(f.snapshot(), before, "a second decision wrote");
    Ok(())
}

fn a_new_epoch_shows_older_postures_as_lapsed_audits_itself_and_stamps_new_grants(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    f.ledger.create_root("reader", "op")?;
    f.ledger.grant("reader", PostureLevel::TrustReads, "op")?;
    let start = f.ledger.start_epoch("alice")?;
    assert_eq!((start.epoch, start.durable, start.lapsed), (1, false, 3));
    for id in ["conductor", "worker", "reader"] {
        let state = f.ledger.state(id)?;
        assert!(!state.trust && !state.trust_reads, "{id}: {state:?}");
        let posture = state.posture.expect("the lapsed posture is still shown");
        assert!(!posture.current, "{id}: {posture:?}");
    }
    let d = f.ledger.decide("reader", "ls", true)?;
    assert!(
        matches!(
            d.reason,
            Reason::Nothing {
                lapsed_epoch: Some(0),
                ..
            }
        ),
        "{:?}",
        d.reason
    );
    let row = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::EpochStart))?[0];
    assert_eq!(row.actor, "alice");
    assert_eq!(row.session, None);
    assert_eq!(
        row.detail,
        serde_json::json!({ "epoch": 1, "durable": false, "lapsed": 3, "carried": 0 })
    );
    assert_eq!(
        f.ledger
            .grant("conductor", PostureLevel::Trust, "op")?
            .epoch,
        1
    );
    Ok(())
}

fn a_durable_epoch_carries_each_posture_with_its_chain_and_children_still_inherit_it(
    engine: Engine,
) -> TestResult {
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .durable_postures(true)
    );
    f.ledger.create_root("conductor", "op")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build("conductor > worker; worker > grandchild");
    let start = f.ledger.start_epoch("dashboard")?;
    assert_eq!((start.epoch, start.durable, start.carried), (1, true, 3));
    let d = f.ledger.decide("grandchild", "make deploy", false)?;
    let Reason::Trust { posture } = d.reason else {
        panic!("expected trust, got {:?}", d.reason);
    };
    assert_eq!(posture.epoch, 1);
    assert_eq!(posture.chain, ["conductor", "worker", "grandchild"]);
    assert!(
        f.ledger
            .create_child("late", "worker", "op")?
            .inherited_trust
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// grants
// ------------------------------------------------------------------------------------------------

fn grants_on_an_unknown_session_or_a_spawned_id_of_an_unknown_or_ended_one_are_refused(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > helper")?;
    f.ledger.end("helper", "op")?;
    let before = f.snapshot();
    let hour = Duration::from_secs(3_600);
    for (id, unknown) in [
        ("nobody", true),
        ("sub-nobody-1", true),
        ("sub-helper-1", false),
    ] {
        for r in [
            f.ledger.grant(id, PostureLevel::Trust, "op").map(drop),
            f.ledger.grant(id, PostureLevel::TrustReads, "op").map(drop),
            f.ledger.add_pattern(id, "npm test", "op").map(drop),
            f.ledger.grant_scope(id, "ops", hour, "op").map(drop),
        ] {
            let refused = if unknown {
                matches!(r, Err(Error::Conflict(Conflict::UnknownSession(_))))
            } else {
                matches!(r, Err(Error::Conflict(Conflict::SessionEnded(_))))
            };
            assert!(refused, "{id}: {r:?}");
        }
    }
    assert_eq!(f.snapshot(), before, "a refused grant recorded something");
    Ok(())
}

fn pattern_and_scope_changes_are_audited_and_adding_a_pattern_twice_writes_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("reviewer", "op")?;
    assert!(f.ledger.add_pattern("reviewer", "npm test", "alice")?);
    let before = f.snapshot();
    assert!(!f.ledger.add_pattern("reviewer", "npm test", "bob")?);
    assert_eq!(
        f.snapshot(),
        before,
        "adding a pattern it had wrote something"
    );
    f.ledger.remove_pattern("reviewer", "npm test", "carol")?;
    f.ledger
        .grant_scope("reviewer", "deploy:prod", Duration::from_secs(900), "dave")?;
    let rows: Vec<(String, String)> = f
        .ledger
        .audit(&AuditQuery::all().session("reviewer"))?
        .into_iter()
        .map(|r| (r.kind.to_string(), r.actor))
        .collect();
    let expected = [
        ("session.root", "op"),
        ("pattern.add", "alice"),
        ("pattern.remove", "carol"),
        ("scope.grant", "dave"),
    ]
    .map(|(k, a)| (k.to_owned(), a.to_owned()));
    assert_eq!(rows, expected);
    let removed = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::PatternRemove))?[0];
    assert_eq!(removed.detail["pattern"], "npm test");
    let granted = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::ScopeGrant))?[0];
    assert_eq!(granted.detail["scope"], "deploy:prod");
    Ok(())
}

fn a_scope_name_is_checked_on_grant_and_revoke_and_what_a_session_lacks_cannot_be_removed(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("conductor", "op")?;
    f.ledger
        .grant_scope("conductor", "ops", Duration::from_secs(900), "op")?;
    let before = f.snapshot();
    let too_long = "s".repeat(65);
    for name in ["", ".leading", "a/b", too_long.as_str()] {
        let r = f
            .ledger
            .grant_scope("conductor", name, Duration::from_secs(900), "op");
        assert!(
            matches!(r, Err(Error::Input(InputError::InvalidScopeName(_)))),
            "{name:?}: {r:?}"
        );
    }
    let r = f.ledger.revoke_scope("conductor", "bad name", "op");
    assert!(
        matches!(r, Err(Error::Input(InputError::InvalidScopeName(_)))),
        "{r:?}"
    );
    let r = f.ledger.revoke_scope("conductor", "nope", "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::UnknownScope { .. }))),
        "{r:?}"
    );
    let r = f.ledger.remove_pattern("conductor", "", "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::UnknownPattern { .. }))),
        "{r:?}"
    );
    assert_eq!(f.snapshot(), before);
    f.ledger
        .grant_scope("conductor", &"s".repeat(64), Duration::from_secs(900), "op")?;
    Ok(())
}

fn a_revoked_scope_stays_listed_with_its_revocation_time_and_cannot_be_revoked_again(
    engine: Engine,
) -> TestResult {
    let clock = stopped_clock();
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.ledger.create_root("conductor", "op")?;
    f.ledger
        .grant_scope("conductor", "ops", Duration::from_secs(7_200), "op")?;
    clock.advance(TimeDelta::seconds(5));
    f.ledger.revoke_scope("conductor", "ops", "alice")?;
    let scopes = f.ledger.scopes("conductor")?;
    assert_eq!(scopes.len(), 1, "{scopes:?}");
    assert_eq!(
        scopes[0].revoked_at,
        Some(scopes[0].granted_at + TimeDelta::seconds(5))
    );
    let revoke = &f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::ScopeRevoke))?[0];
    assert_eq!(revoke.actor, "alice");
    let r = f.ledger.revoke_scope("conductor", "ops", "op");
    assert!(
        matches!(r, Err(Error::Conflict(Conflict::UnknownScope { .. }))),
        "{r:?}"
    );
    Ok(())
}

fn a_spawned_sub_agent_gets_none_of_its_parents_scopes(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("conductor", "op")?;
    f.ledger
        .grant_scope("conductor", "ops", Duration::from_secs(3_600), "op")?;
    assert!(approves(&f, "conductor")?);
    let d = f.ledger.decide("sub-conductor-1", "make deploy", false)?;
    assert_eq!(d.verdict, Verdict::Ask, "{d:?}");
    assert!(f.ledger.scopes("sub-conductor-1")?.is_empty());
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// the audit trail
// ------------------------------------------------------------------------------------------------

fn editing_a_rows_detail_session_or_time_is_a_hash_mismatch_at_that_row(
    engine: Engine,
) -> TestResult {
    for set in [
        "detail = '{}'",
        "session_id = NULL",
        "at = '2000-01-01T00:00:00.000Z'",
    ] {
        let f = fixture!(engine);
        trust_conductor(&f, "conductor > worker; worker > helper")?;
        let seq = f
            .ledger
            .audit(&AuditQuery::all().kind(AuditKind::PostureGrant))?[0]
            .seq;
        f.tamper(&format!("UPDATE audit SET {set} WHERE seq = {seq}"));
        let v = f.ledger.verify(None)?;
        assert_eq!(
            (v.first_bad_seq, v.problem),
            (Some(seq), Some(ChainProblem::HashMismatch)),
            "{set}"
        );
    }
    Ok(())
}

fn a_verification_that_finds_a_gap_still_counts_every_row_it_read(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > w1 w2 w3; w1 > w1a")?;
    let last = f.ledger.audit_head()?.seq;
    f.tamper(&format!("DELETE FROM audit WHERE seq = {}", last / 2));
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem, v.rows as i64),
        (Some(last / 2 + 1), Some(ChainProblem::Gap), last - 1)
    );
    Ok(())
}

#[test]
fn a_saved_head_is_refused_unless_it_is_a_seq_a_colon_and_sixty_four_lower_case_hex_digits() {
    let hash = "a".repeat(64);
    for bad in [
        format!("12:{}", &hash[1..]),
        format!("12:{hash}0"),
        format!(":{hash}"),
        format!(" 12:{hash}"),
        ":".to_owned(),
        "x:y".to_owned(),
    ] {
        assert!(
            matches!(bad.parse::<AuditHead>(), Err(Error::Input(InputError::InvalidHead(ref h))) if *h == bad),
            "{bad:?}"
        );
    }
}

fn a_head_saved_before_later_changes_still_verifies_and_the_answer_gives_the_current_head(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    let saved = f.ledger.audit_head()?;
    f.ledger.create_root("late", "dave")?;
    f.ledger.revoke("conductor", cascade(), "carol")?;
    let v = f.ledger.verify(Some(&saved))?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.head, f.ledger.audit_head()?);
    assert!(v.head.seq > saved.seq);
    Ok(())
}

/// conductor > worker-1 worker-2; worker-1 > worker-1a; spawned sub-worker-1-1 and
/// sub-sub-worker-1-2-1 (with its missing middle); other > other-child; and an epoch start,
/// a row about no session.
fn grow_forest(f: &Fixture) -> Built<()> {
    trust_conductor(f, "conductor > worker-1 worker-2; worker-1 > worker-1a")?;
    f.ledger.state("sub-worker-1-1")?;
    f.ledger.state("sub-sub-worker-1-2-1")?;
    f.build("other > other-child");
    f.ledger.start_epoch("dashboard")?;
    Ok(())
}

fn the_audit_of_a_subtree_takes_in_spawned_and_nested_spawned_descendants_and_nothing_else(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    grow_forest(&f)?;
    let all = f.ledger.audit(&AuditQuery::all())?;
    let about = |ids: &[&str]| -> Vec<AuditEntry> {
        let mine = |r: &&AuditEntry| r.session.as_deref().is_some_and(|s| ids.contains(&s));
        all.iter().filter(mine).cloned().collect()
    };
    let subtree = |root: &str| f.ledger.audit(&AuditQuery::all().subtree(root));
    let worker_1 = [
        "worker-1",
        "worker-1a",
        "sub-worker-1-1",
        "sub-worker-1-2",
        "sub-sub-worker-1-2-1",
    ];
    let rows = subtree("worker-1")?;
    assert_eq!(sessions_of(&rows).len(), worker_1.len(), "{rows:?}");
    assert_eq!(rows, about(&worker_1));
    let mut conductor = worker_1.to_vec();
    conductor.extend(["conductor", "worker-2"]);
    // Neither the other tree nor the epoch start, a row about no session.
    assert_eq!(subtree("conductor")?, about(&conductor));
    assert_eq!(
        subtree("sub-worker-1-2")?,
        about(&["sub-worker-1-2", "sub-sub-worker-1-2-1"])
    );
    assert_eq!(subtree("worker-1a")?, about(&["worker-1a"]));
    let newest = f
        .ledger
        .audit(&AuditQuery::all().subtree("worker-1").limit(2))?;
    assert_eq!(newest, rows[rows.len() - 2..]);
    Ok(())
}

fn the_audit_of_an_unknown_subtree_is_empty_and_records_nothing_and_of_a_malformed_id_refused(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    grow_forest(&f)?;
    let before = f.snapshot();
    for id in ["nobody", "sub-worker-1-9"] {
        assert!(
            f.ledger.audit(&AuditQuery::all().subtree(id))?.is_empty(),
            "{id}"
        );
    }
    assert_eq!(
        f.snapshot(),
        before,
        "looking recorded the spawned-looking id"
    );
    for bad in ["a b", "", "a/b", &"x".repeat(129)] {
        let r = f.ledger.audit(&AuditQuery::all().subtree(bad));
        assert!(
            matches!(r, Err(Error::Input(InputError::InvalidId { .. }))),
            "{bad:?}: {r:?}"
        );
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// explain
// ------------------------------------------------------------------------------------------------

fn explain_lists_only_the_scopes_still_live(engine: Engine) -> TestResult {
    let clock = stopped_clock();
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.ledger.create_root("conductor", "op")?;
    let hours = Duration::from_secs(7_200);
    f.ledger
        .grant_scope("conductor", "hotfix", hours, "alice")?;
    f.ledger
        .grant_scope("conductor", "withdrawn", hours, "bob")?;
    f.ledger.revoke_scope("conductor", "withdrawn", "bob")?;
    f.ledger
        .grant_scope("conductor", "brief", Duration::from_secs(1), "bob")?;
    clock.advance(TimeDelta::seconds(2));
    let names: Vec<String> = f
        .ledger
        .explain("conductor")?
        .live_scopes
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["hotfix"]);
    Ok(())
}

fn explain_after_a_cascade_shows_no_posture_and_no_grant_and_lists_the_revocation_row(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    trust_conductor(&f, "conductor > worker")?;
    f.ledger.revoke("conductor", cascade(), "carol")?;
    let e = f.ledger.explain("worker")?;
    assert_eq!(e.state.posture, None);
    assert_eq!(e.grant, None);
    let revoke = e
        .audit
        .iter()
        .find(|r| r.kind == "posture.revoke")
        .expect("the revocation row");
    assert_eq!(revoke.actor, "carol");
    assert_eq!(revoke.detail["propagation"], "cascade");
    Ok(())
}

fn explain_writes_nothing_and_refuses_an_unknown_or_unrecorded_spawned_id(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    grow_forest(&f)?;
    let before = f.snapshot();
    for id in ["worker-2", "conductor", "sub-sub-worker-1-2-1"] {
        f.ledger.explain(id)?;
    }
    assert!(f.ledger.explain("worker-2")?.state.materialized.is_none());
    for id in ["nobody", "sub-worker-1-9", "sub-sub-worker-2-4-1"] {
        let r = f.ledger.explain(id);
        assert!(
            matches!(r, Err(Error::Conflict(Conflict::UnknownSession(ref s))) if s == id),
            "{id}: {r:?}"
        );
    }
    assert_eq!(f.snapshot(), before);
    // The first real read still inherits, from the conductor as it is now.
    f.ledger.raise("conductor", SECRET, "op")?;
    assert_eq!(f.ledger.state("worker-2")?.taint, Taint::Secret);
    Ok(())
}

engine_tests! {
    a_nested_spawned_id_is_reserved_and_ids_that_only_look_spawned_can_be_created,
    raising_a_spawned_id_of_an_unknown_session_is_refused_and_records_nothing,
    an_invalid_actor_is_refused_by_every_write_and_changes_nothing,
    pattern_and_scope_changes_are_audited_and_adding_a_pattern_twice_writes_nothing,
    a_spawned_sub_agent_gets_none_of_its_parents_scopes,
    an_id_may_hold_dots_underscores_and_colons_but_not_start_with_one_nor_hold_other_punctuation,
    a_create_refused_because_its_id_is_taken_does_not_record_its_unseen_spawned_creator,
    the_default_bound_is_fifty_live_children_and_a_refused_create_under_trust_inherits_nothing,
    an_error_that_quotes_a_long_value_cuts_it_to_a_readable_length_with_its_full_length,
    the_create_audit_row_of_a_child_born_under_trust_reads_records_inherited_trust_reads,
    two_previews_of_the_same_state_give_the_same_token,
    a_cascade_token_applies_only_to_the_latest_preview_of_its_own_root_in_the_same_epoch,
    a_local_revoke_counts_spawned_descendants_among_those_still_holding,
    revoking_an_unknown_or_malformed_session_is_refused_for_every_propagation,
    a_global_revoke_with_no_posture_left_changes_nothing,
    a_decision_names_a_direct_grant_with_a_chain_of_one_and_under_trust_reads_says_reads_only,
    a_decision_writes_nothing_for_an_unread_child_an_ended_session_or_a_scope,
    a_decision_on_an_unseen_spawned_id_records_it_once_with_its_parents_posture,
    a_new_epoch_shows_older_postures_as_lapsed_audits_itself_and_stamps_new_grants,
    a_durable_epoch_carries_each_posture_with_its_chain_and_children_still_inherit_it,
    grants_on_an_unknown_session_or_a_spawned_id_of_an_unknown_or_ended_one_are_refused,
    a_scope_name_is_checked_on_grant_and_revoke_and_what_a_session_lacks_cannot_be_removed,
    a_revoked_scope_stays_listed_with_its_revocation_time_and_cannot_be_revoked_again,
    editing_a_rows_detail_session_or_time_is_a_hash_mismatch_at_that_row,
    a_verification_that_finds_a_gap_still_counts_every_row_it_read,
    a_head_saved_before_later_changes_still_verifies_and_the_answer_gives_the_current_head,
    explain_lists_only_the_scopes_still_live,
    explain_after_a_cascade_shows_no_posture_and_no_grant_and_lists_the_revocation_row,
    the_audit_of_a_subtree_takes_in_spawned_and_nested_spawned_descendants_and_nothing_else,
    the_audit_of_an_unknown_subtree_is_empty_and_records_nothing_and_of_a_malformed_id_refused,
    explain_writes_nothing_and_refuses_an_unknown_or_unrecorded_spawned_id,
}
