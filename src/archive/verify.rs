//! Checking an archive file on its own (`verify --archive`), and against the live ledger it
//! came from.
//!
//! An archive is a read-only ledger file: its trail starts after the previous archive's
//! boundary (its `archives` rows) and ends at its own, where its checkpoint was signed. So the
//! ledger's own checks read it as they read a live ledger: the chain from that anchor, the tree
//! from the frontier stored there (held to its root by the checkpoint), the decision batches,
//! the engine's integrity check and every reference; and the checkpoint's signature with the
//! auditor's key. Against the live ledger: the live ledger names this file with the same
//! SHA-256 and boundary, and its newest checkpoint extends the archive's (a consistency proof
//! from the live ledger's stored tree).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::audit::checkpoint::{SignedCheckpoint, VerifierKey};
use crate::audit::merkle::{consistency_proof, verify_consistency};
use crate::audit::tree::View;
use crate::audit::verify::{finding, verify_checkpoint};
use crate::audit::{self, CheckpointOptions, Finding};
use crate::config::Config;
use crate::error::{Corruption, InputError, Result};
use crate::files::sha256_of;
use crate::storage::{archive_header, ArchiveHeader, Read, Storage};

/// What the file just written must show, beyond its own header.
pub(crate) struct Expected {
    /// The chain hash of the boundary it starts after.
    pub(crate) from_hash: String,
    /// The chain hash of its last row (the boundary's again, when it holds none).
    pub(crate) trail_hash: String,
}

/// What checking an archive found ([`Ledger::verify_archive`](crate::Ledger::verify_archive)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArchiveVerification {
    /// True when every finding is valid.
    pub ok: bool,
    /// The file checked.
    pub file: PathBuf,
    /// Its number in the ledger it came from.
    pub archive: i64,
    /// The boundary it starts after: it holds the trail's rows `trail_from + 1` on.
    pub trail_from: u64,
    /// The boundary it ends at, its last row.
    pub trail_size: u64,
    /// How many trees it holds.
    pub trees: u64,
    /// How many sessions it holds.
    pub sessions: u64,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// One per check, in the order they ran.
    pub findings: Vec<Finding>,
}

/// The checks of the module's documentation on the archive at `path`, with `key`, and against
/// `live` when it is given.
pub(crate) fn verify_file(
    path: &Path,
    key: &VerifierKey,
    live: Option<&Storage>,
) -> Result<ArchiveVerification> {
    let header = archive_header(path)?.ok_or_else(|| {
        InputError::InvalidConfig(format!(
            "{} is a ledger, not an archive (it has no `archive` table)",
            path.display()
        ))
    })?;
    let sha256 = sha256_of(path)?;
    let archived = Storage::open(path, &Config::default().read_only(true))?;
    let mut findings = archived.snapshot(|r| own_findings(r, &header, Some(key)))?;
    if let Some(live) = live {
        findings.extend(live.snapshot(|r| against_live(r, &header, &sha256, key))?);
    }
    Ok(ArchiveVerification {
        ok: findings.iter().all(|f| f.valid),
        file: path.to_path_buf(),
        archive: header.archive,
        trail_from: header.trail_from,
        trail_size: header.trail_size,
        trees: header.trees,
        sessions: header.sessions,
        sha256,
        findings,
    })
}

/// The checks of a file just written, before it takes its name: everything but the
/// signature (the ledger holds no verifier key; the note is the one it recorded), and its
/// boundaries' hashes as the live ledger has them. An error names the first that failed.
pub(crate) fn check_written(
    path: &Path,
    header: &ArchiveHeader,
    expected: &Expected,
) -> Result<()> {
    let archived = Storage::open(path, &Config::default().read_only(true))?;
    let mut findings = archived.snapshot(|r| own_findings(r, header, None))?;
    findings.extend(archived.snapshot(|r| {
        let anchor = audit::verify(r, None)?;
        let from = audit::chain_anchor(r)?;
        Ok(vec![
            finding(
                "anchor",
                format!("row {}", header.trail_from),
                (from.hash != expected.from_hash).then_some("rewritten"),
                "the file starts after the live ledger's boundary".to_owned(),
            ),
            finding(
                "head",
                format!("row {}", header.trail_size),
                (anchor.head.hash != expected.trail_hash).then_some("rewritten"),
                "the file ends at the live ledger's row".to_owned(),
            ),
        ])
    })?);
    match findings.into_iter().find(|f| !f.valid) {
        None => Ok(()),
        Some(f) => Err(Corruption::new(format!(
            "the archive written to {} does not verify ({}: {}); it was removed and nothing \
             left the live ledger",
            path.display(),
            f.check,
            f.why
        ))
        .into()),
    }
}

