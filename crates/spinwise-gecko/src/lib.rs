//! spinwise-gecko: Gecko's chained log (Shin et al., FAST 2013;
//! ../shared/papers/gecko-slides.txt; issue 33, items 2, 3 and 5) as a model the experiments
//! measure: how much garbage collection costs a log over RAID-0 against a chain of disks whose
//! tail never sees a read, and how often a tail cache keeps reads off the tail disk.
//!
//! - [`disk`]: a disk whose only cost of interleaving streams is positioning: sequential
//!   transfer at a bandwidth, and a seek plus half a rotation whenever a request does not start
//!   where the previous one ended (parameters and why: docs/gecko.md).
//! - [`log`]: a log-structured block store of 4-KiB pages over N disks, as one log striped over
//!   RAID-0 or as Gecko's chain (the log's address space concatenated across the disks), with a
//!   logical-to-physical map, segments cleaned from the head, and both of Gecko's collectors
//!   (move-to-tail and compact-in-body); [`log::Log::check`] verifies its invariants.
//! - [`cache`]: Gecko's tail cache, an LRU in RAM over an optional LRU on flash.
//! - [`workload`]: seeded synthetic request streams (the slides' MSR/MS traces are not
//!   available here).
//! - [`sim`]: the disks on a simulated clock, served in arrival order, with closed-loop writers,
//!   readers and the collector, measuring throughput per one-second interval.
//! - [`tail`]: the trace-driven tail-cache simulation (hit rates, no timing).
//!
//! Pure: no IO, no wall clock; every random draw comes from a ChaCha stream seeded by the
//! caller, and every map whose order matters is ordered, so a run is a function of its
//! configuration.

pub mod cache;
pub mod disk;
pub mod log;
pub mod sim;
pub mod tail;
pub mod workload;

pub use cache::{CacheLevel, TailCache};
pub use disk::{Disk, DiskParams, PAGE_BYTES};
pub use log::{Collector, Extent, Layout, Log, LogConfig};
pub use sim::{CacheSize, ClientLoad, Interval, SimConfig, SimReport, simulate};
pub use tail::{TailConfig, TailReport, simulate_tail};
pub use workload::{StreamKind, Workload};

use thiserror::Error;

/// A configuration the model cannot run, with the reason.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GeckoError {
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Refuses with `message` unless `holds`.
fn require(holds: bool, message: impl FnOnce() -> String) -> Result<(), GeckoError> {
    if holds {
        Ok(())
    } else {
        Err(GeckoError::Invalid(message()))
    }
}
