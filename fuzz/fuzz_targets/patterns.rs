//! Fuzz target `patterns`. Command patterns: pattern_matches on every valid pattern.
//! The properties are in `fuzz/src/lib.rs`; a failed one is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = session_ledger_fuzz::patterns(data) {
        panic!("property failed: {problem}");
    }
});
