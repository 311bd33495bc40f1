//! The commands on the audit trail: the listing (`audit`), its head (`audit head`), the chain
//! walked (`verify`), a receipt for one row (`audit prove`) and its offline check (`audit
//! verify-receipt`), the trail as a feed (`audit export`, and with `--decisions` the decision
//! log as one), the whole ledger checked (`check`), backed up (`backup`) and a backup put back
//! (`restore`).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::Value;
use session_ledger::{AuditHead, AuditQuery, Receipt, ReceiptCheck, RecordedCheckpoint};

use crate::args::AuditFilters;
use crate::context::{
    open_existing, open_for_reading, parse_time, read_file, verifier_key, Context,
};
use crate::error::CliError;
use crate::render::{ReceiptStep, Report};

/// `audit`: one page of the rows `filters` select, the newest `--limit` of them, and where the
/// next page starts.
pub fn list(ctx: &Context<'_>, filters: &AuditFilters) -> Result<Report, CliError> {
    let mut query = AuditQuery::all();
    query.since = filters.since.as_deref().map(parse_time).transpose()?;
    query.until = filters.until.as_deref().map(parse_time).transpose()?;
    query.session = filters.session.clone();
    query.subtree = filters.subtree.clone();
    query.kind = filters.kind.as_deref().map(str::parse).transpose()?;
    query.before = filters.before;
    let limit = filters.limit;
    // One row more than the page, to know whether an older page follows.
    query.limit = limit.map(|n| n.saturating_add(1));
    let ledger = open_for_reading(ctx)?;
    let mut rows = ledger.audit(&query)?;
    let more = limit.is_some_and(|n| rows.len() > n as usize);
    if more {
        rows.remove(0);
    }
    let next_before = if more {
        rows.first().map(|r| r.seq)
    } else {
        None
    };
    // Rows of an archived session before the archive's boundary are in its file: say where.
    let named = filters.session.as_deref().or(filters.subtree.as_deref());
    let archived = named.map(|id| ledger.archived(id)).transpose()?.flatten();
    Ok(Report::Audit {
        rows,
        next_before,
        archived,
    })
}

/// `audit head`.
pub fn head(ctx: &Context<'_>) -> Result<Report, CliError> {
    Ok(Report::Head(open_for_reading(ctx)?.audit_head()?))
}

/// `verify`: the whole chain (against a saved head, if given), or the rows after `from`.
pub fn verify(
    ctx: &Context<'_>,
    head: Option<&str>,
    from: Option<&str>,
) -> Result<Report, CliError> {
    let saved = head.map(str::parse::<AuditHead>).transpose()?;
    let from = from.map(str::parse::<AuditHead>).transpose()?;
    let ledger = open_for_reading(ctx)?;
    let verification = match &from {
        Some(from) => ledger.verify_from(from)?,
        None => ledger.verify(saved.as_ref())?,
    };
    Ok(Report::Verified {
        verification,
        from: from.map(|f| f.seq),
    })
}

/// `check`: every row readable and every reference resolved.
pub fn check(ctx: &Context<'_>) -> Result<Report, CliError> {
    Ok(Report::Checked(open_for_reading(ctx)?.check()?))
}

/// `audit prove`.
pub fn prove(ctx: &Context<'_>, seq: i64, checkpoint: Option<&Path>) -> Result<Report, CliError> {
    let note = checkpoint
        .map(|p| read_file(p, "the checkpoint"))
        .transpose()?;
    let ledger = open_for_reading(ctx)?;
    let receipt = ledger.prove(seq, note.as_deref())?;
    Ok(Report::Receipt {
        seq,
        text: receipt.to_text(),
    })
}

