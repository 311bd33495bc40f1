//! The handle's decision records (rules D1, D2): deciding and recording in one call, listing
//! records, and integrating the queued ones into the decision log under the audit trail.

use crate::audit::merkle::inclusion_proof;
use crate::decision_log::{
    self, AskedBy, DecisionQuery, DecisionReceipt, DecisionRecord, Integrated, Leaves,
    INTEGRATION_BATCH,
};
use crate::decisions::{Decision, ReadOnly, Recorded};
use crate::error::{Conflict, Corruption, Error};
use crate::error::{InputError, Result};
use crate::model::validate_actor;
use crate::patterns::ToolCall;
use crate::storage::NewDecision;

use super::Ledger;

impl Ledger {
    /// [`Ledger::decide`], and its record, committed before this returns (rule D1): the
    /// command line (cut at [`MAX_RECORDED_INPUT`](crate::MAX_RECORDED_INPUT) bytes, with its
    /// SHA-256 when cut), the verdict, the reason, who asked and when. The record is appended
    /// without the ledger's write lock (rule D2; on SQLite it waits for the file's one writer,
    /// as every write does) and waits in the queue until [`Ledger::integrate_decisions`] gives
    /// it a position; a checkpoint signed after that covers it.
    ///
    /// # Errors
    ///
    /// As [`Ledger::decide`]; `InvalidActor`, `InvalidConfig` for a malformed tool-use id;
    /// `ReadOnly`; [`StorageError::DecisionsUnknown`](crate::StorageError::DecisionsUnknown)
    /// when the record's commit may or may not last. The decision is not returned without its
    /// record.
    ///
    /// ```
    /// # fn main() -> Result<(), session_ledger::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use session_ledger::{AskedBy, DecisionQuery, Ledger, PostureLevel, ReadOnly, Verdict};
    /// let ledger = Ledger::init(dir.path().join("ledger.db"))?;
    /// ledger.create_root("conductor", "alice")?;
    /// ledger.grant("conductor", PostureLevel::TrustReads, "alice")?;
    /// let asked = AskedBy { actor: "claude-code", tool_use_id: Some("toolu_01") };
    /// let recorded = ledger.decide_and_record("conductor", "git log -3", ReadOnly::Classify, &asked)?;
    /// assert_eq!(recorded.decision.verdict, Verdict::Approve);
    /// let query = DecisionQuery { session: Some("conductor".into()), ..Default::default() };
    /// let records = ledger.decisions(&query)?;
    /// assert_eq!(records[0].record, recorded.record);
    /// assert_eq!(records[0].authority, "trust_reads");
    /// assert_eq!(records[0].seq, None); // queued until integrated
    /// ledger.integrate_decisions("alice")?;
    /// assert_eq!(ledger.decision(&recorded.record)?.unwrap().seq, Some(1));
    /// # Ok(()) }
    /// ```
    pub fn decide_and_record(
        &self,
        id: &str,
        command: &str,
        read_only: impl Into<ReadOnly>,
        asked: &AskedBy<'_>,
    ) -> Result<Recorded> {
        asked.validate()?;
        let decision = self.decide(id, command, read_only)?;
        let record = self.command_record(&decision, command, asked)?;
        self.append_records(std::slice::from_ref(&record))?;
        Ok(Recorded {
            decision,
            record: record.record,
            durable: true,
        })
    }

    /// [`Ledger::decide_tool`], and its record, as [`Ledger::decide_and_record`]: the tool's
    /// name, and its path or URL as the input.
    ///
    /// # Errors
    ///
    /// As [`Ledger::decide_tool`] and [`Ledger::decide_and_record`].
    pub fn decide_tool_and_record(
        &self,
        id: &str,
        call: &ToolCall<'_>,
        asked: &AskedBy<'_>,
    ) -> Result<Recorded> {
        asked.validate()?;
        let decision = self.decide_tool(id, call)?;
        let record = self.tool_record(&decision, call, asked)?;
        self.append_records(std::slice::from_ref(&record))?;
        Ok(Recorded {
            decision,
            record: record.record,
            durable: true,
        })
    }

