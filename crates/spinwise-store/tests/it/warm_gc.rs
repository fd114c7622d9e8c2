//! The warm tier's collector on a temporary dense-jbod-60 store with small staging segments:
//! warm records share segments, a collection moves the live records of segments whose dead
//! fraction reached the threshold and frees them, every live object reads back byte-exact
//! (also after a reopen), deleted ones stay deleted; a moved record carries its original's
//! origin, which a lost catalog's recovery ranks it by; semi-preemptive collection lets a
//! request in flight end before the next record moves, non-preemptive does not wait; upkeep
//! collects on its first tick. On a chain of staging devices: PUTs fill the tail device and the
//! tail moves on; a collection empties the head device first; compact-in-body copies into a
//! body device, move-to-tail into the tail. A dead warm record whose segment outlives a newer
//! version's migration (and that version's compaction) never comes back from a lost catalog.

use crate::common;

use common::{is_staged, lose_the_catalog_and_recover, pattern, read_to_end};
use spinwise_catalog::{ObjectLocation, Tier};
use spinwise_store::staging::{Placement, StagingConfig};
use spinwise_store::{
    CompactionMode, SqliteStore, Store, StoreConfig, StoreError, WarmCollectReport, WarmCollector,
    WarmConfig,
};
use std::collections::BTreeSet;
use std::future::ready;
use std::path::{Path, PathBuf};

/// Objects of 6,000 bytes in segments of 64 KiB: ten records to a segment.
const OBJECT_BYTES: usize = 6_000;

fn config(collection: CompactionMode) -> StoreConfig {
    let mut config = common::jbod_config();
    config.bundle_bytes = 1 << 20;
    config.staging = StagingConfig {
        segment_bytes: 64 << 10,
        chunk_bytes: 4096,
        limit_bytes: 16 << 20,
    };
    config.warm = WarmConfig {
        collection,
        ..WarmConfig::default()
    };
    // Off, so a GET of a warm object reads the staging log (a request the collector sees).
    config.tail_cache.ram_bytes = 0;
    config
}

async fn new_store(dir: &Path, collection: CompactionMode) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(collection))
        .await
        .unwrap()
}

async fn put_warm(store: &SqliteStore, key: &str, bytes: &[u8]) -> (u64, u64) {
    let record = store
        .put_with(key, Tier::Warm, bytes, |_| ready(Ok(())))
        .await
        .unwrap();
    staged_at(&record.location)
}

fn staged_at(location: &ObjectLocation) -> (u64, u64) {
    match *location {
        ObjectLocation::Staged { segment, offset } => (segment, offset),
        ObjectLocation::Migrated { .. } => panic!("a warm object was migrated"),
    }
}

/// Puts `count` warm objects `key-NNN` and deletes every other one; returns the live keys
/// with their bytes.
async fn half_dead(store: &SqliteStore, count: usize) -> Vec<(String, Vec<u8>)> {
    let mut live = Vec::new();
    for index in 0..count {
        let key = format!("key-{index:03}");
        let bytes = pattern(OBJECT_BYTES, index as u64);
        put_warm(store, &key, &bytes).await;
        if index % 2 == 0 {
            store.delete(&key).await.unwrap();
        } else {
            live.push((key, bytes));
        }
    }
    live
}

/// Every object reads back byte-exact.
async fn reads_back<'a>(
    store: &SqliteStore,
    objects: impl IntoIterator<Item = &'a (String, Vec<u8>)>,
) {
    for (key, bytes) in objects {
        assert_eq!(
            &read_to_end(store, key, None).await.unwrap().0,
            bytes,
            "{key}"
        );
    }
}

async fn assert_reads(store: &SqliteStore, live: &[(String, Vec<u8>)], deleted: usize) {
    reads_back(store, live).await;
    for index in (0..deleted).step_by(2) {
        let key = format!("key-{index:03}");
        assert!(
            matches!(store.stat(&key).await, Err(StoreError::NoSuchKey { .. })),
            "deleted {key} came back"
        );
    }
}

