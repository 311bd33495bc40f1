//! The read-only classifier measured against peers' test suites: Codex's
//! safe-command tests and Dippy's per-command tests, as data in tests/peers/ (its README says
//! where each case came from, at which commit, and how it was turned into a line).
//!
//! For each case: the peer's verdict (`safe`: approved as read-only or safe; `unsafe`: asked,
//! refused or denied) and ours. Two rules hold:
//!
//! * no line a peer refuses is read-only for us unless tests/peers/looser.tsv argues why the
//!   peer is wrong there (and every argued line is still one we are looser on);
//! * at least 80% of the lines that Dippy calls safe and no peer calls unsafe are read-only for
//!   us.
//!
//! The counts per peer (agree, stricter, looser) are printed with `--nocapture`.

use std::collections::{BTreeMap, BTreeSet};

use session_ledger::classify;

/// One peer case.
struct Case {
    line: String,
    safe: bool,
    source: String,
}

fn load(peer: &str) -> Vec<Case> {
    let path = format!("{}/tests/peers/{peer}.tsv", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("line\tpeer\tsource"), "{path}");
    lines
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let [line, verdict, source] = cols[..] else {
                panic!("{path}: {l:?}");
            };
            assert!(matches!(verdict, "safe" | "unsafe"), "{path}: {l:?}");
            Case {
                line: line.to_owned(),
                safe: verdict == "safe",
                source: source.to_owned(),
            }
        })
        .collect()
}

const PEERS: [&str; 2] = ["codex", "dippy"];

/// The argued lines: peer, line, and why we call it read-only where the peer does not.
fn argued() -> BTreeMap<(String, String), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/looser.tsv");
    let text = std::fs::read_to_string(path).expect("tests/peers/looser.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("peer\tline\targument"));
    lines
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let [peer, line, argument] = cols[..] else {
                panic!("looser.tsv: {l:?}");
            };
            assert!(
                argument.len() > 20,
                "looser.tsv: an argument, please: {l:?}"
            );
            ((peer.to_owned(), line.to_owned()), argument.to_owned())
        })
        .collect()
}

#[test]
fn no_line_a_peer_refuses_is_read_only_unless_argued() {
    let argued = argued();
    let mut looser = BTreeSet::new();
    let mut unargued = Vec::new();
    for peer in PEERS {
        let cases = load(peer);
        let (mut agree, mut stricter, mut loose) = (0, 0, 0);
        for case in &cases {
            let ours = classify(&case.line).read_only;
            match (case.safe, ours) {
                (a, b) if a == b => agree += 1,
                (true, false) => stricter += 1,
                _ => {
                    loose += 1;
                    let key = (peer.to_owned(), case.line.clone());
                    if !argued.contains_key(&key) {
                        unargued.push(format!("{peer}\t{}\t({})", case.line, case.source));
                    }
                    looser.insert(key);
                }
            }
        }
        println!(
            "{peer}: {} cases; agree {agree}, stricter {stricter}, looser {loose}",
            cases.len()
        );
    }
    assert!(
        unargued.is_empty(),
        "read-only for us, refused by the peer, and not argued in tests/peers/looser.tsv:\n{}",
        unargued.join("\n")
    );
    let stale: Vec<_> = argued.keys().filter(|k| !looser.contains(*k)).collect();
    assert!(stale.is_empty(), "argued but no longer looser: {stale:?}");
}

#[test]
fn most_lines_dippy_calls_safe_are_read_only() {
    let unsafe_anywhere: BTreeSet<String> = PEERS
        .iter()
        .flat_map(|p| load(p))
        .filter(|c| !c.safe)
        .map(|c| c.line)
        .collect();
    let safe: Vec<Case> = load("dippy")
        .into_iter()
        .filter(|c| c.safe && !unsafe_anywhere.contains(&c.line))
        .collect();
    let read_only = safe.iter().filter(|c| classify(&c.line).read_only).count();
    let share = read_only as f64 / safe.len() as f64;
    println!(
        "dippy safe and no peer unsafe: {} lines, {read_only} read-only for us ({:.1}%)",
        safe.len(),
        share * 100.0
    );
    assert!(share >= 0.80, "{:.1}% < 80%", share * 100.0);
}
