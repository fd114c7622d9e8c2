//! The archival benchmark of Lee, O'Sullivan and Walker (../shared/papers/
//! archival-workload-benchmark.txt), run against any S3 endpoint or a Spinwise store directory.
//!
//! An archive is judged by how it takes files in and gives them back, not by block-level
//! stress: the benchmark writes a file set in sequential batches (a migration into the archive),
//! and after each batch reads files back at random (retrievals), so every step measures write and
//! read throughput and per-request latency at a higher capacity utilisation. Where the target
//! keeps objects offline (an S3 `GLACIER` object), a read restores it first and the restore's
//! wait is measured on its own.
//!
//! Modules: [`plan`] (the file set, its batches and the read draws: all seeded, nothing timed),
//! [`payload`] (the bytes written, checkable on read without storing them), [`target`] (S3 or a
//! store, one interface), [`run`] (the timed driver), [`results`] (per-step rows, results.csv,
//! the summary and figures).
//!
//! Invariants:
//! - Everything but the measured times is a function of the plan: the same plan writes the same
//!   keys with the same bytes in the same order and reads the same keys.
//! - Every read is checked byte for byte against what was written; a mismatch is an error, never
//!   a slow read.
//! - This crate reads the wall clock (timing is its point); the core crates never do.

pub mod payload;
pub mod plan;
pub mod results;
pub mod run;
pub mod target;

pub use plan::{BenchPlan, FileSpec, ReadSkew, Step};
pub use results::{BenchReport, OperationStats, StepRow, write_outputs};
pub use run::{Progress, RunOptions, run};
pub use target::{Placement, S3Endpoint, Target};

/// What can stop a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The plan cannot run (no files, a step count of 0, a file too large, ...).
    #[error("invalid benchmark plan: {0}")]
    Plan(String),
    /// The target refused or failed an operation.
    #[error("{operation} of {key} failed: {reason}")]
    Operation {
        operation: &'static str,
        key: String,
        reason: String,
    },
    /// A read returned other bytes than were written.
    #[error("{key} read back {reason}")]
    Mismatch { key: String, reason: String },
    /// An object did not come back online within the restore timeout.
    #[error("{key} was not restored within {timeout_s} s")]
    RestoreTimeout { key: String, timeout_s: u64 },
    /// The target could not be reached or set up.
    #[error("{0}")]
    Target(String),
    /// Writing the results failed.
    #[error("cannot write {path}: {reason}")]
    Output { path: String, reason: String },
}

pub type BenchResult<T> = Result<T, BenchError>;
