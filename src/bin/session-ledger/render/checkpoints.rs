//! The text of checkpoints: the list of those the ledger signed, and a verification against
//! one, a line per check in the manner of an audit tool (what, where, and valid or INVALID with
//! why), then a summary line; and a receipt checked offline, in the same manner.

use std::io::Write;

use session_ledger::{CheckpointVerification, ReceiptCheck, RecordedCheckpoint};

use super::text::{count, finding_lines};
use crate::error::CliError;

/// `checkpoint list`'s text: one line per checkpoint.
pub fn print_list(out: &mut dyn Write, list: &[RecordedCheckpoint]) -> Result<(), CliError> {
    for c in list {
        writeln!(
            out,
            "{:>5}  {}  size {:<8}  {}  {}  {}",
            c.seq,
            session_ledger::format_ts(c.signed_at),
            c.size,
            c.root,
            c.origin,
            c.key
        )?;
    }
    Ok(())
}

/// `verify --checkpoint`'s text.
pub fn describe(v: &CheckpointVerification, saved: Option<&str>) -> String {
    let mut lines = finding_lines(&v.findings);
    for skipped in &v.not_checked {
        lines.push(format!("{:<12} {:<40} not checked: {skipped}", "fast", ""));
    }
    let against = v.checkpoint.as_ref().map_or_else(
        || "the checkpoint".to_owned(),
        |c| format!("checkpoint {} at size {}", c.origin, c.size),
    );
    let failed = v.findings.iter().filter(|f| !f.valid).count();
    let checks = count(v.findings.len(), "check", "checks");
    lines.push(if v.ok {
        format!(
            "OK: {checks} valid against {against}; the trail has {} rows, head {}{}",
            v.head.seq,
            v.head,
            saved.map_or(String::new(), |s| format!("; state saved to {s}"))
        )
    } else {
        format!(
            "FAILED: {failed} of {checks} INVALID against {against}; the trail has {} rows",
            v.head.seq
        )
    });
    lines.join("\n")
}

/// `audit verify-receipt`'s text: a line per check (valid, INVALID with why, or not checked
/// after a failed one), then a summary.
pub fn describe_receipt(c: &ReceiptCheck, failed: Option<ReceiptStep>) -> String {
    let seq = c.seq;
    let against = c.checkpoint.as_ref().map_or_else(
        || "the checkpoint".to_owned(),
        |cp| format!("checkpoint {} at size {}", cp.origin, cp.size),
    );
    let why = c.why.as_deref().unwrap_or("unknown");
    let mut lines = Vec::new();
    for step in ReceiptStep::ALL {
        let (place, valid) = match step {
            ReceiptStep::Signature => (against.clone(), "signed by the verifier key's signer"),
            ReceiptStep::Row => (
                format!("row {seq}"),
                "the receipt's row, and its hash matches its fields",
            ),
            ReceiptStep::Inclusion => (
                match &c.checkpoint {
                    Some(cp) => format!("row {seq} of {}", cp.size),
                    None => format!("row {seq}"),
                },
                "the proof puts the row under the checkpoint's root",
            ),
        };
        let status = match failed {
            Some(f) if f == step => format!("INVALID: {why}"),
            Some(f) if f < step => "not checked".to_owned(),
            _ => format!("valid: {valid}"),
        };
        lines.push(format!("{:<12} {:<40} {status}", step.as_str(), place));
    }
    lines.push(match failed {
        None => format!(
            "OK: {} valid: row {seq} is in {against}",
            count(ReceiptStep::ALL.len(), "check", "checks")
        ),
        Some(f) => format!(
            "FAILED: the {} check is INVALID: row {seq} is not proved to be in {against}",
            f.as_str()
        ),
    });
    lines.join("\n")
}

/// The checks of a receipt, in the order they are made (and ordered so); a check after a
/// failed one is not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReceiptStep {
    /// The checkpoint is signed by the verifier key.
    Signature,
    /// The row is the receipt's row, and its own hash matches its fields.
    Row,
    /// The proof puts the row's leaf at its index under the checkpoint's root.
    Inclusion,
}

impl ReceiptStep {
    /// Every check, in order.
    pub const ALL: [ReceiptStep; 3] = [
        ReceiptStep::Signature,
        ReceiptStep::Row,
        ReceiptStep::Inclusion,
    ];

    /// The check's name, first on its report line.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptStep::Signature => "signature",
            ReceiptStep::Row => "row",
            ReceiptStep::Inclusion => "inclusion",
        }
    }
}
