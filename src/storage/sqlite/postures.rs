//! The `postures` and `epochs` tables, and revocation as one statement.
//!
//! Who may grant, and when a revocation reaches whom, are the postures concept's; the triggers
//! refuse a posture that breaks rules P1 and P2.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension, Row};

use super::columns::{depth, level, opt_time, posture_columns, posture_of};
use super::sessions::subtree_walk;
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::model::{Id, Posture, PostureLevel, PostureSource};
use crate::storage::{
    DecisionFacts, GrantReads, HeldPosture, NewEpoch, PostureReads, PostureWrites, Reach,
    SubtreePosture,
};

/// The current epoch: the highest.
pub(super) const CURRENT_EPOCH: &str = "SELECT max(epoch) AS epoch FROM epochs";

/// The posture row of a session, current or not.
pub(super) const POSTURE: &str = concat!(
    "SELECT ",
    posture_columns!(),
    " FROM postures AS p WHERE p.session_id = :id"
);

/// Whether a session ended, its posture row, and whether the ledger's option `untrusted_asks`
/// is on: three unique-key searches.
pub(super) const DECISION_FACTS: &str = concat!(
    "SELECT s.ended_at IS NOT NULL AS ended, ",
    posture_columns!(),
    ",      (SELECT value = 'on' FROM ledger_options WHERE name = 'untrusted_asks')
              AS untrusted_asks
       FROM sessions AS s LEFT JOIN postures AS p ON p.session_id = s.id
      WHERE s.id = :id"
);

/// The subtree of a session with each session's posture row, ordered by id.
pub(super) const SUBTREE_WITH_POSTURES: &str = concat!(
    subtree_walk!("id = :root"),
    "SELECT subtree.id, subtree.created_by, subtree.depth, subtree.ended_at, ",
    posture_columns!(),
    "  FROM subtree LEFT JOIN postures AS p ON p.session_id = subtree.id
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
    subtree_walk!("created_by = :root"),
    "SELECT ",
    held_columns!(),
    "  FROM subtree CROSS JOIN postures ON postures.session_id = subtree.id
      WHERE postures.source = 'inherited'
        AND subtree.ended_at IS NULL
        AND postures.epoch = (SELECT max(epoch) FROM epochs)
        AND EXISTS (SELECT 1 FROM json_each(postures.chain) AS link WHERE link.value = :root)
      ORDER BY subtree.depth, postures.session_id"
);

/// A posture row [`held_columns!`] read.
fn held_of(row: &Row<'_>) -> Result<HeldPosture> {
    let id: String = row.get("session_id")?;
    let source = PostureSource::from_word(&row.get::<_, String>("source")?)
        .ok_or_else(|| Corruption::new(format!("posture of {id:?}: unknown source")))?;
    Ok(HeldPosture {
        level: level(&id, &row.get::<_, String>("posture")?)?,
        depth: depth(&id, row.get("depth")?)?,
        source,
        granted_on: row.get("granted_on")?,
        current: row.get("current")?,
        id,
    })
}

/// Runs a statement returning [`held_columns!`] rows, by depth then id.
fn held(
    stmt: &mut rusqlite::CachedStatement<'_>,
    params: &[(&str, &dyn rusqlite::ToSql)],
) -> Result<Vec<HeldPosture>> {
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(held_of(row)?);
    }
    out.sort_by(|a, b| (a.depth, &a.id).cmp(&(b.depth, &b.id)));
    Ok(out)
}

impl PostureReads for Conn<'_> {
    fn current_epoch(&mut self) -> Result<i64> {
        let mut stmt = self.conn.prepare_cached(CURRENT_EPOCH)?;
        let epoch: Option<i64> = stmt.query_row([], |row| row.get("epoch"))?;
        epoch.ok_or_else(|| Corruption::new("the epochs table is empty").into())
    }

    fn posture(&mut self, id: Id<'_>) -> Result<Option<Posture>> {
        let mut stmt = self.conn.prepare_cached(POSTURE)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        match rows.next()? {
            Some(row) => posture_of(row),
            None => Ok(None),
        }
    }

    fn decision_facts(&mut self, id: Id<'_>, now: DateTime<Utc>) -> Result<Option<DecisionFacts>> {
        let mut stmt = self.conn.prepare_cached(DECISION_FACTS)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let (ended, posture) = (row.get("ended")?, posture_of(row)?);
        let untrusted_asks = row
            .get::<_, Option<bool>>("untrusted_asks")?
            .unwrap_or(false);
        drop(rows);
        drop(stmt);
        // SQLite runs in the process: three statements cost what one would.
        Ok(Some(DecisionFacts {
            ended,
            posture,
            untrusted_asks,
            patterns: self.patterns(id)?,
            live_scope: self.live_scope(id, now)?,
        }))
    }

    fn subtree_postures(&mut self, root: Id<'_>) -> Result<Vec<SubtreePosture>> {
        let mut stmt = self.conn.prepare_cached(SUBTREE_WITH_POSTURES)?;
        let mut rows = stmt.query(named_params! { ":root": root.as_str() })?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let id: String = row.get("id")?;
            out.push(SubtreePosture {
                depth: depth(&id, row.get("depth")?)?,
                created_by: row.get("created_by")?,
                ended_at: opt_time("sessions.ended_at", row.get("ended_at")?)?,
                posture: posture_of(row)?,
                id,
            });
        }
        Ok(out)
    }

    fn inherited_through(&mut self, root: Id<'_>) -> Result<Vec<HeldPosture>> {
        let mut stmt = self.conn.prepare_cached(INHERITED_THROUGH)?;
        held(&mut stmt, named_params! { ":root": root.as_str() })
    }
}

