//! docs/patterns.md's tables of what a command does, run: each example of the wildcard table
//! through `decide`, each line of the wrapper table against the patterns the doc names, and each
//! example of the classifier's table through `classify`, with the word the doc says decides.

#[macro_use]
mod common;

use common::{verdict_word, Engine, TestResult, WorkingTree};
use std::path::Path;

use session_ledger::{classify, NewPattern, Reason, ToolCall};

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/patterns.md"))
        .expect("docs/patterns.md")
}

/// The rows of the first table after the heading `heading`, each a list of cells (header and
/// separator rows left out).
fn table(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let start = doc
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/patterns.md has no section {heading:?}"));
    let rows: Vec<Vec<String>> = doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim()
                .trim_start_matches('|')
                .trim_end_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "the section {heading:?} has no table");
    rows
}

/// The code spans of a cell, in order.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_owned())
        .collect()
}

fn the_wildcard_table_decides_as_it_says(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    for (n, row) in table(&doc(), "Words a wildcard does not stand for")
        .iter()
        .enumerate()
    {
        let [pattern, line, decision, word] = &row[..] else {
            panic!("{row:?}");
        };
        let (pattern, line) = (&spans(pattern)[0], &spans(line)[0]);
        let id = format!("s{n}");
        f.ledger.create_root(&id, "op")?;
        f.ledger
            .add_pattern_checked(&id, pattern, "op", &NewPattern::new())?;
        let d = f.ledger.decide(&id, line, false)?;
        let verdict = verdict_word(d.verdict);
        assert_eq!(verdict, decision, "{pattern} / {line}: {d:?}");
        if let Some(word) = spans(word).first() {
            let Reason::Nothing { kept: Some(k), .. } = &d.reason else {
                panic!("{pattern} / {line}: {d:?}");
            };
            assert_eq!(&k.word, word, "{pattern} / {line}");
            assert_eq!(&k.pattern, pattern);
        }
    }
    Ok(())
}

fn the_wrapper_table_decides_as_it_says(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("s", "op")?;
    f.ledger.add_pattern("s", "npm test", "op")?;
    f.ledger.add_pattern("s", "git status", "op")?;
    let rows = table(&doc(), "Wrappers are read through");
    assert!(rows.len() >= 14, "{rows:?}");
    for row in rows {
        let [_, _, line, decision] = &row[..] else {
            panic!("{row:?}");
        };
        let line = &spans(line)[0];
        let d = f.ledger.decide("s", line, false)?;
        let verdict = verdict_word(d.verdict);
        assert_eq!(verdict, decision, "{line}: {d:?}");
    }
    Ok(())
}

fn the_tool_rule_examples_decide_as_they_say(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let tree = WorkingTree::new()?;
    let root = &tree.root;
    f.ledger.create_root("s", "op")?;
    for rule in [
        "Read(src/**)",
        "Edit(docs/*.md)",
        "WebFetch(domain:docs.rs)",
        "mcp__github__list_issues",
    ] {
        f.ledger.add_pattern("s", rule, "op")?;
    }
    let doc = doc();
    let section = &doc[doc
        .find("\n## Grants for other tools\n")
        .expect("the section")..];
    let examples = &section[section
        .find("| tool | path or URL |")
        .expect("the examples")..];
    let rows = table(&format!("\n## x\n{examples}"), "x");
    assert!(rows.len() >= 12, "{rows:?}");
    for row in rows {
        let [tool, target, decision, _] = &row[..] else {
            panic!("{row:?}");
        };
        let tool = &spans(tool)[0];
        let target = spans(target).first().cloned();
        let url = target.as_deref().filter(|t| t.starts_with("http"));
        let path = target
            .as_deref()
            .filter(|t| !t.starts_with("http"))
            .map(Path::new);
        let call = ToolCall {
            tool,
            path,
            url,
            root: Some(root.path()),
        };
        let d = f.ledger.decide_tool("s", &call)?;
        let verdict = verdict_word(d.verdict);
        assert_eq!(verdict, decision, "{tool} {target:?}: {d:?}");
    }
    Ok(())
}

#[test]
fn the_classifier_table_classifies_as_it_says() {
    let rows = table(&doc(), "Read-only commands: the classifier");
    let (mut reads, mut not) = (0, 0);
    for row in rows {
        let [program, _, read_only, not_read_only] = &row[..] else {
            panic!("{row:?}");
        };
        for line in spans(read_only) {
            let c = classify(&line);
            assert!(c.read_only, "{program}: {line}: {c:?}");
            reads += 1;
        }
        // Pairs: the line, then the word the doc says decides.
        let pairs = spans(not_read_only);
        assert!(pairs.len() % 2 == 0, "{program}: {pairs:?}");
        for pair in pairs.chunks(2) {
            let c = classify(&pair[0]);
            assert!(!c.read_only, "{program}: {}: {c:?}", pair[0]);
            assert_eq!(c.word, pair[1], "{program}: {}", pair[0]);
            not += 1;
        }
    }
    assert!(reads >= 25 && not >= 25, "{reads} read-only and {not} not");
}

engine_tests! {
    the_tool_rule_examples_decide_as_they_say,
    the_wildcard_table_decides_as_it_says,
    the_wrapper_table_decides_as_it_says,
}
