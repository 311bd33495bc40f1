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

/// The shared blocks one call of `session_tree_root` reads, its plan kept generic as a
/// connection's PL/pgSQL plans may be after five calls.
fn tree_root_blocks(client: &mut postgres::Client, session: &str) -> crate::Result<i64> {
    client.batch_execute("SET plan_cache_mode = force_generic_plan")?;
    // The first calls read the catalogs (the function's source, its types): not the walk's.
    for _ in 0..3 {
        client.query_one("SELECT session_tree_root($1)", &[&session])?;
    }
    let sql =
        format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT session_tree_root('{session}')");
    let row = client.query_one(sql.as_str(), &[])?;
    let plan: serde_json::Value = row.try_get(0)?;
    let plan = &plan[0]["Plan"];
    let blocks = |key: &str| plan[key].as_i64().unwrap_or(0);
    Ok(blocks("Shared Hit Blocks") + blocks("Shared Read Blocks"))
}

#[test]
fn an_appends_tree_walk_reads_by_key_even_when_statistics_say_sessions_is_small(
) -> crate::Result<()> {
    let Some((mut admin, schema, url)) = super::plans::schema_of_its_own("tree_walk")? else {
        return Ok(());
    };
    let config = crate::Config::default()
        .create_if_missing(true)
        .max_live_children(u32::MAX)
        .creation_rate(u32::MAX, std::time::Duration::from_secs(1));
    let ledger = Ledger::open_with(&url, config)?;
    ledger.create_root("r", "op")?;
    ledger.create_child("a", "r", "op")?;
    ledger.create_child("b", "a", "op")?;
    ledger.create_child("leaf", "b", "op")?;
    let mut client = postgres::Client::connect(&url, postgres::NoTls)?;
    // The statistics of a small ledger, kept while it grows.
    client
        .batch_execute("ANALYZE sessions; ALTER TABLE sessions SET (autovacuum_enabled = off)")?;
    for i in 0..3_000 {
        ledger.create_child(&format!("wide-{i:0>100}"), "r", "op")?;
    }
    let table_blocks: i64 = client
        .query_one(
            "SELECT pg_relation_size('sessions') / current_setting('block_size')::bigint",
            &[],
        )?
        .try_get(0)?;
    let walk = tree_root_blocks(&mut client, "leaf")?;
    let root: String = client
        .query_one("SELECT session_tree_root('leaf')", &[])?
        .try_get(0)?;
    let unknown: String = client
        .query_one("SELECT session_tree_root('nobody')", &[])?
        .try_get(0)?;
    drop(ledger);
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
    assert_eq!((root.as_str(), unknown.as_str()), ("r", "nobody"));
    // Four levels, a few index and heap blocks each; the table is far larger.
    assert!(table_blocks > 60, "the table holds {table_blocks} blocks");
    assert!(
        walk <= 20,
        "the walk read {walk} blocks of a {table_blocks}-block table"
    );
    Ok(())
}
