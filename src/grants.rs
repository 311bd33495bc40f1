//! Grants that never follow a delegation (rule P4): command patterns stored on a session, and
//! override scopes.
//!
//! A command pattern is judged against one session by an operator (what it admits is
//! `crate::patterns`'). An **override scope** is a named grant with an expiry, checked against
//! the clock at every decision. Neither is ever copied to a child, and a scope never turns into
//! a posture.
//!
//! This module owns adding, removing and listing grants. It finds the session through
//! `crate::sessions` (recording a spawned id first) and writes audit rows through
//! `crate::audit`.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use serde_json::json;

use crate::audit;
use crate::clock::format_ts;
use crate::error::{Conflict, Corruption, Error, InputError, Result};
use crate::model::{AuditKind, Grant, Id, Scope, StandingGrant};
use crate::patterns::{
    check_pattern_examples, is_tool_rule, validate_pattern, Pattern, ToolRule, MAX_PATTERN_LEN,
};
use crate::postures::RevocationEvent;
use crate::sessions;
use crate::storage::{PatternRow, Reach, Read, Write};

/// The longest scope name accepted, in bytes.
pub const MAX_SCOPE_NAME_LEN: usize = 64;

/// Checks an override scope's name: 1 to [`MAX_SCOPE_NAME_LEN`] characters from
/// `[A-Za-z0-9._:-]`, starting with a letter or digit.
///
/// # Errors
///
/// [`InputError::InvalidScopeName`](crate::InputError::InvalidScopeName).
pub fn validate_scope_name(name: &str) -> Result<()> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= MAX_SCOPE_NAME_LEN
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(InputError::InvalidScopeName(name.to_owned()).into())
    }
}

/// The longest TTL accepted: 366 days.
pub const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// Parses a time to live: a positive whole number and a unit, `s`, `m`, `h` or `d`
/// (`30s`, `15m`, `2h`, `7d`), at most [`MAX_TTL`].
///
/// # Errors
///
/// [`InputError::InvalidTtl`](crate::InputError::InvalidTtl) for anything else: zero, negative, fractional, unit-less, too long.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(session_ledger::parse_ttl("15m").unwrap(), Duration::from_secs(900));
/// assert!(session_ledger::parse_ttl("0s").is_err());
/// assert!(session_ledger::parse_ttl("-5m").is_err());
/// assert!(session_ledger::parse_ttl("soon").is_err());
/// ```
pub fn parse_ttl(text: &str) -> Result<Duration> {
    let bad = || Error::from(InputError::InvalidTtl(text.to_owned()));
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
    /// Why this build refuses the stored pattern, when it does (one stored by an earlier
    /// version, under looser rules): such a pattern never admits anything.
    pub refused: Option<String>,
}

impl CommandPattern {
    /// A stored pattern, with why this build refuses it, if it does.
    fn of(session: Id<'_>, row: PatternRow) -> CommandPattern {
        let refused = if is_tool_rule(&row.pattern) {
            ToolRule::parse(&row.pattern).err()
        } else {
            validate_pattern(&row.pattern).err().map(|e| match e {
                Error::Input(InputError::InvalidPattern { problem, .. }) => problem,
                other => other.to_string(),
            })
        };
        CommandPattern {
            session: session.as_str().to_owned(),
            pattern: row.pattern,
            added_by: row.added_by,
            added_at: row.added_at,
            refused,
        }
    }
}

/// Refuses an id the ledger has not recorded.
fn recorded(r: &mut dyn Read, id: Id<'_>) -> Result<()> {
    sessions::require(r, id).map(drop)
}

/// How a new command pattern is checked before it is stored ([`Ledger::add_pattern_checked`](crate::Ledger::add_pattern_checked)).
///
/// ```
/// use session_ledger::NewPattern;
/// let checks = NewPattern::new().must_match("npm test --watch").must_not_match("npm install");
/// assert_eq!(checks.must_match, ["npm test --watch"]);
/// assert!(!checks.admit_any_command);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewPattern {
    /// Lines the pattern must admit whole.
    pub must_match: Vec<String>,
    /// Lines it must not admit.
    pub must_not_match: Vec<String>,
    /// Store it even when it admits any command (a lone `*`, `sudo *`, `bash -c *`, ...):
    /// the operator's explicit choice ([`Pattern::admits_any_command`](crate::Pattern::admits_any_command)).
    pub admit_any_command: bool,
}

