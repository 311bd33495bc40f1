//! A reader who cannot write: with read permission only, on the ledger file and on its folder,
//! the stock `sqlite3 -readonly` shell and the CLI's read commands work on a ledger that the CLI
//! or the library wrote, and a first read that would record an inherited label answers from the
//! inheritance without recording it, and says so.
//!
//! "Cannot write" is real here. Root is not stopped by permission bits, so when the tests run as
//! root (CI does), the shell and the CLI run as the unprivileged uid 65534 (`setpriv`, from
//! util-linux) on a folder and files owned by root, 0755 and 0644. As any other user, the folder
//! and its files are made read-only (0555, 0444) and the commands run as that user. Either way,
//! [`Folder::lock`] first shows that the reader cannot create a file in the folder.
//!
//! The library-level tests at the end open a handle with `Config::read_only` in this process, on
//! a ledger a writer handle built; they show what a read-only handle answers and that it writes
//! nothing, not that permissions are enforced.

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

use common::cli::{dump, ok, ok_json, TestResult, BIN};
use serde_json::Value;
use session_ledger::{
    Config, Error, InputError, Ledger, Location, ManualClock, Materialized, PostureLevel,
    Propagation, Raise, SessionState, StorageError, Taint,
};

/// The unprivileged user the commands run as when the tests run as root.
const READER: &str = "65534";

fn running_as_root() -> bool {
    // /proc/self belongs to the process's effective user.
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// True when every folder above `path` lets other users through, and `path` itself gives them
/// the permission bits `bits` (0o4 to read, 0o5 to run a program).
fn others_can_reach(path: &Path, bits: u32) -> bool {
    let traversable = path
        .ancestors()
        .skip(1)
        .all(|dir| fs::metadata(dir).is_ok_and(|m| m.mode() & 0o001 != 0));
    traversable && fs::metadata(path).is_ok_and(|m| m.mode() & bits == bits)
}

/// The CLI binary as the reader can run it: cargo's, or a copy in a folder of its own when the
/// checkout sits where uid 65534 cannot reach (under /root, say).
fn reader_binary() -> &'static Path {
    static COPY: OnceLock<(Option<tempfile::TempDir>, PathBuf)> = OnceLock::new();
    let (_, path) = COPY.get_or_init(|| {
        let bin = PathBuf::from(BIN);
        if !running_as_root() || others_can_reach(&bin, 0o5) {
            return (None, bin);
        }
        let dir = tempfile::tempdir().expect("a folder for the reader's copy of the binary");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        let copy = dir.path().join("session-ledger");
        fs::copy(&bin, &copy).expect("copy the binary");
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).expect("chmod");
        (Some(dir), copy)
    });
    path
}

