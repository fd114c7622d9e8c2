//! The design-space exploration figure (after Flamingo, Fig. 3(b)): one marker per derived rack
//! configuration, placed by how much of two resources it provisions, coloured by a third, shaped
//! by whether a data layout was found and judged efficient.
//!
//! Invariants:
//! - Input is validated before any file is created: at least one point, every coordinate and
//!   colour finite and within `0..=1` (they are fractions of full provisioning, and the axes are
//!   fixed to that range so figures of different racks compare at a glance).
//! - PNG and SVG are drawn by the same generic code ([`draw`]), so they cannot drift apart.
//! - One marker per point, each at its own position ([`marker_positions`]): a point crowded by
//!   earlier markers moves to the nearest free place on rings around it rather than being drawn
//!   over them.
//! - Layout is computed from measured text, never from guessed pixel widths: long titles and
//!   colour labels wrap, long axis labels shrink, so nothing is clipped at 1000×800.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};

use crate::ReportError;
use crate::canvas::{DrawResult, GRID, INK, text_style, write_png, write_svg};
use crate::colour::viridis;

/// Width and height in pixels of the rendered figure (PNG pixels, SVG user units).
pub const PROVISIONING_FIGURE_SIZE_PX: (u32, u32) = (1000, 800);

/// One configuration of the design space. All three values are fractions (`0..=1`) of full
/// provisioning, where 1 means every disk may be in its most expensive state at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProvisioningPoint {
    /// Fraction of the x-axis resource provisioned (e.g. power).
    pub x: f64,
    /// Fraction of the y-axis resource provisioned (e.g. cooling).
    pub y: f64,
    /// Fraction of the third resource provisioned (e.g. vibration), shown as colour.
    pub colour: f64,
    /// What the planner concluded for this configuration; shown as marker shape.
    pub status: PointStatus,
}

/// The planner's verdict on a configuration (Flamingo §5: efficient / inefficient / no solution).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PointStatus {
    /// A layout was found and the quality heuristics judged it efficient. Filled circle.
    Efficient,
    /// A layout was found but judged inefficient. Hollow circle.
    Inefficient,
    /// No layout satisfies the constraints. Cross.
    NoSolution,
}

impl PointStatus {
    const ALL: [PointStatus; 3] = [
        PointStatus::Efficient,
        PointStatus::Inefficient,
        PointStatus::NoSolution,
    ];

    fn legend_label(self) -> &'static str {
        match self {
            PointStatus::Efficient => "efficient",
            PointStatus::Inefficient => "inefficient",
            PointStatus::NoSolution => "no solution",
        }
    }
}

/// Everything needed to draw the exploration figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProvisioningFigure {
    /// Figure title, wrapped if wider than the figure.
    pub title: String,
    /// x-axis label, e.g. "power provisioned (fraction of all disks spinning up)".
    pub x_label: String,
    /// y-axis label, e.g. "cooling provisioned (fraction of all disks spinning up)".
    pub y_label: String,
    /// Label of the colour scale, e.g. "vibration provisioned (fraction)"; wrapped above the bar.
    pub colour_label: String,
    /// The configurations; must not be empty.
    pub points: Vec<ProvisioningPoint>,
}

/// Renders `figure` as a 1000×800 PNG at `path` (created or truncated; the parent directory must
/// exist). Errors: [`ReportError::BadInput`] for empty or non-finite/out-of-range points (nothing
/// is written), [`ReportError::Io`] if the file cannot be created, [`ReportError::Drawing`] if
/// rendering or encoding fails (the file may then be partial).
pub fn render_provisioning_png(
    figure: &ProvisioningFigure,
    path: &Path,
) -> Result<(), ReportError> {
    validate(figure)?;
    write_png(path, PROVISIONING_FIGURE_SIZE_PX, |root| draw(root, figure))
}

/// Renders `figure` as a 1000×800 SVG at `path` (created or truncated; the parent directory must
/// exist). Text stays text (font family `sans-serif`), so the title and labels are searchable.
/// Errors as for [`render_provisioning_png`], except that the SVG is built in memory first, so a
/// drawing failure leaves no file behind.
pub fn render_provisioning_svg(
    figure: &ProvisioningFigure,
    path: &Path,
) -> Result<(), ReportError> {
    validate(figure)?;
    write_svg(path, PROVISIONING_FIGURE_SIZE_PX, |root| draw(root, figure))
}

