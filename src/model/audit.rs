//! An audit row, its kind, and the head of the chain the rows form.
//!
//! Values only: appending, listing and verifying are `crate::audit`'s.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Error, InputError};

/// The `prev_hash` of the first audit row: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

macro_rules! audit_kinds {
    ($($(#[$doc:meta])* $variant:ident = $word:literal,)*) => {
        /// What an audit row records: its `kind`, stored as `<subject>.<event>`.
        ///
        /// The `audit_kinds` table of a ledger holds the same words, each with what a row of
        /// that kind records and the keys of its `detail`; a migration that adds a kind adds it
        /// here too (a test compares the two).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum AuditKind {
            $($(#[$doc])* $variant,)*
        }

        impl AuditKind {
            /// Every kind, in the order the schema added them.
            pub const ALL: &'static [AuditKind] = &[$(AuditKind::$variant,)*];

            /// The word stored in `audit.kind`, like `session.create`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AuditKind::$variant => $word,)*
                }
            }
        }

        impl FromStr for AuditKind {
            type Err = Error;

            /// Parses a kind's word, like `posture.revoke`.
            fn from_str(s: &str) -> Result<AuditKind, Error> {
                match s {
                    $($word => Ok(AuditKind::$variant),)*
                    _ => Err(InputError::InvalidAuditKind(s.to_owned()).into()),
                }
            }
        }
    };
}

audit_kinds! {
    /// An operator opened a root session.
    SessionRoot = "session.root",
    /// A live session created a child.
    SessionCreate = "session.create",
    /// A create was refused by a bound (rule S2).
    SessionCreateRefused = "session.create_refused",
    /// A spawned sub-agent id was first seen and recorded.
    SessionSpawn = "session.spawn",
    /// A session ended and stays as a tombstone.
    SessionEnd = "session.end",
    /// A label was materialized from the nearest materialized ancestor (rules L2, L3).
    LabelInherit = "label.inherit",
    /// A label was raised (rule L1).
    LabelRaise = "label.raise",
    /// An operator granted a posture.
    PostureGrant = "posture.grant",
    /// A posture was revoked.
    PostureRevoke = "posture.revoke",
    /// A new posture epoch started (rule P5).
    EpochStart = "epoch.start",
    /// An operator allowed a command pattern for one session.
    PatternAdd = "pattern.add",
    /// A command pattern was removed.
    PatternRemove = "pattern.remove",
    /// An operator granted an override scope.
    ScopeGrant = "scope.grant",
    /// An override scope was revoked before it expired.
    ScopeRevoke = "scope.revoke",
    /// A checkpoint of the audit tree was signed (rule A4).
    CheckpointSign = "checkpoint.sign",
    /// A batch of decision records was given positions in the decision log (rule D1).
    DecisionsIntegrate = "decisions.integrate",
    /// An operator set an option of the ledger.
    LedgerOption = "ledger.option",
    /// Ended trees and the trail up to a checkpoint were written to an archive file, which
    /// verified, and leave the live ledger (rule K1).
    ArchiveMake = "archive.make",
}

impl fmt::Display for AuditKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for AuditKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<str> for AuditKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for AuditKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One row of the audit trail. Its JSON form (`session-ledger --json audit`) has exactly these
/// field names: `seq`, `at`, `actor`, `kind`, `session`, `detail`, `prev_hash`, `hash`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Position in the trail, increasing.
    pub seq: i64,
    /// When the change was made.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub at: DateTime<Utc>,
    /// Who made it.
    pub actor: String,
    /// What happened.
    pub kind: AuditKind,
    /// Which session it happened to.
    pub session: Option<String>,
    /// Everything else, as a JSON object.
    pub detail: serde_json::Value,
    /// The previous row's hash.
    pub prev_hash: String,
    /// This row's hash.
    pub hash: String,
}

/// The head of the audit chain: the last row's sequence number and hash. Keep it somewhere
/// else; [`Ledger::verify`](crate::Ledger::verify) given it also detects rows removed from the
/// end since, and [`Ledger::verify_from`](crate::Ledger::verify_from) checks only the rows
/// written after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditHead {
    /// The last row's sequence number (0 for an empty trail).
    pub seq: i64,
    /// Its hash ([`GENESIS_HASH`] for an empty trail).
    pub hash: String,
}

impl AuditHead {
    /// The head of an empty trail.
    pub(crate) fn genesis() -> AuditHead {
        AuditHead {
            seq: 0,
            hash: GENESIS_HASH.to_owned(),
        }
    }
}

impl fmt::Display for AuditHead {
    /// `SEQ:HASH`, the form [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

impl FromStr for AuditHead {
    type Err = Error;

    /// Parses `SEQ:HASH`, with SEQ a non-negative integer and HASH 64 lower-case hex digits.
    fn from_str(s: &str) -> Result<AuditHead, Error> {
        let bad = || Error::from(InputError::InvalidHead(s.to_owned()));
        let (seq, hash) = s.split_once(':').ok_or_else(bad)?;
        if seq.is_empty() || seq.len() > 18 || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let hash_ok =
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hash_ok {
            return Err(bad());
        }
        Ok(AuditHead {
            seq: seq.parse().map_err(|_| bad())?,
            hash: hash.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word_and_nothing_else_does() {
        for kind in AuditKind::ALL {
            assert_eq!(kind.as_str().parse::<AuditKind>().ok(), Some(*kind));
        }
        for word in [
            "",
            "session",
            "session.Create",
            "posture.revoke ",
            "label.lower",
        ] {
            assert!(word.parse::<AuditKind>().is_err(), "{word:?}");
        }
    }
}