/// `audit prove --consistency FROM [TO]`: the consistency proof from the tree of the first
/// `from` rows to the tree of `to` (default the newest checkpoint the ledger signed), as the
/// body of a C2SP tlog-witness `add-checkpoint` request: `old FROM`, the proof's hashes in
/// base64 one a line, a blank line, and the signed checkpoint of size `to`. When the ledger
/// signed none of that size, the body ends at the blank line and the note says so.
pub fn prove_consistency(
    ctx: &Context<'_>,
    from: u64,
    to: Option<u64>,
) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    let mut signed = Vec::new();
    loop {
        let after = signed.last().map_or(0, |c: &RecordedCheckpoint| c.seq);
        let page = ledger.checkpoints(after, 1_000)?;
        if page.is_empty() {
            break;
        }
        signed.extend(page);
    }
    let to = match (to, signed.last()) {
        (Some(to), _) => to,
        (None, Some(newest)) => newest.size,
        (None, None) => {
            return Err(CliError::Usage(
                "the ledger has signed no checkpoint: give TO_SIZE, or sign one first".into(),
            ))
        }
    };
    let proof = ledger.consistency_proof(from, Some(to))?;
    let mut text = format!("old {from}\n");
    for hash in &proof.proof {
        text.push_str(&BASE64.encode(hash));
        text.push('\n');
    }
    text.push('\n');
    let checkpoint = signed.iter().rev().find(|c| c.size == to);
    if let Some(checkpoint) = checkpoint {
        text.push_str(&checkpoint.note);
    }
    Ok(Report::ConsistencyProof {
        from,
        to,
        old_root: BASE64.encode(proof.old_root),
        new_root: BASE64.encode(proof.new_root),
        text,
        signed: checkpoint.is_some(),
    })
}

/// `backup DEST`: a consistent copy of the ledger in the new file `dest`, checked on its own.
pub fn backup(ctx: &Context<'_>, dest: &Path) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    Ok(Report::BackedUp(ledger.backup(dest)?))
}

/// `restore BACKUP`: the backup put in the place `--db` names once it passes its checks (and
/// against `checkpoint`, verified with `key`, when given). Opens no ledger at `--db`: there is
/// none there.
pub fn restore(
    ctx: &Context<'_>,
    backup: &Path,
    checkpoint: Option<&Path>,
    key: Option<&str>,
) -> Result<Report, CliError> {
    let against = match (checkpoint, key) {
        (Some(checkpoint), Some(key)) => {
            Some((read_file(checkpoint, "the checkpoint")?, verifier_key(key)?))
        }
        _ => None,
    };
    let against = against.as_ref().map(|(note, key)| (note.as_str(), key));
    Ok(Report::Restored(session_ledger::Ledger::restore(
        backup, ctx.db, against,
    )?))
}

/// `audit verify-receipt`: the receipt in the file `receipt` checked offline with `key` (its
/// text, or a file holding it), for the row in the file `row` (JSON) or else the receipt's own,
/// by the library's [`session_ledger::verify_receipt`]; and, when it fails, which of its checks
/// did. Opens no ledger.
pub fn verify_receipt(receipt: &Path, key: &str, row: Option<&Path>) -> Result<Report, CliError> {
    let text = read_file(receipt, "the receipt")?;
    let key = verifier_key(key)?;
    let row = row.map(read_row).transpose()?;
    let check = session_ledger::verify_receipt(&text, row.as_ref(), &key)?;
    let failed = if check.ok {
        None
    } else {
        let carried = Receipt::parse(&text)?.row;
        Some(failed_step(&check, row.as_ref().or(carried.as_ref())))
    };
    Ok(Report::ReceiptChecked { check, failed })
}

/// The row in the file `path`: one JSON object, as `--json audit` prints each row.
fn read_row(path: &Path) -> Result<Value, CliError> {
    let text = read_file(path, "the row file")?;
    match serde_json::from_str::<Value>(&text) {
        Ok(row @ Value::Object(_)) => Ok(row),
        _ => Err(CliError::Usage(format!(
            "the row file {} does not hold one row as a JSON object (as `--json-lines audit` \
             prints one a line)",
            path.display()
        ))),
    }
}

