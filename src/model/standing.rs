//! A standing grant: a grant that approves on its own, whatever the session's posture, and so
//! outlives a posture revocation unless it is revoked with it.
//!
//! Values only: granting and revoking are `crate::grants`', what a stop reaches is
//! `crate::authority`'.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// A grant on a live session that approves on its own: a live override scope (every command of
/// the session, until it expires) or a command pattern (the lines it admits). Neither follows a
/// delegation (rule P4), and neither is a posture, so revoking postures, even down a whole
/// tree, leaves it standing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StandingGrant {
    /// The session holding it.
    pub session: String,
    /// That session's depth (0 for a root).
    pub depth: u32,
    /// What it is.
    #[serde(flatten)]
    pub grant: Grant,
    /// Who granted it.
    pub granted_by: String,
    /// When.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub granted_at: DateTime<Utc>,
}

/// A scope or a pattern, as a [`StandingGrant`] holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Grant {
    /// An override scope: it approves every command until `expires_at`.
    Scope {
        /// Its name.
        scope: String,
        /// When it stops approving.
        #[serde(serialize_with = "crate::clock::serialize_ts")]
        expires_at: DateTime<Utc>,
    },
    /// A command pattern: it approves the lines it admits.
    Pattern {
        /// Its text.
        pattern: String,
    },
}

impl StandingGrant {
    /// The order a listing shows them in: by depth, then session, scopes before patterns, then
    /// by name.
    pub(crate) fn sort(grants: &mut [StandingGrant]) {
        grants.sort_by(|a, b| a.key().cmp(&b.key()));
    }

    fn key(&self) -> (u32, &str, u8, &str) {
        match &self.grant {
            Grant::Scope { scope, .. } => (self.depth, &self.session, 0, scope),
            Grant::Pattern { pattern } => (self.depth, &self.session, 1, pattern),
        }
    }
}
