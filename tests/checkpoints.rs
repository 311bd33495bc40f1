//! Checkpoints an auditor can hold (rule A4), on every engine: a trail that only grew verifies
//! against a checkpoint signed before; a whole rewrite by the database's owner (every hash
//! recomputed, the chain intact) passes the plain chain walk and is caught against the
//! checkpoint, and so are a shrink, a fork of the same size, a checkpoint by another key, a
//! flipped bit in a checkpoint, a signature or a proof, and a receipt for a row changed since.

#[macro_use]
mod common;

use common::{Engine, Fixture, TestResult};
use session_ledger::{
    chain_hash, verify_receipt, CheckpointOptions, CheckpointVerification, PostureLevel,
    Propagation, SignerKey, GENESIS_HASH,
};

const ORIGIN: &str = "example.com/ledger";

/// A ledger with a conductor, workers, a grant and a cascade: some twenty rows.
fn busy(f: &Fixture) {
    f.build("conductor > worker-1 worker-2; worker-1 > worker-1a");
    f.ledger
        .grant("conductor", PostureLevel::Trust, "alice")
        .expect("grant");
    f.ledger
        .create_child("worker-3", "conductor", "alice")
        .expect("child");
    f.ledger.state("worker-1a").expect("first read");
    f.ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "carol")
        .expect("cascade");
}

/// `n` more rows: roots named after the row they make.
fn more(f: &Fixture, n: usize) {
    for _ in 0..n {
        let next = f.ledger.audit_head().expect("head").seq + 1;
        f.ledger
            .create_root(&format!("later-{next}"), "bob")
            .expect("root");
    }
}

fn full() -> CheckpointOptions {
    CheckpointOptions::default()
}

fn fast() -> CheckpointOptions {
    let mut o = CheckpointOptions::default();
    o.fast = true;
    o
}

fn problems(v: &CheckpointVerification) -> Vec<String> {
    v.findings
        .iter()
        .filter(|f| !f.valid)
        .map(|f| format!("{}:{}", f.check, f.problem.clone().unwrap_or_default()))
        .collect()
}

/// SQL that rewrites every row from `from` on as the database's owner could: `edit` changes the
/// first one's detail, and every hash from there is recomputed so that the chain is intact.
fn rewrite_from(f: &Fixture, from: i64, detail: &str) -> String {
    let rows = f.query(
        "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash FROM audit ORDER BY seq",
    );
    let mut sql = String::new();
    let mut prev = GENESIS_HASH.to_owned();
    for row in rows {
        let text = |i: usize| row[i].clone().unwrap_or_default();
        let seq: i64 = text(0).parse().expect("seq");
        if seq < from {
            prev = text(7);
            continue;
        }
        let at = text(1);
        // PostgreSQL's psql gives a timestamptz in its own form: take the library's.
        let at = if at.contains('T') {
            at
        } else {
            let listed = f
                .ledger
                .audit(&session_ledger::AuditQuery::all().before(seq + 1).limit(1))
                .expect("row");
            session_ledger::format_ts(listed[0].at)
        };
        let detail = if seq == from {
            detail.to_owned()
        } else {
            text(5)
        };
        let session = row[4].clone();
        let hash = chain_hash(
            &prev,
            seq,
            &at,
            &text(2),
            &text(3),
            session.as_deref(),
            &detail,
        );
        sql += &format!(
            "UPDATE audit SET detail = '{}', prev_hash = '{prev}', hash = '{hash}' WHERE seq = {seq};\n",
            detail.replace('\'', "''")
        );
        prev = hash;
    }
    sql
}

fn a_trail_that_only_grew_verifies_against_a_checkpoint_signed_before(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    let signed = f.ledger.checkpoint(&key, None, "auditor")?;
    assert_eq!(signed.checkpoint.origin, ORIGIN);
    more(&f, 5);
    for options in [full(), fast()] {
        let v = f
            .ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &options)?;
        assert!(v.ok, "{:?}", v.findings);
    }
    // Signing again integrates the new rows; the first checkpoint still verifies, in both modes.
    let second = f.ledger.checkpoint(&key, None, "auditor")?;
    assert_eq!(second.checkpoint.size, signed.checkpoint.size + 6);
    more(&f, 3);
    for options in [full(), fast()] {
        assert!(
            f.ledger
                .verify_checkpoint(&signed.note, &key.verifier(), &options)?
                .ok
        );
    }
    let listed = f.ledger.checkpoints(0, 10)?;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].note, second.note);
    assert!(f.ledger.check()?.ok);
    if engine == Engine::Postgres {
        // psql recomputes every stored hash and finds none that differs.
        let out = f.place().verify_tree_in_psql();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..2], ["what|level|at", "tree_size"], "{out}");
    }
    Ok(())
}