impl NewPattern {
    /// No examples; a pattern that admits any command is refused.
    pub fn new() -> NewPattern {
        NewPattern::default()
    }

    /// Adds a line the pattern must admit.
    pub fn must_match(mut self, line: impl Into<String>) -> NewPattern {
        self.must_match.push(line.into());
        self
    }

    /// Adds a line the pattern must not admit.
    pub fn must_not_match(mut self, line: impl Into<String>) -> NewPattern {
        self.must_not_match.push(line.into());
        self
    }

    /// Sets [`NewPattern::admit_any_command`].
    pub fn admit_any_command(mut self, admit: bool) -> NewPattern {
        self.admit_any_command = admit;
        self
    }
}

/// What adding a pattern did ([`Ledger::add_pattern_checked`](crate::Ledger::add_pattern_checked)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternAdded {
    /// False when the session already had the pattern (nothing was written).
    pub added: bool,
    /// Why the pattern may be broader than meant, if it may.
    pub warnings: Vec<String>,
}

/// Checks a pattern for adding: valid, not one that admits any command unless `checks` says
/// so, and agreeing with the examples that must and must not match. Returns the warnings the
/// pattern raises ([`Pattern::warnings`]). Writes nothing.
pub(crate) fn check_new_pattern(pattern: &str, checks: &NewPattern) -> Result<Vec<String>> {
    let invalid = |problem: String| {
        Error::Input(InputError::InvalidPattern {
            pattern: pattern.to_owned(),
            problem,
        })
    };
    if is_tool_rule(pattern) {
        ToolRule::parse(pattern).map_err(invalid)?;
        if !checks.must_match.is_empty() || !checks.must_not_match.is_empty() {
            return Err(invalid(
                "examples are command lines, which a tool rule never admits; try the rule with \
                 `pattern test-tool`"
                    .to_owned(),
            ));
        }
        return Ok(Vec::new());
    }
    let parsed = Pattern::parse(pattern)?;
    if let Some(why) = parsed
        .admits_any_command()
        .filter(|_| !checks.admit_any_command)
    {
        return Err(Error::Input(InputError::InvalidPattern {
            pattern: pattern.to_owned(),
            problem: format!(
                "it admits any command: {why}. Storing it anyway takes an explicit choice \
                 (admit any command)"
            ),
        }));
    }
    check_pattern_examples(pattern, &checks.must_match, &checks.must_not_match)?;
    Ok(parsed.warnings())
}

/// Allows `pattern` for the live session `id` (never inherited, rule P4). False, writing
/// nothing, when the session already had it.
pub(crate) fn add_pattern(
    tx: &mut dyn Write,
    id: Id<'_>,
    pattern: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    sessions::resolve_live(tx, id, now)?;
    let added = tx.add_pattern(id, pattern, actor, now)?;
    if added {
        let detail = json!({ "pattern": pattern });
        audit::append(
            tx,
            now,
            actor,
            AuditKind::PatternAdd,
            Some(id.as_str()),
            &detail,
        )?;
    }
    Ok(added)
}

/// Removes a command pattern from a session, live or ended. Any stored pattern can be removed,
/// including one that this build refuses.
pub(crate) fn remove_pattern(
    tx: &mut dyn Write,
    id: Id<'_>,
    pattern: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let unknown = || {
        Error::from(Conflict::UnknownPattern {
            session: id.as_str().to_owned(),
            pattern: pattern.to_owned(),
        })
    };
    // Only the bounds: a pattern stored under older, looser rules can still be removed.
    if pattern.is_empty() || pattern.len() > MAX_PATTERN_LEN {
        return Err(unknown());
    }
    recorded(tx.read(), id)?;
    if !tx.remove_pattern(id, pattern)? {
        return Err(unknown());
    }
    let detail = json!({ "pattern": pattern });
    audit::append(
        tx,
        now,
        actor,
        AuditKind::PatternRemove,
        Some(id.as_str()),
        &detail,
    )?;
    Ok(())
}

