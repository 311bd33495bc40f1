//! The audit hash chain (rule A3): both verifiers, the library's and the documented SQL query
//! run by the stock sqlite3 shell, detect every kind of tampering, and agree.

#[macro_use]
mod common;

use std::time::Duration;

use common::{Engine, Fixture, TestResult};
use session_ledger::{
    chain_hash, AuditHead, AuditKind, AuditQuery, ChainProblem, Config, PostureLevel, Propagation,
    Synchronous, Taint, Verification,
};

/// The stored text of a row's detail: the bytes its hash covers.
fn stored_detail(f: &Fixture, seq: i64) -> String {
    let rows = f.query(&format!("SELECT detail FROM audit WHERE seq = {seq}"));
    rows[0][0].clone().expect("a detail")
}

fn rust_verdict(v: &Verification) -> Option<(i64, String)> {
    let problem = v.problem.as_ref()?;
    let word = serde_json::to_value(problem).expect("json");
    Some((
        v.first_bad_seq.expect("seq"),
        word.as_str().expect("word").to_owned(),
    ))
}

/// Fills `f` with a small ledger with every kind of row.
fn fill_busy(f: &Fixture) {
    f.ledger.create_root("conductor", "alice").expect("root");
    f.ledger
        .grant("conductor", PostureLevel::Trust, "alice")
        .expect("grant");
    f.build("conductor > w1 w2; w1 > w1a");
    f.raise("conductor", Some(Taint::Secret), false);
    f.ledger.state("sub-w1a-1").expect("spawn");
    f.ledger
        .add_pattern("w2", "npm test", "bob")
        .expect("pattern");
    f.ledger
        .grant_scope("w2", "hotfix", Duration::from_secs(60), "bob")
        .expect("scope");
    f.ledger
        .revoke("w1", Propagation::CascadeUnchecked, "carol")
        .expect("cascade");
    f.ledger.start_epoch("dashboard").expect("epoch");
    f.ledger.end("w2", "carol").expect("end");
}

fn a_busy_ledger_verifies_with_both_verifiers(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let v = f.ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.rows as i64, f.count("audit"));
    assert_eq!(v.head, f.ledger.audit_head()?);
    assert_eq!(f.verify_in_sql(), None);
    assert_eq!(f.check_head_in_sql(&v.head), "ok");
    Ok(())
}

fn every_row_carries_the_hash_of_its_predecessor_and_its_own(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let rows = f.ledger.audit(&AuditQuery::all())?;
    let mut prev = session_ledger::GENESIS_HASH.to_owned();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.seq, i as i64 + 1);
        assert_eq!(r.prev_hash, prev);
        let detail = stored_detail(&f, r.seq);
        let expected = chain_hash(
            &prev,
            r.seq,
            &session_ledger::format_ts(r.at),
            &r.actor,
            r.kind.as_str(),
            r.session.as_deref(),
            &detail,
        );
        assert_eq!(r.hash, expected, "row {}", r.seq);
        prev = r.hash.clone();
    }
    Ok(())
}

fn editing_a_row_is_detected_by_both_verifiers(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    f.tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 5");
    let v = f.ledger.verify(None)?;
    assert!(!v.ok);
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(5), Some(ChainProblem::HashMismatch))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    Ok(())
}

fn editing_a_row_and_recomputing_its_hash_is_detected_at_the_next_row(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let row = f.ledger.audit(&AuditQuery::all())?.remove(5);
    assert_eq!(row.seq, 6);
    let forged = r#"{"forged":true}"#;
    let at = session_ledger::format_ts(row.at);
    let session = row.session.as_deref();
    let hash = chain_hash(
        &row.prev_hash,
        6,
        &at,
        &row.actor,
        row.kind.as_str(),
        session,
        forged,
    );
    f.tamper(&format!(
        "UPDATE audit SET detail = '{forged}', hash = '{hash}' WHERE seq = 6"
    ));
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(7), Some(ChainProblem::BrokenLink))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    Ok(())
}

fn deleting_a_row_in_the_middle_is_detected_by_both_verifiers(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    f.tamper("DELETE FROM audit WHERE seq = 8");
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(9), Some(ChainProblem::Gap))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    // Deleting the first row too.
    f.tamper("DELETE FROM audit WHERE seq = 1");
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(2), Some(ChainProblem::Gap))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    Ok(())
}

