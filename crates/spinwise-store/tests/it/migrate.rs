//! The bundler and migrator on a temporary dense-jbod-60 store (k = 3, r = 2, time factor 0.001,
//! 1 MiB bundles): packing, catalog locations and offsets, stripe stacks on the blob's disks
//! decoded back to the staged bytes, staging freed, objects deleted mid-migration staying dead,
//! a failed migration leaving nothing behind, `flush_placed` putting named objects alone in
//! their groups (and refusing a group outside the layout with nothing lost), and an object whose
//! staged bytes are damaged left staged and reported while the rest of the log migrates.

use crate::common;

use common::pattern;
use spinwise_catalog::{BlobRecord, BlobState, Catalog, ObjectLocation, ObjectRecord};
use spinwise_disk::Disk;
use spinwise_store::driver::{GroupDisks, Job};
use spinwise_store::pack;
use spinwise_store::placement::PlacementError;
use spinwise_store::stacks::{fetch_from_disks, stack_name};
use spinwise_store::staging::{SEGMENT_HEADER_BYTES, StagingConfig, segment_path};
use spinwise_store::{
    FlushProgress, SqliteStore, StagingError, Store, StoreConfig, StoreError, TailCacheConfig,
};
use std::path::Path;
use std::sync::{Arc, Mutex};

const RACK: &str = include_str!("../../../../presets/dense-jbod-60.toml");
const BUNDLE_BYTES: u64 = 1 << 20;

fn config() -> StoreConfig {
    let mut config = common::jbod_config();
    config.bundle_bytes = BUNDLE_BYTES;
    // Tiny segments: every object of 4 KiB or more seals its own, so freed space is observable.
    config.staging = StagingConfig {
        segment_bytes: 4096,
        chunk_bytes: 4096,
        limit_bytes: 256 << 20,
    };
    config
}

async fn new_store(dir: &Path) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config())
        .await
        .unwrap()
}