/// The command patterns on a recorded session, oldest first.
pub(crate) fn patterns(r: &mut dyn Read, id: Id<'_>) -> Result<Vec<CommandPattern>> {
    recorded(r, id)?;
    Ok(r.patterns(id)?
        .into_iter()
        .map(|row| CommandPattern::of(id, row))
        .collect())
}

/// Checks a scope's time to live: more than nothing, at most [`MAX_TTL`].
pub(crate) fn check_ttl(ttl: Duration) -> Result<TimeDelta> {
    if ttl.as_millis() == 0 || ttl > MAX_TTL {
        return Err(InputError::InvalidTtl(format!("{}ms", ttl.as_millis())).into());
    }
    TimeDelta::from_std(ttl).map_err(|_| InputError::InvalidTtl(format!("{ttl:?}")).into())
}

/// Grants the scope `name` on the live session `id` for `ttl`, replacing any scope of that
/// name. Never inherited and never turned into a posture (rule P4).
pub(crate) fn grant_scope(
    tx: &mut dyn Write,
    id: Id<'_>,
    name: &str,
    ttl: TimeDelta,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Scope> {
    let expires_at = now + ttl;
    sessions::resolve_live(tx, id, now)?;
    tx.grant_scope(id, name, actor, now, expires_at)?;
    let detail = json!({ "scope": name, "expires_at": crate::clock::format_ts(expires_at) });
    audit::append(
        tx,
        now,
        actor,
        AuditKind::ScopeGrant,
        Some(id.as_str()),
        &detail,
    )?;
    tx.read()
        .scopes(id)?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| Corruption::new(format!("scope {name:?} on {id:?} vanished")).into())
}

/// Revokes the live scope `name` on `id` before it expires.
pub(crate) fn revoke_scope(
    tx: &mut dyn Write,
    id: Id<'_>,
    name: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    recorded(tx.read(), id)?;
    let Some(expires_at) = tx.revoke_scope(id, name, actor, now)? else {
        return Err(Conflict::UnknownScope {
            session: id.as_str().to_owned(),
            name: name.to_owned(),
        }
        .into());
    };
    let detail = json!({ "scope": name, "expires_at": crate::clock::format_ts(expires_at) });
    audit::append(
        tx,
        now,
        actor,
        AuditKind::ScopeRevoke,
        Some(id.as_str()),
        &detail,
    )?;
    Ok(())
}

/// The override scopes on a recorded session, live, expired or revoked.
pub(crate) fn scopes(r: &mut dyn Read, id: Id<'_>) -> Result<Vec<Scope>> {
    recorded(r, id)?;
    r.scopes(id)
}

/// The standing grants of the live sessions `reach` names at `now`: their live scopes and
/// their command patterns, by depth, then session, scopes first.
pub(crate) fn standing(
    r: &mut dyn Read,
    reach: Reach<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<StandingGrant>> {
    let mut grants = r.standing(reach, now)?;
    StandingGrant::sort(&mut grants);
    Ok(grants)
}

/// Which grants a revocation takes with the postures it removes. Neither is ever inherited
/// (rule P4), so a posture revocation alone leaves them approving; an operator who stops a tree
/// says whether they go too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlsoRevoke {
    /// Revoke the live override scopes of the live sessions reached.
    pub scopes: bool,
    /// Remove the command patterns of the live sessions reached.
    pub patterns: bool,
}

impl AlsoRevoke {
    /// Postures only: every grant stays.
    pub const NOTHING: AlsoRevoke = AlsoRevoke {
        scopes: false,
        patterns: false,
    };
    /// Postures and every standing grant: nothing reached approves any more.
    pub const EVERYTHING: AlsoRevoke = AlsoRevoke {
        scopes: true,
        patterns: true,
    };
}

