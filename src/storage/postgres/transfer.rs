//! A whole ledger, read as it is stored, and written as it is into a new PostgreSQL ledger: the
//! engine's side of a copy (src/copy.rs).
//!
//! An import is one write transaction holding the ledger's lock. It begins only on a ledger
//! that holds nothing yet, switches the contract's triggers off for that transaction alone
//! (`ALTER TABLE … DISABLE TRIGGER USER`, which needs the tables' owner, and which a rollback
//! undoes), and appends each table's rows in batches with one `INSERT … SELECT FROM unnest(…)`
//! per batch: the rows a copy brings were written under the rules elsewhere, and some of them
//! (a raised label, a posture its creator no longer holds) are rightly refused as new writes.
//! Every `CHECK`, key and reference still holds while they are off.

use chrono::{DateTime, Utc};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

use super::{Conn, On, Tx};
use crate::error::{Conflict, Corruption, Location, Result};
use crate::storage::{ExportReads, Import, Kind, Read, Row, Table, Value};

impl ExportReads for Conn<'_> {
    fn export(&mut self, table: Table, each: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        // Names from the constants of `Table`, no value: nothing to bind.
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            select_list(table),
            table.name(),
            table.key()
        );
        self.table_rows(&sql, &[], table, each)
    }
}

/// The columns of `table` as [`Conn::table_rows`] reads them: depth is an integer, every other
/// number a bigint; chain is jsonb.
pub(super) fn select_list(table: Table) -> String {
    table
        .columns()
        .iter()
        .map(|(name, kind)| match kind {
            Kind::Integer => format!("{name}::bigint AS {name}"),
            Kind::Json => format!("{name}::text AS {name}"),
            Kind::Text | Kind::Bool | Kind::Time => (*name).to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Conn<'_> {
    /// Calls `each` on every row of `sql`, which selects [`select_list`] of `table`, streamed.
    pub(super) fn table_rows(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        table: Table,
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let columns = table.columns();
        self.flush()?;
        let params = params.iter().copied();
        let mut rows = match &mut self.on {
            On::Client(client) => client.query_raw(sql, params)?,
            On::Transaction(tx) => tx.query_raw(sql, params)?,
        };
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns.len());
            for (i, (_, kind)) in columns.iter().enumerate() {
                values.push(
                    match kind {
                        Kind::Integer => row.try_get::<_, Option<i64>>(i)?.map(Value::Integer),
                        Kind::Text | Kind::Json => {
                            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
                        }
                        Kind::Bool => row.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
                        Kind::Time => row.try_get::<_, Option<DateTime<Utc>>>(i)?.map(Value::Time),
                    }
                    .unwrap_or(Value::Null),
                );
            }
            each(values)?;
        }
        Ok(())
    }
}

/// Holds anything a copy would collide with or lose: a session, an audit row, or an epoch
/// after the migration's first.
const HOLDS_ANYTHING: &str = "SELECT EXISTS (SELECT 1 FROM sessions)
        OR EXISTS (SELECT 1 FROM audit)
        OR EXISTS (SELECT 1 FROM decisions)
        OR EXISTS (SELECT 1 FROM epochs WHERE epoch > 0) AS holds";

/// Every table whose triggers an import switches off: those it writes (the audit tree too, which
/// the copy builds from the copied rows), and `audit_time_order`.
const TRIGGERED: [&str; 13] = [
    "sessions",
    "labels",
    "epochs",
    "postures",
    "command_patterns",
    "override_scopes",
    "audit",
    "audit_time_order",
    "audit_tree",
    "checkpoints",
    "decisions",
    "decision_log",
    "decision_queue",
];

/// The migration's epoch 0 makes way for the source's.
const CLEAR_EPOCHS: &str = "DELETE FROM epochs";

/// The sessions' own sequence numbers came along; new sessions are numbered after them.
const RESTART_SESSION_SEQ: &str =
    "SELECT setval(pg_get_serial_sequence('sessions', 'seq'), coalesce(max(seq), 1), max(seq) IS NOT NULL)
     FROM sessions";

/// The records' ids came along too; new records are numbered after them.
const RESTART_DECISION_ID: &str =
    "SELECT setval(pg_get_serial_sequence('decisions', 'id'), coalesce(max(id), 1), max(id) IS NOT NULL)
     FROM decisions";

const SET_ORDERED_FROM: &str = "UPDATE audit_time_order SET ordered_from = $1 WHERE id = 1";

