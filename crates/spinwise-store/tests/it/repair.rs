//! Failures and upkeep on a real store (dense-jbod-60, k=3 r=2, SQLite catalog, emulated disks
//! at time factor 0.001): failing disks queues rebuild tasks that `rebuild` drains onto other
//! disks of the group until every blob decodes with a clean report; scrub finds flipped bytes
//! and lying (short-read) disks and repairs stacks in place.
//!
//! `migrate` (tests/common) places each blob in a chosen group by doing the migrator's steps by
//! hand: blob id, placement, `begin_blob`, a driver job writing the stacks, `commit_blob`.

use crate::common;

use common::{flip_byte, migrate, pattern, read_blob};
use spinwise_catalog::{BlobRecord, Catalog};
use spinwise_store::RepairFailure;
use spinwise_store::{ScrubLedger, ScrubMode};
use spinwise_store::{SqliteStore, Store, StoreConfig, StoreError};
use std::path::Path;

/// Small fragments so a few KiB make several stripes.
const FRAGMENT_BYTES: u32 = 4096;

fn config() -> StoreConfig {
    let mut config = common::jbod_config();
    config.fragment_bytes = FRAGMENT_BYTES;
    config
}

async fn new_store(dir: &Path) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config())
        .await
        .unwrap()
}

/// Three blobs in group 0 and one in group 1, with their bytes.
async fn populate(store: &SqliteStore) -> Vec<(BlobRecord, Vec<u8>)> {
    let mut blobs = Vec::new();
    for (index, (size, group)) in [(30_000, 0), (1, 0), (12_289, 0), (20_000, 1)]
        .into_iter()
        .enumerate()
    {
        let data = pattern(size, index as u64);
        let record = migrate(store, &format!("object-{index}"), &data, group).await;
        blobs.push((record, data));
    }
    blobs
}