/// Records an operator's grant in the current epoch, replacing any posture the session held.
pub(super) const GRANT: &str = "INSERT OR REPLACE INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     VALUES (:id, :posture, 'granted', :actor, :now, :id, NULL, :now, json_array(:id),
             (SELECT max(epoch) FROM epochs))";

/// Rules P1 and P3 in one statement: the creator's posture of the current epoch, copied to
/// the child.
pub(super) const INHERIT: &str = "INSERT INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     SELECT :child, c.posture, 'inherited', c.granted_by, c.granted_at, c.granted_on,
            :creator, :now, json_insert(c.chain, '$[#]', :child), c.epoch
       FROM postures AS c
      WHERE c.session_id = :creator
        AND c.epoch = (SELECT max(epoch) FROM epochs)
     RETURNING posture";

/// A revocation's `DELETE`, followed by the [`held_columns!`] of each row it removed.
macro_rules! revoking {
    ($delete:expr) => {
        concat!($delete, " RETURNING ", held_columns!())
    };
}

/// Removes the posture of one session.
pub(super) const REVOKE_ONE: &str = revoking!("DELETE FROM postures WHERE session_id = :id");

/// Rule R1 `cascade` in one statement: the subtree's walk, then each of its sessions' posture
/// by primary key.
pub(super) const REVOKE_SUBTREE: &str = revoking!(concat!(
    subtree_walk!("id = :id"),
    "DELETE FROM postures WHERE session_id IN (SELECT id FROM subtree)"
));

/// Rule R4: every posture. It reads the whole `postures` table, which holds only the postures
/// sessions hold now (a revocation deletes its rows), not a history.
pub(super) const REVOKE_ALL: &str = revoking!("DELETE FROM postures");

/// Starts an epoch.
pub(super) const START_EPOCH: &str = "INSERT INTO epochs (epoch, started_at, started_by, durable)
     VALUES (:epoch, :now, :actor, :durable)";

/// Carries the previous epoch's postures into the new one.
pub(super) const CARRY_POSTURES: &str = "UPDATE postures SET epoch = :new WHERE epoch = :old";

/// Counts the previous epoch's postures, which lapse.
pub(super) const COUNT_POSTURES: &str = "SELECT count(*) AS n FROM postures WHERE epoch = :old";

impl PostureWrites for Tx<'_> {
    fn grant_posture(
        &mut self,
        id: Id<'_>,
        level: PostureLevel,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(GRANT)?;
        stmt.execute(named_params! {
            ":id": id.as_str(),
            ":posture": level.as_str(),
            ":actor": actor,
            ":now": format_ts(at),
        })?;
        Ok(())
    }

    fn inherit_posture(
        &mut self,
        child: Id<'_>,
        creator: Id<'_>,
        at: DateTime<Utc>,
    ) -> Result<Option<PostureLevel>> {
        let mut stmt = self.conn().prepare_cached(INHERIT)?;
        let params = named_params! {
            ":child": child.as_str(), ":creator": creator.as_str(), ":now": format_ts(at),
        };
        let copied: Option<String> = stmt
            .query_row(params, |row| row.get("posture"))
            .optional()?;
        copied
            .map(|word| level(creator.as_str(), &word))
            .transpose()
    }

    fn revoke_postures(&mut self, which: Reach<'_>) -> Result<Vec<HeldPosture>> {
        let (sql, id) = match which {
            Reach::One(id) => (REVOKE_ONE, Some(id)),
            Reach::Subtree(id) => (REVOKE_SUBTREE, Some(id)),
            Reach::All => (REVOKE_ALL, None),
        };
        let mut stmt = self.conn().prepare_cached(sql)?;
        match id {
            Some(id) => held(&mut stmt, named_params! { ":id": id.as_str() }),
            None => held(&mut stmt, &[]),
        }
    }

    fn start_epoch(&mut self, actor: &str, carry: bool, at: DateTime<Utc>) -> Result<NewEpoch> {
        let old = self.read.current_epoch()?;
        let new = old + 1;
        self.conn()
            .prepare_cached(START_EPOCH)?
            .execute(named_params! {
                ":epoch": new, ":now": format_ts(at), ":actor": actor, ":durable": carry,
            })?;
        let previous = if carry {
            self.conn()
                .prepare_cached(CARRY_POSTURES)?
                .execute(named_params! { ":new": new, ":old": old })? as u64
        } else {
            self.conn()
                .prepare_cached(COUNT_POSTURES)?
                .query_row(named_params! { ":old": old }, |row| row.get::<_, i64>("n"))?
                as u64
        };
        Ok(NewEpoch {
            epoch: new,
            previous,
        })
    }
}
