//! Every line the command line prints: what a command produced ([`Report`]) as text or as JSON,
//! the note beside it on stderr, and an error. The text of sessions and labels, of authority
//! (postures, decisions, revocations, patterns), of the audit trail and of decision records
//! lives in the submodules.

mod archives;
mod audit;
mod authority;
mod checkpoints;
mod decisions;
mod sessions;
mod text;

pub use checkpoints::ReceiptStep;
use text::{count, json_line};

use std::io::Write;

use serde_json::json;
use session_ledger::{
    ArchiveRun, ArchiveVerification, ArchivedSession, AuditEntry, AuditHead, Authority, Backup,
    CheckReport, CheckpointVerification, Classification, CommandPattern, Copied, Created, Decision,
    DecisionReceiptCheck, DecisionRecord, Ended, EpochStart, Explanation, Integrated, PatternAdded,
    PatternReview, PatternTest, Posture, RaiseOutcome, ReceiptCheck, Recorded, RecordedCheckpoint,
    Restored, Revocation, Scope, SessionState, SignedCheckpoint, TreeNode, Verification,
};

use crate::error::CliError;

use sessions::describe_state;

/// What a command produced, for [`report`] to print: the library's answer, and the arguments
/// the text repeats.
#[derive(Debug)]
pub enum Report {
    /// `copy`: where from and to, what it moved, and the copy's trail verified once committed.
    Copied {
        from: String,
        to: String,
        copied: Copied,
        verification: Verification,
    },
    /// `init`: the file, and the schema it is at.
    Ready {
        location: String,
        schema_version: i64,
    },
    /// `create`.
    Created(Created),
    /// `state`.
    State(SessionState),
    /// `raise`.
    Raised(RaiseOutcome),
    /// `end`.
    Ended(Ended),
    /// `tree`.
    Tree(Vec<TreeNode>),
    /// `audit head`.
    Head(AuditHead),
    /// `audit`: one page of rows, the `--before` of the next page when there is one, and
    /// where the session named went when it was archived.
    Audit {
        rows: Vec<AuditEntry>,
        next_before: Option<i64>,
        archived: Option<ArchivedSession>,
    },
    /// `verify`, from the saved head's row `from` when given.
    Verified {
        verification: Verification,
        from: Option<i64>,
    },
    /// `explain`.
    Explained(Box<Explanation>),
    /// `authority`.
    Authority(Authority),
    /// `check`.
    Checked(CheckReport),
    /// `backup`.
    BackedUp(Backup),
    /// `restore`.
    Restored(Restored),
    /// `trust`.
    Granted { id: String, posture: Posture },
    /// `revoke` and `revoke-all`.
    Revoked(Revocation),
    /// `pattern test`.
    PatternTested(PatternTest),
    /// `pattern add`: whether it was added (false when the session already had it), and its
    /// warnings.
    PatternAdded {
        id: String,
        pattern: String,
        added: PatternAdded,
    },
    /// `pattern test-tool`.
    ToolRuleTested {
        rule: String,
        tool: String,
        admitted: bool,
    },
    /// `pattern review`.
    PatternReviews(Vec<PatternReview>),
    /// `classify`.
    Classified(Classification),
    /// `pattern remove`.
    PatternRemoved { id: String, pattern: String },
    /// `pattern list`.
    Patterns(Vec<CommandPattern>),
    /// `scope grant`.
    ScopeGranted {
        id: String,
        name: String,
        scope: Scope,
    },
    /// `scope revoke`.
    ScopeRevoked { id: String, name: String },
    /// `scope list`.
    Scopes(Vec<Scope>),
    /// `decide`.
    Decided(Decision),
    /// `decide --record`: the decision and its record's id.
    Recorded(Recorded),
    /// `decisions`: one page of records, newest first, and the `--before` of the next page
    /// when there is one.
    Decisions {
        records: Vec<DecisionRecord>,
        next_before: Option<i64>,
    },
    /// `decisions show`.
    DecisionRecord(Box<DecisionRecord>),
    /// `decisions integrate`.
    DecisionsIntegrated(Integrated),
    /// `decisions prove`: the receipt's text.
    DecisionReceipt { record: String, text: String },
    /// `decisions verify-receipt`.
    DecisionReceiptChecked(DecisionReceiptCheck),
    /// `epoch start`.
    EpochStarted(EpochStart),
    /// `audit prove --consistency`: the tlog-witness body, the two roots, and whether the
    /// ledger signed a checkpoint of the larger size (its note then ends the body).
    ConsistencyProof {
        from: u64,
        to: u64,
        old_root: String,
        new_root: String,
        text: String,
        signed: bool,
    },
    /// `epoch show`: the current epoch.
    Epoch(i64),
    /// `option`: each option shown, and whether it is on.
    Options(Vec<(String, bool)>),
    /// `option NAME on|off`: what it is now, and whether it was on.
    OptionSet { option: String, on: bool, was: bool },
    /// `checkpoint keygen`: where the key went, and its verifier key.
    KeyGenerated { path: String, verifier: String },
    /// `checkpoint sign`.
    CheckpointSigned(SignedCheckpoint),
    /// `checkpoint list`.
    Checkpoints(Vec<RecordedCheckpoint>),
    /// `verify --checkpoint`, and the state file it moved on, if it did.
    CheckpointVerified {
        verification: CheckpointVerification,
        saved: Option<String>,
    },
    /// `audit prove`: the receipt's text.
    Receipt { seq: i64, text: String },
    /// `audit verify-receipt`: the library's check, and which of its checks failed, if one did.
    ReceiptChecked {
        check: ReceiptCheck,
        failed: Option<ReceiptStep>,
    },
    /// `audit export`, which printed as it went.
    Exported,
    /// `archive`: what the run did, and the file it was asked to write.
    Archived {
        run: ArchiveRun,
        to: std::path::PathBuf,
    },
    /// `verify --archive`.
    ArchiveVerified(ArchiveVerification),
}

