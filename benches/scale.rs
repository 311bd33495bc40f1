//! The scale bench: what each operation costs as the ledger grows, measured on two
//! ledgers of the same shape in one run, and the ratio large/small of the medians.
//!
//! ```text
//! cargo bench --bench scale                                       # 10,000 against 100,000 sessions
//! SCALE_SESSIONS=1000000 cargo bench --bench scale                # 10,000 against 1,000,000 sessions
//! SCALE_BUILD_ONLY=1 SCALE_SESSIONS=1000000 cargo bench --bench scale   # only build or find the ledgers
//! scripts/with-postgres --durable cargo bench --bench scale       # on SQLite, then on PostgreSQL
//! BENCH_ENGINES=postgres scripts/with-postgres --durable cargo bench --bench scale   # PostgreSQL only
//! ```
//!
//! Both ledgers are [`support::Forest`]s built through the library with the building handle:
//! trees of 1,000 sessions (fan-out 10), every other one trusted at its root before anything
//! below it was created, half of each tree materialized. Each is built once and cached as
//! `target/scale-cache/<sessions>-v<schema>-s<shape>.db`; every run measures on fresh copies,
//! so reruns measure the same thing. On PostgreSQL (when `SESSION_LEDGER_BENCH_POSTGRES` names
//! a server, see `benches/support/engine.rs`) a fresh copy is the cached file's rows copied into
//! a schema of its own with `Ledger::copy_into`, vacuumed and analyzed; each engine's run is
//! whole, one after the other, and its ratios compare its own two ledgers. The operations are
//! called through a handle opened with the default `Config` (`synchronous=FULL`, the default
//! creation bounds), as a dashboard would, with each iteration on the small ledger next to one
//! on the large (which goes first alternates), so that the machine's drift falls on both sides
//! alike.
//!
//! Lines, one per measurement (times in µs for `op` and `floor`, in ms otherwise), each naming
//! its engine (`sqlite` or `postgres`) after its kind:
//!
//! ```text
//! cache SESSIONS built|reused PATH build_s=..
//! ledger ENGINE small|large sessions=.. materialized=.. postures=.. audit=.. size_mib=.. copy_s=..
//! floor ENGINE raw_point_read n=.. small_p50_us=.. small_p99_us=.. large_p50_us=.. large_p99_us=.. ratio=..
//! op ENGINE NAME n=.. [sessions=..] small_p50_us=.. small_p99_us=.. large_p50_us=.. large_p99_us=.. ratio=.. [vs_floor=..]
//! open ENGINE ledger n=.. small_p50_ms=.. small_p99_ms=.. large_p50_ms=.. large_p99_ms=.. ratio=..
//! verify ENGINE full n=.. small_rows=.. small_rows_per_s=.. large_rows=.. large_rows_per_s=.. small_p50_ms=.. ... ratio=..
//! verify ENGINE from n=.. rows=1001 small_p50_ms=.. small_p99_ms=.. large_p50_ms=.. large_p99_ms=.. ratio=..
//! cli ENGINE NAME n=.. [sessions=..] small_p50_ms=.. small_p99_ms=.. large_p50_ms=.. large_p99_ms=.. ratio=..
//! peak ENGINE NAME count=.. ms=.. after_open_mib=.. peak_mib=..
//! target ENGINE NAME VALUE <= BOUND met|not met
//! ```
//!
//! `ratio` is large p50 / small p50; `vs_floor` is an operation's ratio divided by the floor's
//! (the engine's own point read on the same ledgers, in the same run: raw SQLite on the file,
//! or a plain prepared statement over the same connection string). Nothing here asserts a
//! time: the `target` lines at the end compare with the scale targets, which are set for
//! `SCALE_SESSIONS=1000000`. docs/performance.md explains each line.
//!
//! The bench binary re-executes itself with `--peak verify` or `--peak cascade ID` (the ledger
//! in `SESSION_LEDGER_DB`, so no password is on a command line) to run one operation in a fresh
//! process and report its peak resident memory: the client process's, on PostgreSQL.

mod support;

use std::collections::HashSet;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use session_ledger::{AuditHead, AuditQuery, Ledger, PostureLevel, Propagation, Raise, Taint};
use support::{
    interleaved, timed, Engine, Forest, Iterations, Measured, Place, RawConn, ACTOR,
    TREE_MATERIALIZED, TREE_SESSIONS,
};

