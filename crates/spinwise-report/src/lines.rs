//! Line and scatter charts of experiment sweeps (after Pelican Fig. 5–9 and Flamingo Fig. 5–6):
//! several named series of (x, y) points over one linear x axis and a linear or logarithmic
//! y axis, with optional error bars (e.g. min–max over seeds) and a legend beside the chart.
//!
//! Invariants:
//! - Input is validated before any file is created: at least one series, every series with at
//!   least one point, every coordinate and error bound finite, error bounds around their point,
//!   and on a log axis every y value and error bound positive.
//! - PNG and SVG are drawn by the same generic code ([`draw`]), so they cannot drift apart.
//! - The y axis is one concrete coordinate type for both scales: on a log axis values are
//!   plotted as log10(y) with decade ticks labelled in data units, so a log chart reads like any
//!   other log chart while the drawing code has a single path.
//! - Series colours and marker shapes come from fixed cycles (colour-blind-safe Okabe–Ito
//!   colours), so the same series order gives the same figure on every run.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::canvas::{DrawResult, GRID, INK, text_style, write_png, write_svg};

/// Width and height in pixels of a rendered line chart (PNG pixels, SVG user units).
pub const LINE_CHART_SIZE_PX: (u32, u32) = (1000, 700);

/// Most series one chart accepts: one per colour of the palette, so no colour appears twice in
/// one legend (a chart with more series must be split into figures).
pub const MAX_SERIES: usize = PALETTE.len();

/// How the y axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum YScale {
    /// Linear; the axis starts at 0 when every value is non-negative.
    Linear,
    /// Base-10 logarithmic (time to first byte spans milliseconds to hours); values must be > 0.
    Log,
}

/// How one series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeriesStyle {
    /// Solid line through the points, with a marker on each.
    LineWithMarkers,
    /// Solid line only.
    Line,
    /// Dashed line only: reference levels (all disks standby, all active).
    Dashed,
    /// Markers only, no line: a scatter of configurations.
    Markers,
}

/// One point; `error`, when given, is the (low, high) whisker drawn around `y` (low ≤ y ≤ high).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinePoint {
    pub x: f64,
    pub y: f64,
    pub error: Option<(f64, f64)>,
}

impl LinePoint {
    /// A point without an error bar.
    pub fn new(x: f64, y: f64) -> LinePoint {
        LinePoint { x, y, error: None }
    }
}

/// A named series; points are drawn in the given order (sort by x for a line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub style: SeriesStyle,
    pub points: Vec<LinePoint>,
}

/// Everything needed to draw a line chart. Axis labels should carry units ("request rate (req/s)").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y_scale: YScale,
    pub series: Vec<Series>,
}

/// Renders `chart` as a PNG at `path` (created or truncated; the parent directory must exist).
/// Errors: [`ReportError::BadInput`] for invalid data (nothing is written), [`ReportError::Io`]
/// if the file cannot be created, [`ReportError::Drawing`] if rendering or encoding fails.
pub fn render_lines_png(chart: &LineChart, path: &Path) -> Result<(), ReportError> {
    validate(chart)?;
    write_png(path, LINE_CHART_SIZE_PX, |root| draw(root, chart))
}

/// Renders `chart` as an SVG at `path`; text stays text. Built in memory first, so a drawing
/// failure leaves no file. Errors as for [`render_lines_png`].
pub fn render_lines_svg(chart: &LineChart, path: &Path) -> Result<(), ReportError> {
    validate(chart)?;
    write_svg(path, LINE_CHART_SIZE_PX, |root| draw(root, chart))
}

fn validate(chart: &LineChart) -> Result<(), ReportError> {
    let bad = |reason: String| {
        Err(ReportError::bad_input(format!(
            "chart {:?}: {reason}",
            chart.title
        )))
    };
    if chart.series.is_empty() {
        return bad("has no series to plot".into());
    }
    if chart.series.len() > MAX_SERIES {
        return bad(format!(
            "has {} series, more than the {MAX_SERIES} distinct colours of a legend: split it",
            chart.series.len()
        ));
    }
    for series in &chart.series {
        if series.points.is_empty() {
            return bad(format!("series {:?} has no points", series.name));
        }
        for (index, point) in series.points.iter().enumerate() {
            if let Err(reason) = validate_point(point, chart.y_scale) {
                return bad(format!("series {:?} point {index}: {reason}", series.name));
            }
        }
    }
    Ok(())
}

