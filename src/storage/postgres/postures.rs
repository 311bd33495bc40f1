//! The `postures` and `epochs` tables on PostgreSQL, and revocation as one statement.
//!
//! Who may grant, and when a revocation reaches whom, are the postures concept's; the triggers
//! refuse a posture that breaks rules P1 and P2.

use postgres::Row;

use super::columns::{depth, level, posture_columns, posture_of, Time};
use super::sessions::subtree_walk;
use super::writes::Held;
use super::{Conn, Tx};
use crate::error::{Corruption, Result};
use crate::model::{Id, Posture, PostureLevel, PostureSource, Scope};
use crate::storage::{
    DecisionFacts, HeldPosture, NewEpoch, PatternRow, PostureReads, PostureWrites, Reach,
    SubtreePosture,
};

/// The current epoch: the highest.
pub(super) const CURRENT_EPOCH: &str = "SELECT max(epoch) AS epoch FROM epochs";

/// The posture row of a session, current or not.
pub(super) const POSTURE: &str = concat!(
    "SELECT ",
    posture_columns!(),
    " FROM postures AS p WHERE p.session_id = $1"
);

/// Everything a decision reads, in one statement: whether the session ended, its posture row,
/// its command patterns (as three arrays in one order: oldest first, then by text; NULL for
/// none), and its scope live at `$2` that lasts longest. Primary-key searches and two ranges of
/// the session's own rows, each joined `LATERAL` with `OFFSET 0` so that it stays one.
pub(super) const DECISION_FACTS: &str = concat!(
    "SELECT s.ended_at IS NOT NULL AS ended, ",
    posture_columns!(),
    ",      cp.patterns, cp.added_by, cp.added_at,
            sc.session_id AS scope_session, sc.name AS scope_name,
            sc.granted_by AS scope_granted_by, sc.granted_at AS scope_granted_at,
            sc.expires_at AS scope_expires_at, sc.revoked_at AS scope_revoked_at,
            (SELECT value = 'on' FROM ledger_options WHERE name = 'untrusted_asks')
              AS untrusted_asks
       FROM sessions AS s
       LEFT JOIN postures AS p ON p.session_id = s.id
       LEFT JOIN LATERAL (
            SELECT array_agg(pattern ORDER BY added_at, pattern) AS patterns,
                   array_agg(added_by ORDER BY added_at, pattern) AS added_by,
                   array_agg(added_at ORDER BY added_at, pattern) AS added_at
              FROM command_patterns WHERE session_id = s.id OFFSET 0) AS cp ON true
       LEFT JOIN LATERAL (
            SELECT * FROM override_scopes
             WHERE session_id = s.id AND revoked_at IS NULL AND expires_at > $2
             ORDER BY expires_at DESC, name LIMIT 1) AS sc ON true
      WHERE s.id = $1"
);

/// The subtree of a session with each session's posture row, ordered by id. Each posture row
/// is found by its primary key, joined `LATERAL` with `OFFSET 0` so that no plan but a nested
/// loop of key searches exists (see `sessions::TREE`, whose join this is).
pub(super) const SUBTREE_WITH_POSTURES: &str = concat!(
    subtree_walk!("id = $1"),
    "SELECT subtree.id, subtree.created_by, subtree.depth, subtree.ended_at, ",
    posture_columns!(),
    "  FROM subtree
       LEFT JOIN LATERAL (SELECT * FROM postures WHERE session_id = subtree.id OFFSET 0) AS p
              ON true
      ORDER BY subtree.id"
);

/// What a revocation reads of each posture row it removes or finds.
macro_rules! held_columns {
    () => {
        "session_id, posture, source, granted_on,
         (SELECT depth FROM sessions WHERE sessions.id = postures.session_id) AS depth,
         epoch = (SELECT max(epoch) FROM epochs) AS current"
    };
}

/// The descendants of a session (the walk starts at its children) that hold, in the current
/// epoch, a live posture inherited through it: its id is on the posture's chain.
pub(super) const INHERITED_THROUGH: &str = concat!(
    subtree_walk!("created_by = $1"),
    "SELECT ",
    held_columns!(),
    "  FROM subtree JOIN postures ON postures.session_id = subtree.id
      WHERE postures.source = 'inherited'
        AND subtree.ended_at IS NULL
        AND postures.epoch = (SELECT max(epoch) FROM epochs)
        AND postures.chain ? $1
      ORDER BY subtree.depth, postures.session_id"
);