/// Revokes, as part of the revocation `event`, the grants `also` names on the live sessions
/// `reach` names: the scopes live at `now` (one `scope.revoke` row each) and the command
/// patterns (one `pattern.remove` row each), each kind in one statement. Returns them, by
/// depth then session.
pub(crate) fn revoke_standing(
    tx: &mut dyn Write,
    reach: Reach<'_>,
    also: AlsoRevoke,
    event: &RevocationEvent<'_>,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Vec<StandingGrant>> {
    // Fields in alphabetical order, as `json!` writes them.
    #[derive(Serialize)]
    struct ScopeDetail<'a> {
        expires_at: String,
        propagation: &'a str,
        revocation: i64,
        root: Option<&'a str>,
        scope: &'a str,
    }
    #[derive(Serialize)]
    struct PatternDetail<'a> {
        pattern: &'a str,
        propagation: &'a str,
        revocation: i64,
        root: Option<&'a str>,
    }
    let (propagation, root) = (event.kind.as_str(), event.root.map(Id::as_str));
    let mut revoked = Vec::new();
    if also.scopes {
        let scopes = tx.revoke_scopes_in(reach, actor, now)?;
        let mut rows = Vec::with_capacity(scopes.len());
        for g in &scopes {
            if let Grant::Scope { scope, expires_at } = &g.grant {
                let detail = ScopeDetail {
                    expires_at: format_ts(*expires_at),
                    propagation,
                    revocation: event.revocation,
                    root,
                    scope,
                };
                let detail =
                    serde_json::to_string(&detail).expect("strings and numbers always serialize");
                rows.push((g.session.as_str(), detail));
            }
        }
        audit::append_all(tx, now, actor, AuditKind::ScopeRevoke, rows)?;
        revoked.extend(scopes);
    }
    if also.patterns {
        let patterns = tx.remove_patterns_in(reach)?;
        let mut rows = Vec::with_capacity(patterns.len());
        for g in &patterns {
            if let Grant::Pattern { pattern } = &g.grant {
                let detail = PatternDetail {
                    pattern,
                    propagation,
                    revocation: event.revocation,
                    root,
                };
                let detail =
                    serde_json::to_string(&detail).expect("strings and numbers always serialize");
                rows.push((g.session.as_str(), detail));
            }
        }
        audit::append_all(tx, now, actor, AuditKind::PatternRemove, rows)?;
        revoked.extend(patterns);
    }
    StandingGrant::sort(&mut revoked);
    Ok(revoked)
}

#[cfg(test)]
mod tests {
    use super::*;

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

/// A stored pattern of a live session that admits less than it did before wildcards were kept
/// from words that run programs or write files ([`Ledger::review_patterns`](crate::Ledger::review_patterns)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternReview {
    /// The session holding it.
    pub session: String,
    /// The pattern.
    pub pattern: String,
    /// Who added it.
    pub added_by: String,
    /// When.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub added_at: DateTime<Utc>,
    /// What it no longer admits, or why it would be refused if added now.
    pub reason: String,
}

/// Every stored pattern of a live session whose meaning narrowed ([`Pattern::narrowed`]), by
/// session then pattern. Reads every pattern of the live sessions: an upgrade check, not a hot
/// path.
pub(crate) fn review_patterns(r: &mut dyn Read, now: DateTime<Utc>) -> Result<Vec<PatternReview>> {
    let mut reviews = Vec::new();
    for grant in standing(r, Reach::All, now)? {
        let Grant::Pattern { pattern } = grant.grant else {
            continue;
        };
        let Some(reason) = Pattern::parse(&pattern).ok().and_then(|p| p.narrowed()) else {
            continue;
        };
        reviews.push(PatternReview {
            session: grant.session,
            pattern,
            added_by: grant.granted_by,
            added_at: grant.granted_at,
            reason,
        });
    }
    reviews.sort_by(|a, b| (&a.session, &a.pattern).cmp(&(&b.session, &b.pattern)));
    Ok(reviews)
}
