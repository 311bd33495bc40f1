//! The command line's checkpoints: a key made with mode 0600 and never written over; a
//! checkpoint signed, listed and verified with the verifier key keygen printed, as text (one
//! line per check, a summary) and `--json`; a state file that moves on only when a later
//! checkpoint verifies; a receipt printed by `audit prove` and checked offline by `audit
//! verify-receipt`, which names the check that failed; and `audit export`, which resumes
//! from a saved seq with no row lost or repeated across a restart, follows new rows, and
//! speaks OCSF. The attacks themselves are tests/checkpoints.rs's, against the library.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use common::cli::*;
use common::Engine;
use serde_json::Value;

/// A ledger with a few rows, a key, and a checkpoint signed over them in `cp1`.
fn signed_ledger(engine: Engine) -> TestResult<Option<(Fixture, String)>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    for id in ["conductor", "reviewer", "worker"] {
        ok(&fx, &["create", id, "--actor", "alice"])?;
    }
    let key = fx.dir().join("ledger.key");
    let verifier = ok(
        &fx,
        &[
            "checkpoint",
            "keygen",
            "--key",
            key.to_str().unwrap(),
            "--name",
            "example.com/ledger",
        ],
    )?;
    let note = ok(
        &fx,
        &[
            "checkpoint",
            "sign",
            "--key",
            key.to_str().unwrap(),
            "--actor",
            "alice",
        ],
    )?;
    std::fs::write(fx.dir().join("cp1"), &note)?;
    Ok(Some((fx, verifier.trim().to_owned())))
}

fn path(fx: &Fixture, name: &str) -> String {
    fx.dir().join(name).display().to_string()
}

fn keygen_writes_a_key_only_its_owner_may_read_and_never_over_another() -> TestResult {
    let fx = Fixture::init()?;
    let key = fx.dir().join("k");
    let verifier = ok(
        &fx.db,
        &["checkpoint", "keygen", "--key", key.to_str().unwrap()],
    )?;
    assert!(
        verifier
            .trim()
            .parse::<session_ledger::VerifierKey>()
            .is_ok(),
        "{verifier}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key)?.permissions().mode() & 0o777, 0o600);
    }
    let before = std::fs::read_to_string(&key)?;
    let again = run(
        &fx.db,
        &["checkpoint", "keygen", "--key", key.to_str().unwrap()],
    );
    assert!(!again.status.success());
    assert_eq!(std::fs::read_to_string(&key)?, before);
    // The key is nowhere in the ledger.
    ok(
        &fx.db,
        &[
            "checkpoint",
            "sign",
            "--key",
            key.to_str().unwrap(),
            "--actor",
            "a",
        ],
    )?;
    // PRIVATE+KEY+NAME+KEYID+BASE64: the base64 (which may itself hold a `+`) is the secret.
    let secret = before
        .trim()
        .splitn(5, '+')
        .nth(4)
        .unwrap_or_default()
        .to_owned();
    assert!(secret.len() > 40, "{secret}");
    let stored = fx.db.rows()?.join("\n");
    assert!(!stored.contains(&secret));
    Ok(())
}

