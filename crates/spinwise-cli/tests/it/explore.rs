//! `spinwise explore`: the design-space walk writes configurations.csv, summary.json and the
//! provisioning figure as PNG and SVG into --out; the CSV, the summary and stdout agree; the
//! figure's axes must be hard resources; --max-configurations truncates.

use crate::common;

use common::{TempDir, integer, number, spinwise};
use serde_json::json;
use std::path::Path;

/// Runs `spinwise explore --preset {preset} --out {out} --json {extra…}` and returns the summary
/// printed on stdout.
fn explore(preset: &str, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<std::ffi::OsString> = vec![
        "explore".into(),
        "--preset".into(),
        preset.into(),
        "--out".into(),
        out.as_os_str().to_owned(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(Into::into));
    let run = spinwise(&args).success();
    run.json()
}

/// A CSV without quoted fields split into rows of cells (the explore table quotes only error
/// reasons, which contain no newlines; those rows are split with a quote-aware splitter).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| {
            let mut cells = Vec::new();
            let (mut cell, mut quoted, mut chars) = (String::new(), false, line.chars().peekable());
            while let Some(c) = chars.next() {
                match c {
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        cell.push('"');
                        chars.next();
                    }
                    '"' => quoted = !quoted,
                    ',' if !quoted => cells.push(std::mem::take(&mut cell)),
                    c => cell.push(c),
                }
            }
            cells.push(cell);
            cells
        })
        .collect()
}

#[test]
fn explore_dense_jbod_writes_csv_summary_and_figures_that_agree() {
    let dir = TempDir::new("explore-dense");
    let out = dir.join("out");
    let printed = explore("dense-jbod-60", &out, &[]);

    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("summary.json written"),
    )
    .expect("summary.json is JSON");
    for key in [
        "rack",
        "disks",
        "configurations",
        "efficient",
        "inefficient",
        "no_solution",
        "truncated",
    ] {
        assert_eq!(printed[key], written[key], "stdout and summary.json: {key}");
    }
    assert_eq!(written["rack"], json!("dense-jbod-60"));
    assert_eq!(written["disks"], json!(60));
    assert_eq!(written["truncated"], json!(false));
    assert!(number(&written, "elapsed_ms") > 0.0);
    let configurations = integer(&written, "configurations");
    assert!(
        configurations > 1,
        "relaxing the bottleneck yields configurations"
    );
    assert_eq!(
        integer(&written, "efficient")
            + integer(&written, "inefficient")
            + integer(&written, "no_solution"),
        configurations
    );
    assert!(integer(&written, "efficient") > 0);

    let csv = std::fs::read_to_string(out.join("configurations.csv")).expect("CSV written");
    let rows = csv_rows(&csv);
    let header = &rows[0];
    for column in [
        "configuration",
        "max_disks_at_highest",
        "bottleneck",
        "status",
        "n",
        "k",
        "r",
        "f",
    ] {
        assert!(
            header.iter().any(|h| h == column),
            "CSV header must have `{column}`: {header:?}"
        );
    }
    let body = &rows[1..];
    assert_eq!(
        body.len() as u64,
        configurations,
        "one row per configuration"
    );
    assert!(
        body.iter().all(|row| row.len() == header.len()),
        "every row has one cell per column"
    );
    let column = |name: &str| header.iter().position(|h| h == name).expect("column");
    let (status, n, index) = (column("status"), column("n"), column("configuration"));
    for (i, row) in body.iter().enumerate() {
        assert_eq!(
            row[index],
            i.to_string(),
            "configurations numbered in order"
        );
    }
    for (name, key) in [
        ("efficient", "efficient"),
        ("inefficient", "inefficient"),
        ("no_solution", "no_solution"),
    ] {
        let count = body.iter().filter(|row| row[status] == name).count() as u64;
        assert_eq!(count, integer(&written, key), "CSV status `{name}` count");
    }
    // The starting configuration is the preset itself: power-bound, groups of 6 (see the preset).
    assert_eq!(body[0][column("bottleneck")], "power");
    assert_eq!(body[0][column("max_disks_at_highest")], "12");
    assert_eq!(body[0][status], "efficient");
    assert_eq!(body[0][n], "6");
    // A configuration without a solution has no group size.
    for row in body.iter().filter(|row| row[status] == "no_solution") {
        assert!(row[n].is_empty(), "no n without a solution: {row:?}");
    }
    // Each planned row says whether its high-load figure is exact; when it is, the proven
    // bound equals the figure, and it is never below it.
    let (spinning, bound, exact) = (
        column("max_spinning_groups"),
        column("high_load_bound"),
        column("high_load_exact"),
    );
    for row in body.iter().filter(|row| row[status] != "no_solution") {
        let (figure, proven): (u32, u32) = (
            row[spinning].parse().expect("max_spinning_groups"),
            row[bound].parse().expect("high_load_bound"),
        );
        assert!(proven >= figure, "bound below the figure: {row:?}");
        assert_eq!(row[exact] == "true", proven == figure, "{row:?}");
    }
    assert_eq!(
        body[0][exact], "true",
        "dense-jbod-60 is searched exhaustively"
    );

    let png = std::fs::read(out.join("provisioning.png")).expect("PNG written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "provisioning.png has the PNG signature"
    );
    let svg = std::fs::read_to_string(out.join("provisioning.svg")).expect("SVG written");
    assert!(svg.contains("<svg"), "provisioning.svg is an SVG document");
}

