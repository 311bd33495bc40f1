//! docs/schema.md against the migrations and a fresh ledger: the facts it states that can drift
//! from the schema are checked here, so that the doc follows the migrations.
//!
//! - Every statement of the current schema version ("Schema version 8", "8 for this version",
//!   "eight migrations") is `session_ledger::schema_version()` and the number of `V*.sql` files
//!   in `migrations/sqlite/`, and no "version N" names a version newer than that. "Schema version N"
//!   always means the current one; the doc names a past version as "version N" ("since
//!   version 7").
//! - The migrations the doc lists, and the example output of `refinery_schema_history`, are the
//!   files in `migrations/sqlite/`, in order.
//! - The tables (`## \`name\`` headings, with `refinery_schema_history` documented apart) and
//!   the views (the paragraphs of the Views section that start with a view's name) are exactly
//!   those of a freshly created ledger.
//! - Every column list (a column table, or "with the columns `a`, `b` and `c`" in the Views
//!   section) is exactly `pragma_table_info` of its table or view, in order, except a column
//!   table whose rows group several columns, which is compared as a set.
//!
//! Each failure names the doc's line. The migrations are read from the directory when the test
//! runs, so a new migration fails these tests until the doc describes it.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use session_ledger::Ledger;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const DOC: &str = "docs/schema.md";
/// The migration tool's bookkeeping table, which the doc describes apart from the ledger's own.
const HISTORY: &str = "refinery_schema_history";

fn package_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// `migrations/sqlite/V{version}__{name}.sql`, read from the directory, ordered by version.
struct Migration {
    version: i64,
    name: String,
    file: String,
}

fn migrations() -> Vec<Migration> {
    let dir = package_file("migrations/sqlite");
    let mut found = Vec::new();
    for entry in fs::read_dir(&dir).expect("read migrations/sqlite/") {
        let file = entry.expect("read migrations/sqlite/").file_name();
        let file = file
            .to_str()
            .expect("a migration's file name is UTF-8")
            .to_owned();
        let Some(stem) = file.strip_prefix('V').and_then(|f| f.strip_suffix(".sql")) else {
            continue;
        };
        let (version, name) = stem
            .split_once("__")
            .unwrap_or_else(|| panic!("migrations/sqlite/{file}: not V{{n}}__{{name}}.sql"));
        let version = version
            .parse()
            .unwrap_or_else(|_| panic!("migrations/sqlite/{file}: the version is not a number"));
        found.push(Migration {
            version,
            name: name.to_owned(),
            file,
        });
    }
    found.sort_by_key(|m| m.version);
    found
}

/// The version the migrations bring a ledger to: the number of migration files, which the
/// first test checks are V1 to Vn and agree with `schema_version()`.
fn current_version() -> i64 {
    migrations().len() as i64
}

/// A freshly created ledger, opened by the library and then read with a plain connection.
struct FreshLedger {
    _dir: tempfile::TempDir,
    conn: rusqlite::Connection,
}

impl FreshLedger {
    fn new() -> FreshLedger {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.db");
        drop(Ledger::init(&path).expect("create a ledger"));
        let conn = rusqlite::Connection::open(&path).expect("open the ledger file");
        FreshLedger { _dir: dir, conn }
    }

    /// The names of the tables or views (`kind`), without SQLite's own.
    fn objects(&self, kind: &str) -> BTreeSet<String> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name FROM sqlite_schema
                  WHERE type = :kind AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            )
            .expect("prepare");
        let names = stmt
            .query_map(rusqlite::named_params! { ":kind": kind }, |r| r.get(0))
            .expect("list the schema");
        names.collect::<Result<_, _>>().expect("read the schema")
    }

    fn columns(&self, table: &str) -> Vec<String> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM pragma_table_info(:table) ORDER BY cid")
            .expect("prepare");
        let names = stmt
            .query_map(rusqlite::named_params! { ":table": table }, |r| r.get(0))
            .expect("list the columns");
        names.collect::<Result<_, _>>().expect("read the columns")
    }

    fn history(&self) -> Vec<(i64, String)> {
        let mut stmt = self
            .conn
            .prepare("SELECT version, name FROM refinery_schema_history ORDER BY version")
            .expect("prepare");
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("read the history");
        rows.collect::<Result<_, _>>().expect("read the history")
    }
}

