//! The text of decision records: the listing (`decisions`, and the end of `explain`), one record
//! whole (`decisions show`), and an integration (`decisions integrate`).
//!
//! A record's input, tool and tool-use id come from an agent, not from the operator: they are
//! printed escaped as Rust escapes a string for debugging (quoted, with control characters,
//! invisible ones such as zero-width spaces and bidirectional overrides, and other characters
//! that would not show written as `\u{...}`), so that what is printed cannot move the cursor,
//! recolour the terminal or read differently from what was recorded. Session ids and actor
//! names are checked by the ledger to plain characters, and printed as they are.

use std::fmt::Write as _;
use std::io::Write;

use session_ledger::{DecisionReceiptCheck, DecisionRecord, Integrated};

use super::text::{count, widest};
use crate::error::CliError;

/// The names the listing gives its columns, in order.
const COLUMNS: [&str; 8] = [
    "AT",
    "SEQ",
    "RECORD",
    "SESSION",
    "VERDICT",
    "AUTHORITY",
    "ASKED_BY",
    "INPUT",
];

/// The log position of a record, or `queued` while it waits to be integrated.
fn position(r: &DecisionRecord) -> String {
    r.seq
        .map_or_else(|| "queued".to_owned(), |seq| seq.to_string())
}

/// A tool's name as it is when it is plain (`Read`, `mcp__github__create_issue`), else escaped.
fn tool_word(tool: &str) -> String {
    let plain = !tool.is_empty()
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:@/".contains(c));
    if plain {
        tool.to_owned()
    } else {
        format!("{tool:?}")
    }
}

/// What was asked about, escaped: the command line, or the tool and its path or URL; with a
/// note when the record keeps only the first bytes of a longer input.
fn input_words(r: &DecisionRecord) -> String {
    let mut words = match &r.tool {
        Some(tool) if r.input.is_empty() => tool_word(tool),
        Some(tool) => format!("{} {:?}", tool_word(tool), r.input),
        None => format!("{:?}", r.input),
    };
    if r.input_sha256.is_some() {
        let _ = write!(
            words,
            " (the first {} of {} bytes)",
            r.input.len(),
            r.input_bytes
        );
    }
    words
}

/// The listing: a header naming the columns, then one line per record, newest first, each
/// column as wide as its widest value or its name; the input last, as long as it is. The
/// header is there with no record too, so that a script can always skip exactly one line.
pub fn print_decisions(out: &mut dyn Write, records: &[DecisionRecord]) -> Result<(), CliError> {
    let [at, seq, record, session, verdict, authority, asked_by, input] = COLUMNS;
    let width =
        |name: &str, len: &dyn Fn(&DecisionRecord) -> usize| widest(records, len).max(name.len());
    let at_w = width(at, &|r| session_ledger::format_ts(r.at).len());
    let seq_w = width(seq, &|r| position(r).len());
    let record_w = width(record, &|r| r.record.len());
    let session_w = width(session, &|r| r.session.len());
    let verdict_w = width(verdict, &|r| r.verdict.len());
    let authority_w = width(authority, &|r| r.authority.len());
    let asked_w = width(asked_by, &|r| r.asked_by.len());
    writeln!(
        out,
        "{at:<at_w$}  {seq:>seq_w$}  {record:<record_w$}  {session:<session_w$}  \
         {verdict:<verdict_w$}  {authority:<authority_w$}  {asked_by:<asked_w$}  {input}"
    )?;
    for r in records {
        writeln!(
            out,
            "{:<at_w$}  {:>seq_w$}  {:<record_w$}  {:<session_w$}  {:<verdict_w$}  \
             {:<authority_w$}  {:<asked_w$}  {}",
            session_ledger::format_ts(r.at),
            position(r),
            r.record,
            r.session,
            r.verdict,
            r.authority,
            r.asked_by,
            input_words(r)
        )?;
    }
    Ok(())
}

/// `decisions show`: every field of the record on a line of its own, and its reason as indented
/// JSON.
pub fn describe_record(r: &DecisionRecord) -> String {
    let mut lines = vec![
        format!("record:    {}", r.record),
        format!("at:        {}", session_ledger::format_ts(r.at)),
        format!("session:   {} (in the tree of {})", r.session, r.tree),
        format!(
            "tool:      {}",
            r.tool
                .as_deref()
                .map_or("none: a command line".to_owned(), tool_word)
        ),
        format!("input:     {:?}", r.input),
    ];
    match &r.input_sha256 {
        Some(sha) => lines.push(format!(
            "           the first {} of {} bytes; SHA-256 of the whole: {sha}",
            r.input.len(),
            r.input_bytes
        )),
        None => lines.push(format!("           {} bytes", r.input_bytes)),
    }
    lines.push(format!("verdict:   {}", r.verdict));
    lines.push(format!("authority: {}", r.authority));
    let tool_use = r
        .tool_use_id
        .as_ref()
        .map_or(String::new(), |id| format!(", tool use {id:?}"));
    lines.push(format!("asked by:  {}{tool_use}", r.asked_by));
    lines.push(match (r.seq, r.batch) {
        (Some(seq), Some(batch)) => {
            format!("position:  {seq} in the decision log, integrated by audit row {batch}")
        }
        (Some(seq), None) => format!("position:  {seq} in the decision log"),
        _ => "position:  queued: not integrated into the decision log yet (`decisions \
              integrate` does it)"
            .to_owned(),
    });
    lines.push(format!("id:        {}", r.id));
    lines.push("reason:".to_owned());
    let pretty = serde_json::to_string_pretty(&r.reason).unwrap_or_else(|_| r.reason.to_string());
    for line in visible_json(&pretty).lines() {
        lines.push(format!("  {line}"));
    }
    lines.join("\n")
}

/// JSON text with every character that would not show (DEL, and the characters Rust's debug
/// form escapes: invisible, format and bidirectional ones) written as a JSON `\u` escape, which
/// reads back as the same value. JSON already escapes the control characters below U+0020.
fn visible_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let hidden = c == '\u{7f}' || (!c.is_ascii() && c.escape_debug().nth(1).is_some());
        if hidden {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `decisions integrate`: what it integrated, and where the log stands.
pub fn describe_integrated(i: &Integrated) -> String {
    let batches = count(
        usize::try_from(i.batches).unwrap_or(usize::MAX),
        "batch",
        "batches",
    );
    let records = |n: u64| {
        count(
            usize::try_from(n).unwrap_or(usize::MAX),
            "record",
            "records",
        )
    };
    format!(
        "integrated {} in {batches}; the decision log holds {}; {} still queued",
        records(i.records),
        records(i.log_size),
        i.queued
    )
}

/// `decisions verify-receipt`: what checked out, or why not.
pub fn describe_receipt(c: &DecisionReceiptCheck) -> String {
    let record = c.record.as_deref().unwrap_or("(unreadable)");
    match (c.ok, c.seq, c.batch) {
        (true, Some(seq), Some(batch)) => format!(
            "the receipt checks out: decision record {record} is at position {seq} of the \
             decision log, in the batch of audit row {batch}, under the signed checkpoint"
        ),
        _ => format!(
            "the receipt does not check out for decision record {record}: {}",
            c.why.as_deref().unwrap_or("no reason given")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::visible_json;

    #[test]
    fn visible_json_escapes_what_would_not_show_and_reads_back_as_the_same_value() {
        let value = serde_json::json!({ "part": "a\u{202e}b\u{200b}c\u{7f}d\u{1b}é😀" });
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let shown = visible_json(&pretty);
        assert!(
            shown.contains(r"a\u202eb\u200bc\u007fd\u001bé😀"),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }
}
