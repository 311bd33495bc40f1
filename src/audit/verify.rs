//! Verifying the trail against a checkpoint an auditor holds (rule A4), reported as an audit
//! tool reports: one finding per check, each with what was checked, where, and why it failed,
//! then whether all passed.
//!
//! The checks, in order: the checkpoint's signature by the auditor's verifier key; against a
//! checkpoint verified before (the auditor's saved state), that this one is not smaller, not a
//! fork of the same size, and provably an extension of it; that the trail still has the rows
//! the checkpoint covers; a consistency proof from the checkpoint to the tree of the whole
//! trail now; and the SHA3 chain of the rows. By default every leaf is recomputed from its row
//! and the stored tree compared with them, so a trail rewritten under an unchanged stored tree
//! is caught too; `fast` reads only the rows after the checkpoint and says what it left out.

use serde::Serialize;

use super::chain;
use super::checkpoint::{Checkpoint, NoteProblem, SignedCheckpoint, VerifierKey};
use super::merkle::{consistency_proof, verify_consistency};
use super::tree::{self, leaf_of, rows, View};
use crate::error::Result;
use crate::model::AuditHead;
use crate::storage::Read;

/// How [`Ledger::verify_checkpoint`](crate::Ledger::verify_checkpoint) checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointOptions {
    /// Read only the rows after the checkpoint, trusting the stored tree below it; the report
    /// says what that leaves unchecked.
    pub fast: bool,
    /// The checkpoint verified last time (an auditor's saved state, as its note): the new one
    /// must not be smaller, must not fork from it, and must be provably its extension.
    pub previous: Option<String>,
}

/// One check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was checked: `signature`, `previous`, `size`, `consistency`, `rows`, `tree`,
    /// `chain`.
    pub check: String,
    /// Where: the rows, the row or the tree node it concerns.
    pub place: String,
    /// True when it passed.
    pub valid: bool,
    /// A stable word for the failure (`bad_signature`, `not_signed_by_key`, `smaller`, `fork`,
    /// `inconsistent`, `truncated`, `rewritten`, `leaf_mismatch`, `tree_mismatch`, and the
    /// chain's own words), `None` when it passed.
    pub problem: Option<String>,
    /// Why, in words.
    pub why: String,
}

/// What verifying against a checkpoint found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointVerification {
    /// True when every finding is valid.
    pub ok: bool,
    /// The checkpoint, when its signature verified.
    pub checkpoint: Option<Checkpoint>,
    /// The trail's head as found.
    pub head: AuditHead,
    /// Whether the rows up to the checkpoint were left unread.
    pub fast: bool,
    /// One per check, in the order they ran.
    pub findings: Vec<Finding>,
    /// What this run did not check, in words (empty for a full run).
    pub not_checked: Vec<String>,
}

/// A finding of `check` at `place`: passed when `problem` is `None`.
pub(crate) fn finding(check: &str, place: String, problem: Option<&str>, why: String) -> Finding {
    Finding {
        check: check.to_owned(),
        place,
        valid: problem.is_none(),
        problem: problem.map(str::to_owned),
        why,
    }
}

/// A check of what the rows after `after`, up to `to`, commit to beyond themselves, run once
/// the trail's own checks have run: the decision records' batches.
pub(crate) type Beyond<'a> = &'a mut dyn FnMut(&mut dyn Read, i64, i64) -> Result<Finding>;

