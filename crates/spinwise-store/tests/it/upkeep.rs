//! The upkeep task and the upkeep lock on a real store (dense-jbod-60, k=3 r=2, SQLite catalog,
//! emulated disks at time factor 0.001): a GET that spins a group up also scrubs the group's
//! overdue blobs (and repairs a flipped byte it finds), recorded durably in the catalog; scrub-only
//! spin-ups of a group come no more often than the configured minimum interval (counted from the
//! driver's activity events); a second process-like store on the same data directory gets
//! `UpkeepBusy` for flush, scrub, rebuild and upkeep but still puts, gets, lists and deletes.
//!
//! `migrate` (tests/common) places a blob in a chosen group by hand.

use crate::common;

use common::{
    advance_upkeep, flip_byte, is_staged, migrate, on_manual_clock, pattern, read_blob,
    upkeep_until,
};
use spinwise_catalog::Catalog;
use spinwise_sched::scheduler::Kind;
use spinwise_store::clock::ManualClock;
use spinwise_store::driver::{GroupActivity, GroupDisks, GroupPhase, Job};
use spinwise_store::{ScrubLedger, ScrubMode};
use spinwise_store::{SqliteStore, Store, StoreConfig, StoreError, UpkeepConfig};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Small fragments so a few KiB make several stripes.
const FRAGMENT_BYTES: u32 = 4096;

fn config(upkeep: UpkeepConfig) -> StoreConfig {
    let mut config = common::jbod_config();
    config.fragment_bytes = FRAGMENT_BYTES;
    config.upkeep = upkeep;
    config
}

async fn new_store(dir: &Path, upkeep: UpkeepConfig) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(upkeep))
        .await
        .unwrap()
}

/// [`new_store`] on a manual clock, which the test moves.
async fn new_clocked_store(dir: &Path, upkeep: UpkeepConfig) -> (SqliteStore, Arc<ManualClock>) {
    on_manual_clock(new_store(dir, upkeep).await)
}

/// Spins `groups` up with empty client jobs (so others the budget cannot keep go down).
async fn touch_groups(store: &SqliteStore, groups: &[u32]) {
    for &group in groups {
        let job = Job::new(group, 0, Kind::Client, |_: &GroupDisks| ());
        let io = store.rack_io();
        io.driver.submit(job).await.unwrap().wait().await.unwrap();
    }
}

