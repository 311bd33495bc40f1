//! Opening a ledger on a server: the URL, the setup connection that checks what the database
//! holds and migrates it, and the pool built around that connection. Nothing here reads a table
//! that grows with the ledger. The password in a URL is never written anywhere: not in a
//! [`Location`], an error, or a log.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::config::Host;
use postgres::error::Severity;
use postgres::NoTls;

use super::{for_the_owner, migrate, PgConn, Postgres};
use crate::config::Config;
use crate::error::{Corruption, Error, InputError, Location, Result, StorageError};
use crate::storage::GroupCommit;

/// Where the ledger is, as it may be shown: the user, the hosts (a socket folder as `host=`),
/// the ports and the database, and no password.
fn describe(config: &postgres::Config) -> Location {
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let mut tcp = Vec::new();
    let mut sockets = Vec::new();
    let ports = config.get_ports();
    for (i, host) in config.get_hosts().iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        match host {
            Host::Tcp(name) => tcp.push(format!("{name}:{port}")),
            Host::Unix(path) => sockets.push(format!("{} port {port}", path.display())),
        }
    }
    let db = config.get_dbname().unwrap_or("");
    let mut text = format!("postgresql://{user}{}/{db}", tcp.join(","));
    if !sockets.is_empty() {
        text.push_str(&format!(" (socket {})", sockets.join(", ")));
    }
    Location::Server(text)
}

/// The pool's connection manager, with four things r2d2_postgres's lacks:
///
/// * its first connection is the setup connection [`Postgres::open`] checked and migrated;
/// * every connection carries the statements prepared on it, and the warnings the server sent
///   on it (each connection has a notice callback of its own, so that a warning is tied to the
///   connection, and so to the transaction, it came on);
/// * checking a connection out costs no round trip: one known closed, or marked broken by an
///   operation that met a server gone away, is dropped instead of handed out. A connection the
///   server ended while it sat idle is found out by the first statement sent on it, which
///   fails before anything was written, and the operation runs again on a fresh connection
///   (`failover.rs`): asking the server on each checkout would double the round trips of a
///   read;
/// * each connection is set up as the ledger needs (see [`configure`]).
pub(super) struct Manager {
    config: postgres::Config,
    location: Location,
    first: Mutex<Option<PgConn>>,
    read_only: bool,
    /// The config's busy timeout, as `lock_timeout` takes it.
    lock_timeout: String,
}

