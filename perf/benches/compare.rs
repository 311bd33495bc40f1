//! The comparison harness: each ledger operation against its baselines, measured in one
//! process, each pair interleaved round by round, and reported as
//!
//! ```text
//! ratio NAME VALUE        (VALUE = baseline median / ledger median: above 1, the ledger is faster)
//! ```
//!
//! followed by a markdown table of the medians. Baselines:
//!
//! * `raw`: the raw SQLite operation underneath, on a table of the same shape, through a plain
//!   rusqlite connection with the same pragmas and the same kept WAL file (the limit);
//! * `json`: the design the ledger replaces, one JSON file per session, read and parsed, or
//!   rewritten atomically (temp file, fsync, rename);
//! * `naive`: a cascade revoke done breadth-first in application code, one SELECT and one
//!   DELETE and one audit row (hash-chained, like the ledger's) per node, in one transaction.
//!
//! After the table come the ceilings, one line per comparison that has a target:
//!
//! ```text
//! ceiling NAME VALUE      (VALUE = baseline median / floor median)
//! ```
//!
//! A floor is work that the ledger cannot skip, measured alone against the same baseline in the
//! same run: the ledger's own statement with no library around it (reads), the cheapest durable
//! commit on this disk (raise), or the rows that the rules and the earlier issues' tests
//! require, written with nothing else (first read, cascades). No ledger that does at least
//! that work can print a ratio above its ceiling. Each floor's limits are documented in
//! [`Ceiling`] and docs/performance.md.
//!
//! Last come the alternatives, for the targets whose ceiling is below the bar:
//!
//! ```text
//! alternative NAME DESIGN VALUE    (VALUE = baseline median / that design's floor median)
//! ```
//!
//! the ceiling the comparison would have under another design: a one-row layout of each
//! session's state for the reads (`hot_state_row`), one audit row per first read or per
//! cascade instead of one per session (`one_audit_row`), and a cascade recorded once that
//! leaves the posture rows in place (`recorded_once`). Each changes something the present
//! schema, the rules or the earlier issues' tests pin; the table after these lines says what.
//!
//! `COMPARE_QUICK=1 cargo bench -p session-ledger-perf --bench compare` runs reduced sizes
//! (under a minute here); `cargo bench -p session-ledger-perf --bench compare` runs the full
//! sizes (100,000-session cascades: about a minute).

#[macro_use]
mod support;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use session_ledger::{
    chain_hash, format_ts, Config, Ledger, PostureLevel, Propagation, Raise, Synchronous, Taint,
};
use support::CASCADE_DELETE;

