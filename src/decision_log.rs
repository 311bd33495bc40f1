//! Decision records (rules D1, D2): what a recorded decision holds, the bytes its leaf hash
//! commits to, integrating queued records into the decision log in batches under the audit
//! trail, and checking the batches again.
//!
//! A record is appended on its own, without the ledger's write lock ([`crate::storage::Append`]),
//! and waits in a queue. Integration, the one serialized step, takes the queued records in id
//! order, gives each the next position of the log, and appends one `decisions.integrate` audit
//! row whose detail holds the batch's first position, its count, and the RFC 6962 Merkle root
//! over the batch's leaves. That row is a leaf of the audit tree: a signed checkpoint at or
//! after it covers every record of the batch. docs/audit.md, "Decision records", says it for
//! an auditor.

mod ocsf;
mod receipt;

pub use ocsf::ocsf_decision;
pub(crate) use receipt::Leaves;
pub use receipt::{verify_decision_receipt, DecisionReceipt, DecisionReceiptCheck};

use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::audit;
use crate::audit::merkle::{leaf_hash, Builder, Hash};
use crate::audit::Finding;
use crate::clock::format_ts;
use crate::error::{Corruption, InputError, Result};
use crate::model::{validate_actor, AuditKind, Id};
use crate::storage::{DecisionFilter, DecisionRow, NewDecision, Read, Write};

/// The longest input a record keeps, in bytes; a longer one is cut on a character boundary
/// and its SHA-256 kept beside it.
pub const MAX_RECORDED_INPUT: usize = 4096;

/// How many records one integration batch takes at most: one audit row, and one write
/// transaction, each.
pub const INTEGRATION_BATCH: u32 = 10_000;

/// Who asked for a decision that is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskedBy<'a> {
    /// An operator's or a program's name: 1 to 64 characters from `[A-Za-z0-9._:@-]`, as an
    /// audit row's actor (a hook records as `claude-code`, say).
    pub actor: &'a str,
    /// The agent's id for the tool call, when it has one (Claude Code's `tool_use_id`): 1 to
    /// 128 characters.
    pub tool_use_id: Option<&'a str>,
}

impl<'a> AskedBy<'a> {
    /// Asked by `actor`, with no tool-use id.
    pub fn actor(actor: &'a str) -> AskedBy<'a> {
        AskedBy {
            actor,
            tool_use_id: None,
        }
    }

    /// Checks both names.
    pub(crate) fn validate(&self) -> Result<()> {
        validate_actor(self.actor)?;
        if let Some(id) = self.tool_use_id {
            if id.is_empty() || id.chars().count() > 128 || id.chars().any(char::is_control) {
                return Err(InputError::InvalidConfig(format!(
                    "a tool-use id has 1 to 128 characters and no control character, not {id:?}"
                ))
                .into());
            }
        }
        Ok(())
    }
}

/// A decision record as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DecisionRecord {
    /// The record's own id.
    pub record: String,
    /// When the decision was made.
    #[serde(serialize_with = "crate::clock::serialize_ts")]
    pub at: DateTime<Utc>,
    /// The session asked about.
    pub session: String,
    /// The root of its tree when the decision was made.
    pub tree: String,
    /// The tool asked about; `None` for a shell command line.
    pub tool: Option<String>,
    /// The command line, or the tool call's path or URL, cut at
    /// [`MAX_RECORDED_INPUT`] bytes.
    pub input: String,
    /// The whole input's length in bytes.
    pub input_bytes: u64,
    /// SHA-256 of the whole input, hex, when it was cut.
    pub input_sha256: Option<String>,
    /// `approve`, `ask` or `deny`.
    pub verdict: String,
    /// What decided, the reason's kind: `trust`, `trust_reads`, `pattern`, `tool_rule`,
    /// `scope`, or why nothing did: `nothing`, `session_ended`, `unknown_session`.
    pub authority: String,
    /// The reason, as [`Reason`](crate::Reason) writes it. Serialized as the stored text, byte
    /// for byte, so that the JSON of a record gives the bytes its leaf hashes.
    #[serde(skip)]
    pub reason: serde_json::Value,
    /// The reason's stored text.
    #[serde(rename = "reason", serialize_with = "raw_json")]
    reason_text: String,
    /// Who asked.
    pub asked_by: String,
    /// The agent's id for the tool call.
    pub tool_use_id: Option<String>,
    /// Its position in the decision log; `None` while it waits to be integrated.
    pub seq: Option<u64>,
    /// The `decisions.integrate` audit row of its batch; `None` while it waits.
    pub batch: Option<i64>,
    /// The order it was appended in on this ledger: the cursor of
    /// [`DecisionQuery::before`].
    pub id: i64,
}

