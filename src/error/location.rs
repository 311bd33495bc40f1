//! Where a ledger is, as errors and reports name it.

use std::fmt;
use std::path::PathBuf;

/// Where a ledger is: the file it was opened at, or the server and database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database, as `postgresql://user@host:port/database`, with any socket
    /// folder after it: never with a password.
    Server(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Server(description) => f.write_str(description),
        }
    }
}
