//! Scenario tests of the simulator on planned presets: determinism (seed → trace hash), the
//! independent budget checker on three racks, the low-load latency and throughput the model
//! predicts in closed form, a saturated 40 Gbps link, the random layout far below it (and its
//! placement sets domain-disjoint), typed refusals of bad configurations, time to first byte
//! per class (a rebuild slows its own class only), Bulk reads (they wait for spin-ups others
//! cause) and Expedited reads (a first byte far sooner than the standard reads', shares checked,
//! and their draws leave the traces of runs without them unchanged).
//! Every scenario names its seed; a failure prints the report to reproduce from.

use spinwise_model::{BindError, Distribution, Layout, Rack, parse_rack};
use spinwise_sim::{
    Arrivals, BlobSizes, Deferral, DiskFailure, MAX_FAILED_BYTES, MAX_REQUESTS, PolicyKind,
    ReadTier, RequestRecord, SimConfig, SimError, Summary, parse_trace, simulate,
    simulate_recording,
};
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
fn the_request_records_are_the_reads_the_summaries_count_and_recording_changes_nothing() {
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps: Some(40.0),
        expedited_fraction: 0.1,
        ..SimConfig::new(3.0, 2.0, 0.5, 5)
    };
    let mut records: Vec<RequestRecord> = Vec::new();
    let recorded = simulate_recording(rack, layout, &config, &mut |r| records.push(*r)).unwrap();
    assert_eq!(recorded, simulate(rack, layout, &config).unwrap());
    let context = format!("{recorded:?}");
    assert_eq!(
        records.len() as u64,
        recorded.time_to_first_byte_s.count,
        "{context}"
    );
    let of = |pick: fn(&RequestRecord) -> u64| {
        Summary::of_us(&mut records.iter().map(pick).collect::<Vec<_>>())
    };
    assert_eq!(
        of(|r| r.first_byte_us - r.arrival_us),
        recorded.time_to_first_byte_s
    );
    assert_eq!(of(|r| r.last_byte_us - r.serve_us), recorded.service_time_s);
    assert_eq!(
        of(|r| r.last_byte_us - r.arrival_us),
        recorded.completion_time_s
    );
    let window_start_us = (config.warmup_hours * 3.6e9) as u64;
    let window_end_us = (config.hours * 3.6e9) as u64;
    for pair in records.windows(2) {
        assert!(
            pair[0].last_byte_us <= pair[1].last_byte_us,
            "completion order: {pair:?}"
        );
    }
    for record in &records {
        assert!(
            (window_start_us..window_end_us).contains(&record.arrival_us),
            "{record:?}"
        );
        assert!(record.arrival_us <= record.serve_us, "{record:?}");
        assert!(
            record.serve_us < record.first_byte_us,
            "a seek comes first: {record:?}"
        );
        assert!(record.first_byte_us < record.last_byte_us, "{record:?}");
        assert_eq!(record.bytes, config.blob_bytes);
        let class = layout.classes.as_ref().unwrap()[record.target as usize];
        assert_eq!(record.class, Some(class), "{record:?}");
    }
    let expedited = records
        .iter()
        .filter(|r| r.tier == ReadTier::Expedited)
        .count() as u64;
    assert_eq!(expedited, recorded.expedited_ttfb_s.count, "{context}");
    assert!(
        expedited > 0 && expedited < records.len() as u64 / 4,
        "{context}"
    );
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
    // group (~1.9 s, its slowest disk's unmount). The two partly cancel.
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
    // 1.25 s), below the maxima (14 s + 1.75 s).
    assert!(
        (11.25..15.75).contains(&report.spin_up_s.mean),
        "{report:?}"
    );
    // Unbounded network, flows alone: seek + blob at k × disk bandwidth (15 × 105 MB/s), the
    // most one read gets even from a group pooled for concurrent reads. (The rare reads that
    // overlap in one group share its disks, so the mean is a little above.)
    let transfer_s = config.blob_bytes as f64 / (f64::from(layout.erasure.k) * 105e6);
    assert!(
        (report.service_time_s.p50 - (seek_s + transfer_s)).abs() < 1e-3,
        "service {:?} against seek + transfer {} s",
        report.service_time_s,
        seek_s + transfer_s
    );
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
    // 8 req/s of 1 GB blobs offer 64 Gbps; four classes at 12.6 Gbps each could take 50, but two
    // classes share each server's 20 Gbps NIC and each group switch idles a class for ~15 s.
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(8.0, 6.0, 1.0, 8)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert!(report.throughput_gbps <= 40.0, "{report:?}");
    assert!(report.throughput_gbps > 27.0, "{report:?}");
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
    // A user's 1e300 is quoted as 1e300, not as 301 digits (until 2026-12-01).
    let huge = [
        refused(SimConfig {
            hours: 1e300,
            ..good.clone()
        }),
        refused(SimConfig {
            rate_per_s: 1e300,
            ..good.clone()
        }),
        refused(SimConfig {
            idle_spin_down_s: Some(1e300),
            ..good.clone()
        }),
    ];
    for error in huge {
        let text = error.to_string();
        assert!(text.contains("e300") || text.contains("e303"), "{text}");
        assert!(text.len() < 200, "{text}");
    }
    assert!(matches!(
        refused(SimConfig {
            blob_bytes: 0,
            ..good.clone()
        }),
        SimError::BlobBytes { .. }
    ));
    // 1e-316 is subnormal: its capacities broke water-filling's sums (a panic until 2026-12-01).
    // 1e300 was accepted and printed as a 301-digit number.
    for network_gbps in [
        0.0,
        f64::NAN,
        1e-316,
        0.000_999,
        1e300,
        f64::INFINITY,
        1.5e6,
    ] {
        let error = refused(SimConfig {
            network_gbps: Some(network_gbps),
            ..good.clone()
        });
        assert!(matches!(error, SimError::Network { .. }), "{error}");
        assert!(error.to_string().len() < 200, "{error}");
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
        SimError::Layout(BindError::RackMismatch { .. })
    ));
}

