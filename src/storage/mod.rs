//! The storage layer: every line of SQL and all connection handling live under this module, so
//! that a second backend is an addition beside it rather than a rewrite of the concept modules.
//!
//! Writers take `&Transaction<'_>` and readers take `&Connection`, so a write cannot compile
//! outside a transaction; [`Storage::write`] is the only place a write transaction begins, and it
//! always begins with `BEGIN IMMEDIATE`. The strategy is written down in `docs/concurrency.md`.

pub(crate) mod audit;
pub(crate) mod grants;
pub(crate) mod labels;
mod migrate;
pub(crate) mod postures;

pub(crate) use migrate::{integrity, supported_version};
pub(crate) mod sessions;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::config::{Config, Synchronous};
use crate::error::{Corruption, EngineError, Error, InputError, Location, Result, StorageError};

/// `PRAGMA journal_size_limit`, in bytes: see [`configure`].
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// `PRAGMA application_id` of every ledger: ASCII "SLdg". Lets `file(1)` and this library tell
/// a ledger from any other SQLite database.
pub(crate) const APPLICATION_ID: i32 = 0x534c_6467;

/// The connection pool and the file it serves.
pub(crate) struct Storage {
    pool: r2d2::Pool<Manager>,
    path: PathBuf,
    read_only: bool,
    /// How many connections to the file this handle has opened, the setup connection included.
    #[cfg_attr(not(test), allow(dead_code))]
    opened: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// The pool's connection manager: r2d2_sqlite's, with two changes.
///
/// * Its first connection is the setup connection that [`Storage::open`] opened, configured
///   and checked, handed over instead of closed: a process that makes one call opens the file
///   once. r2d2 has no call to add a connection to a pool, and a pool that opened the setup
///   connection itself would retry a refused file until its connection timeout instead of
///   failing at once, so the setup runs before the pool exists and the manager keeps the
///   connection until the pool asks for its first.
/// * A connection handed back while a transaction is still open is reported broken, so the
///   pool discards it instead of handing a half-done transaction to the next caller.
struct Manager {
    inner: SqliteConnectionManager,
    first: Mutex<Option<Connection>>,
    opened: Arc<AtomicUsize>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = rusqlite::Error;

