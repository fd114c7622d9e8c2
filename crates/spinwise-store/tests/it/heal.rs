//! Self-healing (crate::heal) on real stores with emulated disks at time factor 0.001:
//! - a flipped byte in a fragment is detected by a GET, read around, and the stack rewritten on
//!   the read's own spin-up, byte-identical to what was written; a second GET is clean;
//! - a repair that cannot be written is reported and the GET still returns exact bytes;
//! - a disk that vanishes is noticed (by a read, by the start-up check, at open), recorded
//!   failed and its stacks queued for rebuild; a disk merely in standby is not;
//! - on a rack whose groups have k + 2r disks, r removed disks of one group leave every object
//!   readable and `rebuild` restores every blob to k + r good stacks on distinct healthy disks
//!   of its group within the spread rule, checked from the catalog, the stack files and a scrub.

use crate::common;

use common::pattern;
use spinwise_catalog::{BlobRecord, Catalog, DiskHealth, ObjectLocation};
use spinwise_disk::PowerState;
use spinwise_store::DamagedStack;
use spinwise_store::disk_directory;
use spinwise_store::driver::GroupActivity;
use spinwise_store::stacks::stack_name;
use spinwise_store::{RackSource, SqliteStore, Store, StoreConfig};
use spinwise_store::{ScrubLedger, ScrubMode};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const RACK: &str = include_str!("../../../../presets/dense-jbod-60.toml");

/// dense-jbod-60 (k = 3, r = 2, groups of 6).
fn dense_config() -> StoreConfig {
    let rack = spinwise_model::parse_rack("dense-jbod-60", RACK).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    let mut config = StoreConfig::new(
        RackSource::Preset("dense-jbod-60".into()),
        RACK.to_string(),
        layout,
    );
    config.time_factor = 0.001;
    config.bundle_bytes = 4 << 20;
    config
}

/// The same enclosure planned for one group at a time and a two-year service interval: the
/// planner then makes 5 groups of 12 disks with k = 7, r = 2 (f = 3), so a group has
/// k + 2r + 1 disks and full redundancy after r failures is possible.
fn wide_rack_toml() -> String {
    let text = RACK
        .replace("io_concurrency_target = 2", "io_concurrency_target = 1")
        .replace("service_interval_days = 90", "service_interval_days = 720")
        .replace("name = \"dense-jbod-60\"", "name = \"dense-jbod-60-wide\"");
    assert_ne!(text, RACK);
    text
}

fn wide_config() -> StoreConfig {
    let toml = wide_rack_toml();
    let rack = spinwise_model::parse_rack("dense-jbod-60-wide", &toml).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    assert_eq!((layout.erasure.k, layout.erasure.r), (7, 2));
    assert!(layout.group_size >= 7 + 2 * 2, "{}", layout.group_size);
    let mut config = StoreConfig::new(RackSource::File("wide.toml".into()), toml, layout);
    config.time_factor = 0.001;
    config.fragment_bytes = 4096;
    config.bundle_bytes = 64 * 1024;
    config
}

async fn get_all(store: &SqliteStore, key: &str) -> (Vec<u8>, usize) {
    let mut reader = store.get(key, None).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    (bytes, reader.repairs().repaired.len())
}

async fn blob_of(store: &SqliteStore, key: &str) -> BlobRecord {
    let ObjectLocation::Migrated { blob, .. } = store.stat(key).await.unwrap().location else {
        panic!("`{key}` is not migrated");
    };
    store.catalog().blob(blob).await.unwrap().unwrap()
}

fn stack_path(store: &SqliteStore, disk: u32, blob: u64, column: usize) -> PathBuf {
    disk_directory(store.data_dir(), disk as usize).join(stack_name(blob, column))
}

