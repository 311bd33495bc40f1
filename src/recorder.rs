//! The batching mode of decision records, for a process that embeds the ledger and decides
//! often (rule D1's exception, with its loss window stated).
//!
//! A [`DecisionRecorder`] decides at once and holds each record in memory; one thread of its
//! own appends what it holds as one transaction when the oldest record has waited
//! [`RecorderOptions::window`], or as soon as [`RecorderOptions::max_batch`] are held. So a
//! crash of the process (kill -9, power) loses at most the records of the last window and the
//! batch in flight, and never more than two batches: a caller that finds two batches waiting
//! waits for one to be appended before its record is held. Always the newest ones, never one
//! from between two that were kept, since batches are appended one at a time, in the order the
//! decisions were made, each all or nothing. A batch whose append fails is kept and tried again, and every call meanwhile
//! fails: the recorder never answers as if the records were safe when it cannot write them.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::decision_log::AskedBy;
use crate::decisions::{ReadOnly, Recorded};
use crate::error::{Error, Result, StorageError};
use crate::ledger::Ledger;
use crate::patterns::ToolCall;
use crate::storage::NewDecision;

/// How a [`DecisionRecorder`] batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecorderOptions {
    /// The longest a record waits in memory before its batch is appended: what a crash can
    /// lose, with the batch in flight. 50 ms by default; at most 10 s.
    pub window: Duration,
    /// A batch is appended as soon as this many records wait. 2,000 by default.
    pub max_batch: usize,
}

impl Default for RecorderOptions {
    fn default() -> RecorderOptions {
        RecorderOptions {
            window: Duration::from_millis(50),
            max_batch: 2_000,
        }
    }
}

/// Decides and records in batches: see the module's documentation. Cheap to share between
/// threads (`&self` methods); dropping it appends what it holds and stops its thread (when that
/// last append fails, the records are lost: [`DecisionRecorder::close`] reports it).
#[derive(Debug)]
pub struct DecisionRecorder {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    ledger: Arc<Ledger>,
    options: RecorderOptions,
    state: Mutex<State>,
    /// Wakes the flusher: records arrived, a batch filled, or the recorder stops.
    wake: Condvar,
    /// Wakes callers of `flush`: a batch was appended, or failed.
    appended: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Waiting, oldest first, with when the oldest arrived.
    held: Vec<NewDecision>,
    oldest: Option<Instant>,
    /// The batch being appended now.
    in_flight: usize,
    /// How many records were appended since the recorder started.
    appended: u64,
    /// The last append's failure, until an append succeeds.
    failure: Option<String>,
    /// How many appends were tried, whatever their outcome.
    attempts: u64,
    stopping: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl DecisionRecorder {
    /// A recorder on `ledger`, with its flushing thread started.
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for a window of zero or over 10 s, or a batch of 0; `ReadOnly` for a
    /// read-only handle.
    pub fn new(ledger: Arc<Ledger>, options: RecorderOptions) -> Result<DecisionRecorder> {
        if options.window.is_zero() || options.window > Duration::from_secs(10) {
            return Err(crate::error::InputError::InvalidConfig(format!(
                "a recorder's window is over 0 and at most 10 s, not {:?}",
                options.window
            ))
            .into());
        }
        if options.max_batch == 0 {
            return Err(crate::error::InputError::InvalidConfig(
                "a recorder's batch holds at least one record".to_owned(),
            )
            .into());
        }
        if ledger.config().read_only {
            return Err(StorageError::ReadOnly(ledger.location().clone()).into());
        }
        let shared = Arc::new(Shared {
            ledger,
            options,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            appended: Condvar::new(),
        });
        let flusher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("session-ledger-recorder".to_owned())
                .spawn(move || flush_loop(&shared))
                .map_err(|e| crate::error::EngineError::new("recorder thread", false, e))?
        };
        Ok(DecisionRecorder {
            shared,
            flusher: Some(flusher),
        })
    }

    /// [`Ledger::decide`], with its record held for the next batch
    /// ([`Recorded::durable`] is false).
    ///
    /// # Errors
    ///
    /// As [`Ledger::decide_and_record`]; while the last append failed,
    /// [`StorageError::DecisionsUnknown`] naming the records held, and no decision.
    pub fn decide(
        &self,
        id: &str,
        command: &str,
        read_only: impl Into<ReadOnly>,
        asked: &AskedBy<'_>,
    ) -> Result<Recorded> {
        asked.validate()?;
        self.check()?;
        let ledger = &self.shared.ledger;
        let decision = ledger.decide(id, command, read_only)?;
        let record = ledger.command_record(&decision, command, asked)?;
        Ok(Recorded {
            decision,
            record: self.hold(record),
            durable: false,
        })
    }

    /// [`Ledger::decide_tool`], with its record held for the next batch.
    ///
    /// # Errors
    ///
    /// As [`DecisionRecorder::decide`].
    pub fn decide_tool(
        &self,
        id: &str,
        call: &ToolCall<'_>,
        asked: &AskedBy<'_>,
    ) -> Result<Recorded> {
        asked.validate()?;
        self.check()?;
        let ledger = &self.shared.ledger;
        let decision = ledger.decide_tool(id, call)?;
        let record = ledger.tool_record(&decision, call, asked)?;
        Ok(Recorded {
            decision,
            record: self.hold(record),
            durable: false,
        })
    }

