//! End-to-end tests of the line chart: charts written to real files in a fresh temporary
//! directory per test, then read back (magic bytes, size, text kept in SVG, errors before files).
//!
//! Invariants: every test uses its own directory (process id + test name), so tests may run in
//! parallel; directories are removed only when a test passes.

use std::path::PathBuf;

use spinwise_report::{
    LineChart, LinePoint, ReportError, Series, SeriesStyle, YScale, render_lines_png,
    render_lines_svg,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "spinwise-report-lines-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn remove(self) {
        std::fs::remove_dir_all(&self.0).expect("remove temp dir");
    }
}

const RATES: [f64; 6] = [0.125, 0.5, 1.0, 2.0, 4.0, 8.0];

/// Pelican Fig. 5(c)-like data: time to first byte, seconds, spanning five decades.
fn ttfb_chart(scale: YScale) -> LineChart {
    let series = |name: &str, style, base: f64, growth: f64| Series {
        name: name.into(),
        style,
        points: RATES
            .iter()
            .map(|&rate| {
                let y = base * growth.powf(rate);
                LinePoint {
                    x: rate,
                    y,
                    error: Some((y * 0.8, y * 1.25)),
                }
            })
            .collect(),
    };
    LineChart {
        title: "Time to first byte vs request rate".into(),
        x_label: "request rate (req/s)".into(),
        y_label: "time to first byte (s)".into(),
        y_scale: scale,
        series: vec![
            series("Pelican mean", SeriesStyle::LineWithMarkers, 14.2, 1.9),
            series("FP mean", SeriesStyle::LineWithMarkers, 0.005, 3.0),
            series("all active", SeriesStyle::Dashed, 1.0, 1.0),
            series("configurations", SeriesStyle::Markers, 2.0, 1.1),
            series("Pelican max", SeriesStyle::Line, 60.0, 1.5),
        ],
    }
}

fn assert_bad_input(result: Result<(), ReportError>) {
    match result {
        Err(ReportError::BadInput { reason }) => assert!(!reason.is_empty()),
        other => panic!("expected BadInput, got {other:?}"),
    }
}

#[test]
fn log_scale_png_has_magic_bytes_and_real_content() {
    let dir = TempDir::new("png-log");
    let path = dir.path("ttfb.png");
    render_lines_png(&ttfb_chart(YScale::Log), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10 * 1024, "PNG is only {} bytes", bytes.len());
    dir.remove();
}

#[test]
fn svg_keeps_title_axis_labels_series_names_and_decade_ticks() {
    let dir = TempDir::new("svg-log");
    let path = dir.path("ttfb.svg");
    render_lines_svg(&ttfb_chart(YScale::Log), &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    // plotters writes each text element's content on a line of its own.
    let lines: Vec<&str> = svg.lines().map(str::trim).collect();
    for text in [
        "Time to first byte vs request rate",
        "request rate (req/s)",
        "time to first byte (s)",
        "Pelican mean",
        "all active",
        "0.001",
        "1000",
    ] {
        assert!(lines.contains(&text), "SVG lacks the text {text:?}");
    }
    dir.remove();
}

#[test]
fn linear_scale_renders_both_formats() {
    let dir = TempDir::new("linear");
    let chart = ttfb_chart(YScale::Linear);
    render_lines_png(&chart, &dir.path("lin.png")).unwrap();
    render_lines_svg(&chart, &dir.path("lin.svg")).unwrap();
    assert!(std::fs::metadata(dir.path("lin.png")).unwrap().len() > 10 * 1024);
    assert!(
        std::fs::read_to_string(dir.path("lin.svg"))
            .unwrap()
            .contains("<text")
    );
    dir.remove();
}

#[test]
fn a_single_point_and_a_flat_zero_series_still_render() {
    let dir = TempDir::new("degenerate");
    let chart = LineChart {
        title: "rejects".into(),
        x_label: "rate (req/s)".into(),
        y_label: "reject rate (%)".into(),
        y_scale: YScale::Linear,
        series: vec![
            Series {
                name: "one".into(),
                style: SeriesStyle::LineWithMarkers,
                points: vec![LinePoint::new(1.0, 0.0)],
            },
            Series {
                name: "zeros".into(),
                style: SeriesStyle::Line,
                points: vec![LinePoint::new(0.5, 0.0), LinePoint::new(2.0, 0.0)],
            },
        ],
    };
    render_lines_png(&chart, &dir.path("d.png")).unwrap();
    render_lines_svg(&chart, &dir.path("d.svg")).unwrap();
    dir.remove();
}

#[test]
fn empty_data_is_bad_input_and_writes_nothing() {
    let dir = TempDir::new("empty");
    let (png, svg) = (dir.path("e.png"), dir.path("e.svg"));
    let mut chart = ttfb_chart(YScale::Log);
    chart.series.clear();
    assert_bad_input(render_lines_png(&chart, &png));
    assert_bad_input(render_lines_svg(&chart, &svg));
    let mut chart = ttfb_chart(YScale::Log);
    chart.series[1].points.clear();
    assert_bad_input(render_lines_png(&chart, &png));
    assert!(!png.exists() && !svg.exists());
    dir.remove();
}

#[test]
fn non_finite_values_and_non_positive_log_values_are_bad_input() {
    let dir = TempDir::new("nan");
    let png = dir.path("n.png");
    for (series, point, value) in [(0, 2, f64::NAN), (1, 0, f64::INFINITY)] {
        let mut chart = ttfb_chart(YScale::Linear);
        chart.series[series].points[point].y = value;
        chart.series[series].points[point].error = None;
        assert_bad_input(render_lines_png(&chart, &png));
    }
    let mut chart = ttfb_chart(YScale::Linear);
    chart.series[0].points[0].x = f64::NEG_INFINITY;
    assert_bad_input(render_lines_svg(&chart, &dir.path("n.svg")));
    let mut chart = ttfb_chart(YScale::Log);
    chart.series[0].points[3] = LinePoint::new(2.0, 0.0);
    let err = render_lines_png(&chart, &png).unwrap_err().to_string();
    assert!(
        err.contains("log axis") && err.contains("Pelican mean"),
        "{err}"
    );
    assert!(!png.exists());
    dir.remove();
}

#[test]
fn missing_directory_is_io_error_with_path() {
    let dir = TempDir::new("io");
    let path = dir.path("no-such-dir").join("fig.png");
    match render_lines_png(&ttfb_chart(YScale::Log), &path) {
        Err(ReportError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Io, got {other:?}"),
    }
    let path = dir.path("no-such-dir").join("fig.svg");
    match render_lines_svg(&ttfb_chart(YScale::Log), &path) {
        Err(ReportError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Io, got {other:?}"),
    }
    dir.remove();
}
