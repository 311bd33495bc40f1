//! The documents speak to their reader in the project's own words: no issue numbers, no outside
//! brief, every rule's short name (L2, P5, ...) linked to where docs/design.md states the rules,
//! an install that keeps to the lock file, README examples that compile as pasted, and counts
//! that match what they count. (The help texts are held in tests/first_use.rs.)

use std::fs;
use std::path::{Path, PathBuf};

/// Every document a reader of the repository reads.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = vec![
        root.join("README.md"),
        root.join("bindings/python/README.md"),
        root.join("fuzz/README.md"),
    ];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    found.extend(docs);
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The words of `text` (runs of ASCII letters and digits), each with the line it is on.
fn words(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut word = String::new();
        for c in line.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() {
                word.push(c);
            } else if !word.is_empty() {
                found.push((n + 1, std::mem::take(&mut word)));
            }
        }
    }
    found
}

/// True for a rule's short name: `L1`–`L5`, `P1`–`P5`, `R1`–`R4`, `S1`, `S2`, `A1`–`A5`,
/// `D1`, `D2`.
fn is_rule_name(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(
        (chars.next(), chars.next(), chars.next()),
        (
            Some('L' | 'P' | 'R' | 'S' | 'A' | 'D'),
            Some('1'..='5'),
            None
        )
    )
}

#[test]
fn no_document_speaks_of_issue_numbers_or_a_brief_the_reader_does_not_have() {
    for path in documents() {
        let text = read(&path);
        let words = words(&text);
        for pair in words.windows(2) {
            let (line, first) = (&pair[0].0, pair[0].1.to_lowercase());
            let second = &pair[1].1;
            assert!(
                !(first == "issue" && second.bytes().all(|b| b.is_ascii_digit())),
                "{}:{line}: \"issue {second}\"",
                path.display()
            );
            assert!(
                !(first == "the" && second == "brief") && first != "brief's",
                "{}:{line}: speaks of the brief",
                path.display()
            );
        }
    }
}

#[test]
fn every_document_that_names_a_rule_links_to_where_the_rules_are_stated() {
    let design = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md");
    let stated = read(&design);
    let section = stated
        .split("\n## The rules\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/design.md has a section \"The rules\"");
    for rule in [
        "L1", "L5", "P1", "P5", "R1", "R4", "S1", "S2", "A1", "A5", "D1", "D2",
    ] {
        assert!(
            section.contains(&format!("**{rule}**")),
            "{rule} is not stated"
        );
    }
    for path in documents().into_iter().filter(|p| *p != design) {
        let text = read(&path);
        let named: Vec<(usize, String)> = words(&text)
            .into_iter()
            .filter(|(_, w)| is_rule_name(w))
            .collect();
        if let Some((line, rule)) = named.first() {
            assert!(
                text.contains("design.md#the-rules"),
                "{}:{line} names rule {rule} and links nowhere to docs/design.md#the-rules",
                path.display()
            );
        }
    }
}

#[test]
fn every_cargo_install_in_the_documents_keeps_to_the_lock_file() {
    let mut seen = 0;
    for path in documents() {
        for (n, line) in read(&path).lines().enumerate() {
            if line.contains("cargo install") && line.contains("--path") {
                seen += 1;
                assert!(
                    line.contains("--locked"),
                    "{}:{}: {line}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    assert!(seen > 0, "no document says how to install the command line");
}

#[test]
fn the_readmes_rust_examples_hide_no_line_that_a_reader_would_need() {
    let readme = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let mut in_rust = false;
    let mut examples = 0;
    for (n, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_rust = line == "```rust";
            examples += usize::from(in_rust);
            continue;
        }
        // rustdoc runs a line starting with `# ` without showing it; GitHub shows it as is,
        // and a reader who pastes the example gets code that does not compile.
        assert!(
            !(in_rust && line.trim_start().starts_with("# ")),
            "README.md:{}: a hidden line in a Rust example: {line}",
            n + 1
        );
    }
    assert!(examples > 0, "README.md has no Rust example");
}

#[test]
fn each_count_the_readme_gives_of_a_table_is_the_number_of_its_rows() {
    let readme = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let numbers = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    let lines: Vec<&str> = readme.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(before) = line.strip_suffix(" of its own:") else {
            continue;
        };
        let word = before.rsplit(' ').next().unwrap_or_default();
        let Some(count) = numbers.iter().position(|n| *n == word).map(|p| p + 1) else {
            continue;
        };
        let rows = lines[i + 1..]
            .iter()
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| l.starts_with('|'))
            .skip(2) // the header and its rule
            .count();
        assert_eq!(rows, count, "README.md:{}: {line}", i + 1);
        checked += 1;
    }
    assert!(checked > 0, "no \"... of its own:\" table in README.md");
}
