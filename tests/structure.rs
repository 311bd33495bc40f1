//! The library's layers, held against its source: the handle (`ledger.rs`) over the concept
//! modules over the storage interface and its engines, over the values and the base (errors,
//! time, bounds); docs/design.md draws them.
//!
//! An edge is a `crate::<module>` path in code (comments, which hold rustdoc links, are left
//! out), taken at the level of the crate's top modules; test modules inside `src/` (a `tests`
//! folder or a `tests.rs`) may reach anything and are left out. Each failure names the file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a file of `src/` may be: a reader takes one in at a sitting.
const MAX_LINES: usize = 600;

/// Each layer and the top modules in it, from the top down.
const LAYERS: &[(&str, &[&str])] = &[
    ("facade", &["ledger", "recorder", "agents"]),
    (
        "concepts",
        &[
            "sessions",
            "labels",
            "postures",
            "grants",
            "authority",
            "decisions",
            "decision_log",
            "options",
            "audit",
            "copy",
            "archive",
            "files",
            "patterns",
            "commands",
        ],
    ),
    ("storage", &["storage"]),
    ("values", &["model"]),
    ("base", &["error", "clock", "config"]),
];

/// What each layer may name besides its own modules: only what lies below it. The concepts
/// never call back into the handle; an engine stores rows and knows no rule; the values know
/// no engine; the base knows no concept.
const MAY_REACH: &[(&str, &[&str])] = &[
    ("facade", &["concepts", "storage", "values", "base"]),
    ("concepts", &["storage", "values", "base"]),
    ("storage", &["values", "base"]),
    ("values", &["base"]),
    ("base", &[]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read a folder of src/") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `src/storage/sqlite/open.rs` → `storage/sqlite/open.rs`.
fn relative(path: &Path) -> String {
    path.strip_prefix(src())
        .expect("a file of src/")
        .to_string_lossy()
        .replace('\\', "/")
}

/// Test code compiled into the library (`#[cfg(test)] mod tests`), which may reach anything.
fn is_test_module(relative: &str) -> bool {
    relative.split('/').any(|part| part == "tests") || relative.ends_with("/tests.rs")
}

/// The library's files (the command-line program in `src/bin/` is a client of the library).
fn library_files() -> Vec<(String, String)> {
    rust_files(&src())
        .into_iter()
        .map(|path| (relative(&path), fs::read_to_string(&path).expect("read")))
        .filter(|(rel, _)| !rel.starts_with("bin/") && !is_test_module(rel))
        .collect()
}

/// The text of `source` without its `//` comments (doc comments included).
fn code_only(source: &str) -> String {
    source
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top module a library file belongs to: `storage/sqlite/open.rs` → `storage`.
fn top_module(relative: &str) -> String {
    let first = relative.split('/').next().expect("a path");
    first.trim_end_matches(".rs").to_owned()
}

/// The top modules a file's code names by `crate::<module>`, its own left out.
fn named_modules(relative: &str, source: &str) -> BTreeSet<String> {
    let own = top_module(relative);
    let code = code_only(source);
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty() && *name != own)
        .collect()
}

fn layer_of(module: &str) -> Option<&'static str> {
    LAYERS
        .iter()
        .find(|(_, modules)| modules.contains(&module))
        .map(|(layer, _)| *layer)
}

/// Top module → the top modules its files name.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, source) in library_files() {
        let named = named_modules(&rel, &source);
        graph.entry(top_module(&rel)).or_default().extend(named);
    }
    graph
}

#[test]
fn no_file_of_src_is_longer_than_six_hundred_lines() {
    let long: Vec<String> = rust_files(&src())
        .iter()
        .map(|path| {
            let lines = fs::read_to_string(path).expect("read").lines().count();
            (relative(path), lines)
        })
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(rel, lines)| format!("src/{rel}: {lines} lines"))
        .collect();
    assert!(long.is_empty(), "longer than {MAX_LINES} lines: {long:#?}");
}

#[test]
fn every_top_module_of_the_library_has_a_layer() {
    let graph = module_graph();
    let placeless: Vec<&String> = graph
        .keys()
        .filter(|m| *m != "lib" && layer_of(m).is_none())
        .collect();
    assert!(
        placeless.is_empty(),
        "modules in no layer (add them to LAYERS): {placeless:?}"
    );
}

