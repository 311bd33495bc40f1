//! What a command does, on the command line: `classify`, `decide --classify`, the
//! line after `--` judged as typed, `pattern add` refusing a pattern that admits any command
//! (and `--admit-any-command`), its warnings, and `pattern review`. The rules themselves are
//! tested against the library in tests/wrappers.rs.
//!
//! Every test runs the real binary on a ledger in a temporary directory, and once more, as
//! `postgres::NAME`, on a ledger in a PostgreSQL schema of its own.

#[macro_use]
mod common;

use common::cli::*;
use common::Engine;

/// A worker holding trust_reads and the patterns `git *` and `npm test`.
fn worker_on(engine: Engine) -> TestResult<Option<Fixture>> {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(None);
    };
    for args in [
        &["create", "w", "--actor", "alice"][..],
        &["trust", "w", "--reads", "--actor", "alice"],
        &["pattern", "add", "w", "git *", "--actor", "alice"],
        &["pattern", "add", "w", "npm test", "--actor", "alice"],
    ] {
        ok(&fx, args)?;
    }
    Ok(Some(fx))
}

fn classify_prints_the_verdict_and_the_word_that_decided(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    assert_eq!(
        ok(
            &fx,
            &["classify", "--", "find . -name x -exec rm -rf / ';'"]
        )?,
        "not read-only: \"-exec\": find runs a program for each file it finds\n"
    );
    assert_eq!(
        ok(&fx, &["classify", "--", "timeout 5 cat README.md"])?,
        "read-only: \"cat\" known to only read, read through timeout\n"
    );
    assert_eq!(
        ok(&fx, &["classify", "--", "git status && rm -rf x"])?,
        "not read-only: \"rm\": a program the classifier does not know to be read-only\n\
         \x20 part 1: \"git status\": read-only: \"git\" known to only read\n\
         \x20 part 2: \"rm -rf x\": not read-only: \"rm\": a program the classifier does not \
         know to be read-only\n"
    );
    let v = ok_json(&fx, &["classify", "--", "git log -3"])?;
    assert_eq!(v["read_only"], true, "{v}");
    let v = ok_json(&fx, &["classify", "--", "sort", "-o", "out", "in"])?;
    assert_eq!(v["read_only"], false, "{v}");
    assert_eq!(v["word"], "-o", "{v}");
    assert_eq!(v["effect"], "writes_to", "{v}");
    Ok(())
}

fn the_words_after_the_dashes_are_judged_as_typed(engine: Engine) -> TestResult {
    let Some(fx) = worker_on(engine)? else {
        return Ok(());
    };
    // Several arguments are the line's words: `>` is a word here, not a redirection.
    let v = ok_json(
        &fx,
        &["decide", "w", "--", "git", "status", ">", "/etc/passwd"],
    )?;
    assert_eq!(v["verdict"], "approve", "{v}");
    assert_eq!(
        v["reason"]["parts"][0]["text"], "git status '>' /etc/passwd",
        "{v}"
    );
    // `bash -c 'rm -rf /'` typed as three words is judged as the script `rm -rf /`.
    let out = ok(&fx, &["decide", "w", "--", "bash", "-c", "rm -rf /"])?;
    assert!(out.contains("\"bash -c 'rm -rf /'\""), "{out}");
    assert!(out.starts_with("ask"), "{out}");
    // One argument is the line as the shell reads it.
    let out = ok(&fx, &["decide", "w", "--", "npm test && git status"])?;
    assert!(out.starts_with("approve: every part admitted"), "{out}");
    let out = ok(
        &fx,
        &[
            "pattern", "test", "npm test", "--", "timeout", "5", "npm", "test",
        ],
    )?;
    assert!(out.starts_with("pattern \"npm test\" admits"), "{out}");
    Ok(())
}

