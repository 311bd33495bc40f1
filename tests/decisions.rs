//! Decision records (rules D1, D2), on every engine: a recorded decision is on the record when
//! its answer returns, with its reason and who asked; records never change; integration gives
//! them positions without gaps, under the audit trail, so a checkpoint covers them and a
//! changed record is caught; on PostgreSQL an append waits for no other writer, and records
//! committed out of id order are all integrated, none skipped.

#[macro_use]
mod common;

use std::sync::Arc;

use common::{Engine, TestResult};
use session_ledger::{
    verify_decision_receipt, AskedBy, CheckpointOptions, Conflict, DecisionQuery, DecisionRecorder,
    Error, PostureLevel, ReadOnly, RecorderOptions, SignerKey, ToolCall, Verdict,
};

fn asked() -> AskedBy<'static> {
    AskedBy {
        actor: "claude-code",
        tool_use_id: Some("toolu_01"),
    }
}

fn of_session(id: &str) -> DecisionQuery {
    DecisionQuery {
        session: Some(id.to_owned()),
        ..Default::default()
    }
}

fn a_recorded_decision_is_on_the_record_with_its_reason_and_who_asked(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("conductor > worker");
    f.ledger
        .grant("conductor", PostureLevel::TrustReads, "alice")?;
    f.ledger.create_child("worker-2", "conductor", "alice")?;
    let approved =
        f.ledger
            .decide_and_record("worker-2", "git log -3", ReadOnly::Classify, &asked())?;
    assert_eq!(approved.decision.verdict, Verdict::Approve);
    assert!(approved.durable);
    let asks =
        f.ledger
            .decide_and_record("worker-2", "rm -rf build", ReadOnly::Classify, &asked())?;
    let unknown = f
        .ledger
        .decide_and_record("nobody", "ls", false, &AskedBy::actor("bob"))?;

    let records = f.ledger.decisions(&of_session("worker-2"))?;
    assert_eq!(
        records
            .iter()
            .map(|r| r.record.as_str())
            .collect::<Vec<_>>(),
        [asks.record.as_str(), approved.record.as_str()],
        "newest first"
    );
    let r = &records[1];
    assert_eq!(
        (r.verdict.as_str(), r.authority.as_str(), r.tree.as_str()),
        ("approve", "trust_reads", "conductor")
    );
    assert_eq!(r.input, "git log -3");
    assert_eq!(
        (r.asked_by.as_str(), r.tool_use_id.as_deref()),
        ("claude-code", Some("toolu_01"))
    );
    // The reason carries the chain back to the operator's grant.
    assert_eq!(
        r.reason["posture"]["chain"],
        serde_json::json!(["conductor", "worker-2"])
    );
    assert_eq!(r.seq, None, "queued until integrated");
    // Its JSON carries the reason as stored, the bytes its leaf hashes.
    let stored = f.column(&format!(
        "SELECT reason FROM decisions WHERE record = '{}'",
        r.record
    ));
    let json = serde_json::to_string(r)?;
    assert!(
        json.contains(&format!("\"reason\":{}", stored[0])),
        "{json}"
    );
    assert!(
        stored[0].starts_with("{\"kind\":\"trust_reads\",\"posture\":"),
        "the reason's own order, not sorted: {}",
        stored[0]
    );
    assert_eq!(records[0].authority, "nothing");
    let nobody = f.ledger.decision(&unknown.record)?.expect("recorded");
    assert_eq!(
        (
            nobody.verdict.as_str(),
            nobody.authority.as_str(),
            nobody.tree.as_str()
        ),
        ("ask", "unknown_session", "nobody")
    );
    Ok(())
}

