//! Opening a ledger file: refusing what is not a ledger or is too new before anything is
//! written, migrating an older one, and building the pool around the connection that did it.
//! Nothing here reads a table that grows with the ledger.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};

use super::connection::{configure, keep_wal_file};
use super::writers::Writers;
use super::{classify, migrate, sqlite_code, Sqlite};
use crate::config::Config;
use crate::error::{Corruption, Error, InputError, Location, Result, StorageError};
use crate::storage::GroupCommit;

/// The pool's connection manager: r2d2_sqlite's, with two changes.
///
/// * Its first connection is the setup connection that [`Sqlite::open`] opened, configured
///   and checked, handed over instead of closed: a process that makes one call opens the file
///   once. r2d2 has no call to add a connection to a pool, and a pool that opened the setup
///   connection itself would retry a refused file until its connection timeout instead of
///   failing at once, so the setup runs before the pool exists and the manager keeps the
///   connection until the pool asks for its first.
/// * A connection handed back while a transaction is still open is reported broken, so the
///   pool discards it instead of handing a half-done transaction to the next caller.
pub(super) struct Manager {
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

impl Manager {
    /// A manager of in-memory connections, with no setup connection: for the tests of the
    /// manager itself.
    #[cfg(test)]
    pub(super) fn in_memory() -> Manager {
        Manager {
            inner: SqliteConnectionManager::memory(),
            first: Mutex::new(None),
            opened: Arc::default(),
        }
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

impl Sqlite {
    /// Opens (and, if allowed, creates) the ledger at `path`, checks that it is a ledger this
    /// build can read, migrates it if it is older, and builds the pool around the connection
    /// that did all this. With [`Config::read_only`], see [`Sqlite::open_read_only`].
    ///
    /// Nothing here reads a table that grows with the ledger: the header, the schema, the few
    /// history rows, and no write lock unless there is a migration to run.
    pub(crate) fn open(path: &Path, config: &Config) -> Result<Sqlite> {
        check_config(config)?;
        if config.read_only {
            return Sqlite::open_read_only(path, config);
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
        if is_archive(&conn).map_err(|e| classify(e, &path))? {
            return Err(Error::Storage(StorageError::IsArchive(Location::File(
                path,
            ))));
        }
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
        Sqlite::with_pool(conn, file, path, config, OpenFlags::empty())
    }

    /// Opens the ledger at `path` for reading only ([`Config::read_only`]): every connection
    /// with `SQLITE_OPEN_READ_ONLY`, no migration, no `journal_mode` change, nothing created
    /// beside the file by this process (SQLite itself creates a missing `-wal` or `-shm` file
    /// when the folder lets it). Refuses a missing file, a file that is not a ledger (an empty
    /// database included: only a writer makes it one), and a ledger at any other schema
    /// version than this build's: a newer one needs a newer build, an older one a writer to
    /// upgrade it.
    ///
    /// A lone copy of a ledger (a backup: the file without its `-wal`) in a folder this user
    /// cannot write cannot be opened the usual way, because a reader of a WAL database needs
    /// the `-shm` file and cannot create it. Such a copy is opened *immutable* instead
    /// (SQLite's `immutable=1`): read as it is, with no lock and no `-shm`. That is safe
    /// exactly when no `-wal` exists, so that every committed row is in the file, and as long
    /// as nobody writes it meanwhile, which a reader who cannot write the folder cannot see;
    /// [`Sqlite::is_immutable`] says that it was opened so, and callers say it to the reader.
    fn open_read_only(path: &Path, config: &Config) -> Result<Sqlite> {
        let path = path.to_path_buf();
        if !path.exists() {
            return Err(Error::Storage(StorageError::NoLedger(Location::File(path))));
        }
        refuse_what_is_no_database(&path, false)?;
        let file = literal_path(&path);
        match Sqlite::read_only_connection(&file, OpenFlags::empty(), &path, config) {
            Err(e) if cannot_open(&e) && !beside(&path, "-wal").exists() => {
                let uri = immutable_uri(&path)?;
                let conn =
                    Sqlite::read_only_connection(&uri, OpenFlags::SQLITE_OPEN_URI, &path, config)
                        .map_err(|e| read_only_failure(e, &path))?;
                let mut sqlite =
                    Sqlite::with_pool(conn, uri, path, config, OpenFlags::SQLITE_OPEN_URI)?;
                sqlite.immutable = true;
                Ok(sqlite)
            }
            Err(e) => Err(read_only_failure(e, &path)),
            Ok(conn) => Sqlite::with_pool(conn, file, path, config, OpenFlags::empty()),
        }
    }

    /// A read-only connection to `file` (a path, or with `extra` `SQLITE_OPEN_URI` a URI),
    /// configured, and checked to hold a ledger of this build's schema version.
    fn read_only_connection(
        file: &Path,
        extra: OpenFlags,
        path: &Path,
        config: &Config,
    ) -> Result<Connection> {
        let failure = |e: rusqlite::Error| classify(e, path);
        let conn =
            Connection::open_with_flags(file, open_flags(true, false) | extra).map_err(failure)?;
        configure(&conn, config).map_err(failure)?;
        match migrate::check(&conn, path)? {
            migrate::Found::Empty => {
                return Err(Error::Storage(StorageError::NotALedger(Location::File(
                    path.to_path_buf(),
                ))))
            }
            // An archive keeps the version it was written at, and is read as it is.
            migrate::Found::Ledger { version }
                if version < migrate::supported_version() && is_archive(&conn)? => {}
            migrate::Found::Ledger { version } if version != migrate::supported_version() => {
                return Err(Error::Input(InputError::InvalidConfig(format!(
                    "read_only: the ledger at {} is at schema version {version}, older than the \
                     {} this build reads, and a read-only open does not upgrade it; open it once \
                     with write access to upgrade it",
                    path.display(),
                    migrate::supported_version()
                ))));
            }
            migrate::Found::Ledger { .. } => {}
        }
        // A read-only connection never checkpoints or deletes the WAL; kept for symmetry, so
        // that no connection of a ledger ever asks SQLite to delete it.
        if config.keep_wal_file {
            keep_wal_file(&conn).map_err(failure)?;
        }
        Ok(conn)
    }

    /// Builds the pool, handing it `first` as its first connection.
    fn with_pool(
        first: Connection,
        file: PathBuf,
        path: PathBuf,
        config: &Config,
        extra: OpenFlags,
    ) -> Result<Sqlite> {
        let init_config = config.clone();
        let opened = Arc::new(AtomicUsize::new(1));
        let manager = Manager {
            inner: SqliteConnectionManager::file(&file)
                .with_flags(open_flags(config.read_only, false) | extra)
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
        let location = Location::File(path);
        Ok(Sqlite {
            pool,
            appends: GroupCommit::new(location.clone()),
            writers: Writers::default(),
            busy_timeout: config.busy_timeout,
            location,
            read_only: config.read_only,
            immutable: false,
            opened,
        })
    }
}

/// The path to hand to SQLite so that it is read as a file name, never as a URI. The bundled
/// SQLite is compiled with `SQLITE_USE_URI`, which makes every name starting with `file:` a URI
/// whatever the open flags say; a relative path is therefore anchored with `./`.
pub(super) fn literal_path(path: &Path) -> PathBuf {
    if path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// The file beside the ledger at `path` with `suffix` (`-wal`, `-shm`) after its name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// True for the failure of a read-only open that could not open the database or its `-shm`
/// (SQLite's "unable to open database file"), as a reader of a WAL database meets when it may
/// not create the files beside it.
fn cannot_open(e: &Error) -> bool {
    match e {
        Error::Storage(StorageError::ReadOnly(_)) => true,
        e => matches!(
            sqlite_code(e),
            Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
        ),
    }
}

/// `file:` URI of the ledger at `path`, read immutable: the absolute path with every byte
/// outside the URI's unreserved characters and `/` percent-encoded, so that no `?`, `#` or `%`
/// of a file name is read as part of the URI.
fn immutable_uri(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let Some(text) = absolute.to_str() else {
        return Err(Error::from(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "cannot open the lone copy at {} immutable: its path is not UTF-8",
                path.display()
            ),
        )));
    };
    let mut uri = String::from("file:");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    Ok(PathBuf::from(uri))
}

/// A read-only open's failure, made clear where SQLite's is not. A ledger is in WAL mode, and a
/// connection to a WAL database needs its `-wal` and `-shm` files: SQLite creates them when
/// they are missing, which a reader who may not write the folder cannot do, and SQLite then
/// says only "unable to open database file". Every writer leaves both files in place when it
/// closes; a ledger last closed by an older writer may lack them. (A lone copy, with no `-wal`
/// at all, is read immutable instead: see [`Sqlite::open_read_only`].)
fn read_only_failure(e: Error, path: &Path) -> Error {
    let missing: Vec<PathBuf> = ["-wal", "-shm"]
        .iter()
        .map(|suffix| beside(path, suffix))
        .filter(|p| !p.exists())
        .collect();
    if !cannot_open(&e) || missing.is_empty() {
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

/// True when the file on `conn` holds an archive: it has the `archive` table.
fn is_archive(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(super::archive_file::IS_ARCHIVE, [], |row| row.get(0))
}
