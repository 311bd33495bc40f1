//! The Merkle tree as the ledger keeps it (rule A4): its stored nodes, brought up to the trail's
//! head in batches; a view of the tree at any size, the rows past the stored nodes hashed in
//! memory; checkpoints signed over it; and its check against the rows.
//!
//! The stored tree is integrated in the transaction that signs a checkpoint (or of
//! [`Ledger::integrate_tree`](crate::Ledger::integrate_tree)), never in the transaction of a
//! change: a write pays nothing for it. Between two integrations the rows after the stored
//! tree's last leaf are hashed by whoever reads past it, from the rows it reads anyway.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::chain::{encode_row, hash_matches, hex};
use super::checkpoint::{check_name, Checkpoint, SignedCheckpoint, SignerKey};
use super::merkle::{self, frontier, Builder, Coord, Hash, Nodes};
use crate::clock::format_ts;
use crate::error::{Corruption, Result};
use crate::model::{AuditEntry, AuditKind};
use crate::storage::{ChainRow, CheckpointRow, Read, TreeNode, Write};

/// How many rows one step of a walk over the trail reads before it works on them: bounded
/// memory, and on PostgreSQL a batch of nodes per statement.
pub(crate) const CHUNK: i64 = 4096;

/// The leaf hash of a stored row: SHA-256 of `0x00` and the bytes its chain hash covers (its
/// predecessor's hash, its seq and every field, each length-prefixed). Computed from the row
/// alone, so a receipt for it can be checked with the row and nothing else.
pub(crate) fn leaf_of(row: &ChainRow) -> Hash {
    leaf_of_fields(
        &row.prev_hash,
        row.seq,
        &row.at,
        &row.actor,
        &row.kind,
        row.session.as_deref(),
        &row.detail,
    )
}

#[allow(clippy::too_many_arguments)]
fn leaf_of_fields(
    prev_hash: &str,
    seq: i64,
    at: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &str,
) -> Hash {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update([0u8]);
    encode_row(prev_hash, seq, at, actor, kind, session, detail, &mut |b| {
        h.update(b)
    });
    h.finalize().into()
}

/// The leaf hash of an audit row as listed: SHA-256 of `0x00` and the bytes its chain hash
/// covers, with the detail as the library writes it (compact JSON) and the time in its stored
/// form.
pub fn audit_leaf(entry: &AuditEntry) -> Hash {
    leaf_of_fields(
        &entry.prev_hash,
        entry.seq,
        &format_ts(entry.at),
        &entry.actor,
        entry.kind.as_str(),
        entry.session.as_deref(),
        &entry.detail.to_string(),
    )
}

/// The rows with `from <= seq < to`, in memory.
pub(crate) fn rows(r: &mut dyn Read, from: i64, to: i64) -> Result<Vec<ChainRow>> {
    let mut out = Vec::new();
    r.audit_walk(from, to, &mut |row| {
        out.push(row);
        Ok(())
    })?;
    Ok(out)
}

/// The stored hashes of `coords`, each of which must be stored.
fn stored(r: &mut dyn Read, coords: &[Coord]) -> Result<Vec<Hash>> {
    r.tree_nodes(coords)?
        .into_iter()
        .zip(coords)
        .map(|(hash, (level, idx))| {
            hash.ok_or_else(|| {
                Corruption::new(format!(
                    "the audit tree lost its node ({level}, {idx}) below its last leaf"
                ))
                .into()
            })
        })
        .collect()
}

/// The stored tree: nodes by key.
struct Stored<'r>(&'r mut dyn Read);

impl Nodes for Stored<'_> {
    fn nodes(&mut self, coords: &[Coord]) -> Result<Vec<Hash>> {
        stored(self.0, coords)
    }
}

/// The tree at one size: the stored nodes up to the stored tree's size, and above it the nodes
/// hashed in memory from the rows after its last leaf.
pub(crate) struct View<'r> {
    r: &'r mut dyn Read,
    stored: u64,
    tail: HashMap<Coord, Hash>,
    root: Hash,
}