/// One line of the doc, numbered from 1; `code` inside a fenced block, fences included.
struct Line {
    no: usize,
    text: String,
    code: bool,
}

fn doc_lines() -> Vec<Line> {
    let text = fs::read_to_string(package_file(DOC)).expect("read docs/schema.md");
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, text) in text.lines().enumerate() {
        let fence = text.trim_start().starts_with("```");
        lines.push(Line {
            no: i + 1,
            text: text.to_owned(),
            code: fenced || fence,
        });
        if fence {
            fenced = !fenced;
        }
    }
    lines
}

fn at(line: usize) -> String {
    format!("{DOC}:{line}")
}

/// The text between backticks, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// A word without the punctuation around it, lower case.
fn bare(token: &str) -> String {
    token
        .trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .to_ascii_lowercase()
}

/// A count in digits or in English words ("8", "eight", "Twenty-one").
fn number(token: &str) -> Option<i64> {
    const UNITS: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 10] = [
        "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let word = token
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase();
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) {
        return word.parse().ok();
    }
    let unit = |w: &str| UNITS.iter().position(|u| *u == w).map(|n| n as i64);
    let tens = |w: &str| {
        TENS.iter()
            .position(|t| !t.is_empty() && *t == w)
            .map(|n| n as i64 * 10)
    };
    match word.split_once('-') {
        Some((t, u)) => Some(tens(t)? + unit(u).filter(|u| (1..10).contains(u))?),
        None => unit(&word).or_else(|| tens(&word)),
    }
}

/// Every word of the doc with its line, code blocks included, so that a statement wrapped
/// over two lines is still read as one.
fn words(lines: &[Line]) -> Vec<(usize, &str)> {
    lines
        .iter()
        .flat_map(|l| l.text.split_whitespace().map(move |w| (l.no, w)))
        .collect()
}

fn quote(lines: &[Line], no: usize) -> String {
    format!("\n    | {}", lines[no - 1].text.trim())
}

/// The doc's problems, one a line; printed as they are when a test fails.
struct Drift(String);

impl fmt::Debug for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Drift {}

fn fail_with(problems: Vec<String>) -> TestResult {
    if problems.is_empty() {
        return Ok(());
    }
    let count = problems.len();
    Err(Drift(format!(
        "{DOC} has drifted from the schema ({count}):\n{}",
        problems.join("\n")
    ))
    .into())
}

#[test]
fn the_migrations_run_from_v1_without_a_gap_and_a_fresh_ledger_applies_them_all() -> TestResult {
    let files = migrations();
    let versions: Vec<i64> = files.iter().map(|m| m.version).collect();
    let expected: Vec<i64> = (1..=files.len() as i64).collect();
    assert_eq!(
        versions, expected,
        "migrations/sqlite/ must hold V1 to Vn, each once"
    );
    assert_eq!(
        session_ledger::schema_version(),
        current_version(),
        "session_ledger::schema_version() is not the number of V*.sql files in migrations/sqlite/"
    );
    let applied = FreshLedger::new().history();
    let files: Vec<(i64, String)> = files.into_iter().map(|m| (m.version, m.name)).collect();
    assert_eq!(
        applied, files,
        "a fresh ledger's {HISTORY} is not the migrations/sqlite/ directory"
    );
    Ok(())
}

