//! The [`Ledger`] handle: the one way in. It checks what a caller gives, opens the transaction
//! each operation needs, and calls the concept that owns the rule; it holds no rule itself.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::audit::{self, AuditQuery, Verification};
use crate::clock::stored_precision;
use crate::config::Config;
use crate::copy::{self, Copied};
use crate::decisions::{self, Decision, Explanation};
use crate::error::{InputError, Location, Result};
use crate::grants::{self, CommandPattern};
use crate::labels::{self, Raise, RaiseOutcome, SessionState};
use crate::model::{
    validate_actor, validate_new_id, AuditEntry, AuditHead, CheckReport, Id, Posture, PostureLevel,
    Scope, Session,
};
use crate::postures::{self, validate_preview_token, EpochStart, Propagation, Revocation};
use crate::sessions::{self, Bounds, CreateOutcome, Created, TreeEntry, TreeNode};
use crate::storage::{Storage, TreeTop, Write};

/// An open ledger. Cheap to share: wrap it in an `Arc` and call it from many threads; each call
/// takes a pooled connection for its duration.
///
/// Every write is one transaction that takes the write lock before its first statement and
/// commits the change and its audit rows together. Methods that take an `actor` record it in
/// the audit trail: 1 to 64 characters from `[A-Za-z0-9._:@-]`. The errors each method lists
/// are named by their leaf: `InvalidId` is `Error::Input(InputError::InvalidId { .. })`,
/// `UnknownSession` is `Error::Conflict(Conflict::UnknownSession(_))`.
#[derive(Debug)]
pub struct Ledger {
    storage: Storage,
    config: Config,
}

fn assert_send_sync<T: Send + Sync>() {}
const _: fn() = assert_send_sync::<Ledger>;

impl Ledger {
    /// Opens the ledger at `path` with the default [`Config`], creating and migrating the file
    /// if needed.
    ///
    /// # Errors
    ///
    /// [`StorageError`](crate::StorageError) `NotALedger` for a file that is some other
    /// database or not a database, `SchemaTooNew` for a ledger written by a newer build,
    /// `ReadOnly` when the file cannot be written (the file is left untouched in each case),
    /// `Engine` when it cannot be opened at all.
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger> {
        Ledger::open_with(path, Config::default())
    }

    /// Opens the ledger at `path` with `config`.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`]; `NoLedger` when the file does not exist and
    /// [`Config::create_if_missing`] is false; [`InputError::InvalidConfig`] for a setting the
    /// engine cannot take, before anything is opened.
    pub fn open_with(path: impl AsRef<Path>, config: Config) -> Result<Ledger> {
        let storage = Storage::open(path.as_ref(), &config)?;
        Ok(Ledger { storage, config })
    }

    /// Where the ledger is: its file, or its server and database (never with a password).
    pub fn location(&self) -> &Location {
        self.storage.location()
    }

