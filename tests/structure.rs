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
    ("facade", &["ledger"]),
    (
        "concepts",
        &[
            "sessions",
            "labels",
            "postures",
            "grants",
            "decisions",
            "audit",
            "copy",
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
            top_module(rel) != "ledger" && code_only(source).contains("impl Ledger")
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
