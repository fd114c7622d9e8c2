//! Idle spin-down in the simulator (issue 30): on a light workload the report says how much
//! energy spinning idle groups down saved against the same seeded run that never does, and
//! that saving is real (positive, and the baseline run is the one with idle groups left up).

use spinwise_model::{Layout, Rack, parse_rack};
use spinwise_sim::{PolicyKind, SimConfig, simulate, simulate_with_baseline};

fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

/// A light load: one read every 100 s on average for three hours, one of them warm-up.
fn light(policy: PolicyKind, idle_spin_down_s: Option<f64>) -> SimConfig {
    SimConfig {
        policy,
        idle_spin_down_s,
        network_gbps: Some(40.0),
        ..SimConfig::new(0.01, 3.0, 1.0, 7)
    }
}

#[test]
fn on_a_light_load_idle_spin_down_reports_a_positive_energy_saving_against_never_spinning_down() {
    let (rack, layout) = preset("pelican");
    for policy in [PolicyKind::Pelican, PolicyKind::Flamingo] {
        let config = light(policy, Some(60.0));
        let report = simulate_with_baseline(&rack, &layout, &config, &mut |_| {}).unwrap();
        let savings = report.idle_savings.expect("a baseline was run");
        assert!(report.idle_spin_downs > 0, "{policy:?}: no idle spin-down");
        assert!(savings.saved_kwh > 0.0, "{policy:?}: {savings:?}");
        assert!(savings.saved_fraction > 0.05, "{policy:?}: {savings:?}");
        assert_eq!(report.idle_spin_down_s, Some(60.0));
        assert_eq!(report.budget_violations, 0);
        // The baseline is the same seeded run without idle spin-down.
        let never = simulate(&rack, &layout, &light(policy, None)).unwrap();
        assert_eq!(never.idle_spin_downs, 0);
        assert_eq!(never.energy_kwh, savings.baseline_energy_kwh);
        assert_eq!(never.spin_ups, savings.baseline_spin_ups);
        let mean_w = report.energy_kwh * 3.6e6 / report.window_s;
        assert!((mean_w - report.power_w.mean).abs() < 1e-6 * mean_w);
    }
}

#[test]
fn without_idle_spin_down_there_is_no_baseline_and_no_idle_spin_down() {
    let (rack, layout) = preset("pelican");
    let report = simulate_with_baseline(
        &rack,
        &layout,
        &light(PolicyKind::Pelican, None),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(report.idle_savings, None);
    assert_eq!(report.idle_spin_downs, 0);
    assert_eq!(report.idle_spin_down_s, None);
}

#[test]
fn fully_provisioned_racks_keep_every_group_up_whatever_the_idle_time() {
    let (rack, layout) = preset("pelican");
    let config = light(PolicyKind::FullyProvisioned, Some(60.0));
    let report = simulate_with_baseline(&rack, &layout, &config, &mut |_| {}).unwrap();
    assert_eq!(report.idle_spin_down_s, None);
    assert_eq!(report.idle_spin_downs, 0);
    assert_eq!(report.idle_savings, None);
}

#[test]
fn an_idle_time_that_is_not_a_positive_number_of_seconds_is_refused() {
    let (rack, layout) = preset("pelican");
    for idle_spin_down_s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let config = light(PolicyKind::Pelican, Some(idle_spin_down_s));
        assert!(
            simulate(&rack, &layout, &config).is_err(),
            "{idle_spin_down_s}"
        );
    }
}

#[test]
fn a_bursts_window_ends_when_it_has_drained_not_after_the_idle_spin_downs_that_follow() {
    let (rack, layout) = preset("pelican");
    let burst = |idle_spin_down_s| SimConfig {
        arrivals: spinwise_sim::Arrivals::Burst { requests: 200 },
        idle_spin_down_s,
        network_gbps: Some(40.0),
        ..SimConfig::new(1.0, 1.0, 0.0, 3)
    };
    let idle = simulate(&rack, &layout, &burst(Some(120.0))).unwrap();
    let never = simulate(&rack, &layout, &burst(None)).unwrap();
    assert!(
        idle.events > never.events,
        "the idle groups were spun down after the burst"
    );
    assert_eq!(idle.window_s, never.window_s);
    assert_eq!(idle.throughput_gbps, never.throughput_gbps);
    assert_eq!(idle.completion_time_s, never.completion_time_s);
    // The meters stop where the window does: the idle spin-downs after it draw nothing in it.
    assert_eq!(idle.power_w, never.power_w);
    assert_eq!(idle.energy_kwh, never.energy_kwh);
    assert_eq!(idle.max_active_disks, never.max_active_disks);
}

