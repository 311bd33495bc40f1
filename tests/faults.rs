//! Fault injection: a write that fails halfway leaves the ledger exactly as it was, says what
//! went wrong, leaves its pooled connection usable, and succeeds once the fault is gone.
//!
//! The fault is a failpoint between statements: a trigger, installed through a plain
//! connection as a tamperer or a full disk would strike, that aborts the operation's last
//! statement (its audit row) or its first change. Each operation has already executed the
//! statements before it when the fault strikes, so anything not rolled back would show.

mod common;

use std::time::Duration;

use common::{Fixture, TestResult};
use session_ledger::{Config, CreationRefused, Error, PostureLevel, Propagation, Raise, Taint};

/// Where the fault strikes.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// On the audit row, the last statement of every write.
    AuditRow,
    /// On the first write to a session, label, or posture row.
    FirstChange,
}

/// The statements each fault strikes, as (table, event).
fn struck(fault: Fault) -> &'static [(&'static str, &'static str)] {
    match fault {
        Fault::AuditRow => &[("audit", "INSERT")],
        Fault::FirstChange => &[
            ("sessions", "INSERT"),
            ("sessions", "UPDATE"),
            ("labels", "INSERT"),
            ("labels", "UPDATE"),
            ("postures", "INSERT"),
            ("postures", "DELETE"),
            ("command_patterns", "INSERT"),
            ("command_patterns", "DELETE"),
            ("override_scopes", "INSERT"),
            ("override_scopes", "UPDATE"),
            ("epochs", "INSERT"),
        ],
    }
}

fn install(f: &Fixture, fault: Fault) {
    let conn = f.sql();
    for (table, event) in struck(fault) {
        conn.execute_batch(&format!(
            "CREATE TRIGGER failpoint_{table}_{event} BEFORE {event} ON {table}
             BEGIN SELECT RAISE(ABORT, 'failpoint: the disk is full'); END;"
        ))
        .expect("install the failpoint");
    }
}

fn remove(f: &Fixture) {
    let conn = f.sql();
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'failpoint%'")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|r| r.expect("name"))
        .collect();
    for name in names {
        conn.execute_batch(&format!("DROP TRIGGER {name}"))
            .expect("drop failpoint");
    }
}

/// A ledger with something of everything, so each operation has work to undo.
fn scene() -> Fixture {
    let f = Fixture::with(Config::default().max_live_children(3));
    f.ledger.create_root("conductor", "op").expect("root");
    f.ledger
        .grant("conductor", PostureLevel::Trust, "op")
        .expect("grant");
    f.build("conductor > w1 w2; w1 > w1a");
    f.ledger.state("sub-w2-1").expect("spawn");
    f.ledger
        .add_pattern("w1", "npm test", "op")
        .expect("pattern");
    f.ledger
        .grant_scope("w1", "hotfix", Duration::from_secs(3600), "op")
        .expect("scope");
    f
}

/// Runs `op` with each fault: it fails with a clear error and changes nothing; the pool still
/// serves reads; without the fault it succeeds.
fn check<T: std::fmt::Debug>(name: &str, op: impl Fn(&Fixture) -> session_ledger::Result<T>) {
    for fault in [Fault::AuditRow, Fault::FirstChange] {
        let f = scene();
        let before = f.snapshot();
        install(&f, fault);
        let err = op(&f).expect_err(&format!("{name} must fail under {fault:?}"));
        assert!(
            matches!(err, Error::Storage(_)) && err.to_string().contains("failpoint"),
            "{name} under {fault:?}: the error should say what failed: {err}"
        );
        remove(&f);
        assert_eq!(
            f.snapshot(),
            before,
            "{name} under {fault:?} left changes behind"
        );
        // Every pooled connection still works: more reads than the pool has connections.
        for _ in 0..20 {
            f.ledger
                .state("conductor")
                .expect("the pool still serves reads");
        }
        op(&f).unwrap_or_else(|e| panic!("{name} once the fault is gone: {e}"));
        assert!(f.ledger.verify(None).expect("verify").ok);
    }
}

