//! The order of a handle's writers: first come, first served.
//!
//! A file has one writer at a time, and SQLite's busy handler makes the others sleep (1, 2, 5,
//! ... up to 100 ms) and try again. Between threads of one handle that is unfair and slow: a
//! thread that asks again microseconds after its own commit takes the lock nearly every time,
//! while one that slept finds it taken again, so a writer could wait seconds behind writers
//! that came after it. So a handle's writes and appends take a turn here before `BEGIN
//! IMMEDIATE`, in the order they asked, and wake as soon as the writer before them is done.
//! Writers of other processes still meet the busy handler; the busy timeout bounds the two
//! waits together.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Result;

/// The writers of one handle, as the module says.
#[derive(Debug, Default)]
pub(super) struct Writers {
    queue: Mutex<Queue>,
    /// Signalled when a turn ends.
    turn_ended: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket whose turn it is.
    serving: u64,
    /// Tickets whose writers gave up waiting: their turns are skipped.
    abandoned: HashSet<u64>,
}

/// A writer's turn: the next writer's starts when it is dropped.
#[derive(Debug)]
pub(super) struct Turn<'a> {
    writers: &'a Writers,
}

impl Writers {
    /// Waits for this writer's turn, at most `timeout`; the time left of it then.
    ///
    /// # Errors
    ///
    /// A busy error when the writers before it held their turns longer than `timeout`.
    pub(super) fn turn(&self, timeout: Duration) -> Result<(Turn<'_>, Duration)> {
        let started = Instant::now();
        let mut queue = self.lock();
        let ticket = queue.next;
        queue.next += 1;
        while queue.serving != ticket {
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                queue.abandoned.insert(ticket);
                return Err(busy(timeout));
            }
            queue = self
                .turn_ended
                .wait_timeout(queue, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let left = timeout.saturating_sub(started.elapsed());
        Ok((Turn { writers: self }, left))
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Every change to the queue is made in one step under the lock, so a thread that
        // panicked holding it left it whole.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut queue = self.writers.lock();
        queue.serving += 1;
        loop {
            let next = queue.serving;
            if !queue.abandoned.remove(&next) {
                break;
            }
            queue.serving += 1;
        }
        drop(queue);
        self.writers.turn_ended.notify_all();
    }
}

/// What a write that waited its whole timeout for this handle's other writers fails with: the
/// busy error SQLite's own wait ends with.
fn busy(timeout: Duration) -> crate::error::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some(format!(
            "waited {timeout:?} for this handle's other writers to finish"
        )),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::*;

    #[test]
    fn writers_get_their_turns_in_the_order_they_asked() {
        let writers = Arc::new(Writers::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let (first, _) = writers.turn(Duration::from_secs(10)).unwrap();
        let mut waiting = Vec::new();
        for i in 0..6 {
            let (mine, order) = (writers.clone(), order.clone());
            waiting.push(thread::spawn(move || {
                let (_turn, _) = mine.turn(Duration::from_secs(10)).unwrap();
                order.lock().unwrap().push(i);
            }));
            // Each asks after the one before it.
            while writers.lock().next < i + 2 {
                thread::yield_now();
            }
        }
        drop(first);
        for w in waiting {
            w.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_writer_that_gives_up_is_skipped_and_the_one_after_it_goes_next() {
        let writers = Writers::default();
        let (first, _) = writers.turn(Duration::from_secs(10)).unwrap();
        let gave_up = writers.turn(Duration::from_millis(20));
        assert!(
            matches!(&gave_up, Err(crate::error::Error::Storage(e)) if e.is_busy()),
            "{gave_up:?}"
        );
        drop(first);
        let (_next, left) = writers.turn(Duration::from_millis(50)).unwrap();
        assert!(left > Duration::ZERO);
    }
}
