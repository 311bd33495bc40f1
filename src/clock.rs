//! Time: the ledger's clock and its one textual form.
//!
//! Every time the ledger stores is UTC text of the fixed width `YYYY-MM-DDTHH:MM:SS.sssZ`, so
//! times sort and compare as text in SQL.

use std::fmt;
use std::sync::Mutex;

use chrono::{DateTime, NaiveDateTime, TimeDelta, Utc};

/// A source of the current time. The ledger reads it once per operation, inside the
/// operation's transaction.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to; for tests of time windows.
///
/// ```
/// use session_ledger::{Clock, ManualClock};
/// let clock = ManualClock::new("2026-01-01T00:00:00.000Z".parse().unwrap());
/// clock.advance(chrono::TimeDelta::seconds(61));
/// assert_eq!(session_ledger::format_ts(clock.now()), "2026-01-01T00:01:01.000Z");
/// ```
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward (or back, for a negative delta).
    pub fn advance(&self, by: TimeDelta) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// Formats a time the way the ledger stores it: `YYYY-MM-DDTHH:MM:SS.sssZ`.
pub fn format_ts(t: DateTime<Utc>) -> String {
    t.format(FORMAT).to_string()
}

/// Parses a time in the ledger's stored form.
pub(crate) fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s, FORMAT)
        .ok()
        .map(|n| n.and_utc())
}

pub(crate) fn serialize_ts<S: serde::Serializer>(
    t: &DateTime<Utc>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_ts(*t))
}

pub(crate) fn serialize_opt_ts<S: serde::Serializer>(
    t: &Option<DateTime<Utc>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&format_ts(*t)),
        None => s.serialize_none(),
    }
}
