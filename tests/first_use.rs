//! What a new user meets first: help that shows no secret and names both engines, override
//! scopes that say what they approve, a label raise that says labels only rise, `--json`
//! listings of one shape (also when empty), columns that stay in line with long ids, the
//! demo's hint for the stock shell, and shell completions that know every command. The documents' own words are held in tests/docs.rs, the
//! reader of a lone copy in tests/readonly.rs, PostgreSQL's messages in tests/postgres_connect.rs.
//!
//! The flows run on both engines (`sqlite::NAME`, `postgres::NAME`).

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::cli::*;
use common::Engine;
use serde_json::Value;

/// A password that must never be printed.
const SECRET: &str = "s3cret-Pa55word-7d41";

/// `session-ledger ARGS...` in `cwd` with `SESSION_LEDGER_DB` holding a URL with [`SECRET`].
fn with_secret_url(cwd: &Path, args: &[&str]) -> Run {
    let url = format!("postgresql://ledger_app:{SECRET}@127.0.0.1:9/session_ledger");
    run_raw_env(cwd, &[("SESSION_LEDGER_DB", url.as_str())], args)
}

/// The names listed under `Commands:` in a help text (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The help of every command and subcommand, with the words that reach it.
fn every_help(cwd: &Path) -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let r = with_secret_url(cwd, &args);
        assert!(r.status.success(), "{args:?}: {}", r.stderr);
        for name in subcommands(&r.stdout) {
            let mut deeper = path.clone();
            deeper.push(name);
            todo.push(deeper);
        }
        found.push((path, r.stdout + &r.stderr));
    }
    found
}

#[test]
fn no_help_text_shows_the_password_in_session_ledger_db() -> TestResult {
    let dir = tempfile::tempdir()?;
    let helps = every_help(dir.path());
    // The top level, every command, and the subcommands of pattern, scope, epoch and audit.
    assert!(helps.len() > 20, "{} help texts", helps.len());
    for (path, help) in &helps {
        assert!(
            !help.contains(SECRET),
            "`{} --help` shows the password",
            path.join(" ")
        );
        assert!(help.contains("--db"), "`{} --help`: {help}", path.join(" "));
    }
    Ok(())
}

#[test]
fn no_error_or_json_output_shows_the_password_in_session_ledger_db() -> TestResult {
    let dir = tempfile::tempdir()?;
    for args in [
        &["state", "conductor"][..],
        &["--json", "state", "conductor"],
        &["--json", "tree"],
        &["--json-lines", "audit"],
        &["verify"],
        &["create", "bad id!"],
        &["--json", "create", "x", "--actor", "not valid!"],
        &["--nonsense"],
        &["--json", "revoke", "x"],
    ] {
        let r = with_secret_url(dir.path(), args);
        assert!(
            !r.status.success(),
            "{args:?} reached no server and yet succeeded"
        );
        assert!(!r.stderr.is_empty(), "{args:?}: no error line");
        for text in [&r.stdout, &r.stderr] {
            assert!(
                !text.contains(SECRET),
                "{args:?} shows the password: {text}"
            );
        }
    }
    Ok(())
}

#[test]
fn help_names_both_engines_and_says_db_takes_a_file_or_a_url() -> TestResult {
    let dir = tempfile::tempdir()?;
    let top = run_raw(dir.path(), &["--help"]);
    for engine in ["SQLite", "PostgreSQL"] {
        assert!(
            top.stdout.contains(engine),
            "the help does not name {engine}: {}",
            top.stdout
        );
    }
    let db = top
        .stdout
        .lines()
        .skip_while(|l| !l.contains("--db"))
        .take_while(|l| !l.contains("--json"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        db.contains("file") && db.contains("postgres://"),
        "--db: {db}"
    );
    let check = run_raw(dir.path(), &["check", "--help"]);
    assert!(
        check.stdout.contains("PostgreSQL"),
        "check --help: {}",
        check.stdout
    );
    let init = run_raw(dir.path(), &["init", "--help"]);
    assert!(
        init.stdout.contains("PostgreSQL"),
        "init --help: {}",
        init.stdout
    );
    Ok(())
}

#[test]
fn scope_grant_help_says_first_that_a_scope_approves_every_command() -> TestResult {
    let dir = tempfile::tempdir()?;
    let help = run_raw(dir.path(), &["scope", "grant", "--help"]).stdout;
    let first = help.split(". ").next().unwrap_or_default().to_lowercase();
    assert!(
        first.contains("every command") && first.contains("until"),
        "the first sentence of `scope grant --help`: {first}"
    );
    assert!(
        help.contains("limits nothing") && help.contains("pattern"),
        "{help}"
    );
    Ok(())
}

fn a_scope_approval_says_every_command_until_its_expiry(engine: Engine) -> TestResult {
    let Some(f) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&f, &["create", "boss", "--actor", "alice"])?;
    let granted = ok(
        &f,
        &[
            "scope", "grant", "boss", "deploy", "--ttl", "2h", "--actor", "alice",
        ],
    )?;
    assert!(granted.contains("every command of boss"), "{granted}");
    let decided = ok(&f, &["decide", "boss", "--", "rm", "-rf", "/"])?;
    assert!(decided.starts_with("approve: scope deploy"), "{decided}");
    assert!(decided.contains("every command, until "), "{decided}");
    Ok(())
}