#[test]
fn each_layer_names_only_the_layers_below_it() {
    let mut problems = Vec::new();
    for (rel, source) in library_files() {
        let Some(layer) = layer_of(&top_module(&rel)) else {
            continue; // lib.rs: the crate root re-exports every layer
        };
        let allowed = MAY_REACH
            .iter()
            .find(|(l, _)| *l == layer)
            .map(|(_, reach)| *reach)
            .expect("every layer says what it may reach");
        for named in named_modules(&rel, &source) {
            match layer_of(&named) {
                Some(other) if other == layer || allowed.contains(&other) => {}
                Some(other) => problems.push(format!(
                    "src/{rel} ({layer}) names crate::{named} ({other})"
                )),
                None => problems.push(format!(
                    "src/{rel} ({layer}) names crate::{named}, which is in no layer"
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_top_modules_import_each_other_in_no_cycle() {
    let graph = module_graph();
    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module.to_owned());
            return Some(cycle);
        }
        if !done.insert(module.to_owned()) {
            return None;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        let cycle = visit(module, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "an import cycle: {}",
            cycle.unwrap().join(" → ")
        );
    }
}

#[test]
fn the_ledger_handle_is_implemented_in_its_own_module_alone() {
    let elsewhere: Vec<String> = library_files()
        .into_iter()
        .filter(|(rel, source)| {
            let code = code_only(source);
            // `impl Ledger` itself, not `impl LedgerOption`.
            let implements = code.match_indices("impl Ledger").any(|(at, found)| {
                !code[at + found.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            });
            top_module(rel) != "ledger" && implements
        })
        .map(|(rel, _)| rel)
        .collect();
    assert!(elsewhere.is_empty(), "`impl Ledger` in {elsewhere:?}");
}

#[test]
fn each_database_driver_is_named_only_inside_its_engine() {
    let drivers = [
        ("rusqlite", "storage/sqlite/"),
        ("r2d2_sqlite", "storage/sqlite/"),
        ("r2d2_postgres", "storage/postgres/"),
        ("refinery_core", "storage/"),
    ];
    let mut problems = Vec::new();
    for path in rust_files(&src()) {
        let rel = relative(&path);
        let code = code_only(&fs::read_to_string(&path).expect("read"));
        for (driver, home) in drivers {
            let named = code
                .match_indices(driver)
                .any(|(at, _)| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
            if named && !rel.starts_with(home) {
                problems.push(format!(
                    "src/{rel} names {driver}, which belongs in src/{home}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

// ------------------------------------------------------------------------------------------------
// The command line: a shared context beneath command groups beneath one dispatcher
// ------------------------------------------------------------------------------------------------

/// The command line's folder, `src/bin/session-ledger/`.
fn cli_dir() -> PathBuf {
    src().join("bin/session-ledger")
}

/// The command line's files, each with its path relative to [`cli_dir`] (`commands/audit.rs`).
fn cli_files() -> Vec<(String, String)> {
    rust_files(&cli_dir())
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(cli_dir())
                .expect("a file of the command line")
                .to_string_lossy()
                .replace('\\', "/");
            (rel, fs::read_to_string(&path).expect("read"))
        })
        .collect()
}

/// The command group a file of `commands/` belongs to: `commands/audit.rs` → `audit` (and a
/// group's own folder, `commands/audit/list.rs`, → `audit`); `None` outside `commands/`.
fn command_group(relative: &str) -> Option<String> {
    let rest = relative.strip_prefix("commands/")?;
    let first = rest.split('/').next().expect("a path");
    Some(first.trim_end_matches(".rs").to_owned())
}

/// The paths a file of the command line names, each as the module it reaches: `context`,
/// `dispatch`, `render`, ..., and under `commands` the group too (`commands::audit`, or
/// `commands` alone for the module list). Read from every `crate::` path of its code (a grouped
/// `use crate::{a, b::{c, d}}` counts each of its paths) and, in a group's file, from `super::`
/// paths, which reach the module list and through it the other groups.
fn cli_named(relative: &str, source: &str) -> BTreeSet<String> {
    let code = code_only(source);
    let mut paths = Vec::new();
    let mut roots = vec![("crate::", Vec::new())];
    if relative.starts_with("commands/") && relative.matches('/').count() == 1 {
        roots.push(("super::", vec!["commands".to_owned()]));
    }
    for (root, prefix) in roots {
        for (at, _) in code.match_indices(root) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &code[at + root.len()..];
            use_tree(&mut rest, prefix.clone(), &mut paths);
        }
    }
    paths
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| match p.as_slice() {
            [first, second, ..] if first == "commands" && second != "self" => {
                format!("commands::{second}")
            }
            [first, ..] => first.clone(),
            [] => unreachable!(),
        })
        .collect()
}

/// Reads one path (or a `{...}` group of them) from the start of `rest`, as a `use` tree, and
/// adds each whole path, after `prefix`, to `paths`. Moves `rest` past what it read.
fn use_tree(rest: &mut &str, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    *rest = rest.trim_start();
    if let Some(inner) = rest.strip_prefix('{') {
        *rest = inner;
        loop {
            *rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix('}') {
                *rest = after;
                return;
            }
            if rest.is_empty() {
                return;
            }
            use_tree(rest, prefix.clone(), paths);
            *rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix(',') {
                *rest = after;
            }
        }
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '*')
        .collect();
    *rest = &rest[name.len()..];
    let mut path = prefix;
    if !name.is_empty() {
        path.push(name);
    }
    if let Some(after) = rest.strip_prefix("::") {
        *rest = after;
        use_tree(rest, path, paths);
    } else {
        // `x as y`: the alias is no path.
        if let Some(after) = rest.trim_start().strip_prefix("as ") {
            let alias = after
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .count();
            *rest = &after.trim_start()[alias..];
        }
        paths.push(path);
    }
}

#[test]
fn the_reader_of_command_line_imports_expands_grouped_and_nested_paths() {
    let source = "use crate::context::{acting, Context};\n\
                  use crate::{render::{self, Report}, commands::{audit, sessions as s}};\n\
                  let x = crate::dispatch::run(); // crate::commented::out\n\
                  use super::authority::explain;\n";
    let named = cli_named("commands/audit.rs", source);
    let expected: BTreeSet<String> = [
        "context",
        "render",
        "commands::audit",
        "commands::sessions",
        "dispatch",
        "commands::authority",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(named, expected);
}

#[test]
fn no_command_module_names_the_dispatcher_or_another_command_group() {
    let mut problems = Vec::new();
    let mut groups = BTreeSet::new();
    for (rel, source) in cli_files() {
        let Some(group) = command_group(&rel) else {
            continue;
        };
        groups.insert(group.clone());
        for named in cli_named(&rel, &source) {
            let other_group = named
                .strip_prefix("commands::")
                .is_some_and(|g| *g != group);
            if named == "dispatch" || named == "commands" || other_group {
                problems.push(format!(
                    "src/bin/session-ledger/{rel} (group {group}) names crate::{named}"
                ));
            }
        }
    }
    assert!(
        groups.len() >= 4,
        "no command groups found under commands/: {groups:?}"
    );
    assert!(
        problems.is_empty(),
        "a command group reaches the dispatcher or another group; move what they share into \
         context.rs: {problems:#?}"
    );
}

#[test]
fn the_shared_modules_of_the_command_line_name_no_command_and_not_the_dispatcher() {
    let mut problems = Vec::new();
    let mut shared = 0;
    for (rel, source) in cli_files() {
        let top = rel
            .split('/')
            .next()
            .expect("a path")
            .trim_end_matches(".rs");
        // The demo runs command lines through the dispatcher, as `main` does: above it, not
        // shared beneath it.
        if ["main", "demo", "dispatch", "commands"].contains(&top) {
            continue;
        }
        shared += 1;
        for named in cli_named(&rel, &source) {
            if named == "dispatch" || named == "commands" || named.starts_with("commands::") {
                problems.push(format!("src/bin/session-ledger/{rel} names crate::{named}"));
            }
        }
    }
    assert!(
        cli_files().iter().any(|(rel, _)| rel == "context.rs") && shared > 1,
        "no shared context module in src/bin/session-ledger/"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
