//! The audit trail: one row for every change, written in the same transaction as the change.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The actor recorded for writes the ledger makes on its own behalf: materializing a label on
/// first read, and recording a spawned sub-agent when it is first seen.
pub const LEDGER_ACTOR: &str = "ledger";

/// One row of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Position in the trail, increasing.
    pub seq: i64,
    /// When the change was made.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub at: DateTime<Utc>,
    /// Who made it.
    pub actor: String,
    /// What happened, for example `session.create` or `label.raise`.
    pub kind: String,
    /// Which session it happened to.
    pub session: Option<String>,
    /// Everything else, as a JSON object.
    pub detail: serde_json::Value,
}

/// Which audit rows to list. The default lists every row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// Only rows about this session.
    pub session: Option<String>,
    /// Only rows of this kind.
    pub kind: Option<String>,
    /// Only the most recent `limit` rows (still listed oldest first).
    pub limit: Option<u32>,
}

impl AuditQuery {
    /// Every row.
    pub fn all() -> AuditQuery {
        AuditQuery::default()
    }

    /// Only rows about `session`.
    pub fn session(mut self, session: impl Into<String>) -> AuditQuery {
        self.session = Some(session.into());
        self
    }

    /// Only rows of `kind`.
    pub fn kind(mut self, kind: impl Into<String>) -> AuditQuery {
        self.kind = Some(kind.into());
        self
    }

    /// Only the most recent `limit` rows.
    pub fn limit(mut self, limit: u32) -> AuditQuery {
        self.limit = Some(limit);
        self
    }
}
