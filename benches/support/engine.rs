//! Where a bench's ledger lives: a SQLite file, or a schema of its own on a PostgreSQL server.
//!
//! Every bench runs on SQLite, and on PostgreSQL as well when `SESSION_LEDGER_BENCH_POSTGRES`
//! holds the URL of a database the bench may create schemas in (the owner role's, over a Unix
//! socket for the figures in docs/performance.md). `scripts/with-postgres --durable` starts a
//! throwaway server with PostgreSQL's durability settings and sets it; without `--durable` it is
//! not set, so nothing is ever measured against a server that does not sync its commits.
//! `BENCH_ENGINES=sqlite` or `BENCH_ENGINES=postgres` runs one engine only.
//!
//! Both engines get the same input: a bench builds its ledger through the building handle into
//! a SQLite file ([`Place::built`]); on PostgreSQL that file is then copied, row for row, into
//! a new schema with `Ledger::copy_into` (the product's own way to move a ledger) and vacuumed
//! and analyzed, as autovacuum would have left a ledger that grew there. A schema is dropped
//! with its [`Place`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use postgres::{Client, NoTls};
use session_ledger::{Config, Ledger};

use super::{builder_config, checkpoint, copy_ledger, flush_wal};

/// The variable naming the server the benches may measure PostgreSQL on.
pub const POSTGRES_URL_VARIABLE: &str = "SESSION_LEDGER_BENCH_POSTGRES";

/// A storage engine of the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// `sqlite` or `postgres`, as criterion ids and the benches' lines name it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }
}

/// The server's URL from [`POSTGRES_URL_VARIABLE`], if set.
pub fn postgres_server() -> Option<String> {
    std::env::var(POSTGRES_URL_VARIABLE)
        .ok()
        .filter(|url| !url.is_empty())
}

/// The engines this run measures: SQLite, then PostgreSQL when [`POSTGRES_URL_VARIABLE`] is
/// set, narrowed by `BENCH_ENGINES` (a comma-separated list). Says once, on stderr, when
/// PostgreSQL is left out for want of a server.
pub fn engines() -> Vec<Engine> {
    static SKIPPED: Once = Once::new();
    let wanted = std::env::var("BENCH_ENGINES").ok();
    let wants = |engine: Engine| {
        wanted
            .as_deref()
            .is_none_or(|list| list.split(',').any(|w| w.trim() == engine.name()))
    };
    if let Some(list) = &wanted {
        for word in list.split(',') {
            assert!(
                ["sqlite", "postgres"].contains(&word.trim()),
                "BENCH_ENGINES={list}: {word:?} is not sqlite or postgres"
            );
        }
    }
    let mut out = Vec::new();
    if wants(Engine::Sqlite) {
        out.push(Engine::Sqlite);
    }
    if wants(Engine::Postgres) {
        if postgres_server().is_some() {
            out.push(Engine::Postgres);
        } else if wanted.is_some() {
            panic!("BENCH_ENGINES asks for postgres, and {POSTGRES_URL_VARIABLE} is not set");
        } else {
            SKIPPED.call_once(|| {
                eprintln!(
                    "benches: PostgreSQL is not measured: {POSTGRES_URL_VARIABLE} is not set \
                     (scripts/with-postgres --durable sets it)"
                );
            });
        }
    }
    out
}

/// Where one bench ledger lives.
pub struct Place {
    engine: Engine,
    at: At,
}

enum At {
    /// A SQLite file, in a temporary folder of its own when `dir` is set.
    File {
        path: PathBuf,
        _dir: Option<tempfile::TempDir>,
    },
    /// A schema on the server, dropped with the place.
    Schema { server: String, schema: String },
}

static NEXT_SCHEMA: AtomicUsize = AtomicUsize::new(0);
static PGCRYPTO: Once = Once::new();

