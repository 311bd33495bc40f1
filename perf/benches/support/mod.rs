//! Input building for the harness: the root crate's bench support (`benches/support/mod.rs`),
//! included rather than copied so that both build their ledgers the same way, and what only the
//! harness uses.

#![allow(dead_code)] // each bench uses a different part

#[path = "../../../benches/support/mod.rs"]
mod product;

pub use product::*;

use session_ledger::{Ledger, PostureLevel};

/// Roots `creator000` to `creator099`, each granted `trust`: creators whose children inherit it.
pub fn trusted_creators(ledger: &Ledger) {
    for c in 0..100 {
        let creator = format!("creator{c:03}");
        ledger.create_root(&creator, ACTOR).expect("creator");
        ledger
            .grant(&creator, PostureLevel::Trust, ACTOR)
            .expect("grant");
    }
}
