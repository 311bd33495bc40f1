//! Group commit, with a `send` of the tests' own that holds the first group until the other
//! callers are waiting: what is sent together, and what each caller hears.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use chrono::Utc;

use super::{GroupCommit, MAX_GROUP};
use crate::error::{Error, Location, Result, StorageError};
use crate::storage::NewDecision;

fn location() -> Location {
    Location::File(PathBuf::from("group.db"))
}

fn record(id: &str) -> NewDecision {
    NewDecision {
        record: id.to_owned(),
        at: Utc::now(),
        session: "worker".to_owned(),
        tool: None,
        input: "make".to_owned(),
        input_bytes: 4,
        input_sha256: None,
        verdict: "ask",
        authority: "nothing",
        reason: "{}".to_owned(),
        asked_by: "test".to_owned(),
        tool_use_id: None,
    }
}

/// What a test's `send` saw: the records of each call, in order.
type Sent = Arc<Mutex<Vec<Vec<String>>>>;

/// A caller's outcome; `None` when its thread panicked while sending.
type Outcome = Option<Result<()>>;

/// Runs one caller per id on `commit`, each appending its one record with `send`, the first
/// alone and the others once it is being sent; returns each caller's outcome, by id, and what
/// was sent. `send` is called with the first group while the others have not yet arrived: it
/// holds it until `release` is set.
fn callers(
    commit: &Arc<GroupCommit>,
    ids: &[&str],
    release: &Arc<AtomicBool>,
    send: impl Fn(&[NewDecision]) -> Result<()> + Send + Sync + 'static,
) -> (Vec<(String, Outcome)>, Sent) {
    let sent: Sent = Arc::default();
    let send = Arc::new(send);
    let started = Arc::new(AtomicBool::new(false));
    let spawn = |id: &str| {
        let (commit, sent, send, started, release) = (
            commit.clone(),
            sent.clone(),
            send.clone(),
            started.clone(),
            release.clone(),
        );
        let id = id.to_owned();
        thread::spawn(move || {
            let append = || {
                commit.append(vec![record(&id)], &|records| {
                    sent.lock()
                        .unwrap()
                        .push(records.iter().map(|d| d.record.clone()).collect());
                    started.store(true, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        thread::sleep(Duration::from_millis(1));
                    }
                    send(records)
                })
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(append));
            (id, outcome.ok())
        })
    };
    let first = spawn(ids[0]);
    while !started.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(1));
    }
    let others: Vec<_> = ids[1..].iter().map(|id| spawn(id)).collect();
    // The others are waiting once they are in the queue; then the first group may finish.
    while commit.state.lock().unwrap().waiting.len() < ids.len() - 1 {
        thread::sleep(Duration::from_millis(1));
    }
    release.store(true, Ordering::SeqCst);
    let mut outcomes = vec![first.join().unwrap()];
    outcomes.extend(others.into_iter().map(|t| t.join().unwrap()));
    (outcomes, sent)
}

fn refused() -> Error {
    Error::Storage(StorageError::ReadOnly(location()))
}

#[test]
fn appends_that_arrive_while_one_is_sent_are_sent_together_next() {
    let commit = Arc::new(GroupCommit::new(location()));
    let release = Arc::new(AtomicBool::new(false));
    let ids = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let (outcomes, sent) = callers(&commit, &ids, &release, |_| Ok(()));
    assert!(
        outcomes.iter().all(|(_, o)| matches!(o, Some(Ok(())))),
        "{outcomes:?}"
    );
    let sent = sent.lock().unwrap().clone();
    assert_eq!(
        sent.len(),
        2,
        "one send for the first, one for the seven after: {sent:?}"
    );
    assert_eq!(sent[0], ["a"]);
    let mut second = sent[1].clone();
    second.sort();
    assert_eq!(second, ["b", "c", "d", "e", "f", "g", "h"]);
}

