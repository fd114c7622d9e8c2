//! `ExperimentError`: everything an experiment can refuse or fail on, each with the message a
//! user needs; the CLI shows it as is. Messages name the file or the rack, never quote more of a
//! file than `spinwise_model::quote` allows.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Rack(#[from] spinwise_model::RackError),
    #[error(transparent)]
    Layout(#[from] spinwise_model::LayoutError),
    #[error(transparent)]
    Preset(#[from] spinwise_model::PresetError),
    #[error("{rack}: {source}")]
    Plan {
        rack: String,
        source: spinwise_plan::PlanError,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Report(#[from] spinwise_report::ReportError),
    #[error("{rack}: {source}")]
    Sim {
        rack: String,
        source: spinwise_sim::SimError,
    },
    /// The cross-validation's store refused or failed.
    #[error(transparent)]
    Store(#[from] spinwise_store::StoreError),
    /// A setting out of its range, or a combination the experiment cannot run.
    #[error("{0}")]
    Invalid(String),
}

pub type ExperimentResult<T> = Result<T, ExperimentError>;

pub fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ExperimentError + '_ {
    move |source| ExperimentError::Io {
        path: path.display().to_string(),
        source,
    }
}
