//! The archive file: a SQLite file of the ledger's own schema (so the stock shell, the docs'
//! queries and the library's checks read it as they read a ledger) holding one archive's rows,
//! plus one table of its own, `archive`, that says what it is.
//!
//! Its rules for new writes are off: it holds rows that those rules judged in the live ledger
//! (a label since raised, a posture whose creator has since lost its own), and its trail starts
//! after the previous archive's boundary, which its `archives` rows record. Its rules against
//! change stay. A ledger file with an `archive` table opens read-only only (`open.rs`).

use std::path::Path;

use rusqlite::types::ToSqlOutput;
use rusqlite::{named_params, Connection, OpenFlags, OptionalExtension};

use super::columns::{opt_time, time};
use super::connection::configure;
use super::migrate;
use super::{classify, Conn};
use crate::clock::format_ts;
use crate::config::Config;
use crate::error::{InputError, Result};
use crate::storage::{
    ArchiveFile, ArchiveHeader, ArchiveRow, ArchiveWrites, Row, Table, TreeNode, Value,
};

/// The archive's own row: what it holds and where it came from. The one table an archive file
/// has that a ledger has not.
pub(super) const CREATE_HEADER: &str = "
CREATE TABLE archive (
    -- The archive's number in the ledger it came from.
    archive     INTEGER PRIMARY KEY NOT NULL CHECK (archive >= 1),
    -- The boundary it starts after (the previous archive's; 0 for the first) and the one it
    -- ends at: it holds the trail's rows trail_from + 1 to trail_size.
    trail_from  INTEGER NOT NULL CHECK (trail_from >= 0),
    trail_size  INTEGER NOT NULL CHECK (trail_size >= trail_from),
    -- The signed checkpoint of size trail_size, as handed out (NULL when that size is 0).
    checkpoint  TEXT CHECK (checkpoint IS NULL OR length(checkpoint) > 0),
    -- The cut-off it was made with (the trees that ended before it), and the one tree it was
    -- asked for; either may be NULL.
    before      TEXT
                CHECK (before GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    tree        TEXT CHECK (tree IS NULL OR length(tree) BETWEEN 1 AND 128),
    -- How many trees and sessions it holds.
    trees       INTEGER NOT NULL CHECK (trees >= 0),
    sessions    INTEGER NOT NULL CHECK (sessions >= trees),
    -- When it was made, UTC, by whom, and from which ledger (its location, never a password).
    made_at     TEXT NOT NULL
                CHECK (made_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    made_by     TEXT NOT NULL CHECK (length(made_by) BETWEEN 1 AND 64),
    ledger      TEXT NOT NULL
) STRICT;
CREATE TRIGGER archive_is_fixed_update BEFORE UPDATE ON archive
BEGIN SELECT RAISE(ABORT, 'session-ledger: an archive file is never changed'); END;
CREATE TRIGGER archive_is_fixed_delete BEFORE DELETE ON archive
BEGIN SELECT RAISE(ABORT, 'session-ledger: an archive file is never changed'); END;
";

/// The triggers that judge new writes (every `INSERT` trigger): off in an archive file.
const INSERT_TRIGGERS: &str = "SELECT name FROM sqlite_schema
      WHERE type = 'trigger' AND (sql LIKE '%BEFORE INSERT ON%' OR sql LIKE '%AFTER INSERT ON%')";

/// The trigger that keeps epochs, as the schema has it.
const EPOCHS_GUARD: &str =
    "SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = 'epochs_are_history_delete'";

/// True when the file holds an archive: it has the `archive` table.
pub(super) const IS_ARCHIVE: &str =
    "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'archive')";

const HEADER: &str = "SELECT archive, trail_from, trail_size, checkpoint, before, tree, trees,
            sessions, made_at, made_by, ledger FROM archive";

const INSERT_HEADER: &str = "INSERT INTO archive
         (archive, trail_from, trail_size, checkpoint, before, tree, trees, sessions, made_at,
          made_by, ledger)
     VALUES (:archive, :trail_from, :trail_size, :checkpoint, :before, :tree, :trees, :sessions,
             :made_at, :made_by, :ledger)";

const INSERT_NODE: &str = "INSERT INTO audit_tree (level, idx, hash) VALUES (?1, ?2, ?3)";

/// How many rows go into the file between two commits. The file is a partial one, under a
/// name of its own, until it is verified, so its commits need not be one; each commit syncs
/// what it wrote, so that the file's data never piles up unsynced in the kernel's cache to be
/// written back at once by the last commit, when every writer's sync beside it (the live
/// ledger's commits) would wait behind it.
const ROWS_PER_COMMIT: usize = 10_000;

/// An archive file being written, a commit every [`ROWS_PER_COMMIT`] rows and the last by
/// [`ArchiveFile::finish`].
struct Writing {
    conn: Connection,
    /// Rows written since the last commit.
    uncommitted: usize,
}

impl Writing {
    /// Counts `rows` more written; commits and begins again after [`ROWS_PER_COMMIT`].
    fn wrote(&mut self, rows: usize) -> Result<()> {
        self.uncommitted += rows;
        if self.uncommitted >= ROWS_PER_COMMIT {
            self.conn.execute_batch("COMMIT; BEGIN IMMEDIATE")?;
            self.uncommitted = 0;
        }
        Ok(())
    }
}

/// Creates the file at `path` (which must not exist) with the ledger's schema, its insert
/// triggers off, and the `archive` table, and begins the first transaction that fills it.
pub(crate) fn create_archive_file(path: &Path) -> Result<Box<dyn ArchiveFile>> {
    if path.exists() {
        return Err(InputError::InvalidConfig(format!(
            "{} exists: an archive is written to a new file only",
            path.display()
        ))
        .into());
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).map_err(|e| classify(e, path))?;
    // As every connection to a ledger (the migrations use `sha3()`), with every commit synced;
    // and no WAL: the archive is one file.
    configure(&conn, &Config::default()).map_err(|e| classify(e, path))?;
    // Its rows are written as they were stored, references in any order: the check after it
    // is written finds any that does not resolve.
    conn.pragma_update(None, "foreign_keys", false)?;
    migrate::run(&mut conn, path)?;
    let triggers = conn
        .prepare(INSERT_TRIGGERS)?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for name in triggers {
        // A name read from the schema, quoted as an identifier: nothing to bind.
        conn.execute_batch(&format!("DROP TRIGGER \"{}\"", name.replace('"', "\"\"")))?;
    }
    // The migration's first epoch makes way for the live ledger's, which the archive copies.
    let guard: String = conn.query_row(EPOCHS_GUARD, [], |row| row.get(0))?;
    conn.execute_batch("DROP TRIGGER epochs_are_history_delete; DELETE FROM epochs;")?;
    conn.execute_batch(&guard)?;
    conn.execute_batch(CREATE_HEADER)?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    Ok(Box::new(Writing {
        conn,
        uncommitted: 0,
    }))
}

/// A value as SQLite stores it: times in the stored form, booleans as 0 and 1.
fn stored(value: &Value) -> ToSqlOutput<'_> {
    use rusqlite::types::Value as Sql;
    ToSqlOutput::Owned(match value {
        Value::Null => Sql::Null,
        Value::Integer(n) => Sql::Integer(*n),
        Value::Text(text) => Sql::Text(text.clone()),
        Value::Bool(b) => Sql::Integer(i64::from(*b)),
        Value::Time(at) => Sql::Text(format_ts(*at)),
    })
}

impl ArchiveFile for Writing {
    fn append(&mut self, table: Table, rows: &[Row]) -> Result<()> {
        let names: Vec<&str> = table.columns().iter().map(|(name, _)| *name).collect();
        let marks: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
        // Names from the constants of `Table`; every value bound.
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            table.name(),
            names.join(", "),
            marks.join(", ")
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        for row in rows {
            let values: Vec<ToSqlOutput<'_>> = row.iter().map(stored).collect();
            stmt.execute(rusqlite::params_from_iter(values))?;
        }
        drop(stmt);
        self.wrote(rows.len())
    }

    fn append_nodes(&mut self, nodes: &[TreeNode]) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(INSERT_NODE)?;
        for (level, idx, hash) in nodes {
            stmt.execute((level, i64::try_from(*idx).unwrap_or(i64::MAX), &hash[..]))?;
        }
        drop(stmt);
        self.wrote(nodes.len())
    }

    fn append_previous(&mut self, archives: &[ArchiveRow]) -> Result<()> {
        let mut tx = super::Tx {
            read: Conn { conn: &self.conn },
        };
        for row in archives {
            tx.append_archive(row)?;
        }
        Ok(())
    }

    fn finish(self: Box<Self>, header: &ArchiveHeader) -> Result<()> {
        let conn = self.conn;
        conn.execute(
            INSERT_HEADER,
            named_params! {
                ":archive": header.archive,
                ":trail_from": i64::try_from(header.trail_from).unwrap_or(i64::MAX),
                ":trail_size": i64::try_from(header.trail_size).unwrap_or(i64::MAX),
                ":checkpoint": header.checkpoint,
                ":before": header.before.map(format_ts),
                ":tree": header.tree,
                ":trees": i64::try_from(header.trees).unwrap_or(i64::MAX),
                ":sessions": i64::try_from(header.sessions).unwrap_or(i64::MAX),
                ":made_at": format_ts(header.made_at),
                ":made_by": header.made_by,
                ":ledger": header.ledger,
            },
        )?;
        conn.execute_batch("COMMIT")?;
        conn.close().map_err(|(_, e)| e)?;
        Ok(())
    }
}

/// The header of the archive file at `path`, read-only; `None` for a file without one.
pub(crate) fn archive_header(path: &Path) -> Result<Option<ArchiveHeader>> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| classify(e, path))?;
    let is_archive: bool = conn.query_row(IS_ARCHIVE, [], |row| row.get(0))?;
    if !is_archive {
        return Ok(None);
    }
    let header = conn
        .query_row(HEADER, [], |row| {
            Ok((|| -> Result<ArchiveHeader> {
                let size = |column: &str| -> Result<u64> {
                    let n: i64 = row.get(column)?;
                    u64::try_from(n).map_err(|_| {
                        crate::error::Corruption::new(format!("archive.{column} holds {n}")).into()
                    })
                };
                Ok(ArchiveHeader {
                    archive: row.get("archive")?,
                    trail_from: size("trail_from")?,
                    trail_size: size("trail_size")?,
                    checkpoint: row.get("checkpoint")?,
                    before: opt_time("archive.before", row.get("before")?)?,
                    tree: row.get("tree")?,
                    trees: size("trees")?,
                    sessions: size("sessions")?,
                    made_at: time("archive.made_at", &row.get::<_, String>("made_at")?)?,
                    made_by: row.get("made_by")?,
                    ledger: row.get("ledger")?,
                })
            })())
        })
        .optional()?
        .transpose()?;
    Ok(header)
}
