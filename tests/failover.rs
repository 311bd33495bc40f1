//! A PostgreSQL deployment with a synchronous standby, across what its servers do to it: the
//! standby's wait cancelled at a commit, a connection killed while its commit waits for the
//! standby (a write's, and a decision record's append), readers on the standby, and the primary killed with SIGKILL and the standby
//! promoted while writers in several processes write through a URL naming both servers.
//!
//! It runs against the pair `scripts/with-postgres --standby` starts (`SESSION_LEDGER_TEST_
//! FAILOVER`, `_ADMIN`, `_CONTROL`), as the README's test command runs it. Without the pair each
//! test says it is skipped; with `SESSION_LEDGER_REQUIRE_STANDBY=1` it fails instead. The tests
//! share the pair, so they run one at a time, each first making the pair whole again (`heal`):
//! a new synchronous standby after a failover.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use postgres::{Client, NoTls};
use session_ledger::{
    AskedBy, AuditHead, AuditKind, AuditQuery, Config, DecisionQuery, Error, Ledger, Materialized,
    PostureLevel, Propagation, StorageError,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One test at a time on the one pair.
static SERIAL: Mutex<()> = Mutex::new(());

/// The pair of servers, as `scripts/with-postgres --standby` gives it.
struct Pair {
    /// The owner role through both servers, `target_session_attrs=read-write`.
    url: String,
    /// The superuser through both servers.
    admin: String,
    control: PathBuf,
}

/// Straight to the terminal: the harness hides what a passing test prints.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The pair, or `None` (said) when this run has none.
fn pair() -> Option<Pair> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("SESSION_LEDGER_TEST_FAILOVER"),
        var("SESSION_LEDGER_TEST_FAILOVER_ADMIN"),
        var("SESSION_LEDGER_TEST_FAILOVER_CONTROL"),
    ) {
        (Some(url), Some(admin), Some(control)) => Some(Pair {
            url,
            admin,
            control: control.into(),
        }),
        _ => {
            assert_ne!(
                std::env::var("SESSION_LEDGER_REQUIRE_STANDBY").as_deref(),
                Ok("1"),
                "SESSION_LEDGER_TEST_FAILOVER is not set (scripts/with-postgres --standby sets \
                 it), and SESSION_LEDGER_REQUIRE_STANDBY=1"
            );
            say("*** SKIPPED: a failover test: no standby (run it with scripts/with-postgres --standby) ***");
            None
        }
    }
}

/// `url` with `name=value` added to its query.
fn with(url: &str, name: &str, value: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}{name}={value}")
}