/// The shortest wait for a connection from the pool.
pub(super) const SHORTEST_WAIT: Duration = Duration::from_millis(50);

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = Error;

    fn connect(&self) -> Result<PgConn> {
        // A poisoned lock only means a thread panicked holding it: the slot is full or empty.
        let first = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(conn) = first {
            return Ok(conn);
        }
        let (conn, standby) = connect(&self.config, self.read_only, &self.lock_timeout)?;
        // A handle that writes takes no connection to a standby, which would refuse its writes.
        if standby && !self.read_only {
            return Err(StorageError::Standby(self.location.clone()).into());
        }
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<()> {
        if conn.broken || conn.client.is_closed() {
            return Err(Corruption::new("a broken connection was checked out").into());
        }
        Ok(())
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// A new connection as the pool's connections are, its warnings collected, and whether its
/// server is a standby.
fn connect(
    config: &postgres::Config,
    read_only: bool,
    lock_timeout: &str,
) -> Result<(PgConn, bool)> {
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let mut config = config.clone();
    let sink = Arc::clone(&warnings);
    config.notice_callback(move |notice| {
        if notice.parsed_severity() == Some(Severity::Warning) {
            let said = match notice.detail() {
                Some(detail) => format!("{} ({detail})", notice.message()),
                None => notice.message().to_owned(),
            };
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(said);
        }
    });
    let mut client = config.connect(NoTls)?;
    let standby = configure(&mut client, read_only, lock_timeout)?;
    let conn = PgConn {
        client,
        statements: Default::default(),
        warnings,
        broken: false,
    };
    Ok((conn, standby))
}

/// The session settings of every connection, in one statement: UTC, so that a time read back
/// is the time stored whatever the server's zone; `lock_timeout`, how long a writer waits for
/// the ledger's lock (and any statement for a lock); and, for a read-only handle, no write at
/// all. It also says whether the server is a standby (in recovery).
const CONFIGURE: &str = "SELECT set_config('TimeZone', 'UTC', false),
            set_config('lock_timeout', $1, false),
            set_config('default_transaction_read_only', $2, false),
            pg_is_in_recovery() AS standby";

/// Sets a connection up; returns whether its server is a standby.
fn configure(client: &mut postgres::Client, read_only: bool, lock_timeout: &str) -> Result<bool> {
    let read_only = if read_only { "on" } else { "off" };
    let row = client.query_one(CONFIGURE, &[&lock_timeout, &read_only])?;
    Ok(row.try_get("standby")?)
}

/// Refuses settings the pool cannot take, before anything is opened.
fn check_config(config: &Config) -> Result<()> {
    if config.pool_size == 0 {
        return Err(InputError::InvalidConfig("pool_size must be at least 1".to_owned()).into());
    }
    Ok(())
}

impl Postgres {
    /// Opens the ledger in the database `url` names (its `search_path`'s first schema), checks
    /// that it is a ledger this build can read (or an empty schema to make one in), migrates it
    /// if it is older, and builds the pool around the connection that did this.
    pub(crate) fn open(url: &str, config: &Config) -> Result<Postgres> {
        check_config(config)?;
        // The parser's message quotes no part of the URL, so no password can leak through it.
        let pg: postgres::Config = url.parse().map_err(|e: postgres::Error| {
            Error::from(InputError::InvalidConfig(format!(
                "not a PostgreSQL URL: {e}"
            )))
        })?;
        refuse_hosts_holding_a_password(&pg)?;
        let location = describe(&pg);
        let lock_timeout = format!("{}ms", config.busy_timeout.as_millis().max(1));
        let (mut setup, standby) = connect(&pg, config.read_only, &lock_timeout)
            .map_err(|e| connect_failure(e, &location))?;
        if standby && !config.read_only {
            return Err(StorageError::Standby(location).into());
        }
        let client = &mut setup.client;
        match migrate::check(client, &location)? {
            migrate::Found::Ledger { version } if version == migrate::supported_version() => {
                if !config.read_only && !may_write(client)? {
                    return Err(StorageError::ReadOnly(location).into());
                }
            }
            found if config.read_only => return Err(read_only_refusal(found, &location)),
            migrate::Found::Empty if !config.create_if_missing => {
                return Err(StorageError::NoLedger(location).into())
            }
            _ => migrate::run(client, &location).map_err(for_the_owner)?,
        }
        let manager = Manager {
            config: pg,
            location: location.clone(),
            first: Mutex::new(Some(setup)),
            read_only: config.read_only,
            lock_timeout,
        };
        // Connections are opened when needed, and checked out without a round trip (see
        // [`Manager`]). The pool retries a connection it could not open after a pause that
        // doubles up to half its `connection_timeout`: a second here, so that a failover's new
        // primary is found within half a second of taking connections. Callers wait for a
        // connection as long as their failover wait allows (`failover.rs`), not this long.
        let pool = r2d2::Pool::builder()
            .max_size(config.pool_size)
            .min_idle(Some(0))
            .test_on_check_out(true)
            .connection_timeout(Duration::from_secs(1))
            .build(manager)?;
        Ok(Postgres {
            pool,
            appends: GroupCommit::new(location.clone()),
            location,
            read_only: config.read_only,
            failover_wait: config.failover_wait,
        })
    }
}

/// Refuses a URL whose host holds an `@`: a password (or user name) with an `@` that is not
/// percent-encoded ends the user part early, and the rest of the password is read as the host.
/// The message names the host that was meant (what follows the last `@`) and the encoding, and
/// never the part before it, which is the password's.
fn refuse_hosts_holding_a_password(pg: &postgres::Config) -> Result<()> {
    for host in pg.get_hosts() {
        if let Host::Tcp(name) = host {
            if let Some((_, meant)) = name.rsplit_once('@') {
                return Err(InputError::InvalidConfig(format!(
                    "the URL's host holds an '@': an '@' in the user name or password must be \
                     percent-encoded, or what follows it is read as part of the host (the host \
                     meant is probably {meant:?}); encode @ as %40, / as %2F, : as %3A, % as \
                     %25, # as %23 and ? as %3F"
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// A failure to connect, naming the server and database it tried (never the password) and,
/// for a host name that could not be looked up, what to check.
fn connect_failure(e: Error, location: &Location) -> Error {
    let Error::Storage(StorageError::Engine(engine)) = e else {
        return e;
    };
    let lookup = engine.to_string().contains("failed to lookup address");
    let hint = if lookup {
        format!(
            "could not find the host of {location}: check its name, and that special \
             characters of the user name and password are percent-encoded"
        )
    } else {
        format!("connecting to {location}")
    };
    engine.with_hint(&hint).into()
}

/// Whether the role may write the ledger: append to its audit trail, which every change does.
/// A role that may only read (an auditor's) opens it with [`Config::read_only`].
fn may_write(client: &mut postgres::Client) -> Result<bool> {
    let row = client.query_one(
        "SELECT has_table_privilege('audit', 'INSERT') AS may_write",
        &[],
    )?;
    Ok(row.try_get("may_write")?)
}

/// Why a read-only handle cannot open what it found: it neither creates nor upgrades a ledger.
fn read_only_refusal(found: migrate::Found, location: &Location) -> Error {
    match found {
        migrate::Found::Empty => StorageError::NotALedger(location.clone()).into(),
        migrate::Found::Ledger { version } => InputError::InvalidConfig(format!(
            "read_only: the ledger at {location} is at schema version {version}, older than the \
             {} this build reads, and a read-only open does not upgrade it; open it once with \
             write access to upgrade it",
            migrate::supported_version()
        ))
        .into(),
    }
}