/// Sizes for one run.
struct Sizes {
    quick: bool,
    sessions: usize,
    rounds: usize,
    batch: usize,
    durable_rounds: usize,
    durable_batch: usize,
    inherit_chains: usize,
    cascades: Vec<(&'static str, usize, usize)>,
}

impl Sizes {
    fn from_env() -> Sizes {
        let quick = std::env::var_os("COMPARE_QUICK").is_some_and(|v| v != "0");
        if quick {
            Sizes {
                quick,
                sessions: 2_000,
                rounds: 11,
                batch: 200,
                durable_rounds: 5,
                durable_batch: 10,
                inherit_chains: 10,
                cascades: vec![
                    ("cascade10k_vs_naive", 2_000, 3),
                    ("cascade100k_vs_naive", 10_000, 3),
                ],
            }
        } else {
            Sizes {
                quick,
                sessions: 10_000,
                rounds: 31,
                batch: 1_000,
                durable_rounds: 15,
                durable_batch: 20,
                inherit_chains: 40,
                cascades: vec![
                    ("cascade10k_vs_naive", 10_000, 7),
                    ("cascade100k_vs_naive", 100_000, 5),
                ],
            }
        }
    }
}

/// Per-operation times of both sides, in nanoseconds, one value per round.
struct Pair {
    name: &'static str,
    ledger: Vec<f64>,
    baseline: Vec<f64>,
    baseline_name: &'static str,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

impl Pair {
    /// Times both sides with [`interleave`] and names the result.
    fn measure(
        name: &'static str,
        baseline_name: &'static str,
        rounds: usize,
        batch: usize,
        ledger: impl FnMut(usize),
        baseline: impl FnMut(usize),
    ) -> Pair {
        let (ledger, baseline) = interleave(rounds, batch, ledger, baseline);
        Pair {
            name,
            ledger,
            baseline,
            baseline_name,
        }
    }
}

/// The best a comparison could print: its baseline timed against a floor, work that the
/// ledger's side cannot skip, interleaved like a [`Pair`] (the floor in the `ledger` slot).
struct Ceiling {
    times: Pair,
    floor_name: &'static str,
}

impl Ceiling {
    fn value(&self) -> f64 {
        median(&self.times.baseline) / median(&self.times.ledger)
    }
}

/// The ceiling a comparison would have under another design: the floor of that design (the
/// least work a ledger built that way would do), timed against the same baseline like a
/// [`Ceiling`]. For the targets whose ceiling is below the bar, these say what reaching it
/// would take, and what it would give up.
struct Alternative {
    ceiling: Ceiling,
    /// The design, one word, printed on its `alternative` line.
    design: &'static str,
    /// What the design changes that the rules, the earlier issues' tests or the present
    /// schema pin, and what its floor leaves out.
    changes: &'static str,
}

/// Everything printed after the ratios.
#[derive(Default)]
struct Bounds {
    ceilings: Vec<Ceiling>,
    alternatives: Vec<Alternative>,
}

/// The target ratio of each comparison that has one.
const TARGETS: [(&str, f64); 8] = [
    ("read_vs_raw", 0.8),
    ("decide_vs_raw", 0.6),
    ("read_vs_json", 1.5),
    ("raise_vs_json", 2.0),
    ("create_vs_raw", 0.7),
    ("inherit64_vs_raise", 0.3),
    ("cascade10k_vs_naive", 3.0),
    ("cascade100k_vs_naive", 5.0),
];

fn target(name: &str) -> f64 {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("every ceiling belongs to a comparison with a target")
}

/// Times `batch` calls of each side per round, alternating which side goes first.
fn interleave(
    rounds: usize,
    batch: usize,
    mut ledger: impl FnMut(usize),
    mut baseline: impl FnMut(usize),
) -> (Vec<f64>, Vec<f64>) {
    let (mut l, mut b) = (Vec::new(), Vec::new());
    let mut next = 0;
    for round in 0..rounds {
        let time = |f: &mut dyn FnMut(usize), start: usize| {
            let t = Instant::now();
            for i in 0..batch {
                f(start + i);
            }
            t.elapsed().as_nanos() as f64 / batch as f64
        };
        if round % 2 == 0 {
            l.push(time(&mut ledger, next));
            b.push(time(&mut baseline, next));
        } else {
            b.push(time(&mut baseline, next));
            l.push(time(&mut ledger, next));
        }
        next += batch;
    }
    (l, b)
}

fn ledger_config() -> Config {
    Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

/// The raw twin of the labels table, filled with the same ids.
fn raw_labels(dir: &Path, ids: &[String]) -> Connection {
    let conn = support::raw_connection(&dir.join("raw.db"));
    conn.execute_batch(
        "CREATE TABLE labels (session_id TEXT PRIMARY KEY NOT NULL, taint TEXT NOT NULL,
                              untrusted INTEGER NOT NULL) STRICT, WITHOUT ROWID;
         CREATE TABLE sessions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                                created_by TEXT, depth INTEGER NOT NULL,
                                created_at TEXT NOT NULL) STRICT;",
    )
    .expect("raw schema");
    let tx = conn.unchecked_transaction().expect("tx");
    for id in ids {
        tx.execute("INSERT INTO labels VALUES (?1, 'private', 0)", [id])
            .expect("raw insert");
    }
    tx.commit().expect("commit");
    conn
}

/// Writes every dirty page of every file back to disk (`sync`), so that the durable operations
/// measured next do not also pay for writing back the files their setup just made. Without it
/// the JSON store's atomic rewrite measured 860 to 950 µs in quick runs, with it 340 to 450 µs:
/// its fsyncs were flushing the store's freshly written files.
fn settle() {
    let status = std::process::Command::new("sync")
        .status()
        .expect("run sync");
    assert!(status.success(), "sync failed");
}

/// Runs the prepared `sql` for one id and reads its row's first two columns.
fn raw_row(conn: &Connection, sql: &str, id: &str) {
    let mut stmt = conn.prepare_cached(sql).expect("prepare");
    let row: (rusqlite::types::Value, rusqlite::types::Value) = stmt
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("raw row");
    std::hint::black_box(row);
}

fn raw_read(conn: &Connection, id: &str) -> (String, bool) {
    let mut stmt = conn
        .prepare_cached("SELECT taint, untrusted FROM labels WHERE session_id = ?1")
        .expect("prepare");
    stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("raw read")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JsonLabel {
    session: String,
    taint: String,
    untrusted: bool,
    created_by: Option<String>,
}

/// The JSON-file store: one file per session.
struct JsonStore {
    dir: PathBuf,
}

impl JsonStore {
    fn create(dir: PathBuf, ids: &[String]) -> JsonStore {
        fs::create_dir_all(&dir).expect("json dir");
        let store = JsonStore { dir };
        for id in ids {
            let label = JsonLabel {
                session: id.clone(),
                taint: "private".into(),
                untrusted: false,
                created_by: None,
            };
            fs::write(store.path(id), serde_json::to_vec(&label).expect("json")).expect("write");
        }
        store
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn read(&self, id: &str) -> JsonLabel {
        serde_json::from_slice(&fs::read(self.path(id)).expect("read")).expect("parse")
    }

    /// A durable raise: read, parse, change, write a temp file, fsync it, rename over.
    fn raise(&self, id: &str) {
        let mut label = self.read(id);
        label.taint = "secret".into();
        let tmp = self.dir.join(format!(".{id}.tmp"));
        let mut f = fs::File::create(&tmp).expect("tmp");
        f.write_all(&serde_json::to_vec(&label).expect("json"))
            .expect("write");
        f.sync_all().expect("fsync");
        drop(f);
        fs::rename(&tmp, self.path(id)).expect("rename");
    }
}

fn reads(sizes: &Sizes, dir: &Path, bounds: &mut Bounds) -> Vec<Pair> {
    let ledger = Ledger::open_with(
        dir.join("reads.db"),
        ledger_config().synchronous(Synchronous::Normal),
    )
    .expect("ledger");
    let ids: Vec<String> = (0..sizes.sessions).map(|i| format!("s{i:06}")).collect();
    ledger.create_root("conductor", "bench").expect("root");
    ledger
        .grant("conductor", PostureLevel::Trust, "bench")
        .expect("grant");
    for id in &ids {
        ledger
            .create_child(id, "conductor", "bench")
            .expect("create");
        ledger.state(id).expect("materialize");
    }
    let raw = raw_labels(dir, &ids);
    let json = JsonStore::create(dir.join("json"), &ids);
    let n = ids.len();
    let pick = |i: usize| &ids[(i * 7919) % n];

    let read_vs_raw = Pair::measure(
        "read_vs_raw",
        "raw point SELECT",
        sizes.rounds,
        sizes.batch,
        |i| {
            ledger.state(pick(i)).expect("state");
        },
        |i| {
            raw_read(&raw, pick(i));
        },
    );
    let decide_vs_raw = Pair::measure(
        "decide_vs_raw",
        "raw point SELECT",
        sizes.rounds,
        sizes.batch,
        |i| {
            let d = ledger
                .decide(pick(i), "make deploy", false)
                .expect("decide");
            assert_eq!(d.verdict, session_ledger::Verdict::Approve);
        },
        |i| {
            raw_read(&raw, pick(i));
        },
    );
    let read_vs_json = Pair::measure(
        "read_vs_json",
        "JSON file read+parse",
        sizes.rounds,
        sizes.batch,
        |i| {
            ledger.state(pick(i)).expect("state");
        },
        |i| {
            json.read(pick(i));
        },
    );
    // Not one of the issue's comparisons: the same read as one raw prepared statement on the
    // ledger's own tables (the join the ledger runs), to separate the library's overhead from
    // the cost of the layout.
    let same = support::raw_connection(&dir.join("reads.db"));
    let join =
        "SELECT l.taint, l.untrusted, l.materialized_how, l.inherited_from, l.materialized_at,
                       l.raised_at, s.ended_at IS NOT NULL, p.posture, p.source, p.granted_by,
                       p.granted_at, p.granted_on, p.inherited_from, p.allocated_at, p.chain,
                       p.epoch, p.epoch = (SELECT max(epoch) FROM epochs)
                  FROM labels AS l JOIN sessions AS s ON s.id = l.session_id
                  LEFT JOIN postures AS p ON p.session_id = l.session_id
                 WHERE l.session_id = ?1";
    let raw_join = |i: usize| raw_row(&same, join, pick(i));
    let read_vs_join = Pair::measure(
        "read_vs_raw_same_query",
        "raw prepared join on the ledger's tables",
        sizes.rounds,
        sizes.batch,
        |i| {
            ledger.state(pick(i)).expect("state");
        },
        raw_join,
    );

    // Ceilings of the reads: the ledger's own statements run raw, with no pool, no validation
    // and no decoding, against the same baselines.
    let decide_statement =
        "SELECT s.ended_at IS NOT NULL, p.session_id IS NOT NULL, p.session_id, p.posture,
                p.source, p.granted_by, p.granted_at, p.granted_on, p.inherited_from,
                p.allocated_at, p.chain, p.epoch, p.epoch = (SELECT max(epoch) FROM epochs)
           FROM sessions AS s LEFT JOIN postures AS p ON p.session_id = s.id
          WHERE s.id = ?1";
    let raw_decide = |i: usize| raw_row(&same, decide_statement, pick(i));
    let join_floor = "the ledger's read statement, raw";
    bounds.ceilings.push(Ceiling {
        times: Pair::measure(
            "read_vs_raw",
            "raw point SELECT",
            sizes.rounds,
            sizes.batch,
            raw_join,
            |i| {
                raw_read(&raw, pick(i));
            },
        ),
        floor_name: join_floor,
    });
    bounds.ceilings.push(Ceiling {
        times: Pair::measure(
            "decide_vs_raw",
            "raw point SELECT",
            sizes.rounds,
            sizes.batch,
            raw_decide,
            |i| {
                raw_read(&raw, pick(i));
            },
        ),
        floor_name: "the ledger's decision statement, raw",
    });
    bounds.ceilings.push(Ceiling {
        times: Pair::measure(
            "read_vs_json",
            "JSON file read+parse",
            sizes.rounds,
            sizes.batch,
            raw_join,
            |i| {
                json.read(pick(i));
            },
        ),
        floor_name: join_floor,
    });

    // The alternative: each session's whole state (what `Ledger::state` returns, and what a
    // decision reads) in one row of one table, found by its key, as a layout built for the read
    // path would keep it. Built here from the ledger's own tables, in the ledger's file, after
    // the measurements above.
    same.execute_batch(
        "CREATE TABLE hot_state (
             session_id TEXT PRIMARY KEY NOT NULL, taint TEXT NOT NULL, untrusted INTEGER NOT NULL,
             materialized_how TEXT NOT NULL, label_from TEXT, materialized_at TEXT NOT NULL,
             raised_at TEXT, ended INTEGER NOT NULL, posture TEXT, source TEXT, granted_by TEXT,
             granted_at TEXT, granted_on TEXT, posture_from TEXT, allocated_at TEXT, chain TEXT,
             epoch INTEGER
         ) STRICT, WITHOUT ROWID;
         INSERT INTO hot_state
         SELECT l.session_id, l.taint, l.untrusted, l.materialized_how, l.inherited_from,
                l.materialized_at, l.raised_at, s.ended_at IS NOT NULL, p.posture, p.source,
                p.granted_by, p.granted_at, p.granted_on, p.inherited_from, p.allocated_at,
                p.chain, p.epoch
           FROM labels AS l JOIN sessions AS s ON s.id = l.session_id
           LEFT JOIN postures AS p ON p.session_id = l.session_id;",
    )
    .expect("hot state");
    let hot =
        "SELECT *, epoch = (SELECT max(epoch) FROM epochs) FROM hot_state WHERE session_id = ?1";
    let raw_hot = |i: usize| raw_row(&same, hot, pick(i));
    let changes = "the schema: a table holding each session's whole state, which every write \
                   would also update (those writes are not in this floor)";
    let hot_vs_raw = |name| Alternative {
        ceiling: Ceiling {
            times: Pair::measure(
                name,
                "raw point SELECT",
                sizes.rounds,
                sizes.batch,
                raw_hot,
                |i| {
                    raw_read(&raw, pick(i));
                },
            ),
            floor_name: "its one-row read, raw",
        },
        design: "hot_state_row",
        changes,
    };
    bounds.alternatives.push(hot_vs_raw("read_vs_raw"));
    bounds.alternatives.push(hot_vs_raw("decide_vs_raw"));
    bounds.alternatives.push(Alternative {
        ceiling: Ceiling {
            times: Pair::measure(
                "read_vs_json",
                "JSON file read+parse",
                sizes.rounds,
                sizes.batch,
                raw_hot,
                |i| {
                    json.read(pick(i));
                },
            ),
            floor_name: "its one-row read, raw",
        },
        design: "hot_state_row",
        changes,
    });
    vec![read_vs_raw, decide_vs_raw, read_vs_json, read_vs_join]
}

fn writes(sizes: &Sizes, dir: &Path, bounds: &mut Bounds) -> Vec<Pair> {
    let ops = sizes.durable_rounds * sizes.durable_batch;
    // Inputs are built with synchronous=NORMAL; the measured operations run on a ledger opened
    // with the default, FULL.
    let path = dir.join("writes.db");
    {
        let setup = Ledger::open_with(&path, ledger_config().synchronous(Synchronous::Normal))
            .expect("setup");
        for i in 0..ops {
            setup
                .create_root(&format!("r{i:06}"), "bench")
                .expect("root");
        }
        support::trusted_creators(&setup);
        // Materialized sessions (roots) for the raises the depth-64 reads are set against
        // (`q`), and for those their floor (`u`) and its alternative (`v`) are set against.
        for i in 0..sizes.inherit_chains {
            for prefix in ["q", "u", "v"] {
                setup
                    .create_root(&format!("{prefix}{i:06}"), "bench")
                    .expect("root");
            }
        }
        // Chains of 64 unmaterialized sessions below one root: `d` for the ledger's first
        // reads, `f` for their floor, `g` for the floor's alternative.
        setup.create_root("deep", "bench").expect("deep root");
        for chain in 0..sizes.inherit_chains {
            for prefix in ["d", "f", "g"] {
                let mut parent = "deep".to_owned();
                for depth in 1..=64 {
                    let id = format!("{prefix}{chain}-{depth}");
                    setup.create_child(&id, &parent, "bench").expect("chain");
                    parent = id;
                }
            }
        }
    }
    let ledger = Ledger::open_with(&path, ledger_config()).expect("ledger");
    let raise_ids: Vec<String> = (0..ops).map(|i| format!("r{i:06}")).collect();
    let json = JsonStore::create(dir.join("json-writes"), &raise_ids);
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    settle();

    let raise_vs_json = Pair::measure(
        "raise_vs_json",
        "JSON atomic rewrite",
        sizes.durable_rounds,
        sizes.durable_batch,
        |i| {
            let r = ledger.raise(&raise_ids[i], secret, "bench").expect("raise");
            assert!(r.changed);
        },
        |i| json.raise(&raise_ids[i]),
    );

    // The raw side gets the same history as the ledger's file: rows written by an earlier
    // connection that closed (keeping its WAL, as the ledger's connections do), so both sides
    // commit into a WAL file that already exists.
    let raw_path = dir.join("raw-writes.db");
    {
        let setup = support::raw_connection(&raw_path);
        setup
            .execute_batch(
                "CREATE TABLE sessions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                                        created_by TEXT, depth INTEGER NOT NULL,
                                        created_at TEXT NOT NULL) STRICT;",
            )
            .expect("raw schema");
        for i in 0..ops {
            setup
                .execute(
                    "INSERT INTO sessions (id, created_by, depth, created_at)
                     VALUES (?1, NULL, 0, ?2)",
                    (format!("r{i:06}"), format_ts(chrono::Utc::now())),
                )
                .expect("raw setup");
        }
    }
    let raw = support::raw_connection(&raw_path);
    let create_vs_raw = Pair::measure(
        "create_vs_raw",
        "raw INSERT transaction",
        sizes.durable_rounds,
        sizes.durable_batch,
        |i| {
            let created = ledger
                .create_child(
                    &format!("c{i:06}"),
                    &format!("creator{:03}", i % 100),
                    "bench",
                )
                .expect("create");
            assert!(created.inherited_trust);
        },
        |i| {
            raw.execute_batch("BEGIN IMMEDIATE").expect("begin");
            raw.prepare_cached(
                "INSERT INTO sessions (id, created_by, depth, created_at) VALUES (?1, ?2, 1, ?3)",
            )
            .expect("prepare")
            .execute((
                format!("c{i:06}"),
                format!("creator{:03}", i % 100),
                format_ts(chrono::Utc::now()),
            ))
            .expect("insert");
            raw.execute_batch("COMMIT").expect("commit");
        },
    );

    // The floor of a durable raise: a durable commit that changes one row and nothing else, on
    // the ledger's own file (its WAL file is the one the raise commits into). The row is the
    // label of `deep`, whose `raised_at` may change without an audit row only because this file
    // is thrown away.
    let floor_conn = support::raw_connection(&path);
    bounds.ceilings.push(Ceiling {
        times: Pair::measure(
            "raise_vs_json",
            "JSON atomic rewrite",
            sizes.durable_rounds,
            sizes.durable_batch,
            |i| {
                // A different time on every call: SQLite leaves a page clean, and the commit
                // empty, when a row is rewritten with the bytes it had.
                let at = chrono::DateTime::UNIX_EPOCH + chrono::TimeDelta::milliseconds(i as i64);
                floor_conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
                floor_conn
                    .prepare_cached("UPDATE labels SET raised_at = ?1 WHERE session_id = 'deep'")
                    .expect("prepare")
                    .execute([format_ts(at)])
                    .expect("one-row change");
                floor_conn.execute_batch("COMMIT").expect("commit");
            },
            |i| json.raise(&raise_ids[i]),
        ),
        floor_name: "a durable one-row commit",
    });

    // First read at depth 64 against one durable raise, alternating.
    let chains = sizes.inherit_chains;
    let inherit_rounds = chains.min(sizes.durable_rounds.max(5));
    let inherit = Pair::measure(
        "inherit64_vs_raise",
        "one durable raise",
        inherit_rounds,
        chains / inherit_rounds,
        |i| {
            let s = ledger.state(&format!("d{i}-64")).expect("first read");
            assert!(s.known);
        },
        |i| {
            let r = ledger
                .raise(&format!("q{i:06}"), secret, "bench")
                .expect("raise");
            assert!(r.changed);
        },
    );
    // Its floor: the 64 labels and 64 `label.inherit` rows a first read at depth 64 must
    // write (rule L2, and the earlier issues' tests), in one durable transaction on the ledger's
    // file. No walk, no reads, nothing returned.
    let inherit_floor = |prefix: &'static str, audit: InheritAudit| {
        Pair::measure(
            "inherit64_vs_raise",
            "one durable raise",
            inherit_rounds,
            chains / inherit_rounds,
            |i| inherited_rows(&floor_conn, &format!("{prefix}{i}"), audit),
            |i| {
                let raised = if audit == InheritAudit::PerSession {
                    "u"
                } else {
                    "v"
                };
                let r = ledger
                    .raise(&format!("{raised}{i:06}"), secret, "bench")
                    .expect("raise");
                assert!(r.changed);
            },
        )
    };
    bounds.ceilings.push(Ceiling {
        times: inherit_floor("f", InheritAudit::PerSession),
        floor_name: "its 64 labels and 64 audit rows alone",
    });
    bounds.alternatives.push(Alternative {
        ceiling: Ceiling {
            times: inherit_floor("g", InheritAudit::Once),
            floor_name: "its 64 labels and one audit row alone",
        },
        design: "one_audit_row",
        changes: "one `label.inherit` row per first read, listing the sessions, instead of one \
                  per session (tests/labels.rs and tests/model.rs count one per session, \
                  tests/crash.rs replays one session per row)",
    });
    vec![raise_vs_json, create_vs_raw, inherit]
}

