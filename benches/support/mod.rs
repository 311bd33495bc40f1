//! Shared input building for the benches (`benches/*.rs`: the criterion benches, one operation
//! each, the scale bench and the engines bench); the research harness in `perf/` includes this
//! file as well. Nothing here runs inside a timed closure, but for [`timed`] and
//! [`interleaved`] (`measure.rs`), which time it. Where a ledger lives, a SQLite file or a
//! PostgreSQL schema, is `engine.rs`'s [`Place`].
//!
//! Inputs are built through a second [`Ledger`] handle on the same file, opened with
//! [`builder_config`]: `synchronous=NORMAL` and every creation bound lifted. The calls being
//! measured go through a handle opened with the default [`Config`] (`synchronous=FULL`, the
//! default bounds), unless a bench says otherwise.
//! `synchronous` is a per-connection setting, so the two handles coexist on one file.
//!
//! A NORMAL commit leaves its WAL frames in the page cache; the next FULL commit's fsync would
//! then flush them too and bill the setup's writes to the measured call. [`flush_wal`] syncs
//! them first. It does not checkpoint: a checkpoint resets the WAL, and with FULL the first
//! commit after a reset syncs the WAL header as well, an extra fsync that a steady-state commit
//! does not pay. Automatic checkpoints (every 4,000 WAL pages, as the library sets) fall where SQLite puts them.

#![allow(dead_code)] // each bench uses a different part

mod engine;
mod measure;

pub use engine::*;
#[allow(unused_imports)] // the benches that compare two sides in one run use it
pub use measure::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use session_ledger::{Config, Ledger, PostureLevel, Synchronous};

/// The actor of every bench call.
pub const ACTOR: &str = "bench";

/// Settings for the building handle: fast commits and no creation bounds. Never used for the
/// calls a bench measures, unless the bench says so.
pub fn builder_config() -> Config {
    Config::default()
        .create_if_missing(true)
        .synchronous(Synchronous::Normal)
        .max_depth(u32::MAX)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, Duration::from_secs(1))
}

/// Opens (creating) a building handle on `path`.
pub fn builder(path: &Path) -> Ledger {
    Ledger::open_with(path, builder_config()).expect("open the building handle")
}

/// Creates `n` sessions below `root` (which must exist), breadth-first with `fanout` children
/// each, named `<parent>.<k>`. Returns their ids, in creation order; `root` is not among them.
pub fn grow_tree(ledger: &Ledger, root: &str, n: usize, fanout: usize) -> Vec<String> {
    let mut made = Vec::with_capacity(n);
    let mut parents = vec![root.to_owned()];
    let mut next_parent = 0;
    while made.len() < n {
        if next_parent == parents.len() {
            parents = made[made.len() - parents.len() * fanout..].to_vec();
            next_parent = 0;
        }
        let parent = parents[next_parent].clone();
        for k in 0..fanout {
            if made.len() == n {
                break;
            }
            let id = format!("{parent}.{k}");
            ledger
                .create_child(&id, &parent, ACTOR)
                .expect("create a tree session");
            made.push(id);
        }
        next_parent += 1;
    }
    made
}

/// Materializes each of `ids` (a first read each, through `ledger`).
pub fn materialize_all(ledger: &Ledger, ids: &[String]) {
    for id in ids {
        ledger.state(id).expect("materialize");
    }
}

/// The WAL file of the ledger at `db`.
pub fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// fsyncs the WAL of the ledger at `db`, so that frames committed with `synchronous=NORMAL`
/// are on disk before a timed FULL commit. No checkpoint (see the module comment).
pub fn flush_wal(db: &Path) {
    if let Ok(file) = std::fs::File::open(wal_path(db)) {
        file.sync_all().expect("fsync the WAL");
    }
}

/// Checkpoints the ledger at `db` into its main file and truncates the WAL, through a plain
/// connection: for a ledger that was just built and will be read, or copied as a template.
/// Every handle on the file must be idle.
pub fn checkpoint(db: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open for the checkpoint");
    let (busy, _, _): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("checkpoint");
    assert_eq!(busy, 0, "the checkpoint was blocked by a reader or writer");
}

/// The ledger of `read_state` and `pool_reads`: a root `root` granted `trust` and `n` sessions
/// below it (fan-out 10), each read once so its label is materialized, then checkpointed.
/// Returns the sessions' ids.
pub fn trusted_materialized_tree(path: &Path, n: usize) -> Vec<String> {
    let builder = builder(path);
    builder.create_root("root", ACTOR).expect("root");
    builder
        .grant("root", PostureLevel::Trust, ACTOR)
        .expect("grant");
    let ids = grow_tree(&builder, "root", n, 10);
    materialize_all(&builder, &ids);
    drop(builder);
    checkpoint(path);
    ids
}

/// A base tree for benches whose every iteration needs a fresh session: a root `root` and
/// `n` sessions below it (fan-out 10), built as [`Place::built`] builds, and a building handle
/// on the place for the fresh sessions.
pub struct FreshSessions {
    builder: Ledger,
    parents: Vec<String>,
    prefix: &'static str,
    made: usize,
    place: Place,
}