/// The checks of the module's documentation, in one snapshot of the ledger, then `beyond`.
pub(crate) fn verify_checkpoint(
    r: &mut dyn Read,
    note: &str,
    key: &VerifierKey,
    options: &CheckpointOptions,
    beyond: Beyond<'_>,
) -> Result<CheckpointVerification> {
    let head = r.audit_head()?;
    let mut out = CheckpointVerification {
        ok: false,
        checkpoint: None,
        head: head.clone(),
        fast: options.fast,
        findings: Vec::new(),
        not_checked: Vec::new(),
    };
    let signed = match SignedCheckpoint::open(note, key) {
        Ok(signed) => signed,
        Err(problem) => {
            let word = match problem {
                NoteProblem::Malformed(_) => "malformed",
                NoteProblem::NotSignedByKey => "not_signed_by_key",
                NoteProblem::BadSignature => "bad_signature",
            };
            out.findings.push(finding(
                "signature",
                "the checkpoint".to_owned(),
                Some(word),
                format!("{problem} ({key})"),
            ));
            return Ok(out);
        }
    };
    let c = signed.checkpoint;
    out.findings.push(finding(
        "signature",
        format!("checkpoint {} at size {}", c.origin, c.size),
        None,
        format!("signed by {}+{}", key.name(), key.id()),
    ));
    out.checkpoint = Some(c.clone());
    let rows_now = u64::try_from(head.seq).unwrap_or(0);
    if let Some(previous) = &options.previous {
        if let Some(f) = against_previous(r, previous, key, &c, rows_now)? {
            let failed = !f.valid;
            out.findings.push(f);
            if failed {
                return Ok(out);
            }
        }
    }
    if c.size > rows_now {
        out.findings.push(finding(
            "size",
            format!("rows {} to {}", rows_now + 1, c.size),
            Some("truncated"),
            format!(
                "the trail has {rows_now} rows, fewer than the {} the checkpoint covers: rows \
                 were removed from its end",
                c.size
            ),
        ));
        return Ok(out);
    }
    let anchor = chain::anchor(r)?;
    let live_from = u64::try_from(anchor.seq).unwrap_or(0);
    if c.size < live_from {
        out.findings.push(finding(
            "rows",
            format!("rows 1 to {}", c.size),
            Some("archived"),
            format!(
                "the checkpoint covers {} rows, and rows 1 to {live_from} left with an archive: \
                 verify it against the archive that holds row {} (verify --archive)",
                c.size, c.size
            ),
        ));
        return Ok(out);
    }
    if options.fast {
        fast(r, &c, &head, &anchor, &mut out)?;
    } else {
        full(r, &c, &head, live_from, &mut out)?;
    }
    // What the trail's rows commit to beyond themselves (the decision records): a fast run
    // checks what was added after the checkpoint, a full run all the live trail holds.
    let after = if options.fast { c.size } else { live_from };
    out.findings.push(beyond(
        r,
        i64::try_from(after).unwrap_or(i64::MAX),
        head.seq,
    )?);
    out.ok = out.findings.iter().all(|f| f.valid);
    Ok(out)
}

/// The new checkpoint against the one verified before: same key, not smaller, not a fork, and
/// a consistency proof from it that the ledger can give.
fn against_previous(
    r: &mut dyn Read,
    previous: &str,
    key: &VerifierKey,
    c: &Checkpoint,
    rows_now: u64,
) -> Result<Option<Finding>> {
    let place = |p: &Checkpoint| format!("the saved checkpoint at size {}", p.size);
    let p = match SignedCheckpoint::open(previous, key) {
        Ok(p) => p.checkpoint,
        Err(problem) => {
            return Ok(Some(finding(
                "previous",
                "the saved checkpoint".to_owned(),
                Some("malformed"),
                format!("the saved checkpoint does not open with this key: {problem}"),
            )))
        }
    };
    let failed =
        |word: &str, why: String| Ok(Some(finding("previous", place(&p), Some(word), why)));
    if c.origin != p.origin {
        return failed(
            "fork",
            format!("it is of the log {:?}, not {:?}", p.origin, c.origin),
        );
    }
    if c.size < p.size {
        return failed(
            "smaller",
            format!(
                "the checkpoint (size {}) is older than the one verified last (size {})",
                c.size, p.size
            ),
        );
    }
    if c.size == p.size {
        if c.root != p.root {
            return failed(
                "fork",
                "two roots for one size: the log showed two histories".to_owned(),
            );
        }
        return Ok(Some(finding(
            "previous",
            place(&p),
            None,
            "the same checkpoint".to_owned(),
        )));
    }
    if c.size > rows_now {
        return failed(
            "inconsistent",
            format!(
                "the trail has {rows_now} rows: no proof that size {} extends size {}",
                c.size, p.size
            ),
        );
    }
    let mut view = View::at(r, c.size)?;
    let proof = consistency_proof(&mut view, p.size, c.size)?;
    if view.root() != c.root || !verify_consistency(p.size, c.size, &p.root, &c.root, &proof) {
        return failed(
            "inconsistent",
            format!(
                "the trail gives no consistency proof from size {} to size {}: one of them is \
                 not a prefix of the other (a fork, or a rewrite)",
                p.size, c.size
            ),
        );
    }
    Ok(Some(finding(
        "previous",
        place(&p),
        None,
        format!(
            "the checkpoint extends it (consistency proof from size {} to {})",
            p.size, c.size
        ),
    )))
}

