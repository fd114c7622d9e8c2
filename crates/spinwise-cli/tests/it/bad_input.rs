//! What `spinwise` does with input it must refuse: every refusal is exit status 1 with an
//! `error: ` line on stderr that names the file and the place in it (a TOML line, a rack field,
//! a missing path, the known presets, the layout format or version), usage errors are clap's exit
//! status 2, and no input whatsoever makes the binary panic.

use crate::common;

use common::{TempDir, edit, line_of, preset_names, preset_text, small_layout, spinwise};
use std::io::Read;
use std::process::{Command, Stdio};

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON")
}

#[test]
fn a_rack_with_a_toml_error_is_refused_naming_the_file_and_the_line() {
    let dir = TempDir::new("toml-error");
    let text = edit(
        &preset_text("dense-jbod-60"),
        "budget = 338.4 ",
        "budget = = 338.4 ",
    );
    let line = line_of(&text, "budget = = 338.4");
    let rack = dir.write("broken.toml", &text);
    let shown = rack.display().to_string();
    for command in ["plan", "explore"] {
        let out = dir.join("explore-out");
        let mut args = vec![command.into(), rack.clone().into_os_string()];
        if command == "explore" {
            args.extend(["--out".into(), out.into_os_string()]);
        }
        spinwise(args).refused().stderr_mentions(&[
            &shown,
            &format!("line {line} ("),
            "budget = = 338.4",
        ]);
    }
}

#[test]
fn a_rack_with_a_misspelt_key_is_refused_naming_the_line_and_the_key() {
    let dir = TempDir::new("toml-key");
    let text = edit(
        &preset_text("ocp-cold-storage"),
        "\nseek_ms = ",
        "\nseek_msec = ",
    );
    let line = line_of(&text, "seek_msec = ");
    let rack = dir.write("misspelt.toml", &text);
    spinwise(["plan".as_ref(), rack.as_os_str()])
        .refused()
        .stderr_mentions(&[
            &rack.display().to_string(),
            &format!("line {line} ("),
            "seek_msec",
        ]);
}

