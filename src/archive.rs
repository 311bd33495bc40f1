//! Archiving (rule K1): what is over moves out of the live ledger into a file of its own, and
//! nothing is lost on the way.
//!
//! What goes: the trees whose every session has ended (by age, before a cut-off, or one tree
//! named by its root), with their labels, postures, patterns and scopes; and the trail's oldest
//! rows, up to the size of the newest checkpoint signed before the cut-off (the archive's
//! boundary), with the checkpoints they record, the decision log's batches they name and those
//! batches' records, and the stored nodes of the audit tree that no proof past the boundary
//! needs. The trail leaves as a prefix, whatever sessions its rows are about: the chain and the
//! tree go on from the boundary, where `verify` now starts (the anchor is the archive row).
//!
//! In which order, so that a crash at any point loses nothing:
//! 1. The file is written from one snapshot of the live ledger under a name of its own beside
//!    the destination, synced, and verified on its own (its chain from the previous boundary to
//!    this one, its tree against the checkpoint's root, its decision batches, integrity and
//!    references); only then does it take its name.
//! 2. One short write transaction records the archive (its row, which the database checks
//!    against the checkpoint and the chain, and its `archive.make` audit row). Before it commits
//!    everything is live; once it has, the archive is made.
//! 3. The rows leave (`removal.rs`) in batches, each a short write transaction followed by a
//!    pause, paced for how the engine hands its lock on, so that a writer beside them never
//!    waits long (`batches.rs`): the decision records of the trail's batches, then its audit
//!    rows, a range at a time, then the tree's nodes, then the trees a few at a time, each
//!    tree whole (every session of it gets its `archived_sessions` row in the transaction that
//!    removes it, after its rows there were compared with the file's). A run stopped between
//!    two batches is finished by the next run, which starts by finishing the last archive.
//!
//! A tree whose rows changed after the file was written (a session spawned under it since)
//! stays live and is said so; its copy in the file is then no record of it.

mod batches;
mod removal;
mod verify;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use batches::Batches;
use removal::{finish_last, remove};
pub(crate) use verify::verify_file;
pub use verify::ArchiveVerification;

use crate::audit;
use crate::error::{Conflict, Result};
use crate::files::{discard, partial_beside, publish, sha256_of, sync_file};
use crate::model::{AuditKind, Id};
use crate::storage::{
    create_archive_file, ArchiveFile, ArchiveHeader, ArchiveRow, Part, Read, Row, Storage, Table,
    Write,
};

/// How many trees' rows are read and written to the file at a time: bounded memory.
const TREES_PER_CHUNK: usize = 500;

/// What to archive ([`Ledger::archive`](crate::Ledger::archive)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveRequest {
    /// Take the trees that began and whose every session ended before this time, and the
    /// trail's rows up to the newest checkpoint signed before it.
    pub before: Option<DateTime<Utc>>,
    /// Take this tree, by its root, once every session of it has ended (and, with `before`,
    /// ended before it); the trail is then cut only with `before`.
    pub tree: Option<String>,
}

impl ArchiveRequest {
    /// The trees that ended before `before`, and the trail up to the newest checkpoint signed
    /// before it.
    pub fn before(before: DateTime<Utc>) -> ArchiveRequest {
        ArchiveRequest {
            before: Some(before),
            tree: None,
        }
    }

    /// The one tree whose root is `root`.
    pub fn tree(root: &str) -> ArchiveRequest {
        ArchiveRequest {
            before: None,
            tree: Some(root.to_owned()),
        }
    }
}

/// Where an archived session went ([`Ledger::archived`](crate::Ledger::archived)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArchivedSession {
    /// The session.
    pub id: String,
    /// The root of its tree.
    pub tree: String,
    /// The archive's number.
    pub archive: i64,
    /// The archive's file, by its absolute path when it was written.
    pub file: String,
    /// When the archive was made.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub archived_at: DateTime<Utc>,
}

/// What one run of [`Ledger::archive`](crate::Ledger::archive) did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArchiveRun {
    /// The archives made before whose removal from the live ledger a run had stopped, and this
    /// one finished.
    pub finished: Vec<i64>,
    /// The archive made, or `None` when there was nothing to take.
    pub made: Option<Archived>,
    /// The longest any of the run's write transactions held the write lock, in microseconds
    /// (from the lock taken to the commit): about the most a writer beside it waited for it at
    /// a time, which the run keeps near 8 ms by fitting its batches' sizes.
    pub longest_batch_us: u64,
}

/// One archive made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Archived {
    /// Its number in this ledger.
    pub archive: i64,
    /// The file.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes, as the ledger records it.
    pub sha256: String,
    /// The boundary it starts after: it holds the trail's rows `trail_from + 1` on.
    pub trail_from: u64,
    /// The boundary it ends at, its last row.
    pub trail_size: u64,
    /// How many trees it holds.
    pub trees: u64,
    /// How many sessions it holds.
    pub sessions: u64,
    /// How many decision records it holds.
    pub decision_records: u64,
    /// Trees written to the file that changed in the live ledger before they could leave
    /// (a session spawned under one since): they stay live.
    pub stayed_live: Vec<String>,
}

