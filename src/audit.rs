//! The audit trail: one row for every change, written in the same transaction as the change,
//! and chained by SHA3-256 so that an edited, removed or truncated row is detected (rule A3).
//!
//! Each row's `hash` is SHA3-256 over its predecessor's hash and a canonical encoding of the row
//! in which every field is length-prefixed (see [`chain_hash`]); the first row's predecessor is
//! [`GENESIS_HASH`]. The same computation is one SQL expression with the stock `sqlite3` shell's
//! `sha3()`, so an auditor can check the chain without this library (`docs/audit.md`).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha3::{Digest, Sha3_256};

use crate::error::{Error, InputError};

/// The `prev_hash` of the first audit row: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of an audit row, as 64 lower-case hex digits:
///
/// ```text
/// sha3_256(prev_hash | "|" | seq | "|" | F(at) | F(actor) | F(kind) | F(session) | F(detail))
/// F(x) = byte_length(x) ":" x "|",   F(None) = "-|"
/// ```
///
/// ```
/// let h = session_ledger::chain_hash(session_ledger::GENESIS_HASH, 1,
///     "2026-01-01T00:00:00.000Z", "alice", "session.root", Some("conductor"), "{}");
/// assert_eq!(h.len(), 64);
/// ```
pub fn chain_hash(
    prev_hash: &str,
    seq: i64,
    at: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &str,
) -> String {
    let mut h = Sha3_256::new();
    let mut digits = [0u8; 24];
    h.update(prev_hash.as_bytes());
    h.update(b"|");
    h.update(decimal(seq, &mut digits));
    h.update(b"|");
    for field in [Some(at), Some(actor), Some(kind), session, Some(detail)] {
        match field {
            Some(text) => {
                h.update(decimal(text.len() as i64, &mut digits));
                h.update(b":");
                h.update(text.as_bytes());
                h.update(b"|");
            }
            None => h.update(b"-|"),
        }
    }
    hex(&h.finalize())
}

/// `n` in decimal, written into the end of `buf`, without allocating: this runs once per audit
/// row and once per field.
fn decimal(n: i64, buf: &mut [u8; 24]) -> &[u8] {
    let negative = n < 0;
    let mut m = n.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0f)]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// The head of the audit chain: the last row's sequence number and hash. Keep it somewhere
/// else; [`Ledger::verify`](crate::Ledger::verify) given it also detects rows removed from the
/// end since, and [`Ledger::verify_from`](crate::Ledger::verify_from) checks only the rows
/// written after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditHead {
    /// The last row's sequence number (0 for an empty trail).
    pub seq: i64,
    /// Its hash ([`GENESIS_HASH`] for an empty trail).
    pub hash: String,
}

impl fmt::Display for AuditHead {
    /// `SEQ:HASH`, the form `session-ledger verify --head` takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

impl FromStr for AuditHead {
    type Err = Error;

    /// Parses `SEQ:HASH`, with SEQ a non-negative integer and HASH 64 lower-case hex digits.
    fn from_str(s: &str) -> Result<AuditHead, Error> {
        let bad = || Error::Input(InputError::InvalidHead(s.to_owned()));
        let (seq, hash) = s.split_once(':').ok_or_else(bad)?;
        if seq.is_empty() || seq.len() > 18 || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let hash_ok =
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hash_ok {
            return Err(bad());
        }
        Ok(AuditHead {
            seq: seq.parse().map_err(|_| bad())?,
            hash: hash.to_owned(),
        })
    }
}

/// What is wrong with the first row of the chain that does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChainProblem {
    /// A sequence number is missing before this row: a row was removed.
    Gap,
    /// The row's `prev_hash` is not its predecessor's hash.
    BrokenLink,
    /// The row's hash does not match its contents: the row was edited.
    HashMismatch,
    /// The saved head's row is missing: rows were removed from the end.
    Truncated,
    /// The saved head's row exists but has another hash.
    HeadMismatch,
    /// The row's time is before its predecessor's. The library never writes such a row, and
    /// from schema version 8 on the schema refuses one, so it was written with the schema's
    /// triggers dropped. (Rows written before version 8 are not checked for this where they
    /// went back in time: see `audit_time_order` in docs/schema.md.)
    TimeGoesBack,
}