/// How the floor of a first read at depth 64 audits the labels it writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InheritAudit {
    /// One chained `label.inherit` row per session, as rule L2's tests require.
    PerSession,
    /// One row for the whole path, listing the sessions (the alternative).
    Once,
}

/// The labels of the chain `<chain>-1` to `<chain>-64` below `deep`, written top down in one
/// statement, with their `label.inherit` audit, in one durable transaction: what a first read
/// at depth 64 cannot skip, and nothing else.
fn inherited_rows(conn: &Connection, chain: &str, audit: InheritAudit) {
    let ids: Vec<String> = (1..=64).map(|d| format!("{chain}-{d}")).collect();
    let path_json = serde_json::to_string(&ids).expect("ids");
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    let mut trail = Trail::head(conn);
    let written = conn
        .prepare_cached(
            "INSERT INTO labels (session_id, taint, untrusted, materialized_at,
                                 materialized_how, inherited_from)
             SELECT value, 'private', 0, ?2, 'inherited', 'deep'
               FROM json_each(?1) ORDER BY key",
        )
        .expect("prepare")
        .execute((&path_json, &trail.at))
        .expect("labels");
    assert_eq!(written, 64);
    match audit {
        InheritAudit::PerSession => {
            let detail =
                serde_json::json!({ "from": "deep", "taint": "private", "untrusted": false })
                    .to_string();
            for id in &ids {
                trail.append(conn, "label.inherit", id, &detail);
            }
        }
        InheritAudit::Once => {
            let detail = serde_json::json!({
                "from": "deep", "taint": "private", "untrusted": false, "sessions": ids,
            })
            .to_string();
            trail.append(conn, "label.inherit", &ids[63], &detail);
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
}

/// The audit trail of a ledger file, extended from outside the library as the library extends
/// it: the next `seq`, the previous row's hash as `prev_hash`, the SHA3-256 link from
/// [`chain_hash`], one prepared single-row INSERT per row, all in the caller's transaction.
struct Trail {
    seq: i64,
    prev: String,
    at: String,
}

impl Trail {
    /// Reads the head; call inside the transaction that appends.
    fn head(conn: &Connection) -> Trail {
        let (seq, prev) = conn
            .query_row(
                "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("head");
        Trail {
            seq,
            prev,
            at: format_ts(chrono::Utc::now()),
        }
    }

    fn append(&mut self, conn: &Connection, kind: &str, session: &str, detail: &str) {
        self.seq += 1;
        let hash = chain_hash(
            &self.prev,
            self.seq,
            &self.at,
            "bench",
            kind,
            Some(session),
            detail,
        );
        conn.prepare_cached(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES (?1, ?2, 'bench', ?3, ?4, ?5, ?6, ?7)",
        )
        .expect("prepare")
        .execute((self.seq, &self.at, kind, session, detail, &self.prev, &hash))
        .expect("audit");
        self.prev = hash;
    }
}

/// The detail of a `posture.revoke` row of a cascade from `root`, as the ledger writes it.
fn revoke_detail(root: &str, posture: &str, source: &str, granted_on: &str) -> String {
    serde_json::json!({
        "propagation": "cascade", "root": root, "posture": posture,
        "source": source, "granted_on": granted_on, "current": true,
    })
    .to_string()
}

/// The naive revocation: breadth-first, one SELECT and one DELETE and one audit row per node.
fn naive_cascade(conn: &Connection, root: &str) -> usize {
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    let mut trail = Trail::head(conn);
    let mut queue = std::collections::VecDeque::from([root.to_owned()]);
    let mut revoked = 0;
    while let Some(node) = queue.pop_front() {
        {
            let mut children = conn
                .prepare_cached("SELECT id FROM sessions WHERE created_by = ?1")
                .expect("prepare");
            let rows = children
                .query_map([&node], |r| r.get::<_, String>(0))
                .expect("children");
            for child in rows {
                queue.push_back(child.expect("child"));
            }
        }
        let removed: Option<(String, String, String)> = conn
            .prepare_cached(
                "DELETE FROM postures WHERE session_id = ?1 RETURNING posture, source, granted_on",
            )
            .expect("prepare")
            .query_row([&node], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .ok();
        if let Some((posture, source, granted_on)) = removed {
            let detail = revoke_detail(root, &posture, &source, &granted_on);
            trail.append(conn, "posture.revoke", &node, &detail);
            revoked += 1;
        }
    }
    conn.execute_batch("COMMIT").expect("commit");
    revoked
}

/// The rows every cascade must write, and nothing else: one chained `posture.revoke` audit row
/// per session whose posture it removes (the earlier issues' tests require each), in one
/// durable transaction. The postures themselves are left in place, the tree is not walked and
/// nothing is returned, so this is less than any cascade does.
fn cascade_audit_rows(conn: &Connection, root: &str) -> usize {
    let held: Vec<(String, String, String, String)> = conn
        .prepare("SELECT session_id, posture, source, granted_on FROM postures")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("postures")
        .collect::<Result<_, _>>()
        .expect("posture");
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    let mut trail = Trail::head(conn);
    for (id, posture, source, granted_on) in &held {
        let detail = revoke_detail(root, posture, source, granted_on);
        trail.append(conn, "posture.revoke", id, &detail);
    }
    conn.execute_batch("COMMIT").expect("commit");
    held.len()
}

/// The walk of [`CASCADE_DELETE`], reading what each posture in the subtree is and leaving it
/// in place: what a cascade that is recorded once and honoured at decision time must still read
/// to report who it affects.
const CASCADE_SELECT: &str = concat!(
    subtree!(),
    "
     SELECT p.session_id, p.posture, p.source, p.granted_on, s.depth,
            p.epoch = (SELECT max(epoch) FROM epochs)
       FROM subtree
       JOIN postures AS p ON p.session_id = subtree.id
       JOIN sessions AS s ON s.id = subtree.id"
);

/// A cascade recorded in one audit row: `statement` ([`CASCADE_DELETE`] or
/// [`CASCADE_SELECT`]) run for `root`, then one chained `posture.revoke` row naming the root
/// and listing every posture the statement returned as `[session, posture, source,
/// granted_on, current]`, what each per-session row records today besides the propagation
/// and the root, in one durable transaction.
fn cascade_one_row(conn: &Connection, statement: &str, root: &str) -> usize {
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    let sessions: Vec<(String, String, String, String, bool)> = conn
        .prepare(statement)
        .expect("prepare")
        .query_map(rusqlite::named_params! { ":root": root }, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(5)?))
        })
        .expect("subtree")
        .collect::<Result<_, _>>()
        .expect("posture");
    let detail =
        serde_json::json!({ "propagation": "cascade", "root": root, "sessions": sessions })
            .to_string();
    Trail::head(conn).append(conn, "posture.revoke", root, &detail);
    conn.execute_batch("COMMIT").expect("commit");
    sessions.len()
}