/// How a command prints its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text for a reader.
    Text,
    /// One JSON value; a listing (tree, audit, patterns, scopes) as one array, `[]` when empty.
    Json,
    /// JSON with a listing as one object a line (nothing when empty); anything else as [`Json`].
    ///
    /// [`Json`]: Format::Json
    JsonLines,
}

impl Format {
    /// The format `--json` and `--json-lines` ask for.
    pub fn from_flags(json: bool, json_lines: bool) -> Format {
        match (json, json_lines) {
            (_, true) => Format::JsonLines,
            (true, false) => Format::Json,
            (false, false) => Format::Text,
        }
    }

    /// True for either JSON format.
    pub fn is_json(self) -> bool {
        self != Format::Text
    }
}

/// Prints `report` on `out` in `format`.
///
/// # Errors
///
/// A failed write, or a value that does not encode as JSON.
pub fn report(out: &mut dyn Write, format: Format, report: &Report) -> Result<(), CliError> {
    let json = format.is_json();
    match report {
        Report::Ready {
            location,
            schema_version,
        } => emit(
            out,
            json,
            &json!({ "path": location, "schema_version": schema_version }),
            || format!("ledger ready at {location} (schema version {schema_version})"),
        ),
        Report::Created(created) => sessions::print_created(out, json, created),
        Report::State(state) => emit(out, json, state, || describe_state(state)),
        Report::Raised(outcome) => emit(out, json, outcome, || outcome.to_string()),
        Report::Ended(ended) => sessions::print_ended(out, json, ended),
        Report::Tree(nodes) => listing(out, format, nodes, |out| sessions::print_tree(out, nodes)),
        Report::Head(head) => emit(out, json, head, || head.to_string()),
        Report::Copied {
            from,
            to,
            copied,
            verification,
        } => emit(
            out,
            json,
            &json!({ "from": from, "to": to, "copied": copied, "verification": verification }),
            || describe_copy(from, to, copied, verification),
        ),
        Report::Audit { rows, .. } => {
            listing(out, format, rows, |out| audit::print_audit(out, rows))
        }
        Report::Verified { verification, from } => emit(out, json, verification, || {
            audit::describe_verification(verification, *from)
        }),
        Report::Explained(e) if json => json_line(out, e),
        Report::Explained(e) => audit::print_explanation(out, e),
        Report::Authority(a) if json => json_line(out, a),
        Report::Authority(a) => authority::print_authority(out, a),
        Report::Checked(check) => emit(out, json, check, || audit::describe_check(check)),
        Report::BackedUp(backup) => emit(out, json, backup, || audit::describe_backup(backup)),
        Report::Archived { run, to } => emit(out, json, run, || archives::describe(run, to)),
        Report::ArchiveVerified(v) => emit(out, json, v, || archives::describe_verification(v)),
        Report::Restored(restored) => {
            emit(out, json, restored, || audit::describe_restore(restored))
        }
        Report::Granted { id, posture } => emit(out, json, posture, || {
            format!(
                "{id}: {} granted by {} (epoch {})",
                posture.level, posture.granted_by, posture.epoch
            )
        }),
        Report::Revoked(r) => authority::print_revocation(out, json, r),
        Report::PatternTested(test) => emit(out, json, test, || authority::describe_test(test)),
        Report::PatternAdded { id, pattern, added } => emit(
            out,
            json,
            &json!({
                "session": id,
                "pattern": pattern,
                "added": added.added,
                "warnings": added.warnings,
            }),
            || {
                let mut text = if added.added {
                    format!("{id}: pattern {pattern:?} added")
                } else {
                    format!("{id}: already had pattern {pattern:?}; nothing changed")
                };
                for warning in &added.warnings {
                    text.push_str(&format!("\n  warning: {warning}"));
                }
                text
            },
        ),
        Report::PatternReviews(reviews) => listing(out, format, reviews, |out| {
            if reviews.is_empty() {
                writeln!(
                    out,
                    "no stored pattern of a live session admits less than before"
                )?;
            }
            for r in reviews {
                writeln!(
                    out,
                    "{}: pattern {:?} (added by {}): {}",
                    r.session, r.pattern, r.added_by, r.reason
                )?;
            }
            Ok(())
        }),
        Report::ToolRuleTested {
            rule,
            tool,
            admitted,
        } => emit(
            out,
            json,
            &json!({ "rule": rule, "tool": tool, "admitted": admitted }),
            || {
                let verb = if *admitted {
                    "admits"
                } else {
                    "does not admit"
                };
                format!("tool rule {rule:?} {verb} this {tool} call")
            },
        ),
        Report::Classified(c) => emit(out, json, c, || authority::describe_classification(c)),
        Report::PatternRemoved { id, pattern } => emit(
            out,
            json,
            &json!({ "session": id, "pattern": pattern, "removed": true }),
            || format!("{id}: pattern {pattern:?} removed"),
        ),
        Report::Patterns(patterns) => listing(out, format, patterns, |out| {
            patterns
                .iter()
                .try_for_each(|p| Ok(writeln!(out, "{}", authority::describe_pattern(p))?))
        }),
        Report::ScopeGranted { id, name, scope } => emit(out, json, scope, || {
            format!(
                "{id}: scope {name} granted: every command of {id} is approved until {} \
                 (a scope limits no command; a pattern does)",
                session_ledger::format_ts(scope.expires_at)
            )
        }),
        Report::ScopeRevoked { id, name } => emit(
            out,
            json,
            &json!({ "session": id, "scope": name, "revoked": true }),
            || format!("{id}: scope {name} revoked"),
        ),
        Report::Scopes(scopes) => listing(out, format, scopes, |out| {
            scopes
                .iter()
                .try_for_each(|s| Ok(writeln!(out, "{}", authority::describe_scope(s))?))
        }),
        Report::Decided(decision) => emit(
            out,
            json,
            &json!({ "verdict": decision.verdict, "reason": decision.reason }),
            || authority::describe_decision(decision),
        ),
        Report::Recorded(recorded) => emit(out, json, recorded, || {
            format!(
                "{}\nrecorded {}",
                authority::describe_decision(&recorded.decision),
                recorded.record
            )
        }),
        Report::Decisions { records, .. } => listing(out, format, records, |out| {
            decisions::print_decisions(out, records)
        }),
        Report::DecisionRecord(record) => {
            emit(out, json, record, || decisions::describe_record(record))
        }
        Report::DecisionsIntegrated(integrated) => emit(out, json, integrated, || {
            decisions::describe_integrated(integrated)
        }),
        Report::DecisionReceipt { record, text } if json => {
            json_line(out, &json!({ "record": record, "receipt": text }))
        }
        Report::DecisionReceipt { text, .. } => Ok(writeln!(out, "{text}")?),
        Report::DecisionReceiptChecked(check) => {
            emit(out, json, check, || decisions::describe_receipt(check))
        }
        Report::EpochStarted(start) => emit(out, json, start, || {
            format!(
                "epoch {} started: {} postures lapsed, {} carried over",
                start.epoch, start.lapsed, start.carried
            )
        }),
        Report::Epoch(epoch) => emit(out, json, &json!({ "epoch": epoch }), || {
            format!("current epoch: {epoch}")
        }),
        Report::Options(options) => {
            let value: serde_json::Map<String, serde_json::Value> = options
                .iter()
                .map(|(name, on)| (name.clone(), json!(on_off(*on))))
                .collect();
            emit(out, json, &value, || authority::describe_options(options))
        }
        Report::OptionSet { option, on, was } => emit(
            out,
            json,
            &json!({ "option": option, "value": on_off(*on), "was": on_off(*was) }),
            || format!("{option}: {} (was {})", on_off(*on), on_off(*was)),
        ),
        Report::KeyGenerated { path, verifier } => emit(
            out,
            json,
            &json!({ "key_file": path, "verifier_key": verifier }),
            || verifier.clone(),
        ),
        Report::CheckpointSigned(signed) if json => json_line(out, signed),
        Report::CheckpointSigned(signed) => Ok(write!(out, "{}", signed.note)?),
        Report::Checkpoints(list) => {
            listing(out, format, list, |out| checkpoints::print_list(out, list))
        }
        Report::CheckpointVerified {
            verification,
            saved,
        } => emit(
            out,
            json,
            &json!({ "verification": verification, "state_saved": saved }),
            || checkpoints::describe(verification, saved.as_deref()),
        ),
        Report::Receipt { seq, text } if json => {
            json_line(out, &json!({ "seq": seq, "receipt": text }))
        }
        Report::Receipt { text, .. } => Ok(write!(out, "{text}")?),
        Report::ConsistencyProof {
            from,
            to,
            old_root,
            new_root,
            text,
            ..
        } if json => json_line(
            out,
            &json!({ "old": from, "new": to, "old_root": old_root, "new_root": new_root, "proof": text }),
        ),
        Report::ConsistencyProof { text, .. } => Ok(write!(out, "{text}")?),
        Report::ReceiptChecked { check, failed } => emit(out, json, check, || {
            checkpoints::describe_receipt(check, *failed)
        }),
        Report::Exported => Ok(()),
    }
}

