//! Every query in docs/audit.md, run through the real sqlite3 shell (read-only) against a
//! ledger built by the page's own commands, must print exactly what the page says; the psql
//! form the page gives of a query must print the same against the same commands' ledger on
//! PostgreSQL. The page's Python recipe must recompute every decision batch's root from the
//! records, on both engines, and its worked example of a record's leaf must be what the library
//! hashes.

#[macro_use]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{cookbook, run_sqlite3, Engine, Store, TestResult};
use sha2::{Digest, Sha256};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit.md");

fn doc() -> String {
    std::fs::read_to_string(DOC).expect("docs/audit.md")
}

/// The body of the first block fenced as "```{fence}\n".
fn fenced(doc: &str, fence: &str) -> String {
    let open = format!("```{fence}\n");
    let start = doc
        .find(&open)
        .unwrap_or_else(|| panic!("docs/audit.md has no {open:?}"))
        + open.len();
    let end = doc[start..].find("```").expect("a closing fence") + start;
    doc[start..end].to_owned()
}

/// Builds the cookbook's ledger at `target` (a file's path or a database's URL) with the page's
/// commands, run by bash as the page shows them.
fn build_cookbook(target: &str, commands: &str) {
    let script =
        format!("set -e\nsession-ledger() {{ \"$BIN\" --db \"$DB\" \"$@\"; }}\n{commands}");
    let built = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("BIN", env!("CARGO_BIN_EXE_session-ledger"))
        .env("DB", target)
        .env_remove("SESSION_LEDGER_DB")
        .env_remove("SESSION_LEDGER_ACTOR")
        .output()
        .expect("bash runs");
    assert!(
        built.status.success(),
        "the cookbook's commands failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
}

/// Runs `script` with bash in `dir`, with `vars` set; its stdout.
fn bash_in(dir: &Path, script: &str, vars: &[(&str, &str)]) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -eo pipefail\n{script}"))
        .current_dir(dir)
        .envs(vars.iter().copied())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}\nfailed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Each `decisions.integrate` audit row of `store`'s ledger: its seq and the root its detail
/// holds.
fn batches(store: &Store) -> Vec<(String, String)> {
    let sql = match store.engine {
        Engine::Sqlite => {
            "SELECT seq, json_extract(detail, '$.root') FROM audit
              WHERE kind = 'decisions.integrate' ORDER BY seq"
        }
        Engine::Postgres => {
            "SELECT seq, detail::json ->> 'root' FROM audit
              WHERE kind = 'decisions.integrate' ORDER BY seq"
        }
    };
    store
        .query(sql)
        .into_iter()
        .map(|row| {
            (
                row[0].clone().expect("a seq"),
                row[1].clone().expect("a root"),
            )
        })
        .collect()
}

/// Runs the page's recipe (its Python, and the shell lines that feed it, fenced as
/// "```sh {fence}") on every batch of `store`'s ledger, in `store`'s folder: each prints the
/// root the batch's audit row holds.
fn every_batch_root_is_recomputed_by_the_recipe(store: &Store, fence: &str) {
    let doc = doc();
    std::fs::write(
        store.dir.path().join("batch_root.py"),
        fenced(&doc, "python batch-root"),
    )
    .expect("write the recipe");
    let lines = fenced(&doc, &format!("sh {fence}"));
    let found = batches(store);
    assert!(!found.is_empty(), "the cookbook integrates its decisions");
    let url = match store.engine {
        Engine::Sqlite => String::new(),
        Engine::Postgres => store.target(),
    };
    for (batch, root) in found {
        let printed = bash_in(
            store.dir.path(),
            &lines.replace("BATCH", &batch),
            &[("AUDITOR_URL", &url)],
        );
        let printed: Vec<&str> = printed.lines().collect();
        assert!(
            !printed.is_empty(),
            "the recipe printed nothing for batch {batch}"
        );
        for line in printed {
            assert_eq!(line, root, "the recipe on batch {batch}");
        }
    }
}

#[test]
fn every_documented_query_prints_what_the_cookbook_says() -> TestResult {
    let store = Store::on(Engine::Sqlite).expect("SQLite is always there");
    let db = store.path();
    let (commands, queries) = cookbook();
    build_cookbook(&db.display().to_string(), &commands);
    let head = Command::new(env!("CARGO_BIN_EXE_session-ledger"))
        .arg("--db")
        .arg(&db)
        .args(["audit", "head"])
        .output()?;
    let head = String::from_utf8(head.stdout)?;
    let (head_seq, head_hash) = head.trim().split_once(':').expect("SEQ:HASH");

    let names: Vec<&str> = queries.iter().map(|q| q.name.as_str()).collect();
    assert!(names.len() >= 10, "the cookbook lost queries: {names:?}");
    for query in &queries {
        // Placeholders (<...>) stand for the head an auditor saved: use this ledger's.
        let params: Vec<(String, String)> = query
            .params
            .iter()
            .map(|(k, v)| match (k.as_str(), v.contains('<')) {
                (":seq", true) => (k.clone(), head_seq.to_owned()),
                (":hash", true) => (k.clone(), format!("'{head_hash}'")),
                _ => (k.clone(), v.clone()),
            })
            .collect();
        let output = run_sqlite3(&db, &query.sql, &params);
        assert_eq!(
            output, query.expected,
            "query {} printed something else",
            query.name
        );
    }
    every_batch_root_is_recomputed_by_the_recipe(&store, "batch-root");
    Ok(())
}

