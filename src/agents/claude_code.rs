//! Claude Code's hooks answered by the ledger: one hook event in (the JSON object Claude Code
//! writes on the hook's standard input), the answer out (what the hook writes on its standard
//! output), for `SessionStart`, `PreToolUse`, `PostToolUse`, `SubagentStart`, `SubagentStop` and
//! `SessionEnd` (docs/agents.md).
//!
//! Whose session a call is:
//!
//! * the ledger session named by `SESSION_LEDGER_SESSION` ([`HookSetup::session`]), which a
//!   dashboard created and Claude Code works for; its lifetime is its creator's;
//! * else `cc-<session_id>`, a root this hook records at `SessionStart` for the Claude Code
//!   session (its id is a UUID, and stays the same when the session is resumed), and ends at
//!   `SessionEnd`;
//! * a sub-agent's call (the event carries `agent_id`): `cc-<session_id>.<agent_id>`, recorded
//!   at its `SubagentStart` as a child of the session or sub-agent that spawned it (rule G2:
//!   its creator's posture at allocation, its label on first read, never its patterns or
//!   scopes), and ended at its `SubagentStop`. The spawner is the one whose `Agent` call of the
//!   same type is waiting (`spawns.rs`); when calls of more than one spawner wait, or none, the
//!   sub-agent is recorded under the Claude Code session's own session with no posture, and its
//!   create row says why. A call of a sub-agent the ledger does not hold asks.
//!
//! Failing closed (rule G1): whatever goes wrong (input that is not a hook event, an event this
//! does not know, a ledger error) the answer is a `PreToolUse` "ask" with a reason that says
//! what went wrong, never "allow" and never a bare failure, which Claude Code would take as no
//! opinion and let its own rules decide.

use serde_json::{json, Value};

use super::spawns::{Match, Spawns};
use super::{reason_line, Permission, ToolClass};
use crate::decision_log::AskedBy;
use crate::decisions::ReadOnly;
use crate::labels::Raise;
use crate::ledger::Ledger;
use crate::model::validate_id;
use crate::patterns::ToolCall;

/// Who the hook records as, in audit rows and decision records.
pub const ACTOR: &str = "claude-code";

/// Tools whose results bring content from outside into the session (rule G3): after such a
/// call the session is marked untrusted.
pub const TAINTING_TOOLS: &[&str] = &["WebFetch", "WebSearch"];

/// How the hook is set up, from its environment.
#[derive(Debug, Clone, Default)]
pub struct HookSetup {
    /// The ledger session this Claude Code session works for (`SESSION_LEDGER_SESSION`).
    pub session: Option<String>,
    /// MCP tools the operator names as bringing in outside content, besides
    /// [`TAINTING_TOOLS`].
    pub tainting_tools: Vec<String>,
    /// The folder where the hook keeps, between its processes, the `Agent` calls of each
    /// Claude Code session (`spawns.rs`); `None`: none is kept, and no sub-agent's spawner can
    /// be established.
    pub state: Option<std::path::PathBuf>,
}

/// What the hook writes: `stdout` (empty for no opinion), and a note for standard error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HookReply {
    /// The JSON object for Claude Code, or nothing.
    pub stdout: String,
    /// Something worth telling whoever reads the hook's standard error.
    pub note: Option<String>,
}

/// The answer to the hook event `input`, as the module says. Never fails: an error is
/// answered by [`fail_closed`].
pub fn answer(ledger: &Ledger, input: &str, setup: &HookSetup) -> HookReply {
    match handle(ledger, input, setup) {
        Ok(reply) => reply,
        Err(why) => fail_closed(&why),
    }
}

/// The answer when the hook cannot decide (`why`): a `PreToolUse` "ask". For an event that is
/// not a `PreToolUse`, Claude Code ignores it; for one that is, a person decides.
pub fn fail_closed(why: &str) -> HookReply {
    let reason = format!("session-ledger could not decide, so a person must: {why}");
    HookReply {
        stdout: permission(&Permission::Ask, &reason),
        note: Some(format!("answered ask: {why}")),
    }
}

/// A `PreToolUse` answer.
fn permission(permission: &Permission, reason: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": permission.as_str(),
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
}

/// The fields of a hook event this reads.
struct Event<'a> {
    name: &'a str,
    session_id: &'a str,
    value: &'a Value,
}

