//! Every integration test of spinwise-ec, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod common;
mod format;
mod isal_cauchy;
mod reconstruction;
mod round_trip;
