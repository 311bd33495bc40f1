//! What decision records need from a database: appending records without the ledger's lock,
//! reading them, and integrating the queued ones into the decision log (rules D1, D2).
//!
//! Traits and rows only: no SQL and no rule (what a record holds, its leaf hash and each
//! batch's root are the decision log concept's).

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::Id;

/// A decision record to append. The engine adds its id and its tree (the root of the session's
/// tree, found in the statement that appends it).
#[derive(Debug, Clone)]
pub(crate) struct NewDecision {
    pub(crate) record: String,
    pub(crate) at: DateTime<Utc>,
    pub(crate) session: String,
    pub(crate) tool: Option<String>,
    pub(crate) input: String,
    pub(crate) input_bytes: i64,
    pub(crate) input_sha256: Option<String>,
    pub(crate) verdict: &'static str,
    pub(crate) authority: &'static str,
    /// The reason as the JSON object's text, exactly as it is stored and hashed.
    pub(crate) reason: String,
    pub(crate) asked_by: String,
    pub(crate) tool_use_id: Option<String>,
}

/// A decision record as stored, with its position once integrated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecisionRow {
    pub(crate) id: i64,
    pub(crate) record: String,
    pub(crate) at: DateTime<Utc>,
    pub(crate) session: String,
    pub(crate) tree: String,
    pub(crate) tool: Option<String>,
    pub(crate) input: String,
    pub(crate) input_bytes: i64,
    pub(crate) input_sha256: Option<String>,
    pub(crate) verdict: String,
    pub(crate) authority: String,
    pub(crate) reason: String,
    pub(crate) asked_by: String,
    pub(crate) tool_use_id: Option<String>,
    /// Its position in the decision log; `None` while it is queued.
    pub(crate) seq: Option<i64>,
    /// The `decisions.integrate` audit row of its batch; `None` while it is queued.
    pub(crate) batch: Option<i64>,
}

/// Which records [`DecisionReads::decision_rows`] lists: those matching every filter given,
/// with `id < before`, the newest `limit` of them, newest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct DecisionFilter<'a> {
    pub(crate) session: Option<Id<'a>>,
    /// Records about this session or any of its descendants.
    pub(crate) subtree: Option<Id<'a>>,
    pub(crate) verdict: Option<&'a str>,
    pub(crate) authority: Option<&'a str>,
    /// Records at or after this time.
    pub(crate) since: Option<DateTime<Utc>>,
    /// Records before this time.
    pub(crate) until: Option<DateTime<Utc>>,
    /// Records appended before this id (the cursor of the next page).
    pub(crate) before: Option<i64>,
    pub(crate) limit: u32,
}

/// Reads of the records, by the indexes on session, tree, time and id.
pub(crate) trait DecisionReads {
    /// The records `filter` names, newest first.
    fn decision_rows(&mut self, filter: &DecisionFilter<'_>) -> Result<Vec<DecisionRow>>;

    /// The record whose own id is `record`.
    fn decision_by_record(&mut self, record: &str) -> Result<Option<DecisionRow>>;

    /// The oldest `limit` queued records, by id.
    fn queued_decisions(&mut self, limit: u32) -> Result<Vec<DecisionRow>>;

    /// How many records wait in the queue.
    fn queued_count(&mut self) -> Result<i64>;

    /// The decision log's size: its last position, 0 when empty.
    fn decision_log_size(&mut self) -> Result<i64>;

    /// The integrated records after position `after`, by position, at most `limit`: the
    /// export feed's page.
    fn logged_after(&mut self, after: i64, limit: u32) -> Result<Vec<DecisionRow>>;

    /// The records of the batch whose audit row is `batch`, by position.
    fn decision_batch(&mut self, batch: i64) -> Result<Vec<DecisionRow>>;

    /// Every batch whose audit row is after `after`, oldest first: its audit row, first
    /// position and count, as the log holds them.
    fn decision_batches(&mut self, after: i64) -> Result<Vec<(i64, i64, i64)>>;
}

/// Integrating records, inside a write transaction that holds the ledger's lock.
pub(crate) trait DecisionWrites {
    /// Gives the queued records `ids`, in order, the positions from `first` on, in the batch
    /// whose audit row is `batch` (appended before), and takes them out of the queue.
    fn integrate_decisions(&mut self, batch: i64, first: i64, ids: &[i64]) -> Result<()>;
}

/// Appending records, in a transaction of its own that holds no lock the ledger's other
/// writers take.
pub(crate) trait Append {
    /// Appends `records`, in order, in one statement where the engine can.
    fn append_decisions(&mut self, records: &[NewDecision]) -> Result<()>;
}

/// What an append's closure hands over, for an engine that sends the records after it returns
/// (as a group, [`GroupCommit`](super::GroupCommit)).
#[derive(Default)]
pub(crate) struct Collected(pub(crate) Vec<NewDecision>);

impl Append for Collected {
    fn append_decisions(&mut self, records: &[NewDecision]) -> Result<()> {
        self.0.extend_from_slice(records);
        Ok(())
    }
}