/// The small ledger's size; the targets compare against it.
const SMALL_SESSIONS: usize = 10_000;
/// The large ledger's size unless `SCALE_SESSIONS` says otherwise.
const DEFAULT_LARGE_SESSIONS: usize = 100_000;

/// Timed iterations (and untimed ones before them) of each kind of measurement.
const POINT: Iterations = Iterations {
    timed: 200,
    warmup: 20,
};
const TREE: Iterations = Iterations {
    timed: 30,
    warmup: 2,
};
const OPEN: Iterations = Iterations {
    timed: 50,
    warmup: 3,
};
const CLI: Iterations = Iterations {
    timed: 30,
    warmup: 2,
};
const VERIFY: Iterations = Iterations {
    timed: 3,
    warmup: 0,
};

/// Tree positions (see [`Forest`]) of the depth-1 sessions whose branch is complete: the
/// session, its 10 children and their 100 children. Position 9's branch has 100 sessions and
/// position 10's has 11.
const FULL_BRANCHES: RangeInclusive<usize> = 1..=8;
const BRANCH_SESSIONS: usize = 111;
/// The leaves below position 9: outside every full branch, so a local revoke of one leaves the
/// branches the tree operations use untouched.
const SPARE_LEAVES: RangeInclusive<usize> = 911..=999;
/// Positions of the materialized sessions of each tree.
const MATERIALIZED: RangeInclusive<usize> = 0..=TREE_MATERIALIZED - 1;
/// Positions of the sessions not materialized: each has a materialized parent.
const UNMATERIALIZED: RangeInclusive<usize> = TREE_MATERIALIZED..=TREE_SESSIONS - 1;
/// Every position.
const ANY: RangeInclusive<usize> = 0..=TREE_SESSIONS - 1;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--peak") {
        peak_child(&args[at + 1..]);
        return;
    }
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs bench binaries without `--bench`: do not build ledgers.
        println!("scale: run it with `cargo bench --bench scale` (see benches/scale.rs)");
        return;
    }
    let large = large_sessions();
    let engines = support::engines();
    println!(
        "scale small={SMALL_SESSIONS} large={large} schema=v{} engines={}",
        session_ledger::schema_version(),
        engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    let caches = [cached_forest(SMALL_SESSIONS), cached_forest(large)];
    if std::env::var_os("SCALE_BUILD_ONLY").is_some() {
        // Only the cached ledgers, for a measurement made elsewhere (the console's,
        // console/bench/scale.py).
        return;
    }
    for engine in engines {
        run(engine, &caches, large);
    }
}

/// The whole run on one engine, on fresh copies of the cached ledgers.
fn run(engine: Engine, caches: &[PathBuf; 2], large: usize) {
    let run_dir = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(cache_dir())
        .expect("a directory for this run's copies");
    let sides = [
        Side::copy(engine, "small", SMALL_SESSIONS, &caches[0], run_dir.path()),
        Side::copy(engine, "large", large, &caches[1], run_dir.path()),
    ];
    for side in &sides {
        side.print_counts();
    }

    let mut report = Report::new(engine);
    let ledgers = sides.each_ref().map(|s| s.place.open());
    report.floor = Some(report.line("floor", raw_point_read(&sides)));
    if engine == Engine::Sqlite {
        // What a bigger page cache or a memory map would do for the floor itself.
        report.line(
            "floor",
            raw_point_read_with(&sides, "raw_point_read_cache_256mib", |c| {
                c.pragma_update(None, "cache_size", -262_144)
                    .expect("cache_size")
            }),
        );
        report.line(
            "floor",
            raw_point_read_with(&sides, "raw_point_read_mmap_4gib", |c| {
                c.pragma_update(None, "mmap_size", 4_i64 << 30)
                    .expect("mmap_size")
            }),
        );
    }
    for measure in [
        state_stored,
        state_first_read,
        decide,
        raise,
        create_child,
        grant,
        revoke_local,
    ] {
        let m = measure(&sides, &ledgers);
        report.point(m);
    }
    for measure in [subtree, tree, preview, cascade] {
        let m = measure(&sides, &ledgers);
        report.tree(m);
    }
    drop(ledgers);

    // From here on, nothing else has the ledgers open: each open below is a process's first.
    for side in &sides {
        side.place.settle();
    }
    let m = open(&sides);
    report.open = Some(report.line("open", m));
    let m = verify_full(&sides);
    report.verify = Some(report.line("verify", m));
    let m = verify_from(&sides);
    report.verify_from = Some(report.line("verify", m));
    for measure in [cli_state, cli_tree, cli_explain, cli_verify_from] {
        let m = measure(&sides);
        report.cli(m);
    }
    drop(sides);
    report.peaks(&caches[1], run_dir.path());
    report.summary(large);
}