#[test]
fn every_schema_version_the_doc_states_is_the_migrations_version() -> TestResult {
    let lines = doc_lines();
    let words = words(&lines);
    let version = current_version();
    let built = session_ledger::schema_version();
    let source = format!(
        "session_ledger::schema_version() is {built}; migrations/sqlite/ holds {version} V*.sql files"
    );
    let mut problems = Vec::new();
    let mut statements = 0;
    for (i, &(line, word)) in words.iter().enumerate() {
        let next = |k: usize| words.get(i + k).map(|&(l, w)| (l, w));
        let stated = |k: usize| next(k).and_then(|(l, w)| Some((l, number(w)?)));
        let said = |k: usize, what: &str| next(k).is_some_and(|(_, w)| bare(w) == what);
        // "Schema version 8": the current version.
        if bare(word) == "schema" && said(1, "version") {
            if let Some((l, n)) = stated(2) {
                statements += 1;
                if n != version || n != built {
                    problems.push(format!(
                        "{}: states schema version {n}, but {source}{}",
                        at(l),
                        quote(&lines, l)
                    ));
                }
            }
        }
        // "`session_ledger::schema_version()`, 8" and "8 for this version".
        let this_version = said(1, "for") && said(2, "this") && said(3, "version");
        let after_call = i > 0 && words[i - 1].1.contains("schema_version()");
        if let (Some(n), true) = (number(word), this_version || after_call) {
            statements += 1;
            if n != version || n != built {
                problems.push(format!(
                    "{}: states {n} as the current version, but {source}{}",
                    at(line),
                    quote(&lines, line)
                ));
            }
        }
        // "eight migrations": as many as there are files.
        if let (Some(n), true) = (number(word), said(1, "migrations")) {
            if n != version {
                problems.push(format!(
                    "{}: counts {n} migrations, but migrations/sqlite/ holds {version} V*.sql files{}",
                    at(line),
                    quote(&lines, line)
                ));
            }
        }
        // "since version 7", "versions 1 to 5": no version newer than the migrations'.
        let previous_is_schema = i > 0 && bare(words[i - 1].1) == "schema";
        if matches!(bare(word).as_str(), "version" | "versions") && !previous_is_schema {
            let mut k = 1;
            while let Some((l, n)) = stated(k) {
                if n > version {
                    problems.push(format!(
                        "{}: names version {n}, but the newest migration is version {version}{}",
                        at(l),
                        quote(&lines, l)
                    ));
                }
                // "versions 1 to 5", "versions 2 and 3".
                if !(said(k + 1, "to") || said(k + 1, "and")) {
                    break;
                }
                k += 2;
            }
        }
    }
    if statements == 0 {
        problems.push(format!(
            "{DOC} states no schema version this test can find (\"Schema version N\", \
             \"`session_ledger::schema_version()`, N for this version\")"
        ));
    }
    fail_with(problems)
}

#[test]
fn the_doc_lists_every_migration_and_its_history_example_shows_them_all() -> TestResult {
    let lines = doc_lines();
    let files = migrations();
    let mut problems = Vec::new();

    // The list of migrations: each `migrations/sqlite/V…sql` named in the doc, in order of first mention.
    let mut listed: Vec<(usize, String)> = Vec::new();
    for line in &lines {
        for name in backticked(&line.text) {
            if let Some(file) = name.strip_prefix("migrations/sqlite/") {
                if !listed.iter().any(|(_, f)| f == file) {
                    listed.push((line.no, file.to_owned()));
                }
            }
        }
    }
    let listed_files: Vec<&str> = listed.iter().map(|(_, f)| f.as_str()).collect();
    let actual_files: Vec<&str> = files.iter().map(|m| m.file.as_str()).collect();
    if listed_files != actual_files {
        for (no, file) in &listed {
            if !actual_files.contains(&file.as_str()) {
                problems.push(format!(
                    "{}: lists migrations/sqlite/{file}, which does not exist",
                    at(*no)
                ));
            }
        }
        for file in &actual_files {
            if !listed_files.contains(file) {
                problems.push(format!("{DOC} does not list migrations/sqlite/{file}"));
            }
        }
        problems.push(format!(
            "{DOC} lists the migrations {listed_files:?}; migrations/sqlite/ holds {actual_files:?}"
        ));
    }

    // The example output of `SELECT version, name, applied_on FROM refinery_schema_history`.
    let header = lines.iter().position(|l| {
        l.code
            && l.text
                .split_whitespace()
                .eq(["version", "name", "applied_on"])
    });
    match header {
        None => problems.push(format!(
            "{DOC} has no example output of {HISTORY} (a code line `version  name  applied_on`)"
        )),
        Some(header) => {
            let rows: Vec<(usize, i64, String)> = lines[header + 2..]
                .iter()
                .map_while(|l| {
                    let mut cells = l.text.split_whitespace();
                    let version = cells.next()?.parse().ok()?;
                    Some((l.no, version, cells.next()?.to_owned()))
                })
                .collect();
            let shown: Vec<(i64, &str)> = rows.iter().map(|(_, v, n)| (*v, n.as_str())).collect();
            let applied: Vec<(i64, &str)> =
                files.iter().map(|m| (m.version, m.name.as_str())).collect();
            if shown != applied {
                problems.push(format!(
                    "{}: the example output of {HISTORY} shows {shown:?}, but the migrations \
                     are {applied:?}",
                    at(lines[header].no)
                ));
            }
        }
    }
    fail_with(problems)
}

