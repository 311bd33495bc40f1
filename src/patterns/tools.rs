//! Tool rules: grants for an agent's tools other than the shell, written in the rule language
//! of Claude Code's permission rules and stored beside command patterns (the same table, the
//! same `pattern add`, `list`, `remove`, audit kinds and revocation):
//!
//! * `Read(GLOB)`: the file-reading tools (`Read`, `Glob`, `Grep`, `LS`, `NotebookRead`) on a
//!   path the glob matches; `Edit(GLOB)`: the file-editing tools (`Edit`, `MultiEdit`, `Write`,
//!   `NotebookEdit`). The glob is gitignore-style and relative to the root the call names (the
//!   session's working tree): `*` and `?` within one path segment, `**` any number of segments,
//!   a glob with no `/` matches at any depth, a trailing `/` means everything under it. The
//!   path is resolved (`..` and symbolic links) before it is matched, and a path outside the
//!   root matches no rule.
//! * `WebFetch(domain:HOST)`: a fetch of an `http`/`https` URL whose host is `HOST`
//!   (`*.HOST`: any subdomain of it).
//! * `mcp__SERVER` or `mcp__SERVER__*`: every tool of an MCP server; `mcp__SERVER__TOOL`: one.
//!
//! Where this differs from Claude Code: paths are only ever relative to the root (no `//abs`,
//! `~/` or `/` meaning something else), character classes and braces are refused, `Bash(...)`
//! is refused (a command pattern is the command itself), and `Write(...)` is spelled `Edit(...)`.
//! This module reads text and, to resolve a path, the file system; it knows no database.

use std::path::{Component, Path, PathBuf};

/// A parsed tool rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRule {
    /// `Read(GLOB)`.
    Read(PathGlob),
    /// `Edit(GLOB)`.
    Edit(PathGlob),
    /// `WebFetch(domain:HOST)`.
    Fetch {
        /// The host, lowercase; with a leading `*.` for any subdomain.
        domain: String,
    },
    /// `mcp__SERVER`, `mcp__SERVER__*` or `mcp__SERVER__TOOL`.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool, or `None` for every tool of the server.
        tool: Option<String>,
    },
}

/// A gitignore-style glob over paths relative to a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathGlob {
    segments: Vec<String>,
}

/// An agent's tool call, as a tool rule judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCall<'a> {
    /// The tool's name (`Read`, `Edit`, `WebFetch`, `mcp__github__list_issues`, ...).
    pub tool: &'a str,
    /// The file or folder it reads or edits, absolute or relative to `root`.
    pub path: Option<&'a Path>,
    /// The URL it fetches.
    pub url: Option<&'a str>,
    /// The session's working tree, which path rules are relative to.
    pub root: Option<&'a Path>,
}

/// Tools that only read files, which `Read(...)` rules admit.
pub const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "LS", "NotebookRead"];
/// Tools that edit files, which `Edit(...)` rules admit.
pub const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];
/// Tools that only read (files, or the web with a GET), which `trust_reads` approves.
pub const READ_ONLY_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
];

/// True when `text` is written as a tool rule (a name and parentheses, or `mcp__...`), so that
/// it is judged as one and never as a command pattern.
pub fn is_tool_rule(text: &str) -> bool {
    text.starts_with("mcp__") || tool_and_argument(text).is_some()
}

/// `Name(argument)`: a capitalized name, then the whole rest in parentheses.
fn tool_and_argument(text: &str) -> Option<(&str, &str)> {
    let open = text.find('(')?;
    let name = &text[..open];
    let inner = text[open + 1..].strip_suffix(')')?;
    let capitalized = name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_alphanumeric());
    capitalized.then_some((name, inner))
}

