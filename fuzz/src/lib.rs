//! The property checks behind the fuzz targets, shared with the corpus replay.
//!
//! Each check takes one raw input (the bytes libFuzzer made, or a file of a corpus), turns it
//! into the strings it needs, runs the library's parsers and validators on them, and returns
//! `Err(what failed)` when a property does not hold. A panic inside the library is a failure
//! too: the fuzz targets crash on it and the replay test catches it.
//!
//! The fuzz targets (`fuzz/fuzz_targets/*.rs`) use this file as the crate `session_ledger_fuzz`;
//! `tests/fuzz_corpus.rs` includes it as a module, so the root crate's `cargo test` runs the same
//! checks on every saved input, on stable Rust and without libFuzzer.
//!
//! The expectations below are written from the doc comments in `src/`, independently of the
//! library's code: a reference that only restated the code could not disagree with it.

use std::borrow::Cow;
use std::time::Duration;

use session_ledger::{
    parse_command_line, parse_ttl, pattern_matches, spawned_chain, spawned_parent, validate_actor,
    validate_id, validate_pattern, validate_preview_token, validate_scope_name, AuditHead, Error,
    InputError, Pattern, PostureLevel, Taint, MAX_ACTOR_LEN, MAX_ID_LEN, MAX_PATTERN_LEN,
    MAX_SCOPE_NAME_LEN, MAX_TTL,
};

/// What a check returns: `Err` names the input and the property that failed.
pub type Outcome = Result<(), String>;

/// Fails with `message` unless `holds`.
fn ensure(holds: bool, message: impl FnOnce() -> String) -> Outcome {
    if holds {
        Ok(())
    } else {
        Err(message())
    }
}

/// The input as text: invalid UTF-8 becomes U+FFFD, so every input reaches the parsers (the
/// command line hands them `String`s, never raw bytes).
fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Renders an error, which must not panic either.
fn render(error: &Error) -> String {
    error.to_string()
}

// ---------------------------------------------------------------------------------------------
// Reference definitions, from the doc comments.
// ---------------------------------------------------------------------------------------------

/// `[A-Za-z0-9._:-]`, the characters of ids and scope names.
fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

/// 1 to `max` bytes of `[A-Za-z0-9._:-]`, starting with a letter or digit.
fn is_name(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().all(is_id_char)
}

/// A valid session id, per `validate_id`'s doc.
fn is_valid_id(s: &str) -> bool {
    is_name(s, MAX_ID_LEN)
}

/// The parent of a spawned id per `spawned_parent`'s doc, found another way: `s` is
/// `sub-` + parent + `-` + n, with n a non-empty run of ASCII digits (so the split is at the
/// last `-`) and parent a valid id.
fn reference_spawned_parent(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("sub-")?;
    let digits = rest.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits == rest.len() {
        return None;
    }
    let before_digits = &rest[..rest.len() - digits];
    let parent = before_digits.strip_suffix('-')?;
    is_valid_id(parent).then_some(parent)
}

