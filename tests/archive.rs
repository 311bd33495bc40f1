//! Archiving (rule K1, contract C42): ended trees and the trail up to a signed checkpoint move
//! into a file that verifies on its own and against the live ledger; the live ledger keeps
//! what it needs (every archived id unusable, the chain verified from the archive's boundary,
//! the tree extendable and provable), says where an archived session went, and never gives up
//! a tree with a session still running or a row past the newest checkpoint.

#[macro_use]
mod common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::{Engine, Random, TestResult};
use session_ledger::{
    ArchiveRequest, AskedBy, AuditQuery, CheckpointOptions, Config, Conflict, Error, Ledger,
    PostureLevel, ReadOnly, SignerKey,
};

fn roomy() -> Config {
    Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

/// A tree `root > root-1 root-2` whose sessions all act and then end: a posture, a pattern, a
/// raised label and a recorded decision.
fn ended_tree(ledger: &Ledger, root: &str) -> TestResult {
    ledger.create_root(root, "alice")?;
    ledger.grant(root, PostureLevel::Trust, "alice")?;
    for i in 1..=2 {
        let child = format!("{root}-{i}");
        ledger.create_child(&child, root, "alice")?;
        ledger.add_pattern(&child, "npm test", "alice")?;
        ledger.state(&child)?;
        let asked = AskedBy {
            actor: "claude-code",
            tool_use_id: None,
        };
        ledger.decide_and_record(&child, "git status", ReadOnly::Classify, &asked)?;
        ledger.end(&child, "alice")?;
    }
    ledger.end(root, "alice")?;
    Ok(())
}

fn archived(result: session_ledger::Result<impl std::fmt::Debug>) -> bool {
    matches!(
        result,
        Err(Error::Conflict(Conflict::SessionArchived { .. }))
    )
}

fn an_archive_moves_ended_trees_and_the_trail_up_to_a_checkpoint_and_both_verify(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine, roomy());
    let ledger = &f.ledger;
    let key = SignerKey::generate("example.org/ledger")?;
    ended_tree(ledger, "done")?;
    ledger.create_root("running", "alice")?;
    ledger.create_child("running-1", "running", "alice")?;
    let signed = ledger.checkpoint(&key, None, "alice")?;
    ledger.create_child("running-2", "running", "alice")?;

    let file = f.dir.path().join("archive-1.db");
    let cut = Utc::now() + TimeDelta::seconds(1);
    let run = ledger.archive(&file, &ArchiveRequest::before(cut), "alice")?;
    let made = run.made.expect("an archive was made");
    assert_eq!((made.archive, made.trees, made.sessions), (1, 1, 3));
    assert_eq!(
        (made.trail_from, made.trail_size),
        (0, signed.checkpoint.size)
    );
    assert_eq!(made.decision_records, 2);
    assert!(made.stayed_live.is_empty());

    // The live ledger: the tree is gone, its ids refused, the running tree untouched.
    assert_eq!(ledger.session("done")?, None);
    assert!(archived(ledger.state("done-1")));
    assert!(
        archived(ledger.state("sub-done-1-1")),
        "a sub-agent of an archived session"
    );
    assert!(ledger.create_root("done", "alice").is_err());
    let where_to = ledger.archived("done-2")?.expect("recorded as archived");
    assert_eq!((where_to.tree.as_str(), where_to.archive), ("done", 1));
    assert_eq!(ledger.subtree("running")?.len(), 3);
    let first = ledger.audit(&AuditQuery::default())?[0].seq;
    assert_eq!(
        first as u64,
        signed.checkpoint.size + 1,
        "the trail starts after the boundary"
    );

    // It verifies from the boundary, checks, and goes on growing and signing.
    assert!(ledger.verify(None)?.ok);
    assert!(ledger.check()?.ok, "{:?}", ledger.check()?);
    assert!(
        ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?
            .ok
    );
    ledger.create_root("later", "alice")?;
    let next = ledger.checkpoint(&key, None, "alice")?;
    let v = ledger.verify_checkpoint(&next.note, &key.verifier(), &CheckpointOptions::default())?;
    assert!(v.ok, "{:?}", v.findings);
    let mut fast = CheckpointOptions::default();
    fast.fast = true;
    assert!(
        ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &fast)?
            .ok
    );

    // The file verifies alone and against the live ledger.
    let alone = Ledger::verify_archive_file(&file, &key.verifier())?;
    assert!(alone.ok, "{:?}", alone.findings);
    let both = ledger.verify_archive(&file, &key.verifier(), true)?;
    assert!(both.ok, "{:?}", both.findings);
    assert!(
        both.findings.iter().any(|f| f.check == "consistency"),
        "{:?}",
        both.findings
    );

    // A second archive starts where the first ended.
    ended_tree(ledger, "second")?;
    let third = ledger.checkpoint(&key, None, "alice")?;
    // The feeds: a reader resuming inside what left is told so, not handed a skip.
    let boundary = signed.checkpoint.size as i64;
    assert!(matches!(
        ledger.audit_after(0, 10),
        Err(Error::Conflict(Conflict::Archived(_)))
    ));
    assert_eq!(ledger.audit_after(boundary, 1)?[0].seq, boundary + 1);
    let resumed = ledger.decisions_after(0, 10);
    assert!(
        matches!(resumed, Err(Error::Conflict(Conflict::Archived(_)))),
        "{:?}",
        resumed.map(|r| r.iter().map(|d| d.seq).collect::<Vec<_>>())
    );
    assert_eq!(ledger.decisions_after(2, 10)?.len(), 2);
    let file2 = f.dir.path().join("archive-2.db");
    let run = ledger.archive(
        &file2,
        &ArchiveRequest::before(Utc::now() + TimeDelta::seconds(1)),
        "alice",
    )?;
    let made = run.made.expect("a second archive");
    assert_eq!((made.archive, made.trail_from), (2, signed.checkpoint.size));
    assert_eq!((made.trail_size, made.sessions), (third.checkpoint.size, 3));
    assert!(Ledger::verify_archive_file(&file2, &key.verifier())?.ok);
    assert!(ledger.verify_archive(&file2, &key.verifier(), true)?.ok);
    assert!(ledger.verify(None)?.ok);
    assert!(ledger.check()?.ok);
    // An outsider rebuilds both checkpoints' roots from the archives' JSON rows, in order,
    // with the documented program: the archives' trails are the trail's first rows.
    let mut rows = Vec::new();
    for archive in [&file, &file2] {
        let listed = std::process::Command::new(BIN)
            .arg("--db")
            .arg(archive)
            .args(["--json-lines", "audit"])
            .output()?;
        assert!(
            listed.status.success(),
            "{}",
            String::from_utf8_lossy(&listed.stderr)
        );
        rows.extend(listed.stdout);
    }
    let printed = common::audit_leaves(f.dir.path(), &rows, third.checkpoint.size)?;
    let last = printed.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "root {} {}",
            third.checkpoint.size,
            third.checkpoint.root_base64()
        )
    );
    assert_eq!(printed.lines().count() as u64, third.checkpoint.size + 1);
    // The first one still verifies against the live ledger, now past two boundaries.
    assert!(ledger.verify_archive(&file, &key.verifier(), true)?.ok);
    // A receipt or a consistency proof that reaches into the archives says where they are.
    for refused in [
        ledger.prove(1, None).map(|_| ()),
        ledger.consistency_proof(1, None).map(|_| ()),
    ] {
        assert!(
            matches!(&refused, Err(Error::Conflict(Conflict::Archived(why))) if why.contains("archive-2.db")),
            "{refused:?}"
        );
    }
    // A row past the boundary is proved from the live ledger, against a later checkpoint.
    let fourth = ledger.checkpoint(&key, None, "alice")?;
    let receipt = ledger.prove(third.checkpoint.size as i64 + 1, Some(&fourth.note))?;
    assert!(session_ledger::verify_receipt(&receipt.to_text(), None, &key.verifier())?.ok);
    let proof = ledger.consistency_proof(third.checkpoint.size, Some(fourth.checkpoint.size))?;
    assert!(session_ledger::verify_consistency(
        third.checkpoint.size,
        fourth.checkpoint.size,
        &third.checkpoint.root,
        &fourth.checkpoint.root,
        &proof.proof
    ));
    // An old checkpoint points at the archives.
    let old =
        ledger.verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    assert!(!old.ok);
    assert_eq!(
        old.findings.last().and_then(|f| f.problem.as_deref()),
        Some("archived")
    );
    Ok(())
}

