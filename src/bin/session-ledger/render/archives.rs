//! The text of archives: what an `archive` run moved, and `verify --archive`'s checks.

use std::path::Path;

use session_ledger::{ArchiveRun, ArchiveVerification, ArchivedSession};

use super::text::{count, finding_lines};

/// `archive`'s text: the archive made (or that there was nothing to take), and the earlier
/// archive whose move this run finished, if any.
pub fn describe(run: &ArchiveRun, to: &Path) -> String {
    let mut lines = Vec::new();
    for archive in &run.finished {
        lines.push(format!(
            "finished moving archive {archive} out of the live ledger (a run before stopped half way)"
        ));
    }
    match &run.made {
        None => lines.push(format!(
            "nothing to archive: no tree ended before the cut-off and no checkpoint was signed \
             before it past the last boundary; nothing was written to {}",
            to.display()
        )),
        Some(a) => {
            let trail = if a.trail_size > a.trail_from {
                format!("audit rows {} to {}", a.trail_from + 1, a.trail_size)
            } else {
                "no audit row".to_owned()
            };
            lines.push(format!(
                "archive {} written to {} (SHA-256 {}), verified, and moved out of the live \
                 ledger: {}, {}, {trail}, {}",
                a.archive,
                a.file.display(),
                a.sha256,
                count(a.trees as usize, "tree", "trees"),
                count(a.sessions as usize, "session", "sessions"),
                count(
                    a.decision_records as usize,
                    "decision record",
                    "decision records"
                ),
            ));
            if !a.stayed_live.is_empty() {
                lines.push(format!(
                    "stayed live, changed since the file was written: {}",
                    a.stayed_live.join(", ")
                ));
            }
        }
    }
    lines.push(format!(
        "the longest of its write transactions held the write lock {:.1} ms",
        run.longest_batch_us as f64 / 1e3
    ));
    lines.join("\n")
}

/// `verify --archive`'s text: a line per check, then a summary.
pub fn describe_verification(v: &ArchiveVerification) -> String {
    let mut lines = finding_lines(&v.findings);
    let what = format!(
        "archive {} ({}): audit rows {} to {}, {}, {}",
        v.archive,
        v.file.display(),
        v.trail_from + 1,
        v.trail_size,
        count(v.trees as usize, "tree", "trees"),
        count(v.sessions as usize, "session", "sessions"),
    );
    let checks = count(v.findings.len(), "check", "checks");
    let failed = v.findings.iter().filter(|f| !f.valid).count();
    lines.push(if v.ok {
        format!("OK: {checks} valid for {what}")
    } else {
        format!("FAILED: {failed} of {checks} INVALID for {what}")
    });
    lines.join("\n")
}

/// Where an archived session went, for a note beside a listing that names it.
pub fn describe_archived(a: &ArchivedSession) -> String {
    format!(
        "{} was archived on {} in {} (archive {}, the tree of {}): its rows before the \
         archive's boundary are in that file",
        a.id,
        session_ledger::format_ts(a.archived_at),
        a.file,
        a.archive,
        a.tree
    )
}
