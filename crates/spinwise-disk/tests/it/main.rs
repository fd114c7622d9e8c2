//! Every integration test of spinwise-disk, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod block;
mod common;
mod conformance;
mod emulated;
mod faulty;
mod power_file;
