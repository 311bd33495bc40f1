//! Options an operator sets on the ledger itself, which every handle on it follows: so far
//! [`LedgerOption::UntrustedAsks`] (rule G3). An option never set is off. Setting one is a write
//! with its `ledger.option` audit row (rule A1).

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::audit;
use crate::error::Result;
use crate::model::AuditKind;
use crate::storage::{Read, Write};

/// An option of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LedgerOption {
    /// A session whose label is untrusted is not approved by `trust` for a call that is not
    /// read-only: its patterns and scopes still may, and otherwise it asks (rule G3). Its
    /// children inherit the label on first read (rule L2), and with it the same.
    UntrustedAsks,
}

impl LedgerOption {
    /// Every option.
    pub const ALL: [LedgerOption; 1] = [LedgerOption::UntrustedAsks];

    /// Its name, as stored and as the command line spells it with `-` for `_`.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerOption::UntrustedAsks => "untrusted_asks",
        }
    }

    /// The option named `name` (`untrusted_asks` or `untrusted-asks`).
    pub fn parse(name: &str) -> Option<LedgerOption> {
        let name = name.replace('-', "_");
        LedgerOption::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

/// Whether `option` is on.
pub(crate) fn is_on(r: &mut dyn Read, option: LedgerOption) -> Result<bool> {
    Ok(r.ledger_option(option.as_str())?.as_deref() == Some("on"))
}

/// Sets `option` on or off, with its audit row; returns what it was.
pub(crate) fn set(
    tx: &mut dyn Write,
    option: LedgerOption,
    on: bool,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let was = is_on(tx.read(), option)?;
    let word = |on: bool| if on { "on" } else { "off" };
    tx.set_ledger_option(option.as_str(), word(on), actor, now)?;
    let detail = json!({ "option": option.as_str(), "value": word(on), "was": word(was) });
    audit::append(tx, now, actor, AuditKind::LedgerOption, None, &detail)?;
    Ok(was)
}