impl<'r> View<'r> {
    /// The tree of the first `size` rows: reads the stored frontier and the rows past the
    /// stored tree, up to `size`.
    pub(crate) fn at(r: &'r mut dyn Read, size: u64) -> Result<View<'r>> {
        refuse_archived(r, size)?;
        let stored_size = r.tree_size()?.min(size);
        let frontier_nodes = stored(r, &frontier(stored_size))?;
        let mut builder = Builder::resume(stored_size, frontier_nodes);
        let mut tail = HashMap::new();
        let mut from = stored_size as i64 + 1;
        while (from as u64) <= size {
            let to = (from + CHUNK).min(size as i64 + 1);
            for row in rows(r, from, to)? {
                builder.push(leaf_of(&row), &mut |c, h| {
                    tail.insert(c, *h);
                });
            }
            if builder.size() < (to - 1) as u64 {
                return Err(Corruption::new(format!(
                    "the audit trail has a gap before row {to}: the tree cannot be read past it"
                ))
                .into());
            }
            from = to;
        }
        Ok(View {
            r,
            stored: stored_size,
            root: builder.root(),
            tail,
        })
    }

    /// The root at the view's size.
    pub(crate) fn root(&self) -> Hash {
        self.root
    }
}

impl Nodes for View<'_> {
    fn nodes(&mut self, coords: &[Coord]) -> Result<Vec<Hash>> {
        let in_store: Vec<Coord> = coords
            .iter()
            .filter(|(level, idx)| (idx + 1) << level <= self.stored)
            .copied()
            .collect();
        let mut read: HashMap<Coord, Hash> = in_store
            .iter()
            .copied()
            .zip(stored(self.r, &in_store)?)
            .collect();
        coords
            .iter()
            .map(|c| {
                read.remove(c)
                    .or_else(|| self.tail.get(c).copied())
                    .ok_or_else(|| {
                        Corruption::new(format!("the audit tree has no node {c:?}")).into()
                    })
            })
            .collect()
    }
}

/// Brings the stored tree up to the first `size` rows: hashes the rows after its last leaf,
/// checking that each extends the chain, and appends the nodes they complete, a chunk at a
/// time. A row that breaks the chain stops it: no tree, and so no checkpoint, is built over a
/// trail that does not verify.
pub(crate) fn integrate(tx: &mut dyn Write, size: u64) -> Result<()> {
    let stored_size = tx.read().tree_size()?;
    if stored_size >= size {
        return Ok(());
    }
    let frontier_nodes = stored(tx.read(), &frontier(stored_size))?;
    let mut builder = Builder::resume(stored_size, frontier_nodes);
    let anchor = super::chain::anchor(tx.read())?;
    let mut prev_hash = if stored_size == u64::try_from(anchor.seq).unwrap_or(0) {
        // The genesis, or an archive's boundary, whose row and leaf may have left with it.
        anchor.hash
    } else {
        let anchor = rows(tx.read(), stored_size as i64, stored_size as i64 + 1)?;
        let row = anchor.first().ok_or_else(|| {
            Corruption::new(format!(
                "audit row {stored_size}, the tree's last leaf, is gone"
            ))
        })?;
        if leaf_of(row) != stored(tx.read(), &[(0, stored_size - 1)])?[0] {
            return Err(refused(
                stored_size as i64,
                "it changed after the tree was written",
            ));
        }
        row.hash.clone()
    };
    let mut from = stored_size as i64 + 1;
    while (from as u64) <= size {
        let to = (from + CHUNK).min(size as i64 + 1);
        let mut nodes: Vec<TreeNode> = Vec::new();
        for row in rows(tx.read(), from, to)? {
            let expected = builder.size() as i64 + 1;
            if row.seq != expected {
                return Err(refused(expected, "it is missing"));
            }
            if row.prev_hash != prev_hash {
                return Err(refused(
                    row.seq,
                    "its prev_hash is not the previous row's hash",
                ));
            }
            if !hash_matches(&row) {
                return Err(refused(row.seq, "its hash does not match its contents"));
            }
            builder.push(leaf_of(&row), &mut |(level, idx), hash| {
                nodes.push((level, idx, *hash));
            });
            prev_hash = row.hash;
        }
        if builder.size() != (to - 1) as u64 {
            return Err(refused(builder.size() as i64 + 1, "it is missing"));
        }
        tx.append_tree_nodes(&nodes)?;
        from = to;
    }
    Ok(())
}