async fn assert_all_read_clean(store: &SqliteStore, blobs: &[(BlobRecord, Vec<u8>)]) {
    for (record, data) in blobs {
        let (bytes, report) = read_blob(store, record.id).await;
        assert!(bytes == *data, "blob {} differs", record.id);
        assert!(report.is_clean(), "blob {}: {report:?}", record.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_a_disk_queues_its_stacks_and_rebuild_restores_full_redundancy() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let failed = blobs[0].0.disks[1];
    let holding = blobs
        .iter()
        .filter(|(record, _)| record.disks.contains(&failed))
        .count() as u64;
    let report = store.fail_disk(u64::from(failed)).await.unwrap();
    assert_eq!(report.tasks_queued, holding);
    let status = store.status().await.unwrap();
    assert_eq!(status.disks_failed, 1);
    assert_eq!(status.rebuild_pending, holding);

    let mut calls = Vec::new();
    let rebuilt = store
        .rebuild(|progress| calls.push(progress))
        .await
        .unwrap();
    assert!(rebuilt.failed.is_empty(), "{:?}", rebuilt.failed);
    assert_eq!(rebuilt.rebuilt.len() as u64, holding);
    assert_eq!(calls.last().unwrap().done, holding);
    assert!(rebuilt.bytes_written > 0);
    let status = store.status().await.unwrap();
    assert_eq!(status.rebuild_pending, 0);
    assert_eq!(status.disks_failed, 1);

    for (record, _) in &blobs {
        let now = store.catalog().blob(record.id).await.unwrap().unwrap();
        assert!(
            !now.disks.contains(&failed),
            "blob {} still on {failed}",
            record.id
        );
        let group = store.rack_io().placement.group_disks(now.group).unwrap();
        assert!(now.disks.iter().all(|disk| group.contains(disk)));
        let mut distinct = now.disks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), now.disks.len());
    }
    common::assert_catalog_consistent(&store).await;
    assert_all_read_clean(&store, &blobs).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_r_disks_of_a_group_keeps_every_blob_readable_and_rebuild_uses_the_spare() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let first = &blobs[0].0;
    // r = 2: one data and one parity column of the first blob. Groups hold 6 disks and blobs
    // 5 stacks, so one spare remains: one lost column per blob comes back, the other task
    // reports NoTarget and stays queued (full redundancy after r failures needs a group of
    // k + 2r disks).
    for disk in [first.disks[0], first.disks[4]] {
        store.fail_disk(u64::from(disk)).await.unwrap();
    }
    assert_eq!(store.status().await.unwrap().disks_failed, 2);
    for (record, data) in &blobs {
        assert!(read_blob(&store, record.id).await.0 == *data);
    }
    let rebuilt = store.rebuild(|_| {}).await.unwrap();
    let in_group_0 = blobs.iter().filter(|(r, _)| r.group == 0).count();
    assert_eq!(rebuilt.rebuilt.len(), in_group_0);
    assert_eq!(rebuilt.failed.len(), in_group_0);
    assert!(
        rebuilt
            .failed
            .iter()
            .all(|(_, failure)| matches!(failure, RepairFailure::NoTarget { .. }))
    );
    assert_eq!(
        store.status().await.unwrap().rebuild_pending,
        in_group_0 as u64
    );
    common::assert_catalog_consistent(&store).await;
    for (record, data) in &blobs {
        assert!(read_blob(&store, record.id).await.0 == *data);
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_without_a_target_disk_reports_the_task_and_keeps_it_queued() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let data = pattern(9000, 7);
    let record = migrate(&store, "only", &data, 2).await;
    let group: Vec<u32> = store.rack_io().placement.group_disks(2).unwrap().to_vec();
    // Groups of 6, blobs of 5: failing the spare disk and one stack's disk leaves no target.
    let spare = *group.iter().find(|d| !record.disks.contains(d)).unwrap();
    store.fail_disk(u64::from(spare)).await.unwrap();
    store.fail_disk(u64::from(record.disks[2])).await.unwrap();
    let report = store.rebuild(|_| {}).await.unwrap();
    assert!(report.rebuilt.is_empty());
    assert_eq!(report.failed.len(), 1);
    assert!(matches!(report.failed[0].1, RepairFailure::NoTarget { .. }));
    assert_eq!(store.status().await.unwrap().rebuild_pending, 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_disk_refuses_an_unknown_disk_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let refused = store.fail_disk(60).await;
    assert!(matches!(
        refused,
        Err(StoreError::UnknownDisk {
            disk: 60,
            disks: 60
        })
    ));
    let disk = blobs[0].0.disks[0];
    let first = store.fail_disk(u64::from(disk)).await.unwrap();
    let second = store.fail_disk(u64::from(disk)).await.unwrap();
    assert_eq!(first, second);
    let status = store.status().await.unwrap();
    assert_eq!(status.disks_failed, 1);
    assert_eq!(status.rebuild_pending, first.tasks_queued);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrub_finds_a_flipped_byte_repairs_the_stack_and_a_second_scrub_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let (record, _) = &blobs[0];
    let code = &store.rack_io().code;
    // A byte inside stripe 1's fragment of column 3 (parity), past the 84-byte header.
    let offset = code.fragment_offset(1) + 17;
    flip_byte(&store, record.disks[3], record.id, 3, offset);
    let ledger = ScrubLedger::default();
    let report = store
        .scrub(ScrubMode::Forced, &ledger, |_| {})
        .await
        .unwrap();
    assert_eq!(report.blobs, blobs.len() as u64);
    let stripes: u64 = blobs
        .iter()
        .map(|(r, _)| code.stripes_for(r.size_bytes))
        .sum();
    assert_eq!(report.stripes, stripes);
    assert_eq!(report.bad_fragments, 1);
    assert_eq!(report.stacks_repaired, 1);
    assert!(report.unrepairable.is_empty());
    assert!(ledger.last_scrub(record.id).is_some());

    let again = store
        .scrub(ScrubMode::Forced, &ledger, |_| {})
        .await
        .unwrap();
    assert_eq!(again.bad_fragments, 0);
    assert_eq!(again.stacks_repaired, 0);
    assert_all_read_clean(&store, &blobs).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrub_counts_every_bad_fragment_and_names_every_stripe_beyond_repair() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let (record, _) = &blobs[0];
    let code = &store.rack_io().code;
    assert_eq!(code.stripes_for(record.size_bytes), 3);
    // Three of five fragments (r = 2) bad in stripes 0 and 2: both beyond repair.
    for stripe in [0, 2] {
        for column in 0..3 {
            let offset = code.fragment_offset(stripe) + 17;
            flip_byte(&store, record.disks[column], record.id, column, offset);
        }
    }
    let report = store
        .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
        .await
        .unwrap();
    // Until 2026-12-01: 0 bad fragments, and only stripe 2 named.
    assert_eq!(report.bad_fragments, 6);
    assert_eq!(report.stripes_beyond_repair, 2);
    assert_eq!(report.stacks_repaired, 0);
    assert_eq!(report.unrepairable.len(), 1, "{:?}", report.unrepairable);
    let line = &report.unrepairable[0];
    assert!(
        line.starts_with(&format!(
            "blob {}: 2 stripe(s) beyond repair (0, 2)",
            record.id
        )),
        "{line}"
    );
    // The other blobs were scrubbed clean.
    assert_eq!(report.blobs, blobs.len() as u64);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrub_detects_a_disk_that_returns_short_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let blobs = populate(&store).await;
    let liar = blobs[0].0.disks[2];
    store.rack_io().emulated[liar as usize]
        .faults()
        .set_short_reads(true);
    let report = store
        .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
        .await
        .unwrap();
    assert!(report.bad_fragments > 0);
    // Every blob reads byte-exact around the lying disk (a 1-byte blob reads column 0 only).
    for (record, data) in &blobs {
        let (bytes, report) = read_blob(&store, record.id).await;
        assert!(bytes == *data);
        if record.disks[0] == liar {
            assert!(!report.is_clean());
        }
        if !record.disks.contains(&liar) {
            assert!(report.is_clean());
        }
    }
    store.close().await;
}
