//! Copying a ledger into a new one, row for row: how a ledger moves from a SQLite file to a
//! PostgreSQL database (docs/postgres.md, "Moving a SQLite ledger over").
//!
//! A copy is faithful or it is nothing. Every row of every table goes over as it is stored
//! (sequence numbers, times, hashes), read in one snapshot of the source, so that writers on
//! the source can go on and the copy is the ledger as it stood at one moment. It is written in
//! one transaction on the target, which must hold nothing yet, and before that transaction
//! commits the target's trail is verified from its first row, every hash recomputed from the
//! copied contents, and its head must be the source's head. A source whose chain does not
//! verify is therefore not copied at all.

use serde::Serialize;

use crate::audit;
use crate::decision_log;
use crate::error::{Corruption, Result};
use crate::model::AuditHead;
use crate::storage::{Import, Read, Row, Storage, Table};

/// How many rows one append carries: enough that a batch's round trip is small beside its
/// rows, few enough that a batch's memory is small beside the ledger.
const BATCH: usize = 1_000;

/// What a copy moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Copied {
    /// Sessions, ended ones included.
    pub sessions: u64,
    /// Materialized labels.
    pub labels: u64,
    /// Posture epochs, the first included.
    pub epochs: u64,
    /// Postures.
    pub postures: u64,
    /// Command patterns.
    pub patterns: u64,
    /// Override scopes, expired and revoked ones included.
    pub scopes: u64,
    /// Audit rows.
    pub audit_rows: u64,
    /// Checkpoints the source signed; the target's audit tree is built from the copied rows,
    /// and each checkpoint's root checked against it.
    pub checkpoints: u64,
    /// Decision records, integrated or queued (the queue comes along as it is).
    pub decisions: u64,
    /// The trail's head, the same on both ledgers.
    pub head: AuditHead,
}

/// Copies every row of `source` into `target` (see the module's documentation).
pub(crate) fn copy(source: &Storage, target: &Storage) -> Result<Copied> {
    target.import(|into| source.snapshot(|from| copy_rows(from, into)))
}

fn copy_rows(from: &mut dyn Read, into: &mut dyn Import) -> Result<Copied> {
    let head = from.audit_head()?;
    let ordered_from = from.audit_ordered_from()?.ok_or_else(|| {
        Corruption::new("the source's audit_time_order row is gone; nothing was copied")
    })?;
    let mut copied = Copied {
        sessions: 0,
        labels: 0,
        epochs: 0,
        postures: 0,
        patterns: 0,
        scopes: 0,
        audit_rows: 0,
        checkpoints: 0,
        decisions: 0,
        head: head.clone(),
    };
    for table in Table::ALL {
        let mut batch: Vec<Row> = Vec::with_capacity(BATCH);
        let mut count = 0;
        from.export(table, &mut |row| {
            batch.push(row);
            count += 1;
            if batch.len() == BATCH {
                into.append(table, &batch)?;
                batch.clear();
            }
            Ok(())
        })?;
        if !batch.is_empty() {
            into.append(table, &batch)?;
        }
        *match table {
            Table::Sessions => &mut copied.sessions,
            Table::Labels => &mut copied.labels,
            Table::Epochs => &mut copied.epochs,
            Table::Postures => &mut copied.postures,
            Table::CommandPatterns => &mut copied.patterns,
            Table::OverrideScopes => &mut copied.scopes,
            Table::Audit => &mut copied.audit_rows,
            Table::Checkpoints => &mut copied.checkpoints,
            Table::Decisions => &mut copied.decisions,
            // Positions and the queue are counted by the records they name.
            Table::DecisionLog | Table::DecisionQueue => continue,
        } = count;
    }
    into.set_audit_ordered_from(ordered_from)?;
    let v = audit::verify(into.read(), None)?;
    if !v.ok {
        let problem = v.problem.map_or_else(String::new, |p| format!(": {p}"));
        return Err(Corruption::new(format!(
            "the copied audit trail does not verify at seq {}{problem}, so the source's does not \
             either (run verify on it); nothing was copied",
            v.first_bad_seq.unwrap_or(0)
        ))
        .into());
    }
    if v.head != head {
        return Err(Corruption::new(format!(
            "the copy's audit head is seq {} where the source's is seq {}; nothing was copied",
            v.head.seq, head.seq
        ))
        .into());
    }
    // The tree is derived: built anew from the copied rows, and every copied checkpoint must be
    // a checkpoint of them.
    let rows = u64::try_from(head.seq).unwrap_or(0);
    audit::tree::integrate(into.write(), rows)?;
    let mut after = 0;
    while let Some(last) = check_checkpoints(into.read(), after)? {
        after = last;
    }
    // Every integrated record must still hash to its batch's root.
    let batches = decision_log::verify_batches(into.read(), 0, head.seq)?;
    if !batches.valid {
        return Err(Corruption::new(format!(
            "the copied decision records do not match their batches ({}: {}), so the source's \
             do not either (run verify --checkpoint on it); nothing was copied",
            batches.place, batches.why
        ))
        .into());
    }
    Ok(copied)
}

/// Checks a page of copied checkpoints after `after` against the copied tree; the last one's
/// seq, or `None` when there are none left.
fn check_checkpoints(r: &mut dyn Read, after: i64) -> Result<Option<i64>> {
    let page = r.checkpoints(after, 1000)?;
    for c in &page {
        let root = audit::tree::View::at(r, c.tree_size)?.root();
        if audit::hex(&root) != c.root_hash {
            return Err(Corruption::new(format!(
                "the checkpoint of row {} is not a checkpoint of the copied trail (its root at \
                 size {} differs); nothing was copied",
                c.seq, c.tree_size
            ))
            .into());
        }
    }
    Ok(page.last().map(|c| c.seq))
}
