//! What every report's text is made of: a count in words, a column's width, a line of JSON.
//! The report modules and `render.rs` above them share these; this module uses none of them.

use std::io::Write;

use crate::error::CliError;

/// Prints `value` as one line of JSON.
pub(super) fn json_line<T: serde::Serialize + ?Sized>(
    out: &mut dyn Write,
    value: &T,
) -> Result<(), CliError> {
    writeln!(out, "{}", serde_json::to_string(value)?)?;
    Ok(())
}

/// The width of a column of `items`: the longest `len` gives (ids, actors and kinds are ASCII,
/// so bytes are characters).
pub(super) fn widest<T>(items: &[T], len: impl Fn(&T) -> usize) -> usize {
    items.iter().map(len).max().unwrap_or(0)
}

/// "1 session", "2 sessions".
pub(super) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// One line per check of a verification: what, where, and valid or INVALID with why.
pub(super) fn finding_lines(findings: &[session_ledger::Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let status = match &f.problem {
                None => format!("valid: {}", f.why),
                Some(word) => format!("INVALID ({word}): {}", f.why),
            };
            format!("{:<12} {:<40} {status}", f.check, f.place)
        })
        .collect()
}
