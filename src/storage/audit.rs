//! SQL for the `audit` table.

use rusqlite::{named_params, Connection, Transaction};

use super::ts;
use crate::audit::{AuditEntry, AuditQuery};
use crate::error::{Error, Result};

/// Appends one row. Called inside the transaction of the change it records.
pub(crate) fn append(
    tx: &Transaction<'_>,
    now: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &serde_json::Value,
) -> Result<i64> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO audit (at, actor, kind, session_id, detail)
         VALUES (:at, :actor, :kind, :session, :detail)",
    )?;
    stmt.execute(named_params! {
        ":at": now,
        ":actor": actor,
        ":kind": kind,
        ":session": session,
        ":detail": detail.to_string(),
    })?;
    Ok(tx.last_insert_rowid())
}

/// The rows matching `query`, oldest first.
pub(crate) fn list(conn: &Connection, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, at, actor, kind, session_id, detail FROM (
             SELECT seq, at, actor, kind, session_id, detail FROM audit
              WHERE (:session IS NULL OR session_id = :session)
                AND (:kind IS NULL OR kind = :kind)
              ORDER BY seq DESC
              LIMIT :limit
         ) ORDER BY seq",
    )?;
    let limit = query.limit.map_or(-1, i64::from);
    let rows = stmt.query_map(
        named_params! {
            ":session": query.session,
            ":kind": query.kind,
            ":limit": limit,
        },
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, String>(5)?,
            ))
        },
    )?;
    let mut entries = Vec::new();
    for row in rows {
        let (seq, at, actor, kind, session, detail) = row?;
        let detail = serde_json::from_str(&detail).map_err(|e| {
            Error::Corruption(format!(
                "audit row {seq} has a detail that is not JSON: {e}"
            ))
        })?;
        entries.push(AuditEntry {
            seq,
            at: ts("audit.at", &at)?,
            actor,
            kind,
            session,
            detail,
        });
    }
    Ok(entries)
}
