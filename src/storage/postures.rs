//! SQL for postures, epochs and revocation.

use rusqlite::{named_params, Connection, OptionalExtension, Row, Transaction};

use super::sessions::subtree_walk;
use super::ts;
use crate::error::{Corruption, Error, Result};
use crate::postures::{Affected, Posture, PostureLevel, PostureSource};

/// The current epoch: the highest.
pub(crate) fn current_epoch(conn: &Connection) -> Result<i64> {
    let mut stmt = conn.prepare_cached("SELECT max(epoch) FROM epochs")?;
    let epoch: Option<i64> = stmt.query_row([], |row| row.get(0))?;
    epoch.ok_or_else(|| Error::Corruption(Corruption::new("the epochs table is empty")))
}

/// The posture columns of `postures AS p` that [`RawPosture::from_row`] reads, in its order. A
/// macro, so statements that include them are literals built by `concat!` at compile time
/// rather than strings formatted on every call of a hot path.
macro_rules! posture_columns {
    () => {
        "p.session_id, p.posture, p.source, p.granted_by, p.granted_at, p.granted_on, \
         p.inherited_from, p.allocated_at, p.chain, p.epoch, \
         p.epoch = (SELECT max(epoch) FROM epochs)"
    };
}
pub(crate) use posture_columns;

pub(crate) struct RawPosture {
    session: String,
    level: String,
    source: String,
    granted_by: String,
    granted_at: String,
    granted_on: String,
    inherited_from: Option<String>,
    allocated_at: String,
    chain: String,
    epoch: i64,
    current: bool,
}

impl RawPosture {
    /// Reads the [`posture_columns!`] starting at column `at`.
    pub(crate) fn from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<RawPosture> {
        Ok(RawPosture {
            session: row.get(at)?,
            level: row.get(at + 1)?,
            source: row.get(at + 2)?,
            granted_by: row.get(at + 3)?,
            granted_at: row.get(at + 4)?,
            granted_on: row.get(at + 5)?,
            inherited_from: row.get(at + 6)?,
            allocated_at: row.get(at + 7)?,
            chain: row.get(at + 8)?,
            epoch: row.get(at + 9)?,
            current: row.get(at + 10)?,
        })
    }

    pub(crate) fn into_posture(self) -> Result<Posture> {
        let bad = |what: &str| {
            Error::Corruption(Corruption::new(format!(
                "posture of {:?}: {what}",
                self.session
            )))
        };
        let level = PostureLevel::from_db(&self.level).ok_or_else(|| bad("unknown level"))?;
        let source = match self.source.as_str() {
            "granted" => PostureSource::Granted,
            "inherited" => PostureSource::Inherited,
            _ => return Err(bad("unknown source")),
        };
        let chain: Vec<String> =
            serde_json::from_str(&self.chain).map_err(|_| bad("chain is not a list of ids"))?;
        Ok(Posture {
            level,
            source,
            granted_at: ts("postures.granted_at", &self.granted_at)?,
            allocated_at: ts("postures.allocated_at", &self.allocated_at)?,
            session: self.session,
            granted_by: self.granted_by,
            granted_on: self.granted_on,
            inherited_from: self.inherited_from,
            chain,
            epoch: self.epoch,
            current: self.current,
        })
    }
}

/// The posture row of a session, current or not.
pub(crate) const POSTURE: &str = concat!(
    "SELECT ",
    posture_columns!(),
    " FROM postures AS p WHERE p.session_id = :id"
);

/// The posture row of `id`, current or not.
pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<Posture>> {
    let mut stmt = conn.prepare_cached(POSTURE)?;
    stmt.query_row(named_params! { ":id": id }, |row| {
        RawPosture::from_row(row, 0)
    })
    .optional()?
    .map(RawPosture::into_posture)
    .transpose()
}

/// Records an operator's grant in the current epoch, replacing any posture the session held.
pub(crate) const GRANT: &str = "INSERT OR REPLACE INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     VALUES (:id, :posture, 'granted', :actor, :now, :id, NULL, :now, json_array(:id),
             (SELECT max(epoch) FROM epochs))";

/// Records an operator's grant on `id` in the current epoch, replacing any posture it held.
pub(crate) fn grant(
    tx: &Transaction<'_>,
    id: &str,
    level: PostureLevel,
    actor: &str,
    now: &str,
) -> Result<()> {
    let mut stmt = tx.prepare_cached(GRANT)?;
    stmt.execute(named_params! {
        ":id": id,
        ":posture": level.as_str(),
        ":actor": actor,
        ":now": now,
    })?;
    Ok(())
}

/// Rule P1 in one statement: the creator's posture of the current epoch, copied to the child.
pub(crate) const INHERIT: &str = "INSERT INTO postures
         (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
          allocated_at, chain, epoch)
     SELECT :child, c.posture, 'inherited', c.granted_by, c.granted_at, c.granted_on,
            :creator, :now, json_insert(c.chain, '$[#]', :child), c.epoch
       FROM postures AS c
      WHERE c.session_id = :creator
        AND c.epoch = (SELECT max(epoch) FROM epochs)
     RETURNING posture";

