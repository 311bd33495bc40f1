//! Backing up a live ledger (`Ledger::backup`, `session-ledger backup`): on SQLite a copy as
//! the ledger stood at one moment, taken while writers go on, that verifies and checks on its
//! own and holds exactly the rows up to its head; never written over an existing file; and on
//! PostgreSQL refused, naming the server's own tools.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{Engine, TestResult};
use session_ledger::{AuditQuery, Config, Ledger};

#[test]
fn a_backup_taken_while_writers_go_on_is_a_verified_prefix_of_the_live_trail() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    let config = Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, std::time::Duration::from_secs(1));
    let ledger = Arc::new(Ledger::open_with(&path, config)?);
    ledger.create_root("conductor", "alice")?;
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (ledger, stop) = (Arc::clone(&ledger), Arc::clone(&stop));
            std::thread::spawn(move || -> Result<u64, session_ledger::Error> {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    ledger.create_child(&format!("w{w}-{n}"), "conductor", "alice")?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    // Let the writers get going, then back up twice while they write.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let first = ledger.backup(dir.path().join("first.db"))?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let second = ledger.backup(dir.path().join("second.db"))?;
    stop.store(true, Ordering::SeqCst);
    let mut created = 0;
    for writer in writers {
        created += writer.join().expect("a writer")?;
    }
    assert!(created > 0);
    assert!(first.ok && second.ok, "{first:?} {second:?}");
    assert!(
        first.head.seq < second.head.seq,
        "the writers went on between them"
    );
    let live = ledger.audit(&AuditQuery::all())?;
    assert!(second.head.seq < live.len() as i64, "and after");
    for backup in [&first, &second] {
        let copy = Ledger::open_with(&backup.to, Config::default().read_only(true))?;
        let rows = copy.audit(&AuditQuery::all())?;
        assert_eq!(rows.len() as i64, backup.head.seq);
        assert_eq!(
            rows[..],
            live[..rows.len()],
            "a prefix of the live trail, row for row"
        );
        assert_eq!(copy.audit_head()?, backup.head);
    }
    // Never over a file that is there.
    let e = ledger
        .backup(&first.to)
        .expect_err("an existing file is refused");
    assert_eq!(e.kind(), "invalid_config");
    let reopened = Ledger::open_with(&first.to, Config::default().read_only(true))?;
    assert_eq!(reopened.audit_head()?, first.head, "and left as it was");
    Ok(())
}

#[test]
fn a_postgresql_ledger_is_not_backed_up_by_the_library_and_the_error_names_the_tools() -> TestResult
{
    let f = fixture!(Engine::Postgres);
    let dir = tempfile::tempdir()?;
    let e = f
        .ledger
        .backup(dir.path().join("copy.db"))
        .expect_err("refused");
    assert_eq!(e.kind(), "invalid_config");
    assert!(e.to_string().contains("pg_dump"), "{e}");
    assert!(!dir.path().join("copy.db").exists());
    Ok(())
}
