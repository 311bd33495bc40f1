//! SQL for the `labels` table: reading a stored label, first-read inheritance (one recursive
//! CTE), and raises.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use super::postures::posture_columns;
use super::{opt_ts, ts};
use crate::error::{Corruption, Error, Result};
use crate::labels::{Label, Materialized, SessionState, Taint};
use crate::postures::{Posture, PostureLevel};

/// A session's state in one statement, the hot path of every read: its stored label with
/// provenance, whether it ended, and its posture row. Three primary-key searches.
pub(crate) const STATE: &str = concat!(
    "SELECT l.taint, l.untrusted, l.materialized_how, l.inherited_from, l.materialized_at,
            l.raised_at, s.ended_at IS NOT NULL, p.session_id IS NOT NULL, ",
    posture_columns!(),
    "  FROM labels AS l
       CROSS JOIN sessions AS s ON s.id = l.session_id
       LEFT JOIN postures AS p ON p.session_id = l.session_id
      WHERE l.session_id = ?1"
);

/// A session's state in one statement, the hot path of every read: its stored label with
/// provenance, whether it ended, and its posture row. `None` when it is not materialized.
pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<SessionState>> {
    let mut stmt = conn.prepare_cached(STATE)?;
    let raw = stmt
        .query_row([id], |row| {
            let has_posture: bool = row.get(7)?;
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, bool>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, Option<String>>(5)?,
                row.get::<_, bool>(6)?,
                if has_posture {
                    Some(super::postures::RawPosture::from_row(row, 8)?)
                } else {
                    None
                },
            ))
        })
        .optional()?;
    let Some((taint, untrusted, how, from, materialized_at, raised_at, ended, posture)) = raw
    else {
        return Ok(None);
    };
    let materialized = match (how.as_str(), from) {
        ("born", None) => Materialized::Born,
        ("inherited", Some(from)) => Materialized::Inherited { from },
        (how, _) => {
            return Err(Error::Corruption(Corruption::new(format!(
                "label of {id:?} was materialized {how:?}"
            ))))
        }
    };
    let posture = posture
        .map(super::postures::RawPosture::into_posture)
        .transpose()?;
    let counts = |level| Posture::admits(posture.as_ref(), !ended, level);
    Ok(Some(SessionState {
        session: id.to_owned(),
        taint: parse_taint(id, &taint)?,
        untrusted,
        known: true,
        materialized: Some(materialized),
        materialized_at: Some(ts("labels.materialized_at", &materialized_at)?),
        raised_at: opt_ts("labels.raised_at", raised_at)?,
        trust: counts(PostureLevel::Trust),
        trust_reads: counts(PostureLevel::TrustReads),
        posture,
    }))
}

/// The stored label of a session and nothing else.
pub(crate) const LABEL: &str = "SELECT taint, untrusted FROM labels WHERE session_id = ?1";

/// The stored label of `id` and nothing else; `None` when it is not materialized.
pub(crate) fn label(conn: &Connection, id: &str) -> Result<Option<Label>> {
    let mut stmt = conn.prepare_cached(LABEL)?;
    let row = stmt
        .query_row([id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))
        })
        .optional()?;
    row.map(|(taint, untrusted)| {
        Ok(Label {
            taint: parse_taint(id, &taint)?,
            untrusted,
        })
    })
    .transpose()
}

pub(crate) fn parse_taint(id: &str, taint: &str) -> Result<Taint> {
    taint.parse().map_err(|_| {
        Error::Corruption(Corruption::new(format!(
            "label of {id:?} has taint {taint:?}"
        )))
    })
}

/// Writes a root's label at birth: the default, private and trusted.
pub(crate) const INSERT_BORN: &str =
    "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
     VALUES (:id, :taint, :untrusted, :now, 'born')";

/// Writes a root's label at its birth: the default.
pub(crate) fn insert_born(tx: &Transaction<'_>, id: &str, now: &str) -> Result<()> {
    let label = Label::default();
    let mut stmt = tx.prepare_cached(INSERT_BORN)?;
    stmt.execute(named_params! {
        ":id": id,
        ":taint": label.taint.as_str(),
        ":untrusted": label.untrusted,
        ":now": now,
    })?;
    Ok(())
}

/// Rule L2 without writing, for a read-only handle: the label `id` would inherit and the
/// nearest materialized ancestor it comes from (`id` itself when it is materialized), walking
/// `created_by` up as [`materialize_path`] does. `None` when `id` is not recorded, or when no
/// session on its path is materialized (which the schema does not allow: every root is).
pub(crate) fn inherited(conn: &Connection, id: &str) -> Result<Option<(String, Label)>> {
    let mut stmt = conn.prepare_cached(INHERITED)?;
    let row = stmt
        .query_row(named_params! { ":id": id }, |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, bool>(2)?,
            ))
        })
        .optional()?;
    row.map(|(from, taint, untrusted)| {
        let taint = parse_taint(&from, &taint)?;
        Ok((from, Label { taint, untrusted }))
    })
    .transpose()
}

