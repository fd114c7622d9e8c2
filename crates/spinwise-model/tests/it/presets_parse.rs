//! Every preset in presets/ parses, and its geometry matches the hand calculation in its header
//! comment: disk count, domains per resource, Flamingo's m_r per domain (eq. 1), the rack-wide M
//! and its bottleneck (eq. 2), and the group size n the planner is expected to choose.
//!
//! The group-size rule checked here is the one the presets' headers were computed with: n is the
//! smallest divisor of M that divides N with n ≥ k + r + f, for the (k, r, f) in the header (the
//! ones spinwise-plan chose when the presets were written), which must meet the bandwidth floor,
//! the overhead ceiling and the spread rule. This file checks the headers' arithmetic without the
//! planner (the model crate cannot depend on it); planner tests can compare its output with the
//! `expected_*` values listed here.

use spinwise_model::{Rack, parse_rack};
use std::path::{Path, PathBuf};

/// One resource's expected shape: name, number of domains, disks per domain, m_r per domain.
struct ResourceShape {
    name: &'static str,
    domains: usize,
    domain_size: usize,
    disks_at_highest_per_domain: Option<u64>,
}

struct PresetExpectation {
    file: &'static str,
    disks: usize,
    resources: &'static [ResourceShape],
    /// (name, number of domains, spread)
    failure_domains: &'static [(&'static str, usize, bool)],
    /// Flamingo's M: disks concurrently in the costliest state, over every hard resource.
    expected_m: u64,
    bottleneck: &'static str,
    /// The erasure parameters and spare count the header expects the planner to choose.
    expected_k_r_f: (u32, u32, u32),
    expected_n: u64,
}

const fn shape(
    name: &'static str,
    domains: usize,
    domain_size: usize,
    m: Option<u64>,
) -> ResourceShape {
    ResourceShape {
        name,
        domains,
        domain_size,
        disks_at_highest_per_domain: m,
    }
}

const PRESETS: &[PresetExpectation] = &[
    PresetExpectation {
        file: "pelican.toml",
        disks: 1152,
        resources: &[
            shape("power", 72, 16, Some(2)),
            shape("cooling", 96, 12, Some(1)),
            shape("vibration", 576, 2, Some(1)),
            shape("pcie", 2, 576, Some(76)),
        ],
        failure_domains: &[
            ("tray", 72, true),
            ("chassis", 6, true),
            ("server", 2, false),
        ],
        expected_m: 96,
        bottleneck: "cooling",
        expected_k_r_f: (15, 3, 2),
        expected_n: 24,
    },
    PresetExpectation {
        file: "pelican-prototype.toml",
        disks: 1152,
        resources: &[
            shape("power", 72, 16, Some(1)),
            shape("cooling", 96, 12, Some(1)),
            shape("vibration", 576, 2, Some(1)),
            shape("pcie", 2, 576, Some(76)),
        ],
        failure_domains: &[
            ("tray", 72, true),
            ("chassis", 6, true),
            ("server", 1, false), // the prototype's one server (Pelican §4)
        ],
        expected_m: 72,
        bottleneck: "power",
        expected_k_r_f: (15, 3, 2),
        expected_n: 24,
    },
    PresetExpectation {
        file: "ocp-cold-storage.toml",
        disks: 240,
        resources: &[
            shape("power", 16, 15, Some(1)),
            shape("cooling", 8, 30, Some(3)),
            shape("vibration", 16, 15, Some(2)),
            shape("sas", 8, 30, Some(28)),
        ],
        failure_domains: &[
            ("tray", 16, true),
            ("chassis", 8, true),
            ("server", 1, false),
        ],
        expected_m: 16,
        bottleneck: "power",
        expected_k_r_f: (5, 2, 1),
        expected_n: 8,
    },
    PresetExpectation {
        file: "dense-jbod-60.toml",
        disks: 60,
        resources: &[
            shape("power", 1, 60, Some(12)),
            shape("vibration", 5, 12, Some(3)),
            shape("cooling", 12, 5, Some(2)),
            shape("sas", 1, 60, Some(24)),
        ],
        failure_domains: &[("row", 5, true), ("enclosure", 1, false)],
        expected_m: 12,
        bottleneck: "power",
        expected_k_r_f: (3, 2, 1),
        expected_n: 6,
    },
    PresetExpectation {
        file: "rack-e-1920.toml",
        disks: 1920,
        resources: &[
            shape("power", 96, 20, Some(2)),
            shape("cooling", 160, 12, Some(1)),
            shape("vibration", 960, 2, Some(1)),
            shape("pcie", 2, 960, Some(42)),
        ],
        failure_domains: &[
            ("tray", 96, true),
            ("chassis", 6, true),
            ("server", 2, false),
        ],
        expected_m: 160,
        bottleneck: "cooling",
        expected_k_r_f: (11, 3, 2),
        expected_n: 16,
    },
    PresetExpectation {
        file: "smr-archive-2400.toml",
        disks: 2400,
        resources: &[
            shape("power_tray", 120, 20, Some(3)),
            shape("power_pdu", 4, 600, Some(36)),
            shape("cooling", 200, 12, Some(1)),
            shape("vibration", 1200, 2, Some(1)),
            shape("pcie", 2, 1200, Some(44)),
        ],
        failure_domains: &[
            ("tray", 120, true),
            ("chassis", 6, true),
            ("pdu", 4, false),
            ("server", 2, false),
        ],
        expected_m: 144,
        bottleneck: "power_pdu",
        expected_k_r_f: (11, 3, 2),
        expected_n: 16,
    },
    PresetExpectation {
        file: "shelf-stack-480.toml",
        disks: 480,
        resources: &[
            shape("power", 8, 60, Some(16)),
            shape("cooling", 96, 5, Some(2)),
            shape("vibration", 40, 12, Some(1)),
            shape("sas", 8, 60, Some(24)),
        ],
        failure_domains: &[("shelf", 8, true), ("server", 1, false)],
        expected_m: 40,
        bottleneck: "vibration",
        expected_k_r_f: (6, 3, 1),
        expected_n: 10,
    },
];