/// The large ledger's size: `SCALE_SESSIONS`, or [`DEFAULT_LARGE_SESSIONS`].
fn large_sessions() -> usize {
    let Some(value) = std::env::var_os("SCALE_SESSIONS") else {
        return DEFAULT_LARGE_SESSIONS;
    };
    let value = value.to_string_lossy();
    let sessions: usize = value
        .parse()
        .unwrap_or_else(|_| panic!("SCALE_SESSIONS={value} is not a number of sessions"));
    assert!(
        sessions >= SMALL_SESSIONS && sessions % TREE_SESSIONS == 0,
        "SCALE_SESSIONS must be a multiple of {TREE_SESSIONS} of at least {SMALL_SESSIONS}"
    );
    sessions
}

/// `target/scale-cache` (or under `$CARGO_TARGET_DIR`).
fn cache_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("scale-cache")
}

/// The cached ledger of `sessions` sessions, built now if it is not there yet. A build goes
/// to a `.building` file first and is renamed when it is complete, so an interrupted build is
/// never reused. The build time is kept next to it, in `<file>.build_s`.
fn cached_forest(sessions: usize) -> PathBuf {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).expect("create the cache directory");
    let name = format!(
        "{sessions}-v{}-s{}.db",
        session_ledger::schema_version(),
        Forest::SHAPE_VERSION
    );
    let path = dir.join(&name);
    let build_s = dir.join(format!("{name}.build_s"));
    if path.exists() {
        let took = std::fs::read_to_string(&build_s).unwrap_or_else(|_| "?".to_owned());
        println!(
            "cache {sessions} reused {} build_s={}",
            path.display(),
            took.trim()
        );
        return path;
    }
    let building = dir.join(format!("{name}.building"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", building.display()));
    }
    let forest = Forest::of_sessions(sessions);
    let started = Instant::now();
    let every = (forest.trees / 10).max(1);
    forest.build(&building, |built| {
        if built % every == 0 {
            eprintln!(
                "building {sessions}: {built}/{} trees, {:.0} s",
                forest.trees,
                started.elapsed().as_secs_f64()
            );
        }
    });
    let took = started.elapsed().as_secs_f64();
    support::copy_ledger(&building, &path);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", building.display()));
    }
    std::fs::write(&build_s, format!("{took:.1}\n")).expect("record the build time");
    println!(
        "cache {sessions} built {} build_s={took:.1} ({:.0} sessions/s)",
        path.display(),
        sessions as f64 / took
    );
    path
}

/// One of the two ledgers of a run.
struct Side {
    name: &'static str,
    forest: Forest,
    /// This run's copy, which the measurements use (and change).
    place: Place,
    /// How long making the copy took.
    copy_s: f64,
}

impl Side {
    /// A fresh copy on `engine` of `cache`, the cached ledger of `sessions` sessions: a file in
    /// `dir`, or a new schema.
    fn copy(engine: Engine, name: &'static str, sessions: usize, cache: &Path, dir: &Path) -> Side {
        let place = Place::at_path(engine, &dir.join(format!("{name}.db")));
        let (took, ()) = timed(|| place.fill_from(cache));
        Side {
            name,
            forest: Forest::of_sessions(sessions),
            place,
            copy_s: took.as_secs_f64(),
        }
    }

    /// Counts the rows of the copy, before anything is measured.
    fn print_counts(&self) {
        let count = |table: &str| self.place.count(table);
        println!(
            "ledger {} {} sessions={} materialized={} postures={} audit={} size_mib={:.1} \
             copy_s={:.1}",
            self.place.engine().name(),
            self.name,
            count("sessions"),
            count("labels"),
            count("postures"),
            count("audit"),
            self.place.size_bytes() as f64 / (1024.0 * 1024.0),
            self.copy_s
        );
    }
}