impl FreshSessions {
    /// Builds the base tree on `engine`; fresh sessions are named `<prefix><n>`.
    pub fn new(engine: Engine, n: usize, prefix: &'static str) -> FreshSessions {
        let (place, parents) = Place::built(engine, |path| {
            let builder = builder(path);
            builder.create_root("root", ACTOR).expect("root");
            grow_tree(&builder, "root", n, 10)
        });
        FreshSessions {
            builder: place.builder(),
            parents,
            prefix,
            made: 0,
            place,
        }
    }

    /// Where the ledger is: open the measured handle here.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// The building handle, for setup a bench adds to a fresh session.
    pub fn builder(&self) -> &Ledger {
        &self.builder
    }

    /// A new live child of a base session (round-robin), not materialized, with the setup's
    /// writes on disk ([`Place::flush`]).
    pub fn next(&mut self) -> String {
        let id = format!("{}{}", self.prefix, self.made);
        let parent = &self.parents[self.made % self.parents.len()];
        self.builder
            .create_child(&id, parent, ACTOR)
            .expect("create a fresh session");
        self.made += 1;
        self.place.flush();
        id
    }
}

/// Hands out (creator, new child id) pairs for creates that inherit `trust`: each creator is a
/// new child of the trusted `conductor`, made through the building handle (not timed) when the
/// one before has `per_creator` children, so that a measured handle with the default `Config`
/// never meets the creation bounds (50 live children, 200 a minute, per creator).
pub struct TrustedCreators<'a> {
    builder: &'a Ledger,
    place: &'a Place,
    conductor: &'a str,
    per_creator: usize,
    made: usize,
    creator: String,
}

impl<'a> TrustedCreators<'a> {
    /// Creators below `conductor`, which must hold `trust`, on `place` through `builder`.
    pub fn new(builder: &'a Ledger, place: &'a Place, conductor: &'a str) -> TrustedCreators<'a> {
        TrustedCreators {
            builder,
            place,
            conductor,
            per_creator: Config::default().create_if_missing(true).max_live_children as usize,
            made: 0,
            creator: String::new(),
        }
    }

    /// The next (creator, child) pair; the child does not exist yet.
    pub fn next(&mut self) -> (String, String) {
        if self.made % self.per_creator == 0 {
            self.creator = format!("creator{}", self.made / self.per_creator);
            let created = self
                .builder
                .create_child(&self.creator, self.conductor, ACTOR)
                .expect("create a creator");
            assert!(created.inherited_trust);
            self.place.flush();
        }
        let child = format!("{}.w{}", self.creator, self.made % self.per_creator);
        self.made += 1;
        (self.creator.clone(), child)
    }
}

/// The input of every timed cascade: a new ledger at `path` whose trusted root `root` has
/// passed `trust` to `n - 1` descendants (fan-out 10, built breadth-first, [`grow_tree`]),
/// checkpointed so that a copy of the main file is the whole ledger. A cascade of `root`
/// revokes exactly `n` postures.
pub fn cascade_template(path: &Path, n: usize) {
    let ledger = builder(path);
    ledger.create_root("root", ACTOR).expect("root");
    ledger
        .grant("root", PostureLevel::Trust, ACTOR)
        .expect("grant");
    grow_tree(&ledger, "root", n - 1, 10);
    drop(ledger);
    checkpoint(path);
}

/// A plain connection (creating the file if it is missing) in WAL mode with the ledger's
/// pragmas (`storage::configure`), all of them, and its kept WAL file: the page cache and the
/// checkpoint interval decide whether a large transaction spills pages to the WAL before it
/// commits, and whether its commit runs a checkpoint.
pub fn raw_connection(path: &Path) -> Connection {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open");
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("sync");
    conn.pragma_update(None, "foreign_keys", true).expect("fk");
    conn.pragma_update(None, "trusted_schema", false)
        .expect("trusted_schema");
    conn.pragma_update(None, "cache_size", -16_384)
        .expect("cache_size");
    conn.pragma_update(None, "wal_autocheckpoint", 4_000)
        .expect("wal_autocheckpoint");
    conn.pragma_update(None, "temp_store", "MEMORY")
        .expect("temp_store");
    conn.busy_timeout(Duration::from_secs(30)).expect("busy");
    keep_wal_file(&conn);
    conn
}

/// `SQLITE_FCNTL_PERSIST_WAL`, as the ledger sets on its connections: the WAL file outlives the
/// last connection, so a later one commits into blocks that already exist.
pub fn keep_wal_file(conn: &Connection) {
    let mut on: std::ffi::c_int = 1;
    // SAFETY: a live connection used on this thread; the file control reads and writes one int
    // through a pointer to `on`, alive for the call.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            std::ptr::addr_of_mut!(on).cast(),
        )
    };
    assert_eq!(rc, rusqlite::ffi::SQLITE_OK, "persist_wal");
}