fn a_checkpoint_verifies_with_the_printed_verifier_key_and_the_state_moves_on_only_on_success(
    engine: Engine,
) -> TestResult {
    let Some((fx, verifier)) = signed_ledger(engine)? else {
        return Ok(());
    };
    ok(&fx, &["create", "later", "--actor", "bob"])?;
    let state = path(&fx, "state");
    let cp1 = path(&fx, "cp1");
    let r = run(
        &fx,
        &[
            "verify",
            "--checkpoint",
            &cp1,
            "--verifier-key",
            &verifier,
            "--state",
            &state,
        ],
    );
    assert!(r.status.success(), "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.last().unwrap().starts_with("OK: "), "{r:?}");
    assert!(lines
        .iter()
        .any(|l| l.starts_with("consistency ") && l.contains("valid")));
    assert_eq!(
        std::fs::read_to_string(&state)?,
        std::fs::read_to_string(&cp1)?
    );

    // A later checkpoint moves the state on; the older one is then refused as smaller, and
    // the state stays where it was.
    let key = path(&fx, "ledger.key");
    let cp2 = ok(
        &fx,
        &["checkpoint", "sign", "--key", &key, "--actor", "alice"],
    )?;
    std::fs::write(fx.dir().join("cp2"), &cp2)?;
    ok(
        &fx,
        &[
            "verify",
            "--checkpoint",
            &path(&fx, "cp2"),
            "--verifier-key",
            &verifier,
            "--state",
            &state,
        ],
    )?;
    assert_eq!(std::fs::read_to_string(&state)?, cp2);
    let older = run(
        &fx,
        &[
            "--json",
            "verify",
            "--checkpoint",
            &cp1,
            "--verifier-key",
            &verifier,
            "--state",
            &state,
        ],
    );
    assert_eq!(older.status.code(), Some(1));
    assert_eq!(
        json_error(&older, "an older checkpoint")?["kind"],
        "unverified_checkpoint"
    );
    let report: Value = serde_json::from_str(older.stdout.trim())?;
    let verification = &report["verification"];
    assert_eq!(verification["ok"], false);
    let bad: Vec<&Value> = verification["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["valid"] == false)
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0]["problem"], "smaller");
    assert_eq!(std::fs::read_to_string(&state)?, cp2);

    // The verifier key may be given as a file too; a key of another signer fails with exit 1.
    std::fs::write(fx.dir().join("v.pub"), &verifier)?;
    ok(
        &fx,
        &[
            "verify",
            "--checkpoint",
            &cp1,
            "--verifier-key",
            &path(&fx, "v.pub"),
        ],
    )?;
    let other = path(&fx, "other.key");
    let stranger = ok(
        &fx,
        &[
            "checkpoint",
            "keygen",
            "--key",
            &other,
            "--name",
            "example.com/ledger",
        ],
    )?;
    let r = run(
        &fx,
        &[
            "verify",
            "--checkpoint",
            &cp1,
            "--verifier-key",
            stranger.trim(),
        ],
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(
        r.stdout
            .lines()
            .any(|l| l.contains("INVALID (not_signed_by_key)")),
        "{r:?}"
    );
    assert!(r.stdout.lines().last().unwrap().starts_with("FAILED: "));
    // The listing shows both checkpoints, oldest first.
    let listed = ok_json_array(&fx, &["checkpoint", "list"])?;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1]["note"], cp2);
    Ok(())
}

fn audit_prove_prints_a_receipt_that_checks_with_the_row_and_the_key(engine: Engine) -> TestResult {
    let Some((fx, verifier)) = signed_ledger(engine)? else {
        return Ok(());
    };
    let receipt = ok(
        &fx,
        &["audit", "prove", "2", "--checkpoint", &path(&fx, "cp1")],
    )?;
    let row = &ok_json_array(&fx, &["audit", "--before", "3", "--limit", "1"])?[0];
    let key: session_ledger::VerifierKey = verifier.parse()?;
    assert!(session_ledger::verify_receipt(&receipt, Some(row), &key)?.ok);
    // `extra` is the row as docs/audit.md says: compact JSON, its keys sorted.
    let extra = receipt
        .lines()
        .find_map(|l| l.strip_prefix("extra "))
        .ok_or("an extra line")?;
    use base64::Engine as _;
    let extra = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(extra)?)?;
    let mut keys: Vec<&String> = row.as_object().ok_or("an object")?.keys().collect();
    keys.sort();
    let sorted: serde_json::Map<String, Value> = keys
        .into_iter()
        .map(|k| (k.clone(), row[k].clone()))
        .collect();
    assert_eq!(extra, serde_json::to_string(&sorted)?);
    // Against the ledger's newest checkpoint by default; a row it does not cover is refused.
    assert_eq!(ok(&fx, &["audit", "prove", "2"])?, receipt);
    let r = run(&fx, &["--json", "audit", "prove", "9"]);
    assert_eq!(json_error(&r, "prove 9")?["kind"], "not_in_checkpoint");
    Ok(())
}

/// The root a C2SP checkpoint note names: its third line, base64.
fn note_root(note: &str) -> TestResult<Vec<u8>> {
    use base64::Engine as _;
    let line = note.lines().nth(2).ok_or("a note of three lines")?;
    Ok(base64::engine::general_purpose::STANDARD.decode(line)?)
}

