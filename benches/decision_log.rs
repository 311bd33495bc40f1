//! The decision log bench: what recording a decision costs (rules D1, D2), next to the floors
//! under it measured in the same run, on SQLite and on PostgreSQL (docs/performance.md,
//! "Decision records").
//!
//! ```text
//! cargo bench --bench decision_log                                   # SQLite (growth to 100,000 records)
//! scripts/with-postgres --durable cargo bench --bench decision_log   # SQLite, then PostgreSQL
//! DECISION_QUICK=1 cargo bench --bench decision_log                  # shorter rounds, fewer iterations
//! DECISION_ONLY=growth DECISION_ROWS=10000000 BENCH_ENGINES=sqlite cargo bench --bench decision_log
//! DECISION_ONLY=growth DECISION_ROWS=1000000 BENCH_ENGINES=postgres \
//!     scripts/with-postgres --durable cargo bench --bench decision_log
//! ```
//!
//! `DECISION_ONLY` takes a comma-separated list of `latency`, `writers` and `growth`;
//! `DECISION_ROWS` the large ledger's records for `growth` (a multiple of 10,000; 100,000 by
//! default); `DECISION_SECONDS` and `DECISION_ROUNDS` a throughput run's length and how many
//! rounds (5 s, 3 rounds); `DECISION_RUNS` the writers' runs to make, by the start of their
//! names (`decide_and_record threads=8,create_child`; all by default); `DECISION_THREADS` the deciding threads of the batched runs (`4,8`;
//! `none` for none). `DECISION_EXPERIMENT=plpgsql_tree_root` replaces, in each PostgreSQL
//! schema the bench makes, `session_tree_root` with the same query in PL/pgSQL (see
//! [`experiment`]). `BENCH_ENGINES` and `SESSION_LEDGER_BENCH_POSTGRES` choose the engines
//! (`benches/support/engine.rs`); PostgreSQL is measured only on a server that syncs its
//! commits (`scripts/with-postgres --durable`).
//!
//! Every measured call goes through a handle opened with the default `Config`, as a
//! dashboard's; inputs are built through the building handle (`benches/support/mod.rs`).
//!
//! * `latency`: on a ledger of 10,000 trusted, materialized sessions (the engines bench's),
//!   each iteration runs, in an order that rotates, `decide` of `make deploy` (approved through
//!   the inherited `trust`), `decide_and_record` of the same on the same session, and the floor:
//!   a durable one-row `INSERT` committed alone on a plain connection to the same ledger (a
//!   table of one text key added for it: the engines bench's `durable_insert`); beside them
//!   `raw_append`: the append's own statement, restated, on that plain connection (on SQLite
//!   in a `BEGIN IMMEDIATE` transaction of its own, on PostgreSQL alone in autocommit), with
//!   on SQLite the pages each commit writes, and on PostgreSQL the same with the tree's root
//!   found by a PL/pgSQL function (`raw_append_plpgsql_tree_root`). The target:
//!   `decide_and_record` p50 at most the floor's p50 + 1.5 × `decide`'s p50.
//! * `writers`: threads in this process, each as fast as it can for `DECISION_SECONDS`, all
//!   started together, on a fresh copy of a ledger of 8 trusted roots with 400 creators each
//!   and 20,000 records, integrated (on PostgreSQL analyzed after the copy);
//!   the rate of each is the median of the rounds, the order of the runs reversed every other
//!   round. `floor` W: W threads, each on its own plain connection, committing durable one-row
//!   `INSERT`s with no lock of the ledger's (an append takes none); `record` W: W threads of
//!   `decide_and_record` on random creators, sharing one handle; `create` 8: 8 threads of
//!   `create_child` under creators of their own (50 each, so the default bounds are never
//!   met), sharing another handle; `mixed`: those 8 creates and 8 recorders at once, each group
//!   on its handle; `mixed_integrating` the same with `integrate_decisions` called every second
//!   (what a dashboard that signs often adds); `mixed_paced`: the recorders held to 1,000
//!   records a second between them; `mixed_batched`: 8 threads of a `DecisionRecorder`
//!   (default options) held to 5,000 a second instead; `decide` T: T threads of `decide`
//!   alone, the ceiling of `batched` T: T threads of `DecisionRecorder::decide` (default
//!   options, and `max_batch` 10,000), then `flush`: its rate counts the rows in `decisions`
//!   afterwards, over the time until the flush returned; `batched_bounded` T: the same, each
//!   thread waiting before it decides while the recorder holds two batches (the recorder
//!   makes no caller wait: this is what a bound in it would do). Each run prints the calls' p50, p99
//!   and longest time, and how busy the machine's processors were; on PostgreSQL also what the
//!   server's backends waited on (`pg_stat_activity`, sampled), and its transactions, WAL
//!   syncs, WAL bytes per write and full-page images (`pg_stat_database`, `pg_stat_wal`).
//! * `growth`: a session's listing (`Ledger::decisions` of one session, the default page of
//!   100, newest first), on a ledger of 10,000 records against one of `DECISION_ROWS`, each
//!   iteration once on each (the side that goes first alternating): a random session of the
//!   ledger each time (`session_listing`), and a random one of its newest 10 sessions
//!   (`session_listing_recent`: the same 10,000 records' worth on both); beside them, the
//!   floor: the same statement prepared on a plain connection, and on SQLite the pages it reads
//!   from outside the connection's cache, with the ledger's 16 MiB page cache, a 256 MiB one
//!   and a 4 GiB memory map. Both ledgers have the same shape: trees of 10 sessions (a root
//!   granted `trust` and 9 children), 1,000 records a session, recorded a tree at a time (so a
//!   session's records lie among its 9 siblings' in either ledger) by one thread through a
//!   `DecisionRecorder` (`max_batch` 10,000, a window of 1 s) on the building handle, with
//!   `integrate_decisions` every 2 s meanwhile and once at the end: the build time is printed.
//!   On SQLite each ledger is built once and cached as
//!   `target/decision-cache/<rows>-v<schema>-s<shape>.db` (or under `$CARGO_TARGET_DIR`); on
//!   PostgreSQL it is built in a schema of its own each run. Then the plans of the hot
//!   statements on the large ledger (`EXPLAIN QUERY PLAN`, or PostgreSQL's
//!   `EXPLAIN (ANALYZE, BUFFERS)` with the generic plan a prepared statement settles on).
//!
//! Lines: `op`, `floor` (µs, p50 and p99), `rate` (per second), `latency`, `cpu`, `waits`,
//! `server`, `build`, `plan`, and `target ENGINE NAME VALUE <= BOUND met|not met` at the end,
//! then tables for docs/performance.md. The load average is printed with each part. Nothing
//! here asserts a time.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use session_ledger::{
    AskedBy, DecisionQuery, DecisionRecorder, Ledger, PostureLevel, RecorderOptions, Verdict,
};
use support::{percentile, timed, Engine, Iterations, Measured, Place, RawConn, ACTOR};

/// The command every decision is about: not read-only, approved through `trust`.
const COMMAND: &str = "make deploy";

/// Sessions of the latency ledger.
const POINT_SESSIONS: usize = 10_000;

/// Writer threads of the contended runs: recorders, and creators.
const WRITERS: usize = 8;
/// Creators per writer thread in the writers' ledger, 50 children each.
const CREATORS_PER_WRITER: usize = 400;

/// Records already in the writers' ledger, integrated, before any run: its statistics then
/// describe a ledger that has been recording. (A copy analyzed with `decisions` empty leaves
/// PostgreSQL's cached plans for the foreign-key check of a queued id, made while the table
/// was a page or two, scanning the whole table for every record until its next analyze.)
const WRITERS_RECORDED: usize = 20_000;

/// The small ledger of the growth part; the target compares against it.
const SMALL_ROWS: usize = 10_000;
/// The large one unless `DECISION_ROWS` says otherwise.
const DEFAULT_ROWS: usize = 100_000;
/// Records per session in the growth ledgers.
const PER_SESSION: usize = 1_000;
/// Sessions per tree in the growth ledgers: a root and 9 children.
const PER_TREE: usize = 10;
/// The growth ledgers' shape: change it with the shape, so cached ledgers are built again.
const SHAPE_VERSION: u32 = 1;

/// The records a second of the paced recorders that run beside creates.
const PACED_RECORDS: u32 = 1_000;

/// The records a second of the batching recorders that run beside creates: the durable
/// target's rate.
const BATCHED_RECORDS: u32 = 5_000;

/// The tuned recorder's `max_batch`.
const TUNED_BATCH: usize = 10_000;