/// Which trees [`Picks`] draws from.
#[derive(Debug, Clone, Copy)]
enum Trees {
    All,
    /// Trees whose root was granted `trust`: every session below holds a posture.
    Trusted,
    /// Trees with no posture anywhere.
    Untrusted,
}

/// Sessions drawn at random (xorshift, a fixed seed) from some trees of a [`Forest`] and a
/// range of tree positions; with `distinct`, never the same one twice. Each pick is computed,
/// not looked up, so picking costs the same at every size.
struct Picks {
    trees: Trees,
    tree_count: usize,
    positions: RangeInclusive<usize>,
    state: u64,
    distinct: Option<HashSet<(usize, usize)>>,
}

impl Picks {
    fn new(
        forest: Forest,
        trees: Trees,
        positions: RangeInclusive<usize>,
        distinct: bool,
    ) -> Picks {
        let tree_count = match trees {
            Trees::All => forest.trees,
            Trees::Trusted => forest.trees.div_ceil(2),
            Trees::Untrusted => forest.trees / 2,
        };
        assert!(tree_count > 0, "no tree to pick from");
        Picks {
            trees,
            tree_count,
            positions,
            state: 0x9e37_79b9_7f4a_7c15,
            distinct: distinct.then(HashSet::new),
        }
    }

    /// Picks for both sides.
    fn both(
        sides: &[Side; 2],
        trees: Trees,
        positions: RangeInclusive<usize>,
        distinct: bool,
    ) -> [Picks; 2] {
        sides
            .each_ref()
            .map(|s| Picks::new(s.forest, trees, positions.clone(), distinct))
    }

    fn random(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn next(&mut self) -> String {
        let span = self.positions.end() - self.positions.start() + 1;
        loop {
            let r = self.random() as usize;
            let k = r % self.tree_count;
            let t = match self.trees {
                Trees::All => k,
                Trees::Trusted => 2 * k,
                Trees::Untrusted => 2 * k + 1,
            };
            let p = self.positions.start() + (r / self.tree_count) % span;
            match &mut self.distinct {
                Some(used) => {
                    assert!(used.len() < self.tree_count * span, "ran out of picks");
                    if used.insert((t, p)) {
                        return Forest::id(t, p);
                    }
                }
                None => return Forest::id(t, p),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Point operations: 200 iterations each, a random session each time (a different one when the
// operation changes it).

/// The floor: the engine's own point reads on the same ledger, with no library around them
/// ([`RawConn`]: raw SQLite on the file with the ledger's per-connection pragmas, or a plain
/// client of the server): a session's row and its label's row, for a random materialized
/// session.
fn raw_point_read(sides: &[Side; 2]) -> Measured {
    raw_point_read_with(sides, "raw_point_read", |_| {})
}

/// The floor's read on connections that `tune` changed, to see what the page cache and memory
/// mapping would do for the growth of a point read on SQLite.
fn raw_point_read_with(
    sides: &[Side; 2],
    name: &'static str,
    tune: impl Fn(&rusqlite::Connection),
) -> Measured {
    let mut conns = sides.each_ref().map(|s| {
        let conn = RawConn::open(&s.place);
        if let RawConn::Sqlite(c) = &conn {
            tune(c);
        }
        conn
    });
    let mut picks = Picks::both(sides, Trees::All, MATERIALIZED, false);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let conn = &mut conns[side];
        let (took, found) = timed(|| {
            let session = conn.rows(
                "SELECT seq, created_by, depth, origin, created_at, ended_at
                   FROM sessions WHERE id = $1",
                &[&id],
            );
            let label = conn.rows(
                "SELECT taint, untrusted, materialized_how, inherited_from, materialized_at,
                        raised_at
                   FROM labels WHERE session_id = $1",
                &[&id],
            );
            (session, label)
        });
        assert_eq!(found, (1, 1), "{id} has a session row and a label row");
        took
    });
    Measured::new(name, times)
}

/// `state` of a materialized session: the stored row.
fn state_stored(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, MATERIALIZED, false);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, state) = timed(|| ledgers[side].state(&id).expect("state"));
        assert!(state.known);
        took
    });
    Measured::new("state_stored", times)
}

/// `state` of a session read for the first time: its label is inherited from its parent (one
/// level up) and written, with an audit row.
fn state_first_read(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, UNMATERIALIZED, true);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, state) = timed(|| ledgers[side].state(&id).expect("first read"));
        assert!(matches!(
            state.materialized,
            Some(session_ledger::Materialized::Inherited { .. })
        ));
        took
    });
    Measured::new("state_first_read", times)
}