impl Place {
    /// An empty place on `engine`: a file in a new temporary folder, or a new schema.
    pub fn new(engine: Engine) -> Place {
        match engine {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary folder");
                Place {
                    engine,
                    at: At::File {
                        path: dir.path().join("ledger.db"),
                        _dir: Some(dir),
                    },
                }
            }
            Engine::Postgres => Place::schema(),
        }
    }

    /// An empty place on `engine`; a SQLite file is `path` (kept when the place is dropped).
    pub fn at_path(engine: Engine, path: &Path) -> Place {
        match engine {
            Engine::Sqlite => Place {
                engine,
                at: At::File {
                    path: path.to_path_buf(),
                    _dir: None,
                },
            },
            Engine::Postgres => Place::schema(),
        }
    }

    /// A new, empty schema on the server.
    fn schema() -> Place {
        let server =
            postgres_server().unwrap_or_else(|| panic!("{POSTGRES_URL_VARIABLE} is not set"));
        let mut admin = connect(&server);
        PGCRYPTO.call_once(|| {
            // Every ledger's migration asks for pgcrypto; in `public` it serves them all and
            // outlives the schemas the benches drop.
            admin
                .batch_execute(
                    "SELECT pg_advisory_lock(1);
                     CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public;
                     SELECT pg_advisory_unlock(1);",
                )
                .expect("pgcrypto in public");
        });
        let schema = format!(
            "bench_{}_{}",
            std::process::id(),
            NEXT_SCHEMA.fetch_add(1, Ordering::Relaxed)
        );
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .expect("a schema for the bench");
        Place {
            engine: Engine::Postgres,
            at: At::Schema { server, schema },
        }
    }

    /// A place on `engine` holding a copy of the SQLite ledger at `template` (which no handle
    /// may be writing): a copy of the file, or the same rows copied into a new schema.
    pub fn copy_of(engine: Engine, template: &Path) -> Place {
        let place = Place::new(engine);
        place.fill_from(template);
        place
    }

    /// A place on `engine` holding what `build` writes into a new SQLite ledger at the path it
    /// is given (through [`super::builder`], say); `build`'s answer comes back with it. On
    /// PostgreSQL the file is then copied into the place (see the module comment).
    pub fn built<T>(engine: Engine, build: impl FnOnce(&Path) -> T) -> (Place, T) {
        match engine {
            Engine::Sqlite => {
                let place = Place::new(engine);
                let out = build(place.path());
                checkpoint(place.path());
                (place, out)
            }
            Engine::Postgres => {
                let dir = tempfile::tempdir().expect("a temporary folder");
                let source = dir.path().join("source.db");
                let out = build(&source);
                checkpoint(&source);
                (Place::copy_of(engine, &source), out)
            }
        }
    }

    /// Copies the SQLite ledger at `template` into this place, which must be empty.
    pub fn fill_from(&self, template: &Path) {
        match &self.at {
            At::File { path, .. } => copy_ledger(template, path),
            At::Schema { .. } => {
                let source = Ledger::init(template).expect("open the template");
                let target = self.open();
                source
                    .copy_into(&target)
                    .expect("copy the template into the schema");
                drop(target);
                self.settle();
            }
        }
    }

    /// The engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The SQLite file. Panics on PostgreSQL.
    pub fn path(&self) -> &Path {
        match &self.at {
            At::File { path, .. } => path,
            At::Schema { .. } => panic!("a PostgreSQL ledger has no file"),
        }
    }

    /// What `Ledger::open` and the CLI's `--db` take: the file's path, or the schema's URL.
    pub fn location(&self) -> String {
        match &self.at {
            At::File { path, .. } => path.display().to_string(),
            At::Schema { server, schema } => with_search_path(server, schema),
        }
    }

    /// A handle with the default `Config`, as a dashboard opens it: the handle benches measure.
    pub fn open(&self) -> Ledger {
        Ledger::init(self.location()).expect("open the measured handle")
    }

    /// A handle with `config`.
    pub fn open_with(&self, config: Config) -> Ledger {
        Ledger::open_with(self.location(), config).expect("open a handle")
    }

    /// The building handle ([`builder_config`]). On PostgreSQL its commits are as durable as
    /// any: the engine has no `synchronous=NORMAL`.
    pub fn builder(&self) -> Ledger {
        self.open_with(builder_config())
    }

    /// A handle with `config` whose commits do not wait for the disk: SQLite's
    /// `synchronous=NORMAL`, PostgreSQL's `synchronous_commit=off` for its connections. For a
    /// simulation's building handle, which measures growth, not syncs.
    pub fn open_unsynced(&self, config: Config) -> Ledger {
        match &self.at {
            At::File { path, .. } => Ledger::open_with(
                path,
                config.synchronous(session_ledger::Synchronous::Normal),
            )
            .expect("open an unsynced handle"),
            At::Schema { .. } => Ledger::open_with(
                format!("{}%20-c%20synchronous_commit%3Doff", self.location()),
                config,
            )
            .expect("open an unsynced handle"),
        }
    }

    /// A plain client of the server, in the place's schema. Panics on SQLite.
    pub fn client(&self) -> Client {
        match &self.at {
            At::Schema { server, schema } => connect(&with_search_path(server, schema)),
            At::File { .. } => panic!("a SQLite ledger has no server"),
        }
    }

    /// After setup writes through the building handle and before a timed durable commit: on
    /// SQLite, the WAL synced ([`flush_wal`]); on PostgreSQL nothing, every commit was synced.
    pub fn flush(&self) {
        if let At::File { path, .. } = &self.at {
            flush_wal(path);
        }
    }

    /// After a large build, with every handle idle: the SQLite file checkpointed
    /// ([`checkpoint`]); every table of the schema vacuumed and analyzed, so that neither
    /// autovacuum nor missing statistics fall into a measurement.
    pub fn settle(&self) {
        match &self.at {
            At::File { path, .. } => checkpoint(path),
            At::Schema { schema, .. } => {
                let mut client = self.client();
                let tables: Vec<String> = client
                    .query(
                        "SELECT tablename::text FROM pg_tables WHERE schemaname = $1",
                        &[schema],
                    )
                    .expect("the schema's tables")
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                for table in tables {
                    client
                        .batch_execute(&format!("VACUUM (ANALYZE) \"{table}\""))
                        .expect("vacuum");
                }
            }
        }
    }

    /// How many rows `table` holds.
    pub fn count(&self, table: &str) -> i64 {
        let sql = format!("SELECT count(*) FROM {table}");
        match &self.at {
            At::File { path, .. } => rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|c| c.query_row(&sql, [], |r| r.get(0)))
            .expect("count"),
            At::Schema { .. } => self.client().query_one(&sql, &[]).expect("count").get(0),
        }
    }

    /// What the ledger takes on disk: the file, or the schema's tables with their indexes.
    pub fn size_bytes(&self) -> u64 {
        match &self.at {
            At::File { path, .. } => std::fs::metadata(path).map_or(0, |m| m.len()),
            At::Schema { schema, .. } => {
                let bytes: i64 = self
                    .client()
                    .query_one(
                        "SELECT coalesce(sum(pg_total_relation_size(
                                    format('%I.%I', schemaname, tablename)::regclass)), 0)::bigint
                           FROM pg_tables WHERE schemaname = $1",
                        &[schema],
                    )
                    .expect("the schema's size")
                    .get(0);
                bytes as u64
            }
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let At::Schema { server, schema } = &self.at {
            if let Ok(mut admin) = Client::connect(server, NoTls) {
                let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
            }
        }
    }
}

