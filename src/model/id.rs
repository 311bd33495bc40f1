//! Session ids and actor names: what a well-formed one is (rule S1), and the spawned form
//! `sub-<parent>-<n>` whose parent is read from the id itself.
//!
//! Text only: whether an id is recorded is the database's to say.

use std::fmt;

use crate::error::{IdProblem, InputError, Result};

/// The longest session id accepted, in bytes (ids are ASCII).
pub const MAX_ID_LEN: usize = 128;

/// The longest actor name accepted, in bytes (names are ASCII).
pub const MAX_ACTOR_LEN: usize = 64;

/// A session id known to be well-formed: checked where it entered ([`Id::parse`]), or read back
/// from the ledger, whose schema holds every stored id to the same form. The storage interface
/// takes ids only in this form, so no unchecked text reaches a statement as an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Id<'a>(&'a str);

impl<'a> Id<'a> {
    /// Checks `id` ([`validate_id`]).
    pub(crate) fn parse(id: &'a str) -> Result<Id<'a>> {
        validate_id(id).map(|()| Id(id))
    }

    /// An id read back from the ledger (or parsed out of a checked spawned id): well-formed by
    /// the schema's `CHECK` on `sessions.id`.
    pub(crate) fn stored(id: &'a str) -> Id<'a> {
        Id(id)
    }

    /// The id's text.
    pub(crate) fn as_str(self) -> &'a str {
        self.0
    }

    /// The chain of spawned ids from this one up ([`spawned_chain`]).
    pub(crate) fn spawned_chain(self) -> Vec<Id<'a>> {
        spawned_chain(self.0).into_iter().map(Id).collect()
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<str> for Id<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
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
        Err(InputError::InvalidId {
            id: id.to_owned(),
            problem,
        }
        .into())
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
pub(crate) fn validate_new_id(id: &str) -> Result<Id<'_>> {
    let checked = Id::parse(id)?;
    if spawned_parent(id).is_some() {
        return Err(InputError::InvalidId {
            id: id.to_owned(),
            problem: IdProblem::ReservedSpawnedForm,
        }
        .into());
    }
    Ok(checked)
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
        Err(InputError::InvalidActor(actor.to_owned()).into())
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
/// `[sub-sub-mm-thread-1-2, sub-mm-thread-1, mm-thread]`. Returns just `[id]` for a non-spawned
/// id.
///
/// ```
/// assert_eq!(session_ledger::spawned_chain("sub-a-1"), ["sub-a-1", "a"]);
/// ```
pub fn spawned_chain(id: &str) -> Vec<&str> {
    let mut chain = vec![id];
    let mut current = id;
    while let Some(parent) = spawned_parent(current) {
        chain.push(parent);
        current = parent;
    }
    chain
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
