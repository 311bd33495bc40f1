//! The audit trail (rules A1, A3): one row for every change, written in the same transaction as
//! the change, and chained by SHA3-256 so that an edited, removed or truncated row is detected.
//!
//! Each row's `hash` is SHA3-256 over its predecessor's hash and a canonical encoding of the row
//! in which every field is length-prefixed (see [`chain_hash`]); the first row's predecessor is
//! [`GENESIS_HASH`](crate::GENESIS_HASH). The same computation is one SQL expression with the
//! stock `sqlite3` shell's `sha3()`, so an auditor can check the chain without this library
//! (`docs/audit.md`).
//!
//! This module owns appending rows and listing them; `chain` owns the hash and the walk that
//! verifies it. Both read and write through the storage interface only, and call no other
//! concept.

mod chain;
pub(crate) mod checkpoint;
mod export;
pub(crate) mod merkle;
pub(crate) mod receipt;
pub(crate) mod tree;
pub(crate) mod verify;

pub(crate) use chain::{anchor as chain_anchor, hex, verify, verify_from};
pub use chain::{chain_hash, ChainProblem, Verification};
pub use checkpoint::{Checkpoint, SignedCheckpoint, SignerKey, VerifierKey};
pub use export::{ocsf_event, OCSF_VERSION};
pub use merkle::{verify_consistency, verify_inclusion};
pub use receipt::{verify_receipt, Receipt, ReceiptCheck};
pub use tree::audit_leaf;
pub use verify::{CheckpointOptions, CheckpointVerification, Finding};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

use crate::clock::format_ts;
use crate::error::{Corruption, Error, Result};
use crate::model::{AuditEntry, AuditHead, AuditKind, Id, Posture};
use crate::storage::{AuditFilter, NewAuditRow, Read, Write};

/// The actor recorded for writes the ledger makes on its own behalf: materializing a label on
/// first read, and recording a spawned sub-agent when it is first seen.
pub const LEDGER_ACTOR: &str = "ledger";

/// The time of a write, read once its transaction holds the write lock: the clock's `wall`
/// time, or the newest audit row's when the clock is behind it (an NTP step back, a restored
/// VM). So the times written never decrease along the trail, and a session recorded before the
/// step can still be ended (`ended_at >= created_at`).
pub(crate) fn write_time(r: &mut dyn Read, wall: DateTime<Utc>) -> Result<DateTime<Utc>> {
    Ok(match r.latest_audit_time()? {
        Some(latest) if latest > wall => latest,
        _ => wall,
    })
}

/// Appends one row about `session` (for a refused create, the id refused), extending the
/// chain. Returns its seq.
pub(crate) fn append(
    tx: &mut dyn Write,
    at: DateTime<Utc>,
    actor: &str,
    kind: AuditKind,
    session: Option<&str>,
    detail: &serde_json::Value,
) -> Result<i64> {
    let mut head = tx.read().audit_head()?;
    let at_text = format_ts(at);
    let row = Appending {
        at,
        at_text: &at_text,
        actor,
        kind,
    };
    row.push(tx, &mut head, session, &detail.to_string())
}

/// Appends one row per `(session, detail)`, all of one kind, reading the head once: the path of
/// a large cascade, where the chain costs one hash per row and nothing more. Each detail is the
/// JSON object's text, as it is stored and hashed.
pub(crate) fn append_all<'a>(
    tx: &mut dyn Write,
    at: DateTime<Utc>,
    actor: &str,
    kind: AuditKind,
    rows: impl IntoIterator<Item = (&'a str, String)>,
) -> Result<()> {
    let mut head = tx.read().audit_head()?;
    let at_text = format_ts(at);
    let appending = Appending {
        at,
        at_text: &at_text,
        actor,
        kind,
    };
    for (session, detail) in rows {
        appending.push(tx, &mut head, Some(session), &detail)?;
    }
    Ok(())
}

/// What the rows one operation appends share.
struct Appending<'a> {
    at: DateTime<Utc>,
    at_text: &'a str,
    actor: &'a str,
    kind: AuditKind,
}

