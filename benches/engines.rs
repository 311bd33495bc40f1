//! The engines bench: SQLite and PostgreSQL side by side, in one process, on the same input:
//! what moving a ledger to PostgreSQL costs each operation on one machine, with the server on
//! the same machine over a Unix socket (docs/performance.md, "Both engines").
//!
//! ```text
//! scripts/with-postgres --durable cargo bench --bench engines
//! ENGINES_QUICK=1 scripts/with-postgres --durable cargo bench --bench engines   # small sizes, short
//! ENGINES_ONLY=cascades ENGINES_CASCADES=10000x5,100000x3 scripts/with-postgres --durable \
//!     cargo bench --bench engines                    # some parts only, other sizes and rounds
//! ```
//!
//! `ENGINES_ONLY` takes a comma-separated list of `points`, `cascades` and `writers`;
//! `ENGINES_CASCADES` a list of `SESSIONSxROUNDS`; `ENGINES_WRITERS` a list of writer counts
//! (from 1 to 8).
//!
//! It needs `SESSION_LEDGER_BENCH_POSTGRES` (`benches/support/engine.rs`), which
//! `scripts/with-postgres --durable` sets for a throwaway server that syncs its commits, as
//! SQLite's `synchronous=FULL` does.
//!
//! Every input is built once on SQLite through the building handle and copied: as a file for
//! SQLite, row for row into a schema of its own for PostgreSQL (`Ledger::copy_into`, then
//! vacuumed and analyzed). Every measured call goes through a handle opened with the default
//! `Config`, as a dashboard's. Each iteration runs once on each engine, the engine that goes
//! first alternating ([`support::interleaved`]), so the machine's drift falls on both; setup
//! (picking a session, making a creator, copying a template) is outside the timed part.
//!
//! * `op decide`, `op state_stored`: `decide` of `make deploy` (approved through the inherited
//!   `trust`) and `state` of a materialized session, a random one of 10,000 each time.
//! * `op create_child`: a create under a trusted creator (a new creator every 50 children,
//!   made untimed, so the default creation bounds are never met).
//! * `op cascade_N`: `revoke` with `Propagation::Cascade` of the root of a ledger of exactly N
//!   trusted sessions (N = 1,000 and 100,000), a fresh copy each round: the single
//!   `DELETE ... WHERE session_id IN (recursive walk)` and one chained `posture.revoke` audit
//!   row per session, in one transaction.
//! * `floor ...`: what each engine costs with no library around it, on the same ledgers: a
//!   prepared `SELECT 1` (the round trip alone on PostgreSQL), a prepared point read of the
//!   posture row `decide` reads, and a durable one-row `INSERT` committed on its own (into a
//!   table of one text key, added for it).
//! * `floor cascade_delete_N`, `floor audit_rows_N`, `floor audit_rows_constraints_N`,
//!   `floor audit_rows_bare_N`, for the largest cascade: its parts alone, with no library
//!   around them, each in one durable transaction on a fresh copy: the cascade's `DELETE`
//!   statement (restated); then N `posture.revoke` rows chained after the head, as the library
//!   writes them (one prepared `INSERT` each on SQLite, in-process; 1,000 to an
//!   `INSERT ... SELECT FROM unnest` on PostgreSQL, as the engine batches them), into the
//!   ledger's `audit` table with its triggers and constraints, into a copy of its columns with
//!   its constraints (the `CHECK`s and the foreign key to `audit_kinds`) and indexes but no
//!   trigger, and into one with its indexes alone.
//! * `statements postgres cascade_1000`: how many statements the cascade ran against each
//!   table, counted by the server (statement-level triggers added to a copy for that run only).
//! * `throughput create writers=W`: W operating-system processes (this binary re-executed with
//!   `--writer`), each creating children under creators of its own as fast as it can for a
//!   fixed time, all on one ledger (on SQLite, one file: writers queue on its write lock), in
//!   creates per second, the median of the rounds; W = 1 and 8 in the same run.
//! * `throughput raw_insert writers=W`: the floor under it: W processes each committing
//!   durable one-row `INSERT`s on a plain connection, each transaction taking the engine's
//!   write lock first, as the ledger's do.
//!
//! `ratio` is PostgreSQL's median over SQLite's (above 1, PostgreSQL is slower). The `target`
//! lines compare with the targets of docs/performance.md ("Both engines"); nothing here asserts a time. The load average is
//! printed at the start and the end.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use session_ledger::{Ledger, PostureLevel, Propagation, Verdict};
use support::{
    interleaved, percentile, timed, Engine, Iterations, Measured, Place, RawConn, TrustedCreators,
    ACTOR,
};