fn raising_a_label_to_a_lower_class_says_that_labels_only_rise(engine: Engine) -> TestResult {
    let Some(f) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    ok(&f, &["create", "boss", "--actor", "alice"])?;
    let lower = ok(
        &f,
        &["raise", "boss", "--taint", "public", "--actor", "alice"],
    )?;
    assert!(lower.contains("labels only rise"), "{lower}");
    assert!(lower.contains("public is below private"), "{lower}");
    let same = ok(
        &f,
        &["raise", "boss", "--taint", "private", "--actor", "alice"],
    )?;
    assert_eq!(same.trim(), "boss: already private; nothing changed");
    let up = ok(
        &f,
        &["raise", "boss", "--taint", "secret", "--actor", "alice"],
    )?;
    assert_eq!(up.trim(), "boss: private -> secret");
    Ok(())
}

fn every_json_listing_is_one_array_also_when_empty(engine: Engine) -> TestResult {
    let Some(f) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert!(ok_json_array(&f, &["tree"])?.is_empty());
    assert!(ok_json_array(&f, &["audit"])?.is_empty());
    ok(&f, &["create", "boss", "--actor", "alice"])?;
    assert!(ok_json_array(&f, &["pattern", "list", "boss"])?.is_empty());
    assert!(ok_json_array(&f, &["scope", "list", "boss"])?.is_empty());
    assert!(ok_json_array(&f, &["audit", "--kind", "pattern.add"])?.is_empty());
    ok(
        &f,
        &["pattern", "add", "boss", "npm test", "--actor", "alice"],
    )?;
    ok(
        &f,
        &[
            "scope", "grant", "boss", "deploy", "--ttl", "1h", "--actor", "alice",
        ],
    )?;
    assert_eq!(ok_json_array(&f, &["pattern", "list", "boss"])?.len(), 1);
    assert_eq!(ok_json_array(&f, &["scope", "list", "boss"])?.len(), 1);
    assert_eq!(ok_json_array(&f, &["tree"])?.len(), 1);
    assert_eq!(ok_json_array(&f, &["audit"])?.len(), 3);
    Ok(())
}

fn json_lines_prints_each_item_of_a_listing_on_a_line_of_its_own(engine: Engine) -> TestResult {
    let Some(f) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    for args in [&["audit"][..], &["tree"]] {
        let mut all = vec!["--json-lines"];
        all.extend_from_slice(args);
        assert_eq!(ok(&f, &all)?, "", "{all:?} of an empty ledger");
    }
    ok(&f, &["create", "boss", "--actor", "alice"])?;
    ok(
        &f,
        &["create", "worker", "--by", "boss", "--actor", "alice"],
    )?;
    let array = ok_json_array(&f, &["audit"])?;
    let lines: Vec<Value> = ok(&f, &["--json-lines", "audit"])?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(lines, array);
    let tree: Vec<Value> = ok(&f, &["--json-lines", "tree"])?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(tree, ok_json_array(&f, &["tree"])?);
    // Anything that is not a listing prints as with --json.
    assert_eq!(
        ok(&f, &["--json-lines", "state", "boss"])?,
        ok(&f, &["--json", "state", "boss"])?
    );
    Ok(())
}

/// The byte offsets at which `needle` starts in each of `lines`.
fn columns_of<'a>(lines: impl Iterator<Item = &'a str>, needle: &str) -> BTreeSet<usize> {
    lines.filter_map(|l| l.find(needle)).collect()
}

fn audit_and_preview_columns_stay_in_line_with_long_ids_and_actors(engine: Engine) -> TestResult {
    let Some(f) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    let long = "conductor-with-a-rather-long-name-for-a-session-0123456789";
    let actor = "operator.with.a.long.name@example.org";
    ok(&f, &["create", long, "--actor", actor])?;
    ok(&f, &["trust", long, "--full", "--actor", "al"])?;
    ok(&f, &["create", "w", "--by", long, "--actor", "al"])?;
    let audit = ok(&f, &["audit"])?;
    // Every row's detail (a JSON object) starts in the same column, whatever the widths before.
    assert_eq!(columns_of(audit.lines(), "{").len(), 1, "{audit}");
    let preview = ok(&f, &["revoke", long, "--preview", "--actor", "al"])?;
    let listed = preview.lines().filter(|l| l.starts_with("  "));
    assert_eq!(columns_of(listed, "depth").len(), 1, "{preview}");
    Ok(())
}