fn refused(seq: i64, why: &str) -> crate::error::Error {
    Corruption::new(format!(
        "the audit trail does not verify at row {seq}: {why}; the tree is not built over it \
         (run verify)"
    ))
    .into()
}

/// Signs a checkpoint of the whole trail as it stands in this transaction: integrates the
/// tree up to the head, signs its size and root, and records it with its `checkpoint.sign`
/// row, which the next checkpoint covers.
pub(crate) fn sign(
    tx: &mut dyn Write,
    at: DateTime<Utc>,
    actor: &str,
    key: &SignerKey,
    origin: &str,
) -> Result<SignedCheckpoint> {
    check_name("the origin", origin)?;
    let size = u64::try_from(tx.read().audit_head()?.seq).unwrap_or(0);
    integrate(tx, size)?;
    let root = merkle::root(&mut Stored(tx.read()), size)?;
    let signed = SignedCheckpoint::sign(
        Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
        },
        key,
    );
    let verifier = key.verifier();
    let key_words = format!("{}+{}", verifier.name(), verifier.id());
    let detail = json!({
        "origin": origin,
        "size": size,
        "root": signed.checkpoint.root_base64(),
        "key": key_words,
    });
    let seq = super::append(tx, at, actor, AuditKind::CheckpointSign, None, &detail)?;
    tx.append_checkpoint(&CheckpointRow {
        seq,
        tree_size: size,
        root_hash: hex(&root),
        origin: origin.to_owned(),
        key_name: verifier.name().to_owned(),
        key_id: verifier.id(),
        note: signed.note.clone(),
        signed_at: at,
    })?;
    Ok(signed)
}

/// The tree recomputed from the rows, compared with what is stored: every stored node, and the
/// root of every recorded checkpoint. One line per problem, at most `limit` of them, and how
/// many rows it read; `roots_at` names sizes whose recomputed roots the caller wants back.
pub(crate) struct Recomputed {
    pub(crate) problems: Vec<String>,
    /// Stored nodes that differ from their recomputed hash (all of them, past `limit` too).
    pub(crate) mismatches: u64,
    /// The first leaf (row seq) whose stored hash differs, if any.
    pub(crate) first_changed_row: Option<i64>,
    pub(crate) rows: u64,
    pub(crate) roots: HashMap<u64, Hash>,
    pub(crate) root: Hash,
}

