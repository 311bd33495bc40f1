//! Replays the fuzz corpora as ordinary tests.
//!
//! Every file in `fuzz/corpus/<target>/` goes through the same property checks as the cargo-fuzz
//! target of that name (`fuzz/src/lib.rs`, included here as a module), so the inputs the fuzzer
//! found interesting, and any input that once broke a property, run under plain `cargo test` on
//! stable Rust, without libFuzzer. See `fuzz/README.md`.

#[path = "../fuzz/src/lib.rs"]
mod checks;

use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A fuzz target's property check.
type Check = fn(&[u8]) -> checks::Outcome;

/// Each fuzz target, with its check.
const TARGETS: [(&str, Check); 4] = [
    ("ids", checks::ids),
    ("cli_inputs", checks::cli_inputs),
    ("patterns", checks::patterns),
    ("checkpoints", checks::checkpoints),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `fuzz/corpus/<target>/`, sorted.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join("corpus").join(target);
    let entries = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every file of the target's corpus through its check; fails naming each input that
/// broke a property or panicked.
fn replay(target: &str) {
    let check = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, check)| *check)
        .expect("a known target");
    let files = corpus(target);
    assert!(
        files.len() >= 10,
        "fuzz/corpus/{target}/ has {} files; it should hold at least the seed inputs",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let data = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        match panic::catch_unwind(AssertUnwindSafe(|| check(&data))) {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => failures.push(format!("{}: {problem}", path.display())),
            Err(_) => failures.push(format!("{}: panicked (message above)", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} inputs in fuzz/corpus/{target}/ break a property:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn every_saved_id_input_keeps_the_id_and_spawned_id_properties() {
    replay("ids");
}

#[test]
fn every_saved_command_line_input_parses_only_what_the_docs_allow() {
    replay("cli_inputs");
}

#[test]
fn every_saved_pattern_input_admits_only_plain_commands_each_matched_on_its_own() {
    replay("patterns");
}

#[test]
fn every_saved_checkpoint_receipt_and_key_input_reads_back_or_is_refused_as_malformed() {
    replay("checkpoints");
}

#[test]
fn every_fuzz_target_has_a_corpus_that_this_test_replays() {
    let dir = fuzz_dir().join("fuzz_targets");
    let mut found: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a target entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    found.sort();
    let mut replayed: Vec<String> = TARGETS.iter().map(|(name, _)| (*name).to_owned()).collect();
    replayed.sort();
    assert_eq!(found, replayed, "each fuzz target needs a replay test here");
    for name in &replayed {
        assert!(
            fuzz_dir().join("corpus").join(name).is_dir(),
            "fuzz/corpus/{name}/ is missing"
        );
    }
}