/// The file's own checks: its trail against its checkpoint (signature too, with a key), the
/// whole-file check, and its trees.
fn own_findings(
    r: &mut dyn Read,
    header: &ArchiveHeader,
    key: Option<&VerifierKey>,
) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    let head = r.audit_head()?;
    let place = format!("rows {} to {}", header.trail_from + 1, header.trail_size);
    findings.push(finding(
        "size",
        place.clone(),
        (u64::try_from(head.seq).ok() != Some(header.trail_size)).then_some("truncated"),
        format!(
            "the file's trail ends at row {} (its header says {})",
            head.seq, header.trail_size
        ),
    ));
    match (&header.checkpoint, key) {
        (Some(note), Some(key)) => {
            let checked = verify_checkpoint(
                r,
                note,
                key,
                &CheckpointOptions::default(),
                &mut crate::decision_log::verify_batches,
            )?;
            findings.extend(checked.findings);
        }
        (Some(note), None) => {
            let c = SignedCheckpoint::parse(note)?.checkpoint;
            let size = header.trail_size;
            let recomputed = audit::tree::recompute(r, size, &[size], 20)?;
            findings.push(finding(
                "rows",
                place.clone(),
                (c.size != size || recomputed.roots.get(&size) != Some(&c.root))
                    .then_some("rewritten"),
                "the rows hash to the checkpoint's root".to_owned(),
            ));
            let chain = audit::verify(r, None)?;
            findings.push(finding(
                "chain",
                place.clone(),
                (!chain.ok).then_some("broken"),
                format!("{} rows verify", chain.rows),
            ));
            findings.push(crate::decision_log::verify_batches(
                r,
                i64::try_from(header.trail_from).unwrap_or(i64::MAX),
                head.seq,
            )?);
        }
        (None, _) => findings.push(finding(
            "checkpoint",
            place.clone(),
            (header.trail_size > 0).then_some("missing"),
            "the archive holds no row of the trail past the genesis".to_owned(),
        )),
    }
    let report = r.check()?;
    let tree = audit::tree::check(r)?;
    let mut problems: Vec<String> = tree;
    if !report.ok {
        problems.extend(report.integrity.iter().cloned());
        problems.extend(report.broken_references.iter().map(|b| {
            format!(
                "{} rows of {} ({}) reference {} that is not there",
                b.rows, b.table, b.columns, b.references
            )
        }));
    }
    findings.push(finding(
        "file",
        path_free(header),
        (!problems.is_empty()).then_some("damaged"),
        if problems.is_empty() {
            "integrity, references and the stored tree check".to_owned()
        } else {
            problems.join("; ")
        },
    ));
    let mut sessions = 0u64;
    let mut running = Vec::new();
    r.part_rows(
        crate::storage::Table::Sessions,
        crate::storage::Part::Whole,
        &mut |row| {
            sessions += 1;
            if matches!(row.get(6), Some(crate::storage::Value::Null)) {
                if let Some(crate::storage::Value::Text(id)) = row.get(1) {
                    running.push(id.clone());
                }
            }
            Ok(())
        },
    )?;
    findings.push(finding(
        "trees",
        format!("{} trees, {} sessions", header.trees, header.sessions),
        (sessions != header.sessions || !running.is_empty()).then_some("mismatch"),
        if running.is_empty() {
            format!("{sessions} sessions, every one ended")
        } else {
            format!("sessions that had not ended: {running:?}")
        },
    ));
    Ok(findings)
}

/// Where the file's own checks ran, for a finding.
fn path_free(header: &ArchiveHeader) -> String {
    format!("archive {}", header.archive)
}