/// `program` run as the reader: as uid 65534 when the tests run as root, else as this user.
fn as_reader(program: impl AsRef<std::ffi::OsStr>) -> Command {
    if running_as_root() {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid", READER, "--regid", READER, "--clear-groups", "--"])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Runs `command`, failing loudly when it cannot be started at all (no `setpriv`, say).
fn output(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| {
        panic!("cannot run {command:?} ({e}): the read-only tests need setpriv (util-linux) when run as root")
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder holding `ledger.db`: written as the test's user, then locked so that the reader
/// may read it and not write it.
struct Folder {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Folder {
    fn new() -> TestResult<Folder> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("ledger.db");
        Ok(Folder { dir, db })
    }

    /// Every file in the folder, sorted.
    fn listing(&self) -> TestResult<Vec<String>> {
        let mut names = fs::read_dir(self.dir.path())?
            .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
            .collect::<TestResult<Vec<_>>>()?;
        names.sort();
        Ok(names)
    }

    /// Makes the folder and its files readable and not writable by the reader, and shows that
    /// the reader cannot create a file there.
    fn lock(&self) -> TestResult {
        let (folder, file) = if running_as_root() {
            (0o755, 0o644)
        } else {
            (0o555, 0o444)
        };
        for entry in fs::read_dir(self.dir.path())? {
            fs::set_permissions(entry?.path(), fs::Permissions::from_mode(file))?;
        }
        fs::set_permissions(self.dir.path(), fs::Permissions::from_mode(folder))?;
        assert!(
            others_can_reach(&self.db, 0o4) || !running_as_root(),
            "uid {READER} cannot reach {}: run the tests with TMPDIR in a folder it can traverse",
            self.db.display()
        );
        let probe = self.dir.path().join("probe");
        let touched = output(as_reader("touch").arg(&probe));
        assert!(
            !touched.status.success() && !probe.exists(),
            "the reader can create files in {}",
            self.dir.path().display()
        );
        Ok(())
    }

    /// Gives the folder and its files back to the test's user for writing.
    fn unlock(&self) -> TestResult {
        fs::set_permissions(self.dir.path(), fs::Permissions::from_mode(0o755))?;
        for entry in fs::read_dir(self.dir.path())? {
            fs::set_permissions(entry?.path(), fs::Permissions::from_mode(0o644))?;
        }
        Ok(())
    }

    /// `session-ledger --db DB ARGS...` run as the reader, in the ledger's folder.
    fn cli(&self, args: &[&str]) -> Output {
        output(
            as_reader(reader_binary())
                .arg("--db")
                .arg(&self.db)
                .args(args)
                .current_dir(self.dir.path())
                .env_remove("SESSION_LEDGER_DB")
                .env_remove("SESSION_LEDGER_ACTOR"),
        )
    }

    /// Like [`Folder::cli`], requiring success; returns stdout.
    fn cli_ok(&self, args: &[&str]) -> TestResult<String> {
        let out = self.cli(args);
        if !out.status.success() {
            return Err(format!(
                "`session-ledger {}` as a reader failed ({}): {}",
                args.join(" "),
                out.status,
                text(&out.stderr)
            )
            .into());
        }
        Ok(text(&out.stdout))
    }

    /// `--json ARGS...` as the reader, parsed as one JSON value.
    fn cli_json(&self, args: &[&str]) -> TestResult<Value> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        Ok(serde_json::from_str(&self.cli_ok(&all)?)?)
    }

    /// `sqlite3 -readonly DB SQL` as the reader; the shell must be installed (CI installs it).
    fn shell(&self, sql: &str) -> Output {
        output(
            as_reader(common::sqlite3_shell())
                .args(["-batch", "-init", "/dev/null", "-readonly"])
                .arg(&self.db)
                .arg(sql),
        )
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        // So that the temporary folder can be removed when the tests do not run as root.
        let _ = self.unlock();
    }
}

/// A ledger the CLI wrote, as the test's user: a secret conductor with trust, a worker it
/// created before the grant (not read yet), a worker created after it (born with trust, not
/// read yet), and an ended root.
fn cli_written(folder: &Folder) -> TestResult {
    let db = &folder.db;
    ok(db, &["init"])?;
    ok(db, &["create", "conductor", "--actor", "alice"])?;
    ok(
        db,
        &[
            "raise",
            "conductor",
            "--taint",
            "secret",
            "--actor",
            "alice",
        ],
    )?;
    ok(
        db,
        &["create", "worker", "--by", "conductor", "--actor", "alice"],
    )?;
    ok(db, &["trust", "conductor", "--full", "--actor", "alice"])?;
    ok(
        db,
        &["create", "helper", "--by", "conductor", "--actor", "alice"],
    )?;
    ok(db, &["create", "gone", "--actor", "alice"])?;
    ok(db, &["end", "gone", "--actor", "alice"])?;
    Ok(())
}

/// The audit rows, counted by a connection that does not go through the library.
fn audit_rows(db: &Path) -> TestResult<i64> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(conn.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))?)
}

// ------------------------------------------------------------------------------------------------
// the stock shell
// ------------------------------------------------------------------------------------------------