/// A posture row [`held_columns!`] read.
fn held_of(row: &Row) -> Result<HeldPosture> {
    let id: String = row.try_get("session_id")?;
    let source = PostureSource::from_word(&row.try_get::<_, String>("source")?)
        .ok_or_else(|| Corruption::new(format!("posture of {id:?}: unknown source")))?;
    Ok(HeldPosture {
        level: level(&id, &row.try_get::<_, String>("posture")?)?,
        depth: depth(&id, row.try_get("depth")?)?,
        source,
        granted_on: row.try_get("granted_on")?,
        current: row.try_get("current")?,
        id,
    })
}

/// The rows of a statement returning [`held_columns!`], by depth then id.
fn held(rows: &[Row]) -> Result<Vec<HeldPosture>> {
    let mut out = rows.iter().map(held_of).collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| (a.depth, &a.id).cmp(&(b.depth, &b.id)));
    Ok(out)
}

impl PostureReads for Conn<'_> {
    fn current_epoch(&mut self) -> Result<i64> {
        let row = self.row(CURRENT_EPOCH, &[])?;
        let epoch: Option<i64> = match &row {
            Some(row) => row.try_get("epoch")?,
            None => None,
        };
        epoch.ok_or_else(|| Corruption::new("the epochs table is empty").into())
    }

    fn posture(&mut self, id: Id<'_>) -> Result<Option<Posture>> {
        match self.row(POSTURE, &[&id.as_str()])? {
            Some(row) => posture_of(&row),
            None => Ok(None),
        }
    }

    fn decision_facts(&mut self, id: Id<'_>, now: Time) -> Result<Option<DecisionFacts>> {
        let Some(row) = self.row(DECISION_FACTS, &[&id.as_str(), &now])? else {
            return Ok(None);
        };
        let patterns: Option<Vec<String>> = row.try_get("patterns")?;
        let added_by: Option<Vec<String>> = row.try_get("added_by")?;
        let added_at: Option<Vec<Time>> = row.try_get("added_at")?;
        let patterns = patterns
            .unwrap_or_default()
            .into_iter()
            .zip(added_by.unwrap_or_default())
            .zip(added_at.unwrap_or_default())
            .map(|((pattern, added_by), added_at)| PatternRow {
                pattern,
                added_by,
                added_at,
            })
            .collect();
        let live_scope = match row.try_get::<_, Option<String>>("scope_session")? {
            Some(session) => Some(Scope {
                session,
                name: row.try_get("scope_name")?,
                granted_by: row.try_get("scope_granted_by")?,
                granted_at: row.try_get("scope_granted_at")?,
                expires_at: row.try_get("scope_expires_at")?,
                revoked_at: row.try_get("scope_revoked_at")?,
            }),
            None => None,
        };
        Ok(Some(DecisionFacts {
            ended: row.try_get("ended")?,
            posture: posture_of(&row)?,
            untrusted_asks: row
                .try_get::<_, Option<bool>>("untrusted_asks")?
                .unwrap_or(false),
            patterns,
            live_scope,
        }))
    }

    fn subtree_postures(&mut self, root: Id<'_>) -> Result<Vec<SubtreePosture>> {
        let rows = self.rows(SUBTREE_WITH_POSTURES, &[&root.as_str()])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("id")?;
            out.push(SubtreePosture {
                depth: depth(&id, row.try_get("depth")?)?,
                created_by: row.try_get("created_by")?,
                ended_at: row.try_get("ended_at")?,
                posture: posture_of(row)?,
                id,
            });
        }
        Ok(out)
    }

    fn inherited_through(&mut self, root: Id<'_>) -> Result<Vec<HeldPosture>> {
        held(&self.rows(INHERITED_THROUGH, &[&root.as_str()])?)
    }
}

/// Removes the posture a session held before an operator's grant replaces it: the triggers
/// refuse any change to a posture row but a move into a later epoch, so a replacement is a
/// deletion and an insertion, in the grant's transaction.
pub(super) const CLEAR_FOR_GRANT: &str = "DELETE FROM postures WHERE session_id = $1";

/// Records an operator's grant in the current epoch.
pub(super) const GRANT: &str = "INSERT INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     VALUES ($1, $2, 'granted', $3, $4, $1, NULL, $4, jsonb_build_array($1::text),
             (SELECT max(epoch) FROM epochs))";