#[test]
fn a_rack_with_domains_of_unequal_size_is_refused_naming_the_file_and_the_field() {
    let dir = TempDir::new("unequal");
    let ids: Vec<u32> = (0..60).collect();
    let text = edit(
        &preset_text("dense-jbod-60"),
        r#"domains = { by = ["row"] }                         # a row of 12"#,
        &format!(
            "domains = {{ lists = [{:?}, {:?}] }}",
            &ids[..40],
            &ids[40..]
        ),
    );
    let rack = dir.write("unequal.toml", &text);
    spinwise(["plan".as_ref(), rack.as_os_str(), "--json".as_ref()])
        .refused()
        .stderr_mentions(&[
            &rack.display().to_string(),
            "resources[vibration].domains",
            "unequal size",
        ]);
    // verify reads the rack first, so it refuses the same way before looking at any layout.
    spinwise([
        "verify".as_ref(),
        dir.join("no-layout.json").as_os_str(),
        rack.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&["resources[vibration].domains"]);
}

#[test]
fn a_rack_whose_budget_admits_no_disk_is_refused_naming_the_budget() {
    let dir = TempDir::new("budget");
    let text = edit(
        &preset_text("dense-jbod-60"),
        "budget = 338.4 ",
        "budget = 60.0 ",
    );
    let rack = dir.write("starved.toml", &text);
    spinwise(["plan".as_ref(), rack.as_os_str()])
        .refused()
        .stderr_mentions(&[&rack.display().to_string(), "resources[power].budget"]);
}

#[test]
fn a_rack_file_that_is_not_text_or_not_a_file_is_refused_naming_the_path() {
    let dir = TempDir::new("not-text");
    let binary = dir.join("binary.toml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x80]).expect("write");
    spinwise(["plan".as_ref(), binary.as_os_str()])
        .refused()
        .stderr_mentions(&[&binary.display().to_string()]);
    spinwise(["plan".as_ref(), dir.path().as_os_str()])
        .refused()
        .stderr_mentions(&[&dir.path().display().to_string()]);
    let empty = dir.write("empty.toml", "");
    spinwise(["plan".as_ref(), empty.as_os_str()])
        .refused()
        .stderr_mentions(&[&empty.display().to_string()]);
}

#[test]
fn nonexistent_files_are_refused_naming_the_path() {
    let dir = TempDir::new("missing");
    let rack = dir.join("no-such-rack.toml");
    let layout = dir.join("no-such-layout.json");
    let (rack_shown, layout_shown) = (rack.display().to_string(), layout.display().to_string());
    spinwise(["plan".as_ref(), rack.as_os_str()])
        .refused()
        .stderr_mentions(&[&rack_shown]);
    spinwise([
        "explore".as_ref(),
        rack.as_os_str(),
        "--out".as_ref(),
        dir.join("out").as_os_str(),
    ])
    .refused()
    .stderr_mentions(&[&rack_shown]);
    spinwise(["quality".as_ref(), layout.as_os_str()])
        .refused()
        .stderr_mentions(&[&layout_shown]);
    spinwise([
        "verify".as_ref(),
        layout.as_os_str(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
    ])
    .refused()
    .stderr_mentions(&[&layout_shown]);
    spinwise([
        "verify".as_ref(),
        small_layout(&dir).as_os_str(),
        rack.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&[&rack_shown]);
}

#[test]
fn plan_out_into_a_missing_directory_is_refused_naming_the_path() {
    let dir = TempDir::new("out-missing");
    let out = dir.join("no-such-dir").join("layout.json");
    spinwise([
        "plan".as_ref(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
    .refused()
    .stderr_mentions(&[&out.display().to_string()]);
}

#[test]
fn an_unknown_preset_is_refused_listing_every_shipped_preset() {
    let dir = TempDir::new("unknown-preset");
    let out = dir.join("explore-out");
    for command in [
        vec!["plan".into(), "--preset".into(), "no-such-rack".into()],
        vec![
            "explore".into(),
            "--preset".into(),
            "no-such-rack".into(),
            "--out".into(),
            out.clone().into_os_string(),
        ],
    ] {
        let run = spinwise(&command)
            .refused()
            .stderr_mentions(&["no-such-rack"]);
        for name in preset_names() {
            assert!(
                run.stderr.contains(&name),
                "`{}` must list preset `{name}`: {}",
                run.args.join(" "),
                run.stderr
            );
        }
    }
    assert!(
        !out.exists(),
        "a refused explore creates no output directory"
    );
}

#[test]
fn preset_and_rack_file_together_are_a_usage_error() {
    let dir = TempDir::new("conflict");
    let rack = dir.write("ocp.toml", &preset_text("ocp-cold-storage"));
    spinwise([
        "plan".as_ref(),
        "--preset".as_ref(),
        "pelican".as_ref(),
        rack.as_os_str(),
    ])
    .usage_error();
    spinwise(["plan", "--layout", "hand-made"]).usage_error();
    spinwise(["frobnicate"]).usage_error();
    spinwise::<[&str; 0], &str>([]).usage_error();
}

#[test]
fn quality_refuses_json_that_is_not_a_layout() {
    let dir = TempDir::new("not-layout");
    let other = dir.write("other.json", r#"{"hello": 1}"#);
    spinwise(["quality".as_ref(), other.as_os_str()])
        .refused()
        .stderr_mentions(&[&other.display().to_string(), "spinwise-layout"]);
    let text = dir.write("text.json", "this is not JSON\n");
    spinwise(["quality".as_ref(), text.as_os_str()])
        .refused()
        .stderr_mentions(&[&text.display().to_string(), "not a layout file"]);
    let summary = dir.write(
        "summary.json",
        &spinwise(["plan", "--preset", "dense-jbod-60", "--json"])
            .success()
            .stdout,
    );
    spinwise(["quality".as_ref(), summary.as_os_str()])
        .refused()
        .stderr_mentions(&[&summary.display().to_string(), "spinwise-layout"]);
}

#[test]
fn quality_and_verify_refuse_a_layout_of_a_future_version() {
    let dir = TempDir::new("future");
    let layout = small_layout(&dir);
    let mut value = read_json(&layout);
    value["version"] = serde_json::json!(2);
    let future = dir.write("future.json", &value.to_string());
    spinwise(["quality".as_ref(), future.as_os_str()])
        .refused()
        .stderr_mentions(&[&future.display().to_string(), "version 2", "not supported"]);
    spinwise([
        "verify".as_ref(),
        future.as_os_str(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
    ])
    .refused()
    .stderr_mentions(&["version 2"]);
}

#[test]
fn quality_refuses_a_structurally_broken_layout() {
    let dir = TempDir::new("broken-layout");
    let mut value = read_json(&small_layout(&dir));
    value["groups"] = serde_json::json!([]);
    let broken = dir.write("no-groups.json", &value.to_string());
    spinwise(["quality".as_ref(), broken.as_os_str()])
        .refused()
        .stderr_mentions(&[&broken.display().to_string()]);
}

#[test]
fn quality_trials_out_of_range_are_refused() {
    let dir = TempDir::new("trials");
    let layout = small_layout(&dir);
    for trials in ["0", "100000001"] {
        spinwise([
            "quality".as_ref(),
            layout.as_os_str(),
            "--trials".as_ref(),
            trials.as_ref(),
        ])
        .refused()
        .stderr_mentions(&["--trials"]);
    }
    for trials in ["-1", "many"] {
        spinwise([
            "quality".as_ref(),
            layout.as_os_str(),
            "--trials".as_ref(),
            trials.as_ref(),
        ])
        .usage_error();
    }
}

/// A layout whose hard constraint costs and budget are each within the accepted range of a
/// quantity of a rack file (10¹²) is refused, not summed into an overflow.
#[test]
fn quality_refuses_a_layout_whose_constraint_sums_overflow_instead_of_panicking() {
    let dir = TempDir::new("overflow-layout");
    let mut value = read_json(&small_layout(&dir));
    let constraint = &mut value["group_constraints"][0];
    assert_eq!(constraint["kind"], serde_json::json!("hard"));
    constraint["budget"] = serde_json::json!(1e12);
    constraint["cost"] = serde_json::json!([1e12, 1e12, 1e12]);
    let edited = dir.write("huge.json", &value.to_string());
    let run = spinwise(["quality".as_ref(), edited.as_os_str()]);
    assert!(
        matches!(run.code, Some(0 | 1)),
        "measured or refused, not crashed: {run:?}"
    );
    if run.code == Some(1) {
        run.refused()
            .stderr_mentions(&[&edited.display().to_string()]);
    }
}

/// A valid rack (every quantity at the accepted maximum of 10⁶) whose power budget has no upper bound:
/// relaxing it towards full provisioning passes the largest representable amount.
#[test]
fn explore_of_a_rack_with_huge_unbounded_budgets_does_not_panic() {
    let dir = TempDir::new("overflow-rack");
    let text = edit(
        &preset_text("dense-jbod-60"),
        "cost = { standby = 0.8, spinning_up = 25.0, active = 7.0 }",
        "cost = { standby = 0, spinning_up = 1000000.0, active = 1000000.0 }",
    );
    let text = edit(&text, "budget = 338.4 ", "budget = 1000000.0 ");
    let text = edit(&text, "upper_bound = 1500.0 ", "");
    let rack = dir.write("huge.toml", &text);
    // The rack itself is accepted: plan gets as far as the group-size search.
    spinwise(["plan".as_ref(), rack.as_os_str()])
        .refused()
        .stderr_mentions(&["no group size"]);
    let run = spinwise([
        "explore".as_ref(),
        rack.as_os_str(),
        "--out".as_ref(),
        dir.join("out").as_os_str(),
        "--max-configurations".as_ref(),
        "30".as_ref(),
    ]);
    assert!(
        matches!(run.code, Some(0 | 1)),
        "explored or refused, not crashed: {run:?}"
    );
}

/// `spinwise plan | head -1`: the reader goes away before the summary is printed.
#[test]
fn a_closed_stdout_does_not_make_the_command_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["plan", "--preset", "pelican"])
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the spinwise binary runs");
    // Close the only reader of stdout while the rack is still being planned.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("stderr is UTF-8");
    let status = child.wait().expect("spinwise exits");
    assert!(!stderr.contains("panicked"), "panicked:\n{stderr}");
    assert_ne!(status.code(), Some(101), "panic exit status:\n{stderr}");
}