fn audit_prove_consistency_prints_what_a_witness_is_sent_and_an_independent_checker_accepts_it(
    engine: Engine,
) -> TestResult {
    use base64::Engine as _;
    use ct_merkle::{ConsistencyProof, RootHash};
    let Some((fx, _)) = signed_ledger(engine)? else {
        return Ok(());
    };
    let first = std::fs::read_to_string(fx.dir().join("cp1"))?;
    for id in ["a", "b", "c", "d", "e"] {
        ok(&fx, &["create", id, "--actor", "bob"])?;
    }
    let key = path(&fx, "ledger.key");
    let second = ok(
        &fx,
        &["checkpoint", "sign", "--key", &key, "--actor", "alice"],
    )?;
    let size =
        |note: &str| -> TestResult<u64> { Ok(note.lines().nth(1).ok_or("a size line")?.parse()?) };
    let (old, new) = (size(&first)?, size(&second)?);

    // As C2SP tlog-witness's add-checkpoint body: `old N`, the proof, a blank line, the note.
    let body = ok(&fx, &["audit", "prove", "--consistency", &old.to_string()])?;
    let (head, note) = body.split_once("\n\n").ok_or("a blank line")?;
    assert_eq!(note, second, "the newest checkpoint, whole");
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some(format!("old {old}").as_str()));
    let mut proof = Vec::new();
    for line in lines {
        proof.extend(base64::engine::general_purpose::STANDARD.decode(line)?);
    }
    assert_eq!(proof.len() % 32, 0);

    // Checked by ct-merkle, an RFC 6962 implementation no one here wrote.
    let root = |note: &str, size: u64| -> TestResult<RootHash<sha2::Sha256>> {
        let bytes = note_root(note)?;
        Ok(RootHash::new(
            sha2::digest::Output::<sha2::Sha256>::try_from(&bytes[..]).map_err(|_| "32 bytes")?,
            size,
        ))
    };
    let (old_root, new_root) = (root(&first, old)?, root(&second, new)?);
    let checked = ConsistencyProof::<sha2::Sha256>::try_from_bytes(proof.clone())?;
    assert!(new_root.verify_consistency(&old_root, &checked).is_ok());
    let mut bent = proof.clone();
    bent[0] ^= 1;
    let bent = ConsistencyProof::<sha2::Sha256>::try_from_bytes(bent)?;
    assert!(new_root.verify_consistency(&old_root, &bent).is_err());

    // To a size no checkpoint has: the proof, and a note that says so.
    let r = run(
        &fx,
        &[
            "audit",
            "prove",
            "--consistency",
            "2",
            &(new - 1).to_string(),
        ],
    );
    assert!(r.status.success(), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("old 2\n") && r.stdout.ends_with("\n\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains(&format!("signed no checkpoint of size {}", new - 1)),
        "{}",
        r.stderr
    );
    // Beyond the trail, or backwards: refused.
    let r = run(
        &fx,
        &["--json", "audit", "prove", "--consistency", "3", "999"],
    );
    assert_eq!(json_error(&r, "beyond")?["kind"], "not_in_checkpoint");
    let r = run(&fx, &["audit", "prove", "2", "--consistency", "1"]);
    assert_eq!(
        r.status.code(),
        Some(2),
        "a row and --consistency together: {}",
        r.stderr
    );
    Ok(())
}

/// `session-ledger [--json] audit verify-receipt ARGS...` in a folder of its own with no ledger
/// and no `--db`: the check is offline. The folder must stay empty.
fn verify_receipt_offline(json: bool, args: &[&str]) -> TestResult<Run> {
    let dir = tempfile::tempdir()?;
    let mut all = Vec::new();
    if json {
        all.push("--json");
    }
    all.extend(["audit", "verify-receipt"]);
    all.extend_from_slice(args);
    let r = run_raw(dir.path(), &all);
    assert_eq!(
        std::fs::read_dir(dir.path())?.count(),
        0,
        "verify-receipt wrote a file: {r:?}"
    );
    Ok(r)
}

