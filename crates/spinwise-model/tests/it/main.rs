//! Every integration test of spinwise-model, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod hostile_text;
mod parser_robustness;
mod pelican_parses;
mod presets_parse;
mod rack_errors;
