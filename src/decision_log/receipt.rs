//! Decision receipts: one record proved against a signed checkpoint, checkable offline with the
//! receipt and the verifier key alone.
//!
//! A record is a leaf of its batch's tree, and the batch is one audit row (kind
//! `decisions.integrate`) whose detail holds the batch's root; that row is a leaf of the audit
//! tree, which the checkpoint signs. So a decision receipt is two proofs: the record's leaf
//! under the batch's root, and the batch's audit row under the checkpoint (an audit receipt,
//! [`Receipt`], carrying the row). Its text is one JSON object:
//!
//! ```text
//! {"format":"session-ledger-decision-receipt/v1","leaf":"<the record's leaf bytes>",
//!  "index":<its place in the batch, from 0>,"size":<the batch's count>,
//!  "proof":["<base64>",...],"batch":"<the audit receipt's text>"}
//! ```

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Serialize;

use crate::audit::merkle::{leaf_hash, node_hash, verify_inclusion, Coord, Hash, Nodes};
use crate::audit::{verify_receipt, Receipt, VerifierKey};
use crate::error::{InputError, Result};

const FORMAT: &str = "session-ledger-decision-receipt/v1";

/// A decision record's inclusion proofs against a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionReceipt {
    /// The record's leaf bytes (docs/audit.md, "Decision records"): what is hashed.
    pub leaf: String,
    /// Its place in its batch, from 0.
    pub index: u64,
    /// How many records the batch holds.
    pub size: u64,
    /// The proof of the leaf under the batch's root, from its sibling up.
    pub proof: Vec<Hash>,
    /// The receipt of the batch's audit row against the checkpoint, carrying the row.
    pub batch: Receipt,
}

/// What checking a decision receipt found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionReceiptCheck {
    /// True when both proofs and the checkpoint's signature check out.
    pub ok: bool,
    /// The record's own id, read from its leaf.
    pub record: Option<String>,
    /// Its position in the decision log: the batch's first position + its index.
    pub seq: Option<u64>,
    /// The batch's audit row.
    pub batch: Option<i64>,
    /// Why not, in words.
    pub why: Option<String>,
}

impl DecisionReceipt {
    /// The receipt's text: one JSON object.
    pub fn to_text(&self) -> String {
        serde_json::json!({
            "format": FORMAT,
            "leaf": self.leaf,
            "index": self.index,
            "size": self.size,
            "proof": self.proof.iter().map(|h| BASE64.encode(h)).collect::<Vec<_>>(),
            "batch": self.batch.to_text(),
        })
        .to_string()
    }

    /// Reads a receipt's text; nothing is verified.
    ///
    /// # Errors
    ///
    /// `InvalidNote` when it is not a decision receipt.
    pub fn parse(text: &str) -> Result<DecisionReceipt> {
        let invalid = |why: &str| -> crate::error::Error {
            InputError::InvalidNote(format!("the decision receipt: {why}")).into()
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(&format!("not JSON: {e}")))?;
        if v["format"] != FORMAT {
            return Err(invalid(&format!("its format is not {FORMAT}")));
        }
        let number = |key: &str| v[key].as_u64().ok_or_else(|| invalid(&format!("no {key}")));
        let proof = v["proof"]
            .as_array()
            .ok_or_else(|| invalid("no proof"))?
            .iter()
            .map(|h| {
                let bytes = h
                    .as_str()
                    .and_then(|h| BASE64.decode(h).ok())
                    .ok_or_else(|| invalid("a proof hash is not base64"))?;
                Hash::try_from(bytes.as_slice())
                    .map_err(|_| invalid("a proof hash is not 32 bytes"))
            })
            .collect::<Result<Vec<Hash>>>()?;
        Ok(DecisionReceipt {
            leaf: v["leaf"]
                .as_str()
                .ok_or_else(|| invalid("no leaf"))?
                .to_owned(),
            index: number("index")?,
            size: number("size")?,
            proof,
            batch: Receipt::parse(v["batch"].as_str().ok_or_else(|| invalid("no batch"))?)?,
        })
    }

