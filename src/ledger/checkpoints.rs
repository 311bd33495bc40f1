//! The handle's checkpoints of the audit trail (rule A4): signing one, listing them, verifying
//! the trail against one an auditor holds, proving a row against one, and reading the trail as
//! a feed from a saved position.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::audit::checkpoint::{SignedCheckpoint, SignerKey, VerifierKey};
use crate::audit::merkle::{consistency_proof, inclusion_proof, verify_inclusion, Hash};
use crate::audit::tree::{self, leaf_of, View};
use crate::audit::{self, CheckpointOptions, CheckpointVerification, Receipt};
use crate::error::{Conflict, Corruption, Result};
use crate::model::AuditEntry;
use crate::storage::{AuditFilter, CheckpointRow};

use super::Ledger;

/// A checkpoint as the ledger recorded it when it signed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RecordedCheckpoint {
    /// Its `checkpoint.sign` audit row.
    pub seq: i64,
    /// How many rows it covers.
    pub size: u64,
    /// The root at that size, base64, as the note writes it.
    pub root: String,
    /// The log's name.
    pub origin: String,
    /// The signing key's name and id, `NAME+KEYID`.
    pub key: String,
    /// When it was signed.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub signed_at: DateTime<Utc>,
    /// The signed note.
    pub note: String,
}

impl From<CheckpointRow> for RecordedCheckpoint {
    fn from(row: CheckpointRow) -> RecordedCheckpoint {
        let root = SignedCheckpoint::parse(&row.note)
            .map(|c| c.checkpoint.root_base64())
            .unwrap_or_default();
        RecordedCheckpoint {
            seq: row.seq,
            size: row.tree_size,
            root,
            origin: row.origin,
            key: format!("{}+{}", row.key_name, row.key_id),
            signed_at: row.signed_at,
            note: row.note,
        }
    }
}

/// A consistency proof between two sizes of the trail's tree, with both roots: what a witness
/// checks before it cosigns a checkpoint (docs/audit.md, "A witness, on paper").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsistencyProof {
    /// The smaller size.
    pub old: u64,
    /// The larger size.
    pub new: u64,
    /// The root at `old`.
    pub old_root: Hash,
    /// The root at `new`.
    pub new_root: Hash,
    /// The proof (RFC 6962), checked by [`verify_consistency`](crate::verify_consistency).
    pub proof: Vec<Hash>,
}

impl Ledger {
    /// A consistency proof from the tree of the first `old` rows to the tree of the first `new`
    /// (the whole trail when `None`), from the stored tree and the rows past it, in one
    /// snapshot: O(log n) stored nodes, and the rows past the stored tree.
    ///
    /// # Errors
    ///
    /// `NotInCheckpoint` when `old` is larger than `new` or `new` than the trail; `Archived`
    /// when `old` is below the newest archive's boundary (the nodes it needs left with the
    /// archives); `Corruption` for a stored tree that lost a node.
    pub fn consistency_proof(&self, old: u64, new: Option<u64>) -> Result<ConsistencyProof> {
        self.storage.snapshot(|r| {
            let rows = u64::try_from(r.audit_head()?.seq).unwrap_or(0);
            let new = new.unwrap_or(rows);
            if old > new || new > rows {
                return Err(Conflict::NotInCheckpoint {
                    seq: i64::try_from(new.max(old)).unwrap_or(i64::MAX),
                    size: rows,
                }
                .into());
            }
            // A proof from a size within an archive needs nodes that left with it.
            tree::refuse_archived(r, old)?;
            let mut view = View::at(r, new)?;
            let new_root = view.root();
            let old_root = crate::audit::merkle::root(&mut view, old)?;
            let proof = consistency_proof(&mut view, old, new)?;
            Ok(ConsistencyProof {
                old,
                new,
                old_root,
                new_root,
                proof,
            })
        })
    }

    /// Signs a checkpoint of the whole trail with `key` and records it, with a
    /// `checkpoint.sign` audit row by `actor`: integrates the queued decision records first
    /// ([`Ledger::integrate_decisions`], so the checkpoint covers every record committed
    /// before it), then brings the stored tree up to the head, in the write transaction that
    /// signs. `origin` names the log (by default the key's name). The key
    /// is used for this one signature and never stored; the note records its name and id.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; `InvalidNote` for a malformed origin; `Corruption` when the trail past
    /// the stored tree does not verify (no checkpoint is signed over it); `ReadOnly`.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{CheckpointOptions, Ledger, SignerKey};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// let key = SignerKey::generate("example.com/ledger")?;
    /// let signed = ledger.checkpoint(&key, None, "alice")?;
    /// assert_eq!(signed.checkpoint.size, 1);
    /// ledger.create_root("reviewer", "bob")?;
    /// let v = ledger.verify_checkpoint(&signed.note, &key.verifier(), &CheckpointOptions::default())?;
    /// assert!(v.ok);
    /// # Ok(()) }
    /// ```
    pub fn checkpoint(
        &self,
        key: &SignerKey,
        origin: Option<&str>,
        actor: &str,
    ) -> Result<SignedCheckpoint> {
        crate::model::validate_actor(actor)?;
        let origin = origin.unwrap_or(key.name()).to_owned();
        self.integrate_decisions(actor)?;
        self.write(|tx, now| tree::sign(tx, now, actor, key, &origin))
    }

