//! The schema as people see it in the sqlite3 shell, the rules it enforces by itself (on every
//! engine: `sqlite::` and `postgres::` tests), and the files the ledger refuses to open.

#[macro_use]
mod common;

use std::fs;

use common::{raw, Engine, Fixture, TestResult};
use session_ledger::{AuditKind, Config, Error, Ledger, StorageError};

/// Runs `sql` as a hand edit and expects the schema to refuse it with a message containing one
/// of `expected`.
fn refused(f: &Fixture, sql: &str, expected: &[&str]) {
    let err = f.exec(sql).expect_err(sql);
    assert!(
        expected.iter().any(|e| err.contains(e)),
        "{sql}: refused with `{err}`, not with one of {expected:?}"
    );
}

/// What each engine says when a `CHECK` constraint refuses a row.
fn check_failed(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "CHECK constraint failed",
        Engine::Postgres => "violates check constraint",
    }
}

fn audit_rows_cannot_be_updated_or_deleted(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    // A well-formed row, so that only its seq, the first row's, is wrong.
    let insert = &format!(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES (1, '2026-01-01T00:00:00.000Z', 'x', 'session.root', 'root', '{{}}', '{}', '{}')",
        "0".repeat(64),
        "a".repeat(64)
    );
    let replace = match engine {
        Engine::Sqlite => insert.replacen("INSERT", "INSERT OR REPLACE", 1),
        // PostgreSQL's replacing insert.
        Engine::Postgres => format!("{insert} ON CONFLICT (seq) DO UPDATE SET actor = 'x'"),
    };
    for sql in [
        "UPDATE audit SET actor = 'someone-else' WHERE seq = 1",
        "UPDATE audit SET detail = '{}' WHERE seq = 2",
        "DELETE FROM audit WHERE seq = 1",
        "DELETE FROM audit",
        &replace,
    ] {
        refused(&f, sql, &["append-only", "extend the hash chain"]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn the_library_knows_exactly_the_audit_kinds_of_a_fresh_ledgers_table(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    let table: Vec<String> = f
        .query("SELECT kind FROM audit_kinds ORDER BY kind")
        .into_iter()
        .map(|row| row[0].clone().expect("a kind"))
        .collect();
    let mut known: Vec<String> = AuditKind::ALL.iter().map(|k| k.to_string()).collect();
    known.sort();
    assert_eq!(known, table);
    Ok(())
}

fn audit_rows_need_a_known_kind_and_a_json_object(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let before = f.snapshot();
    // The first row of the chain in every respect but the one value given.
    let row = |at: &str, actor: &str, kind: &str, session: &str, detail: &str| {
        format!(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES (1, '{at}', '{actor}', '{kind}', {session}, '{detail}', '{}', '{}')",
            "0".repeat(64),
            "a".repeat(64)
        )
    };
    const T: &str = "2026-01-01T00:00:00.000Z";
    // The controls: the row itself is well formed (and rolled back), with a plain id and with
    // the longest id of every character the form allows.
    let mut shell = f.shell();
    let longest = format!("'0{}'", "aZ9._:-".repeat(19).split_at(127).0);
    for id in ["'root'", longest.as_str()] {
        shell.run(&format!(
            "BEGIN; {};",
            row(T, "x", "session.root", id, "{}")
        ))?;
        shell.run("ROLLBACK")?;
    }
    let check = check_failed(engine);
    let not_json = match engine {
        // json_valid() in the CHECK.
        Engine::Sqlite => check,
        // The CHECK's cast to json refuses it.
        Engine::Postgres => "invalid input syntax for type json",
    };
    let long_actor = "x".repeat(65);
    let long_id = format!("'{}'", "s".repeat(129));
    let mut cases = vec![
        (
            row(T, "x", "made.up", "NULL", "{}"),
            // SQLite's trigger runs before its foreign key; PostgreSQL's foreign key (a row
            // trigger) before the statement's trigger.
            vec!["unknown audit kind", "FOREIGN KEY", "audit_kind_fkey"],
        ),
        (
            row(T, "x", "session.root", "NULL", "not json"),
            vec![not_json],
        ),
        (row(T, "x", "session.root", "NULL", "[1]"), vec![check]),
        (row(T, "x", "session.root", "NULL", "1"), vec![check]),
        (row(T, "", "session.root", "NULL", "{}"), vec![check]),
        (
            row(T, &long_actor, "session.root", "NULL", "{}"),
            vec![check],
        ),
        (row(T, "x", "session.root", "''", "{}"), vec![check]),
        (row(T, "x", "session.root", &long_id, "{}"), vec![check]),
        (
            row("not a time", "x", "session.root", "NULL", "{}"),
            vec![check, "time"],
        ),
    ];
    if engine == Engine::Postgres {
        // PostgreSQL holds session_id to the id form of C1, where SQLite checks its length.
        for other_form in ["'-lead'", "'.lead'", "'a b'", "'é1'", "'a/b'", "'a''b'"] {
            cases.push((row(T, "x", "session.root", other_form, "{}"), vec![check]));
        }
    }
    if engine == Engine::Sqlite {
        // PostgreSQL reads this as a time: midnight of the day before.
        cases.push((
            row("yesterday", "x", "session.root", "NULL", "{}"),
            vec![check, "time"],
        ));
    }
    for (sql, expected) in &cases {
        refused(&f, sql, expected);
    }
    assert_eq!(f.count("audit"), 0);
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn sessions_cannot_be_deleted_reused_or_have_their_lineage_changed(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a b");
    f.ledger.end("b", "test")?;
    let before = f.snapshot();
    let reuse = "INSERT INTO sessions (id, depth, origin, created_at)
         VALUES ('a', 0, 'root', '2026-01-01T00:00:00.000Z')";
    let replace = match engine {
        Engine::Sqlite => reuse.replacen("INSERT", "INSERT OR REPLACE", 1),
        // PostgreSQL's replacing insert.
        Engine::Postgres => format!(
            "{reuse} ON CONFLICT (id) DO UPDATE SET created_by = NULL, depth = 0, origin = 'root'"
        ),
    };
    let check = check_failed(engine);
    for (sql, expected) in [
        ("DELETE FROM sessions WHERE id = 'a'", "never deleted"),
        ("DELETE FROM sessions", "never deleted"),
        (
            "UPDATE sessions SET created_by = 'a' WHERE id = 'b'",
            "lineage is immutable",
        ),
        (
            "UPDATE sessions SET depth = 5 WHERE id = 'a'",
            "lineage is immutable",
        ),
        (
            "UPDATE sessions SET id = 'z' WHERE id = 'a'",
            "lineage is immutable",
        ),
        (
            "UPDATE sessions SET ended_at = NULL WHERE id = 'b'",
            "stays ended",
        ),
        (
            "UPDATE sessions SET ended_at = '2999-01-01T00:00:00.000Z' WHERE id = 'b'",
            "stays ended",
        ),
        (reuse, "never reused"),
        (&replace, "never reused"),
        (
            "INSERT INTO sessions (id, created_by, depth, origin, created_at)
             VALUES ('c', 'root', 7, 'created', '2026-01-01T00:00:00.000Z')",
            "one level below an existing creator",
        ),
        (
            "INSERT INTO sessions (id, created_by, depth, origin, created_at)
             VALUES ('d', 'nobody', 1, 'created', '2026-01-01T00:00:00.000Z')",
            "one level below an existing creator",
        ),
        (
            "INSERT INTO sessions (id, depth, origin, created_at)
             VALUES ('e', 0, 'sideways', '2026-01-01T00:00:00.000Z')",
            check,
        ),
        (
            "INSERT INTO sessions (id, depth, origin, created_at)
             VALUES ('has space', 0, 'root', '2026-01-01T00:00:00.000Z')",
            check,
        ),
        (
            "INSERT INTO sessions (id, created_by, depth, origin, created_at)
             VALUES ('c', 'root', 1, 'created', '2026-01-01T00:00:00.000Z');
             UPDATE sessions SET ended_at = '2025-01-01T00:00:00.000Z' WHERE id = 'c'",
            check,
        ),
    ] {
        refused(&f, sql, &[expected]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

#[test]
fn the_schema_is_strict_commented_and_readable() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    f.ledger.state("a")?;
    let conn = f.sql();
    for table in ["sessions", "labels", "audit", "audit_kinds"] {
        let sql: String = conn.query_row(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )?;
        assert!(
            sql.trim_end().ends_with("STRICT") || sql.contains("STRICT,"),
            "{table}: {sql}"
        );
        assert!(sql.contains("--"), "{table} has comments");
    }
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    assert_eq!(app_id, 0x534c_6467);
    let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    assert_eq!(journal, "wal");
    // Enums are words and times are fixed-width ISO text.
    let (origin, created_at): (String, String) = conn.query_row(
        "SELECT origin, created_at FROM sessions WHERE id = 'a'",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!(origin, "created");
    assert_eq!(created_at.len(), "2026-01-01T00:00:00.000Z".len());
    assert!(
        chrono::DateTime::parse_from_rfc3339(&created_at).is_ok(),
        "{created_at}"
    );
    assert!(created_at.ends_with('Z'));
    let path: String = conn.query_row("SELECT path FROM session_tree WHERE id = 'a'", [], |r| {
        r.get(0)
    })?;
    assert_eq!(path, "root/a");
    Ok(())
}

#[test]
fn reopening_a_ledger_keeps_its_data_and_migrates_nothing_twice() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    let before = f.snapshot();
    let path = f.path();
    drop(f.ledger);
    let again = Ledger::init(&path)?;
    assert!(again.session("a")?.is_some());
    let history: i64 =
        raw(&path).query_row("SELECT count(*) FROM refinery_schema_history", [], |r| {
            r.get(0)
        })?;
    assert_eq!(history, session_ledger::schema_version());
    drop(again);
    let conn = raw(&path);
    let rows: i64 = conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
    assert_eq!(
        rows as usize,
        before.iter().filter(|r| r.starts_with("sessions")).count()
    );
    Ok(())
}

#[test]
fn a_database_with_a_newer_schema_is_refused_and_left_untouched() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    let path = f.path();
    drop(f.ledger);
    {
        let conn = raw(&path);
        conn.execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES (999, 'from_the_future', '2030-01-01T00:00:00Z', '1')",
            [],
        )?;
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
    }
    let bytes = fs::read(&path)?;
    let err = Ledger::init(&path).expect_err("newer schema");
    assert!(
        matches!(err, Error::Storage(StorageError::SchemaTooNew { found: 999, supported }) if supported == session_ledger::schema_version()),
        "{err}"
    );
    assert!(err.to_string().contains("newer"), "{err}");
    assert_eq!(fs::read(&path)?, bytes, "file left untouched");
    Ok(())
}

#[test]
fn a_refused_ledger_gets_no_kept_wal_file_beside_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    {
        let ledger = Ledger::open_with(
            &path,
            Config::default()
                .create_if_missing(true)
                .keep_wal_file(false),
        )?;
        ledger.create_root("root", "test")?;
    }
    {
        let conn = raw(&path);
        conn.execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES (999, 'from_the_future', '2030-01-01T00:00:00Z', '1')",
            [],
        )?;
    }
    let listing = || -> std::io::Result<Vec<String>> {
        let mut names: Vec<String> = fs::read_dir(dir.path())?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<std::io::Result<_>>()?;
        names.sort();
        Ok(names)
    };
    assert_eq!(listing()?, ["ledger.db"]);
    // The default keeps the WAL file, but only for a file it has accepted.
    let err = Ledger::init(&path).expect_err("newer schema");
    assert!(
        matches!(err, Error::Storage(StorageError::SchemaTooNew { .. })),
        "{err}"
    );
    assert_eq!(
        listing()?,
        ["ledger.db"],
        "the refusal left files beside the ledger"
    );
    Ok(())
}

#[test]
fn a_file_that_is_not_a_ledger_is_refused_and_left_untouched() -> TestResult {
    let dir = tempfile::tempdir()?;

    let garbage = dir.path().join("garbage.db");
    let noise: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&garbage, &noise)?;
    let err = Ledger::init(&garbage).expect_err("garbage");
    assert!(
        matches!(err, Error::Storage(StorageError::NotALedger(_))),
        "{err}"
    );
    assert_eq!(fs::read(&garbage)?, noise);

    let other = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other)?;
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")?;
    }
    let bytes = fs::read(&other)?;
    let err = Ledger::init(&other).expect_err("someone else's database");
    assert!(
        matches!(err, Error::Storage(StorageError::NotALedger(_))),
        "{err}"
    );
    assert_eq!(fs::read(&other)?, bytes);

    let tagged = dir.path().join("tagged.db");
    {
        let conn = rusqlite::Connection::open(&tagged)?;
        conn.pragma_update(None, "application_id", 42)?;
    }
    let bytes = fs::read(&tagged)?;
    assert!(matches!(
        Ledger::init(&tagged),
        Err(Error::Storage(StorageError::NotALedger(_)))
    ));
    assert_eq!(fs::read(&tagged)?, bytes);
    Ok(())
}

