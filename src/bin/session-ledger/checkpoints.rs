//! The commands of signed checkpoints (docs/audit.md, "Checkpoints"): a key made and kept in a
//! file of its own, a checkpoint signed and listed, the trail verified against one an auditor
//! holds (with the last one verified kept in a state file), a receipt for one row, and the
//! trail as a feed.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use session_ledger::{CheckpointOptions, SignerKey, VerifierKey};

use crate::commands::{acting, open_existing, open_for_reading, Context};
use crate::error::CliError;
use crate::render::Report;

/// A file's text, or an error that names the file.
fn read(path: &Path, what: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {what} {}: {e}", path.display())))
}

/// `checkpoint keygen`: a new key in a new file that only its owner may read.
pub fn keygen(path: &Path, name: &str) -> Result<Report, CliError> {
    let key = SignerKey::generate(name)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| {
        CliError::Usage(format!(
            "cannot create the key file {}: {e}",
            path.display()
        ))
    })?;
    writeln!(file, "{key}")?;
    file.sync_all()?;
    Ok(Report::KeyGenerated {
        path: path.display().to_string(),
        verifier: key.verifier().to_string(),
    })
}

/// `checkpoint sign`.
pub fn sign(
    ctx: &Context<'_>,
    key: &Path,
    origin: Option<&str>,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let key: SignerKey = read(key, "the key file")?.parse()?;
    let ledger = open_existing(ctx.db)?;
    let signed = ledger.checkpoint(&key, origin, &acting(ctx, actor)?)?;
    Ok(Report::CheckpointSigned(signed))
}

/// `checkpoint list`.
pub fn list(ctx: &Context<'_>, after: i64, limit: u32) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    Ok(Report::Checkpoints(ledger.checkpoints(after, limit)?))
}

/// The verifier key given as its text, or as a file holding it.
fn verifier_key(given: &str) -> Result<VerifierKey, CliError> {
    match given.parse::<VerifierKey>() {
        Ok(key) => Ok(key),
        Err(_) if Path::new(given).is_file() => {
            Ok(read(Path::new(given), "the verifier key file")?.parse()?)
        }
        Err(e) => Err(e.into()),
    }
}

/// `verify --checkpoint`: the report, and the state file moved on to this checkpoint when every
/// check passed (written beside it and renamed over it, so it is never half written).
pub fn verify(
    ctx: &Context<'_>,
    checkpoint: &Path,
    key: &str,
    state: Option<&Path>,
    fast: bool,
) -> Result<Report, CliError> {
    let note = read(checkpoint, "the checkpoint")?;
    let key = verifier_key(key)?;
    let mut options = CheckpointOptions::default();
    options.fast = fast;
    if let Some(state) = state.filter(|s| s.exists()) {
        options.previous = Some(read(state, "the state file")?);
    }
    let ledger = open_for_reading(ctx)?;
    let verification = ledger.verify_checkpoint(&note, &key, &options)?;
    let mut saved = None;
    if let (true, Some(state)) = (verification.ok, state) {
        // On disk before it takes the state's name, so a crash leaves the old state or the new.
        let temporary = state.with_extension("new");
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(note.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, state)?;
        saved = Some(state.display().to_string());
    }
    Ok(Report::CheckpointVerified {
        verification,
        saved,
    })
}

/// `audit prove`.
pub fn prove(ctx: &Context<'_>, seq: i64, checkpoint: Option<&Path>) -> Result<Report, CliError> {
    let note = checkpoint.map(|p| read(p, "the checkpoint")).transpose()?;
    let ledger = open_for_reading(ctx)?;
    let receipt = ledger.prove(seq, note.as_deref())?;
    Ok(Report::Receipt {
        seq,
        text: receipt.to_text(),
    })
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
        let rows = ledger.audit_after(after, PAGE)?;
        if rows.is_empty() {
            let head = ledger.audit_head()?.seq;
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
