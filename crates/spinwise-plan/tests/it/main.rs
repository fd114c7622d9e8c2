//! Every integration test of spinwise-plan, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod common;
mod durability;
mod high_load;
mod layout_robustness;
mod pelican;
mod presets;
mod properties;
mod verifier;
mod verify_targets_and_claims;