    /// The record of a tool call's decision.
    pub(crate) fn tool_record(
        &self,
        decision: &Decision,
        call: &ToolCall<'_>,
        asked: &AskedBy<'_>,
    ) -> Result<NewDecision> {
        let input = match (call.path, call.url) {
            (Some(path), _) => path.to_string_lossy().into_owned(),
            (None, Some(url)) => url.to_owned(),
            (None, None) => String::new(),
        };
        decision_log::new_record(
            decision.decided()?,
            Some(call.tool),
            &input,
            asked,
            self.wall_clock(),
        )
    }

    /// The record of a command line's decision.
    pub(crate) fn command_record(
        &self,
        decision: &Decision,
        command: &str,
        asked: &AskedBy<'_>,
    ) -> Result<NewDecision> {
        decision_log::new_record(decision.decided()?, None, command, asked, self.wall_clock())
    }

    /// Appends `records` in one transaction of their own, without the ledger's write lock.
    pub(crate) fn append_records(&self, records: &[NewDecision]) -> Result<()> {
        self.storage.append(|a| a.append_decisions(records))
    }

    /// The records `query` names, newest first, with their positions in the decision log
    /// (`None` while queued). A session's page reads that session's index entries only, at any
    /// size of the ledger.
    ///
    /// # Errors
    ///
    /// `InvalidId`; `InvalidConfig` for an unknown verdict or authority, or a limit outside 1
    /// to 10,000; [`Error::Storage`](crate::Error::Storage).
    pub fn decisions(&self, query: &DecisionQuery) -> Result<Vec<DecisionRecord>> {
        self.storage.snapshot(|r| decision_log::list(r, query))
    }

    /// The integrated records after position `after` of the decision log, oldest first, at
    /// most `limit` (1 to 10,000): the export feed. Positions have no gaps and never change,
    /// so a reader that saves the last position it read resumes exactly there; a record is
    /// in the feed once it is integrated.
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for a limit outside 1 to 10,000; `Archived` when positions after
    /// `after` left with an archive; [`Error::Storage`](crate::Error::Storage).
    pub fn decisions_after(&self, after: u64, limit: u32) -> Result<Vec<DecisionRecord>> {
        if !(1..=10_000).contains(&limit) {
            return Err(InputError::InvalidConfig(format!(
                "a page holds 1 to 10000 records, not {limit}"
            ))
            .into());
        }
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.storage.read(|r| {
            let rows = r.logged_after(after, limit)?;
            // Positions have no gaps (C39): one missing after `after` left with an archive,
            // and a reader resuming here would skip it.
            if let Some(first) = rows.first().and_then(|row| row.seq) {
                if first > after + 1 {
                    return Err(Conflict::Archived(format!(
                        "decision log positions {} to {} left with an archive: read them from \
                         the archives' files (their decision_records view), then resume after {}",
                        after + 1,
                        first - 1,
                        first - 1
                    ))
                    .into());
                }
            }
            rows.into_iter().map(decision_log::record_of).collect()
        })
    }

