//! Tests that need the crate's private items but are not about one module: they live here, out
//! of the layers they check.

mod plans;
