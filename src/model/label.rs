//! A label: a taint class on the lattice `public < private < secret` and the `untrusted` flag,
//! with the lattice's join, and how a stored label came to be written.
//!
//! Values only: reading, inheriting and raising labels are `crate::labels`'.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{Error, InputError};

/// A taint class. The order is the lattice order: `Public < Private < Secret`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Taint {
    /// Has seen only public data.
    Public,
    /// Has seen private data; the default.
    Private,
    /// Has seen secret data.
    Secret,
}

impl Taint {
    /// The word stored in the database and printed by the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Taint::Public => "public",
            Taint::Private => "private",
            Taint::Secret => "secret",
        }
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Taint {
    type Err = Error;

    /// Parses `public`, `private` or `secret` (exactly, lower case).
    fn from_str(s: &str) -> Result<Taint, Error> {
        match s {
            "public" => Ok(Taint::Public),
            "private" => Ok(Taint::Private),
            "secret" => Ok(Taint::Secret),
            _ => Err(Error::Input(InputError::InvalidTaint(s.to_owned()))),
        }
    }
}

/// A label: a taint class and the untrusted flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Label {
    /// The taint class.
    pub taint: Taint,
    /// Whether the session has read untrusted data.
    pub untrusted: bool,
}

impl fmt::Display for Label {
    /// `secret`, or `private, untrusted`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.untrusted {
            write!(f, "{}, untrusted", self.taint)
        } else {
            write!(f, "{}", self.taint)
        }
    }
}

impl Default for Label {
    /// `private` and trusted: the label of a root and of any id the ledger does not know.
    fn default() -> Label {
        Label {
            taint: Taint::Private,
            untrusted: false,
        }
    }
}

impl Label {
    /// The least label at least as high as both: the higher class, and the flags ORed.
    ///
    /// ```
    /// use session_ledger::{Label, Taint};
    /// let a = Label { taint: Taint::Secret, untrusted: false };
    /// let b = Label { taint: Taint::Public, untrusted: true };
    /// assert_eq!(a.join(b), Label { taint: Taint::Secret, untrusted: true });
    /// ```
    pub fn join(self, other: Label) -> Label {
        Label {
            taint: self.taint.max(other.taint),
            untrusted: self.untrusted || other.untrusted,
        }
    }

    /// True when `self` is at least as high as `other` on both components.
    pub fn dominates(self, other: Label) -> bool {
        self.taint >= other.taint && (self.untrusted || !other.untrusted)
    }
}

/// How a stored label came to be written, or, on a read-only handle, that it was not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "how", rename_all = "lowercase")]
pub enum Materialized {
    /// A root's label, written with the default when it was opened.
    Born,
    /// Copied from an ancestor on first read or first raise.
    Inherited {
        /// The ancestor whose label was copied.
        from: String,
    },
    /// Not written: a first read on a handle opened with
    /// [`Config::read_only`](crate::Config::read_only), answered from the inheritance
    /// (rules L2 and L3) without recording anything. The label is that of `from`, the nearest
    /// materialized ancestor, exactly what a first read with write access would record while
    /// the ledger stays as it is; that read records it, and a later change to the tree above
    /// (a raise of `from`, say) is what it records if it comes first.
    Unrecorded {
        /// The materialized ancestor whose label the session inherits.
        from: String,
    },
}
