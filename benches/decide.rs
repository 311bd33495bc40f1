//! `Ledger::decide`, the call made on every tool approval, for a command that is not
//! read-only (`make deploy`), in its two common outcomes. Neither writes.
//!
//! * `inherited_trust`: the session holds `trust` inherited from the root it descends
//!   from, so the answer is approve, with the posture and its chain back to the grant.
//! * `asks`: the session holds no posture and has two command patterns (`npm test *`,
//!   `cargo check`), neither matching, and no scope; every check runs and the answer is ask.
//! * `patterns_200_bytes`: the session holds no posture and 20 command patterns, and the
//!   command line is [`LINE_200`], 200 bytes of six simple commands joined by `&&` and `|`, with
//!   quoted words, each admitted by a different pattern: every part is matched (approve). On a
//!   build before patterns were parsed, the same call matched each pattern against the whole
//!   line as text, and `cargo test *` matched all of it.
//! * `patterns_200_bytes_grammar`: the same line with `--reporter=spec` for
//!   `--reporter spec`: the `=` sends it through the bash grammar (approve).
//! * `patterns_200_bytes_plain`: as `patterns_200_bytes` with [`PLAIN_200`], a line of
//!   six simple commands with nothing for bash to interpret (no quote, `=`, `$`, ...), which the
//!   ledger splits without the grammar (approve).
//! * `line_8_kib_quoted`: about the longest line read by the grammar: `npm test x=y` and
//!   2,044 quoted one-letter arguments, 8,188 bytes (approve).
//! * `line_8_kib`: the same sessions and a line of 8,191 bytes, about the longest that is
//!   parsed: `npm test` and 4,091 one-letter arguments (approve).
//! * `line_100_kb`: the same sessions and a line of 100,000 bytes (ask, unread).
//! * `patterns_200_bytes_reads`: the 20-pattern sessions and [`READ_200`], 200 bytes of eight
//!   reading commands with quoted words, each admitted by a pattern (approve): the baseline of
//!   the next two.
//! * `classify_200_bytes`: sessions holding `trust_reads` and no pattern, [`READ_200`] with
//!   `ReadOnly::Classify`: the ledger classifies every part read-only (approve).
//! * `classify_200_bytes_asks`: the same sessions and [`LINE_200`] with `ReadOnly::Classify`:
//!   `cargo test` is not read-only (ask, naming it).
//!
//! Input, built once before measuring through the fast building handle (see
//! `benches/support/mod.rs`): a root `trusted` granted `trust` with 5,000 sessions below it
//! (fan-out 10, each born with the inherited posture), and a root `asking` with no posture and
//! 5,000 sessions below it, each given the two patterns; a root `patterned` with 1,000 sessions
//! holding the 20 patterns, and a root `reader` granted `trust_reads` with 1,000 sessions. The ledger is settled (SQLite:
//! checkpointed; PostgreSQL: copied into its own schema, vacuumed and analyzed) and opened with
//! the default `Config`. Each measured call decides for the next session of its tree (roots
//! excluded), round-robin.
//!
//! `cargo bench --bench decide`: `decide/sqlite/CASE`, and `decide/postgres/CASE` when
//! `SESSION_LEDGER_BENCH_POSTGRES` names a server.

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use session_ledger::{PostureLevel, PostureSource, ReadOnly, Reason, Verdict};
use support::{Engine, Place};

const PER_TREE: usize = 5_000;
const COMMAND: &str = "make deploy";

/// Sessions with 20 patterns each.
const PATTERNED: usize = 1_000;

/// The 20 patterns.
const PATTERNS: [&str; 20] = [
    "git status",
    "git log *",
    "git diff *",
    "npm test *",
    "npm run lint",
    "cargo test *",
    "cargo build *",
    "cargo clippy *",
    "cargo fmt",
    "ls *",
    "cat *",
    "grep *",
    "make *",
    "echo *",
    "head *",
    "tail *",
    "wc *",
    "pwd",
    "rg *",
    "diff *",
];

/// 200 bytes, six simple commands with nothing for bash to interpret, each admitted by a
/// different one of [`PATTERNS`].
const PLAIN_200: &str =
    "cargo test -p session-ledger --lib commands -- --nocapture --test-threads 20 && \
    git status && npm test -- --grep quoting --reporter spec && \
    ls -la src/storage docs/ && grep -rn pattern src/ | wc -l -c";

/// 200 bytes, six simple commands, each admitted by a different one of [`PATTERNS`].
const LINE_200: &str =
    "cargo test -p session-ledger --lib commands -- --nocapture && git status && \
    npm test -- --grep \"quoting; and operators\" --reporter spec && ls -la src/storage docs && \
    grep -rn 'pattern' src/ | wc -l -c";

/// 200 bytes, eight reading commands with quoted words, each admitted by one of [`PATTERNS`]
/// and each read-only for the classifier.
const READ_200: &str =
    "git log --oneline -20 && ls -la src/storage docs && grep -rn 'pattern' src/ | wc -l -c \
    && cat README.md | head -50 && git diff --stat HEAD~3 && tail -n 20 'docs/design.md' \
    && rg -n classify src/ docs/";

