//! spinwise-gc: garbage collection that foreground requests may interrupt (the semi-preemptive
//! GC of Lee et al., ../shared/papers/semi-preemptive-gc-slides.txt; issue 33, item 4), as a
//! sans-IO policy and the device model and simulator that measure it.
//!
//! - [`policy`]: the decision a device makes each time it is free: serve the oldest waiting
//!   foreground request, do one more unit of garbage collection, or wait. Collection is in
//!   units (one page moved, or one block erased); semi-preemptive collection lets waiting
//!   requests go between units while free space is above the hard threshold, non-preemptive
//!   collection finishes the block it started. The policy holds no state of the device and
//!   no clock: the simulator here calls it, and the warm tier's collector is meant to call the
//!   same function.
//! - [`flash`]: a page-mapped flash translation layer (out-of-place writes, valid-page
//!   counts, greedy victims, a reserved block for relocation) and the slides' timings.
//! - [`workload`]: seeded synthetic request streams shaped like the slides' four traces
//!   (mean request size, read share, arrival rate), with Poisson or on/off bursty arrivals.
//! - [`sim`]: the device on a simulated clock, one chip behind one channel, measuring each
//!   request's response time from arrival to completion; the slides' merge and pipeline are
//!   options.
//!
//! Pure: no IO, no wall clock, and every random draw from a ChaCha stream seeded by the caller,
//! so a run is a function of its configuration.

pub mod flash;
pub mod policy;
pub mod sim;
pub mod workload;

pub use flash::{FlashConfig, FlashTimings, Ftl};
pub use policy::{Decision, GcMode, GcPolicy, GcState, GcThresholds, GcView};
pub use sim::{GcReport, SimConfig, simulate};
pub use workload::{Arrivals, TRACES, Workload};

use thiserror::Error;

/// A configuration the model cannot run, with the reason.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GcError {
    #[error("invalid configuration: {0}")]
    Invalid(String),
}