/// A receipt for row 2 against `cp1` in `receipt`, row 2 and row 3 as `--json audit` prints them
/// in `row2.json` and `row3.json`; returns the receipt's text.
fn receipt_and_rows(fx: &Fixture) -> TestResult<String> {
    let receipt = ok(
        fx,
        &["audit", "prove", "2", "--checkpoint", &path(fx, "cp1")],
    )?;
    std::fs::write(fx.dir().join("receipt"), &receipt)?;
    for seq in [2, 3] {
        let before = (seq + 1).to_string();
        let row = &ok_json_array(fx, &["audit", "--before", &before, "--limit", "1"])?[0];
        assert_eq!(row["seq"], seq);
        std::fs::write(fx.dir().join(format!("row{seq}.json")), row.to_string())?;
    }
    Ok(receipt)
}

/// The report line of `check` (`signature`, `row`, `inclusion`) in `out`.
fn report_line<'a>(out: &'a str, check: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(check))
        .unwrap_or_else(|| panic!("no {check} line in {out:?}"))
}

fn audit_verify_receipt_passes_a_receipt_from_prove_offline_with_its_own_row_or_a_row_file(
    engine: Engine,
) -> TestResult {
    let Some((fx, verifier)) = signed_ledger(engine)? else {
        return Ok(());
    };
    let receipt_text = receipt_and_rows(&fx)?;
    let receipt = path(&fx, "receipt");
    let row2 = path(&fx, "row2.json");
    std::fs::write(fx.dir().join("v.pub"), &verifier)?;
    let key_file = path(&fx, "v.pub");
    for args in [
        vec![receipt.as_str(), "--verifier-key", &verifier],
        vec![&receipt, "--verifier-key", &verifier, "--row", &row2],
        vec![&receipt, "--verifier-key", &key_file],
    ] {
        let r = verify_receipt_offline(false, &args)?;
        assert_eq!(r.status.code(), Some(0), "{args:?}: {r:?}");
        assert_eq!(r.stderr, "", "{args:?}");
        for check in ["signature", "row", "inclusion"] {
            assert!(
                report_line(&r.stdout, check).contains("valid"),
                "{check}: {}",
                r.stdout
            );
        }
        let last = r.stdout.lines().last().unwrap_or_default();
        assert!(last.starts_with("OK: "), "{}", r.stdout);
        assert!(last.contains("row 2"), "{last}");
        assert_eq!(r.stdout.lines().count(), 4, "{}", r.stdout);
    }
    // --json prints the library's ReceiptCheck, exactly.
    let r = verify_receipt_offline(true, &[&receipt, "--verifier-key", &verifier])?;
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let printed: Value = serde_json::from_str(&r.stdout)?;
    let key: session_ledger::VerifierKey = verifier.parse()?;
    let expected =
        serde_json::to_value(session_ledger::verify_receipt(&receipt_text, None, &key)?)?;
    assert_eq!(printed, expected);
    assert_eq!(printed["ok"], true);
    assert_eq!(printed["seq"], 2);
    Ok(())
}

/// `text` with the first proof line of the receipt (the line after `index`) changed in one bit.
fn with_a_proof_hash_changed(text: &str) -> TestResult<String> {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("index "))
        .ok_or("no index line")?
        + 1;
    let mut hash = engine.decode(&lines[at])?;
    assert_eq!(hash.len(), 32, "the receipt has no proof line: {text}");
    hash[0] ^= 1;
    lines[at] = engine.encode(hash);
    Ok(lines.join("\n"))
}