fn a_long_input_is_cut_with_its_hash_and_a_tool_call_names_its_tool(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    let long = format!("echo {}", "é".repeat(3000));
    let cut = f
        .ledger
        .decide_and_record("worker", &long, false, &asked())?;
    let r = f.ledger.decision(&cut.record)?.expect("recorded");
    assert!(r.input.len() <= session_ledger::MAX_RECORDED_INPUT);
    assert!(long.starts_with(&r.input));
    assert_eq!(r.input_bytes, long.len() as u64);
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(long.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(r.input_sha256.as_deref(), Some(sha.as_str()));

    let call = ToolCall {
        tool: "WebFetch",
        path: None,
        url: Some("https://docs.rs/serde"),
        root: None,
    };
    let fetched = f.ledger.decide_tool_and_record("worker", &call, &asked())?;
    let r = f.ledger.decision(&fetched.record)?.expect("recorded");
    assert_eq!(
        (
            r.tool.as_deref(),
            r.input.as_str(),
            r.input_sha256.as_deref()
        ),
        (Some("WebFetch"), "https://docs.rs/serde", None)
    );
    Ok(())
}

fn records_and_positions_cannot_be_changed_or_removed_by_hand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    f.ledger
        .decide_and_record("worker", "ls", false, &asked())?;
    f.ledger
        .decide_and_record("worker", "pwd", false, &asked())?;
    f.ledger.integrate_decisions("alice")?;
    f.ledger
        .decide_and_record("worker", "id", false, &asked())?;
    let before = f.snapshot();
    for (sql, says) in [
        (
            "UPDATE decisions SET verdict = 'approve'",
            "decision records are append-only",
        ),
        ("DELETE FROM decisions", "decision records are append-only"),
        (
            "UPDATE decision_log SET seq = seq + 10",
            "the decision log is append-only",
        ),
        (
            "DELETE FROM decision_log",
            "the decision log is append-only",
        ),
        (
            "DELETE FROM decision_queue",
            "a decision record leaves the queue only once it is in the log",
        ),
        (
            "INSERT INTO decision_log (seq, decision, batch) VALUES (5, 3, 1)",
            "a decision must take the next position of the log",
        ),
    ] {
        let refused = f.exec(sql).expect_err(sql);
        assert!(refused.contains(says), "{sql}: {refused}");
    }
    assert_eq!(f.snapshot(), before, "nothing changed");
    Ok(())
}

fn integration_gives_positions_without_gaps_one_audit_row_per_batch(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    let mut records = Vec::new();
    for i in 0..5 {
        records.push(
            f.ledger
                .decide_and_record("worker", &format!("echo {i}"), false, &asked())?
                .record,
        );
    }
    let done = f.ledger.integrate_decisions("alice")?;
    assert_eq!(
        (done.records, done.batches, done.log_size, done.queued),
        (5, 1, 5, 0)
    );
    assert_eq!(
        f.ledger.integrate_decisions("alice")?.records,
        0,
        "nothing left"
    );
    for i in 5..7 {
        records.push(
            f.ledger
                .decide_and_record("worker", &format!("echo {i}"), false, &asked())?
                .record,
        );
    }
    assert_eq!(f.ledger.integrate_decisions("alice")?.log_size, 7);
    let positions: Vec<Option<u64>> = records
        .iter()
        .map(|r| f.ledger.decision(r).map(|d| d.expect("there").seq))
        .collect::<Result<_, _>>()?;
    assert_eq!(positions, (1..=7).map(Some).collect::<Vec<_>>());
    let batches =
        f.column("SELECT detail FROM audit WHERE kind = 'decisions.integrate' ORDER BY seq");
    assert_eq!(batches.len(), 2);
    assert!(
        batches[1].contains("\"first\":6") && batches[1].contains("\"count\":2"),
        "{batches:?}"
    );
    Ok(())
}

fn a_checkpoint_covers_the_records_and_a_changed_or_removed_record_is_caught(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    f.ledger.grant("worker", PostureLevel::Trust, "alice")?;
    for i in 0..4 {
        f.ledger
            .decide_and_record("worker", &format!("make {i}"), false, &asked())?;
    }
    let key = SignerKey::generate("example.com/ledger")?;
    // Signing integrates what is queued first.
    let signed = f.ledger.checkpoint(&key, None, "alice")?;
    assert_eq!(f.ledger.decisions(&of_session("worker"))?[0].seq, Some(4));
    let v =
        f.ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    assert!(v.ok, "{v:?}");
    let decisions = v
        .findings
        .iter()
        .find(|f| f.check == "decisions")
        .expect("checked");
    assert!(decisions.why.contains("4 record(s)"), "{decisions:?}");

    f.tamper("UPDATE decisions SET verdict = 'ask', authority = 'nothing' WHERE input = 'make 2'");
    let v =
        f.ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    assert!(!v.ok);
    let failed: Vec<_> = v.findings.iter().filter(|f| !f.valid).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        (failed[0].check.as_str(), failed[0].problem.as_deref()),
        ("decisions", Some("root"))
    );

    f.tamper(
        "UPDATE decisions SET verdict = 'approve', authority = 'trust' WHERE input = 'make 2'",
    );
    f.tamper("DELETE FROM decision_log WHERE seq = 4");
    let v =
        f.ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    let failed: Vec<_> = v.findings.iter().filter(|f| !f.valid).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].problem.as_deref(), Some("count"));
    Ok(())
}