/// The two sides of every measurement, in their order.
const SIDES: [Engine; 2] = [Engine::Sqlite, Engine::Postgres];
const SIDE_NAMES: [&str; 2] = ["sqlite", "postgres"];

/// The ledger of the point operations: 10,000 trusted, materialized sessions.
const POINT_SESSIONS: usize = 10_000;

/// Writer processes of the throughput measurement, unless `ENGINES_WRITERS` lists others.
const WRITERS: [usize; 2] = [1, 8];
/// The most writer processes the template has roots and creators for.
const MAX_WRITERS: usize = 8;

/// Sizes and repetitions of one run, and which parts run.
struct Plan {
    points: bool,
    writers: bool,
    point: Iterations,
    create: Iterations,
    /// (sessions, rounds) of each cascade.
    cascades: Vec<(usize, usize)>,
    writer_rounds: usize,
    writer_seconds: f64,
    /// Creators per writer, each good for 50 children under the default bounds.
    creators_per_writer: usize,
    /// How many writer processes each throughput measurement runs.
    writer_counts: Vec<usize>,
}

impl Plan {
    fn from_env() -> Plan {
        let mut plan = Plan::sizes();
        if let Ok(only) = std::env::var("ENGINES_ONLY") {
            let parts: Vec<&str> = only.split(',').map(str::trim).collect();
            for part in &parts {
                assert!(
                    ["points", "cascades", "writers"].contains(part),
                    "ENGINES_ONLY={only}: {part:?} is not points, cascades or writers"
                );
            }
            plan.points = parts.contains(&"points");
            plan.writers = parts.contains(&"writers");
            if !parts.contains(&"cascades") {
                plan.cascades.clear();
            }
        }
        if let Ok(list) = std::env::var("ENGINES_WRITERS") {
            plan.writer_counts = list
                .split(',')
                .map(|w| match w.trim().parse::<usize>() {
                    Ok(w) if (1..=MAX_WRITERS).contains(&w) => w,
                    _ => panic!("ENGINES_WRITERS={list}: expected counts from 1 to {MAX_WRITERS}"),
                })
                .collect();
        }
        if let Ok(list) = std::env::var("ENGINES_CASCADES") {
            plan.cascades = list
                .split(',')
                .map(|item| {
                    let (n, rounds) = item.trim().split_once('x').unwrap_or(("", ""));
                    match (n.parse::<usize>(), rounds.parse::<usize>()) {
                        (Ok(n), Ok(rounds)) => (n, rounds),
                        _ => panic!("ENGINES_CASCADES={list}: expected SESSIONSxROUNDS,..."),
                    }
                })
                .collect();
        }
        plan
    }