#[test]
fn an_auditor_without_write_access_reads_with_the_stock_shell_a_ledger_the_cli_or_the_library_wrote(
) -> TestResult {
    let by_cli = Folder::new()?;
    cli_written(&by_cli)?;
    let by_library = Folder::new()?;
    {
        let ledger = Ledger::init(&by_library.db)?;
        ledger.create_root("conductor", "alice")?;
        ledger.create_child("worker", "conductor", "alice")?;
        ledger.state("worker")?;
    }
    for (writer, folder) in [("the CLI", &by_cli), ("the library", &by_library)] {
        // A WAL database opens read-only only where its -wal and -shm files exist: the reader
        // cannot create them.
        assert_eq!(
            folder.listing()?,
            ["ledger.db", "ledger.db-shm", "ledger.db-wal"],
            "{writer} did not leave the WAL files in place"
        );
        let expected = audit_rows(&folder.db)?;
        folder.lock()?;
        let out = folder.shell("SELECT count(*) FROM audit");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "sqlite3 -readonly on a ledger {writer} wrote: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout).trim(), expected.to_string(), "{writer}");
    }
    Ok(())
}

#[test]
fn an_auditor_without_write_access_sees_the_latest_commits_while_the_backend_has_the_ledger_open(
) -> TestResult {
    let folder = Folder::new()?;
    let backend = Ledger::init(&folder.db)?;
    backend.create_root("conductor", "alice")?;
    folder.lock()?;
    // Committed while the auditor is locked out of writing: in the WAL, not checkpointed yet.
    backend.create_child("worker", "conductor", "alice")?;
    backend.grant("conductor", PostureLevel::TrustReads, "alice")?;
    let out = folder.shell("SELECT count(*) FROM sessions");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "2");
    let verified = folder.cli_json(&["verify"])?;
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["rows"], 3, "{verified}");
    let state = folder.cli_json(&["state", "conductor"])?;
    assert_eq!(state["trust_reads"], true, "{state}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// the CLI's read commands
// ------------------------------------------------------------------------------------------------

#[test]
fn an_auditor_without_write_access_verifies_the_chain_with_the_cli() -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    let head = ok(&folder.db, &["audit", "head"])?;
    folder.lock()?;
    let out = folder.cli_ok(&["verify"])?;
    assert!(out.starts_with("OK: 7 rows verify"), "{out}");
    let v = folder.cli_json(&["verify", "--head", head.trim()])?;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["rows"], 7, "{v}");
    Ok(())
}

#[test]
fn an_auditor_without_write_access_lists_the_audit_trail_draws_the_tree_and_explains_with_the_cli(
) -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    let before = dump(&folder.db)?;
    folder.lock()?;

    let audit: Vec<Value> = serde_json::from_str(&folder.cli_ok(&["--json", "audit"])?)?;
    assert_eq!(audit.len(), 7, "{audit:?}");
    let head = folder.cli_ok(&["audit", "head"])?;
    assert!(head.starts_with("7:"), "{head}");

    let tree = folder.cli_ok(&["tree", "conductor"])?;
    assert_eq!(
        tree.lines().collect::<Vec<_>>(),
        [
            "conductor  [secret; trust]",
            "├── worker  [not materialized]",
            "└── helper  [not materialized; trust]",
        ]
    );
    let json = folder.cli_json(&["tree"])?;
    assert_eq!(json.as_array().map(Vec::len), Some(4), "{json}");

    let explained = folder.cli_json(&["explain", "helper"])?;
    assert_eq!(explained["session"]["id"], "helper", "{explained}");
    assert_eq!(explained["state"]["trust"], true, "{explained}");
    let text = folder.cli_ok(&["explain", "conductor"])?;
    assert!(text.contains("trust granted by alice"), "{text}");

    let state = folder.cli_json(&["state", "conductor"])?;
    assert_eq!(state["taint"], "secret", "{state}");
    assert_eq!(state["materialized"]["how"], "born", "{state}");

    assert_eq!(
        folder.cli_ok(&["epoch", "show"])?.trim(),
        "current epoch: 0"
    );
    let checked = folder.cli_json(&["check"])?;
    assert_eq!(checked["ok"], true, "{checked}");

    folder.unlock()?;
    assert_eq!(
        dump(&folder.db)?,
        before,
        "a read command changed the ledger"
    );
    Ok(())
}

