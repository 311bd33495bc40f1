//! Signed checkpoints: the text an auditor keeps. A checkpoint is the C2SP `tlog-checkpoint`
//! body (the log's origin, the tree's size, its root in base64) inside a C2SP `signed-note`
//! signed with Ed25519; keys are written in the note formats' own text forms, a signer key as
//! `PRIVATE+KEY+<name>+<key id>+<base64>` and a verifier key as `<name>+<key id>+<base64>`.
//!
//! Values and text only: this module reads no ledger. Signing a ledger's tree is `tree`'s; a
//! signer key is given by the caller for one signature and never stored.

use std::fmt;
use std::str::FromStr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::merkle::Hash;
use crate::error::{Error, InputError, Result};

/// The signature type byte of Ed25519 in signed notes.
const ED25519: u8 = 0x01;

/// What begins a signature line: an em dash and a space.
const SIGNATURE_LINE: &str = "\u{2014} ";

/// The most signature lines a note may carry (the spec asks verifiers to take at least 16).
const MAX_SIGNATURES: usize = 100;

/// The longest note read, in bytes: a checkpoint with a hundred cosignatures fits many times.
const MAX_NOTE: usize = 1 << 20;

/// The longest key name or origin, in bytes.
const MAX_NAME: usize = 255;

/// Why a key's or a note's text was refused.
fn invalid(what: &str, problem: impl fmt::Display) -> Error {
    InputError::InvalidNote(format!("{what}: {problem}")).into()
}

/// Checks a key name or an origin: non-empty, at most 255 bytes, no Unicode space, no `+`, no
/// control character.
pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(invalid(what, "must be 1 to 255 bytes"));
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || c == '+' || c.is_control())
    {
        return Err(invalid(
            what,
            "must contain no space, no + and no control character",
        ));
    }
    Ok(())
}

/// The key id of an Ed25519 key: the first four bytes of `SHA-256(name || 0x0A || 0x01 || key)`.
fn key_id(name: &str, key: &VerifyingKey) -> u32 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519]);
    h.update(key.as_bytes());
    let digest = h.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// `<name>+<8 hex digits>+<base64>`, split; the key id checked against the key it names.
fn split_key(what: &str, text: &str) -> Result<(String, u32, Vec<u8>)> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(material)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(invalid(what, "expected NAME+KEYID+BASE64"));
    };
    check_name(what, name)?;
    if id.len() != 8 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(invalid(what, "its key id is not 8 lower-case hex digits"));
    }
    let id = u32::from_str_radix(id, 16).map_err(|e| invalid(what, e))?;
    let bytes = BASE64.decode(material).map_err(|e| invalid(what, e))?;
    if bytes.len() != 33 || bytes[0] != ED25519 {
        return Err(invalid(
            what,
            "it is not an Ed25519 key (0x01 and 32 bytes)",
        ));
    }
    Ok((name.to_owned(), id, bytes[1..].to_vec()))
}

/// The private half of a checkpoint signing key. It lives in a file of its own (mode 0600, made
/// by `session-ledger checkpoint keygen`) and is handed to [`Ledger::checkpoint`] for one
/// signature: it never enters the database. Its `Debug` shows the name only.
///
/// [`Ledger::checkpoint`]: crate::Ledger::checkpoint
#[derive(Clone)]
pub struct SignerKey {
    name: String,
    key: SigningKey,
}

impl SignerKey {
    /// A new random key named `name` (a schema-less URL is the recommended form, like
    /// `example.com/session-ledger`).
    ///
    /// # Errors
    ///
    /// `InvalidNote` for a name with a space, a `+` or a control character, or longer than 255
    /// bytes; `Storage` when the operating system gives no randomness.
    pub fn generate(name: &str) -> Result<SignerKey> {
        check_name("the key's name", name)?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| {
            crate::error::EngineError::new(
                "random number generator",
                false,
                std::io::Error::other(e.to_string()),
            )
        })?;
        Ok(SignerKey {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// The key's name, which its signature lines carry.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The public half, to give to auditors.
    pub fn verifier(&self) -> VerifierKey {
        VerifierKey::new(&self.name, self.key.verifying_key())
    }

    /// Signs `text` as a signed note by this key alone: for a witness's or a test's own notes.
    /// The ledger signs its checkpoints with [`Ledger::checkpoint`](crate::Ledger::checkpoint).
    ///
    /// # Errors
    ///
    /// `InvalidNote` for a text that is empty, does not end with a newline, or holds a control
    /// character other than newline.
    pub fn sign_text(&self, text: &str) -> Result<String> {
        if text.is_empty() || !text.ends_with('\n') || text.chars().any(|c| c < ' ' && c != '\n') {
            return Err(invalid(
                "the text to sign",
                "must be non-empty, end with a newline and hold no control character",
            ));
        }
        Ok(self.sign_note(text))
    }

    /// Signs `text` (which must end with a newline) as a signed note by this key alone.
    pub(crate) fn sign_note(&self, text: &str) -> String {
        let id = key_id(&self.name, &self.key.verifying_key());
        let signature = self.key.sign(text.as_bytes());
        let mut blob = id.to_be_bytes().to_vec();
        blob.extend_from_slice(&signature.to_bytes());
        format!(
            "{text}\n{SIGNATURE_LINE}{} {}\n",
            self.name,
            BASE64.encode(blob)
        )
    }
}

impl fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignerKey")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for SignerKey {
    /// The key file's text: `PRIVATE+KEY+<name>+<key id>+<base64 of 0x01 and the seed>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bytes = vec![ED25519];
        bytes.extend_from_slice(self.key.as_bytes());
        let id = key_id(&self.name, &self.key.verifying_key());
        write!(
            f,
            "PRIVATE+KEY+{}+{id:08x}+{}",
            self.name,
            BASE64.encode(bytes)
        )
    }
}

