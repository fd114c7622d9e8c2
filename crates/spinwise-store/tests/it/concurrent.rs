//! Many concurrent reads over many groups never exceed a hard budget: blobs are spread over
//! every group of the JBOD, then dozens of GETs run at once; the driver's budget audit (which
//! books every disk power change before the disk obeys) must never refuse a change, and no
//! resource's peak may pass its budget. Every byte read is checked. Concurrent overwrites, each
//! reclaiming staging, never trip over one another.

use crate::common;

use spinwise_catalog::{Catalog, ObjectLocation};
use spinwise_store::{SqliteStore, Store, StoreConfig};
use std::collections::BTreeSet;
use std::sync::Arc;

fn config() -> StoreConfig {
    common::jbod_config()
}

fn bytes_of(index: usize) -> Vec<u8> {
    (0..200_000 + index * 1_000)
        .map(|i| ((i * 7 + index * 13) % 251) as u8)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dozens_of_concurrent_reads_over_every_group_never_exceed_a_hard_budget() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    Store::init_sqlite(&data, config())
        .await
        .unwrap()
        .close()
        .await;
    // One flush per opening: with nothing spinning, each goes to the emptiest group.
    let rounds = 10;
    for round in 0..rounds {
        let store = SqliteStore::open_sqlite(&data).await.unwrap();
        for object in 0..3 {
            let index = round * 3 + object;
            store
                .put(&format!("k{index}"), &bytes_of(index)[..])
                .await
                .unwrap();
        }
        store.flush(|_| {}).await.unwrap();
        store.close().await;
    }
    let store = Arc::new(SqliteStore::open_sqlite(&data).await.unwrap());
    let mut groups = BTreeSet::new();
    for index in 0..rounds * 3 {
        let record = store.stat(&format!("k{index}")).await.unwrap();
        let ObjectLocation::Migrated { blob, .. } = record.location else {
            panic!("k{index} staged")
        };
        groups.insert(store.catalog().blob(blob).await.unwrap().unwrap().group);
    }
    assert_eq!(
        groups.len(),
        10,
        "blobs spread over every group: {groups:?}"
    );
    let mut readers = Vec::new();
    for reader in 0..40 {
        let store = store.clone();
        readers.push(tokio::spawn(async move {
            let index = (reader * 7) % (rounds * 3);
            let mut object = store.get(&format!("k{index}"), None).await.unwrap();
            let mut read = Vec::new();
            while let Some(chunk) = object.next_chunk().await.unwrap() {
                read.extend_from_slice(&chunk);
            }
            assert_eq!(read, bytes_of(index), "k{index}");
        }));
    }
    for reader in readers {
        reader.await.unwrap();
    }
    let audit = store.rack_io().driver.audit_counters();
    assert_eq!(audit.refusals, 0, "{audit:?}");
    assert!(
        audit.max_active > 6,
        "several groups were up at once: {audit:?}"
    );
    for peak in &audit.peaks {
        assert!(peak.peak_micros <= peak.budget_micros, "{peak:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_overwrites_reclaiming_staging_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config();
    // Small segments: nearly every overwrite seals one, and each reclaims what others freed up.
    config.staging.segment_bytes = 64 << 10;
    config.staging.chunk_bytes = 16 << 10;
    let store = Arc::new(
        Store::init_sqlite(&dir.path().join("data"), config)
            .await
            .unwrap(),
    );
    let writers: Vec<_> = (0..16u64)
        .map(|writer| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for round in 0..40u64 {
                    let key = format!("w{writer}/k{}", round % 3);
                    let bytes = common::pattern(20_000, writer << 16 | round);
                    store
                        .put(&key, &bytes[..])
                        .await
                        .unwrap_or_else(|error| panic!("PUT {key} round {round}: {error}"));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    for writer in 0..16u64 {
        for slot in 0..3u64 {
            let last_round = (0..40u64).filter(|round| round % 3 == slot).max().unwrap();
            let key = format!("w{writer}/k{slot}");
            let mut reader = store.get(&key, None).await.unwrap();
            let mut read = Vec::new();
            while let Some(chunk) = reader.next_chunk().await.unwrap() {
                read.extend_from_slice(&chunk);
            }
            assert!(
                read == common::pattern(20_000, writer << 16 | last_round),
                "{key} holds other bytes than its last PUT"
            );
        }
    }
}
