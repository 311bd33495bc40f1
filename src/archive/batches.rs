//! The write transactions that move an archive's rows out of the live ledger, and their pace.
//!
//! A writer beside the move must never wait long for it (docs/operations.md, "Archiving").
//! Two things bound that wait, each set by how the engine hands its write lock on ([`Pace`]):
//! - each batch aims to hold the write lock for a target time: its size (rows, or trees) is
//!   fitted, batch after batch, to how long the last one of its kind held the lock, so the
//!   same run suits a fast disk and a slow one, a small tree and a large one;
//! - after each batch the lock is left free for as long as the batch held it (the live load
//!   keeps at least half of the lock's time), and on SQLite for at least a least pause.
//!
//! On SQLite a waiter of another process sleeps in its busy handler (1, 2, 5, 10, 15, 20 ms,
//! ... between tries), and takes the lock only if it is free when it tries: batches are kept
//! short ([`Pace::SLEEPING_WAITERS`]), and the least pause makes sure that one that began
//! waiting during a batch tries again before the next begins, instead of missing a short gap
//! between two. On PostgreSQL a waiter is queued and woken as the lock is released, ahead of
//! the next batch, so it waits at most one batch whatever the gap: a batch may be longer
//! ([`Pace::QUEUED_WAITERS`]), and a run of many small trees needs fewer transactions, each
//! of which costs the server a round of statements and a synced commit whatever it holds.

use std::time::{Duration, Instant};

use crate::error::Result;
use crate::storage::{Storage, Write};

/// How long a batch aims to hold the write lock, and the least time it is then left free.
#[derive(Debug, Clone, Copy)]
struct Pace {
    target: Duration,
    least_pause: Duration,
}

impl Pace {
    /// For an engine whose lock waiters sleep and try again (SQLite).
    const SLEEPING_WAITERS: Pace = Pace {
        target: Duration::from_millis(8),
        least_pause: Duration::from_millis(20),
    };

    /// For an engine that queues its lock waiters and wakes them in turn (PostgreSQL).
    const QUEUED_WAITERS: Pace = Pace {
        target: Duration::from_millis(12),
        least_pause: Duration::ZERO,
    };

    /// The pace for `storage`'s engine.
    fn of(storage: &Storage) -> Pace {
        if storage.queues_lock_waiters() {
            Pace::QUEUED_WAITERS
        } else {
            Pace::SLEEPING_WAITERS
        }
    }
}

/// The size of one kind of batch, fitted to the pace's target as the run goes.
#[derive(Debug, Clone, Copy)]
struct Size {
    now: u64,
    least: u64,
    most: u64,
}

impl Size {
    /// A size that starts at `start` and stays within `least..=most`.
    fn new(start: u64, least: u64, most: u64) -> Size {
        Size {
            now: start.clamp(least, most),
            least,
            most,
        }
    }

    /// The size of the next batch.
    fn get(&self) -> u64 {
        self.now
    }

    /// Fits the size to a batch of it that held the lock for `held`, against `target`: in
    /// proportion, by at most a factor of 2 up and 4 down at a time, so that one slow commit
    /// (a disk's hiccup) does not throw the size far off.
    fn fit(&mut self, held: Duration, target: Duration) {
        let ratio = target.as_secs_f64() / held.as_secs_f64().max(1e-6);
        let next = (self.now as f64 * ratio.clamp(0.25, 2.0)).round();
        // A float of a u64 times at most 2: within u64 for any size the clamp allows.
        self.now = (next as u64).clamp(self.least, self.most);
    }
}

/// The kinds of batch, each with a size of its own.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// Trees, each whole: a few at a time.
    Trees,
    /// The trail's rows, a range of positions at a time.
    Trail,
    /// Decision records.
    Records,
    /// The audit tree's nodes.
    Nodes,
}

/// The write transactions of one run, each a batch; each kind's size; the longest any held
/// the lock.
pub(super) struct Batches<'s> {
    pub(super) storage: &'s Storage,
    pace: Pace,
    sizes: [Size; 4],
    longest: Duration,
}

impl<'s> Batches<'s> {
    pub(super) fn new(storage: &'s Storage) -> Batches<'s> {
        Batches {
            storage,
            pace: Pace::of(storage),
            // Where each kind starts (about SQLite's target on a fast disk), and the least and most
            // it may be fitted to, in the order of `Kind`.
            sizes: [
                Size::new(20, 1, 1_000),
                Size::new(1_000, 50, 100_000),
                Size::new(1_000, 50, 100_000),
                Size::new(2_000, 100, 200_000),
            ],
            longest: Duration::ZERO,
        }
    }

    /// The size of the next batch of `kind`.
    pub(super) fn size(&self, kind: Kind) -> u64 {
        self.sizes[kind as usize].get()
    }

    /// Runs `f` in a write transaction of its own, then leaves the lock free (see the module
    /// comment).
    pub(super) fn run<T>(&mut self, f: impl FnMut(&mut dyn Write) -> Result<T>) -> Result<T> {
        self.timed(f).map(|(out, _)| out)
    }

    /// As [`Batches::run`], for a batch of `kind` of its [`Batches::size`], which it then
    /// fits to how long this one held the lock.
    pub(super) fn run_sized<T>(
        &mut self,
        kind: Kind,
        f: impl FnMut(&mut dyn Write) -> Result<T>,
    ) -> Result<T> {
        let (out, held) = self.timed(f)?;
        self.sizes[kind as usize].fit(held, self.pace.target);
        Ok(out)
    }

    /// The longest any batch held the lock, in microseconds.
    pub(super) fn longest_us(&self) -> u64 {
        u64::try_from(self.longest.as_micros()).unwrap_or(u64::MAX)
    }

    /// Runs `f` in a write transaction, then pauses; returns what it returned and how long it
    /// held the lock: from the start of its last try (the lock is taken before `f` is called,
    /// so the wait for it is not counted) to its commit.
    fn timed<T>(
        &mut self,
        mut f: impl FnMut(&mut dyn Write) -> Result<T>,
    ) -> Result<(T, Duration)> {
        let mut began = Instant::now();
        let out = self.storage.write(|tx| {
            began = Instant::now();
            f(tx)
        })?;
        let held = began.elapsed();
        self.longest = self.longest.max(held);
        std::thread::sleep(held.max(self.pace.least_pause));
        Ok((out, held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_that_held_the_lock_too_long_makes_the_next_smaller_and_a_quick_one_larger() {
        let target = Pace::SLEEPING_WAITERS.target;
        let mut size = Size::new(1_000, 10, 100_000);
        size.fit(target * 2, target);
        assert_eq!(size.get(), 500);
        size.fit(target / 4, target);
        assert_eq!(size.get(), 1_000, "at most twice as large at a time");
        size.fit(target * 100, target);
        assert_eq!(size.get(), 250, "at most four times smaller at a time");
        for _ in 0..20 {
            size.fit(target * 100, target);
        }
        assert_eq!(size.get(), 10, "never below its least");
        for _ in 0..40 {
            size.fit(Duration::ZERO, target);
        }
        assert_eq!(size.get(), 100_000, "never above its most");
    }

    #[test]
    fn the_same_batch_is_fitted_larger_where_the_engine_queues_its_lock_waiters() {
        let held = Duration::from_millis(10);
        let mut sleeping = Size::new(100, 1, 1_000);
        let mut queued = sleeping;
        sleeping.fit(held, Pace::SLEEPING_WAITERS.target);
        queued.fit(held, Pace::QUEUED_WAITERS.target);
        assert_eq!((sleeping.get(), queued.get()), (80, 120));
    }
}
