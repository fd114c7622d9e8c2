//! The tail cache in the real store (issue 33 item 3; docs/store.md, "Tail cache"): a GET of an
//! object just written is served from RAM without opening its segment — shown by damaging the
//! segment after the PUT, which a GET with the cache off then trips over — in ranges and under
//! `--verify` too; an overwrite is served in its new version; a freed segment's entries go;
//! a GET that missed fills the cache; what RAM evicts is served from the flash directory, whose
//! damaged files are misses, never wrong bytes; and every hit and miss is counted.

use crate::common;

use spinwise_catalog::ObjectLocation;
use spinwise_store::staging::segment_path;
use spinwise_store::{
    ContentCheck, SqliteStore, Store, StoreConfig, StoreError, TailCacheConfig, TailCacheStats,
};
use std::ops::Range;
use std::path::Path;

fn config(tail_cache: TailCacheConfig) -> StoreConfig {
    let mut config = common::jbod_config();
    config.tail_cache = tail_cache;
    config
}

async fn init(dir: &Path, tail_cache: TailCacheConfig) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(tail_cache))
        .await
        .unwrap()
}

/// The whole read: its bytes and whether the cache served them.
async fn read(
    store: &SqliteStore,
    key: &str,
    range: Option<Range<u64>>,
    check: ContentCheck,
) -> Result<(Vec<u8>, bool), StoreError> {
    let mut reader = store.get_with(key, range, check).await?;
    let cached = reader.from_tail_cache();
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, cached))
}

async fn location(store: &SqliteStore, key: &str) -> (u64, u64) {
    match store.stat(key).await.unwrap().location {
        ObjectLocation::Staged { segment, offset } => (segment, offset),
        other => panic!("{key} is not staged: {other:?}"),
    }
}