impl<'a> Event<'a> {
    fn parse(value: &'a Value) -> Result<Event<'a>, String> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the hook event has no {key:?} string"))
        };
        Ok(Event {
            name: text("hook_event_name")?,
            session_id: text("session_id")?,
            value,
        })
    }

    /// A string field, when present.
    fn text(&self, key: &str) -> Option<&'a str> {
        self.value.get(key).and_then(Value::as_str)
    }

    /// The ledger session of the Claude Code session itself.
    fn main_session(&self, setup: &HookSetup) -> Result<String, String> {
        let id = match &setup.session {
            Some(named) => named.clone(),
            None => format!("cc-{}", self.session_id),
        };
        validate_id(&id).map_err(|e| e.to_string())?;
        Ok(id)
    }

    /// The ledger session whose call this is: a sub-agent's, or the Claude Code session's.
    fn caller(&self, setup: &HookSetup) -> Result<(String, bool), String> {
        match self.text("agent_id") {
            Some(agent) => {
                let id = format!("cc-{}.{agent}", self.session_id);
                validate_id(&id).map_err(|e| e.to_string())?;
                Ok((id, true))
            }
            None => Ok((self.main_session(setup)?, false)),
        }
    }
}

fn handle(ledger: &Ledger, input: &str, setup: &HookSetup) -> Result<HookReply, String> {
    let value: Value =
        serde_json::from_str(input).map_err(|e| format!("the hook's input is not JSON ({e})"))?;
    let event = Event::parse(&value)?;
    match event.name {
        "SessionStart" => session_start(ledger, &event, setup),
        "PreToolUse" => pre_tool_use(ledger, &event, setup),
        "PostToolUse" => post_tool_use(ledger, &event, setup),
        "SubagentStart" => subagent_start(ledger, &event, setup),
        "SubagentStop" => subagent_stop(ledger, &event, setup),
        "SessionEnd" => session_end(ledger, &event, setup),
        other => Err(format!("the hook event {other:?} is not one it answers")),
    }
}

fn session_start(
    ledger: &Ledger,
    event: &Event<'_>,
    setup: &HookSetup,
) -> Result<HookReply, String> {
    let id = event.main_session(setup)?;
    let known = ledger.session(&id).map_err(|e| e.to_string())?.is_some();
    if setup.session.is_some() {
        let note = (!known).then(|| {
            format!("SESSION_LEDGER_SESSION names {id}, which the ledger does not hold: every call will ask")
        });
        return Ok(HookReply {
            stdout: String::new(),
            note,
        });
    }
    if !known {
        ledger.create_root(&id, ACTOR).map_err(|e| e.to_string())?;
    }
    Ok(HookReply::default())
}