#[test]
fn a_bandwidth_resource_of_no_capacity_is_refused_before_the_run() {
    // dense-jbod-60's SAS port is a soft Gbps resource: at budget 0 no byte could cross it.
    let path = format!(
        "{}/../../presets/dense-jbod-60.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.matches("\nbudget = 48\n").count(),
        1,
        "the SAS budget line"
    );
    let rack = parse_rack("no-sas", &text.replace("\nbudget = 48\n", "\nbudget = 0\n")).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    let error = simulate(&rack, &layout, &SimConfig::new(0.1, 2.0, 1.0, 1)).unwrap_err();
    assert!(
        matches!(&error, SimError::BandwidthBudget { resource, .. } if resource == "sas"),
        "{error}"
    );
}

#[test]
fn a_run_too_slow_to_ever_finish_is_refused_at_the_horizon_instead_of_wrapping_the_clock() {
    // Pelican planned as shipped, then its disks slowed to 1e-12 MB/s: a 1 GB read would take
    // ~30,000 years, its completion time saturates the µs clock, and the loop refuses the run
    // at its horizon rather than wrapping to a time before now (wrong results in release
    // builds, "time went back" panics in debug ones, until 2026-12-01).
    let (rack, layout) = pelican();
    let mut slow_disks = rack.clone();
    slow_disks.disk_model.bandwidth_mb_per_s = 1e-12;
    // The same layout, bound to the changed rack (its fingerprint names the rack it was planned
    // for; the groups and the scheduler's constraints do not depend on the bandwidth).
    let mut slow_layout = layout.clone();
    slow_layout.rack_fingerprint = slow_disks.fingerprint();
    let config = SimConfig {
        idle_spin_down_s: None,
        ..SimConfig::new(1.0, 2.0, 1.0, 5)
    };
    let error = simulate(&slow_disks, &slow_layout, &config).unwrap_err();
    assert!(
        matches!(error, SimError::Horizon { horizon_years: 100, at_us } if at_us > 100 * 365 * 86_400 * 1_000_000),
        "{error}"
    );
    // The slowest network allowed still finishes (queues cap what is waiting).
    let slow_network = SimConfig {
        network_gbps: Some(spinwise_sim::MIN_NETWORK_GBPS),
        ..config
    };
    let report = simulate(rack, layout, &slow_network).unwrap();
    assert!(report.completed > 0, "{report:?}");
}

#[test]
fn fully_provisioned_pelican_serves_low_load_at_the_transfer_floor_within_its_budgets() {
    // Pelican §4.2: FP's service time for 1 GB is ~0.65 s (15 disks × 105 MB/s) and its time to
    // first byte is tens of milliseconds (no spin-up), on a rack provisioned for every disk.
    // At 0.1 req/s reads rarely overlap: two reads behind one server's 20 Gbps NIC (a read alone
    // runs at 12.6 Gbps) would slow each other down.
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps: Some(40.0),
        policy: PolicyKind::FullyProvisioned,
        ..SimConfig::new(0.1, 5.0, 1.0, 5)
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

fn prototype() -> &'static (Rack, Layout) {
    static PROTOTYPE: OnceLock<(Rack, Layout)> = OnceLock::new();
    PROTOTYPE.get_or_init(|| preset("pelican-prototype"))
}

const YEAR_S: f64 = 365.0 * 86_400.0;

