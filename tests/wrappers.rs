//! What a command does, against the library on both engines: a wildcard never
//! stands for a word that runs a program or writes a file, wrappers are read through, a pattern
//! that admits any command is refused unless the operator says so, the ledger classifies
//! read-only commands for `trust_reads`, and stored patterns whose meaning narrowed are listed.
//! The classifier's own rules are tested in `src/commands/`, and against peers in
//! tests/peers.rs.

#[macro_use]
mod common;

use common::{Engine, TestResult};
use session_ledger::{
    Decision, Effect, Error, InputError, NewPattern, PostureLevel, ReadOnly, Reason, Verdict,
};

/// The table of the issue: a pattern an operator writes every day, a line that abuses it, and
/// the word that must make the line ask (or `None` when the pattern is refused at add, naming
/// the wrapper).
const TABLE: &[(&str, &str, Option<&str>)] = &[
    ("git *", "git -c core.pager='rm -rf /' log", Some("-c")),
    ("find *", "find . -exec rm -rf / ';'", Some("-exec")),
    ("timeout *", "timeout 5 rm -rf /", None),
    ("env *", "env rm -rf /", None),
    ("sudo *", "sudo rm -rf /", None),
    ("bash *", "bash -c 'rm -rf /'", None),
    ("xargs *", "xargs rm -rf", None),
];

fn kept_word(d: &Decision) -> Option<&str> {
    match &d.reason {
        Reason::Nothing { kept: Some(k), .. } => Some(k.word.as_str()),
        _ => None,
    }
}

fn every_row_of_the_table_asks_naming_the_word_or_is_refused_at_add(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    for (n, (pattern, line, word)) in TABLE.iter().enumerate() {
        let id = format!("w{n}");
        f.ledger.create_root(&id, "alice")?;
        match (f.ledger.add_pattern(&id, pattern, "alice"), word) {
            (Ok(_), Some(word)) => {
                let d = f.ledger.decide(&id, line, false)?;
                assert_eq!(d.verdict, Verdict::Ask, "{line}: {d:?}");
                assert_eq!(kept_word(&d), Some(*word), "{line}: {d:?}");
            }
            (Err(Error::Input(InputError::InvalidPattern { problem, .. })), None) => {
                let program = pattern.split(' ').next().unwrap_or_default();
                assert!(
                    problem.contains("admits any command"),
                    "{pattern}: {problem}"
                );
                assert!(problem.contains(program), "{pattern}: {problem}");
                assert!(f.ledger.patterns(&id)?.is_empty());
                // Stored anyway, by choice: the line still asks, naming the program run.
                let any = NewPattern::new().admit_any_command(true);
                f.ledger.add_pattern_checked(&id, pattern, "alice", &any)?;
                let d = f.ledger.decide(&id, line, false)?;
                assert_eq!(d.verdict, Verdict::Ask, "{line}: {d:?}");
                assert!(kept_word(&d).is_some(), "{line}: {d:?}");
            }
            (other, _) => panic!("{pattern}: {other:?}"),
        }
    }
    Ok(())
}

fn a_pattern_that_names_the_word_admits_it(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger
        .add_pattern("w", "git -c core.pager=less *", "alice")?;
    f.ledger
        .add_pattern("w", "sudo systemctl restart nginx", "alice")?;
    for line in [
        "git -c core.pager=less log -3",
        "sudo systemctl restart nginx",
    ] {
        assert_eq!(
            f.ledger.decide("w", line, false)?.verdict,
            Verdict::Approve,
            "{line}"
        );
    }
    for line in [
        "git -c core.pager=sh log",
        "sudo systemctl restart sshd",
        "sudo rm -rf /",
    ] {
        assert_eq!(
            f.ledger.decide("w", line, false)?.verdict,
            Verdict::Ask,
            "{line}"
        );
    }
    Ok(())
}

fn transparent_wrappers_are_admitted_by_the_inner_commands_pattern(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger.add_pattern("w", "npm test", "alice")?;
    f.ledger.add_pattern("w", "git status", "alice")?;
    for line in [
        "timeout 5 npm test",
        "nice -n 5 npm test",
        "nohup npm test",
        "time npm test",
        "stdbuf -oL npm test",
        "command npm test",
        "env npm test",
        "timeout 5 nice npm test",
        "bash -c 'npm test'",
        "sh -lc 'npm test && git status'",
    ] {
        let d = f.ledger.decide("w", line, false)?;
        assert_eq!(d.verdict, Verdict::Approve, "{line}: {d:?}");
        let Reason::Pattern { parts, .. } = &d.reason else {
            panic!("{line}: {d:?}");
        };
        assert!(parts.iter().all(|p| p.inner.is_some()), "{line}: {d:?}");
    }
    for line in [
        // Opaque wrappers: only a pattern naming them admits them.
        "sudo npm test",
        "xargs npm test",
        "watch npm test",
        "exec npm test",
        // An assignment is a word of the inner command: `npm test` does not admit it.
        "env CI=1 npm test",
        // Every command of a script must be admitted on its own.
        "bash -c 'npm test; rm -rf /'",
        // Words after the script make it something else.
        "bash -c 'npm test' x",
        // The script's constructs are refused as the line's would be.
        "bash -c 'npm test $(id)'",
    ] {
        let d = f.ledger.decide("w", line, false)?;
        assert_eq!(d.verdict, Verdict::Ask, "{line}: {d:?}");
    }
    assert!(matches!(
        f.ledger
            .decide("w", "bash -c 'npm test $(id)'", false)?
            .reason,
        Reason::Nothing {
            refused: Some(_),
            ..
        }
    ));
    Ok(())
}