/// Which records [`Ledger::decisions`](crate::Ledger::decisions) lists: those matching every
/// filter set, the newest [`limit`](DecisionQuery::limit) of them (100 by default), newest
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionQuery {
    /// Only records about this session.
    pub session: Option<String>,
    /// Only records about this session or any of its descendants.
    pub subtree: Option<String>,
    /// Only records with this verdict (`approve`, `ask`, `deny`).
    pub verdict: Option<String>,
    /// Only records decided by this authority (`trust`, `pattern`, ...).
    pub authority: Option<String>,
    /// Only records at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only records before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only records appended before this one ([`DecisionRecord::id`]): the next page.
    pub before: Option<i64>,
    /// At most this many (1 to 10,000).
    pub limit: Option<u32>,
}

/// The verdicts a record may hold.
pub const VERDICTS: &[&str] = &["approve", "ask", "deny"];

/// The authorities a record may name.
pub const AUTHORITIES: &[&str] = &[
    "trust",
    "trust_reads",
    "pattern",
    "tool_rule",
    "scope",
    "nothing",
    "session_ended",
    "unknown_session",
];

/// What one integration did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Integrated {
    /// How many records it gave positions.
    pub records: u64,
    /// How many batches (audit rows) that took.
    pub batches: u64,
    /// The decision log's size after it.
    pub log_size: u64,
    /// How many records were still queued when it stopped (appended meanwhile).
    pub queued: u64,
}

/// A new record's own id: its time in milliseconds (12 hex digits), then 80 random bits.
fn record_id(at: DateTime<Utc>) -> Result<String> {
    let mut random = [0u8; 10];
    getrandom::fill(&mut random).map_err(|e| {
        crate::error::EngineError::new(
            "random number generator",
            false,
            std::io::Error::other(e.to_string()),
        )
    })?;
    let ms = u64::try_from(at.timestamp_millis()).unwrap_or(0) & 0xffff_ffff_ffff;
    let mut id = format!("{ms:012x}");
    for b in random {
        id.push_str(&format!("{b:02x}"));
    }
    Ok(id)
}

/// What a record says was decided: about which session, the verdict and authority words
/// ([`VERDICTS`], [`AUTHORITIES`]), and the reason as its JSON text.
pub(crate) struct Decided<'a> {
    pub(crate) session: &'a str,
    pub(crate) verdict: &'static str,
    pub(crate) authority: &'static str,
    pub(crate) reason: String,
}

/// The record of `decided` about `input` (a command line, or a tool call's path or URL) for
/// `tool` (`None` for a command line), asked by `asked` at `at`.
pub(crate) fn new_record(
    decided: Decided<'_>,
    tool: Option<&str>,
    input: &str,
    asked: &AskedBy<'_>,
    at: DateTime<Utc>,
) -> Result<NewDecision> {
    let (kept, sha) = if input.len() > MAX_RECORDED_INPUT {
        let mut end = MAX_RECORDED_INPUT;
        while !input.is_char_boundary(end) {
            end -= 1;
        }
        let digest = Sha256::digest(input.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        (&input[..end], Some(hex))
    } else {
        (input, None)
    };
    Ok(NewDecision {
        record: record_id(at)?,
        at,
        session: decided.session.to_owned(),
        tool: tool.map(str::to_owned),
        input: kept.to_owned(),
        input_bytes: i64::try_from(input.len()).unwrap_or(i64::MAX),
        input_sha256: sha,
        verdict: decided.verdict,
        authority: decided.authority,
        reason: decided.reason,
        asked_by: asked.actor.to_owned(),
        tool_use_id: asked.tool_use_id.map(str::to_owned),
    })
}

/// The bytes a record's leaf commits to: one JSON object, keys in this order, no spaces,
/// strings as `serde_json` writes them (non-ASCII as UTF-8), and the stored reason's text as
/// it is (docs/audit.md, "Decision records").
pub(crate) fn leaf_bytes(row: &DecisionRow) -> Vec<u8> {
    #[derive(Serialize)]
    struct Leaf<'a> {
        record: &'a str,
        at: String,
        session: &'a str,
        tree: &'a str,
        tool: Option<&'a str>,
        input: &'a str,
        input_bytes: i64,
        input_sha256: Option<&'a str>,
        verdict: &'a str,
        authority: &'a str,
        asked_by: &'a str,
        tool_use_id: Option<&'a str>,
    }
    let leaf = Leaf {
        record: &row.record,
        at: format_ts(row.at),
        session: &row.session,
        tree: &row.tree,
        tool: row.tool.as_deref(),
        input: &row.input,
        input_bytes: row.input_bytes,
        input_sha256: row.input_sha256.as_deref(),
        verdict: &row.verdict,
        authority: &row.authority,
        asked_by: &row.asked_by,
        tool_use_id: row.tool_use_id.as_deref(),
    };
    let mut text = serde_json::to_string(&leaf).unwrap_or_default();
    // The reason last, as its stored text: `{...,"reason":<text>}`.
    text.pop();
    text.push_str(",\"reason\":");
    text.push_str(&row.reason);
    text.push('}');
    text.into_bytes()
}

