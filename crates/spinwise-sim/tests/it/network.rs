//! Scenario tests of the flow-level network on the Pelican rack: the NICs (one per server, the
//! configured total split between them) and the PCIe roots bound throughput, and a read alone
//! runs at its disks' pace. The max-min computation itself is tested against a textbook
//! progressive filling in `src/network.rs`.

use spinwise_model::{Layout, Rack, parse_rack};
use spinwise_sim::{PolicyKind, Report, SimConfig, simulate};
use std::sync::OnceLock;

fn pelican() -> &'static (Rack, Layout) {
    static PELICAN: OnceLock<(Rack, Layout)> = OnceLock::new();
    PELICAN.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/pelican.toml");
        let rack = parse_rack(path, &std::fs::read_to_string(path).unwrap()).unwrap();
        let layout = spinwise_plan::plan(&rack).unwrap().layout;
        (rack, layout)
    })
}

fn run(policy: PolicyKind, rate_per_s: f64, network_gbps: Option<f64>) -> Report {
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps,
        policy,
        ..SimConfig::new(rate_per_s, 2.0, 0.5, 21)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert_eq!(report.budget_violations, 0, "{report:?}");
    report
}

#[test]
fn fully_provisioned_pelican_at_40_gbps_fills_its_two_20_gbps_nics_and_never_exceeds_them() {
    // 8 req/s of 1 GB offer 64 Gbps; 48 groups each reading at 12.6 Gbps could move far more.
    let report = run(PolicyKind::FullyProvisioned, 8.0, Some(40.0));
    assert!(report.throughput_gbps <= 40.0, "{report:?}");
    assert!(report.throughput_gbps > 39.0, "{report:?}");
}

#[test]
fn a_single_8_5_gbps_network_split_over_pelicans_two_servers_caps_throughput() {
    let report = run(PolicyKind::FullyProvisioned, 2.0, Some(8.5));
    assert!(report.throughput_gbps <= 8.5, "{report:?}");
    assert!(report.throughput_gbps > 8.0, "{report:?}");
}

#[test]
fn with_an_unbounded_network_fully_provisioned_reads_are_held_only_by_disks_and_pcie_roots() {
    // 16 req/s offer 128 Gbps: exactly the two 64 Gbps PCIe roots, so the roots bind.
    let report = run(PolicyKind::FullyProvisioned, 16.0, None);
    assert!(report.throughput_gbps > 40.0, "{report:?}");
    assert!(report.throughput_gbps <= 128.0, "{report:?}");
    // Below the roots' capacity, every read runs at its disks' pace: 1 GB / (15 × 105 MB/s).
    let report = run(PolicyKind::FullyProvisioned, 2.0, None);
    let floor_s = 0.0042 + 1e9 / (15.0 * 105e6);
    assert!(
        (report.service_time_s.mean - floor_s).abs() < 0.001,
        "{report:?}"
    );
}

#[test]
fn fully_provisioned_service_time_at_low_load_behind_40_gbps_is_the_disk_floor() {
    // Pelican §4.2: ~0.65 s for 1 GB over 15 disks at 105 MB/s; service starts with a seek.
    let report = run(PolicyKind::FullyProvisioned, 0.1, Some(40.0));
    let floor_s = 0.0042 + 1e9 / (15.0 * 105e6);
    assert!(
        (report.service_time_s.mean - floor_s).abs() < 0.02,
        "{report:?}"
    );
    assert!(
        (report.service_time_s.p50 - floor_s).abs() < 0.001,
        "{report:?}"
    );
}

#[test]
fn pelican_at_40_gbps_never_exceeds_its_nics_even_at_twice_the_rate_they_carry() {
    let report = run(PolicyKind::Pelican, 10.0, Some(40.0));
    assert!(report.throughput_gbps <= 40.0, "{report:?}");
    assert!(report.throughput_gbps > 20.0, "{report:?}");
}