#[test]
fn a_missing_file_is_not_created_unless_asked() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("absent.db");
    let err = Ledger::open_with(&path, Config::default().create_if_missing(false))
        .expect_err("no ledger");
    assert!(
        matches!(err, Error::Storage(StorageError::NoLedger(_))),
        "{err}"
    );
    assert!(!path.exists());
    Ok(())
}

/// `Ledger::open` opens a ledger that exists and creates none: a typo in a path or URL is an
/// error that names the place, not a new empty ledger the caller then trusts. `Ledger::init`
/// is the call that creates one.
fn ledger_open_refuses_a_place_with_no_ledger_and_creates_nothing(engine: Engine) -> TestResult {
    let Some(store) = common::Store::on(engine) else {
        return Ok(());
    };
    let err = Ledger::open(store.target()).expect_err("no ledger there");
    assert!(
        matches!(err, Error::Storage(StorageError::NoLedger(_))),
        "{err}"
    );
    match engine {
        Engine::Sqlite => assert!(!store.path().exists(), "open created the file"),
        Engine::Postgres => assert_eq!(
            store.place().query(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
            ),
            [[Some("0".to_owned())]],
            "open created tables"
        ),
    }
    let created = Ledger::init(store.target())?;
    drop(created);
    Ledger::open(store.target())?;
    Ok(())
}

