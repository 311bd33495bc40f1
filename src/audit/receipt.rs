//! Receipts: an inclusion proof of one audit row against a signed checkpoint, in the C2SP
//! `tlog-proof` text form, which anyone can check offline with the receipt, the row and the
//! verifier key, and nothing else.
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64 of the row as compact JSON, its keys sorted: `--json audit`'s fields, reordered>
//! index <the row's seq - 1>
//! <the proof's hashes, base64, one a line, from the leaf's sibling up>
//!
//! <the checkpoint's signed note>
//! ```
//!
//! The row in `extra` is a convenience, not evidence: a check recomputes the leaf from the row
//! it is given (the one in the receipt, or one the checker got elsewhere) and checks the
//! proof, the checkpoint's signature and the index.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Serialize;

use super::chain::chain_hash;
use super::checkpoint::{Checkpoint, SignedCheckpoint, VerifierKey};
use super::merkle::{verify_inclusion, Hash};
use crate::error::{Error, InputError, Result};

const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// An inclusion proof of one row against a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The row's leaf index: its seq - 1.
    pub index: u64,
    /// The proof, from the leaf's sibling up to the root's child.
    pub proof: Vec<Hash>,
    /// The checkpoint it proves against, with its note.
    pub checkpoint: SignedCheckpoint,
    /// The row as JSON (`extra`), when the receipt carries it.
    pub row: Option<serde_json::Value>,
}

fn invalid(why: impl std::fmt::Display) -> Error {
    InputError::InvalidNote(format!("the receipt: {why}")).into()
}

impl Receipt {
    /// The receipt's text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{HEADER}\n");
        if let Some(row) = &self.row {
            out.push_str(&format!("extra {}\n", BASE64.encode(row.to_string())));
        }
        out.push_str(&format!("index {}\n", self.index));
        for hash in &self.proof {
            out.push_str(&BASE64.encode(hash));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint.note);
        out
    }

    /// Reads a receipt's text; nothing is verified.
    ///
    /// # Errors
    ///
    /// `InvalidNote` when it is not a `tlog-proof` with a checkpoint.
    pub fn parse(text: &str) -> Result<Receipt> {
        let rest = text
            .strip_prefix(HEADER)
            .and_then(|r| r.strip_prefix('\n'))
            .ok_or_else(|| invalid(format!("it does not begin with {HEADER}")))?;
        let (head, note) = rest
            .split_once("\n\n")
            .ok_or_else(|| invalid("no blank line before the checkpoint"))?;
        let mut lines = head.split('\n').peekable();
        let mut row = None;
        if let Some(extra) = lines.peek().and_then(|l| l.strip_prefix("extra ")) {
            let bytes = BASE64
                .decode(extra)
                .map_err(|e| invalid(format!("extra: {e}")))?;
            row = Some(serde_json::from_slice(&bytes).map_err(|e| invalid(format!("extra: {e}")))?);
            lines.next();
        }
        let index = lines
            .next()
            .and_then(|l| l.strip_prefix("index "))
            .ok_or_else(|| invalid("no index line"))?;
        if index.is_empty()
            || index.len() > 19
            || (index.len() > 1 && index.starts_with('0'))
            || !index.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(invalid(format!(
                "the index {index:?} is not a decimal number"
            )));
        }
        let index: u64 = index.parse().map_err(invalid)?;
        let mut proof = Vec::new();
        for line in lines {
            let bytes = BASE64
                .decode(line)
                .map_err(|e| invalid(format!("a proof line: {e}")))?;
            proof.push(
                Hash::try_from(bytes.as_slice())
                    .map_err(|_| invalid("a proof line is not a 32-byte hash"))?,
            );
            if proof.len() > 64 {
                return Err(invalid("more than 64 proof lines"));
            }
        }
        Ok(Receipt {
            index,
            proof,
            checkpoint: SignedCheckpoint::parse(note)?,
            row,
        })
    }
}

/// What checking a receipt found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReceiptCheck {
    /// True when the checkpoint is signed by the key, the row is the receipt's row and hashes
    /// right, and the proof puts its leaf at its index under the checkpoint's root.
    pub ok: bool,
    /// The row's seq as the receipt names it.
    pub seq: i64,
    /// The checkpoint, when its signature verified.
    pub checkpoint: Option<Checkpoint>,
    /// Why it failed, when it did.
    pub why: Option<String>,
}

/// The leaf of a row given as JSON (`session-ledger --json audit`'s form), and its own chain
/// hash checked against its fields.
fn leaf_of_json(row: &serde_json::Value) -> std::result::Result<(i64, Hash), String> {
    let text = |key: &str| {
        row.get(key)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("the row has no text {key:?}"))
    };
    let seq = row
        .get("seq")
        .and_then(serde_json::Value::as_i64)
        .ok_or("the row has no seq")?;
    let session = match row.get("session") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(v.as_str().ok_or("the row's session is not text")?),
    };
    let detail = row
        .get("detail")
        .ok_or("the row has no detail")?
        .to_string();
    let (prev_hash, at, actor, kind, hash) = (
        text("prev_hash")?,
        text("at")?,
        text("actor")?,
        text("kind")?,
        text("hash")?,
    );
    if chain_hash(prev_hash, seq, at, actor, kind, session, &detail) != hash {
        return Err(format!("row {seq}'s hash does not match its contents"));
    }
    let leaf = super::tree::leaf_of(&crate::storage::ChainRow {
        seq,
        at: at.to_owned(),
        actor: actor.to_owned(),
        kind: kind.to_owned(),
        session: session.map(str::to_owned),
        detail,
        prev_hash: prev_hash.to_owned(),
        hash: hash.to_owned(),
    });
    Ok((seq, leaf))
}

/// Checks `receipt` for `row` (the row as JSON; the receipt's own `extra` row when `None`)
/// with `key`, offline.
///
/// # Errors
///
/// `InvalidNote` when the receipt does not parse; a receipt that parses but does not check out
/// is no error ([`ReceiptCheck::ok`]).
pub fn verify_receipt(
    receipt: &str,
    row: Option<&serde_json::Value>,
    key: &VerifierKey,
) -> Result<ReceiptCheck> {
    let parsed = Receipt::parse(receipt)?;
    let seq = parsed.index as i64 + 1;
    let mut out = ReceiptCheck {
        ok: false,
        seq,
        checkpoint: None,
        why: None,
    };
    let checkpoint = match SignedCheckpoint::open(&parsed.checkpoint.note, key) {
        Ok(c) => c.checkpoint,
        Err(problem) => {
            out.why = Some(format!("the checkpoint: {problem}"));
            return Ok(out);
        }
    };
    out.checkpoint = Some(checkpoint.clone());
    let Some(row) = row.or(parsed.row.as_ref()) else {
        out.why = Some("no row given, and the receipt carries none".to_owned());
        return Ok(out);
    };
    let (row_seq, leaf) = match leaf_of_json(row) {
        Ok(found) => found,
        Err(why) => {
            out.why = Some(why);
            return Ok(out);
        }
    };
    if row_seq != seq {
        out.why = Some(format!("the receipt is for row {seq}, not row {row_seq}"));
        return Ok(out);
    }
    if !verify_inclusion(
        parsed.index,
        checkpoint.size,
        &leaf,
        &parsed.proof,
        &checkpoint.root,
    ) {
        out.why = Some(format!(
            "the proof does not put this row at index {} under the checkpoint's root: the row \
             is not the one the checkpoint covers",
            parsed.index
        ));
        return Ok(out);
    }
    out.ok = true;
    Ok(out)
}
