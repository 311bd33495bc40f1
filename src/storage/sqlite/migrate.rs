//! Schema identity and migrations.
//!
//! Migrations are the refinery files in `migrations/sqlite/`, embedded at build time. They run in one
//! `BEGIN IMMEDIATE` transaction together with the checks that decide whether to run them, so two
//! processes opening a new file at once cannot both migrate it, and a failed migration leaves
//! nothing behind. A file that is not a ledger, or whose schema is newer than this build, is
//! refused before anything is written to it; nothing is ever deleted or recreated.

use std::path::Path;

use refinery_core::traits::sync::{Query, Transaction as RefineryTransaction};
use refinery_core::{Migrate, Migration};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::classify;
use super::connection::APPLICATION_ID;
use crate::error::{Corruption, Error, Location, Result, StorageError};
use crate::model::{BrokenReference, CheckReport};

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

/// refinery's bookkeeping table.
const HISTORY_TABLE: &str = "refinery_schema_history";

/// The newest schema version this build knows.
pub(crate) fn supported_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

/// What [`check`] found at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// A new file or an empty database: it becomes a ledger when migrated.
    Empty,
    /// A ledger at this schema version, no newer than this build's.
    Ledger {
        /// The newest migration applied to it.
        version: i64,
    },
}

impl Found {
    /// True when opening for writing has nothing to do to the schema: a ledger at this build's
    /// version. Anything else runs [`run`].
    pub(super) fn is_current(self) -> bool {
        self == Found::Ledger {
            version: supported_version(),
        }
    }
}

/// Refuses a file that is not a ledger or is newer than this build. Reads only: the
/// application id in the header, and for a ledger the newest of its few history rows (no
/// table that grows with the ledger is read).
pub(super) fn check(conn: &Connection, path: &Path) -> Result<Found> {
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(|e| classify(e, path))?;
    if app_id != APPLICATION_ID {
        // A new file (or an empty database) becomes a ledger; anything else is someone else's.
        let objects: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|e| classify(e, path))?;
        if app_id != 0 || objects != 0 {
            return Err(Error::Storage(StorageError::NotALedger(Location::File(
                path.to_path_buf(),
            ))));
        }
        return Ok(Found::Empty);
    }
    let version = applied_version(conn)?;
    let supported = supported_version();
    if version > supported {
        return Err(Error::Storage(StorageError::SchemaTooNew {
            found: version,
            supported,
        }));
    }
    Ok(Found::Ledger { version })
}

fn applied_version(conn: &Connection) -> Result<i64> {
    let has_history: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = :name)",
        rusqlite::named_params! { ":name": HISTORY_TABLE },
        |row| row.get(0),
    )?;
    if !has_history {
        return Ok(0);
    }
    let version: Option<i64> = conn
        .query_row(
            "SELECT max(version) FROM refinery_schema_history",
            [],
            |row| row.get(0),
        )
        .optional()?
        .flatten();
    Ok(version.unwrap_or(0))
}

/// Brings the schema up to date in one IMMEDIATE transaction, re-checking identity and version
/// under the write lock first. The caller runs it only when [`check`] found something to do,
/// so opening a current ledger takes no write lock.
///
/// Every reference must resolve (`PRAGMA foreign_key_check`) after a migration: that is
/// checked inside its transaction, so a ledger refused for a broken reference is left at the
/// version it had. The check reads the whole file, so it runs only when a migration ran, and
/// otherwise only when an operator asks for it ([`integrity`], `session-ledger check`).
pub(super) fn run(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    check(&tx, path)?;
    if applied_version(&tx)? < supported_version() {
        embedded::migrations::runner()
            .set_grouped(true)
            .set_abort_divergent(true)
            .set_abort_missing(true)
            .run(&mut InTransaction(&tx))?;
        let broken = broken_references(&tx)?;
        if !broken.is_empty() {
            let rows: u64 = broken.iter().map(|b| b.rows).sum();
            return Err(Error::Corruption(Corruption::new(format!(
                "{rows} rows in {} reference rows that do not exist (`PRAGMA foreign_key_check` \
                 in the sqlite3 shell lists them); the ledger was not upgraded",
                path.display()
            ))));
        }
    }
    let app_id: i32 = tx.pragma_query_value(None, "application_id", |row| row.get(0))?;
    if app_id != APPLICATION_ID {
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    }
    tx.commit()?;
    Ok(())
}