    fn sizes() -> Plan {
        if std::env::var_os("ENGINES_QUICK").is_some_and(|v| v != "0") {
            Plan {
                points: true,
                writers: true,
                point: Iterations {
                    timed: 300,
                    warmup: 30,
                },
                create: Iterations {
                    timed: 60,
                    warmup: 5,
                },
                cascades: vec![(1_000, 3), (10_000, 2)],
                writer_rounds: 1,
                writer_seconds: 2.0,
                creators_per_writer: 200,
                writer_counts: WRITERS.to_vec(),
            }
        } else {
            Plan {
                points: true,
                writers: true,
                point: Iterations {
                    timed: 2_000,
                    warmup: 200,
                },
                create: Iterations {
                    timed: 400,
                    warmup: 20,
                },
                cascades: vec![(1_000, 11), (100_000, 5)],
                writer_rounds: 3,
                writer_seconds: 5.0,
                creators_per_writer: 400,
                writer_counts: WRITERS.to_vec(),
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--writer") {
        writer(&args[at + 1..]);
        return;
    }
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs bench binaries without `--bench`: build nothing.
        println!("engines: run it with `cargo bench --bench engines` (see benches/engines.rs)");
        return;
    }
    if support::postgres_server().is_none() {
        println!(
            "engines: nothing to compare: {} is not set (run it under \
             scripts/with-postgres --durable)",
            support::POSTGRES_URL_VARIABLE
        );
        return;
    }
    let plan = Plan::from_env();
    println!(
        "engines schema=v{} load_start={}",
        session_ledger::schema_version(),
        load_average()
    );
    let dir = tempfile::tempdir().expect("a folder for the templates");
    let mut report = Report::default();

    if plan.points {
        point_operations(&plan, dir.path(), &mut report);
    }
    for &(n, rounds) in &plan.cascades {
        let template = dir.path().join(format!("cascade-{n}.db"));
        support::cascade_template(&template, n);
        if n == plan.cascades[0].0 {
            count_cascade_statements(&template, n);
        }
        report.op(cascade(&template, n, rounds));
        if n == plan.cascades.iter().map(|c| c.0).max().unwrap_or(0) {
            cascade_floors(&template, n, rounds, &mut report);
        }
        std::fs::remove_file(&template).expect("remove the template");
    }
    if plan.writers {
        throughput(&plan, dir.path(), &mut report);
    }
    report.summary();
    println!("engines load_end={}", load_average());
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(","))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// A random index below `n` (xorshift, a fixed seed per stream).
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

// ---------------------------------------------------------------------------------------------
// Point operations and the floors under them.

/// `decide`, `state` and `create_child` on both engines, and the floors: one ledger of
/// [`POINT_SESSIONS`] trusted, materialized sessions below `root`, copied to each engine.
fn point_operations(plan: &Plan, dir: &Path, report: &mut Report) {
    let template = dir.join("points.db");
    let ids = support::trusted_materialized_tree(&template, POINT_SESSIONS);
    let places = SIDES.map(|engine| Place::copy_of(engine, &template));
    let ledgers = places.each_ref().map(Place::open);
    for ledger in &ledgers {
        let d = ledger
            .decide(&ids[0], "make deploy", false)
            .expect("decide");
        assert_eq!(
            d.verdict,
            Verdict::Approve,
            "approved through inherited trust"
        );
    }

    let mut random = [Random(0x9e37_79b9_7f4a_7c15), Random(0x9e37_79b9_7f4a_7c15)];
    let times = interleaved(plan.point, |side| {
        let id = &ids[random[side].below(ids.len())];
        let (took, d) = timed(|| {
            ledgers[side]
                .decide(id, "make deploy", false)
                .expect("decide")
        });
        std::hint::black_box(d);
        took
    });
    report.op(Measured::new("decide", times));

    let times = interleaved(plan.point, |side| {
        let id = &ids[random[side].below(ids.len())];
        let (took, state) = timed(|| ledgers[side].state(id).expect("state"));
        assert!(state.known && state.trust);
        took
    });
    report.op(Measured::new("state_stored", times));

    let mut raw = places.each_ref().map(RawConn::open);
    let times = interleaved(plan.point, |side| {
        let (took, rows) = timed(|| raw[side].rows("SELECT 1", &[]));
        assert_eq!(rows, 1);
        took
    });
    report.floor(Measured::new("select_1", times));
    let times = interleaved(plan.point, |side| {
        let id = &ids[random[side].below(ids.len())];
        let (took, rows) = timed(|| {
            raw[side].rows(
                "SELECT posture, source, granted_by, granted_at, granted_on, inherited_from,
                        allocated_at, chain, epoch
                   FROM postures WHERE session_id = $1",
                &[id],
            )
        });
        assert_eq!(rows, 1);
        took
    });
    report.floor(Measured::new("posture_point_read", times));
    for conn in &mut raw {
        conn.batch("CREATE TABLE bench_floor (id text PRIMARY KEY)");
    }
    let mut inserted = [0, 0];
    let times = interleaved(plan.create, |side| {
        let id = format!("i{}", inserted[side]);
        inserted[side] += 1;
        let (took, rows) =
            timed(|| raw[side].rows("INSERT INTO bench_floor (id) VALUES ($1)", &[&id]));
        assert_eq!(rows, 0);
        took
    });
    report.floor(Measured::new("durable_insert", times));
    drop(raw);

    let builders = places.each_ref().map(Place::builder);
    let mut creators =
        [0, 1].map(|side| TrustedCreators::new(&builders[side], &places[side], "root"));
    let times = interleaved(plan.create, |side| {
        let (creator, child) = creators[side].next();
        let (took, created) = timed(|| {
            ledgers[side]
                .create_child(&child, &creator, ACTOR)
                .expect("create")
        });
        assert!(created.inherited_trust);
        took
    });
    report.op(Measured::new("create_child", times));
}

// ---------------------------------------------------------------------------------------------
// Cascades.

/// `rounds` cascades of `n` sessions on each engine, each on a fresh copy of `template`.
fn cascade(template: &Path, n: usize, rounds: usize) -> Measured {
    let mut fresh: [Option<(Ledger, Place)>; 2] = [None, None];
    let times = interleaved(
        Iterations {
            timed: rounds,
            warmup: 0,
        },
        |side| {
            drop(fresh[side].take());
            let place = Place::copy_of(SIDES[side], template);
            let ledger = place.open();
            ledger.current_epoch().expect("open a pooled connection");
            let (took, revoked) = timed(|| {
                ledger
                    .revoke("root", Propagation::CascadeUnchecked, ACTOR)
                    .expect("cascade")
            });
            assert_eq!(revoked.count, n, "every session of the template held trust");
            // Dropped before the next copy is made, after this iteration is over.
            fresh[side] = Some((ledger, place));
            took
        },
    );
    Measured::new(cascade_name(n), times).in_ms()
}

fn cascade_name(n: usize) -> &'static str {
    // Measured names are static; a size given in ENGINES_CASCADES lives as long as the run.
    Box::leak(format!("cascade_{n}").into_boxed_str())
}

