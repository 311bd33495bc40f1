//! Fuzz target `cli_inputs`. What the command line parses: TTLs, taint classes, posture levels,
//! audit heads, preview tokens, actor and scope names, patterns.
//! The properties are in `fuzz/src/lib.rs`; a failed one is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = session_ledger_fuzz::cli_inputs(data) {
        panic!("property failed: {problem}");
    }
});