async fn segments_of(store: &SqliteStore, live: &[(String, Vec<u8>)]) -> BTreeSet<u64> {
    let mut segments = BTreeSet::new();
    for (key, _) in live {
        segments.insert(staged_at(&store.stat(key).await.unwrap().location).0);
    }
    segments
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_records_share_segments_and_a_collection_frees_the_half_dead_ones_keeping_every_live_object()
 {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(dir.path(), CompactionMode::SemiPreemptive).await;
    let live = half_dead(&store, 60).await;
    let before = segments_of(&store, &live).await;
    assert!(
        before.len() <= 7,
        "60 warm records of 6 kB took {} segments of 64 KiB: warm records do not share",
        before.len()
    );
    let used_before = store.status().await.unwrap().staging_used_bytes;
    let report = store.collect_warm(Some(0.4), |_| {}).await.unwrap();
    assert!(report.segments_collected >= 4, "{report:?}");
    assert!(
        report.segments_freed >= report.segments_collected,
        "{report:?}"
    );
    assert_eq!(report.records_dead, 0, "{report:?}");
    assert_eq!(
        report.bytes_moved,
        report.records_moved * OBJECT_BYTES as u64
    );
    assert!(report.problems.is_empty(), "{report:?}");
    let used_after = store.status().await.unwrap().staging_used_bytes;
    assert!(
        used_after + report.bytes_reclaimed == used_before && used_after < used_before * 3 / 4,
        "staging held {used_before} bytes before and {used_after} after: {report:?}"
    );
    let after = segments_of(&store, &live).await;
    assert!(
        after.is_disjoint(&before.iter().copied().take(4).collect()),
        "live objects still in the oldest, collected segments: before {before:?}, after {after:?}"
    );
    assert_reads(&store, &live, 60).await;
    // A second pass finds nothing due.
    let again = store.collect_warm(Some(0.4), |_| {}).await.unwrap();
    assert_eq!(again.records_moved, 0, "{again:?}");
    store.close().await;
    let store = Store::open_sqlite(&data).await.unwrap();
    assert!(
        store.recovery().problems.is_empty(),
        "{:?}",
        store.recovery()
    );
    assert_reads(&store, &live, 60).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_below_the_dead_fraction_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), CompactionMode::SemiPreemptive).await;
    let live = half_dead(&store, 30).await;
    let before = segments_of(&store, &live).await;
    let report = store.collect_warm(Some(0.9), |_| {}).await.unwrap();
    assert_eq!(report, WarmCollectReport::default());
    assert_eq!(segments_of(&store, &live).await, before);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_record_ranks_where_its_original_was_written_when_a_lost_catalog_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let (data, store, original) = a_warm_key_beside_a_neighbour(dir.path()).await;
    store.staging().seal_idle(Tier::Warm);
    let second = pattern(OBJECT_BYTES, 2);
    let newer = put_warm(&store, "key", &second).await;
    assert!(newer.0 > original.0);
    store.staging().seal_idle(Tier::Warm);
    // What a collection racing the overwrite leaves: a copy of the first version, made after
    // the second was written (so in a later segment), that the catalog never pointed at.
    let copy = store
        .staging()
        .copy_record(
            original,
            "key",
            OBJECT_BYTES as u64,
            (Tier::Warm, Placement::Tail),
        )
        .await
        .unwrap();
    assert!(copy.segment > newer.0);
    drop(copy);
    let why = "the copy of the first version outranked the second";
    let (store, report) = recovered_key_reads(store, &data, &second, why).await;
    assert!(report.versions_replaced >= 1, "{report:?}");
    store.close().await;
}