/// Rules P1 and P3 in one statement: the creator's posture of the current epoch, copied to
/// the child, with the child added to the delegation chain.
pub(super) const INHERIT: &str = "INSERT INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     SELECT $1, c.posture, 'inherited', c.granted_by, c.granted_at, c.granted_on,
            $2, $3, c.chain || jsonb_build_array($1::text), c.epoch
       FROM postures AS c
      WHERE c.session_id = $2
        AND c.epoch = (SELECT max(epoch) FROM epochs)
     RETURNING posture";

/// A revocation's `DELETE`, followed by the [`held_columns!`] of each row it removed.
macro_rules! revoking {
    ($delete:expr) => {
        concat!($delete, " RETURNING ", held_columns!())
    };
}

/// Removes the posture of one session.
pub(super) const REVOKE_ONE: &str = revoking!("DELETE FROM postures WHERE session_id = $1");

/// Rule R1 `cascade` in one statement: the subtree's walk, then each of its sessions' posture
/// by primary key.
pub(super) const REVOKE_SUBTREE: &str = revoking!(concat!(
    subtree_walk!("id = $1"),
    "DELETE FROM postures WHERE session_id IN (SELECT id FROM subtree)"
));

/// Rule R4: every posture. `postures` holds only the postures sessions hold now.
pub(super) const REVOKE_ALL: &str = revoking!("DELETE FROM postures");

/// Starts an epoch.
pub(super) const START_EPOCH: &str =
    "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES ($1, $2, $3, $4)";

/// Carries the previous epoch's postures into the new one.
pub(super) const CARRY_POSTURES: &str = "UPDATE postures SET epoch = $1 WHERE epoch = $2";

/// Counts the previous epoch's postures, which lapse.
pub(super) const COUNT_POSTURES: &str = "SELECT count(*) AS n FROM postures WHERE epoch = $1";

impl PostureWrites for Tx<'_> {
    fn grant_posture(
        &mut self,
        id: Id<'_>,
        level: PostureLevel,
        actor: &str,
        at: Time,
    ) -> Result<()> {
        self.read.execute(CLEAR_FOR_GRANT, &[&id.as_str()])?;
        self.read
            .execute(GRANT, &[&id.as_str(), &level.as_str(), &actor, &at])?;
        Ok(())
    }

    fn inherit_posture(
        &mut self,
        child: Id<'_>,
        creator: Id<'_>,
        at: Time,
    ) -> Result<Option<PostureLevel>> {
        let row = self
            .read
            .row(INHERIT, &[&child.as_str(), &creator.as_str(), &at])?;
        match row {
            Some(row) => Ok(Some(level(
                creator.as_str(),
                &row.try_get::<_, String>("posture")?,
            )?)),
            None => Ok(None),
        }
    }

    /// Held, and written with the transaction's next statement (`writes.rs`): a create's
    /// copy becomes one statement with its child and its audit row.
    fn inherit_known_posture(
        &mut self,
        child: Id<'_>,
        creator: Id<'_>,
        at: Time,
        expected: Option<PostureLevel>,
    ) -> Result<()> {
        self.read.held.push(Held::Inherit {
            child: child.as_str().to_owned(),
            creator: creator.as_str().to_owned(),
            at,
            expected,
        });
        Ok(())
    }

    fn revoke_postures(&mut self, which: Reach<'_>) -> Result<Vec<HeldPosture>> {
        let rows = match which {
            Reach::One(id) => self.read.rows(REVOKE_ONE, &[&id.as_str()])?,
            Reach::Subtree(id) => self.read.rows(REVOKE_SUBTREE, &[&id.as_str()])?,
            Reach::All => self.read.rows(REVOKE_ALL, &[])?,
        };
        held(&rows)
    }

    fn start_epoch(&mut self, actor: &str, carry: bool, at: Time) -> Result<NewEpoch> {
        let old = self.read.current_epoch()?;
        let new = old + 1;
        self.read
            .execute(START_EPOCH, &[&new, &at, &actor, &carry])?;
        let previous = if carry {
            self.read.execute(CARRY_POSTURES, &[&new, &old])?
        } else {
            let row = self.read.row(COUNT_POSTURES, &[&old])?;
            match row {
                Some(row) => u64::try_from(row.try_get::<_, i64>("n")?).unwrap_or(0),
                None => 0,
            }
        };
        Ok(NewEpoch {
            epoch: new,
            previous,
        })
    }
}
