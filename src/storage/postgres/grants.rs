//! The `command_patterns` and `override_scopes` tables on PostgreSQL: each statement a range of
//! one session's rows of the primary key.
//!
//! Whether a stored pattern still admits anything is the grants concept's, not this file's.

use postgres::Row;

use super::columns::Time;
use super::{Conn, Tx};
use crate::error::Result;
use crate::model::{Id, Scope};
use crate::storage::{GrantReads, GrantWrites, PatternRow};

/// The patterns on a session, oldest first.
pub(super) const PATTERNS: &str = "SELECT pattern, added_by, added_at FROM command_patterns
      WHERE session_id = $1 ORDER BY added_at, pattern";

/// The scopes on a session, oldest first.
pub(super) const SCOPES: &str = "SELECT session_id, name, granted_by, granted_at, expires_at,
            revoked_at
       FROM override_scopes WHERE session_id = $1 ORDER BY granted_at, name";

/// The live scope on a session that lasts longest.
pub(super) const LIVE_SCOPE: &str = "SELECT session_id, name, granted_by, granted_at, expires_at,
            revoked_at
       FROM override_scopes
      WHERE session_id = $1 AND revoked_at IS NULL AND expires_at > $2
      ORDER BY expires_at DESC, name LIMIT 1";

/// An `override_scopes` row.
fn scope_of(row: &Row) -> Result<Scope> {
    Ok(Scope {
        session: row.try_get("session_id")?,
        name: row.try_get("name")?,
        granted_by: row.try_get("granted_by")?,
        granted_at: row.try_get("granted_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

impl GrantReads for Conn<'_> {
    fn patterns(&mut self, id: Id<'_>) -> Result<Vec<PatternRow>> {
        let rows = self.rows(PATTERNS, &[&id.as_str()])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(PatternRow {
                pattern: row.try_get("pattern")?,
                added_by: row.try_get("added_by")?,
                added_at: row.try_get("added_at")?,
            });
        }
        Ok(out)
    }

    fn scopes(&mut self, id: Id<'_>) -> Result<Vec<Scope>> {
        self.rows(SCOPES, &[&id.as_str()])?
            .iter()
            .map(scope_of)
            .collect()
    }

    fn live_scope(&mut self, id: Id<'_>, now: Time) -> Result<Option<Scope>> {
        self.row(LIVE_SCOPE, &[&id.as_str(), &now])?
            .as_ref()
            .map(scope_of)
            .transpose()
    }
}

/// Adds a pattern unless the session has it.
pub(super) const ADD_PATTERN: &str =
    "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (session_id, pattern) DO NOTHING";

/// Removes a pattern.
pub(super) const REMOVE_PATTERN: &str =
    "DELETE FROM command_patterns WHERE session_id = $1 AND pattern = $2";

/// Grants (or re-grants, replacing the old one) a scope.
pub(super) const GRANT_SCOPE: &str = "INSERT INTO override_scopes
         (session_id, name, granted_by, granted_at, expires_at, revoked_at, revoked_by)
     VALUES ($1, $2, $3, $4, $5, NULL, NULL)
     ON CONFLICT (session_id, name) DO UPDATE
        SET granted_by = EXCLUDED.granted_by, granted_at = EXCLUDED.granted_at,
            expires_at = EXCLUDED.expires_at, revoked_at = NULL, revoked_by = NULL";

/// Revokes a scope that is live now.
pub(super) const REVOKE_SCOPE: &str = "UPDATE override_scopes SET revoked_at = $4, revoked_by = $3
      WHERE session_id = $1 AND name = $2 AND revoked_at IS NULL AND expires_at > $4
     RETURNING expires_at";

impl GrantWrites for Tx<'_> {
    fn add_pattern(&mut self, id: Id<'_>, pattern: &str, actor: &str, at: Time) -> Result<bool> {
        Ok(self
            .read
            .execute(ADD_PATTERN, &[&id.as_str(), &pattern, &actor, &at])?
            == 1)
    }

    fn remove_pattern(&mut self, id: Id<'_>, pattern: &str) -> Result<bool> {
        Ok(self
            .read
            .execute(REMOVE_PATTERN, &[&id.as_str(), &pattern])?
            == 1)
    }

    fn grant_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: Time,
        expires_at: Time,
    ) -> Result<()> {
        self.read.execute(
            GRANT_SCOPE,
            &[&id.as_str(), &name, &actor, &at, &expires_at],
        )?;
        Ok(())
    }

    fn revoke_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: Time,
    ) -> Result<Option<Time>> {
        let row = self
            .read
            .row(REVOKE_SCOPE, &[&id.as_str(), &name, &actor, &at])?;
        match row {
            Some(row) => Ok(Some(row.try_get("expires_at")?)),
            None => Ok(None),
        }
    }
}
