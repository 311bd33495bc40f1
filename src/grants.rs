//! Grants that never follow a delegation (rule P4): command patterns and override scopes.
//!
//! A **command pattern** says "this command is fine for this session": an exact command line,
//! or a glob where `*` matches any run of characters, matched against the whole command line;
//! no other character is special. An **override scope** is a named grant with an expiry,
//! checked against the clock at every decision. Neither is ever copied to a child, and a scope
//! never turns into a posture.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use wildmatch::WildMatchPattern;

use crate::error::Error;

/// The longest command pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;

/// The longest scope name accepted, in bytes.
pub const MAX_SCOPE_NAME_LEN: usize = 64;

/// `*` is the only wildcard. NUL, which no pattern may contain, stands in for the
/// single-character wildcard the matcher requires, so `?` is an ordinary character.
type Glob = WildMatchPattern<'*', '\0'>;

/// Checks a command pattern: non-empty, at most [`MAX_PATTERN_LEN`] bytes, no NUL.
///
/// # Errors
///
/// [`Error::InvalidPattern`].
pub fn validate_pattern(pattern: &str) -> Result<(), Error> {
    let problem = if pattern.is_empty() {
        Some("it is empty")
    } else if pattern.len() > MAX_PATTERN_LEN {
        Some("it is longer than 1024 bytes")
    } else if pattern.contains('\0') {
        Some("it contains a NUL character")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::InvalidPattern {
            pattern: pattern.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// True when `pattern` admits `command`: equal, or equal once each `*` has matched some run of
/// characters.
///
/// ```
/// use session_ledger::pattern_matches;
/// assert!(pattern_matches("npm test", "npm test"));
/// assert!(pattern_matches("npm test *", "npm test -- --watch"));
/// assert!(!pattern_matches("npm test", "npm test; rm -rf /"));
/// assert!(!pattern_matches("ls ?", "ls a"));
/// ```
pub fn pattern_matches(pattern: &str, command: &str) -> bool {
    Glob::new(pattern).matches(command)
}

/// Checks an override scope's name: 1 to [`MAX_SCOPE_NAME_LEN`] characters from
/// `[A-Za-z0-9._:-]`, starting with a letter or digit.
///
/// # Errors
///
/// [`Error::InvalidScopeName`].
pub fn validate_scope_name(name: &str) -> Result<(), Error> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= MAX_SCOPE_NAME_LEN
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidScopeName(name.to_owned()))
    }
}

/// The longest TTL accepted: 366 days.
pub const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// Parses a time to live: a positive whole number and a unit, `s`, `m`, `h` or `d`
/// (`30s`, `15m`, `2h`, `7d`), at most [`MAX_TTL`].
///
/// # Errors
///
/// [`Error::InvalidTtl`] for anything else: zero, negative, fractional, unit-less, too long.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(session_ledger::parse_ttl("15m").unwrap(), Duration::from_secs(900));
/// assert!(session_ledger::parse_ttl("0s").is_err());
/// assert!(session_ledger::parse_ttl("-5m").is_err());
/// assert!(session_ledger::parse_ttl("soon").is_err());
/// ```
pub fn parse_ttl(text: &str) -> Result<Duration, Error> {
    let bad = || Error::InvalidTtl(text.to_owned());
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 12 {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let secs = n.checked_mul(unit_secs).ok_or_else(bad)?;
    let ttl = Duration::from_secs(secs);
    if secs == 0 || ttl > MAX_TTL {
        return Err(bad());
    }
    Ok(ttl)
}

/// A command pattern on a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandPattern {
    /// The session.
    pub session: String,
    /// The pattern.
    pub pattern: String,
    /// Who added it.
    pub added_by: String,
    /// When.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub added_at: DateTime<Utc>,
}

/// An override scope on a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The session.
    pub session: String,
    /// The scope's name.
    pub name: String,
    /// Who granted it.
    pub granted_by: String,
    /// When.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub granted_at: DateTime<Utc>,
    /// When it stops admitting anything.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub expires_at: DateTime<Utc>,
    /// When it was revoked, if it was.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_star_is_special_in_a_pattern() {
        assert!(pattern_matches("*", "anything at all"));
        assert!(pattern_matches("git *", "git status"));
        assert!(!pattern_matches("git *", "gitk"));
        assert!(pattern_matches("a?b", "a?b"));
        assert!(!pattern_matches("a?b", "axb"));
        assert!(pattern_matches("[x]", "[x]"));
        assert!(!pattern_matches("[x]", "x"));
        assert!(!pattern_matches("npm test", "npm test "));
    }

    #[test]
    fn ttls_need_a_positive_number_and_a_unit() {
        assert_eq!(parse_ttl("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_ttl("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_ttl("1d").unwrap(), Duration::from_secs(86_400));
        for bad in [
            "",
            "0m",
            "-1s",
            "1.5h",
            "10",
            "m",
            "5 m",
            "5M",
            "99999999999999h",
            "367d",
            "+5s",
        ] {
            assert!(parse_ttl(bad).is_err(), "{bad:?}");
        }
    }
}

mod ops {
    use std::time::Duration;

    use serde_json::json;

    use super::{validate_pattern, validate_scope_name, CommandPattern, Scope};
    use crate::clock::format_ts;
    use crate::error::{Error, Result};
    use crate::ledger::{resolve, Ledger};
    use crate::sessions::{validate_actor, validate_id};
    use crate::storage;