fn decide_classify_approves_reads_and_names_the_word_that_asks(engine: Engine) -> TestResult {
    let Some(fx) = worker_on(engine)? else {
        return Ok(());
    };
    assert_eq!(
        ok(&fx, &["decide", "--classify", "w", "--", "ls -la"])?,
        "approve: trust_reads granted by alice; the ledger classifies it read-only (ls)\n"
    );
    let out = ok(&fx, &["decide", "--classify", "w", "--", "sed -i s/a/b/ f"])?;
    assert_eq!(
        out,
        "ask: trust_reads covers read-only commands only, and this one is not: \"-i\": sed -i \
         edits the files it is given; no pattern admits the part \"sed -i s/a/b/ f\" at bytes \
         0..15\n"
    );
    let out = ok(&fx, &["decide", "w", "--", "git -c core.pager=sh log"])?;
    assert!(
        out.ends_with(
            ": the wildcard of pattern \"git *\" does not stand for \"-c\" (git -c sets \
             configuration, which can name a program to run (core.pager, core.fsmonitor, \
             diff.external))\n"
        ),
        "{out}"
    );
    let r = run(
        &fx,
        &["decide", "--classify", "--read-only", "w", "--", "ls"],
    );
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    Ok(())
}

fn pattern_add_refuses_any_command_unless_told_and_review_lists_narrowed_patterns(
    engine: Engine,
) -> TestResult {
    let Some(fx) = worker_on(engine)? else {
        return Ok(());
    };
    let r = refused_unchanged(&fx, &["pattern", "add", "w", "sudo *", "--actor", "alice"])?;
    assert_mentions(&r, "admits any command");
    let out = ok(
        &fx,
        &[
            "pattern",
            "add",
            "w",
            "sudo *",
            "--admit-any-command",
            "--actor",
            "bob",
        ],
    )?;
    assert_eq!(out, "w: pattern \"sudo *\" added\n");
    let out = ok(
        &fx,
        &["pattern", "add", "w", "rm -rf build/*", "--actor", "alice"],
    )?;
    assert_eq!(
        out,
        "w: pattern \"rm -rf build/*\" added\n  warning: a wildcard stands where rm takes its \
         target: the pattern lets this session rm any target, for as long as it stands\n"
    );
    let reviews = ok_json_array(&fx, &["pattern", "review"])?;
    let listed: Vec<&str> = reviews.iter().map(|r| text(&r["pattern"])).collect();
    assert_eq!(listed, ["git *", "sudo *"]);
    let out = ok(&fx, &["pattern", "review"])?;
    assert!(
        out.starts_with(
            "w: pattern \"git *\" (added by alice): its wildcard no longer stands for -c "
        ),
        "{out}"
    );
    Ok(())
}

fn decide_tool_and_test_tool_judge_a_tool_call_by_its_rules(engine: Engine) -> TestResult {
    let Some(fx) = Fixture::init_on(engine)? else {
        return Ok(());
    };
    let root = tempfile::tempdir()?;
    std::fs::create_dir_all(root.path().join("src"))?;
    let root_arg = root.path().to_str().unwrap_or_default();
    ok(&fx, &["create", "r", "--actor", "alice"])?;
    ok(
        &fx,
        &["pattern", "add", "r", "Read(src/**)", "--actor", "alice"],
    )?;
    let decide = |path: &str| {
        ok(
            &fx,
            &[
                "decide", "r", "--tool", "Read", "--path", path, "--root", root_arg,
            ],
        )
    };
    assert_eq!(
        decide("src/lib.rs")?,
        "approve: tool rule \"Read(src/**)\" added by alice\n"
    );
    assert!(decide("../outside")?.starts_with("ask: "));
    assert_eq!(
        ok(
            &fx,
            &[
                "pattern",
                "test-tool",
                "WebFetch(domain:docs.rs)",
                "--tool",
                "WebFetch",
                "--url",
                "https://docs.rs/serde"
            ]
        )?,
        "tool rule \"WebFetch(domain:docs.rs)\" admits this WebFetch call\n"
    );
    let r = refused_unchanged(
        &fx,
        &["pattern", "add", "r", "Bash(npm test:*)", "--actor", "a"],
    )?;
    assert_mentions(&r, "command pattern");
    Ok(())
}

engine_tests! {
    decide_tool_and_test_tool_judge_a_tool_call_by_its_rules,
    classify_prints_the_verdict_and_the_word_that_decided,
    the_words_after_the_dashes_are_judged_as_typed,
    decide_classify_approves_reads_and_names_the_word_that_asks,
    pattern_add_refuses_any_command_unless_told_and_review_lists_narrowed_patterns,
}
