//! Scenario tests of the simulator on planned presets: determinism (seed → trace hash), the
//! independent budget checker on three racks, the low-load latency and throughput the model
//! predicts in closed form, a saturated 40 Gbps link, the random layout far below it (and its
//! placement sets domain-disjoint), and typed refusals of bad configurations.
//! Every scenario names its seed; a failure prints the report to reproduce from.

use spinwise_model::{Layout, Rack, parse_rack};
use spinwise_sim::{MAX_REQUESTS, PolicyKind, SimConfig, SimError, simulate};
use std::sync::OnceLock;

fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

/// Pelican, the OCP half rack and the 60-bay JBOD, planned once per test binary.
fn planned() -> &'static [(Rack, Layout)] {
    static PLANNED: OnceLock<Vec<(Rack, Layout)>> = OnceLock::new();
    PLANNED.get_or_init(|| {
        ["pelican", "ocp-cold-storage", "dense-jbod-60"]
            .map(preset)
            .to_vec()
    })
}

fn pelican() -> &'static (Rack, Layout) {
    &planned()[0]
}

#[test]
fn the_same_seed_gives_the_same_trace_and_report_and_another_seed_does_not() {
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(3.0, 3.0, 0.5, 11)
    };
    let first = simulate(rack, layout, &config).unwrap();
    let second = simulate(rack, layout, &config).unwrap();
    assert_eq!(first, second);
    assert_eq!(
        serde_json::to_string(&first).unwrap(),
        serde_json::to_string(&second).unwrap()
    );
    let other = simulate(rack, layout, &SimConfig { seed: 12, ..config }).unwrap();
    assert_ne!(first.trace_hash, other.trace_hash);
    assert!(first.events > 10_000, "{first:?}");
}

#[test]
fn no_hard_budget_is_exceeded_on_pelican_ocp_and_the_dense_jbod_at_low_and_high_rates() {
    for (rack, layout) in planned() {
        let classes = layout.classes.as_ref().map_or(layout.groups.len(), |c| {
            *c.iter().max().unwrap() as usize + 1
        });
        let power = rack.resources.iter().find(|r| r.name == "power").unwrap();
        let power_budget_w = power.budget.as_f64() * power.domains.len() as f64;
        for (seed, rate_per_s) in [(1, 0.05), (2, 1.0), (3, 8.0)] {
            let config = SimConfig {
                network_gbps: Some(40.0),
                ..SimConfig::new(rate_per_s, 2.0, 0.25, seed)
            };
            let report = simulate(rack, layout, &config).unwrap();
            let context = format!(
                "{} at {rate_per_s} req/s, seed {seed}: {report:?}",
                rack.name
            );
            assert_eq!(report.budget_violations, 0, "{context}");
            assert_eq!(
                report.completed + report.rejected,
                report.requests,
                "{context}"
            );
            // One non-resting group per class (the scheduler's invariant), seen disk by disk.
            assert!(report.max_active_disks as usize <= classes * layout.group_size as usize);
            assert!(report.max_active_disks > 0, "{context}");
            assert!(report.power_w.peak <= power_budget_w, "{context}");
            assert!(report.power_w.mean > 0.0 && report.power_w.mean <= report.power_w.peak);
        }
    }
}

