//! How many round trips to the server an operation costs on PostgreSQL, counted on the wire by
//! a proxy between the library and the server (`common/proxy.rs`): every simple query and
//! every extended-protocol exchange the client waits on. Under a deployment-wide write lock
//! and a synchronous standby each one is latency every writer queues behind, so each budget
//! here is held: a change that adds a statement to one of these paths fails its test.
//!
//! Each operation is measured on a handle with one pooled connection, after it ran once, so
//! that its statements are prepared on that connection as they are in a long-running process.

#[macro_use]
mod common;
#[path = "common/proxy.rs"]
mod proxy;

use common::postgres_place::{self, Place};
use common::TestResult;
use proxy::{host_port, Proxy};
use session_ledger::{Config, Ledger, PostureLevel, Verdict};

/// A ledger in a schema of its own, opened through a proxy that counts round trips; `None`
/// when there is no test server.
fn counted() -> Option<(Place, Proxy, Ledger)> {
    let tcp = postgres_place::server_over_tcp()?;
    let place = Place::new()?;
    let proxy = Proxy::start(&host_port(&tcp));
    let url = proxy.url(&place.url_on(&tcp));
    let ledger = Ledger::open_with(&url, Config::default().create_if_missing(true).pool_size(1))
        .expect("open through the proxy");
    Some((place, proxy, ledger))
}

/// The round trips `op` costs.
fn cost(proxy: &Proxy, op: impl FnOnce()) -> u64 {
    let before = proxy.round_trips();
    op();
    proxy.round_trips() - before
}

#[test]
fn a_create_under_a_trusted_creator_costs_at_most_four_round_trips() -> TestResult {
    let Some((_place, proxy, ledger)) = counted() else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    ledger.grant("conductor", PostureLevel::Trust, "op")?;
    ledger.create_child("warm-up", "conductor", "op")?;
    let n = cost(&proxy, || {
        let created = ledger
            .create_child("worker", "conductor", "op")
            .expect("create");
        assert!(created.inherited_trust);
    });
    println!("create_child: {n} round trips");
    assert!(
        n <= 4,
        "a create cost {n} round trips, over its budget of 4"
    );
    Ok(())
}

#[test]
fn a_decide_that_asks_costs_one_round_trip() -> TestResult {
    let Some((_place, proxy, ledger)) = counted() else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    ledger.add_pattern("conductor", "make test", "op")?;
    ledger.decide("conductor", "make deploy", false)?;
    let n = cost(&proxy, || {
        let decision = ledger
            .decide("conductor", "make deploy", false)
            .expect("decide");
        assert_eq!(decision.verdict, Verdict::Ask);
    });
    println!("decide (asks): {n} round trips");
    assert_eq!(n, 1, "a decide that asks cost {n} round trips");
    Ok(())
}

#[test]
fn a_state_of_a_stored_label_costs_one_round_trip() -> TestResult {
    let Some((_place, proxy, ledger)) = counted() else {
        return Ok(());
    };
    ledger.create_root("conductor", "op")?;
    ledger.state("conductor")?;
    let n = cost(&proxy, || {
        assert!(ledger.state("conductor").expect("state").known);
    });
    println!("state (stored): {n} round trips");
    assert_eq!(n, 1, "a state of a stored label cost {n} round trips");
    Ok(())
}
