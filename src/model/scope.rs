//! An override scope: a named grant with an expiry, judged for one session (rule P4).
//!
//! Values only: granting and revoking scopes are `crate::grants`'.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// An override scope on a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The session.
    pub session: String,
    /// The scope's name.
    pub name: String,
    /// Who granted it.
    pub granted_by: String,
    /// When.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub granted_at: DateTime<Utc>,
    /// When it stops admitting anything.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub expires_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub revoked_at: Option<DateTime<Utc>>,
}

impl Scope {
    /// True when the scope admits commands at `now`: not revoked, not expired.
    pub fn is_live_at(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at > now
    }
}