/// The line for stderr beside `report`, if it has one: where the next page of a limited
/// `audit` starts, as `next page: --before SEQ` or, with `json`, `{"next_before": SEQ}`; and
/// of `decisions`, as `next page: --before ID`.
pub fn note(json: bool, report: &Report) -> Option<String> {
    if let Report::Audit {
        archived: Some(archived),
        next_before,
        ..
    } = report
    {
        let said = archives::describe_archived(archived);
        let page = next_before.map(|seq| format!("next page: --before {seq}"));
        return Some(if json {
            json!({ "archived": archived, "next_before": next_before }).to_string()
        } else {
            std::iter::once(format!("note: {said}"))
                .chain(page)
                .collect::<Vec<_>>()
                .join("\n")
        });
    }
    match report {
        Report::ConsistencyProof {
            to,
            new_root,
            signed: false,
            ..
        } => Some(format!(
            "the ledger signed no checkpoint of size {to}: the proof ends at its root {new_root}"
        )),
        Report::Audit {
            next_before: Some(seq),
            ..
        }
        | Report::Decisions {
            next_before: Some(seq),
            ..
        } => Some(if json {
            json!({ "next_before": seq }).to_string()
        } else {
            format!("next page: --before {seq}")
        }),
        _ => None,
    }
}

/// The line for stderr when a read command read the ledger at `db` as an immutable lone copy.
pub fn immutable_note(json: bool, db: &std::path::Path) -> String {
    let note = format!(
        "read {} as a lone copy, opened immutable: it has no -wal file beside it and its folder \
         cannot be written, so it was read as it is, without locks; a writer changing it \
         meanwhile would not be seen",
        db.display()
    );
    if json {
        json!({ "note": note }).to_string()
    } else {
        format!("note: {note}")
    }
}

