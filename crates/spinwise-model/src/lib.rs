//! spinwise-model: the types every Spinwise crate shares: the rack description (parsed and
//! validated from TOML), fixed-point resource amounts, the layout file with its group
//! constraints, how a latency distribution is sampled, and the shipped rack presets (embedded at
//! build time). Pure: no IO, no clock, and no randomness of its own (sampling draws from the
//! caller's RNG). Other crates depend on this one; it depends on none of them.

// A RackError carries its field path and reason by value; it is built at most once per parse,
// so its size costs nothing worth boxing it for (and matching on it stays plain).
#![allow(clippy::result_large_err)]

pub mod amount;
pub mod error;
pub mod layout;
pub mod limits;
pub mod parse;
pub mod presets;
pub mod quote;
pub mod rack;
pub mod sample;

pub use amount::Amount;
pub use error::{RackError, RackProblem};
pub use layout::{
    BindError, Erasure, GroupConstraint, GroupIndex, Layout, LayoutError, SchedulerConfig,
    SolverReport,
};
pub use parse::parse_rack;
pub use presets::PresetError;
pub use rack::{DiskIndex, Distribution, Rack, Resource, ResourceKind, Servers, StateIndex};

impl Rack {
    /// Fingerprint of this rack's canonical form, recorded in layouts derived from it.
    pub fn fingerprint(&self) -> String {
        layout::fingerprint(
            serde_json::to_string(self)
                .expect("racks always serialize")
                .as_bytes(),
        )
    }
}