    fn connect(&self) -> Result<Connection, rusqlite::Error> {
        // A poisoned lock only means a thread panicked while holding it: the slot is still
        // either full or empty.
        let first = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(conn) = first {
            return Ok(conn);
        }
        let conn = self.inner.connect()?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut Connection) -> Result<(), rusqlite::Error> {
        self.inner.is_valid(conn)
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        !conn.is_autocommit()
    }
}

/// Flags for every connection: read-write (read-only for a handle opened with
/// [`Config::read_only`]), create only when asked, no URI interpretation (a path is a path,
/// never `file:...?mode=memory`), and no mutex (each connection is used by one thread at a
/// time, under the pool's guard).
fn open_flags(read_only: bool, create: bool) -> OpenFlags {
    if read_only {
        return OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    flags
}

/// Refuses settings that the pool or SQLite cannot take, before the file is touched: r2d2 and
/// rusqlite panic on them.
fn check_config(config: &Config) -> Result<()> {
    if config.pool_size == 0 {
        return Err(Error::Input(InputError::InvalidConfig(
            "pool_size must be at least 1".to_owned(),
        )));
    }
    // SQLite takes the busy timeout in milliseconds as a C int.
    if config.busy_timeout.as_millis() > i32::MAX as u128 {
        return Err(Error::Input(InputError::InvalidConfig(format!(
            "busy_timeout must be at most {} ms (about 24.8 days), not {:?}",
            i32::MAX,
            config.busy_timeout
        ))));
    }
    Ok(())
}

/// Refuses an existing file that is too short to be a database, before SQLite opens it: SQLite
/// takes a file of 0 or 1 byte for an empty database and would write a ledger over it (longer
/// files without its header it refuses itself, as `NotADatabase`). An empty file is accepted
/// only when the ledger may be created.
fn refuse_what_is_no_database(path: &Path, may_create: bool) -> Result<()> {
    use std::io::Read;
    const HEADER: &[u8; 16] = b"SQLite format 3\0";
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(()); // missing (to be created) or unreadable: SQLite reports it
    };
    let mut start = Vec::with_capacity(HEADER.len());
    file.by_ref()
        .take(HEADER.len() as u64)
        .read_to_end(&mut start)?;
    let acceptable = if start.is_empty() {
        may_create
    } else {
        start.len() == HEADER.len() && start == HEADER
    };
    if acceptable {
        Ok(())
    } else {
        Err(Error::Storage(StorageError::NotALedger(Location::File(
            path.to_path_buf(),
        ))))
    }
}

/// The per-connection pragmas, run on every new connection (the pool's init hook) and on the
/// setup connection. None of them writes to the file.
fn configure(conn: &Connection, config: &Config) -> rusqlite::Result<()> {
    // Wait for another writer instead of failing with SQLITE_BUSY at once. Together with
    // BEGIN IMMEDIATE for every write this keeps SQLITE_BUSY away from callers.
    conn.busy_timeout(config.busy_timeout)?;
    // created_by, labels.session_id and audit.kind are foreign keys; SQLite enforces them only
    // when asked, per connection.
    conn.pragma_update(None, "foreign_keys", true)?;
    // FULL by default: in WAL mode, NORMAL can lose the last commits on power loss, and a
    // committed revocation must not come undone.
    let sync = match config.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    // Triggers and views in the file may not call functions with side effects: the schema is
    // data an operator can edit with the shell, so the library does not trust it to run code.
    conn.pragma_update(None, "trusted_schema", false)?;
    // Up to 16 MiB of page cache per connection (allocated as pages are used, not up front):
    // a cascade over a large tree keeps its dirty pages in memory instead of spilling them to
    // the WAL in the middle of the transaction.
    conn.pragma_update(None, "cache_size", -16_384)?;
    // Checkpoint every 4,000 WAL pages (16 MiB) rather than every 1,000: the pages every write
    // touches (the audit tail, its index) are copied to the database once per checkpoint
    // instead of once per 1,000 pages written.
    conn.pragma_update(None, "wal_autocheckpoint", 4_000)?;
    // With a limit set, the last connection to close leaves the kept WAL file empty (SQLite
    // truncates a persistent WAL to zero bytes on close when any limit is set), so the next
    // process to open an idle ledger has no WAL to read back before its first statement: an
    // open costs the same with a WAL of 0 or 16 MiB. While the ledger is in use, a WAL that a
    // large transaction grew past 64 MiB (four checkpoint intervals) is cut back to it at the
    // next checkpoint; below that the file keeps its blocks, and commits overwrite them.
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    // Statement journals and temporary b-trees in memory, not in temporary files. A statement
    // journal records the pages a statement changes so that a trigger's RAISE(ABORT) can undo
    // just that statement; past 64 KiB it spills to a file, and from then on every later
    // statement of the transaction wrote its journal pages there with pwrite(). A 100,000-session
    // cascade spent over a quarter of its time in those writes. Memory use stays bounded by the
    // pages one statement changes.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    register_sha3(conn)?;
    Ok(())
}

/// Keeps the WAL file, and with it the `-shm` file, when the last connection closes
/// (`SQLITE_FCNTL_PERSIST_WAL`), as the shell's `.filectrl persist_wal 1` does. SQLite otherwise
/// deletes both on the last close, and a reader who may read the ledger but not write its
/// folder cannot open a WAL database whose `-wal` and `-shm` files are missing: opening one
/// means creating them. Every writer sets it, the CLI included, so that such a reader (an
/// auditor's `sqlite3 -readonly`, a read-only handle) finds them.
///
/// The file is kept, not its content: with `journal_size_limit` set (see [`configure`]), the
/// last close truncates the checkpointed WAL to zero bytes, so the next process has nothing to
/// read back before its first statement. Without the limit the close would leave the
/// checkpointed frames valid, and every open of the idle file would first read them all back
/// (up to the 16 MiB between checkpoints, more after a large transaction) to rebuild the WAL
/// index. The price: a restarted backend appends to an empty WAL until its first checkpoint,
/// instead of overwriting blocks that exist (`cargo bench --bench fsync_floor` measures the
/// difference per commit).
#[allow(unsafe_code)]
fn keep_wal_file(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::ffi;
    let mut on: std::ffi::c_int = 1;
    // SAFETY: `handle()` is the live connection `conn` borrows, used on this thread only for the
    // duration of the call. SQLITE_FCNTL_PERSIST_WAL reads and writes one int through the
    // pointer, which points to `on`, alive for the whole call.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_PERSIST_WAL,
            std::ptr::addr_of_mut!(on).cast(),
        )
    };
    // SQLITE_NOTFOUND: a VFS without the file control; the WAL is then deleted on close, as
    // by default, and nothing else changes.
    if rc == ffi::SQLITE_OK || rc == ffi::SQLITE_NOTFOUND {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None))
    }
}