/// Makes a file read-only even for root (`chattr +i`), or with permissions otherwise; undoes it
/// on drop. `None` when neither works here.
struct ReadOnly(std::path::PathBuf, bool);

impl ReadOnly {
    fn make(path: &std::path::Path) -> Option<ReadOnly> {
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            let mut perms = fs::metadata(path).ok()?.permissions();
            perms.set_readonly(true);
            fs::set_permissions(path, perms).ok()?;
        }
        let guard = ReadOnly(path.to_path_buf(), immutable);
        let writable = fs::OpenOptions::new().append(true).open(path).is_ok();
        (!writable).then_some(guard)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        }
    }
}

#[test]
fn a_read_only_ledger_is_refused_with_its_own_error() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    let path = f.path();
    drop(f.ledger);
    {
        let conn = raw(&path);
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")?;
    }
    let bytes = fs::read(&path)?;
    let Some(_guard) = ReadOnly::make(&path) else {
        // CI installs chattr (.ci/run), so there the test must run, not pass by skipping.
        assert!(
            std::env::var_os("CI").is_none(),
            "cannot make a file read-only here (root without chattr)"
        );
        eprintln!("skipped: cannot make a file read-only here (root without chattr)");
        return Ok(());
    };
    let err = Ledger::init(&path).expect_err("read-only");
    assert!(
        matches!(err, Error::Storage(StorageError::ReadOnly(_))),
        "{err}"
    );
    assert_eq!(fs::read(&path)?, bytes);
    Ok(())
}

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

