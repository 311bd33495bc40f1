//! Several processes on one ledger, each with its own `Ledger` and pool, as the nodes of a
//! deployment are: the stress workload in several writer processes, the two-node check
//! (a revoke through one node is seen by the other's next decision; children created through two
//! nodes are all bound by a cascade issued while they are created), and, on PostgreSQL, a write
//! the server aborts to break a deadlock, run again without its caller seeing it.
//!
//! A node is this test program run again as a child process (`current_exe --exact TEST`) with
//! `SESSION_LEDGER_NODE` naming the ledger: the test it runs sees the variable first and serves
//! the parent instead (see [`serving`]), writing its replies on stdout after [`REPLY`]. Each
//! test runs on both engines: on SQLite the nodes share one file, on PostgreSQL one schema.
//!
//! `NODES_PROCESSES` (default 3), `NODES_THREADS` (threads per process, default 2) and
//! `NODES_OPS` (operations per thread, default 300) size the stress; docs/reliability.md has a
//! longer run.

#[macro_use]
mod common;

use std::io::{BufRead, BufReader, Lines, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::postgres_place::WRITE_LOCK;
use common::stress::{self, env_usize, Log};
use common::{Engine, Fixture, TestResult};
use session_ledger::{
    AuditEntry, AuditQuery, Config, Error, Ledger, PostureLevel, Propagation, Raise, Taint, Verdict,
};

/// The variable that makes a run of this program a node: the ledger's path or URL.
const NODE: &str = "SESSION_LEDGER_NODE";
/// What the node does: `writer FIRST THREADS OPS` or `commands`.
const ROLE: &str = "SESSION_LEDGER_NODE_ROLE";
/// What comes before each reply a node writes for the test. The test harness writes on the same
/// stdout, and its `test NAME ... ` has no newline before the node's first reply.
const REPLY: &str = "node> ";

/// The module `engine_tests!` puts an engine's tests in: the start of their names.
fn module_of(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "sqlite",
        Engine::Postgres => "postgres",
    }
}

// ------------------------------------------------------------------------------------------------
// nodes: this program as a child process
// ------------------------------------------------------------------------------------------------

/// A node process the test started, and the pipes to it.
struct Node {
    name: String,
    child: Child,
    input: Option<ChildStdin>,
    output: Lines<BufReader<ChildStdout>>,
}

