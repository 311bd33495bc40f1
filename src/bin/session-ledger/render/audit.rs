//! The text of the audit trail: its rows, a verification of its chain, a check of the file, and
//! an explanation of why a session holds what it holds, which ends with the session's rows and
//! its latest recorded decisions.

use std::io::Write;

use session_ledger::{
    AuditEntry, Backup, CheckReport, Explanation, Materialized, Restored, Verification, Withheld,
};

use super::authority::{approves_words, posture_words, withheld_words};
use super::decisions::print_decisions;
use super::sessions::label_words;
use super::text::{count, widest};
use crate::error::CliError;

/// The names `audit`'s text gives its columns, in order: the fields of a row in `--json audit`.
const COLUMNS: [&str; 6] = ["SEQ", "AT", "ACTOR", "KIND", "SESSION", "DETAIL"];

/// `audit`'s text: a header naming the columns, then one line per row, each column as wide as
/// its widest value or its name, so that long ids, actors and kinds keep the columns in line.
/// The header is there with no row too, so that a script can always skip exactly one line.
pub fn print_audit(out: &mut dyn Write, rows: &[AuditEntry]) -> Result<(), CliError> {
    fn session(r: &AuditEntry) -> &str {
        r.session.as_deref().unwrap_or("-")
    }
    let [seq, at, actor, kind, session_name, detail] = COLUMNS;
    let width = |name: &str, len: &dyn Fn(&AuditEntry) -> usize| widest(rows, len).max(name.len());
    let seq_w = width(seq, &|r| r.seq.to_string().len());
    let at_w = width(at, &|r| session_ledger::format_ts(r.at).len());
    let actor_w = width(actor, &|r| r.actor.len());
    let kind_w = width(kind, &|r| r.kind.as_str().len());
    let session_w = width(session_name, &|r| session(r).len());
    writeln!(
        out,
        "{seq:>seq_w$}  {at:<at_w$}  {actor:<actor_w$}  {kind:<kind_w$}  \
         {session_name:<session_w$}  {detail}"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:>seq_w$}  {:<at_w$}  {:<actor_w$}  {:<kind_w$}  {:<session_w$}  {}",
            r.seq,
            session_ledger::format_ts(r.at),
            r.actor,
            r.kind.as_str(),
            session(r),
            r.detail
        )?;
    }
    Ok(())
}

/// `verify`'s text: how many rows verify and the head, or the first row that does not and why.
/// `from` is the saved head's row `verify --from` started after.
pub fn describe_verification(v: &Verification, from: Option<i64>) -> String {
    if v.ok {
        return match from {
            Some(from) => format!(
                "OK: {} rows verify from row {from}; head {}",
                v.rows, v.head
            ),
            None => format!("OK: {} rows verify; head {}", v.rows, v.head),
        };
    }
    let seq = v.first_bad_seq.unwrap_or(0);
    let why = v
        .problem
        .as_ref()
        .map_or("unknown".to_owned(), ToString::to_string);
    format!(
        "FAILED at row {seq}: {why} ({} rows read; head {})",
        v.rows, v.head
    )
}

/// `check`'s text: one line when all is well, else one line per problem and a count.
pub fn describe_check(report: &CheckReport) -> String {
    if report.ok {
        return "OK: integrity ok; every reference resolves".to_owned();
    }
    let mut lines = Vec::new();
    let mut problems = 0;
    for line in report.integrity.iter().filter(|l| *l != "ok") {
        lines.push(format!("integrity: {line}"));
        problems += 1;
    }
    for line in &report.tree {
        lines.push(format!("audit tree: {line}"));
        problems += 1;
    }
    for b in &report.broken_references {
        let missing: Vec<String> = b.missing.iter().map(|m| format!("{m:?}")).collect();
        let values = if missing.is_empty() {
            String::new()
        } else {
            format!(": {}", missing.join(", "))
        };
        lines.push(format!(
            "broken reference: {} of {} {} a {} that no {} row holds{values}",
            count(usize::try_from(b.rows).unwrap_or(usize::MAX), "row", "rows"),
            b.table,
            if b.rows == 1 { "has" } else { "have" },
            b.columns,
            b.references,
        ));
        problems += 1;
    }
    lines.push(format!(
        "FAILED: {}",
        count(problems, "problem", "problems")
    ));
    lines.join("\n")
}