fn audit_verify_receipt_fails_a_tampered_receipt_a_wrong_key_and_another_row_naming_the_check(
    engine: Engine,
) -> TestResult {
    let Some((fx, verifier)) = signed_ledger(engine)? else {
        return Ok(());
    };
    let receipt_text = receipt_and_rows(&fx)?;
    let receipt = path(&fx, "receipt");
    std::fs::write(
        fx.dir().join("tampered"),
        with_a_proof_hash_changed(&receipt_text)?,
    )?;
    // A row with one field changed: its own hash no longer matches it.
    let mut forged: Value =
        serde_json::from_str(&std::fs::read_to_string(fx.dir().join("row2.json"))?)?;
    forged["actor"] = "mallory".into();
    std::fs::write(fx.dir().join("forged.json"), forged.to_string())?;
    let stranger = ok(
        &fx,
        &[
            "checkpoint",
            "keygen",
            "--key",
            &path(&fx, "other.key"),
            "--name",
            "example.com/ledger",
        ],
    )?;
    let (tampered, row3, forged) = (
        path(&fx, "tampered"),
        path(&fx, "row3.json"),
        path(&fx, "forged.json"),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![&tampered, "--verifier-key", &verifier], "inclusion"),
        (
            vec![&receipt, "--verifier-key", stranger.trim()],
            "signature",
        ),
        (
            vec![&receipt, "--verifier-key", &verifier, "--row", &row3],
            "row",
        ),
        (
            vec![&receipt, "--verifier-key", &verifier, "--row", &forged],
            "row",
        ),
    ];
    for (args, failed) in cases {
        let r = verify_receipt_offline(false, &args)?;
        assert_eq!(r.status.code(), Some(1), "{args:?}: {r:?}");
        assert!(
            report_line(&r.stdout, failed).contains("INVALID"),
            "{args:?}: the {failed} check is not INVALID:\n{}",
            r.stdout
        );
        let invalid = r
            .stdout
            .lines()
            .filter(|l| !l.starts_with("FAILED: ") && l.contains("INVALID"))
            .count();
        assert_eq!(invalid, 1, "{args:?}:\n{}", r.stdout);
        assert!(r
            .stdout
            .lines()
            .last()
            .unwrap_or_default()
            .starts_with("FAILED: "));
        assert_one_error_line(&r, &format!("{args:?}"));
        assert_mentions(&r, &format!("the {failed} check"));
        // --json: the ReceiptCheck, not ok, with why; the error as one JSON line.
        let j = verify_receipt_offline(true, &args)?;
        assert_eq!(j.status.code(), Some(1), "{args:?}: {j:?}");
        let printed: Value = serde_json::from_str(&j.stdout)?;
        assert_eq!(printed["ok"], false, "{printed}");
        assert!(
            printed["why"].as_str().is_some_and(|w| !w.is_empty()),
            "{printed}"
        );
        assert_eq!(
            json_error(&j, "verify-receipt --json")?["kind"],
            "unverified_receipt"
        );
    }
    // A file that is no receipt at all is an error, not a report.
    let r = verify_receipt_offline(false, &[&row3, "--verifier-key", &verifier])?;
    assert_clean_failure(&r, "verify-receipt of a row file");
    assert_mentions(&r, "receipt");
    Ok(())
}

/// The seqs of a feed's JSON lines.
fn seqs(out: &str) -> Vec<i64> {
    out.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("a JSON line")["seq"]
                .as_i64()
                .expect("seq")
        })
        .collect()
}

fn audit_export_resumes_from_a_saved_seq_with_no_row_lost_or_repeated(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    for i in 0..30 {
        ok(&fx, &["create", &format!("s{i}"), "--actor", "alice"])?;
    }
    // A reader that stops after some lines, keeps the last seq, and starts again from it.
    let mut child = command(&fx, &["audit", "export", "--after", "0"])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut first = Vec::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..12 {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        first.push(line);
    }
    drop(reader);
    let _ = child.kill();
    child.wait()?;
    let saved = seqs(&first.concat()).last().copied().unwrap();
    for i in 30..35 {
        ok(&fx, &["create", &format!("s{i}"), "--actor", "alice"])?;
    }
    let rest = ok(&fx, &["audit", "export", "--after", &saved.to_string()])?;
    let mut all = seqs(&first.concat());
    all.extend(seqs(&rest));
    assert_eq!(all, (1..=35).collect::<Vec<_>>());
    // Each line is the row as `audit --json` lists it.
    let listed = ok_json_array(&fx, &["audit"])?;
    let exported: Vec<Value> = rest
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(exported[..], listed[saved as usize..]);
    Ok(())
}

/// The seqs `feed` prints until the one whose seq is `last`; a failure when a line does not
/// come within a minute.
fn seqs_until(feed: &Lines, last: i64) -> TestResult<Vec<i64>> {
    let mut seen = Vec::new();
    while seen.last() != Some(&last) {
        let line = feed
            .next()
            .map_err(|e| format!("no seq {last} ({e}); the feed printed {seen:?}"))?;
        seen.extend(seqs(&line));
    }
    Ok(seen)
}

