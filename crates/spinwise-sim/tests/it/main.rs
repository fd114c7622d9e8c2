//! Every integration test of spinwise-sim, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod idle_spin_down;
mod network;
mod policies;
mod simulator;