/// True when `*`-glob `pattern` matches the whole of one word, `*` standing for any run of
/// characters and every other character for itself. Splits the pattern at its stars: the first
/// piece must begin the command, the last must end it, and the ones between must appear in
/// order in what is left (leftmost first, which is always a safe choice).
fn reference_glob(pattern: &str, command: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    if pieces.len() == 1 {
        return pattern == command;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if command.len() < first.len() + last.len()
        || !command.starts_with(first)
        || !command.ends_with(last)
    {
        return false;
    }
    let mut middle = &command[first.len()..command.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match middle.find(piece) {
            Some(at) => middle = &middle[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// `SEQ:HASH` with SEQ 1 to 18 ASCII digits and HASH 64 lower-case hex digits.
fn is_head_text(s: &str) -> bool {
    s.split_once(':').is_some_and(|(seq, hash)| {
        (1..=18).contains(&seq.len()) && seq.bytes().all(|b| b.is_ascii_digit()) && is_token(hash)
    })
}

/// 64 lower-case hex digits.
fn is_token(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

// ---------------------------------------------------------------------------------------------
// Target `ids`: validate_id, spawned_parent, spawned_chain.
// ---------------------------------------------------------------------------------------------

/// The `ids` target: the input as an id, and as the parent inside `sub-<input>-<n>`.
pub fn ids(data: &[u8]) -> Outcome {
    let s = text(data);
    check_id(&s)?;
    // The fuzzer rarely writes a well-formed spawned id on its own: wrap the input in one, with
    // a number taken from its length, so the spawned-id properties see valid parents too.
    let n = s.len() % 1000;
    let wrapped = format!("sub-{s}-{n}");
    check_id(&wrapped)?;
    let expected = is_valid_id(&s).then_some(s.as_ref());
    ensure(spawned_parent(&wrapped) == expected, || {
        format!(
            "spawned_parent({wrapped:?}) = {:?}, expected {expected:?}: the parent of \
             sub-<p>-<n> is p exactly when p is a valid id",
            spawned_parent(&wrapped)
        )
    })
}

/// Every id property on one string.
fn check_id(s: &str) -> Outcome {
    // validate_id: valid exactly when the doc says, and an error names the id as given.
    match validate_id(s) {
        Ok(()) => ensure(is_valid_id(s), || {
            format!(
                "validate_id accepted {s:?}, which is not 1..=128 bytes of [A-Za-z0-9._:-] \
                 starting alphanumeric"
            )
        })?,
        Err(error) => {
            let _ = render(&error);
            ensure(!is_valid_id(s), || {
                format!("validate_id rejected the valid id {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidId { id, .. }) if id == s),
                || format!("validate_id({s:?}) failed with {error:?}, not InvalidId naming the id"),
            )?;
        }
    }

    // spawned_parent: Some(p) only for sub-<p>-<digits> with p valid, and always then.
    let parent = spawned_parent(s);
    if let Some(p) = parent {
        let digits = s
            .strip_prefix("sub-")
            .and_then(|rest| rest.strip_prefix(p))
            .and_then(|rest| rest.strip_prefix('-'));
        ensure(
            digits.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            || format!("spawned_parent({s:?}) = {p:?}, but the id is not sub-{p}-<digits>"),
        )?;
        ensure(validate_id(p).is_ok(), || {
            format!("spawned_parent({s:?}) = {p:?}, which is not a valid id")
        })?;
    }
    let expected = reference_spawned_parent(s);
    ensure(parent == expected, || {
        format!("spawned_parent({s:?}) = {parent:?}, expected {expected:?}")
    })?;

    // spawned_chain: starts at s, each link the previous one's parent, ends on a non-spawned id,
    // and is short (each step strips at least `sub-`, `-` and a digit).
    let chain = spawned_chain(s);
    ensure(chain.first() == Some(&s), || {
        format!("spawned_chain({s:?}) does not start with the id: {chain:?}")
    })?;
    for pair in chain.windows(2) {
        ensure(spawned_parent(pair[0]) == Some(pair[1]), || {
            format!(
                "spawned_chain({s:?}) = {chain:?}: {:?} follows {:?}, whose spawned_parent is {:?}",
                pair[1],
                pair[0],
                spawned_parent(pair[0])
            )
        })?;
        ensure(pair[1].len() + 6 <= pair[0].len(), || {
            format!(
                "spawned_chain({s:?}): {:?} is not at least 6 bytes shorter than {:?}",
                pair[1], pair[0]
            )
        })?;
    }
    let last = chain.last().copied().unwrap_or_default();
    ensure(spawned_parent(last).is_none(), || {
        format!("spawned_chain({s:?}) = {chain:?} stops at {last:?}, which still has a parent")
    })?;
    ensure(chain.len() <= s.len() / 4 + 1, || {
        format!(
            "spawned_chain({s:?}) has {} links, more than len/4 + 1 = {}",
            chain.len(),
            s.len() / 4 + 1
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Target `cli_inputs`: what the command line parses from its arguments.
// ---------------------------------------------------------------------------------------------

/// The `cli_inputs` target: the input through every parser and validator the command line uses.
pub fn cli_inputs(data: &[u8]) -> Outcome {
    let s = text(data);
    let s = s.as_ref();
    check_ttl(s)?;
    check_words(s)?;
    check_head(s, data)?;
    check_token(s)?;
    check_actor(s)?;
    check_scope_name(s)?;
    check_pattern_validation(s)
}

/// parse_ttl: an `Ok` is digits and one unit, worth exactly digits × unit, within 1 s ..= 366 d;
/// every such text without leading zeros is accepted.
fn check_ttl(s: &str) -> Outcome {
    let unit_secs = |unit: &str| match unit {
        "s" => Some(1u64),
        "m" => Some(60),
        "h" => Some(3600),
        "d" => Some(86_400),
        _ => None,
    };
    // (digits, seconds per unit) when s is digits + one unit letter.
    let form = s
        .char_indices()
        .last()
        .map(|(at, _)| s.split_at(at))
        .and_then(|(digits, unit)| Some((digits, unit_secs(unit)?)))
        .filter(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()));
    // Its value in seconds; `None` when it is beyond any u128 (and so far out of range).
    let value = form.and_then(|(digits, per)| {
        let significant = digits.trim_start_matches('0');
        let n: u128 = if significant.is_empty() {
            0
        } else if significant.len() > 30 {
            return None;
        } else {
            significant.parse().ok()?
        };
        n.checked_mul(u128::from(per))
    });
    let in_range = |secs: u128| (1..=u128::from(MAX_TTL.as_secs())).contains(&secs);

    match parse_ttl(s) {
        Ok(ttl) => {
            ensure(ttl >= Duration::from_secs(1) && ttl <= MAX_TTL, || {
                format!("parse_ttl({s:?}) = {ttl:?}, outside 1 s ..= 366 days")
            })?;
            ensure(ttl.subsec_nanos() == 0, || {
                format!("parse_ttl({s:?}) = {ttl:?}, not whole seconds")
            })?;
            ensure(form.is_some(), || {
                format!(
                    "parse_ttl accepted {s:?}, which is not digits followed by one of s, m, h, d"
                )
            })?;
            ensure(value == Some(u128::from(ttl.as_secs())), || {
                format!("parse_ttl({s:?}) = {ttl:?}, but the text says {value:?} seconds")
            })
        }
        Err(error) => {
            let _ = render(&error);
            ensure(
                matches!(&error, Error::Input(InputError::InvalidTtl(t)) if t == s),
                || {
                    format!(
                        "parse_ttl({s:?}) failed with {error:?}, not InvalidTtl naming the text"
                    )
                },
            )?;
            // Without leading zeros a number of seconds in range has at most 8 digits, so no
            // length cap excuses a refusal. (Zero-padded forms may be refused: see README.)
            let canonical = form.is_some_and(|(digits, _)| !digits.starts_with('0'));
            ensure(!(canonical && value.is_some_and(in_range)), || {
                format!(
                    "parse_ttl rejected {s:?}, a positive whole number and a unit within 366 \
                     days: {error}"
                )
            })
        }
    }
}

/// Taint and PostureLevel parse exactly their words, and print them back.
fn check_words(s: &str) -> Outcome {
    let taint_words = ["public", "private", "secret"];
    match s.parse::<Taint>() {
        Ok(taint) => {
            ensure(taint_words.contains(&s), || {
                format!("Taint parsed {s:?} as {taint:?}")
            })?;
            ensure(taint.to_string() == s && taint.as_str() == s, || {
                format!("Taint parsed {s:?} as {taint:?}, which prints as {taint}")
            })?;
        }
        Err(error) => {
            let _ = render(&error);
            ensure(!taint_words.contains(&s), || {
                format!("Taint rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidTaint(t)) if t == s),
                || format!("Taint {s:?} failed with {error:?}, not InvalidTaint naming the text"),
            )?;
        }
    }

    let posture_words = ["trust", "trust_reads"];
    match s.parse::<PostureLevel>() {
        Ok(level) => {
            ensure(posture_words.contains(&s), || {
                format!("PostureLevel parsed {s:?} as {level:?}")
            })?;
            ensure(level.to_string() == s && level.as_str() == s, || {
                format!("PostureLevel parsed {s:?} as {level:?}, which prints as {level}")
            })
        }
        Err(error) => {
            let _ = render(&error);
            ensure(!posture_words.contains(&s), || {
                format!("PostureLevel rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidPosture(t)) if t == s),
                || {
                    format!(
                    "PostureLevel {s:?} failed with {error:?}, not InvalidPosture naming the text"
                )
                },
            )
        }
    }
}

/// AuditHead parses exactly `SEQ:HASH`, and its Display parses back to the same head (and is
/// the very text when SEQ has no leading zeros). A head built from the input's bytes, with SEQ
/// below 10^18, round-trips through Display too.
fn check_head(s: &str, data: &[u8]) -> Outcome {
    match s.parse::<AuditHead>() {
        Ok(head) => {
            ensure(is_head_text(s), || {
                format!("AuditHead parsed {s:?}, which is not SEQ:<64 lower-hex>")
            })?;
            let (seq, hash) = s.split_once(':').unwrap_or_default();
            ensure(head.hash == hash, || {
                format!("AuditHead {s:?} has hash {:?}", head.hash)
            })?;
            ensure(seq.parse::<i64>() == Ok(head.seq) && head.seq >= 0, || {
                format!("AuditHead {s:?} has seq {}", head.seq)
            })?;
            let shown = head.to_string();
            ensure(
                shown.parse::<AuditHead>().ok() == Some(head.clone()),
                || format!("AuditHead {s:?} prints as {shown:?}, which does not parse back to it"),
            )?;
            let canonical = seq == "0" || !seq.starts_with('0');
            ensure(!canonical || shown == s, || {
                format!("AuditHead {s:?} prints as {shown:?}")
            })?;
        }
        Err(error) => {
            let _ = render(&error);
            ensure(!is_head_text(s), || {
                format!("AuditHead rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidHead(t)) if t == s),
                || {
                    format!(
                        "AuditHead {s:?} failed with {error:?}, not InvalidHead naming the text"
                    )
                },
            )?;
        }
    }

    // Display then parse, from a head rather than from text: seq from the first 8 bytes, the
    // hash from the rest (hex of the bytes, cycled to 64 digits).
    let mut seq_bytes = [0u8; 8];
    for (slot, byte) in seq_bytes.iter_mut().zip(data) {
        *slot = *byte;
    }
    let seq = (u64::from_le_bytes(seq_bytes) % 1_000_000_000_000_000_000) as i64;
    let hex: String = data
        .iter()
        .skip(8)
        .flat_map(|b| [b >> 4, b & 0x0f])
        .chain(std::iter::repeat(0))
        .take(64)
        .map(|d| char::from_digit(u32::from(d), 16).unwrap_or('0'))
        .collect();
    let head = AuditHead { seq, hash: hex };
    let shown = head.to_string();
    ensure(
        shown.parse::<AuditHead>().ok() == Some(head.clone()),
        || format!("{head:?} prints as {shown:?}, which does not parse back to it"),
    )
}

/// validate_preview_token accepts exactly 64 lower-case hex digits.
fn check_token(s: &str) -> Outcome {
    match validate_preview_token(s) {
        Ok(()) => ensure(is_token(s), || {
            format!("validate_preview_token accepted {s:?}")
        }),
        Err(error) => {
            let _ = render(&error);
            ensure(!is_token(s), || {
                format!("validate_preview_token rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidToken(t)) if t == s),
                || {
                    format!(
                    "validate_preview_token({s:?}) failed with {error:?}, not InvalidToken naming \
                     the text"
                )
                },
            )
        }
    }
}

/// validate_actor accepts exactly 1 to 64 bytes of `[A-Za-z0-9._:@-]`.
fn check_actor(s: &str) -> Outcome {
    let expected =
        (1..=MAX_ACTOR_LEN).contains(&s.len()) && s.chars().all(|c| is_id_char(c) || c == '@');
    match validate_actor(s) {
        Ok(()) => ensure(expected, || format!("validate_actor accepted {s:?}")),
        Err(error) => {
            let _ = render(&error);
            ensure(!expected, || {
                format!("validate_actor rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidActor(t)) if t == s),
                || {
                    format!(
                    "validate_actor({s:?}) failed with {error:?}, not InvalidActor naming the text"
                )
                },
            )
        }
    }
}

/// validate_scope_name accepts exactly 1 to 64 bytes of `[A-Za-z0-9._:-]` starting with a letter
/// or digit.
fn check_scope_name(s: &str) -> Outcome {
    let expected = is_name(s, MAX_SCOPE_NAME_LEN);
    match validate_scope_name(s) {
        Ok(()) => ensure(expected, || format!("validate_scope_name accepted {s:?}")),
        Err(error) => {
            let _ = render(&error);
            ensure(!expected, || {
                format!("validate_scope_name rejected {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidScopeName(t)) if t == s),
                || {
                    format!(
                        "validate_scope_name({s:?}) failed with {error:?}, not InvalidScopeName \
                         naming the text"
                    )
                },
            )
        }
    }
}

/// validate_pattern: an accepted pattern is non-empty, at most 1024 bytes, and free of NUL and
/// other control characters (tab and newline aside); plain words (ASCII letters, digits and
/// `-_./=:,@%+`, one space between them) are always accepted; an error is `InvalidPattern` naming
/// the text and renders without panicking.
fn check_pattern_validation(s: &str) -> Outcome {
    match validate_pattern(s) {
        Ok(()) => ensure(
            !s.trim().is_empty()
                && s.len() <= MAX_PATTERN_LEN
                && !s.chars().any(|c| c.is_control() && c != '\t' && c != '\n'),
            || format!("validate_pattern accepted {s:?}"),
        ),
        Err(error) => {
            let _ = render(&error);
            ensure(!is_plain_pattern(s, false), || {
                format!("validate_pattern rejected plain words {s:?}: {error}")
            })?;
            ensure(
                matches!(&error, Error::Input(InputError::InvalidPattern { pattern, .. }) if pattern == s),
                || {
                    format!(
                        "validate_pattern({s:?}) failed with {error:?}, not InvalidPattern naming \
                         the text"
                    )
                },
            )
        }
    }
}

/// Words of `[A-Za-z0-9-_./=:,%+]` (and `*` when `stars`), one space between them, at most
/// 1024 bytes: plain words to bash. (`@` is left out: the grammar reads `a@b` as a command name
/// wrongly, and the line asks.)
fn is_plain_pattern(s: &str, stars: bool) -> bool {
    !s.is_empty()
        && s.len() <= MAX_PATTERN_LEN
        && s.split(' ').all(|w| {
            !w.is_empty()
                && w.chars().all(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, '-' | '_' | '.' | '/' | '=' | ':' | ',' | '%' | '+')
                        || (stars && c == '*')
                })
        })
        // `a=b` as the first word is an assignment with no command when it is the only word.
        && !(s.split(' ').count() == 1 && s.contains('='))
}

// ---------------------------------------------------------------------------------------------
// Target `patterns`: what pattern_matches admits.
// ---------------------------------------------------------------------------------------------

/// The `patterns` target: the input split at its first NUL into a pattern and a command (no
/// NUL: the whole input is both), then matched; also the pattern's own text with the command
/// appended after each operator, which must never be admitted by the operator alone.
pub fn patterns(data: &[u8]) -> Outcome {
    let (pattern, command) = match data.iter().position(|&b| b == 0) {
        Some(at) => (text(&data[..at]), text(&data[at + 1..])),
        None => (text(data), text(data)),
    };
    check_match(&pattern, &command)?;
    check_match(&pattern, &pattern)?;
    for joined in [
        format!("{pattern} {command}"),
        format!("{pattern}; {command}"),
        format!("{pattern} && {command}"),
        format!("{pattern} $({command})"),
        format!("{pattern} `{command}`"),
        format!("{pattern} > {command}"),
        format!("{pattern} &"),
    ] {
        check_match(&pattern, &joined)?;
    }
    Ok(())
}

/// The words of a command's plain part: its text split at spaces and tabs, for a reference
/// that does not use the library's parser; `None` when the text is not that simple.
fn plain_words(text: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = text.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
    let plain = words.iter().all(|w| {
        w.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | '=' | ':' | ',' | '%' | '+')
        })
    });
    (plain && !words.is_empty()).then_some(words)
}

/// Every matching property for one pattern and one command.
fn check_match(pattern: &str, command: &str) -> Outcome {
    let matched = pattern_matches(pattern, command);
    if validate_pattern(pattern).is_err() {
        return ensure(!matched, || {
            format!("pattern_matches({pattern:?}, {command:?}) with an invalid pattern")
        });
    }
    let parsed = Pattern::parse(pattern).map_err(|e| e.to_string())?;
    if matched {
        // The property: the line re-parsed is plain simple commands, each admitted on its own,
        // and only the allowed operators lie between them.
        let parts = parse_command_line(command).map_err(|r| {
            format!("pattern_matches({pattern:?}, {command:?}) but the line is refused: {r}")
        })?;
        let mut end = 0;
        for part in &parts {
            ensure(parsed.admits(&part.words), || {
                format!(
                    "{pattern:?} matched {command:?} but not its part {:?}",
                    part.words
                )
            })?;
            let between: String = command[end..part.range.start]
                .chars()
                .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\\'))
                .collect();
            ensure(
                matches!(between.as_str(), "" | ";" | "&&" | "||" | "|"),
                || format!("{pattern:?} matched {command:?} across {between:?}"),
            )?;
            end = part.range.end;
        }
        for needle in ["$(", "`", "${", "<(", ">(", "$((", "&>", "|&"] {
            ensure(
                !command.contains(needle) || command.contains(['\'', '"', '\\']),
                || format!("{pattern:?} matched {command:?}, which holds {needle:?} unquoted"),
            )?;
        }
    }
    // A reference for plain patterns and plain lines of one command, from the docs: word by
    // word, `*` any run within a word, a last whole-word `*` any further words.
    if let (true, Some(words)) = (is_plain_pattern(pattern, true), plain_words(command)) {
        if !command.contains(['\n', ';', '&', '|']) {
            let pwords: Vec<&str> = pattern.split(' ').collect();
            let open = pwords.last() == Some(&"*");
            let fixed = if open {
                &pwords[..pwords.len() - 1]
            } else {
                &pwords[..]
            };
            let count_ok = if open {
                words.len() >= fixed.len()
            } else {
                words.len() == fixed.len()
            };
            let expected = count_ok
                && fixed.iter().zip(&words).all(|(p, w)| reference_glob(p, w))
                && !(words.len() == 1 && words[0].contains('='));
            ensure(matched == expected, || {
                format!(
                    "pattern_matches({pattern:?}, {command:?}) = {matched}, expected {expected}"
                )
            })?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Checkpoints, receipts and keys: the text an auditor is handed.
// ---------------------------------------------------------------------------------------------

/// The verifier key of the signed-note specification's example, which no fuzzed input can
/// carry a valid signature of.
const SPEC_VERIFIER: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";

/// For any text: the checkpoint, receipt and key parsers return `Ok` or `InvalidNote` and never
/// panic; what parses prints back to a text that parses to the same value; a receipt checked
/// against a key whose signature the input cannot forge never checks out.
pub fn checkpoints(data: &[u8]) -> Outcome {
    use session_ledger::{verify_receipt, Receipt, SignedCheckpoint, SignerKey, VerifierKey};
    let s = text(data);
    let is_note_error = |e: &Error| matches!(e, Error::Input(InputError::InvalidNote(_)));
    match SignedCheckpoint::parse(&s) {
        Ok(c) => {
            ensure(s.starts_with(&c.checkpoint.body()), || {
                format!("checkpoint {s:?}: its text does not begin with its body")
            })?;
            let again = SignedCheckpoint::parse(&c.note).map_err(|e| render(&e))?;
            ensure(again == c, || {
                format!("checkpoint {s:?} does not read back the same")
            })?;
        }
        Err(e) => ensure(is_note_error(&e), || {
            format!("checkpoint {s:?}: {}", render(&e))
        })?,
    }
    match Receipt::parse(&s) {
        Ok(r) => {
            let printed = r.to_text();
            let again = Receipt::parse(&printed).map_err(|e| render(&e))?;
            ensure(again == r, || {
                format!("receipt {s:?} does not read back the same")
            })?;
            let key: VerifierKey = SPEC_VERIFIER.parse().map_err(|e: Error| render(&e))?;
            let check = verify_receipt(&s, None, &key).map_err(|e| render(&e))?;
            ensure(
                !check.ok || s.contains("This is an example message."),
                || format!("receipt {s:?} checks out against a key it cannot have signed with"),
            )?;
        }
        Err(e) => ensure(is_note_error(&e), || {
            format!("receipt {s:?}: {}", render(&e))
        })?,
    }
    if let Ok(key) = s.parse::<VerifierKey>() {
        let again: VerifierKey = key.to_string().parse().map_err(|e: Error| render(&e))?;
        ensure(again == key, || {
            format!("verifier key {s:?} does not read back the same")
        })?;
    }
    if let Ok(key) = s.parse::<SignerKey>() {
        let again: SignerKey = key.to_string().parse().map_err(|e: Error| render(&e))?;
        ensure(again.verifier() == key.verifier(), || {
            format!("signer key {s:?} does not read back the same")
        })?;
    }
    Ok(())
}
