//! A session as the ledger records it, and how it came to be.
//!
//! Values only: creating, ending and walking sessions are `crate::sessions`'.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// How a session came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Opened by an operator, with no creator.
    Root,
    /// Made through the ledger's create call by a live session.
    Created,
    /// A `sub-<parent>-<n>` id first seen when it was read.
    Spawned,
}

impl Origin {
    /// The word stored in the `sessions.origin` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Root => "root",
            Origin::Created => "created",
            Origin::Spawned => "spawned",
        }
    }

    /// The origin a stored word names.
    pub(crate) fn from_word(word: &str) -> Option<Origin> {
        match word {
            "root" => Some(Origin::Root),
            "created" => Some(Origin::Created),
            "spawned" => Some(Origin::Spawned),
            _ => None,
        }
    }
}

/// A session as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Session {
    /// The session's id.
    pub id: String,
    /// The session that created or spawned it; `None` for a root.
    pub created_by: Option<String>,
    /// 0 for a root, the creator's depth + 1 otherwise.
    pub depth: u32,
    /// How it came to be.
    pub origin: Origin,
    /// When the ledger recorded it.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub created_at: DateTime<Utc>,
    /// When it ended; `None` while it is live.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub ended_at: Option<DateTime<Utc>>,
}

impl Session {
    /// True while the session has not ended.
    pub fn is_live(&self) -> bool {
        self.ended_at.is_none()
    }
}