fn schema_of(path: &std::path::Path) -> Vec<(String, String, Option<String>)> {
    let conn = raw(path);
    let mut stmt = conn
        .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY type, name")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query");
    rows.map(|r| r.expect("row")).collect()
}

/// Writes at `path` a ledger as version 2 of this software left it (migrated to version 2 and
/// marked as a ledger), then runs `rows` on it.
fn version_2_ledger(path: &std::path::Path, rows: &str) -> TestResult {
    let mut conn = rusqlite::Connection::open(path)?;
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(2))
        .run(&mut conn)?;
    conn.execute_batch("PRAGMA application_id = 1397515367;")?;
    conn.execute_batch(rows)?;
    Ok(())
}

#[test]
fn a_ledger_written_before_the_hash_chain_is_chained_on_upgrade_and_matches_a_fresh_schema(
) -> TestResult {
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    {
        // A ledger as version 2 of this software left it, with rows in its audit trail.
        version_2_ledger(
            &old,
            "INSERT INTO sessions (id, depth, origin, created_at)
                  VALUES ('conductor', 0, 'root', '2026-01-01T00:00:00.000Z');
             INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
                  VALUES ('conductor', 'private', 0, '2026-01-01T00:00:00.000Z', 'born');
             INSERT INTO audit (at, actor, kind, session_id, detail)
                  VALUES ('2026-01-01T00:00:00.000Z', 'alice', 'session.root', 'conductor', '{}');
             INSERT INTO audit (at, actor, kind, session_id, detail)
                  VALUES ('2026-01-01T00:00:01.000Z', 'alice', 'label.raise', 'conductor',
                          '{\"note\":\"é, multi-byte\"}');
             INSERT INTO audit (at, actor, kind, session_id, detail)
                  VALUES ('2026-01-01T00:00:02.000Z', 'dashboard', 'epoch.start', NULL, '{}');",
        )?;
    }
    let ledger = Ledger::init(&old)?;
    let v = ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.rows, 3);
    // New rows extend the chain the upgrade computed.
    ledger.create_child("worker", "conductor", "alice")?;
    assert!(ledger.verify(None)?.ok);
    drop(ledger);

    let fresh = dir.path().join("fresh.db");
    drop(Ledger::init(&fresh)?);
    assert_eq!(schema_of(&old), schema_of(&fresh));
    Ok(())
}

