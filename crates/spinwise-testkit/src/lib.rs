//! Test support shared by the Spinwise crates' test suites, and nothing else: no crate depends on
//! it outside `[dev-dependencies]`, and it is never published.
//!
//! Invariants: everything here is deterministic given proptest's runner (no clock, no IO, no
//! randomness of its own), and every generated input goes through the same public entry points
//! production code uses (racks through `spinwise_model::parse_rack`), so a test never sees a value
//! the real parser would refuse.
//!
//! - [`racks`]: proptest strategies for random small racks as TOML text.

pub mod racks;
