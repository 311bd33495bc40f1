//! What a command does: the module's `classify`, and the `Classification` it answers (which
//! `Decision.classification` also carries when the ledger classified a command for `decide`).
//!
//! The library counts a part's place in the line in bytes; Python indexes a `str` by code
//! point, so `start` and `end` are converted: `line[part.start:part.end] == part.text` holds
//! for any line, ASCII or not. Words the library spells as enums (`Effect`, `Construct`) cross
//! as their snake_case names, as the command line's `--json` spells them.

use pyo3::prelude::*;
use serde::Serialize;
use session_ledger as sl;

use crate::repr::{field_repr, repr_fields};

/// The snake_case name a value of the library serializes as (`"writes_to"`,
/// `"command_substitution"`); its `Debug` text for a value that does not serialize as a word.
pub(crate) fn word_of<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        _ => format!("{value:?}"),
    }
}

/// The index in `line`, counted in code points as Python counts a `str`, of the byte `byte`.
fn code_point_index(line: &str, byte: usize) -> usize {
    line.char_indices().take_while(|&(i, _)| i < byte).count()
}

/// One simple command of a line, with the classifier's verdict on it.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ClassifiedPart {
    text: String,
    start: usize,
    end: usize,
    read_only: bool,
    word: String,
    effect: Option<String>,
    reason: String,
    through: Vec<&'static str>,
}
field_repr!(
    ClassifiedPart,
    [
        "text",
        "start",
        "end",
        "read_only",
        "word",
        "effect",
        "reason",
        "through",
    ]
);

impl ClassifiedPart {
    fn new(line: &str, p: sl::ClassifiedPart) -> ClassifiedPart {
        ClassifiedPart {
            start: code_point_index(line, p.range.start),
            end: code_point_index(line, p.range.end),
            effect: p.effect.as_ref().map(word_of),
            text: p.text,
            read_only: p.read_only,
            word: p.word,
            reason: p.reason,
            through: p.through,
        }
    }
}

/// The classifier's verdict on a command line: read-only or not, the word that decided and
/// why, each simple command's own verdict, and the construct that stops the line, if one does.
#[pyclass(module = "session_ledger", frozen, eq, hash, get_all)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Classification {
    line: String,
    read_only: bool,
    word: String,
    effect: Option<String>,
    reason: String,
    parts: Vec<ClassifiedPart>,
    refused: Option<String>,
    refused_at: Option<usize>,
}
field_repr!(
    Classification,
    [
        "line",
        "read_only",
        "word",
        "effect",
        "reason",
        "parts",
        "refused",
        "refused_at",
    ]
);

impl From<sl::Classification> for Classification {
    fn from(c: sl::Classification) -> Classification {
        let line = c.line;
        let (refused, refused_at) = match c.refused {
            Some(r) => (
                Some(word_of(&r.construct)),
                Some(code_point_index(&line, r.at)),
            ),
            None => (None, None),
        };
        Classification {
            read_only: c.read_only,
            word: c.word,
            effect: c.effect.as_ref().map(word_of),
            reason: c.reason,
            parts: c
                .parts
                .into_iter()
                .map(|p| ClassifiedPart::new(&line, p))
                .collect(),
            refused,
            refused_at,
            line,
        }
    }
}

/// Is `line` known to only read? The library's classifier: every simple command of the line,
/// read through its wrappers, must be a program with a rule that finds nothing in its words
/// that writes, runs another program, escalates or sends. Pure: it knows no ledger.
#[pyfunction]
#[pyo3(signature = (line))]
pub(crate) fn classify(
    py: Python<'_>,
    #[pyo3(from_py_with = crate::arguments::line)] line: String,
) -> Classification {
    py.detach(move || Classification::from(sl::classify(&line)))
}
