//! Writes a transaction holds until its next statement, and the one statement a create's writes
//! become.
//!
//! Recording a session and copying a posture that the caller already knows return nothing the
//! caller waits for, so a write transaction holds them ([`Held`]), as it holds its audit rows,
//! and writes them all before its next statement or its commit. A created child, the posture
//! it inherits from its creator and the create's audit row, held together, are one statement
//! ([`CREATE_CHILD`]): a round trip instead of three, under the ledger's lock. Anything else
//! held is written one statement each, in the order it was held, then the audit rows.

use super::columns::Time;
use super::{postures, sessions, Conn};
use crate::error::{Corruption, Result};
use crate::model::PostureLevel;

/// A write held until the transaction's next statement.
pub(super) enum Held {
    /// A session to record ([`sessions::INSERT`]).
    Session {
        id: String,
        created_by: Option<String>,
        depth: i32,
        origin: &'static str,
        at: Time,
    },
    /// The creator's posture to copy to the child ([`postures::INHERIT`]), which the caller
    /// read in this transaction: the copy must be `expected`.
    Inherit {
        child: String,
        creator: String,
        at: Time,
        expected: Option<PostureLevel>,
    },
}

/// A created child, its inherited posture and its audit row, in one statement. Each
/// data-modifying part runs once and to completion; the posture's copy reads the child the
/// first part returns, so the child's row is written before the posture's, whose trigger looks
/// it up (a trigger's queries see the rows its statement wrote before). The posture is the
/// creator's row of the current epoch, copied as [`postures::INHERIT`] copies it; the audit
/// row is [`super::audit::APPEND`]'s. It returns how many sessions and audit rows it wrote and
/// the posture it copied, if any.
pub(super) const CREATE_CHILD: &str = "WITH child AS (
         INSERT INTO sessions (id, created_by, depth, origin, created_at)
         VALUES ($1, $2, $3, $4, $5)
         RETURNING id, created_by
     ), inherited AS (
         INSERT INTO postures
              (session_id, posture, source, granted_by, granted_at, granted_on, inherited_from,
               allocated_at, chain, epoch)
         SELECT child.id, c.posture, 'inherited', c.granted_by, c.granted_at, c.granted_on,
                child.created_by, $6, c.chain || jsonb_build_array(child.id), c.epoch
           FROM child JOIN postures AS c ON c.session_id = child.created_by
          WHERE c.epoch = (SELECT max(epoch) FROM epochs)
         RETURNING posture
     ), appended AS (
         INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
         VALUES ($7, $8, $9, $10, $11, $12, $13, $14)
         RETURNING seq
     )
     SELECT (SELECT count(*) FROM child) AS recorded,
            (SELECT posture FROM inherited) AS inherited,
            (SELECT count(*) FROM appended) AS appended";

impl Conn<'_> {
    /// Writes everything held: a create's three writes as [`CREATE_CHILD`], anything else one
    /// statement each, then the audit rows appended.
    pub(super) fn flush(&mut self) -> Result<()> {
        if self.held.is_empty() {
            return self.write_appended();
        }
        let held = std::mem::take(&mut self.held);
        if let (
            [Held::Session {
                id,
                created_by: Some(created_by),
                depth,
                origin,
                at,
            }, Held::Inherit {
                child,
                creator,
                at: allocated_at,
                expected,
            }],
            [_],
        ) = (held.as_slice(), self.appended.as_slice())
        {
            if id == child && created_by == creator {
                let row = self.appended.pop().expect("one row");
                let written = self.row_now(
                    CREATE_CHILD,
                    &[
                        id,
                        created_by,
                        depth,
                        origin,
                        at,
                        allocated_at,
                        &row.seq,
                        &row.at,
                        &row.actor,
                        &row.kind,
                        &row.session,
                        &row.detail,
                        &row.prev_hash,
                        &row.hash,
                    ],
                )?;
                let written = written.ok_or_else(|| Corruption::new("a create returned no row"))?;
                let (recorded, appended): (i64, i64) =
                    (written.try_get("recorded")?, written.try_get("appended")?);
                if (recorded, appended) != (1, 1) {
                    return Err(Corruption::new(format!(
                        "a create wrote {recorded} sessions and {appended} audit rows"
                    ))
                    .into());
                }
                let inherited: Option<String> = written.try_get("inherited")?;
                return copied_as_expected(child, inherited.as_deref(), *expected);
            }
        }
        for write in held {
            match write {
                Held::Session {
                    id,
                    created_by,
                    depth,
                    origin,
                    at,
                } => {
                    self.execute_now(sessions::INSERT, &[&id, &created_by, &depth, &origin, &at])?;
                }
                Held::Inherit {
                    child,
                    creator,
                    at,
                    expected,
                } => {
                    let row = self.row_now(postures::INHERIT, &[&child, &creator, &at])?;
                    let copied: Option<String> = match row {
                        Some(row) => row.try_get("posture")?,
                        None => None,
                    };
                    copied_as_expected(&child, copied.as_deref(), expected)?;
                }
            }
        }
        self.write_appended()
    }
}

/// Fails unless the posture copied to `child` is the one its caller read.
fn copied_as_expected(
    child: &str,
    copied: Option<&str>,
    expected: Option<PostureLevel>,
) -> Result<()> {
    if copied == expected.map(PostureLevel::as_str) {
        return Ok(());
    }
    Err(Corruption::new(format!(
        "{child:?} inherited {copied:?}, not the {:?} its creator was read to hold",
        expected.map(PostureLevel::as_str)
    ))
    .into())
}