/// The import of [`Engine::import`](crate::storage::Engine::import), inside `tx`, which holds
/// the ledger's lock.
pub(super) fn import(
    tx: &mut Tx<'_>,
    location: &Location,
    f: &mut dyn FnMut(&mut dyn Import) -> Result<()>,
) -> Result<()> {
    let holds: bool = tx
        .read
        .row(HOLDS_ANYTHING, &[])?
        .map_or(Ok(false), |row| row.try_get("holds"))?;
    if holds {
        return Err(Conflict::NotEmpty(location.clone()).into());
    }
    let triggers = |verb: &str| {
        TRIGGERED
            .iter()
            .map(|table| format!("ALTER TABLE {table} {verb} TRIGGER USER;"))
            .collect::<String>()
    };
    tx.read.batch(&triggers("DISABLE"))?;
    tx.read.execute(CLEAR_EPOCHS, &[])?;
    f(tx)?;
    tx.read.row(RESTART_SESSION_SEQ, &[])?;
    tx.read.row(RESTART_DECISION_ID, &[])?;
    tx.read.batch(&triggers("ENABLE"))
}

impl Import for Tx<'_> {
    fn read(&mut self) -> &mut dyn Read {
        &mut self.read
    }

    fn write(&mut self) -> &mut dyn crate::storage::Write {
        self
    }

    fn append(&mut self, table: Table, rows: &[Row]) -> Result<()> {
        let columns = table.columns();
        let mut arrays: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(columns.len());
        for (i, (name, kind)) in columns.iter().enumerate() {
            let column = || rows.iter().map(move |row| &row[i]);
            let misfit = || {
                Corruption::new(format!(
                    "a copied {}.{name} is not a {kind:?}",
                    table.name()
                ))
            };
            arrays.push(match kind {
                Kind::Integer => Box::new(
                    column()
                        .map(|v| match v {
                            Value::Integer(n) => Ok(Some(*n)),
                            Value::Null => Ok(None),
                            _ => Err(misfit()),
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?,
                ),
                Kind::Text | Kind::Json => Box::new(
                    column()
                        .map(|v| match v {
                            Value::Text(t) => Ok(Some(t.clone())),
                            Value::Null => Ok(None),
                            _ => Err(misfit()),
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?,
                ),
                Kind::Bool => Box::new(
                    column()
                        .map(|v| match v {
                            Value::Bool(b) => Ok(Some(*b)),
                            Value::Null => Ok(None),
                            _ => Err(misfit()),
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?,
                ),
                Kind::Time => Box::new(
                    column()
                        .map(|v| match v {
                            Value::Time(t) => Ok(Some(*t)),
                            Value::Null => Ok(None),
                            _ => Err(misfit()),
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?,
                ),
            });
        }
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let arrays_in: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| {
                let array = match kind {
                    Kind::Integer => "bigint[]",
                    Kind::Text | Kind::Json => "text[]",
                    Kind::Bool => "boolean[]",
                    Kind::Time => "timestamptz[]",
                };
                format!("${}::{array}", i + 1)
            })
            .collect();
        let values: Vec<String> = columns
            .iter()
            .map(|(name, _)| {
                // The one jsonb column; audit details stay text, hashed byte for byte.
                if (table, *name) == (Table::Postures, "chain") {
                    format!("u.{name}::jsonb")
                } else {
                    format!("u.{name}")
                }
            })
            .collect();
        // Names from the constants of `Table`; every value is in the bound arrays.
        let sql = format!(
            "INSERT INTO {table} ({names}) OVERRIDING SYSTEM VALUE
             SELECT {values} FROM unnest({arrays}) AS u({names})",
            table = table.name(),
            names = names.join(", "),
            values = values.join(", "),
            arrays = arrays_in.join(", "),
        );
        let params: Vec<&(dyn ToSql + Sync)> = arrays.iter().map(|a| a.as_ref()).collect();
        self.read.flush()?;
        // Unprepared: each table's statement runs once per batch of a one-off copy.
        let written = match &mut self.read.on {
            On::Client(client) => client.execute(sql.as_str(), &params)?,
            On::Transaction(tx) => tx.execute(sql.as_str(), &params)?,
        };
        if written != rows.len() as u64 {
            return Err(Corruption::new(format!(
                "{} of {} copied rows of {} were written",
                written,
                rows.len(),
                table.name()
            ))
            .into());
        }
        Ok(())
    }

    fn set_audit_ordered_from(&mut self, seq: i64) -> Result<()> {
        self.read.execute(SET_ORDERED_FROM, &[&seq])?;
        Ok(())
    }
}