/// Rule P1 in one statement, inside the allocation transaction: gives `child` exactly the
/// posture its creator holds in the current epoch, if any. Returns the level copied.
pub(crate) fn inherit(
    tx: &Transaction<'_>,
    child: &str,
    creator: &str,
    now: &str,
) -> Result<Option<PostureLevel>> {
    let mut stmt = tx.prepare_cached(INHERIT)?;
    let level: Option<String> = stmt
        .query_row(
            named_params! { ":child": child, ":creator": creator, ":now": now },
            |row| row.get(0),
        )
        .optional()?;
    level
        .map(|l| {
            PostureLevel::from_db(&l).ok_or_else(|| {
                Error::Corruption(Corruption::new(format!("posture {l:?} of {creator:?}")))
            })
        })
        .transpose()
}

/// A posture row removed by a revocation.
pub(crate) struct Removed {
    pub(crate) affected: Affected,
    pub(crate) source: &'static str,
    pub(crate) granted_on: String,
}

fn removed(row: &Row<'_>) -> rusqlite::Result<(String, String, String, String, i64, bool)> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn into_removed(raw: (String, String, String, String, i64, bool)) -> Result<Removed> {
    let (id, level, source, granted_on, depth, current) = raw;
    let posture = PostureLevel::from_db(&level).ok_or_else(|| {
        Error::Corruption(Corruption::new(format!("posture {level:?} of {id:?}")))
    })?;
    let source = if source == "granted" {
        "granted"
    } else {
        "inherited"
    };
    Ok(Removed {
        affected: Affected {
            id,
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
            posture,
            granted_directly: source == "granted",
            current,
        },
        source,
        granted_on,
    })
}

/// A revocation's `DELETE`, followed by what it returns about each row it removed: a macro, so
/// that each statement is a `concat!` literal rather than a string formatted on every call.
macro_rules! revoking {
    ($delete:expr) => {
        concat!(
            $delete,
            " RETURNING session_id, posture, source, granted_on,
               (SELECT depth FROM sessions WHERE sessions.id = postures.session_id),
               epoch = (SELECT max(epoch) FROM epochs)"
        )
    };
}

/// Runs a revocation's statement (built by [`revoking!`]) and returns what it removed, by
/// depth then id.
fn revoke_where(
    tx: &Transaction<'_>,
    statement: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Removed>> {
    let mut stmt = tx.prepare_cached(statement)?;
    let rows = stmt.query_map(params, removed)?;
    let mut rows = rows
        .map(|r| r.map_err(Error::from).and_then(into_removed))
        .collect::<Result<Vec<_>>>()?;
    rows.sort_by(|a, b| {
        (a.affected.depth, &a.affected.id).cmp(&(b.affected.depth, &b.affected.id))
    });
    Ok(rows)
}

/// Removes the posture of one session.
pub(crate) const REVOKE_ONE: &str = revoking!("DELETE FROM postures WHERE session_id = :id");

/// Removes the posture of `id` alone.
pub(crate) fn revoke_one(tx: &Transaction<'_>, id: &str) -> Result<Vec<Removed>> {
    revoke_where(tx, REVOKE_ONE, named_params! { ":id": id })
}

/// Rule R1 `cascade` in one statement: the subtree's walk, then each of its sessions' posture
/// by primary key.
pub(crate) const REVOKE_SUBTREE: &str = revoking!(concat!(
    subtree_walk!("id = :root"),
    "DELETE FROM postures WHERE session_id IN (SELECT id FROM subtree)"
));

/// Rule R1 `cascade`: removes the posture of `root` and of every descendant, created or
/// spawned, at any depth, in one statement.
pub(crate) fn revoke_subtree(tx: &Transaction<'_>, root: &str) -> Result<Vec<Removed>> {
    revoke_where(tx, REVOKE_SUBTREE, named_params! { ":root": root })
}

/// Rule R4: every posture. It reads the whole `postures` table, which holds only the postures
/// sessions hold now (a revocation deletes its rows), not a history.
pub(crate) const REVOKE_ALL: &str = revoking!("DELETE FROM postures");

/// Rule R4: removes every posture.
pub(crate) fn revoke_all(tx: &Transaction<'_>) -> Result<Vec<Removed>> {
    revoke_where(tx, REVOKE_ALL, [])
}

/// Every session in the subtree of `root` with its lineage and posture, ordered by id: the
/// state a preview token binds.
pub(crate) struct SubtreeRow {
    pub(crate) id: String,
    pub(crate) created_by: Option<String>,
    pub(crate) depth: u32,
    pub(crate) ended_at: Option<String>,
    pub(crate) posture: Option<Posture>,
}

/// The subtree of a session with each session's posture row, ordered by id.
pub(crate) const SUBTREE_WITH_POSTURES: &str = concat!(
    subtree_walk!("id = :root"),
    "SELECT subtree.id, subtree.created_by, subtree.depth, subtree.ended_at,
            p.session_id IS NOT NULL, ",
    posture_columns!(),
    "  FROM subtree LEFT JOIN postures AS p ON p.session_id = subtree.id
      ORDER BY subtree.id"
);

/// The subtree of `root` with each session's posture row, ordered by id.
pub(crate) fn subtree_with_postures(conn: &Connection, root: &str) -> Result<Vec<SubtreeRow>> {
    let mut stmt = conn.prepare_cached(SUBTREE_WITH_POSTURES)?;
    let rows = stmt.query_map(named_params! { ":root": root }, |row| {
        let has_posture: bool = row.get(4)?;
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, Option<String>>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, Option<String>>(3)?,
            if has_posture {
                Some(RawPosture::from_row(row, 5)?)
            } else {
                None
            },
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, created_by, depth, ended_at, posture) = row?;
        out.push(SubtreeRow {
            depth: u32::try_from(depth).map_err(|_| {
                Error::Corruption(Corruption::new(format!("session {id:?} has depth {depth}")))
            })?,
            id,
            created_by,
            ended_at,
            posture: posture.map(RawPosture::into_posture).transpose()?,
        });
    }
    Ok(out)
}

/// The descendants of a session (the walk starts at its children) that hold a posture inherited
/// through it: see [`inherited_through`].
pub(crate) const INHERITED_THROUGH: &str = concat!(
    subtree_walk!("created_by = :root"),
    "SELECT p.session_id, p.posture, subtree.depth, p.epoch = (SELECT max(epoch) FROM epochs)
       FROM subtree CROSS JOIN postures AS p ON p.session_id = subtree.id
      WHERE p.source = 'inherited'
        AND subtree.ended_at IS NULL
        AND p.epoch = (SELECT max(epoch) FROM epochs)
        AND EXISTS (SELECT 1 FROM json_each(p.chain) AS link WHERE link.value = :root)
      ORDER BY subtree.depth, p.session_id"
);

/// Live descendants of `root` (not `root` itself) holding a posture of the current epoch
/// inherited through it: the ones that still have authority that came through `root`.
pub(crate) fn inherited_through(conn: &Connection, root: &str) -> Result<Vec<Affected>> {
    let mut stmt = conn.prepare_cached(INHERITED_THROUGH)?;
    let rows = stmt.query_map(named_params! { ":root": root }, |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, bool>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, level, depth, current) = row?;
        out.push(Affected {
            posture: PostureLevel::from_db(&level).ok_or_else(|| {
                Error::Corruption(Corruption::new(format!("posture {level:?} of {id:?}")))
            })?,
            id,
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
            granted_directly: false,
            current,
        });
    }
    Ok(out)
}