fn validate_point(point: &LinePoint, scale: YScale) -> Result<(), String> {
    let (low, high) = point.error.unwrap_or((point.y, point.y));
    for (name, value) in [
        ("x", point.x),
        ("y", point.y),
        ("error low", low),
        ("error high", high),
    ] {
        if !value.is_finite() {
            return Err(format!("{name} = {value} is not a finite number"));
        }
        if scale == YScale::Log && name != "x" && value <= 0.0 {
            return Err(format!(
                "{name} = {value} cannot be shown on a log axis (must be > 0)"
            ));
        }
    }
    if !(low <= point.y && point.y <= high) {
        return Err(format!(
            "error bar ({low}, {high}) does not contain y = {}",
            point.y
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Axis ranges and ticks.

/// The value actually plotted on the y axis (log10 on a log axis).
fn plotted(y: f64, scale: YScale) -> f64 {
    match scale {
        YScale::Linear => y,
        YScale::Log => y.log10(),
    }
}

/// (min, max) over every point and error bound, in data units, of one coordinate.
fn extent(chart: &LineChart, pick: impl Fn(&LinePoint) -> [f64; 3]) -> (f64, f64) {
    let values = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .flat_map(&pick);
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// A "nice" step (1, 2 or 5 × 10^k) giving about `target` intervals over `span`.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let magnitude = 10f64.powf(raw.log10().floor());
    let residual = raw / magnitude;
    let nice = if residual <= 1.0 {
        1.0
    } else if residual <= 2.0 {
        2.0
    } else if residual <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The y axis range (in plotted units) and its tick positions.
fn y_axis(chart: &LineChart) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = extent(chart, |p| {
        let (l, h) = p.error.unwrap_or((p.y, p.y));
        [p.y, l, h]
    });
    match chart.y_scale {
        YScale::Linear => {
            let lo = if lo >= 0.0 { 0.0 } else { lo };
            // A flat series (all zeros, say) still needs a non-empty range.
            let hi = if hi <= lo { lo + 1.0 } else { hi };
            let step = nice_step(hi - lo, 6.0);
            let (first, last) = ((lo / step).floor(), (hi / step).ceil());
            let ticks = (first as i64..=last as i64)
                .map(|i| i as f64 * step)
                .collect();
            (first * step, last * step, ticks)
        }
        YScale::Log => {
            let (first, last) = (lo.log10().floor(), hi.log10().ceil());
            let last = if last <= first { first + 1.0 } else { last };
            let ticks = (first as i64..=last as i64).map(|d| d as f64).collect();
            (first, last, ticks)
        }
    }
}

/// A linear f64 axis whose tick positions are chosen here (nice steps, or whole decades of a log
/// axis) rather than by plotters. plotters' own `WithKeyPoints` cannot be used with a mesh on f64
/// axes (it lacks a value formatter), hence this small wrapper.
struct TickedAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for TickedAxis {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Light (minor) grid lines are not drawn; only the chosen ticks are.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }
}

fn x_axis(chart: &LineChart) -> (f64, f64) {
    let (lo, hi) = extent(chart, |p| [p.x, p.x, p.x]);
    let span = if hi > lo { hi - lo } else { 1.0 };
    // A little room either side so end markers are not cut by the frame.
    (lo - 0.03 * span, hi + 0.03 * span)
}

/// A tick label: short, without trailing zeros; decades on a log axis in data units.
fn format_tick(value: f64) -> String {
    if value == 0.0 {
        return "0".into();
    }
    let magnitude = value.abs();
    if !(1e-3..1e6).contains(&magnitude) {
        return format!("{value:.0e}");
    }
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

// ---------------------------------------------------------------------------------------------
// Drawing. Sizes are in pixels of the 1000×700 canvas.

const OUTER_MARGIN: i32 = 24;
const TITLE_FONT: f64 = 24.0;
const AXIS_LABEL_FONT: f64 = 17.0;
const TICK_FONT: f64 = 14.0;
const LEGEND_FONT: f64 = 14.0;
const LEGEND_PANEL_WIDTH: i32 = 230;
const MARKER_SIZE: i32 = 4;

/// Okabe–Ito, without yellow (too light on white), then two darker fillers.
const PALETTE: [RGBColor; 9] = [
    RGBColor(0x00, 0x72, 0xb2),
    RGBColor(0xd5, 0x5e, 0x00),
    RGBColor(0x00, 0x9e, 0x73),
    RGBColor(0xcc, 0x79, 0xa7),
    RGBColor(0x56, 0xb4, 0xe9),
    RGBColor(0xe6, 0x9f, 0x00),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0x88, 0x44, 0x00),
    RGBColor(0x55, 0x55, 0x99),
];

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &LineChart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (width, height) = root.dim_in_pixel();
    let (width, height) = (width as i32, height as i32);
    let title_style = text_style(TITLE_FONT).pos(Pos::new(HPos::Center, VPos::Top));
    root.draw_text(&chart.title, &title_style, (width / 2, OUTER_MARGIN))?;
    let body_top = OUTER_MARGIN + (TITLE_FONT * 1.6) as i32;
    let chart_right = width - OUTER_MARGIN - LEGEND_PANEL_WIDTH;
    let body = root.clone().shrink(
        (OUTER_MARGIN - 8, body_top),
        (
            (chart_right - OUTER_MARGIN + 8) as u32,
            (height - body_top - OUTER_MARGIN + 8) as u32,
        ),
    );
    let (x_lo, x_hi) = x_axis(chart);
    let (y_lo, y_hi, y_ticks) = y_axis(chart);
    let scale = chart.y_scale;
    let y_range = TickedAxis {
        inner: (y_lo..y_hi).into(),
        ticks: y_ticks,
    };
    let mut context = ChartBuilder::on(&body)
        .margin_right(12)
        .margin_top(8)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x_lo..x_hi, y_range)?;
    let y_formatter = |v: &f64| match scale {
        YScale::Linear => format_tick(*v),
        YScale::Log => format_tick(10f64.powf(*v)),
    };
    context
        .configure_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(INK.stroke_width(1))
        .x_labels(10)
        .x_label_style(text_style(TICK_FONT))
        .y_label_style(text_style(TICK_FONT))
        .x_label_formatter(&|v| format_tick(*v))
        .y_label_formatter(&y_formatter)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style(text_style(AXIS_LABEL_FONT))
        .draw()?;
    let plot = context.plotting_area();
    let (xr, yr) = (plot.get_x_range(), plot.get_y_range());
    plot.draw(&PathElement::new(
        vec![(xr.start, yr.end), (xr.end, yr.end), (xr.end, yr.start)],
        INK.stroke_width(1),
    ))?;
    for (index, series) in chart.series.iter().enumerate() {
        draw_series(plot, series, index, scale)?;
    }
    let (_, plot_y_px) = plot.get_pixel_range();
    draw_legend(
        root,
        chart,
        width - OUTER_MARGIN - LEGEND_PANEL_WIDTH + 16,
        plot_y_px.start,
    )
}

fn draw_series<DB, C>(
    plot: &DrawingArea<DB, C>,
    series: &Series,
    index: usize,
    scale: YScale,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    C: CoordTranslate<From = (f64, f64)>,
{
    let colour = PALETTE[index % PALETTE.len()];
    let points: Vec<(f64, f64)> = series
        .points
        .iter()
        .map(|p| (p.x, plotted(p.y, scale)))
        .collect();
    for point in &series.points {
        if let Some((low, high)) = point.error {
            let (low, high) = (plotted(low, scale), plotted(high, scale));
            plot.draw(&PathElement::new(
                vec![(point.x, low), (point.x, high)],
                colour.stroke_width(1),
            ))?;
        }
    }
    match series.style {
        SeriesStyle::LineWithMarkers | SeriesStyle::Line => {
            plot.draw(&PathElement::new(points.clone(), colour.stroke_width(2)))?;
        }
        SeriesStyle::Dashed => {
            let dashed = DashedLineSeries::new(points.clone(), 8, 6, colour.stroke_width(2));
            for element in dashed {
                plot.draw(&element)?;
            }
        }
        SeriesStyle::Markers => {}
    }
    if matches!(
        series.style,
        SeriesStyle::LineWithMarkers | SeriesStyle::Markers
    ) {
        for point in points {
            draw_marker(plot, point, index, colour)?;
        }
    }
    Ok(())
}

/// One of four shapes by series index, so series stay apart in greyscale too.
fn draw_marker<DB, C>(
    area: &DrawingArea<DB, C>,
    at: C::From,
    index: usize,
    colour: RGBColor,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    C: CoordTranslate,
    C::From: Clone,
{
    let size = MARKER_SIZE;
    match (index / PALETTE.len() + index) % 4 {
        0 => area.draw(&Circle::new(at, size, colour.filled())),
        1 => area.draw(&TriangleMarker::new(at, size + 1, colour.filled())),
        2 => {
            let square = EmptyElement::at(at)
                + Rectangle::new([(-size, -size), (size, size)], colour.filled());
            area.draw(&square)
        }
        _ => area.draw(&Cross::new(at, size, colour.stroke_width(2))),
    }
}

fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    left: i32,
    top: i32,
) -> DrawResult<DB> {
    let line_height = (LEGEND_FONT * 1.6) as i32;
    let entry_style = text_style(LEGEND_FONT).pos(Pos::new(HPos::Left, VPos::Center));
    let sample_width = 30;
    for (index, series) in chart.series.iter().enumerate() {
        let y = top + 10 + index as i32 * line_height;
        let colour = PALETTE[index % PALETTE.len()];
        let segment = vec![(left, y), (left + sample_width, y)];
        match series.style {
            SeriesStyle::Dashed => {
                for element in DashedLineSeries::new(segment, 8, 6, colour.stroke_width(2)) {
                    root.draw(&element)?;
                }
            }
            SeriesStyle::Markers => {}
            _ => root.draw(&PathElement::new(segment, colour.stroke_width(2)))?,
        }
        if matches!(
            series.style,
            SeriesStyle::LineWithMarkers | SeriesStyle::Markers
        ) {
            draw_marker(root, (left + sample_width / 2, y), index, colour)?;
        }
        root.draw_text(&series.name, &entry_style, (left + sample_width + 8, y))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(scale: YScale, points: Vec<LinePoint>) -> LineChart {
        LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            y_scale: scale,
            series: vec![Series {
                name: "s".into(),
                style: SeriesStyle::LineWithMarkers,
                points,
            }],
        }
    }

    #[test]
    fn log_axis_refuses_zero_and_negative_values_but_linear_accepts_them() {
        let zero = vec![LinePoint::new(1.0, 0.0)];
        assert!(validate(&chart(YScale::Log, zero.clone())).is_err());
        assert!(validate(&chart(YScale::Linear, zero)).is_ok());
    }

    #[test]
    fn a_chart_with_more_series_than_colours_is_refused_so_no_colour_repeats() {
        let series = |count: usize| -> Vec<Series> {
            (0..count)
                .map(|i| Series {
                    name: format!("s{i}"),
                    style: SeriesStyle::Line,
                    points: vec![LinePoint::new(0.0, 1.0)],
                })
                .collect()
        };
        let mut full = chart(YScale::Linear, vec![LinePoint::new(0.0, 1.0)]);
        full.series = series(PALETTE.len());
        assert!(validate(&full).is_ok());
        let distinct: std::collections::BTreeSet<(u8, u8, u8)> =
            PALETTE.iter().map(|c| (c.0, c.1, c.2)).collect();
        assert_eq!(
            distinct.len(),
            PALETTE.len(),
            "every palette colour is distinct"
        );
        full.series = series(PALETTE.len() + 1);
        let err = validate(&full).unwrap_err().to_string();
        assert!(err.contains("distinct colours"), "{err}");
    }

    #[test]
    fn error_bars_must_contain_their_point() {
        let outside = LinePoint {
            x: 1.0,
            y: 5.0,
            error: Some((6.0, 7.0)),
        };
        let err = validate(&chart(YScale::Linear, vec![outside]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not contain"), "{err}");
    }

    #[test]
    fn log_ticks_are_whole_decades_covering_the_data() {
        let c = chart(
            YScale::Log,
            vec![LinePoint::new(0.0, 0.004), LinePoint::new(1.0, 850.0)],
        );
        let (lo, hi, ticks) = y_axis(&c);
        assert_eq!((lo, hi), (-3.0, 3.0));
        assert_eq!(ticks, vec![-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn linear_ticks_are_nice_steps_from_zero() {
        let c = chart(
            YScale::Linear,
            vec![LinePoint::new(0.0, 3.0), LinePoint::new(1.0, 39.2)],
        );
        let (lo, hi, ticks) = y_axis(&c);
        assert_eq!(lo, 0.0);
        assert!(hi >= 39.2);
        assert_eq!(ticks, vec![0.0, 10.0, 20.0, 30.0, 40.0]);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(format_tick(0.01), "0.01");
        assert_eq!(format_tick(40.0), "40");
        assert_eq!(format_tick(2.5), "2.5");
        assert_eq!(format_tick(1e7), "1e7");
    }
}
