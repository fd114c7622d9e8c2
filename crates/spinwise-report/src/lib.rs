//! `spinwise-report`: renders experiment output for people — design-space figures and line/scatter
//! charts of sweeps (PNG and SVG, see `lines`) and flat CSV tables.
//!
//! Invariants:
//! - This crate depends on no other Spinwise crate: callers convert their results into the plain
//!   structs defined here (`ProvisioningFigure`, `LineChart`, any flat `serde::Serialize` row). That keeps the
//!   plotting stack (plotters, image encoders, an embedded font) out of every core crate, and
//!   lets the dependency arrow point one way (`report ← cli`).
//! - Bad input (empty point lists, NaN or out-of-range fractions, empty tables) is reported as
//!   [`ReportError::BadInput`] before any file is created; no public function panics on input.
//! - Text is drawn with the embedded DejaVu Sans (see `assets/DEJAVU-LICENSE.txt`), so figures look
//!   the same on every machine, including ones without system fonts.

mod canvas;
mod colour;
mod error;
mod font;
mod lines;
mod provisioning;
mod table;

pub use error::ReportError;
pub use lines::{
    LINE_CHART_SIZE_PX, LineChart, LinePoint, MAX_SERIES, Series, SeriesStyle, YScale,
    render_lines_png, render_lines_svg,
};
pub use provisioning::{
    PROVISIONING_FIGURE_SIZE_PX, PointStatus, ProvisioningFigure, ProvisioningPoint,
    marker_positions, render_provisioning_png, render_provisioning_svg,
};
pub use table::{write_csv, write_table};