/// Which check of a receipt that did not check out failed. The library stops at the first and
/// says why in words; which one it was is read from what it found: no checkpoint means the
/// signature; else a row that is not the receipt's row, or whose own hash does not match its
/// fields (recomputed here with [`session_ledger::chain_hash`], as the library does), means
/// the row; else the proof did not put the row under the checkpoint's root.
fn failed_step(check: &ReceiptCheck, row: Option<&Value>) -> ReceiptStep {
    if check.checkpoint.is_none() {
        ReceiptStep::Signature
    } else if !row.is_some_and(|row| row_hash_matches(row, check.seq)) {
        ReceiptStep::Row
    } else {
        ReceiptStep::Inclusion
    }
}

/// True when `row` is row `seq` and its `hash` is the chain hash of its own fields.
fn row_hash_matches(row: &Value, seq: i64) -> bool {
    let text = |key: &str| row.get(key).and_then(Value::as_str);
    let session = match row.get("session") {
        None | Some(Value::Null) => Some(None),
        Some(v) => v.as_str().map(Some),
    };
    let fields = (
        row.get("seq").and_then(Value::as_i64),
        text("prev_hash"),
        text("at"),
        text("actor"),
        text("kind"),
        session,
        row.get("detail"),
        text("hash"),
    );
    let (
        Some(row_seq),
        Some(prev),
        Some(at),
        Some(actor),
        Some(kind),
        Some(session),
        Some(detail),
        Some(hash),
    ) = fields
    else {
        return false;
    };
    row_seq == seq
        && session_ledger::chain_hash(prev, row_seq, at, actor, kind, session, &detail.to_string())
            == hash
}

/// How many rows one read of the feed takes.
const PAGE: u32 = 1_000;

/// `audit export`: the rows after `after`, a page at a time by the trail's key, each printed
/// and flushed as one line; with `follow`, then a look at the head every `poll` (one read of
/// the key, not of the trail) and the new rows when there are some, until stopped.
pub fn export(
    ctx: &Context<'_>,
    mut after: i64,
    follow: bool,
    format: &str,
    poll: Duration,
    out: &mut dyn Write,
) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    loop {
        // The head is read before the page: rows join the trail in seq order, so every row up
        // to it is in the page's read, and an empty page below it is a gap. Read after the
        // page, a head could name a row committed in between, which would be stepped over.
        let head = ledger.audit_head()?.seq;
        let rows = ledger.audit_after(after, PAGE)?;
        if rows.is_empty() {
            if head > after {
                // A page of seqs with no row (a gap in a tampered trail): step over it.
                after = head.min(after.saturating_add(i64::from(PAGE)));
                continue;
            }
            if !follow {
                break;
            }
            out.flush()?;
            std::thread::sleep(poll);
            continue;
        }
        for row in &rows {
            let line = match format {
                "ocsf" => session_ledger::ocsf_event(row).to_string(),
                _ => serde_json::to_string(row)?,
            };
            writeln!(out, "{line}")?;
            after = row.seq;
        }
        out.flush()?;
    }
    Ok(Report::Exported)
}

/// `audit export --decisions`: the records integrated into the decision log after position
/// `after`, a page at a time by position, each printed and flushed as one line (the record's
/// JSON, or an OCSF event); with `follow`, then a look for the next page every `poll`, until
/// stopped. Positions have no gaps and never change, so the last `seq` printed is where a
/// restart goes on; a queued record is in the feed once integrated.
pub fn export_decisions(
    ctx: &Context<'_>,
    mut after: u64,
    follow: bool,
    format: &str,
    poll: Duration,
    out: &mut dyn Write,
) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    loop {
        let records = ledger.decisions_after(after, PAGE)?;
        let start = after;
        for record in &records {
            let line = match format {
                "ocsf" => session_ledger::ocsf_decision(record).to_string(),
                _ => serde_json::to_string(record)?,
            };
            writeln!(out, "{line}")?;
            after = after.max(record.seq.unwrap_or(after));
        }
        out.flush()?;
        // An empty page, or (on a ledger whose records lost their positions) one that moved
        // nothing on: the end of the log for now.
        if after == start {
            if !follow {
                break;
            }
            std::thread::sleep(poll);
        }
    }
    Ok(Report::Exported)
}
