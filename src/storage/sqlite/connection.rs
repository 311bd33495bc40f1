//! A connection to a ledger file, configured: the per-connection pragmas, each with why, the
//! kept WAL file, and the `sha3()` SQL function the audit chain's verifier needs.
//!
//! It knows no table: the schema is `migrate.rs`'s, the statements are the other files'.

use rusqlite::Connection;

use crate::config::{Config, Synchronous};

/// `PRAGMA journal_size_limit`, in bytes: see [`configure`].
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// `PRAGMA application_id` of every ledger: ASCII "SLdg". Lets `file(1)` and this library tell
/// a ledger from any other SQLite database.
pub(super) const APPLICATION_ID: i32 = 0x534c_6467;

/// The per-connection pragmas, run on every new connection (the pool's init hook) and on the
/// setup connection. None of them writes to the file.
pub(super) fn configure(conn: &Connection, config: &Config) -> rusqlite::Result<()> {
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
pub(super) fn keep_wal_file(conn: &Connection) -> rusqlite::Result<()> {
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