impl ToolRule {
    /// Parses a tool rule, or says why it is not a valid one.
    ///
    /// ```
    /// use session_ledger::ToolRule;
    /// assert!(ToolRule::parse("Read(src/**)").is_ok());
    /// assert!(ToolRule::parse("WebFetch(domain:docs.rs)").is_ok());
    /// assert!(ToolRule::parse("mcp__github__list_issues").is_ok());
    /// assert!(ToolRule::parse("Read(../secrets)").is_err());
    /// assert!(ToolRule::parse("Bash(npm test:*)").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// Why the text is not a valid tool rule, in words.
    pub fn parse(text: &str) -> Result<ToolRule, String> {
        if let Some(rest) = text.strip_prefix("mcp__") {
            let (server, tool) = match rest.split_once("__") {
                Some((server, "*")) => (server, None),
                Some((server, tool)) => (server, Some(tool)),
                None => (rest, None),
            };
            let name_ok = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            };
            if !name_ok(server) || !tool.is_none_or(name_ok) {
                return Err(
                    "an MCP rule is mcp__SERVER, mcp__SERVER__* or mcp__SERVER__TOOL, \
                            names of letters, digits, - and _"
                        .to_owned(),
                );
            }
            return Ok(ToolRule::Mcp {
                server: server.to_owned(),
                tool: tool.map(str::to_owned),
            });
        }
        let Some((name, argument)) = tool_and_argument(text) else {
            return Err("a tool rule is Tool(argument) or mcp__SERVER__TOOL".to_owned());
        };
        match name {
            "Read" => PathGlob::parse(argument).map(ToolRule::Read),
            "Edit" => PathGlob::parse(argument).map(ToolRule::Edit),
            "Write" | "MultiEdit" | "NotebookEdit" => Err(format!(
                "write Edit({argument}): an Edit rule admits Edit, MultiEdit, Write and NotebookEdit"
            )),
            "WebFetch" => {
                let Some(domain) = argument.strip_prefix("domain:") else {
                    return Err("a WebFetch rule is WebFetch(domain:HOST)".to_owned());
                };
                let host = domain.strip_prefix("*.").unwrap_or(domain);
                let valid = !host.is_empty()
                    && host.split('.').all(|label| {
                        !label.is_empty()
                            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    });
                if !valid {
                    return Err(format!("{domain:?} is not a host name (or *.HOST)"));
                }
                Ok(ToolRule::Fetch {
                    domain: domain.to_ascii_lowercase(),
                })
            }
            "Bash" => Err(
                "a shell command is granted by a command pattern, the command itself \
                 (`npm test *`), not Bash(...)"
                    .to_owned(),
            ),
            other => Err(format!(
                "{other}(...) is not a tool rule the ledger knows: Read, Edit, WebFetch, or mcp__..."
            )),
        }
    }

    /// True when this rule admits `call`.
    pub fn admits(&self, call: &ToolCall<'_>) -> bool {
        match self {
            ToolRule::Read(glob) => READ_TOOLS.contains(&call.tool) && glob.admits_call(call),
            ToolRule::Edit(glob) => EDIT_TOOLS.contains(&call.tool) && glob.admits_call(call),
            ToolRule::Fetch { domain } => {
                call.tool == "WebFetch"
                    && call.url.and_then(host_of).is_some_and(|host| {
                        match domain.strip_prefix("*.") {
                            Some(parent) => host.ends_with(&format!(".{parent}")),
                            None => host == *domain,
                        }
                    })
            }
            ToolRule::Mcp { server, tool } => {
                let Some(rest) = call.tool.strip_prefix("mcp__") else {
                    return false;
                };
                match (rest.split_once("__"), tool) {
                    (Some((s, _)), None) => s == server,
                    (Some((s, t)), Some(tool)) => s == server && t == tool,
                    (None, _) => false,
                }
            }
        }
    }
}

impl PathGlob {
    fn parse(text: &str) -> Result<PathGlob, String> {
        if text.is_empty() {
            return Err("the path glob is empty".to_owned());
        }
        if text.starts_with("//") || text.starts_with('~') {
            return Err(
                "a path rule is relative to the session's root; absolute (//) and home \
                        (~) paths are not supported"
                    .to_owned(),
            );
        }
        if let Some(c) = text
            .chars()
            .find(|c| matches!(c, '[' | ']' | '{' | '}' | '\\'))
        {
            return Err(format!(
                "{c:?} is not supported in a path glob (only *, ? and **)"
            ));
        }
        let anchored =
            text.contains('/') && text.trim_end_matches('/').contains('/') || text.starts_with('/');
        let mut body = text.trim_start_matches('/').to_owned();
        if body.ends_with('/') {
            body.push_str("**");
        }
        let mut segments: Vec<String> = Vec::new();
        if !anchored {
            segments.push("**".to_owned());
        }
        for segment in body.split('/') {
            match segment {
                "" | "." => continue,
                ".." => return Err("a path glob may not hold `..`".to_owned()),
                s => segments.push(s.to_owned()),
            }
        }
        if segments.is_empty() {
            return Err("the path glob names nothing".to_owned());
        }
        Ok(PathGlob { segments })
    }

    fn admits_call(&self, call: &ToolCall<'_>) -> bool {
        let (Some(root), path) = (call.root, call.path.unwrap_or(Path::new("."))) else {
            return false;
        };
        resolve(root, path).is_some_and(|relative| self.matches(&relative))
    }

    /// True when the glob matches a path relative to the root, `/`-separated.
    fn matches(&self, relative: &[String]) -> bool {
        // matched[i][j]: the first i glob segments match the first j path segments.
        let (g, p) = (self.segments.len(), relative.len());
        let mut matched = vec![vec![false; p + 1]; g + 1];
        matched[0][0] = true;
        for i in 1..=g {
            let glob = &self.segments[i - 1];
            for j in 0..=p {
                matched[i][j] = if glob == "**" {
                    matched[i - 1][j] || (j > 0 && matched[i][j - 1])
                } else {
                    j > 0 && matched[i - 1][j - 1] && segment_matches(glob, &relative[j - 1])
                };
            }
        }
        matched[g][p]
    }
}