#[test]
fn a_first_read_without_write_access_answers_from_the_inheritance_and_says_it_was_not_recorded(
) -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    let before = dump(&folder.db)?;
    folder.lock()?;

    // A created child not read yet (rule L2): the conductor's label, not recorded.
    let text = folder.cli_ok(&["state", "worker"])?;
    assert_eq!(
        text.trim(),
        "worker: secret (inherited from conductor; not recorded: the ledger is open read-only)"
    );
    let worker = folder.cli_json(&["state", "worker"])?;
    assert_eq!(worker["taint"], "secret", "{worker}");
    assert_eq!(worker["known"], true, "{worker}");
    assert_eq!(
        worker["materialized"],
        serde_json::json!({ "how": "unrecorded", "from": "conductor" })
    );
    assert_eq!(worker["materialized_at"], Value::Null, "{worker}");
    assert_eq!(worker["trust"], false, "born before the grant: {worker}");

    // A spawned id with no row, under a child born with trust (rules L3 and P3).
    let spawned = folder.cli_json(&["state", "sub-sub-helper-1-2"])?;
    assert_eq!(spawned["taint"], "secret", "{spawned}");
    assert_eq!(spawned["materialized"]["how"], "unrecorded", "{spawned}");
    assert_eq!(spawned["trust"], true, "{spawned}");
    assert_eq!(
        spawned["posture"]["chain"],
        serde_json::json!(["conductor", "helper", "sub-helper-1", "sub-sub-helper-1-2"])
    );

    // An unknown id is the default, as ever (rule L4).
    let stranger = folder.cli_json(&["state", "stranger"])?;
    assert_eq!(stranger["known"], false, "{stranger}");

    folder.unlock()?;
    assert_eq!(dump(&folder.db)?, before, "a read-only first read wrote");

    // A writer's first read records exactly what the reader was told.
    for (id, answered) in [("worker", &worker), ("sub-sub-helper-1-2", &spawned)] {
        let recorded = ok_json(&folder.db, &["state", id])?;
        assert_eq!(
            recorded["materialized"],
            serde_json::json!({ "how": "inherited", "from": "conductor" })
        );
        for field in ["taint", "untrusted", "trust", "trust_reads"] {
            assert_eq!(recorded[field], answered[field], "{id}: {field}");
        }
    }
    Ok(())
}

