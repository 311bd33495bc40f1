//! A whole SQLite ledger, read as it is stored, for a copy into another engine. A copy does not
//! go into a SQLite file: SQLite cannot switch a table's triggers off, and a copy writes rows
//! (raised labels, postures whose creator has since lost its own) that the triggers rightly
//! refuse as new writes. A SQLite file is copied whole with `sqlite3`'s `.backup`.

use rusqlite::types::ValueRef;

use super::columns::time;
use super::Conn;
use crate::error::{Corruption, Result};
use crate::storage::{ExportReads, Kind, Row, Table, Value};

impl ExportReads for Conn<'_> {
    fn export(&mut self, table: Table, each: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let columns = table.columns();
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        // Names from the constants of `Table`, no value: nothing to bind.
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            names.join(", "),
            table.name(),
            table.key()
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        table_rows(table, &mut rows, each)
    }
}

/// Calls `each` on every row of `rows`, which holds `table`'s columns in their order.
pub(super) fn table_rows(
    table: Table,
    rows: &mut rusqlite::Rows<'_>,
    each: &mut dyn FnMut(Row) -> Result<()>,
) -> Result<()> {
    let columns = table.columns();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(columns.len());
        for (i, (name, kind)) in columns.iter().enumerate() {
            let column = format!("{}.{name}", table.name());
            values.push(value(&column, *kind, row.get_ref(i)?)?);
        }
        each(values)?;
    }
    Ok(())
}

/// A stored value as the copy carries it; a value of another type than the column's kind (which
/// the schema's `STRICT` and `CHECK`s keep out) is corruption.
fn value(column: &str, kind: Kind, stored: ValueRef<'_>) -> Result<Value> {
    let wrong = || Corruption::new(format!("{column} holds a value of the wrong type")).into();
    Ok(match (kind, stored) {
        (_, ValueRef::Null) => Value::Null,
        (Kind::Integer, ValueRef::Integer(n)) => Value::Integer(n),
        (Kind::Bool, ValueRef::Integer(0)) => Value::Bool(false),
        (Kind::Bool, ValueRef::Integer(1)) => Value::Bool(true),
        (Kind::Text | Kind::Json, ValueRef::Text(text)) => {
            Value::Text(std::str::from_utf8(text).map_err(|_| wrong())?.to_owned())
        }
        (Kind::Time, ValueRef::Text(text)) => Value::Time(time(
            column,
            std::str::from_utf8(text).map_err(|_| wrong())?,
        )?),
        _ => return Err(wrong()),
    })
}
