//! End-to-end tests of the public API: figures and tables written to real files in a fresh
//! temporary directory per test, then read back.
//!
//! Invariants: every test uses its own directory (process id + test name), so tests may run in
//! parallel and re-runs never see stale files; directories are removed only when a test passes,
//! leaving a failing test's output behind to look at.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spinwise_report::{
    PointStatus, ProvisioningFigure, ProvisioningPoint, ReportError, render_provisioning_png,
    render_provisioning_svg, write_csv,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "spinwise-report-test-{}-{test}",
            std::process::id()
        ));
        // A leftover from an earlier run with the same pid is possible; start clean.
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

/// A staircase of configurations like Flamingo Fig. 3(b), deterministic, all three statuses.
fn staircase(steps: u32, runs: u32) -> Vec<ProvisioningPoint> {
    let mut points = Vec::new();
    for step in 0..steps {
        for run in 0..runs {
            let x = (f64::from(step) * 0.055 + f64::from(run) * 0.01 + 0.02).min(1.0);
            points.push(ProvisioningPoint {
                x,
                y: f64::from(step + 1) / f64::from(steps),
                colour: (0.8 * x + 0.05 * f64::from(run % 4)).min(1.0),
                status: match (step + run) % 9 {
                    0 | 4 => PointStatus::Inefficient,
                    7 => PointStatus::NoSolution,
                    _ => PointStatus::Efficient,
                },
            });
        }
    }
    points
}

fn figure(title: &str, points: Vec<ProvisioningPoint>) -> ProvisioningFigure {
    ProvisioningFigure {
        title: title.into(),
        x_label: "power provisioned (fraction of all disks spinning up)".into(),
        y_label: "cooling provisioned (fraction of all disks spinning up)".into(),
        colour_label: "vibration provisioned (fraction)".into(),
        points,
    }
}

fn assert_bad_input(result: Result<(), ReportError>) {
    match result {
        Err(ReportError::BadInput { reason }) => assert!(!reason.is_empty()),
        other => panic!("expected BadInput, got {other:?}"),
    }
}

#[test]
fn png_has_magic_bytes_and_real_content() {
    let dir = TempDir::new("png");
    let path = dir.path("provisioning.png");
    render_provisioning_png(&figure("Pelican design space", staircase(15, 20)), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10 * 1024, "PNG is only {} bytes", bytes.len());
    dir.remove();
}

#[test]
fn png_survives_long_text_and_edge_points() {
    // Long title and labels must wrap or shrink rather than fail; points on 0 and 1 must render.
    let dir = TempDir::new("png-long");
    let path = dir.path("long.png");
    let mut fig = figure(
        "A deliberately long title that cannot fit on one line of a thousand pixel wide figure \
         and so has to wrap onto a second line",
        vec![
            ProvisioningPoint {
                x: 0.0,
                y: 0.0,
                colour: 0.0,
                status: PointStatus::Efficient,
            },
            ProvisioningPoint {
                x: 1.0,
                y: 1.0,
                colour: 1.0,
                status: PointStatus::Inefficient,
            },
            ProvisioningPoint {
                x: 0.0,
                y: 1.0,
                colour: 0.5,
                status: PointStatus::NoSolution,
            },
        ],
    );
    fig.x_label = "power provisioned as a fraction of the power needed for every disk in the \
                   rack to spin up at the same time"
        .into();
    fig.colour_label =
        "vibration provisioned (fraction of all disks spinning up at the same time)".into();
    render_provisioning_png(&fig, &path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 10 * 1024);
    dir.remove();
}

#[test]
fn absurdly_long_title_is_truncated_not_fatal() {
    let dir = TempDir::new("png-huge-title");
    let title = "word ".repeat(400);
    render_provisioning_png(&figure(&title, staircase(3, 3)), &dir.path("huge.png")).unwrap();
    let svg_path = dir.path("huge.svg");
    render_provisioning_svg(&figure(&title, staircase(3, 3)), &svg_path).unwrap();
    // Three wrapped lines at most, the last one marked as cut.
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert_eq!(svg.matches(" …").count(), 1);
    dir.remove();
}

#[test]
fn svg_keeps_title_and_text() {
    let dir = TempDir::new("svg");
    let path = dir.path("provisioning.svg");
    render_provisioning_svg(&figure("Pelican design space", staircase(6, 10)), &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("<svg"));
    assert!(svg.contains("<text"));
    assert!(svg.contains("Pelican design space"));
    assert!(svg.contains("power provisioned"));
    dir.remove();
}

