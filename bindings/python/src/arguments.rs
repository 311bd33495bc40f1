//! The `Ledger` methods' arguments, read from Python by a function named after each argument
//! (`#[pyo3(from_py_with = arguments::id)]`), so that a value of the wrong type is a
//! `TypeError` whose message names the argument and what it takes: `id must be a str, not
//! int`. (PyO3's own message names only the types; it adds the argument's name as an exception
//! note, which `str()` of the exception and Python before 3.11 do not show.)

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDateTime, PyInt, PyString};

/// `NAME must be WANTED, not TYPE`.
fn wrong_type(name: &str, wanted: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let given = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "another type".to_owned());
    PyTypeError::new_err(format!("{name} must be {wanted}, not {given}"))
}

fn text(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    if !value.is_instance_of::<PyString>() {
        return Err(wrong_type(name, "a str", value));
    }
    value.extract()
}

fn optional_text(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<String>> {
    if value.is_none() {
        return Ok(None);
    }
    if !value.is_instance_of::<PyString>() {
        return Err(wrong_type(name, "a str or None", value));
    }
    value.extract().map(Some)
}

fn flag(value: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    match value.cast::<PyBool>() {
        Ok(flag) => Ok(flag.is_true()),
        Err(_) => Err(wrong_type(name, "a bool", value)),
    }
}

fn optional_flag(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<bool>> {
    if value.is_none() {
        return Ok(None);
    }
    match value.cast::<PyBool>() {
        Ok(flag) => Ok(Some(flag.is_true())),
        Err(_) => Err(wrong_type(name, "a bool or None", value)),
    }
}

/// A whole number (an `int`, not a `bool`), or `None`. Its range is checked where it is used.
fn optional_whole(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<i64>> {
    if value.is_none() {
        return Ok(None);
    }
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(name, "an int or None", value));
    }
    Ok(Some(value.extract()?))
}

/// A whole number (an `int`, not a `bool`). Its range is checked where it is used.
fn whole(value: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(name, "an int", value));
    }
    value.extract()
}

/// A list or tuple of `str` (a `str` alone is refused: it would read as its characters).
fn texts(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<String>> {
    let wanted = "a list of str";
    if value.is_instance_of::<PyString>() {
        return Err(wrong_type(name, wanted, value));
    }
    let items: Vec<Bound<'_, PyAny>> = value
        .extract()
        .map_err(|_| wrong_type(name, wanted, value))?;
    items
        .iter()
        .map(|item| text(item, &format!("each of {name}")))
        .collect()
}

/// A timezone-aware `datetime`, or `None`.
fn optional_time(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<DateTime<Utc>>> {
    if value.is_none() {
        return Ok(None);
    }
    if !value.is_instance_of::<PyDateTime>() {
        return Err(wrong_type(name, "a timezone-aware datetime or None", value));
    }
    value.extract().map(Some).map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a timezone-aware datetime (with tzinfo), not a naive one"
        ))
    })
}

/// A path (`str` or `os.PathLike`) or a `postgres://` URL.
fn path(value: &Bound<'_, PyAny>, name: &str) -> PyResult<PathBuf> {
    value.extract().map_err(|_| {
        wrong_type(
            name,
            "a str or os.PathLike (a path, or a postgres:// URL)",
            value,
        )
    })
}

/// A path to a file (`str` or `os.PathLike`).
fn file_path(value: &Bound<'_, PyAny>, name: &str) -> PyResult<PathBuf> {
    value
        .extract()
        .map_err(|_| wrong_type(name, "a str or os.PathLike", value))
}

