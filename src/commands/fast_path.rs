//! Splitting a plain command line without the grammar: a line in which nothing is special to
//! bash but the five operators gives the grammar's answer, for much less time (the property
//! test in `commands`' tests holds the two together).
//!
//! It decides nothing the grammar would not: when in doubt it declines, and the grammar reads
//! the line.

use super::{Parts, PatternWord, Piece, MAX_DEPTH};

/// Bytes a line must be made of for [`plain_fast_path`]: none of them is special to bash.
fn is_plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b':' | b',' | b'+' | b'-')
}

/// Words that bash reads as syntax (reserved words) or that the grammar reads as declarations:
/// a line holding one, anywhere, goes to the grammar.
const SYNTAX_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc", "export", "declare", "local", "readonly",
    "typeset", "unset",
];

/// The simple commands of a line with nothing for bash to interpret: words of
/// [`is_plain_byte`]s and of quoted printable ASCII (single-quoted, or double-quoted without
/// `$`, backtick, backslash or `!`), separated by spaces and tabs, joined by `;`, newline, `&&`,
/// `||` or `|`, with no reserved word and no `=` at all. Such a line has no expansion,
/// assignment or construct, so its words are its space-separated runs with the quotes removed,
/// as the grammar would also find them (a test checks the two agree). `None` for anything else, which the grammar then reads: this
/// only saves the grammar's time (about 0.6 µs a byte) on the commonest lines.
pub(super) fn plain_fast_path(line: &str) -> Option<Parts> {
    let bytes = line.as_bytes();
    let mut parts = Vec::new();
    let mut words: Vec<PatternWord> = Vec::new();
    let mut start = None;
    let (mut first, mut last) = (0, 0);
    let mut i = 0;
    let mut end_command = |words: &mut Vec<PatternWord>, first: usize, last: usize| {
        if words.is_empty() {
            return false;
        }
        parts.push((std::mem::take(words), first..last));
        true
    };
    let mut text = String::new();
    while i <= bytes.len() {
        let b = bytes.get(i).copied();
        match b {
            Some(b) if is_plain_byte(b) => {
                if start.is_none() {
                    start = Some(i);
                }
                text.push(char::from(b));
                i += 1;
                continue;
            }
            // Quoted text inside a word: printable ASCII, and in double quotes none of the
            // characters bash still reads there (`$`, backtick, backslash, `!`).
            Some(quote @ (b'\'' | b'"')) => {
                let close = bytes[i + 1..].iter().position(|&c| c == quote)?;
                let inner = &line[i + 1..i + 1 + close];
                let ok = inner.bytes().all(|c| {
                    (b' '..=b'~').contains(&c)
                        && (quote == b'\'' || !matches!(c, b'$' | b'`' | b'\\' | b'!'))
                });
                if !ok {
                    return None;
                }
                if start.is_none() {
                    start = Some(i);
                }
                text.push_str(inner);
                i += close + 2;
                continue;
            }
            _ => {}
        }
        if let Some(s) = start.take() {
            let word = std::mem::take(&mut text);
            if SYNTAX_WORDS.contains(&word.as_str()) || word.contains('=') {
                return None;
            }
            if words.is_empty() {
                first = s;
            }
            last = i;
            words.push(vec![Piece::Text(word)]);
        }
        match b {
            None => break,
            Some(b' ' | b'\t') => i += 1,
            Some(b';' | b'\n') => {
                // `a;` and `a\n` end a command; an empty one (`;;`, `; a`) goes to the grammar,
                // except blank lines and a trailing `;`.
                if !end_command(&mut words, first, last) && b == Some(b';') {
                    return None;
                }
                i += 1;
            }
            Some(b'&') if bytes.get(i + 1) == Some(&b'&') => {
                if !end_command(&mut words, first, last) {
                    return None;
                }
                i += 2;
            }
            Some(b'|') => {
                if !end_command(&mut words, first, last) {
                    return None;
                }
                i += if bytes.get(i + 1) == Some(&b'|') {
                    2
                } else {
                    1
                };
                if bytes.get(i) == Some(&b'&') {
                    return None;
                }
            }
            Some(_) => return None,
        }
    }
    end_command(&mut words, first, last);
    if parts.len() > MAX_DEPTH {
        return None;
    }
    // A line that ends in an operator waiting for a command goes to the grammar.
    let tail = line[parts.last()?.1.end..].trim_matches([' ', '\t', '\n', ';']);
    if !tail.is_empty() {
        return None;
    }
    let ends_in_semicolons = line[parts.last()?.1.end..].matches(';').count();
    if ends_in_semicolons > 1 {
        return None;
    }
    Some(parts)
}