fn truncating_the_tail_past_a_saved_head_is_detected_by_both_verifiers(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let saved = f.ledger.audit_head()?;
    f.tamper(&format!("DELETE FROM audit WHERE seq > {}", saved.seq - 3));
    // What is left is a valid chain: only the saved head shows the loss.
    assert!(f.ledger.verify(None)?.ok);
    assert_eq!(f.verify_in_sql(), None);
    let v = f.ledger.verify(Some(&saved))?;
    assert!(!v.ok);
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(saved.seq), Some(ChainProblem::Truncated))
    );
    assert_eq!(f.check_head_in_sql(&saved), "truncated");
    Ok(())
}

/// A busy ledger whose newest row, saved as a head, was then removed and replaced by a
/// different row, correctly chained: the head returned is the one saved before.
fn replace_head(f: &Fixture) -> AuditHead {
    fill_busy(f);
    let saved = f.ledger.audit_head().expect("head");
    f.tamper(&format!("DELETE FROM audit WHERE seq = {}", saved.seq));
    f.ledger.create_root("cover-up", "mallory").expect("append");
    saved
}

fn a_rewritten_tail_is_detected_against_a_saved_head(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let saved = replace_head(&f);
    assert!(f.ledger.verify(None)?.ok);
    let v = f.ledger.verify(Some(&saved))?;
    assert_eq!(v.problem, Some(ChainProblem::HeadMismatch));
    assert_eq!(f.check_head_in_sql(&saved), "head_mismatch");
    Ok(())
}

fn a_row_that_does_not_extend_the_chain_is_refused_by_the_schema(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let head = f.ledger.audit_head()?;
    let good_hash = "a".repeat(64);
    // A malformed hash is refused by the chain's trigger on SQLite, and on PostgreSQL by the
    // column's CHECK, which runs before the statement's triggers.
    let malformed: &[&str] = match engine {
        Engine::Sqlite => &["hash chain"],
        Engine::Postgres => &["audit_hash_is_64_hex"],
    };
    for (seq, prev, hash, expected) in [
        (
            head.seq + 2,
            head.hash.clone(),
            good_hash.clone(),
            &["hash chain"][..],
        ), // skips a seq
        (
            head.seq + 1,
            "0".repeat(64),
            good_hash.clone(),
            &["hash chain"],
        ), // wrong prev_hash
        (head.seq + 1, head.hash.clone(), "xyz".to_owned(), malformed),
    ] {
        let insert = format!(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES ({seq}, '2999-01-01T00:00:00.000Z', 'x', 'session.end', 'w1', '{{}}',
                     '{prev}', '{hash}')"
        );
        let err = f.exec(&insert).expect_err("refused");
        assert!(expected.iter().any(|e| err.contains(e)), "{err}");
    }
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

/// An audit row written by hand: (seq, at, kind, prev_hash, hash).
type HandRow = (i64, String, String, String, String);

/// `n` rows after `f`'s head, each correctly chained to the one before, one second apart from
/// 2999-01-01.
fn chained_rows(f: &Fixture, n: i64) -> Vec<HandRow> {
    let head = f.ledger.audit_head().expect("head");
    let mut prev = head.hash;
    (1..=n)
        .map(|i| {
            let seq = head.seq + i;
            let at = format!("2999-01-01T00:00:{i:02}.000Z");
            let hash = chain_hash(&prev, seq, &at, "x", "session.end", Some("w1"), "{}");
            let row = (
                seq,
                at,
                "session.end".to_owned(),
                prev.clone(),
                hash.clone(),
            );
            prev = hash;
            row
        })
        .collect()
}

/// One `INSERT` of all of `rows`.
fn insert_rows(rows: &[HandRow]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|(seq, at, kind, prev, hash)| {
            format!("({seq}, '{at}', 'x', '{kind}', 'w1', '{{}}', '{prev}', '{hash}')")
        })
        .collect();
    format!(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash) VALUES {}",
        values.join(", ")
    )
}