/// The live ledger names this archive as it is, and its newest checkpoint extends the
/// archive's.
fn against_live(
    r: &mut dyn Read,
    header: &ArchiveHeader,
    sha256: &str,
    key: &VerifierKey,
) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    let place = format!("archive {} in the live ledger", header.archive);
    let recorded = r
        .archives()?
        .into_iter()
        .find(|a| a.archive == header.archive);
    let Some(recorded) = recorded else {
        findings.push(finding(
            "live",
            place,
            Some("unknown"),
            "the live ledger records no archive of this number".to_owned(),
        ));
        return Ok(findings);
    };
    let same = recorded.sha256 == sha256 && recorded.trail_size == header.trail_size;
    findings.push(finding(
        "live",
        place.clone(),
        (!same).then_some("mismatch"),
        if same {
            format!(
                "recorded as {} with this SHA-256 and boundary",
                recorded.file
            )
        } else {
            format!(
                "recorded as {} with SHA-256 {} and boundary {}: not this file",
                recorded.file, recorded.sha256, recorded.trail_size
            )
        },
    ));
    let Some(note) = &header.checkpoint else {
        return Ok(findings);
    };
    let old = SignedCheckpoint::parse(note)?.checkpoint;
    // A later archive took the trail past this one's boundary, and the tree's nodes there
    // with it: the next archive that holds rows starts from this boundary, and its own
    // checkpoints' roots there must be this one's.
    if let Some(next) = r
        .archives()?
        .into_iter()
        .find(|a| a.archive > header.archive && a.trail_size > header.trail_size)
    {
        findings.push(successor(&next, &old)?);
        return Ok(findings);
    }
    let Some(latest) = r.latest_checkpoint()? else {
        return Ok(findings);
    };
    let new = match SignedCheckpoint::open(&latest.note, key) {
        Ok(signed) => signed.checkpoint,
        Err(problem) => {
            findings.push(finding(
                "consistency",
                format!("the live checkpoint at size {}", latest.tree_size),
                Some("bad_signature"),
                format!("{problem} ({key})"),
            ));
            return Ok(findings);
        }
    };
    let mut view = View::at(r, new.size)?;
    let proof = consistency_proof(&mut view, old.size, new.size)?;
    let ok = verify_consistency(old.size, new.size, &old.root, &new.root, &proof);
    findings.push(finding(
        "consistency",
        format!("sizes {} to {}", old.size, new.size),
        (!ok).then_some("inconsistent"),
        format!(
            "the live ledger's newest checkpoint (size {}) extends the archive's ({} hashes of \
             proof)",
            new.size,
            proof.len()
        ),
    ));
    Ok(findings)
}

/// The archive `next`, the first after this one to hold rows of the trail, found at the path
/// the live ledger recorded, holds a checkpoint of this one's size with this one's root: the
/// two archives are one tree.
fn successor(next: &crate::storage::ArchiveRow, old: &crate::audit::Checkpoint) -> Result<Finding> {
    let place = format!("archive {} ({})", next.archive, next.file);
    let path = Path::new(&next.file);
    if !path.exists() {
        return Ok(finding(
            "consistency",
            place,
            Some("unchecked"),
            format!(
                "the live ledger's trail now starts after archive {}, and its file is not at {}: \
                 verify this archive against that one there",
                next.archive, next.file
            ),
        ));
    }
    let archived = Storage::open(path, &Config::default().read_only(true))?;
    let roots = archived.read(|r| {
        let mut roots = Vec::new();
        let mut after = 0;
        loop {
            let page = r.checkpoints(after, 1_000)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            roots.extend(
                page.into_iter()
                    .filter(|c| c.tree_size == old.size)
                    .map(|c| c.root_hash),
            );
        }
        Ok(roots)
    })?;
    let ours = crate::audit::hex(&old.root);
    let ok = !roots.is_empty() && roots.iter().all(|root| *root == ours);
    Ok(finding(
        "consistency",
        place,
        (!ok).then_some("inconsistent"),
        format!(
            "archive {}, which starts from this one's boundary, records the checkpoint of size {} \
             with {} root",
            next.archive,
            old.size,
            if ok { "this" } else { "another (or no)" }
        ),
    ))
}