fn audit_export_follow_prints_new_rows_as_they_are_written(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&fx, &["create", "first", "--actor", "alice"])?;
    let follow = [
        "audit", "export", "--after", "0", "--follow", "--poll", "50",
    ];
    let feed = Lines::start(&fx, &follow)?;
    assert_eq!(seqs_until(&feed, 1)?, [1]);
    ok(&fx, &["create", "second", "--actor", "alice"])?;
    assert_eq!(seqs_until(&feed, 2)?, [2]);
    Ok(())
}

/// A row committed between the feed's read of a page and its look at the head is printed
/// on the next look, not stepped over as if it were a gap in the trail.
fn audit_export_follow_prints_every_row_written_while_it_looks_none_skipped(
    engine: Engine,
) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    let follow = ["audit", "export", "--after", "0", "--follow", "--poll", "1"];
    let feed = Lines::start(&fx, &follow)?;
    let ledger = session_ledger::Ledger::open(fx.store().target())?;
    for i in 0..300 {
        ledger.create_root(&format!("s{i}"), "alice")?;
    }
    let last = ledger.audit_head()?.seq;
    assert_eq!(seqs_until(&feed, last)?, (1..=last).collect::<Vec<_>>());
    Ok(())
}

fn audit_export_in_ocsf_maps_every_row_to_a_class_with_seq_and_hash(engine: Engine) -> TestResult {
    let Some((fx, _)) = signed_ledger(engine)? else {
        return Ok(());
    };
    ok(&fx, &["trust", "conductor", "--full", "--actor", "alice"])?;
    ok(
        &fx,
        &[
            "raise",
            "conductor",
            "--taint",
            "secret",
            "--actor",
            "alice",
        ],
    )?;
    let rows = ok_json_array(&fx, &["audit"])?;
    let events: Vec<Value> = ok(
        &fx,
        &["audit", "export", "--after", "0", "--format", "ocsf"],
    )?
    .lines()
    .map(serde_json::from_str)
    .collect::<Result<_, _>>()?;
    assert_eq!(events.len(), rows.len());
    for (event, row) in events.iter().zip(&rows) {
        assert_eq!(event["metadata"]["sequence"], row["seq"]);
        assert_eq!(event["metadata"]["uid"], row["hash"]);
        assert_eq!(event["metadata"]["version"], session_ledger::OCSF_VERSION);
        let class = event["class_uid"].as_u64().unwrap();
        let activity = event["activity_id"].as_u64().unwrap();
        assert_eq!(event["type_uid"].as_u64(), Some(class * 100 + activity));
        for key in ["category_uid", "severity_id", "time"] {
            assert!(event[key].is_u64(), "{key}: {event}");
        }
    }
    let grant = events
        .iter()
        .find(|e| e["metadata"]["event_code"] == "posture.grant")
        .unwrap();
    assert_eq!(
        (grant["class_uid"].as_u64(), grant["activity_id"].as_u64()),
        (Some(3005), Some(1))
    );
    assert_eq!(grant["privileges"][0], "trust");
    Ok(())
}

fn a_check_after_a_rewrite_names_the_row_whose_leaf_changed() -> TestResult {
    let Some((fx, _)) = signed_ledger(Engine::Sqlite)? else {
        return Ok(());
    };
    ok(&fx.db, &["check"])?;
    fx.store()
        .tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 2");
    let r = run(&fx.db, &["check"]);
    assert_eq!(r.status.code(), Some(1));
    assert!(r.stdout.contains("row 2"), "{r:?}");
    let _ = Path::new("");
    Ok(())
}

#[test]
fn keygen_writes_a_key_only_its_owner_may_read_and_never_over_another_one() -> TestResult {
    keygen_writes_a_key_only_its_owner_may_read_and_never_over_another()
}

#[test]
fn check_names_the_row_whose_leaf_changed_after_a_rewrite() -> TestResult {
    a_check_after_a_rewrite_names_the_row_whose_leaf_changed()
}