fn decide_on(c: &mut Criterion, engine: Engine) {
    let (place, (trusted, asking, patterned, readers)) = Place::built(engine, |path| {
        let builder = support::builder(path);
        builder.create_root("trusted", support::ACTOR).unwrap();
        builder
            .grant("trusted", PostureLevel::Trust, support::ACTOR)
            .unwrap();
        let trusted = support::grow_tree(&builder, "trusted", PER_TREE, 10);
        builder.create_root("asking", support::ACTOR).unwrap();
        let asking = support::grow_tree(&builder, "asking", PER_TREE, 10);
        for id in &asking {
            for pattern in ["npm test *", "cargo check"] {
                assert!(builder.add_pattern(id, pattern, support::ACTOR).unwrap());
            }
        }
        builder.create_root("patterned", support::ACTOR).unwrap();
        let patterned = support::grow_tree(&builder, "patterned", PATTERNED, 10);
        for id in &patterned {
            for pattern in PATTERNS {
                assert!(builder.add_pattern(id, pattern, support::ACTOR).unwrap());
            }
        }
        builder.create_root("reader", support::ACTOR).unwrap();
        builder
            .grant("reader", PostureLevel::TrustReads, support::ACTOR)
            .unwrap();
        let readers = support::grow_tree(&builder, "reader", PATTERNED, 10);
        (trusted, asking, patterned, readers)
    });
    let ledger = place.open();
    for id in &trusted {
        let d = ledger.decide(id, COMMAND, false).unwrap();
        assert_eq!(d.verdict, Verdict::Approve);
        let Reason::Trust { posture } = d.reason else {
            panic!("{id}: {:?}", d.reason)
        };
        assert_eq!(posture.source, PostureSource::Inherited);
    }
    for id in &asking {
        let d = ledger.decide(id, COMMAND, false).unwrap();
        assert_eq!(d.verdict, Verdict::Ask);
        assert!(
            matches!(d.reason, Reason::Nothing { .. }),
            "{id}: {:?}",
            d.reason
        );
    }

    assert_eq!(LINE_200.len(), 200);
    assert_eq!(PLAIN_200.len(), 200, "{}", PLAIN_200.len());
    let line_8_kib_quoted = format!("npm test x=y {}", "'a'".repeat(2_044).replace("''", "' '"));
    let grammar_200 = LINE_200.replace("--reporter spec", "--reporter=spec");
    let line_8_kib = format!("npm test {}", "a ".repeat(4_091));
    assert_eq!(line_8_kib.len(), 8_191);
    let line_100_kb = format!("npm test {}", "a".repeat(100_000 - 9));
    let d = ledger.decide(&patterned[0], LINE_200, false).unwrap();
    println!("{LINE_200:?} on 20 patterns: {:?}", d.verdict);
    let d = ledger.decide(&patterned[0], &line_8_kib, false).unwrap();
    println!("an 8 KiB line on 20 patterns: {:?}", d.verdict);
    for line in [PLAIN_200, grammar_200.as_str(), line_8_kib_quoted.as_str()] {
        let d = ledger.decide(&patterned[0], line, false).unwrap();
        assert_eq!(d.verdict, Verdict::Approve, "{} bytes", line.len());
    }
    let d = ledger.decide(&patterned[0], &line_100_kb, false).unwrap();
    println!("a 100 KB line on 20 patterns: {:?}", d.verdict);
    assert_eq!(d.verdict, Verdict::Ask);
    assert_eq!(READ_200.len(), 200, "{}", READ_200.len());
    let d = ledger.decide(&patterned[0], READ_200, false).unwrap();
    assert_eq!(d.verdict, Verdict::Approve, "{d:?}");
    for id in &readers {
        let d = ledger.decide(id, READ_200, ReadOnly::Classify).unwrap();
        assert!(matches!(d.reason, Reason::TrustReads { .. }), "{id}: {d:?}");
        let d = ledger.decide(id, LINE_200, ReadOnly::Classify).unwrap();
        assert_eq!(d.verdict, Verdict::Ask, "{id}: {d:?}");
    }

    let mut group = c.benchmark_group("decide");
    for (name, ids) in [("inherited_trust", &trusted), ("asks", &asking)] {
        let mut next = 0;
        group.bench_function(format!("{}/{name}", engine.name()), |b| {
            b.iter(|| {
                let id = &ids[next];
                next = (next + 1) % ids.len();
                black_box(
                    ledger
                        .decide(black_box(id), black_box(COMMAND), false)
                        .unwrap(),
                )
            })
        });
    }
    for (name, line) in [
        ("patterns_200_bytes", LINE_200),
        ("patterns_200_bytes_plain", PLAIN_200),
        ("patterns_200_bytes_grammar", grammar_200.as_str()),
        ("line_8_kib_quoted", line_8_kib_quoted.as_str()),
        ("line_8_kib", line_8_kib.as_str()),
        ("line_100_kb", line_100_kb.as_str()),
        ("patterns_200_bytes_reads", READ_200),
    ] {
        let mut next = 0;
        group.bench_function(format!("{}/{name}", engine.name()), |b| {
            b.iter(|| {
                let id = &patterned[next];
                next = (next + 1) % patterned.len();
                black_box(
                    ledger
                        .decide(black_box(id), black_box(line), false)
                        .unwrap(),
                )
            })
        });
    }
    for (name, line) in [
        ("classify_200_bytes", READ_200),
        ("classify_200_bytes_asks", LINE_200),
    ] {
        let mut next = 0;
        group.bench_function(format!("{}/{name}", engine.name()), |b| {
            b.iter(|| {
                let id = &readers[next];
                next = (next + 1) % readers.len();
                black_box(
                    ledger
                        .decide(black_box(id), black_box(line), ReadOnly::Classify)
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
    drop(ledger);
    drop(place);
}

fn decide(c: &mut Criterion) {
    for engine in support::engines() {
        decide_on(c, engine);
    }
}

criterion_group!(benches, decide);
criterion_main!(benches);
