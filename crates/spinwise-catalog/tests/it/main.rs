//! Every integration test of spinwise-catalog, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

#[macro_use]
mod common;
mod catalog;
mod differential;
mod sqlite;
