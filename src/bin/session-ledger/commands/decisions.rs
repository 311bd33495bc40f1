//! The commands on decision records: the listing (`decisions`), one record whole (`decisions
//! show`), a record's receipt and its offline check (`decisions prove`, `decisions
//! verify-receipt`), and the queued records integrated into the decision log (`decisions
//! integrate`).
//! A decision is recorded by `decide --record` (the authority group's), and the log read as a
//! feed by `audit export --decisions` (the trail's).

use session_ledger::DecisionQuery;

use crate::args::{DecisionFilters, DecisionsCommand};
use crate::context::{
    acting, open_existing, open_for_reading, parse_time, read_file, verifier_key, Context,
};
use crate::error::CliError;
use crate::render::Report;

/// The most records one read of the ledger returns.
const MAX_PAGE: u32 = 10_000;

/// `decisions show`, `decisions prove`, `decisions verify-receipt` and `decisions integrate`.
pub fn run(ctx: &Context<'_>, command: &DecisionsCommand) -> Result<Report, CliError> {
    match command {
        DecisionsCommand::Show { record } => match open_for_reading(ctx)?.decision(record)? {
            Some(found) => Ok(Report::DecisionRecord(Box::new(found))),
            None => Err(CliError::UnknownRecord(record.clone())),
        },
        DecisionsCommand::Prove { record, checkpoint } => {
            let note = checkpoint
                .as_deref()
                .map(|p| read_file(p, "the checkpoint"))
                .transpose()?;
            let receipt = open_for_reading(ctx)?.prove_decision(record, note.as_deref())?;
            Ok(Report::DecisionReceipt {
                record: record.clone(),
                text: receipt.to_text(),
            })
        }
        DecisionsCommand::VerifyReceipt {
            receipt,
            verifier_key: key,
        } => {
            let text = read_file(receipt, "the receipt")?;
            let key = verifier_key(key)?;
            Ok(Report::DecisionReceiptChecked(
                session_ledger::verify_decision_receipt(&text, &key)?,
            ))
        }
        DecisionsCommand::Integrate { actor } => {
            let who = acting(ctx, actor)?;
            let ledger = open_existing(ctx.db)?;
            Ok(Report::DecisionsIntegrated(
                ledger.integrate_decisions(&who)?,
            ))
        }
    }
}

/// `decisions`: one page of the records `filters` select, the newest `--limit` of them, and
/// where the next page starts.
pub fn list(ctx: &Context<'_>, filters: &DecisionFilters) -> Result<Report, CliError> {
    let limit = filters.limit;
    let query = DecisionQuery {
        session: filters.session.clone(),
        subtree: filters.subtree.clone(),
        verdict: filters.verdict.clone(),
        authority: filters.authority.clone(),
        since: filters.since.as_deref().map(parse_time).transpose()?,
        until: filters.until.as_deref().map(parse_time).transpose()?,
        before: filters.before,
        // One record more than the page, to know whether an older page follows; a page of
        // the most one read returns is followed by one whenever it is full.
        limit: Some(limit.saturating_add(1).min(MAX_PAGE)),
    };
    let ledger = open_for_reading(ctx)?;
    let mut records = ledger.decisions(&query)?;
    let page = usize::try_from(limit).unwrap_or(usize::MAX);
    let more = records.len() > page || (limit == MAX_PAGE && records.len() == page);
    records.truncate(page);
    let next_before = if more {
        records.last().map(|r| r.id)
    } else {
        None
    };
    Ok(Report::Decisions {
        records,
        next_before,
    })
}