/// One object of 400 kB in its own blob on dense-jbod-60; returns the store, bytes and blob.
async fn one_migrated_object(dir: &Path) -> (SqliteStore, Vec<u8>, BlobRecord) {
    let store = Store::init_sqlite(&dir.join("data"), dense_config())
        .await
        .unwrap();
    let bytes = pattern(400_000, 3);
    store.put("y", &bytes[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let blob = blob_of(&store, "y").await;
    (store, bytes, blob)
}

/// Flips one byte of stripe 0's fragment in `blob`'s column 0 (past the 84-byte header);
/// returns the stack's bytes as written.
fn flip_data_byte(store: &SqliteStore, blob: &BlobRecord) -> Vec<u8> {
    let path = stack_path(store, blob.disks[0], blob.id, 0);
    let original = std::fs::read(&path).unwrap();
    let mut damaged = original.clone();
    damaged[200] ^= 0x01;
    std::fs::write(&path, damaged).unwrap();
    original
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_is_repaired_on_the_reads_own_spin_up_and_a_second_read_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let (store, bytes, blob) = one_migrated_object(dir.path()).await;
    let original = flip_data_byte(&store, &blob);
    // Reopen, so every group rests and the read must spin its group up.
    let data = store.data_dir().to_path_buf();
    store.close().await;
    let store = Store::open_sqlite(&data).await.unwrap();
    let mut activity = store.rack_io().driver.subscribe_activity();

    let (read, repaired) = get_all(&store, "y").await;
    assert_eq!(read, bytes);
    assert_eq!(repaired, 1, "the read met the flipped fragment");
    let report = store.settle_repairs().await.unwrap();
    let damaged = DamagedStack {
        blob: blob.id,
        column: 0,
        disk: blob.disks[0],
    };
    assert_eq!(report.repaired, vec![damaged]);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert!(report.disks_failed.is_empty());
    // The stack on disk is again exactly what the migration wrote.
    let healed = std::fs::read(stack_path(&store, blob.disks[0], blob.id, 0)).unwrap();
    assert!(
        healed == original,
        "the repaired stack differs from the original"
    );
    // The repair rode on the read's spin-up: the group came up once for both.
    let mut ups = 0;
    while let Ok(event) = activity.try_recv() {
        if matches!(event, GroupActivity::Up { group, .. } if group == blob.group) {
            ups += 1;
        }
    }
    assert_eq!(
        ups, 1,
        "the group spun up {ups} times for the read and its repair"
    );
    let status = store.status().await.unwrap();
    assert_eq!((status.read_repairs, status.read_repairs_failed), (1, 0));

    let (again, repaired) = get_all(&store, "y").await;
    assert_eq!(again, bytes);
    assert_eq!(repaired, 0, "the second read finds nothing to repair");
    assert!(store.settle_repairs().await.unwrap().is_empty());
    let scrub = store
        .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
        .await
        .unwrap();
    assert_eq!((scrub.bad_fragments, scrub.stacks_repaired), (0, 0));
    assert_eq!(store.rack_io().driver.audit_counters().refusals, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_repair_that_cannot_be_written_is_reported_and_the_read_still_returns_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, bytes, blob) = one_migrated_object(dir.path()).await;
    flip_data_byte(&store, &blob);
    store.rack_io().emulated[blob.disks[0] as usize]
        .faults()
        .fail_next_writes(1);
    let (read, repaired) = get_all(&store, "y").await;
    assert_eq!(read, bytes);
    assert_eq!(repaired, 1);
    let report = store.settle_repairs().await.unwrap();
    assert!(report.repaired.is_empty());
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(report.failed[0].0.disk, blob.disks[0]);
    assert!(
        report.failed[0].1.contains("writing the stack"),
        "{report:?}"
    );
    assert_eq!(store.status().await.unwrap().read_repairs_failed, 1);
    // The damage is still there, so the next read finds it and this time repairs it.
    let (read, repaired) = get_all(&store, "y").await;
    assert_eq!((read == bytes, repaired), (true, 1));
    assert_eq!(store.settle_repairs().await.unwrap().repaired.len(), 1);
    assert_eq!(get_all(&store, "y").await.1, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_meets_a_removed_disk_records_it_failed_and_queues_its_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let (store, bytes, blob) = one_migrated_object(dir.path()).await;
    let removed = blob.disks[0];
    store.rack_io().emulated[removed as usize]
        .faults()
        .remove_disk()
        .unwrap();
    let (read, repaired) = get_all(&store, "y").await;
    assert_eq!(read, bytes);
    assert!(repaired >= 1);
    let report = store.settle_repairs().await.unwrap();
    assert!(report.repaired.is_empty(), "no repair on a vanished disk");
    assert_eq!(report.disks_failed.len(), 1, "{report:?}");
    assert_eq!(report.disks_failed[0].disk, removed);
    assert_eq!(report.disks_failed[0].tasks_queued, 1);
    let unhealthy = store.catalog().unhealthy_disks().await.unwrap();
    assert_eq!(unhealthy.len(), 1);
    assert_eq!(
        (unhealthy[0].disk, unhealthy[0].health),
        (removed, DiskHealth::Failed)
    );
    let status = store.status().await.unwrap();
    assert_eq!((status.disks_failed, status.rebuild_pending), (1, 1));
    // Disks in standby are not failed: nothing else was recorded.
    assert!(
        store
            .rack_io()
            .disks
            .iter()
            .filter(|d| d.index() != removed)
            .all(
                |d| d.power_state() == PowerState::Standby || d.power_state() == PowerState::Active
            )
    );
    let rebuilt = store.rebuild(|_| {}).await.unwrap();
    assert_eq!((rebuilt.rebuilt.len(), rebuilt.failed.len()), (1, 0));
    let (read, repaired) = get_all(&store, "y").await;
    assert_eq!((read == bytes, repaired), (true, 0));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_removed_while_the_store_is_closed_is_recorded_failed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let (store, bytes, blob) = one_migrated_object(dir.path()).await;
    let data = store.data_dir().to_path_buf();
    store.close().await;
    let removed = blob.disks[3];
    std::fs::remove_dir_all(disk_directory(&data, removed as usize)).unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    let status = store.status().await.unwrap();
    assert_eq!((status.disks_failed, status.rebuild_pending), (1, 1));
    assert_eq!(
        store.catalog().unhealthy_disks().await.unwrap()[0].disk,
        removed
    );
    assert_eq!(get_all(&store, "y").await.0, bytes);
    store.close().await;
}

/// Disks of `group` in rows (the preset's grid: 12 disks per row) where the group has at least
/// three disks: removing two such disks leaves the group able to spread k + r = 9 stacks at most
/// r = 2 per row (a group of 12 has rows of 3, 3, 2, 2, 2 or alike: 10 places within the rule).
fn removable_disks(group_disks: &[u32], blob: &BlobRecord, k: usize) -> Vec<u32> {
    let row = |disk: u32| disk / 12;
    let in_row = |r: u32| group_disks.iter().filter(|&&d| row(d) == r).count();
    let mut chosen: Vec<u32> = Vec::new();
    for &disk in &blob.disks[..k] {
        let taken_rows: BTreeSet<u32> = chosen.iter().map(|&d| row(d)).collect();
        if in_row(row(disk)) >= 3 && !taken_rows.contains(&row(disk)) {
            chosen.push(disk);
        }
    }
    chosen
}

/// Every stack file on the healthy disks of the rack, as (disk, name).
fn stack_files_on(store: &SqliteStore, healthy: &[u32]) -> BTreeSet<(u32, String)> {
    let mut files = BTreeSet::new();
    for &disk in healthy {
        let dir = disk_directory(store.data_dir(), disk as usize);
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            if name.ends_with(".stack") {
                files.insert((disk, name));
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_removed_disks_of_a_group_leave_every_object_readable_and_rebuild_restores_full_redundancy()
 {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), wide_config())
        .await
        .unwrap();
    let (k, r) = (7usize, 2usize);
    let objects: Vec<(String, Vec<u8>)> = [50_000usize, 1, 30_001, 70_000, 4096, 100_000]
        .iter()
        .enumerate()
        .map(|(index, &size)| (format!("object-{index}"), pattern(size, index as u64 + 11)))
        .collect();
    for (key, bytes) in &objects {
        store.put(key, &bytes[..]).await.unwrap();
    }
    store.flush(|_| {}).await.unwrap();
    let first = blob_of(&store, "object-0").await;
    let placement = &store.rack_io().placement;
    let group_disks = placement.group_disks(first.group).unwrap().to_vec();
    let removed = removable_disks(&group_disks, &first, k);
    assert!(removed.len() >= r, "{removed:?} in group {group_disks:?}");
    let removed = &removed[..r];
    for &disk in removed {
        store.rack_io().emulated[disk as usize]
            .faults()
            .remove_disk()
            .unwrap();
    }

    // The start-up check notices both and queues their stacks.
    let check = store.check_disks(|_, _| {}).await.unwrap();
    let mut marked = check.disks_marked_failed.clone();
    marked.sort_unstable();
    let mut expected = removed.to_vec();
    expected.sort_unstable();
    assert_eq!(marked, expected);
    assert!(check.rebuild_tasks_queued >= r as u64);
    let status = store.status().await.unwrap();
    assert_eq!(status.disks_failed, r as u64);
    assert_eq!(status.rebuild_pending, check.rebuild_tasks_queued);

    // Every object still reads, byte-exact.
    for (key, bytes) in &objects {
        assert_eq!(&get_all(&store, key).await.0, bytes, "{key}");
    }

    let report = store.rebuild(|_| {}).await.unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(report.rebuilt.len() as u64, check.rebuild_tasks_queued);
    assert_eq!(store.status().await.unwrap().rebuild_pending, 0);

    // Independently: every blob has k + r distinct healthy disks of its group, within the
    // spread rule, each holding its column's stack; no other stack file on a healthy disk.
    let healthy: Vec<u32> = (0..60u32).filter(|d| !removed.contains(d)).collect();
    let mut expected_files = BTreeSet::new();
    let mut blobs = BTreeSet::new();
    for (key, _) in &objects {
        blobs.insert(blob_of(&store, key).await.id);
    }
    for &id in &blobs {
        let blob = store.catalog().blob(id).await.unwrap().unwrap();
        let distinct: BTreeSet<u32> = blob.disks.iter().copied().collect();
        assert_eq!(distinct.len(), k + r, "blob {id}: {:?}", blob.disks);
        let group = placement.group_disks(blob.group).unwrap();
        assert!(blob.disks.iter().all(|d| group.contains(d)));
        assert!(blob.disks.iter().all(|d| !removed.contains(d)));
        assert!(placement.within_redundancy(&blob.disks), "{:?}", blob.disks);
        for (column, &disk) in blob.disks.iter().enumerate() {
            expected_files.insert((disk, stack_name(id, column)));
        }
    }
    assert_eq!(stack_files_on(&store, &healthy), expected_files);
    let scrub = store
        .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
        .await
        .unwrap();
    assert_eq!(scrub.blobs, blobs.len() as u64);
    assert_eq!(
        (
            scrub.bad_fragments,
            scrub.on_failed_disks,
            scrub.stacks_repaired
        ),
        (0, 0, 0),
        "{scrub:?}"
    );
    common::assert_catalog_consistent(&store).await;
    for (key, bytes) in &objects {
        let (read, repaired) = get_all(&store, key).await;
        assert_eq!((&read, repaired), (bytes, 0), "{key}");
    }
    store.close().await;
}
