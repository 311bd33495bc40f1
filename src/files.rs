//! Writing a file whole under its name: a file is written beside its destination under a name
//! of its own (`NAME.partial-PID-N`), synced and checked, and only then given the name, by a
//! hard link that fails when the name is taken (or a rename, where the file system has no
//! links). So a process killed at any step leaves under the name either nothing or a whole
//! file, and never writes over a file that is there. Backups and archives are written so.

use std::io::{ErrorKind, Read as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{InputError, Result};

/// The name a copy for `dest` is written under until it is whole and checked, after refusing a
/// `dest` that exists (saying `why`) or that names no file: `NAME.partial-PID-N`, N counting
/// this process's copies, so that two at once never share one. A file already there by that
/// name (a killed process's, whose id was reused) is not touched: the copy then fails.
pub(crate) fn partial_beside(dest: &Path, why: &str) -> Result<PathBuf> {
    static COPIES: AtomicU64 = AtomicU64::new(0);
    refuse_existing(dest, why)?;
    let Some(name) = dest.file_name() else {
        return Err(InputError::InvalidConfig(format!("{} names no file", dest.display())).into());
    };
    let mut partial = name.to_owned();
    partial.push(format!(
        ".partial-{}-{}",
        std::process::id(),
        COPIES.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(dest.with_file_name(partial))
}

/// `InvalidConfig` when `path` exists (or cannot be looked at).
pub(crate) fn refuse_existing(path: &Path, why: &str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        _ => Err(InputError::InvalidConfig(format!("{} exists: {why}", path.display())).into()),
    }
}

/// Gives the whole, checked file `partial` the name `dest`, unless that name was taken
/// meanwhile, and syncs the folder so that the name survives a crash.
pub(crate) fn publish(partial: &Path, dest: &Path, why: &str) -> Result<()> {
    match std::fs::hard_link(partial, dest) {
        Ok(()) => discard(partial),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            discard(partial);
            return refuse_existing(dest, why);
        }
        // A file system without hard links: a rename, which the check before it leaves only
        // a moment to race.
        Err(_) => {
            if let Err(e) = refuse_existing(dest, why) {
                discard(partial);
                return Err(e);
            }
            std::fs::rename(partial, dest)?;
        }
    }
    if let Some(folder) = dest.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::File::open(folder)?.sync_all()?;
    }
    Ok(())
}

/// Removes `path` if it is there; what cannot be removed is left, as no backup by its name.
pub(crate) fn discard(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// SHA-256 of the bytes of the file at `path`, as 64 lower-case hex digits.
pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Syncs the file at `path` and the folder that names it, so that both survive a crash.
pub(crate) fn sync_file(path: &Path) -> Result<()> {
    std::fs::File::open(path)?.sync_all()?;
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::File::open(folder)?.sync_all()?;
    }
    Ok(())
}
