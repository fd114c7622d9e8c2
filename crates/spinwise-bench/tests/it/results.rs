//! The per-step statistics: nearest-rank percentiles, throughput over the step's wall time.

use spinwise_bench::OperationStats;
use std::time::Duration;

#[test]
fn percentiles_are_nearest_rank_over_every_request() {
    let latencies: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
    let stats = OperationStats::of(&latencies, 50_000_000, Duration::from_secs(2));
    assert_eq!(stats.requests, 100);
    assert_eq!(stats.latency_p50_ms, 50.0);
    assert_eq!(stats.latency_p99_ms, 99.0);
    assert_eq!(stats.latency_max_ms, 100.0);
    assert_eq!(stats.latency_mean_ms, 50.5);
    assert_eq!(stats.mb_per_s, 25.0);
    assert_eq!(stats.files_per_s, 50.0);
}

#[test]
fn a_step_without_requests_reports_zeros_not_nan() {
    let stats = OperationStats::of(&[], 0, Duration::ZERO);
    assert_eq!(stats, OperationStats::default());
}