    /// The schema version of this ledger's engine that this build reads and writes.
    pub fn schema_version(&self) -> i64 {
        self.storage.schema_version()
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The clock's time at the stored precision.
    fn wall_clock(&self) -> DateTime<Utc> {
        stored_precision(self.config.clock.now())
    }

    /// Runs `f` in one write transaction with the time of the write, read once the write lock
    /// is held ([`audit::write_time`]): an operation never writes a time from before a change
    /// it waited for, and times never go back along the trail.
    fn write<T>(&self, mut f: impl FnMut(&mut dyn Write, DateTime<Utc>) -> Result<T>) -> Result<T> {
        self.storage.write(|tx| {
            let now = audit::write_time(tx.read(), self.wall_clock())?;
            f(tx, now)
        })
    }

    /// Records a root session: no creator, depth 0, born with the default label (`private`,
    /// trusted). Ids of the spawned form `sub-<parent>-<n>` are reserved.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `SessionExists` (the id is or was in use); nothing written.
    pub fn create_root(&self, id: &str, actor: &str) -> Result<Session> {
        let id = validate_new_id(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| sessions::create_root(tx, id, actor, now))
    }

    /// Records a session created by the live session `creator` (a spawned id seen for the
    /// first time is recorded first), within the bounds of rule S2, born with the creator's
    /// posture as it stands now (P1) and not materialized: its first read inherits (L2).
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `SessionEnded` (the creator's),
    /// `SessionExists`, with nothing written; [`Error::Refused`](crate::Error::Refused) by a
    /// bound, with one `session.create_refused` row written and nothing created.
    pub fn create_child(&self, id: &str, creator: &str, actor: &str) -> Result<Created> {
        let (id, creator) = (validate_new_id(id)?, Id::parse(creator)?);
        validate_actor(actor)?;
        let bounds = Bounds::from(&self.config);
        match self.write(|tx, now| sessions::create_child(tx, id, creator, actor, &bounds, now))? {
            CreateOutcome::Created(created) => Ok(created),
            CreateOutcome::Refused(refusal) => Err(refusal.into()),
        }
    }

    /// The session's label and posture. A materialized session's is read without writing. A
    /// child's first read (rule L2) walks `created_by` up to the nearest materialized ancestor
    /// and gives its label to the child and every unmaterialized session on the way, with a
    /// `label.inherit` row each; a spawned id with no row (L3) first records its parsed chain.
    /// Any other unknown id (L4) reads as the default with `known: false`, writing nothing. On
    /// a [read-only](Config::read_only) handle a first read answers the same and writes
    /// nothing: `materialized` is [`Materialized::Unrecorded`](crate::Materialized::Unrecorded).
    ///
    /// # Errors
    ///
    /// `InvalidId`; [`Error::Storage`](crate::Error::Storage).
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, Raise, Taint};
    /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.raise("conductor", Raise { taint: Some(Taint::Secret), untrusted: false }, "alice")?;
    /// ledger.create_child("worker", "conductor", "alice")?;
    /// assert_eq!(ledger.state("worker")?.taint, Taint::Secret);
    /// assert_eq!(ledger.state("sub-worker-1")?.taint, Taint::Secret);
    /// assert!(!ledger.state("stranger")?.known);
    /// # Ok(()) }
    /// ```
    pub fn state(&self, id: &str) -> Result<SessionState> {
        let id = Id::parse(id)?;
        if let Some(stored) = self.storage.read(|r| labels::stored_state(r, id))? {
            return Ok(stored);
        }
        if self.storage.is_read_only() {
            let now = self.wall_clock();
            return self
                .storage
                .snapshot(|r| labels::unrecorded_state(r, id, now));
        }
        if !self.storage.read(|r| sessions::is_anchored(r, id))? {
            return Ok(SessionState::unknown(id));
        }
        let stored = self.write(|tx, now| labels::materialize(tx, id, now))?;
        Ok(stored.unwrap_or_else(|| SessionState::unknown(id)))
    }

    /// The session's stored state, materializing nothing: `None` when it is not materialized.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `Storage`.
    pub fn stored_label(&self, id: &str) -> Result<Option<SessionState>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| labels::stored_state(r, id))
    }

    /// Raises the label (rule L1): the higher class, the flag ORed; an unmaterialized session
    /// inherits first (L5). A raise that changes nothing writes nothing. An ended session can
    /// be raised: a label records what the session saw.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `NothingToRaise`; `UnknownSession` for an id that is
    /// neither recorded nor a spawned id of a recorded session. Nothing is written.
    pub fn raise(&self, id: &str, raise: Raise, actor: &str) -> Result<RaiseOutcome> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        let requested = raise.requested()?;
        self.write(|tx, now| labels::raise(tx, id, requested, actor, now))
    }

    /// Ends a live session and its spawned sub-agents (created children stay live), each a
    /// tombstone from then on, with a `session.end` row each.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `SessionEnded`. Nothing is written.
    pub fn end(&self, id: &str, actor: &str) -> Result<Session> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| sessions::end(tx, id, actor, now))
    }

    /// The recorded session with this id, or `None`.
    ///
    /// # Errors
    ///
    /// `InvalidId`; [`Error::Storage`](crate::Error::Storage).
    pub fn session(&self, id: &str) -> Result<Option<Session>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| r.session(id))
    }

    /// The creators of `id`, nearest first, ending with its root. Empty for a root.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn ancestors(&self, id: &str) -> Result<Vec<Session>> {
        let id = Id::parse(id)?;
        self.storage.snapshot(|r| {
            sessions::require(r, id)?;
            r.ancestors(id)
        })
    }

    /// The sessions `id` created or spawned (that the ledger has recorded), oldest first.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn children(&self, id: &str) -> Result<Vec<Session>> {
        let id = Id::parse(id)?;
        self.storage.snapshot(|r| {
            sessions::require(r, id)?;
            r.children(id)
        })
    }

    /// The subtree of `id` (itself and every descendant, created or spawned), depth-first,
    /// children oldest first, each with its depth below `id`.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn subtree(&self, id: &str) -> Result<Vec<TreeEntry>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| sessions::subtree(r, id))
    }

    /// The subtree of `id` for a tree view: each session depth-first, children oldest first,
    /// with its label (stored, or the one its first read would give it), whether it is
    /// materialized, and its posture. One snapshot, one walk of the subtree, nothing written
    /// (the crate docs have an example).
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn tree(&self, id: &str) -> Result<Vec<TreeNode>> {
        let id = Id::parse(id)?;
        self.storage
            .snapshot(|r| sessions::tree(r, TreeTop::Session(id)))
    }

    /// Every session as a forest, as [`Ledger::tree`] gives one subtree: each root's subtree in
    /// the order the roots were opened. It reads the whole ledger.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn forest(&self) -> Result<Vec<TreeNode>> {
        self.storage.snapshot(|r| sessions::tree(r, TreeTop::Roots))
    }

    /// An operator grants `level` on a live session, replacing any posture it held, in the
    /// current epoch. A spawned id of a recorded session is recorded first.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `SessionEnded`; nothing is written.
    pub fn grant(&self, id: &str, level: PostureLevel, actor: &str) -> Result<Posture> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| {
            let session = sessions::resolve_live(tx, id, now)?;
            postures::grant(tx, &session, level, actor, now)
        })
    }

    /// The posture row of a session, current or lapsed, or `None`.
    ///
    /// # Errors
    ///
    /// `InvalidId`; [`Error::Storage`](crate::Error::Storage).
    pub fn posture(&self, id: &str) -> Result<Option<Posture>> {
        let id = Id::parse(id)?;
        self.storage.read(|r| r.posture(id))
    }

    /// The current posture epoch (0 until the first is started).
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn current_epoch(&self) -> Result<i64> {
        self.storage.read(|r| r.current_epoch())
    }

    /// Revokes postures from `id` with an explicit [`Propagation`] (rule R1): `Local` (this
    /// session's; `still_holding` lists the descendants holding one inherited through it),
    /// `Cascade` (this session's and every descendant's, in one statement, one `posture.revoke`
    /// row each; a preview's token binds it to the previewed state, R2), or `Preview` (nothing
    /// changes; exactly who a cascade would change, with a token). Ended sessions can be
    /// revoked from: their descendants may still run.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `InvalidToken`, `UnknownSession`, `StalePreview`; nothing
    /// is written in these cases.
    pub fn revoke(&self, id: &str, propagation: Propagation, actor: &str) -> Result<Revocation> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        match propagation {
            Propagation::Preview => self.storage.read(|r| postures::preview(r, id)),
            Propagation::Local => self.write(|tx, now| postures::revoke_local(tx, id, actor, now)),
            Propagation::Cascade { token } => {
                let token = token.as_deref();
                token.map(validate_preview_token).transpose()?;
                self.write(|tx, now| postures::revoke_cascade(tx, id, token, actor, now))
            }
        }
    }

    /// Rule R4: removes every session's posture, in one statement, with an audit row each.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; [`Error::Storage`](crate::Error::Storage).
    pub fn revoke_all(&self, actor: &str) -> Result<Revocation> {
        validate_actor(actor)?;
        self.write(|tx, now| postures::revoke_all(tx, actor, now))
    }

    /// Starts a new posture epoch (rule P5): a single embedding backend calls this when it boots;
    /// nodes sharing a PostgreSQL ledger, once per full restart of the deployment (opening never
    /// does: docs/design.md). Postures of the previous epoch stop counting, unless the ledger
    /// was opened with [`Config::durable_postures`], which carries them over. Audited.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; [`Error::Storage`](crate::Error::Storage).
    pub fn start_epoch(&self, actor: &str) -> Result<EpochStart> {
        self.start_epoch_with(self.config.durable_postures, actor)
    }

    /// [`Ledger::start_epoch`], carrying the postures over when `durable`, whatever the config.
    ///
    /// # Errors
    ///
    /// As [`Ledger::start_epoch`].
    pub fn start_epoch_with(&self, durable: bool, actor: &str) -> Result<EpochStart> {
        validate_actor(actor)?;
        self.write(|tx, now| postures::start_epoch(tx, durable, actor, now))
    }

    /// Allows a command pattern for one live session (never inherited, rule P4). Returns
    /// false, writing nothing, when the session already had it.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidPattern`, `InvalidActor`, `UnknownSession`, `SessionEnded`.
    pub fn add_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<bool> {
        self.add_pattern_with_examples::<&str>(id, pattern, actor, &[], &[])
    }

    /// [`Ledger::add_pattern`], after checking the pattern against examples that must and must
    /// not match ([`check_pattern_examples`](crate::check_pattern_examples)).
    ///
    /// # Errors
    ///
    /// As [`Ledger::add_pattern`]; `InvalidPattern` when an example disagrees.
    pub fn add_pattern_with_examples<S: AsRef<str>>(
        &self,
        id: &str,
        pattern: &str,
        actor: &str,
        must_match: &[S],
        must_not_match: &[S],
    ) -> Result<bool> {
        let id = Id::parse(id)?;
        grants::check_new_pattern(pattern, must_match, must_not_match)?;
        validate_actor(actor)?;
        self.write(|tx, now| grants::add_pattern(tx, id, pattern, actor, now))
    }

    /// Removes a command pattern from a session, live or ended, including one that this build
    /// refuses ([`CommandPattern::refused`]).
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `UnknownSession`, `UnknownPattern`.
    pub fn remove_pattern(&self, id: &str, pattern: &str, actor: &str) -> Result<()> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        self.write(|tx, now| grants::remove_pattern(tx, id, pattern, actor, now))
    }

    /// The command patterns on a session, oldest first.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `UnknownSession`; [`Error::Storage`](crate::Error::Storage).
    pub fn patterns(&self, id: &str) -> Result<Vec<CommandPattern>> {
        let id = Id::parse(id)?;
        self.storage.snapshot(|r| grants::patterns(r, id))
    }

    /// Grants an override scope named `name` on a live session for `ttl`, replacing any scope
    /// of that name. Never inherited and never turned into a posture (rule P4).
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidScopeName`, `InvalidTtl` (zero, or over
    /// [`MAX_TTL`](crate::MAX_TTL)), `InvalidActor`, `UnknownSession`, `SessionEnded`.
    pub fn grant_scope(
        &self,
        id: &str,
        name: &str,
        ttl: std::time::Duration,
        actor: &str,
    ) -> Result<Scope> {
        let id = Id::parse(id)?;
        grants::validate_scope_name(name)?;
        validate_actor(actor)?;
        let ttl = grants::check_ttl(ttl)?;
        self.write(|tx, now| grants::grant_scope(tx, id, name, ttl, actor, now))
    }

    /// Revokes a live override scope before it expires.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidScopeName`, `InvalidActor`, `UnknownSession`, `UnknownScope`.
    pub fn revoke_scope(&self, id: &str, name: &str, actor: &str) -> Result<()> {
        let id = Id::parse(id)?;
        grants::validate_scope_name(name)?;
        validate_actor(actor)?;
        self.write(|tx, now| grants::revoke_scope(tx, id, name, actor, now))
    }

    /// The override scopes on a session, live or not, oldest first.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `UnknownSession`; [`Error::Storage`](crate::Error::Storage).
    pub fn scopes(&self, id: &str) -> Result<Vec<Scope>> {
        let id = Id::parse(id)?;
        self.storage.snapshot(|r| grants::scopes(r, id))
    }

    /// May `id` run `command` now? Approve or ask, with the reason (rule A2): an ended or
    /// unknown session asks; `trust` approves; `trust_reads` approves a command the caller
    /// classified as `read_only`; patterns approve a line whose every simple command one of the
    /// session's patterns admits; a live scope approves; otherwise ask. Postures of an earlier
    /// epoch do not count. Indexed reads, no write, except that a spawned id of a recorded
    /// session seen for the first time is allocated first (rule P3).
    ///
    /// # Errors
    ///
    /// `InvalidId`, `EmptyCommand`; [`Error::Storage`](crate::Error::Storage).
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, PostureLevel, Verdict};
    /// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.grant("conductor", PostureLevel::TrustReads, "alice")?;
    /// assert_eq!(ledger.decide("conductor", "ls -la", true)?.verdict, Verdict::Approve);
    /// assert_eq!(ledger.decide("conductor", "rm -rf build", false)?.verdict, Verdict::Ask);
    /// # Ok(()) }
    /// ```
    pub fn decide(&self, id: &str, command: &str, read_only: bool) -> Result<Decision> {
        let id = Id::parse(id)?;
        if command.is_empty() {
            return Err(InputError::EmptyCommand.into());
        }
        let decide = |now| {
            self.storage
                .read(|r| decisions::decide(r, id, command, read_only, now))
        };
        if let Some(decision) = decide(self.wall_clock())? {
            return Ok(decision);
        }
        // First sight of a spawned id: its allocation (rule P3), then the decision.
        let spawned = self.storage.read(|r| sessions::spawn_anchor(r, id))?;
        if spawned.is_some() {
            self.write(|tx, now| labels::materialize(tx, id, now))?;
            if let Some(decision) = decide(self.wall_clock())? {
                return Ok(decision);
            }
        }
        Ok(Decision::unknown(id))
    }

    /// Why `id` holds what it holds, in one snapshot: label, posture and grant, grants, audit.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn explain(&self, id: &str) -> Result<Explanation> {
        let id = Id::parse(id)?;
        let now = self.config.clock.now();
        self.storage.snapshot(|r| decisions::explain(r, id, now))
    }

    /// The audit rows matching `query`, oldest first, in one snapshot. What it reads is said
    /// on [`AuditQuery`].
    ///
    /// # Errors
    ///
    /// `InvalidId` for a malformed session or subtree id; `Corruption` for a row the library
    /// cannot read back, or when `audit_time_order` lost its one row (a hand edit).
    pub fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        self.storage.snapshot(|r| audit::list(r, query))
    }

    /// The head of the audit chain, to keep somewhere else.
    ///
    /// # Errors
    ///
    /// `Storage`.
    pub fn audit_head(&self) -> Result<AuditHead> {
        self.storage.read(|r| r.audit_head())
    }

    /// Walks the whole chain in one snapshot for the first row that does not verify (rule A3),
    /// and with a saved head, rows removed from the end since. A failed chain is no error.
    ///
    /// # Errors
    ///
    /// `Storage`; `Corruption` when the one row of `audit_time_order` was deleted by hand.
    pub fn verify(&self, saved: Option<&AuditHead>) -> Result<Verification> {
        self.storage.snapshot(|r| audit::verify(r, saved))
    }

    /// Verifies only what was written since `saved`, a head kept from [`Ledger::audit_head`]:
    /// that its row still has its hash and contents, then the chain from it to the newest row,
    /// reading no row before it (a daily check costs a day's rows). A
    /// [`ChainProblem`](crate::ChainProblem) `Truncated`, `HeadMismatch` or `Gap` says the
    /// saved head's row is past the end, changed or gone.
    ///
    /// # Errors
    ///
    /// As [`Ledger::verify`].
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let ledger = session_ledger::Ledger::open(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// let yesterday = ledger.audit_head()?;
    /// ledger.create_root("reviewer", "bob")?;
    /// let v = ledger.verify_from(&yesterday)?;
    /// assert!(v.ok);
    /// assert_eq!(v.rows, 2); // the saved head's row and the one after it
    /// # Ok(()) }
    /// ```
    pub fn verify_from(&self, saved: &AuditHead) -> Result<Verification> {
        self.storage.snapshot(|r| audit::verify_from(r, saved))
    }

    /// Checks the whole file in one read transaction: the engine's integrity check and every
    /// foreign key. Reads every page (opening runs neither) and writes nothing, on a read-only
    /// handle too. Problems are not an error ([`CheckReport::ok`]); nothing is repaired.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage) when the file cannot be read at all.
    pub fn check(&self) -> Result<CheckReport> {
        self.storage.snapshot(|r| r.check())
    }

    /// Copies this ledger, row for row as it stood at one moment, into `target`, a new
    /// PostgreSQL ledger opened by the schema's owner, in one transaction that commits only once
    /// the copied trail verifies and ends at this ledger's head. Writers here may go on.
    ///
    /// # Errors
    ///
    /// `NotEmpty` when `target` holds anything; `InvalidCopyTarget` for a SQLite target;
    /// `Corruption` when this ledger's trail does not verify; `Storage` (a role that does not
    /// own the tables among them). Nothing is copied in each case.
    pub fn copy_into(&self, target: &Ledger) -> Result<Copied> {
        copy::copy(&self.storage, &target.storage)
    }
}