/// Finishes the last archive, then makes one of `request` into the new file `to`.
pub(crate) fn archive(
    storage: &Storage,
    to: &Path,
    request: &ArchiveRequest,
    actor: &str,
    now: &dyn Fn(&mut dyn Read) -> Result<DateTime<Utc>>,
) -> Result<ArchiveRun> {
    if request.before.is_none() && request.tree.is_none() {
        return Err(Conflict::NotArchivable(
            "an archive takes trees that ended before a time, or one tree: give either".to_owned(),
        )
        .into());
    }
    let root = request.tree.as_deref().map(Id::parse).transpose()?;
    let partial = partial_beside(to, "an archive is written to a new file only")?;
    let mut batches = Batches::new(storage);
    let finished = finish_last(&mut batches)?;
    let Some(plan) = storage.snapshot(|r| plan(r, request, root))? else {
        return Ok(ArchiveRun {
            finished,
            made: None,
            longest_batch_us: batches.longest_us(),
        });
    };
    let (header, decision_records) = match write_file(storage, &partial, &plan, request, actor, now)
    {
        Ok(written) => written,
        Err(e) => {
            discard(&partial);
            return Err(e);
        }
    };
    if let Err(e) = verify::check_written(&partial, &header, &plan.expected) {
        discard(&partial);
        return Err(e);
    }
    publish(&partial, to, "an archive is written to a new file only")?;
    // Recorded by its absolute path: a later run, and `verify --archive` against the live
    // ledger, find it from wherever they run.
    let to = &std::fs::canonicalize(to)?;
    let sha256 = sha256_of(to)?;
    let row = ArchiveRow {
        archive: header.archive,
        file: to.display().to_string(),
        sha256: sha256.clone(),
        trail_size: plan.to,
        trail_hash: plan.expected.trail_hash.clone(),
        log_size: plan.log_size,
        trees: header.trees,
        sessions: header.sessions,
        made_at: header.made_at,
        made_by: actor.to_owned(),
    };
    batches.run(|tx| record(tx, &row, now))?;
    let stayed_live = remove(&mut batches, &row, to)?;
    Ok(ArchiveRun {
        finished,
        made: Some(Archived {
            archive: row.archive,
            file: to.to_path_buf(),
            sha256,
            trail_from: plan.from,
            trail_size: plan.to,
            trees: header.trees,
            sessions: header.sessions,
            decision_records,
            stayed_live,
        }),
        longest_batch_us: batches.longest_us(),
    })
}

/// What an archive takes, decided in one snapshot.
pub(crate) struct Plan {
    /// Its number.
    archive: i64,
    /// The boundaries it goes from and to.
    from: u64,
    to: u64,
    /// The checkpoint of size `to`, as its note.
    checkpoint: Option<String>,
    /// The decision log's last position in the batches up to `to`.
    log_size: u64,
    /// The roots of the trees it takes, oldest first.
    roots: Vec<String>,
    /// What the file must hold, to check it against once written.
    expected: verify::Expected,
}

/// Decides what `request` takes, or `None` when it takes nothing.
fn plan(r: &mut dyn Read, request: &ArchiveRequest, root: Option<Id<'_>>) -> Result<Option<Plan>> {
    let last = r.last_archive()?;
    let from = last.as_ref().map_or(0, |a| a.trail_size);
    let from_hash = last.as_ref().map_or_else(
        || crate::model::GENESIS_HASH.to_owned(),
        |a| a.trail_hash.clone(),
    );
    // The boundary: the newest checkpoint signed before the cut-off, past the last boundary.
    let mut to = from;
    let mut checkpoint = None;
    let mut after = 0;
    loop {
        let page = r.checkpoints(after, 1_000)?;
        let Some(last_seen) = page.last() else { break };
        after = last_seen.seq;
        for c in page {
            if c.tree_size == from && checkpoint.is_none() {
                checkpoint = Some(c.note.clone());
            }
            if request.before.is_some_and(|before| c.signed_at < before) && c.tree_size > to {
                to = c.tree_size;
                checkpoint = Some(c.note.clone());
            }
        }
    }
    let mut roots = Vec::new();
    match (root, request.before) {
        (Some(root), before) => {
            let Some(session) = r.session(root)? else {
                return Err(Conflict::UnknownSession(root.as_str().to_owned()).into());
            };
            if session.created_by.is_some() {
                return Err(Conflict::NotArchivable(format!(
                    "{:?} is no root: an archive takes whole trees, named by their root",
                    root.as_str()
                ))
                .into());
            }
            let subtree = r.subtree(root)?;
            if let Some(open) = subtree.iter().find(|s| {
                s.ended_at
                    .is_none_or(|ended| before.is_some_and(|before| ended >= before))
            }) {
                return Err(Conflict::NotArchivable(format!(
                    "the tree of {:?} has a session that {}: {:?}",
                    root.as_str(),
                    if open.ended_at.is_none() {
                        "is still running"
                    } else {
                        "ended after the cut-off"
                    },
                    open.id
                ))
                .into());
            }
            roots.push(root.as_str().to_owned());
        }
        (None, Some(before)) => {
            let mut candidates = Vec::new();
            r.roots_ended_before(before, &mut |_, id| {
                candidates.push(id);
                Ok(())
            })?;
            for id in candidates {
                let subtree = r.subtree(Id::parse(&id)?)?;
                if subtree
                    .iter()
                    .all(|s| s.ended_at.is_some_and(|ended| ended < before))
                {
                    roots.push(id);
                }
            }
        }
        (None, None) => {}
    }
    if roots.is_empty() && to == from {
        return Ok(None);
    }
    let trail_hash = if to == from {
        from_hash.clone()
    } else {
        let row = audit::tree::rows(r, to as i64, to as i64 + 1)?;
        row.first().map(|row| row.hash.clone()).ok_or_else(|| {
            crate::error::Corruption::new(format!("audit row {to}, a checkpoint's last, is gone"))
        })?
    };
    let archive = last.map_or(1, |a| a.archive + 1);
    let log_size = r.log_size_at(to)?;
    Ok(Some(Plan {
        archive,
        from,
        to,
        log_size,
        checkpoint: if to == 0 { None } else { checkpoint },
        roots,
        expected: verify::Expected {
            from_hash,
            trail_hash,
        },
    }))
}

