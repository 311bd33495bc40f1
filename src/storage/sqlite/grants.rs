//! The `command_patterns` and `override_scopes` tables: each statement a range of one
//! session's rows of the primary key.
//!
//! Whether a stored pattern still admits anything is the grants concept's, not this file's.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::{depth, opt_time, time};
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::model::{Grant, Id, Scope, StandingGrant};
use crate::storage::{GrantReads, GrantWrites, PatternRow, Reach};

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

/// The standing grants of the live sessions `$sessions` (a `FROM` item that names them
/// `s`, with its conditions in `$live`): their scopes live at `:now`, then their patterns,
/// each found by the primary key's range of its session.
macro_rules! standing_sql {
    ($with:expr, $sessions:literal, $live:literal) => {
        concat!(
            $with,
            "SELECT s.id AS session_id, s.depth, 'scope' AS kind, o.name AS name,
                    o.granted_by AS granted_by, o.granted_at AS granted_at,
                    o.expires_at AS expires_at
               FROM ",
            $sessions,
            " CROSS JOIN override_scopes AS o ON o.session_id = s.id
              WHERE ",
            $live,
            " AND o.revoked_at IS NULL AND o.expires_at > :now
             UNION ALL
             SELECT s.id, s.depth, 'pattern', c.pattern, c.added_by, c.added_at, NULL
               FROM ",
            $sessions,
            " CROSS JOIN command_patterns AS c ON c.session_id = s.id
              WHERE ",
            $live
        )
    };
}

/// The standing grants of one live session.
pub(super) const STANDING_ONE: &str =
    standing_sql!("", "sessions AS s", "s.id = :id AND s.ended_at IS NULL");

/// The standing grants of the live sessions of a subtree.
pub(super) const STANDING_SUBTREE: &str = standing_sql!(
    subtree_walk!("id = :id"),
    "sessions AS s",
    "s.id IN (SELECT id FROM subtree) AND s.ended_at IS NULL"
);

/// The standing grants of every live session: the scopes not revoked, by expiry, then every
/// pattern, each with its session by key.
pub(super) const STANDING_ALL: &str = "SELECT s.id AS session_id, s.depth, 'scope' AS kind,
            o.name AS name, o.granted_by AS granted_by, o.granted_at AS granted_at,
            o.expires_at AS expires_at
       FROM override_scopes AS o INDEXED BY override_scopes_unrevoked
      CROSS JOIN sessions AS s ON s.id = o.session_id
      WHERE o.revoked_at IS NULL AND o.expires_at > :now AND s.ended_at IS NULL
     UNION ALL
     SELECT s.id, s.depth, 'pattern', c.pattern, c.added_by, c.added_at, NULL
       FROM command_patterns AS c CROSS JOIN sessions AS s ON s.id = c.session_id
      WHERE s.ended_at IS NULL";

/// A standing grant as [`standing_sql!`] and the revocations' `RETURNING` read it.
fn standing_of(row: &Row<'_>) -> Result<StandingGrant> {
    let session: String = row.get("session_id")?;
    let kind: String = row.get("kind")?;
    let name: String = row.get("name")?;
    let grant = match kind.as_str() {
        "scope" => Grant::Scope {
            scope: name,
            expires_at: time(
                "override_scopes.expires_at",
                &row.get::<_, String>("expires_at")?,
            )?,
        },
        "pattern" => Grant::Pattern { pattern: name },
        other => return Err(Corruption::new(format!("a grant of kind {other:?}")).into()),
    };
    Ok(StandingGrant {
        depth: depth(&session, row.get("depth")?)?,
        granted_by: row.get("granted_by")?,
        granted_at: time("granted_at", &row.get::<_, String>("granted_at")?)?,
        session,
        grant,
    })
}

/// Runs a statement that returns standing grants.
fn standing_rows(
    stmt: &mut rusqlite::CachedStatement<'_>,
    params: &[(&str, &dyn rusqlite::ToSql)],
) -> Result<Vec<StandingGrant>> {
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(standing_of(row)?);
    }
    Ok(out)
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

    fn standing(&mut self, reach: Reach<'_>, now: DateTime<Utc>) -> Result<Vec<StandingGrant>> {
        let now = format_ts(now);
        let (sql, id) = match reach {
            Reach::One(id) => (STANDING_ONE, Some(id.as_str())),
            Reach::Subtree(id) => (STANDING_SUBTREE, Some(id.as_str())),
            Reach::All => (STANDING_ALL, None),
        };
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":now", &now)];
        if let Some(id) = &id {
            params.push((":id", id));
        }
        standing_rows(&mut self.conn.prepare_cached(sql)?, &params)
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