/// What the library does in a cascade, many rows in one statement, a hand edit may do too: the
/// schema checks every row of it against the row before, and one bad row refuses them all.
fn a_statement_of_several_rows_that_breaks_the_chain_anywhere_is_refused_whole(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let before = f.snapshot();
    type Breaks = fn(&mut Vec<HandRow>);
    let cases: [(&str, Breaks, &str); 5] = [
        (
            "the middle row skips a seq, and the last follows it",
            |r| {
                r[1].0 += 1;
                r[2].0 += 1;
            },
            "hash chain",
        ),
        (
            "the middle row names another prev_hash",
            |r| r[1].3 = "0".repeat(64),
            "hash chain",
        ),
        (
            "the last row names the first row's hash",
            |r| r[2].3 = r[0].4.clone(),
            "hash chain",
        ),
        (
            "the middle row goes back in time",
            |r| r[1].1 = "2998-12-31T23:59:59.999Z".to_owned(),
            "time",
        ),
        (
            "the last row has an unknown kind",
            |r| r[2].2 = "session.vanish".to_owned(),
            "kind",
        ),
    ];
    for (what, break_it, expected) in cases {
        let mut rows = chained_rows(&f, 3);
        break_it(&mut rows);
        let err = f.exec(&insert_rows(&rows)).expect_err(what);
        assert!(err.contains(expected), "{what}: {err}");
        assert_eq!(f.snapshot(), before, "{what}: a row was kept");
    }
    // The same rows unbroken are accepted, and the trail they end verifies.
    let rows = chained_rows(&f, 3);
    f.exec(&insert_rows(&rows))?;
    let v = f.ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(f.ledger.audit_head()?.hash, rows[2].4);
    Ok(())
}

#[test]
fn a_malformed_saved_head_is_refused() {
    for bad in [
        "",
        "12",
        "x:abc",
        "12:abc",
        &format!("-1:{}", "a".repeat(64)),
        &format!("1:{}", "A".repeat(64)),
    ] {
        assert!(bad.parse::<AuditHead>().is_err(), "{bad:?}");
    }
    let good = format!("12:{}", "a".repeat(64));
    assert_eq!(good.parse::<AuditHead>().expect("parses").to_string(), good);
}

fn the_audit_query_filters_by_subtree_and_time(engine: Engine) -> TestResult {
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-01-01T00:00:00.000Z".parse()?,
    ));
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.build("a > a1; a1 > a2; b > b1");
    clock.advance(chrono::TimeDelta::hours(1));
    f.ledger.end("a2", "op")?;
    f.ledger.end("b1", "op")?;
    let sessions = |q: AuditQuery| -> Vec<String> {
        f.ledger
            .audit(&q)
            .expect("audit")
            .into_iter()
            .filter_map(|e| e.session)
            .collect()
    };
    assert_eq!(
        sessions(AuditQuery::all().subtree("a1")),
        ["a1", "a2", "a2"]
    );
    let since: chrono::DateTime<chrono::Utc> = "2026-01-01T00:30:00Z".parse()?;
    assert_eq!(sessions(AuditQuery::all().since(since)), ["a2", "b1"]);
    assert_eq!(sessions(AuditQuery::all().until(since)).len(), 5);
    assert_eq!(
        sessions(AuditQuery::all().subtree("b").since(since)),
        ["b1"]
    );
    Ok(())
}

fn explain_traces_a_posture_back_to_the_operators_grant_row(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("conductor", "op")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build("conductor > w1; w1 > w2");
    f.ledger.add_pattern("w2", "npm test", "bob")?;
    f.ledger
        .grant_scope("w2", "hotfix", Duration::from_secs(60), "bob")?;
    let e = f.ledger.explain("w2")?;
    let posture = e.state.posture.as_ref().expect("inherited posture");
    assert_eq!(posture.chain, ["conductor", "w1", "w2"]);
    assert!(e.state.trust);
    assert!(e.state.materialized.is_none(), "explain reads only");
    let grant = e.grant.expect("the grant's audit row");
    assert_eq!(
        (grant.kind.as_str(), grant.actor.as_str()),
        ("posture.grant", "alice")
    );
    assert_eq!(grant.session.as_deref(), Some("conductor"));
    assert_eq!(e.patterns[0].pattern, "npm test");
    assert_eq!(e.live_scopes[0].name, "hotfix");
    let kinds: Vec<_> = e.audit.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["session.create", "pattern.add", "scope.grant"]);
    Ok(())
}

fn explain_names_the_grant_a_posture_came_from_when_a_later_grant_shares_its_millisecond(
    engine: Engine,
) -> TestResult {
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-01-01T00:00:00.000Z".parse()?,
    ));
    let f = fixture!(
        engine,
        Config::default().create_if_missing(true).clock(clock)
    );
    f.ledger.create_root("conductor", "op")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.ledger.create_child("worker", "conductor", "op")?;
    // In the same millisecond, bob replaces the conductor's grant: the worker keeps alice's.
    f.ledger
        .grant("conductor", PostureLevel::TrustReads, "bob")?;
    let e = f.ledger.explain("worker")?;
    let posture = e.state.posture.as_ref().expect("inherited posture");
    assert_eq!(
        (posture.granted_by.as_str(), posture.level),
        ("alice", PostureLevel::Trust)
    );
    let grant = e.grant.expect("the grant's audit row");
    assert_eq!(grant.actor, "alice", "{grant:?}");
    assert_eq!(grant.detail["posture"], "trust", "{grant:?}");
    Ok(())
}