/// Times `work` on a plain connection to `copy` (opened before the timer starts, as the
/// ledger's handle is) and checks that it revoked `n` postures.
fn timed_on_raw(copy: &Path, n: usize, work: impl FnOnce(&Connection) -> usize) -> Duration {
    let conn = support::raw_connection(copy);
    let t = Instant::now();
    let count = work(&conn);
    let e = t.elapsed();
    assert_eq!(count, n);
    e
}

fn cascades(sizes: &Sizes, dir: &Path, bounds: &mut Bounds) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for &(name, n, rounds) in &sizes.cascades {
        let template = dir.join(format!("template-{n}.db"));
        support::cascade_template(&template, n);
        // Per round: the ledger, the naive walk, the floor and the two alternatives, each on a
        // fresh copy of the template, in an order that rotates from round to round. Opening is
        // not timed.
        let mut times: [Vec<f64>; 5] = Default::default();
        for round in 0..rounds {
            for k in 0..times.len() {
                let side = (round + k) % times.len();
                let copy = dir.join(format!("run-{n}-{round}-{side}.db"));
                fs::copy(&template, &copy).expect("copy");
                let elapsed = match side {
                    0 => {
                        let ledger = Ledger::open_with(&copy, ledger_config()).expect("open");
                        let t = Instant::now();
                        let r = ledger
                            .revoke("root", Propagation::CascadeUnchecked, "bench")
                            .expect("cascade");
                        let e = t.elapsed();
                        assert_eq!(r.count, n);
                        e
                    }
                    1 => timed_on_raw(&copy, n, |c| naive_cascade(c, "root")),
                    2 => timed_on_raw(&copy, n, |c| cascade_audit_rows(c, "root")),
                    3 => timed_on_raw(&copy, n, |c| cascade_one_row(c, CASCADE_DELETE, "root")),
                    _ => timed_on_raw(&copy, n, |c| cascade_one_row(c, CASCADE_SELECT, "root")),
                };
                times[side].push(elapsed.as_nanos() as f64);
                for suffix in ["", "-wal", "-shm"] {
                    let _ = fs::remove_file(format!("{}{suffix}", copy.display()));
                }
            }
        }
        let [ledger, naive, floor, one_row, recorded] = times;
        let against_naive = |times| Pair {
            name,
            ledger: times,
            baseline: naive.clone(),
            baseline_name: "naive breadth-first walk",
        };
        pairs.push(against_naive(ledger));
        bounds.ceilings.push(Ceiling {
            times: against_naive(floor),
            floor_name: "its audit rows alone",
        });
        let alternative = |times, floor_name, design, changes| Alternative {
            ceiling: Ceiling {
                times: against_naive(times),
                floor_name,
            },
            design,
            changes,
        };
        bounds.alternatives.push(alternative(
            one_row,
            "its DELETE and one audit row",
            "one_audit_row",
            "one `posture.revoke` row per cascade, listing the sessions, instead of one per \
             session (tests/authority.rs, tests/cli_authority.rs and tests/model.rs count one \
             per session, tests/crash.rs replays one session per row)",
        ));
        bounds.alternatives.push(alternative(
            recorded,
            "its walk and one audit row",
            "recorded_once",
            "one row per cascade as above, and posture rows left in place, the revocation \
             honoured at decision time (tests/cli_authority.rs reads the rows gone; the check \
             every decision would then make is not in this floor)",
        ));
    }
    pairs
}

