//! Whole runs against a store directory: every step measured, every read checked, the run's
//! objects removed unless kept, and a read of other bytes caught as a mismatch.

use spinwise_bench::run::RunOptions;
use spinwise_bench::{BenchError, BenchPlan, FileSpec, Progress, ReadSkew, Target};
use spinwise_store::{RackSource, SqliteStore, StoreConfig, Tier};
use std::sync::{Arc, Mutex};

const JBOD_RACK: &str = include_str!("../../../../presets/dense-jbod-60.toml");

async fn new_store(dir: &std::path::Path) {
    let rack = spinwise_model::parse_rack("dense-jbod-60", JBOD_RACK).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    let mut config = StoreConfig::new(
        RackSource::Preset("dense-jbod-60".into()),
        JBOD_RACK.to_string(),
        layout,
    );
    config.time_factor = 0.001;
    SqliteStore::init_sqlite(dir, config)
        .await
        .unwrap()
        .close()
        .await;
}

fn small_plan() -> BenchPlan {
    BenchPlan {
        files: (0..24)
            .map(|index| FileSpec {
                key: format!("file-{index:03}"),
                size_bytes: 1_000 + 9_973 * index,
            })
            .collect(),
        capacity_bytes: 4 << 20,
        steps: 3,
        reads_per_step: 10,
        read_skew: ReadSkew::Zipf { exponent: 1.0 },
        concurrency: 3,
        seed: 11,
    }
}

fn options(keep: bool) -> RunOptions {
    RunOptions {
        prefix: "bench/".into(),
        keep,
        migrate: Some(spinwise_bench::Placement::Packed),
        read_after: std::time::Duration::ZERO,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_measures_every_step_and_removes_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    new_store(dir.path()).await;
    let target = Arc::new(Target::store(dir.path(), Tier::Cold).await.unwrap());
    let phases = Arc::new(Mutex::new(Vec::new()));
    let seen = phases.clone();
    let progress = Arc::new(move |p: Progress| seen.lock().unwrap().push((p.step, p.phase)));
    let plan = small_plan();
    let report = spinwise_bench::run(target.clone(), &plan, &options(false), progress)
        .await
        .unwrap();
    assert_eq!(report.rows.len(), 3);
    let written: u64 = report.rows.iter().map(|r| r.write.bytes).sum();
    assert_eq!(written, plan.total_bytes());
    for (row, step) in report.rows.iter().zip(plan.steps()) {
        assert_eq!(row.read.requests, 10);
        assert_eq!(row.write.requests, step.writes.len() as u64);
        assert!(row.write.mb_per_s > 0.0 && row.read.latency_p99_ms > 0.0);
        assert!(row.migrated_bytes.is_some_and(|b| b > 0), "{row:?}");
    }
    let last = report.rows.last().unwrap().utilisation_percent;
    assert!((last - 100.0 * plan.total_bytes() as f64 / (4 << 20) as f64).abs() < 1e-9);
    let seen = phases.lock().unwrap().clone();
    for phase in ["write", "migrate", "read", "clean up"] {
        assert!(seen.iter().any(|(_, p)| *p == phase), "no {phase} progress");
    }
    let Target::Store { store, .. } = &*target else {
        unreachable!()
    };
    assert!(
        store.stat("bench/file-000").await.is_err(),
        "the run's objects are gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_other_bytes_than_were_written_is_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    new_store(dir.path()).await;
    let target = Arc::new(Target::store(dir.path(), Tier::Cold).await.unwrap());
    let plan = small_plan();
    spinwise_bench::run(target.clone(), &plan, &options(true), Arc::new(|_| {}))
        .await
        .unwrap();
    let expected = spinwise_bench::payload::Payload::new(plan.largest_file_bytes(), plan.seed)
        .file(5, plan.files[5].size_bytes);
    // The kept object reads back as written…
    target.get("bench/file-005", &expected).await.unwrap();
    // …and once another writer changes one byte, the benchmark refuses the read.
    let mut changed = expected.to_vec();
    changed[expected.len() / 2] ^= 1;
    target
        .put("bench/file-005", bytes::Bytes::from(changed))
        .await
        .unwrap();
    let error = target.get("bench/file-005", &expected).await.unwrap_err();
    assert!(
        matches!(&error, BenchError::Mismatch { key, .. } if key == "bench/file-005"),
        "{error}"
    );
    let shorter = expected.slice(..expected.len() - 1);
    target.put("bench/file-005", shorter).await.unwrap();
    let error = target.get("bench/file-005", &expected).await.unwrap_err();
    assert!(error.to_string().contains("short"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_like_the_simulator_puts_each_file_in_its_trace_group() {
    let dir = tempfile::tempdir().unwrap();
    new_store(dir.path()).await;
    let target = Arc::new(Target::store(dir.path(), Tier::Cold).await.unwrap());
    let plan = small_plan();
    let options = RunOptions {
        migrate: Some(spinwise_bench::Placement::LikeTheSimulator),
        ..options(true)
    };
    spinwise_bench::run(target.clone(), &plan, &options, Arc::new(|_| {}))
        .await
        .unwrap();
    let Target::Store { store, .. } = &*target else {
        unreachable!()
    };
    let groups = store.layout().groups.len() as u32;
    let mut used = std::collections::BTreeSet::new();
    for file in &plan.files {
        let key = format!("bench/{}", file.key);
        let group = store.migrated_group(&key).await.unwrap();
        let expected = spinwise_sim::workload::group_of_key(&key, groups);
        assert_eq!(group, Some(expected), "{key}");
        used.insert(expected);
    }
    assert!(used.len() > 1, "the keys spread over groups: {used:?}");
}
