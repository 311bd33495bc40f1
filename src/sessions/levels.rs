//! The dispatch tree one level at a time, for a view that opens it level by level: a page of
//! the roots, or of one session's children, each with its label and posture, costing what the
//! page shows.

use serde::Serialize;

use chrono::{DateTime, Utc};

use super::{grant_marks, require};
use crate::error::{Corruption, Result};
use crate::model::{Id, Posture, PostureLevel, Session, Taint};
use crate::storage::{LevelPage, Read};

/// One page of one level of the dispatch tree ([`Ledger::tree_level`](crate::Ledger::tree_level)):
/// the roots, or one session's children, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeLevel {
    /// Whose children these are; `None` for the roots.
    pub parent: Option<String>,
    /// The page's sessions.
    pub nodes: Vec<LevelNode>,
    /// The last session of this page when the level goes on after it: pass it as `after` for
    /// the next page. `None` on the level's last page.
    pub next: Option<String>,
}

/// A session in a [`TreeLevel`]: as a [`TreeNode`](crate::TreeNode) shows it, and whether it has children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelNode {
    /// The session.
    #[serde(flatten)]
    pub session: Session,
    /// Its taint: the stored one when it is materialized, otherwise the one its first read
    /// would give it (rule L2). Reading a level writes nothing.
    pub taint: Taint,
    /// Its untrusted flag, as for `taint`.
    pub untrusted: bool,
    /// Whether its label is stored.
    pub materialized: bool,
    /// Its posture admits every command now.
    pub trust: bool,
    /// Its posture admits read-only commands now.
    pub trust_reads: bool,
    /// Its posture row, current or not (`current` says which), with its source.
    pub posture: Option<Posture>,
    /// How many override scopes of its approve every command now (0 for an ended session).
    pub live_scopes: u32,
    /// How many command patterns of its approve the lines they admit (0 for an ended session).
    pub patterns: u32,
    /// Whether it created or spawned a session the ledger has recorded.
    pub has_children: bool,
}

/// One page of one level: the roots, or the children of `parent`, after the session `after`
/// of that level, at most `limit` of them. Reads the page (and one row more, to know whether
/// the level goes on), and for a parent that is not materialized, the walk up to its nearest
/// materialized ancestor, whose label its unmaterialized children show; and each session's
/// grants that approve at `now`. Writes nothing. Run it
/// inside one read transaction.
pub(crate) fn level(
    r: &mut dyn Read,
    parent: Option<Id<'_>>,
    after: Option<Id<'_>>,
    limit: u32,
    now: DateTime<Utc>,
) -> Result<TreeLevel> {
    let shown = match parent {
        Some(parent) => {
            require(r, parent)?;
            r.nearest_label(parent)?.map(|(_, label)| label)
        }
        None => None,
    };
    let page = LevelPage {
        parent,
        after,
        limit: limit.saturating_add(1),
        now,
    };
    let mut rows = r.level(page)?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let mut nodes = Vec::with_capacity(rows.len());
    for level_row in rows {
        let row = level_row.row;
        let materialized = row.label.is_some();
        let label = row.label.or(shown).ok_or_else(|| {
            Corruption::new(format!("{:?} has no materialized ancestor", row.session.id))
        })?;
        let live = row.session.is_live();
        let counts = |level| Posture::admits(row.posture.as_ref(), live, level);
        let (live_scopes, patterns) = grant_marks(&row);
        nodes.push(LevelNode {
            live_scopes,
            patterns,
            trust: counts(PostureLevel::Trust),
            trust_reads: counts(PostureLevel::TrustReads),
            taint: label.taint,
            untrusted: label.untrusted,
            materialized,
            posture: row.posture,
            has_children: level_row.has_children,
            session: row.session,
        });
    }
    let next = if more {
        nodes.last().map(|n| n.session.id.clone())
    } else {
        None
    };
    Ok(TreeLevel {
        parent: parent.map(|p| p.as_str().to_owned()),
        nodes,
        next,
    })
}