/// Walks every row up to `size`, hashing the tree in memory and comparing each node the store
/// holds with it, a chunk at a time (memory bounded by the chunk, not the trail).
pub(crate) fn recompute(
    r: &mut dyn Read,
    size: u64,
    roots_at: &[u64],
    limit: usize,
) -> Result<Recomputed> {
    let stored_size = r.tree_size()?;
    // From the live trail's anchor: the frontier stored there is what the rows before it
    // left behind, and the checkpoints signed over it hold it to its root.
    let anchor = u64::try_from(super::chain::anchor(r)?.seq).unwrap_or(0);
    let mut builder = Builder::resume(anchor, stored(r, &frontier(anchor))?);
    let mut out = Recomputed {
        problems: Vec::new(),
        mismatches: 0,
        first_changed_row: None,
        rows: 0,
        roots: HashMap::new(),
        root: merkle::empty_root(),
    };
    if roots_at.contains(&anchor) {
        out.roots.insert(anchor, builder.root());
    }
    let mut from = anchor as i64 + 1;
    while (from as u64) <= size {
        let to = (from + CHUNK).min(size as i64 + 1);
        let mut computed: Vec<(Coord, Hash)> = Vec::new();
        for row in rows(r, from, to)? {
            if row.seq != builder.size() as i64 + 1 {
                out.problems.push(format!(
                    "row {}: missing (a row was removed), so the tree cannot be recomputed past it",
                    builder.size() + 1
                ));
                out.mismatches += 1;
                out.rows = builder.size();
                out.root = builder.root();
                return Ok(out);
            }
            out.rows += 1;
            builder.push(leaf_of(&row), &mut |c, h| {
                if (c.1 + 1) << c.0 <= stored_size {
                    computed.push((c, *h));
                }
            });
            if roots_at.contains(&builder.size()) {
                out.roots.insert(builder.size(), builder.root());
            }
        }
        let coords: Vec<Coord> = computed.iter().map(|(c, _)| *c).collect();
        let held = r.tree_nodes(&coords)?;
        for ((coord, hash), held) in computed.iter().zip(held) {
            if held.as_ref() == Some(hash) {
                continue;
            }
            out.mismatches += 1;
            let (level, idx) = coord;
            if *level == 0 && out.first_changed_row.is_none() {
                out.first_changed_row = Some(*idx as i64 + 1);
            }
            if out.problems.len() < limit {
                out.problems.push(match (level, held) {
                    (0, Some(_)) => format!(
                        "row {}: its stored leaf hash differs from the row's: the row changed \
                         after the tree was written",
                        idx + 1
                    ),
                    (_, Some(_)) => format!(
                        "tree node ({level}, {idx}): its stored hash differs from the one \
                         recomputed from rows {} to {}",
                        (idx << level) + 1,
                        (idx + 1) << level
                    ),
                    (_, None) => format!("tree node ({level}, {idx}): missing from the store"),
                });
            }
        }
        from = to;
    }
    out.root = builder.root();
    Ok(out)
}

/// An error for a tree of `size` rows when rows up to a larger size left with an archive:
/// the nodes it needs left with them.
pub(crate) fn refuse_archived(r: &mut dyn Read, size: u64) -> Result<()> {
    if let Some(archive) = r.last_archive()? {
        if size < archive.trail_size {
            return Err(crate::error::Conflict::Archived(format!(
                "the audit trail's rows 1 to {} are archived (the newest archive, number {}, \
                 is {}): a proof that reaches into them comes from the archives, not the live \
                 ledger (verify --archive)",
                archive.trail_size, archive.archive, archive.file
            ))
            .into());
        }
    }
    Ok(())
}

/// The whole tree checked against the rows (part of `check`): every stored node, and every
/// recorded checkpoint's root at its size. One line per problem, at most 100.
pub(crate) fn check(r: &mut dyn Read) -> Result<Vec<String>> {
    const LIMIT: usize = 100;
    let head = u64::try_from(r.audit_head()?.seq).unwrap_or(0);
    let stored_size = r.tree_size()?;
    let mut checkpoints = Vec::new();
    let mut after = 0;
    loop {
        let page = r.checkpoints(after, 1000)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        checkpoints.extend(page);
    }
    let sizes: Vec<u64> = checkpoints.iter().map(|c| c.tree_size).collect();
    let mut report = recompute(r, head.max(stored_size), &sizes, LIMIT)?;
    if stored_size > head {
        report.problems.push(format!(
            "the stored tree has {stored_size} leaves, the trail {head} rows"
        ));
    }
    for c in &checkpoints {
        let ok = report.roots.get(&c.tree_size).map(|root| hex(root)) == Some(c.root_hash.clone());
        if !ok && report.problems.len() < LIMIT {
            report.problems.push(format!(
                "checkpoint of row {} (size {}): its root is not the root of the first {} rows",
                c.seq, c.tree_size, c.tree_size
            ));
        }
    }
    Ok(report.problems)
}