/// Flips every byte of `key`'s payload in its segment file (found by its bytes `data`), so a
/// read of the segment fails its crc32c.
async fn damage_in_segment(store: &SqliteStore, key: &str, data: &[u8]) {
    let (segment, _) = location(store, key).await;
    let path = segment_path(store.staging().dir(), segment);
    let mut raw = std::fs::read(&path).unwrap();
    let at = raw
        .windows(data.len())
        .position(|window| window == data)
        .expect("the payload is in its segment");
    for byte in &mut raw[at..at + data.len()] {
        *byte ^= 0xff;
    }
    std::fs::write(&path, raw).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_right_after_a_put_is_served_from_ram_without_reading_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path(), TailCacheConfig::default()).await;
    let data = common::pattern(20_000, 1);
    store.put("k", &data[..]).await.unwrap();
    // Only the cache still has the right bytes now.
    damage_in_segment(&store, "k", &data).await;
    let (bytes, cached) = read(&store, "k", None, ContentCheck::ChunksOnly)
        .await
        .unwrap();
    assert!(cached);
    assert_eq!(bytes, data);
    let stats = store.tail_cache_stats();
    assert_eq!((stats.ram_hits, stats.flash_hits, stats.misses), (1, 0, 0));
    assert_eq!(stats.served_bytes, 20_000);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_cache_off_the_same_get_reads_the_damaged_segment_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path(), TailCacheConfig::disabled()).await;
    let data = common::pattern(20_000, 1);
    store.put("k", &data[..]).await.unwrap();
    damage_in_segment(&store, "k", &data).await;
    match read(&store, "k", None, ContentCheck::ChunksOnly).await {
        Err(StoreError::Staging(_)) => {}
        other => panic!("expected the damaged segment's error, got {other:?}"),
    }
    assert_eq!(store.tail_cache_stats(), TailCacheStats::default());
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_reads_and_verified_reads_are_served_from_the_cache_with_exactly_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path(), TailCacheConfig::default()).await;
    let data = common::pattern(50_000, 2);
    store.put("k", &data[..]).await.unwrap();
    damage_in_segment(&store, "k", &data).await;
    for range in [0..1, 10..4_000, 49_999..50_000, 7..7] {
        let (bytes, cached) = read(&store, "k", Some(range.clone()), ContentCheck::ChunksOnly)
            .await
            .unwrap();
        assert!(cached);
        assert_eq!(bytes, data[range.start as usize..range.end as usize]);
    }
    let (bytes, cached) = read(&store, "k", None, ContentCheck::WholeObject)
        .await
        .unwrap();
    assert!(cached);
    assert_eq!(bytes, data);
    let stats = store.tail_cache_stats();
    assert_eq!(stats.ram_hits, 5);
    assert_eq!(stats.served_bytes, 1 + 3_990 + 1 + 50_000);
    assert_eq!(stats.verify_failures, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overwritten_key_is_served_in_its_new_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = init(dir.path(), TailCacheConfig::default()).await;
    let old = common::pattern(3_000, 3);
    let new = common::pattern(2_000, 4);
    store.put("k", &old[..]).await.unwrap();
    assert_eq!(
        read(&store, "k", None, ContentCheck::ChunksOnly)
            .await
            .unwrap(),
        (old, true)
    );
    store.put("k", &new[..]).await.unwrap();
    damage_in_segment(&store, "k", &new).await;
    assert_eq!(
        read(&store, "k", None, ContentCheck::ChunksOnly)
            .await
            .unwrap(),
        (new, true)
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_entries_of_a_freed_segment_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(TailCacheConfig::default());
    // Every PUT fills its segment, which is sealed at once and so may be freed.
    config.staging.segment_bytes = 1024;
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .unwrap();
    store
        .put("gone", &common::pattern(5_000, 5)[..])
        .await
        .unwrap();
    store
        .put("kept", &common::pattern(5_000, 6)[..])
        .await
        .unwrap();
    let gone = location(&store, "gone").await;
    let kept = location(&store, "kept").await;
    assert_ne!(gone.0, kept.0);
    assert_eq!(store.tail_cache().ram_keys(), vec![gone, kept]);
    store.delete("gone").await.unwrap();
    assert!(!segment_path(store.staging().dir(), gone.0).exists());
    assert_eq!(store.tail_cache().ram_keys(), vec![kept]);
    assert_eq!(store.tail_cache_stats().segment_drops, 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_that_frees_the_staged_segments_leaves_none_of_their_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(TailCacheConfig::default());
    // Sealed at once, so the migration frees the segment (an open one waits to be sealed).
    config.staging.segment_bytes = 1024;
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .unwrap();
    let data = common::pattern(30_000, 7);
    store.put("k", &data[..]).await.unwrap();
    assert_eq!(store.tail_cache().ram_keys().len(), 1);
    store.flush(|_| {}).await.unwrap();
    assert!(store.tail_cache().ram_keys().is_empty());
    assert_eq!(store.tail_cache_stats().segment_drops, 1);
    // Migrated objects are read from their blob, never looked up in the cache.
    assert_eq!(
        read(&store, "k", None, ContentCheck::WholeObject)
            .await
            .unwrap(),
        (data, false)
    );
    assert_eq!(store.tail_cache_stats().misses, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_missed_fills_the_cache_unless_fill_on_read_is_off() {
    for fill_on_read in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let tail_cache = TailCacheConfig {
            fill_on_read,
            ..TailCacheConfig::default()
        };
        let store = init(dir.path(), tail_cache).await;
        let data = common::pattern(10_000, 8);
        store.put("k", &data[..]).await.unwrap();
        store.close().await;
        // A fresh process: the cache starts empty.
        let store = Store::open_sqlite(&dir.path().join("data")).await.unwrap();
        let (bytes, cached) = read(&store, "k", Some(0..10), ContentCheck::ChunksOnly)
            .await
            .unwrap();
        assert_eq!((bytes.as_slice(), cached), (&data[..10], false));
        assert!(
            store.tail_cache().ram_keys().is_empty(),
            "a range read fills nothing"
        );
        let (bytes, cached) = read(&store, "k", None, ContentCheck::ChunksOnly)
            .await
            .unwrap();
        assert_eq!((&bytes, cached), (&data, false));
        let (bytes, cached) = read(&store, "k", None, ContentCheck::ChunksOnly)
            .await
            .unwrap();
        assert_eq!((&bytes, cached), (&data, fill_on_read));
        let stats = store.tail_cache_stats();
        assert_eq!(stats.insertions, u64::from(fill_on_read));
        assert_eq!(stats.misses, if fill_on_read { 2 } else { 3 });
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_misses_and_bytes_are_counted_after_a_known_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let tail_cache = TailCacheConfig {
        ram_bytes: 1 << 20,
        max_object_bytes: Some(16_384),
        ..TailCacheConfig::default()
    };
    let store = init(dir.path(), tail_cache).await;
    let small = common::pattern(10_000, 9);
    let large = common::pattern(20_000, 10);
    store.put("small", &small[..]).await.unwrap();
    store.put("large", &large[..]).await.unwrap(); // above max_object_bytes: not cached
    read(&store, "small", None, ContentCheck::ChunksOnly)
        .await
        .unwrap();
    read(&store, "large", None, ContentCheck::ChunksOnly)
        .await
        .unwrap(); // a miss, no fill
    read(&store, "small", Some(100..200), ContentCheck::ChunksOnly)
        .await
        .unwrap();
    read(&store, "large", None, ContentCheck::WholeObject)
        .await
        .unwrap(); // a miss
    assert!(matches!(
        read(&store, "absent", None, ContentCheck::ChunksOnly).await,
        Err(StoreError::NoSuchKey { .. })
    ));
    let stats = store.tail_cache_stats();
    let expected = TailCacheStats {
        ram_hits: 2,
        misses: 2,
        served_bytes: 10_000 + 100,
        insertions: 1,
        ram_used_bytes: 10_000 + spinwise_store::tail_cache::ENTRY_OVERHEAD_BYTES,
        ram_entries: 1,
        ..TailCacheStats::default()
    };
    assert_eq!(stats, expected);
    assert_eq!(store.status().await.unwrap().tail_cache, expected);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_ram_evicts_is_served_from_the_flash_directory_and_a_damaged_file_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let overhead = spinwise_store::tail_cache::ENTRY_OVERHEAD_BYTES;
    let tail_cache = TailCacheConfig {
        // Room for one 10,000-byte object in RAM.
        ram_bytes: 10_000 + overhead,
        max_object_bytes: Some(10_000),
        fill_on_read: true,
        dir: Some("tail-cache".into()),
        dir_bytes: Some(1 << 20),
    };
    let store = init(dir.path(), tail_cache).await;
    let first = common::pattern(10_000, 11);
    let second = common::pattern(10_000, 12);
    let third = common::pattern(10_000, 13);
    store.put("first", &first[..]).await.unwrap();
    store.put("second", &second[..]).await.unwrap();
    store.put("third", &third[..]).await.unwrap();
    let first_at = location(&store, "first").await;
    let second_at = location(&store, "second").await;
    let cache = store.tail_cache();
    assert_eq!(cache.flash_keys(), vec![first_at, second_at]);
    let first_file = cache.flash_file(first_at).unwrap();
    assert!(first_file.starts_with(dir.path().join("data").join("tail-cache")));
    assert!(first_file.exists());

    // Served from flash, the segment damaged.
    damage_in_segment(&store, "first", &first).await;
    assert_eq!(
        read(&store, "first", None, ContentCheck::WholeObject)
            .await
            .unwrap(),
        (first, true)
    );
    // A damaged flash file: a miss, and the right bytes from the segment.
    let second_file = cache.flash_file(second_at).unwrap();
    let mut raw = std::fs::read(&second_file).unwrap();
    let middle = raw.len() / 2;
    raw[middle] ^= 0x01;
    std::fs::write(&second_file, raw).unwrap();
    assert_eq!(
        read(&store, "second", None, ContentCheck::ChunksOnly)
            .await
            .unwrap(),
        (second, false)
    );
    let stats = store.tail_cache_stats();
    assert_eq!(stats.flash_hits, 1);
    assert_eq!(stats.flash_damaged, 1);
    assert_eq!(stats.misses, 1);
    assert!(stats.ram_used_bytes <= 10_000 + overhead);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tail_cache_table_is_written_read_back_and_checked_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let tail_cache = TailCacheConfig {
        ram_bytes: 8 << 20,
        max_object_bytes: Some(65_536),
        fill_on_read: false,
        dir: Some("cache".into()),
        dir_bytes: Some(100 << 20),
    };
    let store = init(dir.path(), tail_cache.clone()).await;
    store.close().await;
    let text = std::fs::read_to_string(dir.path().join("data/store.toml")).unwrap();
    assert!(text.contains("[tail_cache]"), "{text}");
    let store = Store::open_sqlite(&dir.path().join("data")).await.unwrap();
    assert_eq!(store.config().tail_cache, tail_cache);
    store.close().await;

    let refused = Store::init_sqlite(
        &dir.path().join("other"),
        config(TailCacheConfig {
            ram_bytes: 1000,
            max_object_bytes: Some(1001),
            ..TailCacheConfig::default()
        }),
    )
    .await;
    match refused {
        Err(StoreError::Config { message, .. }) => {
            assert!(message.contains("tail_cache.max_object_bytes"), "{message}")
        }
        other => panic!(
            "expected a configuration error, got {:?}",
            other.map(|_| ())
        ),
    }
}