fn a_batching_recorder_appends_within_its_window_and_on_flush(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    let ledger = Arc::new(f.reopen(session_ledger::Config::default()));
    let recorder = DecisionRecorder::new(Arc::clone(&ledger), RecorderOptions::default())?;
    let mut ids = Vec::new();
    for i in 0..50 {
        let r = recorder.decide("worker", &format!("echo {i}"), false, &asked())?;
        assert!(!r.durable);
        ids.push(r.record);
    }
    assert_eq!(recorder.flush()?, 50);
    assert_eq!(recorder.held(), 0);
    let query = DecisionQuery {
        session: Some("worker".into()),
        limit: Some(1000),
        ..Default::default()
    };
    let mut stored: Vec<String> = ledger
        .decisions(&query)?
        .into_iter()
        .map(|r| r.record)
        .collect();
    stored.reverse();
    assert_eq!(stored, ids, "every record, in the order decided");
    // Dropping the recorder appends what it holds.
    for i in 50..60 {
        recorder.decide("worker", &format!("echo {i}"), false, &asked())?;
    }
    drop(recorder);
    assert_eq!(ledger.decisions(&query)?.len(), 60);
    Ok(())
}

/// A decision record inserted by hand in `tx`, left uncommitted: an append whose transaction
/// is slower than the ledger's.
fn open_append(tx: &mut ::postgres::Transaction<'_>, record: &str, input: &str) {
    let bytes = input.len() as i64;
    tx.execute(
        "INSERT INTO decisions (record, at, session_id, tree, input, input_bytes, verdict,
                                authority, reason, asked_by)
         VALUES ($1, now()::timestamp(3) AT TIME ZONE 'UTC', 'worker', 'worker', $2, $3, 'ask',
                 'nothing', '{\"kind\":\"nothing\"}', 'slow-writer')",
        &[&record, &input, &bytes],
    )
    .expect("a slower append");
}

#[test]
fn on_postgres_an_append_does_not_wait_for_the_write_lock_or_another_open_append() -> TestResult {
    let config = session_ledger::Config::default()
        .create_if_missing(true)
        .busy_timeout(std::time::Duration::from_secs(2));
    let f = fixture!(Engine::Postgres, config);
    f.ledger.create_root("worker", "alice")?;
    let mut holder = f.place().client();
    let mut tx = holder.transaction()?;
    // The ledger's write lock, as a create or a revocation in progress holds it ...
    tx.batch_execute("SELECT pg_advisory_xact_lock(1818584167, 'audit'::regclass::oid::int4)")?;
    // ... and another append, not committed yet.
    open_append(&mut tx, &"a".repeat(32), "sleep 100");

    // A write that takes the lock waits for it, and gives up after the busy timeout ...
    let create = f.ledger.create_root("reviewer", "bob");
    assert!(
        matches!(&create, Err(session_ledger::Error::Storage(e)) if e.is_busy()),
        "{create:?}"
    );
    // ... while an append, in the same state, is done.
    let recorded = f
        .ledger
        .decide_and_record("worker", "ls", false, &asked())?;
    assert!(f.ledger.decision(&recorded.record)?.is_some());
    // The other transaction was open all along: it commits now.
    tx.commit()?;
    assert_eq!(f.ledger.decisions(&of_session("worker"))?.len(), 2);
    Ok(())
}

#[test]
fn on_postgres_appends_that_arrive_while_one_is_in_flight_commit_together_next() -> TestResult {
    let f = fixture!(Engine::Postgres);
    f.ledger.create_root("worker", "alice")?;
    let mut holder = f.place().client();
    let mut tx = holder.transaction()?;
    // Inserts into the table wait while this is held: the first append stays in flight.
    tx.batch_execute("LOCK TABLE decisions IN SHARE MODE")?;
    let waiting_inserts = || {
        f.column(
            "SELECT count(*)::text FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO decisions%'",
        )[0]
        .clone()
    };
    let records = std::thread::scope(|scope| -> Result<Vec<String>, session_ledger::Error> {
        let append = |i: usize| {
            let ledger = &f.ledger;
            scope.spawn(move || {
                ledger
                    .decide_and_record("worker", &format!("make {i}"), false, &asked())
                    .map(|r| r.record)
            })
        };
        let first = append(0);
        let started = std::time::Instant::now();
        while waiting_inserts() != "1" && started.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(waiting_inserts(), "1", "the first append is in flight");
        let others: Vec<_> = (1..8).map(append).collect();
        // The seven others reach the handle and wait for the one in flight; none is sent.
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert_eq!(waiting_inserts(), "1", "one statement in flight, no other");
        tx.commit().expect("the lock's release");
        let mut records = vec![first.join().expect("the first append")?];
        for other in others {
            records.push(other.join().expect("an append")?);
        }
        Ok(records)
    })?;
    // Each caller heard of its own record, and the seven after the first were one commit.
    let mut stored = f.column("SELECT record FROM decisions");
    stored.sort();
    let mut heard = records.clone();
    heard.sort();
    assert_eq!(stored, heard);
    let commits = f.column("SELECT count(DISTINCT xmin::text)::text FROM decisions");
    assert_eq!(
        commits,
        ["2"],
        "the first append, then the seven after it together"
    );
    Ok(())
}