/// A consistency finding: the proof from the checkpoint to the tree of the whole trail,
/// checked against the checkpoint's root and `root_now`.
fn consistency(
    view: &mut View<'_>,
    c: &Checkpoint,
    rows_now: u64,
    root_now: &[u8; 32],
) -> Result<Finding> {
    let proof = consistency_proof(view, c.size, rows_now)?;
    let place = format!("rows 1 to {rows_now}");
    Ok(
        if verify_consistency(c.size, rows_now, &c.root, root_now, &proof) {
            finding(
                "consistency",
                place,
                None,
                format!(
                    "the tree of {rows_now} rows extends the checkpoint's ({} hashes of proof)",
                    proof.len()
                ),
            )
        } else {
            finding(
                "consistency",
                place,
                Some("inconsistent"),
                format!(
                    "no consistency proof from the checkpoint (size {}) to the tree of the trail \
                 now: the rows it covers were rewritten, or the stored tree was",
                    c.size
                ),
            )
        },
    )
}

/// Every row read: the chain walked whole, the tree recomputed from the rows and compared with
/// the checkpoint's root and with every stored node, and the consistency proof from the stored
/// tree checked against the recomputed root.
fn full(
    r: &mut dyn Read,
    c: &Checkpoint,
    head: &AuditHead,
    live_from: u64,
    out: &mut CheckpointVerification,
) -> Result<()> {
    let rows_now = u64::try_from(head.seq).unwrap_or(0);
    let recomputed = tree::recompute(r, rows_now, &[c.size], 20)?;
    // With an archive, the rows from its boundary on, hashed onto its frontier.
    let first = live_from + 1;
    let rewritten = recomputed.roots.get(&c.size) != Some(&c.root);
    out.findings.push(if rewritten {
        finding(
            "rows",
            format!("rows {first} to {}", c.size),
            Some("rewritten"),
            format!(
                "the rows no longer hash to the checkpoint's root ({}): a row was changed, \
                 removed or inserted there since it was signed{}",
                c.root_base64(),
                recomputed
                    .first_changed_row
                    .map_or(String::new(), |s| format!(
                        " (the stored tree first differs at row {s})"
                    ))
            ),
        )
    } else {
        finding(
            "rows",
            format!("rows {first} to {}", c.size),
            None,
            "every row hashes to the checkpoint's root".to_owned(),
        )
    });
    for problem in &recomputed.problems {
        out.findings.push(finding(
            "tree",
            problem.split(':').next().unwrap_or("").to_owned(),
            Some(if problem.starts_with("row") {
                "leaf_mismatch"
            } else {
                "tree_mismatch"
            }),
            problem.clone(),
        ));
    }
    if recomputed.problems.is_empty() {
        out.findings.push(finding(
            "tree",
            format!("rows {first} to {rows_now}"),
            None,
            "every stored tree node matches the rows".to_owned(),
        ));
    }
    let mut view = View::at(r, rows_now)?;
    let root_now = recomputed.root;
    out.findings
        .push(consistency(&mut view, c, rows_now, &root_now)?);
    chain_finding(
        chain::verify(r, None)?,
        &format!("rows {first} to"),
        rows_now,
        out,
    );
    Ok(())
}

