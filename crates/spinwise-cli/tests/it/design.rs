//! `spinwise design`: the worked example designs a 10 PB archive whose optimum exhaustive
//! enumeration confirms, a second run is answered from the simulation memo with the same design,
//! --out writes the tables and the cost-frontier figure, and bad input is refused with a
//! message.

use crate::common;

use common::{TempDir, number, spinwise};

/// One 60-bay enclosure, two disk models, one server, one NIC: a design in a few seconds.
fn small_design() -> String {
    let path = format!(
        "{}/../spinwise-design/data/small-design.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn design(dir: &TempDir, extra: &[&str]) -> serde_json::Value {
    let file = dir.write("design.toml", &small_design());
    let cache = dir.join("cache");
    let (file, cache) = (file.display().to_string(), cache.display().to_string());
    let mut args = vec!["design", &file, "--json", "--cache", &cache];
    args.extend_from_slice(extra);
    spinwise(args).success().json()
}

#[test]
fn the_example_designs_ten_petabytes_with_the_optimum_enumeration_finds_and_a_second_run_simulates_nothing()
 {
    let dir = TempDir::new("design-example");
    let cache = dir.join("cache").display().to_string();
    let args = [
        "design",
        "--example",
        "--no-sensitivity",
        "--check",
        "--json",
        "--cache",
        &cache,
    ];
    let first = spinwise(args).success().json();
    let design = &first["design"];
    assert!(
        number(design, "stored_tb") >= 10_000.0 * (1.0 - 1e-9),
        "{design}"
    );
    assert!(number(design, "verified_read_mb_per_s") >= 1000.0 * (1.0 - 1e-9));
    assert!(number(design, "ttfb_p99_s") <= 300.0, "{design}");
    assert_eq!(first["enumeration_check"]["identical_optimum"], true);
    let timing = &first["timing"];
    assert!(number(timing, "simulations") > 100.0, "{timing}");
    // The memo must give back the very outcomes: any difference in a float read back changes
    // the loads, so the runs asked for, and the second run would simulate again.
    let second = spinwise(args).success().json();
    assert_eq!(
        second["timing"]["remembered"], second["timing"]["simulations"],
        "{}",
        second["timing"]
    );
    assert_eq!(number(&second["design"], "tco"), number(design, "tco"));
}

#[test]
fn print_example_prints_the_example_design_file() {
    let run = spinwise(["design", "--print-example"]).success();
    assert!(run.stdout.contains("[requirements]"));
    assert!(run.stdout.contains("capacity_tb = 10000"));
}

#[test]
fn a_small_design_names_its_blocks_bindings_and_sensitivity() {
    let dir = TempDir::new("design-small");
    let report = design(&dir, &[]);
    let lines = report["design"]["lines"].as_array().unwrap();
    assert!(!lines.is_empty());
    for line in lines {
        assert!(line["block"]["name"].as_str().unwrap().starts_with("jbod+"));
    }
    let bindings = report["bindings"].as_array().unwrap();
    assert!(bindings.iter().any(|b| b["constraint"] == "read rate"));
    let sensitivity = report["sensitivity"].as_array().unwrap();
    // 5 prices + capacity + read rate, each moved down and up.
    assert_eq!(sensitivity.len(), 14, "{sensitivity:?}");
}

#[test]
fn out_writes_tables_and_the_cost_frontier_figure() {
    let dir = TempDir::new("design-out");
    let out = dir.join("out").display().to_string();
    design(&dir, &["--no-sensitivity", "--out", &out]);
    let out = dir.join("out");
    for name in ["design.json", "blocks.csv", "frontier.csv", "frontier.svg"] {
        assert!(out.join(name).is_file(), "{name} missing");
    }
    assert!(
        !out.join("sensitivity.csv").exists(),
        "no rows: --no-sensitivity"
    );
    let png = std::fs::read(out.join("frontier.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let frontier = common::Table::read(&out.join("frontier.csv"));
    assert_eq!(frontier.len(), 5);
    let rates = frontier.numbers("read_mb_per_s");
    assert_eq!(rates, vec![75.0, 150.0, 300.0, 600.0, 1200.0]);
    let blocks = common::Table::read(&out.join("blocks.csv"));
    assert_eq!(blocks.len(), 2, "2 disks × 1 server × 1 NIC");
}

#[test]
fn requirements_no_block_can_meet_are_refused_with_the_reason() {
    let dir = TempDir::new("design-infeasible");
    let file = dir
        .write("design.toml", &small_design())
        .display()
        .to_string();
    spinwise(["design", &file, "--no-cache", "--power-cap-kw", "0.5"])
        .refused()
        .stderr_mentions(&["no design meets the requirements", "relax a requirement"]);
}

#[test]
fn a_bad_design_file_is_refused_naming_the_field() {
    let dir = TempDir::new("design-bad");
    let file = dir
        .write(
            "design.toml",
            &small_design().replace("price = 300.0", "price = -3.0"),
        )
        .display()
        .to_string();
    spinwise(["design", &file, "--no-cache"])
        .refused()
        .stderr_mentions(&["disks.big.price"]);
    let missing = dir
        .write(
            "missing.toml",
            &small_design().replace("rack = \"dense-jbod-60\"", "rack = \"racks/none.toml\""),
        )
        .display()
        .to_string();
    spinwise(["design", &missing, "--no-cache"])
        .refused()
        .stderr_mentions(&["racks/none.toml"]);
}

#[test]
fn a_demand_too_small_for_any_run_to_measure_is_refused_naming_each_candidate() {
    // An at-load run that measures no read used to pass its first-byte target in "0 s".
    let dir = TempDir::new("design-unmeasurable");
    let text = small_design().replacen("read_mb_per_s = 300", "read_mb_per_s = 1e-9", 1);
    assert_ne!(text, small_design());
    let file = dir.write("design.toml", &text).display().to_string();
    spinwise(["design", &file, "--no-cache", "--no-sensitivity"])
        .refused()
        .stderr_mentions(&[
            "no design meets the requirements",
            "2 candidate(s) refused before pricing",
            "jbod+big+server+10g",
            "the at-load run measured no reads",
        ]);
}