#[test]
fn explore_figure_must_name_hard_resources() {
    let dir = TempDir::new("explore-figure");
    let out = dir.join("out");
    let run = spinwise([
        "explore".as_ref(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--figure".as_ref(),
        "power".as_ref(),
        "cooling".as_ref(),
        "humidity".as_ref(),
    ])
    .refused()
    .stderr_mentions(&["humidity", "power", "vibration", "cooling"]);
    // `sas` is a soft resource of the preset: it is not offered as an axis.
    assert!(!run.stderr.contains("sas"), "{}", run.stderr);
    spinwise([
        "explore".as_ref(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--figure".as_ref(),
        "power".as_ref(),
        "cooling".as_ref(),
        "sas".as_ref(),
    ])
    .refused()
    .stderr_mentions(&["sas", "hard resources"]);
    // A rack with no hard resource at all: said so, without blaming a --figure never given.
    let preset = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets/dense-jbod-60.toml"),
    )
    .unwrap();
    let soft = preset.replace("kind = \"hard\"", "kind = \"soft\"");
    assert_ne!(soft, preset);
    let rack = out.with_extension("soft.toml");
    std::fs::write(&rack, soft).unwrap();
    let run = spinwise([
        "explore".as_ref(),
        rack.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&["has no hard resource", "nothing to explore"]);
    assert!(!run.stderr.contains("--figure"), "{}", run.stderr);
}

#[test]
fn explore_figure_with_chosen_hard_resources_is_recorded_in_the_summary() {
    let dir = TempDir::new("explore-figure-ok");
    let out = dir.join("out");
    let summary = explore(
        "dense-jbod-60",
        &out,
        &["--figure", "cooling", "power", "vibration"],
    );
    assert_eq!(
        summary["figure"],
        json!({ "x": "cooling", "y": "power", "colour": "vibration" })
    );
    assert!(out.join("provisioning.png").is_file());
}

#[test]
fn explore_with_max_configurations_is_truncated() {
    let dir = TempDir::new("explore-truncated");
    let out = dir.join("out");
    let summary = explore("ocp-cold-storage", &out, &["--max-configurations", "20"]);
    assert_eq!(summary["truncated"], json!(true));
    assert_eq!(summary["configurations"], json!(20));
    let csv = std::fs::read_to_string(out.join("configurations.csv")).expect("CSV written");
    assert_eq!(csv_rows(&csv).len(), 21, "header and 20 rows");
}

#[test]
fn explore_is_deterministic_whatever_the_thread_count() {
    let dir = TempDir::new("explore-jobs");
    let (one, two) = (dir.join("one"), dir.join("two"));
    explore("dense-jbod-60", &one, &["--jobs", "1"]);
    explore("dense-jbod-60", &two, &["--jobs", "2"]);
    // plan_ms (timing) is the only column allowed to differ.
    let strip_timing = |path: &Path| {
        let rows = csv_rows(&std::fs::read_to_string(path.join("configurations.csv")).unwrap());
        let timing = rows[0]
            .iter()
            .position(|h| h == "plan_ms")
            .expect("plan_ms");
        rows.into_iter()
            .map(|mut row| {
                row.remove(timing);
                row
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip_timing(&one), strip_timing(&two));
}

#[test]
fn explore_into_a_path_that_is_a_file_is_refused_naming_it() {
    let dir = TempDir::new("explore-file");
    let file = dir.write("occupied", "not a directory");
    spinwise([
        "explore".as_ref(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
        "--out".as_ref(),
        file.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&[&file.display().to_string()]);
}

#[test]
fn explore_without_out_is_a_usage_error() {
    spinwise(["explore", "--preset", "dense-jbod-60"]).usage_error();
}
