//! A batching recorder killed with SIGKILL loses exactly the records it had not appended yet:
//! the newest ones, never one between two that were kept, and never one that a `flush`
//! reported appended (rule D1's loss window).
//!
//! The test re-runs its own binary as a child process. With `SESSION_LEDGER_RECORDER_CHILD`
//! set to a ledger's target, the test function is the child: it decides `echo 0`, `echo 1`, ...
//! (tagged with the trial's number) through a [`DecisionRecorder`] (window 20 ms) as fast as it can, calls `flush` after every
//! 500 and prints `FLUSHED <n>` once it returns (and `DECIDED <n>` every 100, for the report). The parent kills it 5 to 80 ms after it
//! printed `READY`, then reads the records: their inputs, in append order, must be `echo 0` to
//! `echo k-1` for some `k` at least the last `n` printed. `RECORDER_CRASH_TRIALS` sets the
//! number of kills per engine (default 6).

#[macro_use]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{Engine, TestResult};
use session_ledger::{AskedBy, Config, DecisionRecorder, Ledger, RecorderOptions};

const CHILD: &str = "SESSION_LEDGER_RECORDER_CHILD";
/// The trial the child's inputs are tagged with.
const TRIAL: &str = "SESSION_LEDGER_RECORDER_TRIAL";

/// The child: decides and records until it is killed.
fn child(target: &str, trial: &str) -> ! {
    let ledger = Arc::new(Ledger::open_with(target, Config::default()).expect("open"));
    let mut options = RecorderOptions::default();
    options.window = Duration::from_millis(20);
    options.max_batch = 400;
    let recorder = DecisionRecorder::new(Arc::clone(&ledger), options).expect("recorder");
    let asked = AskedBy::actor("child");
    println!("READY");
    for i in 0u64.. {
        recorder
            .decide("worker", &format!("echo {trial}-{i}"), false, &asked)
            .expect("decide");
        if (i + 1) % 100 == 0 {
            println!("DECIDED {}", i + 1);
        }
        if (i + 1) % 500 == 0 {
            let appended = recorder.flush().expect("flush");
            println!("FLUSHED {appended}");
        }
    }
    unreachable!()
}

/// The inputs of every record, in append order.
fn inputs(ledger: &Ledger) -> Vec<String> {
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = ledger
            .decisions(&session_ledger::DecisionQuery {
                session: Some("worker".into()),
                before,
                limit: Some(10_000),
                ..Default::default()
            })
            .expect("list");
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        all.extend(page.into_iter().map(|r| r.input));
    }
    all.reverse();
    all
}

fn a_killed_recorder_loses_only_its_unappended_tail(engine: Engine) -> TestResult {
    if let Ok(target) = std::env::var(CHILD) {
        child(&target, &std::env::var(TRIAL).unwrap_or_default());
    }
    let f = fixture!(engine);
    f.ledger.create_root("worker", "alice")?;
    let trials: u64 = std::env::var("RECORDER_CRASH_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(6);
    let me = std::env::current_exe()?;
    let name = format!(
        "{}::a_killed_recorder_loses_only_its_unappended_tail",
        match engine {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    );
    for trial in 0..trials {
        let mut child = Command::new(&me)
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, f.target())
            .env(TRIAL, trial.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let (lines, said) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        // The test harness's own lines come first, and its `test NAME ... ` before the child's
        // first line.
        while !said
            .recv_timeout(Duration::from_secs(60))?
            .ends_with("READY")
        {}
        std::thread::sleep(Duration::from_millis(5 + (trial * 37) % 76));
        child.kill()?;
        child.wait()?;
        let said: Vec<String> = said.try_iter().collect();
        let last = |word: &str| {
            said.iter()
                .filter_map(|l| l.strip_prefix(word).and_then(|n| n.parse::<usize>().ok()))
                .max()
                .unwrap_or(0)
        };
        let (flushed, decided) = (last("FLUSHED "), last("DECIDED "));

        // The batch in flight when the child died may still commit on a server after this
        // read: that is the next batch, so what is read is a prefix either way.
        let tag = format!("echo {trial}-");
        let this: Vec<String> = inputs(&f.ledger)
            .into_iter()
            .filter(|input| input.starts_with(&tag))
            .collect();
        for (i, input) in this.iter().enumerate() {
            assert_eq!(
                *input,
                format!("{tag}{i}"),
                "trial {trial}: record {i} is not the next one"
            );
        }
        assert!(
            this.len() >= flushed,
            "trial {trial}: {} records kept, {flushed} reported appended",
            this.len()
        );
        eprintln!(
            "trial {trial}: {} kept; {flushed} reported appended; at least {decided} decided",
            this.len()
        );
    }
    Ok(())
}

engine_tests! {
    a_killed_recorder_loses_only_its_unappended_tail,
}
