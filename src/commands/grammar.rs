//! Reading a line with the bash grammar (tree-sitter-bash): the parse, bounded in time, and the
//! walk over its syntax tree, an allowlist of node kinds that turns plain words into simple
//! commands and anything else into a refusal.
//!
//! It knows no pattern: what words a pattern admits is `crate::patterns`'.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::Instant;

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

use super::{
    refusal, Construct, Mode, Parts, PatternWord, Piece, Refusal, MAX_DEPTH, PARSE_BUDGET,
};

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

/// Parses with the bash grammar.
pub(super) fn parse_grammar(line: &str, mode: Mode) -> Result<Parts, Refusal> {
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
                let children = touching_children(node)?;
                // Unquoted pieces only (the grammar splits `stash@{0}` at each brace): read as
                // the one stretch of unquoted text they are, so braces meet their partners.
                if children
                    .iter()
                    .all(|c| matches!(c.kind(), "word" | "number"))
                {
                    return self.unquoted(text, node.start_byte());
                }
                let mut word = Vec::new();
                for child in children {
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
                // Bash expands braces only around an unquoted comma or a sequence (`{a,b}`,
                // `{1..3}`); `{}` and `stash@{0}` stand for themselves. A brace whose partner
                // is not in this same stretch of unquoted text is refused, as is any other.
                '{' => match literal_braces(&text[i..]) {
                    Some(len) => {
                        current.push_str(&text[i..i + len]);
                        for _ in 1..len {
                            chars.next();
                        }
                        prev = Some('}');
                    }
                    None => return Err(refusal(Construct::BraceExpansion, at)),
                },
                '}' => return Err(refusal(Construct::BraceExpansion, at)),
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

/// The length of `{...}` at the start of `text` when bash leaves it as it is: a closing brace
/// in the same text, and between them no comma, no `..`, no other brace, and nothing else
/// that the caller would have to read (a backslash, a quote, an expansion, a glob).
fn literal_braces(text: &str) -> Option<usize> {
    let close = text.find('}')?;
    let inside = &text[1..close];
    let plain = inside
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'@' | b':' | b'/' | b'+'));
    (plain && !inside.contains("..")).then_some(close + 1)
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
