//! The demo: an example ledger in a new file, built step by step, each step shown with its
//! output.

use std::io::{self, Write};
use std::path::Path;

use session_ledger::{AuditQuery, Ledger, PostureLevel, Propagation, Raise, Taint};

use crate::commands::cli_config;
use crate::error::CliError;
use crate::render::{
    describe_decision, describe_state, label_words, print_audit, print_revocation, print_tree,
};

/// Builds the example ledger at `path` (by default a new file in the temp directory), which must
/// not exist, and prints each step with its output on `out`.
///
/// # Errors
///
/// `path` exists, a step fails, or `out` cannot be written.
pub fn run(out: &mut dyn Write, path: Option<&Path>) -> Result<(), CliError> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => std::env::temp_dir().join(format!(
            "session-ledger-demo-{}-{}.db",
            chrono::Utc::now().format("%Y%m%dT%H%M%S"),
            std::process::id()
        )),
    };
    if path.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; the demo writes a new file of its own",
            path.display()
        )));
    }
    let ledger = Ledger::open_with(&path, cli_config())?;
    let op = "operator";
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    let untrusted = Raise {
        taint: None,
        untrusted: true,
    };
    writeln!(out, "# demo ledger: {}", path.display())?;

    section(
        out,
        "an operator opens a conductor and trusts it; it dispatches two workers",
    )?;
    ledger.create_root("conductor", op)?;
    ledger.grant("conductor", PostureLevel::Trust, op)?;
    let w1 = ledger.create_child("worker-1", "conductor", op)?;
    ledger.create_child("worker-2", "conductor", op)?;
    let born = if w1.inherited_trust {
        "trust"
    } else {
        "no posture"
    };
    step(
        out,
        "create worker-1 --by conductor",
        &format!("created worker-1 (by conductor, depth 1; born with {born})"),
    )?;
    step(
        out,
        "state worker-1",
        &describe_state(&ledger.state("worker-1")?),
    )?;

    section(
        out,
        "the conductor reads a secret; worker-2 has not been read yet",
    )?;
    let r = ledger.raise("conductor", secret, op)?;
    step(
        out,
        "raise conductor --taint secret",
        &format!(
            "conductor: {} -> {}",
            label_words(r.before),
            label_words(r.after)
        ),
    )?;
    step(
        out,
        "state worker-2   # first read: inherits from the conductor",
        &describe_state(&ledger.state("worker-2")?),
    )?;
    step(
        out,
        "state worker-1   # materialized before the raise: unchanged",
        &describe_state(&ledger.state("worker-1")?),
    )?;

    section(
        out,
        "worker-2 spawns a sub-agent the ledger never saw being made",
    )?;
    step(
        out,
        "state sub-worker-2-1",
        &describe_state(&ledger.state("sub-worker-2-1")?),
    )?;
    step(
        out,
        "decide sub-worker-2-1 -- make deploy",
        &describe_decision(&ledger.decide("sub-worker-2-1", "make deploy", false)?),
    )?;

    section(
        out,
        "a tainted branch: worker-1 reads untrusted web content and dispatches",
    )?;
    ledger.raise("worker-1", untrusted, op)?;
    ledger.create_child("worker-1a", "worker-1", op)?;
    step(
        out,
        "state worker-1a",
        &describe_state(&ledger.state("worker-1a")?),
    )?;
    step(
        out,
        "state sub-sub-worker-1a-1-1   # nested spawn, missing middle",
        &describe_state(&ledger.state("sub-sub-worker-1a-1-1")?),
    )?;

    section(
        out,
        "a grant judged for one session does not follow a delegation",
    )?;
    ledger.create_root("reviewer", op)?;
    ledger.add_pattern("reviewer", "npm test", op)?;
    ledger.create_child("helper", "reviewer", op)?;
    step(
        out,
        "pattern add reviewer 'npm test'",
        "reviewer: pattern \"npm test\" added",
    )?;
    step(
        out,
        "create helper --by reviewer",
        "created helper (by reviewer, depth 1; born with no posture)",
    )?;
    let decide = |id| {
        ledger
            .decide(id, "npm test", false)
            .map(|d| describe_decision(&d))
    };
    step(out, "decide reviewer -- npm test", &decide("reviewer")?)?;
    step(out, "decide helper -- npm test", &decide("helper")?)?;

    section(
        out,
        "the operator revokes the conductor's trust across its whole tree",
    )?;
    let preview = ledger.revoke("conductor", Propagation::Preview, op)?;
    step(out, "revoke conductor --preview", "")?;
    print_revocation(out, false, &preview)?;
    let applied = ledger.revoke(
        "conductor",
        Propagation::Cascade {
            token: preview.token.clone(),
        },
        op,
    )?;
    step(out, "revoke conductor --cascade --token ...", "")?;
    print_revocation(out, false, &applied)?;
    step(
        out,
        "decide sub-worker-2-1 -- make deploy",
        &describe_decision(&ledger.decide("sub-worker-2-1", "make deploy", false)?),
    )?;

    section(
        out,
        "worker-2 ends; it stays as a tombstone and cannot dispatch",
    )?;
    ledger.end("worker-2", op)?;
    let refused = match ledger.create_child("worker-2b", "worker-2", op) {
        Err(e) => format!("refused: {e}"),
        Ok(_) => "unexpected: an ended session created a child".to_owned(),
    };
    step(out, "create worker-2b --by worker-2", &refused)?;

    section(out, "the tree")?;
    print_tree(out, false, &ledger.forest()?)?;
    section(out, "the audit trail")?;
    print_audit(out, false, &ledger.audit(&AuditQuery::all())?)?;
    let v = ledger.verify(None)?;
    let verdict = if v.ok {
        format!("OK: {} rows verify; head {}", v.rows, v.head)
    } else {
        format!("FAILED at row {:?}", v.first_bad_seq)
    };
    step(
        out,
        "verify   # the hash chain, as docs/audit.md explains",
        &verdict,
    )?;
    writeln!(
        out,
        "\nlook inside: sqlite3 -readonly {} 'SELECT * FROM session_tree'",
        path.display()
    )?;
    Ok(())
}

fn section(out: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(out, "\n## {title}")
}

fn step(out: &mut dyn Write, command: &str, output: &str) -> io::Result<()> {
    writeln!(out, "$ session-ledger {command}")?;
    if !output.is_empty() {
        writeln!(out, "{output}")?;
    }
    Ok(())
}