#[test]
fn a_poisson_window_is_warm_up_to_hours_even_when_the_run_drains_early_and_both_runs_share_it() {
    let (rack, layout) = preset("pelican");
    // One read every 1,000 s for two hours: the last arrival is usually minutes before the end,
    // and the run drains long before `hours` with idle spin-down off.
    let sparse = |idle_spin_down_s| SimConfig {
        idle_spin_down_s,
        network_gbps: Some(40.0),
        ..SimConfig::new(0.001, 2.0, 0.5, 11)
    };
    let never = simulate(&rack, &layout, &sparse(None)).unwrap();
    let last_byte_s = never.last_byte_s;
    assert!(
        last_byte_s < 7_000.0,
        "drained at {last_byte_s} s, too late for this test"
    );
    assert_eq!(never.window_s, 1.5 * 3600.0);
    let report = simulate_with_baseline(&rack, &layout, &sparse(Some(60.0)), &mut |_| {}).unwrap();
    assert_eq!(report.window_s, never.window_s);
    // The energy saved compares the same window: the idle tail up to `hours` is in both.
    let savings = report.idle_savings.expect("a baseline was run");
    assert_eq!(savings.baseline_energy_kwh, never.energy_kwh);
    let mean_w = never.energy_kwh * 3.6e6 / never.window_s;
    assert!((mean_w - never.power_w.mean).abs() < 1e-6 * mean_w);
}

/// The baseline's numbers as the report gives them, and as a run without idle spin-down from
/// the start measures them.
fn baseline_of(report: &spinwise_sim::Report) -> (f64, f64, u64, spinwise_sim::Summary) {
    let savings = report.idle_savings.expect("a baseline was run");
    (
        savings.baseline_energy_kwh,
        savings.baseline_power_mean_w,
        savings.baseline_spin_ups,
        savings.baseline_time_to_first_byte_s,
    )
}

#[test]
fn the_baseline_continued_from_a_copy_of_the_run_is_the_run_without_idle_spin_down_from_the_start()
{
    // The baseline is not run from the start: it reuses the run up to its first idle spin-down
    // (busy rates: late, while the queues drain; light ones: early). Every way it is taken must
    // measure what the run without idle spin-down measures.
    let (rack, layout) = preset("pelican");
    let mut configs = Vec::new();
    for (policy, rate_per_s, idle_spin_down_s) in [
        (PolicyKind::Pelican, 8.0, 120.0),
        (PolicyKind::Pelican, 2.0, 60.0),
        (PolicyKind::Pelican, 0.2, 120.0),
        (PolicyKind::Pelican, 0.01, 30.0),
        (PolicyKind::Flamingo, 4.0, 120.0),
        (PolicyKind::Flamingo, 0.1, 60.0),
    ] {
        configs.push(SimConfig {
            policy,
            idle_spin_down_s: Some(idle_spin_down_s),
            network_gbps: Some(40.0),
            ..SimConfig::new(rate_per_s, 3.0, 1.0, 11)
        });
    }
    configs.push(SimConfig {
        arrivals: spinwise_sim::Arrivals::Burst { requests: 300 },
        idle_spin_down_s: Some(120.0),
        network_gbps: Some(40.0),
        ..SimConfig::new(1.0, 1.0, 0.0, 5)
    });
    configs.push(SimConfig {
        idle_spin_down_s: Some(120.0),
        deferral: Some(spinwise_sim::Deferral {
            fraction: 0.5,
            wait_hours: 0.5,
        }),
        expedited_fraction: 0.1,
        network_gbps: Some(40.0),
        ..SimConfig::new(1.0, 3.0, 1.0, 13)
    });
    for config in configs {
        let report = simulate_with_baseline(&rack, &layout, &config, &mut |_| {}).unwrap();
        let never = SimConfig {
            idle_spin_down_s: None,
            ..config.clone()
        };
        let from_start = simulate(&rack, &layout, &never).unwrap();
        assert_eq!(
            baseline_of(&report),
            (
                from_start.energy_kwh,
                from_start.power_w.mean,
                from_start.spin_ups,
                from_start.time_to_first_byte_s
            ),
            "{:?} at {} reads/s, {:?}",
            config.policy,
            config.rate_per_s,
            config.arrivals
        );
    }
}