/// The process's peak resident memory (`VmHWM` of /proc/self/status), in KiB: the whole
/// process, so it bounds what the operations it ran needed. 0 where /proc is not available.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The nearest-rank `p`-th percentile (0 < `p` ≤ 100) of `values`, which need not be sorted.
/// Panics on an empty slice.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    assert!(!values.is_empty(), "a percentile of no values");
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Copies the ledger at `from` (its file, and its `-wal` when there is one) to `to`, which must
/// not be in use, and syncs the copies, so that a timed commit's fsync does not write them back.
/// A stale `-wal` or `-shm` at `to` is removed first.
pub fn copy_ledger(from: &Path, to: &Path) {
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(with_suffix(to, suffix));
    }
    for suffix in ["", "-wal"] {
        let source = with_suffix(from, suffix);
        if source.exists() {
            let target = with_suffix(to, suffix);
            std::fs::copy(&source, &target).expect("copy the ledger");
            std::fs::File::open(&target)
                .and_then(|f| f.sync_all())
                .expect("sync the copy");
        }
    }
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Sessions per tree of a [`Forest`]: a root, 10 children, 100 grandchildren and 889
/// great-grandchildren.
pub const TREE_SESSIONS: usize = 1_000;

/// Children per session in a [`Forest`]'s trees.
pub const TREE_FANOUT: usize = 10;

/// How many sessions of each tree of a [`Forest`] are materialized: those at positions below
/// this one (the root, the 10 children, the 100 grandchildren and the first 389
/// great-grandchildren). The rest, the last 500 great-grandchildren, are not, and each has a
/// materialized parent, so a first read of one walks one level.
pub const TREE_MATERIALIZED: usize = 500;

/// A ledger of `trees` trees of [`TREE_SESSIONS`] sessions each, the shape of the scale bench
/// (`benches/scale.rs`): the same trees at every size, only more of them.
///
/// Sessions are named by position. Tree `t`'s root is `tree0007` (for `t` = 7); the session at
/// breadth-first position `p` of a tree (0 for its root) is the child number
/// `(p - 1) % TREE_FANOUT` of the session at position `(p - 1) / TREE_FANOUT`, named
/// `<parent>.<k>` as [`grow_tree`] names it: position 1 is `tree0007.0`, position 11
/// `tree0007.0.0`, position 111 `tree0007.0.0.0`. Ids are computed, not stored, so picking
/// one costs nothing at any size.
///
/// Trees with an even number are trusted: their root is granted `trust` before anything below
/// it is created, so every session below holds an inherited posture.
#[derive(Debug, Clone, Copy)]
pub struct Forest {
    /// How many trees.
    pub trees: usize,
}

impl Forest {
    /// The version of the shape built by [`Forest::build`]: change it with the shape, so that
    /// ledgers cached by the scale bench are built again.
    pub const SHAPE_VERSION: u32 = 1;

    /// The forest of `sessions` sessions, a multiple of [`TREE_SESSIONS`].
    pub fn of_sessions(sessions: usize) -> Forest {
        assert!(
            sessions >= TREE_SESSIONS && sessions % TREE_SESSIONS == 0,
            "a forest holds a whole number of {TREE_SESSIONS}-session trees, not {sessions} sessions"
        );
        Forest {
            trees: sessions / TREE_SESSIONS,
        }
    }

    /// How many sessions.
    pub fn sessions(&self) -> usize {
        self.trees * TREE_SESSIONS
    }

    /// Whether tree `t`'s root was granted `trust` before its descendants were created.
    pub fn trusted(t: usize) -> bool {
        t % 2 == 0
    }

    /// The root of tree `t`.
    pub fn root(t: usize) -> String {
        format!("tree{t:04}")
    }

    /// The session at breadth-first position `p` of tree `t` (see [`Forest`]).
    pub fn id(t: usize, p: usize) -> String {
        assert!(p < TREE_SESSIONS, "position {p} is outside a tree");
        let mut digits = Vec::new();
        let mut at = p;
        while at > 0 {
            digits.push((at - 1) % TREE_FANOUT);
            at = (at - 1) / TREE_FANOUT;
        }
        let mut id = Forest::root(t);
        for k in digits.iter().rev() {
            id.push('.');
            id.push_str(&k.to_string());
        }
        id
    }

    /// Builds the forest into a new ledger at `path` through the building handle ([`builder`]):
    /// per tree, its root, the grant if it is trusted, the sessions below it ([`grow_tree`]),
    /// then a first read of the first [`TREE_MATERIALIZED`] positions. Checkpoints at the end.
    /// `progress` is called after each tree with the number of trees built.
    pub fn build(&self, path: &Path, mut progress: impl FnMut(usize)) {
        let builder = builder(path);
        for t in 0..self.trees {
            let root = Forest::root(t);
            builder.create_root(&root, ACTOR).expect("root");
            if Forest::trusted(t) {
                builder
                    .grant(&root, PostureLevel::Trust, ACTOR)
                    .expect("grant");
            }
            let below = grow_tree(&builder, &root, TREE_SESSIONS - 1, TREE_FANOUT);
            for (i, id) in below.iter().enumerate() {
                assert_eq!(*id, Forest::id(t, i + 1), "grow_tree names by position");
            }
            materialize_all(&builder, &below[..TREE_MATERIALIZED - 1]);
            progress(t + 1);
        }
        drop(builder);
        checkpoint(path);
    }
}