#[test]
fn a_record_the_database_refuses_fails_its_own_caller_only() {
    let commit = Arc::new(GroupCommit::new(location()));
    let release = Arc::new(AtomicBool::new(false));
    let (outcomes, sent) = callers(&commit, &["a", "b", "bad", "c"], &release, |records| {
        if records.iter().any(|d| d.record == "bad") {
            Err(refused())
        } else {
            Ok(())
        }
    });
    for (id, outcome) in &outcomes {
        assert_eq!(
            matches!(outcome, Some(Err(_))),
            id == "bad",
            "{id}: {outcome:?}"
        );
    }
    // The group of three was refused whole, then each was sent alone.
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1 + 1 + 3, "{sent:?}");
    assert_eq!(sent[1].len(), 3, "{sent:?}");
}

#[test]
fn an_unknown_outcome_reaches_every_caller_of_the_group_naming_its_own_records() {
    let commit = Arc::new(GroupCommit::new(location()));
    let release = Arc::new(AtomicBool::new(false));
    let (outcomes, sent) = callers(&commit, &["a", "b", "c"], &release, |records| {
        if records.len() > 1 {
            Err(StorageError::DecisionsUnknown {
                location: location(),
                records: records.iter().map(|d| d.record.clone()).collect(),
                why: "the standby wait was cancelled".into(),
            }
            .into())
        } else {
            Ok(())
        }
    });
    assert!(matches!(outcomes[0].1, Some(Ok(()))));
    for (id, outcome) in &outcomes[1..] {
        match outcome {
            Some(Err(Error::Storage(StorageError::DecisionsUnknown { records, why, .. }))) => {
                assert_eq!(records, std::slice::from_ref(id));
                assert_eq!(why, "the standby wait was cancelled");
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    // Not sent again: sending what may be committed would not make it known.
    assert_eq!(sent.lock().unwrap().len(), 2);
}

#[test]
fn a_panic_while_sending_leaves_its_callers_unknown_and_the_next_append_goes_through() {
    let commit = Arc::new(GroupCommit::new(location()));
    let release = Arc::new(AtomicBool::new(false));
    let (outcomes, _) = callers(&commit, &["a", "b", "c"], &release, |records| {
        if records.len() > 1 {
            panic!("the send of a group panics");
        }
        Ok(())
    });
    assert!(matches!(outcomes[0].1, Some(Ok(()))));
    // The thread that sent the group panicked, and has no outcome; the group's other caller
    // hears it as unknown.
    let panicked = outcomes[1..].iter().filter(|(_, o)| o.is_none()).count();
    let unknown = outcomes[1..].iter().filter(|(_, o)| {
        matches!(o, Some(Err(Error::Storage(StorageError::DecisionsUnknown { why, .. }))) if why.contains("panicked"))
    });
    assert_eq!((panicked, unknown.count()), (1, 1), "{outcomes:?}");
    assert_eq!(
        commit.append(vec![record("after")], &|_| Ok(())).ok(),
        Some(())
    );
}

#[test]
fn a_group_holds_at_most_max_group_records_unless_one_caller_brings_more() {
    let one = |n: usize, tag: &str| -> Vec<NewDecision> {
        (0..n).map(|i| record(&format!("{tag}{i}"))).collect()
    };
    let mut waiting = vec![(0, one(MAX_GROUP + 5, "big")), (1, one(1, "small"))];
    let group = super::take_group(&mut waiting);
    assert_eq!(group.len(), 1, "a caller larger than a group goes alone");
    assert_eq!(waiting.len(), 1);
    let mut waiting = vec![
        (0, one(MAX_GROUP - 1, "x")),
        (1, one(1, "y")),
        (2, one(1, "z")),
    ];
    let group = super::take_group(&mut waiting);
    let records: usize = group.iter().map(|(_, r)| r.len()).sum();
    assert_eq!((group.len(), records), (2, MAX_GROUP));
    assert_eq!(waiting.len(), 1);
}
