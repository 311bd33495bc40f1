//! Sessions, their ids and their lineage.
//!
//! Terms used throughout the crate:
//!
//! * a **root** is a session with no creator, opened by an operator; its **depth** is 0, and
//!   every other session's depth is its creator's depth + 1;
//! * a **created child** was made through [`Ledger::create_child`](crate::Ledger::create_child),
//!   so the ledger recorded its creator when it was made;
//! * a **spawned child** has an id of the form `sub-<parent>-<n>` that the ledger never saw
//!   being made; its parent is parsed from the id (see [`spawned_parent`]) and it is recorded
//!   the first time it is read;
//! * the **subtree** of a session is the session and all its descendants, created or spawned.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Error, IdProblem, InputError, Result};

/// The longest session id accepted, in bytes (ids are ASCII).
pub const MAX_ID_LEN: usize = 128;

/// The longest actor name accepted, in bytes (names are ASCII).
pub const MAX_ACTOR_LEN: usize = 64;

/// How a session came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Opened by an operator, with no creator.
    Root,
    /// Made through the ledger's create call by a live session.
    Created,
    /// A `sub-<parent>-<n>` id first seen when it was read.
    Spawned,
}

impl Origin {
    /// The word stored in the `sessions.origin` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Root => "root",
            Origin::Created => "created",
            Origin::Spawned => "spawned",
        }
    }

    pub(crate) fn from_db(s: &str) -> Option<Origin> {
        match s {
            "root" => Some(Origin::Root),
            "created" => Some(Origin::Created),
            "spawned" => Some(Origin::Spawned),
            _ => None,
        }
    }
}

/// A session as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Session {
    /// The session's id.
    pub id: String,
    /// The session that created or spawned it; `None` for a root.
    pub created_by: Option<String>,
    /// 0 for a root, the creator's depth + 1 otherwise.
    pub depth: u32,
    /// How it came to be.
    pub origin: Origin,
    /// When the ledger recorded it.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub created_at: DateTime<Utc>,
    /// When it ended; `None` while it is live.
    #[serde(serialize_with = "crate::clock::serialize_opt_ts")]
    pub ended_at: Option<DateTime<Utc>>,
}

impl Session {
    /// True while the session has not ended.
    pub fn is_live(&self) -> bool {
        self.ended_at.is_none()
    }
}

/// Checks that `id` is a well-formed session id: 1 to [`MAX_ID_LEN`] characters from
/// `[A-Za-z0-9._:-]`, starting with a letter or digit.
///
/// # Errors
///
/// [`InputError::InvalidId`](crate::InputError::InvalidId) naming the first problem found.
///
/// # Example
///
/// ```
/// assert!(session_ledger::validate_id("conductor-1").is_ok());
/// assert!(session_ledger::validate_id("").is_err());
/// assert!(session_ledger::validate_id("a b").is_err());
/// ```
pub fn validate_id(id: &str) -> Result<()> {
    id_problem(id).map_or(Ok(()), |problem| {
        Err(Error::Input(InputError::InvalidId {
            id: id.to_owned(),
            problem,
        }))
    })
}

fn id_problem(id: &str) -> Option<IdProblem> {
    let bytes = id.as_bytes();
    if bytes.is_empty() {
        return Some(IdProblem::Empty);
    }
    if bytes.len() > MAX_ID_LEN {
        return Some(IdProblem::TooLong);
    }
    if !bytes[0].is_ascii_alphanumeric() {
        return Some(IdProblem::BadStart);
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    {
        return Some(IdProblem::BadCharacter);
    }
    None
}

/// Checks an id for a session about to be created: a valid id that is not of the spawned form.
pub(crate) fn validate_new_id(id: &str) -> Result<()> {
    validate_id(id)?;
    if spawned_parent(id).is_some() {
        return Err(Error::Input(InputError::InvalidId {
            id: id.to_owned(),
            problem: IdProblem::ReservedSpawnedForm,
        }));
    }
    Ok(())
}

/// Checks that `actor` is a well-formed actor name: 1 to [`MAX_ACTOR_LEN`] characters from
/// `[A-Za-z0-9._:@-]`.
///
/// # Errors
///
/// [`InputError::InvalidActor`](crate::InputError::InvalidActor).
pub fn validate_actor(actor: &str) -> Result<()> {
    let ok = !actor.is_empty()
        && actor.len() <= MAX_ACTOR_LEN
        && actor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'@' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Input(InputError::InvalidActor(actor.to_owned())))
    }
}