impl fmt::Display for ChainProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChainProblem::Gap => "a row before it is missing (removed)",
            ChainProblem::BrokenLink => "its prev_hash is not the previous row's hash",
            ChainProblem::HashMismatch => "its hash does not match its contents (edited)",
            ChainProblem::Truncated => {
                "the saved head is past the end of the trail (rows removed from the end)"
            }
            ChainProblem::HeadMismatch => "its hash differs from the saved head's",
            ChainProblem::TimeGoesBack => "its time is before the previous row's",
        })
    }
}

/// The result of walking the audit chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// True when every row verifies (and the saved head, if given, matches).
    pub ok: bool,
    /// How many rows were read and checked: the whole trail for
    /// [`Ledger::verify`](crate::Ledger::verify); the saved head's row and the rows after it
    /// for [`Ledger::verify_from`](crate::Ledger::verify_from).
    pub rows: u64,
    /// The chain's head as found.
    pub head: AuditHead,
    /// The first row that does not verify, if any.
    pub first_bad_seq: Option<i64>,
    /// What is wrong with it.
    pub problem: Option<ChainProblem>,
}

/// The actor recorded for writes the ledger makes on its own behalf: materializing a label on
/// first read, and recording a spawned sub-agent when it is first seen.
pub const LEDGER_ACTOR: &str = "ledger";

/// Every kind an audit row can have (its `kind`), in the order the schema added them.
///
/// The `audit_kinds` table of a ledger holds the same list, each kind with what a row of that
/// kind records and the keys of its `detail`; a migration that adds a kind adds it here too (a
/// test compares the two). The CLI's `audit --kind` accepts only these.
///
/// ```
/// assert!(session_ledger::AUDIT_KINDS.contains(&"posture.revoke"));
/// ```
pub const AUDIT_KINDS: &[&str] = &[
    // Version 1.
    "session.root",
    "session.create",
    "session.create_refused",
    "session.spawn",
    "session.end",
    "label.inherit",
    "label.raise",
    // Version 2.
    "posture.grant",
    "posture.revoke",
    "epoch.start",
    "pattern.add",
    "pattern.remove",
    "scope.grant",
    "scope.revoke",
];

/// One row of the audit trail. Its JSON form (`session-ledger --json audit`) has exactly these
/// field names: `seq`, `at`, `actor`, `kind`, `session`, `detail`, `prev_hash`, `hash`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Position in the trail, increasing.
    pub seq: i64,
    /// When the change was made.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub at: DateTime<Utc>,
    /// Who made it.
    pub actor: String,
    /// What happened, for example `session.create` or `label.raise`.
    pub kind: String,
    /// Which session it happened to.
    pub session: Option<String>,
    /// Everything else, as a JSON object.
    pub detail: serde_json::Value,
    /// The previous row's hash.
    pub prev_hash: String,
    /// This row's hash.
    pub hash: String,
}

/// Which audit rows to list. The default lists every row.
///
/// The filters combine. A listing reads what it lists, not the trail: rows about a session or a
/// subtree are read through the index `audit_by_session`, and a time window and `before` are
/// turned into a range of sequence numbers first (the window by a binary search over `seq`,
/// since times never decrease along the trail), so only `kind` on its own, or with `limit`
/// alone, reads the trail backwards from the newest row until it has found enough.
///
/// Pages: `limit` keeps the newest rows; to read on towards older ones, pass the smallest `seq`
/// of a page as `before` of the next, until a page comes back empty.
///
/// ```
/// # fn main() -> Result<(), session_ledger::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// use session_ledger::{AuditQuery, Ledger};
/// let ledger = Ledger::open(dir.path().join("ledger.db"))?;
/// for id in ["a", "b", "c", "d", "e"] {
///     ledger.create_root(id, "alice")?;
/// }
/// let newest = ledger.audit(&AuditQuery::all().limit(2))?;
/// assert_eq!(newest.iter().map(|r| r.seq).collect::<Vec<_>>(), [4, 5]);
/// let older = ledger.audit(&AuditQuery::all().limit(2).before(newest[0].seq))?;
/// assert_eq!(older.iter().map(|r| r.seq).collect::<Vec<_>>(), [2, 3]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// Only rows about this session.
    pub session: Option<String>,
    /// Only rows of this kind.
    pub kind: Option<String>,
    /// Only the most recent `limit` rows (still listed oldest first).
    pub limit: Option<u32>,
    /// Only rows about this session or any of its descendants.
    pub subtree: Option<String>,
    /// Only rows at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only rows before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only rows whose sequence number is smaller than this: the page before one whose oldest
    /// row had this `seq`.
    pub before: Option<i64>,
}

