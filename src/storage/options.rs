//! What the ledger options concept needs from a database: an option's value, and setting it.
//!
//! Traits only: no SQL and no rule.

use chrono::{DateTime, Utc};

use crate::error::Result;

/// Reads of the ledger's options.
pub(crate) trait OptionReads {
    /// The value (`on` or `off`) `name` was last set to; `None` when it never was.
    fn ledger_option(&mut self, name: &str) -> Result<Option<String>>;
}

/// Writes of the ledger's options.
pub(crate) trait OptionWrites {
    /// Sets `name` to `value`, by `actor` at `at`.
    fn set_ledger_option(
        &mut self,
        name: &str,
        value: &str,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()>;
}
