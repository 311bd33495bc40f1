//! What the grants concept needs from a database: command patterns and override scopes.
//!
//! Traits and rows only: no SQL and no rule.

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::{Id, Scope, StandingGrant};
use crate::storage::Reach;

/// A command pattern as stored.
pub(crate) struct PatternRow {
    pub(crate) pattern: String,
    pub(crate) added_by: String,
    pub(crate) added_at: DateTime<Utc>,
}

/// Reads of grants, each a range of the session's own rows.
pub(crate) trait GrantReads {
    /// The patterns on `id`, oldest first (then by text).
    fn patterns(&mut self, id: Id<'_>) -> Result<Vec<PatternRow>>;

    /// The scopes on `id`, live or not, oldest first (then by name).
    fn scopes(&mut self, id: Id<'_>) -> Result<Vec<Scope>>;

    /// The scope on `id` that is live at `now` and lasts longest (then by name).
    fn live_scope(&mut self, id: Id<'_>, now: DateTime<Utc>) -> Result<Option<Scope>>;

    /// The standing grants of the live sessions `reach` names: each scope live at `now` and
    /// each command pattern, in any order. For one session or a subtree, costs the sessions
    /// reached and their own grant rows; for the whole ledger, the scopes not revoked and
    /// every pattern.
    fn standing(&mut self, reach: Reach<'_>, now: DateTime<Utc>) -> Result<Vec<StandingGrant>>;
}

/// Writes of grants.
pub(crate) trait GrantWrites {
    /// Adds a pattern; false when the session already had it.
    fn add_pattern(
        &mut self,
        id: Id<'_>,
        pattern: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<bool>;

    /// Removes a pattern; false when the session did not have it.
    fn remove_pattern(&mut self, id: Id<'_>, pattern: &str) -> Result<bool>;

    /// Grants a scope, replacing any scope of that name on the session.
    fn grant_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<()>;

    /// Revokes the scope if it is live at `at`; returns its expiry, or `None` when no live
    /// scope has that name.
    fn revoke_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>>;

    /// Revokes, as `actor` at `at`, every scope live at `at` on the live sessions `reach`
    /// names, in one statement. Returns them as they stood, in any order.
    fn revoke_scopes_in(
        &mut self,
        reach: Reach<'_>,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<StandingGrant>>;

    /// Removes every command pattern of the live sessions `reach` names, in one statement.
    /// Returns them, in any order.
    fn remove_patterns_in(&mut self, reach: Reach<'_>) -> Result<Vec<StandingGrant>>;
}
