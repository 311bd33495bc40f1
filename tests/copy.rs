//! Moving a SQLite ledger into PostgreSQL with `Ledger::copy_into`: the copy answers every read
//! exactly as the source does, its trail verifies with the library and with the documented psql
//! query, it goes on from where the source stood, and a copy that cannot be faithful (into a
//! ledger that holds anything, from a trail that does not verify, into a SQLite file) copies
//! nothing.

#[macro_use]
mod common;

use std::time::Duration;

use common::{cli, Engine, Fixture, TestResult};
use session_ledger::{
    AskedBy, AuditQuery, CheckpointOptions, Config, Conflict, DecisionQuery, Error, InputError,
    Ledger, PostureLevel, Propagation, ReadOnly, SignerKey, Taint,
};

/// A source that holds one of everything a copy must carry, including the rows the contract's
/// triggers refuse as new writes: a raised label, an inherited label, a posture whose creator
/// has lost its own, an ended session with a scope, a refused creation, a second epoch. Returns
/// the ids it holds.
fn rich_source(f: &Fixture) -> Vec<String> {
    let l = &f.ledger;
    f.build("conductor > worker scout; reviewer > helper");
    l.grant("conductor", PostureLevel::Trust, "alice")
        .expect("grant");
    l.create_child("late", "conductor", "alice")
        .expect("a child born trusted");
    f.raise("worker", Some(Taint::Secret), true);
    l.state("scout").expect("scout inherits its label");
    l.state("sub-late-1")
        .expect("a spawned child is recorded and inherits");
    l.revoke("conductor", Propagation::Local, "alice")
        .expect("the conductor alone loses its posture");
    l.add_pattern("reviewer", "cargo test *", "alice")
        .expect("pattern");
    l.grant_scope("helper", "hotfix", Duration::from_secs(3_600), "alice")
        .expect("scope");
    l.end("helper", "alice").expect("end");
    l.start_epoch_with(true, "dashboard")
        .expect("a durable epoch");
    l.grant("reviewer", PostureLevel::TrustReads, "alice")
        .expect("grant");
    // Decision records: two integrated, one still queued.
    let asked = AskedBy::actor("claude-code");
    for command in ["cargo test --all", "ls -la"] {
        l.decide_and_record("reviewer", command, ReadOnly::Classify, &asked)
            .expect("record");
    }
    l.integrate_decisions("alice").expect("integrate");
    l.decide_and_record("late", "rm -rf target", false, &asked)
        .expect("record");
    let mut ids: Vec<String> = l
        .forest()
        .expect("forest")
        .into_iter()
        .map(|n| n.session.id)
        .collect();
    ids.sort();
    ids
}

/// Everything a caller can read of `ids` and of the whole ledger, without writing: to compare
/// two ledgers read for read.
fn observe(l: &Ledger, ids: &[String]) -> Vec<String> {
    let mut out = vec![
        format!("forest {:?}", l.forest().expect("forest")),
        format!("epoch {:?}", l.current_epoch().expect("epoch")),
        format!("head {:?}", l.audit_head().expect("head")),
        format!("audit {:?}", l.audit(&AuditQuery::all()).expect("audit")),
        format!(
            "decisions {:?}",
            l.decisions(&DecisionQuery::default()).expect("decisions")
        ),
    ];
    for id in ids {
        out.push(format!(
            "{id} session {:?}",
            l.session(id).expect("session")
        ));
        out.push(format!(
            "{id} label {:?}",
            l.stored_label(id).expect("label")
        ));
        out.push(format!(
            "{id} posture {:?}",
            l.posture(id).expect("posture")
        ));
        out.push(format!(
            "{id} patterns {:?}",
            l.patterns(id).expect("patterns")
        ));
        out.push(format!("{id} scopes {:?}", l.scopes(id).expect("scopes")));
        out.push(format!(
            "{id} explain {:?}",
            l.explain(id).expect("explain")
        ));
        out.push(format!(
            "{id} decides {:?}",
            l.decide(id, "cargo test --all", false).expect("decide")
        ));
    }
    out
}