    /// The record whose own id is `record`, if the ledger has it.
    ///
    /// # Errors
    ///
    /// `InvalidConfig` for an id that is not 32 lower-case hex digits;
    /// [`Error::Storage`](crate::Error::Storage).
    pub fn decision(&self, record: &str) -> Result<Option<DecisionRecord>> {
        if record.len() != 32
            || !record
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(InputError::InvalidConfig(format!(
                "a decision record's id is 32 lower-case hex digits, not {record:?}"
            ))
            .into());
        }
        self.storage.read(|r| {
            r.decision_by_record(record)?
                .map(decision_log::record_of)
                .transpose()
        })
    }

    /// Integrates every record queued when it starts into the decision log, in batches of at
    /// most [`INTEGRATION_BATCH`] records, each its own write transaction with one
    /// `decisions.integrate` audit row by `actor`: positions follow integration, without gaps,
    /// and a record whose append committed late is taken by the next run, never skipped.
    /// [`Ledger::checkpoint`] runs it first, so that a checkpoint covers every record
    /// committed before it.
    ///
    /// # Errors
    ///
    /// `InvalidActor`; `ReadOnly`; [`Error::Storage`](crate::Error::Storage). Batches
    /// integrated before a failure stay integrated.
    pub fn integrate_decisions(&self, actor: &str) -> Result<Integrated> {
        validate_actor(actor)?;
        let mut done = Integrated::default();
        let queued = self.storage.read(|r| r.queued_count())?;
        let mut left = u64::try_from(queued).unwrap_or(0);
        while left > 0 {
            let limit = u32::try_from(left)
                .unwrap_or(u32::MAX)
                .min(INTEGRATION_BATCH);
            let n = self.write(|tx, now| decision_log::integrate(tx, now, actor, limit))?;
            if n == 0 {
                break;
            }
            done.records += n;
            done.batches += 1;
            left = left.saturating_sub(n);
        }
        let (size, queued) = self
            .storage
            .read(|r| Ok((r.decision_log_size()?, r.queued_count()?)))?;
        done.log_size = u64::try_from(size).unwrap_or(0);
        done.queued = u64::try_from(queued).unwrap_or(0);
        Ok(done)
    }

    /// A receipt for the decision record `record` against `checkpoint` (a note), or against the
    /// newest checkpoint the ledger recorded: its leaf's proof under its batch's root, and the
    /// batch's audit row's receipt ([`Ledger::prove`]). It is checked before it is returned;
    /// [`verify_decision_receipt`](crate::verify_decision_receipt) checks it offline.
    ///
    /// # Errors
    ///
    /// `NotCovered` for a record the ledger does not have, one still queued, or one whose
    /// batch is newer than the checkpoint; as [`Ledger::prove`] otherwise.
    pub fn prove_decision(
        &self,
        record: &str,
        checkpoint: Option<&str>,
    ) -> Result<DecisionReceipt> {
        let not_covered = |why: String| -> Error {
            Conflict::NotCovered {
                record: record.to_owned(),
                why,
            }
            .into()
        };
        let found = self
            .decision(record)?
            .ok_or_else(|| not_covered("the ledger has no such record".to_owned()))?;
        let batch = found.batch.ok_or_else(|| {
            not_covered(
                "it waits to be integrated (integrate_decisions, or the next checkpoint, gives \
                 it a position)"
                    .to_owned(),
            )
        })?;
        let receipt = match self.prove(batch, checkpoint) {
            Err(Error::Conflict(Conflict::NotInCheckpoint { size, .. })) => {
                return Err(not_covered(format!(
                    "its batch is audit row {batch}, after the checkpoint's {size} rows (sign a \
                     later one)"
                )))
            }
            other => other?,
        };
        let rows = self.storage.read(|r| r.decision_batch(batch))?;
        let index = rows
            .iter()
            .position(|row| row.record == record)
            .ok_or_else(|| {
                Corruption::new(format!("record {record} is not in its batch {batch}"))
            })?;
        let leaves: Vec<_> = rows.iter().map(decision_log::leaf_of).collect();
        let size = leaves.len() as u64;
        let proof = inclusion_proof(&mut Leaves(&leaves), index as u64, size)?;
        let out = DecisionReceipt {
            leaf: String::from_utf8(decision_log::leaf_bytes(&rows[index]))
                .map_err(|e| Corruption::new(format!("a leaf that is not UTF-8: {e}")))?,
            index: index as u64,
            size,
            proof,
            batch: receipt,
        };
        out.leaf_in_batch().map_err(|why| {
            Corruption::new(format!(
                "record {record} no longer matches its batch, audit row {batch}: {why} (verify \
                 --checkpoint says more)"
            ))
        })?;
        Ok(out)
    }
}