/// A list of columns the doc gives for a table or view.
struct ColumnList {
    line: usize,
    of: Option<String>,
    names: Vec<String>,
    /// False for a column table with a row that groups several columns, which states no order.
    ordered: bool,
}

/// What the doc documents: tables, views, and their column lists.
#[derive(Default)]
struct Documented {
    tables: Vec<(usize, String)>,
    history_heading: Option<usize>,
    views: Vec<(usize, String)>,
    columns: Vec<ColumnList>,
}

fn documented(lines: &[Line]) -> Documented {
    #[derive(PartialEq)]
    enum Section {
        Table,
        Views,
        Other,
    }
    let mut doc = Documented::default();
    let mut section = Section::Other;
    let mut subject: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        if line.code {
            i += 1;
            continue;
        }
        if let Some(heading) = line.text.strip_prefix("## ") {
            let names = backticked(heading);
            subject = None;
            section = Section::Other;
            if names.len() == 1 && heading.trim() == format!("`{}`", names[0]) {
                section = Section::Table;
                subject = Some(names[0].clone());
                doc.tables.push((line.no, names[0].clone()));
            } else if heading.trim() == "Views" {
                section = Section::Views;
            } else if names.iter().any(|n| n == HISTORY) {
                subject = Some(HISTORY.to_owned());
                doc.history_heading = Some(line.no);
            }
            i += 1;
            continue;
        }
        if line.text.starts_with('#') {
            // Any other heading ends the section's subject.
            subject = None;
            if !line.text.starts_with("###") {
                section = Section::Other;
            }
            i += 1;
            continue;
        }
        if line.text.starts_with('|') {
            let end = (i..lines.len())
                .find(|&j| lines[j].code || !lines[j].text.starts_with('|'))
                .unwrap_or(lines.len());
            let first_cell = |text: &str| text.split('|').nth(1).unwrap_or("").trim().to_owned();
            if first_cell(&line.text) == "column" {
                let rows: Vec<Vec<String>> = lines[(i + 2).min(end)..end]
                    .iter()
                    .map(|row| backticked(&first_cell(&row.text)))
                    .collect();
                doc.columns.push(ColumnList {
                    line: line.no,
                    of: subject.clone(),
                    ordered: rows.iter().all(|names| names.len() == 1),
                    names: rows.concat(),
                });
            }
            i = end;
            continue;
        }
        let starts_item =
            i == 0 || lines[i - 1].text.trim().is_empty() || line.text.starts_with("- ");
        if section == Section::Views && starts_item && !line.text.trim().is_empty() {
            // One paragraph or list item, joined into one line.
            let end = (i + 1..lines.len())
                .find(|&j| {
                    let t = &lines[j].text;
                    lines[j].code
                        || t.trim().is_empty()
                        || t.starts_with("- ")
                        || t.starts_with('|')
                        || t.starts_with('#')
                })
                .unwrap_or(lines.len());
            let item: Vec<&str> = lines[i..end].iter().map(|l| l.text.trim()).collect();
            let item = item.join(" ");
            let body = item.strip_prefix("- ").unwrap_or(&item);
            let leading = body.starts_with('`').then(|| backticked(body)[0].clone());
            if let Some(view) = &leading {
                doc.views.push((line.no, view.clone()));
                subject = Some(view.clone());
            }
            // "… with the columns `a`, `b` and `c`." and "Its columns are those of `t`: `a`, …".
            for sentence in body.split(". ") {
                let Some(pos) = sentence
                    .split_whitespace()
                    .position(|w| bare(w) == "columns")
                else {
                    continue;
                };
                let before: Vec<&str> = sentence.split_whitespace().take(pos).collect();
                let after: Vec<&str> = sentence.split_whitespace().skip(pos + 1).collect();
                let after = after.join(" ");
                let list = after
                    .split_once(':')
                    .map_or(after.as_str(), |(_, list)| list);
                let names = backticked(list);
                if names.len() < 2 {
                    continue;
                }
                let named_before = backticked(&before.join(" ")).pop();
                doc.columns.push(ColumnList {
                    line: line.no,
                    of: named_before.or_else(|| leading.clone()),
                    names,
                    ordered: true,
                });
            }
            i = end;
            continue;
        }
        i += 1;
    }
    doc
}

