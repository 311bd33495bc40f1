//! The commands of signed checkpoints (docs/audit.md, "Checkpoints"): a key made and kept in a
//! file of its own, a checkpoint signed and listed, and the trail verified against one an
//! auditor holds (with the last one verified kept in a state file).

use std::io::Write;
use std::path::Path;

use session_ledger::{CheckpointOptions, SignerKey};

use crate::context::{acting, open_existing, open_for_reading, read_file, verifier_key, Context};
use crate::error::CliError;
use crate::render::Report;

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
    let key: SignerKey = read_file(key, "the key file")?.parse()?;
    let ledger = open_existing(ctx.db)?;
    let signed = ledger.checkpoint(&key, origin, &acting(ctx, actor)?)?;
    Ok(Report::CheckpointSigned(signed))
}

/// `checkpoint list`.
pub fn list(ctx: &Context<'_>, after: i64, limit: u32) -> Result<Report, CliError> {
    let ledger = open_for_reading(ctx)?;
    Ok(Report::Checkpoints(ledger.checkpoints(after, limit)?))
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
    let note = read_file(checkpoint, "the checkpoint")?;
    let key = verifier_key(key)?;
    let mut options = CheckpointOptions::default();
    options.fast = fast;
    if let Some(state) = state.filter(|s| s.exists()) {
        options.previous = Some(read_file(state, "the state file")?);
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