impl Node {
    /// Runs `test` (`sqlite::NAME`) of this program again as a node on the ledger at `target`,
    /// in `role`.
    fn start(name: &str, test: &str, target: &str, role: &str) -> Node {
        let mut child = Command::new(std::env::current_exe().expect("this test program"))
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(NODE, target)
            .env(ROLE, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a node");
        let output = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Node {
            name: name.to_owned(),
            input: child.stdin.take(),
            child,
            output,
        }
    }

    /// The node's next reply.
    fn reply(&mut self) -> String {
        for line in self.output.by_ref() {
            let line = line.expect("read a node's output");
            if let Some((_, reply)) = line.split_once(REPLY) {
                return reply.to_owned();
            }
        }
        panic!("node {} ended without replying", self.name)
    }

    /// Sends `command` to the node and returns its reply.
    fn ask(&mut self, command: &str) -> String {
        let input = self.input.as_mut().expect("the node's stdin is open");
        writeln!(input, "{command}").expect("write to a node");
        input.flush().expect("write to a node");
        self.reply()
    }

    /// Closes the node's stdin and waits for it to end, which it must do successfully.
    fn finish(mut self) {
        drop(self.input.take());
        let status = self.child.wait().expect("wait for a node");
        assert!(status.success(), "node {} failed: {status}", self.name);
    }
}

/// When this process is a node a test started: serves the test, and returns how that went.
fn serving() -> Option<TestResult> {
    let target = std::env::var(NODE).ok()?;
    let role = std::env::var(ROLE).expect("a node's role");
    let words: Vec<&str> = role.split_whitespace().collect();
    Some(match words[..] {
        ["writer", first, threads, ops] => {
            let number = |word: &str| -> usize { word.parse().expect("a number") };
            write(&target, number(first), number(threads), number(ops))
        }
        ["commands"] => serve_commands(&target),
        _ => panic!("unknown role {role:?}"),
    })
}

/// A writer node: `threads` threads, writers `first` and up, each running the stress workload
/// for `ops` operations through this process's one handle; prints each one's log.
fn write(target: &str, first: usize, threads: usize, ops: usize) -> TestResult {
    let ledger = Arc::new(Ledger::open_with(target, stress::config())?);
    let roots = Arc::new(stress::roots());
    let writers: Vec<_> = (first..first + threads)
        .map(|t| {
            let (ledger, roots) = (ledger.clone(), roots.clone());
            std::thread::spawn(move || stress::worker(&ledger, t, ops, &roots))
        })
        .collect();
    for writer in writers {
        let log = writer.join().expect("a writer thread panicked");
        println!("{REPLY}{}", log.to_line());
    }
    Ok(())
}

/// The bounds out of the way: the two-node tests are about what nodes see, not the limits.
fn unbounded() -> Config {
    Config::default()
        .create_if_missing(true)
        .max_live_children(1_000_000)
        .creation_rate(1_000_000, Duration::from_secs(60))
}

/// A node that runs one command per line of its stdin and replies with one line each, `error:
/// ...` when the ledger returned an error:
///
/// - `root ID`, `grant ID`: `created`, `granted`;
/// - `create ID CREATOR`: `born trusted` or `born untrusted`;
/// - `decide ID`: `approve` or `ask`;
/// - `revoke ID local|cascade`: `revoked N`;
/// - `race CREATOR PREFIX`: starts [`race`] in a thread of its own, beside the commands, and
///   replies `racing`; `progress` replies `racing N` with the children it has created so far,
///   and once it has ended, what `join` replies: waits for it to end, then `created N`.
fn serve_commands(target: &str) -> TestResult {
    let ledger = Arc::new(Ledger::open_with(target, unbounded())?);
    let progress = Arc::new(AtomicUsize::new(0));
    let mut racing: Option<JoinHandle<Result<usize, Error>>> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words[..] {
            ["root", id] => ledger.create_root(id, "node").map(|_| "created".to_owned()),
            ["grant", id] => ledger
                .grant(id, PostureLevel::Trust, "node")
                .map(|_| "granted".to_owned()),
            ["create", id, creator] => ledger.create_child(id, creator, "node").map(|c| {
                match c.inherited_trust {
                    true => "born trusted",
                    false => "born untrusted",
                }
                .to_owned()
            }),
            ["decide", id] => ledger.decide(id, "make deploy", false).map(|d| {
                match d.verdict {
                    Verdict::Approve => "approve",
                    Verdict::Ask => "ask",
                }
                .to_owned()
            }),
            ["revoke", id, how] => {
                let propagation = match how {
                    "local" => Propagation::Local,
                    "cascade" => Propagation::CascadeUnchecked,
                    _ => panic!("revoke {how}?"),
                };
                ledger
                    .revoke(id, propagation, "node")
                    .map(|r| format!("revoked {}", r.count))
            }
            ["race", creator, prefix] => {
                let (ledger, progress) = (ledger.clone(), progress.clone());
                let (creator, prefix) = (creator.to_owned(), prefix.to_owned());
                racing = Some(std::thread::spawn(move || {
                    race(&ledger, &creator, &prefix, &progress)
                }));
                Ok("racing".to_owned())
            }
            ["progress"] if racing.as_ref().is_some_and(|r| !r.is_finished()) => {
                Ok(format!("racing {}", progress.load(Ordering::SeqCst)))
            }
            ["progress" | "join"] => racing
                .take()
                .expect("a race to join")
                .join()
                .expect("the racing thread panicked")
                .map(|n| format!("created {n}")),
            _ => panic!("unknown command {line:?}"),
        };
        println!("{REPLY}{}", reply.unwrap_or_else(|e| format!("error: {e}")));
    }
    Ok(())
}

/// How many children a racing node creates after it has seen its creator's posture gone.
const AFTER: usize = 5;

/// How many children a racing node creates at most, cascade or not.
const AT_MOST: usize = 20_000;