fn validate(figure: &ProvisioningFigure) -> Result<(), ReportError> {
    if figure.points.is_empty() {
        return Err(ReportError::bad_input(format!(
            "provisioning figure {:?} has no points to plot",
            figure.title
        )));
    }
    for (index, point) in figure.points.iter().enumerate() {
        for (name, value) in [("x", point.x), ("y", point.y), ("colour", point.colour)] {
            if !value.is_finite() {
                return Err(ReportError::bad_input(format!(
                    "provisioning figure {:?}: point {index} has {name} = {value}, \
                     which is not a finite number",
                    figure.title
                )));
            }
            if !(0.0..=1.0).contains(&value) {
                return Err(ReportError::bad_input(format!(
                    "provisioning figure {:?}: point {index} has {name} = {value}, outside 0..=1 \
                     (values are fractions of full provisioning)",
                    figure.title
                )));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Drawing. Sizes are in pixels of the 1000×800 canvas.

const OUTER_MARGIN: i32 = 24;
const TITLE_FONT: f64 = 26.0;
/// Bounds on wrapped text, so the chart and legend always keep their room (see `wrap`).
const TITLE_MAX_LINES: usize = 3;
const COLOUR_LABEL_MAX_LINES: usize = 6;
const AXIS_LABEL_FONT_MAX: f64 = 19.0;
const AXIS_LABEL_FONT_MIN: f64 = 11.0;
const TICK_FONT: f64 = 15.0;
const LEGEND_FONT: f64 = 15.0;
/// Room on the right for the colour bar and the status legend.
const LEGEND_PANEL_WIDTH: i32 = 200;
const COLOUR_BAR_WIDTH: i32 = 24;
const MARKER_RADIUS: i32 = 5;
/// The axes extend a little past 0 and 1 so markers at the edges are not cut by the frame.
const AXIS_PAD: f64 = 0.025;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &ProvisioningFigure,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (width, height) = root.dim_in_pixel();
    let (width, height) = (width as i32, height as i32);

    // Title: wrapped to the canvas width, centred.
    let title_style = text_style(TITLE_FONT).pos(Pos::new(HPos::Center, VPos::Top));
    let title_lines = wrap(
        root,
        &figure.title,
        &title_style,
        width - 2 * OUTER_MARGIN,
        TITLE_MAX_LINES,
    )?;
    let title_line_height = (TITLE_FONT * 1.25) as i32;
    let mut y = OUTER_MARGIN;
    for line in &title_lines {
        root.draw_text(line, &title_style, (width / 2, y))?;
        y += title_line_height;
    }
    let body_top = y + 12;

    // Chart on the left, legend panel on the right.
    let chart_right = width - OUTER_MARGIN - LEGEND_PANEL_WIDTH;
    let body = root.clone().shrink(
        (OUTER_MARGIN - 8, body_top),
        (
            (chart_right - OUTER_MARGIN + 8) as u32,
            (height - body_top - OUTER_MARGIN + 8) as u32,
        ),
    );
    // Axis labels shrink (down to a floor) rather than run past the plotting area. plotters
    // uses one style for both axis descriptions, so both get the smaller fitting size.
    let approx_plot_w = chart_right - OUTER_MARGIN - 90;
    let approx_plot_h = height - body_top - OUTER_MARGIN - 80;
    let axis_label_font = fit_font(root, &figure.x_label, approx_plot_w)?.min(fit_font(
        root,
        &figure.y_label,
        approx_plot_h,
    )?);

    let mut chart = ChartBuilder::on(&body)
        .margin_right(12)
        .margin_top(8)
        .x_label_area_size(64)
        .y_label_area_size(78)
        .build_cartesian_2d(-AXIS_PAD..1.0 + AXIS_PAD, -AXIS_PAD..1.0 + AXIS_PAD)?;
    chart
        .configure_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(INK.stroke_width(1))
        // With the padded range, asking for 11 labels makes plotters pick the tenths 0.0..=1.0.
        .x_labels(11)
        .y_labels(11)
        .x_label_style(text_style(TICK_FONT))
        .y_label_style(text_style(TICK_FONT))
        .x_label_formatter(&|v| format!("{v:.1}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .x_desc(figure.x_label.as_str())
        .y_desc(figure.y_label.as_str())
        .axis_desc_style(text_style(axis_label_font))
        .draw()?;

    // Frame the plotting area: the mesh draws only the left and bottom axes.
    let plot = chart.plotting_area();
    let (x_range, y_range) = (plot.get_x_range(), plot.get_y_range());
    plot.draw(&PathElement::new(
        vec![
            (x_range.start, y_range.end),
            (x_range.end, y_range.end),
            (x_range.end, y_range.start),
        ],
        INK.stroke_width(1),
    ))?;

    // Markers: efficient first, so the rarer hollow circles and crosses stay visible on top.
    let positions = marker_positions(&figure.points);
    for status in PointStatus::ALL {
        for (point, at) in figure.points.iter().zip(&positions) {
            if point.status == status {
                draw_marker(plot, *at, status, viridis(point.colour))?;
            }
        }
    }

    // Legend panel, its top aligned with the top of the plotting area.
    let (_, plot_y_px) = plot.get_pixel_range();
    let panel_left = width - OUTER_MARGIN - LEGEND_PANEL_WIDTH + 24;
    draw_legend(
        root,
        figure,
        panel_left,
        plot_y_px.start,
        width - OUTER_MARGIN - panel_left,
    )
}

/// Draws one marker centred on `at` (a data coordinate on the chart, or a pixel in the legend).
fn draw_marker<DB, C>(
    area: &DrawingArea<DB, C>,
    at: C::From,
    status: PointStatus,
    colour: RGBColor,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    C: CoordTranslate,
    C::From: Clone,
{
    match status {
        PointStatus::Efficient => {
            area.draw(&Circle::new(at.clone(), MARKER_RADIUS, colour.filled()))?;
            // A darker rim keeps light (yellow) markers visible on the white background.
            area.draw(&Circle::new(
                at,
                MARKER_RADIUS,
                darker(colour).stroke_width(1),
            ))
        }
        PointStatus::Inefficient => {
            area.draw(&Circle::new(at, MARKER_RADIUS, colour.stroke_width(2)))
        }
        PointStatus::NoSolution => {
            area.draw(&Cross::new(at, MARKER_RADIUS, colour.stroke_width(2)))
        }
    }
}

/// Least distance (in axis units, ≈ 6 px, more than a marker's radius) between two markers' centres.
const MARKER_SEPARATION: f64 = 0.01;
/// Rings tried around a crowded point before a marker is left where the last ring put it.
const DODGE_RINGS: i32 = 12;

/// Where each point's marker is drawn, one per point, in input order. Configurations can share a
/// position (they differ only in the colour resource, or in a resource not plotted): each marker
/// takes its own point if no earlier marker is within [`MARKER_SEPARATION`], otherwise the first
/// free place on rings of growing radius around it (inside the padded axes), so every
/// configuration keeps a visible marker of its own (Flamingo's Fig. 3(b) plots one per
/// configuration). A point nobody crowds is drawn exactly where it is. Deterministic.
pub fn marker_positions(points: &[ProvisioningPoint]) -> Vec<(f64, f64)> {
    let bucket = |v: f64| (v / MARKER_SEPARATION).floor() as i64;
    let mut placed: BTreeMap<(i64, i64), Vec<(f64, f64)>> = BTreeMap::new();
    let free = |placed: &BTreeMap<(i64, i64), Vec<(f64, f64)>>, (x, y): (f64, f64)| {
        let (bx, by) = (bucket(x), bucket(y));
        (bx - 1..=bx + 1).all(|i| {
            (by - 1..=by + 1).all(|j| {
                placed.get(&(i, j)).is_none_or(|others| {
                    others
                        .iter()
                        .all(|o| (o.0 - x).hypot(o.1 - y) >= MARKER_SEPARATION)
                })
            })
        })
    };
    let inside = |v: f64| (-AXIS_PAD..=1.0 + AXIS_PAD).contains(&v);
    let mut positions = Vec::with_capacity(points.len());
    for point in points {
        let mut at = (point.x, point.y);
        'rings: for ring in 1..=DODGE_RINGS {
            if free(&placed, at) {
                break;
            }
            let radius = MARKER_SEPARATION * f64::from(ring);
            let slots = 6 * ring;
            for slot in 0..slots {
                let angle = std::f64::consts::TAU * f64::from(slot) / f64::from(slots);
                let candidate = (
                    point.x + radius * angle.cos(),
                    point.y + radius * angle.sin(),
                );
                if inside(candidate.0) && inside(candidate.1) && free(&placed, candidate) {
                    at = candidate;
                    break 'rings;
                }
            }
        }
        placed
            .entry((bucket(at.0), bucket(at.1)))
            .or_default()
            .push(at);
        positions.push(at);
    }
    positions
}

fn darker(colour: RGBColor) -> RGBColor {
    let scale = |c: u8| (f64::from(c) * 0.65).round() as u8;
    RGBColor(scale(colour.0), scale(colour.1), scale(colour.2))
}

/// The colour bar (with its wrapped label and tick values) and the marker-shape key, stacked in
/// the panel to the right of the chart, in canvas pixels.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &ProvisioningFigure,
    left: i32,
    top: i32,
    panel_width: i32,
) -> DrawResult<DB> {
    let line_height = (LEGEND_FONT * 1.35) as i32;
    let label_style = text_style(LEGEND_FONT).pos(Pos::new(HPos::Left, VPos::Top));
    let mut y = top;
    for line in wrap(
        root,
        &figure.colour_label,
        &label_style,
        panel_width,
        COLOUR_LABEL_MAX_LINES,
    )? {
        root.draw_text(&line, &label_style, (left, y))?;
        y += line_height;
    }

    // The bar: one-pixel rows from 1 (top) down to 0, as on the y axis.
    let bar_top = y + 8;
    let bar_height = 260;
    let bar_bottom = bar_top + bar_height;
    for row in 0..bar_height {
        let t = f64::from(bar_height - 1 - row) / f64::from(bar_height - 1);
        root.draw(&Rectangle::new(
            [
                (left, bar_top + row),
                (left + COLOUR_BAR_WIDTH, bar_top + row + 1),
            ],
            viridis(t).filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(left, bar_top), (left + COLOUR_BAR_WIDTH, bar_bottom)],
        INK.stroke_width(1),
    ))?;
    let tick_style = text_style(TICK_FONT).pos(Pos::new(HPos::Left, VPos::Center));
    for i in 0..=4 {
        let t = f64::from(i) / 4.0;
        let ty = bar_bottom - (t * f64::from(bar_height)).round() as i32;
        root.draw(&PathElement::new(
            vec![
                (left + COLOUR_BAR_WIDTH, ty),
                (left + COLOUR_BAR_WIDTH + 5, ty),
            ],
            INK.stroke_width(1),
        ))?;
        root.draw_text(
            &format!("{t:.2}"),
            &tick_style,
            (left + COLOUR_BAR_WIDTH + 9, ty),
        )?;
    }

    // Marker-shape key, drawn in neutral grey so shape alone carries the meaning.
    let mut y = bar_bottom + 40;
    let heading = text_style(LEGEND_FONT).pos(Pos::new(HPos::Left, VPos::Top));
    root.draw_text("data layout", &heading, (left, y))?;
    y += line_height + 8;
    let entry_style = text_style(LEGEND_FONT).pos(Pos::new(HPos::Left, VPos::Center));
    let sample = RGBColor(0x55, 0x55, 0x55);
    for status in PointStatus::ALL {
        let count = figure.points.iter().filter(|p| p.status == status).count();
        draw_marker(root, (left + MARKER_RADIUS + 2, y), status, sample)?;
        root.draw_text(
            &format!("{} ({count})", status.legend_label()),
            &entry_style,
            (left + 2 * MARKER_RADIUS + 12, y),
        )?;
        y += line_height + 6;
    }
    Ok(())
}

/// The largest font size (down to `AXIS_LABEL_FONT_MIN`) at which `text` fits in `max_width`.
fn fit_font<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    max_width: i32,
) -> Result<f64, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut size = AXIS_LABEL_FONT_MAX;
    while size > AXIS_LABEL_FONT_MIN {
        let (w, _) = root.estimate_text_size(text, &text_style(size))?;
        if i64::from(w) <= i64::from(max_width) {
            break;
        }
        size -= 1.0;
    }
    Ok(size)
}

/// Greedy word wrap of `text` into at most `max_lines` lines no wider than `max_width` pixels in
/// `style`. A single word wider than the line gets a line of its own (there is nowhere better to
/// break it). Text beyond `max_lines` is dropped and the last line ends in an ellipsis: the
/// layout reserves a bounded height for wrapped text, and an unbounded title would squeeze the
/// chart to nothing.
fn wrap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle<'_>,
    max_width: i32,
    max_lines: usize,
) -> Result<Vec<String>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    for word in text.split_whitespace() {
        let candidate = if current.is_empty() {
            word.to_string()
        } else {
            format!("{current} {word}")
        };
        let (w, _) = root.estimate_text_size(&candidate, style)?;
        if i64::from(w) <= i64::from(max_width) || current.is_empty() {
            current = candidate;
        } else {
            lines.push(std::mem::replace(&mut current, word.to_string()));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            last.push_str(" …");
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(points: Vec<ProvisioningPoint>) -> ProvisioningFigure {
        ProvisioningFigure {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            colour_label: "c".into(),
            points,
        }
    }

    fn point(x: f64, y: f64, colour: f64) -> ProvisioningPoint {
        ProvisioningPoint {
            x,
            y,
            colour,
            status: PointStatus::Efficient,
        }
    }

    #[test]
    fn validation_rejects_empty_nan_infinite_and_out_of_range() {
        for bad in [
            figure(vec![]),
            figure(vec![point(f64::NAN, 0.5, 0.5)]),
            figure(vec![point(0.5, f64::INFINITY, 0.5)]),
            figure(vec![point(0.5, 0.5, 1.01)]),
            figure(vec![point(0.5, 0.5, 0.5), point(-0.1, 0.5, 0.5)]),
        ] {
            assert!(
                matches!(validate(&bad), Err(ReportError::BadInput { .. })),
                "{bad:?}"
            );
        }
        assert!(validate(&figure(vec![point(0.0, 1.0, 0.5)])).is_ok());
    }

    #[test]
    fn every_point_gets_a_marker_of_its_own_even_when_points_coincide() {
        // 52 configurations on 33 positions, as pelican's whole-disk fractions gave (issue 29).
        let mut points: Vec<ProvisioningPoint> = (0..33)
            .map(|i| point(f64::from(i) / 32.0, f64::from(i % 5) / 4.0, 0.5))
            .collect();
        points.extend((0..19).map(|i| point(f64::from(i % 3) / 32.0, 0.0, 0.1)));
        let positions = marker_positions(&points);
        assert_eq!(positions.len(), 52);
        for (a, first) in positions.iter().enumerate() {
            for second in &positions[a + 1..] {
                let distance = (first.0 - second.0).hypot(first.1 - second.1);
                assert!(
                    distance >= MARKER_SEPARATION * 0.999,
                    "{first:?} and {second:?} overlap"
                );
            }
            assert!(
                (-AXIS_PAD..=1.0 + AXIS_PAD).contains(&first.0)
                    && (-AXIS_PAD..=1.0 + AXIS_PAD).contains(&first.1),
                "{first:?} leaves the plotting area"
            );
        }
        // A lone point is drawn exactly where it is.
        assert_eq!(positions[32], (1.0, 0.5));
    }

    #[test]
    fn validation_message_names_the_point() {
        let err = validate(&figure(vec![
            point(0.5, 0.5, 0.5),
            point(0.5, f64::NAN, 0.5),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("point 1") && err.contains("y = NaN"), "{err}");
    }
}
