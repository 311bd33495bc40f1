//! What the audit concept needs from a database: the trail's rows by sequence number, and
//! appending one.
//!
//! Traits and rows only: no SQL and no rule (the chain's hash is computed by the caller).

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::{AuditEntry, AuditHead, AuditKind, Id};

/// An audit row to append, its hash computed by the caller.
pub(crate) struct NewAuditRow<'a> {
    pub(crate) seq: i64,
    pub(crate) at: DateTime<Utc>,
    pub(crate) actor: &'a str,
    pub(crate) kind: AuditKind,
    pub(crate) session: Option<&'a str>,
    /// The detail as the JSON object's text, exactly as it is stored and hashed.
    pub(crate) detail: &'a str,
    pub(crate) prev_hash: &'a str,
    pub(crate) hash: &'a str,
}

/// An audit row as the chain's verifier reads it: every field as the text that is hashed,
/// `at` in the stored form `YYYY-MM-DDTHH:MM:SS.sssZ`, nothing interpreted.
pub(crate) struct ChainRow {
    pub(crate) seq: i64,
    pub(crate) at: String,
    pub(crate) actor: String,
    pub(crate) kind: String,
    pub(crate) session: Option<String>,
    pub(crate) detail: String,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

/// Which rows [`AuditReads::audit_rows`] lists: the rows with `from <= seq < to` that match
/// every filter given, the newest `limit` of them.
pub(crate) struct AuditFilter<'a> {
    pub(crate) session: Option<Id<'a>>,
    /// Rows about this session or any of its descendants.
    pub(crate) subtree: Option<Id<'a>>,
    pub(crate) kind: Option<AuditKind>,
    /// Rows at or after this time.
    pub(crate) since: Option<DateTime<Utc>>,
    /// Rows before this time.
    pub(crate) until: Option<DateTime<Utc>>,
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) limit: Option<u32>,
}

/// Reads of the trail, each by sequence number or by the index on `session_id`.
pub(crate) trait AuditReads {
    /// The newest row's seq and hash; [`AuditHead::genesis`] for an empty trail.
    fn audit_head(&mut self) -> Result<AuditHead>;

    /// The newest row's time; `None` for an empty trail.
    fn latest_audit_time(&mut self) -> Result<Option<DateTime<Utc>>>;

    /// From which seq the trail's times are known never to go back (`audit_time_order`);
    /// `None` when that record is gone.
    fn audit_ordered_from(&mut self) -> Result<Option<i64>>;

    /// The first row at or after `seq`: its seq and time.
    fn audit_probe(&mut self, seq: i64) -> Result<Option<(i64, DateTime<Utc>)>>;

    /// The rows `filter` names, oldest first.
    fn audit_rows(&mut self, filter: &AuditFilter<'_>) -> Result<Vec<AuditEntry>>;

    /// Calls `each` on every row with `from <= seq < to`, oldest first, holding a bounded
    /// number of rows at a time.
    fn audit_walk(
        &mut self,
        from: i64,
        to: i64,
        each: &mut dyn FnMut(ChainRow) -> Result<()>,
    ) -> Result<()>;
}

/// Appending to the trail. The database refuses a row that does not extend the chain (the next
/// seq, the head's hash as `prev_hash`), whose time is before its predecessor's, or whose kind
/// is unknown, and any update or deletion.
pub(crate) trait AuditWrites {
    /// Appends one row.
    fn append_audit(&mut self, row: &NewAuditRow<'_>) -> Result<()>;
}