    /// The leaf under the root its batch row holds, without the checkpoint: what the ledger
    /// checks before it hands a receipt out.
    pub(crate) fn leaf_in_batch(&self) -> std::result::Result<(u64, i64), String> {
        let row = self
            .batch
            .row
            .as_ref()
            .ok_or("the batch's receipt carries no row")?;
        if row["kind"] != "decisions.integrate" {
            return Err(format!(
                "audit row {} is not a batch of decision records",
                row["seq"]
            ));
        }
        let detail = &row["detail"];
        let (Some(first), Some(count), Some(root)) = (
            detail["first"].as_u64(),
            detail["count"].as_u64(),
            detail["root"].as_str(),
        ) else {
            return Err("the batch's row has no first, count and root".to_owned());
        };
        let root: Hash = (0..32)
            .map(|i| {
                root.get(2 * i..2 * i + 2)
                    .and_then(|b| u8::from_str_radix(b, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .and_then(|b| Hash::try_from(b.as_slice()).ok())
            .ok_or("the batch's root is not 64 hex digits")?;
        if count != self.size || self.index >= count {
            return Err(format!(
                "the receipt puts the record at {} of {}, the batch holds {count}",
                self.index, self.size
            ));
        }
        let leaf = leaf_hash(self.leaf.as_bytes());
        if !verify_inclusion(self.index, count, &leaf, &self.proof, &root) {
            return Err(format!(
                "the proof does not put this record at {} of its batch under the batch's root: \
                 the record is not the one the batch holds",
                self.index
            ));
        }
        let batch = row["seq"].as_i64().ok_or("the batch's row has no seq")?;
        Ok((first + self.index, batch))
    }
}

/// Checks a decision receipt's text with `key`, offline: the checkpoint's signature, the batch's
/// audit row under it, and the record's leaf under the batch's root.
///
/// # Errors
///
/// `InvalidNote` when the receipt does not parse; a receipt that parses but does not check out
/// is no error ([`DecisionReceiptCheck::ok`]).
pub fn verify_decision_receipt(text: &str, key: &VerifierKey) -> Result<DecisionReceiptCheck> {
    let receipt = DecisionReceipt::parse(text)?;
    let record = serde_json::from_str::<serde_json::Value>(&receipt.leaf)
        .ok()
        .and_then(|leaf| leaf["record"].as_str().map(str::to_owned));
    let mut out = DecisionReceiptCheck {
        ok: false,
        record,
        seq: None,
        batch: None,
        why: None,
    };
    let batch = verify_receipt(&receipt.batch.to_text(), None, key)?;
    if !batch.ok {
        out.why = Some(format!(
            "the batch's audit row: {}",
            batch.why.unwrap_or_default()
        ));
        return Ok(out);
    }
    match receipt.leaf_in_batch() {
        Ok((seq, batch)) => {
            out.ok = true;
            out.seq = Some(seq);
            out.batch = Some(batch);
        }
        Err(why) => out.why = Some(why),
    }
    Ok(out)
}

/// The nodes of a tree whose leaves are in memory (a batch of at most
/// [`INTEGRATION_BATCH`](crate::INTEGRATION_BATCH) records).
pub(crate) struct Leaves<'a>(pub(crate) &'a [Hash]);

impl Leaves<'_> {
    fn node(&self, (level, index): Coord) -> Hash {
        if level == 0 {
            return self.0[index as usize];
        }
        let left = self.node((level - 1, 2 * index));
        let right = self.node((level - 1, 2 * index + 1));
        node_hash(&left, &right)
    }
}

impl Nodes for Leaves<'_> {
    fn nodes(&mut self, coords: &[Coord]) -> Result<Vec<Hash>> {
        Ok(coords.iter().map(|c| self.node(*c)).collect())
    }
}
