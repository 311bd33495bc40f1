//! The grammar of decision records: `decide --record`, and `decisions` with its filters and
//! its subcommands.

use clap::{Args, Subcommand};

/// What `decide --record` adds: the decision goes on the record before it is printed.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Record the decision before printing it: the record is committed first, and a decision
    /// that could not be recorded is not printed. The output then names the record.
    #[arg(long)]
    pub record: bool,
    /// Who asks, as the record keeps it (default: $SESSION_LEDGER_ACTOR, else $USER, else
    /// "operator").
    #[arg(long, value_name = "NAME", requires = "record")]
    pub actor: Option<String>,
    /// The agent's id for the tool call (Claude Code's tool_use_id), kept with the record.
    #[arg(long, value_name = "ID", requires = "record")]
    pub tool_use_id: Option<String>,
}

/// The records `decisions` lists: every filter narrows them.
#[derive(Debug, Args)]
pub struct DecisionFilters {
    /// Only records about this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only records about this session or any of its descendants.
    #[arg(long, value_name = "ID")]
    pub subtree: Option<String>,
    /// Only records with this verdict.
    #[arg(
        long,
        value_name = "VERDICT",
        value_parser = clap::builder::PossibleValuesParser::new(session_ledger::VERDICTS)
    )]
    pub verdict: Option<String>,
    /// Only records decided by this authority (or left undecided for this reason: nothing,
    /// session_ended, unknown_session).
    #[arg(
        long,
        value_name = "WORD",
        value_parser = clap::builder::PossibleValuesParser::new(session_ledger::AUTHORITIES)
    )]
    pub authority: Option<String>,
    /// Only records at or after this time (RFC 3339, like 2026-11-30T12:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only records before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// At most N records, the newest. When older ones match too, the last line on stderr says
    /// how to list the next page: `next page: --before ID`, or with --json
    /// `{"next_before": ID}`.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100,
        value_parser = clap::value_parser!(u32).range(1..=10_000)
    )]
    pub limit: u32,
    /// Only records appended before the one whose `id` is ID: the next page after one whose
    /// oldest record is ID.
    #[arg(long, value_name = "ID", value_parser = clap::value_parser!(i64).range(1..))]
    pub before: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum DecisionsCommand {
    /// Print one record whole, its reason included.
    Show {
        /// The record's id (32 hex digits, as `decide --record` and `decisions` print it).
        record: String,
    },
    /// Print a receipt for one record: its proof under its batch's root, and the batch's audit
    /// row's proof under a checkpoint (the newest signed, by default), which anyone can check
    /// with the verifier key alone.
    Prove {
        /// The record's id.
        record: String,
        /// The checkpoint to prove against (a file); default the newest one the ledger signed.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<std::path::PathBuf>,
    },
    /// Check a decision receipt (as `decisions prove` prints it) offline, with the verifier key
    /// alone: the checkpoint's signature, the batch's row under it, and the record under the
    /// batch's root; exit 0 only when all pass. Needs no ledger.
    VerifyReceipt {
        /// The receipt (a file).
        #[arg(value_name = "FILE")]
        receipt: std::path::PathBuf,
        /// The verifier key of the checkpoint's signer: its text (NAME+KEYID+BASE64), or a file
        /// holding it.
        #[arg(long, value_name = "KEY")]
        verifier_key: String,
    },
    /// Integrate the queued records into the decision log: each gets the log's next position,
    /// and each batch an audit row that signed checkpoints cover.
    Integrate {
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
}