fn an_archive_never_takes_a_tree_with_a_session_still_running(engine: Engine) -> TestResult {
    let f = fixture!(engine, roomy());
    let ledger = &f.ledger;
    let key = SignerKey::generate("example.org/ledger")?;
    ledger.create_root("busy", "alice")?;
    ledger.create_child("busy-1", "busy", "alice")?;
    ledger.end("busy", "alice")?;
    ledger.checkpoint(&key, None, "alice")?;
    let file = f.dir.path().join("archive.db");
    let refused = ledger.archive(&file, &ArchiveRequest::tree("busy"), "alice");
    assert!(
        matches!(refused, Err(Error::Conflict(Conflict::NotArchivable(ref why))) if why.contains("busy-1")),
        "{refused:?}"
    );
    let refused = ledger.archive(&file, &ArchiveRequest::tree("busy-1"), "alice");
    assert!(matches!(
        refused,
        Err(Error::Conflict(Conflict::NotArchivable(_)))
    ));
    assert!(!file.exists(), "nothing written");
    // By age: the running tree is left, and the trail still goes up to the checkpoint.
    let run = ledger.archive(
        &file,
        &ArchiveRequest::before(Utc::now() + TimeDelta::seconds(1)),
        "alice",
    )?;
    let made = run.made.expect("the trail alone");
    assert_eq!(made.trees, 0);
    assert_eq!(ledger.subtree("busy")?.len(), 2);
    assert!(ledger.verify(None)?.ok);
    // Nothing more to take: no archive, no file.
    let again = f.dir.path().join("again.db");
    let run = ledger.archive(&again, &ArchiveRequest::before(Utc::now()), "alice")?;
    assert!(run.made.is_none());
    assert!(!again.exists());
    Ok(())
}

