//! The `labels` table: a session's state on the hot path, first-read inheritance as one
//! recursive statement, and raises.
//!
//! When to inherit and what a raise may do are the labels concept's; the triggers refuse a
//! label that breaks them.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension};

use super::columns::{opt_time, posture_columns, posture_of, taint, time};
use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::model::{Id, Label, Materialized};
use crate::storage::{InheritedLabel, LabelReads, LabelWrites, StateRow, StoredLabel};

/// A session's state in one statement, the hot path of every read: its stored label with
/// provenance, whether it ended, and its posture row. Three primary-key searches.
pub(super) const STATE: &str = concat!(
    "SELECT l.taint, l.untrusted, l.materialized_how, l.inherited_from, l.materialized_at,
            l.raised_at, s.ended_at IS NOT NULL AS ended, ",
    posture_columns!(),
    "  FROM labels AS l
       CROSS JOIN sessions AS s ON s.id = l.session_id
       LEFT JOIN postures AS p ON p.session_id = l.session_id
      WHERE l.session_id = :id"
);

/// The stored label of a session and nothing else.
pub(super) const LABEL: &str = "SELECT taint, untrusted FROM labels WHERE session_id = :id";

/// The nearest materialized ancestor of a session, itself included, and its label: the label
/// the session's first read would give it (rule L2), read without writing. One primary-key
/// search per level, and the walk stops at the first materialized session.
pub(super) const INHERITED: &str =
    "WITH RECURSIVE ancestors (id, created_by, hops, materialized) AS (
         SELECT id, created_by, 0, EXISTS (SELECT 1 FROM labels WHERE session_id = id)
           FROM sessions WHERE id = :id
         UNION ALL
         SELECT s.id, s.created_by, ancestors.hops + 1,
                EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
           FROM ancestors CROSS JOIN sessions AS s ON s.id = ancestors.created_by
          WHERE NOT ancestors.materialized
     )
     SELECT ancestors.id AS source, l.taint, l.untrusted
       FROM ancestors CROSS JOIN labels AS l ON l.session_id = ancestors.id
      ORDER BY ancestors.hops LIMIT 1";

impl LabelReads for Conn<'_> {
    fn state(&mut self, id: Id<'_>) -> Result<Option<StateRow>> {
        let mut stmt = self.conn.prepare_cached(STATE)?;
        let mut rows = stmt.query(named_params! { ":id": id.as_str() })?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let how: String = row.get("materialized_how")?;
        let materialized = match (
            how.as_str(),
            row.get::<_, Option<String>>("inherited_from")?,
        ) {
            ("born", None) => Materialized::Born,
            ("inherited", Some(from)) => Materialized::Inherited { from },
            (how, _) => {
                return Err(
                    Corruption::new(format!("label of {id:?} was materialized {how:?}")).into(),
                )
            }
        };
        let materialized_at: String = row.get("materialized_at")?;
        Ok(Some(StateRow {
            stored: StoredLabel {
                label: Label {
                    taint: taint(id.as_str(), &row.get::<_, String>("taint")?)?,
                    untrusted: row.get("untrusted")?,
                },
                materialized,
                materialized_at: time("labels.materialized_at", &materialized_at)?,
                raised_at: opt_time("labels.raised_at", row.get("raised_at")?)?,
            },
            ended: row.get("ended")?,
            posture: posture_of(row)?,
        }))
    }

    fn label(&mut self, id: Id<'_>) -> Result<Option<Label>> {
        let mut stmt = self.conn.prepare_cached(LABEL)?;
        let row = stmt
            .query_row(named_params! { ":id": id.as_str() }, |row| {
                Ok((
                    row.get::<_, String>("taint")?,
                    row.get::<_, bool>("untrusted")?,
                ))
            })
            .optional()?;
        row.map(|(word, untrusted)| {
            Ok(Label {
                taint: taint(id.as_str(), &word)?,
                untrusted,
            })
        })
        .transpose()
    }

    fn nearest_label(&mut self, id: Id<'_>) -> Result<Option<(String, Label)>> {
        let mut stmt = self.conn.prepare_cached(INHERITED)?;
        let row = stmt
            .query_row(named_params! { ":id": id.as_str() }, |row| {
                Ok((
                    row.get::<_, String>("source")?,
                    row.get::<_, String>("taint")?,
                    row.get::<_, bool>("untrusted")?,
                ))
            })
            .optional()?;
        row.map(|(from, word, untrusted)| {
            let taint = taint(&from, &word)?;
            Ok((from, Label { taint, untrusted }))
        })
        .transpose()
    }
}

/// Writes a root's label at birth.
pub(super) const INSERT_BORN: &str =
    "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
     VALUES (:id, :taint, :untrusted, :now, 'born')";

/// Rule L2 in one statement. Each step of the walk up is a primary-key search of the creator
/// (`CROSS JOIN` keeps the walk the outer loop). The path is written farthest first, so each
/// session's creator is materialized before it (the trigger `labels_inherit_faithfully` checks
/// each label against its creator's).
pub(super) const MATERIALIZE_PATH: &str =
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
               (SELECT depth FROM sessions WHERE sessions.id = labels.session_id) AS depth";

/// Stores a raised label; the trigger `labels_never_lower` refuses one that is lower.
pub(super) const RAISE: &str =
    "UPDATE labels SET taint = :taint, untrusted = :untrusted, raised_at = :now
      WHERE session_id = :id";

impl LabelWrites for Tx<'_> {
    fn insert_born_label(&mut self, id: Id<'_>, label: Label, at: DateTime<Utc>) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(INSERT_BORN)?;
        stmt.execute(named_params! {
            ":id": id.as_str(),
            ":taint": label.taint.as_str(),
            ":untrusted": label.untrusted,
            ":now": format_ts(at),
        })?;
        Ok(())
    }

    fn materialize_path(&mut self, id: Id<'_>, at: DateTime<Utc>) -> Result<Vec<InheritedLabel>> {
        let mut stmt = self.conn().prepare_cached(MATERIALIZE_PATH)?;
        let params = named_params! { ":id": id.as_str(), ":now": format_ts(at) };
        let mut rows = stmt.query(params)?;
        let mut written = Vec::new();
        while let Some(row) = rows.next()? {
            let session: String = row.get("session_id")?;
            let label = Label {
                taint: taint(&session, &row.get::<_, String>("taint")?)?,
                untrusted: row.get("untrusted")?,
            };
            let depth: i64 = row.get("depth")?;
            let from = row.get("inherited_from")?;
            written.push((
                depth,
                InheritedLabel {
                    session,
                    label,
                    from,
                },
            ));
        }
        // RETURNING gives no order; the audit lists the path from the top down.
        written.sort_by_key(|(depth, _)| *depth);
        Ok(written.into_iter().map(|(_, label)| label).collect())
    }

    fn raise_label(&mut self, id: Id<'_>, label: Label, at: DateTime<Utc>) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(RAISE)?;
        let changed = stmt.execute(named_params! {
            ":id": id.as_str(),
            ":taint": label.taint.as_str(),
            ":untrusted": label.untrusted,
            ":now": format_ts(at),
        })?;
        if changed != 1 {
            return Err(Corruption::new(format!("no label to raise for {id:?}")).into());
        }
        Ok(())
    }
}
