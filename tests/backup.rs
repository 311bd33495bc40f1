//! Backing up a live ledger and putting a backup back (`Ledger::backup`, `Ledger::restore`,
//! `session-ledger backup`, `restore`): on SQLite a copy as the ledger stood at one moment,
//! taken while writers go on, that verifies and checks on its own and holds exactly the rows up
//! to its head; never written over an existing file, and under its name only once whole and
//! checked, whenever the process is killed (a sweep of SIGKILLs, `BACKUP_CRASH_TRIALS`, default
//! 8, with writer processes killed beside it); restored only where no ledger is, and only when
//! it verifies (and against a checkpoint, when given); and on PostgreSQL refused, naming the
//! server's own tools.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{tamper_at, Engine, Random, TestResult};

/// What a helper returns: a value, or why not.
type Outcome<T> = Result<T, Box<dyn std::error::Error>>;
use session_ledger::{AuditQuery, Config, Ledger, SignerKey};

const BIN: &str = env!("CARGO_BIN_EXE_session-ledger");

/// Creation bounds lifted: the tests create many sessions quickly under one root.
fn roomy() -> Config {
    Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

/// A ledger at `path` with a root and `n` children.
fn ledger_with(path: &Path, n: usize) -> Outcome<Ledger> {
    let ledger = Ledger::open_with(path, roomy())?;
    ledger.create_root("conductor", "alice")?;
    for i in 0..n {
        ledger.create_child(&format!("s{i}"), "conductor", "alice")?;
    }
    Ok(ledger)
}

/// The ledger at `path`, opened read-only: its trail verifies and it checks.
fn verified(path: &Path) -> Outcome<Ledger> {
    let copy = Ledger::open_with(path, Config::default().read_only(true))?;
    assert!(copy.verify(None)?.ok, "{} verifies", path.display());
    assert!(copy.check()?.ok, "{} checks", path.display());
    Ok(copy)
}

/// The files in `dir` whose names start with `prefix`.
fn files_starting(dir: &Path, prefix: &str) -> Outcome<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        {
            found.push(path);
        }
    }
    Ok(found)
}

#[test]
fn a_backup_taken_while_writers_go_on_is_a_verified_prefix_of_the_live_trail() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    let ledger = Arc::new(ledger_with(&path, 0)?);
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
fn a_postgresql_ledger_is_not_backed_up_or_restored_by_the_library_and_the_error_names_the_tools(
) -> TestResult {
    let f = fixture!(Engine::Postgres);
    let dir = tempfile::tempdir()?;
    let e = f
        .ledger
        .backup(dir.path().join("copy.db"))
        .expect_err("refused");
    assert_eq!(e.kind(), "invalid_config");
    assert!(e.to_string().contains("pg_dump"), "{e}");
    assert!(!dir.path().join("copy.db").exists());
    // Nor put back by it.
    let copy = dir.path().join("sqlite.db");
    ledger_with(&copy, 1)?;
    let e = Ledger::restore(&copy, f.target(), None).expect_err("refused");
    assert_eq!(e.kind(), "invalid_config");
    assert!(e.to_string().contains("pg_restore"), "{e}");
    Ok(())
}

/// Backups of one handle to one name at once: exactly one takes the name, the others are
/// refused because it is taken, and no copy is left beside it.
#[test]
fn backups_to_one_name_at_once_leave_one_whole_copy_and_refuse_the_others() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ledger = Arc::new(ledger_with(&dir.path().join("ledger.db"), 200)?);
    let dest = dir.path().join("backup.db");
    let outcomes: Vec<_> = (0..4)
        .map(|_| {
            let (ledger, dest) = (Arc::clone(&ledger), dest.clone());
            std::thread::spawn(move || ledger.backup(&dest).map(|b| b.ok).map_err(|e| e.kind()))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("a backup thread"))
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| **o == Ok(true)).count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|o| *o == Ok(true) || *o == Err("invalid_config")),
        "{outcomes:?}"
    );
    assert_eq!(verified(&dest)?.audit_head()?, ledger.audit_head()?);
    assert_eq!(files_starting(dir.path(), "backup.db")?, vec![dest]);
    Ok(())
}