/// The cascade's statement, restated with no library around it: the subtree of `$1`, walked as
/// the engines walk it, and every posture in it removed, returning what each was.
const CASCADE_DELETE: &str = "WITH RECURSIVE subtree (id) AS (
         SELECT id FROM sessions WHERE id = $1
         UNION ALL
         SELECT s.id FROM subtree JOIN sessions AS s ON s.created_by = subtree.id
     )
     DELETE FROM postures WHERE session_id IN (SELECT id FROM subtree)
     RETURNING session_id, posture, source, granted_on,
               (SELECT depth FROM sessions WHERE sessions.id = postures.session_id) AS depth,
               epoch = (SELECT max(epoch) FROM epochs) AS current";

/// The audit tables the floors append to: the ledger's, and two copies of its columns and
/// indexes made for them, one with its constraints and one without.
const FLOOR_TABLES: [&str; 3] = ["audit", "bench_audit_constraints", "bench_audit_bare"];

/// The floors under a cascade of `n` sessions (see the module comment), `rounds` times on each
/// engine, each round on fresh copies of `template`, the engine that goes first alternating.
fn cascade_floors(template: &Path, n: usize, rounds: usize, report: &mut Report) {
    // [part][side]: the DELETE, then the rows into each of FLOOR_TABLES.
    let mut times: [[Vec<Duration>; 2]; 4] = Default::default();
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let place = Place::copy_of(SIDES[side], template);
            let mut raw = RawConn::open(&place);
            make_floor_tables(&mut raw);
            let (took, deleted) =
                timed(|| durably(&mut raw, |r| r.rows(CASCADE_DELETE, &["root"])));
            assert_eq!(deleted, n, "every session of the template held trust");
            times[0][side].push(took);
            for (part, table) in FLOOR_TABLES.iter().enumerate() {
                let rows = revoke_rows(&mut raw, table, n);
                let (took, ()) = timed(|| durably(&mut raw, |r| append_rows(r, table, &rows)));
                times[part + 1][side].push(took);
            }
        }
    }
    let names = [
        "cascade_delete",
        "audit_rows",
        "audit_rows_constraints",
        "audit_rows_bare",
    ];
    for (name, times) in names.iter().zip(times) {
        let name: &'static str = Box::leak(format!("{name}_{n}").into_boxed_str());
        report.floor(Measured::new(name, times).in_ms());
    }
}

/// Runs `work` in one transaction that holds the write lock from its start and commits
/// durably (the raw connections sync as the ledger's do).
fn durably<T>(raw: &mut RawConn, work: impl FnOnce(&mut RawConn) -> T) -> T {
    let begin = match raw {
        RawConn::Sqlite(_) => "BEGIN IMMEDIATE",
        RawConn::Postgres { .. } => "BEGIN",
    };
    raw.batch(begin);
    let out = work(raw);
    raw.batch("COMMIT");
    out
}

/// The two copies of the audit table the floors append to besides the ledger's own: its
/// columns and its index by session, with its constraints (the `CHECK`s and the foreign key to
/// `audit_kinds`) or without, and never a trigger.
fn make_floor_tables(raw: &mut RawConn) {
    match raw {
        RawConn::Sqlite(conn) => {
            let audit: String = conn
                .query_row(
                    "SELECT sql FROM sqlite_schema WHERE name = 'audit'",
                    [],
                    |r| r.get(0),
                )
                .expect("the audit table's definition");
            let constrained = audit.replacen(
                "CREATE TABLE audit",
                "CREATE TABLE bench_audit_constraints",
                1,
            );
            conn.execute_batch(&format!(
                "{constrained};
                 CREATE INDEX bench_audit_constraints_by_session
                     ON bench_audit_constraints (session_id, seq);
                 CREATE TABLE bench_audit_bare (
                     seq INTEGER PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL,
                     kind TEXT NOT NULL, session_id TEXT, detail TEXT NOT NULL,
                     prev_hash TEXT NOT NULL, hash TEXT NOT NULL) STRICT;
                 CREATE INDEX bench_audit_bare_by_session ON bench_audit_bare (session_id, seq);"
            ))
            .expect("the floors' tables");
        }
        RawConn::Postgres { client, .. } => client
            .batch_execute(
                "CREATE TABLE bench_audit_constraints (LIKE audit INCLUDING ALL);
                 ALTER TABLE bench_audit_constraints
                     ADD FOREIGN KEY (kind) REFERENCES audit_kinds (kind);
                 CREATE TABLE bench_audit_bare (LIKE audit INCLUDING INDEXES);",
            )
            .expect("the floors' tables"),
    }
}

