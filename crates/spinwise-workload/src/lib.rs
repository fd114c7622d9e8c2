//! Archival workloads (Lee, O'Sullivan and Walker, PER 2012; issue 34): what an archive stores
//! is described by the number and sizes of its files, written in sequential batches and read
//! back at random. This crate owns the file-size models ([`model`]: Gamma, Stacy's generalised
//! Gamma, lognormal, over bytes or log2 bytes, with confidence envelopes), their maximum-
//! likelihood fit to log2-bucket histograms with goodness of fit ([`fit`], [`histogram`]),
//! seeded file sets to a target capacity ([`generate`]) and the operation streams written as a
//! manifest and as the simulator's trace ([`stream`]). docs/workload.md specifies the models,
//! the envelope, the fit and every file format.
//!
//! Invariants: everything random is a function of one seed through ChaCha8 (a stream per use);
//! no clock, no threads, no file IO (writers take any `std::io::Write`); user input is refused
//! with typed errors ([`error`]), never a panic. Depends on no other spinwise crate: the
//! simulator's limits it honours are copied here and checked equal by tests.

pub mod error;
pub mod fit;
pub mod generate;
pub mod histogram;
pub mod model;
mod optimize;
pub mod stream;
pub mod units;

pub use error::{
    CapacityError, FitError, GenerateError, HistogramError, HistogramProblem, ParamsError,
};
pub use fit::{Fit, Goodness, expected_histogram, fit};
pub use generate::{FileSet, MAX_FILES, SIZE_STREAM, generate_file_set, key};
pub use histogram::{HISTOGRAM_HEADER, Histogram, MAX_BUCKET_LOG2, MAX_HISTOGRAM_FILES};
pub use model::{
    DEFAULT_CONFIDENCE, Envelope, Family, FileSizeModel, MAX_FILE_BYTES, Shape, Variable,
    normal_quantile_two_sided,
};
pub use stream::{
    MANIFEST_HEADER, MAX_TRACE_RECORDS, MAX_TRACE_SECONDS, Operation, OperationKind, Popularity,
    Stream, StreamOptions, TRACE_HEADER, operations, write_manifest, write_trace,
};
pub use units::{MAX_CAPACITY_BYTES, parse_capacity_bytes};