fn the_ledger_classifies_for_trust_reads_and_names_the_word_that_asks(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger.grant("w", PostureLevel::TrustReads, "alice")?;
    for line in ["git log -3", "ls -la | grep x", "timeout 5 cat README.md"] {
        let d = f.ledger.decide("w", line, ReadOnly::Classify)?;
        assert_eq!(d.verdict, Verdict::Approve, "{line}: {d:?}");
        assert!(
            matches!(&d.reason, Reason::TrustReads { classification: Some(c), .. } if c.read_only),
            "{line}: {d:?}"
        );
        // Without classification, and the caller not saying so, it asks.
        assert_eq!(f.ledger.decide("w", line, false)?.verdict, Verdict::Ask);
    }
    for (line, word, effect) in [
        ("find . -delete", "-delete", Effect::Deletes),
        ("git push", "push", Effect::Writes),
        ("sed -i s/a/b/ f", "-i", Effect::Writes),
        ("cat x > y", ">", Effect::Construct),
    ] {
        let d = f.ledger.decide("w", line, ReadOnly::Classify)?;
        assert_eq!(d.verdict, Verdict::Ask, "{line}: {d:?}");
        let Reason::Nothing {
            classification: Some(c),
            reads_only: true,
            ..
        } = &d.reason
        else {
            panic!("{line}: {d:?}");
        };
        assert!(c.word.starts_with(word), "{line}: {c:?}");
        assert_eq!(c.effect, Some(effect), "{line}");
    }
    // Full trust needs no classification, and none is made.
    f.ledger.grant("w", PostureLevel::Trust, "alice")?;
    let d = f.ledger.decide("w", "git push", ReadOnly::Classify)?;
    assert!(matches!(d.reason, Reason::Trust { .. }));
    Ok(())
}

fn stored_patterns_whose_meaning_narrowed_are_listed_for_review(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    f.ledger.create_root("quiet", "alice")?;
    f.ledger.add_pattern("w", "git *", "alice")?;
    f.ledger.add_pattern("w", "npm test", "alice")?;
    let any = NewPattern::new().admit_any_command(true);
    f.ledger.add_pattern_checked("w", "sudo *", "bob", &any)?;
    f.ledger.add_pattern("quiet", "cargo test *", "alice")?;
    let reviews = f.ledger.review_patterns()?;
    let listed: Vec<(&str, &str, &str)> = reviews
        .iter()
        .map(|r| (r.session.as_str(), r.pattern.as_str(), r.added_by.as_str()))
        .collect();
    assert_eq!(listed, [("w", "git *", "alice"), ("w", "sudo *", "bob")]);
    assert!(reviews[0].reason.contains("-c"), "{}", reviews[0].reason);
    assert!(
        reviews[1].reason.contains("refused"),
        "{}",
        reviews[1].reason
    );
    // An ended session's patterns approve nothing, so they are not listed.
    f.ledger.end("w", "alice")?;
    assert!(f.ledger.review_patterns()?.is_empty());
    Ok(())
}

fn a_wildcard_where_a_destructive_program_takes_its_target_warns(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("w", "alice")?;
    for (pattern, warns) in [
        ("rm -rf build/*", true),
        ("chmod -R 755 *", true),
        ("chmod 644 *", false),
        ("npm test *", false),
    ] {
        let added = f
            .ledger
            .add_pattern_checked("w", pattern, "alice", &NewPattern::new())?;
        assert!(added.added);
        assert_eq!(!added.warnings.is_empty(), warns, "{pattern}: {added:?}");
    }
    Ok(())
}

engine_tests! {
    every_row_of_the_table_asks_naming_the_word_or_is_refused_at_add,
    a_pattern_that_names_the_word_admits_it,
    transparent_wrappers_are_admitted_by_the_inner_commands_pattern,
    the_ledger_classifies_for_trust_reads_and_names_the_word_that_asks,
    stored_patterns_whose_meaning_narrowed_are_listed_for_review,
    a_wildcard_where_a_destructive_program_takes_its_target_warns,
}