/// An audit row as the floors write it, every value as its text.
struct RevokeRow {
    seq: i64,
    at: String,
    session: String,
    detail: String,
    prev_hash: String,
    hash: String,
}

/// `n` `posture.revoke` rows, one per session of the ledger, chained after the newest row of
/// `table` (64 zeros for an empty one) exactly as the library chains them, with the detail a
/// cascade of `root` writes. Not timed.
fn revoke_rows(raw: &mut RawConn, table: &str, n: usize) -> Vec<RevokeRow> {
    let sessions: Vec<String> = match raw {
        RawConn::Sqlite(conn) => {
            let mut st = conn
                .prepare("SELECT id FROM sessions ORDER BY seq")
                .expect("ids");
            let ids = st.query_map([], |r| r.get(0)).expect("ids");
            ids.collect::<Result<_, _>>().expect("ids")
        }
        RawConn::Postgres { client, .. } => client
            .query("SELECT id FROM sessions ORDER BY seq", &[])
            .expect("ids")
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    assert_eq!(sessions.len(), n);
    let head_sql = format!("SELECT seq, hash FROM {table} ORDER BY seq DESC LIMIT 1");
    let (mut seq, mut prev) = match raw {
        RawConn::Sqlite(conn) => conn
            .query_row(&head_sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap_or((0, "0".repeat(64))),
        RawConn::Postgres { client, .. } => client
            .query_opt(&head_sql, &[])
            .expect("the head")
            .map_or((0, "0".repeat(64)), |r| (r.get(0), r.get(1))),
    };
    let at = session_ledger::format_ts(chrono_now());
    let revocation = seq + 1;
    sessions
        .into_iter()
        .map(|session| {
            seq += 1;
            let detail = format!(
                "{{\"current\":true,\"granted_on\":\"root\",\"posture\":\"trust\",\
                 \"propagation\":\"cascade\",\"revocation\":{revocation},\"root\":\"root\",\
                 \"source\":\"inherited\"}}"
            );
            let hash = session_ledger::chain_hash(
                &prev,
                seq,
                &at,
                ACTOR,
                "posture.revoke",
                Some(&session),
                &detail,
            );
            RevokeRow {
                seq,
                at: at.clone(),
                session,
                detail,
                prev_hash: std::mem::replace(&mut prev, hash.clone()),
                hash,
            }
        })
        .collect()
}

/// The time now, to the millisecond, as the ledger stores it.
fn chrono_now() -> chrono::DateTime<chrono::Utc> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    chrono::DateTime::from_timestamp_millis(now.as_millis() as i64).expect("a time")
}

/// Appends `rows` to `table`: one prepared `INSERT` each on SQLite; on PostgreSQL 1,000 at a
/// time in one `INSERT ... SELECT FROM unnest(...) WITH ORDINALITY`, as the engine does.
fn append_rows(raw: &mut RawConn, table: &str, rows: &[RevokeRow]) {
    match raw {
        RawConn::Sqlite(conn) => {
            let mut insert = conn
                .prepare(&format!(
                    "INSERT INTO {table} (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                     VALUES (?1, ?2, ?3, 'posture.revoke', ?4, ?5, ?6, ?7)"
                ))
                .expect("prepare");
            for r in rows {
                insert
                    .execute(rusqlite::params![
                        r.seq,
                        r.at,
                        ACTOR,
                        r.session,
                        r.detail,
                        r.prev_hash,
                        r.hash
                    ])
                    .expect("append");
            }
        }
        RawConn::Postgres { client, .. } => {
            let insert = client
                .prepare(&format!(
                    "INSERT INTO {table} (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                     SELECT seq, at::timestamptz, $3, 'posture.revoke', session_id, detail,
                            prev_hash, hash
                       FROM unnest($1::bigint[], $2::text[], $4::text[], $5::text[], $6::text[],
                                   $7::text[])
                            WITH ORDINALITY AS u (seq, at, session_id, detail, prev_hash, hash, n)
                      ORDER BY n"
                ))
                .expect("prepare");
            for batch in rows.chunks(1_000) {
                let seqs: Vec<i64> = batch.iter().map(|r| r.seq).collect();
                let text = |f: fn(&RevokeRow) -> &str| batch.iter().map(f).collect::<Vec<_>>();
                let written = client
                    .execute(
                        &insert,
                        &[
                            &seqs,
                            &text(|r| &r.at),
                            &ACTOR,
                            &text(|r| &r.session),
                            &text(|r| &r.detail),
                            &text(|r| &r.prev_hash),
                            &text(|r| &r.hash),
                        ],
                    )
                    .expect("append");
                assert_eq!(written, batch.len() as u64);
            }
        }
    }
}

/// Runs one cascade of `n` sessions on a PostgreSQL copy of `template` whose tables count, by
/// statement-level triggers added for this run only, every statement that writes them, and
/// prints the counts: the server's own tally of what the cascade sent.
fn count_cascade_statements(template: &Path, n: usize) {
    let place = Place::copy_of(Engine::Postgres, template);
    let ledger = place.open();
    let mut client = place.client();
    client
        .batch_execute(
            "CREATE TABLE bench_statements (
                 tbl text, op text, n bigint NOT NULL, PRIMARY KEY (tbl, op));
             CREATE FUNCTION bench_count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 INSERT INTO bench_statements VALUES (TG_TABLE_NAME, TG_OP, 1)
                 ON CONFLICT (tbl, op) DO UPDATE SET n = bench_statements.n + 1;
                 RETURN NULL;
             END $$;
             CREATE TRIGGER bench_count_postures AFTER INSERT OR UPDATE OR DELETE ON postures
                 FOR EACH STATEMENT EXECUTE FUNCTION bench_count_statement();
             CREATE TRIGGER bench_count_audit AFTER INSERT OR UPDATE OR DELETE ON audit
                 FOR EACH STATEMENT EXECUTE FUNCTION bench_count_statement();
             CREATE TRIGGER bench_count_sessions AFTER INSERT OR UPDATE OR DELETE ON sessions
                 FOR EACH STATEMENT EXECUTE FUNCTION bench_count_statement();
             CREATE TRIGGER bench_count_labels AFTER INSERT OR UPDATE OR DELETE ON labels
                 FOR EACH STATEMENT EXECUTE FUNCTION bench_count_statement();",
        )
        .expect("the statement counters");
    let revoked = ledger
        .revoke("root", Propagation::CascadeUnchecked, ACTOR)
        .expect("cascade");
    assert_eq!(revoked.count, n);
    let rows = client
        .query(
            "SELECT tbl, op, n FROM bench_statements ORDER BY tbl, op",
            &[],
        )
        .expect("the counts");
    let counts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}_{}={}",
                r.get::<_, String>(1).to_lowercase(),
                r.get::<_, String>(0),
                r.get::<_, i64>(2)
            )
        })
        .collect();
    let audit_rows: i64 = client
        .query_one(
            "SELECT count(*) FROM audit WHERE kind = 'posture.revoke'",
            &[],
        )
        .expect("count")
        .get(0);
    println!(
        "statements postgres {} {} posture_revoke_rows={audit_rows}",
        cascade_name(n),
        counts.join(" ")
    );
}

