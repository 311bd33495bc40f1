//! The ledger in front of agent runtimes (rules G1 to G3): what an agent's tool call is to the
//! ledger, and the answer a runtime gets. `claude_code` answers Claude Code's hooks.
//!
//! Every tool an agent calls falls in one [`ToolClass`], and the class says what the ledger
//! does with the call: a shell command is decided on its command line; a tool that only reads,
//! or edits files, or fetches, or an MCP tool, is decided as a tool call (tool rules, and
//! `trust_reads` for the read-only ones); a sub-agent's spawn, and every tool the ledger has no
//! rule for, gets no opinion from it, said so, and the runtime's own rules apply. Failing
//! closed is the face's job: an error is answered "ask", never "allow".

pub mod claude_code;
mod spawns;

use crate::decisions::{Decision, Reason, Verdict};
use crate::patterns::{EDIT_TOOLS, READ_ONLY_TOOLS};

/// What a tool call is, to the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    /// A shell command (`Bash`): decided on its command line.
    Shell,
    /// A tool that only reads (files, or the web with a GET): `trust_reads` approves it.
    ReadOnly,
    /// A tool that edits files: only `trust`, an `Edit(...)` rule or a scope approve it.
    Edit,
    /// An MCP server's tool (`mcp__SERVER__TOOL`): only `trust`, an `mcp__...` rule or a scope.
    Mcp,
    /// A sub-agent's spawn (`Agent`, formerly `Task`): the sub-agent's own calls are decided.
    Spawn,
    /// A tool the ledger has no rule for (a to-do list, a plan, a skill): no opinion.
    Other,
}

impl ToolClass {
    /// The class of the tool named `tool`.
    pub fn of(tool: &str) -> ToolClass {
        if tool == "Bash" {
            ToolClass::Shell
        } else if READ_ONLY_TOOLS.contains(&tool) {
            ToolClass::ReadOnly
        } else if EDIT_TOOLS.contains(&tool) {
            ToolClass::Edit
        } else if tool.starts_with("mcp__") {
            ToolClass::Mcp
        } else if tool == "Agent" || tool == "Task" {
            ToolClass::Spawn
        } else {
            ToolClass::Other
        }
    }

    /// True when the ledger decides calls of this class.
    pub fn decided(self) -> bool {
        !matches!(self, ToolClass::Spawn | ToolClass::Other)
    }
}

/// What a runtime is told about a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// The ledger approves: the call runs without asking.
    Allow,
    /// Nothing in the ledger approves, or something went wrong: a human decides.
    Ask,
    /// The call must not run: the session is ended.
    Deny,
}

impl Permission {
    /// The word Claude Code's `permissionDecision` takes.
    pub fn as_str(&self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }

    /// What a decision of the ledger tells the runtime: an ended session is denied, an approval
    /// allowed, anything else asks.
    pub fn of(decision: &Decision) -> Permission {
        match (&decision.verdict, &decision.reason) {
            (_, Reason::SessionEnded) => Permission::Deny,
            (Verdict::Approve, _) => Permission::Allow,
            (Verdict::Ask, _) => Permission::Ask,
        }
    }
}

/// A decision's reason in one line a person reads in the runtime's prompt: what approved the
/// call (the posture and where it came from, the pattern, the rule, the scope), or why it asks.
pub fn reason_line(decision: &Decision) -> String {
    let session = &decision.session;
    match &decision.reason {
        Reason::Trust { posture } | Reason::TrustReads { posture, .. } => {
            let level = posture.level.as_str();
            let read = if matches!(decision.reason, Reason::TrustReads { .. }) {
                " (the command only reads)"
            } else {
                ""
            };
            let from = match &posture.inherited_from {
                Some(creator) => format!(
                    ", inherited from {creator} through {}",
                    posture.chain.join(" > ")
                ),
                None => String::new(),
            };
            format!(
                "session-ledger: approved by {session}'s {level}{read}, granted by {} on {}{from}",
                posture.granted_by, posture.granted_on
            )
        }
        Reason::Pattern {
            pattern, added_by, ..
        } => format!(
            "session-ledger: approved by {session}'s pattern {pattern:?}, added by {added_by}"
        ),
        Reason::ToolRule { rule, added_by } => {
            format!("session-ledger: approved by {session}'s rule {rule}, added by {added_by}")
        }
        Reason::Scope {
            scope, granted_by, ..
        } => format!(
            "session-ledger: approved by {session}'s scope {scope:?}, granted by {granted_by}"
        ),
        Reason::UnknownSession => {
            format!("session-ledger: the ledger has no session {session}, so nothing approves")
        }
        Reason::SessionEnded => format!("session-ledger: session {session} has ended"),
        Reason::Nothing {
            reads_only,
            untrusted,
            ..
        } => {
            if *untrusted {
                format!("session-ledger: {session} read content from outside, so its trust covers only what reads (the ledger's option untrusted-asks)")
            } else if *reads_only {
                format!("session-ledger: {session} may only run what reads, and this was not found to only read")
            } else {
                format!("session-ledger: nothing of {session}'s approves this")
            }
        }
    }
}