/// What one run measures.
struct Plan {
    latency: bool,
    writers: bool,
    growth: bool,
    point: Iterations,
    listing: Iterations,
    seconds: f64,
    rounds: usize,
    batched_threads: Vec<usize>,
    rows: usize,
}

impl Plan {
    fn from_env() -> Plan {
        let quick = std::env::var_os("DECISION_QUICK").is_some_and(|v| v != "0");
        let mut plan = Plan {
            latency: true,
            writers: true,
            growth: true,
            point: if quick {
                Iterations {
                    timed: 200,
                    warmup: 20,
                }
            } else {
                Iterations {
                    timed: 1_000,
                    warmup: 100,
                }
            },
            listing: if quick {
                Iterations {
                    timed: 300,
                    warmup: 30,
                }
            } else {
                Iterations {
                    timed: 2_000,
                    warmup: 200,
                }
            },
            seconds: if quick { 2.0 } else { 5.0 },
            rounds: if quick { 1 } else { 3 },
            batched_threads: vec![4, 8],
            rows: DEFAULT_ROWS,
        };
        if let Ok(only) = std::env::var("DECISION_ONLY") {
            let parts: Vec<&str> = only.split(',').map(str::trim).collect();
            for part in &parts {
                assert!(
                    ["latency", "writers", "growth"].contains(part),
                    "DECISION_ONLY={only}: {part:?} is not latency, writers or growth"
                );
            }
            plan.latency = parts.contains(&"latency");
            plan.writers = parts.contains(&"writers");
            plan.growth = parts.contains(&"growth");
        }
        if let Ok(v) = std::env::var("DECISION_SECONDS") {
            plan.seconds = v.parse().expect("DECISION_SECONDS: a number of seconds");
        }
        if let Ok(v) = std::env::var("DECISION_ROUNDS") {
            plan.rounds = v.parse().expect("DECISION_ROUNDS: a number of rounds");
        }
        if let Ok(list) = std::env::var("DECISION_THREADS") {
            plan.batched_threads = if list == "none" {
                Vec::new()
            } else {
                list.split(',')
                    .map(|t| t.trim().parse().expect("DECISION_THREADS: thread counts"))
                    .collect()
            };
        }
        if let Ok(v) = std::env::var("DECISION_ROWS") {
            let rows: usize = v.parse().expect("DECISION_ROWS: a number of records");
            assert!(
                rows >= SMALL_ROWS && rows % (PER_SESSION * PER_TREE) == 0,
                "DECISION_ROWS must be a multiple of {} of at least {SMALL_ROWS}",
                PER_SESSION * PER_TREE
            );
            plan.rows = rows;
        }
        plan
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs bench binaries without `--bench`: build nothing.
        println!(
            "decision_log: run it with `cargo bench --bench decision_log` \
             (see benches/decision_log.rs)"
        );
        return;
    }
    let plan = Plan::from_env();
    let engines = support::engines();
    println!(
        "decision_log schema=v{} engines={} rows={} seconds={} rounds={} load_start={}",
        session_ledger::schema_version(),
        engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(","),
        plan.rows,
        plan.seconds,
        plan.rounds,
        load_average()
    );
    let dir = tempfile::tempdir().expect("a folder for the templates");
    let mut report = Report::default();
    if plan.latency {
        let template = dir.path().join("points.db");
        let ids = support::trusted_materialized_tree(&template, POINT_SESSIONS);
        for &engine in &engines {
            latency(engine, &plan, &template, &ids, &mut report);
        }
    }
    if plan.writers {
        let template = dir.path().join("writers.db");
        let creators = writers_template(&template);
        for &engine in &engines {
            writers(engine, &plan, &template, &creators, &mut report);
        }
    }
    if plan.growth {
        for &engine in &engines {
            growth(engine, &plan, &mut report);
        }
    }
    report.summary();
    println!("decision_log load_end={}", load_average());
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(","))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A random index below `n` (xorshift, a fixed seed per stream).
#[derive(Clone)]
struct Random(u64);

impl Random {
    /// A stream of its own for thread `t`.
    fn for_thread(t: usize) -> Random {
        Random(0x2545_f491_4f6c_dd1d ^ ((t as u64 + 1) * 0x9e37_79b9))
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn asked() -> AskedBy<'static> {
    AskedBy::actor("bench-agent")
}

/// Times `once(side)` on `N` sides, `warmup` untimed then `timed` timed iterations each, every
/// side once per iteration, the side that goes first rotating, so the machine's drift falls on
/// every side alike.
fn rotated<const N: usize>(
    n: Iterations,
    mut once: impl FnMut(usize) -> Duration,
) -> [Vec<Duration>; N] {
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(n.timed));
    for i in 0..n.warmup + n.timed {
        for k in 0..N {
            let side = (i + k) % N;
            let took = once(side);
            if i >= n.warmup {
                times[side].push(took);
            }
        }
    }
    times
}

/// The p50 and p99 of `times`, in µs.
fn p50_p99(times: &[Duration]) -> (f64, f64) {
    let us: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    (percentile(&us, 50.0), percentile(&us, 99.0))
}

// ---------------------------------------------------------------------------------------------
// Latency: decide, decide and record, and the durable-commit floor.

fn latency(engine: Engine, plan: &Plan, template: &Path, ids: &[String], report: &mut Report) {
    println!("part latency {} load={}", engine.name(), load_average());
    let place = Place::copy_of(engine, template);
    experiment(&place);
    let mut raw = RawConn::open(&place);
    raw.batch("CREATE TABLE bench_floor (id text PRIMARY KEY)");
    let ledger = place.open();
    let first = ledger
        .decide_and_record(&ids[0], COMMAND, false, &asked())
        .expect("decide and record");
    assert_eq!(first.decision.verdict, Verdict::Approve, "through trust");
    assert!(first.durable);
    place.flush();

    let reason = stored_reason(&mut raw);
    if engine == Engine::Postgres {
        raw.batch(PLPGSQL_TREE_ROOT);
    }
    let mut append = RawAppend::new(&mut raw, reason);

    // Sides 0 and 1 draw the same sessions, in the same order.
    let mut random = [Random(0x9e37_79b9_7f4a_7c15), Random(0x9e37_79b9_7f4a_7c15)];
    let mut inserted = 0_usize;
    let mut pages = [0_i64; 2];
    let times = rotated::<5>(plan.point, |side| match side {
        0 => {
            let id = &ids[random[0].below(ids.len())];
            let (took, d) = timed(|| ledger.decide(id, COMMAND, false).expect("decide"));
            assert_eq!(d.verdict, Verdict::Approve);
            took
        }
        1 => {
            let id = &ids[random[1].below(ids.len())];
            let (took, r) = timed(|| {
                ledger
                    .decide_and_record(id, COMMAND, false, &asked())
                    .expect("decide and record")
            });
            assert!(r.durable);
            took
        }
        2 => {
            let id = format!("i{inserted}");
            inserted += 1;
            let before = pages_written(&raw);
            let (took, rows) =
                timed(|| raw.rows("INSERT INTO bench_floor (id) VALUES ($1)", &[&id]));
            assert_eq!(rows, 0);
            pages[0] += pages_written(&raw) - before;
            took
        }
        3 => {
            let before = pages_written(&raw);
            let took = append.once(&mut raw, &ids[0], false);
            pages[1] += pages_written(&raw) - before;
            took
        }
        _ if engine == Engine::Postgres => append.once(&mut raw, &ids[0], true),
        _ => Duration::ZERO,
    });
    let [decide, recorded, floor, raw_append, raw_append_plpgsql] = times;
    let recorded_rows = place.count("decisions");
    let appends = if engine == Engine::Postgres { 3 } else { 2 };
    let expected = appends * (plan.point.warmup + plan.point.timed) as i64 + 1;
    assert_eq!(
        recorded_rows, expected,
        "every decide_and_record and raw append is one row"
    );
    let line = |kind: &str, name: &str, t: &[Duration]| {
        let (p50, p99) = p50_p99(t);
        println!(
            "{kind} {} {name} n={} p50_us={p50:.2} p99_us={p99:.2}",
            engine.name(),
            t.len()
        );
        p50
    };
    let decide = line("op", "decide", &decide);
    let recorded = line("op", "decide_and_record", &recorded);
    let floor = line("floor", "durable_insert", &floor);
    let raw_append = line("floor", "raw_append", &raw_append);
    let raw_append_plpgsql = (engine == Engine::Postgres)
        .then(|| line("floor", "raw_append_plpgsql_tree_root", &raw_append_plpgsql));
    if engine == Engine::Sqlite {
        let n = (plan.point.warmup + plan.point.timed) as f64;
        println!(
            "pages sqlite written_per_commit durable_insert={:.1} raw_append={:.1}",
            pages[0] as f64 / n,
            pages[1] as f64 / n
        );
    }
    report.latency.push(Latency {
        engine,
        decide,
        recorded,
        floor,
        raw_append,
        raw_append_plpgsql,
        load: load_average(),
    });
}