/// A store holding `key` written warm (pattern 1, at the returned place) beside a live warm
/// `neighbour`, which keeps that record's segment, and with it any dead version of `key`, on
/// disk: what a lost catalog's recovery must rank against `key`'s later versions.
async fn a_warm_key_beside_a_neighbour(dir: &Path) -> (PathBuf, SqliteStore, (u64, u64)) {
    let store = new_store(dir, CompactionMode::SemiPreemptive).await;
    let original = put_warm(&store, "key", &pattern(OBJECT_BYTES, 1)).await;
    put_warm(&store, "neighbour", &pattern(OBJECT_BYTES, 3)).await;
    (dir.join("data"), store, original)
}

/// Closes `store`, loses its catalog and recovers it, and checks that `key` reads back as
/// `expected` (`why` says what it means if not); returns the reopened store and the report.
async fn recovered_key_reads(
    store: SqliteStore,
    data: &Path,
    expected: &[u8],
    why: &str,
) -> (SqliteStore, spinwise_store::RecoverReport) {
    store.close().await;
    let report = lose_the_catalog_and_recover(data).await;
    let store = Store::open_sqlite(data).await.unwrap();
    let bytes = read_to_end(&store, "key", None).await.unwrap().0;
    assert!(bytes == expected, "{why}: {report:?}");
    (store, report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_version_overwritten_by_a_migrated_one_stays_overwritten_when_a_lost_catalog_is_recovered()
 {
    let dir = tempfile::tempdir().unwrap();
    let (data, store, _) = a_warm_key_beside_a_neighbour(dir.path()).await;
    let second = pattern(OBJECT_BYTES, 2);
    store.put("key", &second[..]).await.unwrap();
    // Sealed, so the flush frees the cold segment: only the blob holds the second version.
    store.staging().seal_idle(Tier::Cold);
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    let why = "the overwritten warm version came back in place of the migrated one";
    let (store, report) = recovered_key_reads(store, &data, &second, why).await;
    assert!(!is_staged(&store, "key").await, "{report:?}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_copy_keeps_its_origin_and_outranks_an_older_warm_version_in_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let (data, store, _) = a_warm_key_beside_a_neighbour(dir.path()).await;
    let second = pattern(OBJECT_BYTES, 2);
    store.put("key", &second[..]).await.unwrap();
    store
        .put("filler", &pattern(OBJECT_BYTES, 4)[..])
        .await
        .unwrap();
    // Sealed, so the flush frees the cold segment: only the blobs hold the second version.
    store.staging().seal_idle(Tier::Cold);
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 2);
    // Half the blob dies: compaction copies the second version into a new blob, whose index
    // must carry the place its PUT wrote it, or the copy ranks below the dead warm record.
    store.delete("filler").await.unwrap();
    let compacted = store.compact(Some(0.25), |_| {}).await.unwrap();
    assert_eq!(compacted.objects_moved, 1, "{compacted:?}");
    let why = "the compacted copy lost its origin";
    let (store, _) = recovered_key_reads(store, &data, &second, why).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_object_migrated_beside_its_still_staged_record_comes_back_cold() {
    let dir = tempfile::tempdir().unwrap();
    let (data, store, _) = a_warm_key_beside_a_neighbour(dir.path()).await;
    assert!(store.demote("key").await.unwrap());
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    store.close().await;
    let report = lose_the_catalog_and_recover(&data).await;
    assert_eq!(report.versions_replaced, 1, "{report:?}");
    let store = Store::open_sqlite(&data).await.unwrap();
    // One PUT, two copies: the migrated one wins, so the demotion the lost catalog held stays.
    assert!(!is_staged(&store, "key").await, "{report:?}");
    assert_eq!(store.stat("key").await.unwrap().tier, Tier::Cold);
    let bytes = read_to_end(&store, "key", None).await.unwrap().0;
    assert_eq!(bytes, pattern(OBJECT_BYTES, 1));
    assert!(is_staged(&store, "neighbour").await);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_with_nothing_dead_moves_nothing_and_keeps_the_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), CompactionMode::NonPreemptive).await;
    let mut live = Vec::new();
    for index in 0..25 {
        let key = format!("key-{index:03}");
        let bytes = pattern(OBJECT_BYTES, index);
        put_warm(&store, &key, &bytes).await;
        live.push((key, bytes));
    }
    let report = store.collect_warm(Some(0.2), |_| {}).await.unwrap();
    assert_eq!(report.records_moved, 0, "{report:?}");
    assert_reads(&store, &live, 0).await;
    store.close().await;
}

/// Holds a GET of a staged object open (a request in flight) through a collection and ends
/// it when the collector first waits; returns the collection's report.
async fn collect_with_a_get_in_flight(collection: CompactionMode) -> WarmCollectReport {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), collection).await;
    let live = half_dead(&store, 30).await;
    let mut reader = Some(store.get(&live[0].0, None).await.unwrap());
    let report = store
        .collect_warm(Some(0.4), |so_far| {
            if so_far.yields > 0 {
                reader = None; // the request ends: the collector may go on
            }
        })
        .await
        .unwrap();
    drop(reader);
    assert_reads(&store, &live, 30).await;
    store.close().await;
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semi_preemptive_collection_lets_a_get_in_flight_end_before_its_next_record_moves() {
    let report = collect_with_a_get_in_flight(CompactionMode::SemiPreemptive).await;
    assert!(report.records_moved > 0, "{report:?}");
    assert_eq!(report.yields, 1, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_preemptive_collection_moves_records_back_to_back_beside_a_get_in_flight() {
    let report = collect_with_a_get_in_flight(CompactionMode::NonPreemptive).await;
    assert!(report.records_moved > 0, "{report:?}");
    assert_eq!(report.yields, 0, "{report:?}");
}

/// A store whose staging log is a chain of `devices` (DATA/staging, then `chain-1`, …).
async fn chain_store(dir: &Path, devices: usize, collector: WarmCollector) -> SqliteStore {
    let mut config = config(CompactionMode::NonPreemptive);
    config.staging_chain = (1..devices)
        .map(|device| format!("chain-{device}").into())
        .collect();
    config.warm.collector = collector;
    Store::init_sqlite(&dir.join("data"), config).await.unwrap()
}

/// Puts warm objects `prefix-NNNN` until `done` says so (at most 4,000); returns them.
async fn put_until(
    store: &SqliteStore,
    prefix: &str,
    done: impl Fn(&SqliteStore) -> bool,
) -> Vec<(String, Vec<u8>)> {
    let mut written = Vec::new();
    while !done(store) {
        assert!(written.len() < 4_000, "the chain never reached its state");
        let key = format!("{prefix}-{:04}", written.len());
        let bytes = pattern(OBJECT_BYTES, written.len() as u64 ^ 0x5eed);
        put_warm(store, &key, &bytes).await;
        written.push((key, bytes));
    }
    written
}

async fn device_of(store: &SqliteStore, key: &str) -> usize {
    let segment = staged_at(&store.stat(key).await.unwrap().location).0;
    store.staging().device_of(segment)
}

/// Keeps every fourth of `objects` and deletes the rest; returns the kept ones.
async fn keep_a_quarter(
    store: &SqliteStore,
    objects: Vec<(String, Vec<u8>)>,
) -> Vec<(String, Vec<u8>)> {
    let mut kept = Vec::new();
    for (index, object) in objects.into_iter().enumerate() {
        if index % 4 == 0 {
            kept.push(object);
        } else {
            store.delete(&object.0).await.unwrap();
        }
    }
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_fill_the_tail_device_then_the_tail_moves_on_and_every_segment_is_on_the_device_its_id_names()
 {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = chain_store(dir.path(), 3, WarmCollector::MoveToTail).await;
    assert_eq!(store.staging().chain_state().tail, 0);
    let first = put_until(&store, "a", |s| s.staging().chain_state().tail == 1).await;
    let state = store.staging().chain_state();
    assert!(
        state.used_bytes[0] + (64 << 10) > state.capacity_bytes,
        "the tail moved before its device was full: {state:?}"
    );
    let second = put_until(&store, "b", |s| s.staging().chain_state().used_bytes[1] > 0).await;
    for device in 0..3 {
        let dir = if device == 0 {
            data.join("staging")
        } else {
            data.join(format!("chain-{device}"))
        };
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let id = u64::from_str_radix(&name[4..20], 16).unwrap();
            assert_eq!(id % 3, device as u64, "{name} on device {device}");
        }
    }
    store.close().await;
    let store = Store::open_sqlite(&data).await.unwrap();
    assert!(
        store.recovery().problems.is_empty(),
        "{:?}",
        store.recovery()
    );
    assert_eq!(store.staging().chain_state().tail, 1, "the tail at open");
    reads_back(&store, first.iter().chain(&second)).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_chain_of_two_a_collection_empties_the_head_device_before_the_tail_reaches_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = chain_store(dir.path(), 2, WarmCollector::MoveToTail).await;
    let first = put_until(&store, "a", |s| s.staging().chain_state().tail == 1).await;
    let kept = keep_a_quarter(&store, first).await;
    let second = put_until(&store, "b", |s| {
        let state = s.staging().chain_state();
        state.used_bytes[1] * 2 >= state.capacity_bytes
    })
    .await;
    assert_eq!(store.staging().chain_state().head, 0);
    // A threshold no segment with a live record reaches: only the head's cleaning moves any.
    let report = store.collect_warm(Some(1.0), |_| {}).await.unwrap();
    assert!(report.records_moved > 0, "{report:?}");
    for (key, _) in &kept {
        assert_eq!(device_of(&store, key).await, 1, "{key} left on the head");
    }
    let state = store.staging().chain_state();
    assert_eq!(
        state.used_bytes[0], 0,
        "the head still holds segments: {state:?}"
    );
    reads_back(&store, kept.iter().chain(&second)).await;
    store.close().await;
}

/// A chain of three with the first device's objects three-quarters deleted and the tail on
/// the second; collects and returns the devices the kept objects are on after.
async fn collect_on_a_chain_of_three(collector: WarmCollector) -> BTreeSet<usize> {
    let dir = tempfile::tempdir().unwrap();
    let store = chain_store(dir.path(), 3, collector).await;
    let first = put_until(&store, "a", |s| s.staging().chain_state().tail == 1).await;
    let kept = keep_a_quarter(&store, first).await;
    let state = store.staging().chain_state();
    assert_eq!((state.tail, state.head), (1, 2));
    let report = store.collect_warm(Some(0.5), |_| {}).await.unwrap();
    assert!(report.records_moved > 0, "{report:?}");
    let mut devices = BTreeSet::new();
    for (key, bytes) in &kept {
        assert_eq!(
            &read_to_end(&store, key, None).await.unwrap().0,
            bytes,
            "{key}"
        );
        devices.insert(device_of(&store, key).await);
    }
    store.close().await;
    devices
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_in_body_moves_records_into_a_body_device_and_move_to_tail_into_the_tail() {
    assert_eq!(
        collect_on_a_chain_of_three(WarmCollector::CompactInBody).await,
        BTreeSet::from([0])
    );
    assert_eq!(
        collect_on_a_chain_of_three(WarmCollector::MoveToTail).await,
        BTreeSet::from([1])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upkeep_collects_the_warm_tier_on_its_first_tick() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), CompactionMode::SemiPreemptive).await;
    let live = half_dead(&store, 60).await;
    let store = std::sync::Arc::new(store);
    // The first tick is at start (crate::upkeep); it collects every segment at least half dead.
    let upkeep = store.start_upkeep().await.unwrap();
    common::upkeep_until(&upkeep, "a warm collection", |report| {
        report.warm_collection.segments_freed > 0
    })
    .await;
    let report = upkeep.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.warm_collection.records_moved > 0, "{report:?}");
    assert_reads(&store, &live, 60).await;
}
