//! How stored rows become values: the column lists that several statements share, the
//! readers of those columns by name, and the checks that turn a stored word or time that the
//! library cannot read into a [`Corruption`] naming it.
//!
//! It knows the schema's columns and words, never a rule of the ledger.

use chrono::{DateTime, Utc};
use rusqlite::Row;

use crate::clock::parse_ts;
use crate::error::{Corruption, Error, Result};
use crate::model::{Label, Origin, Posture, PostureLevel, PostureSource, Session, Taint};
use crate::storage::TreeRow;

/// The columns [`session_of`] reads; a macro so that the statements are `concat!` literals,
/// not strings formatted on every call.
macro_rules! session_columns {
    () => {
        "id, created_by, depth, origin, created_at, ended_at"
    };
}
pub(super) use session_columns;

/// A `sessions` row, by column name, checked.
pub(super) fn session_of(row: &Row<'_>) -> Result<Session> {
    let id: String = row.get("id")?;
    let origin: String = row.get("origin")?;
    let origin = Origin::from_word(&origin)
        .ok_or_else(|| Corruption::new(format!("session {id:?} has origin {origin:?}")))?;
    Ok(Session {
        depth: depth(&id, row.get("depth")?)?,
        created_by: row.get("created_by")?,
        origin,
        created_at: time("sessions.created_at", &row.get::<_, String>("created_at")?)?,
        ended_at: opt_time("sessions.ended_at", row.get("ended_at")?)?,
        id,
    })
}

/// The posture columns of `postures AS p` that [`posture_of`] reads, each named `p_...`, and
/// whether the row's epoch is the current one. A macro, so that statements that include them
/// are literals built by `concat!` at compile time rather than strings formatted on every call
/// of a hot path.
macro_rules! posture_columns {
    () => {
        "p.session_id AS p_session, p.posture AS p_posture, p.source AS p_source, \
         p.granted_by AS p_granted_by, p.granted_at AS p_granted_at, \
         p.granted_on AS p_granted_on, p.inherited_from AS p_inherited_from, \
         p.allocated_at AS p_allocated_at, p.chain AS p_chain, p.epoch AS p_epoch, \
         p.epoch = (SELECT max(epoch) FROM epochs) AS p_current"
    };
}
pub(super) use posture_columns;

/// The posture in a row with the [`posture_columns!`]; `None` when the row has none (a
/// `LEFT JOIN` that found no posture row).
pub(super) fn posture_of(row: &Row<'_>) -> Result<Option<Posture>> {
    let Some(session) = row.get::<_, Option<String>>("p_session")? else {
        return Ok(None);
    };
    let bad = |what: &str| Error::from(Corruption::new(format!("posture of {session:?}: {what}")));
    let level = level(&session, &row.get::<_, String>("p_posture")?)?;
    let source = PostureSource::from_word(&row.get::<_, String>("p_source")?)
        .ok_or_else(|| bad("unknown source"))?;
    let chain: String = row.get("p_chain")?;
    let chain: Vec<String> =
        serde_json::from_str(&chain).map_err(|_| bad("chain is not a list of ids"))?;
    Ok(Some(Posture {
        level,
        source,
        granted_by: row.get("p_granted_by")?,
        granted_at: time(
            "postures.granted_at",
            &row.get::<_, String>("p_granted_at")?,
        )?,
        granted_on: row.get("p_granted_on")?,
        inherited_from: row.get("p_inherited_from")?,
        allocated_at: time(
            "postures.allocated_at",
            &row.get::<_, String>("p_allocated_at")?,
        )?,
        chain,
        epoch: row.get("p_epoch")?,
        current: row.get("p_current")?,
        session,
    }))
}

/// A stored posture level.
pub(super) fn level(session: &str, word: &str) -> Result<PostureLevel> {
    word.parse()
        .map_err(|_| Corruption::new(format!("posture {word:?} of {session:?}")).into())
}

/// A stored taint class.
pub(super) fn taint(id: &str, word: &str) -> Result<Taint> {
    word.parse()
        .map_err(|_| Corruption::new(format!("label of {id:?} has taint {word:?}")).into())
}

/// A stored time, read back: the fixed-width text `YYYY-MM-DDTHH:MM:SS.sssZ`, or corruption
/// naming the column.
pub(super) fn time(column: &str, value: &str) -> Result<DateTime<Utc>> {
    parse_ts(value)
        .ok_or_else(|| Corruption::new(format!("malformed time {value:?} in {column}")).into())
}

/// [`time`] for a nullable column.
pub(super) fn opt_time(column: &str, value: Option<String>) -> Result<Option<DateTime<Utc>>> {
    value.map(|v| time(column, &v)).transpose()
}

/// A stored depth, which the schema keeps at 0 or more.
pub(super) fn depth(id: &str, depth: i64) -> Result<u32> {
    u32::try_from(depth)
        .map_err(|_| Corruption::new(format!("session {id:?} has depth {depth}")).into())
}

/// How many scopes live at `$now` and command patterns the session `$of.id` holds, as
/// `live_scopes` and `patterns`: each a range of its table's primary key.
macro_rules! grant_marks {
    ($of:literal, $now:literal) => {
        concat!(
            "(SELECT count(*) FROM override_scopes AS o
               WHERE o.session_id = ",
            $of,
            ".id AND o.revoked_at IS NULL AND o.expires_at > ",
            $now,
            ") AS live_scopes,
             (SELECT count(*) FROM command_patterns AS c WHERE c.session_id = ",
            $of,
            ".id) AS patterns"
        )
    };
}
pub(super) use grant_marks;

/// A row of the tree: a session by the [`session_columns!`], its stored label as `taint` and
/// `untrusted` (both null when it has none), its posture by the [`posture_columns!`], and its
/// [`grant_marks!`].
pub(super) fn tree_row_of(row: &Row<'_>) -> Result<TreeRow> {
    let session = session_of(row)?;
    let stored: Option<String> = row.get("taint")?;
    let label = match (stored, row.get::<_, Option<bool>>("untrusted")?) {
        (Some(word), Some(untrusted)) => Some(Label {
            taint: taint(&session.id, &word)?,
            untrusted,
        }),
        _ => None,
    };
    Ok(TreeRow {
        label,
        posture: posture_of(row)?,
        live_scopes: count_of(&session.id, row.get("live_scopes")?)?,
        patterns: count_of(&session.id, row.get("patterns")?)?,
        session,
    })
}

/// A count a statement made.
fn count_of(id: &str, n: i64) -> Result<u32> {
    u32::try_from(n).map_err(|_| Corruption::new(format!("{id:?}: a count of {n}")).into())
}
