//! The commands, a module per group. Each owns its run functions: it takes a command's
//! arguments, opens the ledger the way it needs through the shared context
//! ([`crate::context`]), calls the library and returns what to print ([`crate::render::Report`]).
//! The dispatcher above them calls them; none calls the dispatcher or another group, and what
//! two groups share lives in the context (tests/structure.rs holds them to this).

/// Archives: `archive`, and `verify --archive`.
pub mod archives;
/// The ledger's trail: `audit` (its listing, `head`, `prove`, `export`, which also exports the
/// decision log), `verify`, `check`, `backup`.
pub mod audit;
/// Authority: `trust`, `revoke`, `revoke-all`, `pattern`, `scope`, `decide` (and `decide
/// --record`), `explain`, `epoch`.
pub mod authority;
/// Signed checkpoints: `checkpoint keygen`, `sign`, `list`, and `verify --checkpoint`.
pub mod checkpoints;
/// `completions`: a shell's completion script.
pub mod completions;
/// `copy`: a ledger into a new PostgreSQL ledger.
pub mod copy;
/// Decision records: `decisions` (the listing), `decisions show`, `decisions integrate`.
pub mod decisions;
/// `hook claude-code`: Claude Code's hooks answered by the ledger, failing closed.
pub mod hook;
/// Sessions and labels: `init`, `create`, `state`, `raise`, `end`, `tree`.
pub mod sessions;
