//! spinwise-plan: Flamingo for Spinwise. From a validated rack it analyses the resources
//! (bottleneck, M), explores the design space, synthesizes layouts (group size, erasure code,
//! disk → group assignment, group constraints), verifies each with an independent checker and
//! measures layout quality.
//!
//! Pure and deterministic: no IO, no clock, no threads; randomness only from seeded ChaCha
//! generators. Callers time and parallelise (the CLI plans exploration configurations in parallel).

pub mod admission;
pub mod analysis;
pub mod constraints;
pub mod durability;
pub mod error;
pub mod explore;
pub mod high_load;
pub mod pelican;
pub mod plan;
pub mod quality;
pub mod solver;
pub mod verify;

pub use analysis::{Analysis, analyse};
pub use error::PlanError;
pub use explore::{Configuration, Exploration, explore};
pub use pelican::pelican_layout;
pub use plan::{Plan, plan};
pub use quality::{Quality, quality};
pub use verify::{Violation, verify};
