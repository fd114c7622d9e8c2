//! `CliError`: everything the command can refuse, each with the message a user needs. Messages
//! name the file and never quote more of it than `spinwise_model::quote` allows.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CliError {
    #[error(transparent)]
    Rack(#[from] spinwise_model::RackError),
    #[error(transparent)]
    Layout(#[from] spinwise_model::LayoutError),
    #[error("{rack}: {source}")]
    Plan {
        rack: String,
        source: spinwise_plan::PlanError,
    },
    #[error(transparent)]
    Preset(#[from] spinwise_model::PresetError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The reader stopped at `limit` + 1 bytes: the rest of the file was never read.
    #[error("{path}: the file is larger than the {limit}-byte limit for {what} ({constant})")]
    FileTooLarge {
        path: String,
        limit: usize,
        what: &'static str,
        constant: &'static str,
    },
    #[error("{path}: not a file that can be read as {what}: it is {kind}")]
    NotAFile {
        path: String,
        what: &'static str,
        kind: &'static str,
    },
    #[error("{path}: not UTF-8 text: the byte at offset {offset} is not valid UTF-8")]
    NotUtf8 { path: String, offset: usize },
    #[error(transparent)]
    Report(#[from] spinwise_report::ReportError),
    #[error("the layout fails verification against {rack}:\n{details}")]
    Unverified { rack: String, details: String },
    #[error("{rack}: {source}")]
    Sim {
        rack: String,
        source: spinwise_sim::SimError,
    },
    #[error("{path}: {source}")]
    Trace {
        path: String,
        source: spinwise_sim::TraceError,
    },
    #[error(transparent)]
    Experiment(#[from] spinwise_experiment::ExperimentError),
    #[error("{path}: {source}")]
    Histogram {
        path: String,
        source: spinwise_workload::HistogramError,
    },
    #[error("{path}: {source}")]
    Fit {
        path: String,
        source: spinwise_workload::FitError,
    },
    #[error("{flag}: {source}")]
    Params {
        flag: &'static str,
        source: spinwise_workload::ParamsError,
    },
    #[error("{flag}: {source}")]
    Capacity {
        flag: &'static str,
        source: spinwise_workload::CapacityError,
    },
    #[error(transparent)]
    Generate(#[from] spinwise_workload::GenerateError),
    #[error("{0}")]
    Usage(String),
}

pub type CliResult<T> = Result<T, CliError>;

pub fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.display().to_string(),
        source,
    }
}
