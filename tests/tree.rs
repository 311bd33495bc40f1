//! The tree view: one call that gives a dashboard the subtree with each session's label,
//! materialized flag and posture, read as one snapshot and without writing.

#[macro_use]
mod common;

use common::cli::ok_unchanged;
use common::{posture_source, Engine, Fixture, TestResult};
use session_ledger::{Conflict, Error, InputError, PostureLevel, Propagation, Raise, Taint};

/// Each node as `id depth taint untrusted materialized trust trust_reads source`.
fn view(f: &Fixture, id: &str) -> Result<Vec<String>, Error> {
    Ok(f.ledger
        .tree(id)?
        .into_iter()
        .map(|n| {
            let source = posture_source(n.posture.as_ref());
            format!(
                "{} {} {} {} {} {} {} {}",
                n.session.id,
                n.relative_depth,
                n.taint.as_str(),
                n.untrusted,
                n.materialized,
                n.trust,
                n.trust_reads,
                source
            )
        })
        .collect())
}

fn a_tree_shows_each_sessions_label_and_posture_in_depth_first_order(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w1 w2; w1 > w1a");
    f.ledger.grant("w2", PostureLevel::TrustReads, "op")?;
    f.ledger.raise(
        "w1",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: true,
        },
        "op",
    )?;
    f.ledger.state("sub-w2-1")?;
    assert_eq!(
        view(&f, "c")?,
        [
            "c 0 private false true true false granted",
            "w1 1 secret true true true false inherited",
            "w1a 2 secret true false true false inherited",
            "w2 1 private false true false true granted",
            "sub-w2-1 2 private false true false true inherited",
        ]
    );
    Ok(())
}

fn a_tree_of_an_unmaterialized_session_shows_what_its_first_read_would_give_and_writes_nothing(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("c > w; w > x");
    f.ledger.raise(
        "c",
        Raise {
            taint: Some(Taint::Secret),
            untrusted: false,
        },
        "op",
    )?;
    let before = f.snapshot();
    assert_eq!(
        view(&f, "w")?,
        [
            "w 0 secret false false false false -",
            "x 1 secret false false false false -"
        ]
    );
    assert_eq!(f.snapshot(), before, "reading the tree wrote something");
    // What the tree showed is what the first read then records.
    assert_eq!(f.ledger.state("x")?.taint, Taint::Secret);
    Ok(())
}

fn a_tree_after_a_cascade_shows_no_posture_below_the_revoked_session(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w; w > x");
    f.ledger.revoke("w", Propagation::CascadeUnchecked, "op")?;
    let trusted: Vec<_> = f
        .ledger
        .tree("c")?
        .into_iter()
        .filter(|n| n.trust)
        .map(|n| n.session.id)
        .collect();
    assert_eq!(trusted, ["c"]);
    Ok(())
}

fn an_ended_sessions_posture_is_shown_but_does_not_count(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::Trust, "op")?;
    f.build("c > w");
    f.ledger.end("w", "op")?;
    let w = f.ledger.tree("w")?.remove(0);
    assert!(w.posture.is_some_and(|p| p.current));
    assert!(!w.trust);
    Ok(())
}

fn a_tree_of_an_unknown_session_is_refused(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    assert!(matches!(
        f.ledger.tree("nobody"),
        Err(Error::Conflict(Conflict::UnknownSession(id))) if id == "nobody"
    ));
    assert!(matches!(
        f.ledger.tree("bad id"),
        Err(Error::Input(InputError::InvalidId { .. }))
    ));
    Ok(())
}

#[test]
fn cli_tree_json_carries_the_same_trust_fields_as_state_json() -> TestResult {
    let f = Fixture::new();
    f.ledger.create_root("c", "op")?;
    f.ledger.grant("c", PostureLevel::TrustReads, "op")?;
    f.build("c > w");
    let path = f.path();
    drop(f.ledger);
    let tree: serde_json::Value =
        serde_json::from_str(&ok_unchanged(&path, &["--json", "tree", "c"])?)?;
    let nodes = tree.as_array().expect("a list of nodes");
    assert_eq!(nodes.len(), 2);
    for node in nodes {
        let id = node["id"].as_str().expect("id");
        assert_eq!(node["trust"], false, "{id}");
        assert_eq!(node["trust_reads"], true, "{id}");
        assert_eq!(node["taint"], "private", "{id}");
    }
    assert_eq!(nodes[1]["id"], "w");
    assert_eq!(nodes[1]["materialized"], false);
    assert_eq!(nodes[1]["posture"]["source"], "inherited");
    Ok(())
}

engine_tests! {
    a_tree_shows_each_sessions_label_and_posture_in_depth_first_order,
    a_tree_after_a_cascade_shows_no_posture_below_the_revoked_session,
    an_ended_sessions_posture_is_shown_but_does_not_count,
    a_tree_of_an_unknown_session_is_refused,
    a_tree_of_an_unmaterialized_session_shows_what_its_first_read_would_give_and_writes_nothing,
}
