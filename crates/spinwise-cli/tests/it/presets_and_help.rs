//! `spinwise presets` lists exactly the files of presets/ with their disk counts, every preset
//! is usable by name, and each subcommand's --help documents its options.

use crate::common;

use common::{preset_names, preset_text, spinwise};

/// Disk count of a rack description, read from its text alone: the product of the axis sizes
/// for `grid = true`, else the number of entries of `disks.list`.
fn disks_in(text: &str) -> u64 {
    let lines: Vec<&str> = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .collect();
    if lines.contains(&"grid = true") {
        let mut product = 1;
        let mut in_axes = false;
        for line in &lines {
            if line.starts_with('[') {
                in_axes = *line == "[[axes]]";
            } else if in_axes && let Some(size) = line.strip_prefix("size = ") {
                product *= size.parse::<u64>().expect("an axis size");
            }
        }
        product
    } else {
        text.matches("{ id =").count() as u64
    }
}

#[test]
fn presets_json_lists_every_file_in_presets_with_its_disk_count() {
    let listed = spinwise(["presets", "--json"]).success().json();
    let listed = listed.as_array().expect("a JSON array of presets");
    let files = preset_names();
    assert!(!files.is_empty());
    let mut names: Vec<&str> = listed
        .iter()
        .map(|p| p["name"].as_str().expect("a preset name"))
        .collect();
    names.sort_unstable();
    assert_eq!(names, files, "one entry per presets/*.toml, no more");
    for preset in listed {
        let name = preset["name"].as_str().expect("name");
        assert_eq!(
            preset["disks"].as_u64(),
            Some(disks_in(&preset_text(name))),
            "{name}: disk count"
        );
        assert!(
            preset["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{name}: a description"
        );
    }
    // The known presets are where they should be.
    let disks = |name: &str| {
        listed
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["disks"].as_u64())
    };
    assert_eq!(disks("pelican"), Some(1152));
    assert_eq!(disks("dense-jbod-60"), Some(60));
    assert_eq!(disks("ocp-cold-storage"), Some(240));
}

#[test]
fn presets_table_has_one_line_per_preset_with_its_disk_count() {
    let table = spinwise(["presets"]).success().stdout;
    let files = preset_names();
    assert_eq!(table.lines().count(), files.len(), "{table}");
    for name in files {
        let disks = disks_in(&preset_text(&name));
        assert!(
            table.lines().any(|line| {
                let mut words = line.split_whitespace();
                words.next() == Some(name.as_str())
                    && words.next() == Some(disks.to_string().as_str())
                    && words.next() == Some("disks")
            }),
            "`{name} {disks} disks` in:\n{table}"
        );
    }
}

#[test]
fn every_preset_loads_by_name() {
    // `verify` loads the rack before reading the layout, so a missing layout file is reported
    // only once the preset has been parsed: a quick check that every embedded preset parses.
    let missing = std::env::temp_dir().join("spinwise-cli-test-no-such-layout.json");
    for name in preset_names() {
        spinwise([
            "verify".as_ref(),
            missing.as_os_str(),
            "--preset".as_ref(),
            name.as_ref(),
        ])
        .refused()
        .stderr_mentions(&["spinwise-cli-test-no-such-layout.json", "No such file"]);
    }
}

#[test]
fn top_level_help_lists_every_subcommand() {
    let help = spinwise(["--help"]).success().stdout;
    for command in ["plan", "quality", "explore", "verify", "presets"] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(command)),
            "`{command}` in:\n{help}"
        );
    }
    let version = spinwise(["--version"]).success().stdout;
    assert!(version.starts_with("spinwise "), "{version}");
}

#[test]
fn each_subcommand_help_mentions_its_key_options() {
    let expectations: [(&str, &[&str]); 5] = [
        (
            "plan",
            &[
                "--preset",
                "--out",
                "--json",
                "--layout",
                "pelican-manual",
                "RACK.toml",
            ],
        ),
        ("quality", &["--trials", "--seed", "--json", "LAYOUT.json"]),
        (
            "explore",
            &[
                "--preset",
                "--out",
                "--max-configurations",
                "--jobs",
                "--figure",
                "--json",
            ],
        ),
        (
            "verify",
            &["--preset", "--json", "LAYOUT.json", "RACK.toml"],
        ),
        ("presets", &["--json"]),
    ];
    for (command, options) in expectations {
        for help in [
            spinwise([command, "--help"]).success().stdout,
            spinwise(["help", command]).success().stdout,
        ] {
            assert!(help.contains("Usage: spinwise"), "{help}");
            for option in options {
                assert!(
                    help.contains(option),
                    "`spinwise {command} --help` must mention `{option}`:\n{help}"
                );
            }
        }
    }
}