#[test]
fn creating_a_root_that_fails_halfway_changes_nothing() {
    check("create_root", |f| f.ledger.create_root("fresh", "op"));
}

#[test]
fn creating_a_child_that_fails_halfway_changes_nothing_and_copies_no_posture() {
    check("create_child", |f| {
        f.ledger.create_child("w3", "conductor", "op")
    });
}

#[test]
fn a_first_read_that_fails_halfway_materializes_nothing() {
    check("first read", |f| f.ledger.state("w1a"));
}

#[test]
fn a_spawned_first_read_that_fails_halfway_records_nothing() {
    check("spawned first read", |f| f.ledger.state("sub-sub-w1a-1-1"));
}

#[test]
fn a_raise_that_fails_halfway_leaves_the_label() {
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: true,
    };
    check("raise", |f| f.ledger.raise("w1", secret, "op"));
}

#[test]
fn an_end_that_fails_halfway_ends_nothing() {
    check("end", |f| f.ledger.end("w2", "op"));
}

#[test]
fn a_grant_that_fails_halfway_grants_nothing() {
    check("grant", |f| {
        f.ledger.grant("w1a", PostureLevel::TrustReads, "op")
    });
}

#[test]
fn a_local_revoke_that_fails_halfway_revokes_nothing() {
    check("revoke local", |f| {
        f.ledger.revoke("conductor", Propagation::Local, "op")
    });
}

#[test]
fn a_cascade_that_fails_halfway_revokes_nothing() {
    check("revoke cascade", |f| {
        f.ledger
            .revoke("conductor", Propagation::Cascade { token: None }, "op")
    });
}

#[test]
fn a_global_revoke_that_fails_halfway_revokes_nothing() {
    check("revoke_all", |f| f.ledger.revoke_all("op"));
}

#[test]
fn pattern_changes_that_fail_halfway_change_nothing() {
    check("add_pattern", |f| {
        f.ledger.add_pattern("w2", "cargo *", "op")
    });
    check("remove_pattern", |f| {
        f.ledger.remove_pattern("w1", "npm test", "op")
    });
}

#[test]
fn scope_changes_that_fail_halfway_change_nothing() {
    check("grant_scope", |f| {
        f.ledger
            .grant_scope("w2", "window", Duration::from_secs(60), "op")
    });
    check("revoke_scope", |f| {
        f.ledger.revoke_scope("w1", "hotfix", "op")
    });
}

#[test]
fn an_epoch_start_that_fails_halfway_starts_nothing() {
    check("start_epoch", |f| f.ledger.start_epoch("dashboard"));
}

#[test]
fn a_refusal_whose_audit_row_fails_records_nothing() {
    // conductor has 2 live created children and the bound is 3: the third is created, the
    // fourth refused; the refusal's own audit row is what fails here.
    let f = scene();
    f.ledger
        .create_child("w3", "conductor", "op")
        .expect("third child");
    let before = f.snapshot();
    install(&f, Fault::AuditRow);
    let err = f
        .ledger
        .create_child("w4", "conductor", "op")
        .expect_err("fails");
    assert!(err.to_string().contains("failpoint"), "{err}");
    remove(&f);
    assert_eq!(f.snapshot(), before);
    let err = f
        .ledger
        .create_child("w4", "conductor", "op")
        .expect_err("refused");
    assert!(
        matches!(err, Error::Refused(CreationRefused::ChildLimit { .. })),
        "{err}"
    );
}

#[test]
fn a_write_that_fails_does_not_poison_concurrent_work() -> TestResult {
    let f = scene();
    install(&f, Fault::AuditRow);
    let ledger = std::sync::Arc::new(f.ledger);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    ledger.state("conductor").expect("reads go on");
                    assert!(ledger.create_root("x", "op").is_err());
                }
            })
        })
        .collect();
    for r in readers {
        r.join().expect("reader");
    }
    Ok(())
}