async fn get_all(store: &SqliteStore, key: &str) -> Result<Vec<u8>, StoreError> {
    let mut reader = store.get(key, None).await?;
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Decodes `blob` from its stacks (in a driver job, so its group is up) and lists the files on
/// each of its disks.
async fn decode(store: &SqliteStore, blob: &BlobRecord) -> (Vec<u8>, Vec<Vec<String>>) {
    let rack_io = store.rack_io();
    let code = Arc::clone(&rack_io.code);
    let disks: Vec<Arc<dyn Disk>> = blob
        .disks
        .iter()
        .map(|&disk| Arc::clone(&rack_io.disks[disk as usize]))
        .collect();
    let (id, size, hash) = (blob.id, blob.size_bytes, blob.content_hash);
    let job = Job::new(
        blob.group,
        size,
        spinwise_sched::scheduler::Kind::Client,
        move |_: &GroupDisks| {
            let mut bytes = Vec::new();
            let fetch = fetch_from_disks(&code, id, &disks);
            let report = spinwise_ec::decode_blob(&code, size, hash, fetch, &mut bytes).unwrap();
            assert!(report.is_clean(), "fresh stacks need no repair: {report:?}");
            let files = disks.iter().map(|d| d.list_files().unwrap()).collect();
            (bytes, files)
        },
    );
    let handle = rack_io.driver.submit(job).await.unwrap();
    handle.wait().await.unwrap().output
}

/// Every `.stack` file under the data directory's disks.
fn stack_files(data: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![data.join("disks")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".stack") {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

fn migrated(record: &ObjectRecord) -> (u64, u64) {
    match record.location {
        ObjectLocation::Migrated { blob, offset } => (blob, offset),
        ObjectLocation::Staged { .. } => panic!("`{}` is still staged", record.key),
    }
}

fn staged_segment(record: &ObjectRecord) -> u64 {
    match record.location {
        ObjectLocation::Staged { segment, .. } => segment,
        ObjectLocation::Migrated { .. } => panic!("`{}` is not staged", record.key),
    }
}

#[test]
fn the_bundler_packs_in_log_order_and_gives_large_objects_their_own_blob() {
    let object = |key: &str, size_bytes: u64| ObjectRecord {
        key: key.into(),
        size_bytes,
        content_hash: [0; 32],
        created_unix_ms: 0,
        location: ObjectLocation::Staged {
            segment: 1,
            offset: 32,
        },
        tier: spinwise_catalog::Tier::Cold,
    };
    let staged = vec![
        object("a", 400),
        object("b", 500),
        object("c", 200),
        object("big", 1000),
        object("d", 0),
        object("e", 999),
    ];
    let keys: Vec<Vec<String>> = pack(staged, 1000)
        .into_iter()
        .map(|b| b.objects.into_iter().map(|o| o.key).collect())
        .collect();
    // `big` goes out at once; the open bundle keeps collecting the objects after it.
    assert_eq!(
        keys,
        [vec!["a", "b"], vec!["big"], vec!["c", "d"], vec!["e"]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_packs_small_objects_into_one_blob_and_a_large_one_into_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let sizes = [
        5000usize,
        0,
        70_000,
        4096,
        200_001,
        (BUNDLE_BYTES as usize) + 12_345,
    ];
    let mut records = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        let data = pattern(size, index as u64);
        records.push((
            store.put(&format!("k{index}"), &data[..]).await.unwrap(),
            data,
        ));
    }
    let segments: Vec<u64> = records.iter().map(|(r, _)| staged_segment(r)).collect();
    let seen = Mutex::new(Vec::<FlushProgress>::new());
    let report = store
        .flush(|progress| seen.lock().unwrap().push(progress))
        .await
        .unwrap();
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    assert_eq!(report.blobs_written, 2);
    assert_eq!((report.objects_moved, report.objects_dead), (6, 0));
    assert_eq!(report.bytes_migrated, total);
    let last = *seen.lock().unwrap().last().unwrap();
    assert_eq!(
        (last.bytes_done, last.bytes_staged, last.blobs_written),
        (total, total, 2)
    );

    // The five small objects share the first blob at consecutive offsets, in log order.
    let mut offset = 0;
    let mut bundle = Vec::new();
    let first_blob = migrated(&store.stat("k0").await.unwrap()).0;
    for (index, (_, data)) in records.iter().enumerate().take(5) {
        let record = store.stat(&format!("k{index}")).await.unwrap();
        assert_eq!(migrated(&record), (first_blob, offset));
        offset += data.len() as u64;
        bundle.extend_from_slice(data);
    }
    let (large_blob, large_offset) = migrated(&store.stat("k5").await.unwrap());
    assert_ne!(large_blob, first_blob);
    assert_eq!(large_offset, 0);
    // The large object is packed (and written) as soon as the bundler reaches it.
    assert_eq!(report.blobs, [large_blob, first_blob]);

    let catalog = store.catalog();
    common::assert_catalog_consistent(&store).await;
    assert!(
        catalog
            .blobs_in_state(BlobState::Writing, 10)
            .await
            .unwrap()
            .is_empty()
    );
    for (blob_id, expected) in [(first_blob, bundle), (large_blob, records[5].1.clone())] {
        let blob = catalog.blob(blob_id).await.unwrap().unwrap();
        assert_eq!(blob.state, BlobState::Committed);
        assert_eq!(
            (blob.size_bytes, blob.live_bytes),
            (expected.len() as u64, expected.len() as u64)
        );
        assert_eq!(blob.disks.len(), 5);
        let members = store.rack_io().placement.group_disks(blob.group).unwrap();
        assert!(blob.disks.iter().all(|disk| members.contains(disk)));
        assert!(report.groups_used.contains(&blob.group));
        let (bytes, files) = decode(&store, &blob).await;
        assert!(
            bytes == expected,
            "blob {blob_id} decodes to the staged bytes"
        );
        for (column, listed) in files.iter().enumerate() {
            assert!(
                listed.contains(&stack_name(blob_id, column)),
                "column {column}: {listed:?}"
            );
        }
        let stack_bytes = store.rack_io().code.stack_file_bytes(blob.size_bytes);
        for &disk in &blob.disks {
            assert!(store.disk_used_bytes(disk).await.unwrap() >= stack_bytes);
        }
    }
    assert_eq!(
        catalog
            .blob(large_blob)
            .await
            .unwrap()
            .unwrap()
            .content_hash,
        records[5].0.content_hash,
        "a single-object blob reuses the object's BLAKE3"
    );
    // Staging: every segment the objects were in was sealed (each object filled one) and is
    // gone, but the highest: cut to its header, it keeps its id taken (a reopened log must not
    // hand out an id a blob index names as an origin; staging.rs, `highest_present`).
    let highest = *segments.iter().max().unwrap();
    assert_eq!(store.staging().sealed_segments(), vec![highest]);
    let staging = store.data_dir().join("staging");
    for segment in segments {
        let path = segment_path(&staging, segment);
        if segment == highest {
            let length = std::fs::metadata(&path).unwrap().len();
            assert_eq!(length, SEGMENT_HEADER_BYTES, "segment {segment} emptied");
        } else {
            assert!(!path.exists(), "segment {segment} freed");
        }
    }
    assert_eq!(store.status().await.unwrap().staged_objects, 0);
    // Reads now come from the blob, through the scheduler.
    assert_eq!(get_all(&store, "k0").await.unwrap(), records[0].1);
    // Nothing left to do: a second flush writes nothing.
    let again = store.flush(|_| {}).await.unwrap();
    assert_eq!(again.blobs_written, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_before_its_blob_commits_stays_deleted_as_dead_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(new_store(dir.path()).await);
    for index in 0..4u64 {
        let data = pattern(10_000 + index as usize, index);
        store.put(&format!("k{index}"), &data[..]).await.unwrap();
    }
    let victim = store.stat("k1").await.unwrap();
    // The first progress call (bytes are being encoded) waits until `k1` has been deleted.
    let (started_sender, started) = tokio::sync::oneshot::channel::<()>();
    let (deleted_sender, deleted) = std::sync::mpsc::channel::<()>();
    let started_sender = Mutex::new(Some(started_sender));
    let deleted = Mutex::new(deleted);
    let deleter = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            started.await.unwrap();
            store.delete("k1").await.unwrap();
            deleted_sender.send(()).unwrap();
        })
    };
    let report = store
        .flush(|_| {
            if let Some(sender) = started_sender.lock().unwrap().take() {
                sender.send(()).unwrap();
                deleted.lock().unwrap().recv().unwrap();
            }
        })
        .await
        .unwrap();
    deleter.await.unwrap();
    assert_eq!(
        (
            report.blobs_written,
            report.objects_moved,
            report.objects_dead
        ),
        (1, 3, 1)
    );
    assert!(matches!(
        store.stat("k1").await,
        Err(StoreError::NoSuchKey { .. })
    ));
    let blob = store
        .catalog()
        .blob(report.blobs[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(blob.size_bytes, 10_000 + 10_001 + 10_002 + 10_003);
    assert_eq!(blob.live_bytes, blob.size_bytes - victim.size_bytes);
    assert_eq!(migrated(&store.stat("k2").await.unwrap()).1, 20_001);
    common::assert_catalog_consistent(&store).await;
    let staging = store.data_dir().join("staging");
    assert!(!segment_path(&staging, staged_segment(&victim)).exists());
    Arc::into_inner(store).unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_migration_leaves_no_writing_blob_no_stacks_and_objects_staged_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let mut objects = Vec::new();
    for index in 0..3u64 {
        let data = pattern(50_000, index);
        store.put(&format!("k{index}"), &data[..]).await.unwrap();
        objects.push(data);
    }
    for disk in &store.rack_io().emulated {
        disk.faults().fail_next_writes(1);
    }
    let failed = store.flush(|_| {}).await;
    assert!(
        matches!(failed, Err(StoreError::Migration { .. })),
        "{failed:?}"
    );
    let catalog = store.catalog();
    assert!(
        catalog
            .blobs_in_state(BlobState::Writing, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        catalog
            .blobs_in_state(BlobState::Committed, 10)
            .await
            .unwrap()
            .is_empty()
    );
    common::assert_catalog_consistent(&store).await;
    assert_eq!(stack_files(store.data_dir()), Vec::<String>::new());
    for disk in 0..60 {
        assert_eq!(store.disk_used_bytes(disk).await.unwrap(), 0, "disk {disk}");
    }
    for (index, data) in objects.iter().enumerate() {
        let key = format!("k{index}");
        staged_segment(&store.stat(&key).await.unwrap());
        assert!(get_all(&store, &key).await.unwrap() == *data);
    }
    // With the disks healthy again the same objects migrate.
    for disk in &store.rack_io().emulated {
        disk.faults().fail_next_writes(0);
    }
    let report = store.flush(|_| {}).await.unwrap();
    assert_eq!((report.blobs_written, report.objects_moved), (1, 3));
    assert_eq!(stack_files(store.data_dir()).len(), 5);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_space_counts_committed_and_writing_blobs_and_marks_unhealthy_disks() {
    use spinwise_catalog::MemoryCatalog;
    use spinwise_store::DiskSpace;
    let rack = spinwise_model::parse_rack("dense-jbod-60", RACK).unwrap();
    let code = spinwise_ec::Code::new(3, 2, 128 * 1024).unwrap();
    let catalog = MemoryCatalog::new();
    let blob = |id, group, disks: Vec<u32>, size_bytes| BlobRecord {
        id,
        group,
        disks,
        k: 3,
        r: 2,
        fragment_bytes: 128 * 1024,
        size_bytes,
        content_hash: [0; 32],
        state: BlobState::Writing,
        live_bytes: 0,
    };
    let committed = blob(
        catalog.next_blob_id().await.unwrap(),
        0,
        vec![0, 1, 2, 3, 4],
        1 << 20,
    );
    let writing = blob(
        catalog.next_blob_id().await.unwrap(),
        1,
        vec![4, 5, 6, 7, 8],
        5000,
    );
    catalog.begin_blob(committed.clone()).await.unwrap();
    catalog.commit_blob(committed.id, Vec::new()).await.unwrap();
    catalog.begin_blob(writing.clone()).await.unwrap();
    let mut space = DiskSpace::from_catalog(&catalog, &rack, &code)
        .await
        .unwrap();
    let (big, small) = (code.stack_file_bytes(1 << 20), code.stack_file_bytes(5000));
    assert_eq!(space.used_bytes(0), big);
    assert_eq!(
        space.used_bytes(4),
        big + small,
        "a Writing blob's stacks count"
    );
    assert_eq!(space.used_bytes(8), small);
    assert_eq!(space.used_bytes(9), 0);
    let capacity = (rack.disk_model.capacity_tb.mean() * 1e12) as u64;
    assert_eq!(space.capacity_bytes(), capacity);
    let room = space.room(&[8].into_iter().collect());
    assert_eq!(room.len(), rack.disk_count());
    assert_eq!(room[&4].free_bytes, capacity - big - small);
    assert!(room[&7].healthy && !room[&8].healthy);
    space.remove_blob(&writing, &code);
    assert_eq!(space.used_bytes(4), big);
    assert_eq!(space.used_bytes(8), 0);
}

/// The disks' space is counted when first needed, not at open (counting reads every blob, and
/// `ls` or a GET need none of it), and still holds each blob once: one flushed before this
/// process opened (counted from the catalog) and one it flushes itself after the count
/// (booked). Fails if a booking is skipped, made twice, or the count starts from nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_space_counted_after_open_holds_each_blob_once_old_or_new() {
    use spinwise_store::DiskSpace;
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    store.put("old", &pattern(200_000, 1)[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let data_dir = store.data_dir().to_path_buf();
    store.close().await;
    let store = Store::open_sqlite(&data_dir).await.unwrap();
    store.put("new", &pattern(300_000, 2)[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let rack = store.rack().clone();
    let fresh = DiskSpace::from_catalog(store.catalog(), &rack, &store.rack_io().code)
        .await
        .unwrap();
    let mut used_disks = 0;
    for disk in 0..rack.disk_count() as u32 {
        let booked = store.disk_used_bytes(disk).await.unwrap();
        assert_eq!(booked, fresh.used_bytes(disk), "disk {disk}");
        used_disks += usize::from(booked > 0);
    }
    assert!(
        used_disks >= 5,
        "two blobs of 3 + 2 columns: {used_disks} disks hold stacks"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rack_without_healthy_room_refuses_the_flush_with_a_placement_error_and_begins_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let data = pattern(20_000, 7);
    store.put("k", &data[..]).await.unwrap();
    // Two failed disks in every group of six leave four: fewer than k + r = 5.
    for group in 0..store.layout().groups.len() as u32 {
        let members = store
            .rack_io()
            .placement
            .group_disks(group)
            .unwrap()
            .to_vec();
        for &disk in &members[..2] {
            store
                .catalog()
                .set_disk_health(disk, spinwise_catalog::DiskHealth::Failed)
                .await
                .unwrap();
        }
    }
    let refused = store.flush(|_| {}).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Placement(
                spinwise_store::placement::PlacementError::RackFull { .. }
            ))
        ),
        "{refused:?}"
    );
    assert!(
        store
            .catalog()
            .blobs_in_state(BlobState::Writing, 10)
            .await
            .unwrap()
            .is_empty()
    );
    staged_segment(&store.stat("k").await.unwrap());
    assert!(get_all(&store, "k").await.unwrap() == data);
    store.close().await;
}

/// `flush_placed`'s rule for these tests: a key `g<N>/…` names group N; other keys are unplaced.
fn named_group(object: &ObjectRecord) -> Option<u32> {
    let rest = object.key.strip_prefix('g')?;
    rest.split_once('/')?.0.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_placed_puts_each_named_object_alone_in_its_group_group_by_group_and_still_bundles_the_rest()
 {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    // Placed and unplaced objects interleaved in log order; group 3 is named twice.
    let puts = [
        ("g3/a", 5000usize),
        ("free/1", 4000),
        ("g7/b", 6000),
        ("free/2", 3000),
        ("g3/c", 7000),
        ("free/3", 0),
        ("free/4", 2500),
    ];
    let mut records = Vec::new();
    for (index, &(key, size)) in puts.iter().enumerate() {
        let data = pattern(size, index as u64);
        records.push((store.put(key, &data[..]).await.unwrap(), data));
    }
    let report = store.flush_placed(named_group, |_| {}).await.unwrap();
    // Three single-object blobs, plus one bundle of the four unplaced objects (`flush` would
    // have packed all seven into one blob in one group).
    assert_eq!(report.blobs_written, 4);
    assert_eq!((report.objects_moved, report.objects_dead), (7, 0));
    let total: u64 = puts.iter().map(|&(_, size)| size as u64).sum();
    assert_eq!(report.bytes_migrated, total);

    let catalog = store.catalog();
    let mut placed_blobs = Vec::new();
    for (record, _) in records.iter().filter(|(r, _)| named_group(r).is_some()) {
        let group = named_group(record).unwrap();
        assert_eq!(
            store.migrated_group(&record.key).await.unwrap(),
            Some(group),
            "`{}` is in the group it named",
            record.key
        );
        let (blob_id, offset) = migrated(&store.stat(&record.key).await.unwrap());
        assert_eq!(offset, 0);
        let blob = catalog.blob(blob_id).await.unwrap().unwrap();
        assert_eq!(blob.group, group);
        assert_eq!(blob.state, BlobState::Committed);
        assert_eq!(
            (blob.size_bytes, blob.live_bytes),
            (record.size_bytes, record.size_bytes),
            "`{}` is its blob's only object",
            record.key
        );
        assert_eq!(blob.content_hash, record.content_hash);
        let members = store.rack_io().placement.group_disks(group).unwrap();
        assert!(blob.disks.iter().all(|disk| members.contains(disk)));
        assert!(report.groups_used.contains(&group));
        placed_blobs.push(blob_id);
    }
    placed_blobs.sort_unstable();
    placed_blobs.dedup();
    assert_eq!(placed_blobs.len(), 3, "one blob per placed object");

    // The unplaced objects share one bundle at consecutive offsets, in log order.
    let unplaced: Vec<_> = records
        .iter()
        .filter(|(r, _)| named_group(r).is_none())
        .collect();
    let bundle_blob = migrated(&store.stat(&unplaced[0].0.key).await.unwrap()).0;
    assert!(!placed_blobs.contains(&bundle_blob));
    let mut offset = 0;
    for (record, _) in &unplaced {
        assert_eq!(
            migrated(&store.stat(&record.key).await.unwrap()),
            (bundle_blob, offset)
        );
        offset += record.size_bytes;
    }
    let mut blobs = report.blobs.clone();
    blobs.sort_unstable();
    let mut expected = placed_blobs.clone();
    expected.push(bundle_blob);
    expected.sort_unstable();
    assert_eq!(blobs, expected);
    // Placed objects migrate group by group, in log order within a group, so a flush spins
    // each group up once: g3/a and g3/c go before g7/b, though g7/b was staged between them.
    let mut in_order = Vec::new();
    for key in ["g3/a", "g3/c", "g7/b"] {
        in_order.push(migrated(&store.stat(key).await.unwrap()).0);
    }
    in_order.push(bundle_blob);
    assert_eq!(report.blobs, in_order);

    common::assert_catalog_consistent(&store).await;
    assert_eq!(store.status().await.unwrap().staged_objects, 0);
    for (record, data) in &records {
        assert!(get_all(&store, &record.key).await.unwrap() == *data);
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_placed_refuses_a_group_outside_the_layout_typed_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let groups = store.layout().groups.len() as u32;
    let good = pattern(4000, 0);
    let wrong = pattern(9000, 1);
    let unplaced = pattern(3000, 2);
    store.put("good", &good[..]).await.unwrap();
    store.put("wrong", &wrong[..]).await.unwrap();
    store.put("unplaced", &unplaced[..]).await.unwrap();
    // `good` names group 0, ahead of `wrong` in log order; `wrong` names one past the last
    // group: the first index that is not in the layout.
    let place = |bad: u32| {
        move |o: &ObjectRecord| match o.key.as_str() {
            "good" => Some(0),
            "wrong" => Some(bad),
            _ => None,
        }
    };
    let refused = store.flush_placed(place(groups), |_| {}).await;
    match refused {
        Err(StoreError::Placement(PlacementError::UnknownGroup {
            group,
            groups: known,
        })) => {
            assert_eq!((group, known), (groups, groups as usize));
        }
        other => panic!("an unknown group is a typed placement error, not {other:?}"),
    }
    // The whole round stays staged and readable, `good` included: every group is checked before
    // anything is pinned or begun, so nothing was written.
    for (key, data) in [("good", &good), ("wrong", &wrong), ("unplaced", &unplaced)] {
        staged_segment(&store.stat(key).await.unwrap());
        assert_eq!(store.migrated_group(key).await.unwrap(), None);
        assert!(get_all(&store, key).await.unwrap() == *data);
    }
    let catalog = store.catalog();
    for state in [BlobState::Writing, BlobState::Committed] {
        assert!(catalog.blobs_in_state(state, 10).await.unwrap().is_empty());
    }
    assert_eq!(stack_files(store.data_dir()), Vec::<String>::new());
    // A valid placement then migrates all three.
    let report = store.flush_placed(place(groups - 1), |_| {}).await.unwrap();
    assert_eq!((report.blobs_written, report.objects_moved), (3, 3));
    assert_eq!(store.migrated_group("good").await.unwrap(), Some(0));
    assert_eq!(
        store.migrated_group("wrong").await.unwrap(),
        Some(groups - 1)
    );
    assert!(get_all(&store, "wrong").await.unwrap() == wrong);
    store.close().await;
}

/// A store without a tail cache, so a GET reads the staging segment (the flush always does).
async fn store_reading_segments(dir: &Path) -> SqliteStore {
    let mut config = config();
    config.tail_cache = TailCacheConfig::disabled();
    Store::init_sqlite(&dir.join("data"), config).await.unwrap()
}

/// Flips one byte of `data` (the payload of `key`, found by its bytes) in its staging segment:
/// the chunk holding it then fails its crc32c.
fn damage_staged(store: &SqliteStore, segment: u64, data: &[u8]) {
    let path = segment_path(store.staging().dir(), segment);
    let mut raw = std::fs::read(&path).unwrap();
    let at = raw
        .windows(64)
        .position(|window| window == &data[..64])
        .expect("the payload is in its segment");
    raw[at + 10] ^= 0x55;
    std::fs::write(&path, raw).unwrap();
}

async fn put_all(store: &SqliteStore, sizes: &[usize]) -> Vec<(ObjectRecord, Vec<u8>)> {
    let mut records = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        let data = pattern(size, 100 + index as u64);
        let record = store.put(&format!("k{index}"), &data[..]).await.unwrap();
        records.push((record, data));
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_object_in_a_bundle_stays_staged_and_reported_while_the_rest_of_the_log_migrates()
{
    let dir = tempfile::tempdir().unwrap();
    let store = store_reading_segments(dir.path()).await;
    let records = put_all(&store, &[6000, 7000, 8000, 9000]).await;
    damage_staged(&store, staged_segment(&records[1].0), &records[1].1);

    let report = store.flush(|_| {}).await.unwrap();
    assert_eq!((report.blobs_written, report.objects_moved), (1, 3));
    assert_eq!(report.damaged.len(), 1, "{:?}", report.damaged);
    let damaged = &report.damaged[0];
    assert_eq!(damaged.key, "k1");
    assert_eq!(
        ObjectLocation::Staged {
            segment: damaged.segment,
            offset: damaged.offset
        },
        records[1].0.location
    );
    assert_eq!(damaged.size_bytes, 7000);
    assert!(damaged.reason.contains("crc32c"), "{}", damaged.reason);
    // The three others are in the blob and read back; the damaged one is still where it was,
    // and its GET says what is wrong rather than returning other bytes.
    for index in [0, 2, 3] {
        let key = format!("k{index}");
        migrated(&store.stat(&key).await.unwrap());
        assert!(get_all(&store, &key).await.unwrap() == records[index].1);
    }
    assert_eq!(
        store.stat("k1").await.unwrap().location,
        records[1].0.location
    );
    assert!(matches!(
        get_all(&store, "k1").await,
        Err(StoreError::Staging(StagingError::Corrupt { .. }))
    ));
    assert!(std::path::Path::new(&segment_path(store.staging().dir(), damaged.segment)).exists());

    // Later flushes go on past it, reporting it each time; once it is deleted, nothing is left.
    store.put("k4", &pattern(5000, 4)[..]).await.unwrap();
    let again = store.flush(|_| {}).await.unwrap();
    assert_eq!(again.objects_moved, 1);
    assert_eq!(again.damaged, report.damaged);
    store.delete("k1").await.unwrap();
    let clean = store.flush(|_| {}).await.unwrap();
    assert_eq!((clean.objects_moved, clean.damaged.len()), (0, 0));
    common::assert_catalog_consistent(&store).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_object_with_a_blob_of_its_own_leaves_no_blob_and_no_stacks_and_the_next_migrates()
 {
    let dir = tempfile::tempdir().unwrap();
    let store = store_reading_segments(dir.path()).await;
    let large = BUNDLE_BYTES as usize + 10_000;
    let records = put_all(&store, &[large, 5000]).await;
    damage_staged(
        &store,
        staged_segment(&records[0].0),
        &records[0].1[large - 70_000..],
    );

    let report = store.flush(|_| {}).await.unwrap();
    assert_eq!((report.blobs_written, report.objects_moved), (1, 1));
    assert_eq!(
        report
            .damaged
            .iter()
            .map(|damaged| damaged.key.as_str())
            .collect::<Vec<_>>(),
        ["k0"]
    );
    let catalog = store.catalog();
    assert!(
        catalog
            .blobs_in_state(BlobState::Writing, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // Only the small object's blob: five stacks (k + r), none left by the discarded one.
    assert_eq!(stack_files(store.data_dir()).len(), 5);
    assert_eq!(
        store.stat("k0").await.unwrap().location,
        records[0].0.location
    );
    migrated(&store.stat("k1").await.unwrap());
    common::assert_catalog_consistent(&store).await;
    store.close().await;
}
