//! A posture (`trust`, `trust_reads`) with its provenance: the operator's grant it traces back
//! to and the delegation chain it was copied along.
//!
//! Values only: granting, inheriting and revoking are `crate::postures`'.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Error, InputError};

/// A posture level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PostureLevel {
    /// Every tool call is auto-approved.
    Trust,
    /// Read-only commands are auto-approved; anything else asks.
    TrustReads,
}

impl PostureLevel {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            PostureLevel::Trust => "trust",
            PostureLevel::TrustReads => "trust_reads",
        }
    }
}

impl fmt::Display for PostureLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for PostureLevel {
    type Err = Error;

    /// Parses `trust` or `trust_reads`.
    fn from_str(s: &str) -> Result<PostureLevel, Error> {
        match s {
            "trust" => Ok(PostureLevel::Trust),
            "trust_reads" => Ok(PostureLevel::TrustReads),
            _ => Err(InputError::InvalidPosture(s.to_owned()).into()),
        }
    }
}

/// Where a session's posture came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PostureSource {
    /// Granted by an operator on this session.
    Granted,
    /// Copied from the creator when this session was allocated.
    Inherited,
}

impl PostureSource {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            PostureSource::Granted => "granted",
            PostureSource::Inherited => "inherited",
        }
    }

    /// The source a stored word names.
    pub(crate) fn from_word(word: &str) -> Option<PostureSource> {
        match word {
            "granted" => Some(PostureSource::Granted),
            "inherited" => Some(PostureSource::Inherited),
            _ => None,
        }
    }
}

/// A posture a session holds, with its provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Posture {
    /// The session holding it.
    pub session: String,
    /// `trust` or `trust_reads`.
    pub level: PostureLevel,
    /// Granted here, or inherited.
    pub source: PostureSource,
    /// The operator whose grant it traces back to.
    pub granted_by: String,
    /// When the operator granted it.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub granted_at: DateTime<Utc>,
    /// The session the operator granted it on.
    pub granted_on: String,
    /// For an inherited posture, the creator it was copied from.
    pub inherited_from: Option<String>,
    /// When this session came to hold it (the grant, or its allocation).
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub allocated_at: DateTime<Utc>,
    /// The delegation chain: the session the operator granted it on first, this one last.
    pub chain: Vec<String>,
    /// The epoch it belongs to.
    pub epoch: i64,
    /// True when it counts now: it belongs to the current epoch.
    pub current: bool,
}

impl Posture {
    /// True when `posture` admits `level` now for a session that is `live`: it is that level
    /// and belongs to the current epoch. An ended session's posture admits nothing.
    pub(crate) fn admits(posture: Option<&Posture>, live: bool, level: PostureLevel) -> bool {
        live && posture.is_some_and(|p| p.current && p.level == level)
    }
}