    /// Appends everything held now and waits for it: how many records the recorder has
    /// appended since it started. After a failed append, it tries again at once.
    ///
    /// # Errors
    ///
    /// [`StorageError::DecisionsUnknown`] when an append tried after this call began failed
    /// (the records stay held and are tried again).
    pub fn flush(&self) -> Result<u64> {
        let shared = &self.shared;
        let mut state = shared.state();
        let target = state.appended + (state.held.len() + state.in_flight) as u64;
        let began = state.attempts;
        let due = Instant::now()
            .checked_sub(shared.options.window)
            .unwrap_or_else(Instant::now);
        state.oldest = state.oldest.map(|_| due);
        shared.wake.notify_one();
        while state.appended < target {
            match &state.failure {
                Some(failure) if state.attempts > began => {
                    return Err(unknown(&shared.ledger, &state.held, failure));
                }
                _ => {}
            }
            state = shared
                .appended
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Ok(state.appended)
    }

    /// Appends what it holds and stops its thread: how many records it appended since it
    /// started. Dropping the recorder does the same, but cannot say when the last append
    /// failed; this can.
    ///
    /// # Errors
    ///
    /// As [`DecisionRecorder::flush`]: the records it still held are named, and were not
    /// appended.
    pub fn close(self) -> Result<u64> {
        self.flush()
    }

    /// How many records wait in memory now.
    pub fn held(&self) -> usize {
        let state = self.shared.state();
        state.held.len() + state.in_flight
    }

    /// Fails while the last append failed.
    fn check(&self) -> Result<()> {
        let state = self.shared.state();
        match &state.failure {
            Some(failure) => Err(unknown(&self.shared.ledger, &state.held, failure)),
            None => Ok(()),
        }
    }

    /// Holds `record` for the next batch; returns its id. While two batches already wait
    /// (the appends fall behind the deciders), it waits for one to be appended first: what a
    /// crash can lose stays the window and the batches in hand, not whatever piled up.
    fn hold(&self, record: NewDecision) -> String {
        let id = record.record.clone();
        let shared = &self.shared;
        let most = 2 * shared.options.max_batch;
        let mut state = shared.state();
        while state.held.len() + state.in_flight >= most && state.failure.is_none() {
            shared.wake.notify_one();
            state = shared
                .appended
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.held.push(record);
        state.oldest.get_or_insert_with(Instant::now);
        if state.held.len() == 1 || state.held.len() >= shared.options.max_batch {
            shared.wake.notify_one();
        }
        id
    }
}

impl Drop for DecisionRecorder {
    fn drop(&mut self) {
        self.shared.state().stopping = true;
        self.shared.wake.notify_one();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
    }
}

/// The error of records held while appends fail.
fn unknown(ledger: &Ledger, held: &[NewDecision], failure: &str) -> Error {
    StorageError::DecisionsUnknown {
        location: ledger.location().clone(),
        records: held.iter().map(|d| d.record.clone()).collect(),
        why: format!("the recorder's last append failed: {failure}"),
    }
    .into()
}

/// The flusher: waits for a batch to be due, appends it, and again, until the recorder stops
/// with nothing held (or nothing it can append).
fn flush_loop(shared: &Shared) {
    let window = shared.options.window;
    let mut state = shared.state();
    loop {
        let due = match state.oldest {
            Some(oldest) => {
                state.stopping
                    || state.held.len() >= shared.options.max_batch
                    || oldest.elapsed() >= window
            }
            None => false,
        };
        if !due {
            if state.stopping && state.held.is_empty() {
                return;
            }
            let wait = state
                .oldest
                .map_or(window, |oldest| window.saturating_sub(oldest.elapsed()));
            state = shared
                .wake
                .wait_timeout(state, wait.max(Duration::from_millis(1)))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            continue;
        }
        let take = state.held.len().min(shared.options.max_batch);
        let batch: Vec<NewDecision> = state.held.drain(..take).collect();
        state.in_flight = batch.len();
        state.oldest = (!state.held.is_empty()).then(Instant::now);
        drop(state);
        let result = shared.ledger.append_records(&batch);
        state = shared.state();
        state.in_flight = 0;
        state.attempts += 1;
        match result {
            Ok(()) => {
                state.appended += batch.len() as u64;
                state.failure = None;
            }
            Err(e) => {
                state.failure = Some(e.to_string());
                // Kept, ahead of what arrived meanwhile, and tried again after a window.
                let later = std::mem::take(&mut state.held);
                state.held = batch;
                state.held.extend(later);
                state.oldest = Some(Instant::now());
                let stop = state.stopping;
                shared.appended.notify_all();
                if stop {
                    return;
                }
                state = shared
                    .wake
                    .wait_timeout(state, window)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
        }
        shared.appended.notify_all();
    }
}