/// The RFC 6962 leaf hash of a record.
pub(crate) fn leaf_of(row: &DecisionRow) -> Hash {
    leaf_hash(&leaf_bytes(row))
}

/// The RFC 6962 root over `rows`' leaves, in order.
pub(crate) fn batch_root(rows: &[DecisionRow]) -> Hash {
    let mut builder = Builder::default();
    for row in rows {
        builder.push(leaf_of(row), &mut |_, _| {});
    }
    builder.root()
}

fn hex(hash: &Hash) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Integrates one batch of at most `limit` queued records: positions from the log's size + 1,
/// one `decisions.integrate` audit row by `actor`, the records out of the queue. Returns how
/// many it took (0 when the queue was empty: nothing is written).
pub(crate) fn integrate(
    tx: &mut dyn Write,
    now: DateTime<Utc>,
    actor: &str,
    limit: u32,
) -> Result<u64> {
    let queued = tx.read().queued_decisions(limit)?;
    if queued.is_empty() {
        return Ok(0);
    }
    let first = tx.read().decision_log_size()? + 1;
    let root = batch_root(&queued);
    let count = queued.len();
    let detail = serde_json::json!({ "first": first, "count": count, "root": hex(&root) });
    let batch = audit::append(tx, now, actor, AuditKind::DecisionsIntegrate, None, &detail)?;
    let ids: Vec<i64> = queued.iter().map(|d| d.id).collect();
    tx.integrate_decisions(batch, first, &ids)?;
    Ok(count as u64)
}

/// A stored row as the public record.
pub(crate) fn record_of(row: DecisionRow) -> Result<DecisionRecord> {
    let reason = serde_json::from_str(&row.reason).map_err(|e| {
        Corruption::new(format!(
            "decision record {} has a reason that is not JSON: {e}",
            row.record
        ))
    })?;
    Ok(DecisionRecord {
        record: row.record,
        at: row.at,
        session: row.session,
        tree: row.tree,
        tool: row.tool,
        input: row.input,
        input_bytes: u64::try_from(row.input_bytes).unwrap_or(0),
        input_sha256: row.input_sha256,
        verdict: row.verdict,
        authority: row.authority,
        reason,
        reason_text: row.reason,
        asked_by: row.asked_by,
        tool_use_id: row.tool_use_id,
        seq: row.seq.and_then(|s| u64::try_from(s).ok()),
        batch: row.batch,
        id: row.id,
    })
}

/// `text`, which holds a JSON value, written out as it is.
fn raw_json<S: serde::Serializer>(text: &str, s: S) -> std::result::Result<S::Ok, S::Error> {
    let raw = serde_json::value::RawValue::from_string(text.to_owned())
        .map_err(serde::ser::Error::custom)?;
    raw.serialize(s)
}

/// The records `query` names, newest first.
pub(crate) fn list(r: &mut dyn Read, query: &DecisionQuery) -> Result<Vec<DecisionRecord>> {
    let session = query.session.as_deref().map(Id::parse).transpose()?;
    let subtree = query.subtree.as_deref().map(Id::parse).transpose()?;
    if let Some(v) = query.verdict.as_deref().filter(|v| !VERDICTS.contains(v)) {
        return Err(InputError::InvalidConfig(format!(
            "a verdict is one of {}, not {v:?}",
            VERDICTS.join(", ")
        ))
        .into());
    }
    if let Some(a) = query
        .authority
        .as_deref()
        .filter(|a| !AUTHORITIES.contains(a))
    {
        return Err(InputError::InvalidConfig(format!(
            "an authority is one of {}, not {a:?}",
            AUTHORITIES.join(", ")
        ))
        .into());
    }
    let limit = query.limit.unwrap_or(100);
    if !(1..=10_000).contains(&limit) {
        return Err(InputError::InvalidConfig(format!(
            "a page holds 1 to 10000 records, not {limit}"
        ))
        .into());
    }
    let filter = DecisionFilter {
        session,
        subtree,
        verdict: query.verdict.as_deref(),
        authority: query.authority.as_deref(),
        since: query.since,
        until: query.until,
        before: query.before,
        limit,
    };
    r.decision_rows(&filter)?
        .into_iter()
        .map(record_of)
        .collect()
}