/// The reason text of a record already stored, for [`RawAppend`].
fn stored_reason(raw: &mut RawConn) -> String {
    match raw {
        RawConn::Sqlite(conn) => conn
            .query_row("SELECT reason FROM decisions LIMIT 1", [], |r| r.get(0))
            .expect("a stored reason"),
        RawConn::Postgres { client, .. } => client
            .query_one("SELECT reason FROM decisions LIMIT 1", &[])
            .expect("a stored reason")
            .get(0),
    }
}

/// The append's own statement with no library around it (restated from
/// `src/storage/sqlite/decisions.rs` and `src/storage/postgres/decisions.rs`): on SQLite in a
/// `BEGIN IMMEDIATE` transaction of its own, on PostgreSQL alone in autocommit, a record of
/// `make deploy` with a stored reason each time.
struct RawAppend {
    reason: String,
    n: usize,
    /// PostgreSQL: the statement, and the same with [`PLPGSQL_TREE_ROOT`]'s function.
    statements: Option<[postgres::Statement; 2]>,
}

/// The query of `session_tree_root` (migrations/postgres/V7), in PL/pgSQL, whose plan a
/// connection keeps, under a name of its own: `raw_append_plpgsql_tree_root` appends with it,
/// to show what the migration's function costs against it, in the same run.
const PLPGSQL_TREE_ROOT: &str = "CREATE FUNCTION bench_tree_root_plpgsql(session text)
    RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
    BEGIN
        RETURN (WITH RECURSIVE up (id, created_by) AS (
                    SELECT s.id, s.created_by FROM sessions AS s WHERE s.id = session
                    UNION ALL
                    SELECT s.id, s.created_by FROM up JOIN sessions AS s ON s.id = up.created_by)
                SELECT coalesce((SELECT up.id FROM up WHERE up.created_by IS NULL), session));
    END
    $$";

const APPEND_SQLITE: &str = "INSERT INTO decisions
         (record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict,
          authority, reason, asked_by, tool_use_id)
     VALUES (:record, :at, :session,
             coalesce((WITH RECURSIVE up (id, created_by) AS (
                           SELECT id, created_by FROM sessions WHERE id = :session
                           UNION ALL
                           SELECT s.id, s.created_by FROM up JOIN sessions AS s ON s.id = up.created_by
                       ) SELECT id FROM up WHERE created_by IS NULL), :session),
             NULL, :input, :input_bytes, NULL, 'approve', 'trust', :reason, 'bench-agent', NULL)";

const APPEND_POSTGRES: &str = "INSERT INTO decisions
          (record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict,
           authority, reason, asked_by, tool_use_id)
     SELECT r.record, r.at, r.session, session_tree_root(r.session), r.tool, r.input,
            r.input_bytes, r.input_sha256, r.verdict, r.authority, r.reason, r.asked_by,
            r.tool_use_id
       FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[],
                   $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[],
                   $11::text[], $12::text[])
            WITH ORDINALITY
            AS r(record, at, session, tool, input, input_bytes, input_sha256, verdict,
                 authority, reason, asked_by, tool_use_id, n)
      ORDER BY r.n
     ON CONFLICT (record) DO NOTHING";

impl RawAppend {
    fn new(raw: &mut RawConn, reason: String) -> RawAppend {
        let statements = match raw {
            RawConn::Sqlite(_) => None,
            RawConn::Postgres { client, .. } => Some(
                [
                    APPEND_POSTGRES.to_owned(),
                    APPEND_POSTGRES.replace("session_tree_root(", "bench_tree_root_plpgsql("),
                ]
                .map(|sql| client.prepare(&sql).expect("prepare the append")),
            ),
        };
        RawAppend {
            reason,
            n: 0,
            statements,
        }
    }

    /// Appends one record of `session` (on PostgreSQL with the PL/pgSQL function when
    /// `plpgsql`); returns how long it took.
    fn once(&mut self, raw: &mut RawConn, session: &str, plpgsql: bool) -> Duration {
        self.n += 1;
        let record = format!("ffff{:028x}", self.n);
        let at = chrono::DateTime::from_timestamp_millis(chrono::Utc::now().timestamp_millis())
            .expect("now");
        let (took, rows) = match raw {
            RawConn::Sqlite(conn) => {
                let at = session_ledger::format_ts(at);
                timed(|| {
                    let tx = conn
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                        .expect("begin");
                    let rows = tx
                        .prepare_cached(APPEND_SQLITE)
                        .expect("prepare")
                        .execute(rusqlite::named_params! {
                            ":record": record,
                            ":at": at,
                            ":session": session,
                            ":input": COMMAND,
                            ":input_bytes": COMMAND.len() as i64,
                            ":reason": self.reason,
                        })
                        .expect("append");
                    tx.commit().expect("commit");
                    rows as u64
                })
            }
            RawConn::Postgres { client, .. } => {
                let statement = &self.statements.as_ref().expect("prepared")[usize::from(plpgsql)];
                let none: Vec<Option<String>> = vec![None];
                timed(|| {
                    client
                        .execute(
                            statement,
                            &[
                                &vec![record.clone()],
                                &vec![at],
                                &vec![session.to_owned()],
                                &none,
                                &vec![COMMAND.to_owned()],
                                &vec![COMMAND.len() as i64],
                                &none,
                                &vec!["approve"],
                                &vec!["trust"],
                                &vec![self.reason.clone()],
                                &vec!["bench-agent"],
                                &none,
                            ],
                        )
                        .expect("append")
                })
            }
        };
        assert_eq!(rows, 1);
        took
    }
}

/// SQLite: how many pages the plain connection has written to the WAL since it opened
/// (`SQLITE_DBSTATUS_CACHE_WRITE`); 0 on PostgreSQL.
fn pages_written(raw: &RawConn) -> i64 {
    match raw {
        RawConn::Sqlite(conn) => db_status(conn, rusqlite::ffi::SQLITE_DBSTATUS_CACHE_WRITE),
        RawConn::Postgres { .. } => 0,
    }
}

/// A counter of `sqlite3_db_status` on `conn`.
fn db_status(conn: &rusqlite::Connection, which: std::ffi::c_int) -> i64 {
    let (mut current, mut highest) = (0, 0);
    // SAFETY: a live connection, used on this thread; the call writes two ints it is given.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_status(conn.handle(), which, &mut current, &mut highest, 0)
    };
    assert_eq!(rc, rusqlite::ffi::SQLITE_OK, "sqlite3_db_status");
    i64::from(current)
}

// ---------------------------------------------------------------------------------------------
// Writers: records, creates and both at once, in threads.

/// The writers' ledger: roots `w0` to `w7`, each granted `trust`, each with
/// [`CREATORS_PER_WRITER`] creators below it (`w3.c17`), which inherit it. Returns the
/// creators' ids.
fn writers_template(path: &Path) -> Vec<String> {
    let builder = support::builder(path);
    let mut creators = Vec::new();
    for w in 0..WRITERS {
        let root = format!("w{w}");
        builder.create_root(&root, ACTOR).expect("root");
        builder
            .grant(&root, PostureLevel::Trust, ACTOR)
            .expect("grant");
        for c in 0..CREATORS_PER_WRITER {
            let id = format!("{root}.c{c}");
            builder.create_child(&id, &root, ACTOR).expect("creator");
            creators.push(id);
        }
    }
    for n in 0..WRITERS_RECORDED {
        builder
            .decide_and_record(&creators[n % creators.len()], COMMAND, false, &asked())
            .expect("a record of the template");
    }
    builder.integrate_decisions(ACTOR).expect("integrate");
    drop(builder);
    support::checkpoint(path);
    creators
}

/// One timed run of the writers part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// W threads of durable one-row inserts on plain connections.
    Floor(usize),
    /// W threads of `decide_and_record`.
    Record(usize),
    /// 8 threads of `create_child`.
    Create,
    /// 8 creates and 8 recorders at once; integrating every second or not.
    Mixed { integrating: bool },
    /// 8 creates and 8 recorders held to this many records a second between them.
    MixedPaced(u32),
    /// 8 creates and 8 threads of a `DecisionRecorder` (default options) held to this many
    /// records a second between them.
    MixedBatched(u32),
    /// T threads of `decide` alone.
    Decide(usize),
    /// T threads of `DecisionRecorder::decide` with this `max_batch`, then a flush.
    Batched(usize, usize, bool),
}

