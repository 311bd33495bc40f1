//! Schema identity and migrations.
//!
//! Migrations are the refinery files in `migrations/`, embedded at build time. They run in one
//! `BEGIN IMMEDIATE` transaction together with the checks that decide whether to run them, so two
//! processes opening a new file at once cannot both migrate it, and a failed migration leaves
//! nothing behind. A file that is not a ledger, or whose schema is newer than this build, is
//! refused before anything is written to it; nothing is ever deleted or recreated.

use std::path::Path;

use refinery_core::traits::sync::{Query, Transaction as RefineryTransaction};
use refinery_core::{Migrate, Migration};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::{classify, APPLICATION_ID};
use crate::error::{Error, Result};

mod embedded {
    refinery::embed_migrations!("migrations");
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

/// Refuses a file that is not a ledger or is newer than this build. Reads only.
pub(crate) fn check(conn: &Connection, path: &Path) -> Result<()> {
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(|e| classify(e, path))?;
    if app_id != APPLICATION_ID {
        // A new file (or an empty database) becomes a ledger; anything else is someone else's.
        let objects: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|e| classify(e, path))?;
        if app_id != 0 || objects != 0 {
            return Err(Error::NotALedger(path.to_path_buf()));
        }
        return Ok(());
    }
    let found = applied_version(conn)?;
    let supported = supported_version();
    if found > supported {
        return Err(Error::SchemaTooNew { found, supported });
    }
    Ok(())
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
/// under the write lock first.
///
/// Every reference must resolve (`PRAGMA foreign_key_check`). When a migration runs, that is
/// checked inside its transaction, so a ledger refused for a broken reference is left at the
/// version it had; otherwise after the transaction, so that the check, which reads the whole
/// file, does not hold the write lock.
pub(crate) fn run(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    check(&tx, path)?;
    let migrating = applied_version(&tx)? < supported_version();
    if migrating {
        embedded::migrations::runner()
            .set_grouped(true)
            .set_abort_divergent(true)
            .set_abort_missing(true)
            .run(&mut InTransaction(&tx))?;
        references_resolve(&tx, path)?;
    }
    let app_id: i32 = tx.pragma_query_value(None, "application_id", |row| row.get(0))?;
    if app_id != APPLICATION_ID {
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    }
    tx.commit()?;
    if !migrating {
        references_resolve(conn, path)?;
    }
    Ok(())
}

/// Refuses a ledger in which a row references a row that does not exist (a hand edit with
/// foreign keys off, the sqlite3 shell's default).
fn references_resolve(conn: &Connection, path: &Path) -> Result<()> {
    let broken: i64 =
        conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| {
            row.get(0)
        })?;
    if broken != 0 {
        return Err(Error::Corruption(format!(
            "{broken} rows in {} reference rows that do not exist (PRAGMA foreign_key_check)",
            path.display()
        )));
    }
    Ok(())
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