/// A copy that does not pass its checks never takes the backup's name, and a backup that does
/// not verify is never restored: nothing is written in either case, and the command says so
/// and exits 1.
#[test]
fn a_copy_that_does_not_verify_is_neither_kept_as_a_backup_nor_restored() -> TestResult {
    let dir = tempfile::tempdir()?;
    let live = dir.path().join("ledger.db");
    let ledger = ledger_with(&live, 3)?;
    let good = ledger.backup(dir.path().join("good.db"))?;
    assert!(good.ok);
    // A backup rewritten by hand: row 2 names another actor, its hash left as it was.
    let bad = dir.path().join("bad.db");
    std::fs::copy(&good.to, &bad)?;
    tamper_at(&bad, "UPDATE audit SET actor = 'mallory' WHERE seq = 2");
    let to = dir.path().join("restored.db");
    let refused = Ledger::restore(&bad, &to, None)?;
    assert!(!refused.ok && !refused.verification.ok, "{refused:?}");
    assert!(!to.exists(), "nothing restored");
    assert!(
        files_starting(dir.path(), "restored.db")?.is_empty(),
        "nor anything beside it"
    );
    let cli = Command::new(BIN)
        .args(["--db"])
        .arg(&to)
        .arg("restore")
        .arg(&bad)
        .output()?;
    assert_eq!(cli.status.code(), Some(1));
    let said = String::from_utf8(cli.stdout)?;
    assert!(said.starts_with("NOT restored"), "{said}");
    assert!(!to.exists());

    // The live ledger itself rewritten: its backup is taken, fails its checks, and is not kept.
    tamper_at(&live, "UPDATE audit SET actor = 'mallory' WHERE seq = 2");
    let dest = dir.path().join("after.db");
    let failed = ledger.backup(&dest)?;
    assert!(!failed.ok && !failed.verification.ok, "{failed:?}");
    assert!(
        !dest.exists(),
        "a copy that fails is not kept under the backup's name"
    );
    assert!(
        files_starting(dir.path(), "after.db")?.is_empty(),
        "nor beside it"
    );
    Ok(())
}

/// A backup is restored only where no ledger is (not over the file, nor beside a leftover
/// `-wal`, which the restored file would be read with), and then it is the ledger: its trail
/// ends where the backup's did and goes on from there.
#[test]
fn a_backup_is_restored_only_where_no_ledger_is_and_the_ledger_goes_on_from_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let live = dir.path().join("ledger.db");
    let ledger = ledger_with(&live, 3)?;
    let backup = ledger.backup(dir.path().join("backup.db"))?;
    ledger.create_child("after-the-backup", "conductor", "alice")?;
    drop(ledger);
    for place in [live.clone(), dir.path().join("other.db")] {
        if place != live {
            std::fs::write(dir.path().join("other.db-wal"), b"a leftover")?;
        }
        let e = Ledger::restore(&backup.to, &place, None).expect_err("refused");
        assert_eq!(e.kind(), "invalid_config");
        assert!(e.to_string().contains("move its files aside"), "{e}");
    }
    assert_eq!(
        std::fs::read(dir.path().join("other.db-wal"))?,
        b"a leftover"
    );
    assert!(!dir.path().join("other.db").exists());

    // The operator moves the ledger aside, then restores.
    for suffix in ["", "-wal", "-shm"] {
        let from = dir.path().join(format!("ledger.db{suffix}"));
        if from.exists() {
            std::fs::rename(&from, dir.path().join(format!("broken.db{suffix}")))?;
        }
    }
    let said = Command::new(BIN)
        .arg("--db")
        .arg(&live)
        .arg("restore")
        .arg(&backup.to)
        .output()?;
    assert!(
        said.status.success(),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    assert!(String::from_utf8(said.stdout)?.starts_with("restored "));
    let restored = Ledger::open_with(&live, roomy())?;
    assert_eq!(
        restored.audit_head()?,
        backup.head,
        "it ends where the backup did"
    );
    assert!(restored.session("after-the-backup")?.is_none());
    restored.create_child("after-the-restore", "conductor", "alice")?;
    assert!(restored.verify(None)?.ok);
    assert!(restored.check()?.ok);
    Ok(())
}