#[test]
fn a_copied_ledger_answers_every_read_as_the_source_does_and_its_trail_verifies_twice() -> TestResult
{
    let source = Fixture::new();
    let ids = rich_source(&source);
    let saved = source.ledger.audit_head()?;
    source.ledger.create_root("after-the-saved-head", "alice")?;
    let ids = [ids, vec!["after-the-saved-head".to_owned()]].concat();
    let target = fixture!(Engine::Postgres);
    let before = observe(&source.ledger, &ids);

    let copied = source.ledger.copy_into(&target.ledger)?;

    assert_eq!(copied.head, source.ledger.audit_head()?);
    assert_eq!(copied.sessions, ids.len() as u64);
    assert_eq!(copied.epochs, 2);
    assert_eq!((copied.patterns, copied.scopes), (1, 1));
    assert_eq!(copied.decisions, 3);
    assert_eq!(copied.audit_rows as i64, copied.head.seq);
    assert_eq!(observe(&target.ledger, &ids), before);
    assert_eq!(
        observe(&source.ledger, &ids),
        before,
        "the source is as it was"
    );
    let v = target.ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.rows as i64, copied.head.seq);
    assert_eq!(
        target.verify_in_sql(),
        None,
        "the psql query finds no bad row"
    );
    assert!(target.ledger.check()?.ok);
    assert!(
        target.ledger.verify_from(&saved)?.ok,
        "a head saved before the move checks against the moved ledger"
    );
    Ok(())
}

#[test]
fn a_copied_ledger_goes_on_from_where_the_source_stood() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    let target = fixture!(Engine::Postgres);
    let copied = source.ledger.copy_into(&target.ledger)?;

    // The rules hold on the copy as on the source: a child of a trusted-reads reviewer is born
    // with its posture, the chain extends the copied head, and the contract's triggers are on.
    let child = target.ledger.create_child("fresh", "reviewer", "alice")?;
    assert!(child.inherited_trust_reads && !child.inherited_trust);
    let r = target
        .ledger
        .revoke("reviewer", Propagation::CascadeUnchecked, "alice")?;
    assert_eq!(r.count, 2);
    assert!(target.ledger.audit_head()?.seq > copied.head.seq);
    assert!(target.ledger.verify(None)?.ok);
    assert_eq!(target.verify_in_sql(), None);
    let lowered = target.exec("UPDATE labels SET taint = 'public' WHERE session_id = 'worker'");
    assert!(lowered.is_err(), "labels still only rise");
    // The queued record came along queued; new records are numbered after the copied ones,
    // and a checkpoint covers them all.
    let asked = AskedBy::actor("claude-code");
    target
        .ledger
        .decide_and_record("reviewer", "git status", ReadOnly::Classify, &asked)?;
    let key = SignerKey::generate("example.com/ledger")?;
    let signed = target.ledger.checkpoint(&key, None, "alice")?;
    let records = target.ledger.decisions(&DecisionQuery::default())?;
    assert_eq!(records.len(), 4);
    assert!(records.iter().all(|r| r.seq.is_some()), "{records:?}");
    assert!(records[0].id > records[1].id);
    let v = target.ledger.verify_checkpoint(
        &signed.note,
        &key.verifier(),
        &CheckpointOptions::default(),
    )?;
    assert!(v.ok, "{v:?}");
    Ok(())
}

#[test]
fn a_copy_into_a_ledger_that_holds_anything_copies_nothing() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    let target = fixture!(Engine::Postgres);
    target.ledger.create_root("already-here", "bob")?;
    let before = target.snapshot();

    let refused = source.ledger.copy_into(&target.ledger);

    assert!(
        matches!(&refused, Err(Error::Conflict(Conflict::NotEmpty(at))) if at == target.ledger.location()),
        "{refused:?}"
    );
    assert_eq!(target.snapshot(), before);
    Ok(())
}

#[test]
fn a_source_whose_trail_does_not_verify_is_not_copied() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    source.tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 3");
    let target = fixture!(Engine::Postgres);
    let before = target.snapshot();

    let refused = source.ledger.copy_into(&target.ledger);

    let Err(Error::Corruption(e)) = &refused else {
        panic!("expected corruption, got {refused:?}");
    };
    assert!(e.to_string().contains("seq 3"), "{e}");
    assert_eq!(target.snapshot(), before, "nothing was copied");
    Ok(())
}

#[test]
fn a_copy_into_a_sqlite_file_is_refused_before_anything_is_read() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    let target = Fixture::new();
    let before = target.snapshot();

    let refused = source.ledger.copy_into(&target.ledger);

    assert!(
        matches!(&refused, Err(Error::Input(InputError::InvalidCopyTarget(at))) if at == target.ledger.location()),
        "{refused:?}"
    );
    assert_eq!(target.snapshot(), before);
    Ok(())
}

