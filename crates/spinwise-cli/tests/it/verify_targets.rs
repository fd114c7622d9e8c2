//! Issue 29, defect 1, through the real binary: `spinwise verify` refuses a pelican layout edited
//! to break a rack target or a derived claim (exit 1, every violation on its own line with the
//! numbers, `--json` with `found` and `required`), and `spinwise quality` verifies the layout
//! before measuring it, so an inflated bound no longer reads as a quality of 0.083; `sim`,
//! `store init` and `serve` verify a `--layout` file before running anything on it.

use crate::common;

use common::{TempDir, spinwise};
use std::path::PathBuf;

/// The pelican preset's planned layout written into `dir`, edited by `edit` on its JSON.
fn pelican_layout_edited(dir: &TempDir, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let planned = dir.join("pelican.json");
    spinwise([
        "plan".as_ref(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        "--out".as_ref(),
        planned.as_os_str(),
    ])
    .success();
    let text = std::fs::read_to_string(&planned).expect("the planned layout");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    edit(&mut value);
    dir.write("edited.json", &value.to_string())
}

#[test]
fn verify_refuses_a_pelican_layout_edited_to_k_14_naming_both_bandwidths() {
    let dir = TempDir::new("verify-k14");
    let layout = pelican_layout_edited(&dir, |v| v["erasure"]["k"] = 14.into());
    spinwise([
        "verify".as_ref(),
        layout.as_os_str(),
        "--preset".as_ref(),
        "pelican".as_ref(),
    ])
    .refused()
    .stderr_mentions(&["bandwidth floor", "1470 MB/s", "1500 MB/s", "k ≥ 15"]);
}

#[test]
fn verify_reports_every_violation_of_an_edited_layout_with_its_numbers() {
    let dir = TempDir::new("verify-all");
    let layout = pelican_layout_edited(&dir, |v| {
        v["erasure"]["k"] = 12.into();
        v["erasure"]["r"] = 6.into();
        v["erasure"]["f"] = 0.into();
        v["max_active_groups_bound"] = 48.into();
    });
    spinwise([
        "verify".as_ref(),
        layout.as_os_str(),
        "--preset".as_ref(),
        "pelican".as_ref(),
    ])
    .refused()
    .stderr_mentions(&[
        "4 violation(s)",
        "bandwidth floor: k = 12",
        "capacity overhead: (k, r) = (12, 6)",
        "33.3%",
        "spares: f = 0",
        "max_active_groups_bound: max_active_groups_bound = 48",
        "at most 4 groups",
    ]);
}

#[test]
fn verify_json_lists_each_violation_with_the_number_found_and_required() {
    let dir = TempDir::new("verify-json");
    let layout = pelican_layout_edited(&dir, |v| v["erasure"]["r"] = 4.into());
    let run = spinwise([
        "verify".as_ref(),
        layout.as_os_str(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON object");
    assert_eq!(value["verified"], false);
    let violations = value["violations"].as_array().expect("violations");
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert_eq!(violations[0]["check"], "capacity overhead");
    assert!((violations[0]["found"].as_f64().unwrap() - 4.0 / 19.0).abs() < 1e-12);
    assert_eq!(violations[0]["required"]["relation"], "at_most");
    assert_eq!(violations[0]["required"]["value"], 0.2);
}

#[test]
fn quality_refuses_a_layout_with_an_inflated_bound_instead_of_reporting_0_083() {
    let dir = TempDir::new("quality-inflated");
    let layout = pelican_layout_edited(&dir, |v| v["max_active_groups_bound"] = 48.into());
    let run = spinwise([
        "quality".as_ref(),
        layout.as_os_str(),
        "--trials".as_ref(),
        "100".as_ref(),
    ])
    .refused()
    .stderr_mentions(&[
        "max_active_groups_bound = 48",
        &layout.display().to_string(),
    ]);
    assert!(!run.stdout.contains("0.083"), "{run:?}");
}

#[test]
fn quality_finds_the_preset_of_a_planned_layout_and_measures_it() {
    let dir = TempDir::new("quality-clean");
    let layout = pelican_layout_edited(&dir, |_| {});
    let run = spinwise([
        "quality".as_ref(),
        layout.as_os_str(),
        "--trials".as_ref(),
        "100".as_ref(),
        "--json".as_ref(),
    ])
    .success();
    assert_eq!(run.json()["low_load"], 1.0);
    spinwise([
        "quality".as_ref(),
        layout.as_os_str(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        "--trials".as_ref(),
        "100".as_ref(),
    ])
    .success();
}

#[test]
fn quality_asks_for_the_rack_of_a_layout_planned_for_no_shipped_preset() {
    let dir = TempDir::new("quality-custom");
    let rack_text = common::edit(
        &common::preset_text("dense-jbod-60"),
        "name = \"dense-jbod-60\"",
        "name = \"my-jbod\"",
    );
    let rack = dir.write("my-jbod.toml", &rack_text);
    let layout = dir.join("my-jbod.json");
    spinwise([
        "plan".as_ref(),
        rack.as_os_str(),
        "--out".as_ref(),
        layout.as_os_str(),
    ])
    .success();
    spinwise(["quality".as_ref(), layout.as_os_str()])
        .refused()
        .stderr_mentions(&["my-jbod", "not a shipped preset", "RACK.toml"]);
    spinwise([
        "quality".as_ref(),
        layout.as_os_str(),
        rack.as_os_str(),
        "--trials".as_ref(),
        "100".as_ref(),
    ])
    .success();
}

/// A layout whose claimed active-group bound was inflated past what the rack's budgets allow.
fn inflated(dir: &TempDir) -> PathBuf {
    pelican_layout_edited(dir, |v| v["max_active_groups_bound"] = 48.into())
}

#[test]
fn sim_refuses_a_layout_file_that_fails_verification() {
    let dir = TempDir::new("sim-unverified");
    let layout = inflated(&dir);
    spinwise([
        "sim".as_ref(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        "--layout".as_ref(),
        layout.as_os_str(),
        "--rate".as_ref(),
        "1".as_ref(),
    ])
    .refused()
    .stderr_mentions(&["1 violation(s)", "max_active_groups_bound"]);
}

#[test]
fn store_init_refuses_a_layout_file_that_fails_verification_and_creates_nothing() {
    let dir = TempDir::new("init-unverified");
    let layout = inflated(&dir);
    let data = dir.join("data");
    spinwise([
        "store".as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
        "init".as_ref(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        "--layout".as_ref(),
        layout.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&["1 violation(s)", "max_active_groups_bound"]);
    assert!(
        !data.join("catalog.sqlite").exists(),
        "a refused layout must not leave a store behind"
    );
}
