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

/// The subtree of `:root`, walked as the ledger walks it, for statements on a ledger's file.
macro_rules! subtree {
    () => {
        "WITH RECURSIVE subtree (id) AS (
             SELECT id FROM sessions WHERE id = :root
             UNION ALL
             SELECT s.id FROM sessions AS s JOIN subtree ON s.created_by = subtree.id
         )"
    };
}

/// The ledger's cascade statement (`storage::postures::revoke_subtree`), restated: every
/// posture in the subtree of `:root` removed, and what each was.
pub const CASCADE_DELETE: &str = concat!(
    subtree!(),
    "
     DELETE FROM postures WHERE session_id IN (SELECT id FROM subtree)
     RETURNING session_id, posture, source, granted_on,
               (SELECT depth FROM sessions WHERE sessions.id = postures.session_id),
               epoch = (SELECT max(epoch) FROM epochs)"
);
