//! The handle's ledger options: setting one, reading it.

use crate::error::Result;
use crate::model::validate_actor;
use crate::options::{self, LedgerOption};

use super::Ledger;

impl Ledger {
    /// Sets `option` on or off for every handle on this ledger, with a `ledger.option` audit
    /// row; returns whether it was on.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; `ReadOnly`; [`Error::Storage`](crate::Error::Storage).
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, LedgerOption};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// assert!(!ledger.option(LedgerOption::UntrustedAsks)?);
    /// assert!(!ledger.set_option(LedgerOption::UntrustedAsks, true, "alice")?);
    /// assert!(ledger.option(LedgerOption::UntrustedAsks)?);
    /// # Ok(()) }
    /// ```
    pub fn set_option(&self, option: LedgerOption, on: bool, actor: &str) -> Result<bool> {
        validate_actor(actor)?;
        self.write(|tx, now| options::set(tx, option, on, actor, now))
    }

    /// Whether `option` is on; one never set is off.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn option(&self, option: LedgerOption) -> Result<bool> {
        self.storage.read(|r| options::is_on(r, option))
    }
}
