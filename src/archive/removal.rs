//! Moving an archive's rows out of the live ledger, once the archive is recorded: the trail's
//! prefix, then the trees, each whole and only as the file holds it (step 3 of the module
//! comment of `archive.rs`).

use std::path::Path;

use super::batches::{Batches, Kind};
use crate::config::Config;
use crate::error::{Conflict, Result};
use crate::storage::{ArchiveRow, Part, Read, Row, Table};

/// Moves out of the live ledger what the archive `row`, written to `file`, holds, in batches;
/// returns the trees that stayed live because they changed.
pub(super) fn remove(
    batches: &mut Batches<'_>,
    row: &ArchiveRow,
    file: &Path,
) -> Result<Vec<String>> {
    remove_trail(batches, row.trail_size)?;
    let storage = batches.storage;
    if row.trees == 0 || storage.read(|r| r.archived_count(row.archive))? >= row.sessions {
        return Ok(Vec::new());
    }
    let archived = crate::storage::Storage::open(file, &Config::default().read_only(true))
        .map_err(|e| {
            Conflict::Archived(format!(
                "archive {}'s file {} is needed to finish moving its trees out of the live \
                 ledger (a run stopped half way), and cannot be opened: {e}; put it back there",
                row.archive,
                file.display()
            ))
        })?;
    let roots = archived.read(|r| {
        let mut roots = Vec::new();
        r.part_rows(Table::Sessions, Part::Whole, &mut |row| {
            if let (Some(crate::storage::Value::Text(id)), Some(crate::storage::Value::Null)) =
                (row.get(1), row.get(2))
            {
                roots.push(id.clone());
            }
            Ok(())
        })?;
        Ok(roots)
    })?;
    let mut stayed = Vec::new();
    let mut left = roots.as_slice();
    while !left.is_empty() {
        let n =
            usize::try_from(batches.size(Kind::Trees)).map_or(left.len(), |n| n.min(left.len()));
        let (batch, rest) = left.split_at(n);
        left = rest;
        let wanted = archived.read(|r| batch_rows(r, batch))?;
        stayed.extend(batches.run_sized(Kind::Trees, |tx| {
            // The common case in one comparison: every tree of the batch as the file has it.
            if batch_rows(tx.read(), batch)? == wanted {
                tx.remove_trees(row.archive, batch)?;
                return Ok(Vec::new());
            }
            // Else tree by tree: one gone already (a run before this one moved it), or one
            // changed since the file was written.
            let theirs = archived.read(|r| tree_rows(r, batch))?;
            let ours = tree_rows(tx.read(), batch)?;
            let mut moving = Vec::new();
            let mut staying = Vec::new();
            for ((root, theirs), (_, ours)) in theirs.iter().zip(&ours) {
                if ours.is_empty() {
                    continue;
                }
                if theirs == ours {
                    moving.push(root.clone());
                } else {
                    staying.push(root.clone());
                }
            }
            tx.remove_trees(row.archive, &moving)?;
            Ok(staying)
        })?);
    }
    Ok(stayed)
}

/// A tree's root, and every row of the tree with its table.
type TreeRows = (String, Vec<(Table, Row)>);

/// The tables a tree's rows are in.
const TREE_TABLES: [Table; 5] = [
    Table::Sessions,
    Table::Labels,
    Table::Postures,
    Table::CommandPatterns,
    Table::OverrideScopes,
];

/// Every row of the trees of `roots` together, each table's rows in one order whatever order
/// the engine read them in (their debug forms, sorted): equal here and in the file exactly
/// when each tree's rows are.
fn batch_rows(r: &mut dyn Read, roots: &[String]) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::with_capacity(TREE_TABLES.len());
    for table in TREE_TABLES {
        let mut rows = Vec::new();
        r.part_rows(table, Part::Trees(roots), &mut |row| {
            rows.push(format!("{row:?}"));
            Ok(())
        })?;
        rows.sort_unstable();
        out.push(rows);
    }
    Ok(out)
}

/// Every row of each tree of `roots`, by root: what must be the same here and in the file.
fn tree_rows(r: &mut dyn Read, roots: &[String]) -> Result<Vec<TreeRows>> {
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let mut rows = Vec::new();
        for table in TREE_TABLES {
            r.part_rows(table, Part::Trees(std::slice::from_ref(root)), &mut |row| {
                rows.push((table, row));
                Ok(())
            })?;
        }
        out.push((root.clone(), rows));
    }
    Ok(out)
}

/// Removes the trail's rows up to `boundary`: the decision records of its batches first (a
/// day's batch can hold tens of thousands), then its audit rows with their checkpoints, then
/// the tree's nodes behind its frontier, each a batch at a time.
fn remove_trail(batches: &mut Batches<'_>, boundary: u64) -> Result<()> {
    loop {
        let n = u32::try_from(batches.size(Kind::Records)).unwrap_or(u32::MAX);
        if batches.run_sized(Kind::Records, |tx| tx.remove_records(boundary, n))? == 0 {
            break;
        }
    }
    loop {
        let Some(first) = batches.storage.read(|r| r.first_audit_seq())? else {
            break;
        };
        let first = u64::try_from(first).unwrap_or(u64::MAX);
        if first > boundary {
            break;
        }
        let upto = (first - 1)
            .saturating_add(batches.size(Kind::Trail))
            .min(boundary);
        batches.run_sized(Kind::Trail, |tx| tx.remove_trail(first - 1, upto))?;
    }
    loop {
        let n = u32::try_from(batches.size(Kind::Nodes)).unwrap_or(u32::MAX);
        if batches.run_sized(Kind::Nodes, |tx| tx.prune_tree(boundary, n))? == 0 {
            break;
        }
    }
    Ok(())
}

/// Finishes the removal of the last archive, when a run stopped before it was done; returns
/// its number then.
pub(super) fn finish_last(batches: &mut Batches<'_>) -> Result<Vec<i64>> {
    let storage = batches.storage;
    let Some(last) = storage.read(|r| r.last_archive())? else {
        return Ok(Vec::new());
    };
    let (first, count) =
        storage.read(|r| Ok((r.first_audit_seq()?, r.archived_count(last.archive)?)))?;
    let trail_left = first.is_some_and(|f| u64::try_from(f).unwrap_or(0) <= last.trail_size);
    if !trail_left && count >= last.sessions {
        // The trail is gone up to the boundary, and every session has left; what may be left
        // of the tree's nodes goes too (a cheap probe when none is).
        remove_trail(batches, last.trail_size)?;
        return Ok(Vec::new());
    }
    remove(batches, &last, Path::new(&last.file))?;
    Ok(vec![last.archive])
}
