//! The tree one level at a time (`Ledger.tree_level`): a page of the roots or of one session's
//! children, for a view that opens the dispatch tree level by level.

use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use session_ledger as sl;

use crate::repr::{field_repr, repr_fields};
use crate::values::Posture;

/// A session in a page of one level: its lineage, its label (stored, or what its first read
/// would give it: `materialized` says which), its posture, how many live scopes and command
/// patterns it holds, and whether it has children.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LevelNode {
    id: String,
    created_by: Option<String>,
    depth: u32,
    origin: &'static str,
    created_at: DateTime<Utc>,
    ended_at: Option<DateTime<Utc>>,
    live: bool,
    taint: &'static str,
    untrusted: bool,
    materialized: bool,
    trust: bool,
    trust_reads: bool,
    posture: Option<Posture>,
    live_scopes: u32,
    patterns: u32,
    has_children: bool,
}
field_repr!(
    LevelNode,
    [
        "id",
        "created_by",
        "depth",
        "origin",
        "created_at",
        "ended_at",
        "live",
        "taint",
        "untrusted",
        "materialized",
        "trust",
        "trust_reads",
        "posture",
        "live_scopes",
        "patterns",
        "has_children",
    ]
);

impl From<sl::LevelNode> for LevelNode {
    fn from(n: sl::LevelNode) -> LevelNode {
        LevelNode {
            live: n.session.is_live(),
            origin: n.session.origin.as_str(),
            id: n.session.id,
            created_by: n.session.created_by,
            depth: n.session.depth,
            created_at: n.session.created_at,
            ended_at: n.session.ended_at,
            taint: n.taint.as_str(),
            untrusted: n.untrusted,
            materialized: n.materialized,
            trust: n.trust,
            trust_reads: n.trust_reads,
            posture: n.posture.map(Posture::from),
            live_scopes: n.live_scopes,
            patterns: n.patterns,
            has_children: n.has_children,
        }
    }
}

/// One page of one level: whose children (`None` for the roots), the page's sessions, and
/// `next`, the id to pass as `after` for the next page (`None` on the last).
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TreeLevel {
    parent: Option<String>,
    nodes: Vec<LevelNode>,
    next: Option<String>,
}
field_repr!(TreeLevel, ["parent", "nodes", "next"]);

impl From<sl::TreeLevel> for TreeLevel {
    fn from(l: sl::TreeLevel) -> TreeLevel {
        TreeLevel {
            parent: l.parent,
            nodes: l.nodes.into_iter().map(LevelNode::from).collect(),
            next: l.next,
        }
    }
}
