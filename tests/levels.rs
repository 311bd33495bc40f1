//! The tree one level at a time (`Ledger::tree_level`): a view that opens the dispatch tree
//! level by level reads a page of the roots, or of one session's children, each with its label
//! and posture, and writes nothing.

#[macro_use]
mod common;

use common::{posture_source, Engine, Fixture, TestResult};
use session_ledger::{
    Conflict, Error, InputError, PostureLevel, Propagation, Raise, Taint, TreeLevel,
};

/// Each node of a page as `id taint untrusted materialized trust trust_reads source children`.
fn shown(level: &TreeLevel) -> Vec<String> {
    level
        .nodes
        .iter()
        .map(|n| {
            let source = posture_source(n.posture.as_ref());
            format!(
                "{} {} {} {} {} {} {} {}",
                n.session.id,
                n.taint.as_str(),
                n.untrusted,
                n.materialized,
                n.trust,
                n.trust_reads,
                source,
                if n.has_children { "children" } else { "leaf" }
            )
        })
        .collect()
}

/// The ids of a page.
fn ids(level: &TreeLevel) -> Vec<&str> {
    level.nodes.iter().map(|n| n.session.id.as_str()).collect()
}

fn the_roots_come_a_page_at_a_time_oldest_first_with_where_the_next_page_starts(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("r1 > a; r2 > b; r3 > c; r4 > d; r5 > e");
    let first = f.ledger.tree_level(None, None, 2)?;
    assert_eq!(ids(&first), ["r1", "r2"]);
    assert_eq!(first.parent, None);
    assert_eq!(first.next.as_deref(), Some("r2"));
    let second = f.ledger.tree_level(None, first.next.as_deref(), 2)?;
    assert_eq!(ids(&second), ["r3", "r4"]);
    let last = f.ledger.tree_level(None, second.next.as_deref(), 2)?;
    assert_eq!(ids(&last), ["r5"]);
    assert_eq!(last.next, None);
    let whole = f.ledger.tree_level(None, None, 5)?;
    assert_eq!(whole.nodes.len(), 5);
    assert_eq!(whole.next, None, "a page that ends the level says so");
    Ok(())
}

fn sessions_recorded_in_the_same_millisecond_page_in_the_order_recorded(
    engine: Engine,
) -> TestResult {
    // A clock that never moves: every session has the same `created_at`.
    let clock = std::sync::Arc::new(session_ledger::ManualClock::new(
        "2026-03-01T12:00:00Z".parse()?,
    ));
    let f = fixture!(
        engine,
        session_ledger::Config::default()
            .create_if_missing(true)
            .clock(clock)
    );
    f.build("r1 > a1 a2 a3 a4 a5; r2 > b; r3 > c");
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = f.ledger.tree_level(Some("r1"), after.as_deref(), 2)?;
        seen.extend(ids(&page).into_iter().map(str::to_owned));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["a1", "a2", "a3", "a4", "a5"]);
    let first = f.ledger.tree_level(None, None, 1)?;
    let rest = f.ledger.tree_level(None, first.next.as_deref(), 5)?;
    assert_eq!((ids(&first), ids(&rest)), (vec!["r1"], vec!["r2", "r3"]));
    Ok(())
}

fn a_level_shows_each_childs_label_stored_or_as_its_first_read_would_give_it_and_writes_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w1 w2 w3; w1 > w1a");
    f.ledger.raise(
        "c",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        },
        "op",
    )?;
    f.ledger.raise(
        "w2",
        Raise {
            taint: None,
            untrusted: true,
        },
        "op",
    )?;
    f.ledger.grant("w3", PostureLevel::TrustReads, "op")?;
    f.ledger.state("sub-w3-1")?;
    let head = f.ledger.audit_head()?;
    let level = f.ledger.tree_level(Some("c"), None, 10)?;
    assert_eq!(level.parent.as_deref(), Some("c"));
    assert_eq!(
        shown(&level),
        [
            "w1 secret false false true false inherited children",
            "w2 secret true true true false inherited leaf",
            // Materialized by its sub-agent's first read, which wrote the path down to it.
            "w3 secret false true false true granted children",
        ]
    );
    // One level further down, below a parent that is not materialized either.
    let below = f.ledger.tree_level(Some("w1"), None, 10)?;
    assert_eq!(
        shown(&below),
        ["w1a secret false false true false inherited leaf"]
    );
    let spawned = f.ledger.tree_level(Some("w3"), None, 10)?;
    assert_eq!(
        shown(&spawned),
        ["sub-w3-1 secret false true false true inherited leaf"]
    );
    assert_eq!(
        f.ledger.audit_head()?,
        head,
        "reading a level wrote nothing"
    );
    assert!(f.ledger.stored_label("w1")?.is_none());
    Ok(())
}

