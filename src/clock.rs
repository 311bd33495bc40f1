//! Time: the ledger's clock and its one textual form.
//!
//! Every time the ledger stores is UTC text of the fixed width `YYYY-MM-DDTHH:MM:SS.sssZ`, so
//! times sort and compare as text in SQL.
//!
//! It knows no concept and no engine: the engines store times in this form, the concepts read
//! the clock through [`Config`](crate::Config).

use std::fmt;
use std::sync::Mutex;

use chrono::{DateTime, DurationRound, NaiveDateTime, TimeDelta, Utc};

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

/// `t` at the stored precision, whole milliseconds, so that a value built from it equals what a
/// later read of the stored time returns.
pub(crate) fn stored_precision(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(t)
}

/// Formats a time the way the ledger stores it: `YYYY-MM-DDTHH:MM:SS.sssZ`.
pub fn format_ts(t: DateTime<Utc>) -> String {
    t.format(FORMAT).to_string()
}

/// Parses a time in the ledger's stored form, `YYYY-MM-DDTHH:MM:SS.sssZ` exactly. Every read
/// parses a few of these, so this reads the fixed positions instead of interpreting a format.
pub(crate) fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0, 4)? as i32, num(5, 7)?, num(8, 10)?)?;
    let time = chrono::NaiveTime::from_hms_milli_opt(
        num(11, 13)?,
        num(14, 16)?,
        num(17, 19)?,
        num(20, 23)?,
    )?;
    Some(NaiveDateTime::new(date, time).and_utc())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_times_round_trip_and_nothing_else_parses() {
        let t = parse_ts("2026-11-30T12:34:56.789Z").expect("parses");
        assert_eq!(format_ts(t), "2026-11-30T12:34:56.789Z");
        for bad in [
            "2026-11-30T12:34:56Z",
            "2026-11-30 12:34:56.789Z",
            "2026-13-30T12:34:56.789Z",
            "2026-11-30T24:00:00.000Z",
            "2026-11-30T12:34:56.78xZ",
            "+026-11-30T12:34:56.789Z",
            "",
        ] {
            assert_eq!(parse_ts(bad), None, "{bad:?}");
        }
    }
}
