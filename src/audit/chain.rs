//! The hash chain (rule A3): how a row's hash is computed, and the walk that checks every row
//! against its predecessor, which the library's verifiers and `docs/audit.md`'s SQL share.
//!
//! It reads rows through the storage interface and writes none.

use std::fmt;

use serde::Serialize;
use sha3::{Digest, Sha3_256};

use crate::error::Result;
use crate::model::AuditHead;
use crate::storage::{ChainRow, Read};

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
    encode_row(
        prev_hash,
        seq,
        at,
        actor,
        kind,
        session,
        detail,
        &mut |bytes| h.update(bytes),
    );
    hex(&h.finalize())
}

/// The bytes of a row that its hash covers, handed to `out` a piece at a time, without
/// allocating: `prev_hash "|" seq "|" F(at) F(actor) F(kind) F(session) F(detail)`. The chain
/// hashes them with SHA3-256; the Merkle tree's leaf for the row is SHA-256 of `0x00` and them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_row(
    prev_hash: &str,
    seq: i64,
    at: &str,
    actor: &str,
    kind: &str,
    session: Option<&str>,
    detail: &str,
    out: &mut dyn FnMut(&[u8]),
) {
    let mut digits = [0u8; 24];
    out(prev_hash.as_bytes());
    out(b"|");
    out(decimal(seq, &mut digits));
    out(b"|");
    for field in [Some(at), Some(actor), Some(kind), session, Some(detail)] {
        match field {
            Some(text) => {
                out(decimal(text.len() as i64, &mut digits));
                out(b":");
                out(text.as_bytes());
                out(b"|");
            }
            None => out(b"-|"),
        }
    }
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
    /// The saved head's row is before the live trail's anchor: it left with an archive, and is
    /// checked against that archive (`verify --archive`), not here.
    Archived,
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
            ChainProblem::Archived => {
                "the saved head's row is in an archive, before the live trail's anchor: check it \
                 against that archive (verify --archive)"
            }
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

/// True when the row's hash is the hash of its contents and its own `prev_hash`.
pub(crate) fn hash_matches(row: &ChainRow) -> bool {
    row.hash
        == chain_hash(
            &row.prev_hash,
            row.seq,
            &row.at,
            &row.actor,
            &row.kind,
            row.session.as_deref(),
            &row.detail,
        )
}

/// A walk along the chain: what the next row must be, and the first problem found. It keeps
/// the last row's hash and time only, so it holds the same memory for any length of trail.
struct Walk {
    ordered_from: i64,
    next_seq: i64,
    prev_hash: String,
    prev_at: Option<String>,
    rows: u64,
    first: Option<(i64, ChainProblem)>,
}

impl Walk {
    /// A walk from the row after `anchor`: the genesis (seq 0), or the boundary of the newest
    /// archive, whose row left with it.
    fn from_anchor(ordered_from: i64, anchor: AuditHead) -> Walk {
        Walk {
            ordered_from,
            next_seq: anchor.seq + 1,
            prev_hash: anchor.hash,
            prev_at: None,
            rows: 0,
            first: None,
        }
    }

    fn found(&mut self, seq: i64, problem: Option<ChainProblem>) {
        if self.first.is_none() {
            self.first = problem.map(|p| (seq, p));
        }
    }

    /// Takes `row` as the next one and remembers it as the predecessor of the one after.
    fn advance(&mut self, row: ChainRow) {
        self.rows += 1;
        self.next_seq = row.seq + 1;
        self.prev_hash = row.hash;
        self.prev_at = Some(row.at);
    }

    /// Checks `row` against its predecessor: the next seq, linked to its hash, hashed right,
    /// and (in the part of the trail in time order) not earlier than it. The stored times have
    /// one fixed-width form, so their text order is their time order.
    fn check(&mut self, row: ChainRow) {
        if self.first.is_none() {
            let goes_back = row.seq > self.ordered_from
                && self
                    .prev_at
                    .as_deref()
                    .is_some_and(|prev| row.at.as_str() < prev);
            let problem = if row.seq != self.next_seq {
                Some(ChainProblem::Gap)
            } else if row.prev_hash != self.prev_hash {
                Some(ChainProblem::BrokenLink)
            } else if !hash_matches(&row) {
                Some(ChainProblem::HashMismatch)
            } else if goes_back {
                Some(ChainProblem::TimeGoesBack)
            } else {
                None
            };
            self.found(row.seq, problem);
        }
        self.advance(row);
    }

    /// The result, with the newest row read as the head.
    fn finish(self) -> Verification {
        Verification {
            ok: self.first.is_none(),
            rows: self.rows,
            head: AuditHead {
                seq: self.next_seq - 1,
                hash: self.prev_hash,
            },
            first_bad_seq: self.first.as_ref().map(|(seq, _)| *seq),
            problem: self.first.map(|(_, p)| p),
        }
    }
}

/// Walks the whole chain and reports the first row that does not verify; with `saved`, also
/// checks that the saved head is still there. Run it inside one read transaction, so that its
/// statements see one state of the trail.
pub(crate) fn verify(r: &mut dyn Read, saved: Option<&AuditHead>) -> Result<Verification> {
    let anchor = anchor(r)?;
    let mut walk = Walk::from_anchor(super::ordered_from(r)?, anchor.clone());
    let mut saved_hash: Option<String> = None;
    if let Some(saved) = saved.filter(|saved| saved.seq <= anchor.seq) {
        if saved.seq < anchor.seq {
            walk.found(saved.seq, Some(ChainProblem::Archived));
        } else {
            saved_hash = Some(anchor.hash.clone());
        }
    }
    r.audit_walk(anchor.seq + 1, i64::MAX, &mut |row| {
        if saved.is_some_and(|h| h.seq == row.seq) {
            saved_hash = Some(row.hash.clone());
        }
        walk.check(row);
        Ok(())
    })?;
    if walk.first.is_none() {
        if let Some(saved) = saved {
            let problem = match saved_hash {
                None => Some(ChainProblem::Truncated),
                Some(hash) if hash != saved.hash => Some(ChainProblem::HeadMismatch),
                Some(_) => None,
            };
            walk.found(saved.seq, problem);
        }
    }
    Ok(walk.finish())
}

/// Checks that the saved head's row still has its hash (and contents that give it), then walks
/// the chain from it to the newest row: it reads the rows from the saved head's seq on, by the
/// trail's key, and none before. The saved head of an empty trail (seq 0) walks the whole trail.
pub(crate) fn verify_from(r: &mut dyn Read, saved: &AuditHead) -> Result<Verification> {
    let anchor = anchor(r)?;
    if saved.seq <= anchor.seq {
        return verify(r, Some(saved));
    }
    let mut walk = Walk::from_anchor(super::ordered_from(r)?, AuditHead::genesis());
    let mut started = false;
    r.audit_walk(saved.seq, i64::MAX, &mut |row| {
        if started {
            walk.check(row);
            return Ok(());
        }
        started = true;
        let problem = if row.seq != saved.seq {
            // The saved head's row is gone, and rows after it are left.
            Some((row.seq, ChainProblem::Gap))
        } else if row.hash != saved.hash {
            Some((saved.seq, ChainProblem::HeadMismatch))
        } else if !hash_matches(&row) {
            Some((saved.seq, ChainProblem::HashMismatch))
        } else {
            None
        };
        if let Some((seq, problem)) = problem {
            walk.found(seq, Some(problem));
        }
        walk.advance(row);
        Ok(())
    })?;
    if !started {
        // Nothing at or after the saved head: rows were removed from the end.
        return Ok(Verification {
            ok: false,
            rows: 0,
            head: r.audit_head()?,
            first_bad_seq: Some(saved.seq),
            problem: Some(ChainProblem::Truncated),
        });
    }
    Ok(walk.finish())
}

/// Where the live trail starts: the boundary of the newest archive (its last row's seq and
/// hash), or the genesis when nothing was archived. Rows up to it may be gone.
pub(crate) fn anchor(r: &mut dyn Read) -> Result<AuditHead> {
    Ok(match r.last_archive()? {
        Some(archive) => AuditHead {
            seq: i64::try_from(archive.trail_size).unwrap_or(i64::MAX),
            hash: archive.trail_hash,
        },
        None => AuditHead::genesis(),
    })
}
