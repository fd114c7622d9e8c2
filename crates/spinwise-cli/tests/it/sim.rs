//! `spinwise sim`: one JSON object with issue 3's fields, zero budget violations, the same seed
//! giving the same trace, every policy running, and clear refusals for what is not valid.

use crate::common;

use common::{Table, TempDir, integer, number, small_layout, spinwise};

const SMALL_RUN: [&str; 10] = [
    "sim",
    "--preset",
    "dense-jbod-60",
    "--rate",
    "0.5",
    "--hours",
    "2",
    "--warmup-hours",
    "0.5",
    "--json",
];

#[test]
fn sim_json_reports_the_issue_fields_and_no_budget_violation() {
    let report = spinwise(SMALL_RUN).success().json();
    for key in [
        "requests",
        "completed",
        "rejected",
        "throughput_gbps",
        "ttfb_s",
        "completion_s",
        "service_s",
        "spin_ups",
        "power_w",
        "max_active_disks",
        "budget_violations",
        "audit_refusals",
        "events",
        "elapsed_ms",
    ] {
        assert!(report.get(key).is_some(), "missing `{key}` in {report}");
    }
    for key in ["ttfb_s", "completion_s", "service_s"] {
        for statistic in ["mean", "p50", "p99", "max"] {
            assert!(report[key][statistic].is_number(), "{key}.{statistic}");
        }
    }
    assert_eq!(integer(&report, "budget_violations"), 0);
    assert!(integer(&report, "requests") > 0);
    assert_eq!(
        integer(&report, "completed") + integer(&report, "rejected"),
        integer(&report, "requests")
    );
    assert!(number(&report, "throughput_gbps") > 0.0);
}

#[test]
fn the_same_seed_gives_the_same_trace_and_another_seed_another() {
    let first = spinwise(SMALL_RUN).success().json();
    let again = spinwise(SMALL_RUN).success().json();
    assert_eq!(first["trace_hash"], again["trace_hash"]);
    let mut other: Vec<&str> = SMALL_RUN.to_vec();
    other.extend(["--seed", "2"]);
    let different = spinwise(other).success().json();
    assert_ne!(first["trace_hash"], different["trace_hash"]);
}

#[test]
fn every_policy_runs_without_a_budget_violation() {
    for policy in ["pelican", "flamingo", "fp", "random"] {
        let mut args: Vec<&str> = SMALL_RUN.to_vec();
        args.extend(["--policy", policy]);
        let report = spinwise(args).success().json();
        assert_eq!(integer(&report, "budget_violations"), 0, "{policy}");
        // Every policy runs on the rack engine, whose audit never had to withhold a disk.
        assert_eq!(integer(&report, "audit_refusals"), 0, "{policy}");
        assert!(integer(&report, "completed") > 0, "{policy}");
        assert_eq!(
            integer(&report, "completed") + integer(&report, "rejected"),
            integer(&report, "requests"),
            "{policy}"
        );
    }
}

#[test]
fn bad_numbers_are_refused() {
    let mut network: Vec<&str> = SMALL_RUN.to_vec();
    network.extend(["--network-gbps", "fast"]);
    spinwise(network)
        .refused()
        .stderr_mentions(&["--network-gbps"]);
    spinwise(["sim", "--preset", "dense-jbod-60", "--rate=-1"])
        .refused()
        .stderr_mentions(&["rate"]);
}

