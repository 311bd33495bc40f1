//! A PostgreSQL ledger across the failures a deployment's server meets: a pooled connection the
//! server ended while it sat idle (a failover, `pg_terminate_backend`, a pooler's idle
//! timeout), a connection lost while its transaction was committing, before or after the
//! server received the `COMMIT`, and no server at all for longer than the failover wait.
//!
//! A lost commit is staged with a proxy between the library and the server that cuts the
//! connection at the `COMMIT` (`common/proxy.rs`); the rest on the test server as it is.

#[macro_use]
mod common;
#[path = "common/proxy.rs"]
mod proxy;

use std::time::Duration;

use common::postgres_place::{self, Place};
use common::TestResult;
use proxy::{host_port, AtCommit, Proxy};
use session_ledger::{Config, Error, Ledger, PostureLevel, StorageError};

/// `url` with `application_name` set, so that the server lists the ledger's connections by it.
fn named(url: &str, name: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}application_name={name}")
}

/// Ends every connection of the server named `name`, as an operator's `pg_terminate_backend`
/// would, and waits until each is gone. Returns how many it ended.
fn terminate(place: &Place, name: &str) -> usize {
    let rows = place.query(&format!(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
          WHERE application_name = '{name}'"
    ));
    rows.len()
}

/// A unique application name for this test's ledger handle.
fn app_name(test: &str) -> String {
    format!("ledger_{test}_{}", std::process::id())
}

#[test]
fn an_idle_pooled_connection_the_server_ended_does_not_fail_the_next_read_or_write() -> TestResult {
    let Some(place) = Place::new() else {
        return Ok(());
    };
    let name = app_name("idle");
    let ledger = Ledger::open_with(
        named(&place.url(), &name),
        Config::default().create_if_missing(true).pool_size(2),
    )?;
    ledger.create_root("conductor", "op")?;
    ledger.grant("conductor", PostureLevel::Trust, "op")?;

    assert!(
        terminate(&place, &name) >= 1,
        "the ledger had a connection to end"
    );
    assert!(ledger.state("conductor")?.trust);

    assert!(
        terminate(&place, &name) >= 1,
        "the ledger had a connection to end"
    );
    let created = ledger.create_child("worker", "conductor", "op")?;
    assert!(created.inherited_trust);
    assert!(ledger.verify(None)?.ok);
    Ok(())
}

/// The ledger of `place`, opened through a proxy; `None` when there is no test server over
/// TCP.
fn through_proxy(place: &Place, config: Config) -> Option<(Proxy, Ledger)> {
    let tcp = postgres_place::server_over_tcp()?;
    let proxy = Proxy::start(&host_port(&tcp));
    let url = proxy.url(&place.url_on(&tcp));
    let ledger = Ledger::open_with(&url, config).expect("open through the proxy");
    Some((proxy, ledger))
}

#[test]
fn a_write_whose_connection_is_lost_after_the_server_got_its_commit_is_reported_done() -> TestResult
{
    let Some(place) = Place::new() else {
        return Ok(());
    };
    let Some((proxy, ledger)) = through_proxy(&place, Config::default().create_if_missing(true))
    else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    ledger.grant("conductor", PostureLevel::Trust, "op")?;

    proxy.at_next_commit(AtCommit::CutAfter);
    let created = ledger.create_child("worker", "conductor", "op")?;
    assert_eq!(proxy.commits_cut(), 1, "the commit was cut");
    assert!(created.inherited_trust);
    assert!(ledger.session("worker")?.is_some());
    assert!(ledger.verify(None)?.ok);
    Ok(())
}

#[test]
fn a_write_whose_connection_is_lost_before_the_server_got_its_commit_is_reported_not_done(
) -> TestResult {
    let Some(place) = Place::new() else {
        return Ok(());
    };
    let Some((proxy, ledger)) = through_proxy(&place, Config::default().create_if_missing(true))
    else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    let head = ledger.audit_head()?;

    proxy.at_next_commit(AtCommit::CutBefore);
    let e = ledger
        .create_child("worker", "conductor", "op")
        .expect_err("a create whose commit never reached the server");
    assert_eq!(proxy.commits_cut(), 1, "the commit was cut");
    assert_eq!(e.kind(), "not_committed", "{e}");
    match &e {
        Error::Storage(StorageError::NotCommitted { seq, hash, .. }) => {
            assert_eq!(*seq, head.seq + 1, "it names the write's audit row");
            assert_eq!(hash.len(), 64, "{hash}");
        }
        other => panic!("not NotCommitted: {other:?}"),
    }
    assert!(ledger.session("worker")?.is_none(), "nothing was written");
    assert_eq!(ledger.audit_head()?, head);
    // Nothing was written, so doing it again is safe, and does it once.
    ledger.create_child("worker", "conductor", "op")?;
    assert!(ledger.verify(None)?.ok);
    Ok(())
}

#[test]
fn a_write_that_finds_no_server_within_the_failover_wait_fails_as_unavailable() -> TestResult {
    let config = Config::default()
        .create_if_missing(true)
        .failover_wait(Duration::from_millis(500));
    let Some(place) = Place::new() else {
        return Ok(());
    };
    let Some((proxy, ledger)) = through_proxy(&place, config) else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    drop(proxy);

    let e = ledger
        .create_child("worker", "conductor", "op")
        .expect_err("no server to write to");
    assert_eq!(e.kind(), "unavailable", "{e}");
    let e = ledger
        .state("conductor")
        .expect_err("no server to read from");
    assert_eq!(e.kind(), "unavailable", "{e}");
    Ok(())
}

/// `url` with a first host where nothing listens, as a primary that died, and the attributes a
/// deployment's URL has: only a server that takes writes, and a bound on each connection.
fn after_a_dead_host(url: &str) -> String {
    let url = url.replacen('@', "@127.0.0.1:1,", 1);
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}target_session_attrs=read-write&connect_timeout=2")
}

#[test]
fn a_url_of_several_servers_reaches_the_one_that_takes_writes_in_the_library_and_the_command_line(
) -> TestResult {
    let Some(place) = Place::new() else {
        return Ok(());
    };
    let url = after_a_dead_host(&place.url());
    let ledger = Ledger::init(&url)?;
    ledger.create_root("conductor", "op")?;
    assert!(ledger.state("conductor")?.known);
    assert!(ledger.location().to_string().contains("127.0.0.1:1"));

    let cli = env!("CARGO_BIN_EXE_session-ledger");
    let create = std::process::Command::new(cli)
        .args(["--db", &url, "create", "worker", "--by", "conductor"])
        .output()?;
    assert!(
        create.status.success(),
        "{}",
        String::from_utf8_lossy(&create.stderr)
    );
    let tree = std::process::Command::new(cli)
        .args(["--db", &url, "tree", "conductor"])
        .output()?;
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    assert!(String::from_utf8_lossy(&tree.stdout).contains("worker"));
    Ok(())
}