#[test]
fn a_failed_disk_alone_in_its_class_is_rebuilt_at_one_disks_bandwidth() {
    let (rack, layout) = pelican();
    // 322 stacks of 66.5 MB (a two-hundredth of Pelican's 4.28 TB) at 105 MB/s: 204 s of
    // transfer, plus one spin-up of the failed group and the odd client request of its class.
    let failure = DiskFailure {
        lost_bytes: 21_400_000_000,
        lost_stacks: 322,
        ..DiskFailure::default()
    };
    let config = SimConfig {
        failure: Some(failure),
        ..SimConfig::new(0.01, 3.0, 1.0, 21)
    };
    let report = simulate(rack, layout, &config).unwrap();
    let rebuild = report.rebuild.expect("a failure was configured");
    let transfer_s = 21.4e9 / (rack.disk_model.bandwidth_mb_per_s * 1e6);
    assert_eq!(rebuild.failed_at_s, 3600.0);
    assert_eq!(rebuild.stacks, 322);
    assert!(layout.groups[rebuild.group as usize].contains(&rebuild.failed_disk));
    assert!(
        (transfer_s..transfer_s + 60.0).contains(&rebuild.time_s),
        "rebuild {} s against {transfer_s} s of transfer: {report:?}",
        rebuild.time_s
    );
    assert_eq!(report.budget_violations, 0);
    assert!(
        simulate(rack, layout, &SimConfig::new(0.01, 3.0, 1.0, 21))
            .unwrap()
            .rebuild
            .is_none()
    );
}

#[test]
fn rebuild_bytes_move_on_the_disks_but_not_across_the_network() {
    let (rack, layout) = pelican();
    let lost_bytes = 10_000_000_000;
    let config = SimConfig {
        network_gbps: Some(40.0),
        failure: Some(DiskFailure {
            lost_bytes,
            lost_stacks: 150,
            at_hours: Some(1.5),
        }),
        ..SimConfig::new(0.5, 3.0, 1.0, 4)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert!(report.rebuild.is_some());
    // Disk bytes = client bytes (the throughput) + each stack read from k disks and written
    // to one; the rebuild finished inside the window.
    let client_bytes = report.throughput_gbps * report.window_s / 8.0 * 1e9;
    let rebuild_disk_bytes = lost_bytes as f64 * f64::from(layout.erasure.k + 1);
    let disks = rack.disk_count() as f64;
    let disk_bytes = report.tb_per_disk_per_year * 1e12 * disks * report.window_s / YEAR_S;
    assert!(
        (disk_bytes - (client_bytes + rebuild_disk_bytes)).abs() < 1e-6 * disk_bytes,
        "{disk_bytes} disk bytes against {client_bytes} client + {rebuild_disk_bytes} rebuild"
    );
}

#[test]
fn per_disk_yearly_spin_ups_and_the_reject_rate_follow_from_the_window_counts() {
    let (rack, layout) = pelican();
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(8.0, 3.0, 1.0, 9)
    };
    let report = simulate(rack, layout, &config).unwrap();
    let disks = rack.disk_count() as f64;
    let expected =
        report.spin_ups as f64 * f64::from(layout.group_size) / disks * YEAR_S / report.window_s;
    assert!((report.spin_ups_per_disk_per_year - expected).abs() < 1e-9 * expected);
    assert!(report.rejected > 0);
    assert_eq!(
        report.reject_rate,
        report.rejected as f64 / report.requests as f64
    );
}