/// An error as its one line on stderr: a JSON object `{"kind", "message"}` with `json`, else
/// `session-ledger: error: MESSAGE`.
pub fn error_line(json: bool, kind: &str, message: &str) -> String {
    if json {
        json!({ "kind": kind, "message": message }).to_string()
    } else {
        format!("session-ledger: error: {message}")
    }
}

/// Prints a listing: as one JSON array (`[]` when empty), as one JSON object a line, or as the
/// text `text` prints.
fn listing<T: serde::Serialize>(
    out: &mut dyn Write,
    format: Format,
    items: &[T],
    text: impl FnOnce(&mut dyn Write) -> Result<(), CliError>,
) -> Result<(), CliError> {
    match format {
        Format::Text => text(out),
        Format::Json => json_line(out, items),
        Format::JsonLines => items.iter().try_for_each(|item| json_line(out, item)),
    }
}

/// Prints `value` as one line of JSON with `json`, else the text `text` makes.
use authority::on_off;

fn emit(
    out: &mut dyn Write,
    json: bool,
    value: &impl serde::Serialize,
    text: impl FnOnce() -> String,
) -> Result<(), CliError> {
    if json {
        json_line(out, value)
    } else {
        writeln!(out, "{}", text())?;
        Ok(())
    }
}

/// `copy`'s text: what moved, in the tables' words, and the verification of the copy.
fn describe_copy(from: &str, to: &str, c: &Copied, v: &Verification) -> String {
    let counts = [
        count(c.sessions as usize, "session", "sessions"),
        count(c.labels as usize, "label", "labels"),
        count(c.epochs as usize, "epoch", "epochs"),
        count(c.postures as usize, "posture", "postures"),
        count(c.patterns as usize, "command pattern", "command patterns"),
        count(c.scopes as usize, "override scope", "override scopes"),
        count(c.audit_rows as usize, "audit row", "audit rows"),
        count(c.checkpoints as usize, "checkpoint", "checkpoints"),
    ];
    format!(
        "copied {from} to {to}: {}\n{}",
        counts.join(", "),
        audit::describe_verification(v, None)
    )
}