#[test]
fn empty_points_are_bad_input_and_write_nothing() {
    let dir = TempDir::new("empty");
    let (png, svg) = (dir.path("empty.png"), dir.path("empty.svg"));
    assert_bad_input(render_provisioning_png(&figure("empty", vec![]), &png));
    assert_bad_input(render_provisioning_svg(&figure("empty", vec![]), &svg));
    assert!(!png.exists() && !svg.exists());
    dir.remove();
}

#[test]
fn nan_and_out_of_range_are_bad_input() {
    let dir = TempDir::new("nan");
    let mut points = staircase(2, 3);
    points[4].colour = f64::NAN;
    assert_bad_input(render_provisioning_png(
        &figure("nan", points),
        &dir.path("nan.png"),
    ));
    let mut points = staircase(2, 3);
    points[1].x = 1.5;
    assert_bad_input(render_provisioning_svg(
        &figure("range", points),
        &dir.path("range.svg"),
    ));
    dir.remove();
}

#[test]
fn missing_directory_is_io_error_with_path() {
    let dir = TempDir::new("io");
    let path = dir.path("no-such-dir").join("fig.png");
    match render_provisioning_png(&figure("io", staircase(2, 2)), &path) {
        Err(ReportError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Io, got {other:?}"),
    }
    let path = dir.path("no-such-dir").join("fig.svg");
    match render_provisioning_svg(&figure("io", staircase(2, 2)), &path) {
        Err(ReportError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Io, got {other:?}"),
    }
    dir.remove();
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct SweepRow {
    config: String,
    power_fraction: f64,
    spinning_disks: u32,
    efficient: bool,
    note: Option<String>,
}

#[test]
fn csv_round_trips_with_header() {
    let dir = TempDir::new("csv");
    let path = dir.path("sweep.csv");
    let rows = vec![
        SweepRow {
            config: "pelican".into(),
            power_fraction: 0.125,
            spinning_disks: 144,
            efficient: true,
            note: None,
        },
        SweepRow {
            config: "pelican, relaxed".into(), // a comma, which the writer must quote
            power_fraction: 0.25,
            spinning_disks: 288,
            efficient: false,
            note: Some("cooling bound".into()),
        },
        SweepRow {
            config: "ocp".into(),
            power_fraction: 1.0,
            spinning_disks: 240,
            efficient: true,
            note: None,
        },
    ];
    write_csv(&rows, &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("config,power_fraction,spinning_disks,efficient,note")
    );
    let back: Vec<SweepRow> = csv::Reader::from_path(&path)
        .unwrap()
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, rows);
    dir.remove();
}

#[test]
fn csv_points_round_trip() {
    // The figure's own points are flat, so a sweep can be saved next to its plot.
    let dir = TempDir::new("csv-points");
    let path = dir.path("points.csv");
    let points = staircase(3, 3);
    write_csv(&points, &path).unwrap();
    let back: Vec<ProvisioningPoint> = csv::Reader::from_path(&path)
        .unwrap()
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, points);
    dir.remove();
}

#[derive(Serialize)]
struct Inner {
    a: u32,
}

#[derive(Serialize)]
struct NestedRow {
    name: &'static str,
    inner: Inner,
}

#[test]
fn csv_rejects_nested_rows_and_empty_tables_without_writing() {
    let dir = TempDir::new("csv-bad");
    let nested = dir.path("nested.csv");
    let rows = [NestedRow {
        name: "x",
        inner: Inner { a: 1 },
    }];
    match write_csv(&rows, &nested) {
        Err(ReportError::Csv { path, .. }) => assert_eq!(path, nested),
        other => panic!("expected Csv, got {:?}", other.map(|_| ())),
    }
    assert!(!nested.exists());
    let empty = dir.path("empty.csv");
    assert_bad_input(write_csv::<SweepRow>(&[], &empty));
    assert!(!empty.exists());
    dir.remove();
}

#[test]
fn errors_name_their_file() {
    let path = Path::new("/nonexistent-spinwise-dir/fig.svg");
    let err = render_provisioning_svg(&figure("io", staircase(1, 1)), path).unwrap_err();
    assert!(
        err.to_string()
            .contains("/nonexistent-spinwise-dir/fig.svg"),
        "{err}"
    );
}

#[test]
fn write_table_writes_dynamic_columns_and_refuses_ragged_rows() {
    let dir = std::env::temp_dir().join(format!("spinwise-report-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("table.csv");
    let header = vec!["configuration".to_string(), "budget_power".to_string()];
    spinwise_report::write_table(&header, &[vec!["0".into(), "64.9".into()]], &path).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "configuration,budget_power\n0,64.9\n"
    );
    let ragged = spinwise_report::write_table(&header, &[vec!["0".into()]], &path);
    assert!(matches!(
        ragged,
        Err(spinwise_report::ReportError::BadInput { .. })
    ));
}