engine_tests!(
    a_scope_approval_says_every_command_until_its_expiry,
    raising_a_label_to_a_lower_class_says_that_labels_only_rise,
    every_json_listing_is_one_array_also_when_empty,
    json_lines_prints_each_item_of_a_listing_on_a_line_of_its_own,
    audit_and_preview_columns_stay_in_line_with_long_ids_and_actors,
);

#[test]
fn the_demo_ends_with_a_shell_command_that_prints_headers_and_columns() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("demo.db");
    let path_text = path.to_str().ok_or("a UTF-8 temp path")?;
    let out = run_raw(dir.path(), &["demo", "--path", path_text]);
    assert!(out.status.success(), "{}", out.stderr);
    let hint = out.stdout.lines().last().unwrap_or_default();
    let command = hint
        .strip_prefix("look inside: ")
        .ok_or_else(|| format!("the demo's last line: {hint}"))?;
    assert!(command.contains("-header -column"), "{command}");
    // Run it as a reader would paste it into a shell.
    let shell = std::process::Command::new("sh")
        .arg("-c")
        .arg(command.replacen("sqlite3", &common::sqlite3_shell().to_string_lossy(), 1))
        .output()?;
    let printed = String::from_utf8_lossy(&shell.stdout);
    assert!(
        shell.status.success(),
        "{}",
        String::from_utf8_lossy(&shell.stderr)
    );
    let mut lines = printed.lines();
    let header = lines.next().unwrap_or_default();
    assert!(
        header.starts_with("path") && header.contains("taint"),
        "{printed}"
    );
    assert!(
        lines.next().unwrap_or_default().starts_with("----"),
        "{printed}"
    );
    assert!(printed.contains("conductor/worker-1"), "{printed}");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// shell completions
// ------------------------------------------------------------------------------------------------

/// `session-ledger completions SHELL` in a fresh directory: it must succeed, print a script and
/// nothing on stderr, and leave no ledger behind.
fn completions(shell: &str) -> TestResult<String> {
    let dir = tempfile::tempdir()?;
    let r = run_raw(dir.path(), &["completions", shell]);
    assert!(r.status.success(), "completions {shell}: {}", r.stderr);
    assert_eq!(r.stderr, "", "completions {shell} printed on stderr");
    assert_eq!(
        std::fs::read_dir(dir.path())?.count(),
        0,
        "completions {shell} wrote a file"
    );
    Ok(r.stdout)
}

/// Every command `--help` lists, and the subcommands of the commands that have some.
fn every_command_name() -> TestResult<Vec<String>> {
    let dir = tempfile::tempdir()?;
    let mut names = Vec::new();
    for path in [
        &[][..],
        &["audit"],
        &["checkpoint"],
        &["pattern"],
        &["scope"],
    ] {
        let mut args = path.to_vec();
        args.push("--help");
        let help = run_raw(dir.path(), &args).stdout;
        names.extend(subcommands(&help));
    }
    assert!(names.len() > 20, "too few commands in the help: {names:?}");
    Ok(names)
}

#[test]
fn completions_bash_prints_a_script_that_names_every_command_and_parses_as_bash() -> TestResult {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let script = completions("bash")?;
    for name in every_command_name()? {
        assert!(
            script.contains(&name),
            "the bash completions do not name {name}"
        );
    }
    assert!(script.contains("complete "), "no `complete` in:\n{script}");
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    bash.stdin
        .take()
        .ok_or("no stdin pipe")?
        .write_all(script.as_bytes())?;
    let parsed = bash.wait_with_output()?;
    assert!(
        parsed.status.success(),
        "bash -n refuses the script: {}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    Ok(())
}

#[test]
fn completions_zsh_and_fish_print_scripts_that_name_every_command() -> TestResult {
    let names = every_command_name()?;
    for shell in ["zsh", "fish"] {
        let script = completions(shell)?;
        assert!(script.contains("session-ledger"), "{shell}:\n{script}");
        for name in &names {
            assert!(
                script.contains(name.as_str()),
                "the {shell} completions do not name {name}"
            );
        }
    }
    Ok(())
}

#[test]
fn completions_refuse_a_shell_they_do_not_know_and_name_the_ones_they_do() -> TestResult {
    let dir = tempfile::tempdir()?;
    let r = run_raw(dir.path(), &["completions", "tcsh"]);
    assert_clean_failure(&r, "completions tcsh");
    assert_eq!(r.status.code(), Some(2), "{}", r.stderr);
    for shell in ["bash", "zsh", "fish"] {
        assert_mentions(&r, shell);
    }
    Ok(())
}
