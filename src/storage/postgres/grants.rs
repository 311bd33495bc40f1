//! The `command_patterns` and `override_scopes` tables on PostgreSQL: each statement a range of
//! one session's rows of the primary key.
//!
//! Whether a stored pattern still admits anything is the grants concept's, not this file's.

use postgres::Row;

use super::columns::{depth, Time};
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::error::{Corruption, Result};
use crate::model::{Grant, Id, Scope, StandingGrant};
use crate::storage::{GrantReads, GrantWrites, PatternRow, Reach};

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

/// The standing grants of the live sessions `$sessions` (a `FROM` item that names them `s`,
/// with its conditions in `$live`): their scopes live at `$2`, then their patterns, each found
/// by the primary key's range of its session.
macro_rules! standing_sql {
    ($with:expr, $sessions:literal, $live:literal) => {
        concat!(
            $with,
            "SELECT s.id AS session_id, s.depth, 'scope' AS kind, o.name AS name,
                    o.granted_by AS granted_by, o.granted_at AS granted_at,
                    o.expires_at AS expires_at
               FROM ",
            $sessions,
            " JOIN override_scopes AS o ON o.session_id = s.id
              WHERE ",
            $live,
            " AND o.revoked_at IS NULL AND o.expires_at > $2
             UNION ALL
             SELECT s.id, s.depth, 'pattern', c.pattern, c.added_by, c.added_at, NULL
               FROM ",
            $sessions,
            " JOIN command_patterns AS c ON c.session_id = s.id
              WHERE ",
            $live
        )
    };
}

/// The standing grants of one live session.
pub(super) const STANDING_ONE: &str =
    standing_sql!("", "sessions AS s", "s.id = $1 AND s.ended_at IS NULL");

/// The standing grants of the live sessions of a subtree.
pub(super) const STANDING_SUBTREE: &str = standing_sql!(
    subtree_walk!("id = $1"),
    "subtree AS s",
    "s.ended_at IS NULL"
);

/// The standing grants of every live session: the scopes not revoked, by expiry, then every
/// pattern, each with its session by key.
pub(super) const STANDING_ALL: &str = "SELECT s.id AS session_id, s.depth, 'scope' AS kind,
            o.name AS name, o.granted_by AS granted_by, o.granted_at AS granted_at,
            o.expires_at AS expires_at
       FROM override_scopes AS o JOIN sessions AS s ON s.id = o.session_id
      WHERE o.revoked_at IS NULL AND o.expires_at > $1 AND s.ended_at IS NULL
     UNION ALL
     SELECT s.id, s.depth, 'pattern', c.pattern, c.added_by, c.added_at, NULL
       FROM command_patterns AS c JOIN sessions AS s ON s.id = c.session_id
      WHERE s.ended_at IS NULL";

/// A standing grant as [`standing_sql!`] and the revocations' `RETURNING` read it.
fn standing_of(row: &Row) -> Result<StandingGrant> {
    let session: String = row.try_get("session_id")?;
    let kind: String = row.try_get("kind")?;
    let name: String = row.try_get("name")?;
    let grant = match kind.as_str() {
        "scope" => Grant::Scope {
            scope: name,
            expires_at: row.try_get("expires_at")?,
        },
        "pattern" => Grant::Pattern { pattern: name },
        other => return Err(Corruption::new(format!("a grant of kind {other:?}")).into()),
    };
    Ok(StandingGrant {
        depth: depth(&session, row.try_get("depth")?)?,
        granted_by: row.try_get("granted_by")?,
        granted_at: row.try_get("granted_at")?,
        session,
        grant,
    })
}

/// The standing grants in `rows`.
fn standing_rows(rows: &[Row]) -> Result<Vec<StandingGrant>> {
    rows.iter().map(standing_of).collect()
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

    fn standing(&mut self, reach: Reach<'_>, now: Time) -> Result<Vec<StandingGrant>> {
        let rows = match reach {
            Reach::One(id) => self.rows(STANDING_ONE, &[&id.as_str(), &now])?,
            Reach::Subtree(id) => self.rows(STANDING_SUBTREE, &[&id.as_str(), &now])?,
            Reach::All => self.rows(STANDING_ALL, &[&now])?,
        };
        standing_rows(&rows)
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
                    added_at AS granted_at, NULL::timestamptz AS expires_at"
    };
}

/// The scopes live at `$2` of one live session, revoked by `$3`.
pub(super) const REVOKE_SCOPES_ONE: &str = concat!(
    "UPDATE override_scopes SET revoked_at = $2, revoked_by = $3
      WHERE session_id = $1 AND revoked_at IS NULL AND expires_at > $2
        AND EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND ended_at IS NULL)",
    revoked_scope_columns!()
);

/// The scopes live at `$2` of the live sessions of a subtree, revoked in one statement.
pub(super) const REVOKE_SCOPES_SUBTREE: &str = concat!(
    subtree_walk!("id = $1"),
    "UPDATE override_scopes SET revoked_at = $2, revoked_by = $3
      WHERE session_id IN (SELECT id FROM subtree WHERE ended_at IS NULL)
        AND revoked_at IS NULL AND expires_at > $2",
    revoked_scope_columns!()
);

/// The scopes live at `$1` of every live session, revoked in one statement.
pub(super) const REVOKE_SCOPES_ALL: &str = concat!(
    "UPDATE override_scopes SET revoked_at = $1, revoked_by = $2
      WHERE revoked_at IS NULL AND expires_at > $1
        AND EXISTS (SELECT 1 FROM sessions
                     WHERE sessions.id = override_scopes.session_id AND ended_at IS NULL)",
    revoked_scope_columns!()
);

/// The patterns of one live session, removed.
pub(super) const REMOVE_PATTERNS_ONE: &str = concat!(
    "DELETE FROM command_patterns
      WHERE session_id = $1
        AND EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND ended_at IS NULL)",
    removed_pattern_columns!()
);

/// The patterns of the live sessions of a subtree, removed in one statement.
pub(super) const REMOVE_PATTERNS_SUBTREE: &str = concat!(
    subtree_walk!("id = $1"),
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

    fn revoke_scopes_in(
        &mut self,
        reach: Reach<'_>,
        actor: &str,
        at: Time,
    ) -> Result<Vec<StandingGrant>> {
        let rows = match reach {
            Reach::One(id) => self
                .read
                .rows(REVOKE_SCOPES_ONE, &[&id.as_str(), &at, &actor])?,
            Reach::Subtree(id) => self
                .read
                .rows(REVOKE_SCOPES_SUBTREE, &[&id.as_str(), &at, &actor])?,
            Reach::All => self.read.rows(REVOKE_SCOPES_ALL, &[&at, &actor])?,
        };
        standing_rows(&rows)
    }

    fn remove_patterns_in(&mut self, reach: Reach<'_>) -> Result<Vec<StandingGrant>> {
        let rows = match reach {
            Reach::One(id) => self.read.rows(REMOVE_PATTERNS_ONE, &[&id.as_str()])?,
            Reach::Subtree(id) => self.read.rows(REMOVE_PATTERNS_SUBTREE, &[&id.as_str()])?,
            Reach::All => self.read.rows(REMOVE_PATTERNS_ALL, &[])?,
        };
        standing_rows(&rows)
    }
}