/// `explain`'s text: the session, its label's provenance, its posture and the grant it came
/// from, its patterns and live scopes, its audit rows, and its latest recorded decisions.
pub fn print_explanation(out: &mut dyn Write, e: &Explanation) -> Result<(), CliError> {
    let s = &e.session;
    let origin = match &s.created_by {
        Some(by) => format!("{} by {by}, depth {}", s.origin.as_str(), s.depth),
        None => "root".to_owned(),
    };
    let ended = s.ended_at.map_or(String::new(), |t| {
        format!(", ended {}", session_ledger::format_ts(t))
    });
    writeln!(
        out,
        "{} ({origin}; recorded {}{ended})",
        s.id,
        session_ledger::format_ts(s.created_at)
    )?;
    let label = match &e.state.materialized {
        Some(Materialized::Born) => {
            format!("{} (born with the default)", label_words(e.state.label()))
        }
        Some(Materialized::Inherited { from }) => {
            format!("{} (inherited from {from})", label_words(e.state.label()))
        }
        Some(Materialized::Unrecorded { from }) => format!(
            "{} (inherited from {from}; not recorded: the ledger is open read-only)",
            label_words(e.state.label())
        ),
        None => "not materialized yet: its first read inherits its nearest materialized ancestor's"
            .to_owned(),
    };
    let raised = e.state.raised_at.map_or(String::new(), |t| {
        format!(", last raised {}", session_ledger::format_ts(t))
    });
    writeln!(out, "  label:    {label}{raised}")?;
    match &e.state.posture {
        Some(p) => {
            let counts = if e.state.trust || e.state.trust_reads {
                "counts now"
            } else {
                "does not count now"
            };
            writeln!(out, "  posture:  {} ({counts})", posture_words(p))?;
            if let Some(g) = &e.grant {
                writeln!(
                    out,
                    "  granted:  audit row {} at {} by {}",
                    g.seq,
                    session_ledger::format_ts(g.at),
                    g.actor
                )?;
            }
        }
        None => writeln!(out, "  posture:  none")?,
    }
    for p in &e.patterns {
        let refused = p.refused.as_ref().map_or(String::new(), |why| {
            format!("; REFUSED by this version, admits nothing: {why}")
        });
        writeln!(
            out,
            "  pattern:  {:?} (added by {}){refused}",
            p.pattern, p.added_by
        )?;
    }
    for sc in &e.live_scopes {
        writeln!(
            out,
            "  scope:    {} (granted by {}, until {})",
            sc.name,
            sc.granted_by,
            session_ledger::format_ts(sc.expires_at)
        )?;
    }
    // A refused pattern is marked on its own line above.
    let withheld = e.authority.withheld.iter();
    for w in withheld.filter(|w| !matches!(w, Withheld::RefusedPattern { .. })) {
        writeln!(out, "  withheld: {}", withheld_words(w))?;
    }
    writeln!(out, "  approves: {}", approves_words(&e.authority))?;
    writeln!(out, "  audit rows:")?;
    print_audit(out, &e.audit)?;
    if e.decisions.is_empty() {
        writeln!(out, "  decisions: none recorded")?;
    } else {
        writeln!(out, "  latest decisions, newest first:")?;
        print_decisions(out, &e.decisions)?;
    }
    Ok(())
}

/// `backup`'s text: where the copy went, the moment it holds, and how its checks went; or that
/// nothing was written, and which check the copy failed.
pub fn describe_backup(backup: &Backup) -> String {
    let checks = format!(
        "{}; {}",
        describe_trail(&backup.verification, backup.head.seq),
        describe_check(&backup.check)
    );
    if backup.ok {
        format!(
            "backed up to {} at audit row {}: {checks}",
            backup.to.display(),
            backup.head.seq
        )
    } else {
        format!(
            "NOT backed up: the copy at audit row {} did not pass its checks, and nothing was \
             written to {}: {checks}",
            backup.head.seq,
            backup.to.display()
        )
    }
}

/// `restore`'s text: what was restored where, or that nothing was, and which check the backup
/// failed.
pub fn describe_restore(restored: &Restored) -> String {
    let mut checks = format!(
        "{}; {}",
        describe_trail(&restored.verification, restored.head.seq),
        describe_check(&restored.check)
    );
    if let Some(c) = &restored.checkpoint {
        checks.push_str(if c.ok {
            "; it extends the checkpoint given"
        } else {
            "; it does NOT verify against the checkpoint given (run verify --checkpoint on it)"
        });
    }
    if restored.ok {
        format!(
            "restored {} to {} at audit row {}: {checks}",
            restored.from.display(),
            restored.to.display(),
            restored.head.seq
        )
    } else {
        format!(
            "NOT restored: the backup {} did not pass its checks, and nothing was written to \
             {}: {checks}",
            restored.from.display(),
            restored.to.display()
        )
    }
}

/// Whether a copy's trail verified, in words.
fn describe_trail(verification: &Verification, rows: i64) -> String {
    if verification.ok {
        format!("its trail verifies ({rows} rows)")
    } else {
        "its trail does NOT verify (run verify on it)".to_owned()
    }
}
