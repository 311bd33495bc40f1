//! Schema identity and migrations on PostgreSQL.
//!
//! Migrations are the refinery files in `migrations/postgres/`, embedded at build time. They run
//! in one transaction that first takes the ledger's migration lock, together with the checks
//! that decide whether to run them, so two nodes opening a new database at once cannot both
//! migrate it, and a failed migration leaves nothing behind. A schema that holds something else,
//! or a ledger newer than this build, is refused before anything is written to it.

use refinery_core::traits::sync::{Query, Transaction as RefineryTransaction};
use refinery_core::{Migrate, Migration};

use super::Conn;
use crate::error::{Corruption, Error, Location, Result, StorageError};
use crate::model::{BrokenReference, CheckReport};

mod embedded {
    refinery::embed_migrations!("migrations/postgres");
}

/// The newest schema version this build knows.
pub(crate) fn supported_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

/// What [`check`] found in the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// An empty schema: it becomes a ledger when migrated.
    Empty,
    /// A ledger at this schema version, no newer than this build's.
    Ledger { version: i64 },
}

/// What the current schema holds: a ledger (refinery's history beside the ledger's own tables),
/// nothing, or something else. Reads only the catalog and the few history rows.
const IDENTITY: &str = "SELECT to_regclass('refinery_schema_history') IS NOT NULL AS has_history,
            to_regclass('audit_kinds') IS NOT NULL AS has_ledger,
            (SELECT count(*) FROM pg_class AS c
               JOIN pg_namespace AS n ON n.oid = c.relnamespace
              WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'p', 'm')) AS objects";

/// The newest migration applied.
const VERSION: &str = "SELECT max(version)::bigint AS version FROM refinery_schema_history";

/// Refuses a schema that holds something else, or a ledger newer than this build.
pub(super) fn check(
    client: &mut impl postgres::GenericClient,
    location: &Location,
) -> Result<Found> {
    let row = client.query_one(IDENTITY, &[])?;
    let (history, ledger, objects): (bool, bool, i64) = (
        row.try_get("has_history")?,
        row.try_get("has_ledger")?,
        row.try_get("objects")?,
    );
    if !(history && ledger) {
        if objects == 0 {
            return Ok(Found::Empty);
        }
        return Err(StorageError::NotALedger(location.clone()).into());
    }
    let version: Option<i64> = client.query_one(VERSION, &[])?.try_get("version")?;
    let version = version.unwrap_or(0);
    let supported = supported_version();
    if version > supported {
        return Err(StorageError::SchemaTooNew {
            found: version,
            supported,
        }
        .into());
    }
    Ok(Found::Ledger { version })
}

/// The migration lock: one node migrates, the others wait and then find the ledger current.
const MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(7814902317660418408)";

/// Brings the schema up to date in one transaction, re-checking what it holds under the
/// migration lock first.
pub(super) fn run(client: &mut postgres::Client, location: &Location) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute(MIGRATION_LOCK, &[])?;
    let found = check(&mut tx, location)?;
    if found
        != (Found::Ledger {
            version: supported_version(),
        })
    {
        embedded::migrations::runner()
            .set_grouped(true)
            .set_abort_divergent(true)
            .set_abort_missing(true)
            .run(&mut InTransaction(&mut tx))?;
    }
    tx.commit()?;
    Ok(())
}

/// Lets refinery run inside a transaction we opened: its statements run as they are, with no
/// transaction of their own.
struct InTransaction<'a, 'b>(&'a mut postgres::Transaction<'b>);

impl RefineryTransaction for InTransaction<'_, '_> {
    type Error = postgres::Error;

    fn execute<'q, T: Iterator<Item = &'q str>>(
        &mut self,
        queries: T,
    ) -> Result<usize, Self::Error> {
        let mut count = 0;
        for query in queries {
            self.0.batch_execute(query)?;
            count += 1;
        }
        Ok(count)
    }
}

impl Query<Vec<Migration>> for InTransaction<'_, '_> {
    fn query(&mut self, query: &str) -> Result<Vec<Migration>, Self::Error> {
        let rows = self.0.query(query, &[])?;
        let mut applied = Vec::with_capacity(rows.len());
        for row in rows {
            let version: i32 = row.try_get(0)?;
            let name: String = row.try_get(1)?;
            let applied_on: String = row.try_get(2)?;
            let checksum: String = row.try_get(3)?;
            // refinery writes both in these forms; a row it cannot read is not its own.
            let applied_on = time::OffsetDateTime::parse(
                &applied_on,
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            let checksum = checksum.parse::<u64>().unwrap_or(0);
            applied.push(Migration::applied(version, name, applied_on, checksum));
        }
        Ok(applied)
    }
}

impl Migrate for InTransaction<'_, '_> {}

/// The foreign keys of the ledger's tables, one column each: table, column, parent, parent
/// column.
const FOREIGN_KEYS: &str = "SELECT c.conrelid::regclass::text AS child, a.attname AS column_name,
            c.confrelid::regclass::text AS parent, p.attname AS parent_column
       FROM pg_constraint AS c
       JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
       JOIN pg_attribute AS p ON p.attrelid = c.confrelid AND p.attnum = c.confkey[1]
      WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
        AND array_length(c.conkey, 1) = 1
      ORDER BY 1, 2";

/// The whole-database check, in the read transaction the caller runs it in: every table read
/// whole (a damaged page fails the read), and every foreign key's references resolved. The
/// server enforces foreign keys unless a superuser turned triggers off
/// (`session_replication_role`); this finds what such an edit left.
pub(super) fn integrity(conn: &mut Conn<'_>) -> Result<CheckReport> {
    let keys = conn.rows(FOREIGN_KEYS, &[])?;
    let mut tables: Vec<String> = Vec::new();
    let mut broken_references = Vec::new();
    for key in keys {
        let (child, column, parent, parent_column): (String, String, String, String) = (
            key.try_get("child")?,
            key.try_get("column_name")?,
            key.try_get("parent")?,
            key.try_get("parent_column")?,
        );
        if !tables.contains(&child) {
            tables.push(child.clone());
        }
        // Names come from the catalog and are quoted as identifiers; no value is formatted in.
        let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        let missing = format!(
            "SELECT DISTINCT c.{col}::text AS missing FROM {child} AS c
              WHERE c.{col} IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM {parent} AS p WHERE p.{pcol} = c.{col})
              ORDER BY 1",
            col = quote(&column),
            pcol = quote(&parent_column),
            child = quote(&child),
            parent = quote(&parent),
        );
        let found = conn.query_text(&missing)?;
        if !found.is_empty() {
            broken_references.push(BrokenReference {
                table: child,
                columns: column,
                references: parent,
                rows: found.len() as u64,
                missing: found.into_iter().take(100).collect(),
            });
        }
    }
    for table in &tables {
        conn.query_text(&format!(
            "SELECT count(*)::text FROM \"{}\"",
            table.replace('"', "\"\"")
        ))?;
    }
    if tables.is_empty() {
        return Err(Error::from(Corruption::new(
            "the ledger's schema has no foreign key: it is not the schema this build made",
        )));
    }
    let ok = broken_references.is_empty();
    Ok(CheckReport {
        ok,
        integrity: vec!["ok".to_owned()],
        broken_references,
        tree: Vec::new(),
    })
}
