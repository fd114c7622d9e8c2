//! Every refusal of the crate, as typed values: what the world (a file, a flag) got wrong, with
//! the message a user needs. Broken invariants panic instead; nothing here is a catch-all string.

use thiserror::Error;

/// A `--params` text or a parameter value that cannot make a model.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ParamsError {
    #[error("`{text}` is not `name=value`")]
    NotAPair { text: String },
    #[error("{name}: `{text}` is not a number")]
    NotANumber { name: String, text: String },
    #[error("`{name}` is not a parameter of {family} (its parameters: {expected})")]
    Unknown {
        name: String,
        family: &'static str,
        expected: String,
    },
    #[error("`{name}` is given twice")]
    Repeated { name: String },
    #[error("`{name}` is missing ({family} needs {expected})")]
    Missing {
        name: &'static str,
        family: &'static str,
        expected: String,
    },
    #[error("{name} = {value} must be {expected}")]
    OutOfRange {
        name: String,
        value: f64,
        expected: &'static str,
    },
    #[error(
        "an envelope needs the standard error of ln(scale): add `log_scale_error=…` to the \
         parameters (`spinwise workload fit` prints it)"
    )]
    NoScaleError,
    #[error("confidence level {level} must lie strictly between 0 and 1")]
    Confidence { level: f64 },
}

/// What is wrong with one line of a histogram.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HistogramProblem {
    #[error("the file has no header; it must start with `bucket_log2,count`")]
    Empty,
    #[error("the header must be exactly `bucket_log2,count`, found `{found}`")]
    Header { found: String },
    #[error("expected 2 comma-separated fields, found {found}")]
    FieldCount { found: usize },
    #[error("bucket_log2 `{text}` is not an integer in 0..={max}")]
    Bucket { text: String, max: u32 },
    #[error("count `{text}` is not a whole number of files")]
    Count { text: String },
    #[error("bucket {bucket_log2} is listed twice")]
    Repeated { bucket_log2: u32 },
    #[error("the counts add up to more than {max} files")]
    TooManyFiles { max: u64 },
    #[error("no files: every count is 0")]
    NoFiles,
}

/// A refused histogram: the 1-based line (0 for the file as a whole) and the problem.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("line {line}: {problem}")]
pub struct HistogramError {
    pub line: usize,
    pub problem: HistogramProblem,
}

/// A histogram no model can be fitted to.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FitError {
    #[error(
        "every file is in one bucket ({bucket_log2}): a fit needs files in at least two buckets"
    )]
    OneBucket { bucket_log2: u32 },
    #[error("the optimiser found no parameters with a finite likelihood")]
    NoFiniteLikelihood,
}

/// A file set or operation stream that cannot be made as asked.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum GenerateError {
    #[error("the capacity must be at least 1 byte")]
    NoCapacity,
    #[error(
        "the set would hold more than {max} files (the simulator's trace limit): lower the \
         capacity or use a model with larger files"
    )]
    TooManyFiles { max: usize },
    #[error(
        "the first file drawn ({size_bytes} bytes) is larger than the capacity: the set would be \
         empty"
    )]
    EmptySet { size_bytes: u64 },
    #[error("reads were asked of an empty file set")]
    NothingToRead,
    #[error("{files} files and {reads} reads make more than {max} trace records")]
    TooManyRecords {
        files: usize,
        reads: u64,
        max: usize,
    },
    #[error("{name} = {value} must be {expected}")]
    OutOfRange {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },
    #[error(
        "the stream would last {duration_s} s, past the simulator's {max_s} s: raise the batch \
         size or the read rate, or shorten the batch interval"
    )]
    TooLong { duration_s: f64, max_s: f64 },
}

/// A capacity such as `10TB` that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CapacityError {
    #[error(
        "`{text}` is not a capacity: a number and a unit, e.g. 10TB, 500GiB, 1.5PB (units B, \
         kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)"
    )]
    Unreadable { text: String },
    #[error("`{text}` is {what}: a capacity is between 1 byte and {max} bytes")]
    OutOfRange {
        text: String,
        what: &'static str,
        max: u64,
    },
}
