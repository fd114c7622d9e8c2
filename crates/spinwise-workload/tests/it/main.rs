//! Every integration test of spinwise-workload, one module per concern, built as one binary (as
//! the other crates do: each test binary links the crate and its dependencies again).

mod fitting;
mod generation;
mod histograms;
mod models;
mod streams;
