//! Failures that say the server is gone, and trying again on a fresh connection.
//!
//! A deployment fails over: its primary dies or is demoted, a standby is promoted, and the URL
//! (several hosts, `target_session_attrs=read-write`) reaches the new primary once it takes
//! connections. Until then an operation meets a connection closed under it, a server shutting
//! down or starting, or a standby that refuses writes. Such a connection is dropped from the
//! pool, and the operation runs again on a fresh one, pausing a little longer each time, until
//! [`Config::failover_wait`](crate::Config::failover_wait) is over; then it fails with
//! [`StorageError::Unavailable`]. A read may run again at any point; a write only before its
//! commit was sent (`commit.rs` deals with a commit whose answer was lost).

use std::time::{Duration, Instant};

use super::{driver_error, open, PgConn, Postgres};
use crate::error::{Error, Result, StorageError};

/// True for a failure that a fresh connection, perhaps to another server, may not meet:
///
/// * the connection is closed, or failed below the protocol (reset, refused, timed out), or
///   the server reached was not one the URL accepts (`target_session_attrs`);
/// * `08xxx`, a connection exception;
/// * `57P01`, `57P02`, `57P03`: the server is shutting down, crashed, or is starting (or is a
///   standby that takes no connection yet);
/// * `25006`, a write refused because the server is a standby now (a primary demoted, or a URL
///   that reached a standby): the transaction wrote nothing.
pub(super) fn server_gone(e: &Error) -> bool {
    let Some(driver) = driver_error(e) else {
        return false;
    };
    match driver.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "25006")
        }
    }
}

/// True for a failure that running the same transaction again may not meet: the server broke a
/// deadlock by aborting it (`40P01`), or could not serialize it (`40001`).
pub(super) fn conflict(e: &Error) -> bool {
    matches!(
        driver_error(e)
            .and_then(postgres::Error::code)
            .map(|c| c.code()),
        Some("40001" | "40P01")
    )
}

/// The pauses between tries: 20 ms, doubling, at most a second.
pub(super) struct Pause(Duration);

impl Pause {
    pub(super) fn new() -> Pause {
        Pause(Duration::from_millis(20))
    }

    /// Sleeps, never past `deadline`.
    pub(super) fn sleep(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(self.0.min(left));
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
    }
}

impl Postgres {
    /// When an operation starting now stops trying.
    pub(super) fn deadline(&self) -> Instant {
        Instant::now() + self.failover_wait
    }

    /// The error of an operation that tried until `deadline`; `cause` is what it met last.
    pub(super) fn unavailable(&self, cause: &Error) -> Error {
        StorageError::Unavailable {
            location: self.location.clone(),
            waited: self.failover_wait,
            cause: cause.to_string(),
        }
        .into()
    }

    /// A connection from the pool, waiting for one until `deadline`: the pool opens new ones as
    /// it needs them, through every host of the URL, and hands out none it found closed.
    pub(super) fn checkout(
        &self,
        deadline: Instant,
    ) -> Result<r2d2::PooledConnection<open::Manager>> {
        let mut pause = Pause::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.pool.get_timeout(left.max(open::SHORTEST_WAIT)) {
                Ok(conn) => return Ok(conn),
                Err(e) if Instant::now() >= deadline => return Err(self.unavailable(&e.into())),
                Err(_) => pause.sleep(deadline),
            }
        }
    }

    /// Runs `op` on a pooled connection, and again on a fresh one each time it meets a server
    /// gone away, until the failover wait is over. For reads, which may run any number of
    /// times.
    pub(super) fn with_connection<T>(
        &self,
        op: &mut dyn FnMut(&mut PgConn) -> Result<T>,
    ) -> Result<T> {
        let deadline = self.deadline();
        let mut pause = Pause::new();
        loop {
            let mut pooled = self.checkout(deadline)?;
            match op(&mut pooled) {
                Err(e) if server_gone(&e) => {
                    pooled.broken = true;
                    drop(pooled);
                    if Instant::now() >= deadline {
                        return Err(self.unavailable(&e));
                    }
                    pause.sleep(deadline);
                }
                done => return done,
            }
        }
    }
}