/// What a row's leaf commits to, built from the row as `--json-lines audit` prints it by the
/// rule docs/audit.md gives an outsider: `prev_hash|seq|` and each field length-prefixed, the
/// detail in its one JSON text (serde_json's compact form, keys sorted: the same rule).
fn leaf_input_from_json(row: &Value) -> TestResult<Vec<u8>> {
    let field = |value: Option<&str>| match value {
        None => "-|".to_owned(),
        Some(v) => format!("{}:{v}|", v.len()),
    };
    let text = |key: &str| -> TestResult<&str> {
        Ok(row[key]
            .as_str()
            .ok_or(format!("the row has no text {key}"))?)
    };
    let detail = serde_json::to_string(&row["detail"])?;
    Ok(format!(
        "{}|{}|{}{}{}{}{}",
        text("prev_hash")?,
        row["seq"],
        field(Some(text("at")?)),
        field(Some(text("actor")?)),
        field(Some(text("kind")?)),
        field(row["session"].as_str()),
        field(Some(&detail)),
    )
    .into_bytes())
}

/// Every row's receipt from `audit prove`, checked by ct-merkle (an RFC 6962 implementation no
/// one here wrote) against the root its checkpoint names, with the leaf built from the row's
/// JSON alone; a row changed by one byte fails.
fn every_receipt_from_audit_prove_is_accepted_by_an_independent_checker_from_the_row_json(
    engine: Engine,
) -> TestResult {
    use base64::Engine as _;
    use ct_merkle::{InclusionProof, RootHash};
    let Some((fx, _)) = signed_ledger(engine)? else {
        return Ok(());
    };
    // Rows of other kinds and non-ASCII text, then a checkpoint over them all.
    ok(
        &fx,
        &["pattern", "add", "conductor", "grep é", "--actor", "alice"],
    )?;
    ok(
        &fx,
        &["raise", "worker", "--taint", "secret", "--actor", "alice"],
    )?;
    let key = path(&fx, "ledger.key");
    let note = ok(
        &fx,
        &["checkpoint", "sign", "--key", &key, "--actor", "alice"],
    )?;
    let size: u64 = note.lines().nth(1).ok_or("a size line")?.parse()?;
    let root = note_root(&note)?;
    let root = RootHash::<sha2::Sha256>::new(
        sha2::digest::Output::<sha2::Sha256>::try_from(&root[..]).map_err(|_| "32 bytes")?,
        size,
    );
    let rows: Vec<Value> = ok(&fx, &["--json-lines", "audit"])?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    for row in rows.iter().take(size as usize) {
        let seq = row["seq"].as_u64().ok_or("a seq")?;
        let receipt = ok(&fx, &["audit", "prove", &seq.to_string()])?;
        let (head, _checkpoint) = receipt.split_once("\n\n").ok_or("a blank line")?;
        let mut lines = head.lines().skip_while(|l| !l.starts_with("index "));
        let index: u64 = lines
            .next()
            .and_then(|l| l.strip_prefix("index "))
            .ok_or("an index line")?
            .parse()?;
        assert_eq!(index, seq - 1);
        let mut proof = Vec::new();
        for line in lines {
            proof.extend(base64::engine::general_purpose::STANDARD.decode(line)?);
        }
        let proof = InclusionProof::<sha2::Sha256>::try_from_bytes(proof)?;
        let mut leaf = leaf_input_from_json(row)?;
        assert!(
            root.verify_inclusion(&leaf, index, &proof).is_ok(),
            "row {seq}: ct-merkle accepts the receipt"
        );
        let last = leaf.len() - 1;
        leaf[last] ^= 1;
        assert!(root.verify_inclusion(&leaf, index, &proof).is_err());
    }
    Ok(())
}

engine_tests! {
    a_checkpoint_verifies_with_the_printed_verifier_key_and_the_state_moves_on_only_on_success,
    audit_prove_prints_a_receipt_that_checks_with_the_row_and_the_key,
    audit_verify_receipt_passes_a_receipt_from_prove_offline_with_its_own_row_or_a_row_file,
    audit_verify_receipt_fails_a_tampered_receipt_a_wrong_key_and_another_row_naming_the_check,
    audit_export_resumes_from_a_saved_seq_with_no_row_lost_or_repeated,
    audit_export_follow_prints_new_rows_as_they_are_written,
    audit_export_follow_prints_every_row_written_while_it_looks_none_skipped,
    audit_export_in_ocsf_maps_every_row_to_a_class_with_seq_and_hash,
    audit_prove_consistency_prints_what_a_witness_is_sent_and_an_independent_checker_accepts_it,
    every_receipt_from_audit_prove_is_accepted_by_an_independent_checker_from_the_row_json,
}
