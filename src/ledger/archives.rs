//! The handle's archives: moving what is over out of the live ledger into a file
//! (src/archive.rs says what goes and in which order), checking an archive, and saying where
//! an archived session went.

use std::path::Path;

use crate::archive::{self, ArchiveRequest, ArchiveRun, ArchiveVerification, ArchivedSession};
use crate::audit::{self, VerifierKey};
use crate::error::{Conflict, Error, Result};
use crate::model::{spawned_parent, validate_actor, Id};

use super::Ledger;

impl Ledger {
    /// Archives what `request` names into the new file `to`, and moves it out of the live
    /// ledger (rule K1): the trees whose every session has ended (before
    /// [`ArchiveRequest::before`], or the one tree [`ArchiveRequest::tree`]), with their labels,
    /// postures, patterns and scopes, and the trail's rows up to the newest checkpoint signed
    /// before the cut-off, with their checkpoints and decision records. The file is written,
    /// synced and verified before anything leaves; rows leave in short batches, each tree
    /// whole, and a run stopped between two batches is finished by the next run (which finishes
    /// the last archive first). An archived session's id is never used again; `verify` then
    /// starts the chain at the archive's boundary, and [`Ledger::verify_archive`] checks the
    /// file. On PostgreSQL it runs as the tables' owner (docs/operations.md).
    ///
    /// # Errors
    ///
    /// `InvalidConfig` when `to` exists or names no file; `InvalidId` for a malformed root;
    /// `UnknownSession` for a root the ledger does not have; `NotArchivable` for a request with
    /// neither a cut-off nor a tree, a tree with a session still running, or a session that is
    /// no root; `Corruption` when the file written does not verify (it is removed, and nothing
    /// leaves); `Storage`.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{ArchiveRequest, Conflict, Error, Ledger, SignerKey};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("done", "alice")?;
    /// ledger.end("done", "alice")?;
    /// ledger.checkpoint(&SignerKey::generate("example.org/ledger")?, None, "alice")?;
    /// let run = ledger.archive(dir.path().join("archive-1.db"), &ArchiveRequest::tree("done"), "alice")?;
    /// assert_eq!(run.made.unwrap().sessions, 1);
    /// assert!(matches!(
    ///     ledger.state("done"),
    ///     Err(Error::Conflict(Conflict::SessionArchived { .. }))
    /// ));
    /// # Ok(()) }
    /// ```
    pub fn archive(
        &self,
        to: impl AsRef<Path>,
        request: &ArchiveRequest,
        actor: &str,
    ) -> Result<ArchiveRun> {
        validate_actor(actor)?;
        let wall = || self.wall_clock();
        archive::archive(&self.storage, to.as_ref(), request, actor, &|r| {
            audit::write_time(r, wall())
        })
    }

    /// Checks the archive file `file` on its own: its trail from the boundary it starts after
    /// to its own against its signed checkpoint (verified with `key`), its decision batches,
    /// its integrity, references and stored tree, and that every session in it had ended; then
    /// against this ledger, when `against_live`: that it records the file with the same
    /// SHA-256 and boundary, and that its newest checkpoint extends the archive's (a
    /// consistency proof). A failed check is no error ([`ArchiveVerification::ok`]).
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for a file that is no archive; `NotALedger`, `NoLedger`; `Storage`.
    pub fn verify_archive(
        &self,
        file: impl AsRef<Path>,
        key: &VerifierKey,
        against_live: bool,
    ) -> Result<ArchiveVerification> {
        archive::verify_file(file.as_ref(), key, against_live.then_some(&self.storage))
    }

    /// Checks the archive file `file` on its own, without a live ledger: see
    /// [`Ledger::verify_archive`].
    ///
    /// # Errors
    ///
    /// As [`Ledger::verify_archive`].
    pub fn verify_archive_file(
        file: impl AsRef<Path>,
        key: &VerifierKey,
    ) -> Result<ArchiveVerification> {
        archive::verify_file(file.as_ref(), key, None)
    }

    /// Where the session `id` went when it was archived, or `None` when it was not.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `Storage`.
    pub fn archived(&self, id: &str) -> Result<Option<ArchivedSession>> {
        let id = Id::parse(id)?;
        let found = self.storage.read(|r| r.archived_session(id.as_str()))?;
        Ok(found.map(|found| ArchivedSession {
            id: found.id,
            tree: found.tree,
            archive: found.archive.archive,
            file: found.archive.file,
            archived_at: found.archive.made_at,
        }))
    }

    /// `SessionArchived` when the session `id`, or the session a spawned id names as its
    /// parent (at any depth), was archived: where its rows went. A spawned sub-agent of an
    /// archived tree is not recorded, since the label it would inherit left with its tree.
    pub(super) fn refuse_archived(&self, id: Id<'_>) -> Result<()> {
        let mut at = Some(id.as_str());
        while let Some(id) = at {
            if let Some(found) = self.storage.read(|r| r.archived_session(id))? {
                return Err(Conflict::SessionArchived {
                    id: id.to_owned(),
                    archive: found.archive.archive,
                    file: found.archive.file,
                    made_at: crate::clock::format_ts(found.archive.made_at),
                }
                .into());
            }
            at = spawned_parent(id);
        }
        Ok(())
    }

    /// `result`, with an `UnknownSession` said as `SessionArchived` when that session was
    /// archived: the cold path of an operation on a session it did not find.
    pub(super) fn archived_or<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(Error::Conflict(Conflict::UnknownSession(id))) => {
                if let Ok(parsed) = Id::parse(&id) {
                    self.refuse_archived(parsed)?;
                }
                Err(Conflict::UnknownSession(id).into())
            }
            other => other,
        }
    }

    /// `result` of creating the session `id`; when it failed, `SessionArchived` if that id
    /// was archived (the schema refuses it as a reused id): the cold path of a create.
    pub(super) fn new_id_or_archived<T>(&self, id: Id<'_>, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.refuse_archived(id)?;
        }
        result
    }
}
