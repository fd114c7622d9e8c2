//! `spinwise design`: the cost-optimal archive for a catalogue of components (Lee, O'Sullivan
//! and Walker's optimisation-driven design, with O'Sullivan, Walker and Lee's integer program),
//! where every candidate's performance comes from Spinwise's own planner and simulator under
//! the requested workload.
//!
//! The pipeline (docs/design.md):
//! 1. [`catalogue`]: the design file — disks, enclosures (rack descriptions), servers, NICs,
//!    economics, requirements — parsed and validated;
//! 2. [`candidate`]: each enclosure filled with each disk model and planned (spinwise-plan);
//! 3. [`performance`]: each candidate, with each network its servers and NICs give it, simulated
//!    (spinwise-sim) at saturation and at the load its data attracts;
//! 4. [`block`]: each block priced over its service life (capex, energy at the simulated draw,
//!    disk replacements);
//! 5. [`program`]: the mixed-integer program (good_lp over microlp) choosing how many of which
//!    blocks, checked by exhaustive enumeration on small catalogues;
//! 6. [`design`] and [`analysis`]: the bill of materials, which constraint binds, sensitivity
//!    and the cost frontier.
//!
//! Pure: no clock, no files. The caller reads rack files, keeps the simulation memo and draws.

pub mod analysis;
pub mod block;
pub mod candidate;
pub mod catalogue;
pub mod design;
pub mod performance;
pub mod program;

pub use catalogue::{CatalogueError, DesignFile};

/// The worked example of docs/design.md: a 10 PB archive (`spinwise design --example`).
pub const EXAMPLE_DESIGN: &str = include_str!("../example.toml");