/// `decide` of a command that is not read-only, for any session: approved through the
/// inherited posture in trusted trees, asked after the grants were looked at in the others.
fn decide(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, ANY, false);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, decision) = timed(|| {
            ledgers[side]
                .decide(&id, "cargo test", false)
                .expect("decide")
        });
        std::hint::black_box(decision);
        took
    });
    Measured::new("decide", times)
}

/// `raise` of a materialized session to `secret`: a change every time.
fn raise(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, MATERIALIZED, true);
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, raised) = timed(|| ledgers[side].raise(&id, secret, ACTOR).expect("raise"));
        assert!(raised.changed);
        took
    });
    Measured::new("raise", times)
}

/// `create_child` below a random session of an untrusted tree (so no branch a tree operation
/// walks grows), within the default creation bounds.
fn create_child(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Untrusted, ANY, false);
    let mut made = [0, 0];
    let times = interleaved(POINT, |side| {
        let creator = picks[side].next();
        let id = format!("scale-new-{}", made[side]);
        made[side] += 1;
        let (took, created) = timed(|| {
            ledgers[side]
                .create_child(&id, &creator, ACTOR)
                .expect("create")
        });
        std::hint::black_box(created);
        took
    });
    Measured::new("create_child", times)
}

/// `grant` of `trust` on a session of an untrusted tree that holds no posture.
fn grant(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Untrusted, ANY, true);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, posture) = timed(|| {
            ledgers[side]
                .grant(&id, PostureLevel::Trust, ACTOR)
                .expect("grant")
        });
        std::hint::black_box(posture);
        took
    });
    Measured::new("grant", times)
}

/// `revoke` with [`Propagation::Local`] of a leaf holding an inherited posture, outside the
/// branches the tree operations use.
fn revoke_local(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, SPARE_LEAVES, true);
    let times = interleaved(POINT, |side| {
        let id = picks[side].next();
        let (took, revoked) = timed(|| {
            ledgers[side]
                .revoke(&id, Propagation::Local, ACTOR)
                .expect("local revoke")
        });
        assert_eq!(revoked.count, 1, "{id} held a posture");
        took
    });
    Measured::new("revoke_local", times)
}

// ---------------------------------------------------------------------------------------------
// Tree operations: 30 iterations each, on full branches of trusted trees (a depth-1 session and
// its 110 descendants, all holding an inherited posture), the same shape at both sizes.

/// `subtree` of a full branch.
fn subtree(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, FULL_BRANCHES, false);
    let times = interleaved(TREE, |side| {
        let id = picks[side].next();
        let (took, entries) = timed(|| ledgers[side].subtree(&id).expect("subtree"));
        assert_eq!(entries.len(), BRANCH_SESSIONS);
        took
    });
    Measured::new("subtree", times).note(format!("sessions={BRANCH_SESSIONS}"))
}

/// `tree` of a full branch: the tree view, with each session's label and posture, in one read.
fn tree(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, FULL_BRANCHES, false);
    let times = interleaved(TREE, |side| {
        let id = picks[side].next();
        let (took, nodes) = timed(|| ledgers[side].tree(&id).expect("tree"));
        assert_eq!(nodes.len(), BRANCH_SESSIONS);
        took
    });
    Measured::new("tree", times).note(format!("sessions={BRANCH_SESSIONS}"))
}

/// `revoke` with [`Propagation::Preview`] of a full branch: nothing changes.
fn preview(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, FULL_BRANCHES, false);
    let times = interleaved(TREE, |side| {
        let id = picks[side].next();
        let (took, preview) = timed(|| {
            ledgers[side]
                .revoke(&id, Propagation::Preview, ACTOR)
                .expect("preview")
        });
        assert_eq!(preview.count, BRANCH_SESSIONS);
        took
    });
    Measured::new("revoke_preview", times).note(format!("sessions={BRANCH_SESSIONS}"))
}