/// One glob segment (`*`, `?`, text) against one path segment.
fn segment_matches(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let mut matched = vec![vec![false; n.len() + 1]; g.len() + 1];
    matched[0][0] = true;
    for i in 1..=g.len() {
        for j in 0..=n.len() {
            matched[i][j] = match g[i - 1] {
                '*' => matched[i - 1][j] || (j > 0 && matched[i][j - 1]),
                '?' => j > 0 && matched[i - 1][j - 1],
                c => j > 0 && matched[i - 1][j - 1] && n[j - 1] == c,
            };
        }
    }
    matched[g.len()][n.len()]
}

/// `path` (absolute, or relative to `root`) resolved as the system would open it, `..` and
/// symbolic links followed, as segments relative to `root`; `None` when it leaves the root or
/// cannot be read as text. A path that does not exist yet (a file about to be written) is
/// resolved through its nearest existing folder.
fn resolve(root: &Path, path: &Path) -> Option<Vec<String>> {
    let root = std::fs::canonicalize(root).ok()?;
    let mut existing = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let found = loop {
        match std::fs::canonicalize(&existing) {
            Ok(found) => break found,
            Err(_) => {
                // A `..` or `.` in the part that does not exist: refuse rather than guess.
                let last = existing.components().next_back()?;
                let Component::Normal(name) = last else {
                    return None;
                };
                missing.push(name.to_owned());
                existing = existing.parent()?.to_path_buf();
            }
        }
    };
    let full: PathBuf = missing.iter().rev().fold(found, |p, name| p.join(name));
    let relative = full.strip_prefix(&root).ok()?;
    relative
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str().map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// The host of an `http` or `https` URL, lowercase, without port or credentials.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(text: &str) -> PathGlob {
        PathGlob::parse(text).unwrap()
    }

    fn path(p: &str) -> Vec<String> {
        p.split('/').map(str::to_owned).collect()
    }

    #[test]
    fn path_globs_match_as_gitignore_does() {
        assert!(glob("src/**").matches(&path("src/a/b.rs")));
        assert!(glob("src/**").matches(&path("src")));
        assert!(!glob("src/**").matches(&path("docs/a.md")));
        assert!(glob("docs/*.md").matches(&path("docs/a.md")));
        assert!(!glob("docs/*.md").matches(&path("docs/x/a.md")));
        assert!(glob("*.md").matches(&path("docs/x/a.md")));
        assert!(glob("/README.md").matches(&path("README.md")));
        assert!(!glob("/README.md").matches(&path("docs/README.md")));
        assert!(glob("docs/").matches(&path("docs/x/y")));
        assert!(glob("src/?.rs").matches(&path("src/a.rs")));
        assert!(!glob("src/?.rs").matches(&path("src/ab.rs")));
        for bad in [
            "",
            "../x",
            "src/../x",
            "//etc/passwd",
            "~/x",
            "src/[ab]",
            "{a,b}",
        ] {
            assert!(PathGlob::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_and_mcp_tools_are_matched_by_name() {
        let fetch = ToolRule::parse("WebFetch(domain:docs.rs)").unwrap();
        let call = |url| ToolCall {
            tool: "WebFetch",
            path: None,
            url: Some(url),
            root: None,
        };
        assert!(fetch.admits(&call("https://docs.rs/serde")));
        assert!(fetch.admits(&call("https://DOCS.rs:443/x")));
        assert!(!fetch.admits(&call("https://docs.rs.evil.example/x")));
        assert!(!fetch.admits(&call("https://user@evil.example/docs.rs")));
        assert!(!fetch.admits(&call("ftp://docs.rs/x")));
        let sub = ToolRule::parse("WebFetch(domain:*.example.com)").unwrap();
        assert!(sub.admits(&call("https://api.example.com/")));
        assert!(!sub.admits(&call("https://example.com/")));
        let mcp = |tool| ToolCall {
            tool,
            path: None,
            url: None,
            root: None,
        };
        let server = ToolRule::parse("mcp__github").unwrap();
        assert!(server.admits(&mcp("mcp__github__list_issues")));
        assert!(!server.admits(&mcp("mcp__githubx__list_issues")));
        let one = ToolRule::parse("mcp__github__list_issues").unwrap();
        assert!(one.admits(&mcp("mcp__github__list_issues")));
        assert!(!one.admits(&mcp("mcp__github__create_issue")));
    }
}
