//! Crash recovery: every commit the ledger reported survives a SIGKILL at any instant,
//! and the file reopens intact.
//!
//! The test re-runs its own binary as a child process. With `SESSION_LEDGER_CRASH_CHILD=<path>`
//! set, the test function is the child: it opens the ledger at that path with the default
//! [`Config`](session_ledger::Config) (synchronous FULL) and commits a deterministic mix of
//! operations in a loop, printing one `COMMIT <seq> <change>` line after each call *returns*,
//! where `<seq>` is the audit head read right after the call (the child is the only writer
//! while it runs, so that is the last row its own call wrote, or the head it left unchanged).
//!
//! The parent starts the child, sleeps a random 1 to 60 ms, kills it with SIGKILL (`Child::kill`),
//! and checks the reopened file. Most delays count from the moment the child says it has opened
//! the ledger, so that the kill lands among its commits; the first trial on each ledger and one
//! in five of the others count from the start of the process, so that the kill lands while the
//! child starts, opens, recovers the file after the last kill, or creates and migrates it. The
//! checks:
//!
//! * `PRAGMA integrity_check` is `ok` and `PRAGMA foreign_key_check` has no rows;
//! * the audit chain verifies, and still contains the head the parent verified last time;
//! * the tables are exactly what replaying the audit trail gives (sessions and their lineage,
//!   ended sessions, labels, postures with their epochs, command patterns, the epoch): every
//!   change has its audit row and every audit row its change;
//! * every reported commit is there: its audit row at its sequence number, and its effect;
//! * invariants: no label lower than any label reported or seen earlier; no posture held by a
//!   session under (or at) a reported cascade, a reported local revoke or a reported global
//!   revoke, unless the posture was allocated (granted, or inherited at creation) after it;
//! * the reopened ledger accepts new writes.
//!
//! `CRASH_TRIALS` sets the number of trials (default 200). `CRASH_FIRST_TRIAL` starts at another
//! trial (rounded down to the start of its ledger), to reproduce a failure: the delay and the
//! child's choices are seeded from the trial number (the instant the kill lands still varies
//! with the machine's speed).

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use session_ledger::{
    AuditHead, Conflict, CreationRefused, Ledger, PostureLevel, Propagation, Raise, Taint,
};

const TEST_NAME: &str = "every_reported_commit_survives_a_sigkill_and_the_ledger_reopens_intact";
const CHILD_ENV: &str = "SESSION_LEDGER_CRASH_CHILD";
const TRIAL_ENV: &str = "SESSION_LEDGER_CRASH_TRIAL";
const PREFIX: &str = "COMMIT ";
const READY: &str = "READY";
/// Trials share one ledger in runs of this many, then start on a fresh file. Within a run the
/// ledger grows and each child works on the sessions the killed children before it left, so
/// recovered state is built on and checked again (a cascade covers sessions from earlier
/// trials, a raise must not fall below what an earlier trial reported). The fresh file at the
/// start of each run puts a kill in the middle of creating and migrating a ledger, and keeps
/// the per-trial checks (which read the whole file) at a constant cost however many trials run.
const TRIALS_PER_LEDGER: u64 = 20;
const DEFAULT_TRIALS: u64 = 200;
const PATTERNS: [&str; 3] = ["npm test", "cargo build *", "ls *"];
const ACTOR: &str = "crash-test";

/// xorshift64*, seeded through splitmix64 so that consecutive trial numbers give unrelated
/// streams.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(z.max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[test]
fn every_reported_commit_survives_a_sigkill_and_the_ledger_reopens_intact() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        let trial: u64 = std::env::var(TRIAL_ENV)
            .expect("the child is told its trial")
            .parse()
            .expect("a trial number");
        child::run(Path::new(&path), trial);
        return;
    }
    parent::run();
}

/// The child: commits in a loop until it is killed.
mod child {
    use super::*;
    use session_ledger::{spawned_chain, Error};

    /// A child still running after this long has lost its parent.
    const LIFETIME: Duration = Duration::from_secs(30);