#[test]
fn on_postgres_records_committed_out_of_id_order_are_all_integrated_none_skipped() -> TestResult {
    let f = fixture!(Engine::Postgres);
    f.ledger.create_root("worker", "alice")?;
    let mut slow = f.place().client();
    let mut tx = slow.transaction()?;
    // The slower append draws its id first, and commits last.
    open_append(&mut tx, &"b".repeat(32), "make slow");
    let fast = f
        .ledger
        .decide_and_record("worker", "make fast", false, &asked())?;
    let ids = f.column("SELECT id::text FROM decisions ORDER BY id");
    assert_eq!(ids.len(), 1, "the slower append is not visible yet");

    let first = f.ledger.integrate_decisions("alice")?;
    assert_eq!((first.records, first.log_size, first.queued), (1, 1, 0));
    tx.commit()?;
    let second = f.ledger.integrate_decisions("alice")?;
    assert_eq!((second.records, second.log_size, second.queued), (1, 2, 0));

    let order = f.query(
        "SELECT l.seq::text, d.record, d.id::text FROM decision_log AS l
           JOIN decisions AS d ON d.id = l.decision ORDER BY l.seq",
    );
    assert_eq!(order[0][1].as_deref(), Some(fast.record.as_str()));
    assert_eq!(order[1][1].as_deref(), Some("b".repeat(32).as_str()));
    let id = |row: &Vec<Option<String>>| row[2].clone().unwrap_or_default().parse::<i64>();
    assert!(
        id(&order[1])? < id(&order[0])?,
        "the lower id took the later position"
    );

    let key = SignerKey::generate("example.com/ledger")?;
    let signed = f.ledger.checkpoint(&key, None, "alice")?;
    let v =
        f.ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    assert!(v.ok, "{v:?}");
    Ok(())
}

fn a_decision_receipt_checks_offline_and_not_for_a_changed_record(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    f.ledger.grant("worker", PostureLevel::Trust, "alice")?;
    let mut records = Vec::new();
    for i in 0..5 {
        records.push(
            f.ledger
                .decide_and_record("worker", &format!("make {i}"), false, &asked())?
                .record,
        );
    }
    let key = SignerKey::generate("example.com/ledger")?;
    f.ledger.checkpoint(&key, None, "alice")?;
    let queued = f
        .ledger
        .decide_and_record("worker", "make later", false, &asked())?;

    let receipt = f.ledger.prove_decision(&records[3], None)?;
    let text = receipt.to_text();
    let check = verify_decision_receipt(&text, &key.verifier())?;
    assert!(check.ok, "{check:?}");
    assert_eq!(
        (check.record.as_deref(), check.seq),
        (Some(records[3].as_str()), Some(4))
    );
    // Another key, or a leaf that says something else, does not check out.
    let other = SignerKey::generate("example.com/ledger")?;
    assert!(!verify_decision_receipt(&text, &other.verifier())?.ok);
    let mut forged = receipt.clone();
    forged.leaf = forged
        .leaf
        .replace("\"verdict\":\"approve\"", "\"verdict\":\"ask\"");
    assert_ne!(forged.leaf, receipt.leaf);
    let check = verify_decision_receipt(&forged.to_text(), &key.verifier())?;
    assert!(!check.ok);
    assert!(check
        .why
        .unwrap_or_default()
        .contains("not the one the batch holds"));

    // A record still queued, or one changed in the database since, gets no receipt.
    let refused = f.ledger.prove_decision(&queued.record, None);
    assert!(
        matches!(&refused, Err(Error::Conflict(Conflict::NotCovered { .. }))),
        "{refused:?}"
    );
    f.tamper(&format!(
        "UPDATE decisions SET input = 'make 9' WHERE record = '{}'",
        records[3]
    ));
    let refused = f.ledger.prove_decision(&records[3], None);
    assert!(matches!(&refused, Err(Error::Corruption(_))), "{refused:?}");
    // The receipt handed out before still proves what was recorded.
    assert!(verify_decision_receipt(&text, &key.verifier())?.ok);
    Ok(())
}