impl AuditQuery {
    /// Every row.
    pub fn all() -> AuditQuery {
        AuditQuery::default()
    }

    /// Only rows about `session`.
    pub fn session(mut self, session: impl Into<String>) -> AuditQuery {
        self.session = Some(session.into());
        self
    }

    /// Only rows of `kind`.
    pub fn kind(mut self, kind: impl Into<String>) -> AuditQuery {
        self.kind = Some(kind.into());
        self
    }

    /// Only the most recent `limit` rows.
    pub fn limit(mut self, limit: u32) -> AuditQuery {
        self.limit = Some(limit);
        self
    }

    /// Only rows about `root` or any of its descendants.
    pub fn subtree(mut self, root: impl Into<String>) -> AuditQuery {
        self.subtree = Some(root.into());
        self
    }

    /// Only rows at or after `since`.
    pub fn since(mut self, since: DateTime<Utc>) -> AuditQuery {
        self.since = Some(since);
        self
    }

    /// Only rows before `until`.
    pub fn until(mut self, until: DateTime<Utc>) -> AuditQuery {
        self.until = Some(until);
        self
    }

    /// Only rows whose `seq` is smaller than `seq`. With [`limit`](AuditQuery::limit), the
    /// newest `limit` of them: the next page towards older rows after a page whose oldest row
    /// had this `seq`.
    pub fn before(mut self, seq: i64) -> AuditQuery {
        self.before = Some(seq);
        self
    }
}

/// Why a session holds what it holds: its label's provenance, its posture's chain back to the
/// operator's grant, its grants, and the audit rows that did it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The session.
    pub session: crate::sessions::Session,
    /// Its label and posture now (read without materializing: `materialized` is `None` while
    /// the session has no label of its own yet).
    pub state: crate::labels::SessionState,
    /// The audit row of the operator's grant its posture traces back to, if it holds one.
    pub grant: Option<AuditEntry>,
    /// Its command patterns.
    pub patterns: Vec<crate::grants::CommandPattern>,
    /// Its override scopes that are live now.
    pub live_scopes: Vec<crate::grants::Scope>,
    /// Every audit row about the session, oldest first.
    pub audit: Vec<AuditEntry>,
}

mod ops {
    use super::{AuditEntry, AuditHead, AuditQuery, Explanation, Verification};
    use crate::error::{Conflict, Error, Result};
    use crate::ledger::Ledger;
    use crate::sessions::validate_id;
    use crate::storage;

    impl Ledger {
        /// The audit rows matching `query`, oldest first. What it reads is said on
        /// [`AuditQuery`]; the statements of one listing read one state of the file.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId) for a malformed session or subtree id; [`Error::Storage`];
        /// [`Error::Corruption`] for a row the library cannot read back, and, for a listing by
        /// time, when the one row of `audit_time_order` was deleted by hand (the ledger then
        /// cannot tell which part of the trail is in time order).
        pub fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
            for id in [&query.session, &query.subtree].into_iter().flatten() {
                validate_id(id)?;
            }
            self.storage.snapshot(|c| storage::audit::list(c, query))
        }

        /// The head of the audit chain, to keep somewhere else.
        ///
        /// # Errors
        ///
        /// [`Error::Storage`].
        pub fn audit_head(&self) -> Result<AuditHead> {
            self.storage.read(storage::audit::head)
        }

        /// Walks the audit chain and reports the first row that does not verify (rule A3).
        /// With a head saved earlier, also detects rows removed from the end since.
        ///
        /// # Errors
        ///
        /// [`Error::Storage`]; [`Error::Corruption`] when the one row of `audit_time_order`
        /// was deleted by hand. A chain that does not verify is not an error: see
        /// [`Verification::ok`].
        ///
        /// # Example
        ///
        /// ```
        /// # fn main() -> Result<(), session_ledger::Error> {
        /// # let dir = tempfile::tempdir().unwrap();
        /// let ledger = session_ledger::Ledger::open(dir.path().join("ledger.db"))?;
        /// ledger.create_root("conductor", "alice")?;
        /// let head = ledger.audit_head()?;
        /// assert!(ledger.verify(Some(&head))?.ok);
        /// # Ok(()) }
        /// ```
        pub fn verify(&self, saved: Option<&AuditHead>) -> Result<Verification> {
            self.storage.snapshot(|c| storage::audit::verify(c, saved))
        }

