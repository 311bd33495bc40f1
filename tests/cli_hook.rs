//! `session-ledger hook claude-code`: Claude Code's hook events, as the real Claude Code sends
//! them (docs/agents.md), answered from the ledger: a Bash call decided on its command line and
//! recorded with its tool-use id, other tools by their class, an ended session denied, a root
//! recorded and ended for a Claude Code session of its own and never for a named one, outside
//! content marking the session untrusted, and every failure answered "ask" with exit status 0.
//! The same events from the real Claude Code binary are bindings/python/tests/agents'.
//!
//! Every test runs the real binary, once on a SQLite file and once on a ledger in a PostgreSQL
//! schema of its own; those about a SQLite file itself run once.

#[macro_use]
mod common;

use std::io::Write;
use std::process::Stdio;

use common::cli::*;
use common::Engine;
use serde_json::{json, Value};
use session_ledger::{DecisionQuery, Ledger, PostureLevel};

/// The Claude Code session id of these events.
const CC: &str = "6a1c0de4-93f2-4c4e-8a5e-0f3d2b7c9e11";

/// A hook event as Claude Code sends it: `fields` over the ones every event has.
fn event(name: &str, fields: Value) -> Value {
    let mut e = json!({
        "session_id": CC,
        "transcript_path": "/home/u/.claude/projects/p/x.jsonl",
        "cwd": "/tmp",
        "hook_event_name": name,
    });
    for (k, v) in fields.as_object().expect("an object").clone() {
        e[k] = v;
    }
    e
}

fn bash(command: &str, tool_use_id: &str) -> Value {
    event(
        "PreToolUse",
        json!({
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "a command"},
            "tool_use_id": tool_use_id,
            "permission_mode": "default",
        }),
    )
}

fn tool(name: &str, input: Value) -> Value {
    event(
        "PreToolUse",
        json!({"tool_name": name, "tool_input": input, "tool_use_id": "toolu_t"}),
    )
}

/// What the hook printed, parsed (`Null` for nothing), and its standard error; it must have
/// exited 0, whatever happened.
fn hook_raw(
    db: &(impl Db + ?Sized),
    input: &[u8],
    vars: &[(&str, &str)],
) -> TestResult<(Value, String)> {
    let mut child = command(db, &["hook", "claude-code"])
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child.stdin.take().expect("stdin").write_all(input)?;
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8(out.stdout)?;
    let stderr = String::from_utf8(out.stderr)?;
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let answer = if stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout)?
    };
    Ok((answer, stderr))
}

fn hook(db: &(impl Db + ?Sized), e: &Value, vars: &[(&str, &str)]) -> TestResult<Value> {
    Ok(hook_raw(db, e.to_string().as_bytes(), vars)?.0)
}