fn a_full_rewrite_passes_the_chain_walk_and_fails_against_the_checkpoint(
    engine: Engine,
) -> TestResult {
    for rebuild_tree in [false, true] {
        let f = fixture!(engine);
        busy(&f);
        let key = SignerKey::generate(ORIGIN)?;
        let signed = f.ledger.checkpoint(&key, None, "auditor")?;
        more(&f, 2);
        let before = f.ledger.verify(None)?;
        assert!(before.ok);
        // The owner rewrites row 3 and every row after it, hashes and all.
        let mut sql = rewrite_from(
            &f,
            3,
            r#"{"creator":"conductor","depth":1,"inherited_trust":true,"inherited_trust_reads":false}"#,
        );
        if rebuild_tree {
            // ...and throws the stored tree and the recorded checkpoints away, to rebuild the
            // tree from the rewritten rows.
            sql += "DELETE FROM checkpoints; DELETE FROM audit_tree;";
        }
        f.tamper(&sql);
        if rebuild_tree {
            f.ledger.integrate_tree()?;
        }
        let walk = f.ledger.verify(None)?;
        assert!(walk.ok, "the rewrite keeps the chain intact: {walk:?}");
        let v = f
            .ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &full())?;
        assert!(!v.ok);
        let found = problems(&v);
        assert!(found.contains(&"rows:rewritten".to_owned()), "{found:?}");
        assert!(
            found.contains(&"consistency:inconsistent".to_owned()),
            "{found:?}"
        );
        if !rebuild_tree {
            assert!(
                found.contains(&"tree:leaf_mismatch".to_owned()),
                "{found:?}"
            );
            assert!(
                !f.ledger.check()?.ok,
                "check recomputes the tree from the rows"
            );
        }
        // A fast check trusts the stored tree below the checkpoint: it catches a rebuilt tree
        // by its consistency proof, and says what it did not read otherwise.
        let quick = f
            .ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &fast())?;
        if rebuild_tree {
            assert!(!quick.ok, "{:?}", quick.findings);
        }
        assert!(!quick.not_checked.is_empty());
    }
    Ok(())
}

fn dropping_the_last_rows_is_refused_as_a_shrink(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    more(&f, 3);
    let key = SignerKey::generate(ORIGIN)?;
    let signed = f.ledger.checkpoint(&key, None, "auditor")?;
    let size = signed.checkpoint.size as i64;
    f.tamper(&format!(
        "DELETE FROM checkpoints; DELETE FROM audit WHERE seq > {}",
        size - 2
    ));
    assert!(f.ledger.verify(None)?.ok, "what is left is a good chain");
    for options in [full(), fast()] {
        let v = f
            .ledger
            .verify_checkpoint(&signed.note, &key.verifier(), &options)?;
        assert_eq!(problems(&v), ["size:truncated"], "{:?}", v.findings);
    }
    Ok(())
}

