//! How stored rows become values on PostgreSQL: the column lists several statements share, the
//! readers of those columns by name, and the checks that turn a stored word the library cannot
//! read into a [`Corruption`] naming it. The server's types do the rest: times are
//! `timestamptz`, flags `boolean`, the chain `jsonb`.
//!
//! It knows the schema's columns and words, never a rule of the ledger.

use chrono::{DateTime, Utc};
use postgres::Row;

use crate::error::{Corruption, Error, Result};
use crate::model::{Label, Origin, Posture, PostureLevel, PostureSource, Session, Taint};
use crate::storage::TreeRow;

/// The columns [`session_of`] reads, from a relation named `s`.
macro_rules! session_columns {
    () => {
        "s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at"
    };
}
pub(super) use session_columns;

/// A `sessions` row, by column name, checked.
pub(super) fn session_of(row: &Row) -> Result<Session> {
    let id: String = row.try_get("id")?;
    let origin: String = row.try_get("origin")?;
    let origin = Origin::from_word(&origin)
        .ok_or_else(|| Corruption::new(format!("session {id:?} has origin {origin:?}")))?;
    Ok(Session {
        depth: depth(&id, row.try_get("depth")?)?,
        created_by: row.try_get("created_by")?,
        origin,
        created_at: row.try_get("created_at")?,
        ended_at: row.try_get("ended_at")?,
        id,
    })
}

/// The posture columns of `postures AS p`, each named `p_...`, and whether the row's epoch is
/// the current one.
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

/// The posture in a row with the [`posture_columns!`]; `None` when the row has none.
pub(super) fn posture_of(row: &Row) -> Result<Option<Posture>> {
    let Some(session) = row.try_get::<_, Option<String>>("p_session")? else {
        return Ok(None);
    };
    let bad = |what: &str| Error::from(Corruption::new(format!("posture of {session:?}: {what}")));
    let level = level(&session, &row.try_get::<_, String>("p_posture")?)?;
    let source = PostureSource::from_word(&row.try_get::<_, String>("p_source")?)
        .ok_or_else(|| bad("unknown source"))?;
    let chain: serde_json::Value = row.try_get("p_chain")?;
    let chain: Vec<String> =
        serde_json::from_value(chain).map_err(|_| bad("chain is not a list of ids"))?;
    Ok(Some(Posture {
        level,
        source,
        granted_by: row.try_get("p_granted_by")?,
        granted_at: row.try_get("p_granted_at")?,
        granted_on: row.try_get("p_granted_on")?,
        inherited_from: row.try_get("p_inherited_from")?,
        allocated_at: row.try_get("p_allocated_at")?,
        chain,
        epoch: row.try_get("p_epoch")?,
        current: row.try_get("p_current")?,
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

/// A stored depth, which the schema keeps at 0 or more.
pub(super) fn depth(id: &str, depth: i32) -> Result<u32> {
    u32::try_from(depth)
        .map_err(|_| Corruption::new(format!("session {id:?} has depth {depth}")).into())
}

/// A depth or count as the server takes it.
pub(super) fn int(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A time as the library passes it: the type the server's `timestamptz` maps to.
pub(super) type Time = DateTime<Utc>;

/// How many scopes live at `$now` and command patterns the session `s` holds, as
/// `live_scopes` and `patterns`: each a range of its table's primary key.
macro_rules! grant_marks {
    ($now:literal) => {
        concat!(
            "(SELECT count(*) FROM override_scopes AS o
               WHERE o.session_id = s.id AND o.revoked_at IS NULL AND o.expires_at > ",
            $now,
            ") AS live_scopes,
             (SELECT count(*) FROM command_patterns AS c WHERE c.session_id = s.id) AS patterns"
        )
    };
}
pub(super) use grant_marks;

/// A row of the tree: a session by the [`session_columns!`], its stored label as `taint` and
/// `untrusted` (both null when it has none), its posture by the [`posture_columns!`], and its
/// [`grant_marks!`].
pub(super) fn tree_row_of(row: &Row) -> Result<TreeRow> {
    let session = session_of(row)?;
    let stored: Option<String> = row.try_get("taint")?;
    let label = match (stored, row.try_get::<_, Option<bool>>("untrusted")?) {
        (Some(word), Some(untrusted)) => Some(Label {
            taint: taint(&session.id, &word)?,
            untrusted,
        }),
        _ => None,
    };
    Ok(TreeRow {
        label,
        posture: posture_of(row)?,
        live_scopes: count_of(&session.id, row.try_get("live_scopes")?)?,
        patterns: count_of(&session.id, row.try_get("patterns")?)?,
        session,
    })
}

/// A count a statement made.
fn count_of(id: &str, n: i64) -> Result<u32> {
    u32::try_from(n).map_err(|_| Corruption::new(format!("{id:?}: a count of {n}")).into())
}