/// Starts a new epoch; with `durable`, carries the previous epoch's postures into it.
/// Returns (new epoch, postures of the previous epoch).
pub(crate) fn start_epoch(
    tx: &Transaction<'_>,
    actor: &str,
    durable: bool,
    now: &str,
) -> Result<(i64, u64)> {
    let old = current_epoch(tx)?;
    let new = old + 1;
    tx.prepare_cached(
        "INSERT INTO epochs (epoch, started_at, started_by, durable)
         VALUES (:epoch, :now, :actor, :durable)",
    )?
    .execute(named_params! { ":epoch": new, ":now": now, ":actor": actor, ":durable": durable })?;
    let previous: u64 = if durable {
        tx.prepare_cached("UPDATE postures SET epoch = :new WHERE epoch = :old")?
            .execute(named_params! { ":new": new, ":old": old })? as u64
    } else {
        tx.prepare_cached("SELECT count(*) FROM postures WHERE epoch = :old")?
            .query_row(named_params! { ":old": old }, |row| row.get::<_, i64>(0))? as u64
    };
    Ok((new, previous))
}

/// Whether a session ended, and its posture row: two unique-key searches.
pub(crate) const DECISION_FACTS: &str = concat!(
    "SELECT s.ended_at IS NOT NULL, p.session_id IS NOT NULL, ",
    posture_columns!(),
    "  FROM sessions AS s LEFT JOIN postures AS p ON p.session_id = s.id
      WHERE s.id = ?1"
);

/// Everything a decision needs about a session in one statement: whether it ended, and its
/// posture row. `None` when the session is not recorded.
pub(crate) fn decision_facts(
    conn: &Connection,
    id: &str,
) -> Result<Option<(bool, Option<Posture>)>> {
    let mut stmt = conn.prepare_cached(DECISION_FACTS)?;
    let raw = stmt
        .query_row([id], |row| {
            let ended: bool = row.get(0)?;
            let has_posture: bool = row.get(1)?;
            let posture = if has_posture {
                Some(RawPosture::from_row(row, 2)?)
            } else {
                None
            };
            Ok((ended, posture))
        })
        .optional()?;
    raw.map(|(ended, posture)| Ok((ended, posture.map(RawPosture::into_posture).transpose()?)))
        .transpose()
}