async fn get_all(store: &SqliteStore, key: &str) -> Vec<u8> {
    let mut reader = store.get(key, None).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_spins_a_group_up_also_scrubs_its_blobs_and_repairs_a_flipped_byte() {
    let dir = tempfile::tempdir().unwrap();
    // Blobs are due for a piggyback after 1 s (half the interval); no scrub-only spin-up for an
    // hour.
    let upkeep = UpkeepConfig {
        scrub_interval_s: 2.0,
        scrub_min_spin_up_interval_s: 3600.0,
        ..UpkeepConfig::default()
    };
    let (store, clock) = new_clocked_store(dir.path(), upkeep).await;
    let mut blobs = Vec::new();
    for (index, (size, group)) in [(30_000, 0), (12_289, 0), (20_000, 1)]
        .into_iter()
        .enumerate()
    {
        let data = pattern(size, index as u64);
        blobs.push((
            migrate(&store, &format!("object-{index}"), &data, group).await,
            data,
        ));
    }
    let ledger = ScrubLedger::default();
    let forced = store
        .scrub(ScrubMode::Forced, &ledger, |_| {})
        .await
        .unwrap();
    assert_eq!(forced.blobs, 3);
    clock.advance(Duration::from_millis(1100));
    // Groups 0 and 1 go down (the budgets keep only a few groups up), so the GET below spins
    // group 0 up.
    touch_groups(&store, &[2, 3, 4, 5, 6, 7, 8, 9]).await;
    let state = store.rack_io().driver.state().await.unwrap();
    assert_eq!(state.groups[0].phase, GroupPhase::Resting, "{state:?}");
    let (record, data) = &blobs[0];
    let code = &store.rack_io().code;
    flip_byte(
        &store,
        record.disks[3],
        record.id,
        3,
        code.fragment_offset(1) + 17,
    );

    let store = Arc::new(store);
    let mut activity = store.rack_io().driver.subscribe_activity();
    let started_ms = store.now_unix_ms();
    let upkeep = store.start_upkeep().await.unwrap();
    assert_eq!(get_all(&store, "object-0").await, *data);
    upkeep_until(&upkeep, "a piggyback batch", |report| {
        report.piggyback_batches > 0
    })
    .await;
    let report = upkeep.stop().await;
    assert_eq!(report.piggyback_batches, 1, "{report:?}");
    assert_eq!(report.scrub_spin_ups, 0);
    assert_eq!(
        report.scrub.blobs, 2,
        "both of group 0's blobs, not group 1's"
    );
    assert_eq!(report.scrub.bad_fragments, 1);
    assert_eq!(report.scrub.stacks_repaired, 1);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // The catalog shows group 0 verified since the upkeep started, group 1 not.
    let catalog = store.catalog();
    assert!(
        catalog
            .scrub_due(0, started_ms, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(catalog.scrub_due(1, started_ms, 10).await.unwrap().len(), 1);
    assert!(catalog.last_scrub_in_group(0).await.unwrap().unwrap() >= started_ms);
    // Only group 0 came up while upkeep ran (the GET's spin-up).
    let mut ups = Vec::new();
    while let Ok(event) = activity.try_recv() {
        if let GroupActivity::Up { group, .. } = event {
            ups.push(group);
        }
    }
    assert_eq!(ups, [0]);
    let (bytes, repairs) = read_blob(&store, record.id).await;
    assert!(bytes == *data);
    assert!(repairs.is_clean(), "{repairs:?}");
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_group_is_spun_up_for_scrub_alone_more_often_than_the_minimum_interval() {
    let dir = tempfile::tempdir().unwrap();
    let min_interval = Duration::from_millis(1000);
    // Every blob is due again 0.2 s after its scrub; each batch scrubs one blob.
    let upkeep = UpkeepConfig {
        scrub_interval_s: 0.2,
        scrub_min_spin_up_interval_s: min_interval.as_secs_f64(),
        scrub_bytes_per_spin_up: 1,
        ..UpkeepConfig::default()
    };
    let (store, clock) = new_clocked_store(dir.path(), upkeep).await;
    for group in 0..4u32 {
        for copy in 0..2u64 {
            let key = format!("g{group}-{copy}");
            migrate(
                &store,
                &key,
                &pattern(5_000, u64::from(group) * 10 + copy),
                group,
            )
            .await;
        }
    }
    touch_groups(&store, &[5, 6]).await;
    let store = Arc::new(store);
    let mut activity = store.rack_io().driver.subscribe_activity();
    let upkeep = store.start_upkeep().await.unwrap();
    // 3.25 s of the store's clock in ticks of 250 ms; each spin-up is stamped with the time of
    // the tick that caused it (a tick's spin-ups are done when it is).
    let mut ups: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut now_us = advance_upkeep(&clock, &upkeep, Duration::ZERO).await;
    loop {
        while let Ok(event) = activity.try_recv() {
            if let GroupActivity::Up { group, .. } = event {
                ups.entry(group).or_default().push(now_us);
            }
        }
        if now_us >= 3_250_000 {
            break;
        }
        now_us = advance_upkeep(&clock, &upkeep, Duration::from_millis(250)).await;
    }
    let report = upkeep.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.scrub_spin_ups >= 4, "{report:?}");
    assert_eq!(
        ups.keys().copied().collect::<Vec<_>>(),
        [0, 1, 2, 3],
        "{ups:?}"
    );
    let floor_us = min_interval.as_micros() as u64;
    for (group, times) in &ups {
        for pair in times.windows(2) {
            assert!(
                pair[1] - pair[0] >= floor_us,
                "group {group} came up at {times:?}"
            );
        }
    }
    // The rule is not vacuous: some group was spun up for scrub again after the interval.
    assert!(ups.values().any(|times| times.len() >= 2), "{ups:?}");
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_store_on_the_data_directory_gets_upkeep_busy_but_still_puts_and_gets() {
    let dir = tempfile::tempdir().unwrap();
    let first = new_store(dir.path(), UpkeepConfig::default()).await;
    first.put("staged", &b"hello"[..]).await.unwrap();
    // Another open of the same directory (its own lock file handle, as another process has).
    let second = Store::open_sqlite(&dir.path().join("data")).await.unwrap();
    let guard = first.upkeep_lock().unwrap();
    // Shared inside one store: a second guard and the first store's own flush work.
    drop(first.upkeep_lock().unwrap());
    let busy = |result: Result<(), StoreError>| match result {
        Err(StoreError::UpkeepBusy { path }) => assert!(path.ends_with("upkeep.lock"), "{path}"),
        other => panic!("expected UpkeepBusy, got {other:?}"),
    };
    busy(second.flush(|_| {}).await.map(|_| ()));
    busy(
        second
            .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
            .await
            .map(|_| ()),
    );
    busy(second.rebuild(|_| {}).await.map(|_| ()));
    let second = Arc::new(second);
    busy(second.start_upkeep().await.map(|_| ()));
    assert!(
        second
            .upkeep_lock()
            .unwrap_err()
            .to_string()
            .contains("upkeep.lock")
    );
    // Objects never take the lock.
    second.put("other", &b"world"[..]).await.unwrap();
    assert_eq!(get_all(&second, "staged").await, b"hello");
    assert_eq!(second.list("", None, 10).await.unwrap().len(), 2);
    second.delete("other").await.unwrap();
    // Released: the second store's flush now runs.
    drop(guard);
    let flushed = second.flush(|_| {}).await.unwrap();
    assert_eq!(flushed.objects_moved, 1);
    // And the first one's upkeep is busy while the second holds it.
    let upkeep = second.start_upkeep().await.unwrap();
    assert!(matches!(
        first.flush(|_| {}).await,
        Err(StoreError::UpkeepBusy { .. })
    ));
    upkeep.stop().await;
    first.flush(|_| {}).await.unwrap();
    Arc::try_unwrap(second).ok().unwrap().close().await;
    first.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_toml_without_an_upkeep_section_loads_with_defaults_and_bad_policies_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let custom = UpkeepConfig {
        scrub_interval_s: 7.0,
        scrub_min_spin_up_interval_s: 3.0,
        scrub_bytes_per_spin_up: 1 << 20,
        migrate_after_s: 120.0,
        compact_dead_fraction: 0.25,
        compact_bytes_per_spin_up: 1 << 20,
        compaction: spinwise_store::CompactionMode::NonPreemptive,
        compact_unit_bytes: 1 << 16,
        compact_hard_free_fraction: 0.2,
        compact_max_yield_s: 0.5,
    };
    let store = new_store(dir.path(), custom.clone()).await;
    store.close().await;
    let data = dir.path().join("data");
    let reopened = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(reopened.config().upkeep, custom);
    reopened.close().await;
    // A store.toml written before upkeep existed has no [upkeep] table.
    let path = data.join("store.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("[upkeep]").expect("store.toml has [upkeep]");
    let end = text[start..]
        .find("\n[")
        .map_or(text.len(), |end| start + end + 1);
    std::fs::write(&path, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let old = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(old.config().upkeep, UpkeepConfig::default());
    old.close().await;

    for bad in [
        UpkeepConfig {
            scrub_interval_s: 0.0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            scrub_min_spin_up_interval_s: f64::NAN,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            scrub_bytes_per_spin_up: 0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            migrate_after_s: -1.0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_dead_fraction: 0.0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_dead_fraction: 1.5,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_bytes_per_spin_up: 0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_unit_bytes: 0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_hard_free_fraction: 1.0,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_hard_free_fraction: -0.1,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_max_yield_s: f64::INFINITY,
            ..UpkeepConfig::default()
        },
        // Finite but past any Duration: the upkeep task panicked on it and `store upkeep`
        // still exited 0 (until 2026-12-01).
        UpkeepConfig {
            scrub_min_spin_up_interval_s: 1e300,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            scrub_interval_s: spinwise_store::config::MAX_SETTING_S * 1.01,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            migrate_after_s: 1e20,
            ..UpkeepConfig::default()
        },
        UpkeepConfig {
            compact_max_yield_s: 1e20,
            ..UpkeepConfig::default()
        },
    ] {
        let other = tempfile::tempdir().unwrap();
        match Store::init_sqlite(&other.path().join("data"), config(bad)).await {
            Err(StoreError::Config { message, .. }) => {
                assert!(message.contains("upkeep."), "{message}")
            }
            Err(other) => panic!("expected a Config error, got {other}"),
            Ok(_) => panic!("expected a Config error, got a store"),
        }
    }
    // A time factor past a Duration's range made a disk's thread sleep for ever, and every
    // command after one interrupted flush hang (until 2026-12-01).
    let other = tempfile::tempdir().unwrap();
    let slow = StoreConfig {
        time_factor: 1e300,
        ..config(UpkeepConfig::default())
    };
    match Store::init_sqlite(&other.path().join("data"), slow).await {
        Err(StoreError::Config { message, .. }) => {
            assert!(message.contains("time_factor"), "{message}")
        }
        Err(other) => panic!("expected a Config error, got {other}"),
        Ok(_) => panic!("expected a Config error, got a store"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_task_migrates_staged_objects_once_the_oldest_has_waited_long_enough() {
    let dir = tempfile::tempdir().unwrap();
    let upkeep = UpkeepConfig {
        migrate_after_s: 1.5,
        scrub_min_spin_up_interval_s: 3600.0,
        ..UpkeepConfig::default()
    };
    let (store, clock) = new_clocked_store(dir.path(), upkeep).await;
    let store = Arc::new(store);
    let bytes = pattern(50_000, 11);
    store.put("young", &bytes[..]).await.unwrap();
    let task = store.start_upkeep().await.unwrap();
    // The first tick is at once: the object is younger than the policy, so it stays staged,
    // as it does at every tick (every 375 ms) until it has waited 1.5 s.
    advance_upkeep(&clock, &task, Duration::ZERO).await;
    assert!(is_staged(&store, "young").await, "migrated at once");
    advance_upkeep(&clock, &task, Duration::from_millis(1400)).await;
    assert!(is_staged(&store, "young").await, "migrated before its time");
    advance_upkeep(&clock, &task, Duration::from_millis(375)).await;
    assert!(!is_staged(&store, "young").await, "not migrated on time");
    let report = task.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.duties.flushes, 1);
    assert_eq!(report.duties.objects_migrated, 1);
    assert_eq!(get_all(&store, "young").await, bytes);
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_staged_object_does_not_make_the_upkeep_task_flush_at_every_tick() {
    let dir = tempfile::tempdir().unwrap();
    let upkeep = UpkeepConfig {
        migrate_after_s: 1.5,
        scrub_min_spin_up_interval_s: 3600.0,
        ..UpkeepConfig::default()
    };
    let (store, clock) = new_clocked_store(dir.path(), upkeep).await;
    let store = Arc::new(store);
    let bad = pattern(50_000, 12);
    let record = store.put("bad", &bad[..]).await.unwrap();
    let spinwise_catalog::ObjectLocation::Staged { segment, .. } = record.location else {
        panic!("just put: staged");
    };
    let path = spinwise_store::staging::segment_path(store.staging().dir(), segment);
    let mut raw = std::fs::read(&path).unwrap();
    let at = raw.windows(64).position(|w| w == &bad[..64]).unwrap();
    raw[at + 5] ^= 0x01;
    std::fs::write(&path, raw).unwrap();
    let task = store.start_upkeep().await.unwrap();
    advance_upkeep(&clock, &task, Duration::ZERO).await;
    // Due at 1.5 s: the flush leaves the damaged object staged.
    advance_upkeep(&clock, &task, Duration::from_millis(1875)).await;
    assert_eq!(task.report().duties.flushes, 1);
    // It stays the oldest staged object, so migration stays due; until 2026-12-01 every tick
    // (each 375 ms) flushed again. Now the next flush waits migrate_after_s.
    let good = pattern(40_000, 13);
    store.put("good", &good[..]).await.unwrap();
    for _ in 0..3 {
        advance_upkeep(&clock, &task, Duration::from_millis(375)).await;
    }
    assert_eq!(task.report().duties.flushes, 1);
    assert!(is_staged(&store, "good").await);
    advance_upkeep(&clock, &task, Duration::from_millis(750)).await;
    let report = task.stop().await;
    assert_eq!(report.duties.flushes, 2, "{report:?}");
    assert_eq!(report.duties.objects_migrated, 1);
    assert!(!is_staged(&store, "good").await);
    assert!(is_staged(&store, "bad").await);
    assert_eq!(get_all(&store, "good").await, good);
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_task_migrates_a_full_bundle_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let upkeep = UpkeepConfig {
        migrate_after_s: 3600.0,
        scrub_min_spin_up_interval_s: 0.4,
        ..UpkeepConfig::default()
    };
    let mut config = config(upkeep);
    config.bundle_bytes = 64 << 10;
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .unwrap();
    let (store, clock) = on_manual_clock(store);
    let store = Arc::new(store);
    let small = pattern(10_000, 12);
    store.put("small", &small[..]).await.unwrap();
    let task = store.start_upkeep().await.unwrap();
    // Ticks every 100 ms: three of them leave less than a bundle staged.
    for _ in 0..3 {
        advance_upkeep(&clock, &task, Duration::from_millis(100)).await;
    }
    assert!(is_staged(&store, "small").await, "less than a bundle moved");
    let big = pattern(70_000, 13);
    store.put("big", &big[..]).await.unwrap();
    // The next tick, not an hour later.
    advance_upkeep(&clock, &task, Duration::from_millis(100)).await;
    assert!(!is_staged(&store, "small").await && !is_staged(&store, "big").await);
    let report = task.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(get_all(&store, "big").await, big);
    assert_eq!(get_all(&store, "small").await, small);
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_task_rebuilds_a_failed_disk_without_being_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = new_clocked_store(dir.path(), UpkeepConfig::default()).await;
    let store = Arc::new(store);
    let bytes = pattern(60_000, 14);
    store.put("kept", &bytes[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let spinwise_catalog::ObjectLocation::Migrated { blob, .. } =
        store.stat("kept").await.unwrap().location
    else {
        panic!("not migrated");
    };
    let failed = store.catalog().blob(blob).await.unwrap().unwrap().disks[1];
    let queued = store.fail_disk(u64::from(failed)).await.unwrap();
    assert_eq!(queued.tasks_queued, 1);
    let task = store.start_upkeep().await.unwrap();
    // The first tick, at once, rebuilds.
    advance_upkeep(&clock, &task, Duration::ZERO).await;
    assert_eq!(store.status().await.unwrap().rebuild_pending, 0);
    let report = task.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.duties.rebuilds, 1);
    assert_eq!(report.duties.stacks_rebuilt, 1);
    let disks = store.catalog().blob(blob).await.unwrap().unwrap().disks;
    assert!(
        !disks.contains(&failed),
        "{disks:?} still names disk {failed}"
    );
    assert_eq!(get_all(&store, "kept").await, bytes);
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_just_migrated_counts_as_verified_and_a_restart_does_not_spin_up_to_scrub_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = new_clocked_store(dir.path(), UpkeepConfig::default()).await;
    let before_ms = store.now_unix_ms();
    store.put("fresh", &pattern(300_000, 3)[..]).await.unwrap();
    let flushed = store.flush(|_| {}).await.unwrap();
    let blob = *flushed.blobs.first().expect("the flush wrote a blob");
    let group = store.catalog().blob(blob).await.unwrap().unwrap().group;
    let entries = store
        .catalog()
        .scrub_due(group, i64::MAX, 100)
        .await
        .unwrap();
    let entry = entries.iter().find(|entry| entry.blob.id == blob).unwrap();
    assert!(
        entry.verified_unix_ms.is_some_and(|at| at >= before_ms),
        "a committed blob starts its scrub clock: {entry:?}"
    );
    store.close().await;

    let store = SqliteStore::open_sqlite(&dir.path().join("data"))
        .await
        .unwrap();
    let store = Arc::new(store.with_clock(clock.clone()));
    let upkeep = store.start_upkeep().await.unwrap();
    // The first tick and a few more (every 60 s by default) find nothing due.
    for _ in 0..3 {
        advance_upkeep(&clock, &upkeep, Duration::from_secs(60)).await;
    }
    let report = upkeep.stop().await;
    assert_eq!(report.scrub_spin_ups, 0, "{report:?}");
    assert_eq!(report.scrub.blobs, 0, "{report:?}");
}