        /// Verifies only what was written since `saved`, a head kept from
        /// [`audit_head`](Ledger::audit_head) (and checked then): that the saved head's row
        /// still has its hash and the contents that give it, and then the chain from it to the
        /// newest row, as [`verify`](Ledger::verify) walks it. It reads the saved head's row
        /// and the rows after it, by sequence number, and none before, so a daily check costs
        /// a day's rows. A row changed before the saved head is for a full
        /// [`verify`](Ledger::verify) to find.
        ///
        /// The problems reported: [`ChainProblem::Truncated`] when the trail now ends before
        /// the saved head; [`ChainProblem::HeadMismatch`] when its row has another hash;
        /// [`ChainProblem::Gap`] at the next row when its row is gone but later ones are left;
        /// and any problem [`verify`](Ledger::verify) reports, for the rows after it. The saved
        /// head of an empty trail (seq 0) verifies the whole trail.
        ///
        /// [`ChainProblem::Truncated`]: crate::ChainProblem::Truncated
        /// [`ChainProblem::HeadMismatch`]: crate::ChainProblem::HeadMismatch
        /// [`ChainProblem::Gap`]: crate::ChainProblem::Gap
        ///
        /// # Errors
        ///
        /// [`Error::Storage`]; [`Error::Corruption`] as for [`verify`](Ledger::verify). A
        /// chain that does not verify is not an error: see
        /// [`Verification::ok`](crate::Verification::ok).
        ///
        /// # Example
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
            self.storage
                .snapshot(|c| storage::audit::verify_from(c, saved))
        }

        /// Why `id` holds what it holds. Reads only: an unmaterialized session is explained as
        /// it stands.
        ///
        /// # Errors
        ///
        /// [`InputError::InvalidId`](crate::InputError::InvalidId); [`Conflict::UnknownSession`](crate::Conflict::UnknownSession) when `id` is not recorded.
        pub fn explain(&self, id: &str) -> Result<Explanation> {
            validate_id(id)?;
            let now = self.config.clock.now();
            // Every part from one snapshot, so that they agree with each other.
            self.storage.snapshot(|c| {
                let session = storage::sessions::get(c, id)?
                    .ok_or_else(|| Error::Conflict(Conflict::UnknownSession(id.to_owned())))?;
                let state = match storage::labels::get(c, id)? {
                    Some(state) => state,
                    None => {
                        // Not materialized: no label of its own yet; show its posture alone.
                        let mut state = crate::ledger::unknown(id);
                        state.known = true;
                        let posture = storage::postures::get(c, id)?;
                        let counts = |level| {
                            crate::postures::Posture::admits(
                                posture.as_ref(),
                                session.is_live(),
                                level,
                            )
                        };
                        state.trust = counts(crate::postures::PostureLevel::Trust);
                        state.trust_reads = counts(crate::postures::PostureLevel::TrustReads);
                        state.posture = posture;
                        state
                    }
                };
                let grant = match &state.posture {
                    Some(p) => storage::audit::grant_row(c, p)?,
                    None => None,
                };
                let live_scopes = storage::grants::scopes(c, id)?
                    .into_iter()
                    .filter(|s| s.revoked_at.is_none() && s.expires_at > now)
                    .collect();
                Ok(Explanation {
                    patterns: storage::grants::patterns(c, id)?,
                    live_scopes,
                    audit: storage::audit::list(c, &AuditQuery::all().session(id))?,
                    session,
                    state,
                    grant,
                })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::storage::Storage;

    #[test]
    fn the_audit_kinds_constant_lists_exactly_the_audit_kinds_table_of_a_fresh_ledger(
    ) -> crate::Result<()> {
        let dir = tempfile::tempdir().expect("temp dir");
        let storage = Storage::open(&dir.path().join("ledger.db"), &Config::default())?;
        let table = storage.read(|conn| {
            let mut stmt = conn.prepare("SELECT kind FROM audit_kinds ORDER BY kind")?;
            let kinds = stmt.query_map([], |row| row.get::<_, String>(0))?;
            Ok(kinds.collect::<Result<Vec<_>, _>>()?)
        })?;
        let mut constant: Vec<String> = AUDIT_KINDS.iter().map(|k| (*k).to_owned()).collect();
        constant.sort();
        assert_eq!(constant, table);
        Ok(())
    }
}