/// The command line: `archive --tree` and `--before`, `verify --archive` alone and against the
/// live ledger (exit 0), a changed archive (exit 1, naming the check), and `state`, `explain`
/// and `audit --session` of an archived session saying where it went.
fn the_command_line_archives_checks_an_archive_and_says_where_a_session_went(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine, roomy());
    ended_tree(&f.ledger, "done")?;
    f.ledger.create_root("running", "alice")?;
    let dir = f.dir.path();
    let key_file = dir.join("signing.key");
    let run = |args: &[&str]| -> Result<std::process::Output, std::io::Error> {
        std::process::Command::new(BIN)
            .args(["--db", &f.target()])
            .args(args)
            .output()
    };
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let keygen = run(&[
        "checkpoint",
        "keygen",
        "--key",
        &key_file.display().to_string(),
        "--name",
        "example.org/ledger",
    ])?;
    assert!(keygen.status.success(), "{}", text(&keygen));
    let verifier = String::from_utf8(keygen.stdout)?.trim().to_owned();
    let sign = run(&[
        "checkpoint",
        "sign",
        "--key",
        &key_file.display().to_string(),
    ])?;
    assert!(sign.status.success(), "{}", text(&sign));

    let refused = run(&["archive", "--tree", "running", "--to", "x.db"])?;
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("still running"),
        "{}",
        text(&refused)
    );
    let neither = run(&["archive", "--to", "x.db"])?;
    assert_eq!(neither.status.code(), Some(2), "{}", text(&neither));

    let file = dir.join("archive-1.db").display().to_string();
    let made = run(&["archive", "--before", "2999-01-01T00:00:00Z", "--to", &file])?;
    assert!(made.status.success(), "{}", text(&made));
    assert!(
        text(&made).contains("archive 1 written to"),
        "{}",
        text(&made)
    );
    for args in [
        vec![
            "verify",
            "--archive",
            &file,
            "--verifier-key",
            &verifier,
            "--alone",
        ],
        vec!["verify", "--archive", &file, "--verifier-key", &verifier],
    ] {
        let checked = run(&args)?;
        assert!(checked.status.success(), "{args:?}: {}", text(&checked));
        assert!(text(&checked).contains("OK: "), "{}", text(&checked));
    }
    for args in [
        vec!["state", "done-1"],
        vec!["explain", "done"],
        vec!["tree", "done"],
    ] {
        let said = run(&args)?;
        assert_eq!(said.status.code(), Some(1), "{args:?}");
        assert!(
            text(&said).contains("was archived on") && text(&said).contains(&file),
            "{args:?}: {}",
            text(&said)
        );
    }
    let listed = run(&["audit", "--session", "done"])?;
    assert!(listed.status.success());
    assert!(
        text(&listed).contains("done was archived on"),
        "{}",
        text(&listed)
    );

    // A copy with one row changed fails, and says which check.
    let changed = dir.join("changed.db");
    std::fs::copy(&file, &changed)?;
    common::tamper_at(&changed, "UPDATE audit SET actor = 'mallory' WHERE seq = 2");
    let checked = run(&[
        "verify",
        "--archive",
        &changed.display().to_string(),
        "--verifier-key",
        &verifier,
        "--alone",
    ])?;
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    assert!(
        text(&checked).contains("INVALID (rewritten)"),
        "{}",
        text(&checked)
    );
    assert!(text(&checked).contains("FAILED"), "{}", text(&checked));
    Ok(())
}

