//! Every integration test of spinwise-bench, built as one binary (module per concern).

mod plan;
mod results;
mod store_target;
