//! The grammar of the trail's commands: `audit`'s filters and its subcommands, and
//! `checkpoint`'s.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The rows `audit` lists: every filter narrows them.
#[derive(Debug, Args)]
pub struct AuditFilters {
    /// Only rows about this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only rows about this session or any of its descendants.
    #[arg(long, value_name = "ID")]
    pub subtree: Option<String>,
    /// Only rows of this kind.
    #[arg(
        long,
        value_name = "KIND",
        value_parser = clap::builder::PossibleValuesParser::new(
            session_ledger::AuditKind::ALL.iter().map(|k| k.as_str())
        )
    )]
    pub kind: Option<String>,
    /// Only rows at or after this time (RFC 3339, like 2026-11-30T12:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only rows before this time (RFC 3339).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only the most recent N rows. When older rows match too, the last line on stderr
    /// says how to list the next page: `next page: --before SEQ`, or with --json
    /// `{"next_before": SEQ}`.
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Only rows whose sequence number is smaller than SEQ: the next page after one whose
    /// oldest row is SEQ.
    #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(1..))]
    pub before: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Write a new Ed25519 signing key to FILE (mode 0600; never overwritten) and print its
    /// verifier key, for auditors.
    Keygen {
        /// Where to write the key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The key's name, which its signatures carry (a schema-less URL, like
        /// example.com/ledger).
        #[arg(long, value_name = "NAME", default_value = "session-ledger")]
        name: String,
    },
    /// Sign a checkpoint of the whole trail with the key in FILE, record it, and print it.
    Sign {
        /// The signing key (from `checkpoint keygen`); it is read, never stored.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The log's name on the checkpoint's first line (default: the key's name).
        #[arg(long, value_name = "NAME")]
        origin: Option<String>,
        /// Who is doing this.
        #[arg(long, value_name = "NAME")]
        actor: Option<String>,
    },
    /// List the checkpoints the ledger signed, oldest first.
    List {
        /// Only checkpoints recorded after audit row SEQ.
        #[arg(long, value_name = "SEQ", default_value_t = 0)]
        after: i64,
        /// At most N of them.
        #[arg(long, value_name = "N", default_value_t = 1000)]
        limit: u32,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the head of the audit chain, SEQ:HASH, to keep somewhere else.
    Head,
    /// Print a receipt for row SEQ: its inclusion proof against a checkpoint (C2SP
    /// tlog-proof), which anyone can check with the row and the verifier key alone.
    Prove {
        /// The row.
        #[arg(
            value_parser = clap::value_parser!(i64).range(1..),
            required_unless_present = "consistency"
        )]
        seq: Option<i64>,
        /// The checkpoint to prove against (a file); default the newest one the ledger signed.
        #[arg(long, value_name = "FILE", conflicts_with = "consistency")]
        checkpoint: Option<PathBuf>,
        /// Instead of a receipt, a consistency proof from the tree of the first FROM_SIZE rows to
        /// the tree of TO_SIZE (default: the newest checkpoint the ledger signed), as C2SP
        /// tlog-witness sends it: `old FROM_SIZE`, the proof's hashes in base64, one a line, a
        /// blank line, and the signed checkpoint of TO_SIZE.
        #[arg(
            long,
            num_args = 1..=2,
            value_names = ["FROM_SIZE", "TO_SIZE"],
            conflicts_with = "seq"
        )]
        consistency: Option<Vec<u64>>,
    },
    /// Check a receipt (as `audit prove` prints it) offline, with the verifier key alone: the
    /// checkpoint's signature, the row, and its inclusion under the checkpoint's root; one line
    /// per check, then a summary; exit 0 only when all pass. Needs no ledger.
    VerifyReceipt {
        /// The receipt (a file).
        #[arg(value_name = "FILE")]
        receipt: PathBuf,
        /// The verifier key of the checkpoint's signer: its text (NAME+KEYID+BASE64), or a file
        /// holding it.
        #[arg(long, value_name = "KEY")]
        verifier_key: String,
        /// The row to check, as a file holding it as JSON (one row as `--json audit` prints
        /// it); default the row the receipt carries.
        #[arg(long, value_name = "ROWFILE")]
        row: Option<PathBuf>,
    },
    /// Print the rows after SEQ in order, one JSON line each with its seq and hash, for audit
    /// tooling: restart with the last seq printed to go on with no row lost or repeated. With
    /// --decisions, the decision records instead, by their position in the decision log.
    Export {
        /// Start after this row (0 for the first); with --decisions, after this position of
        /// the decision log (0 for the first).
        #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(0..))]
        after: i64,
        /// Export the decision records integrated into the decision log, in position order,
        /// each with its `seq` (its position): a queued record joins the feed once integrated
        /// (`decisions integrate`, or a checkpoint).
        #[arg(long)]
        decisions: bool,
        /// Then wait for new rows (or integrated records) and print them as they come, until
        /// stopped.
        #[arg(long)]
        follow: bool,
        /// jsonl: each row as `--json audit` prints it (with --decisions, each record as
        /// `--json decisions` does); ocsf: each as an OCSF 1.7.0 event (a record as an API
        /// Activity event with the security_control profile).
        #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = ["jsonl", "ocsf"])]
        format: String,
        /// With --follow, how often to look at the trail's head (or the decision log's), in
        /// milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 500)]
        poll: u64,
    },
}
