//! `spinwise sim`: one JSON object with issue 3's fields, zero budget violations, the same seed
//! giving the same trace, every policy running, and clear refusals for what is not valid.

mod common;

use common::{integer, number, spinwise};

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
