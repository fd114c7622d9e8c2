//! Every integration test of spinwise-report, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod lines;
mod render;