fn presets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets")
}

fn load(file: &str) -> Rack {
    let path = presets_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    parse_rack(file, &text).unwrap_or_else(|error| panic!("{error}"))
}

/// Flamingo eq. 2 over the hard resources: (M, names of the resources attaining it).
fn rack_wide_m(rack: &Rack) -> (u64, Vec<String>) {
    let per_resource: Vec<(u64, &str)> = rack
        .hard_resources()
        .filter_map(|(_, resource)| {
            let m = resource.disks_at_highest_per_domain()?;
            Some((m * resource.domains.len() as u64, resource.name.as_str()))
        })
        .collect();
    let m = per_resource
        .iter()
        .map(|(m, _)| *m)
        .min()
        .expect("every preset has a hard resource");
    let names = per_resource
        .iter()
        .filter(|(value, _)| *value == m)
        .map(|(_, name)| name.to_string())
        .collect();
    (m, names)
}

#[test]
fn every_preset_file_has_an_expectation_and_is_named_after_its_file() {
    let mut files: Vec<String> = std::fs::read_dir(presets_dir())
        .expect("presets/ exists")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    files.sort();
    let mut expected: Vec<String> = PRESETS.iter().map(|p| p.file.to_string()).collect();
    expected.sort();
    assert_eq!(
        files, expected,
        "add an expectation here for every preset in presets/"
    );
    for preset in PRESETS {
        let rack = load(preset.file);
        assert_eq!(format!("{}.toml", rack.name), preset.file);
    }
}

#[test]
fn every_preset_has_the_geometry_of_its_header() {
    for preset in PRESETS {
        let rack = load(preset.file);
        assert_eq!(rack.disk_count(), preset.disks, "{}: disks", preset.file);
        let names: Vec<&str> = rack.resources.iter().map(|r| r.name.as_str()).collect();
        let expected_names: Vec<&str> = preset.resources.iter().map(|r| r.name).collect();
        assert_eq!(names, expected_names, "{}: resources", preset.file);
        for expected in preset.resources {
            let resource = &rack.resources[rack.resource_index(expected.name).unwrap()];
            let context = format!("{}: resource {}", preset.file, expected.name);
            assert_eq!(
                resource.domains.len(),
                expected.domains,
                "{context}: domains"
            );
            assert_eq!(
                resource.domain_size(),
                expected.domain_size,
                "{context}: size"
            );
            assert_eq!(
                resource.domains.len() * resource.domain_size(),
                preset.disks,
                "{context}: the domains partition the disks"
            );
            assert_eq!(
                resource.disks_at_highest_per_domain(),
                expected.disks_at_highest_per_domain,
                "{context}: m_r"
            );
        }
        let failure_domains: Vec<(&str, usize, bool)> = rack
            .failure_domains
            .iter()
            .map(|d| (d.name.as_str(), d.domains.len(), d.spread))
            .collect();
        assert_eq!(
            failure_domains, preset.failure_domains,
            "{}: failure domains",
            preset.file
        );
        assert_eq!(
            rack.spin_up_path().len(),
            3,
            "{}: spin-up path",
            preset.file
        );
    }
}

#[test]
fn every_preset_has_the_bottleneck_and_rack_wide_m_of_its_header() {
    for preset in PRESETS {
        let rack = load(preset.file);
        let (m, bottlenecks) = rack_wide_m(&rack);
        assert_eq!(m, preset.expected_m, "{}: M", preset.file);
        assert_eq!(
            bottlenecks,
            vec![preset.bottleneck.to_string()],
            "{}: a single bottleneck",
            preset.file
        );
    }
}

#[test]
fn every_preset_admits_the_group_size_of_its_header() {
    for preset in PRESETS {
        let rack = load(preset.file);
        let targets = &rack.targets;
        let (k, r, f) = preset.expected_k_r_f;
        let context = format!("{}: (k, r, f) = ({k}, {r}, {f})", preset.file);
        assert!(
            f64::from(k) * rack.disk_model.bandwidth_mb_per_s
                >= targets.file_bandwidth_floor_mb_per_s,
            "{context}: k × bandwidth reaches the floor"
        );
        assert!(
            f64::from(r) / f64::from(k + r) <= targets.capacity_overhead_max,
            "{context}: overhead"
        );
        for domain in rack.failure_domains.iter().filter(|d| d.spread) {
            let per_domain = (k + r).div_ceil(domain.domains.len() as u32);
            assert!(
                per_domain <= r,
                "{context}: one {} failure loses {per_domain} > r fragments",
                domain.name
            );
        }
        let m = preset.expected_m;
        let n_disks = preset.disks as u64;
        let chosen = (1..=m)
            .find(|&n| {
                m.is_multiple_of(n) && n_disks.is_multiple_of(n) && n >= u64::from(k + r + f)
            })
            .unwrap_or_else(|| panic!("{context}: no group size"));
        assert_eq!(chosen, preset.expected_n, "{context}: n");
        assert!(
            m / chosen >= u64::from(targets.io_concurrency_target),
            "{context}: M / n = {} groups below the target {}",
            m / chosen,
            targets.io_concurrency_target
        );
    }
}
