//! Labels: rules L1 to L5.

#[macro_use]
mod common;

use std::sync::{Arc, Barrier};

use common::{Engine, TestResult};
use session_ledger::{
    AuditKind, AuditQuery, Conflict, Error, InputError, Label, Materialized, Raise, Taint,
};

const SECRET_UNTRUSTED: Label = Label {
    taint: Taint::Secret,
    untrusted: true,
};

fn a_root_is_born_private_and_trusted(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > worker");
    let state = f.ledger.state("conductor")?;
    assert_eq!(state.label(), Label::default());
    assert_eq!(state.materialized, Some(Materialized::Born));
    Ok(())
}

fn a_created_child_reads_its_creators_label_on_first_read_and_later_raises_of_the_creator_do_not_reach_it(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > worker");
    f.raise("conductor", Some(Taint::Secret), false);
    let first = f.ledger.state("worker")?;
    assert_eq!(first.taint, Taint::Secret);
    assert_eq!(
        first.materialized,
        Some(Materialized::Inherited {
            from: "conductor".into()
        })
    );
    f.raise("conductor", None, true);
    assert_eq!(
        f.ledger.state("worker")?.label(),
        Label {
            taint: Taint::Secret,
            untrusted: false
        }
    );
    Ok(())
}

fn a_child_is_not_materialized_at_birth(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > worker");
    assert_eq!(f.ledger.stored_label("worker")?, None);
    // So a raise of the creator before the first read does reach it.
    f.raise("conductor", Some(Taint::Secret), false);
    assert_eq!(f.ledger.state("worker")?.taint, Taint::Secret);
    Ok(())
}

fn a_first_read_materializes_every_unmaterialized_session_on_the_path(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a; a > b; b > c");
    f.raise("root", Some(Taint::Secret), true);
    let before = f.count("audit");
    assert_eq!(f.ledger.state("c")?.label(), SECRET_UNTRUSTED);
    for id in ["a", "b", "c"] {
        let stored = f.ledger.stored_label(id)?.expect("materialized");
        assert_eq!(stored.label(), SECRET_UNTRUSTED, "{id}");
        assert_eq!(
            stored.materialized,
            Some(Materialized::Inherited {
                from: "root".into()
            })
        );
    }
    // One label.inherit row per session written, in the same transaction.
    assert_eq!(f.count("audit") - before, 3);
    let inherits = f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::LabelInherit))?;
    let sessions: Vec<_> = inherits.iter().filter_map(|e| e.session.clone()).collect();
    assert_eq!(sessions, ["a", "b", "c"]);
    Ok(())
}

fn a_first_read_stops_at_the_nearest_materialized_ancestor(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a; a > b; b > c");
    f.raise("root", Some(Taint::Secret), false);
    assert_eq!(f.ledger.state("a")?.taint, Taint::Secret);
    // a is materialized now; raising the root again must not reach c through it.
    f.raise("root", None, true);
    let c = f.ledger.state("c")?;
    assert_eq!(
        c.label(),
        Label {
            taint: Taint::Secret,
            untrusted: false
        }
    );
    assert_eq!(
        c.materialized,
        Some(Materialized::Inherited { from: "a".into() })
    );
    Ok(())
}

fn a_later_read_hits_the_stored_row_and_writes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.ledger.state("a")?;
    let before = f.snapshot();
    f.ledger.state("a")?;
    f.ledger.state("root")?;
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_spawned_sub_agent_copies_its_parents_untrusted_flag_and_its_row_now_exists(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("mm-thread > worker");
    f.raise("worker", None, true);
    let state = f.ledger.state("sub-worker-3")?;
    assert!(state.untrusted);
    assert!(state.known);
    let row = f.ledger.session("sub-worker-3")?.expect("row exists");
    assert_eq!(row.created_by.as_deref(), Some("worker"));
    assert_eq!(row.depth, 2);
    assert_eq!(row.origin, session_ledger::Origin::Spawned);
    Ok(())
}

fn a_nested_spawned_id_inherits_through_a_missing_middle_child(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("mm-thread", "test")?;
    f.raise("mm-thread", Some(Taint::Secret), true);
    let state = f.ledger.state("sub-sub-mm-thread-1-2")?;
    assert_eq!(state.label(), SECRET_UNTRUSTED);
    // The whole chain now exists as rows with created_by.
    assert_eq!(
        f.shape("mm-thread"),
        [
            "mm-thread (root)",
            "  sub-mm-thread-1 (spawned)",
            "    sub-sub-mm-thread-1-2 (spawned)",
        ]
    );
    assert_eq!(
        f.ledger.stored_label("sub-mm-thread-1")?.map(|s| s.label()),
        Some(SECRET_UNTRUSTED)
    );
    Ok(())
}

fn a_spawned_id_under_an_unmaterialized_created_child_inherits_through_it(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > worker");
    f.raise("root", Some(Taint::Secret), false);
    assert_eq!(f.ledger.state("sub-worker-1")?.taint, Taint::Secret);
    assert_eq!(
        f.ledger.stored_label("worker")?.map(|s| s.taint),
        Some(Taint::Secret)
    );
    Ok(())
}

