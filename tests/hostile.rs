//! Hostile input: ids at and past the limits, control characters, invalid UTF-8 on the command
//! line, very deep spawned ids, a tree at the depth bound, and database files that are
//! truncated or garbage. Each gets a clear error, no panic, and nothing is lost.

mod common;

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::process::Command;

use common::{Fixture, TestResult};
use session_ledger::{
    Config, CreationRefused, Error, IdProblem, InputError, Ledger, StorageError, MAX_ID_LEN,
};

fn cli(db: &std::path::Path, args: &[OsString]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_session-ledger"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("SESSION_LEDGER_DB")
        .output()
        .expect("run the CLI");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn refused_cleanly((code, stdout, stderr): (Option<i32>, String, String)) {
    assert!(matches!(code, Some(1) | Some(2)), "exit {code:?}: {stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn ids_with_control_characters_or_nul_are_refused_everywhere() -> TestResult {
    let f = Fixture::new();
    f.build("root > a");
    let before = f.snapshot();
    for id in [
        "a\0",
        "\0",
        "a\nb",
        "a\rb",
        "a\tb",
        "\u{7f}a",
        "a\u{1b}[31m",
        "é",
        "a\u{200b}b",
    ] {
        for r in [
            f.ledger.create_root(id, "op").map(|_| ()),
            f.ledger.create_child(id, "root", "op").map(|_| ()),
            f.ledger.state(id).map(|_| ()),
            f.ledger.end(id, "op").map(|_| ()),
            f.ledger.decide(id, "ls", true).map(|_| ()),
            f.ledger.explain(id).map(|_| ()),
        ] {
            assert!(
                matches!(r, Err(Error::Input(InputError::InvalidId { .. }))),
                "{id:?}: {r:?}"
            );
        }
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

#[test]
fn ids_at_the_length_limit_work_and_one_past_it_is_refused() -> TestResult {
    let f = Fixture::new();
    let at = "a".repeat(MAX_ID_LEN);
    let past = "a".repeat(MAX_ID_LEN + 1);
    f.ledger.create_root(&at, "op")?;
    assert!(f.ledger.state(&at)?.known);
    assert!(matches!(
        f.ledger.create_root(&past, "op"),
        Err(Error::Input(InputError::InvalidId {
            problem: IdProblem::TooLong,
            ..
        }))
    ));
    let huge = "a".repeat(1 << 20);
    assert!(matches!(
        f.ledger.state(&huge),
        Err(Error::Input(InputError::InvalidId { .. }))
    ));
    Ok(())
}

#[test]
fn the_deepest_spawned_id_that_fits_is_recorded_link_by_link() -> TestResult {
    let f = Fixture::new();
    f.ledger.create_root("r", "op")?;
    // sub-sub-...-r-1-1-...-1: each level adds 6 bytes; build the deepest that fits.
    let mut id = "r".to_owned();
    let mut levels = 0;
    while id.len() + 6 <= MAX_ID_LEN {
        id = format!("sub-{id}-1");
        levels += 1;
    }
    assert!(f.ledger.state(&id)?.known);
    assert_eq!(f.ledger.ancestors(&id)?.len(), levels);
    let deeper = format!("sub-{id}-1");
    assert!(matches!(
        f.ledger.state(&deeper),
        Err(Error::Input(InputError::InvalidId { .. }))
    ));
    Ok(())
}

#[test]
fn a_tree_at_the_depth_bound_takes_no_deeper_child() -> TestResult {
    let f = Fixture::with(Config::default().create_if_missing(true).max_depth(5));
    f.ledger.create_root("d0", "op")?;
    for d in 1..=5 {
        f.ledger
            .create_child(&format!("d{d}"), &format!("d{}", d - 1), "op")?;
    }
    assert!(matches!(
        f.ledger.create_child("d6", "d5", "op"),
        Err(Error::Refused(CreationRefused::DepthLimit {
            depth: 6,
            max: 5,
            ..
        }))
    ));
    // The deepest session still reads, and its spawned children are still recorded.
    assert!(f.ledger.state("d5")?.known);
    assert!(f.ledger.state("sub-d5-1")?.known);
    Ok(())
}

#[test]
fn invalid_utf8_on_the_command_line_is_a_clear_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("ledger.db");
    assert_eq!(cli(&db, &["init".into()]).0, Some(0));
    let bad = OsString::from_vec(vec![b'a', 0xff, 0xfe, b'b']);
    for args in [
        vec!["create".into(), bad.clone()],
        vec!["state".into(), bad.clone()],
        vec!["raise".into(), "x".into(), "--taint".into(), bad.clone()],
        vec!["decide".into(), "x".into(), "--".into(), bad.clone()],
        vec!["create".into(), "x".into(), "--actor".into(), bad.clone()],
    ] {
        refused_cleanly(cli(&db, &args));
    }
    Ok(())
}

#[test]
fn control_characters_on_the_command_line_get_a_one_line_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("ledger.db");
    assert_eq!(cli(&db, &["init".into()]).0, Some(0));
    for id in ["a\nb", "a\rb", "\u{1b}[2J", "a\u{7}"] {
        refused_cleanly(cli(&db, &["create".into(), id.into()]));
        refused_cleanly(cli(&db, &["state".into(), id.into()]));
    }
    Ok(())
}

fn ledger_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let f = Fixture::new();
    f.build("conductor > a b c");
    for i in 0..300 {
        f.ledger.create_root(&format!("r{i}"), "op").expect("root");
    }
    let path = f.path();
    drop(f.ledger);
    common::raw(&path)
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .expect("checkpoint");
    (f.store.dir, path)
}

#[test]
fn a_file_too_short_to_be_a_database_is_refused_and_left_as_it_is() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("notes.txt");
    // SQLite takes a file of 0 or 1 byte for an empty database and would write a ledger over it.
    for content in [&b"x"[..], b"0123456789abcde"] {
        fs::write(&path, content)?;
        let err = Ledger::init(&path).expect_err("not a ledger");
        assert!(
            matches!(err, Error::Storage(StorageError::NotALedger(_))),
            "{content:?}: {err:?}"
        );
        assert_eq!(fs::read(&path)?, content, "the file is left as it is");
        let (code, _, stderr) = cli(&path, &["state".into(), "x".into()]);
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(fs::read(&path)?, content, "the CLI left the file as it is");
    }
    // An empty file is no ledger either, for a command that does not create one.
    fs::write(&path, b"")?;
    let (code, _, stderr) = cli(&path, &["state".into(), "x".into()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        fs::read(&path)?,
        b"",
        "the CLI left the empty file as it is"
    );
    Ok(())
}

#[test]
fn a_truncated_ledger_gives_a_clear_error_and_is_left_as_it_is() -> TestResult {
    let (_dir, path) = ledger_file();
    let bytes = fs::read(&path)?;
    assert!(bytes.len() > 8192);
    for keep in [bytes.len() / 2, 4096 + 100, 50] {
        fs::write(&path, &bytes[..keep])?;
        let outcome = Ledger::init(&path).and_then(|l| {
            l.verify(None)?;
            l.forest()?;
            l.state("r299")
        });
        match outcome {
            Err(e) => {
                let message = e.to_string();
                assert!(!message.is_empty());
                assert!(
                    matches!(
                        e,
                        Error::Storage(StorageError::NotALedger(_))
                            | Error::Storage(_)
                            | Error::Corruption(_)
                    ),
                    "{keep}: {e:?}"
                );
            }
            Ok(state) => panic!("a ledger cut to {keep} bytes read {state:?}"),
        }
        assert_eq!(
            fs::read(&path)?,
            bytes[..keep],
            "the truncated file is left as it is"
        );
        let (code, _, stderr) = cli(&path, &["verify".into()]);
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    Ok(())
}

#[test]
fn a_ledger_with_garbage_written_over_its_pages_gives_a_clear_error() -> TestResult {
    let (_dir, path) = ledger_file();
    let mut bytes = fs::read(&path)?;
    let len = bytes.len();
    // Keep the header and the first page, scribble over everything after.
    for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
        *b = (i.wrapping_mul(2_654_435_761) >> 7) as u8;
    }
    fs::write(&path, &bytes)?;
    let outcome = Ledger::init(&path).and_then(|l| {
        l.verify(None)?;
        l.forest()
    });
    assert!(outcome.is_err(), "garbage pages were read as a ledger");
    assert_eq!(fs::read(&path)?.len(), len);
    let (code, _, stderr) = cli(&path, &["tree".into()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"));
    Ok(())
}

#[test]
fn settings_the_pool_or_sqlite_cannot_take_are_an_error_and_create_no_file() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ledger.db");
    let mut no_pool = Config::default().create_if_missing(true);
    no_pool.pool_size = 0;
    // SQLite takes a busy timeout in milliseconds as a C int: at most about 24.8 days.
    let too_patient = Config::default()
        .create_if_missing(true)
        .busy_timeout(std::time::Duration::from_secs(30 * 86_400));
    for config in [no_pool, too_patient] {
        let err = Ledger::open_with(&path, config).expect_err("refused");
        assert!(
            matches!(err, Error::Input(InputError::InvalidConfig(_))),
            "{err}"
        );
        assert!(err.is_caller_error(), "{err}");
        assert!(!path.exists(), "{err}: a file was created");
    }
    Ok(())
}