/// A trigger, added by hand, that refuses every new record: an append that fails.
fn refuse_appends(f: &common::Fixture) {
    let sql = match f.engine {
        Engine::Sqlite => {
            "CREATE TRIGGER refuse BEFORE INSERT ON decisions
             BEGIN SELECT RAISE(ABORT, 'no appends today'); END"
        }
        Engine::Postgres => {
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN RAISE EXCEPTION 'no appends today'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON decisions
               FOR EACH ROW EXECUTE FUNCTION refuse()"
        }
    };
    f.exec(sql).expect("the refusing trigger");
}

fn a_record_whose_append_fails_is_reported_and_never_answered_as_kept(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    f.ledger.grant("worker", PostureLevel::Trust, "alice")?;
    let ledger = Arc::new(f.reopen(session_ledger::Config::default()));
    let recorder = DecisionRecorder::new(Arc::clone(&ledger), RecorderOptions::default())?;
    recorder.decide("worker", "make 1", false, &asked())?;
    recorder.flush()?;
    refuse_appends(&f);

    // Durable: the error, and no decision.
    let durable = ledger.decide_and_record("worker", "make 2", false, &asked());
    assert!(durable.is_err(), "{durable:?}");
    // Batched: the flush reports the held record, and every call fails until an append works.
    let held = recorder.decide("worker", "make 3", false, &asked())?;
    let flushed = recorder.flush();
    match &flushed {
        Err(Error::Storage(session_ledger::StorageError::DecisionsUnknown { records, .. })) => {
            assert_eq!(records, std::slice::from_ref(&held.record))
        }
        other => panic!("{other:?}"),
    }
    assert!(recorder
        .decide("worker", "make 4", false, &asked())
        .is_err());
    assert_eq!(recorder.held(), 1, "the record is kept, to be tried again");

    let drop_it = match engine {
        Engine::Sqlite => "DROP TRIGGER refuse",
        Engine::Postgres => "DROP TRIGGER refuse ON decisions; DROP FUNCTION refuse()",
    };
    f.exec(drop_it).map_err(|e| e.to_string())?;
    assert_eq!(recorder.flush()?, 2, "tried again, and kept");
    recorder.decide("worker", "make 6", false, &asked())?;
    refuse_appends(&f);
    let closed = recorder.close();
    assert!(
        matches!(
            &closed,
            Err(Error::Storage(
                session_ledger::StorageError::DecisionsUnknown { .. }
            ))
        ),
        "closing says what it could not append: {closed:?}"
    );
    let inputs: Vec<String> = ledger
        .decisions(&of_session("worker"))?
        .into_iter()
        .map(|r| r.input)
        .collect();
    assert_eq!(inputs, ["make 3", "make 1"]);
    Ok(())
}

engine_tests! {
    a_record_whose_append_fails_is_reported_and_never_answered_as_kept,
    a_decision_receipt_checks_offline_and_not_for_a_changed_record,
    a_recorded_decision_is_on_the_record_with_its_reason_and_who_asked,
    a_long_input_is_cut_with_its_hash_and_a_tool_call_names_its_tool,
    records_and_positions_cannot_be_changed_or_removed_by_hand,
    integration_gives_positions_without_gaps_one_audit_row_per_batch,
    a_checkpoint_covers_the_records_and_a_changed_or_removed_record_is_caught,
    a_batching_recorder_appends_within_its_window_and_on_flush,
}

#[test]
fn a_recorder_whose_appends_fall_behind_holds_at_most_two_batches() -> TestResult {
    let f = fixture!(Engine::Sqlite);
    f.ledger.create_root("worker", "alice")?;
    let ledger = Arc::new(f.reopen(
        session_ledger::Config::default().busy_timeout(std::time::Duration::from_secs(60)),
    ));
    let mut options = RecorderOptions::default();
    options.max_batch = 10;
    let recorder = Arc::new(DecisionRecorder::new(Arc::clone(&ledger), options)?);
    // Another writer holds the file: no append can commit meanwhile.
    let blocker = f.sql();
    blocker.execute_batch("BEGIN IMMEDIATE")?;
    let deciding = {
        let recorder = Arc::clone(&recorder);
        std::thread::spawn(move || -> Result<(), session_ledger::Error> {
            for i in 0..100 {
                recorder.decide("worker", &format!("echo {i}"), false, &asked())?;
            }
            Ok(())
        })
    };
    // The deciding thread stops at two batches held, and stays there while the file is held.
    let started = std::time::Instant::now();
    while recorder.held() < 20 && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(recorder.held(), 20, "two batches, no more");
    assert!(!deciding.is_finished());
    blocker.execute_batch("COMMIT")?;
    deciding.join().expect("the deciding thread")?;
    assert_eq!(recorder.flush()?, 100);
    Ok(())
}