/// The references that do not resolve (a hand edit with foreign keys off, the sqlite3 shell's
/// default), one entry per table and foreign key, with how many rows break it and the values
/// they reference. Reads the whole file.
fn broken_references(conn: &Connection) -> Result<Vec<BrokenReference>> {
    let mut stmt = conn.prepare(
        "SELECT f.\"table\", f.parent, count(*),
                (SELECT group_concat(k.\"from\", ', ') FROM pragma_foreign_key_list(f.\"table\") AS k
                  WHERE k.id = f.fkid),
                (SELECT count(*) FROM pragma_foreign_key_list(f.\"table\") AS k
                  WHERE k.id = f.fkid),
                (SELECT k.\"from\" FROM pragma_foreign_key_list(f.\"table\") AS k
                  WHERE k.id = f.fkid),
                (SELECT k.\"to\" FROM pragma_foreign_key_list(f.\"table\") AS k
                  WHERE k.id = f.fkid)
           FROM pragma_foreign_key_check AS f
          GROUP BY f.\"table\", f.fkid
          ORDER BY f.\"table\", f.fkid",
    )?;
    let groups = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, Option<String>>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(groups.len());
    for (table, parent, rows, columns, arity, from, to) in groups {
        // The values referenced, for a one-column key that names its parent column (every key
        // of the ledger). Table and column names come from the schema and are quoted as
        // identifiers; no value is formatted into the statement.
        let missing = match (arity, from, to) {
            (1, Some(from), Some(to)) => {
                let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
                let sql = format!(
                    "SELECT DISTINCT c.{from} FROM {table} AS c
                      WHERE c.{from} IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM {parent} AS p WHERE p.{to} = c.{from})
                      ORDER BY 1 LIMIT 100",
                    from = quote(&from),
                    to = quote(&to),
                    table = quote(&table),
                    parent = quote(&parent),
                );
                let mut values = conn.prepare(&sql)?;
                let found = values.query_map([], |row| {
                    Ok(match row.get::<_, rusqlite::types::Value>(0)? {
                        rusqlite::types::Value::Text(t) => t,
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Real(r) => r.to_string(),
                        rusqlite::types::Value::Blob(b) => format!("a blob of {} bytes", b.len()),
                        rusqlite::types::Value::Null => "NULL".to_owned(),
                    })
                })?;
                found.collect::<rusqlite::Result<Vec<_>>>()?
            }
            _ => Vec::new(),
        };
        out.push(BrokenReference {
            table,
            columns: columns.unwrap_or_default(),
            references: parent,
            rows: u64::try_from(rows).unwrap_or(0),
            missing,
        });
    }
    Ok(out)
}

/// `PRAGMA integrity_check` and `PRAGMA foreign_key_check`, in the read transaction the caller
/// runs it in, so that both see the same state. Reads the whole file: an operator's check,
/// never part of opening.
pub(super) fn integrity(conn: &Connection) -> Result<CheckReport> {
    let integrity = {
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let lines = stmt.query_map([], |row| row.get::<_, String>(0))?;
        lines.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let broken_references = broken_references(conn)?;
    let ok = integrity == ["ok"] && broken_references.is_empty();
    Ok(CheckReport {
        ok,
        integrity,
        broken_references,
        tree: Vec::new(),
    })
}

/// Lets refinery run inside a transaction we opened: its statements execute as they are, with
/// no transaction of their own.
struct InTransaction<'a>(&'a Transaction<'a>);

impl RefineryTransaction for InTransaction<'_> {
    type Error = rusqlite::Error;

    fn execute<'q, T: Iterator<Item = &'q str>>(&mut self, queries: T) -> rusqlite::Result<usize> {
        let mut count = 0;
        for query in queries {
            self.0.execute_batch(query)?;
            count += 1;
        }
        Ok(count)
    }
}

impl Query<Vec<Migration>> for InTransaction<'_> {
    fn query(&mut self, query: &str) -> rusqlite::Result<Vec<Migration>> {
        let mut stmt = self.0.prepare(query)?;
        let rows = stmt.query_map([], |row| {
            let version: i32 = row.get(0)?;
            let name: String = row.get(1)?;
            let applied_on: String = row.get(2)?;
            let checksum: String = row.get(3)?;
            let applied_on = time::OffsetDateTime::parse(
                &applied_on,
                &time::format_description::well_known::Rfc3339,
            )
            .map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, e.into())
            })?;
            let checksum = checksum.parse::<u64>().map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, e.into())
            })?;
            Ok(Migration::applied(version, name, applied_on, checksum))
        })?;
        rows.collect()
    }
}

impl Migrate for InTransaction<'_> {}