// ---------------------------------------------------------------------------------------------
// Create throughput with writer processes.

/// The throughput ledger: roots `w0` to `w7`, each granted `trust`, each with
/// `creators_per_writer` creators below it (`w3.c17`), which inherit it.
fn writers_template(path: &Path, creators_per_writer: usize) {
    let builder = support::builder(path);
    for w in 0..MAX_WRITERS {
        let root = format!("w{w}");
        builder.create_root(&root, ACTOR).expect("root");
        builder
            .grant(&root, PostureLevel::Trust, ACTOR)
            .expect("grant");
        for c in 0..creators_per_writer {
            builder
                .create_child(&format!("{root}.c{c}"), &root, ACTOR)
                .expect("creator");
        }
    }
    drop(builder);
    support::checkpoint(path);
}

/// What the writer processes of one run do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// `Ledger::create_child` with the default `Config`.
    Creates,
    /// The floor: a durable one-row `INSERT` in a transaction that first takes the engine's
    /// write lock (`BEGIN IMMEDIATE` on SQLite, the ledger's advisory lock on PostgreSQL), on
    /// a plain connection to a table of its own.
    RawInserts,
}

impl Writes {
    fn name(self) -> &'static str {
        match self {
            Writes::Creates => "create",
            Writes::RawInserts => "raw_insert",
        }
    }
}

