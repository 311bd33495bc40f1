//! Grants for an agent's tools other than the shell: `Read(GLOB)`,
//! `Edit(GLOB)`, `WebFetch(domain:HOST)` and `mcp__SERVER__TOOL`, with the properties of command
//! patterns: judged for one session and never inherited, listed, removed, audited, revoked with
//! a stop that takes patterns, and tried without a ledger. Paths are resolved (`..`, symbolic
//! links) against the call's root before they are matched, and never match outside it.

#[macro_use]
mod common;

use std::path::Path;

use common::{Engine, TestResult, WorkingTree};
use session_ledger::{
    AlsoRevoke, AuditKind, AuditQuery, Error, InputError, Propagation, ToolCall, ToolRule, Verdict,
};

fn call<'a>(tool: &'a str, path: &'a str, root: &'a Path) -> ToolCall<'a> {
    ToolCall {
        tool,
        path: Some(Path::new(path)),
        url: None,
        root: Some(root),
    }
}

fn path_rules_admit_only_inside_the_root_after_resolving_the_path(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let tree = WorkingTree::new()?;
    let (root, outside) = (tree.root.path(), &tree.outside);
    f.ledger.create_root("w", "alice")?;
    f.ledger.add_pattern("w", "Read(src/**)", "alice")?;
    f.ledger.add_pattern("w", "Edit(docs/*.md)", "alice")?;
    let secret = outside.path().join("secret");
    for (tool, path, approves) in [
        ("Read", "src/lib.rs", true),
        ("Grep", "src", true),
        ("Read", "docs/../src/lib.rs", true),
        ("Read", "src/new.rs", true),
        ("Read", "docs/a.md", false),
        ("Read", "src/../../etc/passwd", false),
        ("Read", "src/escape/secret", false),
        ("Read", secret.to_str().unwrap_or_default(), false),
        ("Edit", "src/lib.rs", false),
        ("Edit", "docs/a.md", true),
        ("Write", "docs/new.md", true),
        ("Write", "docs/x/new.md", false),
        ("Edit", "docs/missing/../a.md", false),
    ] {
        let d = f.ledger.decide_tool("w", &call(tool, path, root))?;
        assert_eq!(
            d.verdict == Verdict::Approve,
            approves,
            "{tool} {path}: {d:?}"
        );
    }
    // Without a root, a path rule admits nothing.
    let no_root = ToolCall {
        root: None,
        ..call("Read", "src/lib.rs", root)
    };
    assert_eq!(f.ledger.decide_tool("w", &no_root)?.verdict, Verdict::Ask);
    Ok(())
}

fn fetch_and_mcp_rules_admit_by_name_and_are_never_inherited(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger.create_child("child", "w", "alice")?;
    f.ledger
        .add_pattern("w", "WebFetch(domain:docs.rs)", "alice")?;
    f.ledger
        .add_pattern("w", "mcp__github__list_issues", "alice")?;
    let fetch = |url| ToolCall {
        tool: "WebFetch",
        path: None,
        url: Some(url),
        root: None,
    };
    let mcp = |tool| ToolCall {
        tool,
        path: None,
        url: None,
        root: None,
    };
    let approves = |id: &str, c: &ToolCall<'_>| -> Result<bool, Error> {
        Ok(f.ledger.decide_tool(id, c)?.verdict == Verdict::Approve)
    };
    assert!(approves("w", &fetch("https://docs.rs/serde"))?);
    assert!(!approves("w", &fetch("https://docs.rs.evil.example/"))?);
    assert!(approves("w", &mcp("mcp__github__list_issues"))?);
    assert!(!approves("w", &mcp("mcp__github__delete_repo"))?);
    // A command line is never admitted by a tool rule, nor a tool by a command pattern.
    assert_eq!(
        f.ledger
            .decide("w", "mcp__github__list_issues", false)?
            .verdict,
        Verdict::Ask
    );
    // Never inherited.
    assert!(!approves("child", &fetch("https://docs.rs/serde"))?);
    assert!(!approves("child", &mcp("mcp__github__list_issues"))?);
    Ok(())
}

fn tool_rules_are_listed_removed_audited_and_taken_by_a_stop(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger.add_pattern("w", "Read(src/**)", "alice")?;
    f.ledger.add_pattern("w", "mcp__github", "alice")?;
    let listed = f.ledger.patterns("w")?;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|p| p.refused.is_none()), "{listed:?}");
    f.ledger.remove_pattern("w", "Read(src/**)", "bob")?;
    let kinds: Vec<AuditKind> = f
        .ledger
        .audit(&AuditQuery::all().session("w"))?
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == AuditKind::PatternAdd)
            .count(),
        2
    );
    assert!(kinds.contains(&AuditKind::PatternRemove));
    let authority = f.ledger.authority("w")?;
    assert_eq!(authority.patterns.len(), 1);
    let also = AlsoRevoke {
        scopes: false,
        patterns: true,
    };
    f.ledger
        .revoke_with("w", Propagation::Local, also, "alice")?;
    assert!(f.ledger.patterns("w")?.is_empty());
    Ok(())
}

fn a_malformed_tool_rule_is_refused_at_add_saying_why(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    for (rule, says) in [
        ("Read(../x)", "`..`"),
        ("Read(//etc/passwd)", "relative to the session's root"),
        ("Read(src/[ab].rs)", "not supported"),
        ("Bash(npm test:*)", "command pattern"),
        ("Write(src/**)", "Edit(src/**)"),
        ("WebFetch(docs.rs)", "domain:HOST"),
        ("Frobnicate(x)", "not a tool rule"),
        ("mcp__", "mcp__SERVER"),
    ] {
        match f.ledger.add_pattern("w", rule, "alice") {
            Err(Error::Input(InputError::InvalidPattern { problem, .. })) => {
                assert!(problem.contains(says), "{rule}: {problem}")
            }
            other => panic!("{rule}: {other:?}"),
        }
    }
    assert!(f.ledger.patterns("w")?.is_empty());
    assert!(ToolRule::parse("Read(src/**)").is_ok());
    Ok(())
}

engine_tests! {
    path_rules_admit_only_inside_the_root_after_resolving_the_path,
    fetch_and_mcp_rules_admit_by_name_and_are_never_inherited,
    tool_rules_are_listed_removed_audited_and_taken_by_a_stop,
    a_malformed_tool_rule_is_refused_at_add_saying_why,
}