/// Builds a ledger of at least `rows` audit rows through the library: chains of created
/// sessions under a trusted root (one row each), the first read of each chain's end (one
/// `label.inherit` row per session, in one transaction per chain), and one cascade revoking
/// every posture (one row per session, in one transaction).
fn grow_large(f: &Fixture, rows: usize) {
    f.ledger.create_root("root", "op").expect("root");
    f.ledger
        .grant("root", PostureLevel::Trust, "op")
        .expect("grant");
    let sessions = rows / 3 + 1;
    let mut made = 0;
    let mut chain = 0;
    while made < sessions {
        let mut parent = "root".to_owned();
        for depth in 0..60 {
            let id = format!("c{chain}-{depth}");
            f.ledger.create_child(&id, &parent, "op").expect("create");
            parent = id;
            made += 1;
        }
        f.ledger.state(&parent).expect("first read");
        chain += 1;
    }
    f.ledger
        .revoke("root", Propagation::CascadeUnchecked, "op")
        .expect("cascade");
}

/// No bound in the way of building a large ledger quickly.
fn unbounded() -> Config {
    Config::default()
        .create_if_missing(true)
        .synchronous(Synchronous::Normal)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

/// How many audit rows the large ledger has.
const LARGE_ROWS: usize = 100_000;

/// The large ledger on `engine`: built through the library on SQLite; on PostgreSQL, built so in
/// a SQLite file and moved over with `Ledger::copy_into`, since each of its 33,000 creates would
/// be a transaction of a dozen round trips to the server, most of the suite's time. The rows are
/// the same either way, and the copy is verified before it commits.
fn large_ledger(engine: Engine) -> Option<Fixture> {
    let built = Fixture::with(unbounded());
    grow_large(&built, LARGE_ROWS);
    match engine {
        Engine::Sqlite => Some(built),
        Engine::Postgres => {
            let moved = Fixture::on(engine, unbounded())?;
            built.ledger.copy_into(&moved.ledger).expect("copy");
            Some(moved)
        }
    }
}

fn the_rust_verifier_and_the_sql_query_agree_on_a_large_ledger(engine: Engine) -> TestResult {
    let Some(f) = large_ledger(engine) else {
        return Ok(());
    };
    let rows = LARGE_ROWS;
    let v = f.ledger.verify(None)?;
    assert!(v.rows >= rows as u64, "{} rows", v.rows);
    assert!(v.ok);
    assert_eq!(f.verify_in_sql(), None);
    let edited = rows as i64 * 7 / 9;
    f.tamper(&format!(
        "UPDATE audit SET detail = '{{\"x\":1}}' WHERE seq = {edited}"
    ));
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(edited), Some(ChainProblem::HashMismatch))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    Ok(())
}

fn the_empty_trails_head_is_checked_too(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let genesis = f.ledger.audit_head()?;
    assert_eq!(genesis.seq, 0);
    assert!(f.ledger.verify(Some(&genesis))?.ok);
    let forged: AuditHead = format!("0:{}", "a".repeat(64)).parse()?;
    assert_eq!(
        f.ledger.verify(Some(&forged))?.problem,
        Some(ChainProblem::HeadMismatch)
    );
    Ok(())
}

/// Pages in the WAL since the last reset; then resets it.
fn wal_pages(conn: &rusqlite::Connection) -> rusqlite::Result<i64> {
    let logged: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(logged)
}

