//! Appending decision records on PostgreSQL against a real server: what the library sends
//! again is kept once.

use crate::decision_log::AskedBy;
use crate::{DecisionQuery, Ledger};

#[test]
fn a_record_appended_again_is_kept_once_not_refused_on_its_key() -> crate::Result<()> {
    let Some((mut admin, schema, url)) = super::plans::schema_of_its_own("again")? else {
        return Ok(());
    };
    let ledger = Ledger::init(&url)?;
    ledger.create_root("worker", "op")?;
    let decision = ledger.decide("worker", "make", false)?;
    let record = ledger.command_record(&decision, "make", &AskedBy::actor("hook"))?;
    // As a batching recorder sends a batch again after an append reported unknown.
    ledger.append_records(std::slice::from_ref(&record))?;
    ledger.append_records(&[record.clone(), record.clone()])?;
    let all = ledger.decisions(&DecisionQuery::default())?;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].record, record.record);
    drop(ledger);
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    Ok(())
}
