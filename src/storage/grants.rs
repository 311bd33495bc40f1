//! SQL for command patterns and override scopes.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use super::{opt_ts, ts};
use crate::error::Result;
use crate::grants::{CommandPattern, Scope};

/// Adds a pattern; false when the session already had it.
pub(crate) fn add_pattern(
    tx: &Transaction<'_>,
    id: &str,
    pattern: &str,
    actor: &str,
    now: &str,
) -> Result<bool> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
         VALUES (:id, :pattern, :actor, :now)
         ON CONFLICT (session_id, pattern) DO NOTHING",
    )?;
    Ok(stmt
        .execute(named_params! { ":id": id, ":pattern": pattern, ":actor": actor, ":now": now })?
        == 1)
}

/// Removes a pattern; false when the session did not have it.
pub(crate) fn remove_pattern(tx: &Transaction<'_>, id: &str, pattern: &str) -> Result<bool> {
    let mut stmt = tx.prepare_cached(
        "DELETE FROM command_patterns WHERE session_id = :id AND pattern = :pattern",
    )?;
    Ok(stmt.execute(named_params! { ":id": id, ":pattern": pattern })? == 1)
}

/// The patterns on a session, oldest first.
pub(crate) fn patterns(conn: &Connection, id: &str) -> Result<Vec<CommandPattern>> {
    let mut stmt = conn.prepare_cached(
        "SELECT pattern, added_by, added_at FROM command_patterns
          WHERE session_id = :id ORDER BY added_at, pattern",
    )?;
    let rows = stmt.query_map(named_params! { ":id": id }, |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (pattern, added_by, added_at) = row?;
        out.push(CommandPattern {
            session: id.to_owned(),
            pattern: pattern.clone(),
            added_by,
            added_at: ts("command_patterns.added_at", &added_at)?,
            refused: crate::grants::validate_pattern(&pattern)
                .err()
                .map(|e| match e {
                    crate::error::Error::Input(crate::error::InputError::InvalidPattern {
                        problem,
                        ..
                    }) => problem,
                    other => other.to_string(),
                }),
        });
    }
    Ok(out)
}

/// Grants (or re-grants, replacing the old one) a scope.
pub(crate) fn grant_scope(
    tx: &Transaction<'_>,
    id: &str,
    name: &str,
    actor: &str,
    now: &str,
    expires_at: &str,
) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO override_scopes
             (session_id, name, granted_by, granted_at, expires_at, revoked_at, revoked_by)
         VALUES (:id, :name, :actor, :now, :expires_at, NULL, NULL)",
    )?;
    stmt.execute(named_params! {
        ":id": id, ":name": name, ":actor": actor, ":now": now, ":expires_at": expires_at,
    })?;
    Ok(())
}

/// Revokes a live scope; returns its expiry, or `None` when no live scope has that name.
pub(crate) fn revoke_scope(
    tx: &Transaction<'_>,
    id: &str,
    name: &str,
    actor: &str,
    now: &str,
) -> Result<Option<String>> {
    let mut stmt = tx.prepare_cached(
        "UPDATE override_scopes SET revoked_at = :now, revoked_by = :actor
          WHERE session_id = :id AND name = :name
            AND revoked_at IS NULL AND expires_at > :now
         RETURNING expires_at",
    )?;
    Ok(stmt
        .query_row(
            named_params! { ":id": id, ":name": name, ":actor": actor, ":now": now },
            |row| row.get(0),
        )
        .optional()?)
}

/// The scopes on a session, live or not, oldest first.
pub(crate) fn scopes(conn: &Connection, id: &str) -> Result<Vec<Scope>> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, granted_by, granted_at, expires_at, revoked_at FROM override_scopes
          WHERE session_id = :id ORDER BY granted_at, name",
    )?;
    let rows = stmt.query_map(named_params! { ":id": id }, |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (name, granted_by, granted_at, expires_at, revoked_at) = row?;
        out.push(Scope {
            session: id.to_owned(),
            name,
            granted_by,
            granted_at: ts("override_scopes.granted_at", &granted_at)?,
            expires_at: ts("override_scopes.expires_at", &expires_at)?,
            revoked_at: opt_ts("override_scopes.revoked_at", revoked_at)?,
        });
    }
    Ok(out)
}

/// The live scope on a session that lasts longest: a range of the primary key.
pub(crate) const LIVE_SCOPE: &str = "SELECT name, granted_by, expires_at FROM override_scopes
      WHERE session_id = :id AND revoked_at IS NULL AND expires_at > :now
      ORDER BY expires_at DESC, name LIMIT 1";

/// The live scope on a session that lasts longest, read against `now`: never cached.
pub(crate) fn live_scope(
    conn: &Connection,
    id: &str,
    now: &str,
) -> Result<Option<(String, String, String)>> {
    let mut stmt = conn.prepare_cached(LIVE_SCOPE)?;
    Ok(stmt
        .query_row(named_params! { ":id": id, ":now": now }, |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?)
}

/// A session's patterns' text only: a range of the primary key.
pub(crate) const PATTERN_TEXTS: &str =
    "SELECT pattern, added_by FROM command_patterns WHERE session_id = :id ORDER BY pattern";

/// The patterns' text only, for a decision.
pub(crate) fn pattern_texts(conn: &Connection, id: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(PATTERN_TEXTS)?;
    let rows = stmt.query_map(named_params! { ":id": id }, |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