fn a_plain_unknown_id_reads_private_and_trusted_and_writes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    for id in ["chat-1", "sub-x", "sub-a-1x", "stranger"] {
        let state = f.ledger.state(id)?;
        assert_eq!(state.label(), Label::default(), "{id}");
        assert!(!state.known, "{id}");
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_spawned_id_whose_chain_reaches_no_recorded_session_reads_the_default_and_writes_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let state = f.ledger.state("sub-sub-ghost-1-2")?;
    assert_eq!(state.label(), Label::default());
    assert!(!state.known);
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn a_raise_of_an_unmaterialized_child_cannot_skip_its_ancestors_taint(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a; a > b");
    f.raise("root", Some(Taint::Secret), false);
    let outcome = f.ledger.raise(
        "b",
        Raise {
            taint: Some(Taint::Public),
            untrusted: true,
        },
        "test",
    )?;
    assert_eq!(outcome.before.taint, Taint::Secret);
    assert_eq!(outcome.after, SECRET_UNTRUSTED);
    assert_eq!(f.ledger.state("b")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

fn a_raise_of_an_unseen_spawned_id_inherits_first(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.raise("root", Some(Taint::Secret), false);
    f.raise("sub-a-1", None, true);
    assert_eq!(f.ledger.state("sub-a-1")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

fn a_raise_takes_the_higher_class_and_ors_the_flag(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("r", "test")?;
    f.raise("r", None, true);
    f.raise("r", Some(Taint::Secret), false);
    assert_eq!(f.ledger.state("r")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

fn a_label_cannot_be_lowered_through_the_api(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("r", "test")?;
    f.raise("r", Some(Taint::Secret), true);
    let before = f.snapshot();
    let outcome = f.ledger.raise(
        "r",
        Raise {
            taint: Some(Taint::Public),
            untrusted: false,
        },
        "test",
    );
    // A request for a lower class cannot lower: it is not even a change, and writes nothing.
    let outcome = outcome?;
    assert!(!outcome.changed);
    assert_eq!(outcome.after, SECRET_UNTRUSTED);
    assert_eq!(f.snapshot(), before);
    assert_eq!(f.ledger.state("r")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

fn a_label_cannot_be_lowered_by_an_update_in_sql(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("r", "test")?;
    f.raise("r", Some(Taint::Secret), true);
    for sql in [
        "UPDATE labels SET taint = 'private' WHERE session_id = 'r'",
        "UPDATE labels SET taint = 'public' WHERE session_id = 'r'",
        "UPDATE labels SET untrusted = false WHERE session_id = 'r'",
        "DELETE FROM labels WHERE session_id = 'r'",
    ] {
        let err = f.exec(sql).expect_err(sql);
        assert!(err.contains("session-ledger"), "{sql}: {err}");
    }
    assert_eq!(f.ledger.state("r")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

fn an_inherited_label_written_in_sql_cannot_be_lower_than_its_source(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("r > c");
    f.raise("r", Some(Taint::Secret), false);
    let err = f
        .exec(
            "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how, inherited_from)
             VALUES ('c', 'public', false, '2026-01-01T00:00:00.000Z', 'inherited', 'r')",
        )
        .expect_err("lower than its source");
    assert!(err.contains("cannot be lower"), "{err}");
    assert_eq!(f.ledger.state("c")?.taint, Taint::Secret);
    Ok(())
}

fn raising_an_unknown_id_is_refused_and_writes_nothing(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let err = f
        .ledger
        .raise(
            "stranger",
            Raise {
                taint: Some(Taint::Secret),
                untrusted: false,
            },
            "test",
        )
        .expect_err("unknown");
    assert!(
        matches!(err, Error::Conflict(Conflict::UnknownSession(ref id)) if id == "stranger"),
        "{err}"
    );
    let err = f
        .ledger
        .raise("a", Raise::default(), "test")
        .expect_err("nothing to raise");
    assert!(
        matches!(err, Error::Input(InputError::NothingToRaise)),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn two_threads_reading_the_same_child_first_both_see_the_same_label_and_it_is_materialized_once(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("root", "test")?;
    f.raise("root", Some(Taint::Secret), false);
    let ledger = Arc::new(f.ledger);
    for round in 0..20 {
        let child = format!("child-{round}");
        ledger.create_child(&child, "root", "test")?;
        let barrier = Arc::new(Barrier::new(2));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (ledger, barrier, child) = (ledger.clone(), barrier.clone(), child.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    ledger.state(&child)
                })
            })
            .collect();
        let mut labels = Vec::new();
        for reader in readers {
            labels.push(reader.join().expect("reader thread")?.label());
        }
        assert_eq!(labels[0], labels[1]);
        assert_eq!(labels[0].taint, Taint::Secret);
        let inherits = ledger.audit(
            &AuditQuery::all()
                .session(child.as_str())
                .kind(AuditKind::LabelInherit),
        )?;
        assert_eq!(inherits.len(), 1, "{child} materialized once");
    }
    Ok(())
}

fn a_label_written_by_hand_cannot_skip_its_creators_taint(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > low; root > high; high > child");
    f.raise("high", Some(Taint::Secret), true);
    for sql in [
        // Naming an unrelated, lower session as the source.
        "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how, inherited_from)
         VALUES ('child', 'private', false, '2026-01-01T00:00:00.000Z', 'inherited', 'root')",
        // A made-up source.
        "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how, inherited_from)
         VALUES ('child', 'public', false, '2026-01-01T00:00:00.000Z', 'inherited', 'nobody')",
        // Born below the default.
        "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('r2', 0, 'root', '2026-01-01T00:00:00.000Z');
         INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
         VALUES ('r2', 'public', false, '2026-01-01T00:00:00.000Z', 'born')",
    ] {
        let err = f.exec(sql).expect_err(sql);
        assert!(err.contains("rule L2") || err.contains("born"), "{sql}: {err}");
    }
    assert_eq!(f.ledger.state("child")?.label(), SECRET_UNTRUSTED);
    Ok(())
}

/// SQLite's shell can turn off CHECK constraints, and replace a row in one statement: neither
/// lowers a label.
#[test]
fn a_hand_edit_in_the_sqlite_shell_that_turns_off_checks_or_replaces_a_row_cannot_lower_a_label(
) -> TestResult {
    let f = common::Fixture::new();
    f.build("root > child");
    f.raise("root", Some(Taint::Secret), true);
    assert_eq!(f.ledger.state("child")?.label(), SECRET_UNTRUSTED);
    let conn = f.sql();
    // With CHECK constraints off, a value outside the lattice has no rank, and a comparison with
    // it is NULL: a lowering through such a value, or a label written with one, must still be
    // refused by the triggers.
    conn.execute_batch("PRAGMA ignore_check_constraints = ON")?;
    for sql in [
        "UPDATE labels SET taint = 'x' WHERE session_id = 'child'",
        "UPDATE labels SET untrusted = -1 WHERE session_id = 'child'",
        "INSERT INTO sessions (id, created_by, depth, origin, created_at)
         VALUES ('c2', 'root', 1, 'created', '2026-01-01T00:00:00.000Z');
         INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how,
                             inherited_from)
         VALUES ('c2', 'x', 1, '2026-01-01T00:00:00.000Z', 'inherited', 'root')",
        "INSERT INTO sessions (id, created_by, depth, origin, created_at)
         VALUES ('c3', 'root', 1, 'created', '2026-01-01T00:00:00.000Z');
         INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
         VALUES ('c3', 'public', 0, '2026-01-01T00:00:00.000Z', 'by hand')",
    ] {
        let err = conn
            .execute_batch(&format!("BEGIN; {sql}; COMMIT;"))
            .expect_err(sql);
        assert!(err.to_string().contains("rule L1"), "{sql}: {err}");
        conn.execute_batch("ROLLBACK").ok();
    }
    let replace = "INSERT OR REPLACE INTO labels
         (session_id, taint, untrusted, materialized_at, materialized_how)
         VALUES ('root', 'public', 0, '2026-01-01T00:00:00.000Z', 'born')";
    let err = conn.execute(replace, []).expect_err(replace);
    assert!(err.to_string().contains("session-ledger"), "{err}");
    assert_eq!(f.ledger.state("child")?.label(), SECRET_UNTRUSTED);
    assert_eq!(f.count("labels"), 2);
    Ok(())
}

engine_tests! {
    a_root_is_born_private_and_trusted,
    a_child_is_not_materialized_at_birth,
    a_first_read_materializes_every_unmaterialized_session_on_the_path,
    a_first_read_stops_at_the_nearest_materialized_ancestor,
    a_later_read_hits_the_stored_row_and_writes_nothing,
    a_spawned_sub_agent_copies_its_parents_untrusted_flag_and_its_row_now_exists,
    a_nested_spawned_id_inherits_through_a_missing_middle_child,
    a_spawned_id_under_an_unmaterialized_created_child_inherits_through_it,
    a_plain_unknown_id_reads_private_and_trusted_and_writes_nothing,
    a_raise_of_an_unmaterialized_child_cannot_skip_its_ancestors_taint,
    a_raise_of_an_unseen_spawned_id_inherits_first,
    a_raise_takes_the_higher_class_and_ors_the_flag,
    a_label_cannot_be_lowered_through_the_api,
    a_label_cannot_be_lowered_by_an_update_in_sql,
    an_inherited_label_written_in_sql_cannot_be_lower_than_its_source,
    raising_an_unknown_id_is_refused_and_writes_nothing,
    a_label_written_by_hand_cannot_skip_its_creators_taint,
    a_created_child_reads_its_creators_label_on_first_read_and_later_raises_of_the_creator_do_not_reach_it,
    a_spawned_id_whose_chain_reaches_no_recorded_session_reads_the_default_and_writes_nothing,
    two_threads_reading_the_same_child_first_both_see_the_same_label_and_it_is_materialized_once,
}