#[test]
fn an_older_ledger_with_a_broken_reference_is_refused_before_it_is_upgraded() -> TestResult {
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    // A ledger as version 2 left it, with a command pattern on a session that does not exist
    // (a hand edit with foreign keys off, the sqlite3 shell's default).
    version_2_ledger(
        &old,
        "PRAGMA foreign_keys = OFF;
         INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
              VALUES ('ghost', 'ls', 'x', '2026-01-01T00:00:00.000Z');",
    )?;
    let version = |path: &std::path::Path| -> rusqlite::Result<i64> {
        raw(path).query_row(
            "SELECT max(version) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )
    };
    let before = version(&old)?;
    let err = Ledger::init(&old).expect_err("a broken reference");
    assert!(matches!(err, Error::Corruption(_)), "{err}");
    assert_eq!(version(&old)?, before, "the refused ledger was upgraded");
    Ok(())
}

#[test]
fn the_schema_is_built_by_its_fifteen_migrations_in_order() -> TestResult {
    let f = Fixture::new();
    let conn = f.sql();
    let mut stmt =
        conn.prepare("SELECT version, name FROM refinery_schema_history ORDER BY version")?;
    let history: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let expected = [
        "sessions_labels_audit",
        "postures_grants_epochs",
        "audit_hash_chain",
        "leaner_writes",
        "live_children_index",
        "audit_without_kind_index",
        "labels_guarded_without_check_constraints",
        "revocation_events",
        "contract_items",
        "audit_tree_and_checkpoints",
        "every_live_authority",
        "decision_records",
        "ledger_options",
        "canonical_audit_detail",
        "archives",
    ];
    let expected: Vec<(i64, String)> = (1..)
        .zip(expected.iter().map(|n| (*n).to_owned()))
        .collect();
    assert_eq!(history, expected);
    assert_eq!(session_ledger::schema_version(), 15);
    Ok(())
}

/// Writes at `path` a ledger as version 7 of this software left it, with `rows` in its audit
/// trail, each `(at, actor, kind, session, detail)`, chained as that version chained them.
fn version_7_ledger(path: &std::path::Path, rows: &[(&str, &str, &str, &str, &str)]) -> TestResult {
    let mut conn = rusqlite::Connection::open(path)?;
    // Version 3 chains existing rows with sha3(), which the library registers and the stock
    // shell has built in.
    conn.create_scalar_function(
        "sha3",
        2,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8
            | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            use sha3::Digest;
            let text: String = ctx.get(0)?;
            Ok(sha3::Sha3_256::digest(text.as_bytes()).to_vec())
        },
    )?;
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(7))
        .run(&mut conn)?;
    conn.execute_batch("PRAGMA application_id = 1397515367;")?;
    let mut prev = session_ledger::GENESIS_HASH.to_owned();
    for (seq, (at, actor, kind, session, detail)) in (1..).zip(rows) {
        let hash = session_ledger::chain_hash(&prev, seq, at, actor, kind, Some(session), detail);
        conn.execute(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            (seq, at, actor, kind, session, detail, &prev, &hash),
        )?;
        prev = hash;
    }
    Ok(())
}

