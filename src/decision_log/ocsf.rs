//! A decision record as an OCSF event (Open Cybersecurity Schema Framework, version
//! [`OCSF_VERSION`]), for `audit export --decisions --format ocsf`: the audit rows' events are
//! [`crate::audit`]'s (`audit/export.rs`); this module sits beside the record it maps, since
//! the audit module is below the decision log.
//!
//! OCSF has no class for an authorization decision about one action: its Identity & Access
//! Management classes report accounts, logons, the privileges a session is given at its start
//! (Authorize Session, 3003) and changes to access, not the check of one call. A tool call is a
//! request the agent's session makes of its runtime, and the ledger the control that allows it
//! or holds it for the operator, so a record is an **API Activity** event (class 6003, category
//! 6, activity 99 Other, `activity_name` "Decide") with the **security_control** profile, which
//! OCSF adds to an activity for the outcome of a control that intervened (listed in
//! `metadata.profiles`):
//!
//! - `api.operation`: the tool's name, or `command` for a shell command line;
//!   `api.request.uid` the record's id, `api.request.data` the input (`input`, `input_bytes`,
//!   and `input_sha256` when the record keeps only its first bytes);
//! - `actor.user.name`: who asked (`asked_by`); `actor.session.uid` and `src_endpoint` (uid and
//!   name): the session asked about, where the call comes from;
//! - `authorizations[0].decision`: the verdict word (`approve`, `ask`, `deny`), its `policy.name`
//!   the authority that decided (`trust`, `pattern`, ..., or `nothing`);
//! - `action_id` / `disposition_id` / `status_id`: approve is Allowed / Allowed / Success; deny
//!   is Denied / Blocked / Failure; ask, which neither allows nor denies but holds the call for
//!   the operator, is Other / Other / Other with `action` "Ask", `disposition` and `status`
//!   "Approval Required" (OCSF has no value for it: 99 and the source's own word is its way);
//! - `time`: when it was decided; `metadata.uid`: the record's id, `metadata.sequence`: its
//!   position in the decision log (once integrated), `metadata.correlation_uid`: the agent's
//!   tool-use id, `metadata.log_name`: `decisions`;
//! - `unmapped`: the reason as the record keeps it, the tree's root, the `decisions.integrate`
//!   audit row of its batch, and the record's append order (`id`).

use serde_json::{json, Map, Value};

use super::DecisionRecord;
use crate::audit::OCSF_VERSION;

/// The profile whose attributes carry the control's outcome.
const PROFILE: &str = "security_control";

/// `(action_id, action, disposition_id, disposition, status_id, status, severity_id, severity)`
/// of a verdict.
type Outcome = (
    u32,
    &'static str,
    u32,
    &'static str,
    u32,
    &'static str,
    u32,
    &'static str,
);

fn outcome(verdict: &str) -> Outcome {
    match verdict {
        "approve" => (1, "Allowed", 1, "Allowed", 1, "Success", 1, "Informational"),
        "ask" => (
            99,
            "Ask",
            99,
            "Approval Required",
            99,
            "Approval Required",
            1,
            "Informational",
        ),
        "deny" => (2, "Denied", 2, "Blocked", 2, "Failure", 2, "Low"),
        _ => (0, "Unknown", 0, "Unknown", 0, "Unknown", 1, "Informational"),
    }
}