fn a_level_shows_ended_sessions_and_revoked_postures_as_they_stand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w1 w2 w3");
    f.ledger.end("w1", "op")?;
    f.ledger.revoke("w2", Propagation::Local, "op")?;
    f.ledger.start_epoch("op")?;
    let level = f.ledger.tree_level(Some("c"), None, 10)?;
    assert_eq!(
        shown(&level),
        [
            "w1 private false false false false lapsed leaf",
            "w2 private false false false false - leaf",
            "w3 private false false false false lapsed leaf",
        ]
    );
    assert!(
        level.nodes[0].session.ended_at.is_some(),
        "an ended session stays in its level"
    );
    assert!(level.nodes[2].session.ended_at.is_none());
    Ok(())
}

fn a_page_after_a_session_of_another_level_is_empty(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("c > w1 w2; d > x");
    assert!(f
        .ledger
        .tree_level(Some("c"), Some("x"), 10)?
        .nodes
        .is_empty());
    assert!(f.ledger.tree_level(None, Some("w1"), 10)?.nodes.is_empty());
    assert!(f
        .ledger
        .tree_level(Some("c"), Some("nobody"), 10)?
        .nodes
        .is_empty());
    assert_eq!(
        ids(&f.ledger.tree_level(Some("c"), Some("w1"), 10)?),
        ["w2"]
    );
    Ok(())
}

fn a_level_of_an_unknown_or_malformed_parent_is_refused(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("c > w");
    assert!(matches!(
        f.ledger.tree_level(Some("nobody"), None, 10),
        Err(Error::Conflict(Conflict::UnknownSession(id))) if id == "nobody"
    ));
    assert!(matches!(
        f.ledger.tree_level(Some("bad id"), None, 10),
        Err(Error::Input(InputError::InvalidId { .. }))
    ));
    assert!(matches!(
        f.ledger.tree_level(Some("c"), Some("bad id"), 10),
        Err(Error::Input(InputError::InvalidId { .. }))
    ));
    Ok(())
}

#[test]
fn a_level_reads_the_same_as_the_tree_view_of_its_parent() -> TestResult {
    let f = Fixture::new();
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w1 w2; w1 > x; w2 > y");
    f.ledger.raise(
        "w2",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: true,
        },
        "op",
    )?;
    let tree = f.ledger.tree("c")?;
    for parent in ["c", "w1", "w2"] {
        let level = f.ledger.tree_level(Some(parent), None, 10)?;
        for node in &level.nodes {
            let drawn = tree
                .iter()
                .find(|n| n.session.id == node.session.id)
                .expect("in the tree");
            assert_eq!(
                (node.taint, node.untrusted, node.materialized, node.trust),
                (
                    drawn.taint,
                    drawn.untrusted,
                    drawn.materialized,
                    drawn.trust
                ),
                "{}",
                node.session.id
            );
            assert_eq!(node.posture, drawn.posture);
        }
    }
    Ok(())
}

engine_tests! {
    sessions_recorded_in_the_same_millisecond_page_in_the_order_recorded,
    the_roots_come_a_page_at_a_time_oldest_first_with_where_the_next_page_starts,
    a_level_shows_each_childs_label_stored_or_as_its_first_read_would_give_it_and_writes_nothing,
    a_level_shows_ended_sessions_and_revoked_postures_as_they_stand,
    a_page_after_a_session_of_another_level_is_empty,
    a_level_of_an_unknown_or_malformed_parent_is_refused,
}