impl Run {
    fn name(self) -> String {
        match self {
            Run::Floor(w) => format!("floor_durable_insert threads={w}"),
            Run::Record(w) => format!("decide_and_record threads={w}"),
            Run::Create => format!("create_child threads={WRITERS}"),
            Run::Mixed { integrating: false } => {
                format!("mixed creates={WRITERS} recorders={WRITERS}")
            }
            Run::Mixed { integrating: true } => {
                format!("mixed_integrating creates={WRITERS} recorders={WRITERS}")
            }
            Run::MixedPaced(r) => {
                format!("mixed_paced creates={WRITERS} recorders={WRITERS} records_per_s={r}")
            }
            Run::MixedBatched(r) => format!(
                "mixed_batched creates={WRITERS} batched_recorders={WRITERS} records_per_s={r}"
            ),
            Run::Decide(t) => format!("decide threads={t}"),
            Run::Batched(t, b, false) => format!("batched threads={t} max_batch={b}"),
            Run::Batched(t, b, true) => format!("batched_bounded threads={t} max_batch={b}"),
        }
    }
}

/// What a thread of a run does: called once per thread before the start (its setup, untimed),
/// it returns the write, called with how many that thread made before.
type Work<'a> = &'a (dyn Fn(usize) -> Box<dyn FnMut(u64) + 'a> + Sync);

/// Runs each group's threads from one start for `seconds`, and `meanwhile` on this thread
/// until the end; returns how many writes each group finished in time. Prints how busy the
/// machine's processors were meanwhile (`/proc/stat`: every process, the server's included).
fn run_groups(
    label: &str,
    groups: &[(usize, Work<'_>)],
    seconds: f64,
    meanwhile: impl FnOnce(Instant),
) -> Vec<u64> {
    let threads: usize = groups.iter().map(|g| g.0).sum();
    // Far enough ahead for every thread's setup (a PostgreSQL connection's sign-in).
    let start = Instant::now() + Duration::from_millis(300 + 50 * threads as u64);
    let deadline = start + Duration::from_secs_f64(seconds);
    let late = AtomicBool::new(false);
    let done: Vec<AtomicU64> = groups.iter().map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|scope| {
        for (g, &(n, work)) in groups.iter().enumerate() {
            for t in 0..n {
                let (done, late) = (&done[g], &late);
                scope.spawn(move || {
                    let mut write = work(t);
                    let now = Instant::now();
                    if now > start {
                        late.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(start.saturating_duration_since(now));
                    let mut made = 0;
                    while Instant::now() < deadline {
                        write(made);
                        made += 1;
                        if Instant::now() <= deadline {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        }
        std::thread::sleep(start.saturating_duration_since(Instant::now()));
        let before = cpu_times();
        meanwhile(deadline);
        sleep_until(deadline);
        if let (Some(a), Some(b)) = (before, cpu_times()) {
            let total = (b.0 - a.0).max(1) as f64;
            println!(
                "cpu {label} busy={:.0}% iowait={:.0}%",
                100.0 * (b.1 - a.1) as f64 / total,
                100.0 * (b.2 - a.2) as f64 / total
            );
        }
    });
    if late.load(Ordering::Relaxed) {
        println!("warning: a thread was ready after the start");
    }
    done.into_iter().map(AtomicU64::into_inner).collect()
}

/// The machine's processor time so far, in ticks (`/proc/stat`): (total, busy, waiting for I/O).
fn cpu_times() -> Option<(u64, u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = ticks.iter().sum();
    let (idle, iowait) = (*ticks.get(3)?, *ticks.get(4)?);
    Some((total, total - idle - iowait, iowait))
}

/// What the server's backends of this database were doing, sampled every 50 ms from
/// `pg_stat_activity` on a connection of its own, until stopped (PostgreSQL).
struct Waits {
    stop: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<Vec<(String, u64)>>,
}

impl Waits {
    fn start(place: &Place) -> Option<Waits> {
        if place.engine() != Engine::Postgres {
            return None;
        }
        let mut client = place.client();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let sampler = std::thread::spawn(move || {
            let mut counts: Vec<(String, u64)> = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                let rows = client
                    .query(
                        "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS what,
                                count(*) AS n
                           FROM pg_stat_activity
                          WHERE datname = current_database() AND state = 'active'
                            AND pid <> pg_backend_pid()
                          GROUP BY 1",
                        &[],
                    )
                    .unwrap_or_default();
                for row in rows {
                    let (what, n): (String, i64) = (row.get(0), row.get(1));
                    match counts.iter_mut().find(|c| c.0 == what) {
                        Some(c) => c.1 += n as u64,
                        None => counts.push((what, n as u64)),
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            counts
        });
        Some(Waits { stop, sampler })
    }

    /// The shares of the samples, largest first: `CPU=41% IO:WALSync=30% ...`.
    fn finish(self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        let mut counts = self.sampler.join().expect("the sampler");
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        let total: u64 = counts.iter().map(|c| c.1).sum::<u64>().max(1);
        counts
            .iter()
            .take(8)
            .map(|(what, n)| format!("{what}={:.0}%", 100.0 * *n as f64 / total as f64))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `DECISION_EXPERIMENT=plpgsql_tree_root`: on PostgreSQL, replace the schema's
/// `session_tree_root` (a SQL function, whose body the server plans again at every statement
/// that calls it) with the same query in PL/pgSQL (whose plan a connection keeps), to measure
/// what that change to the migration would give. Says so on its own line.
fn experiment(place: &Place) {
    let Ok(which) = std::env::var("DECISION_EXPERIMENT") else {
        return;
    };
    assert_eq!(
        which, "plpgsql_tree_root",
        "DECISION_EXPERIMENT: only plpgsql_tree_root"
    );
    if place.engine() != Engine::Postgres {
        return;
    }
    place
        .client()
        .batch_execute(
            "CREATE OR REPLACE FUNCTION session_tree_root(session text) RETURNS text
             LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
             BEGIN
                 RETURN (WITH RECURSIVE up (id, created_by) AS (
                             SELECT s.id, s.created_by FROM sessions AS s WHERE s.id = session
                             UNION ALL
                             SELECT s.id, s.created_by FROM up JOIN sessions AS s
                                 ON s.id = up.created_by)
                         SELECT coalesce((SELECT up.id FROM up WHERE up.created_by IS NULL),
                                         session));
             END
             $$",
        )
        .expect("the experiment's function");
    println!("experiment postgres plpgsql_tree_root: session_tree_root in PL/pgSQL");
}

/// The server's counters so far (PostgreSQL): transactions committed in this database (reads
/// included), WAL syncs, WAL bytes, and full-page images written to the WAL.
fn server_counters(place: &Place) -> Option<[i64; 4]> {
    if place.engine() != Engine::Postgres {
        return None;
    }
    let row = place
        .client()
        .query_one(
            "SELECT (SELECT xact_commit FROM pg_stat_database
                      WHERE datname = current_database()),
                    wal_sync, wal_bytes::bigint, wal_fpi
               FROM pg_stat_wal",
            &[],
        )
        .ok()?;
    Some([row.get(0), row.get(1), row.get(2), row.get(3)])
}

fn writers(engine: Engine, plan: &Plan, template: &Path, creators: &[String], report: &mut Report) {
    println!("part writers {} load={}", engine.name(), load_average());
    let mut runs = vec![
        Run::Floor(1),
        Run::Record(1),
        Run::Floor(WRITERS),
        Run::Record(WRITERS),
        Run::Create,
        Run::Mixed { integrating: false },
        Run::Mixed { integrating: true },
        Run::MixedPaced(PACED_RECORDS),
        Run::MixedBatched(BATCHED_RECORDS),
    ];
    for &t in &plan.batched_threads {
        runs.extend([
            Run::Decide(t),
            Run::Batched(t, RecorderOptions::default().max_batch, false),
            Run::Batched(t, TUNED_BATCH, false),
            Run::Batched(t, RecorderOptions::default().max_batch, true),
        ]);
    }
    // `DECISION_RUNS`: only the runs whose names start with one of these (comma-separated).
    if let Ok(wanted) = std::env::var("DECISION_RUNS") {
        let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
        runs.retain(|run| wanted.iter().any(|w| run.name().starts_with(w)));
        assert!(!runs.is_empty(), "DECISION_RUNS names none of the runs");
    }
    for round in 0..plan.rounds {
        for &run in &runs {
            let rates = writers_run(engine, plan, template, creators, run);
            let fields: Vec<String> = rates
                .iter()
                .map(|(what, rate)| format!("{what}_per_s={rate:.0}"))
                .collect();
            println!(
                "round {round} {} {} {} load={}",
                engine.name(),
                run.name(),
                fields.join(" "),
                load_average()
            );
            for (what, rate) in rates {
                report.rate(engine, run, what, rate);
            }
        }
        runs.reverse();
    }
    for r in report.rates.iter().filter(|r| r.engine == engine) {
        println!(
            "rate {} {} {}_per_s={:.0} rounds={}",
            engine.name(),
            r.run.name(),
            r.what,
            percentile(&r.rates, 50.0),
            r.rates.len()
        );
    }
}

/// One run on a fresh copy of the template: each rate it measures, per second.
fn writers_run(
    engine: Engine,
    plan: &Plan,
    template: &Path,
    creators: &[String],
    run: Run,
) -> Vec<(&'static str, f64)> {
    let place = Place::copy_of(engine, template);
    experiment(&place);
    RawConn::open(&place).batch("CREATE TABLE bench_floor (id text PRIMARY KEY)");
    let recording = Arc::new(place.open());
    let creating = place.open();
    // Every pooled connection opened and its statements prepared, before the start.
    warm(&recording, &creators[0]);
    let warmed = place.count("decisions") as u64;
    let before = server_counters(&place);
    let seconds = plan.seconds;
    let label = format!("{} {}", engine.name(), run.name());
    let waits = Waits::start(&place);
    // Each call's time, for the runs that write through the ledger: records, creates.
    let took: [Mutex<Vec<Duration>>; 2] = Default::default();

    let floor = |t: usize| -> Box<dyn FnMut(u64) + '_> {
        let mut raw = RawConn::open(&place);
        Box::new(move |n| {
            let id = format!("f{t}.{n}");
            raw.rows("INSERT INTO bench_floor (id) VALUES ($1)", &[&id]);
        })
    };
    // Paced recorders: each thread records at its share of the rate, on a schedule.
    let pace = match run {
        Run::MixedPaced(per_s) | Run::MixedBatched(per_s) => {
            Some(Duration::from_secs_f64(WRITERS as f64 / f64::from(per_s)))
        }
        _ => None,
    };
    let record = |t: usize| -> Box<dyn FnMut(u64) + '_> {
        let mut random = Random::for_thread(t);
        let ledger = Arc::clone(&recording);
        let took = &took[0];
        let mut first: Option<Instant> = None;
        Box::new(move |n| {
            if let Some(pace) = pace {
                let first = *first.get_or_insert_with(Instant::now);
                sleep_until(first + pace * n as u32);
            }
            let id = &creators[random.below(creators.len())];
            let (t, r) = timed(|| {
                ledger
                    .decide_and_record(id, COMMAND, false, &asked())
                    .expect("decide and record")
            });
            assert_eq!(r.decision.verdict, Verdict::Approve);
            took.lock().expect("times").push(t);
        })
    };
    let create = |w: usize| -> Box<dyn FnMut(u64) + '_> {
        let (creating, took) = (&creating, &took[1]);
        Box::new(move |n| {
            let (creator, child) = (n / 50, n % 50);
            assert!(
                (creator as usize) < CREATORS_PER_WRITER,
                "a create thread ran out of creators: raise CREATORS_PER_WRITER"
            );
            let creator = format!("w{w}.c{creator}");
            let (t, created) = timed(|| {
                creating
                    .create_child(&format!("{creator}.n{child}"), &creator, ACTOR)
                    .expect("create")
            });
            assert!(created.inherited_trust);
            took.lock().expect("times").push(t);
        })
    };
    let decide = |t: usize| -> Box<dyn FnMut(u64) + '_> {
        let mut random = Random::for_thread(t);
        let ledger = Arc::clone(&recording);
        Box::new(move |_| {
            let id = &creators[random.below(creators.len())];
            let d = ledger.decide(id, COMMAND, false).expect("decide");
            assert_eq!(d.verdict, Verdict::Approve);
        })
    };

    let rates: Vec<(&'static str, f64)> = match run {
        Run::Floor(w) => {
            let done = run_groups(&label, &[(w, &floor)], seconds, sleep_until);
            vec![("inserts", done[0] as f64 / seconds)]
        }
        Run::Record(w) => {
            let done = run_groups(&label, &[(w, &record)], seconds, sleep_until);
            assert!(place.count("decisions") as u64 - warmed >= done[0]);
            vec![("records", done[0] as f64 / seconds)]
        }
        Run::Create => {
            let done = run_groups(&label, &[(WRITERS, &create)], seconds, sleep_until);
            vec![("creates", done[0] as f64 / seconds)]
        }
        Run::Mixed { integrating } => {
            let mut integrations = Vec::new();
            let done = run_groups(
                &label,
                &[(WRITERS, &create), (WRITERS, &record)],
                seconds,
                |deadline| {
                    if !integrating {
                        return sleep_until(deadline);
                    }
                    while Instant::now() + Duration::from_secs(1) < deadline {
                        std::thread::sleep(Duration::from_secs(1));
                        let (took, n) =
                            timed(|| recording.integrate_decisions(ACTOR).expect("integrate"));
                        integrations.push((took, n.records));
                    }
                    sleep_until(deadline);
                },
            );
            if integrating {
                let ms: Vec<String> = integrations
                    .iter()
                    .map(|(t, n)| format!("{n}:{:.0}ms", t.as_secs_f64() * 1e3))
                    .collect();
                println!("integrations records:ms {}", ms.join(" "));
            }
            vec![
                ("creates", done[0] as f64 / seconds),
                ("records", done[1] as f64 / seconds),
            ]
        }
        Run::MixedPaced(_) => {
            let done = run_groups(
                &label,
                &[(WRITERS, &create), (WRITERS, &record)],
                seconds,
                sleep_until,
            );
            vec![
                ("creates", done[0] as f64 / seconds),
                ("records", done[1] as f64 / seconds),
            ]
        }
        Run::MixedBatched(_) => {
            let recorder =
                DecisionRecorder::new(Arc::clone(&recording), RecorderOptions::default())
                    .expect("a recorder");
            let batched = |t: usize| -> Box<dyn FnMut(u64) + '_> {
                let mut random = Random::for_thread(t);
                let recorder = &recorder;
                let mut first: Option<Instant> = None;
                let pace = pace.expect("paced");
                Box::new(move |n| {
                    let first = *first.get_or_insert_with(Instant::now);
                    sleep_until(first + pace * n as u32);
                    let id = &creators[random.below(creators.len())];
                    recorder
                        .decide(id, COMMAND, false, &asked())
                        .expect("decide, held");
                })
            };
            let done = run_groups(
                &label,
                &[(WRITERS, &create), (WRITERS, &batched)],
                seconds,
                sleep_until,
            );
            recorder.flush().expect("flush");
            vec![
                ("creates", done[0] as f64 / seconds),
                ("records", done[1] as f64 / seconds),
            ]
        }
        Run::Decide(t) => {
            let done = run_groups(&label, &[(t, &decide)], seconds, sleep_until);
            vec![("decides", done[0] as f64 / seconds)]
        }
        Run::Batched(t, max_batch, bounded) => {
            let mut options = RecorderOptions::default();
            options.max_batch = max_batch;
            let recorder =
                DecisionRecorder::new(Arc::clone(&recording), options).expect("a recorder");
            let batched = |t: usize| -> Box<dyn FnMut(u64) + '_> {
                let mut random = Random::for_thread(t);
                let recorder = &recorder;
                Box::new(move |_| {
                    // Bounded: the caller waits while two batches wait (the recorder itself
                    // never makes a caller wait).
                    while bounded && recorder.held() >= 2 * max_batch {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let id = &creators[random.below(creators.len())];
                    let r = recorder
                        .decide(id, COMMAND, false, &asked())
                        .expect("decide, held");
                    assert!(!r.durable);
                })
            };
            let mut most_held = 0;
            let mut end = None;
            let done = run_groups(&label, &[(t, &batched)], seconds, |deadline| {
                end = Some(deadline);
                while Instant::now() < deadline {
                    most_held = most_held.max(recorder.held());
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let held_at_end = recorder.held();
            let (flush, appended) = timed(|| recorder.flush().expect("flush"));
            let took = seconds + end.expect("the run's end").elapsed().as_secs_f64();
            drop(recorder);
            let rows = place.count("decisions") as u64 - warmed;
            assert_eq!(rows, appended, "every decision held was appended");
            assert!(rows >= done[0]);
            println!(
                "batched {label} decided={rows} most_held={most_held} held_at_end={held_at_end} \
                 flush_ms={:.0} flush_records_per_s={:.0} seconds_to_durable={took:.2}",
                flush.as_secs_f64() * 1e3,
                held_at_end as f64 / flush.as_secs_f64()
            );
            vec![
                ("records", rows as f64 / took),
                ("decides", done[0] as f64 / seconds),
            ]
        }
    };
    if let Some(waits) = waits {
        println!("waits {label} {}", waits.finish());
    }
    for (what, took) in ["records", "creates"].iter().zip(took) {
        let took = took.into_inner().expect("times");
        if !took.is_empty() {
            let (p50, p99) = p50_p99(&took);
            println!(
                "latency {} {} {what} n={} p50_us={p50:.0} p99_us={p99:.0} max_us={:.0}",
                engine.name(),
                run.name(),
                took.len(),
                took.iter().max().expect("one").as_secs_f64() * 1e6
            );
        }
    }
    drop(creating);
    drop(recording);
    if let Some(before) = before {
        // Connections report their counts when they end: give them a moment.
        std::thread::sleep(Duration::from_millis(500));
        if let Some(after) = server_counters(&place) {
            let [commits, syncs, bytes, fpi] = [0, 1, 2, 3].map(|k| after[k] - before[k]);
            let writes: f64 = rates
                .iter()
                .filter(|(what, _)| *what != "decides")
                .map(|(_, rate)| rate * seconds)
                .sum();
            println!(
                "server {label} transactions={commits} wal_syncs={syncs} \
                 transactions_per_sync={:.2} wal_bytes_per_write={:.0} wal_fpi={fpi}",
                commits as f64 / syncs.max(1) as f64,
                bytes as f64 / writes.max(1.0)
            );
        }
    }
    rates
}

fn sleep_until(deadline: Instant) {
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
}

/// Opens every pooled connection of `ledger` (8, the default pool) and prepares the
/// statements of a decision and its record on each.
fn warm(ledger: &Ledger, id: &str) {
    std::thread::scope(|scope| {
        for _ in 0..WRITERS {
            scope.spawn(|| {
                for _ in 0..3 {
                    ledger
                        .decide_and_record(id, COMMAND, false, &asked())
                        .expect("warm");
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Growth: a session's listing at 10,000 records and at DECISION_ROWS.

/// The sessions of a growth ledger of `rows` records, tree by tree: `g00007` and its children
/// `g00007.0` to `g00007.8`.
fn growth_sessions(rows: usize) -> Vec<Vec<String>> {
    let trees = rows / PER_SESSION / PER_TREE;
    (0..trees)
        .map(|t| {
            let root = format!("g{t:05}");
            let mut ids = vec![root.clone()];
            ids.extend((0..PER_TREE - 1).map(|k| format!("{root}.{k}")));
            ids
        })
        .collect()
}

/// Builds a growth ledger of `rows` records at `place` (see the module comment) and says what
/// it took.
fn build_records(place: &Place, rows: usize) -> String {
    let started = Instant::now();
    let trees = growth_sessions(rows);
    let builder = Arc::new(place.builder());
    for tree in &trees {
        builder.create_root(&tree[0], ACTOR).expect("root");
        builder
            .grant(&tree[0], PostureLevel::Trust, ACTOR)
            .expect("grant");
        support::grow_tree(&builder, &tree[0], PER_TREE - 1, PER_TREE - 1);
    }
    let sessions_s = started.elapsed().as_secs_f64();
    let mut options = RecorderOptions::default();
    options.max_batch = TUNED_BATCH;
    options.window = Duration::from_secs(1);
    let recorder = DecisionRecorder::new(Arc::clone(&builder), options).expect("a recorder");
    let building = AtomicBool::new(true);
    let recording_started = Instant::now();
    let (integrated, integrate_s) = std::thread::scope(|scope| {
        let integrator = scope.spawn(|| {
            let (mut records, mut busy) = (0, Duration::ZERO);
            while building.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(2));
                let (took, n) = timed(|| builder.integrate_decisions(ACTOR).expect("integrate"));
                records += n.records;
                busy += took;
            }
            (records, busy)
        });
        let every = (rows / 10).max(1);
        let mut decided = 0;
        for tree in &trees {
            for _ in 0..PER_SESSION {
                for id in tree {
                    while recorder.held() > 2 * TUNED_BATCH {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    recorder
                        .decide(id, COMMAND, false, &asked())
                        .expect("decide, held");
                    decided += 1;
                    if decided % every == 0 {
                        eprintln!(
                            "building {rows}: {decided} decided, {:.0} s",
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
            }
        }
        recorder.flush().expect("flush");
        building.store(false, Ordering::Relaxed);
        integrator.join().expect("the integrator")
    });
    let recorded_s = recording_started.elapsed().as_secs_f64();
    drop(recorder);
    let (took, last) = timed(|| builder.integrate_decisions(ACTOR).expect("integrate"));
    let integrated = integrated + last.records;
    let integrate_s = (integrate_s + took).as_secs_f64();
    assert_eq!(last.queued, 0, "every record integrated");
    assert_eq!(last.log_size, rows as u64);
    drop(builder);
    let settle_started = Instant::now();
    place.settle();
    format!(
        "sessions={} sessions_s={sessions_s:.1} records={rows} recorded_s={recorded_s:.1} \
         records_per_s={:.0} integrated={integrated} integrating_s={integrate_s:.1} \
         settle_s={:.1} build_s={:.1}",
        trees.len() * PER_TREE,
        rows as f64 / recorded_s,
        settle_started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    )
}

/// `target/decision-cache` (or under `$CARGO_TARGET_DIR`).
fn cache_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("decision-cache")
}

/// The cached SQLite growth ledger of `rows` records, built now if it is not there. A build
/// goes to a `.building` file first and is renamed when complete; what it took is kept in
/// `<file>.build`.
fn cached_ledger(rows: usize) -> PathBuf {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).expect("create the cache directory");
    let name = format!(
        "{rows}-v{}-s{SHAPE_VERSION}.db",
        session_ledger::schema_version()
    );
    let path = dir.join(&name);
    let stats = dir.join(format!("{name}.build"));
    if path.exists() {
        let took = std::fs::read_to_string(&stats).unwrap_or_else(|_| "?".to_owned());
        println!(
            "build sqlite {rows} reused {} {}",
            path.display(),
            took.trim()
        );
        return path;
    }
    let building = dir.join(format!("{name}.building"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", building.display()));
    }
    let place = Place::at_path(Engine::Sqlite, &building);
    let took = build_records(&place, rows);
    drop(place);
    std::fs::rename(&building, &path).expect("the built ledger in its place");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", building.display()));
    }
    std::fs::write(&stats, format!("{took}\n")).expect("record the build");
    println!("build sqlite {rows} built {} {took}", path.display());
    path
}

/// The floor of a session's listing: the library's statement (`src/storage/sqlite/decisions.rs`,
/// `src/storage/postgres/decisions.rs`) without its optional filters, which are all unset here,
/// prepared once on a plain connection.
const LIST: &str = "SELECT id, record, at, session_id, tree, tool, input, input_bytes,
        input_sha256, verdict, authority, reason, asked_by, tool_use_id, seq, batch
   FROM decision_records WHERE session_id = $1 ORDER BY id DESC LIMIT 100";

fn growth(engine: Engine, plan: &Plan, report: &mut Report) {
    println!(
        "part growth {} small={SMALL_ROWS} large={} load={}",
        engine.name(),
        plan.rows,
        load_average()
    );
    let places = match engine {
        Engine::Sqlite => {
            [SMALL_ROWS, plan.rows].map(|rows| Place::at_path(engine, &cached_ledger(rows)))
        }
        Engine::Postgres => [SMALL_ROWS, plan.rows].map(|rows| {
            let place = Place::new(engine);
            let took = build_records(&place, rows);
            println!("build postgres {rows} built {took}");
            place
        }),
    };
    for (place, rows) in places.iter().zip([SMALL_ROWS, plan.rows]) {
        println!(
            "ledger {} records={} size_mib={:.1}",
            engine.name(),
            rows,
            place.size_bytes() as f64 / (1 << 20) as f64
        );
    }
    let sessions = [SMALL_ROWS, plan.rows].map(|rows| {
        growth_sessions(rows)
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
    });
    // The sessions of the newest tree on each: the same 10 sessions' 10,000 records on the
    // small ledger, the newest 10,000 of the large one.
    let recent = sessions
        .each_ref()
        .map(|ids| ids[ids.len() - PER_TREE..].to_vec());
    let ledgers = places.each_ref().map(Place::open);
    let mut listings = Vec::new();
    for (name, pick) in [
        ("session_listing", &sessions),
        ("session_listing_recent", &recent),
    ] {
        let mut random = [Random(0x9e37_79b9_7f4a_7c15), Random(0x9e37_79b9_7f4a_7c15)];
        let times = support::interleaved(plan.listing, |side| {
            let id = &pick[side][random[side].below(pick[side].len())];
            let query = DecisionQuery {
                session: Some(id.clone()),
                ..Default::default()
            };
            let (took, records) = timed(|| ledgers[side].decisions(&query).expect("list"));
            assert_eq!(records.len(), 100);
            assert!(records.iter().all(|r| r.seq.is_some()), "all integrated");
            took
        });
        let listing = Measured::new(name, times);
        println!(
            "op {} {}",
            engine.name(),
            listing.fields(["small", "large"])
        );
        listings.push(listing);
    }
    drop(ledgers);

    let mut raw = places.each_ref().map(RawConn::open);
    let mut random = [Random(0x9e37_79b9_7f4a_7c15), Random(0x9e37_79b9_7f4a_7c15)];
    let times = support::interleaved(plan.listing, |side| {
        let id = &sessions[side][random[side].below(sessions[side].len())];
        let (took, rows) = timed(|| raw[side].rows(LIST, &[id]));
        assert_eq!(rows, 100);
        took
    });
    let floor = Measured::new("raw_session_listing", times);
    println!(
        "floor {} {}",
        engine.name(),
        floor.fields(["small", "large"])
    );
    drop(raw);
    if engine == Engine::Sqlite {
        pages_read(plan, &places, &sessions);
    }
    plans(engine, &places[1], &sessions[1][sessions[1].len() / 2]);
    report.growth.push(Growth {
        engine,
        rows: plan.rows,
        small: listings[0].p(0, 50.0),
        large: listings[0].p(1, 50.0),
        recent_small: listings[1].p(0, 50.0),
        recent_large: listings[1].p(1, 50.0),
        floor_small: floor.p(0, 50.0),
        floor_large: floor.p(1, 50.0),
        load: load_average(),
    });
}

/// SQLite: the raw listing of a random session on each ledger, on a plain connection with the
/// ledger's page cache (16 MiB), with a 256 MiB one, and with a 4 GiB memory map, timed and
/// with the pages it read from outside the connection's cache (`SQLITE_DBSTATUS_CACHE_MISS`).
fn pages_read(plan: &Plan, places: &[Place; 2], sessions: &[Vec<String>; 2]) {
    for (name, pragma, value) in [
        ("cache_16mib", "cache_size", -16_384_i64),
        ("cache_256mib", "cache_size", -262_144),
        ("mmap_4gib", "mmap_size", 4 << 30),
    ] {
        let conns = places.each_ref().map(|p| {
            let conn = support::raw_connection(p.path());
            conn.pragma_update(None, pragma, value).expect("the pragma");
            conn
        });
        let mut missed = [0_i64; 2];
        let mut random = [Random(0x2545_f491_4f6c_dd1d), Random(0x2545_f491_4f6c_dd1d)];
        let times = support::interleaved(plan.listing, |side| {
            let id = &sessions[side][random[side].below(sessions[side].len())];
            let before = cache_misses(&conns[side]);
            let (took, rows) = timed(|| {
                let mut stmt = conns[side].prepare_cached(LIST).expect("prepare");
                let mut rows = stmt.query([id]).expect("query");
                let mut n = 0;
                while rows.next().expect("step").is_some() {
                    n += 1;
                }
                n
            });
            assert_eq!(rows, 100);
            missed[side] += cache_misses(&conns[side]) - before;
            took
        });
        let m = Measured::new("raw_session_listing", times).note(format!(
            "connection={name} small_pages_read={:.1} large_pages_read={:.1}",
            missed[0] as f64 / (plan.listing.timed + plan.listing.warmup) as f64,
            missed[1] as f64 / (plan.listing.timed + plan.listing.warmup) as f64
        ));
        println!("floor sqlite {}", m.fields(["small", "large"]));
    }
}

/// How many pages `conn` has read from outside its page cache since it opened.
fn cache_misses(conn: &rusqlite::Connection) -> i64 {
    db_status(conn, rusqlite::ffi::SQLITE_DBSTATUS_CACHE_MISS)
}

/// The plans of the hot statements on `place`, for session `id`, printed.
fn plans(engine: Engine, place: &Place, id: &str) {
    match engine {
        Engine::Sqlite => {
            let conn = rusqlite::Connection::open_with_flags(
                place.path(),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("open for the plans");
            // Restated from src/storage/sqlite/decisions.rs.
            let statements = [
                ("session_listing", "SELECT id, record, at, session_id, tree, tool, input, input_bytes, input_sha256, verdict, authority, reason, asked_by, tool_use_id, seq, batch FROM decision_records WHERE session_id = :session AND (:before IS NULL OR id < :before) AND (:verdict IS NULL OR verdict = :verdict) AND (:authority IS NULL OR authority = :authority) AND (:since IS NULL OR at >= :since) AND (:until IS NULL OR at < :until) ORDER BY id DESC LIMIT :limit"),
                ("append_tree_walk", "SELECT coalesce((WITH RECURSIVE up (id, created_by) AS (SELECT id, created_by FROM sessions WHERE id = :session UNION ALL SELECT s.id, s.created_by FROM up JOIN sessions AS s ON s.id = up.created_by) SELECT id FROM up WHERE created_by IS NULL), :session)"),
                ("queued", "SELECT d.id FROM decision_queue AS q JOIN decisions AS d ON d.id = q.id ORDER BY q.id LIMIT :limit"),
                ("by_record", "SELECT id FROM decision_records WHERE record = :record"),
                ("logged_after", "SELECT d.id, l.seq FROM decision_log AS l JOIN decisions AS d ON d.id = l.decision WHERE l.seq > :after ORDER BY l.seq LIMIT :limit"),
                ("log_size", "SELECT coalesce(max(seq), 0) FROM decision_log"),
                ("log_grows_in_order_max", "SELECT max(seq) FROM decision_log"),
                ("queue_keeps_check", "SELECT 1 FROM decision_log WHERE decision = :id"),
            ];
            for (name, sql) in statements {
                let mut stmt = conn
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .expect("explain");
                let mut rows = stmt.raw_query();
                let mut details = Vec::new();
                while let Some(row) = rows.next().expect("a plan row") {
                    details.push(row.get::<_, String>(3).expect("its detail"));
                }
                println!("plan sqlite {name}: {}", details.join(" | "));
            }
        }
        Engine::Postgres => {
            let mut client = place.client();
            client
                .batch_execute(
                    "PREPARE bench_listing (text, text, bigint, text, text, timestamptz,
                                            timestamptz, bigint) AS
                     SELECT id, record, at, session_id, tree, tool, input, input_bytes,
                            input_sha256, verdict, authority, reason, asked_by, tool_use_id,
                            seq, batch
                       FROM decision_records WHERE session_id = $1::text AND
                            ($1::text IS NULL OR session_id = $1::text)
                        AND ($2::text IS NULL OR true)
                        AND ($3::bigint IS NULL OR id < $3::bigint)
                        AND ($4::text IS NULL OR verdict = $4::text)
                        AND ($5::text IS NULL OR authority = $5::text)
                        AND ($6::timestamptz IS NULL OR at >= $6::timestamptz)
                        AND ($7::timestamptz IS NULL OR at < $7::timestamptz)
                      ORDER BY id DESC LIMIT $8::bigint;
                     SET plan_cache_mode = force_generic_plan;
                     PREPARE bench_queued (bigint) AS
                     SELECT d.id FROM decision_queue AS q JOIN decisions AS d ON d.id = q.id
                      ORDER BY q.id LIMIT $1;
                     PREPARE bench_after (bigint, bigint) AS
                     SELECT d.id, l.seq FROM decision_log AS l
                       JOIN decisions AS d ON d.id = l.decision
                      WHERE l.seq > $1 ORDER BY l.seq LIMIT $2",
                )
                .expect("prepare the plans");
            let quoted = id.replace('\'', "''");
            for (name, sql) in [
                (
                    "session_listing",
                    format!(
                        "EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_listing \
                         ('{quoted}', NULL, NULL, NULL, NULL, NULL, NULL, 100)"
                    ),
                ),
                (
                    "queued",
                    "EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_queued (10000)".to_owned(),
                ),
                (
                    "logged_after",
                    "EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_after (500000, 1000)".to_owned(),
                ),
                (
                    "append_tree_root",
                    format!("EXPLAIN (ANALYZE, BUFFERS) SELECT session_tree_root('{quoted}')"),
                ),
            ] {
                let lines: Vec<String> = client
                    .simple_query(&sql)
                    .expect("explain")
                    .into_iter()
                    .filter_map(|m| match m {
                        postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                        _ => None,
                    })
                    .collect();
                println!("plan postgres {name}:");
                for line in lines {
                    println!("    {line}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The report.

struct Latency {
    engine: Engine,
    decide: f64,
    recorded: f64,
    floor: f64,
    raw_append: f64,
    raw_append_plpgsql: Option<f64>,
    load: String,
}

struct Rates {
    engine: Engine,
    run: Run,
    what: &'static str,
    rates: Vec<f64>,
}

struct Growth {
    engine: Engine,
    rows: usize,
    small: f64,
    large: f64,
    recent_small: f64,
    recent_large: f64,
    floor_small: f64,
    floor_large: f64,
    load: String,
}

#[derive(Default)]
struct Report {
    latency: Vec<Latency>,
    rates: Vec<Rates>,
    growth: Vec<Growth>,
}

impl Report {
    fn rate(&mut self, engine: Engine, run: Run, what: &'static str, rate: f64) {
        match self
            .rates
            .iter_mut()
            .find(|r| r.engine == engine && r.run == run && r.what == what)
        {
            Some(r) => r.rates.push(rate),
            None => self.rates.push(Rates {
                engine,
                run,
                what,
                rates: vec![rate],
            }),
        }
    }

    fn median(&self, engine: Engine, run: Run, what: &str) -> Option<f64> {
        self.rates
            .iter()
            .find(|r| r.engine == engine && r.run == run && r.what == what)
            .map(|r| percentile(&r.rates, 50.0))
    }

    fn summary(&self) {
        let verdict = |met: bool| if met { "met" } else { "not met" };
        println!();
        for l in &self.latency {
            let bound = l.floor + 1.5 * l.decide;
            println!(
                "target {} decide_and_record_p50_us={:.1} <= floor {:.1} + 1.5 x decide {:.1} = {bound:.1} {}",
                l.engine.name(),
                l.recorded,
                l.floor,
                l.decide,
                verdict(l.recorded <= bound)
            );
        }
        for engine in [Engine::Sqlite, Engine::Postgres] {
            if let Some(records) = self.median(engine, Run::Record(WRITERS), "records") {
                println!(
                    "target {} records_per_s threads={WRITERS} {records:.0} >= 5000 {}",
                    engine.name(),
                    verdict(records >= 5_000.0)
                );
            }
            if let (Some(alone), Some(mixed)) = (
                self.median(engine, Run::Create, "creates"),
                self.median(engine, Run::Mixed { integrating: false }, "creates"),
            ) {
                println!(
                    "target {} creates_with_recorders/alone {:.2} >= 0.90 {} ({mixed:.0} / {alone:.0})",
                    engine.name(),
                    mixed / alone,
                    verdict(mixed >= 0.9 * alone)
                );
            }
            if let (Some(recorded), Some(floor)) = (
                self.median(engine, Run::Record(1), "records"),
                self.median(engine, Run::Floor(1), "inserts"),
            ) {
                println!(
                    "target {} durable_records_per_s threads=1 {recorded:.0} vs floor {floor:.0}: {:.2}",
                    engine.name(),
                    recorded / floor
                );
            }
            for r in self
                .rates
                .iter()
                .filter(|r| r.engine == engine && r.what == "records")
            {
                if let Run::Batched(t, b, bounded) = r.run {
                    let bounded = if bounded { " bounded" } else { "" };
                    let records = percentile(&r.rates, 50.0);
                    println!(
                        "target {} batched_records_per_s threads={t} max_batch={b}{bounded} {records:.0} >= 50000 {}",
                        engine.name(),
                        verdict(records >= 50_000.0)
                    );
                }
            }
        }
        for g in &self.growth {
            println!(
                "target {} session_listing_ratio rows={} {:.2} <= 1.5 {} (newest sessions: {:.2})",
                g.engine.name(),
                g.rows,
                g.large / g.small,
                verdict(g.large / g.small <= 1.5),
                g.recent_large / g.recent_small
            );
        }

        println!();
        println!("| engine | what | figure | floor or baseline | ratio | load |");
        println!("|---|---|---|---|---|---|");
        for l in &self.latency {
            println!(
                "| {} | `decide` p50 | {:.1} µs | | | {} |",
                l.engine.name(),
                l.decide,
                l.load
            );
            println!(
                "| {} | `decide_and_record` p50 | {:.1} µs | durable one-row insert {:.1} µs + 1.5 × `decide` = {:.1} µs | {:.2} | {} |",
                l.engine.name(),
                l.recorded,
                l.floor,
                l.floor + 1.5 * l.decide,
                l.recorded / (l.floor + 1.5 * l.decide),
                l.load
            );
            println!(
                "| {} | the append's statement alone, raw, durable, p50 | {:.1} µs | durable one-row insert {:.1} µs | {:.2} | {} |",
                l.engine.name(),
                l.raw_append,
                l.floor,
                l.raw_append / l.floor,
                l.load
            );
            if let Some(plpgsql) = l.raw_append_plpgsql {
                println!(
                    "| {} | the same, `session_tree_root` in PL/pgSQL, p50 | {plpgsql:.1} µs | durable one-row insert {:.1} µs | {:.2} | {} |",
                    l.engine.name(),
                    l.floor,
                    plpgsql / l.floor,
                    l.load
                );
            }
        }
        for engine in [Engine::Sqlite, Engine::Postgres] {
            let m = |run, what| self.median(engine, run, what);
            let pairs: Vec<(String, Option<f64>, String, Option<f64>)> = {
                let mut v = vec![
                    (
                        "records/s, 1 thread, durable".to_owned(),
                        m(Run::Record(1), "records"),
                        "durable inserts/s, 1 thread".to_owned(),
                        m(Run::Floor(1), "inserts"),
                    ),
                    (
                        format!("records/s, {WRITERS} threads, durable"),
                        m(Run::Record(WRITERS), "records"),
                        format!("durable inserts/s, {WRITERS} threads"),
                        m(Run::Floor(WRITERS), "inserts"),
                    ),
                    (
                        format!("creates/s, {WRITERS} threads, with {WRITERS} recorders"),
                        m(Run::Mixed { integrating: false }, "creates"),
                        "creates/s alone".to_owned(),
                        m(Run::Create, "creates"),
                    ),
                    (
                        format!("records/s, {WRITERS} recorders, with {WRITERS} creates"),
                        m(Run::Mixed { integrating: false }, "records"),
                        "records/s alone".to_owned(),
                        m(Run::Record(WRITERS), "records"),
                    ),
                    (
                        format!(
                            "creates/s, with {WRITERS} recorders held to {PACED_RECORDS} records/s"
                        ),
                        m(Run::MixedPaced(PACED_RECORDS), "creates"),
                        "creates/s alone".to_owned(),
                        m(Run::Create, "creates"),
                    ),
                    (
                        format!("creates/s, with {WRITERS} batching recorders held to {BATCHED_RECORDS} records/s"),
                        m(Run::MixedBatched(BATCHED_RECORDS), "creates"),
                        "creates/s alone".to_owned(),
                        m(Run::Create, "creates"),
                    ),
                    (
                        "creates/s, with recorders and integration every 1 s".to_owned(),
                        m(Run::Mixed { integrating: true }, "creates"),
                        "creates/s alone".to_owned(),
                        m(Run::Create, "creates"),
                    ),
                ];
                for r in self
                    .rates
                    .iter()
                    .filter(|r| r.engine == engine && r.what == "records")
                {
                    if let Run::Batched(t, b, bounded) = r.run {
                        let bounded = if bounded {
                            ", callers held while 2 batches wait"
                        } else {
                            ""
                        };
                        v.push((
                            format!("batched records/s, {t} threads, max_batch {b}{bounded}"),
                            Some(percentile(&r.rates, 50.0)),
                            format!("`decide` alone/s, {t} threads"),
                            m(Run::Decide(t), "decides"),
                        ));
                    }
                }
                v
            };
            for (what, figure, base_name, base) in pairs {
                if let (Some(figure), Some(base)) = (figure, base) {
                    println!(
                        "| {} | {what} | {figure:.0} | {base_name}: {base:.0} | {:.2} | |",
                        engine.name(),
                        figure / base
                    );
                }
            }
        }
        for g in &self.growth {
            println!(
                "| {} | session listing p50, a random session, {} records against 10,000 | {:.1} µs against {:.1} µs | raw statement {:.1} against {:.1} µs ({:.2}) | {:.2} | {} |",
                g.engine.name(),
                g.rows,
                g.large,
                g.small,
                g.floor_large,
                g.floor_small,
                g.floor_large / g.floor_small,
                g.large / g.small,
                g.load
            );
            println!(
                "| {} | session listing p50, a session of the newest 10,000 records, {} records against 10,000 | {:.1} µs against {:.1} µs | | {:.2} | {} |",
                g.engine.name(),
                g.rows,
                g.recent_large,
                g.recent_small,
                g.recent_large / g.recent_small,
                g.load
            );
        }
        println!();
    }
}
