//! The values that the concept modules and the storage engines hand each other: session ids,
//! sessions, labels, postures, scopes, standing grants, audit rows, and the file check's report.
//!
//! Plain data, with the arithmetic of its own kind (a label's join, whether a posture counts
//! now, the form of a spawned id) and the words each enum is stored as. It owns no rule that
//! reads the ledger, runs no SQL and knows no engine: the concepts (`crate::sessions`,
//! `crate::labels`, ...) build on it, and the storage interface (`crate::storage`) speaks it.

mod audit;
mod check;
mod id;
mod label;
mod posture;
mod scope;
mod session;
mod standing;

pub use audit::{AuditEntry, AuditHead, AuditKind, GENESIS_HASH};
pub use check::{BrokenReference, CheckReport};
pub use id::{
    spawned_chain, spawned_parent, validate_actor, validate_id, MAX_ACTOR_LEN, MAX_ID_LEN,
};
pub(crate) use id::{validate_new_id, Id};
pub use label::{Label, Materialized, Taint};
pub use posture::{Posture, PostureLevel, PostureSource};
pub use scope::Scope;
pub use session::{Origin, Session};
pub use standing::{Grant, StandingGrant};