/// An optional path (`str` or `os.PathLike`).
fn optional_path(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<PathBuf>> {
    if value.is_none() {
        return Ok(None);
    }
    value
        .extract()
        .map(Some)
        .map_err(|_| wrong_type(name, "None, a str or os.PathLike", value))
}

/// One function per argument name, each reading it with the reader named.
macro_rules! arguments {
    ($($name:ident: $reader:ident -> $ty:ty;)*) => {
        $(
            pub(crate) fn $name(value: &Bound<'_, PyAny>) -> PyResult<$ty> {
                $reader(value, stringify!($name))
            }
        )*
    };
}

arguments! {
    id: text -> String;
    actor: text -> String;
    creator: text -> String;
    command: text -> String;
    line: text -> String;
    level: text -> String;
    name: text -> String;
    pattern: text -> String;
    propagation: text -> String;
    key: text -> String;
    verifier_key: text -> String;
    format: text -> String;
    origin: optional_text -> Option<String>;
    previous: optional_text -> Option<String>;
    after: optional_text -> Option<String>;
    kind: optional_text -> Option<String>;
    parent: optional_text -> Option<String>;
    session: optional_text -> Option<String>;
    subtree: optional_text -> Option<String>;
    taint: optional_text -> Option<String>;
    tree: optional_text -> Option<String>;
    token: optional_text -> Option<String>;
    read_only: flag -> bool;
    untrusted: flag -> bool;
    fast: flag -> bool;
    create: flag -> bool;
    unchecked: flag -> bool;
    scopes: flag -> bool;
    patterns: flag -> bool;
    classify: flag -> bool;
    admit_any_command: flag -> bool;
    alone: flag -> bool;
    durable: optional_flag -> Option<bool>;
    durable_postures: optional_flag -> Option<bool>;
    before: optional_whole -> Option<i64>;
    limit: optional_whole -> Option<i64>;
    max_depth: optional_whole -> Option<i64>;
    max_live_children: optional_whole -> Option<i64>;
    seq: whole -> i64;
    must_match: texts -> Vec<String>;
    must_not_match: texts -> Vec<String>;
    since: optional_time -> Option<DateTime<Utc>>;
    until: optional_time -> Option<DateTime<Utc>>;
    path_or_url: path -> PathBuf;
    to: file_path -> PathBuf;
    tool: text -> String;
    url: optional_text -> Option<String>;
    record: flag -> bool;
    asked_by: optional_text -> Option<String>;
    tool_use_id: optional_text -> Option<String>;
    verdict: optional_text -> Option<String>;
    authority: optional_text -> Option<String>;
    file: optional_path -> Option<PathBuf>;
    root: optional_path -> Option<PathBuf>;
}

/// A `limit` that must be a whole number (`tree_level`'s, `checkpoints`', `export`'s; the
/// audit's may be `None`).
pub(crate) fn whole_limit(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    whole(value, "limit")
}

/// The audit row a feed or a list of checkpoints starts after: `after`, a whole number
/// (`tree_level`'s `after` is a session id).
pub(crate) fn row_after(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    whole(value, "after")
}

/// `decisions_after`'s `after`: a position of the decision log, a whole number.
pub(crate) fn position_after(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    whole(value, "after")
}

/// `decision`'s `record`: a record's own id (`record` elsewhere is the flag that asks for one).
pub(crate) fn record_id(value: &Bound<'_, PyAny>) -> PyResult<String> {
    text(value, "record")
}

/// The decision recorder's `max_batch`, a whole number.
pub(crate) fn max_batch(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    whole(value, "max_batch")
}

/// The decision recorder's `window`: a number of seconds (an `int` or a `float`, not a
/// `bool`). Its range is checked where it is used.
pub(crate) fn window(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>() {
        return Err(wrong_type(
            "window",
            "a number of seconds (an int or a float)",
            value,
        ));
    }
    value
        .extract()
        .map_err(|_| wrong_type("window", "a number of seconds (an int or a float)", value))
}

/// `verify_checkpoint`'s `checkpoint`: the note kept.
pub(crate) fn checkpoint_note(value: &Bound<'_, PyAny>) -> PyResult<String> {
    text(value, "checkpoint")
}

/// `prove`'s `checkpoint`: the note to prove against, or `None` for the newest signed.
pub(crate) fn checkpoint_or_newest(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    optional_text(value, "checkpoint")
}

/// `archive`'s `before`: the cut-off time (the listings' `before` is a position, a whole number).
pub(crate) fn cut_off(value: &Bound<'_, PyAny>) -> PyResult<Option<DateTime<Utc>>> {
    optional_time(value, "before")
}

/// `verify_archive`'s `file`: the archive file to check (`file` elsewhere is optional).
pub(crate) fn archive_file(value: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    file_path(value, "file")
}