/// A label written by [`materialize_path`].
pub(crate) struct Inherited {
    pub(crate) session: String,
    pub(crate) label: Label,
    pub(crate) from: String,
}

/// Rule L2 in one statement (see [`materialize_path`]). Each step of the walk up is a
/// primary-key search of the creator (`CROSS JOIN` keeps the walk the outer loop).
pub(crate) const MATERIALIZE_PATH: &str =
    "WITH RECURSIVE ancestors (id, created_by, hops, materialized) AS (
         SELECT s.id, s.created_by, 0,
                EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
           FROM sessions AS s WHERE s.id = :id
         UNION ALL
         SELECT s.id, s.created_by, ancestors.hops + 1,
                EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
           FROM ancestors CROSS JOIN sessions AS s ON s.id = ancestors.created_by
          WHERE NOT ancestors.materialized
     ),
     source AS (
         SELECT ancestors.id, l.taint, l.untrusted
           FROM ancestors CROSS JOIN labels AS l ON l.session_id = ancestors.id
          WHERE ancestors.materialized
     )
     INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how,
                         inherited_from)
     SELECT ancestors.id, source.taint, source.untrusted, :now, 'inherited', source.id
       FROM ancestors CROSS JOIN source
      WHERE NOT ancestors.materialized
      ORDER BY ancestors.hops DESC
     RETURNING session_id, taint, untrusted, inherited_from,
               (SELECT depth FROM sessions WHERE sessions.id = labels.session_id)";

/// Rule L2 in one statement: walks `created_by` up from `id` to the nearest materialized
/// ancestor, and gives `id` and every unmaterialized session on that path the ancestor's label.
/// The path is written farthest first, so each session's creator is materialized before it
/// (the trigger `labels_inherit_faithfully` checks each label against its creator's). Returns
/// the labels written, farthest from `id` first; empty when `id` is already materialized.
pub(crate) fn materialize_path(
    tx: &Transaction<'_>,
    id: &str,
    now: &str,
) -> Result<Vec<Inherited>> {
    let mut stmt = tx.prepare_cached(MATERIALIZE_PATH)?;
    let rows = stmt.query_map(named_params! { ":id": id, ":now": now }, |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, bool>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, i64>(4)?,
        ))
    })?;
    let mut rows = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    // RETURNING gives no order; the audit lists the path from the top down.
    rows.sort_by_key(|row| row.4);
    let mut written = Vec::new();
    for (session, taint, untrusted, from, _) in rows {
        let taint = parse_taint(&session, &taint)?;
        written.push(Inherited {
            session,
            label: Label { taint, untrusted },
            from,
        });
    }
    Ok(written)
}

/// The nearest materialized ancestor of a session, itself included, and its label: the label
/// the session's first read would give it (rule L2), read without writing. One primary-key
/// search per level, and the walk stops at the first materialized session.
pub(crate) const INHERITED: &str =
    "WITH RECURSIVE ancestors (id, created_by, hops, materialized) AS (
         SELECT id, created_by, 0, EXISTS (SELECT 1 FROM labels WHERE session_id = id)
           FROM sessions WHERE id = :id
         UNION ALL
         SELECT s.id, s.created_by, ancestors.hops + 1,
                EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
           FROM ancestors CROSS JOIN sessions AS s ON s.id = ancestors.created_by
          WHERE NOT ancestors.materialized
     )
     SELECT ancestors.id, l.taint, l.untrusted
       FROM ancestors CROSS JOIN labels AS l ON l.session_id = ancestors.id
      ORDER BY ancestors.hops LIMIT 1";

/// Stores a raised label.
pub(crate) const RAISE: &str =
    "UPDATE labels SET taint = :taint, untrusted = :untrusted, raised_at = :now
      WHERE session_id = :id";

/// Stores a raised label. The caller has checked that `label` dominates the stored one; the
/// trigger `labels_never_lower` refuses anything else.
pub(crate) fn raise(tx: &Transaction<'_>, id: &str, label: Label, now: &str) -> Result<()> {
    let mut stmt = tx.prepare_cached(RAISE)?;
    let changed = stmt.execute(named_params! {
        ":id": id,
        ":taint": label.taint.as_str(),
        ":untrusted": label.untrusted,
        ":now": now,
    })?;
    if changed != 1 {
        return Err(Error::Corruption(Corruption::new(format!(
            "no label to raise for {id:?}"
        ))));
    }
    Ok(())
}