impl FromStr for SignerKey {
    type Err = Error;

    /// Reads a key file's text (surrounding white space ignored).
    fn from_str(text: &str) -> Result<SignerKey> {
        let what = "the signer key";
        let rest = text
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or_else(|| invalid(what, "expected PRIVATE+KEY+NAME+KEYID+BASE64"))?;
        let (name, id, seed) = split_key(what, rest)?;
        let seed: [u8; 32] = seed.try_into().map_err(|_| invalid(what, "not 32 bytes"))?;
        let key = SigningKey::from_bytes(&seed);
        if key_id(&name, &key.verifying_key()) != id {
            return Err(invalid(what, "its key id does not match the key"));
        }
        Ok(SignerKey { name, key })
    }
}

/// The public half of a checkpoint signing key, as an auditor holds it:
/// `<name>+<key id>+<base64 of 0x01 and the key>`.
#[derive(Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl VerifierKey {
    fn new(name: &str, key: VerifyingKey) -> VerifierKey {
        VerifierKey {
            name: name.to_owned(),
            id: key_id(name, &key),
            key,
        }
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key id, as the 8 hex digits the key's text carries.
    pub fn id(&self) -> String {
        format!("{:08x}", self.id)
    }

    /// The text of the note `note` if it carries a valid signature by this key.
    pub(crate) fn open<'n>(&self, note: &'n str) -> std::result::Result<&'n str, NoteProblem> {
        let parsed = parse_note(note).map_err(NoteProblem::Malformed)?;
        let mut found = false;
        for line in &parsed.signatures {
            if line.name != self.name || line.id != self.id {
                continue;
            }
            found = true;
            let Ok(bytes) = <[u8; 64]>::try_from(line.signature.as_slice()) else {
                return Err(NoteProblem::BadSignature);
            };
            let signature = Signature::from_bytes(&bytes);
            if self
                .key
                .verify_strict(parsed.text.as_bytes(), &signature)
                .is_err()
            {
                return Err(NoteProblem::BadSignature);
            }
        }
        if found {
            Ok(parsed.text)
        } else {
            Err(NoteProblem::NotSignedByKey)
        }
    }
}

impl fmt::Debug for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VerifierKey({self})")
    }
}

impl fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bytes = vec![ED25519];
        bytes.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.id, BASE64.encode(bytes))
    }
}

impl FromStr for VerifierKey {
    type Err = Error;

    /// Reads a verifier key's text (surrounding white space ignored).
    fn from_str(text: &str) -> Result<VerifierKey> {
        let what = "the verifier key";
        let (name, id, key) = split_key(what, text.trim())?;
        let key: [u8; 32] = key.try_into().map_err(|_| invalid(what, "not 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&key).map_err(|e| invalid(what, e))?;
        if key_id(&name, &key) != id {
            return Err(invalid(what, "its key id does not match the key"));
        }
        Ok(VerifierKey::new(&name, key))
    }
}

/// Why a note does not open with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoteProblem {
    /// It is not a signed note.
    Malformed(String),
    /// No signature line is this key's (by name and key id).
    NotSignedByKey,
    /// A signature line of this key does not verify over the text.
    BadSignature,
}

impl fmt::Display for NoteProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoteProblem::Malformed(why) => write!(f, "it is not a signed note: {why}"),
            NoteProblem::NotSignedByKey => f.write_str("it carries no signature by this key"),
            NoteProblem::BadSignature => {
                f.write_str("its signature by this key does not verify over its text")
            }
        }
    }
}

/// A signature line of a note, not verified.
pub(crate) struct SignatureLine<'n> {
    pub(crate) name: &'n str,
    pub(crate) id: u32,
    pub(crate) signature: Vec<u8>,
}

/// A note split into its text and signature lines, nothing verified.
pub(crate) struct ParsedNote<'n> {
    /// The signed text, with its final newline.
    pub(crate) text: &'n str,
    pub(crate) signatures: Vec<SignatureLine<'n>>,
}