/// `writer_rounds` rounds, each with each count of writers on each engine, creating (on a
/// fresh copy of the template each time) and inserting raw (on a fresh place), the order of
/// the runs reversed every other round.
fn throughput(plan: &Plan, dir: &Path, report: &mut Report) {
    let template = dir.join("writers.db");
    writers_template(&template, plan.creators_per_writer);
    let mut runs: Vec<(Writes, usize, usize)> = Vec::new();
    for &w in &plan.writer_counts {
        for writes in [Writes::Creates, Writes::RawInserts] {
            runs.extend([(writes, w, 0), (writes, w, 1)]);
        }
    }
    // Per (what, how many writers): each engine's rates, one per round.
    type Rates = [Vec<f64>; 2];
    let mut per_s: Vec<((Writes, usize), Rates)> = Vec::new();
    for round in 0..plan.writer_rounds {
        for &(writes, w, side) in &runs {
            let place = match writes {
                Writes::Creates => Place::copy_of(SIDES[side], &template),
                Writes::RawInserts => {
                    let place = Place::new(SIDES[side]);
                    RawConn::open(&place).batch("CREATE TABLE bench_floor (id text PRIMARY KEY)");
                    place
                }
            };
            let done = run_writers(&place, writes, w, plan.writer_seconds);
            let rate = done as f64 / plan.writer_seconds;
            println!(
                "round {round} {} {} writers={w} done={done} per_s={rate:.0}",
                SIDE_NAMES[side],
                writes.name()
            );
            match per_s.iter_mut().find(|(key, _)| *key == (writes, w)) {
                Some((_, rates)) => rates[side].push(rate),
                None => {
                    let mut rates = [Vec::new(), Vec::new()];
                    rates[side].push(rate);
                    per_s.push(((writes, w), rates));
                }
            }
        }
        runs.reverse();
    }
    for ((writes, w), rates) in &per_s {
        report.throughput(*writes, *w, plan.writer_seconds, rates);
    }
}

