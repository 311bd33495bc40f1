//! The `labels` table on PostgreSQL: a session's state on the hot path, first-read inheritance
//! as one recursive statement, and raises.
//!
//! When to inherit and what a raise may do are the labels concept's; the triggers refuse a label
//! that breaks them.

use super::columns::{posture_columns, posture_of, taint, Time};
use super::{Conn, Tx};
use crate::error::{Corruption, Result};
use crate::model::{Id, Label, Materialized};
use crate::storage::{InheritedLabel, LabelReads, LabelWrites, StateRow, StoredLabel};

/// A session's state in one statement: its stored label with provenance, whether it ended, and
/// its posture row. Three primary-key searches.
pub(super) const STATE: &str = concat!(
    "SELECT l.taint, l.untrusted, l.materialized_how, l.inherited_from, l.materialized_at,
            l.raised_at, s.ended_at IS NOT NULL AS ended, ",
    posture_columns!(),
    "  FROM labels AS l
       JOIN sessions AS s ON s.id = l.session_id
       LEFT JOIN postures AS p ON p.session_id = l.session_id
      WHERE l.session_id = $1"
);

/// The stored label of a session and nothing else.
pub(super) const LABEL: &str = "SELECT taint, untrusted FROM labels WHERE session_id = $1";

/// The walk up `created_by` from a session to the nearest materialized one, itself included:
/// each step a primary-key search of the creator, stopping at the first session with a label.
macro_rules! walk_up {
    () => {
        "WITH RECURSIVE ancestors (id, created_by, hops, materialized) AS (
             SELECT s.id, s.created_by, 0,
                    EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
               FROM sessions AS s WHERE s.id = $1
             UNION ALL
             SELECT s.id, s.created_by, ancestors.hops + 1,
                    EXISTS (SELECT 1 FROM labels WHERE session_id = s.id)
               FROM ancestors JOIN sessions AS s ON s.id = ancestors.created_by
              WHERE NOT ancestors.materialized
         ) "
    };
}

/// The nearest materialized ancestor of a session, itself included, and its label: what the
/// session's first read would copy (rule L2), read without writing.
pub(super) const INHERITED: &str = concat!(
    walk_up!(),
    "SELECT ancestors.id AS source, l.taint, l.untrusted
       FROM ancestors JOIN labels AS l ON l.session_id = ancestors.id
      ORDER BY ancestors.hops LIMIT 1"
);

impl LabelReads for Conn<'_> {
    fn state(&mut self, id: Id<'_>) -> Result<Option<StateRow>> {
        let Some(row) = self.row(STATE, &[&id.as_str()])? else {
            return Ok(None);
        };
        let how: String = row.try_get("materialized_how")?;
        let from: Option<String> = row.try_get("inherited_from")?;
        let materialized = match (how.as_str(), from) {
            ("born", None) => Materialized::Born,
            ("inherited", Some(from)) => Materialized::Inherited { from },
            (how, _) => {
                return Err(
                    Corruption::new(format!("label of {id:?} was materialized {how:?}")).into(),
                )
            }
        };
        Ok(Some(StateRow {
            stored: StoredLabel {
                label: Label {
                    taint: taint(id.as_str(), &row.try_get::<_, String>("taint")?)?,
                    untrusted: row.try_get("untrusted")?,
                },
                materialized,
                materialized_at: row.try_get("materialized_at")?,
                raised_at: row.try_get("raised_at")?,
            },
            ended: row.try_get("ended")?,
            posture: posture_of(&row)?,
        }))
    }

    fn label(&mut self, id: Id<'_>) -> Result<Option<Label>> {
        let Some(row) = self.row(LABEL, &[&id.as_str()])? else {
            return Ok(None);
        };
        Ok(Some(Label {
            taint: taint(id.as_str(), &row.try_get::<_, String>("taint")?)?,
            untrusted: row.try_get("untrusted")?,
        }))
    }

    fn nearest_label(&mut self, id: Id<'_>) -> Result<Option<(String, Label)>> {
        let Some(row) = self.row(INHERITED, &[&id.as_str()])? else {
            return Ok(None);
        };
        let from: String = row.try_get("source")?;
        let label = Label {
            taint: taint(&from, &row.try_get::<_, String>("taint")?)?,
            untrusted: row.try_get("untrusted")?,
        };
        Ok(Some((from, label)))
    }
}

/// Writes a root's label at birth.
pub(super) const INSERT_BORN: &str =
    "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
     VALUES ($1, $2, $3, $4, 'born')";

/// Rule L2 in one statement: the walk up, then a label for every unmaterialized session on
/// it, farthest first, so that each session's creator has its label before it (the trigger
/// `labels_inherit_faithfully` checks each against its creator's, and sees the rows the same
/// statement wrote before).
pub(super) const MATERIALIZE_PATH: &str = concat!(
    walk_up!(),
    ", source AS (
         SELECT ancestors.id, l.taint, l.untrusted
           FROM ancestors JOIN labels AS l ON l.session_id = ancestors.id
          WHERE ancestors.materialized
     )
     INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how,
                         inherited_from)
     SELECT ancestors.id, source.taint, source.untrusted, $2, 'inherited', source.id
       FROM ancestors CROSS JOIN source
      WHERE NOT ancestors.materialized
      ORDER BY ancestors.hops DESC
     RETURNING session_id, taint, untrusted, inherited_from,
               (SELECT depth FROM sessions WHERE sessions.id = labels.session_id) AS depth"
);

/// Stores a raised label; the trigger `labels_never_lower` refuses one that is lower.
pub(super) const RAISE: &str =
    "UPDATE labels SET taint = $2, untrusted = $3, raised_at = $4 WHERE session_id = $1";

impl LabelWrites for Tx<'_> {
    fn insert_born_label(&mut self, id: Id<'_>, label: Label, at: Time) -> Result<()> {
        let params: [&(dyn postgres::types::ToSql + Sync); 4] =
            [&id.as_str(), &label.taint.as_str(), &label.untrusted, &at];
        self.read.execute(INSERT_BORN, &params)?;
        Ok(())
    }

    fn materialize_path(&mut self, id: Id<'_>, at: Time) -> Result<Vec<InheritedLabel>> {
        let rows = self.read.rows(MATERIALIZE_PATH, &[&id.as_str(), &at])?;
        let mut written = Vec::with_capacity(rows.len());
        for row in &rows {
            let session: String = row.try_get("session_id")?;
            let label = Label {
                taint: taint(&session, &row.try_get::<_, String>("taint")?)?,
                untrusted: row.try_get("untrusted")?,
            };
            let depth: i32 = row.try_get("depth")?;
            let from = row.try_get("inherited_from")?;
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

    fn raise_label(&mut self, id: Id<'_>, label: Label, at: Time) -> Result<()> {
        let params: [&(dyn postgres::types::ToSql + Sync); 4] =
            [&id.as_str(), &label.taint.as_str(), &label.untrusted, &at];
        if self.read.execute(RAISE, &params)? != 1 {
            return Err(Corruption::new(format!("no label to raise for {id:?}")).into());
        }
        Ok(())
    }
}