/// Creates children `PREFIX-0`, `PREFIX-1`, ... of `creator`, and reads each one's spawned
/// child `sub-PREFIX-i-1` for the first time (its allocation, rule P3), until it has made
/// [`AFTER`] children after it saw that `creator` holds no posture any more (or [`AT_MOST`]),
/// counting them in `progress`. Returns how many children it created.
fn race(
    ledger: &Ledger,
    creator: &str,
    prefix: &str,
    progress: &AtomicUsize,
) -> Result<usize, Error> {
    let mut created = 0;
    let mut after = 0;
    let mut revoked = false;
    while after < AFTER && created < AT_MOST {
        let id = format!("{prefix}-{created}");
        ledger.create_child(&id, creator, "node")?;
        ledger.state(&format!("sub-{id}-1"))?;
        created += 1;
        progress.store(created, Ordering::SeqCst);
        if revoked {
            after += 1;
        } else {
            revoked = ledger.posture(creator)?.is_none();
        }
    }
    Ok(created)
}

// ------------------------------------------------------------------------------------------------
// the stress, in several processes
// ------------------------------------------------------------------------------------------------

fn writers_in_several_processes_never_see_an_error_and_leave_the_rules_intact(
    engine: Engine,
) -> TestResult {
    const NAME: &str = "writers_in_several_processes_never_see_an_error_and_leave_the_rules_intact";
    if let Some(served) = serving() {
        return served;
    }
    let processes = env_usize("NODES_PROCESSES", 3);
    let threads = env_usize("NODES_THREADS", 2);
    let ops = env_usize("NODES_OPS", 300);
    let f = fixture!(engine, stress::config());
    stress::setup(&f.ledger)?;
    let test = format!("{}::{NAME}", module_of(engine));
    let started = Instant::now();
    // Every writer process starts before any is read from: they all write at once.
    let nodes: Vec<Node> = (0..processes)
        .map(|p| {
            let role = format!("writer {} {threads} {ops}", p * threads);
            Node::start(&format!("writer{p}"), &test, &f.target(), &role)
        })
        .collect();
    let mut logs: Vec<Log> = Vec::new();
    for mut node in nodes {
        for _ in 0..threads {
            logs.push(Log::from_line(&node.reply()));
        }
        // A writer that met an error other than a caller's panicked, and its process failed.
        node.finish();
    }
    let elapsed = started.elapsed();
    let checked = stress::check(&f, &f.ledger, &logs);
    let who = format!("nodes on {engine:?}, {processes} processes x {threads} threads x {ops} ops");
    println!("{}", checked.report(&who, elapsed));
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// the two-node check
// ------------------------------------------------------------------------------------------------

/// Two command nodes on `f`'s ledger, running `test` (a name of this file).
fn two_nodes(f: &Fixture, engine: Engine, test: &str) -> (Node, Node) {
    let test = format!("{}::{test}", module_of(engine));
    let a = Node::start("a", &test, &f.target(), "commands");
    let b = Node::start("b", &test, &f.target(), "commands");
    (a, b)
}

fn a_revoke_through_one_node_makes_the_other_nodes_next_decide_ask(engine: Engine) -> TestResult {
    const NAME: &str = "a_revoke_through_one_node_makes_the_other_nodes_next_decide_ask";
    if let Some(served) = serving() {
        return served;
    }
    let f = fixture!(engine, unbounded());
    let (mut a, mut b) = two_nodes(&f, engine, NAME);

    // A grant through a reaches b's decisions, and a child created through b inherits it.
    assert_eq!(a.ask("root conductor"), "created");
    assert_eq!(b.ask("decide conductor"), "ask");
    assert_eq!(a.ask("grant conductor"), "granted");
    assert_eq!(b.ask("create worker conductor"), "born trusted");
    for id in ["conductor", "worker"] {
        assert_eq!(b.ask(&format!("decide {id}")), "approve", "{id} on b");
    }
    // A cascade through a: b's next decision on either asks.
    assert_eq!(a.ask("revoke conductor cascade"), "revoked 2");
    for id in ["conductor", "worker"] {
        assert_eq!(b.ask(&format!("decide {id}")), "ask", "{id} on b");
    }

    // The other way round, and a local revoke: through b, seen by a.
    assert_eq!(b.ask("root solo"), "created");
    assert_eq!(b.ask("grant solo"), "granted");
    assert_eq!(a.ask("decide solo"), "approve");
    assert_eq!(b.ask("revoke solo local"), "revoked 1");
    assert_eq!(a.ask("decide solo"), "ask");

    a.finish();
    b.finish();
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

/// The audit rows about `session` of `kind`.
fn rows_of<'t>(trail: &'t [AuditEntry], kind: &str, session: &str) -> Vec<&'t AuditEntry> {
    trail
        .iter()
        .filter(|r| r.kind.as_str() == kind && r.session.as_deref() == Some(session))
        .collect()
}