/// The permission decision and its reason, from a `PreToolUse` answer.
fn decision(answer: &Value) -> (String, String) {
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse", "{answer}");
    (
        out["permissionDecision"].as_str().unwrap_or("").to_owned(),
        out["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// A ledger on `engine` for the binary, and a handle of the library's on it to set it up and
/// read what the hook did; `None` when the engine is not available here.
fn both(engine: Engine) -> TestResult<Option<(Fixture, Ledger)>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    let ledger = Ledger::open(fx.target())?;
    Ok(Some((fx, ledger)))
}

const NAMED: [(&str, &str); 1] = [("SESSION_LEDGER_SESSION", "conductor")];

fn a_bash_call_is_decided_on_its_command_line_and_recorded_with_its_tool_use_id(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    ledger.add_pattern("conductor", "git status", "alice")?;
    let (allowed, why) = decision(&hook(&fx, &bash("git status", "toolu_01"), &NAMED)?);
    assert_eq!(allowed, "allow");
    assert!(
        why.contains("pattern \"git status\", added by alice"),
        "{why}"
    );
    let (refused, why) = decision(&hook(&fx, &bash("rm -rf build", "toolu_02"), &NAMED)?);
    assert_eq!(refused, "ask", "{why}");
    // Nor does a pattern admit a line that runs something else too.
    let (chained, _) = decision(&hook(
        &fx,
        &bash("git status; rm -rf build", "toolu_03"),
        &NAMED,
    )?);
    assert_eq!(chained, "ask");

    let records = ledger.decisions(&DecisionQuery {
        session: Some("conductor".into()),
        ..Default::default()
    })?;
    let seen: Vec<(&str, &str, Option<&str>, &str)> = records
        .iter()
        .map(|r| {
            (
                r.input.as_str(),
                r.verdict.as_str(),
                r.tool_use_id.as_deref(),
                r.asked_by.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "git status; rm -rf build",
                "ask",
                Some("toolu_03"),
                "claude-code"
            ),
            ("rm -rf build", "ask", Some("toolu_02"), "claude-code"),
            ("git status", "approve", Some("toolu_01"), "claude-code"),
        ]
    );
    Ok(())
}

fn under_trust_reads_reading_tools_and_commands_run_and_writing_ones_ask(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::TrustReads, "alice")?;
    for (call, expected) in [
        (bash("ls -la", "toolu_1"), "allow"),
        (bash("cat README.md", "toolu_2"), "allow"),
        (bash("touch new-file", "toolu_3"), "ask"),
        (tool("Read", json!({"file_path": "/tmp/x"})), "allow"),
        (
            tool("Grep", json!({"pattern": "x", "path": "/tmp"})),
            "allow",
        ),
        (
            tool("Write", json!({"file_path": "/tmp/x", "content": "y"})),
            "ask",
        ),
        (tool("mcp__github__create_issue", json!({})), "ask"),
    ] {
        let (answer, why) = decision(&hook(&fx, &call, &NAMED)?);
        assert_eq!(answer, expected, "{call}: {why}");
    }
    let (_, why) = decision(&hook(&fx, &bash("ls", "toolu_4"), &NAMED)?);
    assert!(
        why.contains("conductor's trust_reads (the command only reads), granted by alice"),
        "{why}"
    );
    Ok(())
}

fn tools_the_ledger_has_no_rule_for_get_no_opinion_unless_the_session_ended(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    let spawn = tool(
        "Agent",
        json!({"subagent_type": "general-purpose", "prompt": "x"}),
    );
    let todo = tool("TodoWrite", json!({"todos": []}));
    assert_eq!(hook(&fx, &spawn, &NAMED)?, Value::Null);
    assert_eq!(hook(&fx, &todo, &NAMED)?, Value::Null);
    ledger.end("conductor", "alice")?;
    for call in [bash("ls", "toolu_5"), spawn, todo] {
        let (answer, why) = decision(&hook(&fx, &call, &NAMED)?);
        assert_eq!(answer, "deny", "{call}");
        assert!(why.contains("conductor has ended"), "{why}");
    }
    Ok(())
}

fn a_claude_code_session_of_its_own_is_a_root_from_start_to_end_and_a_named_one_is_never_ended(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    let own = format!("cc-{CC}");
    hook(
        &fx,
        &event("SessionStart", json!({"source": "startup"})),
        &[],
    )?;
    let root = ledger.session(&own)?.expect("recorded at its start");
    assert_eq!((root.created_by, root.ended_at), (None, None));
    // Resumed: the same session, recorded once.
    hook(
        &fx,
        &event("SessionStart", json!({"source": "resume"})),
        &[],
    )?;
    let (answer, _) = decision(&hook(&fx, &bash("make", "toolu_6"), &[])?);
    assert_eq!(answer, "ask", "a new root holds nothing");
    hook(&fx, &event("SessionEnd", json!({"reason": "other"})), &[])?;
    assert!(ledger.session(&own)?.expect("kept").ended_at.is_some());

    ledger.create_root("conductor", "alice")?;
    hook(
        &fx,
        &event("SessionStart", json!({"source": "startup"})),
        &NAMED,
    )?;
    hook(
        &fx,
        &event("SessionEnd", json!({"reason": "other"})),
        &NAMED,
    )?;
    let named = ledger.session("conductor")?.expect("there");
    assert_eq!(named.ended_at, None, "its lifetime is its creator's");
    Ok(())
}

fn content_from_the_web_marks_the_session_untrusted(engine: Engine) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    let fetched = event(
        "PostToolUse",
        json!({
            "tool_name": "WebFetch",
            "tool_input": {"url": "http://127.0.0.1:8/page", "prompt": "what"},
            "tool_response": {"result": "text"},
            "tool_use_id": "toolu_7",
        }),
    );
    let ran = event(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_8"}),
    );
    hook(&fx, &ran, &NAMED)?;
    assert!(!ledger.state("conductor")?.untrusted);
    hook(&fx, &fetched, &NAMED)?;
    assert!(ledger.state("conductor")?.untrusted);
    // An MCP tool the operator names taints too.
    ledger.create_root("other", "alice")?;
    let mcp = event(
        "PostToolUse",
        json!({"tool_name": "mcp__search__query", "tool_input": {}, "tool_use_id": "toolu_9"}),
    );
    let vars = [
        ("SESSION_LEDGER_SESSION", "other"),
        (
            "SESSION_LEDGER_TAINTING_TOOLS",
            "mcp__mail__read, mcp__search__query",
        ),
    ];
    hook(&fx, &mcp, &vars)?;
    assert!(ledger.state("other")?.untrusted);
    Ok(())
}