/// Starts `writers` processes doing `writes` on `place`'s ledger, all timed from one start, and
/// returns how many they finished within `seconds`.
fn run_writers(place: &Place, writes: Writes, writers: usize, seconds: f64) -> u64 {
    let exe = std::env::current_exe().expect("this bench's binary");
    // Far enough ahead for every process to start and open the ledger first.
    let start = SystemTime::now() + Duration::from_millis(1_500);
    let start_ms = start
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    let children: Vec<_> = (0..writers)
        .map(|w| {
            Command::new(&exe)
                .env("SESSION_LEDGER_DB", place.location())
                .args([
                    "--writer".to_owned(),
                    writes.name().to_owned(),
                    w.to_string(),
                    start_ms.to_string(),
                    seconds.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a writer")
        })
        .collect();
    let mut total = 0;
    for child in children {
        let out = child.wait_with_output().expect("a writer's report");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a writer failed: {stdout}");
        let field = |name: &str| -> u64 {
            stdout
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
                .unwrap_or_else(|| panic!("a writer printed no {name}: {stdout}"))
        };
        assert_eq!(
            field("exhausted"),
            0,
            "a writer ran out of creators: raise creators_per_writer ({stdout})"
        );
        if field("late_ms") > 0 {
            println!("warning: a writer opened its ledger after the start: {stdout}");
        }
        total += field("done");
    }
    total
}

/// The key of the ledger's advisory lock on PostgreSQL, which every write transaction of the
/// engine takes first (`src/storage/postgres/mod.rs`), restated for the raw writers.
const POSTGRES_WRITE_LOCK: &str = "SELECT pg_advisory_xact_lock(7814902317660418407)";

/// A writer process: `--writer create|raw_insert W START_MS SECONDS`, the ledger in
/// `SESSION_LEDGER_DB`. Opens it, waits for the start, then writes as fast as it can until
/// `SECONDS` have passed, and prints how many writes finished in time. `create` opens the
/// ledger with the default `Config` and creates `wW.cK.nJ` under `wW.cK`, 50 per creator;
/// `raw_insert` inserts `wW.J` into `bench_floor` as [`Writes::RawInserts`] says.
fn writer(args: &[String]) {
    const USAGE: &str =
        "usage: SESSION_LEDGER_DB=LEDGER engines --writer create|raw_insert W START_MS SECONDS";
    let [writes, w, start_ms, seconds] = args else {
        panic!("{USAGE}")
    };
    let start = UNIX_EPOCH + Duration::from_millis(start_ms.parse().expect(USAGE));
    let seconds: f64 = seconds.parse().expect(USAGE);
    let location = std::env::var("SESSION_LEDGER_DB").expect(USAGE);
    let mut write: Box<dyn FnMut(usize) -> bool> = match writes.as_str() {
        "create" => {
            let ledger = Ledger::init(&location).expect("open");
            ledger.current_epoch().expect("open a pooled connection");
            let per_creator = session_ledger::Config::default()
                .create_if_missing(true)
                .max_live_children;
            let per_creator = per_creator as usize;
            Box::new(move |made| {
                let (creator, child) = (made / per_creator, made % per_creator);
                let creator = format!("w{w}.c{creator}");
                match ledger.create_child(&format!("{creator}.n{child}"), &creator, ACTOR) {
                    Ok(created) => {
                        assert!(created.inherited_trust);
                        true
                    }
                    // Past the last creator the template made.
                    Err(session_ledger::Error::Conflict(_)) if child == 0 => false,
                    Err(e) => panic!("create under {creator}: {e}"),
                }
            })
        }
        "raw_insert" => {
            let mut raw = RawConn::connect(&location);
            Box::new(move |made| {
                let id = format!("w{w}.{made}");
                match &mut raw {
                    RawConn::Sqlite(_) => durably(&mut raw, |r| {
                        r.rows("INSERT INTO bench_floor (id) VALUES ($1)", &[&id])
                    }),
                    RawConn::Postgres { .. } => durably(&mut raw, |r| {
                        r.rows(POSTGRES_WRITE_LOCK, &[]);
                        r.rows("INSERT INTO bench_floor (id) VALUES ($1)", &[&id])
                    }),
                };
                true
            })
        }
        _ => panic!("{USAGE}"),
    };
    let late_ms = match start.duration_since(SystemTime::now()) {
        Ok(wait) => {
            std::thread::sleep(wait);
            0
        }
        Err(late) => late.duration().as_millis(),
    };
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut done, mut made, mut exhausted) = (0_u64, 0_usize, true);
    while Instant::now() < deadline {
        if !write(made) {
            break;
        }
        if Instant::now() <= deadline {
            done += 1;
        }
        made += 1;
    }
    if Instant::now() >= deadline {
        exhausted = false;
    }
    println!(
        "writer={w} done={done} late_ms={late_ms} exhausted={}",
        u8::from(exhausted)
    );
}

// ---------------------------------------------------------------------------------------------
// Printing.

/// What the summary needs.
#[derive(Default)]
struct Report {
    /// (name, unit, sqlite p50, postgres p50, ratio).
    ops: Vec<(&'static str, &'static str, f64, f64)>,
    floors: Vec<(&'static str, &'static str, f64, f64)>,
    /// (what, writers, sqlite per s, postgres per s).
    throughput: Vec<(Writes, usize, f64, f64)>,
}

impl Report {
    fn print(kind: &str, m: &Measured) {
        println!("{kind} {}", m.fields(SIDE_NAMES));
    }

    fn op(&mut self, m: Measured) {
        Report::print("op", &m);
        self.ops
            .push((m.name, m.unit(), m.p(0, 50.0), m.p(1, 50.0)));
    }

    fn floor(&mut self, m: Measured) {
        Report::print("floor", &m);
        self.floors
            .push((m.name, m.unit(), m.p(0, 50.0), m.p(1, 50.0)));
    }

    fn throughput(&mut self, writes: Writes, writers: usize, seconds: f64, per_s: &[Vec<f64>; 2]) {
        let median = per_s.each_ref().map(|v| percentile(v, 50.0));
        println!(
            "throughput {} writers={writers} rounds={} seconds={seconds} \
             sqlite_per_s={:.0} postgres_per_s={:.0} ratio={:.2}",
            writes.name(),
            per_s[0].len(),
            median[0],
            median[1],
            median[1] / median[0]
        );
        self.throughput
            .push((writes, writers, median[0], median[1]));
    }

    fn summary(&self) {
        let verdict = |met: bool| if met { "met" } else { "not met" };
        let p50 = |name: &str| self.ops.iter().find(|o| o.0 == name);
        if let Some(&(_, _, sqlite, postgres)) = p50("cascade_100000") {
            println!(
                "target cascade_100000 ratio={:.2} <= 2 {}",
                postgres / sqlite,
                verdict(postgres / sqlite <= 2.0)
            );
        }
        if let Some(&(_, _, _, postgres)) = p50("decide") {
            println!(
                "target decide_postgres p50_us={postgres:.1} <= 200 {}",
                verdict(postgres <= 200.0)
            );
        }
        println!();
        println!("| operation | SQLite (median) | PostgreSQL (median) | PostgreSQL / SQLite |");
        println!("|---|---|---|---|");
        for (name, unit, sqlite, postgres) in self.ops.iter().chain(&self.floors) {
            let unit = if *unit == "us" { "µs" } else { "ms" };
            println!(
                "| {name} | {sqlite:.2} {unit} | {postgres:.2} {unit} | {:.2} |",
                postgres / sqlite
            );
        }
        for (writes, writers, sqlite, postgres) in &self.throughput {
            let what = match writes {
                Writes::Creates => "create",
                Writes::RawInserts => "floor: raw durable insert under the write lock",
            };
            println!(
                "| {what}, {writers} writer process{} | {sqlite:.0} /s | {postgres:.0} /s | {:.2} |",
                if *writers == 1 { "" } else { "es" },
                postgres / sqlite
            );
        }
        println!();
    }
}