#[test]
fn an_audited_raise_commits_its_label_page_and_two_pages_of_the_trail() -> TestResult {
    let f = Fixture::new();
    for i in 0..20 {
        f.ledger.create_root(&format!("r{i:02}"), "op")?;
    }
    let conn = f.sql();
    wal_pages(&conn)?;
    let secret = session_ledger::Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    let mut pages = Vec::new();
    for i in 0..11 {
        f.ledger.raise(&format!("r{i:02}"), secret, "op")?;
        pages.push(wal_pages(&conn)?);
    }
    // A raise writes the page of its label, the trail's last page, and the page of
    // audit_by_session its row goes into; nothing else is indexed by every audit row. (A raise
    // whose audit row fills the trail's last page splits it and writes more.)
    pages.sort_unstable();
    assert_eq!(pages[pages.len() / 2], 3, "{pages:?}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Revocation events (schema version 8)
// ------------------------------------------------------------------------------------------------

/// The `revocations` view: (seq, session, propagation, root, revocation), by seq.
type RevocationRow = (i64, String, String, Option<String>, Option<i64>);

fn revocation_rows(f: &Fixture) -> Vec<RevocationRow> {
    let number = |v: &Option<String>| v.as_deref().map(|n| n.parse().expect("a number"));
    f.query("SELECT seq, session_id, propagation, root, revocation FROM revocations ORDER BY seq")
        .into_iter()
        .map(|r| {
            let text = |i: usize| r[i].clone().expect("a value");
            (
                number(&r[0]).expect("seq"),
                text(1),
                text(2),
                r[3].clone(),
                number(&r[4]),
            )
        })
        .collect()
}

/// A ledger whose clock stands still: every row has the same time, so time alone tells no two
/// events apart.
fn frozen() -> Config {
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-01-01T00:00:00.000Z".parse().expect("time"),
    ));
    Config::default().create_if_missing(true).clock(clock)
}

fn two_cascades_from_one_root_have_different_revocation_ids(engine: Engine) -> TestResult {
    let f = fixture!(engine, frozen());
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build("conductor > w1 w2; w1 > w1a");
    let first = f.ledger.audit_head()?.seq + 1;
    let one = f
        .ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "carol")?;
    assert_eq!(one.count, 4);
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build("conductor > w3");
    let second = f.ledger.audit_head()?.seq + 1;
    let two = f
        .ledger
        .revoke("conductor", Propagation::CascadeUnchecked, "carol")?;
    assert_eq!(two.count, 2);

    let rows = revocation_rows(&f);
    let ids: Vec<Option<i64>> = rows.iter().map(|r| r.4).collect();
    assert_eq!(
        ids,
        [
            Some(first),
            Some(first),
            Some(first),
            Some(first),
            Some(second),
            Some(second)
        ],
        "{rows:?}"
    );
    assert_eq!(
        rows[0].0, first,
        "the identifier is the seq of the first row"
    );
    assert_eq!(rows[4].0, second);
    // The identifier is in each row's detail, covered by the hash chain.
    for row in f
        .ledger
        .audit(&AuditQuery::all().kind(AuditKind::PostureRevoke))?
    {
        assert!(
            row.detail["revocation"] == first || row.detail["revocation"] == second,
            "{row:?}"
        );
    }
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

fn a_local_revoke_and_a_global_revoke_each_have_an_identifier_of_their_own(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine, frozen());
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.build("conductor > w1 w2");
    f.ledger.create_root("reviewer", "bob")?;
    f.ledger
        .grant("reviewer", PostureLevel::TrustReads, "bob")?;
    let local = f.ledger.audit_head()?.seq + 1;
    f.ledger.revoke("w1", Propagation::Local, "carol")?;
    let global = f.ledger.audit_head()?.seq + 1;
    assert_eq!(f.ledger.revoke_all("carol")?.count, 3);
    let rows = revocation_rows(&f);
    let events: Vec<(&str, Option<i64>)> = rows.iter().map(|r| (r.2.as_str(), r.4)).collect();
    assert_eq!(
        events,
        [
            ("local", Some(local)),
            ("global", Some(global)),
            ("global", Some(global)),
            ("global", Some(global)),
        ],
        "{rows:?}"
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// verify from a saved head
// ------------------------------------------------------------------------------------------------

/// [`fill_busy`], a head saved, and ten more changes after it.
fn busy_with_a_saved_head(f: &Fixture) -> AuditHead {
    fill_busy(f);
    let saved = f.ledger.audit_head().expect("head");
    for i in 0..10 {
        f.ledger
            .create_root(&format!("later-{i}"), "dave")
            .expect("root");
    }
    saved
}

fn verify_from_a_saved_head_reads_only_the_rows_after_it(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let saved = busy_with_a_saved_head(&f);
    let v = f.ledger.verify_from(&saved)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.rows, 11, "the saved head's row and the ten after it");
    assert_eq!(v.head, f.ledger.audit_head()?);

    // A row edited before the saved head is not read: only the full walk reports it.
    f.tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 3");
    assert!(f.ledger.verify_from(&saved)?.ok);
    let full = f.ledger.verify(None)?;
    assert_eq!(
        (full.first_bad_seq, full.problem),
        (Some(3), Some(ChainProblem::HashMismatch))
    );

    // A row edited after it is reported.
    let after = saved.seq + 4;
    f.tamper(&format!(
        "UPDATE audit SET actor = 'mallory' WHERE seq = {after}"
    ));
    let v = f.ledger.verify_from(&saved)?;
    assert!(!v.ok);
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(after), Some(ChainProblem::HashMismatch))
    );
    assert_eq!(v.rows, 11, "the walk still reads to the end");
    Ok(())
}

