//! What copying a whole ledger needs from a database: every row of each table as it is stored,
//! and, on the receiving engine, appending them as they are into a new ledger.
//!
//! The tables and their columns are named here once, for every engine; each value travels as a
//! [`Value`] that every engine can read and write. No SQL and no rule: the copy concept decides
//! what a faithful copy is (src/copy.rs).

use chrono::{DateTime, Utc};

use crate::error::Result;

use super::Read;

/// How a column's values travel between engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A whole number.
    Integer,
    /// Text.
    Text,
    /// A JSON document, carried as its text, byte for byte (audit details are hashed as text).
    Json,
    /// A flag.
    Bool,
    /// A time at the stored precision.
    Time,
}

/// A table a copy moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Sessions,
    Labels,
    Epochs,
    Postures,
    CommandPatterns,
    OverrideScopes,
    Audit,
    Checkpoints,
    Decisions,
    DecisionLog,
    DecisionQueue,
}

impl Table {
    /// Every table a copy moves, in an order their references allow: sessions before what
    /// names them, epochs before postures. (`audit_kinds` and the migration history come with
    /// the target's own migration; `audit_time_order` is one value, moved on its own; the
    /// audit tree is derived from the rows, and the target builds its own.)
    pub(crate) const ALL: [Table; 11] = [
        Table::Sessions,
        Table::Labels,
        Table::Epochs,
        Table::Postures,
        Table::CommandPatterns,
        Table::OverrideScopes,
        Table::Audit,
        Table::Checkpoints,
        Table::Decisions,
        Table::DecisionLog,
        Table::DecisionQueue,
    ];

    /// The table's name, the same on every engine.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Sessions => "sessions",
            Table::Labels => "labels",
            Table::Epochs => "epochs",
            Table::Postures => "postures",
            Table::CommandPatterns => "command_patterns",
            Table::OverrideScopes => "override_scopes",
            Table::Audit => "audit",
            Table::Checkpoints => "checkpoints",
            Table::Decisions => "decisions",
            Table::DecisionLog => "decision_log",
            Table::DecisionQueue => "decision_queue",
        }
    }

    /// The columns a row carries, in order: every column of the table, on every engine.
    pub(crate) fn columns(self) -> &'static [(&'static str, Kind)] {
        use Kind::{Bool, Integer, Json, Text, Time};
        match self {
            Table::Sessions => &[
                ("seq", Integer),
                ("id", Text),
                ("created_by", Text),
                ("depth", Integer),
                ("origin", Text),
                ("created_at", Time),
                ("ended_at", Time),
            ],
            Table::Labels => &[
                ("session_id", Text),
                ("taint", Text),
                ("untrusted", Bool),
                ("materialized_at", Time),
                ("materialized_how", Text),
                ("inherited_from", Text),
                ("raised_at", Time),
            ],
            Table::Epochs => &[
                ("epoch", Integer),
                ("started_at", Time),
                ("started_by", Text),
                ("durable", Bool),
            ],
            Table::Postures => &[
                ("session_id", Text),
                ("posture", Text),
                ("source", Text),
                ("granted_by", Text),
                ("granted_at", Time),
                ("granted_on", Text),
                ("inherited_from", Text),
                ("allocated_at", Time),
                ("chain", Json),
                ("epoch", Integer),
            ],
            Table::CommandPatterns => &[
                ("session_id", Text),
                ("pattern", Text),
                ("added_by", Text),
                ("added_at", Time),
            ],
            Table::OverrideScopes => &[
                ("session_id", Text),
                ("name", Text),
                ("granted_by", Text),
                ("granted_at", Time),
                ("expires_at", Time),
                ("revoked_at", Time),
                ("revoked_by", Text),
            ],
            Table::Audit => &[
                ("seq", Integer),
                ("at", Time),
                ("actor", Text),
                ("kind", Text),
                ("session_id", Text),
                ("detail", Json),
                ("prev_hash", Text),
                ("hash", Text),
            ],
            Table::Checkpoints => &[
                ("seq", Integer),
                ("tree_size", Integer),
                ("root_hash", Text),
                ("origin", Text),
                ("key_name", Text),
                ("key_id", Text),
                ("note", Text),
                ("signed_at", Time),
            ],
            Table::Decisions => &[
                ("id", Integer),
                ("record", Text),
                ("at", Time),
                ("session_id", Text),
                ("tree", Text),
                ("tool", Text),
                ("input", Text),
                ("input_bytes", Integer),
                ("input_sha256", Text),
                ("verdict", Text),
                ("authority", Text),
                ("reason", Text),
                ("asked_by", Text),
                ("tool_use_id", Text),
            ],
            Table::DecisionLog => &[("seq", Integer), ("decision", Integer), ("batch", Integer)],
            Table::DecisionQueue => &[("id", Integer)],
        }
    }

    /// The columns of the table's primary key, by which its rows are read in order.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Table::Sessions | Table::Audit | Table::Checkpoints | Table::DecisionLog => "seq",
            Table::Decisions | Table::DecisionQueue => "id",
            Table::Epochs => "epoch",
            Table::Labels | Table::Postures => "session_id",
            Table::CommandPatterns => "session_id, pattern",
            Table::OverrideScopes => "session_id, name",
        }
    }
}

/// One stored value. Which variant a column holds is its [`Kind`]; [`Value::Null`] for any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Null,
    Integer(i64),
    /// Text, and JSON as its text.
    Text(String),
    Bool(bool),
    Time(DateTime<Utc>),
}

/// One row, its values in the order of [`Table::columns`].
pub(crate) type Row = Vec<Value>;

/// Reading a whole ledger as it is stored.
pub(crate) trait ExportReads {
    /// Calls `each` on every row of `table`, in the order of its key, holding a bounded
    /// number of rows at a time.
    fn export(&mut self, table: Table, each: &mut dyn FnMut(Row) -> Result<()>) -> Result<()>;
}

/// Appending a whole ledger, inside the one transaction of
/// [`Engine::import`](super::Engine::import): the target was empty when it began, its contract
/// triggers are off for the transaction (a copy writes rows the rules wrote elsewhere,
/// raised labels and all), and every `CHECK` and reference still holds.
pub(crate) trait Import {
    /// The transaction's reads: they see its own writes.
    fn read(&mut self) -> &mut dyn Read;

    /// The transaction's writes, with the contract's triggers still off: for building what is
    /// derived from the copied rows (the audit tree).
    fn write(&mut self) -> &mut dyn super::Write;

    /// Appends `rows` to `table` as they are, keys and times and hashes included.
    fn append(&mut self, table: Table, rows: &[Row]) -> Result<()>;

    /// Records from which seq the trail's times are known to be in order, as the source did.
    fn set_audit_ordered_from(&mut self, seq: i64) -> Result<()>;
}
