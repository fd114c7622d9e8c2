//! The one error type of `spinwise-report`.
//!
//! Invariants: every variant that concerns a file carries that file's path, because a report run
//! writes many files and an error without the path is useless to the person reading it; errors
//! from plotters are kept as message strings since plotters' error types are generic over the
//! backend and would otherwise leak into this crate's API.

use std::path::PathBuf;

/// Why a report could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing `path` failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// The drawing backend (plotters, its PNG encoder or the font rasteriser) failed while
    /// rendering `path`. A PNG may then be partially written; an SVG is written only after
    /// drawing succeeded, so it is absent.
    #[error("drawing {} failed: {message}", path.display())]
    Drawing {
        /// The figure being rendered.
        path: PathBuf,
        /// The backend's description of the failure.
        message: String,
    },

    /// The CSV writer rejected a row for `path` (typically a nested struct, map or sequence
    /// field, which CSV cannot represent).
    #[error("writing CSV {} failed: {source}", path.display())]
    Csv {
        /// The table being written.
        path: PathBuf,
        /// The csv crate's error.
        #[source]
        source: csv::Error,
    },

    /// The data handed in cannot be rendered (empty, NaN, out of range); `reason` says which
    /// value and why.
    #[error("bad report input: {reason}")]
    BadInput {
        /// Human-readable description naming the offending value.
        reason: String,
    },
}

impl ReportError {
    pub(crate) fn bad_input(reason: impl Into<String>) -> Self {
        Self::BadInput {
            reason: reason.into(),
        }
    }
}