impl Pair {
    /// Runs the control script; its standard output, trimmed.
    fn control(&self, args: &[&str]) -> String {
        let out = Command::new(&self.control)
            .args(args)
            .output()
            .expect("run the pair's control script");
        assert!(
            out.status.success(),
            "control {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    }

    /// The superuser on the primary as it stands now.
    fn admin(&self) -> Client {
        Client::connect(&self.admin, NoTls).expect("connect to the primary as the superuser")
    }

    /// A new, empty schema for a ledger, and the URL of the owner role through both servers
    /// with that schema first on its `search_path`, and `application_name` set to `name`.
    fn ledger_url(&self, name: &str) -> String {
        let schema = format!("failover_{name}_{}", std::process::id());
        // pgcrypto (every ledger's migration asks for it) in `public`, where it serves them all.
        let mut owner = Client::connect(&self.url, NoTls).expect("connect as the owner");
        owner
            .batch_execute(&format!(
                "CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public;
                 DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .expect("a schema");
        let url = with(
            &self.url,
            "options",
            &format!("-c%20search_path%3D{schema}%2Cpublic"),
        );
        with(&url, "application_name", name)
    }

    /// `url` (of [`Pair::ledger_url`]) pointed at one server of the pair alone.
    fn on(&self, role: &str, url: &str) -> String {
        let (_, query) = url.split_once('?').expect("a query");
        let query: Vec<&str> = query
            .split('&')
            .filter(|p| !p.starts_with("target_session_attrs"))
            .collect();
        format!("{}?{}", self.control(&["url", role]), query.join("&"))
    }

    /// The backend of the connection named `name` that waits for the synchronous standby.
    fn waiting_for_the_standby(&self, name: &str) -> i32 {
        let mut admin = self.admin();
        let started = Instant::now();
        loop {
            let rows = admin
                .query(
                    "SELECT pid FROM pg_stat_activity
                      WHERE application_name = $1 AND wait_event = 'SyncRep'",
                    &[&name],
                )
                .expect("pg_stat_activity");
            if let Some(row) = rows.first() {
                return row.get(0);
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no commit of {name} waits for the standby"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Takes the pair for one test, whole.
fn take(pair: &Pair) -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    pair.control(&["heal"]);
    say(&format!(
        "the pair was whole after {} ms",
        started.elapsed().as_millis()
    ));
    guard
}

#[test]
fn a_commit_whose_wait_for_the_synchronous_standby_is_cancelled_is_not_reported_as_done(
) -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("cancelled");
    let ledger = Ledger::init(&url)?;
    ledger.create_root("conductor", "op")?;
    let head = ledger.audit_head()?;

    pair.control(&["stop-standby"]);
    let outcome = std::thread::scope(|s| {
        let create = s.spawn(|| ledger.create_child("worker", "conductor", "op"));
        let pid = pair.waiting_for_the_standby("cancelled");
        let cancelled: bool = pair
            .admin()
            .query_one("SELECT pg_cancel_backend($1)", &[&pid])
            .expect("cancel")
            .get(0);
        assert!(cancelled);
        create.join().expect("the create panicked")
    });
    let e = outcome.expect_err("a create its standby never confirmed");
    assert_eq!(e.kind(), "durability_unknown", "{e}");
    let Error::Storage(StorageError::DurabilityUnknown { seq, hash, .. }) = &e else {
        panic!("not DurabilityUnknown: {e:?}");
    };
    assert_eq!(*seq, head.seq + 1, "it names the write's audit row");
    // It is on the primary, where it may or may not last: the caller's look-up finds it there.
    let written = AuditHead {
        seq: *seq,
        hash: hash.clone(),
    };
    assert!(ledger.verify_from(&written)?.ok);
    say(&format!("a cancelled wait for the standby: {e}"));

    // Once the standby is back and has it, it lasts.
    pair.control(&["start-standby"]);
    pair.control(&["heal"]);
    assert!(ledger.session("worker")?.is_some());
    Ok(())
}

#[test]
fn a_connection_killed_while_its_commit_waits_for_the_standby_is_resolved_done_once_the_standby_has_it(
) -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("killed_done");
    let ledger = Ledger::open_with(
        &url,
        Config::default()
            .create_if_missing(true)
            .failover_wait(Duration::from_secs(60)),
    )?;
    ledger.create_root("conductor", "op")?;
    ledger.grant("conductor", PostureLevel::Trust, "op")?;

    pair.control(&["stop-standby"]);
    let outcome = std::thread::scope(|s| {
        let create = s.spawn(|| ledger.create_child("worker", "conductor", "op"));
        let pid = pair.waiting_for_the_standby("killed_done");
        let killed: bool = pair
            .admin()
            .query_one("SELECT pg_terminate_backend($1)", &[&pid])
            .expect("terminate")
            .get(0);
        assert!(killed);
        // The ledger looks for the write; its confirming commit waits for the standby too.
        pair.waiting_for_the_standby("killed_done");
        pair.control(&["start-standby"]);
        create.join().expect("the create panicked")
    });
    let created = outcome?;
    assert!(created.inherited_trust);
    pair.control(&["heal"]);
    let rows = ledger.audit(&AuditQuery::all().session("worker"))?;
    assert_eq!(rows.len(), 1, "done once: {rows:?}");
    assert!(ledger.verify(None)?.ok);
    Ok(())
}

#[test]
fn a_connection_killed_while_its_commit_waits_for_the_standby_is_unknown_while_the_standby_is_away(
) -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("killed_unknown");
    let wait = Duration::from_secs(2);
    let ledger = Ledger::open_with(
        &url,
        Config::default()
            .create_if_missing(true)
            .failover_wait(wait),
    )?;
    ledger.create_root("conductor", "op")?;
    let head = ledger.audit_head()?;

    pair.control(&["stop-standby"]);
    let outcome = std::thread::scope(|s| {
        let create = s.spawn(|| ledger.create_child("worker", "conductor", "op"));
        let pid = pair.waiting_for_the_standby("killed_unknown");
        pair.admin()
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .expect("terminate");
        create.join().expect("the create panicked")
    });
    let e = outcome.expect_err("a create no server could confirm");
    assert_eq!(e.kind(), "durability_unknown", "{e}");
    let Error::Storage(StorageError::DurabilityUnknown { seq, .. }) = &e else {
        panic!("not DurabilityUnknown: {e:?}");
    };
    assert_eq!(*seq, head.seq + 1);
    say(&format!("a commit killed with the standby away: {e}"));
    pair.control(&["start-standby"]);
    Ok(())
}

#[test]
fn a_decision_record_whose_wait_for_the_standby_is_cancelled_is_reported_unknown_not_kept(
) -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("record_cancelled");
    let ledger = Ledger::init(&url)?;
    ledger.create_root("worker", "op")?;
    let asked = AskedBy::actor("hook");

    pair.control(&["stop-standby"]);
    let outcome = std::thread::scope(|s| {
        let record = s.spawn(|| ledger.decide_and_record("worker", "make", false, &asked));
        let pid = pair.waiting_for_the_standby("record_cancelled");
        let cancelled: bool = pair
            .admin()
            .query_one("SELECT pg_cancel_backend($1)", &[&pid])
            .expect("cancel")
            .get(0);
        assert!(cancelled);
        record.join().expect("the append panicked")
    });
    let e = outcome.expect_err("a record its standby never confirmed");
    assert_eq!(e.kind(), "decisions_unknown", "{e}");
    let Error::Storage(StorageError::DecisionsUnknown { records, .. }) = &e else {
        panic!("not DecisionsUnknown: {e:?}");
    };
    // It is on the primary, where it may or may not last: the caller's look-up finds it there.
    assert!(ledger.decision(&records[0])?.is_some());
    say(&format!("a record's cancelled wait for the standby: {e}"));
    pair.control(&["start-standby"]);
    pair.control(&["heal"]);
    Ok(())
}

#[test]
fn a_decision_append_killed_while_it_waits_for_the_standby_is_sent_again_and_kept_once(
) -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("record_killed");
    let ledger = Ledger::open_with(
        &url,
        Config::default()
            .create_if_missing(true)
            .failover_wait(Duration::from_secs(60)),
    )?;
    ledger.create_root("worker", "op")?;
    let asked = AskedBy::actor("hook");

    pair.control(&["stop-standby"]);
    let outcome = std::thread::scope(|s| {
        let record = s.spawn(|| ledger.decide_and_record("worker", "make", false, &asked));
        let pid = pair.waiting_for_the_standby("record_killed");
        let killed: bool = pair
            .admin()
            .query_one("SELECT pg_terminate_backend($1)", &[&pid])
            .expect("terminate")
            .get(0);
        assert!(killed);
        // Sent again on a fresh connection, whose commit waits for the standby too.
        pair.waiting_for_the_standby("record_killed");
        pair.control(&["start-standby"]);
        record.join().expect("the append panicked")
    });
    let recorded = outcome?;
    pair.control(&["heal"]);
    let all = ledger.decisions(&DecisionQuery::default())?;
    assert_eq!(all.len(), 1, "kept once: {all:?}");
    assert_eq!(all[0].record, recorded.record);
    Ok(())
}

#[test]
fn readers_on_the_standby_read_as_a_read_only_handle_does_and_writers_are_refused() -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("readers");
    let writer = Ledger::init(&url)?;
    writer.create_root("conductor", "op")?;
    writer.grant("conductor", PostureLevel::Trust, "op")?;
    writer.create_child("worker", "conductor", "op")?;
    writer.add_pattern("worker", "make test", "op")?;
    writer.state("conductor")?;
    let head = writer.audit_head()?;

    let on_standby = pair.on("standby", &url);
    // A synchronous commit is on the standby's disk; it shows once the standby replayed it. A
    // standby made anew by the test before (from a base backup) may not have replayed the
    // ledger's schema yet: until it has, the schema is empty there.
    let started = Instant::now();
    let reader = loop {
        let config = Config::default().create_if_missing(true).read_only(true);
        match Ledger::open_with(&on_standby, config) {
            Err(Error::Storage(StorageError::NotALedger(_)))
                if started.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            opened => break opened?,
        }
    };
    while reader.audit_head()? != head {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the standby lags"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(reader.state("conductor")?.trust);
    let first = reader.state("worker")?;
    assert!(first.trust, "it inherited the posture");
    assert!(
        matches!(&first.materialized, Some(Materialized::Unrecorded { from }) if from == "conductor"),
        "a first read on the standby answers without recording: {:?}",
        first.materialized
    );
    assert_eq!(reader.tree("conductor")?.len(), 2);
    assert!(!reader.explain("worker")?.patterns.is_empty());
    assert!(reader.verify(None)?.ok);
    assert!(reader.check()?.ok);
    assert_eq!(reader.audit(&AuditQuery::all())?.len() as i64, head.seq);
    let e = reader.create_root("other", "op").expect_err("no write");
    assert_eq!(e.kind(), "read_only");

    let e = Ledger::init(&on_standby).expect_err("a handle that writes, on a standby");
    assert_eq!(e.kind(), "standby", "{e}");
    say(&format!("a writing handle on the standby: {e}"));

    // The command line: a read command answers; a write is refused in one line.
    let cli = env!("CARGO_BIN_EXE_session-ledger");
    let state = Command::new(cli)
        .args(["--db", &on_standby, "state", "worker"])
        .output()?;
    assert!(
        state.status.success(),
        "{}",
        String::from_utf8_lossy(&state.stderr)
    );
    assert!(String::from_utf8_lossy(&state.stdout).contains("not recorded"));
    let create = Command::new(cli)
        .args(["--db", &on_standby, "--json", "create", "other"])
        .output()?;
    assert_eq!(create.status.code(), Some(1));
    let said = String::from_utf8_lossy(&create.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("\"kind\":\"standby\""), "{said}");
    Ok(())
}

/// What a writer process did: one line per operation, `MILLIS OP ID OUTCOME MESSAGE`, where
/// OUTCOME is `ok` or the error's kind, and MESSAGE the error's (empty for `ok`).
struct Logged {
    at: u128,
    op: String,
    id: String,
    outcome: String,
}

fn millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
}

/// Not a test: a writer process of [`every_acknowledged_write_survives_the_primary_killed_and_
/// the_standby_promoted`], which starts this binary with this one test and its variables.
/// Until its deadline it runs cycles of a root, its trust, three children born with it, and a
/// cascade revoke of the root, each step logged; a cycle whose step fails is left, and the
/// next begins.
#[test]
#[ignore = "a writer process of the failover test, which starts it"]
fn writer_process_of_the_failover_test() {
    let var = |name: &str| std::env::var(name).expect(name);
    let url = var("FAILOVER_WRITER_URL");
    let name = var("FAILOVER_WRITER_NAME");
    let until: u128 = var("FAILOVER_WRITER_UNTIL").parse().expect("millis");
    let mut log = std::fs::File::create(var("FAILOVER_WRITER_LOG")).expect("the log");
    let ledger = Ledger::open_with(
        &url,
        Config::default()
            .create_if_missing(true)
            .failover_wait(Duration::from_secs(30))
            .pool_size(2),
    )
    .expect("open");
    // Logs a step; true when it was acknowledged.
    let mut logged = |op: &str, id: &str, done: session_ledger::Result<()>| -> bool {
        let (outcome, said) = match done {
            Ok(()) => ("ok", String::new()),
            Err(e) => (e.kind(), e.to_string().replace('\n', " ")),
        };
        writeln!(log, "{} {op} {id} {outcome} {said}", millis()).expect("log");
        outcome == "ok"
    };
    let mut cycle = 0;
    while millis() < until {
        cycle += 1;
        let root = format!("{name}-{cycle}");
        let _ = logged("root", &root, ledger.create_root(&root, "op").map(drop))
            && logged(
                "grant",
                &root,
                ledger.grant(&root, PostureLevel::Trust, "op").map(drop),
            )
            && (1..=3).all(|k| {
                let child = format!("{root}.{k}");
                logged(
                    "child",
                    &child,
                    ledger.create_child(&child, &root, "op").map(drop),
                )
            })
            && logged(
                "cascade",
                &root,
                ledger
                    .revoke(&root, Propagation::CascadeUnchecked, "op")
                    .map(drop),
            );
    }
}

#[test]
fn every_acknowledged_write_survives_the_primary_killed_and_the_standby_promoted() -> TestResult {
    let Some(pair) = pair() else { return Ok(()) };
    let _pair = take(&pair);
    let url = pair.ledger_url("failover");
    // The schema first, so that the writers do not race to make it.
    drop(Ledger::init(&url)?);

    let writers = 3;
    let dir = tempfile::tempdir()?;
    let started = millis();
    let until = started + 8_000;
    let mut processes = Vec::new();
    for w in 0..writers {
        let log = dir.path().join(format!("w{w}.log"));
        let child = Command::new(std::env::current_exe()?)
            .args([
                "--ignored",
                "--exact",
                "writer_process_of_the_failover_test",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env("FAILOVER_WRITER_URL", &url)
            .env("FAILOVER_WRITER_NAME", format!("w{w}"))
            .env("FAILOVER_WRITER_UNTIL", until.to_string())
            .env("FAILOVER_WRITER_LOG", &log)
            .stdout(std::process::Stdio::null())
            .spawn()?;
        processes.push((child, log));
    }
    std::thread::sleep(Duration::from_millis(2_500));
    let killed_at = millis();
    pair.control(&["kill-primary"]);
    // What a failover manager takes to decide, shortened.
    std::thread::sleep(Duration::from_millis(300));
    let promote_at = millis();
    pair.control(&["promote"]);
    let promoted_at = millis();
    for (child, _) in &mut processes {
        let status = child.wait()?;
        assert!(status.success(), "a writer process failed: {status}");
    }
    let ended_at = millis();

    let mut logged = Vec::new();
    for (w, (_, log)) in processes.iter().enumerate() {
        let text = std::fs::read_to_string(log)?;
        let mut resumed = false;
        for line in text.lines() {
            let parts: Vec<&str> = line.splitn(5, ' ').collect();
            let [at, op, id, outcome, said] = parts[..] else {
                panic!("a log line {line:?}");
            };
            if outcome != "ok" {
                say(&format!("failover: w{w} {op} {id}: {outcome}: {said}"));
            }
            let entry = Logged {
                at: at.parse()?,
                op: op.to_owned(),
                id: id.to_owned(),
                outcome: outcome.to_owned(),
            };
            resumed |= entry.outcome == "ok" && entry.at > promoted_at;
            logged.push(entry);
        }
        assert!(resumed, "writer w{w} wrote nothing after the promotion");
    }

    // Everything acknowledged is on the new primary.
    let ledger = Ledger::init(&url)?;
    let mut lost = Vec::new();
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &logged {
        *outcomes.entry(entry.outcome.as_str()).or_default() += 1;
        if entry.outcome != "ok" {
            continue;
        }
        let found = match entry.op.as_str() {
            "root" | "child" => ledger.session(&entry.id)?.is_some(),
            "grant" | "cascade" => {
                let kind = if entry.op == "grant" {
                    AuditKind::PostureGrant
                } else {
                    AuditKind::PostureRevoke
                };
                !ledger
                    .audit(&AuditQuery::all().session(entry.id.as_str()).kind(kind))?
                    .is_empty()
            }
            op => panic!("an unknown step {op}"),
        };
        if !found {
            lost.push(format!("{} {}", entry.op, entry.id));
        }
        // Rule R3: a cascade acknowledged left no posture under its root.
        if entry.op == "cascade" {
            for node in ledger.tree(&entry.id)? {
                assert!(
                    !node.trust && !node.trust_reads,
                    "{} holds a posture under the revoked {}",
                    node.session.id,
                    entry.id
                );
            }
        }
    }
    assert!(
        ledger.verify(None)?.ok,
        "the chain verifies on the new primary"
    );
    let acknowledged = outcomes.get("ok").copied().unwrap_or(0);
    let first_after = logged
        .iter()
        .filter(|e| e.outcome == "ok" && e.at > promote_at)
        .map(|e| e.at)
        .min()
        .expect("a write after the promotion");
    say(&format!(
        "failover: {writers} writer processes, {} operations: {acknowledged} acknowledged, {} \
         lost; outcomes {outcomes:?}; the primary killed at +{} ms, promoted at +{} ms \
         (pg_ctl promote took {} ms); first acknowledged write {} ms after the promotion began; \
         the writers stopped at +{} ms",
        logged.len(),
        lost.len(),
        killed_at - started,
        promote_at - started,
        promoted_at - promote_at,
        first_after - promote_at,
        ended_at - started,
    ));
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    assert!(acknowledged > 0);
    Ok(())
}