/// With a checkpoint kept elsewhere, a backup is restored only when its trail extends what
/// was signed: a backup taken before the checkpoint (shorter than it) is refused, one taken
/// after it is restored.
#[test]
fn a_backup_is_restored_against_a_checkpoint_only_when_its_trail_extends_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let live = dir.path().join("ledger.db");
    let ledger = ledger_with(&live, 2)?;
    let before = ledger.backup(dir.path().join("before.db"))?;
    ledger.create_child("signed", "conductor", "alice")?;
    let key = SignerKey::generate("example.com/ledger")?;
    let signed = ledger.checkpoint(&key, None, "auditor")?;
    ledger.create_child("later", "conductor", "alice")?;
    let after = ledger.backup(dir.path().join("after.db"))?;
    let verifier = key.verifier();
    let to = dir.path().join("restored.db");
    let refused = Ledger::restore(&before.to, &to, Some((&signed.note, &verifier)))?;
    assert!(
        refused.verification.ok && refused.check.ok,
        "the backup itself is sound"
    );
    assert!(!refused.ok, "but it does not extend the checkpoint");
    assert!(refused.checkpoint.as_ref().is_some_and(|c| !c.ok));
    assert!(!to.exists());
    // The same through the command line, the checkpoint and the key each in a file.
    let (note, key_file) = (dir.path().join("cp"), dir.path().join("verifier.pub"));
    std::fs::write(&note, &signed.note)?;
    std::fs::write(&key_file, verifier.to_string())?;
    let restore = |backup: &Path| {
        Command::new(BIN)
            .arg("--db")
            .arg(&to)
            .arg("restore")
            .arg(backup)
            .arg("--checkpoint")
            .arg(&note)
            .arg("--verifier-key")
            .arg(&key_file)
            .output()
    };
    let refused_by_cli = restore(&before.to)?;
    assert_eq!(refused_by_cli.status.code(), Some(1));
    assert!(String::from_utf8(refused_by_cli.stderr)?.contains("against the checkpoint"));
    assert!(String::from_utf8(refused_by_cli.stdout)?.starts_with("NOT restored"));
    assert!(!to.exists());
    let restored = restore(&after.to)?;
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    assert!(String::from_utf8(restored.stdout)?.contains("it extends the checkpoint given"));
    assert_eq!(verified(&to)?.audit_head()?, after.head);
    // And by the library, to a place of its own.
    let to = dir.path().join("restored-by-the-library.db");
    let restored = Ledger::restore(&after.to, &to, Some((&signed.note, &verifier)))?;
    assert!(restored.ok, "{restored:?}");
    assert_eq!(verified(&to)?.audit_head()?, after.head);
    Ok(())
}

