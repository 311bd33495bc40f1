//! How a ledger is opened: bounds on creation (rule S2) and connection settings.
//!
//! A plain value: it opens nothing itself, and knows no concept; the facade hands its bounds to
//! the sessions concept and its connection settings to the engine.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};

/// How hard SQLite syncs to disk on commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// `PRAGMA synchronous=FULL`: a commit that returned survives power loss. The default: a
    /// committed revocation must not come undone.
    #[default]
    Full,
    /// `PRAGMA synchronous=NORMAL`: in WAL mode a commit survives a crash of the process but
    /// may be lost on power loss. Faster; for tests and throwaway ledgers.
    Normal,
}

/// Settings for [`Ledger::open_with`](crate::Ledger::open_with).
///
/// ```
/// use session_ledger::Config;
/// let config = Config::default().max_depth(8).max_live_children(10);
/// assert_eq!(config.max_depth, 8);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The deepest a created session may be (a root is at depth 0). Default 64.
    pub max_depth: u32,
    /// The most live created children one creator may have at once. Default 50.
    pub max_live_children: u32,
    /// The most sessions one creator may create within [`Config::rate_window`]. Default 200.
    pub max_creations_per_window: u32,
    /// The length of the creation-rate window. Default 60 seconds.
    pub rate_window: Duration,
    /// How long a writer waits for another writer before giving up. Default 30 seconds.
    pub busy_timeout: Duration,
    /// On PostgreSQL: how long an operation that met a server gone away (a failover, a
    /// restart, a connection the server or a pooler ended) keeps trying on fresh connections
    /// before it fails with [`StorageError::Unavailable`](crate::StorageError::Unavailable);
    /// and how long a write whose connection was lost during its commit keeps looking for
    /// whether it was done. A write is tried again only when it never sent its commit.
    /// Default 30 seconds; the SQLite engine has no use for it.
    pub failover_wait: Duration,
    /// The sync mode. Default [`Synchronous::Full`].
    pub synchronous: Synchronous,
    /// The most pooled connections. Default 8.
    pub pool_size: u32,
    /// Create and initialize the ledger when there is none (no file; on PostgreSQL, no ledger
    /// tables). Default false: opening a path that holds no ledger is an error
    /// ([`StorageError::NoLedger`](crate::StorageError::NoLedger)), so that a mistyped path
    /// never starts an empty ledger of its own. [`Ledger::init`](crate::Ledger::init) and the
    /// command line's `init` and `demo` turn it on.
    pub create_if_missing: bool,
    /// Carry postures into each new epoch (rule P5) instead of letting them lapse. Default
    /// false: like the dashboard that kept trust in memory, a restart returns every session to
    /// asking.
    pub durable_postures: bool,
    /// The clock read by every operation. Default the system clock.
    pub clock: Arc<dyn Clock>,
    /// Keep the `-wal` and `-shm` files when the last connection closes instead of letting
    /// SQLite delete them (see `docs/concurrency.md`). Default true, for the library and the
    /// CLI alike: a reader who may read the ledger but not write its folder (an auditor's
    /// `sqlite3 -readonly`, or [`Config::read_only`]) can open a WAL database only when both
    /// files exist, because it cannot create them. Turn it off only for a ledger no such
    /// reader will open. Either way the last connection checkpoints on close and leaves the
    /// WAL empty. Set only once the file has been accepted: a file that is refused gets
    /// nothing new beside it.
    pub keep_wal_file: bool,
    /// Open for reading only. Default false.
    ///
    /// Every connection is opened with `SQLITE_OPEN_READ_ONLY`, so the handle works with read
    /// permission alone, on the file and on its folder, as long as the `-wal` and `-shm` files
    /// exist (every writer leaves them). Nothing is migrated, the journal mode is not touched,
    /// no write lock is ever taken, and [`Config::create_if_missing`] does not apply. Opening
    /// refuses a missing file ([`StorageError::NoLedger`](crate::StorageError::NoLedger)), a file that is not
    /// a ledger ([`StorageError::NotALedger`](crate::StorageError::NotALedger)), a newer schema
    /// ([`StorageError::SchemaTooNew`](crate::StorageError::SchemaTooNew)) and an older one
    /// ([`InputError::InvalidConfig`](crate::InputError::InvalidConfig): a writer must open it once to
    /// upgrade it).
    ///
    /// Every method that writes fails with [`StorageError::ReadOnly`](crate::StorageError::ReadOnly) and
    /// writes nothing. [`Ledger::state`](crate::Ledger::state) of a session whose first read
    /// would record an inherited label answers from the inheritance without recording it, and
    /// says so with [`Materialized::Unrecorded`](crate::Materialized::Unrecorded).
    pub read_only: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_depth: 64,
            max_live_children: 50,
            max_creations_per_window: 200,
            rate_window: Duration::from_secs(60),
            busy_timeout: Duration::from_secs(30),
            failover_wait: Duration::from_secs(30),
            synchronous: Synchronous::Full,
            pool_size: 8,
            create_if_missing: false,
            durable_postures: false,
            clock: Arc::new(SystemClock),
            keep_wal_file: true,
            read_only: false,
        }
    }
}

impl Config {
    /// Sets [`Config::max_depth`].
    pub fn max_depth(mut self, depth: u32) -> Config {
        self.max_depth = depth;
        self
    }

    /// Sets [`Config::max_live_children`].
    pub fn max_live_children(mut self, n: u32) -> Config {
        self.max_live_children = n;
        self
    }

    /// Sets the creation-rate bound: at most `n` creations per creator within `window`.
    pub fn creation_rate(mut self, n: u32, window: Duration) -> Config {
        self.max_creations_per_window = n;
        self.rate_window = window;
        self
    }

    /// Sets [`Config::busy_timeout`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Config {
        self.busy_timeout = timeout;
        self
    }

    /// Sets [`Config::failover_wait`].
    pub fn failover_wait(mut self, wait: Duration) -> Config {
        self.failover_wait = wait;
        self
    }

    /// Sets [`Config::synchronous`].
    pub fn synchronous(mut self, mode: Synchronous) -> Config {
        self.synchronous = mode;
        self
    }

    /// Sets [`Config::pool_size`].
    pub fn pool_size(mut self, n: u32) -> Config {
        self.pool_size = n.max(1);
        self
    }

    /// Sets [`Config::create_if_missing`].
    pub fn create_if_missing(mut self, create: bool) -> Config {
        self.create_if_missing = create;
        self
    }

    /// Sets [`Config::durable_postures`].
    pub fn durable_postures(mut self, durable: bool) -> Config {
        self.durable_postures = durable;
        self
    }

    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Config {
        self.clock = clock;
        self
    }

    /// Sets [`Config::keep_wal_file`].
    pub fn keep_wal_file(mut self, keep: bool) -> Config {
        self.keep_wal_file = keep;
        self
    }

    /// Sets [`Config::read_only`].
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = dir.path().join("ledger.db");
    /// use session_ledger::{Config, Error, Ledger, StorageError};
    /// Ledger::init(&path)?.create_root("conductor", "alice")?;
    /// let reader = Ledger::open_with(&path, Config::default().read_only(true))?;
    /// assert!(reader.state("conductor")?.known);
    /// assert!(matches!(reader.create_root("other", "alice"), Err(Error::Storage(StorageError::ReadOnly(_)))));
    /// # Ok(()) }
    /// ```
    pub fn read_only(mut self, read_only: bool) -> Config {
        self.read_only = read_only;
        self
    }
}