/// What a revocation's `RETURNING` gives of each scope it revoked, as [`standing_of`] reads it.
macro_rules! revoked_scope_columns {
    () => {
        " RETURNING session_id,
                    (SELECT depth FROM sessions WHERE sessions.id = override_scopes.session_id)
                        AS depth,
                    'scope' AS kind, name, granted_by, granted_at, expires_at"
    };
}

/// What a revocation's `RETURNING` gives of each pattern it removed.
macro_rules! removed_pattern_columns {
    () => {
        " RETURNING session_id,
                    (SELECT depth FROM sessions WHERE sessions.id = command_patterns.session_id)
                        AS depth,
                    'pattern' AS kind, pattern AS name, added_by AS granted_by,
                    added_at AS granted_at, NULL AS expires_at"
    };
}

/// The scopes live at `:now` of one live session, revoked.
pub(super) const REVOKE_SCOPES_ONE: &str = concat!(
    "UPDATE override_scopes SET revoked_at = :now, revoked_by = :actor
      WHERE session_id = :id AND revoked_at IS NULL AND expires_at > :now
        AND EXISTS (SELECT 1 FROM sessions WHERE id = :id AND ended_at IS NULL)",
    revoked_scope_columns!()
);

/// The scopes live at `:now` of the live sessions of a subtree, revoked in one statement.
pub(super) const REVOKE_SCOPES_SUBTREE: &str = concat!(
    subtree_walk!("id = :id"),
    "UPDATE override_scopes SET revoked_at = :now, revoked_by = :actor
      WHERE session_id IN (SELECT id FROM subtree WHERE ended_at IS NULL)
        AND revoked_at IS NULL AND expires_at > :now",
    revoked_scope_columns!()
);

/// The scopes live at `:now` of every live session, revoked in one statement.
pub(super) const REVOKE_SCOPES_ALL: &str = concat!(
    "UPDATE override_scopes INDEXED BY override_scopes_unrevoked
        SET revoked_at = :now, revoked_by = :actor
      WHERE revoked_at IS NULL AND expires_at > :now
        AND EXISTS (SELECT 1 FROM sessions
                     WHERE sessions.id = override_scopes.session_id AND ended_at IS NULL)",
    revoked_scope_columns!()
);

/// The patterns of one live session, removed.
pub(super) const REMOVE_PATTERNS_ONE: &str = concat!(
    "DELETE FROM command_patterns
      WHERE session_id = :id
        AND EXISTS (SELECT 1 FROM sessions WHERE id = :id AND ended_at IS NULL)",
    removed_pattern_columns!()
);

/// The patterns of the live sessions of a subtree, removed in one statement.
pub(super) const REMOVE_PATTERNS_SUBTREE: &str = concat!(
    subtree_walk!("id = :id"),
    "DELETE FROM command_patterns
      WHERE session_id IN (SELECT id FROM subtree WHERE ended_at IS NULL)",
    removed_pattern_columns!()
);

/// The patterns of every live session, removed in one statement.
pub(super) const REMOVE_PATTERNS_ALL: &str = concat!(
    "DELETE FROM command_patterns
      WHERE EXISTS (SELECT 1 FROM sessions
                     WHERE sessions.id = command_patterns.session_id AND ended_at IS NULL)",
    removed_pattern_columns!()
);

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

    fn revoke_scopes_in(
        &mut self,
        reach: Reach<'_>,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<StandingGrant>> {
        let now = format_ts(at);
        let (sql, id) = match reach {
            Reach::One(id) => (REVOKE_SCOPES_ONE, Some(id.as_str())),
            Reach::Subtree(id) => (REVOKE_SCOPES_SUBTREE, Some(id.as_str())),
            Reach::All => (REVOKE_SCOPES_ALL, None),
        };
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> =
            vec![(":now", &now), (":actor", &actor)];
        if let Some(id) = &id {
            params.push((":id", id));
        }
        standing_rows(&mut self.conn().prepare_cached(sql)?, &params)
    }

    fn remove_patterns_in(&mut self, reach: Reach<'_>) -> Result<Vec<StandingGrant>> {
        let (sql, id) = match reach {
            Reach::One(id) => (REMOVE_PATTERNS_ONE, Some(id.as_str())),
            Reach::Subtree(id) => (REMOVE_PATTERNS_SUBTREE, Some(id.as_str())),
            Reach::All => (REMOVE_PATTERNS_ALL, None),
        };
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> = Vec::new();
        if let Some(id) = &id {
            params.push((":id", id));
        }
        standing_rows(&mut self.conn().prepare_cached(sql)?, &params)
    }
}