/// `session-ledger backup` killed with SIGKILL at random moments while writer processes
/// (`session-ledger create`) run and are killed at random too: at the backup's name there is
/// afterwards either nothing or a whole copy that verifies, checks and is a prefix of the live
/// trail; a killed copy is only ever a `.partial-PID-N` file; and the live ledger verifies and
/// holds every create a writer reported, each once.
#[test]
fn a_backup_killed_at_any_moment_leaves_nothing_or_a_whole_checked_copy_and_writers_lose_nothing(
) -> TestResult {
    let trials: usize = std::env::var("BACKUP_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let dir = tempfile::tempdir()?;
    let live = dir.path().join("ledger.db");
    // Enough rows that copying and checking take a while to be killed in.
    drop(ledger_with(&live, 3_000)?);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        | 1;
    println!("seed {seed}");
    let mut random = Random(seed);

    // Writers: processes creating sessions, some of them killed after a random few ms.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (live, stop) = (live.clone(), Arc::clone(&stop));
            let mut random = Random(seed.wrapping_mul(w + 3) | 1);
            std::thread::spawn(move || -> std::io::Result<(Vec<String>, usize)> {
                let (mut reported, mut killed) = (Vec::new(), 0);
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let id = format!("w{w}-{n}");
                    n += 1;
                    let mut child = Command::new(BIN)
                        .arg("--db")
                        .arg(&live)
                        // Roots: the command's default bounds limit a creator's children.
                        .args(["create", &id, "--actor", "writer"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()?;
                    if random.below(4) == 0 {
                        std::thread::sleep(Duration::from_millis(random.below(8)));
                        child.kill()?;
                        killed += 1;
                    }
                    if child.wait()?.success() {
                        reported.push(id);
                    }
                }
                Ok((reported, killed))
            })
        })
        .collect();

    // One backup left alone, for how long one takes.
    let started = Instant::now();
    let whole = Command::new(BIN)
        .arg("--db")
        .arg(&live)
        .arg("backup")
        .arg(dir.path().join("timed.db"))
        .output()?;
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let takes = started.elapsed().as_millis() as u64;

    let (mut nothing, mut kept) = (0, 0);
    for trial in 0..trials {
        let dest = dir.path().join(format!("backup-{trial}.db"));
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(&live)
            .arg("backup")
            .arg(&dest)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        std::thread::sleep(Duration::from_millis(random.below(takes + takes / 2 + 1)));
        child.kill()?;
        child.wait()?;
        if dest.exists() {
            let copy = verified(&dest)?;
            let rows = copy.audit(&AuditQuery::all())?;
            let now = Ledger::open_with(&live, Config::default().read_only(true))?
                .audit(&AuditQuery::all())?;
            assert_eq!(
                rows[..],
                now[..rows.len()],
                "backup {trial}: a prefix of the live trail"
            );
            kept += 1;
        } else {
            nothing += 1;
        }
        for leftover in files_starting(dir.path(), &format!("backup-{trial}.db"))? {
            let name = leftover
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            assert!(
                leftover == dest || name.contains(".partial-"),
                "backup {trial} left {name}"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    let (mut reported, mut writers_killed) = (Vec::new(), 0);
    for writer in writers {
        let (ids, killed) = writer.join().expect("a writer")?;
        reported.extend(ids);
        writers_killed += killed;
    }

    let after = verified(&live)?;
    for id in &reported {
        assert!(
            after.session(id)?.is_some(),
            "{id} was reported created and is there"
        );
    }
    let creates = after.audit(&AuditQuery::all())?;
    for id in &reported {
        let rows = creates
            .iter()
            .filter(|e| e.kind.as_str() == "session.root" && e.session.as_deref() == Some(id))
            .count();
        assert_eq!(rows, 1, "{id} was created once");
    }
    println!(
        "backup crash sweep: {trials} backups killed at random ({nothing} left nothing under \
         their name, {kept} a whole copy that verifies and is a prefix of the live trail); \
         {writers_killed} writer processes killed beside them; {} creates reported, each in \
         the live ledger once; the live ledger verifies",
        reported.len()
    );
    Ok(())
}

/// A program of the PostgreSQL installation that runs the test server: the newest
/// `/usr/lib/postgresql/*/bin` that has it (as scripts/with-postgres finds its server), else
/// the one on PATH.
fn postgres_program(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.into_iter()
        .rev()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// On PostgreSQL the server's tools back a ledger up and put it back, as docs/operations.md
/// says: `pg_dump` of the ledger's schema, the schema dropped (the database lost), `pg_restore`
/// of the dump; then `verify --checkpoint` with a checkpoint kept outside the database proves
/// the restored trail extends what was signed, `check` passes, and the ledger goes on.
#[test]
fn a_postgresql_ledger_put_back_with_the_servers_tools_verifies_against_a_kept_checkpoint(
) -> TestResult {
    let f = fixture!(Engine::Postgres);
    let dir = tempfile::tempdir()?;
    f.build("conductor > w1 w2");
    f.ledger
        .grant("conductor", session_ledger::PostureLevel::Trust, "alice")?;
    f.ledger.decide_and_record(
        "w1",
        "make deploy",
        false,
        &session_ledger::AskedBy::actor("alice"),
    )?;
    let key = SignerKey::generate("example.com/ledger")?;
    let signed = f.ledger.checkpoint(&key, None, "auditor")?;
    f.ledger.create_child("w3", "conductor", "alice")?;
    let head = f.ledger.audit_head()?;
    let (checkpoint, verifier) = (dir.path().join("cp"), dir.path().join("verifier.pub"));
    std::fs::write(&checkpoint, &signed.note)?;
    std::fs::write(&verifier, key.verifier().to_string())?;

    let url = f.target();
    let dump = dir.path().join("ledger.dump");
    let dumped = Command::new(postgres_program("pg_dump"))
        .args(["-d", &url, "--schema", f.place().schema(), "-Fc", "-f"])
        .arg(&dump)
        .output()?;
    assert!(
        dumped.status.success(),
        "{}",
        String::from_utf8_lossy(&dumped.stderr)
    );
    f.exec(&format!("DROP SCHEMA {} CASCADE", f.place().schema()))?;
    let put_back = Command::new(postgres_program("pg_restore"))
        .args(["-d", &url])
        .arg(&dump)
        .output()?;
    assert!(
        put_back.status.success(),
        "{}",
        String::from_utf8_lossy(&put_back.stderr)
    );

    let cli =
        |args: &[&std::ffi::OsStr]| Command::new(BIN).arg("--db").arg(&url).args(args).output();
    let verified = cli(&[
        "verify".as_ref(),
        "--checkpoint".as_ref(),
        checkpoint.as_os_str(),
        "--verifier-key".as_ref(),
        verifier.as_os_str(),
    ])?;
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    assert!(cli(&["check".as_ref()])?.status.success());
    let restored = Ledger::open(&url)?;
    assert_eq!(restored.audit_head()?, head, "the whole trail is back");
    restored.create_child("w4", "conductor", "alice")?;
    assert!(restored.verify(None)?.ok);
    Ok(())
}
