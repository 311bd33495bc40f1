//! `session-ledger hook claude-code` as Claude Code runs it: a new process per tool call,
//! reading one `PreToolUse` event, opening the ledger, deciding and recording durably, and
//! answering. Timed whole, from spawning the process to its exit, beside the floor of any
//! hook: the same binary started for `--version`, which opens nothing.
//!
//! ```text
//! cargo bench --bench hook                                                 # SQLite
//! scripts/with-postgres --durable cargo bench --bench hook                 # and PostgreSQL
//! HOOK_SESSIONS=N HOOK_RUNS=N cargo bench --bench hook                     # 100,000 and 300
//! ```
//!
//! The ledger: a root `conductor` granted `trust_reads` and `HOOK_SESSIONS` sessions below it
//! (fan-out 10, each born with the inherited posture), built through the fast building handle
//! and settled (SQLite: checkpointed; PostgreSQL: copied into a schema of its own, vacuumed and
//! analyzed). Each call is `git status` by the deepest session (`SESSION_LEDGER_SESSION`):
//! classified read-only and approved under the inherited posture, its record committed before
//! the answer. The two sides are interleaved, 10 untimed runs first; the medians and p99 are
//! printed.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use session_ledger::PostureLevel;
use support::{builder, engines, grow_tree, percentile, Place, ACTOR};

const BIN: &str = env!("CARGO_BIN_EXE_session-ledger");

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{var}: a number")))
        .unwrap_or(default)
}

/// One run of the binary with `args`, `input` on its stdin; its wall time.
fn run(location: &str, session: &str, args: &[&str], input: &[u8]) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .env("SESSION_LEDGER_DB", location)
        .env("SESSION_LEDGER_SESSION", session)
        .env_remove("SESSION_LEDGER_HOOK_STATE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("the event is written");
    let out = child.wait_with_output().expect("the binary ends");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if args.contains(&"hook") {
        let answer = String::from_utf8_lossy(&out.stdout);
        assert!(answer.contains("\"allow\""), "{answer}");
    }
    took
}

fn main() {
    let sessions = count("HOOK_SESSIONS", 100_000);
    let runs = count("HOOK_RUNS", 300);
    for engine in engines() {
        let built = std::time::Instant::now();
        let (place, ids) = Place::built(engine, |path| {
            let ledger = builder(path);
            ledger.create_root("conductor", ACTOR).expect("root");
            ledger
                .grant("conductor", PostureLevel::TrustReads, ACTOR)
                .expect("grant");
            grow_tree(&ledger, "conductor", sessions, 10)
        });
        let deepest = ids.last().expect("sessions").clone();
        let location = place.location();
        println!(
            "hook {} sessions={sessions} built in {:.0} s; calls by {deepest}",
            engine.name(),
            built.elapsed().as_secs_f64()
        );
        let event = serde_json::json!({
            "session_id": "6a1c0de4-93f2-4c4e-8a5e-0f3d2b7c9e11",
            "transcript_path": "/tmp/transcript.jsonl",
            "cwd": "/tmp",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status", "description": "status"},
            "tool_use_id": "toolu_bench",
            "permission_mode": "default",
        })
        .to_string();
        let (mut hook, mut floor) = (Vec::new(), Vec::new());
        for i in 0..runs + 10 {
            let once = |side: usize| match side {
                0 => run(
                    &location,
                    &deepest,
                    &["hook", "claude-code"],
                    event.as_bytes(),
                ),
                _ => run(&location, &deepest, &["--version"], b""),
            };
            let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let took = once(side).as_secs_f64() * 1e3;
                if i >= 10 {
                    if side == 0 { &mut hook } else { &mut floor }.push(took);
                }
            }
        }
        for (name, times) in [("hook claude-code", &hook), ("--version (floor)", &floor)] {
            println!(
                "hook {} {name}: p50 {:.2} ms, p99 {:.2} ms, n={}",
                engine.name(),
                percentile(times, 50.0),
                percentile(times, 99.0),
                times.len()
            );
        }
    }
}