#[test]
fn a_write_without_write_access_is_refused_as_read_only_and_changes_nothing() -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    let before = dump(&folder.db)?;
    folder.lock()?;
    for args in [
        &["create", "intruder"][..],
        &["raise", "worker", "--taint", "secret"],
        &["revoke", "conductor", "--cascade"],
        &["init"],
    ] {
        let out = folder.cli(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("read-only"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    folder.unlock()?;
    assert_eq!(dump(&folder.db)?, before);
    Ok(())
}

#[test]
fn a_lone_copy_without_its_wal_file_is_read_immutable_by_a_reader_who_cannot_write_its_folder(
) -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    let written = folder.cli_ok(&["--json", "tree"])?;
    let before = dump(&folder.db)?;
    // A backup: the file alone, as a writer that let SQLite delete its -wal and -shm leaves it
    // (everything checkpointed into the file).
    fs::remove_file(folder.dir.path().join("ledger.db-wal"))?;
    fs::remove_file(folder.dir.path().join("ledger.db-shm"))?;
    folder.lock()?;
    let immutable = "opened immutable";

    let verify = folder.cli(&["verify"]);
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    assert!(
        text(&verify.stdout).starts_with("OK: 7 rows verify"),
        "{}",
        text(&verify.stdout)
    );
    assert!(
        text(&verify.stderr).contains(immutable),
        "{}",
        text(&verify.stderr)
    );
    assert_eq!(
        text(&verify.stderr).lines().count(),
        1,
        "{}",
        text(&verify.stderr)
    );

    // A first read answers from the inheritance and records nothing, as on any read-only ledger.
    let state = folder.cli(&["state", "worker"]);
    assert!(state.status.success(), "{}", text(&state.stderr));
    assert!(
        text(&state.stdout).contains("not recorded"),
        "{}",
        text(&state.stdout)
    );
    assert!(
        text(&state.stderr).contains(immutable),
        "{}",
        text(&state.stderr)
    );
    assert_eq!(folder.cli_ok(&["--json", "tree"])?, written);
    let json = folder.cli(&["--json", "audit", "head"]);
    let note: Value = serde_json::from_str(&text(&json.stderr))?;
    assert!(
        note["note"].as_str().is_some_and(|n| n.contains(immutable)),
        "{note}"
    );

    // The stock shell reads it the same way, as docs/audit.md says.
    let uri = format!("file:{}?immutable=1", folder.db.display());
    let shell = output(
        as_reader(common::sqlite3_shell())
            .args(["-batch", "-init", "/dev/null", "-readonly", &uri])
            .arg("SELECT count(*) FROM audit"),
    );
    assert_eq!(text(&shell.stdout).trim(), "7", "{}", text(&shell.stderr));

    // Nothing was written or created beside it.
    assert_eq!(folder.listing()?, ["ledger.db"]);
    folder.unlock()?;
    assert_eq!(dump(&folder.db)?, before);
    Ok(())
}

#[test]
fn a_reader_without_write_access_is_told_plainly_when_the_shm_file_is_missing_beside_a_wal(
) -> TestResult {
    let folder = Folder::new()?;
    cli_written(&folder)?;
    // A -wal without its -shm: the -wal may hold rows, so the file alone is not the ledger.
    fs::remove_file(folder.dir.path().join("ledger.db-shm"))?;
    folder.lock()?;
    let out = folder.cli(&["state", "conductor"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("ledger.db-shm is missing") && stderr.contains("write access"),
        "{stderr}"
    );
    assert_eq!(folder.listing()?, ["ledger.db", "ledger.db-wal"]);
    // One open with write access puts it back for good.
    folder.unlock()?;
    ok(&folder.db, &["init"])?;
    folder.lock()?;
    assert!(folder
        .cli_ok(&["state", "conductor"])?
        .starts_with("conductor: secret"));
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// the library's read-only handle
// ------------------------------------------------------------------------------------------------

fn read_only() -> Config {
    Config::default().create_if_missing(true).read_only(true)
}

/// A state with the parts that differ between an answer and a recording blanked: when it was
/// recorded, how, and when the posture was allocated.
fn comparable(mut state: SessionState) -> SessionState {
    state.materialized = None;
    state.materialized_at = None;
    if let Some(p) = state.posture.as_mut() {
        p.allocated_at = chrono::DateTime::UNIX_EPOCH;
    }
    state
}

#[test]
fn a_read_only_handle_answers_every_first_read_as_a_writer_would_record_it_and_writes_nothing(
) -> TestResult {
    let dir = tempfile::tempdir()?;
    let built = dir.path().join("built.db");
    let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00.000Z".parse()?));
    let config = || {
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    };
    {
        let l = Ledger::open_with(&built, config())?;
        let secret = Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        };
        l.create_root("c", "alice")?;
        l.raise("c", secret, "alice")?;
        l.grant("c", PostureLevel::Trust, "alice")?;
        l.create_child("w", "c", "alice")?; // trust, not read
        l.create_child("w2", "w", "alice")?; // trust, not read, two hops from a label
        l.create_root("r", "alice")?;
        l.raise(
            "r",
            Raise {
                taint: None,
                untrusted: true,
            },
            "alice",
        )?;
        l.grant("r", PostureLevel::TrustReads, "alice")?;
        l.create_child("m", "r", "alice")?;
        l.state("m")?; // materialized: a spawned id under it walks one hop
        l.create_child("e", "r", "alice")?;
        l.end("e", "alice")?; // ended: its spawned children are recorded ended, no posture
        l.create_root("lapsed", "alice")?;
        l.grant("lapsed", PostureLevel::Trust, "alice")?;
        l.create_child("lw", "lapsed", "alice")?;
        l.start_epoch("dashboard")?; // every posture lapses
        l.create_root("fresh", "alice")?;
        l.grant("fresh", PostureLevel::Trust, "alice")?;
        clock.advance(chrono::TimeDelta::seconds(5));
    }
    let cases = [
        "c",              // born: stored, as it is
        "w",              // created, not read: L2
        "w2",             // L2 through an unmaterialized creator
        "sub-w2-1",       // L3 under an unmaterialized child, trust passed down
        "sub-sub-w-4-1",  // L3 with a missing middle
        "sub-m-3",        // L3 under a materialized child, trust_reads
        "sub-e-1",        // L3 under an ended session: no posture
        "lw",             // created child whose posture lapsed with its epoch
        "sub-lapsed-1",   // spawned under a lapsed posture: nothing passed down
        "sub-fresh-1",    // spawned under a posture of the current epoch
        "stranger",       // L4
        "sub-stranger-1", // a spawned id of nobody
    ];
    for id in cases {
        // A fresh copy per case, so that one case's recording does not shorten another's walk.
        let path = dir.path().join(format!("{id}.db"));
        fs::copy(&built, &path)?;
        let untouched = fs::read(&path)?;
        let answered = Ledger::open_with(&path, read_only().clock(clock.clone()))?.state(id)?;
        assert_eq!(
            fs::read(&path)?,
            untouched,
            "{id}: the read-only answer wrote"
        );
        let recorded = Ledger::open_with(&path, config())?.state(id)?;
        match (&answered.materialized, &recorded.materialized) {
            (
                Some(Materialized::Unrecorded { from }),
                Some(Materialized::Inherited { from: to }),
            ) => {
                assert_eq!(from, to, "{id}: inherited from")
            }
            (answered, recorded) => assert_eq!(answered, recorded, "{id}: materialized"),
        }
        assert_eq!(comparable(answered), comparable(recorded), "{id}");
    }
    Ok(())
}

#[test]
fn every_write_on_a_read_only_handle_fails_as_read_only_and_writes_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    {
        let l = Ledger::init(&path)?;
        l.create_root("c", "alice")?;
        l.grant("c", PostureLevel::Trust, "alice")?;
        l.create_child("w", "c", "alice")?;
        l.add_pattern("c", "ls", "alice")?;
        l.grant_scope("c", "deploy", std::time::Duration::from_secs(600), "alice")?;
    }
    let before = fs::read(&path)?;
    let l = Ledger::open_with(&path, read_only())?;
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    let refusals: Vec<(&str, Result<(), Error>)> = vec![
        ("create_root", l.create_root("x", "alice").map(drop)),
        ("create_child", l.create_child("x", "c", "alice").map(drop)),
        ("raise", l.raise("c", secret, "alice").map(drop)),
        (
            "raise unmaterialized",
            l.raise("w", secret, "alice").map(drop),
        ),
        ("end", l.end("w", "alice").map(drop)),
        (
            "grant",
            l.grant("w", PostureLevel::TrustReads, "alice").map(drop),
        ),
        (
            "revoke local",
            l.revoke("c", Propagation::Local, "alice").map(drop),
        ),
        (
            "revoke cascade",
            l.revoke("c", Propagation::CascadeUnchecked, "alice")
                .map(drop),
        ),
        ("revoke_all", l.revoke_all("alice").map(drop)),
        ("start_epoch", l.start_epoch("dashboard").map(drop)),
        ("add_pattern", l.add_pattern("c", "make", "alice").map(drop)),
        ("remove_pattern", l.remove_pattern("c", "ls", "alice")),
        (
            "grant_scope",
            l.grant_scope("c", "x", std::time::Duration::from_secs(60), "alice")
                .map(drop),
        ),
        ("revoke_scope", l.revoke_scope("c", "deploy", "alice")),
    ];
    for (what, outcome) in refusals {
        match outcome {
            Err(Error::Storage(StorageError::ReadOnly(Location::File(p)))) => {
                assert_eq!(p, path, "{what}")
            }
            other => panic!("{what} on a read-only handle: {other:?}"),
        }
    }
    // What only reads still works.
    let preview = l.revoke("c", Propagation::Preview, "alice")?;
    assert_eq!(preview.count, 2);
    assert!(l.decide("c", "rm -rf /", false)?.verdict == session_ledger::Verdict::Approve);
    assert!(l.verify(None)?.ok);
    assert!(l.check()?.ok);
    drop(l);
    assert_eq!(fs::read(&path)?, before, "the read-only handle wrote");
    Ok(())
}

#[test]
fn a_read_only_open_refuses_what_it_cannot_read_as_a_ledger_of_this_version() -> TestResult {
    let dir = tempfile::tempdir()?;

    let missing = dir.path().join("missing.db");
    let err = Ledger::open_with(&missing, read_only()).expect_err("missing");
    assert!(
        matches!(err, Error::Storage(StorageError::NoLedger(_))),
        "{err}"
    );
    assert!(!missing.exists(), "a read-only open created the file");

    let empty = dir.path().join("empty.db");
    fs::write(&empty, b"")?;
    let err = Ledger::open_with(&empty, read_only()).expect_err("an empty file");
    assert!(
        matches!(err, Error::Storage(StorageError::NotALedger(_))),
        "{err}"
    );
    assert_eq!(fs::read(&empty)?, b"");

    let blank = dir.path().join("blank.db");
    rusqlite::Connection::open(&blank)?
        .execute_batch("CREATE TABLE scratch (x); DROP TABLE scratch;")?;
    let err = Ledger::open_with(&blank, read_only()).expect_err("an empty database");
    assert!(
        matches!(err, Error::Storage(StorageError::NotALedger(_))),
        "{err}"
    );

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)?.execute_batch("CREATE TABLE notes (body TEXT);")?;
    let err = Ledger::open_with(&other, read_only()).expect_err("someone else's database");
    assert!(
        matches!(err, Error::Storage(StorageError::NotALedger(_))),
        "{err}"
    );

    let newer = dir.path().join("newer.db");
    drop(Ledger::init(&newer)?);
    rusqlite::Connection::open(&newer)?.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
         VALUES (999, 'from_the_future', '2030-01-01T00:00:00Z', '1')",
        [],
    )?;
    let err = Ledger::open_with(&newer, read_only()).expect_err("a newer schema");
    assert!(
        matches!(
            err,
            Error::Storage(StorageError::SchemaTooNew { found: 999, .. })
        ),
        "{err}"
    );

    let older = dir.path().join("older.db");
    drop(Ledger::init(&older)?);
    let version = session_ledger::schema_version();
    rusqlite::Connection::open(&older)?.execute(
        "DELETE FROM refinery_schema_history WHERE version = ?1",
        [version],
    )?;
    let bytes = fs::read(&older)?;
    let err = Ledger::open_with(&older, read_only()).expect_err("an older schema");
    let message = err.to_string();
    assert!(
        matches!(err, Error::Input(InputError::InvalidConfig(_))),
        "{err}"
    );
    assert!(
        message.contains(&format!("schema version {}", version - 1))
            && message.contains("older")
            && message.contains("write access"),
        "{message}"
    );
    assert_eq!(fs::read(&older)?, bytes, "the older ledger was touched");
    Ok(())
}

#[test]
fn a_read_only_open_takes_no_write_lock() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    Ledger::init(&path)?.create_root("c", "alice")?;
    // Another process holds the write lock for as long as it likes.
    let holder = common::raw(&path);
    holder.execute_batch("BEGIN IMMEDIATE")?;
    let config = read_only().busy_timeout(std::time::Duration::from_millis(50));
    let l = Ledger::open_with(&path, config)?;
    assert!(l.state("c")?.known);
    assert!(l.verify(None)?.ok);
    holder.execute_batch("ROLLBACK")?;
    Ok(())
}