/// Splits a signed note at its last blank line: the text before (with its newline), one
/// signature line per line after.
pub(crate) fn parse_note(note: &str) -> std::result::Result<ParsedNote<'_>, String> {
    if note.len() > MAX_NOTE {
        return Err("longer than 1 MiB".to_owned());
    }
    if note.chars().any(|c| c < ' ' && c != '\n') {
        return Err("it contains a control character".to_owned());
    }
    let split = note
        .rfind("\n\n")
        .ok_or("no blank line before the signatures")?;
    let (text, signatures) = (&note[..=split], &note[split + 2..]);
    let lines = signatures
        .strip_suffix('\n')
        .ok_or("the last signature line does not end with a newline")?;
    let mut out = Vec::new();
    for line in lines.split('\n') {
        let rest = line
            .strip_prefix(SIGNATURE_LINE)
            .ok_or("a signature line must begin with an em dash and a space")?;
        let (name, blob) = rest
            .split_once(' ')
            .ok_or("a signature line has no signature")?;
        if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
            return Err("a signature line's key name is malformed".to_owned());
        }
        let blob = BASE64
            .decode(blob)
            .map_err(|e| format!("a signature is not base64: {e}"))?;
        if blob.len() < 5 {
            return Err("a signature is shorter than a key id and a signature".to_owned());
        }
        out.push(SignatureLine {
            name,
            id: u32::from_be_bytes([blob[0], blob[1], blob[2], blob[3]]),
            signature: blob[4..].to_vec(),
        });
        if out.len() > MAX_SIGNATURES {
            return Err("more than 100 signature lines".to_owned());
        }
    }
    Ok(ParsedNote {
        text,
        signatures: out,
    })
}

/// A tree head: which log (its origin), how many leaves, and the root over them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// The log's name: the first line.
    pub origin: String,
    /// How many leaves (audit rows, from the first) the tree has.
    pub size: u64,
    /// The RFC 6962 root of those leaves.
    #[serde(serialize_with = "serialize_base64")]
    pub root: Hash,
}

fn serialize_base64<S: serde::Serializer>(
    hash: &Hash,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&BASE64.encode(hash))
}

impl Checkpoint {
    /// The note text: origin, size and base64 root, a line each.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            BASE64.encode(self.root)
        )
    }

    /// The root as base64, as the body writes it.
    pub fn root_base64(&self) -> String {
        BASE64.encode(self.root)
    }

    /// Reads a checkpoint's note text: at least three lines, extension lines after them
    /// ignored.
    pub(crate) fn parse_body(text: &str) -> std::result::Result<Checkpoint, String> {
        let mut lines = text
            .strip_suffix('\n')
            .ok_or("the text does not end with a newline")?
            .split('\n');
        let origin = lines.next().unwrap_or_default();
        check_name("origin", origin).map_err(|e| e.to_string())?;
        let size = lines.next().ok_or("no tree size line")?;
        let canonical = size == "0" || (!size.starts_with('0') && !size.is_empty());
        if !canonical || size.len() > 19 || !size.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("the tree size {size:?} is not a decimal number"));
        }
        let size: u64 = size.parse().map_err(|e| format!("the tree size: {e}"))?;
        let root = lines.next().ok_or("no root hash line")?;
        let root = BASE64
            .decode(root)
            .map_err(|e| format!("the root hash is not base64: {e}"))?;
        let root: Hash = root
            .try_into()
            .map_err(|_| "the root hash is not 32 bytes".to_owned())?;
        if lines.any(str::is_empty) {
            return Err("an extension line is empty".to_owned());
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
        })
    }
}

/// A checkpoint as an auditor keeps it: the signed note, and what its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedCheckpoint {
    /// What the note's text says.
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    /// The whole note, signature lines included: the text to keep.
    pub note: String,
}

impl SignedCheckpoint {
    /// Signs `checkpoint` with `key`.
    pub(crate) fn sign(checkpoint: Checkpoint, key: &SignerKey) -> SignedCheckpoint {
        let note = key.sign_note(&checkpoint.body());
        SignedCheckpoint { checkpoint, note }
    }

    /// Reads a checkpoint note without verifying any signature (for a proof against it, whose
    /// reader verifies); [`Ledger::verify_checkpoint`](crate::Ledger::verify_checkpoint) verifies
    /// it.
    ///
    /// # Errors
    ///
    /// `InvalidNote` when it is not a signed note with a checkpoint's text.
    pub fn parse(note: &str) -> Result<SignedCheckpoint> {
        let parsed = parse_note(note).map_err(|why| invalid("the checkpoint", why))?;
        let checkpoint =
            Checkpoint::parse_body(parsed.text).map_err(|why| invalid("the checkpoint", why))?;
        Ok(SignedCheckpoint {
            checkpoint,
            note: note.to_owned(),
        })
    }

    /// Reads a checkpoint note and verifies its signature by `key`.
    pub(crate) fn open(
        note: &str,
        key: &VerifierKey,
    ) -> std::result::Result<SignedCheckpoint, NoteProblem> {
        let text = key.open(note)?;
        let checkpoint = Checkpoint::parse_body(text).map_err(NoteProblem::Malformed)?;
        Ok(SignedCheckpoint {
            checkpoint,
            note: note.to_owned(),
        })
    }
}

#[cfg(test)]
#[path = "tests/checkpoint.rs"]
mod tests;