/// `revoke` with [`Propagation::Cascade`] of a full branch, a different one each iteration, so
/// that each removes 111 postures (and writes 111 audit rows).
fn cascade(sides: &[Side; 2], ledgers: &[Ledger; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, FULL_BRANCHES, true);
    let times = interleaved(TREE, |side| {
        let id = picks[side].next();
        let (took, revoked) = timed(|| {
            ledgers[side]
                .revoke(&id, Propagation::CascadeUnchecked, ACTOR)
                .expect("cascade")
        });
        assert_eq!(
            revoked.count, BRANCH_SESSIONS,
            "{id}'s branch held postures"
        );
        took
    });
    Measured::new("revoke_cascade", times).note(format!("sessions={BRANCH_SESSIONS}"))
}

// ---------------------------------------------------------------------------------------------
// Opening, verifying, and the CLI, with no other handle on the files.

/// `Ledger::open` of an idle, settled ledger: the handle is dropped after each, untimed.
fn open(sides: &[Side; 2]) -> Measured {
    let times = interleaved(OPEN, |side| {
        let (took, ledger) = timed(|| Ledger::init(sides[side].place.location()).expect("open"));
        drop(ledger);
        took
    });
    Measured::new("ledger", times).in_ms()
}

/// A full `verify` of the audit trail.
fn verify_full(sides: &[Side; 2]) -> Measured {
    let ledgers = sides.each_ref().map(|s| s.place.open());
    let mut rows = [0, 0];
    let times = interleaved(VERIFY, |side| {
        let (took, verified) = timed(|| ledgers[side].verify(None).expect("verify"));
        assert!(verified.ok, "the trail verifies");
        rows[side] = verified.rows;
        took
    });
    let m = Measured::new("full", times).in_ms();
    let per_s = |side: usize| rows[side] as f64 / (m.p(side, 50.0) / 1e3);
    let note = format!(
        "small_rows={} small_rows_per_s={:.0} large_rows={} large_rows_per_s={:.0}",
        rows[0],
        per_s(0),
        rows[1],
        per_s(1)
    );
    m.note(note)
}

/// How many rows back from the newest a routine check's saved head is.
const ROWS_SINCE_HEAD: i64 = 1_000;

/// The head of `db`'s trail as it stood [`ROWS_SINCE_HEAD`] rows ago, as `audit head` printed
/// it then.
fn head_rows_back(ledger: &Ledger) -> AuditHead {
    let newest = ledger.audit_head().expect("audit head");
    let seq = newest.seq - ROWS_SINCE_HEAD;
    let row = ledger
        .audit(&AuditQuery::all().before(seq + 1).limit(1))
        .expect("the row of the saved head")
        .remove(0);
    assert_eq!(row.seq, seq);
    AuditHead {
        seq,
        hash: row.hash,
    }
}

/// `verify_from` a head saved [`ROWS_SINCE_HEAD`] rows back: a routine check of the new rows.
fn verify_from(sides: &[Side; 2]) -> Measured {
    let ledgers = sides.each_ref().map(|s| s.place.open());
    let heads = ledgers.each_ref().map(head_rows_back);
    let times = interleaved(VERIFY, |side| {
        let (took, verified) = timed(|| ledgers[side].verify_from(&heads[side]).expect("verify"));
        assert!(verified.ok, "the trail verifies");
        assert_eq!(verified.rows as i64, ROWS_SINCE_HEAD + 1);
        took
    });
    Measured::new("from", times)
        .in_ms()
        .note(format!("rows={}", ROWS_SINCE_HEAD + 1))
}

/// The whole process of the release `session-ledger` binary with `args`, on `place`'s ledger,
/// named in `SESSION_LEDGER_DB` as a dashboard's operator would (a URL's password stays off
/// the command line).
fn cli_run(place: &Place, args: &[&str]) -> Duration {
    let (took, status) = timed(|| {
        Command::new(env!("CARGO_BIN_EXE_session-ledger"))
            .env("SESSION_LEDGER_DB", place.location())
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("run session-ledger")
    });
    assert!(status.success(), "session-ledger {args:?} failed");
    took
}

/// `session-ledger state ID` of a materialized session (a read that writes nothing).
fn cli_state(sides: &[Side; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, MATERIALIZED, false);
    let times = interleaved(CLI, |side| {
        cli_run(&sides[side].place, &["state", &picks[side].next()])
    });
    Measured::new("state", times).in_ms()
}

