//! The Prometheus metrics over a real store: a cold read counts its group's spin-up (and the
//! spin-down after it), the phase gauges show one phase per group, the driver's totals carry
//! over as growing counters, S3 answers are counted by status through a server started with
//! them, an idle spin-down is counted by its cause, and the listener serves `GET /metrics` and
//! nothing else.

use crate::common;

use common::cold::{migrated_group, rest_group};
use common::wire::exchange;
use common::{bucket, eventually, get_bytes, pattern, put, sample, start};
use spinwise_s3::metrics::{S3Metrics, serve_metrics};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_read_counts_its_groups_spin_up_and_the_gauges_show_the_driver() {
    let harness = start().await;
    let metrics = Arc::new(S3Metrics::new(Arc::clone(&harness.store)));
    let watching = metrics.watch();
    bucket(&harness, "watched").await;
    let bytes = pattern(300_000, 5);
    put(&harness.client, "watched", "cold", &bytes).await;
    common::cold::migrate_everything(&harness.store).await;
    let group = migrated_group(&harness.store, "watched/cold").await;
    rest_group(&harness.store, group).await;
    let before = metrics.scrape().await.unwrap();
    let ups = format!("spinwise_group_spin_ups_total{{group=\"{group}\"}}");
    let ups_before = sample(&before, &ups).expect("every group's series exists");

    assert!(get_bytes(&harness.client, "watched", "cold", None).await == bytes);
    // The driver's broadcast reaches the counter on the watcher's task, and the job's
    // completion reaches the engine after the reply's last byte: wait for both.
    let served_before = sample(&before, "spinwise_jobs_served_total").unwrap();
    eventually("the spin-up and the served job are counted", async || {
        let scraped = metrics.scrape().await.unwrap();
        sample(&scraped, &ups) > Some(ups_before)
            && sample(&scraped, "spinwise_jobs_served_total") > Some(served_before)
    })
    .await;
    let after = metrics.scrape().await.unwrap();
    assert_eq!(
        sample(&after, &ups),
        Some(ups_before + 1.0),
        "one spin-up for one cold read:\n{after}"
    );
    for other in 0..harness.store.layout().groups.len() {
        let phases: f64 = ["resting", "spinning_up", "active", "spinning_down"]
            .iter()
            .map(|phase| {
                let series = format!("spinwise_group_phase{{group=\"{other}\",phase=\"{phase}\"}}");
                sample(&after, &series).unwrap_or_else(|| panic!("no {series}:\n{after}"))
            })
            .sum();
        assert_eq!(phases, 1.0, "group {other} is in exactly one phase");
    }
    let served_after = sample(&after, "spinwise_jobs_served_total").unwrap();
    assert!(
        served_after > served_before,
        "{served_before} → {served_after}"
    );
    assert_eq!(sample(&after, "spinwise_budget_refusals_total"), Some(0.0));
    // One migrated read, too short to take a parity column (crates/spinwise-store/src/columns.rs).
    let reads = |text: &str, name: &str| sample(text, name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(
        reads(&after, "spinwise_migrated_reads_total")
            - reads(&before, "spinwise_migrated_reads_total"),
        1.0
    );
    assert_eq!(reads(&after, "spinwise_migrated_reads_parity_total"), 0.0);
    assert_eq!(sample(&after, "spinwise_failed_disks"), Some(0.0));
    assert!(
        after.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
    watching.abort();
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_group_spinning_down_is_counted_by_cause_and_the_idle_time_is_shown() {
    let harness = start().await;
    let metrics = Arc::new(S3Metrics::new(Arc::clone(&harness.store)));
    let watching = metrics.watch();
    bucket(&harness, "idle").await;
    let bytes = pattern(100_000, 7);
    put(&harness.client, "idle", "cold", &bytes).await;
    common::cold::migrate_everything(&harness.store).await;
    let group = migrated_group(&harness.store, "idle/cold").await;
    rest_group(&harness.store, group).await;
    let driver = &harness.store.rack_io().driver;
    driver.set_idle_spin_down_us(Some(1_000_000)).await.unwrap();
    let idle =
        format!("spinwise_group_spin_downs_by_cause_total{{group=\"{group}\",cause=\"idle\"}}");
    let before = metrics.scrape().await.unwrap();
    let idle_before = sample(&before, &idle).expect("every group and cause has a series");
    assert_eq!(
        sample(&before, "spinwise_idle_spin_down_seconds"),
        Some(1.0)
    );

    assert!(get_bytes(&harness.client, "idle", "cold", None).await == bytes);
    let resting = format!("spinwise_group_phase{{group=\"{group}\",phase=\"resting\"}}");
    // The driver spins the group down after 1 s of real time (it keeps the wall clock).
    let mut after = String::new();
    eventually("the group rests after an idle spin-down", async || {
        after = metrics.scrape().await.unwrap();
        sample(&after, &resting) == Some(1.0) && sample(&after, &idle) > Some(idle_before)
    })
    .await;
    assert_eq!(
        sample(&after, &resting),
        Some(1.0),
        "the read's group rests:\n{after}"
    );
    assert_eq!(
        sample(&after, &idle),
        Some(idle_before + 1.0),
        "one idle spin-down after the read:\n{after}"
    );
    watching.abort();
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_serves_get_metrics_only_and_counts_answers_of_an_observed_server() {
    let harness = start().await;
    let metrics = Arc::new(S3Metrics::new(Arc::clone(&harness.store)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = serve_metrics(listener, Arc::clone(&metrics));
    for status in [200, 200, 404, 503] {
        metrics.record_response(status);
    }

    let scraped = exchange(addr, "GET", "/metrics", &[], b"", None).await;
    assert_eq!(scraped.status, 200);
    let text = scraped.body;
    assert_eq!(
        sample(&text, "spinwise_s3_responses_total{status=\"200\"}"),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "spinwise_s3_responses_total{status=\"404\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "spinwise_s3_responses_total{status=\"503\"}"),
        Some(1.0)
    );
    // Every group's spin counters exist before any spin-up.
    let groups = harness.store.layout().groups.len();
    for group in 0..groups {
        let series = format!("spinwise_group_spin_ups_total{{group=\"{group}\"}}");
        assert_eq!(sample(&text, &series), Some(0.0), "{series}:\n{text}");
    }

    let elsewhere = exchange(addr, "GET", "/", &[], b"", None).await;
    assert_eq!(elsewhere.status, 404);
    let posted = exchange(addr, "POST", "/metrics", &[], b"x", None).await;
    assert_eq!(posted.status, 404);
    serving.abort();
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gets_of_objects_just_put_are_counted_as_tail_cache_hits() {
    let harness = start().await;
    let metrics = Arc::new(S3Metrics::new(Arc::clone(&harness.store)));
    bucket(&harness, "tail").await;
    let before = metrics.scrape().await.unwrap();
    let bytes = pattern(40_000, 6);
    put(&harness.client, "tail", "recent", &bytes).await;
    assert!(get_bytes(&harness.client, "tail", "recent", None).await == bytes);
    assert!(get_bytes(&harness.client, "tail", "recent", None).await == bytes);
    let after = metrics.scrape().await.unwrap();
    let grew = |name: &str| {
        let value = |text: &str| sample(text, name).unwrap_or_else(|| panic!("no {name}:\n{text}"));
        value(&after) - value(&before)
    };
    assert_eq!(
        grew("spinwise_tail_cache_hits_total{level=\"ram\"}"),
        2.0,
        "{after}"
    );
    assert_eq!(grew("spinwise_tail_cache_hits_total{level=\"flash\"}"), 0.0);
    assert_eq!(grew("spinwise_tail_cache_misses_total"), 0.0);
    assert_eq!(grew("spinwise_tail_cache_served_bytes_total"), 80_000.0);
    assert_eq!(grew("spinwise_tail_cache_insertions_total"), 1.0);
    assert!(sample(&after, "spinwise_tail_cache_entries{level=\"ram\"}") >= Some(1.0));
    assert!(sample(&after, "spinwise_tail_cache_used_bytes{level=\"ram\"}") >= Some(40_000.0));
    assert_eq!(
        sample(&after, "spinwise_tail_cache_used_bytes{level=\"flash\"}"),
        Some(0.0)
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_collection_is_counted_and_the_staging_devices_are_gauged() {
    let harness = start().await;
    let metrics = Arc::new(S3Metrics::new(Arc::clone(&harness.store)));
    bucket(&harness, "warm").await;
    let before = metrics.scrape().await.unwrap();
    for index in 0..20 {
        let key = format!("k{index:02}");
        put(&harness.client, "warm", &key, &pattern(6_000, index)).await;
        if index % 2 == 0 {
            harness.store.delete(&format!("warm/{key}")).await.unwrap();
        }
    }
    // The server's open segment is sealed as a restart would seal it.
    harness
        .store
        .staging()
        .seal_idle(spinwise_catalog::Tier::Warm);
    let report = harness.store.collect_warm(Some(0.3), |_| {}).await.unwrap();
    assert_eq!(report.records_moved, 10, "{report:?}");
    let after = metrics.scrape().await.unwrap();
    let grew = |name: &str| {
        let value = |text: &str| sample(text, name).unwrap_or_else(|| panic!("no {name}:\n{text}"));
        value(&after) - value(&before)
    };
    assert_eq!(grew("spinwise_warm_records_moved_total"), 10.0, "{after}");
    assert_eq!(grew("spinwise_warm_records_dead_total"), 0.0);
    assert!(grew("spinwise_warm_segments_freed_total") >= 1.0, "{after}");
    assert_eq!(
        grew("spinwise_warm_bytes_reclaimed_total"),
        report.bytes_reclaimed as f64
    );
    assert!(sample(&after, "spinwise_staging_device_used_bytes{device=\"0\"}") >= Some(60_000.0));
    assert_eq!(sample(&after, "spinwise_staging_tail_device"), Some(0.0));
    harness.server.stop().await;
}
