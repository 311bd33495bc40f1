//! Backing up a SQLite ledger while writers go on, and putting a backup in a ledger's place.
//!
//! Each copy is written under a name of its own beside its destination (`NAME.partial-PID-N`),
//! synced, and checked on its own before it takes the destination's name, by a hard link that
//! fails when the name is taken (or a rename, where the file system has no links). So a
//! process killed at any step leaves at the destination either nothing or a whole copy that
//! verified, and never writes over a file that is there: what a killed step leaves is a
//! `.partial-PID-N` file, which is no backup and says so by its name.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::audit::checkpoint::VerifierKey;
use crate::audit::{CheckpointOptions, CheckpointVerification, Verification};
use crate::config::Config;
use crate::error::{Corruption, InputError, Result};
use crate::files::{discard, partial_beside, publish, refuse_existing};
use crate::model::{AuditHead, CheckReport};

use super::Ledger;

/// A backup written and checked ([`Ledger::backup`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Backup {
    /// The copy: there only when `ok`.
    pub to: PathBuf,
    /// The copy's newest audit row: the moment it holds.
    pub head: AuditHead,
    /// The copy's trail, verified from its first row.
    pub verification: Verification,
    /// The copy's integrity, foreign keys, stored audit tree and checkpoints' roots.
    pub check: CheckReport,
    /// True when the copy verifies and checks; only then is it written to `to`.
    pub ok: bool,
}

/// A backup put in a ledger's place, or refused ([`Ledger::restore`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Restored {
    /// The backup restored from.
    pub from: PathBuf,
    /// The ledger's place: there only when `ok`.
    pub to: PathBuf,
    /// The backup's newest audit row: where the restored ledger's trail ends.
    pub head: AuditHead,
    /// The backup's trail, verified from its first row.
    pub verification: Verification,
    /// The backup's integrity, foreign keys, stored audit tree and checkpoints' roots.
    pub check: CheckReport,
    /// The backup against the checkpoint given, when one was: its trail extends what was signed.
    pub checkpoint: Option<CheckpointVerification>,
    /// True when the backup verifies, checks, and verifies against the checkpoint given; only
    /// then is it restored.
    pub ok: bool,
}

impl Ledger {
    /// Writes a consistent copy of this SQLite ledger, as it stands at one moment, to the new
    /// file `dest` while writers go on (`VACUUM INTO` a file beside it, synced), and checks the
    /// copy on its own: its trail verified from the first row, and its integrity, foreign keys,
    /// stored audit tree and checkpoints' roots. Only a copy that passes takes the name `dest`;
    /// one that does not is removed, and said so in [`Backup::ok`]. A PostgreSQL ledger is
    /// backed up with the server's tools (docs/operations.md); [`Ledger::restore`] puts a
    /// backup back.
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for a `dest` that exists or that names no file, and on PostgreSQL;
    /// `Storage`. A copy that does not verify or check is no error: [`Backup::ok`] is false.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::Ledger;
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// let backup = ledger.backup(dir.path().join("backup.db"))?;
    /// assert!(backup.ok);
    /// assert_eq!(backup.head, ledger.audit_head()?);
    /// # Ok(()) }
    /// ```
    pub fn backup(&self, dest: impl AsRef<Path>) -> Result<Backup> {
        let dest = dest.as_ref();
        let partial = partial_beside(dest, "a backup is written to a new file only")?;
        self.storage.backup_into(&partial)?;
        let (head, verification, check) = match checked(&partial) {
            Ok(found) => found,
            Err(e) => {
                discard(&partial);
                return Err(e);
            }
        };
        let ok = verification.ok && check.ok;
        if ok {
            publish(&partial, dest, "a backup is written to a new file only")?;
        } else {
            discard(&partial);
        }
        Ok(Backup {
            to: dest.to_path_buf(),
            head,
            verification,
            check,
            ok,
        })
    }

    /// Puts the SQLite backup `copy` in the ledger's place `to`, where no ledger is, once the
    /// backup passes every check a backup gets ([`Ledger::backup`]) and, when `checkpoint` is
    /// given (a signed note and the key that verifies it), verifies against it: its trail then
    /// extends what was signed. A backup that does not pass is not restored: nothing is
    /// written and [`Restored::ok`] says why. The restored ledger is a consistent copy of
    /// `copy` (`VACUUM INTO`), synced, that takes the name `to` only once whole; `copy` is only
    /// read.
    ///
    /// Stop every process that uses the ledger and move its files (`to`, `to-wal`, `to-shm`)
    /// aside first: a process still holding the old file would go on writing to it, not to
    /// the restored one (docs/operations.md).
    ///
    /// # Errors
    ///
    /// `InvalidConfig` when `to` or its `-wal`, `-shm` or `-journal` file exists, or either
    /// side is a PostgreSQL URL; `NoLedger` when `copy` holds no ledger; `Storage`.
    pub fn restore(
        copy: impl AsRef<Path>,
        to: impl AsRef<Path>,
        checkpoint: Option<(&str, &VerifierKey)>,
    ) -> Result<Restored> {
        let (copy, to) = (copy.as_ref(), to.as_ref());
        for side in [copy, to] {
            if crate::storage::is_url(&side.to_string_lossy()) {
                return Err(InputError::InvalidConfig(
                    "restore puts a SQLite backup back; a PostgreSQL ledger is restored with the \
                     server's tools (pg_restore, or a base backup), then checked with verify \
                     --checkpoint (docs/operations.md)"
                        .to_owned(),
                )
                .into());
            }
        }
        let why = "restore puts a backup only where no ledger is: stop every process that uses \
                   the ledger and move its files aside first";
        for companion in ["", "-wal", "-shm", "-journal"] {
            let mut name = to.as_os_str().to_owned();
            name.push(companion);
            refuse_existing(Path::new(&name), why)?;
        }
        let source = Ledger::open_with(copy, Config::default().read_only(true))?;
        let verification = source.verify(None)?;
        let check = source.check()?;
        let head = source.audit_head()?;
        let checkpoint = checkpoint
            .map(|(note, key)| source.verify_checkpoint(note, key, &CheckpointOptions::default()))
            .transpose()?;
        let ok = verification.ok && check.ok && checkpoint.as_ref().is_none_or(|c| c.ok);
        let restored = Restored {
            from: copy.to_path_buf(),
            to: to.to_path_buf(),
            head,
            verification,
            check,
            checkpoint,
            ok,
        };
        if !ok {
            return Ok(restored);
        }
        let partial = partial_beside(to, why)?;
        source.storage.backup_into(&partial)?;
        drop(source);
        // The file written is the one checked, page for page; its head says it is whole.
        match checked_head(&partial) {
            Ok(head) if head == restored.head => {}
            Ok(head) => {
                discard(&partial);
                return Err(Corruption::new(format!(
                    "the restored copy ends at audit row {} where the backup ends at {}",
                    head.seq, restored.head.seq
                ))
                .into());
            }
            Err(e) => {
                discard(&partial);
                return Err(e);
            }
        }
        publish(&partial, to, why)?;
        Ok(restored)
    }
}

/// The copy at `path` checked on its own, read-only: its head, its trail verified from the
/// first row, and the whole-ledger check.
fn checked(path: &Path) -> Result<(AuditHead, Verification, CheckReport)> {
    let copy = Ledger::open_with(path, Config::default().read_only(true))?;
    Ok((copy.audit_head()?, copy.verify(None)?, copy.check()?))
}

/// The head of the ledger at `path`, read-only.
fn checked_head(path: &Path) -> Result<AuditHead> {
    Ledger::open_with(path, Config::default().read_only(true))?.audit_head()
}