    pub(super) fn run(path: &Path, trial: u64) {
        let ledger =
            Ledger::init(path).unwrap_or_else(|e| panic!("child: open {}: {e}", path.display()));
        let mut work = Workload::load(&ledger, trial);
        let mut out = std::io::stdout().lock();
        // End the harness's own "test ... " line, then say the ledger is open: the parent
        // counts most of its delays from here, so that they land among the commits.
        if out
            .write_all(format!("\n{READY}\n").as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
        let started = Instant::now();
        while started.elapsed() < LIFETIME {
            let Some(change) = work.step(&ledger) else {
                continue;
            };
            let seq = ledger.audit_head().expect("child: audit head").seq;
            // One write of one whole line: a kill leaves it out entirely or cut short without
            // its newline, and the parent ignores a cut line.
            let line = format!("{PREFIX}{seq} {change}\n");
            if out
                .write_all(line.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return; // The parent is gone.
            }
        }
    }

    struct Known {
        id: String,
        live: bool,
    }

    /// What the child knows of the ledger: every recorded session, and whether it is live
    /// (learned lazily: an operation refused because the session ended marks it).
    struct Workload {
        rng: Rng,
        trial: u64,
        fresh: u64,
        sessions: Vec<Known>,
        index: HashMap<String, usize>,
    }

    impl Workload {
        fn load(ledger: &Ledger, trial: u64) -> Workload {
            let mut work = Workload {
                rng: Rng::new(trial ^ 0x00C4_11D0_5EED),
                trial,
                fresh: 0,
                sessions: Vec::new(),
                index: HashMap::new(),
            };
            for entry in ledger.forest().expect("child: forest") {
                let live = entry.session.is_live();
                work.add(&entry.session.id, live);
            }
            work
        }

        fn add(&mut self, id: &str, live: bool) {
            if !self.index.contains_key(id) {
                self.index.insert(id.to_owned(), self.sessions.len());
                self.sessions.push(Known {
                    id: id.to_owned(),
                    live,
                });
            }
        }

        /// After an operation that may have recorded a spawned id and its missing parents.
        fn learn(&mut self, ledger: &Ledger, id: &str) {
            for link in spawned_chain(id) {
                if self.index.contains_key(link) {
                    break;
                }
                if let Some(s) = ledger.session(link).expect("child: session") {
                    self.add(link, s.is_live());
                }
            }
        }

        fn ended(&mut self, id: &str) {
            if let Some(&i) = self.index.get(id) {
                self.sessions[i].live = false;
            }
        }

        fn new_id(&mut self, kind: &str) -> String {
            loop {
                self.fresh += 1;
                let id = format!("t{}-{kind}{}", self.trial, self.fresh);
                if !self.index.contains_key(&id) {
                    return id;
                }
            }
        }

        fn any(&mut self) -> Option<String> {
            if self.sessions.is_empty() {
                return None;
            }
            let i = self.rng.below(self.sessions.len() as u64) as usize;
            Some(self.sessions[i].id.clone())
        }

        fn live(&mut self) -> Option<String> {
            let live: Vec<usize> = (0..self.sessions.len())
                .filter(|&i| self.sessions[i].live)
                .collect();
            if live.is_empty() {
                return None;
            }
            let i = live[self.rng.below(live.len() as u64) as usize];
            Some(self.sessions[i].id.clone())
        }

        /// `base`, or now and then a spawned id under it (which the ledger has maybe never
        /// seen), with nesting kept within the id length limit.
        fn maybe_spawned(&mut self, base: String, percent: u64) -> String {
            if base.len() <= 90 && self.rng.chance(percent) {
                format!("sub-{base}-{}", 1 + self.rng.below(3))
            } else {
                base
            }
        }

        fn taint(&mut self) -> Taint {
            [Taint::Public, Taint::Private, Taint::Secret][self.rng.below(3) as usize]
        }

        /// One operation; the change it committed, to report, or `None` when it changed
        /// nothing because the session had ended.
        fn step(&mut self, ledger: &Ledger) -> Option<String> {
            let Some(live) = self.live() else {
                return self.root(ledger);
            };
            match self.rng.below(100) {
                0..=5 => self.root(ledger),
                6..=33 => self.create(ledger, live),
                34..=45 => self.grant(ledger, live),
                46..=57 => self.raise(ledger),
                58..=70 => self.read(ledger),
                71..=75 => self.pattern(ledger, live),
                76..=82 => self.revoke(ledger, false),
                83..=88 => self.revoke(ledger, true),
                89..=95 => self.end(ledger, live),
                96..=98 => self.epoch(ledger),
                _ if self.rng.chance(30) => self.global(ledger),
                _ => self.read(ledger),
            }
        }

        fn root(&mut self, ledger: &Ledger) -> Option<String> {
            let id = self.new_id("r");
            ledger.create_root(&id, ACTOR).expect("child: create_root");
            self.add(&id, true);
            Some(format!("root {id}"))
        }

        fn create(&mut self, ledger: &Ledger, live: String) -> Option<String> {
            let creator = self.maybe_spawned(live, 25);
            let id = self.new_id("w");
            let reason = match ledger.create_child(&id, &creator, ACTOR) {
                Ok(created) => {
                    self.learn(ledger, &creator);
                    self.add(&id, true);
                    return Some(format!(
                        "create {id} {creator} {} {}",
                        u8::from(created.inherited_trust),
                        u8::from(created.inherited_trust_reads)
                    ));
                }
                Err(Error::Conflict(Conflict::SessionEnded(ended))) => {
                    self.ended(&ended);
                    return None;
                }
                Err(Error::Refused(CreationRefused::DepthLimit { .. })) => "depth_limit",
                Err(Error::Refused(CreationRefused::ChildLimit { .. })) => "child_limit",
                Err(Error::Refused(CreationRefused::RateLimit { .. })) => "rate_limit",
                Err(e) => panic!("child: create_child({id}, {creator}): {e}"),
            };
            Some(format!("refused {id} {creator} {reason}"))
        }

        fn grant(&mut self, ledger: &Ledger, live: String) -> Option<String> {
            let id = self.maybe_spawned(live, 20);
            let level = if self.rng.chance(70) {
                PostureLevel::Trust
            } else {
                PostureLevel::TrustReads
            };
            match ledger.grant(&id, level, ACTOR) {
                Ok(_) => {
                    self.learn(ledger, &id);
                    Some(format!("grant {id} {level}"))
                }
                Err(Error::Conflict(Conflict::SessionEnded(ended))) => {
                    self.ended(&ended);
                    None
                }
                Err(e) => panic!("child: grant({id}): {e}"),
            }
        }

        fn raise(&mut self, ledger: &Ledger) -> Option<String> {
            let any = self.any()?;
            let id = self.maybe_spawned(any, 20);
            let taint = if self.rng.chance(80) {
                Some(self.taint())
            } else {
                None
            };
            let untrusted = taint.is_none() || self.rng.chance(20);
            let outcome = ledger
                .raise(&id, Raise { taint, untrusted }, ACTOR)
                .unwrap_or_else(|e| panic!("child: raise({id}): {e}"));
            self.learn(ledger, &id);
            Some(format!(
                "raise {id} {} {} {}",
                outcome.after.taint,
                u8::from(outcome.after.untrusted),
                u8::from(outcome.changed)
            ))
        }

        fn read(&mut self, ledger: &Ledger) -> Option<String> {
            let any = self.any()?;
            let id = self.maybe_spawned(any, 50);
            let state = ledger
                .state(&id)
                .unwrap_or_else(|e| panic!("child: state({id}): {e}"));
            assert!(state.known, "child: {id} should be known");
            self.learn(ledger, &id);
            Some(format!(
                "read {id} {} {}",
                state.taint,
                u8::from(state.untrusted)
            ))
        }

        fn pattern(&mut self, ledger: &Ledger, live: String) -> Option<String> {
            let p = self.rng.below(PATTERNS.len() as u64) as usize;
            match ledger.add_pattern(&live, PATTERNS[p], ACTOR) {
                Ok(added) => Some(format!("pattern {live} {p} {}", u8::from(added))),
                Err(Error::Conflict(Conflict::SessionEnded(ended))) => {
                    self.ended(&ended);
                    None
                }
                Err(e) => panic!("child: add_pattern({live}): {e}"),
            }
        }

        fn revoke(&mut self, ledger: &Ledger, cascade: bool) -> Option<String> {
            let id = self.any()?;
            let propagation = if !cascade {
                Propagation::Local
            } else if self.rng.chance(30) {
                // Bound to a preview: nobody else writes, so it never goes stale.
                let preview = ledger
                    .revoke(&id, Propagation::Preview, ACTOR)
                    .unwrap_or_else(|e| panic!("child: preview({id}): {e}"));
                Propagation::Cascade {
                    token: preview.token.expect("a preview has a token"),
                }
            } else {
                Propagation::CascadeUnchecked
            };
            let word = propagation.as_str();
            let revocation = ledger
                .revoke(&id, propagation, ACTOR)
                .unwrap_or_else(|e| panic!("child: revoke({id}, {word}): {e}"));
            Some(format!("{word} {id} {}", revocation.count))
        }

        fn global(&mut self, ledger: &Ledger) -> Option<String> {
            let revocation = ledger.revoke_all(ACTOR).expect("child: revoke_all");
            Some(format!("global {}", revocation.count))
        }

        fn end(&mut self, ledger: &Ledger, live: String) -> Option<String> {
            match ledger.end(&live, ACTOR) {
                Ok(_) => {
                    self.ended(&live);
                    Some(format!("end {live}"))
                }
                Err(Error::Conflict(Conflict::SessionEnded(ended))) => {
                    self.ended(&ended);
                    None
                }
                Err(e) => panic!("child: end({live}): {e}"),
            }
        }

        fn epoch(&mut self, ledger: &Ledger) -> Option<String> {
            let started = ledger.start_epoch(ACTOR).expect("child: start_epoch");
            Some(format!("epoch {}", started.epoch))
        }
    }
}

/// The parent: runs the trials and checks each reopened ledger.
mod parent {
    use super::*;