#[test]
fn a_burst_arrives_within_sixty_seconds_and_is_measured_until_it_has_drained() {
    let (rack, layout) = prototype();
    let config = SimConfig {
        network_gbps: Some(8.5),
        arrivals: Arrivals::Burst { requests: 120 },
        ..SimConfig::new(1.0, 24.0, 1.0, 15)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert_eq!(
        (report.requests, report.completed),
        (120, 120),
        "{report:?}"
    );
    assert_eq!(report.rate_per_s, 2.0);
    // 120 GB at no more than 8.5 Gbps takes at least 113 s; the window ends at the last byte.
    assert!(report.window_s >= 120e9 * 8.0 / 8.5e9, "{report:?}");
    assert!(report.completion_time_s.max <= report.window_s);
    let delivered_gb = report.throughput_gbps * report.window_s / 8.0;
    assert!((delivered_gb - 120.0).abs() < 1e-6, "{delivered_gb} GB");
    assert_eq!(report, simulate(rack, layout, &config).unwrap());
}

#[test]
fn a_trace_sends_every_record_of_one_key_to_one_group() {
    let (rack, layout) = pelican();
    let trace = |keys: &dyn Fn(usize) -> String| {
        let mut text = String::from("time_s,operation,key,size_bytes\n");
        for i in 0..48 {
            let operation = if i % 2 == 0 { "read" } else { "write" };
            text.push_str(&format!("{},{operation},{},1000000000\n", i * 5, keys(i)));
        }
        parse_trace(&text).unwrap()
    };
    let run = |records| {
        let config = SimConfig {
            arrivals: Arrivals::Trace(records),
            ..SimConfig::new(1.0, 1.0, 0.0, 2)
        };
        simulate(rack, layout, &config).unwrap()
    };
    let same = run(trace(&|_| "one-blob".into()));
    assert_eq!(same.requests, 48);
    assert_eq!(same.completed, 48);
    assert_eq!(
        same.spin_ups, 1,
        "one key, one group, spun up once: {same:?}"
    );
    let many = run(trace(&|i| format!("blob-{i}")));
    assert_eq!(many.completed, 48);
    assert!(
        many.spin_ups > 10,
        "distinct keys spread over groups: {many:?}"
    );
}

#[test]
fn a_trace_reports_when_its_last_read_delivered_its_last_byte() {
    let (rack, layout) = pelican();
    // Two reads of one blob, the second long after the first finished: the last byte is the
    // second's arrival plus its completion time.
    let text = "time_s,operation,key,size_bytes\n10,read,a,1000000000\n600,read,a,1000000000\n";
    let config = SimConfig {
        arrivals: Arrivals::Trace(parse_trace(text).unwrap()),
        ..SimConfig::new(1.0, 1.0, 0.0, 5)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert_eq!(report.completed, 2, "{report:?}");
    assert!(report.last_byte_s <= report.window_s, "{report:?}");
    // The second read's completion is one of the two samples (p50 is the smaller of two).
    let (shorter_s, longer_s) = (report.completion_time_s.p50, report.completion_time_s.max);
    assert!(
        report.last_byte_s >= 600.0 + shorter_s - 1e-6
            && report.last_byte_s <= 600.0 + longer_s + 1e-6,
        "last byte at {} s; the reads took {shorter_s} and {longer_s} s",
        report.last_byte_s
    );
}

#[test]
fn vhd_like_blobs_take_their_mean_size_to_serve_at_low_load() {
    let (rack, layout) = pelican();
    let config = SimConfig {
        blob_sizes: BlobSizes::VhdLike,
        ..SimConfig::new(0.05, 7.0, 1.0, 33)
    };
    let report = simulate(rack, layout, &config).unwrap();
    let k = f64::from(layout.erasure.k);
    let expected_s =
        rack.disk_model.seek_ms / 1e3 + 3.3e9 / (k * rack.disk_model.bandwidth_mb_per_s * 1e6);
    let mean_s = report.service_time_s.mean;
    assert!(
        (mean_s - expected_s).abs() < 0.06 * expected_s,
        "service {mean_s} s against {expected_s} s: {report:?}"
    );
    assert!(report.service_time_s.max > 2.0 * expected_s);
}

#[test]
fn a_group_is_down_only_when_its_slowest_disk_has_unmounted() {
    let (rack, layout) = pelican();
    // Fixed spin-up and mount, so a request that switches its class to another group waits for the
    // old group's unmount + 11 s + a seek, and the unmount is all that varies.
    let mut fixed_rack = rack.clone();
    let disk_model = &mut fixed_rack.disk_model;
    disk_model.spin_up_latency_s = Distribution::Fixed { value: 10.0 };
    disk_model.mount_latency_s = Distribution::Fixed { value: 1.0 };
    disk_model.mount_latency_high_load_s = None;
    let (min_s, max_s) = (0.5, 2.0);
    disk_model.unmount_latency_s = Distribution::Uniform {
        min: min_s,
        max: max_s,
    };
    let mut fixed_layout = layout.clone();
    fixed_layout.rack_fingerprint = fixed_rack.fingerprint();
    // Without idle spin-down: at this load a class is idle for minutes between reads, so idle
    // spin-down would rest the old group before the next read arrives and no switch would wait
    // for an unmount, which is what this measures.
    let config = SimConfig {
        idle_spin_down_s: None,
        ..SimConfig::new(0.01, 48.0, 1.0, 4)
    };
    let report = simulate(&fixed_rack, &fixed_layout, &config).unwrap();
    // 11 requests in 12 switch: the median waits for the median switch. The slowest of 24
    // uniform unmounts has its median at min + (max − min) · 0.5^(1/24) = 1.96 s; one unmount per
    // group would put it at 1.25 s.
    let seek_s = rack.disk_model.seek_ms / 1e3;
    let unmount_p50_s = report.time_to_first_byte_s.p50 - 11.0 - seek_s;
    let slowest_of_24_p50_s = min_s + (max_s - min_s) * 0.5f64.powf(1.0 / 24.0);
    assert!(
        (unmount_p50_s - slowest_of_24_p50_s).abs() < 0.1,
        "median unmount {unmount_p50_s} s, slowest-of-24 median {slowest_of_24_p50_s} s: {report:?}"
    );
    assert_eq!(report.budget_violations, 0);
}

#[test]
fn mounts_take_the_high_load_latency_only_when_the_rack_is_busy() {
    let (rack, layout) = pelican();
    assert!(rack.disk_model.mount_latency_high_load_s.is_some());
    let idle = simulate(rack, layout, &SimConfig::new(0.01, 6.0, 1.0, 3)).unwrap();
    assert_eq!(idle.high_load_spin_ups, 0, "{idle:?}");
    let busy_config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(8.0, 2.0, 0.5, 3)
    };
    let busy = simulate(rack, layout, &busy_config).unwrap();
    assert!(busy.high_load_spin_ups > 0, "{busy:?}");
    assert!(busy.high_load_spin_ups <= busy.spin_ups);
    let mut calm_rack = rack.clone();
    calm_rack.disk_model.mount_latency_high_load_s = None;
    let mut calm_layout = layout.clone();
    calm_layout.rack_fingerprint = calm_rack.fingerprint();
    let calm = simulate(&calm_rack, &calm_layout, &busy_config).unwrap();
    assert_eq!(calm.high_load_spin_ups, 0);
    // Stragglers make spin-ups under load slower on average.
    assert!(
        busy.spin_up_s.mean > calm.spin_up_s.mean,
        "{busy:?}\n{calm:?}"
    );
}

#[test]
fn bad_workloads_and_failures_are_refused_with_typed_errors() {
    let (rack, layout) = pelican();
    let good = SimConfig::new(1.0, 2.0, 1.0, 0);
    let refused = |config: SimConfig| simulate(rack, layout, &config).unwrap_err();
    assert!(matches!(
        refused(SimConfig {
            arrivals: Arrivals::Burst { requests: 0 },
            ..good.clone()
        }),
        SimError::Burst { .. }
    ));
    for at_hours in [0.5, 2.0, f64::NAN] {
        assert!(matches!(
            refused(SimConfig {
                failure: Some(DiskFailure {
                    at_hours: Some(at_hours),
                    ..DiskFailure::default()
                }),
                ..good.clone()
            }),
            SimError::FailureTime { .. }
        ));
    }
    for (lost_bytes, lost_stacks) in [(0, 1), (10, 0), (10, 11), (MAX_FAILED_BYTES + 1, 1)] {
        assert!(matches!(
            refused(SimConfig {
                failure: Some(DiskFailure {
                    lost_bytes,
                    lost_stacks,
                    at_hours: None,
                }),
                ..good.clone()
            }),
            SimError::FailureSize { .. }
        ));
    }
    // A burst or a trace needs no rate.
    let burst = SimConfig {
        rate_per_s: 0.0,
        arrivals: Arrivals::Burst { requests: 3 },
        ..good.clone()
    };
    assert_eq!(simulate(rack, layout, &burst).unwrap().completed, 3);
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

#[test]
fn a_rebuild_raises_time_to_first_byte_in_its_own_class_and_leaves_the_other_classes_alone() {
    let (rack, layout) = pelican();
    let classes = layout
        .classes
        .as_ref()
        .expect("the pelican layout has classes");
    let class_count = *classes.iter().max().unwrap() as usize + 1;
    // 500 GB in 7,500 stacks (Pelican's 66.5 MB stacks) failing after the warm-up: the rebuild
    // takes its class's 50% share for about the rest of the measured 2.5 h at 2 req/s.
    let failed = SimConfig {
        network_gbps: Some(40.0),
        failure: Some(DiskFailure {
            lost_bytes: 500_000_000_000,
            lost_stacks: 7_500,
            at_hours: None,
        }),
        ..SimConfig::new(2.0, 3.0, 0.5, 31)
    };
    let report = simulate(rack, layout, &failed).unwrap();
    let rebuild = report.rebuild.expect("a failure was configured");
    let failed_class = report.rebuild_class.expect("the layout has classes") as usize;
    assert_eq!(failed_class, classes[rebuild.group as usize] as usize);
    assert_eq!(report.ttfb_by_class_s.len(), class_count);
    let counted: u64 = report.ttfb_by_class_s.iter().map(|s| s.count).sum();
    assert_eq!(counted, report.time_to_first_byte_s.count, "{report:?}");
    let failed_mean_s = report.ttfb_by_class_s[failed_class].mean;
    for (class, summary) in report.ttfb_by_class_s.iter().enumerate() {
        assert!(
            summary.count > 0,
            "class {class} served nothing: {report:?}"
        );
        if class != failed_class {
            assert!(
                failed_mean_s > 1.5 * summary.mean,
                "failed class {failed_class} mean {failed_mean_s} s against class {class}'s \
                 {} s: {report:?}",
                summary.mean
            );
        }
    }
    let healthy = simulate(
        rack,
        layout,
        &SimConfig {
            failure: None,
            ..failed
        },
    )
    .unwrap();
    assert_eq!(healthy.rebuild_class, None);
    let healthy_counted: u64 = healthy.ttfb_by_class_s.iter().map(|s| s.count).sum();
    assert_eq!(healthy_counted, healthy.time_to_first_byte_s.count);
    assert!(failed_mean_s > 1.5 * healthy.ttfb_by_class_s[failed_class].mean);
    // Pelican §4.3: the other classes are unaffected (× 1; here within 25% of the healthy run).
    for class in (0..class_count).filter(|c| *c != failed_class) {
        let ratio = report.ttfb_by_class_s[class].mean / healthy.ttfb_by_class_s[class].mean;
        assert!(
            (0.75..1.25).contains(&ratio),
            "class {class}: failed ÷ healthy {ratio}: {report:?} {healthy:?}"
        );
    }
}

#[test]
fn the_random_layout_has_no_per_class_time_to_first_byte() {
    let (rack, layout) = pelican();
    let config = SimConfig {
        policy: PolicyKind::Random,
        ..SimConfig::new(0.05, 1.0, 0.1, 5)
    };
    let report = simulate(rack, layout, &config).unwrap();
    assert!(report.time_to_first_byte_s.count > 0, "{report:?}");
    assert!(report.ttfb_by_class_s.is_empty());
    assert_eq!(report.rebuild_class, None);
}

#[test]
fn bulk_reads_spin_no_group_up_before_their_deadline_and_all_complete_after_it() {
    let (rack, layout) = pelican();
    let wait_hours = 100.0;
    let config = SimConfig {
        network_gbps: Some(40.0),
        deferral: Some(Deferral {
            fraction: 1.0,
            wait_hours,
        }),
        ..SimConfig::new(0.5, 3.0, 1.0, 5)
    };
    let report = simulate(rack, layout, &config).unwrap();
    // Every read waits for a spin-up no one else causes: none happens in the window.
    assert_eq!(report.spin_ups, 0, "{report:?}");
    assert_eq!(report.deferred, report.requests);
    assert!(report.requests > 3000, "{report:?}");
    // Each is served once its deadline released it, after the run's own arrivals.
    assert_eq!(report.completed + report.rejected, report.requests);
    assert_eq!(report.deferred_ttfb_s.count, report.completed);
    let earliest_release_s = (wait_hours - 3.0) * 3600.0;
    assert!(
        report.time_to_first_byte_s.p50 >= earliest_release_s,
        "{report:?}"
    );
    assert_eq!(report.budget_violations, 0);
}

#[test]
fn bulk_reads_ride_the_spin_ups_other_reads_cause_and_save_most_when_all_may_wait() {
    let (rack, layout) = pelican();
    let run = |fraction: Option<f64>| {
        let config = SimConfig {
            network_gbps: Some(40.0),
            deferral: fraction.map(|fraction| Deferral {
                fraction,
                wait_hours: 1.0,
            }),
            ..SimConfig::new(0.5, 7.0, 2.0, 9)
        };
        simulate(rack, layout, &config).unwrap()
    };
    let plain = run(None);
    let half = run(Some(0.5));
    let all = run(Some(1.0));
    assert!(half.spin_ups < plain.spin_ups, "{half:?} vs {plain:?}");
    assert!(all.spin_ups * 10 < plain.spin_ups, "{all:?} vs {plain:?}");
    assert!(all.power_w.mean < plain.power_w.mean);
    // About half the reads were drawn Bulk, and most rode a spin-up the other reads caused
    // long before their one-hour deadline.
    let share = half.deferred as f64 / half.requests as f64;
    assert!((0.45..0.55).contains(&share), "{share}");
    assert!(half.deferred_ttfb_s.mean < 1800.0, "{half:?}");
    // The same seed and deferral give the same trace; no deferral draws what it always drew.
    assert_eq!(run(Some(0.5)).trace_hash, half.trace_hash);
    assert_eq!(run(None).trace_hash, plain.trace_hash);
    for report in [&plain, &half, &all] {
        assert_eq!(report.budget_violations, 0);
        assert_eq!(report.completed + report.rejected, report.requests);
    }
}

#[test]
fn bad_deferrals_are_refused_with_typed_errors() {
    let (rack, layout) = pelican();
    let with = |fraction, wait_hours, policy| SimConfig {
        deferral: Some(Deferral {
            fraction,
            wait_hours,
        }),
        policy,
        ..SimConfig::new(1.0, 2.0, 1.0, 0)
    };
    for (fraction, wait_hours) in [(1.5, 1.0), (-0.1, 1.0), (f64::NAN, 1.0), (0.5, -1.0)] {
        let config = with(fraction, wait_hours, PolicyKind::Pelican);
        assert!(matches!(
            simulate(rack, layout, &config).unwrap_err(),
            SimError::Deferral { .. }
        ));
    }
    let random = with(0.5, 1.0, PolicyKind::Random);
    assert_eq!(
        simulate(rack, layout, &random).unwrap_err(),
        SimError::DeferralPolicy
    );
}

#[test]
fn bulk_reads_a_full_queue_refuses_are_retried_as_places_free_never_rejected() {
    let (rack, layout) = pelican();
    let mut shallow = layout.clone();
    shallow.scheduler.max_queue_depth = 20;
    let run = |deferral| {
        let config = SimConfig {
            network_gbps: Some(40.0),
            deferral,
            ..SimConfig::new(2.0, 3.0, 1.0, 13)
        };
        simulate(rack, &shallow, &config).unwrap()
    };
    let plain = run(None);
    assert!(plain.rejected > 0, "the shallow queue overflows: {plain:?}");
    // A deadline releases ~75 reads of a group into a queue of 20: the rest wait for places.
    let bulk = run(Some(Deferral {
        fraction: 1.0,
        wait_hours: 0.5,
    }));
    assert_eq!(bulk.rejected, 0, "{bulk:?}");
    assert_eq!(bulk.completed, bulk.requests);
    assert_eq!(bulk.budget_violations, 0);
}

#[test]
fn expedited_reads_reach_their_first_byte_far_sooner_than_the_standard_reads_they_pass() {
    // Pelican's rack at 1 req/s on a 40 Gbps link, a tenth of the reads expedited. Measured
    // (seeds 1–5, 17, 23, 3 h): expedited means of 22–24 s against 267–320 s for the standard
    // reads under Pelican's class scheduler (ratio ≤ 0.09), 28–31 s against 129–139 s under
    // Flamingo (≤ 0.23); an expedited read's p99 stayed below a standard read's median. Treated
    // as standard reads, both means would be alike.
    let (rack, layout) = pelican();
    for (policy, seed) in [
        (PolicyKind::Pelican, 41),
        (PolicyKind::Pelican, 42),
        (PolicyKind::Flamingo, 43),
    ] {
        let config = SimConfig {
            network_gbps: Some(40.0),
            policy,
            expedited_fraction: 0.1,
            ..SimConfig::new(1.0, 3.0, 1.0, seed)
        };
        let report = simulate(rack, layout, &config).unwrap();
        let context = format!("{policy:?}, seed {seed}: {report:?}");
        assert_eq!(report.budget_violations, 0, "{context}");
        assert_eq!(
            report.completed + report.rejected,
            report.requests,
            "{context}"
        );
        // About a tenth of ~7,200 reads (binomial: ±3.5 σ is ±0.0125).
        let share = report.expedited as f64 / report.requests as f64;
        assert!((0.085..0.115).contains(&share), "share {share}: {context}");
        // Every read with a first byte is expedited or standard (no Bulk reads here).
        assert_eq!(report.deferred, 0);
        assert_eq!(
            report.expedited_ttfb_s.count + report.standard_ttfb_s.count,
            report.time_to_first_byte_s.count,
            "{context}"
        );
        assert!(report.expedited_ttfb_s.count > 500, "{context}");
        let (expedited, standard) = (&report.expedited_ttfb_s, &report.standard_ttfb_s);
        assert!(
            expedited.mean < 0.5 * standard.mean,
            "expedited mean {} s against standard {} s: {context}",
            expedited.mean,
            standard.mean
        );
        assert!(
            expedited.p99 < standard.p50,
            "expedited p99 {} s against standard p50 {} s: {context}",
            expedited.p99,
            standard.p50
        );
    }
}

#[test]
fn an_expedited_share_of_zero_draws_nothing_and_bulk_reads_share_one_draw_with_expedited_ones() {
    let (rack, layout) = pelican();
    let run = |deferral: Option<f64>, expedited_fraction: Option<f64>| {
        let mut config = SimConfig {
            network_gbps: Some(40.0),
            deferral: deferral.map(|fraction| Deferral {
                fraction,
                wait_hours: 1.0,
            }),
            ..SimConfig::new(1.0, 2.0, 0.5, 19)
        };
        if let Some(fraction) = expedited_fraction {
            config.expedited_fraction = fraction;
        }
        simulate(rack, layout, &config).unwrap()
    };
    // A run that never mentions the share and one that sets it to 0 are the same run.
    let plain = run(None, None);
    let zero = run(None, Some(0.0));
    assert_eq!(zero.trace_hash, plain.trace_hash);
    assert_eq!(zero.expedited, 0);
    assert_eq!(zero.standard_ttfb_s, zero.time_to_first_byte_s);
    // Bulk reads draw one uniform per read, which an expedited share only splits further: a
    // share too thin for any draw to land in leaves a Bulk run's trace exactly as it was.
    let bulk = run(Some(0.5), None);
    assert!(bulk.deferred > 0, "{bulk:?}");
    assert_eq!(run(Some(0.5), Some(0.0)).trace_hash, bulk.trace_hash);
    let thin = run(Some(0.5), Some(1e-12));
    assert_eq!(thin.expedited, 0, "{thin:?}");
    assert_eq!(thin.trace_hash, bulk.trace_hash);
    assert_eq!(thin.deferred, bulk.deferred);
}

#[test]
fn bad_expedited_shares_are_refused_with_typed_errors() {
    let (rack, layout) = pelican();
    let with = |bulk: Option<f64>, expedited_fraction| SimConfig {
        deferral: bulk.map(|fraction| Deferral {
            fraction,
            wait_hours: 1.0,
        }),
        expedited_fraction,
        ..SimConfig::new(1.0, 2.0, 1.0, 0)
    };
    for (bulk, expedited) in [
        (None, -0.1),
        (None, 1.5),
        (None, f64::NAN),
        (None, f64::INFINITY),
        (Some(0.6), 0.5),
        (Some(1.0), 0.01),
    ] {
        let error = simulate(rack, layout, &with(bulk, expedited)).unwrap_err();
        assert!(
            matches!(
                error,
                SimError::Expedited { expedited_fraction, bulk_fraction }
                    if expedited_fraction.to_bits() == expedited.to_bits()
                        && bulk_fraction == bulk.unwrap_or(0.0)
            ),
            "bulk {bulk:?}, expedited {expedited}: {error:?}"
        );
    }
    // Shares that add up to 1, also through rounding, and every read expedited, are accepted;
    // the random layout takes expedited reads too (only Bulk reads need groups).
    let bulk = 0.33 + 0.56;
    assert!(bulk + 0.11 > 1.0, "a sum that rounding takes past 1");
    for config in [
        with(Some(bulk), 0.11),
        with(Some(0.4), 0.6),
        with(None, 1.0),
        SimConfig {
            policy: PolicyKind::Random,
            ..with(None, 0.5)
        },
    ] {
        assert_eq!(config.validate(), Ok(()), "{config:?}");
    }
}

#[test]
fn staggered_switches_lift_pelicans_saturated_throughput_within_every_budget() {
    // The preset staggers from 100 queued reads; Pelican §2.3's classes switch independently.
    let (rack, staggering) = pelican();
    assert_eq!(staggering.scheduler.stagger_switches_min_queue, Some(100));
    let mut layout = staggering.clone();
    layout.scheduler.stagger_switches_min_queue = None;
    let layout = &layout;
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(5.0, 3.0, 1.0, 1)
    };
    let independent = simulate(rack, layout, &config).unwrap();
    let staggered = simulate(rack, staggering, &config).unwrap();
    let context = format!("independent {independent:?}\nstaggered {staggered:?}");
    assert_eq!(independent.stagger_switches_min_queue, None);
    assert_eq!(staggered.stagger_switches_min_queue, Some(100));
    assert_eq!(staggered.budget_violations, 0, "{context}");
    assert_eq!(staggered.completed + staggered.rejected, staggered.requests);
    // Measured 32.6 → 36.2 Gbps over 5 h; two classes share each server's 20 Gbps NIC.
    assert!(
        staggered.throughput_gbps > independent.throughput_gbps + 2.0,
        "{context}"
    );
    assert!(staggered.reject_rate < independent.reject_rate, "{context}");
    // Without NICs no link is shared, and the run is the independent one.
    let unbounded = SimConfig {
        network_gbps: None,
        ..config
    };
    let without_nics = simulate(rack, staggering, &unbounded).unwrap();
    assert_eq!(without_nics.stagger_switches_min_queue, None);
    let reference = simulate(rack, layout, &unbounded).unwrap();
    assert_eq!(without_nics.trace_hash, reference.trace_hash);
}

#[test]
fn pelicans_service_time_from_dequeue_holds_the_spin_up_at_low_load_and_fps_does_not() {
    let (rack, layout) = pelican();
    // One read per class at a time, as Pelican §4.2 describes its scheduler.
    let mut one_per_class = layout.clone();
    one_per_class.scheduler.concurrent_requests_per_class = 1;
    let config = SimConfig {
        network_gbps: Some(40.0),
        ..SimConfig::new(0.0625, 6.0, 0.5, 3)
    };
    let pelican = simulate(rack, &one_per_class, &config).unwrap();
    let context = format!("{pelican:?}");
    // Nearly every read at this rate finds its group down: its service time from dequeue holds
    // the spin-up and mount (~14 s), ours from `Serve` only the ~0.65 s transfer.
    assert!(pelican.service_time_s.mean < 2.0, "{context}");
    assert!(
        pelican.service_from_dequeue_s.mean > pelican.service_time_s.mean + 8.0,
        "{context}"
    );
    assert_eq!(
        pelican.service_from_dequeue_s.count,
        pelican.service_time_s.count
    );
    let fp = simulate(
        rack,
        layout,
        &SimConfig {
            policy: PolicyKind::FullyProvisioned,
            ..config
        },
    )
    .unwrap();
    // FP's groups spin up once, before the window: nothing is dequeued before a spin-up.
    assert_eq!(fp.service_from_dequeue_s, fp.service_time_s, "{fp:?}");
}