/// A decision record as one OCSF API Activity event with the security_control profile: the
/// base attributes OCSF requires (`class_uid`, `category_uid`, `activity_id`, `type_uid`,
/// `severity_id`, `time`, `metadata.product`, `metadata.version`), those API Activity requires
/// (`actor`, `api.operation`, `src_endpoint`), and the verdict in `authorizations[].decision`,
/// `action_id` and `disposition_id`. The module's documentation gives the whole mapping.
pub fn ocsf_decision(record: &DecisionRecord) -> Value {
    let (action_id, action, disposition_id, disposition, status_id, status, severity_id, severity) =
        outcome(&record.verdict);
    let operation = record.tool.as_deref().unwrap_or("command");
    let asked = match &record.tool {
        Some(tool) => format!("a {tool} call"),
        None => "a command line".to_owned(),
    };
    let mut data = Map::new();
    data.insert("input".to_owned(), json!(record.input));
    data.insert("input_bytes".to_owned(), json!(record.input_bytes));
    if let Some(sha) = &record.input_sha256 {
        data.insert("input_sha256".to_owned(), json!(sha));
    }
    let mut metadata = json!({
        "product": {
            "name": "session-ledger",
            "vendor_name": "session-ledger",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "version": OCSF_VERSION,
        "profiles": [PROFILE],
        "log_name": "decisions",
        "uid": record.record,
        "event_code": "decision",
    });
    if let Value::Object(m) = &mut metadata {
        if let Some(seq) = record.seq {
            m.insert("sequence".to_owned(), json!(seq));
        }
        if let Some(id) = &record.tool_use_id {
            m.insert("correlation_uid".to_owned(), json!(id));
        }
    }
    json!({
        "class_uid": 6003,
        "class_name": "API Activity",
        "category_uid": 6,
        "category_name": "Application Activity",
        "activity_id": 99,
        "activity_name": "Decide",
        "type_uid": 6003 * 100 + 99,
        "severity_id": severity_id,
        "severity": severity,
        "status_id": status_id,
        "status": status,
        "action_id": action_id,
        "action": action,
        "disposition_id": disposition_id,
        "disposition": disposition,
        "time": record.at.timestamp_millis(),
        "message": format!(
            "{}: {asked} of session {} ({}), asked by {}",
            record.verdict, record.session, record.authority, record.asked_by
        ),
        "actor": {
            "user": { "name": record.asked_by },
            "session": { "uid": record.session },
        },
        "src_endpoint": { "uid": record.session, "name": record.session },
        "api": {
            "operation": operation,
            "request": { "uid": record.record, "data": data },
        },
        "authorizations": [{
            "decision": record.verdict,
            "policy": { "name": record.authority, "type": "session-ledger authority" },
        }],
        "metadata": metadata,
        "unmapped": {
            "reason": record.reason,
            "tree": record.tree,
            "batch": record.batch,
            "id": record.id,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verdict: &str, input_sha256: Option<&str>) -> DecisionRecord {
        DecisionRecord {
            record: "01a24f2e6efe98d2d5d4da2aef8f57fc".to_owned(),
            at: chrono::DateTime::from_timestamp_millis(1_796_624_772_862).expect("a time"),
            session: "worker".to_owned(),
            tree: "conductor".to_owned(),
            tool: None,
            input: "rm -rf build".to_owned(),
            input_bytes: 9000,
            input_sha256: input_sha256.map(str::to_owned),
            verdict: verdict.to_owned(),
            authority: "nothing".to_owned(),
            reason: json!({ "kind": "nothing" }),
            reason_text: r#"{"kind":"nothing"}"#.to_owned(),
            asked_by: "hook".to_owned(),
            tool_use_id: None,
            seq: None,
            batch: None,
            id: 7,
        }
    }

    #[test]
    fn a_denied_call_is_denied_and_blocked_and_an_unknown_verdict_is_unknown_not_allowed() {
        let deny = ocsf_decision(&record("deny", None));
        assert_eq!(
            (
                &deny["action_id"],
                &deny["disposition_id"],
                &deny["status_id"]
            ),
            (&json!(2), &json!(2), &json!(2))
        );
        let other = ocsf_decision(&record("maybe", None));
        assert_eq!(
            (
                &other["action_id"],
                &other["disposition_id"],
                &other["status_id"]
            ),
            (&json!(0), &json!(0), &json!(0))
        );
    }

    #[test]
    fn a_queued_record_has_no_sequence_and_a_cut_input_carries_its_whole_sha256() {
        let event = ocsf_decision(&record("ask", Some("ab12")));
        assert!(event["metadata"].get("sequence").is_none(), "{event}");
        assert!(
            event["metadata"].get("correlation_uid").is_none(),
            "{event}"
        );
        assert_eq!(event["api"]["request"]["data"]["input_sha256"], "ab12");
        assert_eq!(event["api"]["request"]["data"]["input_bytes"], 9000);
        assert_eq!(event["unmapped"]["id"], 7);
    }
}
