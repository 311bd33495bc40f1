//! `hook claude-code`: Claude Code's hooks answered by the ledger (docs/agents.md). It reads
//! one hook event on standard input and writes the answer on standard output, always with exit
//! status 0: whatever goes wrong, a ledger it cannot open included, is answered "ask" with the
//! reason (rule G1), because a hook that fails any other way lets Claude Code's own rules
//! decide. With `--settings` it prints the settings fragment that installs it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use session_ledger::claude_code::{self, HookSetup};

use crate::context::open_existing_waiting;
use crate::error::CliError;

/// The most a hook event may hold: far more than any Claude Code sends.
const MAX_INPUT: u64 = 4 << 20;

/// How long the hook waits for another writer of the ledger before it asks: well within
/// Claude Code's own 60 s hook timeout.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The events the hook answers, in the settings it prints.
const EVENTS: &[&str] = &[
    "SessionStart",
    "PreToolUse",
    "PostToolUse",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
];

/// `hook claude-code`: one event from `input` answered on `out`, a note on `notes`.
pub fn claude_code(
    db: &Path,
    input: &mut dyn Read,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<(), CliError> {
    let reply = match read_event(input) {
        Err(why) => claude_code::fail_closed(&why),
        Ok(event) => match open_existing_waiting(db, BUSY_TIMEOUT) {
            Err(e) => claude_code::fail_closed(&format!("the ledger could not be opened: {e}")),
            Ok(ledger) => claude_code::answer(&ledger, &event, &setup()),
        },
    };
    if let Some(note) = &reply.note {
        // A note that cannot be written is no reason to lose the answer.
        let _ = writeln!(notes, "session-ledger hook: {note}");
    }
    out.write_all(reply.stdout.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The hook event on `input`, at most [`MAX_INPUT`] bytes of UTF-8.
fn read_event(input: &mut dyn Read) -> Result<String, String> {
    let mut event = String::new();
    input
        .take(MAX_INPUT + 1)
        .read_to_string(&mut event)
        .map_err(|e| format!("the hook's input could not be read as text: {e}"))?;
    if event.len() as u64 > MAX_INPUT {
        return Err(format!("the hook's input is larger than {MAX_INPUT} bytes"));
    }
    Ok(event)
}

/// The hook's setup from its environment: `SESSION_LEDGER_SESSION`,
/// `SESSION_LEDGER_TAINTING_TOOLS` (tool names, separated by commas), and the folder it keeps
/// sub-agents' spawns in: `SESSION_LEDGER_HOOK_STATE`, else `$XDG_STATE_HOME/session-ledger/
/// claude-code`, else `$HOME/.local/state/session-ledger/claude-code`.
fn setup() -> HookSetup {
    let named = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let state = named("SESSION_LEDGER_HOOK_STATE")
        .map(PathBuf::from)
        .or_else(|| {
            named("XDG_STATE_HOME")
                .map(|d| PathBuf::from(d).join("session-ledger").join("claude-code"))
        })
        .or_else(|| {
            named("HOME").map(|h| {
                PathBuf::from(h)
                    .join(".local/state")
                    .join("session-ledger")
                    .join("claude-code")
            })
        });
    HookSetup {
        state,
        session: named("SESSION_LEDGER_SESSION"),
        tainting_tools: named("SESSION_LEDGER_TAINTING_TOOLS")
            .map(|tools| {
                tools
                    .split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// `hook claude-code --settings`: the `hooks` of a settings.json that runs this binary, by its
/// absolute path, for every event, on the ledger at `db` (a file, by its absolute path; a URL
/// is left to `$SESSION_LEDGER_DB`, since it may hold a password).
pub fn settings(db: &Path, out: &mut dyn Write, notes: &mut dyn Write) -> Result<(), CliError> {
    let binary = std::env::current_exe()?;
    let mut command = format!("{} hook claude-code", shell_word(&binary.to_string_lossy()));
    if db.to_str().is_some_and(session_ledger::is_postgres_url) {
        writeln!(
            notes,
            "session-ledger: the ledger is a URL: set $SESSION_LEDGER_DB in the environment Claude Code runs in, not in its settings"
        )?;
    } else {
        let db = std::path::absolute(db)?;
        command.push_str(&format!(" --db {}", shell_word(&db.to_string_lossy())));
    }
    let entry = |matcher: bool| {
        let hook = json!({ "type": "command", "command": command });
        if matcher {
            json!({ "matcher": "*", "hooks": [hook] })
        } else {
            json!({ "hooks": [hook] })
        }
    };
    let hooks: serde_json::Map<String, serde_json::Value> = EVENTS
        .iter()
        .map(|event| {
            let matcher = matches!(*event, "PreToolUse" | "PostToolUse");
            ((*event).to_owned(), json!([entry(matcher)]))
        })
        .collect();
    let fragment = json!({ "hooks": hooks });
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&fragment).unwrap_or_default()
    )?;
    Ok(())
}

/// `word` as one word of a POSIX shell command line, quoted when it needs to be.
fn shell_word(word: &str) -> String {
    session_ledger::join_words(&[word.to_owned()])
}
