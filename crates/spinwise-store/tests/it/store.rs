//! The store's object API through the SQLite catalog on a temporary data directory: round
//! trips, ranges, overwrite, delete, list, status, reopen and recovery of unacknowledged
//! appends, and the typed refusals (bad key, missing key, bad range, migrated object).

use crate::common;

use common::pattern;
use spinwise_catalog::{BlobRecord, BlobState, Catalog, MemoryCatalog, Migration, ObjectLocation};
use spinwise_store::staging::{SEGMENT_HEADER_BYTES, StagingConfig, StagingError, segment_path};
use spinwise_store::{RackSource, SqliteStore, Store, StoreConfig, StoreError};
use std::path::Path;

const RACK: &str = include_str!("../../../../presets/dense-jbod-60.toml");

fn config(segment_bytes: u64) -> StoreConfig {
    let rack = spinwise_model::parse_rack("dense-jbod-60", RACK).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    let mut config = StoreConfig::new(
        RackSource::Preset("dense-jbod-60".into()),
        RACK.to_string(),
        layout,
    );
    config.staging = StagingConfig {
        segment_bytes,
        chunk_bytes: 4096,
        limit_bytes: 256 << 20,
    };
    config
}

async fn get_all<C: Catalog>(
    store: &Store<C>,
    key: &str,
    range: Option<std::ops::Range<u64>>,
) -> Result<Vec<u8>, StoreError> {
    let mut reader = store.get(key, range).await?;
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

async fn new_store(dir: &Path, segment_bytes: u64) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(segment_bytes))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_round_trip_byte_exact_and_ranges_read_exactly_those_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 1 << 20).await;
    for (index, size) in [0, 1, 128 * 1024 - 1, 128 * 1024, 128 * 1024 + 1]
        .into_iter()
        .enumerate()
    {
        let data = pattern(size, index as u64);
        let key = format!("dir/object-{index}");
        let record = store.put(&key, &data[..]).await.unwrap();
        assert_eq!(record.size_bytes, size as u64);
        assert!(get_all(&store, &key, None).await.unwrap() == data);
        let stat = store.stat(&key).await.unwrap();
        assert_eq!(stat, record);
    }
    let data = pattern(128 * 1024 + 1, 4);
    let ranged = get_all(&store, "dir/object-4", Some(4000..70_001))
        .await
        .unwrap();
    assert_eq!(ranged, data[4000..70_001]);
    let beyond = get_all(&store, "dir/object-4", Some(0..128 * 1024 + 2)).await;
    assert!(matches!(beyond, Err(StoreError::Range { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overwrite_and_delete_hide_old_bytes_and_free_their_staging_segments() {
    let dir = tempfile::tempdir().unwrap();
    // Tiny segments: every object seals its own, so freed space is observable.
    let store = new_store(dir.path(), 4096).await;
    let first = store.put("k", &pattern(5000, 1)[..]).await.unwrap();
    let ObjectLocation::Staged { segment: old, .. } = first.location else {
        panic!("a fresh put is staged")
    };
    let newer = pattern(6000, 2);
    store.put("k", &newer[..]).await.unwrap();
    assert_eq!(get_all(&store, "k", None).await.unwrap(), newer);
    let staging = store.data_dir().join("staging");
    assert!(!segment_path(&staging, old).exists(), "old version freed");

    let removed = store.delete("k").await.unwrap();
    assert_eq!(removed.size_bytes, 6000);
    assert!(matches!(
        store.get("k", None).await,
        Err(StoreError::NoSuchKey { .. })
    ));
    assert!(matches!(
        store.delete("k").await,
        Err(StoreError::NoSuchKey { .. })
    ));
    // The newer version's segment, the highest, is emptied to its header, not deleted.
    assert_eq!(store.staging().used_bytes(), SEGMENT_HEADER_BYTES);
    assert_eq!(store.staging().sealed_segments().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_by_prefix_and_status_counts_objects() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 1 << 20).await;
    for key in ["a/1", "a/2", "a/3", "b/1"] {
        store.put(key, &pattern(100, 9)[..]).await.unwrap();
    }
    let keys = |records: Vec<spinwise_catalog::ObjectRecord>| {
        records.into_iter().map(|r| r.key).collect::<Vec<_>>()
    };
    assert_eq!(
        keys(store.list("a/", None, 10).await.unwrap()),
        ["a/1", "a/2", "a/3"]
    );
    assert_eq!(
        keys(store.list("a/", Some("a/1"), 1).await.unwrap()),
        ["a/2"]
    );
    assert_eq!(keys(store.list("", None, 10).await.unwrap()).len(), 4);
    let status = store.status().await.unwrap();
    assert_eq!((status.objects, status.bytes), (4, 400));
    assert_eq!((status.staged_objects, status.staged_bytes), (4, 400));
    assert_eq!((status.disks_failed, status.rebuild_pending), (0, 0));
    assert!(status.staging_used_bytes > 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_acknowledged_objects_and_drops_unacknowledged_appends() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let data = pattern(20_000, 5);
    let orphan_segment = {
        let store = new_store(dir.path(), 1 << 20).await;
        store.put("kept", &data[..]).await.unwrap();
        // An append whose catalog commit never happened (a crash between the two).
        let orphan = store
            .staging()
            .append(
                "unacknowledged",
                spinwise_catalog::Tier::Cold,
                &pattern(9000, 6)[..],
            )
            .await
            .unwrap();
        let segment = orphan.segment;
        store.close().await;
        segment
    };
    let store = Store::open_sqlite(&data_dir).await.unwrap();
    assert!(store.recovery().problems.is_empty());
    assert!(store.recovery().staging.missing.is_empty());
    assert_eq!(get_all(&store, "kept", None).await.unwrap(), data);
    assert!(matches!(
        store.stat("unacknowledged").await,
        Err(StoreError::NoSuchKey { .. })
    ));
    common::assert_catalog_consistent(&store).await;
    let staging = data_dir.join("staging");
    let kept_segment = match store.stat("kept").await.unwrap().location {
        ObjectLocation::Staged { segment, .. } => segment,
        other => panic!("{other:?}"),
    };
    // Both records shared one segment; it stays (referenced) with the orphan's bytes cut off.
    assert_eq!(kept_segment, orphan_segment);
    assert!(store.recovery().staging.bytes_truncated > 9000);
    assert!(segment_path(&staging, kept_segment).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keys_missing_stores_and_second_inits_are_refused_typed() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 1 << 20).await;
    let long = "k".repeat(spinwise_store::staging::MAX_KEY_BYTES + 1);
    for key in ["", long.as_str()] {
        assert!(matches!(
            store.put(key, &b"v"[..]).await,
            Err(StoreError::KeyLength { .. })
        ));
    }
    let again = Store::init_sqlite(&dir.path().join("data"), config(1 << 20)).await;
    assert!(matches!(again, Err(StoreError::AlreadyInitialized { .. })));
    let missing = Store::open_sqlite(&dir.path().join("nothing-here")).await;
    assert!(matches!(missing, Err(StoreError::NotInitialized { .. })));
    assert!(!dir.path().join("nothing-here").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_beyond_the_staging_limit_is_refused_and_invisible() {
    let dir = tempfile::tempdir().unwrap();
    let mut small = config(1 << 20);
    small.staging.limit_bytes = 32 * 1024;
    let store = Store::init_sqlite(&dir.path().join("data"), small)
        .await
        .unwrap();
    let full = store.put("big", &pattern(64 * 1024, 1)[..]).await;
    assert!(matches!(
        full,
        Err(StoreError::Staging(StagingError::Full { .. }))
    ));
    assert!(store.list("", None, 10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_object_whose_stacks_are_gone_is_corrupt_beyond_repair_naming_its_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let mut config = config(1 << 20);
    config.time_factor = 0.001;
    let layout = config.layout.clone();
    let store = Store::init(&data_dir, config, MemoryCatalog::new())
        .await
        .unwrap();
    let record = store.put("moved", &pattern(1000, 1)[..]).await.unwrap();
    let catalog = store.catalog();
    let blob = catalog.next_blob_id().await.unwrap();
    let (k, r) = (layout.erasure.k, layout.erasure.r);
    catalog
        .begin_blob(BlobRecord {
            id: blob,
            group: 0,
            disks: layout.groups[0][..(k + r) as usize].to_vec(),
            k,
            r,
            fragment_bytes: 128 * 1024,
            size_bytes: 1000,
            content_hash: record.content_hash,
            state: BlobState::Writing,
            live_bytes: 0,
        })
        .await
        .unwrap();
    let moves = vec![Migration {
        key: "moved".into(),
        from: record.location.clone(),
        blob_offset: 0,
    }];
    assert_eq!(catalog.commit_blob(blob, moves).await.unwrap(), 1);
    // The catalog says the bytes are in the blob, but no stack was ever written: the read
    // goes through the scheduler, finds no fragment, and names every one it tried.
    let mut reader = store.get("moved", None).await.unwrap();
    let refused = reader.next_chunk().await;
    match refused {
        Err(StoreError::CorruptBeyondRepair {
            blob: b,
            stripe: 0,
            fragments,
            ..
        }) => {
            assert_eq!(b, blob);
            assert!(fragments.contains("column 0 on disk"), "{fragments}");
        }
        other => panic!(
            "expected CorruptBeyondRepair, got {:?}",
            other.map(|c| c.map(|b| b.len()))
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_with_shows_the_record_before_commit_and_a_refusal_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), 1 << 20).await;
    let old = pattern(3000, 1);
    store.put("k", &old[..]).await.unwrap();

    // The hook sees the size and BLAKE3 of the bytes being committed.
    let new = pattern(70_000, 2);
    let seen = std::sync::Mutex::new(None);
    let record = store
        .put_with("k", spinwise_catalog::Tier::Cold, &new[..], |record| {
            *seen.lock().unwrap() = Some(record.clone());
            std::future::ready(Ok(()))
        })
        .await
        .unwrap();
    assert_eq!(seen.into_inner().unwrap(), Some(record.clone()));
    assert_eq!(record.size_bytes, 70_000);
    assert_eq!(record.content_hash, *blake3::hash(&new).as_bytes());

    // A refusal: the PUT fails typed and the key still holds the previous object.
    let refused = store
        .put_with(
            "k",
            spinwise_catalog::Tier::Cold,
            &pattern(5000, 3)[..],
            |_| std::future::ready(Err("metadata disk full".to_string())),
        )
        .await;
    match refused {
        Err(StoreError::CommitRefused { key, reason }) => {
            assert_eq!(key, "k");
            assert_eq!(reason, "metadata disk full");
        }
        other => panic!("expected CommitRefused, got {other:?}"),
    }
    assert!(get_all(&store, "k", None).await.unwrap() == new);
    let refused_new_key = store
        .put_with(
            "fresh",
            spinwise_catalog::Tier::Cold,
            &pattern(10, 4)[..],
            |_| std::future::ready(Err("no".to_string())),
        )
        .await;
    assert!(matches!(
        refused_new_key,
        Err(StoreError::CommitRefused { .. })
    ));
    assert!(matches!(
        store.stat("fresh").await,
        Err(StoreError::NoSuchKey { .. })
    ));
}