    pub(super) fn run() {
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.parse::<u64>().unwrap_or_else(|_| panic!("{name}={v:?}")))
        };
        let trials = env("CRASH_TRIALS").unwrap_or(DEFAULT_TRIALS);
        let first = env("CRASH_FIRST_TRIAL").unwrap_or(0) / TRIALS_PER_LEDGER * TRIALS_PER_LEDGER;
        let started = Instant::now();
        let mut totals = Totals::default();
        let mut failures: Vec<String> = Vec::new();
        let mut trial = first;
        while trial < first + trials {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("ledger.db");
            let mut model = Model::default();
            let end = (trial / TRIALS_PER_LEDGER + 1) * TRIALS_PER_LEDGER;
            let mut failed = false;
            while trial < end.min(first + trials) {
                totals.trials += 1;
                if let Err(problem) = one_trial(&path, trial, &mut model, &mut totals) {
                    let start = trial / TRIALS_PER_LEDGER * TRIALS_PER_LEDGER;
                    failures.push(format!(
                        "trial {trial}: {problem}\n  ledger kept at {}\n  reproduce: \
                         CRASH_FIRST_TRIAL={start} CRASH_TRIALS={} cargo test --test crash",
                        path.display(),
                        trial + 1 - start
                    ));
                    failed = true;
                    // This ledger is suspect: go on with the next one.
                    trial = end;
                    break;
                }
                trial += 1;
            }
            if failed {
                let _kept = dir.keep();
            }
        }
        println!(
            "crash: {} trials, {} commits reported, {} checked, {} failures \
             ({} trials killed before their first report, {} reports cut short by the kill) \
             in {:.1} s",
            totals.trials,
            totals.reported,
            totals.checked,
            failures.len(),
            totals.silent,
            totals.cut,
            started.elapsed().as_secs_f64()
        );
        assert!(
            failures.is_empty(),
            "{} of {} crash trials failed:\n{}",
            failures.len(),
            totals.trials,
            failures.join("\n")
        );
    }

    #[derive(Default)]
    struct Totals {
        trials: u64,
        reported: u64,
        checked: u64,
        silent: u64,
        cut: u64,
    }

    /// What the reports of earlier trials on this ledger promise.
    #[derive(Default)]
    struct Model {
        /// The highest label reported or seen for each session.
        labels: HashMap<String, (u8, bool)>,
        /// Reported cascades: root, and the audit head when it returned.
        cascades: Vec<(String, i64)>,
        /// Reported local revokes.
        locals: Vec<(String, i64)>,
        /// Reported global revokes.
        globals: Vec<i64>,
        /// The head the parent verified after its own writes last trial.
        head: Option<AuditHead>,
    }

    /// A line of the child's stdout: whole, or cut short by the kill (no newline).
    enum Line {
        Whole(String),
        Cut(String),
    }

    /// Reads the child's stdout as it comes (so a full pipe never blocks it).
    fn lines(pipe: impl Read + Send + 'static) -> mpsc::Receiver<Line> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut pipe = BufReader::new(pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match pipe.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let whole = buf.last() == Some(&b'\n');
                        let text = String::from_utf8_lossy(&buf).trim_end().to_owned();
                        let line = if whole {
                            Line::Whole(text)
                        } else {
                            Line::Cut(text)
                        };
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        rx
    }

    fn one_trial(
        path: &Path,
        trial: u64,
        model: &mut Model,
        totals: &mut Totals,
    ) -> Result<(), String> {
        // Most delays count from the moment the child has opened the ledger, so that the kill
        // lands among its commits. The first trial on a ledger and one in five of the others
        // count from the start of the process, so that the kill lands while the child starts,
        // opens and recovers the file, or (on a fresh file) creates and migrates it.
        let mut rng = Rng::new(trial);
        let from_start = rng.chance(20) || trial % TRIALS_PER_LEDGER == 0;
        let delay = Duration::from_millis(1 + rng.below(60));
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut child = Command::new(exe)
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, path)
            .env(TRIAL_ENV, trial.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawning the child: {e}"))?;
        let out = lines(child.stdout.take().expect("stdout"));
        let mut stderr_pipe = child.stderr.take().expect("stderr");
        let err = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        let mut received = Vec::new();
        let mut ready = false;
        if !from_start {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                match out.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(Line::Whole(l)) if l == READY => {
                        ready = true;
                        break;
                    }
                    Ok(line) => received.push(line),
                    // Gone, or stuck before it opened the ledger: reported below.
                    Err(_) => break,
                }
            }
        }
        std::thread::sleep(delay);
        let early = child.try_wait().map_err(|e| format!("try_wait: {e}"))?;
        if early.is_none() {
            child.kill().map_err(|e| format!("kill: {e}"))?;
        }
        let status = child.wait().map_err(|e| format!("wait: {e}"))?;
        received.extend(out.iter());
        let stderr = err.join().expect("stderr reader");
        let when = format!(
            "killed {} ms after {}",
            delay.as_millis(),
            if from_start {
                "it started"
            } else {
                "it opened the ledger"
            }
        );
        if early.is_some() || status.signal() != Some(9) {
            return Err(format!(
                "the child ended on its own ({status}) instead of being {when}\nstderr:\n{stderr}"
            ));
        }
        if !from_start && !ready {
            return Err(format!(
                "the child did not open the ledger within 20 s\nstderr:\n{stderr}"
            ));
        }
        let mut reports = Vec::new();
        for line in &received {
            match line {
                Line::Whole(l) => reports.extend(l.strip_prefix(PREFIX)),
                Line::Cut(l) if l.starts_with(PREFIX) => totals.cut += 1,
                Line::Cut(_) => {}
            }
        }
        totals.reported += reports.len() as u64;
        if reports.is_empty() {
            totals.silent += 1;
        }
        check(path, trial, &reports, model, totals).map_err(|problem| format!("{problem} ({when})"))
    }

    struct AuditRow {
        kind: String,
        session: Option<String>,
        detail: Value,
    }

    struct SessionRow {
        created_by: Option<String>,
        origin: String,
        ended: bool,
    }

    /// The data tables, read with a plain connection.
    struct Tables {
        /// By seq - 1 (the chain's verification guarantees 1, 2, 3, ...).
        audit: Vec<AuditRow>,
        sessions: HashMap<String, SessionRow>,
        labels: HashMap<String, (u8, bool)>,
        postures: HashMap<String, (String, i64)>,
        patterns: HashSet<(String, String)>,
        epoch: i64,
    }

    fn rank(taint: &str) -> Result<u8, String> {
        match taint {
            "public" => Ok(0),
            "private" => Ok(1),
            "secret" => Ok(2),
            other => Err(format!("unknown taint {other:?}")),
        }
    }

    fn dominates(a: (u8, bool), b: (u8, bool)) -> bool {
        a.0 >= b.0 && (a.1 || !b.1)
    }

    fn sql(e: rusqlite::Error) -> String {
        format!("sql: {e}")
    }

    /// Every row of `query`, each read by `row`.
    fn all_rows<T>(
        conn: &rusqlite::Connection,
        query: &str,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, String> {
        let mut stmt = conn.prepare(query).map_err(sql)?;
        let rows = stmt.query_map([], row).map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<T>>>().map_err(sql)
    }

    fn read_tables(conn: &rusqlite::Connection) -> Result<Tables, String> {
        let mut audit = Vec::new();
        for (seq, kind, session, detail) in all_rows(
            conn,
            "SELECT seq, kind, session_id, detail FROM audit ORDER BY seq",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
        )? {
            if seq != audit.len() as i64 + 1 {
                return Err(format!("audit seq {seq} out of order"));
            }
            let detail = serde_json::from_str(&detail)
                .map_err(|e| format!("audit {seq}: detail is not JSON: {e}"))?;
            audit.push(AuditRow {
                kind,
                session,
                detail,
            });
        }
        let sessions: HashMap<String, SessionRow> = all_rows(
            conn,
            "SELECT id, created_by, origin, ended_at IS NOT NULL FROM sessions",
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    SessionRow {
                        created_by: r.get(1)?,
                        origin: r.get(2)?,
                        ended: r.get(3)?,
                    },
                ))
            },
        )?
        .into_iter()
        .collect();
        let mut labels = HashMap::new();
        for (id, taint, untrusted) in all_rows(
            conn,
            "SELECT session_id, taint, untrusted FROM labels",
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            },
        )? {
            labels.insert(id, (rank(&taint)?, untrusted));
        }
        let postures: HashMap<String, (String, i64)> = all_rows(
            conn,
            "SELECT session_id, posture, epoch FROM postures",
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    (r.get::<_, String>(1)?, r.get::<_, i64>(2)?),
                ))
            },
        )?
        .into_iter()
        .collect();
        let patterns: HashSet<(String, String)> = all_rows(
            conn,
            "SELECT session_id, pattern FROM command_patterns",
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )?
        .into_iter()
        .collect();
        let epoch = conn
            .query_row("SELECT max(epoch) FROM epochs", [], |r| r.get(0))
            .map_err(sql)?;
        Ok(Tables {
            audit,
            sessions,
            labels,
            postures,
            patterns,
            epoch,
        })
    }

    /// The state the audit trail describes, replayed from its first row.
    #[derive(Default)]
    struct Replayed {
        /// Creation row of each session: its kind and the creator it names.
        created: HashMap<String, (String, Option<String>)>,
        ended: HashSet<String>,
        labels: HashMap<String, (u8, bool)>,
        /// Level, epoch, and the seq of the row that allocated it.
        postures: HashMap<String, (String, i64, i64)>,
        patterns: HashSet<(String, String)>,
        epoch: i64,
    }

    fn text<'a>(detail: &'a Value, key: &str, seq: i64) -> Result<&'a str, String> {
        detail[key]
            .as_str()
            .ok_or_else(|| format!("audit {seq}: detail has no text {key:?}: {detail}"))
    }

    fn flag(detail: &Value, key: &str, seq: i64) -> Result<bool, String> {
        detail[key]
            .as_bool()
            .ok_or_else(|| format!("audit {seq}: detail has no flag {key:?}: {detail}"))
    }

    fn label_of(v: &Value, seq: i64) -> Result<(u8, bool), String> {
        Ok((rank(text(v, "taint", seq)?)?, flag(v, "untrusted", seq)?))
    }

    fn replay(audit: &[AuditRow]) -> Result<Replayed, String> {
        let mut r = Replayed::default();
        for (i, row) in audit.iter().enumerate() {
            let seq = i as i64 + 1;
            let d = &row.detail;
            let session = || {
                row.session
                    .clone()
                    .ok_or_else(|| format!("audit {seq} ({}) names no session", row.kind))
            };
            let create = |r: &mut Replayed, id: String, creator: Option<String>| {
                if r.created.contains_key(&id) {
                    return Err(format!("audit {seq}: {id} created a second time"));
                }
                r.created.insert(id, (row.kind.clone(), creator));
                Ok(())
            };
            let inherit = |r: &mut Replayed, id: &str| -> Result<(), String> {
                let level = if flag(d, "inherited_trust", seq)? {
                    Some("trust")
                } else if flag(d, "inherited_trust_reads", seq)? {
                    Some("trust_reads")
                } else {
                    None
                };
                if let Some(level) = level {
                    r.postures
                        .insert(id.to_owned(), (level.to_owned(), r.epoch, seq));
                }
                Ok(())
            };
            match row.kind.as_str() {
                "session.root" => {
                    let id = session()?;
                    create(&mut r, id.clone(), None)?;
                    r.labels.insert(id, (1, false));
                }
                "session.create" => {
                    let id = session()?;
                    create(
                        &mut r,
                        id.clone(),
                        Some(text(d, "creator", seq)?.to_owned()),
                    )?;
                    inherit(&mut r, &id)?;
                }
                "session.spawn" => {
                    let id = session()?;
                    create(
                        &mut r,
                        id.clone(),
                        Some(text(d, "created_by", seq)?.to_owned()),
                    )?;
                    inherit(&mut r, &id)?;
                    if flag(d, "ended", seq)? {
                        r.ended.insert(id);
                    }
                }
                "session.end" => {
                    let id = session()?;
                    if !r.ended.insert(id.clone()) {
                        return Err(format!("audit {seq}: {id} ended a second time"));
                    }
                }
                "label.inherit" => {
                    let id = session()?;
                    if r.labels.insert(id.clone(), label_of(d, seq)?).is_some() {
                        return Err(format!("audit {seq}: {id} materialized a second time"));
                    }
                }
                "label.raise" => {
                    let id = session()?;
                    let before = label_of(&d["before"], seq)?;
                    let after = label_of(&d["after"], seq)?;
                    let held = r.labels.get(&id).copied();
                    if held != Some(before) {
                        return Err(format!(
                            "audit {seq}: raise of {id} from {before:?}, but it held {held:?}"
                        ));
                    }
                    if !dominates(after, before) {
                        return Err(format!("audit {seq}: raise of {id} lowers it"));
                    }
                    r.labels.insert(id, after);
                }
                "posture.grant" => {
                    let id = session()?;
                    let level = text(d, "posture", seq)?.to_owned();
                    r.postures.insert(id, (level, r.epoch, seq));
                }
                "posture.revoke" => {
                    let id = session()?;
                    let level = text(d, "posture", seq)?;
                    match r.postures.remove(&id) {
                        Some((held, _, _)) if held == level => {}
                        held => {
                            return Err(format!(
                                "audit {seq}: revoked {level} from {id}, which held {held:?}"
                            ))
                        }
                    }
                }
                "epoch.start" => {
                    let epoch = d["epoch"].as_i64().unwrap_or(-1);
                    if epoch != r.epoch + 1 {
                        return Err(format!("audit {seq}: epoch {epoch} after {}", r.epoch));
                    }
                    if flag(d, "durable", seq)? {
                        for p in r.postures.values_mut() {
                            if p.1 == r.epoch {
                                p.1 = epoch;
                            }
                        }
                    }
                    r.epoch = epoch;
                }
                "pattern.add" => {
                    r.patterns
                        .insert((session()?, text(d, "pattern", seq)?.to_owned()));
                }
                "pattern.remove" => {
                    r.patterns
                        .remove(&(session()?, text(d, "pattern", seq)?.to_owned()));
                }
                // Refusals change nothing; scopes are not part of this workload.
                _ => {}
            }
        }
        Ok(r)
    }

    /// The tables are exactly what the audit trail says happened.
    fn compare(t: &Tables, r: &Replayed) -> Result<(), String> {
        for (id, s) in &t.sessions {
            let Some((kind, creator)) = r.created.get(id) else {
                return Err(format!("session {id} has no creation audit row"));
            };
            let expected = match s.origin.as_str() {
                "root" => "session.root",
                "created" => "session.create",
                "spawned" => "session.spawn",
                other => return Err(format!("session {id} has origin {other:?}")),
            };
            if kind != expected || *creator != s.created_by {
                return Err(format!(
                    "session {id} ({}, by {:?}) was audited as {kind} by {creator:?}",
                    s.origin, s.created_by
                ));
            }
            if s.ended != r.ended.contains(id) {
                return Err(format!(
                    "session {id}: ended {} but the audit trail says {}",
                    s.ended,
                    r.ended.contains(id)
                ));
            }
        }
        if let Some(id) = r.created.keys().find(|id| !t.sessions.contains_key(*id)) {
            return Err(format!("audited session {id} has no row"));
        }
        if t.labels != r.labels {
            let diff: Vec<String> = t
                .labels
                .keys()
                .chain(r.labels.keys())
                .filter(|id| t.labels.get(*id) != r.labels.get(*id))
                .take(5)
                .map(|id| {
                    format!(
                        "{id}: table {:?}, audit {:?}",
                        t.labels.get(id),
                        r.labels.get(id)
                    )
                })
                .collect();
            return Err(format!(
                "labels differ from the audit trail: {}",
                diff.join("; ")
            ));
        }
        let replayed: HashMap<String, (String, i64)> = r
            .postures
            .iter()
            .map(|(id, (level, epoch, _))| (id.clone(), (level.clone(), *epoch)))
            .collect();
        if t.postures != replayed {
            let diff: Vec<String> = t
                .postures
                .keys()
                .chain(replayed.keys())
                .filter(|id| t.postures.get(*id) != replayed.get(*id))
                .take(5)
                .map(|id| {
                    format!(
                        "{id}: table {:?}, audit {:?}",
                        t.postures.get(id),
                        replayed.get(id)
                    )
                })
                .collect();
            return Err(format!(
                "postures differ from the audit trail: {}",
                diff.join("; ")
            ));
        }
        if t.patterns != r.patterns {
            return Err(format!(
                "command patterns differ from the audit trail: table {:?}, audit {:?}",
                t.patterns, r.patterns
            ));
        }
        if t.epoch != r.epoch {
            return Err(format!(
                "epoch {} but the audit trail started {}",
                t.epoch, r.epoch
            ));
        }
        Ok(())
    }

    fn check(
        path: &Path,
        trial: u64,
        lines: &[&str],
        model: &mut Model,
        totals: &mut Totals,
    ) -> Result<(), String> {
        // A plain connection first: it is the first to open the file since the kill, and
        // recovers it.
        let conn = common::raw(path);
        let integrity: Vec<String> = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut s| {
                s.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(sql)?;
        if integrity != ["ok"] {
            return Err(format!("integrity_check: {integrity:?}"));
        }
        let broken: i64 = conn
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .map_err(sql)?;
        if broken != 0 {
            return Err(format!("foreign_key_check: {broken} rows"));
        }

        // The library reopens it (creating and migrating it if the child never got that far).
        let ledger = Ledger::init(path).map_err(|e| format!("reopening the ledger: {e}"))?;
        let verification = ledger
            .verify(model.head.as_ref())
            .map_err(|e| format!("verify: {e}"))?;
        if !verification.ok {
            return Err(format!(
                "the audit chain does not verify (against the head {:?}): {:?} at {:?}",
                model.head, verification.problem, verification.first_bad_seq
            ));
        }
        let t = read_tables(&conn)?;
        let head = t.audit.len() as i64;
        let replayed = replay(&t.audit)?;
        compare(&t, &replayed)?;

        // Every reported commit.
        let row = |seq: i64, kind: &str, session: Option<&str>| -> Result<&AuditRow, String> {
            let found = usize::try_from(seq - 1)
                .ok()
                .and_then(|i| t.audit.get(i))
                .ok_or_else(|| format!("audit row {seq} is missing (head {head})"))?;
            if found.kind != kind || found.session.as_deref() != session {
                return Err(format!(
                    "audit row {seq} is {} on {:?}, not {kind} on {session:?}",
                    found.kind, found.session
                ));
            }
            Ok(found)
        };
        // The `n` rows up to `seq` are the revocation's, one per posture it removed.
        let revokes = |seq: i64, n: &str, propagation: &str, root: Option<&str>| {
            let n: i64 = n.parse().map_err(|_| "unreadable count".to_owned())?;
            if n > seq {
                return Err(format!("{n} rows cannot end at audit row {seq}"));
            }
            for s in seq - n + 1..=seq {
                let r = &t.audit[(s - 1) as usize];
                if r.kind != "posture.revoke"
                    || r.detail["propagation"] != *propagation
                    || r.detail["root"].as_str() != root
                    || (propagation == "local" && r.session.as_deref() != root)
                {
                    return Err(format!(
                        "audit row {s} is {} on {:?}: {}",
                        r.kind, r.session, r.detail
                    ));
                }
            }
            Ok(())
        };
        let mut previous = model.head.as_ref().map_or(0, |h| h.seq);
        for line in lines {
            let fail = |problem: String| format!("reported `{line}`: {problem}");
            let (seq, change) = line
                .split_once(' ')
                .ok_or_else(|| fail("unreadable".into()))?;
            let seq: i64 = seq.parse().map_err(|_| fail("unreadable seq".into()))?;
            if seq < previous || seq > head {
                return Err(fail(format!(
                    "seq out of order or lost (after {previous}, head {head})"
                )));
            }
            previous = seq;
            let words: Vec<&str> = change.split(' ').collect();
            let result: Result<(), String> = match words.as_slice() {
                ["root", id] => row(seq, "session.root", Some(id)).map(|_| ()),
                ["create", id, creator, trust, reads] => row(seq, "session.create", Some(id))
                    .and_then(|r| {
                        let d = &r.detail;
                        let as_flag = |s: &str| Value::Bool(s == "1");
                        if d["creator"] != *creator
                            || d["inherited_trust"] != as_flag(trust)
                            || d["inherited_trust_reads"] != as_flag(reads)
                        {
                            return Err(format!("audited as {d}"));
                        }
                        match t.sessions.get(*id) {
                            Some(s) if s.created_by.as_deref() == Some(creator) => Ok(()),
                            _ => Err("no session row under that creator".into()),
                        }
                    }),
                ["refused", id, creator, reason] => row(seq, "session.create_refused", Some(id))
                    .and_then(|r| {
                        if r.detail["creator"] != *creator || r.detail["reason"] != *reason {
                            return Err(format!("audited as {}", r.detail));
                        }
                        if t.sessions.contains_key(*id) {
                            return Err("the refused session exists".into());
                        }
                        Ok(())
                    }),
                ["grant", id, level] => row(seq, "posture.grant", Some(id)).and_then(|r| {
                    if r.detail["posture"] == *level {
                        Ok(())
                    } else {
                        Err(format!("audited as {}", r.detail))
                    }
                }),
                ["raise", id, taint, untrusted, changed] => (|| {
                    let label = (rank(taint)?, *untrusted == "1");
                    if *changed == "1" {
                        let r = row(seq, "label.raise", Some(id))?;
                        if label_of(&r.detail["after"], seq)? != label {
                            return Err(format!("audited as {}", r.detail));
                        }
                    }
                    let seen = model.labels.entry((*id).to_owned()).or_insert(label);
                    *seen = (seen.0.max(label.0), seen.1 || label.1);
                    Ok(())
                })(),
                ["read", id, taint, untrusted] => (|| {
                    let label = (rank(taint)?, *untrusted == "1");
                    let seen = model.labels.entry((*id).to_owned()).or_insert(label);
                    *seen = (seen.0.max(label.0), seen.1 || label.1);
                    Ok(())
                })(),
                ["pattern", id, p, added] => (|| {
                    let pattern = p
                        .parse::<usize>()
                        .ok()
                        .and_then(|p| PATTERNS.get(p))
                        .ok_or("unknown pattern")?;
                    if *added == "1" {
                        let r = row(seq, "pattern.add", Some(id))?;
                        if r.detail["pattern"] != *pattern {
                            return Err(format!("audited as {}", r.detail));
                        }
                    }
                    if !t
                        .patterns
                        .contains(&((*id).to_owned(), (*pattern).to_owned()))
                    {
                        return Err("the pattern is not there".into());
                    }
                    Ok(())
                })(),
                [word @ ("local" | "cascade"), id, n] => {
                    revokes(seq, n, word, Some(id)).map(|()| {
                        let record = ((*id).to_owned(), seq);
                        if *word == "local" {
                            model.locals.push(record);
                        } else {
                            model.cascades.push(record);
                        }
                    })
                }
                ["global", n] => revokes(seq, n, "global", None).map(|()| model.globals.push(seq)),
                ["end", id] => {
                    let own = |r: &AuditRow| {
                        r.kind == "session.end"
                            && r.session.as_deref() == Some(id)
                            && r.detail.get("ended_with").is_none()
                    };
                    if !t.audit[..seq as usize].iter().any(own) {
                        Err("no session.end row of its own".into())
                    } else if !t.sessions.get(*id).is_some_and(|s| s.ended) {
                        Err("the session is not ended".into())
                    } else {
                        Ok(())
                    }
                }
                ["epoch", epoch] => row(seq, "epoch.start", None).and_then(|r| {
                    if r.detail["epoch"].as_i64() == epoch.parse().ok() {
                        Ok(())
                    } else {
                        Err(format!("audited as {}", r.detail))
                    }
                }),
                _ => Err("unknown change".into()),
            };
            result.map_err(fail)?;
            totals.checked += 1;
        }

        // Invariant: labels only rise, over everything reported or seen.
        for (id, seen) in &model.labels {
            match t.labels.get(id) {
                Some(&now) if dominates(now, *seen) => {}
                now => {
                    return Err(format!(
                        "label of {id} is {now:?}, below {seen:?} reported or seen earlier"
                    ))
                }
            }
        }
        for (id, label) in &t.labels {
            model.labels.insert(id.clone(), *label);
        }

        // Invariant: no posture survives a reported revocation that covered it, unless it was
        // allocated after.
        let mut cascaded: HashMap<&str, i64> = HashMap::new();
        for (root, seq) in &model.cascades {
            let at = cascaded.entry(root.as_str()).or_insert(0);
            *at = (*at).max(*seq);
        }
        let mut local: HashMap<&str, i64> = HashMap::new();
        for (id, seq) in &model.locals {
            let at = local.entry(id.as_str()).or_insert(0);
            *at = (*at).max(*seq);
        }
        let global = model.globals.iter().copied().max().unwrap_or(0);
        for (id, (level, _, allocated)) in &replayed.postures {
            let mut covering: Vec<(i64, String)> = vec![(global, "a global revoke".into())];
            if let Some(&seq) = local.get(id.as_str()) {
                covering.push((seq, format!("a local revoke of {id}")));
            }
            let mut at = Some(id.as_str());
            let mut hops = 0;
            while let Some(a) = at {
                if let Some(&seq) = cascaded.get(a) {
                    covering.push((seq, format!("the cascade from {a}")));
                }
                at = t.sessions.get(a).and_then(|s| s.created_by.as_deref());
                hops += 1;
                if hops > 10_000 {
                    return Err(format!("the lineage of {id} loops"));
                }
            }
            if let Some((seq, by)) = covering.into_iter().max() {
                if *allocated <= seq {
                    return Err(format!(
                        "{id} holds {level} allocated at audit row {allocated}, but {by} \
                         was reported at head {seq}, after it"
                    ));
                }
            }
        }

        // The reopened ledger accepts new writes.
        probe(&ledger, trial).map_err(|e| format!("writing to the reopened ledger: {e}"))?;
        let after = ledger.verify(None).map_err(|e| format!("verify: {e}"))?;
        if !after.ok {
            return Err(format!(
                "the audit chain does not verify after new writes: {:?} at {:?}",
                after.problem, after.first_bad_seq
            ));
        }
        model.head = Some(after.head);
        Ok(())
    }

    /// New writes on the reopened ledger, in a tree of their own.
    fn probe(ledger: &Ledger, trial: u64) -> Result<(), String> {
        let e = |e: session_ledger::Error| e.to_string();
        let root = format!("probe-t{trial}");
        let child = format!("{root}-c");
        ledger.create_root(&root, ACTOR).map_err(e)?;
        ledger.grant(&root, PostureLevel::Trust, ACTOR).map_err(e)?;
        let created = ledger.create_child(&child, &root, ACTOR).map_err(e)?;
        if !created.inherited_trust {
            return Err(format!("{child} did not inherit its creator's trust"));
        }
        let raised = ledger
            .raise(
                &child,
                Raise {
                    taint: Some(Taint::Secret),
                    untrusted: true,
                },
                ACTOR,
            )
            .map_err(e)?;
        if !raised.changed {
            return Err(format!("raising {child} changed nothing"));
        }
        let revoked = ledger
            .revoke(&root, Propagation::CascadeUnchecked, ACTOR)
            .map_err(e)?;
        if revoked.count != 2 {
            return Err(format!("the cascade from {root} revoked {}", revoked.count));
        }
        ledger.end(&root, ACTOR).map_err(e)?;
        Ok(())
    }
}