fn children_created_through_two_nodes_under_one_creator_are_all_bound_by_a_cascade_issued_during_their_creation(
    engine: Engine,
) -> TestResult {
    const NAME: &str = "children_created_through_two_nodes_under_one_creator_are_all_bound_by_a_cascade_issued_during_their_creation";
    /// How many children each node has created before the cascade is issued.
    const BEFORE: usize = 5;
    if let Some(served) = serving() {
        return served;
    }
    let f = fixture!(engine, unbounded());
    f.ledger.create_root("conductor", "op")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "op")?;
    let (mut a, mut b) = two_nodes(&f, engine, NAME);
    assert_eq!(a.ask("race conductor a"), "racing");
    assert_eq!(b.ask("race conductor b"), "racing");
    // Once both nodes are creating, the cascade goes through a, beside a's own creating.
    loop {
        let made = [&mut a, &mut b].map(|node| {
            let reply = node.ask("progress");
            let made = reply
                .strip_prefix("racing ")
                .and_then(|n| n.parse::<usize>().ok());
            made.unwrap_or_else(|| panic!("node {} stopped before the cascade: {reply}", node.name))
        });
        if made.iter().all(|&n| n >= BEFORE) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let revoked = a.ask("revoke conductor cascade");
    assert!(revoked.starts_with("revoked "), "{revoked}");
    let mut created = Vec::new();
    for (prefix, node) in [("a", &mut a), ("b", &mut b)] {
        let reply = node.ask("join");
        let n: usize = reply
            .strip_prefix("created ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("node {prefix}: {reply}"))?;
        created.extend((0..n).map(|i| format!("{prefix}-{i}")));
    }
    a.finish();
    b.finish();

    // The cascade's rows, in one transaction: every session it revoked, and where it committed.
    let trail = f.ledger.audit(&AuditQuery::all())?;
    let cascade: Vec<&AuditEntry> = trail
        .iter()
        .filter(|r| r.kind.as_str() == "posture.revoke" && r.detail["root"] == "conductor")
        .collect();
    let committed = cascade
        .iter()
        .map(|r| r.seq)
        .max()
        .ok_or("no cascade row")?;
    let bound = |id: &str| cascade.iter().any(|r| r.session.as_deref() == Some(id));

    // Every child, created or spawned, was born trusted before the cascade and is on the
    // cascade's list, or was born after it and untrusted.
    let mut before = [0, 0];
    let mut after = [0, 0];
    for child in &created {
        let node = usize::from(child.starts_with('b'));
        let spawned = format!("sub-{child}-1");
        for (id, kind) in [
            (child.as_str(), "session.create"),
            (&spawned, "session.spawn"),
        ] {
            let rows = rows_of(&trail, kind, id);
            assert_eq!(rows.len(), 1, "{id}: {rows:?}");
            let born = rows[0];
            let trusted = born.detail["inherited_trust"] == true;
            if born.seq < committed {
                assert!(trusted, "{id}, born before the cascade, was born untrusted");
                assert!(
                    bound(id),
                    "{id} was born trusted, and the cascade missed it"
                );
                before[node] += 1;
            } else {
                assert!(
                    !trusted,
                    "{id} was born trusted after the cascade: {born:?}"
                );
                after[node] += 1;
            }
        }
    }
    // Both nodes created children on both sides of the cascade.
    for node in 0..2 {
        assert!(
            before[node] >= BEFORE && after[node] >= AFTER,
            "node {node}: {} sessions born before the cascade, {} after",
            before[node],
            after[node]
        );
    }
    // After the cascade, nobody in the conductor's tree holds trust.
    let tree = f.ledger.subtree("conductor")?;
    assert_eq!(tree.len(), 1 + 2 * created.len());
    for entry in tree {
        let state = f.ledger.state(&entry.session.id)?;
        assert!(
            !state.trust && !state.trust_reads,
            "{} holds a posture after the cascade",
            entry.session.id
        );
    }
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

engine_tests! {
    writers_in_several_processes_never_see_an_error_and_leave_the_rules_intact,
    a_revoke_through_one_node_makes_the_other_nodes_next_decide_ask,
    children_created_through_two_nodes_under_one_creator_are_all_bound_by_a_cascade_issued_during_their_creation,
}

// ------------------------------------------------------------------------------------------------
// a deadlock, on PostgreSQL
// ------------------------------------------------------------------------------------------------

#[test]
fn a_write_the_server_aborts_to_break_a_deadlock_is_run_again_and_its_caller_sees_success(
) -> TestResult {
    let f = fixture!(Engine::Postgres);
    let secret = Raise {
        taint: Some(Taint::Secret),
        untrusted: false,
    };
    // A psql session holds a label's row, and the library's raise of that label waits for it
    // while holding the ledger's lock; then the session asks for the ledger's lock: a
    // deadlock. The server breaks it by aborting the transaction whose deadlock check runs
    // first: the raise's, which has waited longer, as long as the session asked within the
    // server's `deadlock_timeout` (1 s) of the raise starting to wait. On a machine too busy
    // for that, the session is the one aborted, and the test tries again on another label.
    for attempt in 0..5 {
        let id = format!("s{attempt}");
        f.ledger.create_root(&id, "op")?;
        let mut holder = f.place().client();
        let holder_pid: i32 = holder.query_one("SELECT pg_backend_pid()", &[])?.get(0);
        holder.batch_execute(&format!(
            "BEGIN; SELECT 1 FROM labels WHERE session_id = '{id}' FOR UPDATE"
        ))?;
        let (raised, holder_won) = std::thread::scope(|s| -> Result<_, String> {
            let raise = s.spawn(|| f.ledger.raise(&id, secret, "op"));
            let mut watcher = f.place().client();
            let blocked = "SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))";
            let raiser: i32 = loop {
                let rows = watcher
                    .query(blocked, &[&holder_pid])
                    .map_err(|e| e.to_string())?;
                if let Some(row) = rows.first() {
                    break row.get(0);
                }
                assert!(!raise.is_finished(), "the raise did not wait for the row");
                std::thread::sleep(Duration::from_millis(2));
            };
            let holds = "SELECT count(*) FROM pg_locks
                          WHERE pid = $1 AND locktype = 'advisory' AND granted";
            let holds: i64 = watcher
                .query_one(holds, &[&raiser])
                .map_err(|e| e.to_string())?
                .get(0);
            assert_eq!(
                holds, 1,
                "the raise waits for the row holding the ledger's lock"
            );
            let holder_won = holder.batch_execute(WRITE_LOCK).is_ok();
            holder
                .batch_execute("ROLLBACK")
                .map_err(|e| e.to_string())?;
            let raised = raise.join().expect("the raising thread");
            Ok((raised, holder_won))
        })?;
        // Whichever side the server aborted, the caller of the raise sees it succeed.
        let raised = raised.unwrap_or_else(|e| panic!("the deadlock reached the caller: {e}"));
        assert!(raised.changed);
        assert_eq!(f.ledger.state(&id)?.label().taint, Taint::Secret);
        let raises = f
            .ledger
            .audit(&AuditQuery::all().session(&id))?
            .into_iter()
            .filter(|r| r.kind.as_str() == "label.raise")
            .count();
        assert_eq!(raises, 1, "the raise was recorded once");
        if holder_won {
            // The session got the ledger's lock while the raise was still running: the
            // raise's first transaction was aborted, and the library ran it again.
            assert!(f.ledger.verify(None)?.ok);
            return Ok(());
        }
    }
    Err("the server aborted the psql session every time, never the library's write".into())
}