/// Writes the file of `plan` from one snapshot of the live ledger; returns its header and how
/// many decision records it holds.
fn write_file(
    storage: &Storage,
    path: &Path,
    plan: &Plan,
    request: &ArchiveRequest,
    actor: &str,
    now: &dyn Fn(&mut dyn Read) -> Result<DateTime<Utc>>,
) -> Result<(ArchiveHeader, u64)> {
    let mut file = create_archive_file(path)?;
    let (header, records) = storage.snapshot(|r| {
        let previous = r.archives()?;
        file.append_previous(&previous)?;
        copy_part(r, &mut *file, Table::Epochs, Part::Whole)?;
        let trail = Part::Trail {
            after: plan.from,
            upto: plan.to,
        };
        for table in [Table::Audit, Table::Checkpoints, Table::Decisions] {
            copy_part(r, &mut *file, table, trail)?;
        }
        let records = copy_part(r, &mut *file, Table::DecisionLog, trail)?;
        file.append_nodes(&r.archive_nodes(plan.from, plan.to)?)?;
        let mut sessions = 0;
        for roots in plan.roots.chunks(TREES_PER_CHUNK) {
            let trees = Part::Trees(roots);
            sessions += copy_part(r, &mut *file, Table::Sessions, trees)?;
            for table in [
                Table::Labels,
                Table::Postures,
                Table::CommandPatterns,
                Table::OverrideScopes,
            ] {
                copy_part(r, &mut *file, table, trees)?;
            }
        }
        let header = ArchiveHeader {
            archive: plan.archive,
            trail_from: plan.from,
            trail_size: plan.to,
            checkpoint: plan.checkpoint.clone(),
            before: request.before,
            tree: request.tree.clone(),
            trees: plan.roots.len() as u64,
            sessions,
            made_at: now(r)?,
            made_by: actor.to_owned(),
            ledger: storage.location().to_string(),
        };
        Ok((header, records))
    })?;
    file.finish(&header)?;
    sync_file(path)?;
    Ok((header, records))
}

/// Copies `table`'s rows of `part` into the file, a thousand at a time; returns how many.
fn copy_part(
    r: &mut dyn Read,
    file: &mut dyn ArchiveFile,
    table: Table,
    part: Part<'_>,
) -> Result<u64> {
    const AT_A_TIME: usize = 1_000;
    let mut batch: Vec<Row> = Vec::with_capacity(AT_A_TIME);
    let mut count = 0;
    r.part_rows(table, part, &mut |row| {
        batch.push(row);
        count += 1;
        if batch.len() == AT_A_TIME {
            file.append(table, &batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    file.append(table, &batch)?;
    Ok(count)
}

/// Records the archive `row` and its audit row, in the transaction `tx`.
fn record(
    tx: &mut dyn Write,
    row: &ArchiveRow,
    now: &dyn Fn(&mut dyn Read) -> Result<DateTime<Utc>>,
) -> Result<()> {
    let at = now(tx.read())?;
    tx.append_archive(&ArchiveRow {
        made_at: at,
        ..row.clone()
    })?;
    let detail = json!({
        "archive": row.archive,
        "file": row.file,
        "sha256": row.sha256,
        "trail_size": row.trail_size,
        "trees": row.trees,
        "sessions": row.sessions,
    });
    audit::append(tx, at, &row.made_by, AuditKind::ArchiveMake, None, &detail)?;
    Ok(())
}