fn pre_tool_use(
    ledger: &Ledger,
    event: &Event<'_>,
    setup: &HookSetup,
) -> Result<HookReply, String> {
    let tool = event
        .text("tool_name")
        .ok_or("the PreToolUse event has no \"tool_name\" string")?;
    let (session, sub_agent) = event.caller(setup)?;
    let class = ToolClass::of(tool);
    // A decision reads the session itself (unknown asks, ended is refused): read it here only
    // for what the decision does not cover, so that a decided call costs one read.
    let known = if sub_agent || !class.decided() {
        ledger.session(&session).map_err(|e| e.to_string())?
    } else {
        None
    };
    if sub_agent && known.is_none() {
        let reason = format!(
            "session-ledger: sub-agent {session} is not on the ledger's record, so nothing approves its calls"
        );
        return Ok(reply(&Permission::Ask, reason));
    }
    if !class.decided() {
        // No opinion, unless the session is over.
        if known.is_some_and(|s| s.ended_at.is_some()) {
            return Ok(reply(
                &Permission::Deny,
                format!("session-ledger: session {session} has ended"),
            ));
        }
        let note = if class == ToolClass::Spawn {
            remember_spawn(event, setup, &session).err()
        } else {
            None
        };
        return Ok(HookReply {
            stdout: String::new(),
            note,
        });
    }
    let input = event.value.get("tool_input").unwrap_or(&Value::Null);
    let asked = AskedBy {
        actor: ACTOR,
        tool_use_id: event.text("tool_use_id"),
    };
    let recorded = if class == ToolClass::Shell {
        let command = input
            .get("command")
            .and_then(Value::as_str)
            .ok_or("the Bash call has no \"command\" string")?;
        ledger.decide_and_record(&session, command, ReadOnly::Classify, &asked)
    } else {
        let path = ["file_path", "path", "notebook_path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .map(std::path::Path::new);
        let call = ToolCall {
            tool,
            path,
            url: input.get("url").and_then(Value::as_str),
            root: event.text("cwd").map(std::path::Path::new),
        };
        ledger.decide_tool_and_record(&session, &call, &asked)
    }
    .map_err(|e| e.to_string())?;
    let decision = &recorded.decision;
    Ok(reply(&Permission::of(decision), reason_line(decision)))
}

fn reply(answer: &Permission, reason: String) -> HookReply {
    HookReply {
        stdout: permission(answer, &reason),
        note: None,
    }
}

/// Writes down an `Agent` call of `session`, for the sub-agent's start to find its spawner.
fn remember_spawn(event: &Event<'_>, setup: &HookSetup, session: &str) -> Result<(), String> {
    let (Some(folder), Some(call)) = (&setup.state, event.text("tool_use_id")) else {
        return Ok(());
    };
    let input = event.value.get("tool_input").unwrap_or(&Value::Null);
    let agent_type = input
        .get("subagent_type")
        .and_then(Value::as_str)
        .unwrap_or("general-purpose");
    Spawns::open(folder, event.session_id)
        .and_then(|spawns| spawns.spawn(call, session, agent_type))
        .map_err(|e| {
            format!("the Agent call could not be written down ({e}): its sub-agent will ask")
        })
}

fn subagent_start(
    ledger: &Ledger,
    event: &Event<'_>,
    setup: &HookSetup,
) -> Result<HookReply, String> {
    let (child, _) = event.caller(setup)?;
    let agent = event
        .text("agent_id")
        .ok_or("the SubagentStart event has no \"agent_id\" string")?;
    if ledger.session(&child).map_err(|e| e.to_string())?.is_some() {
        return Ok(HookReply::default());
    }
    let agent_type = event.text("agent_type").unwrap_or("general-purpose");
    let matched = match &setup.state {
        None => Match::Unknown("the hook keeps no record of Agent calls".into()),
        Some(folder) => Spawns::open(folder, event.session_id)
            .and_then(|spawns| spawns.match_start(agent, agent_type))
            .unwrap_or_else(|e| {
                Match::Unknown(format!("the record of Agent calls could not be read: {e}"))
            }),
    };
    let main = event.main_session(setup)?;
    let withheld = match matched {
        Match::Spawner(spawner) => match ledger.create_child(&child, &spawner, ACTOR) {
            Ok(_) => return Ok(HookReply::default()),
            Err(e) => format!("its spawner {spawner} could not create it: {e}"),
        },
        Match::Unknown(why) => why,
    };
    ledger
        .create_child_withholding(
            &child,
            &main,
            ACTOR,
            &format!("its spawner is not known: {withheld}"),
        )
        .map_err(|e| e.to_string())?;
    Ok(HookReply {
        stdout: String::new(),
        note: Some(format!(
            "{child} is recorded under {main} with no posture: {withheld}"
        )),
    })
}

fn subagent_stop(
    ledger: &Ledger,
    event: &Event<'_>,
    setup: &HookSetup,
) -> Result<HookReply, String> {
    let (child, _) = event.caller(setup)?;
    end_if_live(ledger, &child)
}

/// Ends `id` when the ledger holds it live; nothing otherwise.
fn end_if_live(ledger: &Ledger, id: &str) -> Result<HookReply, String> {
    let live = ledger
        .session(id)
        .map_err(|e| e.to_string())?
        .is_some_and(|s| s.ended_at.is_none());
    if live {
        ledger.end(id, ACTOR).map_err(|e| e.to_string())?;
    }
    Ok(HookReply::default())
}

fn post_tool_use(
    ledger: &Ledger,
    event: &Event<'_>,
    setup: &HookSetup,
) -> Result<HookReply, String> {
    let Some(tool) = event.text("tool_name") else {
        return Err("the PostToolUse event has no \"tool_name\" string".into());
    };
    if ToolClass::of(tool) == ToolClass::Spawn {
        // The response names the agent the call started.
        let agent = event
            .value
            .pointer("/tool_response/agentId")
            .and_then(Value::as_str);
        if let (Some(folder), Some(call), Some(agent)) =
            (&setup.state, event.text("tool_use_id"), agent)
        {
            if let Err(e) =
                Spawns::open(folder, event.session_id).and_then(|s| s.started(call, agent))
            {
                return Ok(HookReply {
                    stdout: String::new(),
                    note: Some(format!(
                        "the start of {agent} could not be written down: {e}"
                    )),
                });
            }
        }
        return Ok(HookReply::default());
    }
    let tainting = TAINTING_TOOLS.contains(&tool) || setup.tainting_tools.iter().any(|t| t == tool);
    if !tainting {
        return Ok(HookReply::default());
    }
    let (session, _) = event.caller(setup)?;
    if ledger
        .session(&session)
        .map_err(|e| e.to_string())?
        .is_none()
    {
        return Ok(HookReply {
            stdout: String::new(),
            note: Some(format!(
                "{session} read outside content, and the ledger does not hold it"
            )),
        });
    }
    let untrusted = Raise {
        taint: None,
        untrusted: true,
    };
    ledger
        .raise(&session, untrusted, ACTOR)
        .map_err(|e| e.to_string())?;
    Ok(HookReply::default())
}

fn session_end(ledger: &Ledger, event: &Event<'_>, setup: &HookSetup) -> Result<HookReply, String> {
    if setup.session.is_some() {
        // Its lifetime is its creator's: a dashboard may run Claude Code for it again.
        return Ok(HookReply::default());
    }
    end_if_live(ledger, &event.main_session(setup)?)
}
