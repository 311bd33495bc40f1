//! The audit trail as a feed for audit tooling: each row as an OCSF event (Open Cybersecurity
//! Schema Framework, version 1.7.0), for a SIEM that ingests OCSF. The JSON-lines form is the
//! row as `session-ledger --json audit` prints it, and needs nothing here.
//!
//! Each kind maps to one class and activity (docs/audit.md has the table): a session's birth,
//! end or refused birth is an Account Change of the session as a user; a posture, a command
//! pattern or an override scope granted or revoked is a User Access Management event, the grant
//! as its privilege; a label inherited or raised and a checkpoint signed are Entity Management
//! events; an epoch started is an Application Lifecycle start. Every event carries the row's
//! `seq` in `metadata.sequence` and its hash in `metadata.uid`, and the row's detail (and
//! `prev_hash`) in `unmapped`, so nothing the row says is lost.
//!
//! Decision records, which are not rows, have their own mapping beside the record, in the
//! decision log (`decision_log/ocsf.rs`, `ocsf_decision`): this module is below the decision
//! log, which names it, so it cannot name the record.

use serde_json::{json, Value};

use crate::model::{AuditEntry, AuditKind};

/// The OCSF schema version the events follow.
pub const OCSF_VERSION: &str = "1.7.0";

/// `(class_uid, category_uid, activity_id, activity_name)` of a kind.
fn class_of(kind: AuditKind) -> (u32, u32, u32, &'static str) {
    match kind {
        AuditKind::SessionRoot
        | AuditKind::SessionCreate
        | AuditKind::SessionSpawn
        | AuditKind::SessionCreateRefused => (3001, 3, 1, "Create"),
        AuditKind::SessionEnd => (3001, 3, 5, "Disable"),
        AuditKind::PostureGrant | AuditKind::PatternAdd | AuditKind::ScopeGrant => {
            (3005, 3, 1, "Assign Privileges")
        }
        AuditKind::PostureRevoke | AuditKind::PatternRemove | AuditKind::ScopeRevoke => {
            (3005, 3, 2, "Revoke Privileges")
        }
        AuditKind::LabelInherit | AuditKind::LabelRaise => (3004, 3, 3, "Update"),
        AuditKind::CheckpointSign | AuditKind::DecisionsIntegrate => (3004, 3, 1, "Create"),
        AuditKind::LedgerOption => (3004, 3, 3, "Update"),
        AuditKind::ArchiveMake => (3004, 3, 5, "Move"),
        AuditKind::EpochStart => (6002, 6, 3, "Start"),
    }
}

fn class_name(class_uid: u32) -> &'static str {
    match class_uid {
        3001 => "Account Change",
        3004 => "Entity Management",
        3005 => "User Access Management",
        _ => "Application Lifecycle",
    }
}

/// The privilege a grant or revocation row names: `trust`, `trust_reads`,
/// `pattern:<the pattern>` or `scope:<the name>`.
fn privilege(entry: &AuditEntry) -> String {
    let detail = &entry.detail;
    let word = |key: &str| {
        detail
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match entry.kind {
        AuditKind::PatternAdd | AuditKind::PatternRemove => format!("pattern:{}", word("pattern")),
        AuditKind::ScopeGrant | AuditKind::ScopeRevoke => format!("scope:{}", word("scope")),
        _ => word("posture"),
    }
}

/// A row as one OCSF event, with the base attributes OCSF requires (`class_uid`,
/// `category_uid`, `activity_id`, `type_uid`, `severity_id`, `time`, `metadata.product`,
/// `metadata.version`) and those its class requires.
pub fn ocsf_event(entry: &AuditEntry) -> Value {
    let (class_uid, category_uid, activity_id, activity) = class_of(entry.kind);
    let refused = entry.kind == AuditKind::SessionCreateRefused;
    let session = entry.session.clone().unwrap_or_default();
    let mut event = json!({
        "class_uid": class_uid,
        "class_name": class_name(class_uid),
        "category_uid": category_uid,
        "category_name": if category_uid == 3 { "Identity & Access Management" } else { "Application Activity" },
        "activity_id": activity_id,
        "activity_name": activity,
        "type_uid": class_uid * 100 + activity_id,
        "severity_id": if refused { 2 } else { 1 },
        "severity": if refused { "Low" } else { "Informational" },
        "status_id": if refused { 2 } else { 1 },
        "status": if refused { "Failure" } else { "Success" },
        "time": entry.at.timestamp_millis(),
        "message": format!("{} {} by {}", entry.kind, entry.session.as_deref().unwrap_or("-"), entry.actor),
        "actor": { "user": { "name": entry.actor } },
        "metadata": {
            "product": {
                "name": "session-ledger",
                "vendor_name": "session-ledger",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "version": OCSF_VERSION,
            "log_name": "audit",
            "sequence": entry.seq,
            "uid": entry.hash,
            "event_code": entry.kind.as_str(),
        },
        "unmapped": {
            "detail": entry.detail,
            "prev_hash": entry.prev_hash,
        },
    });
    let user = json!({ "uid": session, "name": session });
    let extra = match class_uid {
        3001 => json!({ "user": user }),
        3005 => json!({ "user": user, "privileges": [privilege(entry)] }),
        3004 if entry.kind == AuditKind::CheckpointSign => json!({
            "entity": {
                "type": "checkpoint",
                "uid": entry.detail.get("size").map(ToString::to_string).unwrap_or_default(),
                "name": entry.detail.get("origin").and_then(Value::as_str).unwrap_or(""),
                "data": entry.detail,
            }
        }),
        3004 if entry.kind == AuditKind::DecisionsIntegrate => json!({
            // A batch of decision records: named by its positions in the decision log.
            "entity": {
                "type": "decision batch",
                "uid": format!(
                    "{}+{}",
                    entry.detail.get("first").map(ToString::to_string).unwrap_or_default(),
                    entry.detail.get("count").map(ToString::to_string).unwrap_or_default()
                ),
                "name": "decisions",
                "data": entry.detail,
            }
        }),
        3004 if entry.kind == AuditKind::ArchiveMake => json!({
            // An archive: ended trees and the trail up to its boundary moved to its file.
            "entity": {
                "type": "archive",
                "uid": entry.detail.get("archive").map(ToString::to_string).unwrap_or_default(),
                "name": entry.detail.get("file").and_then(Value::as_str).unwrap_or(""),
                "data": entry.detail,
            }
        }),
        3004 if entry.kind == AuditKind::LedgerOption => json!({
            "entity": {
                "type": "ledger option",
                "uid": entry.detail.get("option").and_then(Value::as_str).unwrap_or(""),
                "name": entry.detail.get("option").and_then(Value::as_str).unwrap_or(""),
                "data": entry.detail,
            }
        }),
        3004 => json!({
            "entity": { "type": "label", "uid": session, "name": session, "data": entry.detail }
        }),
        _ => json!({
            "app": { "name": "session-ledger", "vendor_name": "session-ledger", "version": env!("CARGO_PKG_VERSION") }
        }),
    };
    if let (Value::Object(event), Value::Object(extra)) = (&mut event, extra) {
        event.extend(extra);
        if class_uid == 6002 {
            // Application Lifecycle has no actor: who started the epoch goes with the detail.
            event.remove("actor");
            if let Some(Value::Object(unmapped)) = event.get_mut("unmapped") {
                unmapped.insert("actor".to_owned(), json!(entry.actor));
            }
        }
    }
    event
}