    /// Brings the stored tree up to the trail's head, as signing does, and returns its size: a
    /// backend may call it now and then so that signing and reading past the stored tree stay
    /// short. Writes no audit row (the tree is derived from the rows).
    ///
    /// # Errors
    ///
    /// As [`Ledger::checkpoint`].
    pub fn integrate_tree(&self) -> Result<u64> {
        self.storage.write(|tx| {
            let size = u64::try_from(tx.read().audit_head()?.seq).unwrap_or(0);
            tree::integrate(tx, size)?;
            Ok(size)
        })
    }

    /// The recorded checkpoints after the one of audit row `after` (0 for all), oldest first,
    /// at most `limit`.
    ///
    /// # Errors
    ///
    /// `Storage`.
    pub fn checkpoints(&self, after: i64, limit: u32) -> Result<Vec<RecordedCheckpoint>> {
        let rows = self.storage.read(|r| r.checkpoints(after, limit))?;
        Ok(rows.into_iter().map(RecordedCheckpoint::from).collect())
    }

    /// Verifies the trail against `note`, a checkpoint an auditor kept, with the auditor's
    /// verifier key, in one snapshot: what is checked and reported is on
    /// [`CheckpointVerification`]. A failed check is no error.
    ///
    /// # Errors
    ///
    /// `Storage`; `Corruption` for a stored tree that lost a node below its last leaf.
    pub fn verify_checkpoint(
        &self,
        note: &str,
        key: &VerifierKey,
        options: &CheckpointOptions,
    ) -> Result<CheckpointVerification> {
        self.storage.snapshot(|r| {
            audit::verify::verify_checkpoint(
                r,
                note,
                key,
                options,
                &mut crate::decision_log::verify_batches,
            )
        })
    }

    /// A receipt for audit row `seq`: its inclusion proof against `checkpoint` (a note), or
    /// against the newest checkpoint the ledger recorded, with the row itself, in the C2SP
    /// `tlog-proof` form. It is checked before it is returned.
    ///
    /// # Errors
    ///
    /// `InvalidNote` for a checkpoint that does not parse; `NoCheckpoint` when none is given
    /// and none was signed; `NotInCheckpoint` for a row the checkpoint does not cover;
    /// `Archived` for a row that left with an archive; `Corruption` when the trail no longer
    /// matches the checkpoint (verify it).
    pub fn prove(&self, seq: i64, checkpoint: Option<&str>) -> Result<Receipt> {
        let given = checkpoint.map(SignedCheckpoint::parse).transpose()?;
        self.storage.snapshot(|r| {
            let signed = match &given {
                Some(c) => c.clone(),
                None => {
                    let latest = r.latest_checkpoint()?.ok_or(Conflict::NoCheckpoint)?;
                    SignedCheckpoint::parse(&latest.note)?
                }
            };
            let size = signed.checkpoint.size;
            if seq < 1 || seq as u64 > size {
                return Err(Conflict::NotInCheckpoint { seq, size }.into());
            }
            // A row that left with an archive is proved from the archive.
            tree::refuse_archived(r, seq as u64 - 1)?;
            let row = tree::rows(r, seq, seq + 1)?
                .pop()
                .ok_or(Conflict::NotInCheckpoint { seq, size })?;
            let entry = r
                .audit_rows(&AuditFilter {
                    session: None,
                    subtree: None,
                    kind: None,
                    since: None,
                    until: None,
                    from: seq,
                    to: seq + 1,
                    limit: None,
                })?
                .pop();
            let mut view = View::at(r, size)?;
            let proof = inclusion_proof(&mut view, seq as u64 - 1, size)?;
            let root = signed.checkpoint.root;
            if view.root() != root
                || !verify_inclusion(seq as u64 - 1, size, &leaf_of(&row), &proof, &root)
            {
                return Err(Corruption::new(format!(
                    "the trail no longer matches the checkpoint of size {size}: no proof of row \
                     {seq} against it (verify --checkpoint says why)"
                ))
                .into());
            }
            Ok(Receipt {
                index: seq as u64 - 1,
                proof,
                checkpoint: signed,
                row: entry.map(serde_json::to_value).transpose().map_err(|e| {
                    Corruption::new(format!("audit row {seq} does not encode as JSON: {e}"))
                })?,
            })
        })
    }

    /// At most `limit` audit rows after row `after`, oldest first, read by the trail's key: a
    /// feed that resumes exactly from the last `seq` a reader kept.
    ///
    /// # Errors
    ///
    /// `Archived` when rows after `after` left with an archive (the feed resumes from the
    /// archives' files, then from the newest archive's boundary); `Corruption` for a row the
    /// library cannot read back.
    pub fn audit_after(&self, after: i64, limit: u32) -> Result<Vec<AuditEntry>> {
        let to = after.saturating_add(1).saturating_add(i64::from(limit));
        self.storage.snapshot(|r| {
            // A reader that kept a place before the boundary would skip what left: say so.
            tree::refuse_archived(r, u64::try_from(after).unwrap_or(0))?;
            r.audit_rows(&AuditFilter {
                session: None,
                subtree: None,
                kind: None,
                since: None,
                until: None,
                from: after.saturating_add(1),
                to,
                limit: None,
            })
        })
    }
}
