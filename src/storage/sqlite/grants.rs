//! The `command_patterns` and `override_scopes` tables: each statement a range of one
//! session's rows of the primary key.
//!
//! Whether a stored pattern still admits anything is the grants concept's, not this file's.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::{opt_time, time};
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::Result;
use crate::model::{Id, Scope};
use crate::storage::{GrantReads, GrantWrites, PatternRow};

/// The patterns on a session, oldest first.
pub(super) const PATTERNS: &str = "SELECT pattern, added_by, added_at FROM command_patterns
      WHERE session_id = :id ORDER BY added_at, pattern";

/// The scopes on a session, oldest first.
pub(super) const SCOPES: &str = "SELECT session_id, name, granted_by, granted_at, expires_at,
            revoked_at
       FROM override_scopes WHERE session_id = :id ORDER BY granted_at, name";

/// The live scope on a session that lasts longest.
pub(super) const LIVE_SCOPE: &str = "SELECT session_id, name, granted_by, granted_at, expires_at,
            revoked_at
       FROM override_scopes
      WHERE session_id = :id AND revoked_at IS NULL AND expires_at > :now
      ORDER BY expires_at DESC, name LIMIT 1";

/// An `override_scopes` row.
fn scope_of(row: &Row<'_>) -> Result<Scope> {
    Ok(Scope {
        session: row.get("session_id")?,
        name: row.get("name")?,
        granted_by: row.get("granted_by")?,
        granted_at: time(
            "override_scopes.granted_at",
            &row.get::<_, String>("granted_at")?,
        )?,
        expires_at: time(
            "override_scopes.expires_at",
            &row.get::<_, String>("expires_at")?,
        )?,
        revoked_at: opt_time("override_scopes.revoked_at", row.get("revoked_at")?)?,
    })
}

impl GrantReads for Conn<'_> {
    fn patterns(&mut self, id: Id<'_>) -> Result<Vec<PatternRow>> {
        let mut stmt = self.conn.prepare_cached(PATTERNS)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(PatternRow {
                pattern: row.get("pattern")?,
                added_by: row.get("added_by")?,
                added_at: time(
                    "command_patterns.added_at",
                    &row.get::<_, String>("added_at")?,
                )?,
            });
        }
        Ok(out)
    }

    fn scopes(&mut self, id: Id<'_>) -> Result<Vec<Scope>> {
        let mut stmt = self.conn.prepare_cached(SCOPES)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(scope_of(row)?);
        }
        Ok(out)
    }

    fn live_scope(&mut self, id: Id<'_>, now: DateTime<Utc>) -> Result<Option<Scope>> {
        let mut stmt = self.conn.prepare_cached(LIVE_SCOPE)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str(), ":now": format_ts(now) })?;
        rows.next()?.map(scope_of).transpose()
    }
}

/// Adds a pattern unless the session has it.
pub(super) const ADD_PATTERN: &str =
    "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
     VALUES (:id, :pattern, :actor, :now)
     ON CONFLICT (session_id, pattern) DO NOTHING";

/// Removes a pattern.
pub(super) const REMOVE_PATTERN: &str =
    "DELETE FROM command_patterns WHERE session_id = :id AND pattern = :pattern";

/// Grants (or re-grants, replacing the old one) a scope.
pub(super) const GRANT_SCOPE: &str = "INSERT OR REPLACE INTO override_scopes
         (session_id, name, granted_by, granted_at, expires_at, revoked_at, revoked_by)
     VALUES (:id, :name, :actor, :now, :expires_at, NULL, NULL)";

/// Revokes a scope that is live now.
pub(super) const REVOKE_SCOPE: &str =
    "UPDATE override_scopes SET revoked_at = :now, revoked_by = :actor
      WHERE session_id = :id AND name = :name AND revoked_at IS NULL AND expires_at > :now
     RETURNING expires_at";

impl GrantWrites for Tx<'_> {
    fn add_pattern(
        &mut self,
        id: Id<'_>,
        pattern: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let mut stmt = self.conn().prepare_cached(ADD_PATTERN)?;
        let params = named_params! {
            ":id": id.as_str(), ":pattern": pattern, ":actor": actor, ":now": format_ts(at),
        };
        Ok(stmt.execute(params)? == 1)
    }

    fn remove_pattern(&mut self, id: Id<'_>, pattern: &str) -> Result<bool> {
        let mut stmt = self.conn().prepare_cached(REMOVE_PATTERN)?;
        Ok(stmt.execute(named_params! { ":id": id.as_str(), ":pattern": pattern })? == 1)
    }

    fn grant_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(GRANT_SCOPE)?;
        stmt.execute(named_params! {
            ":id": id.as_str(), ":name": name, ":actor": actor, ":now": format_ts(at),
            ":expires_at": format_ts(expires_at),
        })?;
        Ok(())
    }

    fn revoke_scope(
        &mut self,
        id: Id<'_>,
        name: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>> {
        let mut stmt = self.conn().prepare_cached(REVOKE_SCOPE)?;
        let params = named_params! {
            ":id": id.as_str(), ":name": name, ":actor": actor, ":now": format_ts(at),
        };
        let expires_at: Option<String> = stmt
            .query_row(params, |row| row.get("expires_at"))
            .optional()?;
        expires_at
            .map(|t| time("override_scopes.expires_at", &t))
            .transpose()
    }
}