fn verify_from_detects_an_edit_of_the_saved_heads_own_row(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let saved = busy_with_a_saved_head(&f);
    f.tamper(&format!(
        "UPDATE audit SET detail = '{{\"forged\":true}}' WHERE seq = {}",
        saved.seq
    ));
    let v = f.ledger.verify_from(&saved)?;
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(saved.seq), Some(ChainProblem::HashMismatch))
    );
    Ok(())
}

fn verify_from_a_head_that_was_replaced_removed_or_cut_off_says_which(
    engine: Engine,
) -> TestResult {
    // Replaced: the saved row deleted and the tail rewritten, correctly chained.
    let f = fixture!(engine);
    let saved = replace_head(&f);
    let v = f.ledger.verify_from(&saved)?;
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(saved.seq), Some(ChainProblem::HeadMismatch))
    );

    // Removed from the middle: a gap where the saved row was.
    let f = fixture!(engine);
    let saved = busy_with_a_saved_head(&f);
    f.tamper(&format!("DELETE FROM audit WHERE seq = {}", saved.seq));
    let v = f.ledger.verify_from(&saved)?;
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(saved.seq + 1), Some(ChainProblem::Gap))
    );

    // Cut off: the trail now ends before the saved head.
    let f = fixture!(engine);
    let saved = busy_with_a_saved_head(&f);
    f.tamper(&format!("DELETE FROM audit WHERE seq >= {}", saved.seq - 2));
    let v = f.ledger.verify_from(&saved)?;
    assert_eq!(
        (v.first_bad_seq, v.problem, v.rows),
        (Some(saved.seq), Some(ChainProblem::Truncated), 0)
    );
    assert_eq!(v.head.seq, saved.seq - 3);
    Ok(())
}