fn whatever_goes_wrong_the_answer_is_ask_with_the_reason_and_exit_status_zero(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    let sub_agent = {
        let mut call = bash("ls", "toolu_10");
        call["agent_id"] = json!("a1b2c3d4e5f6a7b8c");
        call["agent_type"] = json!("general-purpose");
        call
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"garbage".to_vec(), "not JSON"),
        (b"{}".to_vec(), "no \"hook_event_name\""),
        (
            event("Teleport", json!({})).to_string().into_bytes(),
            "\"Teleport\" is not one it answers",
        ),
        (
            tool("Bash", json!({"cmd": "ls"})).to_string().into_bytes(),
            "no \"command\" string",
        ),
        (
            sub_agent.to_string().into_bytes(),
            "is not on the ledger's record",
        ),
        (vec![0xff, 0xfe], "could not be read as text"),
    ];
    for (input, why) in cases {
        let (answer, stderr) = hook_raw(&fx, &input, &NAMED)?;
        let (permission, reason) = decision(&answer);
        assert_eq!(permission, "ask", "{input:?}");
        assert!(reason.contains(why), "{input:?}: {reason}");
        let _ = stderr;
    }
    Ok(())
}

/// A sub-agent's event: `fields` over an event of the agent `agent`.
fn of_agent(agent: &str, mut e: Value) -> Value {
    e["agent_id"] = json!(agent);
    e["agent_type"] = json!("general-purpose");
    e
}

fn spawn_call(tool_use_id: &str) -> Value {
    event(
        "PreToolUse",
        json!({
            "tool_name": "Agent",
            "tool_input": {"description": "d", "prompt": "p", "subagent_type": "general-purpose"},
            "tool_use_id": tool_use_id,
        }),
    )
}

fn started(agent: &str) -> Value {
    event(
        "SubagentStart",
        json!({"agent_id": agent, "agent_type": "general-purpose"}),
    )
}

/// A root `conductor` granted trust, and the hook's variables: the session it works for, and
/// `state` as the folder it keeps spawns in.
fn trusted_conductor<'a>(
    ledger: &Ledger,
    state: &'a std::path::Path,
) -> TestResult<[(&'static str, &'a str); 2]> {
    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    Ok([
        ("SESSION_LEDGER_SESSION", "conductor"),
        (
            "SESSION_LEDGER_HOOK_STATE",
            state.to_str().ok_or("a UTF-8 path")?,
        ),
    ])
}

fn sub_agents_are_children_of_their_spawners_and_end_with_their_stop(engine: Engine) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    let state = tempfile::tempdir()?;
    let vars = trusted_conductor(&ledger, state.path())?;
    ledger.add_pattern("conductor", "make deploy", "alice")?;
    let (a, b) = (format!("cc-{CC}.aaaa1"), format!("cc-{CC}.bbbb2"));

    assert_eq!(hook(&fx, &spawn_call("toolu_s1"), &vars)?, Value::Null);
    hook(&fx, &started("aaaa1"), &vars)?;
    let first = ledger.session(&a)?.expect("recorded at its start");
    assert_eq!(first.created_by.as_deref(), Some("conductor"));
    let (answer, why) = decision(&hook(
        &fx,
        &of_agent("aaaa1", bash("make", "toolu_a1")),
        &vars,
    )?);
    assert_eq!(answer, "allow", "the creator's posture at allocation");
    assert!(
        why.contains(&format!("inherited from conductor through conductor > {a}")),
        "{why}"
    );
    // A sub-agent spawns one of its own: a grandchild.
    hook(&fx, &of_agent("aaaa1", spawn_call("toolu_s2")), &vars)?;
    hook(&fx, &started("bbbb2"), &vars)?;
    let second = ledger.session(&b)?.expect("recorded");
    assert_eq!(
        (second.created_by.as_deref(), second.depth),
        (Some(a.as_str()), 2)
    );
    assert!(ledger.state(&b)?.trust);
    // Never the creator's patterns: a cascade takes the posture, and then it asks.
    ledger.revoke(
        "conductor",
        session_ledger::Propagation::CascadeUnchecked,
        "alice",
    )?;
    let (answer, _) = decision(&hook(
        &fx,
        &of_agent("bbbb2", bash("make deploy", "toolu_b1")),
        &vars,
    )?);
    assert_eq!(answer, "ask");
    hook(
        &fx,
        &of_agent(
            "bbbb2",
            event("SubagentStop", json!({"stop_hook_active": false})),
        ),
        &vars,
    )?;
    assert!(ledger.session(&b)?.expect("kept").ended_at.is_some());
    assert!(ledger.session(&a)?.expect("kept").ended_at.is_none());
    let (answer, why) = decision(&hook(
        &fx,
        &of_agent("bbbb2", bash("ls", "toolu_b2")),
        &vars,
    )?);
    assert_eq!(answer, "deny", "{why}");
    Ok(())
}