/// `session-ledger tree ID` of a full branch (111 sessions).
fn cli_tree(sides: &[Side; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::Trusted, FULL_BRANCHES, false);
    let times = interleaved(CLI, |side| {
        cli_run(&sides[side].place, &["tree", &picks[side].next()])
    });
    Measured::new("tree", times)
        .in_ms()
        .note(format!("sessions={BRANCH_SESSIONS}"))
}

/// `session-ledger explain ID` of any session.
fn cli_explain(sides: &[Side; 2]) -> Measured {
    let mut picks = Picks::both(sides, Trees::All, ANY, false);
    let times = interleaved(CLI, |side| {
        cli_run(&sides[side].place, &["explain", &picks[side].next()])
    });
    Measured::new("explain", times).in_ms()
}

/// `session-ledger verify --from SEQ:HASH` with a head saved [`ROWS_SINCE_HEAD`] rows back.
fn cli_verify_from(sides: &[Side; 2]) -> Measured {
    let heads = sides.each_ref().map(|s| {
        let ledger = s.place.open();
        head_rows_back(&ledger).to_string()
    });
    let times = interleaved(CLI, |side| {
        cli_run(&sides[side].place, &["verify", "--from", &heads[side]])
    });
    Measured::new("verify_from", times).in_ms()
}

// ---------------------------------------------------------------------------------------------
// Peak memory: one operation in a fresh process of this binary.

/// What a `--peak` child reports.
struct Peak {
    after_open_kib: u64,
    peak_kib: u64,
    ms: f64,
    count: u64,
}

/// Runs `scale --peak WHAT [ID]` on `place`'s ledger and reads its report.
fn peak(what: &str, place: &Place, id: Option<&str>) -> Peak {
    let exe = std::env::current_exe().expect("this bench's binary");
    let mut cmd = Command::new(exe);
    cmd.env("SESSION_LEDGER_DB", place.location());
    cmd.arg("--peak").arg(what);
    cmd.args(id);
    let out = cmd.output().expect("run the peak child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the peak child for {what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> f64 {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("the peak child printed no {name}: {stdout}"))
    };
    Peak {
        after_open_kib: field("after_open_kib") as u64,
        peak_kib: field("peak_kib") as u64,
        ms: field("ms"),
        count: field("count") as u64,
    }
}

/// The child's side of [`peak`]: opens the ledger `SESSION_LEDGER_DB` names, notes `VmHWM`,
/// runs one operation, notes `VmHWM` again, and prints both.
fn peak_child(args: &[String]) {
    const USAGE: &str = "usage: SESSION_LEDGER_DB=LEDGER scale --peak verify | --peak cascade ID";
    let what = args.first().expect(USAGE).as_str();
    let db = std::env::var("SESSION_LEDGER_DB").expect(USAGE);
    let ledger = Ledger::init(db).expect("open");
    let after_open_kib = support::peak_rss_kib();
    let (took, count) = match (what, args.get(1)) {
        ("verify", None) => {
            let (took, verified) = timed(|| ledger.verify(None).expect("verify"));
            assert!(verified.ok, "the trail verifies");
            (took, verified.rows)
        }
        ("cascade", Some(id)) => {
            let (took, revoked) = timed(|| {
                ledger
                    .revoke(id, Propagation::CascadeUnchecked, ACTOR)
                    .expect("cascade")
            });
            (took, revoked.count as u64)
        }
        _ => panic!("{USAGE}"),
    };
    println!(
        "after_open_kib={after_open_kib} peak_kib={} ms={:.1} count={count}",
        support::peak_rss_kib(),
        took.as_secs_f64() * 1e3
    );
}

// ---------------------------------------------------------------------------------------------
// Printing.

/// A measurement's line and what the summary needs from it.
struct Line {
    name: String,
    ratio: f64,
    large_p50: f64,
    vs_floor: Option<f64>,
}

/// Everything printed so far, for the summary.
struct Report {
    engine: Engine,
    floor: Option<Line>,
    points: Vec<Line>,
    trees: Vec<Line>,
    open: Option<Line>,
    verify: Option<Line>,
    verify_from: Option<Line>,
    clis: Vec<Line>,
    peaks: Vec<(String, f64)>,
}

impl Report {
    fn new(engine: Engine) -> Report {
        Report {
            engine,
            floor: None,
            points: Vec::new(),
            trees: Vec::new(),
            open: None,
            verify: None,
            verify_from: None,
            clis: Vec::new(),
            peaks: Vec::new(),
        }
    }