#[test]
fn a_trail_whose_times_went_back_before_version_8_is_still_listed_by_time_correctly() -> TestResult
{
    use session_ledger::AuditQuery;
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    // Written by a build that took the wall clock as it was: the clock stepped back twice.
    let times = [
        "2026-01-01T10:00:00.000Z",
        "2026-01-01T10:05:00.000Z",
        "2026-01-01T10:10:00.000Z",
        "2026-01-01T09:00:00.000Z", // back
        "2026-01-01T09:30:00.000Z",
        "2026-01-01T10:07:00.000Z",
        "2026-01-01T10:01:00.000Z", // back: the last such row
        "2026-01-01T10:20:00.000Z",
        "2026-01-01T10:20:00.000Z",
        "2026-01-01T10:40:00.000Z",
    ];
    let rows: Vec<_> = times
        .iter()
        .map(|at| (*at, "op", "session.root", "r", "{}"))
        .collect();
    version_7_ledger(&old, &rows)?;
    let ledger = Ledger::init(&old)?;
    let ordered_from: i64 =
        raw(&old).query_row("SELECT ordered_from FROM audit_time_order", [], |r| {
            r.get(0)
        })?;
    assert_eq!(ordered_from, 7);
    assert!(
        ledger.verify(None)?.ok,
        "times that went back before are no tampering"
    );

    let at = |s: &str| -> chrono::DateTime<chrono::Utc> { s.parse().expect("time") };
    let seqs = |q: AuditQuery| -> Vec<i64> {
        ledger
            .audit(&q)
            .expect("audit")
            .into_iter()
            .map(|r| r.seq)
            .collect()
    };
    let window = |since: &str, until: &str| -> Vec<i64> {
        (1..)
            .zip(times)
            .filter(|(_, t)| *t >= since && *t < until)
            .map(|(seq, _)| seq)
            .collect()
    };
    for (since, until) in [
        ("2026-01-01T10:00:00.000Z", "2026-01-01T11:00:00.000Z"),
        ("2026-01-01T09:15:00.000Z", "2026-01-01T10:06:00.000Z"),
        ("2026-01-01T10:06:00.000Z", "2026-01-01T10:30:00.000Z"),
        ("2026-01-01T08:00:00.000Z", "2026-01-01T09:45:00.000Z"),
        ("2026-01-01T10:20:00.000Z", "2026-01-01T10:20:00.001Z"),
    ] {
        let expected = window(since, until);
        assert_eq!(
            seqs(AuditQuery::all().since(at(since)).until(at(until))),
            expected,
            "{since} .. {until}"
        );
        let newest = expected[expected.len().saturating_sub(2)..].to_vec();
        assert_eq!(
            seqs(AuditQuery::all().since(at(since)).until(at(until)).limit(2)),
            newest,
            "{since} .. {until}, the newest two"
        );
    }
    Ok(())
}

#[test]
fn revocations_written_before_version_8_are_told_apart_by_the_first_row_of_their_run() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    let t = "2026-01-01T10:00:00.000Z";
    let cascade = |root: &str| {
        format!(
            r#"{{"current":true,"granted_on":"{root}","posture":"trust","propagation":"cascade","root":"{root}","source":"inherited"}}"#
        )
    };
    let (a, b) = (cascade("a"), cascade("b"));
    let grant = r#"{"posture":"trust","previous":null}"#;
    // In one millisecond, by one operator: a cascade from a (rows 1-2), one from b (3), a grant
    // on a (4), and a second cascade from a (5-6).
    version_7_ledger(
        &old,
        &[
            (t, "op", "posture.revoke", "a", &a),
            (t, "op", "posture.revoke", "a1", &a),
            (t, "op", "posture.revoke", "b", &b),
            (t, "op", "posture.grant", "a", grant),
            (t, "op", "posture.revoke", "a", &a),
            (t, "op", "posture.revoke", "a1", &a),
        ],
    )?;
    let ledger = Ledger::init(&old)?;
    // And one written by this version.
    ledger.create_root("c", "op")?;
    ledger.grant("c", session_ledger::PostureLevel::Trust, "op")?;
    ledger.revoke("c", session_ledger::Propagation::Local, "op")?;
    let conn = raw(&old);
    let mut stmt = conn.prepare("SELECT seq, revocation FROM revocations ORDER BY seq")?;
    let ids: Vec<(i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(ids, [(1, 1), (2, 1), (3, 3), (5, 5), (6, 5), (9, 9)]);
    Ok(())
}

engine_tests! {
    ledger_open_refuses_a_place_with_no_ledger_and_creates_nothing,
    audit_rows_cannot_be_updated_or_deleted,
    the_library_knows_exactly_the_audit_kinds_of_a_fresh_ledgers_table,
    audit_rows_need_a_known_kind_and_a_json_object,
    sessions_cannot_be_deleted_reused_or_have_their_lineage_changed,
}
