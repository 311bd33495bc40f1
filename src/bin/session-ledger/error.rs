//! The command line's errors: the ledger's own, and those of the command line itself, each with
//! the `kind` `--json` names it by and the exit status it ends the program with.

use std::io;
use std::path::{Path, PathBuf};

use session_ledger::{Error, InputError, StorageError};

/// Errors of the command line itself, beside the ledger's.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{}", with_advice(.0))]
    Ledger(#[from] Error),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write output: {0}")]
    Io(#[from] io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the audit chain does not verify")]
    Unverified,
    #[error("the audit trail does not verify against the checkpoint")]
    CheckpointUnverified,
    #[error("the ledger check found problems")]
    CheckFailed,
    #[error("the archive does not verify")]
    ArchiveUnverified,
    /// `audit verify-receipt`: the check named failed, for the reason given.
    #[error("the receipt does not check out: the {check} check is INVALID: {why}")]
    ReceiptUnverified { check: &'static str, why: String },
    /// `decisions show` was given the id of no record the ledger holds.
    #[error("the ledger holds no decision record {0:?} (`session-ledger decisions` lists them)")]
    UnknownRecord(String),
    /// `init` was given a ledger in a folder that does not exist (`exists` false) or in a path
    /// that is not a folder.
    #[error("{}", no_folder(folder, ledger, *exists))]
    NoFolder {
        folder: PathBuf,
        ledger: PathBuf,
        exists: bool,
    },
}

/// Why there is nowhere to create `ledger`, and what to do about it.
fn no_folder(folder: &Path, ledger: &Path, exists: bool) -> String {
    let name = |p: &Path| p.display().to_string();
    if exists {
        format!(
            "{} is not a folder, so the ledger {} cannot be created in it: give --db a path \
             in a folder",
            name(folder),
            name(ledger)
        )
    } else {
        format!(
            "the folder {} does not exist, so the ledger {} cannot be created in it: create \
             the folder first (mkdir -p {}) and run init again",
            name(folder),
            name(ledger),
            crate::shell::shell_words(&[&name(folder)])
        )
    }
}

/// The ledger's message, with what to run about it where this program has a command for that.
fn with_advice(e: &Error) -> String {
    let advice = match e {
        Error::Storage(StorageError::NoLedger(_)) => " (create one with `session-ledger init`)",
        Error::Input(InputError::InvalidHead(_)) => ", as `session-ledger audit head` prints it",
        Error::Storage(StorageError::DurabilityUnknown { seq, hash, .. }) => {
            return format!(
                "{e} (look for it before doing it again: `session-ledger verify --from \
                 {seq}:{hash}` passes while it is in the trail)"
            )
        }
        Error::Storage(StorageError::DecisionsUnknown { records, .. }) if !records.is_empty() => {
            return format!(
                "{e} (look for it before asking again: `session-ledger decisions show {}` \
                 finds it while it is on the record)",
                records[0]
            )
        }
        _ => "",
    };
    format!("{e}{advice}")
}

impl CliError {
    /// The stable snake_case name `--json` prints as the error's `kind`: the ledger's own
    /// ([`Error::kind`]), or one of the command line's, named so as not to clash with those.
    pub fn kind(&self) -> &'static str {
        match self {
            CliError::Ledger(e) => e.kind(),
            CliError::Usage(_) => "usage",
            CliError::Io(_) => "io",
            CliError::Json(_) => "json_encoding",
            CliError::Unverified => "unverified_chain",
            CliError::CheckpointUnverified => "unverified_checkpoint",
            CliError::CheckFailed => "check_failed",
            CliError::ArchiveUnverified => "unverified_archive",
            CliError::ReceiptUnverified { .. } => "unverified_receipt",
            CliError::UnknownRecord(_) => "unknown_record",
            CliError::NoFolder { .. } => "no_folder",
        }
    }

    /// The exit status. A combination of arguments the CLI refuses is a bad argument, 2, like
    /// the ones the parser refuses; a write whose outcome is unknown (it may or may not last)
    /// is 3, so that a script cannot take it for a failure it may simply run again; everything
    /// else, values the ledger checks included, is 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Ledger(Error::Storage(
                StorageError::DurabilityUnknown { .. } | StorageError::DecisionsUnknown { .. },
            )) => 3,
            _ => 1,
        }
    }
}
