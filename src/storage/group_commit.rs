//! Group commit of decision records: the appends of a handle's threads that arrive while one is
//! being committed are sent together, as one statement and one commit, when it is done.
//!
//! A caller's records join the appends waiting. When no append of this handle is in flight,
//! the caller sends every waiting caller's records (its own first among them, at most
//! [`MAX_GROUP`] records unless one caller brings more) and hands each caller its outcome;
//! otherwise it waits for the one in flight, and then either finds its outcome or sends the
//! next group itself. So every caller still returns only after its own records committed (rule
//! D1), an append shares no lock with the ledger's other writers (rule D2: this lock is the
//! appenders' alone, and held only to take the waiting records or hand out outcomes), and a
//! caller waits at most for one commit besides its own. What it gains: eight threads recording
//! at once make one commit instead of eight, which is what bounds their rate (the commit's
//! flush, the server's work per statement, the file's one writer on SQLite).
//!
//! What each caller hears when a group's commit fails:
//!
//! * the outcome is unknown ([`StorageError::DecisionsUnknown`]): each caller hears it, naming
//!   its own records;
//! * the group was refused (a record the database's constraints refuse): nothing of it was
//!   written, so each caller's records are sent again alone and it hears its own outcome: one
//!   bad record fails its own caller only;
//! * the sending thread panicked: whether the group was committed is not known, so each caller
//!   hears [`StorageError::DecisionsUnknown`].

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Location, Result, StorageError};
use crate::storage::NewDecision;

/// The most records one group sends, unless a single caller brings more.
pub(crate) const MAX_GROUP: usize = 2_000;

/// The appends of one handle, as the module says.
#[derive(Debug)]
pub(crate) struct GroupCommit {
    /// The ledger, for the errors this module makes.
    location: Location,
    state: Mutex<State>,
    /// Signalled when a group's outcomes are handed out.
    done: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The callers waiting to be sent, in arrival order.
    waiting: Vec<(u64, Vec<NewDecision>)>,
    /// True while a group is being sent.
    sending: bool,
    /// Outcomes not yet taken by their callers.
    outcomes: HashMap<u64, Result<()>>,
    next_ticket: u64,
}

impl GroupCommit {
    /// No append waiting, for the ledger at `location`.
    pub(crate) fn new(location: Location) -> GroupCommit {
        GroupCommit {
            location,
            state: Mutex::default(),
            done: Condvar::new(),
        }
    }

    /// Appends `records` through `send`, together with the records of the callers waiting at
    /// the same time; returns once they are committed, or with why not.
    pub(crate) fn append(
        &self,
        records: Vec<NewDecision>,
        send: &dyn Fn(&[NewDecision]) -> Result<()>,
    ) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push((ticket, records));
        loop {
            if let Some(outcome) = state.outcomes.remove(&ticket) {
                return outcome;
            }
            if state.sending {
                state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            let group = take_group(&mut state.waiting);
            state.sending = true;
            drop(state);
            let mut sending = Sending {
                commit: self,
                group,
                outcomes: Vec::new(),
            };
            sending.outcomes = send_group(&sending.group, send);
            drop(sending);
            state = self.lock();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked while holding the lock left the state whole: every change
        // to it is made in one step under the lock.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The waiting callers a group takes: the first, and those after it while the group holds at
/// most [`MAX_GROUP`] records.
fn take_group(waiting: &mut Vec<(u64, Vec<NewDecision>)>) -> Vec<(u64, Vec<NewDecision>)> {
    let mut records = 0;
    let mut taken = 0;
    for (_, r) in waiting.iter() {
        if taken > 0 && records + r.len() > MAX_GROUP {
            break;
        }
        records += r.len();
        taken += 1;
    }
    waiting.drain(..taken).collect()
}

/// Sends a group as one append; each caller's outcome, as the module says.
fn send_group(
    group: &[(u64, Vec<NewDecision>)],
    send: &dyn Fn(&[NewDecision]) -> Result<()>,
) -> Vec<(u64, Result<()>)> {
    if let [(ticket, records)] = group {
        return vec![(*ticket, send(records))];
    }
    let all: Vec<NewDecision> = group.iter().flat_map(|(_, r)| r.iter().cloned()).collect();
    match send(&all) {
        Ok(()) => group.iter().map(|(t, _)| (*t, Ok(()))).collect(),
        Err(Error::Storage(StorageError::DecisionsUnknown { location, why, .. })) => group
            .iter()
            .map(|(ticket, records)| (*ticket, Err(unknown(&location, records, why.clone()))))
            .collect(),
        Err(_) => group
            .iter()
            .map(|(ticket, records)| (*ticket, send(records)))
            .collect(),
    }
}

/// [`StorageError::DecisionsUnknown`] for `records`.
fn unknown(location: &Location, records: &[NewDecision], why: String) -> Error {
    StorageError::DecisionsUnknown {
        location: location.clone(),
        records: records.iter().map(|d| d.record.clone()).collect(),
        why,
    }
    .into()
}

/// A group being sent: hands out its outcomes when dropped, and if its thread panicked before
/// they were known, [`StorageError::DecisionsUnknown`] to each of its callers.
struct Sending<'a> {
    commit: &'a GroupCommit,
    /// Each caller's ticket and its records.
    group: Vec<(u64, Vec<NewDecision>)>,
    outcomes: Vec<(u64, Result<()>)>,
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        let mut state = self.commit.lock();
        let outcomes = std::mem::take(&mut self.outcomes);
        if outcomes.is_empty() {
            for (ticket, records) in &self.group {
                let why = "the thread sending them panicked during the append".to_owned();
                let failed = unknown(&self.commit.location, records, why);
                state.outcomes.insert(*ticket, Err(failed));
            }
        } else {
            state.outcomes.extend(outcomes);
        }
        state.sending = false;
        drop(state);
        self.commit.done.notify_all();
    }
}

#[cfg(test)]
#[path = "tests/group_commit.rs"]
mod tests;
