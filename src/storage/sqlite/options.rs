//! The `ledger_options` table: one row per option ever set, by its name.

use chrono::{DateTime, Utc};
use rusqlite::{named_params, OptionalExtension};

use super::{Conn, Tx};
use crate::clock::format_ts;
use crate::error::Result;
use crate::storage::{OptionReads, OptionWrites};

/// An option's value, by its key.
pub(super) const OPTION: &str = "SELECT value FROM ledger_options WHERE name = :name";

/// An option set, or set again.
pub(super) const SET_OPTION: &str = "INSERT INTO ledger_options (name, value, set_by, set_at)
     VALUES (:name, :value, :actor, :at)
     ON CONFLICT (name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by,
                                      set_at = excluded.set_at";

impl OptionReads for Conn<'_> {
    fn ledger_option(&mut self, name: &str) -> Result<Option<String>> {
        let mut stmt = self.conn.prepare_cached(OPTION)?;
        Ok(stmt
            .query_row(named_params! { ":name": name }, |row| row.get("value"))
            .optional()?)
    }
}

impl OptionWrites for Tx<'_> {
    fn set_ledger_option(
        &mut self,
        name: &str,
        value: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut stmt = self.conn().prepare_cached(SET_OPTION)?;
        stmt.execute(named_params! {
            ":name": name, ":value": value, ":actor": actor, ":at": format_ts(at),
        })?;
        Ok(())
    }
}