impl Appending<'_> {
    /// Appends the row after `head` and moves `head` to it.
    fn push(
        &self,
        tx: &mut dyn Write,
        head: &mut AuditHead,
        session: Option<&str>,
        detail: &str,
    ) -> Result<i64> {
        let seq = head.seq + 1;
        let hash = chain_hash(
            &head.hash,
            seq,
            self.at_text,
            self.actor,
            self.kind.as_str(),
            session,
            detail,
        );
        tx.append_audit(&NewAuditRow {
            seq,
            at: self.at,
            actor: self.actor,
            kind: self.kind,
            session,
            detail,
            prev_hash: &head.hash,
            hash: &hash,
        })?;
        *head = AuditHead { seq, hash };
        Ok(seq)
    }
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
/// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
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
    pub kind: Option<AuditKind>,
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
    pub fn kind(mut self, kind: AuditKind) -> AuditQuery {
        self.kind = Some(kind);
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

/// Stored times have whole milliseconds, so for a stored time `a` and any bound `b`:
/// `a >= b` exactly when `a >= ceil_ms(b)`, and `a < b` exactly when `a < ceil_ms(b)`.
fn ceil_ms(t: DateTime<Utc>) -> DateTime<Utc> {
    let ms = TimeDelta::milliseconds(1);
    let floor = t.duration_trunc(ms).unwrap_or(t);
    if floor == t {
        t
    } else {
        floor + ms
    }
}

/// The rows matching `query`, oldest first. Run it inside one read transaction
/// ([`crate::storage::Storage::snapshot`]), so that its statements read one state.
pub(crate) fn list(r: &mut dyn Read, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let session = query.session.as_deref().map(Id::parse).transpose()?;
    let subtree = query.subtree.as_deref().map(Id::parse).transpose()?;
    let mut remaining = query.limit;
    let mut pieces = Vec::new();
    for (from, to) in seq_ranges(r, query)? {
        if remaining == Some(0) {
            break;
        }
        if from >= to {
            continue;
        }
        let rows = r.audit_rows(&AuditFilter {
            session,
            subtree,
            kind: query.kind,
            since: query.since.map(ceil_ms),
            until: query.until.map(ceil_ms),
            from,
            to,
            limit: remaining,
        })?;
        if let Some(left) = remaining.as_mut() {
            *left = left.saturating_sub(rows.len() as u32);
        }
        pieces.push(rows);
    }
    Ok(pieces.into_iter().rev().flatten().collect())
}

/// From which seq the trail's times are in order.
fn ordered_from(r: &mut dyn Read) -> Result<i64> {
    r.audit_ordered_from()?.ok_or_else(|| {
        Error::from(Corruption::new(
            "audit_time_order has lost its row (a hand edit): the ledger cannot tell which part \
             of the audit trail is in time order",
        ))
    })
}

/// The smallest seq `x` in `from..=end` such that every row with a seq of at least `x` (up to
/// `end`, excluded) is at or after `time`, by binary search over seq: O(log n) probes by the
/// trail's key, each the first row at or after a seq, so that a gap in the seqs is stepped
/// over. Right when the times of the rows from `from` on never decrease, which the schema keeps
/// (trigger `audit_time_never_goes_back`) and `audit_time_order` records for older rows.
fn first_at_or_after(r: &mut dyn Read, from: i64, end: i64, time: DateTime<Utc>) -> Result<i64> {
    let (mut lo, mut hi) = (from, end);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match r.audit_probe(mid)? {
            // No row at `mid` before it: rows up to it are too early, and so is every one
            // before, because times never decrease along seq.
            Some((seq, at)) if seq < hi && at < time => lo = seq + 1,
            // At or after `time`, or no row in `mid..hi` at all.
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// The ranges of seqs, `(from, to)` with `from <= seq < to`, newest first, that hold every row
/// of `query`'s time window below its `before`. Without a time bound, one range. With one, the
/// bounds are found by [`first_at_or_after`] over the part of the trail known to be in time
/// order; rows before that part (only in a ledger whose times went back before schema version
/// 8) form a second range, read in full and filtered by time.
fn seq_ranges(r: &mut dyn Read, query: &AuditQuery) -> Result<Vec<(i64, i64)>> {
    let mut to = query.before.unwrap_or(i64::MAX);
    if query.since.is_none() && query.until.is_none() {
        return Ok(vec![(i64::MIN, to)]);
    }
    let end = r.audit_head()?.seq.saturating_add(1);
    let ordered_from = ordered_from(r)?.clamp(1, end);
    if let Some(until) = query.until {
        to = to.min(first_at_or_after(r, ordered_from, end, ceil_ms(until))?);
    }
    let Some(since) = query.since else {
        return Ok(vec![(i64::MIN, to)]);
    };
    let from = first_at_or_after(r, ordered_from, end, ceil_ms(since))?;
    let mut ranges = vec![(from, to)];
    if ordered_from > 1 {
        ranges.push((i64::MIN, ordered_from.min(to)));
    }
    Ok(ranges)
}

/// The `posture.grant` row behind `posture`: on its `granted_on` session, at its `granted_at`,
/// by its `granted_by`, of its level. Times have whole milliseconds, so several grants on one
/// session can share one; the actor and the level tell them apart unless they say the same
/// thing, and then the newest is returned.
pub(crate) fn grant_row(r: &mut dyn Read, posture: &Posture) -> Result<Option<AuditEntry>> {
    let query = AuditQuery::all()
        .session(&posture.granted_on)
        .kind(AuditKind::PostureGrant);
    Ok(list(r, &query)?.into_iter().rev().find(|row| {
        row.at == posture.granted_at
            && row.actor == posture.granted_by
            && row.detail["posture"] == posture.level.as_str()
    }))
}