#[test]
fn at_a_very_low_rate_time_to_first_byte_is_a_spin_up_plus_mount_plus_seek() {
    let (rack, layout) = pelican();
    // One request per 100 s over 48 groups: a request almost never waits behind another one's
    // spin-up, and finds its group already spinning only 1 time in 12 (one group per class of 12
    // stays active), when it waits for a seek alone; otherwise its class first unmounts the old
    // group (~1.25 s). The two nearly cancel.
    let config = SimConfig::new(0.01, 24.0, 1.0, 5);
    let report = simulate(rack, layout, &config).unwrap();
    let seek_s = rack.disk_model.seek_ms / 1e3;
    let expected_s = report.spin_up_s.mean + seek_s;
    let ttfb_s = report.time_to_first_byte_s.mean;
    assert_eq!(report.rejected, 0, "{report:?}");
    assert!(
        (ttfb_s - expected_s).abs() <= 0.2 * expected_s,
        "ttfb {ttfb_s} s against spin-up + mount + seek {expected_s} s: {report:?}"
    );
    // The group's spin-up is the slowest of 24 disks' (spin-up + mount): above the means (10 s +
    // 2.5 s), below the maxima (14 s + 4 s).
    assert!((12.5..18.0).contains(&report.spin_up_s.mean), "{report:?}");
    // Unbounded network, flows alone: seek + blob at k × disk bandwidth (15 × 105 MB/s).
    let transfer_s = config.blob_bytes as f64 / (f64::from(layout.erasure.k) * 105e6);
    assert!((report.service_time_s.mean - (seek_s + transfer_s)).abs() < 1e-3);
    let offered_gbps = config.rate_per_s * config.blob_bytes as f64 * 8.0 / 1e9;
    assert!(
        (report.throughput_gbps - offered_gbps).abs() <= 0.1 * offered_gbps,
        "throughput {} Gbps against offered {offered_gbps} Gbps",
        report.throughput_gbps
    );
}

#[test]
fn a_40_gbps_link_caps_throughput_near_its_capacity_under_heavy_load() {
    let (rack, layout) = pelican();
    // 8 req/s of 1 GB blobs offer 64 Gbps; four classes at 12.6 Gbps each could take 50.
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(8.0, 6.0, 1.0, 8)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert!(report.throughput_gbps <= 40.0, "{report:?}");
    assert!(report.throughput_gbps > 30.0, "{report:?}");
    assert!(
        report.rejected > 0,
        "an overloaded rack fills its queues: {report:?}"
    );
    assert_eq!(report.budget_violations, 0);
}

#[test]
fn bad_configurations_are_refused_with_typed_errors() {
    let (rack, layout) = pelican();
    let good = SimConfig::new(1.0, 2.0, 1.0, 0);
    let refused = |config: SimConfig| simulate(rack, layout, &config).unwrap_err();
    for rate_per_s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            refused(SimConfig {
                rate_per_s,
                ..good.clone()
            }),
            SimError::Rate { .. }
        ));
    }
    for (hours, warmup_hours) in [(1.0, 1.0), (1.0, 2.0), (f64::NAN, 0.0), (1.0, -0.5)] {
        assert!(matches!(
            refused(SimConfig {
                hours,
                warmup_hours,
                ..good.clone()
            }),
            SimError::Duration { .. }
        ));
    }
    assert!(matches!(
        refused(SimConfig {
            blob_bytes: 0,
            ..good.clone()
        }),
        SimError::BlobBytes { .. }
    ));
    for network_gbps in [0.0, f64::NAN] {
        assert!(matches!(
            refused(SimConfig {
                network_gbps: Some(network_gbps),
                ..good.clone()
            }),
            SimError::Network { .. }
        ));
    }
    let too_many = refused(SimConfig {
        rate_per_s: MAX_REQUESTS / 3600.0 + 1.0,
        hours: 1.0,
        warmup_hours: 0.0,
        ..good.clone()
    });
    assert!(matches!(too_many, SimError::TooManyRequests { .. }));
    let (ocp, _) = &planned()[1];
    assert!(matches!(
        simulate(ocp, layout, &good).unwrap_err(),
        SimError::LayoutMismatch { .. }
    ));
}

