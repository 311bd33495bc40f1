//! What the labels concept needs from a database: stored labels, and first-read inheritance
//! as one statement.
//!
//! Traits and rows only: no SQL and no rule.

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::{Id, Label, Materialized, Posture};

/// A label as stored, with how and when it was written.
pub(crate) struct StoredLabel {
    pub(crate) label: Label,
    /// [`Materialized::Born`] or [`Materialized::Inherited`].
    pub(crate) materialized: Materialized,
    pub(crate) materialized_at: DateTime<Utc>,
    pub(crate) raised_at: Option<DateTime<Utc>>,
}

/// A materialized session's state, the hot path of every read: its stored label, whether it
/// ended, and its posture row.
pub(crate) struct StateRow {
    pub(crate) stored: StoredLabel,
    pub(crate) ended: bool,
    pub(crate) posture: Option<Posture>,
}

/// A label written by [`LabelWrites::materialize_path`].
pub(crate) struct InheritedLabel {
    pub(crate) session: String,
    pub(crate) label: Label,
    /// The materialized ancestor it was copied from.
    pub(crate) from: String,
}

/// Reads of labels.
pub(crate) trait LabelReads {
    /// The state of a materialized session; `None` when it is not materialized.
    fn state(&mut self, id: Id<'_>) -> Result<Option<StateRow>>;

    /// The stored label alone; `None` when the session is not materialized.
    fn label(&mut self, id: Id<'_>) -> Result<Option<Label>>;

    /// The nearest materialized session on the walk up `created_by` from `id` (`id` itself
    /// when it is materialized) and its label: what a first read of `id` would copy (rule L2).
    /// `None` when `id` is not recorded.
    fn nearest_label(&mut self, id: Id<'_>) -> Result<Option<(String, Label)>>;
}

/// Writes of labels. The database refuses a label lower than what it replaces or inherits
/// (rules L1, L2), a second label for one session, and a deletion.
pub(crate) trait LabelWrites {
    /// Writes a root's label at its birth.
    fn insert_born_label(&mut self, id: Id<'_>, label: Label, at: DateTime<Utc>) -> Result<()>;

    /// Rule L2 in one statement: walks `created_by` up from `id` to the nearest materialized
    /// session, and gives `id` and every unmaterialized session on that path its label.
    /// Returns the labels written, farthest from `id` first; empty when `id` is materialized.
    fn materialize_path(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<Vec<InheritedLabel>>;

    /// Stores a raised label; the caller has joined it with the stored one.
    fn raise_label(&mut self, id: Id<'_>, label: Label, at: DateTime<Utc>) -> Result<()>;
}