fn a_sub_agent_whose_spawner_cannot_be_told_is_born_with_nothing_and_its_create_says_why(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    let state = tempfile::tempdir()?;
    let vars = trusted_conductor(&ledger, state.path())?;
    hook(&fx, &spawn_call("toolu_p1"), &vars)?;
    hook(&fx, &started("aaaa1"), &vars)?;
    // Two spawners' calls of one type wait at once: the conductor's and its sub-agent's.
    hook(&fx, &spawn_call("toolu_p2"), &vars)?;
    hook(&fx, &of_agent("aaaa1", spawn_call("toolu_p3")), &vars)?;
    hook(&fx, &started("cccc3"), &vars)?;
    let third = format!("cc-{CC}.cccc3");
    let born = ledger.session(&third)?.expect("recorded");
    assert_eq!(
        born.created_by.as_deref(),
        Some("conductor"),
        "under the session itself"
    );
    assert!(!ledger.state(&third)?.trust, "with no posture");
    let (answer, _) = decision(&hook(
        &fx,
        &of_agent("cccc3", bash("make", "toolu_c1")),
        &vars,
    )?);
    assert_eq!(answer, "ask");
    let rows = ledger.audit(&session_ledger::AuditQuery::all().session(third.as_str()))?;
    let why = rows[0].detail["withheld"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        why.contains(&format!("by cc-{CC}.aaaa1, conductor were waiting")),
        "{why}"
    );
    // Its call's PostToolUse names the agent a call started: the next start is told apart.
    let done = event(
        "PostToolUse",
        json!({
            "tool_name": "Agent",
            "tool_input": {"subagent_type": "general-purpose"},
            "tool_response": {"status": "async_launched", "agentId": "dddd4"},
            "tool_use_id": "toolu_p3",
        }),
    );
    hook(&fx, &done, &vars)?;
    hook(&fx, &started("dddd4"), &vars)?;
    let fourth = ledger
        .session(&format!("cc-{CC}.dddd4"))?
        .expect("recorded");
    assert_eq!(
        fourth.created_by.as_deref(),
        Some(format!("cc-{CC}.aaaa1").as_str())
    );
    Ok(())
}

fn option_shows_and_sets_untrusted_asks_and_the_hook_follows_it(engine: Engine) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    assert_eq!(ok(&fx, &["option"])?, "untrusted-asks: off\n");
    assert_eq!(
        ok(&fx, &["option", "untrusted-asks", "on", "--actor", "alice"])?,
        "untrusted-asks: on (was off)\n"
    );
    assert_eq!(
        ok_json(&fx, &["option", "untrusted_asks"])?,
        json!({"untrusted-asks": "on"})
    );
    let r = run(&fx, &["option", "no-such", "on"]);
    assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("the options are untrusted-asks"),
        "{}",
        r.stderr
    );

    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    let fetched = event(
        "PostToolUse",
        json!({"tool_name": "WebSearch", "tool_input": {"query": "q"}, "tool_use_id": "toolu_w"}),
    );
    hook(&fx, &fetched, &NAMED)?;
    let (answer, why) = decision(&hook(&fx, &bash("touch x", "toolu_x"), &NAMED)?);
    assert_eq!(answer, "ask");
    assert!(why.contains("read content from outside"), "{why}");
    let (answer, _) = decision(&hook(&fx, &bash("ls", "toolu_y"), &NAMED)?);
    assert_eq!(answer, "allow");
    Ok(())
}