engine_tests! {
    an_archive_moves_ended_trees_and_the_trail_up_to_a_checkpoint_and_both_verify,
    an_archive_never_takes_a_tree_with_a_session_still_running,
    an_archive_killed_at_any_moment_leaves_every_tree_live_or_archived_and_the_next_run_finishes,
    the_command_line_archives_checks_an_archive_and_says_where_a_session_went,
}

const BIN: &str = env!("CARGO_BIN_EXE_session-ledger");

/// `trees` ended trees `t<i> > t<i>-1` (each with a materialized label and a recorded
/// decision on every tenth), one running tree, and a signed checkpoint over it all.
fn many_ended_trees(ledger: &Ledger, trees: usize, key: &SignerKey) -> TestResult {
    let asked = AskedBy {
        actor: "claude-code",
        tool_use_id: None,
    };
    for i in 0..trees {
        let (root, child) = (format!("t{i}"), format!("t{i}-1"));
        ledger.create_root(&root, "alice")?;
        ledger.create_child(&child, &root, "alice")?;
        ledger.state(&child)?;
        if i % 10 == 0 {
            ledger.decide_and_record(&child, "ls", ReadOnly::Classify, &asked)?;
        }
        ledger.end(&child, "alice")?;
        ledger.end(&root, "alice")?;
    }
    ledger.create_root("running", "alice")?;
    ledger.create_child("running-1", "running", "alice")?;
    ledger.checkpoint(key, None, "alice")?;
    Ok(())
}

/// `session-ledger archive` of every ended tree into `to`, on the ledger `target`.
fn archive_command(target: &str, to: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(BIN);
    command
        .args([
            "--db",
            target,
            "archive",
            "--before",
            "2999-01-01T00:00:00Z",
            "--to",
        ])
        .arg(to)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    command
}