/// Only the rows after the checkpoint: the consistency proof from the stored tree (the rows
/// past its last leaf hashed in memory), those rows' leaves against the stored ones, and the
/// chain from the checkpoint's last row on.
fn fast(
    r: &mut dyn Read,
    c: &Checkpoint,
    head: &AuditHead,
    live_anchor: &AuditHead,
    out: &mut CheckpointVerification,
) -> Result<()> {
    let rows_now = u64::try_from(head.seq).unwrap_or(0);
    let stored_size = r.tree_size()?;
    let mut view = View::at(r, rows_now)?;
    let root_now = view.root();
    out.findings
        .push(consistency(&mut view, c, rows_now, &root_now)?);
    // The stored leaves of the rows from the checkpoint's last one on, against the rows.
    let mut mismatch = None;
    let from = c.size.max(1) as i64;
    let to = (stored_size.min(rows_now) + 1) as i64;
    let mut at = from;
    while at < to {
        let end = (at + tree::CHUNK).min(to);
        let chunk = rows(r, at, end)?;
        let coords: Vec<(u8, u64)> = chunk.iter().map(|row| (0, row.seq as u64 - 1)).collect();
        let held = r.tree_nodes(&coords)?;
        if let Some((row, _)) = chunk
            .iter()
            .zip(held)
            .find(|(row, h)| h.as_ref() != Some(&leaf_of(row)))
        {
            mismatch = Some(row.seq);
            break;
        }
        at = end;
    }
    out.findings.push(match mismatch {
        Some(seq) => finding(
            "tree",
            format!("row {seq}"),
            Some("leaf_mismatch"),
            format!("row {seq}: its stored leaf hash differs from the row's: the row changed after the tree was written"),
        ),
        None => finding(
            "tree",
            format!("rows {} to {rows_now}", c.size.max(1)),
            None,
            "the stored leaves of the rows since the checkpoint match them".to_owned(),
        ),
    });
    let anchor = if c.size as i64 == live_anchor.seq {
        // The genesis, or an archive's boundary, whose row left with it.
        live_anchor.clone()
    } else {
        let row = rows(r, c.size as i64, c.size as i64 + 1)?;
        AuditHead {
            seq: c.size as i64,
            hash: row.first().map_or_else(String::new, |row| row.hash.clone()),
        }
    };
    chain_finding(
        chain::verify_from(r, &anchor)?,
        &format!("rows {} to", c.size.max(1)),
        rows_now,
        out,
    );
    if c.size > 0 {
        out.not_checked.push(format!(
            "rows 1 to {} were not read: the stored tree below the checkpoint was trusted, so a \
             row changed there under an unchanged stored tree is not found (run without --fast)",
            c.size.saturating_sub(1)
        ));
    }
    Ok(())
}

fn chain_finding(
    v: chain::Verification,
    place: &str,
    rows_now: u64,
    out: &mut CheckpointVerification,
) {
    out.findings.push(match (&v.problem, v.first_bad_seq) {
        (Some(problem), Some(seq)) => finding(
            "chain",
            format!("row {seq}"),
            Some(
                serde_json::to_value(problem)
                    .ok()
                    .and_then(|w| w.as_str().map(str::to_owned))
                    .unwrap_or_default()
                    .as_str(),
            ),
            format!("row {seq}: {problem}"),
        ),
        _ => finding(
            "chain",
            format!("{place} {rows_now}"),
            None,
            format!(
                "{} rows verify; head {}:{}",
                v.rows, v.head.seq, v.head.hash
            ),
        ),
    });
}