fn a_session_id_that_is_a_path_never_names_a_file_outside_the_hooks_folder(
    engine: Engine,
) -> TestResult {
    let Some((fx, ledger)) = both(engine)? else {
        return Ok(());
    };
    ledger.create_root("conductor", "alice")?;
    let state = tempfile::tempdir()?;
    let folder = state.path().join("spawns");
    let vars = [
        ("SESSION_LEDGER_SESSION", "conductor"),
        ("SESSION_LEDGER_HOOK_STATE", folder.to_str().expect("UTF-8")),
    ];
    let mut call = spawn_call("toolu_z");
    call["session_id"] = json!("../escaped");
    let (answer, stderr) = hook_raw(&fx, call.to_string().as_bytes(), &vars)?;
    assert_eq!(answer, Value::Null, "no opinion on the spawn itself");
    assert!(stderr.contains("could not be written down"), "{stderr}");
    assert!(!state.path().join("escaped.spawns.jsonl").exists());
    Ok(())
}

engine_tests! {
    a_bash_call_is_decided_on_its_command_line_and_recorded_with_its_tool_use_id,
    under_trust_reads_reading_tools_and_commands_run_and_writing_ones_ask,
    tools_the_ledger_has_no_rule_for_get_no_opinion_unless_the_session_ended,
    a_claude_code_session_of_its_own_is_a_root_from_start_to_end_and_a_named_one_is_never_ended,
    content_from_the_web_marks_the_session_untrusted,
    whatever_goes_wrong_the_answer_is_ask_with_the_reason_and_exit_status_zero,
    sub_agents_are_children_of_their_spawners_and_end_with_their_stop,
    a_sub_agent_whose_spawner_cannot_be_told_is_born_with_nothing_and_its_create_says_why,
    option_shows_and_sets_untrusted_asks_and_the_hook_follows_it,
    a_session_id_that_is_a_path_never_names_a_file_outside_the_hooks_folder,
}

#[test]
fn a_missing_or_locked_ledger_is_answered_ask_and_nothing_is_written() -> TestResult {
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("none.db");
    let (answer, stderr) = hook_raw(
        &missing,
        bash("ls", "toolu_11").to_string().as_bytes(),
        &NAMED,
    )?;
    let (permission, reason) = decision(&answer);
    assert_eq!(permission, "ask");
    assert!(reason.contains("could not be opened"), "{reason}");
    assert!(stderr.contains("answered ask"), "{stderr}");
    assert!(!missing.exists(), "no ledger is created");

    let (fx, ledger) = both(Engine::Sqlite)?.expect("SQLite is always there");
    ledger.create_root("conductor", "alice")?;
    ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    let holder = fx.store().sql();
    holder.execute_batch("BEGIN EXCLUSIVE")?;
    let started = std::time::Instant::now();
    let (answer, _) = hook_raw(&fx, bash("make", "toolu_12").to_string().as_bytes(), &NAMED)?;
    let (permission, reason) = decision(&answer);
    assert_eq!(permission, "ask", "{reason}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    holder.execute_batch("ROLLBACK")?;
    assert!(ledger.decisions(&DecisionQuery::default())?.is_empty());
    Ok(())
}

#[test]
fn settings_prints_hooks_that_run_this_binary_for_every_event() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("ledger.db");
    let r = run(&db, &["hook", "claude-code", "--settings"]);
    assert!(r.status.success(), "{}", r.stderr);
    let settings: Value = serde_json::from_str(&r.stdout)?;
    let hooks = settings["hooks"].as_object().expect("hooks");
    let events: Vec<&str> = hooks.keys().map(String::as_str).collect();
    assert_eq!(
        events,
        [
            "PostToolUse",
            "PreToolUse",
            "SessionEnd",
            "SessionStart",
            "SubagentStart",
            "SubagentStop"
        ]
    );
    for (event, entries) in hooks {
        let command = entries[0]["hooks"][0]["command"]
            .as_str()
            .expect("a command");
        assert!(command.starts_with('/'), "{event}: {command}");
        assert!(
            command.contains(" hook claude-code --db /"),
            "{event}: {command}"
        );
        assert!(command.ends_with("ledger.db"), "{event}: {command}");
        let matcher = entries[0].get("matcher").and_then(Value::as_str);
        assert_eq!(matcher.is_some(), event.ends_with("ToolUse"), "{event}");
    }
    Ok(())
}