#[test]
fn fully_provisioned_pelican_serves_low_load_at_the_transfer_floor_within_its_budgets() {
    // Pelican §4.2: FP's service time for 1 GB is ~0.65 s (15 disks × 105 MB/s) and its time to
    // first byte is tens of milliseconds (no spin-up), on a rack provisioned for every disk.
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps: Some(40.0),
        policy: PolicyKind::FullyProvisioned,
        ..SimConfig::new(0.5, 3.0, 1.0, 5)
    };
    let report = simulate(rack, layout, &config).unwrap();
    let floor_s = 1e9 / (f64::from(layout.erasure.k) * rack.disk_model.bandwidth_mb_per_s * 1e6);
    assert!(
        (report.service_time_s.mean - floor_s).abs() < 0.02,
        "{report:?}"
    );
    assert!(report.time_to_first_byte_s.mean < 0.1, "{report:?}");
    assert_eq!(report.rejected, 0);
    assert_eq!(report.budget_violations, 0);
    // Every disk spinning all the time: the rack draws the active power of all 1,152 disks.
    let all_active_w = rack.disk_count() as f64 * 9.42;
    assert!(
        (report.power_w.mean - all_active_w).abs() < 1.0,
        "{report:?}"
    );
}

#[test]
fn the_fully_provisioned_rack_admits_every_disk_in_its_costliest_state_and_keeps_soft_budgets() {
    // The FP policy spins every group up at once; the simulator judges it against the fully
    // provisioned copy of the rack, which must admit exactly that.
    let (rack, _) = pelican();
    let full = rack.fully_provisioned();
    for (real, provisioned) in rack.resources.iter().zip(&full.resources) {
        if real.kind == spinwise_model::ResourceKind::Hard {
            assert_eq!(
                provisioned.disks_at_highest_per_domain(),
                Some(provisioned.domain_size() as u64),
                "{}",
                real.name
            );
            assert!(provisioned.budget >= real.budget);
        } else {
            assert_eq!(
                provisioned.budget, real.budget,
                "soft budgets are left alone"
            );
        }
    }
}

#[test]
fn the_random_layout_stays_below_one_gbps_where_flamingo_fills_the_link() {
    // Pelican Fig. 5(a): the random straw-man layout never passes ~1 Gbps at any rate.
    let (rack, layout) = pelican();
    let run = |policy, rate_per_s| {
        let config = SimConfig {
            network_gbps: Some(40.0),
            policy,
            ..SimConfig::new(rate_per_s, 3.0, 1.0, 5)
        };
        simulate(rack, layout, &config).unwrap()
    };
    let random = run(PolicyKind::Random, 8.0);
    assert!(random.throughput_gbps < 1.0, "{random:?}");
    assert!(random.throughput_gbps > 0.1, "{random:?}");
    assert_eq!(random.budget_violations, 0);
    let flamingo = run(PolicyKind::Flamingo, 8.0);
    assert!(flamingo.throughput_gbps > 30.0, "{flamingo:?}");
    assert!(flamingo.throughput_gbps <= 40.0, "{flamingo:?}");
    assert_eq!(flamingo.budget_violations, 0);
}

#[test]
fn the_random_layout_sets_have_k_plus_r_disks_that_can_all_spin_at_once() {
    for (rack, layout) in planned() {
        let width = layout.erasure.stripe_width();
        let sets = spinwise_sim::random_layout::random_placements(rack, width, 256, 3).unwrap();
        assert_eq!(sets.len(), 256);
        for set in &sets {
            let mut distinct = set.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), width as usize);
            // No hard domain holds more chosen disks than may be at the costliest state at once.
            for (_, resource) in rack.hard_resources() {
                let Some(limit) = resource.disks_at_highest_per_domain() else {
                    continue;
                };
                for domain in 0..resource.domains.len() as u32 {
                    let held = set
                        .iter()
                        .filter(|d| resource.domain_of[**d as usize] == domain)
                        .count() as u64;
                    assert!(held <= limit, "`{}` domain {domain}: {held}", resource.name);
                }
            }
        }
    }
    let (rack, layout) = pelican();
    let width = layout.erasure.stripe_width();
    let sets = spinwise_sim::random_layout::random_placements(rack, width, 256, 3).unwrap();
    assert_eq!(
        sets,
        spinwise_sim::random_layout::random_placements(rack, width, 256, 3).unwrap(),
        "the sets depend on the seed only"
    );
    assert!(matches!(
        spinwise_sim::random_layout::random_placements(rack, 10_000, 1, 3),
        Err(SimError::RandomLayout { width: 10_000, .. })
    ));
}