/// `sha3(X [, 256])`, as the stock sqlite3 shell has it (SHA3-256 of a text's UTF-8 bytes or of
/// a blob, as a blob), so migrations and auditors' queries compute the audit chain alike.
/// Other sizes than 256 are refused; NULL gives NULL.
fn register_sha3(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    use sha3::{Digest, Sha3_256};
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("sha3", -1, flags, |ctx| {
        if ctx.is_empty() || ctx.len() > 2 {
            return Err(rusqlite::Error::UserFunctionError(
                "sha3(X [, 256]) takes one or two arguments".into(),
            ));
        }
        if ctx.len() == 2 && ctx.get::<i64>(1)? != 256 {
            return Err(rusqlite::Error::UserFunctionError(
                "sha3: only the 256-bit size is available here".into(),
            ));
        }
        let bytes: Option<Vec<u8>> = match ctx.get_raw(0) {
            ValueRef::Null => None,
            ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
            ValueRef::Integer(i) => Some(i.to_string().into_bytes()),
            ValueRef::Real(r) => Some(r.to_string().into_bytes()),
        };
        Ok(bytes.map(|b| Sha3_256::digest(&b).to_vec()))
    })
}

impl Storage {
    /// Opens (and, if allowed, creates) the ledger at `path`, checks that it is a ledger this
    /// build can read, migrates it if it is older, and builds the pool around the connection
    /// that did all this. With [`Config::read_only`], see [`Storage::open_read_only`].
    ///
    /// Nothing here reads a table that grows with the ledger: the header, the schema, the few
    /// history rows, and no write lock unless there is a migration to run.
    pub(crate) fn open(path: &Path, config: &Config) -> Result<Storage> {
        check_config(config)?;
        if config.read_only {
            return Storage::open_read_only(path, config);
        }
        let path = path.to_path_buf();
        if !config.create_if_missing && !path.exists() {
            return Err(Error::Storage(StorageError::NoLedger(Location::File(path))));
        }
        refuse_what_is_no_database(&path, config.create_if_missing)?;
        let file = literal_path(&path);
        let mut conn =
            Connection::open_with_flags(&file, open_flags(false, config.create_if_missing))
                .map_err(|e| classify(e, &path))?;
        configure(&conn, config).map_err(|e| classify(e, &path))?;
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(Error::Storage(StorageError::ReadOnly(Location::File(path))));
        }
        // Everything up to here has only read the file. Refuse a foreign or newer file before
        // the first write (switching to WAL rewrites the header).
        let found = migrate::check(&conn, &path)?;
        // On a ledger already in WAL mode this changes nothing and reads only the header.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| classify(e, &path))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Corruption(Corruption::new(format!(
                "could not switch {} to WAL mode (it stayed in {mode} mode)",
                path.display()
            ))));
        }
        if !found.is_current() {
            migrate::run(&mut conn, &path).map_err(|e| match e {
                e if sqlite_code(&e) == Some(rusqlite::ErrorCode::ReadOnly) => {
                    Error::Storage(StorageError::ReadOnly(Location::File(path.clone())))
                }
                other => other,
            })?;
        }
        // The file is accepted: from here on, connections keep its WAL.
        if config.keep_wal_file {
            keep_wal_file(&conn).map_err(|e| classify(e, &path))?;
        }
        Storage::with_pool(conn, file, path, config)
    }

    /// Opens the ledger at `path` for reading only ([`Config::read_only`]): every connection
    /// with `SQLITE_OPEN_READ_ONLY`, no migration, no `journal_mode` change, nothing created
    /// beside the file by this process (SQLite itself creates a missing `-wal` or `-shm` file
    /// when the folder lets it). Refuses a missing file, a file that is not a ledger (an empty
    /// database included: only a writer makes it one), and a ledger at any other schema
    /// version than this build's: a newer one needs a newer build, an older one a writer to
    /// upgrade it.
    fn open_read_only(path: &Path, config: &Config) -> Result<Storage> {
        let path = path.to_path_buf();
        if !path.exists() {
            return Err(Error::Storage(StorageError::NoLedger(Location::File(path))));
        }
        refuse_what_is_no_database(&path, false)?;
        let file = literal_path(&path);
        let failure = |e: rusqlite::Error| read_only_failure(classify(e, &path), &path);
        let conn = Connection::open_with_flags(&file, open_flags(true, false)).map_err(failure)?;
        configure(&conn, config).map_err(failure)?;
        let found = migrate::check(&conn, &path).map_err(|e| read_only_failure(e, &path))?;
        match found {
            migrate::Found::Empty => {
                return Err(Error::Storage(StorageError::NotALedger(Location::File(
                    path,
                ))))
            }
            migrate::Found::Ledger { version } if version != supported_version() => {
                return Err(Error::Input(InputError::InvalidConfig(format!(
                    "read_only: the ledger at {} is at schema version {version}, older than the \
                     {} this build reads, and a read-only open does not upgrade it; open it once \
                     with write access to upgrade it",
                    path.display(),
                    supported_version()
                ))));
            }
            migrate::Found::Ledger { .. } => {}
        }
        // A read-only connection never checkpoints or deletes the WAL; kept for symmetry, so
        // that no connection of a ledger ever asks SQLite to delete it.
        if config.keep_wal_file {
            keep_wal_file(&conn).map_err(failure)?;
        }
        Storage::with_pool(conn, file, path, config)
    }

    /// Builds the pool, handing it `first` as its first connection.
    fn with_pool(
        first: Connection,
        file: PathBuf,
        path: PathBuf,
        config: &Config,
    ) -> Result<Storage> {
        let init_config = config.clone();
        let opened = Arc::new(AtomicUsize::new(1));
        let manager = Manager {
            inner: SqliteConnectionManager::file(&file)
                .with_flags(open_flags(config.read_only, false))
                .with_init(move |c| {
                    configure(c, &init_config)?;
                    if init_config.keep_wal_file {
                        keep_wal_file(c)?;
                    }
                    Ok(())
                }),
            first: Mutex::new(Some(first)),
            opened: Arc::clone(&opened),
        };
        // No validation query on checkout: it would cost every read a round trip, and a
        // connection that is unusable fails its statement with a clear error anyway. A
        // connection handed back inside a transaction is discarded (`Manager::has_broken`).
        // `min_idle` 0: the pool opens a connection only when a call finds none idle, and the
        // first call finds none and gets the setup connection.
        let pool = r2d2::Pool::builder()
            .max_size(config.pool_size)
            .min_idle(Some(0))
            .test_on_check_out(false)
            .build(manager)?;
        Ok(Storage {
            pool,
            path,
            read_only: config.read_only,
            opened,
        })
    }

    /// True for a handle opened with [`Config::read_only`].
    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// How many connections to the file this handle has opened so far, the setup connection
    /// included.
    #[cfg(test)]
    fn connections_opened(&self) -> usize {
        self.opened.load(Ordering::Relaxed)
    }

    /// The ledger file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a pooled connection, outside any explicit transaction.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.pool.get()?;
        f(&conn)
    }

    /// Runs `f` on a pooled connection inside one read transaction (`BEGIN DEFERRED`), so that
    /// every statement it runs reads the same snapshot of the ledger. Nothing is written.
    pub(crate) fn snapshot<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` inside a `BEGIN IMMEDIATE` transaction and commits when it returns `Ok`; an
    /// `Err` rolls everything back. On a read-only handle, fails with [`StorageError::ReadOnly`](crate::StorageError::ReadOnly)
    /// before taking a connection.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        if self.read_only {
            return Err(Error::Storage(StorageError::ReadOnly(Location::File(
                self.path.clone(),
            ))));
        }
        let mut conn = self.pool.get()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

/// The path to hand to SQLite so that it is read as a file name, never as a URI. The bundled
/// SQLite is compiled with `SQLITE_USE_URI`, which makes every name starting with `file:` a URI
/// whatever the open flags say; a relative path is therefore anchored with `./`.
fn literal_path(path: &Path) -> PathBuf {
    if path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// A named savepoint inside a write transaction, to undo part of it (`rollback_to`) and go on.
pub(crate) fn savepoint(tx: &Transaction<'_>, name: &str) -> Result<()> {
    debug_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    tx.execute_batch(&format!("SAVEPOINT {name}"))?;
    Ok(())
}

/// Undoes everything since the savepoint `name` and ends it.
pub(crate) fn rollback_to(tx: &Transaction<'_>, name: &str) -> Result<()> {
    tx.execute_batch(&format!("ROLLBACK TO {name}; RELEASE {name}"))?;
    Ok(())
}

/// Keeps everything since the savepoint `name` and ends it.
pub(crate) fn release(tx: &Transaction<'_>, name: &str) -> Result<()> {
    tx.execute_batch(&format!("RELEASE {name}"))?;
    Ok(())
}

/// Turns the errors that mean "this is not a ledger" or "read-only" into their own variants.
fn classify(e: rusqlite::Error, path: &Path) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            Error::Storage(StorageError::NotALedger(Location::File(path.to_path_buf())))
        }
        Some(rusqlite::ErrorCode::ReadOnly) => {
            Error::Storage(StorageError::ReadOnly(Location::File(path.to_path_buf())))
        }
        _ => Error::from(e),
    }
}

/// A read-only open's failure, made clear where SQLite's is not. A ledger is in WAL mode, and a
/// connection to a WAL database needs its `-wal` and `-shm` files: SQLite creates them when
/// they are missing, which a reader who may not write the folder cannot do, and SQLite then
/// says only "unable to open database file". Every writer leaves both files in place when it
/// closes; a ledger last closed by an older writer may lack them.
fn read_only_failure(e: Error, path: &Path) -> Error {
    let cannot_open = match &e {
        Error::Storage(StorageError::ReadOnly(_)) => true,
        e => matches!(
            sqlite_code(e),
            Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
        ),
    };
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    let missing: Vec<PathBuf> = ["-wal", "-shm"]
        .iter()
        .map(|suffix| beside(suffix))
        .filter(|p| !p.exists())
        .collect();
    if !cannot_open || missing.is_empty() {
        return e;
    }
    let names: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
    Error::from(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "cannot open the ledger at {} for reading: {} missing, and a reader who may not \
             write its folder cannot create {}; a writer leaves both files in place when it \
             closes, so open the ledger once with write access and read it again",
            path.display(),
            if names.len() == 1 {
                format!("{} is", names[0])
            } else {
                format!("{} are", names.join(" and "))
            },
            if names.len() == 1 { "it" } else { "them" },
        ),
    ))
}

/// Maps a row's text timestamp, failing with [`Error::Corruption`] on a malformed one.
pub(crate) fn ts(column: &str, value: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    crate::clock::parse_ts(value).ok_or_else(|| {
        Error::Corruption(Corruption::new(format!(
            "malformed time {value:?} in {column}"
        )))
    })
}

/// Like [`ts`] for a nullable column.
pub(crate) fn opt_ts(
    column: &str,
    value: Option<String>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    value.map(|v| ts(column, &v)).transpose()
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        let busy = matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        EngineError::new("sqlite", busy, e).into()
    }
}

impl From<r2d2::Error> for Error {
    fn from(e: r2d2::Error) -> Self {
        EngineError::new("connection pool", false, e).into()
    }
}

impl From<refinery::Error> for Error {
    fn from(e: refinery::Error) -> Self {
        EngineError::new("migration", false, e).into()
    }
}

/// The SQLite result code of a storage error, when it has one.
pub(crate) fn sqlite_code(e: &Error) -> Option<rusqlite::ErrorCode> {
    match e {
        Error::Storage(StorageError::Engine(engine)) => engine
            .inner()
            .downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2d2::ManageConnection;

    #[test]
    fn a_handle_used_by_one_caller_at_a_time_opens_the_file_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ledger.db");
        for config in [Config::default(), Config::default().read_only(true)] {
            let storage = Storage::open(&path, &config).expect("open");
            // The setup connection, kept for the pool's first call.
            assert_eq!(storage.connections_opened(), 1);
            for _ in 0..3 {
                storage
                    .read(|c| {
                        Ok(c.query_row("SELECT count(*) FROM sessions", [], |r| {
                            r.get::<_, i64>(0)
                        })?)
                    })
                    .expect("read");
            }
            if !config.read_only {
                storage
                    .write(|tx| Ok(tx.execute_batch("SELECT 1")?))
                    .expect("write");
            }
            assert_eq!(
                storage.connections_opened(),
                1,
                "read_only: {}: a connection beside the setup connection",
                config.read_only
            );
        }
    }

    #[test]
    fn a_connection_handed_back_inside_a_transaction_is_reported_broken() {
        let manager = Manager {
            inner: SqliteConnectionManager::memory(),
            first: Mutex::new(None),
            opened: Arc::default(),
        };
        let mut conn = manager.connect().expect("connect");
        assert!(!manager.has_broken(&mut conn));
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        assert!(manager.has_broken(&mut conn));
        conn.execute_batch("ROLLBACK").expect("rollback");
        assert!(!manager.has_broken(&mut conn));
    }
}
