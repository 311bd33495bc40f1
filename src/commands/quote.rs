//! Words back into a line: quoting each word so that the shell (and this crate's grammar)
//! reads the same words again, as Python's `shlex.join` does.

/// Joins words into a command line that parses back into the same words: a word of plain
/// characters stays as it is, any other is single-quoted (a `'` inside written `'"'"'`). A word
/// with `=` is quoted too, so that it is never read as an assignment or an operator (`==`), and
/// so is a word the shell reserves (`if`, `done`, ...), which first on a line is a keyword.
///
/// ```
/// use session_ledger::{join_words, parse_command_line};
/// let line = join_words(&["bash", "-c", "rm -rf /", "it's"]);
/// assert_eq!(line, r#"bash -c 'rm -rf /' 'it'"'"'s'"#);
/// assert_eq!(parse_command_line(&line).unwrap()[0].words, ["bash", "-c", "rm -rf /", "it's"]);
/// assert_eq!(join_words(&["git", "status", ">", "/etc/passwd"]), "git status '>' /etc/passwd");
/// ```
pub fn join_words<S: AsRef<str>>(words: &[S]) -> String {
    let mut line = String::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        quote_into(word.as_ref(), &mut line);
    }
    line
}

/// The words bash reserves: first on a line, each is a keyword, not a program.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

fn plain(word: &str) -> bool {
    !word.is_empty()
        && !RESERVED.contains(&word)
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+:,./-_".contains(&b))
}

fn quote_into(word: &str, out: &mut String) {
    if plain(word) {
        out.push_str(word);
        return;
    }
    out.push('\'');
    out.push_str(&word.replace('\'', r#"'"'"'"#));
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::parse_command_line;

    #[test]
    fn a_reserved_word_is_quoted_so_that_it_parses_back_as_a_word() {
        for word in RESERVED {
            let line = join_words(&[*word, "x"]);
            assert_eq!(line, format!("'{word}' x"));
            let parsed = parse_command_line(&line).expect(word);
            assert_eq!(parsed[0].words, [*word, "x"], "{line}");
        }
    }

    #[test]
    fn joined_words_parse_back_into_the_same_words() {
        use proptest::prelude::*;
        let word = prop::string::string_regex("[a-z'\" ;|&$`*?~{}()<>#=\\\\\t-]{0,6}").unwrap();
        // Found by this test: `'' ==` read `==` as an operator.
        for words in [vec!["", "=="], vec!["a=b", "c"], vec!["=", "x=y"]] {
            let parsed = parse_command_line(&join_words(&words)).expect("parses");
            assert_eq!(parsed[0].words, words);
        }
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 4_000,
            ..ProptestConfig::default()
        });
        runner
            .run(&prop::collection::vec(word, 1..6), |words| {
                let line = join_words(&words);
                let parsed = parse_command_line(&line)
                    .map_err(|r| TestCaseError::fail(format!("{line:?}: {r}")))?;
                prop_assert_eq!(parsed.len(), 1);
                prop_assert_eq!(&parsed[0].words, &words, "{:?}", line);
                Ok(())
            })
            .unwrap();
    }
}
