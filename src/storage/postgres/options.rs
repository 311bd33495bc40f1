//! The `ledger_options` table: one row per option ever set, by its name.

use super::columns::Time;
use super::{Conn, Tx};
use crate::error::Result;
use crate::storage::{OptionReads, OptionWrites};

/// An option's value, by its key.
pub(super) const OPTION: &str = "SELECT value FROM ledger_options WHERE name = $1";

/// An option set, or set again.
pub(super) const SET_OPTION: &str = "INSERT INTO ledger_options (name, value, set_by, set_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by,
                                      set_at = excluded.set_at";

impl OptionReads for Conn<'_> {
    fn ledger_option(&mut self, name: &str) -> Result<Option<String>> {
        match self.row(OPTION, &[&name])? {
            Some(row) => Ok(Some(row.try_get("value")?)),
            None => Ok(None),
        }
    }
}

impl OptionWrites for Tx<'_> {
    fn set_ledger_option(&mut self, name: &str, value: &str, actor: &str, at: Time) -> Result<()> {
        self.read
            .execute(SET_OPTION, &[&name, &value, &actor, &at])?;
        Ok(())
    }
}