/// A short dense-jbod-60 run with the given extra flags (no --rate: the caller picks arrivals).
fn small(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["sim", "--preset", "dense-jbod-60", "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[test]
fn a_burst_is_served_whole_and_measured_from_its_first_request_to_its_last_byte() {
    let report = spinwise(small(&["--burst", "30", "--network-gbps", "8.5"]))
        .success()
        .json();
    assert_eq!(integer(&report, "requests"), 30, "{report}");
    assert_eq!(integer(&report, "completed"), 30);
    assert_eq!(number(&report, "reject_rate"), 0.0);
    assert!((number(&report, "rate_per_s") - 0.5).abs() < 1e-12);
    // The window runs from 0 to the last byte, so every completion fits inside it.
    let window_s = number(&report, "window_s");
    assert!(
        number(&report["completion_s"], "max") <= window_s + 1e-6,
        "{report}"
    );
    assert!(number(&report, "throughput_gbps") > 0.0);
}

#[test]
fn a_trace_is_replayed_record_by_record_until_the_run_ends() {
    let dir = TempDir::new("sim-trace");
    let trace = dir.write(
        "trace.csv",
        "time_s,operation,key,size_bytes\n0.5,read,alpha,1000000000\n10,write,beta,200000000\n20,read,gamma,3000000000\n7200,read,too-late,1000\n",
    );
    let trace = trace.to_str().unwrap();
    let args = small(&["--trace", trace, "--hours", "1", "--warmup-hours", "0"]);
    let report = spinwise(&args).success().json();
    // The record at 7,200 s lies after the one-hour run and is not replayed.
    assert_eq!(integer(&report, "requests"), 3, "{report}");
    assert_eq!(integer(&report, "completed"), 3);
    assert_eq!(integer(&report, "budget_violations"), 0);
    let again = spinwise(&args).success().json();
    assert_eq!(report["trace_hash"], again["trace_hash"]);
}

#[test]
fn a_malformed_trace_is_refused_with_its_file_line_and_field() {
    let dir = TempDir::new("sim-bad-trace");
    let trace = dir.write(
        "bad.csv",
        "time_s,operation,key,size_bytes\n0,read,a,10\n1,read,b,lots\n",
    );
    spinwise(small(&["--trace", trace.to_str().unwrap()]))
        .refused()
        .stderr_mentions(&["bad.csv", "line 3", "size_bytes", "lots"]);
    let header = dir.write("header.csv", "when,what,key,bytes\n");
    spinwise(small(&["--trace", header.to_str().unwrap()]))
        .refused()
        .stderr_mentions(&["line 1", "time_s,operation,key,size_bytes"]);
    spinwise(small(&[
        "--trace",
        dir.join("missing.csv").to_str().unwrap(),
    ]))
    .refused()
    .stderr_mentions(&["missing.csv"]);
}

#[test]
fn blob_sizes_are_bytes_or_vhd_and_anything_else_is_refused() {
    let vhd = spinwise(small(&[
        "--rate",
        "0.2",
        "--hours",
        "2",
        "--blob-size",
        "vhd",
    ]))
    .success()
    .json();
    assert!(integer(&vhd, "completed") > 0, "{vhd}");
    spinwise(small(&["--rate", "0.2", "--blob-size", "big"]))
        .refused()
        .stderr_mentions(&["--blob-size", "big"]);
    spinwise(small(&["--rate", "0.2", "--blob-size", "0"]))
        .refused()
        .stderr_mentions(&["blob_bytes"]);
}

#[test]
fn a_failed_disk_is_rebuilt_and_its_rebuild_time_reported() {
    let report = spinwise(small(&[
        "--rate",
        "0.2",
        "--hours",
        "2",
        "--warmup-hours",
        "0.5",
        "--fail-disk",
        "--failed-bytes",
        "3000000000",
        "--failed-stacks",
        "40",
    ]))
    .success()
    .json();
    let rebuild = &report["rebuild"];
    assert_eq!(integer(rebuild, "stacks"), 40, "{report}");
    assert_eq!(number(rebuild, "failed_at_s"), 1800.0);
    // At least the written stacks' bytes at one disk's bandwidth (well under 1 GB/s).
    let rebuild_s = number(&report, "rebuild_s");
    assert!(
        rebuild_s > 3.0 && rebuild_s == number(rebuild, "time_s"),
        "{report}"
    );
    assert_eq!(integer(&report, "budget_violations"), 0);
    // dense-jbod-60's layout has no classes: no per-class split, no failed class.
    assert_eq!(report["ttfb_by_class_s"], serde_json::json!([]), "{report}");
    assert!(report["rebuild_class"].is_null(), "{report}");
    let healthy = spinwise(small(&["--rate", "0.2", "--hours", "2"]))
        .success()
        .json();
    assert!(healthy["rebuild_s"].is_null() && healthy["rebuild"].is_null());
    assert!(healthy["rebuild_class"].is_null());
}

#[test]
fn a_failure_on_a_layout_with_classes_names_the_failed_class_and_splits_ttfb_by_class() {
    let report = spinwise([
        "sim",
        "--preset",
        "ocp-cold-storage",
        "--rate",
        "0.2",
        "--hours",
        "2",
        "--warmup-hours",
        "0.5",
        "--fail-disk",
        "--failed-bytes",
        "3000000000",
        "--failed-stacks",
        "40",
        "--json",
    ])
    .success()
    .json();
    // The failed disk's class indexes the per-class time to first byte (ocp-cold-storage's
    // layout has two classes), whose counts add up to the all-class count.
    let by_class = report["ttfb_by_class_s"].as_array().expect("a list");
    assert_eq!(by_class.len(), 2, "{report}");
    let class = integer(&report, "rebuild_class") as usize;
    assert!(class < by_class.len(), "{report}");
    let counted: u64 = by_class.iter().map(|s| integer(s, "count")).sum();
    assert_eq!(counted, integer(&report["ttfb_s"], "count"), "{report}");
    assert!(counted > 0, "{report}");
    for summary in by_class {
        for statistic in ["mean", "p50", "p99", "max"] {
            assert!(summary[statistic].is_number(), "{statistic} in {summary}");
        }
    }
}

#[test]
fn per_disk_yearly_metrics_and_the_reject_rate_are_reported() {
    let report = spinwise(SMALL_RUN).success().json();
    for key in [
        "reject_rate",
        "spin_ups_per_disk_per_year",
        "tb_per_disk_per_year",
    ] {
        assert!(number(&report, key) >= 0.0, "{key} in {report}");
    }
    assert!(number(&report, "spin_ups_per_disk_per_year") > 0.0);
    assert!(number(&report, "tb_per_disk_per_year") > 0.0);
}

#[test]
fn bad_workload_and_failure_flags_are_refused_clearly() {
    spinwise(small(&["--burst", "0"]))
        .refused()
        .stderr_mentions(&["burst"]);
    spinwise(small(&["--rate", "1", "--burst", "10"])).usage_error();
    spinwise(small(&["--rate", "1", "--failed-bytes", "10"])).usage_error();
    spinwise(small(&[])).usage_error();
    spinwise(small(&[
        "--rate",
        "0.5",
        "--hours",
        "2",
        "--fail-disk",
        "--fail-at-hours",
        "5",
    ]))
    .refused()
    .stderr_mentions(&["disk failure at 5 h"]);
    spinwise(small(&[
        "--rate",
        "0.5",
        "--fail-disk",
        "--failed-stacks",
        "0",
    ]))
    .refused()
    .stderr_mentions(&["stripe stacks"]);
}

#[test]
fn a_switch_latency_scale_shortens_every_spin_up_and_is_reported() {
    let described = spinwise(SMALL_RUN).success().json();
    let mut args: Vec<&str> = SMALL_RUN.to_vec();
    args.extend(["--switch-latency-scale", "0.25"]);
    let faster = spinwise(args).success().json();
    assert_eq!(number(&described, "switch_latency_scale"), 1.0);
    assert_eq!(number(&faster, "switch_latency_scale"), 0.25);
    let (before, after) = (
        number(&described["spin_up_s"], "mean"),
        number(&faster["spin_up_s"], "mean"),
    );
    assert!(
        after > 0.0 && after < before * 0.3,
        "a quarter of every spin-up and mount latency: {before} s → {after} s"
    );
    assert_eq!(integer(&faster, "budget_violations"), 0);
}

#[test]
fn a_switch_latency_change_keeps_a_layout_file_planned_for_the_rack() {
    let dir = TempDir::new("sim-latency-layout");
    let layout = small_layout(&dir);
    let mut args: Vec<std::ffi::OsString> = SMALL_RUN.iter().map(Into::into).collect();
    args.extend(["--layout".into(), layout.clone().into_os_string()]);
    args.extend(["--switch-latency-scale".into(), "2".into()]);
    args.push("--no-high-load-mounts".into());
    let report = spinwise(&args).success().json();
    assert_eq!(number(&report, "switch_latency_scale"), 2.0);
    assert_eq!(report["high_load_mounts"], serde_json::json!(false));
    // A layout for another rack is still refused, latency change or not.
    let mut other: Vec<std::ffi::OsString> = ["sim", "--preset", "ocp-cold-storage", "--rate", "1"]
        .iter()
        .map(Into::into)
        .collect();
    other.extend(["--layout".into(), layout.into_os_string()]);
    other.extend(["--switch-latency-scale".into(), "0.5".into()]);
    spinwise(&other)
        .refused()
        .stderr_mentions(&["layout", "dense-jbod-60"]);
}

#[test]
fn a_switch_latency_scale_outside_its_range_is_refused() {
    for scale in ["0", "-1", "NaN", "inf", "101"] {
        let mut args: Vec<String> = SMALL_RUN.iter().map(|a| a.to_string()).collect();
        args.push(format!("--switch-latency-scale={scale}"));
        spinwise(args)
            .refused()
            .stderr_mentions(&["--switch-latency-scale"]);
    }
}

#[test]
fn concurrent_requests_override_the_rack_and_are_reported_and_out_of_range_is_refused() {
    // The pelican preset serves four per class; --concurrent-requests 1 serves one at a time,
    // which at 5 req/s (above what either carries) carries less.
    let run = |extra: &[&str]| {
        spinwise(pelican_at_40_gbps(&["--rate", "5", "--hours", "3"], extra))
            .success()
            .json()
    };
    let four = run(&[]);
    let one = run(&["--concurrent-requests", "1"]);
    assert_eq!(integer(&four, "concurrent_requests_per_class"), 4);
    assert_eq!(integer(&one, "concurrent_requests_per_class"), 1);
    let (four_gbps, one_gbps) = (
        number(&four, "throughput_gbps"),
        number(&one, "throughput_gbps"),
    );
    assert!(one_gbps < four_gbps, "{one_gbps} vs {four_gbps} Gbps");
    assert_eq!(integer(&four, "budget_violations"), 0);
    // FP serves one request per group, whatever the rack says.
    let fp = run(&["--policy", "fp"]);
    assert_eq!(integer(&fp, "concurrent_requests_per_class"), 1);
    for bad in ["0", "65"] {
        let mut args: Vec<String> = SMALL_RUN.iter().map(|a| a.to_string()).collect();
        args.push(format!("--concurrent-requests={bad}"));
        spinwise(args)
            .refused()
            .stderr_mentions(&["--concurrent-requests", "1 to 64"]);
    }
}

/// The small run with `--requests-out path`.
fn small_run_writing_requests_to(path: &std::path::Path) -> Vec<String> {
    let mut args: Vec<String> = SMALL_RUN.iter().map(|a| a.to_string()).collect();
    args.extend(["--requests-out".into(), path.display().to_string()]);
    args
}

#[test]
fn requests_out_writes_one_row_per_counted_read_with_ordered_times() {
    let dir = TempDir::new("sim-requests-out");
    let path = dir.join("reads.csv");
    let report = spinwise(small_run_writing_requests_to(&path))
        .success()
        .json();
    let table = Table::read(&path);
    assert_eq!(table.len() as u64, integer(&report, "completed"));
    assert_eq!(
        table.len() as u64,
        report["ttfb_s"]["count"].as_u64().unwrap()
    );
    assert!(table.column("system").iter().all(|s| *s == "simulator"));
    assert!(table.column("tier").iter().all(|t| *t == "standard"));
    let column = |name| table.numbers(name);
    let (arrival, submitted, serve) = (
        column("arrival_s"),
        column("submitted_s"),
        column("serve_s"),
    );
    let (first_byte, last_byte) = (column("first_byte_s"), column("last_byte_s"));
    for read in 0..table.len() {
        assert!(arrival[read] >= 0.5 * 3600.0 && arrival[read] < 2.0 * 3600.0);
        assert_eq!(submitted[read], arrival[read]);
        assert!(arrival[read] <= serve[read] && serve[read] < first_byte[read]);
        assert!(first_byte[read] < last_byte[read]);
    }
    // The summaries are the records' own: the mean time to first byte agrees.
    let ttfb_mean_s = (0..table.len())
        .map(|read| first_byte[read] - arrival[read])
        .sum::<f64>()
        / table.len() as f64;
    assert!((ttfb_mean_s - number(&report["ttfb_s"], "mean")).abs() < 1e-3);
    assert!(!dir.join("reads.csv.partial").exists());
}

#[test]
fn requests_out_into_a_missing_directory_is_refused_before_the_run() {
    let dir = TempDir::new("sim-requests-out-missing");
    let path = dir.join("no/such/dir/reads.csv");
    spinwise(small_run_writing_requests_to(&path))
        .refused()
        .stderr_mentions(&["no/such/dir/reads.csv"]);
}

#[test]
fn stagger_switches_is_reported_and_refused_outside_one_to_the_queue_depth() {
    let mut args: Vec<String> = SMALL_RUN.iter().map(|a| a.to_string()).collect();
    args.extend(["--network-gbps", "40", "--stagger-switches"].map(String::from));
    let mut staggered = args.clone();
    staggered.push("20".into());
    let report = spinwise(&staggered).success().json();
    assert_eq!(integer(&report, "budget_violations"), 0);
    // The dense JBOD's one server: its classes share a NIC, so staggering is in effect.
    assert_eq!(report["stagger_switches_min_queue"], 20);
    for bad in ["0", "1001"] {
        let mut refused = args.clone();
        refused.push(bad.into());
        spinwise(&refused)
            .refused()
            .stderr_mentions(&["--stagger-switches", bad]);
    }
    // Where nothing would stagger, asking for it is refused rather than dropped.
    let unbounded: Vec<String> = staggered
        .iter()
        .map(|arg| {
            if arg == "40" {
                "unbounded".to_string()
            } else {
                arg.clone()
            }
        })
        .collect();
    spinwise(&unbounded)
        .refused()
        .stderr_mentions(&["--stagger-switches needs a NIC"]);
    let mut fp = staggered.clone();
    fp.extend(["--policy", "fp"].map(String::from));
    spinwise(&fp)
        .refused()
        .stderr_mentions(&["--stagger-switches", "--policy pelican"]);
}

#[test]
fn the_pelican_preset_staggers_from_a_hundred_queued_reads_unless_told_not_to() {
    let pelican = |extra: &[&str]| {
        let run = ["--rate", "2", "--hours", "0.2", "--warmup-hours", "0"];
        pelican_at_40_gbps(&run, extra)
    };
    let preset = spinwise(pelican(&[])).success().json();
    assert_eq!(preset["stagger_switches_min_queue"], 100);
    let described = spinwise(pelican(&["--no-stagger-switches"]))
        .success()
        .json();
    assert!(described["stagger_switches_min_queue"].is_null());
    spinwise(pelican(&[
        "--no-stagger-switches",
        "--stagger-switches",
        "20",
    ]))
    .usage_error()
    .stderr_mentions(&["--no-stagger-switches", "--stagger-switches"]);
}

/// `spinwise sim --preset pelican --network-gbps 40 --json` with `run`'s and then `extra`'s
/// flags.
fn pelican_at_40_gbps(run: &[&str], extra: &[&str]) -> Vec<String> {
    let preset = [
        "sim",
        "--preset",
        "pelican",
        "--network-gbps",
        "40",
        "--json",
    ];
    (preset.iter().chain(run).chain(extra))
        .map(|arg| arg.to_string())
        .collect()
}

#[test]
fn fp_queue_per_scheduler_shares_the_depth_over_a_class_and_only_fp_takes_it() {
    let run = |extra: &[&str]| {
        let mut args: Vec<String> = [
            "sim",
            "--preset",
            "pelican",
            "--rate",
            "8",
            "--hours",
            "1.5",
            "--warmup-hours",
            "0.5",
            "--policy",
            "fp",
            "--json",
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().map(|a| a.to_string()));
        spinwise(args).success().json()
    };
    let per_group = run(&[]);
    let per_scheduler = run(&["--fp-queue-per-scheduler"]);
    assert_eq!(per_group["fp_queues"], "per_group");
    assert_eq!(per_scheduler["fp_queues"], "per_scheduler");
    // At 8 req/s through 40 Gbps the queues fill: a class's 12 groups sharing 1,000 places
    // refuse reads that 12 queues of 1,000 would hold.
    let rejected = |v: &serde_json::Value| v["rejected"].as_u64().expect("rejected");
    assert!(
        rejected(&per_scheduler) > rejected(&per_group),
        "{} vs {}",
        rejected(&per_scheduler),
        rejected(&per_group)
    );
    assert!(per_group["service_from_dequeue_s"]["mean"].is_number());
    let mut args: Vec<String> = SMALL_RUN.iter().map(|a| a.to_string()).collect();
    args.push("--fp-queue-per-scheduler".into());
    spinwise(args)
        .refused()
        .stderr_mentions(&["--fp-queue-per-scheduler", "--policy fp"]);
}