#[test]
fn a_copy_carries_as_many_rows_as_a_batch_holds_and_more() -> TestResult {
    // Past one batch of appends (1,000 rows), so that a second batch follows the first.
    let source = Fixture::with(
        Config::default()
            .create_if_missing(true)
            .max_live_children(2_000)
            .creation_rate(2_000, Duration::from_secs(60)),
    );
    source.ledger.create_root("conductor", "alice")?;
    source
        .ledger
        .grant("conductor", PostureLevel::Trust, "alice")?;
    for i in 0..1_200 {
        source
            .ledger
            .create_child(&format!("w{i}"), "conductor", "alice")?;
    }
    let target = fixture!(Engine::Postgres);
    let copied = source.ledger.copy_into(&target.ledger)?;
    assert_eq!(copied.sessions, 1_201);
    assert_eq!(copied.postures, 1_201);
    let r = target
        .ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "alice")?;
    assert_eq!(r.count, 1_201);
    assert!(target.ledger.verify(None)?.ok);
    Ok(())
}

#[test]
fn a_copy_by_a_role_that_does_not_own_the_tables_copies_nothing_and_says_why() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    let target = fixture!(Engine::Postgres);
    // The application role of docs/postgres-roles.sql, which may write rows but not alter the
    // tables, on the target's schema.
    let owner = target.target();
    let roles = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/postgres-roles.sql");
    let granted = std::process::Command::new("psql")
        .args([&owner, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", roles])
        .output()?;
    assert!(granted.status.success(), "{granted:?}");
    let app_base = std::env::var("SESSION_LEDGER_TEST_POSTGRES_APP")?;
    let (_, search_path) = owner
        .split_once('?')
        .expect("the fixture's URL sets search_path");
    let app = Ledger::init(format!("{app_base}?{search_path}"))?;
    let before = target.snapshot();

    let refused = source.ledger.copy_into(&app);

    let Err(Error::Storage(e)) = &refused else {
        panic!("expected a storage error, got {refused:?}");
    };
    assert!(e.to_string().contains("must be owner"), "{e}");
    assert!(e.to_string().contains("run this as the owner role"), "{e}");
    assert_eq!(target.snapshot(), before);
    Ok(())
}

#[test]
fn session_ledger_copy_says_what_it_moved_and_the_moved_ledger_verifies_from_the_command_line(
) -> TestResult {
    let source = Fixture::new();
    let ids = rich_source(&source);
    let target = fixture!(Engine::Postgres);
    let to = target.target();
    let from = source.target();

    let text = cli::run_raw(source.dir.path(), &["copy", "--from", &from, "--to", &to]);

    assert!(text.status.success(), "{text:?}");
    let first = text.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("copied {from} to postgresql://")),
        "{first}"
    );
    assert!(
        first.contains(&format!("{} sessions", ids.len())),
        "{first}"
    );
    let head = source.ledger.audit_head()?;
    assert!(
        text.stdout
            .contains(&format!("head {}:{}", head.seq, head.hash)),
        "{}",
        text.stdout
    );
    let secret = common::postgres_place::password_of(&to);
    assert!(!text.stdout.contains(&secret) && !text.stderr.contains(&secret));
    let verify = cli::run_raw(source.dir.path(), &["--db", &to, "verify"]);
    assert!(verify.status.success(), "{verify:?}");
    assert_eq!(target.verify_in_sql(), None);

    // Again, into the same ledger: refused, as one JSON error line, and nothing changes.
    let before = target.snapshot();
    let again = cli::run_raw(
        source.dir.path(),
        &["--json", "copy", "--from", &from, "--to", &to],
    );
    assert_eq!(again.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_str(again.stderr.trim())?;
    assert_eq!(error["kind"], "not_empty");
    assert!(!again.stderr.contains(&secret));
    assert_eq!(target.snapshot(), before);
    Ok(())
}

#[test]
fn session_ledger_copy_to_a_path_is_refused_and_leaves_no_file_behind() -> TestResult {
    let source = Fixture::new();
    rich_source(&source);
    let to = source.dir.path().join("copy.db");
    let run = cli::run_raw(
        source.dir.path(),
        &[
            "--json",
            "copy",
            "--from",
            &source.target(),
            "--to",
            to.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(run.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_str(run.stderr.trim())?;
    assert_eq!(error["kind"], "invalid_copy_target");
    assert!(!to.exists());
    Ok(())
}