fn verify_from_the_genesis_head_walks_the_whole_trail(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let genesis: AuditHead = format!("0:{}", session_ledger::GENESIS_HASH).parse()?;
    assert_eq!(f.ledger.verify_from(&genesis)?, f.ledger.verify(None)?);
    let forged: AuditHead = format!("0:{}", "a".repeat(64)).parse()?;
    assert_eq!(
        f.ledger.verify_from(&forged)?.problem,
        Some(ChainProblem::HeadMismatch)
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Time order (schema version 8)
// ------------------------------------------------------------------------------------------------

/// The statement that appends, by hand, a row at `at` that extends the chain correctly.
fn hand_appended_row(f: &Fixture, at: &str) -> String {
    let head = f.ledger.audit_head().expect("head");
    let (seq, prev) = (head.seq + 1, head.hash);
    let hash = chain_hash(&prev, seq, at, "mallory", "session.end", Some("w1"), "{}");
    format!(
        "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES ({seq}, '{at}', 'mallory', 'session.end', 'w1', '{{}}', '{prev}', '{hash}')"
    )
}

fn a_row_whose_time_goes_back_is_refused_by_the_schema(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let err = f
        .exec(&hand_appended_row(&f, "2000-01-01T00:00:00.000Z"))
        .expect_err("refused");
    assert!(err.contains("time"), "{err}");
    // A row in order, correctly chained, is accepted.
    f.exec(&hand_appended_row(&f, "2999-01-01T00:00:00.000Z"))?;
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

/// SQLite's shell can switch CHECK constraints off; a time of another form is still refused.
#[test]
fn a_time_of_another_form_is_refused_with_sqlite_checks_off() -> TestResult {
    let f = Fixture::new();
    fill_busy(&f);
    let conn = f.sql();
    conn.execute_batch("PRAGMA ignore_check_constraints = ON")?;
    let err = conn
        .execute(&hand_appended_row(&f, "~~~~"), [])
        .expect_err("refused");
    assert!(err.to_string().contains("time"), "{err}");
    Ok(())
}

fn a_row_whose_time_goes_back_is_detected_by_both_verifiers(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let saved = f.ledger.audit_head()?;
    f.tamper(&hand_appended_row(&f, "2000-01-01T00:00:00.000Z"));
    let v = f.ledger.verify(None)?;
    assert_eq!(
        (v.first_bad_seq, v.problem.clone()),
        (Some(saved.seq + 1), Some(ChainProblem::TimeGoesBack))
    );
    assert_eq!(f.verify_in_sql(), rust_verdict(&v));
    let v = f.ledger.verify_from(&saved)?;
    assert_eq!(
        (v.first_bad_seq, v.problem),
        (Some(saved.seq + 1), Some(ChainProblem::TimeGoesBack))
    );
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Listing by time and by pages
// ------------------------------------------------------------------------------------------------

/// A ledger of a few hundred rows whose times step irregularly: often not at all (several rows
/// in one millisecond), sometimes by a millisecond, sometimes by minutes.
fn stepped(engine: Engine) -> Option<Fixture> {
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-01-01T00:00:00.000Z".parse().expect("time"),
    ));
    let f = Fixture::on(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
            .max_live_children(u32::MAX)
            .creation_rate(u32::MAX, Duration::from_secs(1)),
    )?;
    f.ledger.create_root("root", "op").expect("root");
    for i in 0..300_i64 {
        let parent = if i % 3 == 0 {
            "root".to_owned()
        } else {
            format!("s{}", i - 1)
        };
        f.ledger
            .create_child(&format!("s{i}"), &parent, "op")
            .expect("create");
        if i % 5 == 0 {
            f.ledger.state(&format!("s{i}")).expect("first read");
        }
        if i % 4 == 0 {
            f.ledger
                .add_pattern("root", &format!("make t{i}"), "op")
                .expect("pattern");
        }
        let step = match (i * 7) % 11 {
            0..=4 => 0,
            5..=7 => 1,
            8 | 9 => 1_000,
            _ => 300_000,
        };
        clock.advance(chrono::TimeDelta::milliseconds(step));
    }
    Some(f)
}

fn listing_by_time_finds_the_same_rows_as_a_filter_over_the_whole_trail(
    engine: Engine,
) -> TestResult {
    let Some(f) = stepped(engine) else {
        return Ok(());
    };
    let all = f.ledger.audit(&AuditQuery::all())?;
    assert!(all.len() > 300, "{} rows", all.len());
    let first = all[0].at;
    let last = all[all.len() - 1].at;
    let ms = chrono::TimeDelta::milliseconds;
    // Every stored time, the instants just around them, and times outside the trail.
    let mut bounds = vec![first - ms(60_000), last + ms(60_000)];
    for r in all.iter().step_by(7) {
        bounds.extend([r.at, r.at - ms(1), r.at + ms(1)]);
        bounds.push(r.at + chrono::TimeDelta::microseconds(300));
    }
    let window = |since: Option<chrono::DateTime<chrono::Utc>>,
                  until: Option<chrono::DateTime<chrono::Utc>>|
     -> Vec<i64> {
        all.iter()
            .filter(|r| since.is_none_or(|s| r.at >= s) && until.is_none_or(|u| r.at < u))
            .map(|r| r.seq)
            .collect()
    };
    let listed = |q: AuditQuery| -> Vec<i64> {
        f.ledger
            .audit(&q)
            .expect("audit")
            .into_iter()
            .map(|r| r.seq)
            .collect()
    };
    for (i, &since) in bounds.iter().enumerate() {
        assert_eq!(
            listed(AuditQuery::all().since(since)),
            window(Some(since), None),
            "since {since}"
        );
        assert_eq!(
            listed(AuditQuery::all().until(since)),
            window(None, Some(since)),
            "until {since}"
        );
        let until = bounds[(i * 13 + 5) % bounds.len()];
        let expected = window(Some(since), Some(until));
        assert_eq!(
            listed(AuditQuery::all().since(since).until(until)),
            expected,
            "{since} .. {until}"
        );
        // With a limit: the newest rows of the window.
        let newest: Vec<i64> = expected[expected.len().saturating_sub(5)..].to_vec();
        assert_eq!(
            listed(AuditQuery::all().since(since).until(until).limit(5)),
            newest
        );
    }
    Ok(())
}

/// Every page of `query` with `limit` rows, newest page first, following `before`.
fn pages(f: &Fixture, query: &AuditQuery, limit: u32) -> Vec<Vec<i64>> {
    let mut pages = Vec::new();
    let mut q = query.clone().limit(limit);
    loop {
        let page: Vec<i64> = f
            .ledger
            .audit(&q)
            .expect("audit")
            .into_iter()
            .map(|r| r.seq)
            .collect();
        let Some(&oldest) = page.first() else {
            break;
        };
        assert!(page.len() <= limit as usize);
        assert!(
            page.windows(2).all(|w| w[0] < w[1]),
            "oldest first: {page:?}"
        );
        pages.push(page);
        q = q.before(oldest);
    }
    pages
}

fn pages_before_a_seq_cover_the_trail_newest_first_without_overlap(engine: Engine) -> TestResult {
    let Some(f) = stepped(engine) else {
        return Ok(());
    };
    let since = f.ledger.audit(&AuditQuery::all())?[100].at;
    for query in [
        AuditQuery::all(),
        AuditQuery::all().kind(AuditKind::LabelInherit),
        AuditQuery::all().session("root"),
        AuditQuery::all()
            .subtree("root")
            .kind(AuditKind::LabelInherit),
        AuditQuery::all()
            .kind(AuditKind::SessionCreate)
            .since(since),
        AuditQuery::all().since(since),
    ] {
        let everything: Vec<i64> = f.ledger.audit(&query)?.into_iter().map(|r| r.seq).collect();
        assert!(everything.len() > 7, "{query:?}");
        let pages = pages(&f, &query, 7);
        assert!(pages[..pages.len() - 1].iter().all(|p| p.len() == 7));
        let walked: Vec<i64> = pages.into_iter().rev().flatten().collect();
        assert_eq!(walked, everything, "{query:?}");
    }
    Ok(())
}

fn before_lists_only_rows_with_a_smaller_seq_still_oldest_first(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    fill_busy(&f);
    let seqs = |q: AuditQuery| -> Vec<i64> {
        f.ledger
            .audit(&q)
            .expect("audit")
            .into_iter()
            .map(|r| r.seq)
            .collect()
    };
    assert_eq!(seqs(AuditQuery::all().before(6)), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(AuditQuery::all().before(6).limit(2)), [4, 5]);
    assert_eq!(seqs(AuditQuery::all().before(1)), Vec::<i64>::new());
    let head = f.ledger.audit_head()?.seq;
    assert_eq!(
        seqs(AuditQuery::all().before(head + 100)).len() as i64,
        head
    );
    Ok(())
}

engine_tests! {
    a_busy_ledger_verifies_with_both_verifiers,
    every_row_carries_the_hash_of_its_predecessor_and_its_own,
    editing_a_row_is_detected_by_both_verifiers,
    editing_a_row_and_recomputing_its_hash_is_detected_at_the_next_row,
    deleting_a_row_in_the_middle_is_detected_by_both_verifiers,
    truncating_the_tail_past_a_saved_head_is_detected_by_both_verifiers,
    a_rewritten_tail_is_detected_against_a_saved_head,
    a_row_that_does_not_extend_the_chain_is_refused_by_the_schema,
    a_statement_of_several_rows_that_breaks_the_chain_anywhere_is_refused_whole,
    the_audit_query_filters_by_subtree_and_time,
    explain_traces_a_posture_back_to_the_operators_grant_row,
    explain_names_the_grant_a_posture_came_from_when_a_later_grant_shares_its_millisecond,
    the_rust_verifier_and_the_sql_query_agree_on_a_large_ledger,
    the_empty_trails_head_is_checked_too,
    two_cascades_from_one_root_have_different_revocation_ids,
    a_local_revoke_and_a_global_revoke_each_have_an_identifier_of_their_own,
    verify_from_a_saved_head_reads_only_the_rows_after_it,
    verify_from_detects_an_edit_of_the_saved_heads_own_row,
    verify_from_a_head_that_was_replaced_removed_or_cut_off_says_which,
    verify_from_the_genesis_head_walks_the_whole_trail,
    a_row_whose_time_goes_back_is_refused_by_the_schema,
    a_row_whose_time_goes_back_is_detected_by_both_verifiers,
    listing_by_time_finds_the_same_rows_as_a_filter_over_the_whole_trail,
    pages_before_a_seq_cover_the_trail_newest_first_without_overlap,
    before_lists_only_rows_with_a_smaller_seq_still_oldest_first,
}
