//! Every integration test of spinwise-sched, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod budget;
mod common;
mod fair;
mod flamingo;
mod fully_provisioned;
mod idle_spin_down;
mod random;
mod reorder;
mod reorder_flat;
mod scheduler;