/// The parent of a spawned id, or `None` if `id` is not a spawned id.
///
/// A spawned id is `sub-<parent>-<n>`: strip the prefix `sub-`, split at the *last* `-`; the
/// right piece must be non-empty and all ASCII digits, the left piece must be a valid id.
///
/// # Example
///
/// ```
/// use session_ledger::spawned_parent;
/// assert_eq!(spawned_parent("sub-mm-thread-1"), Some("mm-thread"));
/// assert_eq!(spawned_parent("sub-sub-mm-thread-1-2"), Some("sub-mm-thread-1"));
/// assert_eq!(spawned_parent("chat-1"), None);
/// assert_eq!(spawned_parent("sub-x"), None);
/// assert_eq!(spawned_parent("sub--1"), None);
/// assert_eq!(spawned_parent("sub-a-1x"), None);
/// ```
pub fn spawned_parent(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("sub-")?;
    let (parent, n) = rest.rsplit_once('-')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id_problem(parent).is_none().then_some(parent)
}

/// The chain of spawned ids from `id` up: `id` itself, then each parsed parent, ending with the
/// first id that is not a spawned id. `sub-sub-mm-thread-1-2` gives
/// `[sub-sub-mm-thread-1-2, sub-mm-thread-1, mm-thread]`. Returns just `[id]` for a non-spawned id.
pub fn spawned_chain(id: &str) -> Vec<&str> {
    let mut chain = vec![id];
    let mut current = id;
    while let Some(parent) = spawned_parent(current) {
        chain.push(parent);
        current = parent;
    }
    chain
}

/// A session in a drawn tree: the session and its depth below the tree's top.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeEntry {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its depth below the top of the tree that was asked for (0 for the top itself).
    pub relative_depth: u32,
}

/// A session in a tree view ([`Ledger::tree`](crate::Ledger::tree)): its lineage, its label
/// and its posture, all read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeNode {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its depth below the top of the tree that was asked for (0 for the top itself).
    pub relative_depth: u32,
    /// Its taint: the stored one when it is materialized, otherwise the one its first read
    /// would give it (its nearest materialized ancestor's, rule L2). Reading the tree writes
    /// nothing.
    pub taint: crate::labels::Taint,
    /// Its untrusted flag, as for `taint`.
    pub untrusted: bool,
    /// Whether its label is stored (false: `taint` and `untrusted` are inherited on read).
    pub materialized: bool,
    /// Its posture admits every command now (as `trust` in [`SessionState`](crate::SessionState)).
    pub trust: bool,
    /// Its posture admits read-only commands now.
    pub trust_reads: bool,
    /// Its posture row, current or not (`current` says which), with its source.
    pub posture: Option<crate::postures::Posture>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawned_ids_are_parsed_at_the_last_dash_and_recurse() {
        assert_eq!(spawned_parent("sub-mm-thread-1"), Some("mm-thread"));
        assert_eq!(
            spawned_parent("sub-sub-mm-thread-1-2"),
            Some("sub-mm-thread-1")
        );
        assert_eq!(
            spawned_chain("sub-sub-mm-thread-1-2"),
            ["sub-sub-mm-thread-1-2", "sub-mm-thread-1", "mm-thread"]
        );
        assert_eq!(spawned_parent("sub-a-007"), Some("a"));
    }

    #[test]
    fn ids_that_are_not_spawned_ids_are_rejected_by_the_parser() {
        for id in [
            "chat-1", "sub-x", "sub--1", "sub-a-1x", "sub-a-", "sub-", "sub--a-1", "sub-a-١",
        ] {
            assert_eq!(spawned_parent(id), None, "{id}");
        }
        assert_eq!(spawned_chain("chat-1"), ["chat-1"]);
    }
}