/// One query's psql form on the page: its name, its SQL, and its parameters as psql variables.
struct PsqlQuery {
    name: String,
    sql: String,
    variables: Vec<(String, String)>,
}

/// The blocks fenced as "```sql psql".
fn psql_queries(doc: &str) -> Vec<PsqlQuery> {
    let open = "```sql psql\n";
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(start) = doc[at..].find(open) {
        let body = at + start + open.len();
        let end = doc[body..].find("```").expect("a closing fence") + body;
        let sql = doc[body..end].to_owned();
        let name = sql
            .lines()
            .find_map(|l| l.strip_prefix("-- name: "))
            .expect("every psql query has a name")
            .to_owned();
        // `-- param: :id = 'worker-1'` is the psql variable `id`, the text `worker-1`.
        let variables = sql
            .lines()
            .filter_map(|l| l.strip_prefix("-- param: :"))
            .map(|p| {
                let (k, v) = p.split_once(" = ").expect("-- param: :name = value");
                (k.to_owned(), v.trim_matches('\'').to_owned())
            })
            .collect();
        found.push(PsqlQuery {
            name,
            sql,
            variables,
        });
        at = end;
    }
    found
}

/// What psql prints for `query` on the ledger at `url`: unaligned, a header line, no footer, as
/// the sqlite3 shell prints with `-header`.
fn run_psql(url: &str, query: &PsqlQuery) -> String {
    use std::io::Write;
    let mut command = Command::new("psql");
    command.arg(url).args([
        "-X",
        "-q",
        "-A",
        "-P",
        "footer=off",
        "-v",
        "ON_ERROR_STOP=1",
    ]);
    for (name, value) in &query.variables {
        command.arg("-v").arg(format!("{name}={value}"));
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(query.sql.as_bytes())
        .expect("write the query");
    let out = child.wait_with_output().expect("psql's output");
    assert!(
        out.status.success(),
        "psql failed on {}: {}",
        query.name,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn every_psql_form_of_a_query_prints_on_postgres_what_the_cookbook_says() -> TestResult {
    let Some(store) = Store::on(Engine::Postgres) else {
        return Ok(());
    };
    let (commands, queries) = cookbook();
    build_cookbook(&store.target(), &commands);
    let psql = psql_queries(&doc());
    assert!(psql.len() >= 4, "the page lost its psql forms");
    for query in &psql {
        let expected = &queries
            .iter()
            .find(|q| q.name == query.name)
            .unwrap_or_else(|| panic!("the psql form {} has no sqlite3 query", query.name))
            .expected;
        assert_eq!(
            &run_psql(&store.target(), query),
            expected,
            "the psql form of {} printed something else",
            query.name
        );
    }
    every_batch_root_is_recomputed_by_the_recipe(&store, "batch-root-psql");
    Ok(())
}

/// The page's worked example of a record's leaf: each `name: value` line of its block.
fn leaf_example() -> Vec<(String, String)> {
    fenced(&doc(), "text leaf-example")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(": ").expect("name: value");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn the_leaf_the_page_gives_for_a_record_is_what_the_library_hashes(engine: Engine) -> TestResult {
    let example = leaf_example();
    let field = |name: &str| {
        example
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("the example has no {name}"))
    };
    // The page's bytes hash to the page's leaf ...
    let mut hash = Sha256::new();
    hash.update([0u8]);
    hash.update(field("leaf_bytes").as_bytes());
    let leaf: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(leaf, field("leaf"));
    // ... and the record, written by hand and integrated alone, is a batch whose root is that
    // leaf.
    let f = fixture!(engine);
    let columns = [
        "record",
        "at",
        "session_id",
        "tree",
        "tool",
        "input",
        "input_bytes",
        "input_sha256",
        "verdict",
        "authority",
        "reason",
        "asked_by",
        "tool_use_id",
    ];
    let values: Vec<String> = columns
        .iter()
        .map(|c| match field(c) {
            "NULL" => "NULL".to_owned(),
            v if *c == "input_bytes" => v.to_owned(),
            v => format!("'{}'", v.replace('\'', "''")),
        })
        .collect();
    f.exec(&format!(
        "INSERT INTO decisions ({}) VALUES ({})",
        columns.join(", "),
        values.join(", ")
    ))?;
    let done = f.ledger.integrate_decisions("alice")?;
    assert_eq!((done.records, done.batches), (1, 1));
    let roots: Vec<String> = batches(&f).into_iter().map(|(_, root)| root).collect();
    assert_eq!(roots, [field("leaf")]);
    // The page's recipe recomputes it too.
    let fence = match engine {
        Engine::Sqlite => "batch-root",
        Engine::Postgres => "batch-root-psql",
    };
    every_batch_root_is_recomputed_by_the_recipe(&f, fence);
    Ok(())
}

engine_tests! {
    the_leaf_the_page_gives_for_a_record_is_what_the_library_hashes,
}