fn compare_names(
    what: &str,
    documented: &[(usize, String)],
    actual: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (no, name) in documented {
        if !seen.insert(name.as_str()) {
            problems.push(format!(
                "{}: documents the {what} `{name}` a second time",
                at(*no)
            ));
        } else if !actual.contains(name) {
            problems.push(format!(
                "{}: documents the {what} `{name}`, which a fresh ledger does not have",
                at(*no)
            ));
        }
    }
    for name in actual {
        if !seen.contains(name.as_str()) {
            problems.push(format!(
                "{DOC} does not document the {what} `{name}` of a fresh ledger"
            ));
        }
    }
    problems
}

#[test]
fn the_doc_documents_exactly_the_tables_and_views_of_a_fresh_ledger() -> TestResult {
    let lines = doc_lines();
    let doc = documented(&lines);
    let ledger = FreshLedger::new();
    let mut tables = ledger.objects("table");
    let mut problems = Vec::new();
    if !tables.remove(HISTORY) {
        problems.push(format!("a fresh ledger has no table {HISTORY}"));
    }
    if doc.history_heading.is_none() {
        problems.push(format!("{DOC} has no `## ` heading that names `{HISTORY}`"));
    }
    problems.extend(compare_names("table", &doc.tables, &tables));
    problems.extend(compare_names("view", &doc.views, &ledger.objects("view")));
    fail_with(problems)
}

#[test]
fn every_column_list_in_the_doc_is_the_columns_of_its_table_or_view() -> TestResult {
    let lines = doc_lines();
    let doc = documented(&lines);
    let ledger = FreshLedger::new();
    let mut problems = Vec::new();
    for list in &doc.columns {
        let Some(of) = &list.of else {
            problems.push(format!(
                "{}: a column list outside the section of a table or view",
                at(list.line)
            ));
            continue;
        };
        let actual = ledger.columns(of);
        let same = if list.ordered {
            list.names == actual
        } else {
            list.names.iter().collect::<BTreeSet<_>>() == actual.iter().collect::<BTreeSet<_>>()
                && list.names.len() == actual.len()
        };
        if !same {
            let order = if list.ordered { ", in this order" } else { "" };
            problems.push(format!(
                "{}: documents the columns of `{of}` as {:?}, but a fresh ledger has {actual:?}{order}",
                at(list.line),
                list.names
            ));
        }
    }
    // Every table has its column table; a view's columns may be described in prose instead.
    let tables = doc.tables.iter().map(|(no, t)| (*no, t.as_str()));
    let history = doc.history_heading.map(|no| (no, HISTORY));
    for (no, table) in tables.chain(history) {
        let lists = doc
            .columns
            .iter()
            .filter(|c| c.of.as_deref() == Some(table))
            .count();
        if lists != 1 {
            problems.push(format!(
                "{}: the section of `{table}` has {lists} column tables; it needs exactly one",
                at(no)
            ));
        }
    }
    fail_with(problems)
}