    /// Finds a live session for a grant, recording a spawned id first.
    fn live(tx: &rusqlite::Transaction<'_>, id: &str, now: &str) -> Result<()> {
        let session = resolve(tx, id, now)?.ok_or_else(|| Error::UnknownSession(id.to_owned()))?;
        if session.is_live() {
            Ok(())
        } else {
            Err(Error::SessionEnded(id.to_owned()))
        }
    }

    /// Refuses an id the ledger has not recorded.
    fn recorded(conn: &rusqlite::Connection, id: &str) -> Result<()> {
        match storage::sessions::get(conn, id)? {
            Some(_) => Ok(()),
            None => Err(Error::UnknownSession(id.to_owned())),
        }
    }

    impl Ledger {
        /// Allows a command pattern for one live session (never inherited, rule P4). Returns
        /// false, writing nothing, when the session already had it.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`], [`Error::InvalidPattern`], [`Error::InvalidActor`],
        /// [`Error::UnknownSession`], [`Error::SessionEnded`].
        pub fn add_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<bool> {
            validate_id(id)?;
            validate_pattern(pattern)?;
            validate_actor(actor)?;
            self.write(|tx, now| {
                live(tx, id, now)?;
                let added = storage::grants::add_pattern(tx, id, pattern, actor, now)?;
                if added {
                    storage::audit::append(
                        tx,
                        now,
                        actor,
                        "pattern.add",
                        Some(id),
                        &json!({ "pattern": pattern }),
                    )?;
                }
                Ok(added)
            })
        }

        /// Removes a command pattern from a session.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`], [`Error::InvalidPattern`], [`Error::InvalidActor`],
        /// [`Error::UnknownSession`], [`Error::UnknownPattern`] when the session does not have
        /// it. Patterns can be removed from an ended session.
        pub fn remove_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<()> {
            validate_id(id)?;
            validate_pattern(pattern)?;
            validate_actor(actor)?;
            self.write(|tx, now| {
                recorded(tx, id)?;
                if !storage::grants::remove_pattern(tx, id, pattern)? {
                    return Err(Error::UnknownPattern {
                        session: id.to_owned(),
                        pattern: pattern.to_owned(),
                    });
                }
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "pattern.remove",
                    Some(id),
                    &json!({ "pattern": pattern }),
                )?;
                Ok(())
            })
        }

        /// The command patterns on a session.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`]; [`Error::UnknownSession`]; [`Error::Storage`].
        pub fn patterns(&self, id: &str) -> Result<Vec<CommandPattern>> {
            validate_id(id)?;
            self.storage.read(|c| {
                recorded(c, id)?;
                storage::grants::patterns(c, id)
            })
        }

        /// Grants an override scope named `name` on a live session for `ttl`, replacing any
        /// scope of that name. Never inherited and never turned into a posture (rule P4).
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`], [`Error::InvalidScopeName`], [`Error::InvalidTtl`] for a zero
        /// or too long TTL, [`Error::InvalidActor`], [`Error::UnknownSession`],
        /// [`Error::SessionEnded`].
        pub fn grant_scope(
            &self,
            id: &str,
            name: &str,
            ttl: Duration,
            actor: &str,
        ) -> Result<Scope> {
            validate_id(id)?;
            validate_scope_name(name)?;
            validate_actor(actor)?;
            if ttl.as_millis() == 0 || ttl > super::MAX_TTL {
                return Err(Error::InvalidTtl(format!("{}ms", ttl.as_millis())));
            }
            let ttl = chrono::TimeDelta::from_std(ttl)
                .map_err(|_| Error::InvalidTtl(format!("{ttl:?}")))?;
            self.write(|tx, now| {
                let expires_at = format_ts(now.time + ttl);
                live(tx, id, now)?;
                storage::grants::grant_scope(tx, id, name, actor, now, &expires_at)?;
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "scope.grant",
                    Some(id),
                    &json!({ "scope": name, "expires_at": expires_at }),
                )?;
                storage::grants::scopes(tx, id)?
                    .into_iter()
                    .find(|s| s.name == name)
                    .ok_or_else(|| Error::Corruption(format!("scope {name:?} on {id:?} vanished")))
            })
        }

        /// Revokes a live override scope before it expires.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`], [`Error::InvalidScopeName`], [`Error::InvalidActor`],
        /// [`Error::UnknownSession`], [`Error::UnknownScope`] when the session has no live
        /// scope of that name.
        pub fn revoke_scope(&self, id: &str, name: &str, actor: &str) -> Result<()> {
            validate_id(id)?;
            validate_scope_name(name)?;
            validate_actor(actor)?;
            self.write(|tx, now| {
                recorded(tx, id)?;
                let Some(expires_at) = storage::grants::revoke_scope(tx, id, name, actor, now)?
                else {
                    return Err(Error::UnknownScope {
                        session: id.to_owned(),
                        name: name.to_owned(),
                    });
                };
                storage::audit::append(
                    tx,
                    now,
                    actor,
                    "scope.revoke",
                    Some(id),
                    &json!({ "scope": name, "expires_at": expires_at }),
                )?;
                Ok(())
            })
        }

        /// The override scopes on a session, live, expired or revoked.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidId`]; [`Error::UnknownSession`]; [`Error::Storage`].
        pub fn scopes(&self, id: &str) -> Result<Vec<Scope>> {
            validate_id(id)?;
            self.storage.read(|c| {
                recorded(c, id)?;
                storage::grants::scopes(c, id)
            })
        }
    }
}