/// `session-ledger archive` killed with SIGKILL at random moments of its run, then run again:
/// after the kill every ended tree is either all live or all recorded as archived in a file that
/// holds it, never half of one and never in both; the next run finishes what the killed one
/// recorded (or makes the archive anew), after which every ended tree is archived exactly once,
/// the live ledger verifies and checks, and every recorded archive verifies alone and against
/// it. `ARCHIVE_CRASH_TRIALS` trials (default 6; SQLite and PostgreSQL alike).
fn an_archive_killed_at_any_moment_leaves_every_tree_live_or_archived_and_the_next_run_finishes(
    engine: Engine,
) -> TestResult {
    const TREES: usize = 400;
    let trials: usize = std::env::var("ARCHIVE_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let key = SignerKey::generate("example.org/ledger")?;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        | 1;
    println!("seed {seed}");
    let mut random = Random(seed);

    // One run left alone, for how long one takes.
    let timed = fixture!(engine, roomy());
    many_ended_trees(&timed.ledger, TREES, &key)?;
    let started = std::time::Instant::now();
    let whole = archive_command(&timed.target(), &timed.dir.path().join("timed.db")).output()?;
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let takes = started.elapsed().as_millis() as u64;

    // What the kill left: nothing recorded, a file with no archive row, an archive recorded
    // with rows still to leave, or all done.
    let mut outcomes = [0usize; 4];
    for trial in 0..trials {
        let f = fixture!(engine, roomy());
        many_ended_trees(&f.ledger, TREES, &key)?;
        let killed_to = f.dir.path().join(format!("killed-{trial}.db"));
        let mut child = archive_command(&f.target(), &killed_to).spawn()?;
        std::thread::sleep(Duration::from_millis(random.below(takes + takes / 4 + 1)));
        child.kill()?;
        child.wait()?;

        // Right after the kill: each tree whole on one side.
        let recorded = f.count("archives");
        let live_ended = f.count("sessions") - 2;
        let archived = f.count("archived_sessions");
        assert_eq!(
            live_ended + archived,
            2 * TREES as i64,
            "trial {trial}: a session is on neither side, or on both"
        );
        assert_eq!(archived % 2, 0, "trial {trial}: a tree was split");
        let both: i64 = f
            .query("SELECT count(*) FROM sessions WHERE id IN (SELECT id FROM archived_sessions)")
            [0][0]
            .as_deref()
            .unwrap_or("0")
            .parse()?;
        assert_eq!(both, 0, "trial {trial}: a session is live and archived");
        outcomes[match (recorded, killed_to.exists(), live_ended) {
            (0, false, _) => 0,
            (0, true, _) => 1,
            (_, _, 0) => 3,
            _ => 2,
        }] += 1;
        assert!(
            f.ledger.verify(None)?.ok,
            "trial {trial}: the trail verifies after the kill"
        );
        let kept = f.query("SELECT id, archive FROM archived_sessions ORDER BY id");

        // The next run finishes it.
        let next_to = f.dir.path().join(format!("next-{trial}.db"));
        let next = archive_command(&f.target(), &next_to).output()?;
        assert!(
            next.status.success(),
            "{}",
            String::from_utf8_lossy(&next.stderr)
        );
        assert_eq!(
            f.count("sessions"),
            2,
            "trial {trial}: every ended tree left"
        );
        assert_eq!(f.count("archived_sessions"), 2 * TREES as i64);
        assert!(f.ledger.verify(None)?.ok);
        assert!(f.ledger.check()?.ok, "{:?}", f.ledger.check()?);
        for file in f.column("SELECT file FROM archives ORDER BY archive") {
            let v = f.ledger.verify_archive(&file, &key.verifier(), true)?;
            assert!(v.ok, "trial {trial}: {file}: {:?}", v.findings);
        }
        // Every archived session is in the file of its archive.
        for (file, want) in f
            .query("SELECT a.file, count(*) FROM archived_sessions AS s JOIN archives AS a USING (archive) GROUP BY a.file")
            .into_iter()
            .map(|r| (r[0].clone().unwrap_or_default(), r[1].clone().unwrap_or_default()))
        {
            let held: i64 = rusqlite::Connection::open_with_flags(
                &file,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
            assert!(held >= want.parse::<i64>()?, "trial {trial}: {file} holds {held} sessions");
        }
        // What the killed run archived stays where it went.
        let now_archived = f.query("SELECT id, archive FROM archived_sessions ORDER BY id");
        for row in &kept {
            assert!(now_archived.contains(row), "trial {trial}: {row:?} moved");
        }
    }
    println!(
        "archive crash sweep ({engine:?}): {trials} runs of {TREES} trees killed at random within \
         {takes} ms: {} left nothing recorded, {} a file and no archive row, {} an archive \
         recorded with trees still to leave, {} every tree moved; each next run finished it, every tree \
         archived exactly once, nothing lost or duplicated",
        outcomes[0], outcomes[1], outcomes[2], outcomes[3]
    );
    Ok(())
}
