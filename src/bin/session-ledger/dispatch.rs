//! Dispatch, in one place: which group's run function a command on a ledger goes to, then its
//! report printed, the notes for stderr, and the exit a failed verification ends with. The
//! groups (`crate::commands`) know nothing of this module; `main.rs` and the demo, above it,
//! call it.

use std::io::Write;

use crate::args::{AuditCommand, CheckpointCommand, LedgerCommand};
use crate::commands::{archives, audit, authority, checkpoints, decisions, sessions};
use crate::context::Context;
use crate::error::CliError;
use crate::render::{self, Format, Report};

/// Runs `command` on the ledger of `ctx`: its library call, its output on `out` in `format`,
/// and a note for the reader on `notes` (the next page of `audit --limit` or of `decisions`, a
/// ledger read as an immutable copy). A `verify`, `check` or `audit verify-receipt` that found
/// problems prints its report and then fails.
/// Returns what was printed.
///
/// # Errors
///
/// The ledger's error, a combination of arguments the command refuses, a failed write to `out`,
/// or [`CliError::Unverified`], [`CliError::CheckFailed`], [`CliError::CheckpointUnverified`]
/// and [`CliError::ReceiptUnverified`] after their report.
pub fn ledger(
    ctx: &Context<'_>,
    format: Format,
    command: &LedgerCommand,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> Result<Report, CliError> {
    let report = match command {
        // A feed prints as it reads, and with --follow never ends.
        LedgerCommand::Audit {
            command:
                Some(AuditCommand::Export {
                    after,
                    decisions: false,
                    follow,
                    format: feed,
                    poll,
                }),
            ..
        } => audit::export(
            ctx,
            *after,
            *follow,
            feed,
            std::time::Duration::from_millis(*poll),
            out,
        )?,
        LedgerCommand::Audit {
            command:
                Some(AuditCommand::Export {
                    after,
                    decisions: true,
                    follow,
                    format: feed,
                    poll,
                }),
            ..
        } => audit::export_decisions(
            ctx,
            u64::try_from(*after).unwrap_or(0),
            *follow,
            feed,
            std::time::Duration::from_millis(*poll),
            out,
        )?,
        // So does a watched tree, drawn again at each change until stopped.
        LedgerCommand::Tree {
            id,
            watch: true,
            interval,
        } => sessions::watch_tree(
            ctx,
            id.as_deref(),
            std::time::Duration::from_millis(*interval),
            format,
            out,
        )?,
        _ => execute(ctx, command)?,
    };
    render::report(out, format, &report)?;
    let immutable = ctx
        .read_immutable()
        .then(|| render::immutable_note(format.is_json(), ctx.db));
    for note in immutable
        .into_iter()
        .chain(render::note(format.is_json(), &report))
    {
        out.flush()?;
        // A closed stderr has nobody to tell.
        let _ = writeln!(notes, "{note}");
    }
    match &report {
        Report::Verified { verification, .. } if !verification.ok => Err(CliError::Unverified),
        Report::Checked(check) if !check.ok => Err(CliError::CheckFailed),
        Report::BackedUp(backup) if !backup.ok => Err(CliError::CheckFailed),
        Report::ArchiveVerified(verification) if !verification.ok => {
            Err(CliError::ArchiveUnverified)
        }
        Report::Restored(restored) if restored.checkpoint.as_ref().is_some_and(|c| !c.ok) => {
            Err(CliError::CheckpointUnverified)
        }
        Report::Restored(restored) if !restored.ok => Err(CliError::CheckFailed),
        Report::CheckpointVerified { verification, .. } if !verification.ok => {
            Err(CliError::CheckpointUnverified)
        }
        Report::ReceiptChecked {
            check,
            failed: Some(failed),
        } => Err(CliError::ReceiptUnverified {
            check: failed.as_str(),
            why: check.why.clone().unwrap_or_default(),
        }),
        Report::DecisionReceiptChecked(check) if !check.ok => Err(CliError::ReceiptUnverified {
            check: "decision",
            why: check.why.clone().unwrap_or_default(),
        }),
        _ => Ok(report),
    }
}

/// The library's answer to `command`, not printed yet: the group that owns it runs it.
fn execute(ctx: &Context<'_>, command: &LedgerCommand) -> Result<Report, CliError> {
    match command {
        LedgerCommand::Init => sessions::init(ctx),
        LedgerCommand::Create { id, by, actor } => sessions::create(ctx, id, by.as_deref(), actor),
        LedgerCommand::State { id } => sessions::state(ctx, id),
        LedgerCommand::Raise {
            id,
            taint,
            untrusted,
            actor,
        } => sessions::raise(ctx, id, taint.as_deref(), *untrusted, actor),
        LedgerCommand::End { id, actor } => sessions::end(ctx, id, actor),
        LedgerCommand::Tree { id, .. } => sessions::tree(ctx, id.as_deref()),
        LedgerCommand::Audit {
            command: Some(AuditCommand::Head),
            ..
        } => audit::head(ctx),
        LedgerCommand::Audit {
            command:
                Some(AuditCommand::Prove {
                    consistency: Some(sizes),
                    ..
                }),
            ..
        } => audit::prove_consistency(ctx, sizes[0], sizes.get(1).copied()),
        LedgerCommand::Audit {
            command: Some(AuditCommand::Prove {
                seq, checkpoint, ..
            }),
            ..
        } => audit::prove(ctx, seq.unwrap_or(0), checkpoint.as_deref()),
        LedgerCommand::Audit {
            command:
                Some(AuditCommand::VerifyReceipt {
                    receipt,
                    verifier_key,
                    row,
                }),
            ..
        } => audit::verify_receipt(receipt, verifier_key, row.as_deref()),
        LedgerCommand::Audit {
            command: Some(AuditCommand::Export { .. }),
            ..
        } => Ok(Report::Exported),
        LedgerCommand::Audit {
            command: None,
            filters,
        } => audit::list(ctx, filters),
        LedgerCommand::Verify {
            checkpoint: Some(checkpoint),
            verifier_key,
            state,
            fast,
            ..
        } => checkpoints::verify(
            ctx,
            checkpoint,
            verifier_key.as_deref().unwrap_or_default(),
            state.as_deref(),
            *fast,
        ),
        LedgerCommand::Verify {
            archive: Some(archive),
            verifier_key,
            alone,
            ..
        } => archives::verify(
            ctx,
            archive,
            verifier_key.as_deref().unwrap_or_default(),
            *alone,
        ),
        LedgerCommand::Verify { head, from, .. } => {
            audit::verify(ctx, head.as_deref(), from.as_deref())
        }
        LedgerCommand::Check => audit::check(ctx),
        LedgerCommand::Backup { dest } => audit::backup(ctx, dest),
        LedgerCommand::Archive {
            before,
            tree,
            to,
            actor,
        } => archives::archive(ctx, before.as_deref(), tree.as_deref(), to, actor),
        LedgerCommand::Restore {
            backup,
            checkpoint,
            verifier_key,
        } => audit::restore(ctx, backup, checkpoint.as_deref(), verifier_key.as_deref()),
        LedgerCommand::Explain { id } => authority::explain(ctx, id),
        LedgerCommand::Authority { id } => authority::authority(ctx, id),
        LedgerCommand::Trust {
            id, full, actor, ..
        } => authority::trust(ctx, id, *full, actor),
        LedgerCommand::Revoke {
            id,
            cascade,
            local,
            token,
            also,
            actor,
            ..
        } => authority::revoke(ctx, id, *cascade, *local, token, *also, actor),
        LedgerCommand::RevokeAll { also, actor } => authority::revoke_all(ctx, *also, actor),
        LedgerCommand::Pattern(command) => authority::pattern(ctx, command),
        LedgerCommand::Scope(command) => authority::scope(ctx, command),
        LedgerCommand::Decide {
            id,
            read_only,
            classify,
            tool,
            record,
            command,
        } => authority::decide(ctx, id, *read_only, *classify, tool, record, command),
        LedgerCommand::Decisions {
            command: Some(command),
            ..
        } => decisions::run(ctx, command),
        LedgerCommand::Decisions {
            command: None,
            filters,
        } => decisions::list(ctx, filters),
        LedgerCommand::Classify { command } => authority::classify(command),
        LedgerCommand::Epoch(command) => authority::epoch(ctx, command),
        LedgerCommand::LedgerOption { name, value, actor } => {
            authority::option(ctx, name.as_deref(), value.as_deref(), actor)
        }
        LedgerCommand::Checkpoint(CheckpointCommand::Keygen { key, name }) => {
            checkpoints::keygen(key, name)
        }
        LedgerCommand::Checkpoint(CheckpointCommand::Sign { key, origin, actor }) => {
            checkpoints::sign(ctx, key, origin.as_deref(), actor)
        }
        LedgerCommand::Checkpoint(CheckpointCommand::List { after, limit }) => {
            checkpoints::list(ctx, *after, *limit)
        }
    }
}