/// One thing wrong with the decision log, found by [`check_batches`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchProblem {
    /// The batch's audit row.
    pub(crate) batch: i64,
    /// A stable word: `missing`, `count`, `gap`, `root`, `detail`.
    pub(crate) problem: &'static str,
    /// Why, in words.
    pub(crate) why: String,
}

/// Checks every `decisions.integrate` audit row in `rows` (its seq and detail) against the
/// records the log holds for it: the same count of consecutive positions, starting where the
/// batch says, whose leaves, recomputed from the records, have the root the audit row holds.
/// With `from_start`, the batches must also follow each other from position 1 with no gap.
pub(crate) fn check_batches(
    r: &mut dyn Read,
    rows: &[(i64, String)],
    from_start: bool,
) -> Result<Vec<BatchProblem>> {
    let mut problems = Vec::new();
    let mut next = 1i64;
    for (batch, detail) in rows {
        let mut problem = |word, why: String| {
            problems.push(BatchProblem {
                batch: *batch,
                problem: word,
                why,
            })
        };
        let parsed: Option<(i64, i64, String)> = serde_json::from_str::<serde_json::Value>(detail)
            .ok()
            .and_then(|d| {
                Some((
                    d.get("first")?.as_i64()?,
                    d.get("count")?.as_i64()?,
                    d.get("root")?.as_str()?.to_owned(),
                ))
            });
        let Some((first, count, root)) = parsed else {
            problem(
                "detail",
                format!("audit row {batch} is not a batch's detail: {detail}"),
            );
            continue;
        };
        if from_start && first != next {
            problem(
                "gap",
                format!(
                    "the batch starts at position {first}; the one before ended at {}",
                    next - 1
                ),
            );
        }
        next = first + count;
        let records = r.decision_batch(*batch)?;
        if records.is_empty() && count > 0 {
            problem(
                "missing",
                format!("the log holds none of the batch's {count} records"),
            );
            continue;
        }
        let seqs: Vec<i64> = records.iter().filter_map(|d| d.seq).collect();
        let expected: Vec<i64> = (first..first + count).collect();
        if seqs != expected {
            problem(
                "count",
                format!(
                    "the batch holds positions {first} to {}, the log {} record(s) for it",
                    first + count - 1,
                    records.len()
                ),
            );
            continue;
        }
        let found = hex(&batch_root(&records));
        if found != root {
            problem(
                "root",
                format!(
                    "the records of positions {first} to {} hash to {found}, not the batch's {root}: a record was changed",
                    first + count - 1
                ),
            );
        }
    }
    Ok(problems)
}

/// The decision records against the `decisions.integrate` audit rows after `after` (up to
/// `to`): each batch's records, recomputed, have the root its audit row holds (the row itself
/// is checked as a row of the trail), and the log names no batch the trail does not have.
pub(crate) fn verify_batches(r: &mut dyn Read, after: i64, to: i64) -> Result<Finding> {
    let rows: Vec<(i64, String)> = r
        .audit_rows(&crate::storage::AuditFilter {
            session: None,
            subtree: None,
            kind: Some(crate::model::AuditKind::DecisionsIntegrate),
            since: None,
            until: None,
            from: after + 1,
            to: to + 1,
            limit: None,
        })?
        .into_iter()
        .map(|e| (e.seq, e.detail.to_string()))
        .collect();
    let place = format!("decision batches in rows {} to {to}", after + 1);
    let mut problems = check_batches(r, &rows, after == 0)?;
    let in_trail: Vec<i64> = rows.iter().map(|(seq, _)| *seq).collect();
    let logged = r.decision_batches(after)?;
    for &(batch, _, _) in &logged {
        if batch <= to && in_trail.binary_search(&batch).is_err() {
            problems.push(BatchProblem {
                batch,
                problem: "forged",
                why: format!("the decision log names row {batch} as a batch, which is not one"),
            });
        }
    }
    let records: i64 = logged.iter().map(|(_, _, count)| count).sum();
    Ok(match problems.first() {
        None => audit::verify::finding(
            "decisions",
            place,
            None,
            format!(
                "{} batch(es), {records} record(s): every record hashes to its batch's root",
                rows.len()
            ),
        ),
        Some(p) => audit::verify::finding(
            "decisions",
            format!("decision batch at row {}", p.batch),
            Some(p.problem),
            format!(
                "{}{}",
                p.why,
                match problems.len() {
                    1 => String::new(),
                    n => format!(" (and {} more problem(s))", n - 1),
                }
            ),
        ),
    })
}
