//! The text of sessions and labels: a created or ended session, a session's state, and the
//! dispatch tree.

use std::io::Write;

use session_ledger::{
    Created, Ended, Label, Materialized, Origin, Session, SessionState, TreeNode,
};

use super::authority::posture_words;
use super::text::{count, json_line};
use crate::error::CliError;

/// `secret`, or `private, untrusted`.
pub fn label_words(label: Label) -> String {
    label.to_string()
}

/// `state`'s text: the label, where it came from, and the posture.
pub fn describe_state(state: &SessionState) -> String {
    let how = match (&state.materialized, state.known) {
        (_, false) => " (unknown id: the default, nothing recorded)".to_owned(),
        (Some(Materialized::Born), _) => " (root, born with the default)".to_owned(),
        (Some(Materialized::Inherited { from }), _) if from == &state.session => String::new(),
        (Some(Materialized::Inherited { from }), _) => format!(" (inherited from {from})"),
        (Some(Materialized::Unrecorded { from }), _) => {
            format!(" (inherited from {from}; not recorded: the ledger is open read-only)")
        }
        (None, true) => String::new(),
    };
    let raised = if state.raised_at.is_some() {
        ", raised since"
    } else {
        ""
    };
    let posture = match &state.posture {
        Some(p) => format!("; posture: {}", posture_words(p)),
        None => String::new(),
    };
    format!(
        "{}: {}{how}{raised}{posture}",
        state.session,
        label_words(state.label())
    )
}

/// `create`'s output: the session, and for a child what it was born with.
pub fn print_created(out: &mut dyn Write, json: bool, created: &Created) -> Result<(), CliError> {
    if json {
        return json_line(out, created);
    }
    let born = match (created.inherited_trust, created.inherited_trust_reads) {
        (true, _) => "; born with trust",
        (_, true) => "; born with trust_reads",
        _ if created.session.created_by.is_some() => "; born with no posture",
        _ => "",
    };
    print_session(out, false, &created.session, "created", born)
}

/// `VERB ID (root NOTE)` or `VERB ID (by CREATOR, depth N NOTE)`, or the session as JSON.
pub fn print_session(
    out: &mut dyn Write,
    json: bool,
    s: &Session,
    verb: &str,
    note: &str,
) -> Result<(), CliError> {
    if json {
        json_line(out, s)?;
    } else {
        match &s.created_by {
            Some(by) => writeln!(out, "{verb} {} (by {by}, depth {}{note})", s.id, s.depth)?,
            None => writeln!(out, "{verb} {} (root{note})", s.id)?,
        }
    }
    Ok(())
}

/// `end`'s output: the session, and the spawned sub-agents that ended with it.
pub fn print_ended(out: &mut dyn Write, json: bool, ended: &Ended) -> Result<(), CliError> {
    if json {
        return json_line(out, ended);
    }
    let note = if ended.spawned.is_empty() {
        String::new()
    } else {
        format!(
            "; with it, its spawned sub-agent{} {}",
            if ended.spawned.len() == 1 { "" } else { "s" },
            ended.spawned.join(", ")
        )
    };
    print_session(out, false, &ended.session, "ended", &note)
}

/// `tree`'s output: one line per session, drawn with box characters, or the nodes as JSON.
pub fn print_tree(out: &mut dyn Write, nodes: &[TreeNode]) -> Result<(), CliError> {
    if nodes.is_empty() {
        writeln!(out, "(no sessions)")?;
        return Ok(());
    }
    // For each depth, whether the ancestor at that depth has siblings still to come.
    let mut open: Vec<bool> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let depth = node.relative_depth as usize;
        let last = !nodes[i + 1..]
            .iter()
            .take_while(|n| n.relative_depth as usize >= depth)
            .any(|n| n.relative_depth as usize == depth);
        open.truncate(depth);
        let mut line = String::new();
        if depth > 0 {
            for &more in &open[1..] {
                line.push_str(if more { "│   " } else { "    " });
            }
            line.push_str(if last { "└── " } else { "├── " });
        }
        open.push(!last);
        line.push_str(&node.session.id);
        let posture = match (node.trust, node.trust_reads) {
            (true, _) => "; trust",
            (_, true) => "; trust_reads",
            _ => "",
        };
        let words = if node.materialized {
            label_words(Label {
                taint: node.taint,
                untrusted: node.untrusted,
            })
        } else {
            "not materialized".to_owned()
        };
        line.push_str(&format!("  [{words}{posture}]"));
        // Grants that approve on their own: no posture revocation takes them.
        if node.live_scopes > 0 {
            line.push_str(&format!(
                "  +{}",
                count(node.live_scopes as usize, "scope", "scopes")
            ));
        }
        if node.patterns > 0 {
            line.push_str(&format!(
                "  +{}",
                count(node.patterns as usize, "pattern", "patterns")
            ));
        }
        if node.session.origin == Origin::Spawned {
            line.push_str("  spawned");
        }
        if !node.session.is_live() {
            line.push_str("  ended");
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