fn a_different_history_of_the_same_size_is_refused_as_a_fork(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    let size = f.ledger.audit_head()?.seq;
    let signed = f.ledger.checkpoint(&key, None, "auditor")?;
    // The last covered row told another story; the checkpoint's own row is dropped, so the
    // trail has exactly the checkpoint's size again.
    let mut sql = rewrite_from(&f, size, r#"{"propagation":"local"}"#);
    sql += &format!(
        "DELETE FROM checkpoints; DELETE FROM audit WHERE seq > {size}; DELETE FROM audit_tree;"
    );
    f.tamper(&sql);
    f.ledger.integrate_tree()?;
    assert_eq!(f.ledger.audit_head()?.seq, size);
    assert!(f.ledger.verify(None)?.ok);
    let v = f
        .ledger
        .verify_checkpoint(&signed.note, &key.verifier(), &full())?;
    assert!(
        problems(&v).contains(&"rows:rewritten".to_owned()),
        "{:?}",
        v.findings
    );
    let v = f
        .ledger
        .verify_checkpoint(&signed.note, &key.verifier(), &fast())?;
    assert!(
        problems(&v).contains(&"consistency:inconsistent".to_owned()),
        "{:?}",
        v.findings
    );
    Ok(())
}

fn a_checkpoint_by_another_key_or_with_a_bit_flipped_is_refused(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    let impostor = SignerKey::generate(ORIGIN)?;
    let signed = f.ledger.checkpoint(&impostor, None, "mallory")?;
    let v = f
        .ledger
        .verify_checkpoint(&signed.note, &key.verifier(), &full())?;
    assert_eq!(problems(&v), ["signature:not_signed_by_key"]);
    let good = f.ledger.checkpoint(&key, None, "auditor")?;
    // A bit of the body (the root's base64) and a bit of the signature.
    let body_at = good.note.find('\n').expect("a line") + 4;
    let sig_at = good.note.rfind(' ').expect("the signature") + 10;
    for at in [body_at, sig_at] {
        let mut bytes = good.note.clone().into_bytes();
        bytes[at] ^= 0x01;
        let bad = String::from_utf8(bytes)?;
        let v = f.ledger.verify_checkpoint(&bad, &key.verifier(), &full())?;
        assert!(
            !v.ok && v.checkpoint.is_none(),
            "byte {at}: {:?}",
            v.findings
        );
    }
    Ok(())
}

fn a_saved_checkpoint_refuses_a_smaller_forked_or_unprovable_later_one(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    let first = f.ledger.checkpoint(&key, None, "auditor")?;
    more(&f, 4);
    let second = f.ledger.checkpoint(&key, None, "auditor")?;
    let with = |previous: &str| {
        let mut o = CheckpointOptions::default();
        o.previous = Some(previous.to_owned());
        o
    };
    assert!(
        f.ledger
            .verify_checkpoint(&second.note, &key.verifier(), &with(&first.note))?
            .ok
    );
    let older = f
        .ledger
        .verify_checkpoint(&first.note, &key.verifier(), &with(&second.note))?;
    assert_eq!(problems(&older), ["previous:smaller"]);
    // The same size and another root: a checkpoint the log signed over another history.
    let other = session_ledger::Checkpoint {
        origin: ORIGIN.to_owned(),
        size: first.checkpoint.size,
        root: [9; 32],
    };
    let forged = forge(&key, &other);
    let forked = f
        .ledger
        .verify_checkpoint(&forged, &key.verifier(), &with(&first.note))?;
    assert_eq!(problems(&forked), ["previous:fork"]);
    let larger = session_ledger::Checkpoint {
        origin: ORIGIN.to_owned(),
        size: second.checkpoint.size,
        root: [9; 32],
    };
    let unprovable =
        f.ledger
            .verify_checkpoint(&forge(&key, &larger), &key.verifier(), &with(&first.note))?;
    assert_eq!(problems(&unprovable), ["previous:inconsistent"]);
    Ok(())
}

/// A checkpoint the key signs over whatever it is given, as a log that signs two histories.
fn forge(key: &SignerKey, c: &session_ledger::Checkpoint) -> String {
    key.sign_text(&c.body()).expect("a checkpoint's body signs")
}

fn a_receipt_checks_offline_and_not_for_a_row_changed_since(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    f.ledger.checkpoint(&key, None, "auditor")?;
    // The cascade's first row: the operator keeps its receipt.
    let revocation = f
        .ledger
        .audit(&session_ledger::AuditQuery::all().kind(session_ledger::AuditKind::PostureRevoke))?
        [0]
    .clone();
    let receipt = f.ledger.prove(revocation.seq, None)?.to_text();
    assert!(receipt.starts_with("c2sp.org/tlog-proof@v1\nextra "));
    let row = serde_json::to_value(&revocation)?;
    let check = verify_receipt(&receipt, Some(&row), &key.verifier())?;
    assert!(check.ok, "{check:?}");
    assert!(
        verify_receipt(&receipt, None, &key.verifier())?.ok,
        "with the row it carries"
    );
    let other = SignerKey::generate(ORIGIN)?;
    assert!(!verify_receipt(&receipt, Some(&row), &other.verifier())?.ok);
    // A bit of a proof line flipped.
    let lines: Vec<&str> = receipt.lines().collect();
    let proof_line = lines
        .iter()
        .position(|l| l.starts_with("index "))
        .expect("index")
        + 1;
    let mut flipped: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let mut bytes = flipped[proof_line].clone().into_bytes();
    bytes[0] = if bytes[0] == b'A' { b'B' } else { b'A' };
    flipped[proof_line] = String::from_utf8(bytes)?;
    let flipped = flipped.join("\n") + "\n";
    assert!(!verify_receipt(&flipped, Some(&row), &key.verifier())?.ok);
    // The owner rewrites that row (and re-hashes the chain): the row as the ledger now shows it
    // does not check against the receipt, the row as it was still does.
    f.tamper(&rewrite_from(
        &f,
        revocation.seq,
        r#"{"current":true,"propagation":"local"}"#,
    ));
    assert!(f.ledger.verify(None)?.ok);
    let now = f.ledger.audit(
        &session_ledger::AuditQuery::all()
            .before(revocation.seq + 1)
            .limit(1),
    )?;
    let changed = serde_json::to_value(&now[0])?;
    assert_ne!(changed, row);
    let check = verify_receipt(&receipt, Some(&changed), &key.verifier())?;
    assert!(!check.ok, "{check:?}");
    assert!(verify_receipt(&receipt, Some(&row), &key.verifier())?.ok);
    // And the ledger cannot prove the changed row against the checkpoint.
    assert!(f.ledger.prove(revocation.seq, None).is_err());
    Ok(())
}

fn the_stored_tree_and_the_checkpoints_cannot_be_changed_or_grown_out_of_order_by_hand(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    let key = SignerKey::generate(ORIGIN)?;
    f.ledger.checkpoint(&key, None, "auditor")?;
    let snapshot = f.snapshot();
    let hash = match engine {
        Engine::Sqlite => "zeroblob(32)",
        Engine::Postgres => {
            "'\\x0000000000000000000000000000000000000000000000000000000000000000'::bytea"
        }
    };
    for sql in [
        format!("UPDATE audit_tree SET hash = {hash} WHERE level = 0 AND idx = 0"),
        "DELETE FROM audit_tree WHERE level = 0".to_owned(),
        format!("INSERT INTO audit_tree (level, idx, hash) VALUES (0, 500, {hash})"),
        format!("INSERT INTO audit_tree (level, idx, hash) VALUES (5, 0, {hash})"),
        "UPDATE checkpoints SET origin = 'elsewhere'".to_owned(),
        "DELETE FROM checkpoints".to_owned(),
    ] {
        let refused = f.exec(&sql).expect_err(&sql);
        assert!(refused.contains("session-ledger: "), "{sql}: {refused}");
    }
    assert_eq!(f.snapshot(), snapshot);
    Ok(())
}

fn no_checkpoint_is_signed_over_a_trail_that_does_not_verify(engine: Engine) -> TestResult {
    // Signing checks the rows it takes into the tree, and the tree's last leaf against its row:
    // a row edited there without re-hashing is refused, named, and nothing is recorded.
    for anchor in [false, true] {
        let f = fixture!(engine);
        busy(&f);
        let key = SignerKey::generate(ORIGIN)?;
        let size = f.ledger.checkpoint(&key, None, "auditor")?.checkpoint.size as i64;
        more(&f, 3);
        let seq = if anchor {
            size
        } else {
            f.ledger.audit_head()?.seq - 1
        };
        f.tamper(&format!(
            "UPDATE audit SET actor = 'mallory' WHERE seq = {seq}"
        ));
        let before = f.snapshot();
        let refused = f
            .ledger
            .checkpoint(&key, None, "auditor")
            .expect_err("refused");
        assert!(
            matches!(refused, session_ledger::Error::Corruption(_)),
            "{refused:?}"
        );
        assert!(
            refused.to_string().contains(&format!("row {seq}")),
            "{refused}"
        );
        assert_eq!(f.snapshot(), before);
    }
    Ok(())
}

/// The program docs/audit.md gives an outsider ("The bytes of a detail", Python's standard
/// library only), fed the rows as `--json-lines audit` prints them, rebuilds every row's hash
/// and leaf from its JSON and the root a signed checkpoint names: over rows of many kinds,
/// non-ASCII text, nested details, and a row appended by hand with every escape the form has.
fn an_outsider_rebuilds_every_row_and_the_checkpoint_root_from_the_json_rows_with_the_documented_python(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    busy(&f);
    f.ledger.add_pattern("conductor", "grep é", "alice")?;
    f.raise("worker-2", Some(session_ledger::Taint::Secret), true);
    f.ledger.decide_and_record(
        "worker-3",
        "cat ünïcode.txt",
        false,
        &session_ledger::AskedBy::actor("claude-code"),
    )?;
    f.ledger.integrate_decisions("auditor")?;
    // A row by hand, its detail in the form: escapes, and characters written as themselves.
    let head = f.ledger.audit_head()?;
    let last = f.ledger.audit_after(head.seq - 1, 1)?.remove(0);
    let at = session_ledger::format_ts(last.at);
    let detail = serde_json::json!({
        "note": "\"q\" \\ / \u{8}\u{c}\n\r\t \u{1} \u{1f} \u{7f} \u{2028} é 😀",
        "nested": {"b": [1, -2, null], "a": true},
    })
    .to_string();
    let seq = head.seq + 1;
    let hash = chain_hash(&head.hash, seq, &at, "hand", "session.end", None, &detail);
    f.exec(&format!(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES ({seq}, '{at}', 'hand', 'session.end', NULL, '{}', '{}', '{hash}')",
        detail.replace('\'', "''"),
        head.hash
    ))?;
    let key = SignerKey::generate(ORIGIN)?;
    let signed = f.ledger.checkpoint(&key, None, "auditor")?;
    more(&f, 2);

    let rows = std::process::Command::new(env!("CARGO_BIN_EXE_session-ledger"))
        .args(["--db", &f.target(), "--json-lines", "audit"])
        .output()?;
    assert!(
        rows.status.success(),
        "{}",
        String::from_utf8_lossy(&rows.stderr)
    );
    let printed = common::audit_leaves(f.dir.path(), &rows.stdout, signed.checkpoint.size)?;

    let entries = f.ledger.audit_after(0, 10_000)?;
    let mut expected: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}", e.seq, hex(&session_ledger::audit_leaf(e))))
        .collect();
    expected.push(format!(
        "root {} {}",
        signed.checkpoint.size,
        signed.checkpoint.root_base64()
    ));
    assert_eq!(printed.lines().collect::<Vec<_>>(), expected);
    assert!(
        entries.iter().any(|e| e.actor == "hand"),
        "the hand row is listed"
    );
    assert!(
        signed.checkpoint.size >= seq as u64,
        "the checkpoint covers the hand row"
    );
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

engine_tests! {
    no_checkpoint_is_signed_over_a_trail_that_does_not_verify,
    a_trail_that_only_grew_verifies_against_a_checkpoint_signed_before,
    a_full_rewrite_passes_the_chain_walk_and_fails_against_the_checkpoint,
    dropping_the_last_rows_is_refused_as_a_shrink,
    a_different_history_of_the_same_size_is_refused_as_a_fork,
    a_checkpoint_by_another_key_or_with_a_bit_flipped_is_refused,
    a_saved_checkpoint_refuses_a_smaller_forked_or_unprovable_later_one,
    a_receipt_checks_offline_and_not_for_a_row_changed_since,
    the_stored_tree_and_the_checkpoints_cannot_be_changed_or_grown_out_of_order_by_hand,
    an_outsider_rebuilds_every_row_and_the_checkpoint_root_from_the_json_rows_with_the_documented_python,
}

/// A ledger moved from SQLite to PostgreSQL keeps the checkpoints it signed, and its trail, with
/// the tree the copy builds from its rows, verifies against them; a checkpoint signed before
/// the move and one signed after agree.
#[test]
fn a_copied_ledger_keeps_its_checkpoints_and_verifies_against_them() -> TestResult {
    let source = Fixture::new();
    busy(&source);
    let key = SignerKey::generate(ORIGIN)?;
    let before = source.ledger.checkpoint(&key, None, "auditor")?;
    more(&source, 3);
    let Some(target) = Fixture::on(
        Engine::Postgres,
        session_ledger::Config::default().create_if_missing(true),
    ) else {
        return Ok(());
    };
    let copied = source.ledger.copy_into(&target.ledger)?;
    assert_eq!(copied.checkpoints, 1);
    assert_eq!(target.ledger.checkpoints(0, 10)?[0].note, before.note);
    assert!(target.ledger.check()?.ok);
    let v = target
        .ledger
        .verify_checkpoint(&before.note, &key.verifier(), &full())?;
    assert!(v.ok, "{:?}", v.findings);
    let after = target.ledger.checkpoint(&key, None, "auditor")?;
    let mut o = CheckpointOptions::default();
    o.previous = Some(before.note.clone());
    assert!(
        target
            .ledger
            .verify_checkpoint(&after.note, &key.verifier(), &o)?
            .ok
    );
    Ok(())
}
