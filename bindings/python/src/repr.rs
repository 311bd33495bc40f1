//! `repr` for the result objects: each names every field, as a dataclass's does. A module of
//! its own, below every module that defines result objects (`values`, `commands`, `levels`).

use pyo3::prelude::*;

/// `Name(field=repr(value), ...)` for the fields of `obj`, in order.
pub(crate) fn repr_fields(obj: &Bound<'_, PyAny>, name: &str, fields: &[&str]) -> PyResult<String> {
    let mut parts = Vec::with_capacity(fields.len());
    for field in fields {
        let value = obj.getattr(*field)?;
        parts.push(format!("{field}={}", value.repr()?));
    }
    Ok(format!("{name}({})", parts.join(", ")))
}

/// `__repr__` listing `fields`: every field, in the order the struct declares them (the
/// Python suite checks that none is left out).
macro_rules! field_repr {
    ($ty:ident, [$($field:literal),* $(,)?]) => {
        #[pymethods]
        impl $ty {
            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                repr_fields(slf.as_any(), stringify!($ty), &[$($field),*])
            }
        }
    };
}
pub(crate) use field_repr;