fn show(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} µs", ns / 1e3)
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and friends
    }
    let sizes = Sizes::from_env();
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let mut bounds = Bounds::default();
    let mut pairs = reads(&sizes, dir.path(), &mut bounds);
    pairs.extend(writes(&sizes, dir.path(), &mut bounds));
    pairs.extend(cascades(&sizes, dir.path(), &mut bounds));
    for p in &pairs {
        println!(
            "ratio {} {:.2}",
            p.name,
            median(&p.baseline) / median(&p.ledger)
        );
    }
    println!();
    println!("| comparison | ledger (median) | baseline | baseline (median) | ratio | rounds |");
    println!("|---|---|---|---|---|---|");
    for p in &pairs {
        println!(
            "| {} | {} | {} | {} | {:.2} | {} |",
            p.name,
            show(median(&p.ledger)),
            p.baseline_name,
            show(median(&p.baseline)),
            median(&p.baseline) / median(&p.ledger),
            p.ledger.len()
        );
    }
    println!();
    for c in &bounds.ceilings {
        println!("ceiling {} {:.2}", c.times.name, c.value());
    }
    println!();
    println!("| comparison | target | ceiling | floor | floor (median) | baseline (median) |");
    println!("|---|---|---|---|---|---|");
    for c in &bounds.ceilings {
        println!(
            "| {} | {} | {:.2} | {} | {} | {} |",
            c.times.name,
            target(c.times.name),
            c.value(),
            c.floor_name,
            show(median(&c.times.ledger)),
            show(median(&c.times.baseline)),
        );
    }
    println!();
    for a in &bounds.alternatives {
        println!(
            "alternative {} {} {:.2}",
            a.ceiling.times.name,
            a.design,
            a.ceiling.value()
        );
    }
    println!();
    println!(concat!(
        "| comparison | target | design | ceiling | what it changes | floor | floor (median) ",
        "| baseline (median) |"
    ));
    println!("|---|---|---|---|---|---|---|---|");
    for a in &bounds.alternatives {
        println!(
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} |",
            a.ceiling.times.name,
            target(a.ceiling.times.name),
            a.design,
            a.ceiling.value(),
            a.changes,
            a.ceiling.floor_name,
            show(median(&a.ceiling.times.ledger)),
            show(median(&a.ceiling.times.baseline)),
        );
    }
    println!();
    println!(
        "{} run, {:.0} s; synchronous=FULL for durable operations, WAL, default cache and no mmap",
        if sizes.quick { "COMPARE_QUICK" } else { "full" },
        started.elapsed().as_secs_f64()
    );
}
