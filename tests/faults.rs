//! Fault injection: a write that fails halfway leaves the ledger exactly as it was, says what
//! went wrong, leaves its pooled connection usable, and succeeds once the fault is gone.
//!
//! The fault is a failpoint between statements: a trigger, installed through a plain
//! connection as a tamperer or a full disk would strike, that aborts the operation's last
//! statement (its audit row) or its first change. Each operation has already executed the
//! statements before it when the fault strikes, so anything not rolled back would show.
//!
//! On PostgreSQL the fault is also the connection itself: the server's backend serving the
//! operation is killed (`pg_terminate_backend`) in the middle of its transaction, which leaves
//! nothing behind, and the operation runs again on a fresh connection (see [`killed`]).

mod common;

use std::time::Duration;

use common::{Engine, Fixture, TestResult};
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

/// A SQLite ledger with something of everything, so each operation has work to undo.
fn scene() -> Fixture {
    scene_on(Engine::Sqlite).expect("SQLite is always there")
}

/// [`scene`] on `engine`; `None` when the engine is not available here.
fn scene_on(engine: Engine) -> Option<Fixture> {
    let f = Fixture::on(
        engine,
        Config::default()
            .create_if_missing(true)
            .max_live_children(3),
    )?;
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
    Some(f)
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
            .revoke("conductor", Propagation::CascadeUnchecked, "op")
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

// ------------------------------------------------------------------------------------------------
// PostgreSQL: the backend connection killed in the middle of a transaction
// ------------------------------------------------------------------------------------------------
//
// The crash tests (tests/crash.rs) stay SQLite-only. There the ledger is a file that the library's
// own process writes, so a process killed in the middle of a commit is the library's durability
// to prove. On PostgreSQL, a crash of the server is the server's durability (its write-ahead log),
// not the library's; and a client process killed in the middle of a transaction is a connection
// that closes, whose backend rolls the transaction back. What the library must get right is what
// these tests make happen: the connection dies inside one of its transactions, after some of the
// transaction's statements ran. Nothing of it may remain, the caller must get an error (not a
// panic, not a success), and the handle must go on working.

/// The first key of the lock a stalled transaction waits for (the second is the holder's pid).
const STALL: i32 = 7814;

/// Runs `op` on `f`, a PostgreSQL [`scene`], and kills its backend connection in the middle of
/// its transaction: a trigger, installed by hand, makes the operation's audit insert (which
/// comes after or with every other statement of the operation) wait for a lock that a psql
/// session holds, and the test terminates the backend that waits for it, from another
/// connection, with `pg_terminate_backend`. The operation never sent its commit, so it runs
/// again on a fresh connection (docs/postgres.md, "High availability"), and waits at the same
/// place: there, with the killed try's transaction gone and the new one not committed, every
/// table is as it was. Then the lock is let go: the operation succeeds, once, and more reads
/// than the pool has connections succeed.
fn killed<T: std::fmt::Debug + Send>(
    f: Fixture,
    name: &str,
    op: impl Fn(&Fixture) -> session_ledger::Result<T> + Sync,
) -> TestResult {
    let before = f.snapshot();
    let mut holder = f.place().client();
    let key: i32 = holder.query_one("SELECT pg_backend_pid()", &[])?.get(0);
    holder.batch_execute(&format!("SELECT pg_advisory_lock({STALL}, {key})"))?;
    f.exec(&format!(
        "CREATE FUNCTION failpoint_stall() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_advisory_xact_lock({STALL}, {key}); RETURN NEW; END $$;
         CREATE TRIGGER failpoint_stall BEFORE INSERT ON audit
         FOR EACH ROW EXECUTE FUNCTION failpoint_stall()"
    ))?;

    let outcome = std::thread::scope(|s| -> Result<_, Box<dyn std::error::Error>> {
        let running = s.spawn(|| op(&f));
        let mut killer = f.place().client();
        // The backend waiting for the holder's lock: the operation's, inside its transaction.
        let waiting = format!(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND classid = {STALL} AND objid = {key} AND objsubid = 2"
        );
        let mut waiter = |not: Option<i32>| -> Result<i32, postgres::Error> {
            loop {
                if let Some(row) = killer.query(&waiting, &[])?.first() {
                    let pid: i32 = row.get(0);
                    if Some(pid) != not {
                        return Ok(pid);
                    }
                }
                assert!(
                    !running.is_finished(),
                    "{name} ended without reaching its audit row"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        let victim = waiter(None)?;
        let killed: bool = f
            .place()
            .client()
            .query_one("SELECT pg_terminate_backend($1)", &[&victim])?
            .get(0);
        assert!(killed, "{name}: the backend was not terminated");
        // The operation again, on another connection, at the same place.
        waiter(Some(victim))?;
        assert_eq!(
            f.snapshot(),
            before,
            "{name}: the killed try left changes behind"
        );
        holder.batch_execute(&format!("SELECT pg_advisory_unlock({STALL}, {key})"))?;
        Ok(running.join().expect("the operation panicked"))
    })?;

    outcome.unwrap_or_else(|e| {
        panic!("{name} did not run again after its connection was killed: {e}")
    });
    f.exec("DROP TRIGGER failpoint_stall ON audit; DROP FUNCTION failpoint_stall()")?;
    // The pool dropped the dead connection: every pooled connection works.
    for _ in 0..20 {
        f.ledger.state("conductor")?;
    }
    assert!(f.ledger.verify(None)?.ok);
    assert_eq!(f.verify_in_sql(), None);
    Ok(())
}

#[test]
fn creating_a_child_whose_connection_is_killed_midway_leaves_nothing_and_runs_again_once(
) -> TestResult {
    let Some(f) = scene_on(Engine::Postgres) else {
        return Ok(());
    };
    killed(f, "create_child", |f| {
        f.ledger.create_child("w3", "conductor", "op")
    })
}

#[test]
fn a_cascade_whose_connection_is_killed_midway_leaves_nothing_and_runs_again_once() -> TestResult {
    let Some(f) = scene_on(Engine::Postgres) else {
        return Ok(());
    };
    killed(f, "revoke cascade", |f| {
        f.ledger
            .revoke("conductor", Propagation::CascadeUnchecked, "op")
    })
}

#[test]
fn a_first_read_whose_connection_is_killed_midway_leaves_nothing_and_runs_again_once() -> TestResult
{
    let Some(f) = scene_on(Engine::Postgres) else {
        return Ok(());
    };
    killed(f, "first read", |f| f.ledger.state("w1a"))
}

#[test]
fn a_spawned_first_read_whose_connection_is_killed_midway_leaves_nothing_and_runs_again_once(
) -> TestResult {
    let Some(f) = scene_on(Engine::Postgres) else {
        return Ok(());
    };
    killed(f, "spawned first read", |f| {
        f.ledger.state("sub-sub-w1a-1-1")
    })
}