    /// Prints `KIND ENGINE NAME n=.. [note] small_p50_UNIT=.. small_p99_UNIT=..
    /// large_p50_UNIT=.. large_p99_UNIT=.. ratio=..`.
    fn line(&self, kind: &str, m: Measured) -> Line {
        self.line_against(kind, m, None)
    }

    /// [`Report::line`], with `vs_floor` when the floor's ratio is given.
    fn line_against(&self, kind: &str, m: Measured, floor: Option<f64>) -> Line {
        let ratio = m.ratio();
        let vs_floor = floor.map(|f| ratio / f);
        let mut text = format!(
            "{kind} {} {}",
            self.engine.name(),
            m.fields(["small", "large"])
        );
        if let Some(v) = vs_floor {
            text += &format!(" vs_floor={v:.2}");
        }
        println!("{text}");
        Line {
            name: m.name.to_owned(),
            ratio,
            large_p50: m.p(1, 50.0),
            vs_floor,
        }
    }

    fn point(&mut self, m: Measured) {
        let floor = self.floor.as_ref().map(|f| f.ratio);
        let line = self.line_against("op", m, floor);
        self.points.push(line);
    }

    fn tree(&mut self, m: Measured) {
        let line = self.line("op", m);
        self.trees.push(line);
    }

    fn cli(&mut self, m: Measured) {
        let line = self.line("cli", m);
        self.clis.push(line);
    }

    /// Full verify and a cascade of a whole trusted tree (1,000 sessions, the largest tree
    /// in the forest), each in a fresh process, on a fresh copy of the large ledger.
    fn peaks(&mut self, large_cache: &Path, dir: &Path) {
        let place = Place::at_path(self.engine, &dir.join("peak.db"));
        place.fill_from(large_cache);
        let mib = |kib: u64| kib as f64 / 1024.0;
        let root = Forest::root(0);
        for (name, what, id) in [
            ("verify_full", "verify", None),
            ("cascade_tree", "cascade", Some(root.as_str())),
        ] {
            let p = peak(what, &place, id);
            println!(
                "peak {} {name} count={} ms={:.1} after_open_mib={:.1} peak_mib={:.1}",
                self.engine.name(),
                p.count,
                p.ms,
                mib(p.after_open_kib),
                mib(p.peak_kib)
            );
            self.peaks.push((name.to_owned(), mib(p.peak_kib)));
        }
    }

    /// One `target` line per scale target, met or not met; never a panic.
    fn summary(&self, large: usize) {
        let engine = self.engine.name();
        println!(
            "summary {engine}: the scale targets are for 1000000 sessions against 10000; this \
             run had {large}"
        );
        let verdict = |met: bool| if met { "met" } else { "not met" };
        for line in &self.trees {
            println!(
                "target {engine} {} ratio={:.2} <= 1.3 {}",
                line.name,
                line.ratio,
                verdict(line.ratio <= 1.3)
            );
        }
        for line in &self.points {
            let vs_floor = line.vs_floor.unwrap_or(f64::INFINITY);
            println!(
                "target {engine} {} ratio={:.2} <= 1.5 or vs_floor={:.2} <= 1.2 {}",
                line.name,
                line.ratio,
                vs_floor,
                verdict(line.ratio <= 1.5 || vs_floor <= 1.2)
            );
        }
        if let Some(open) = &self.open {
            println!(
                "target {engine} open large_p50_ms={:.2} <= 5 {}",
                open.large_p50,
                verdict(open.large_p50 <= 5.0)
            );
        }
        for line in &self.clis {
            println!(
                "target {engine} cli_{} large_p50_ms={:.2} <= 30 {}",
                line.name,
                line.large_p50,
                verdict(line.large_p50 <= 30.0)
            );
        }
        if let Some(verify) = &self.verify {
            println!(
                "target {engine} verify_full large_p50_ms={:.1} (linear: compare rows_per_s on its line)",
                verify.large_p50
            );
        }
        if let Some(from) = &self.verify_from {
            println!(
                "target {engine} verify_from large_p50_ms={:.2} <= 50 {}",
                from.large_p50,
                verdict(from.large_p50 <= 50.0)
            );
        }
        for (name, mib) in &self.peaks {
            println!(
                "target {engine} peak_{name} peak_mib={mib:.1} <= 100 {}",
                verdict(*mib <= 100.0)
            );
        }
    }
}