/// A plain client of the server at `url`.
pub fn connect(url: &str) -> Client {
    Client::connect(url, NoTls).expect("connect to the bench server")
}

/// `url` with `search_path` set to `schema` first, then `public` (where pgcrypto is): the
/// ledger is the first schema of the connection's `search_path` (docs/postgres.md).
fn with_search_path(url: &str, schema: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}%2Cpublic")
}

/// A plain connection to a place's ledger with no library around it, for the floors the
/// benches measure a ledger call against: raw SQLite on the file with the ledger's pragmas
/// ([`super::raw_connection`]), or a plain client of the server in the place's schema. Each
/// statement is prepared once per connection, as the library's are.
pub enum RawConn {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: Box<Client>,
        prepared: std::collections::HashMap<&'static str, postgres::Statement>,
    },
}

impl RawConn {
    /// A plain connection to `place`'s ledger.
    pub fn open(place: &Place) -> RawConn {
        match place.engine() {
            Engine::Sqlite => RawConn::Sqlite(super::raw_connection(place.path())),
            Engine::Postgres => RawConn::Postgres {
                client: Box::new(place.client()),
                prepared: Default::default(),
            },
        }
    }

    /// A plain connection to the ledger at `location`, a path or a URL as `Ledger::open` takes
    /// it: for a process that has no [`Place`], only where the ledger is.
    pub fn connect(location: &str) -> RawConn {
        if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            RawConn::Postgres {
                client: Box::new(connect(location)),
                prepared: Default::default(),
            }
        } else {
            RawConn::Sqlite(super::raw_connection(Path::new(location)))
        }
    }

    /// Runs `sql`, statements without parameters, unprepared.
    pub fn batch(&mut self, sql: &str) {
        match self {
            RawConn::Sqlite(conn) => conn.execute_batch(sql).expect(sql),
            RawConn::Postgres { client, .. } => client.batch_execute(sql).expect(sql),
        }
    }

    /// Runs `sql`, whose parameters are written `$1`, `$2`, ... (SQLite reads them as
    /// positional too), with `params` bound as text, and steps through its rows, decoding
    /// none: returns how many there were.
    pub fn rows(&mut self, sql: &'static str, params: &[&str]) -> usize {
        match self {
            RawConn::Sqlite(conn) => {
                let mut statement = conn.prepare_cached(sql).expect("prepare");
                let mut rows = statement
                    .query(rusqlite::params_from_iter(params))
                    .expect("query");
                let mut n = 0;
                while rows.next().expect("step").is_some() {
                    n += 1;
                }
                n
            }
            RawConn::Postgres { client, prepared } => {
                if !prepared.contains_key(sql) {
                    let statement = client.prepare(sql).expect("prepare");
                    prepared.insert(sql, statement);
                }
                let params: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                client.query(&prepared[sql], &params).expect("query").len()
            }
        }
    }
}
