//! The warm tier on a temporary dense-jbod-60 store: warm objects stay staged through flushes
//! until demoted, upkeep demotes the oldest when the tier is over its capacity, a full tier
//! refuses warm PUTs under `refuse` (and still takes cold ones), and a lost catalog is rebuilt
//! with each staged object in the tier its staging record names.

use crate::common;

use common::{is_staged, on_manual_clock, pattern, read_to_end};
use spinwise_catalog::Tier;
use spinwise_store::staging::StagingConfig;
use spinwise_store::{SqliteStore, Store, StoreConfig, StoreError, WarmConfig, WarmWhenFull};
use std::future::ready;
use std::path::Path;
use std::time::Duration;

fn config(warm: WarmConfig) -> StoreConfig {
    let mut config = common::jbod_config();
    config.bundle_bytes = 1 << 20;
    config.staging = StagingConfig {
        segment_bytes: 64 << 10,
        chunk_bytes: 4096,
        limit_bytes: 16 << 20,
    };
    config.warm = warm;
    config
}

async fn new_store(dir: &Path, warm: WarmConfig) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(warm))
        .await
        .unwrap()
}

async fn put_in(store: &SqliteStore, key: &str, tier: Tier, bytes: &[u8]) {
    store
        .put_with(key, tier, bytes, |_| ready(Ok(())))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_object_stays_staged_through_flushes_until_demoted_and_then_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), WarmConfig::default()).await;
    let (warm, cold) = (pattern(30_000, 1), pattern(20_000, 2));
    put_in(&store, "warm", Tier::Warm, &warm).await;
    put_in(&store, "cold", Tier::Cold, &cold).await;
    let status = store.status().await.unwrap();
    assert_eq!((status.warm_objects, status.warm_bytes), (1, 30_000));
    let flushed = store.flush(|_| {}).await.unwrap();
    assert_eq!(flushed.objects_moved, 1);
    assert!(
        is_staged(&store, "warm").await,
        "a flush migrated a warm object"
    );
    assert!(
        !is_staged(&store, "cold").await,
        "the cold object stayed staged"
    );
    assert_eq!(read_to_end(&store, "warm", None).await.unwrap().0, warm);
    // A second flush finds nothing to move: the warm object is not "due".
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 0);
    assert!(store.demote("warm").await.unwrap());
    assert!(!store.demote("warm").await.unwrap(), "demoted twice");
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    assert!(!is_staged(&store, "warm").await);
    assert_eq!(read_to_end(&store, "warm", None).await.unwrap().0, warm);
    assert_eq!(store.status().await.unwrap().warm_bytes, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upkeep_demotes_the_oldest_warm_objects_once_the_tier_is_over_its_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let warm = WarmConfig {
        capacity_bytes: Some(100_000),
        when_full: WarmWhenFull::DemoteOldest,
        ..WarmConfig::default()
    };
    let (store, clock) = on_manual_clock(new_store(dir.path(), warm).await);
    for (index, key) in ["oldest", "middle", "newest"].into_iter().enumerate() {
        put_in(&store, key, Tier::Warm, &pattern(40_000, index as u64)).await;
        clock.advance(Duration::from_secs(1));
    }
    // 120,000 warm bytes over a capacity of 100,000: one 40,000-byte object must go, the oldest.
    assert_eq!(store.demote_over_capacity().await.unwrap(), 1);
    let tiers = [
        store.stat("oldest").await.unwrap().tier,
        store.stat("middle").await.unwrap().tier,
        store.stat("newest").await.unwrap().tier,
    ];
    assert_eq!(tiers, [Tier::Cold, Tier::Warm, Tier::Warm]);
    assert_eq!(
        store.demote_over_capacity().await.unwrap(),
        0,
        "within capacity"
    );
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    assert!(!is_staged(&store, "oldest").await);
    assert!(is_staged(&store, "middle").await && is_staged(&store, "newest").await);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_warm_tier_refuses_warm_puts_under_refuse_and_still_takes_cold_ones() {
    let dir = tempfile::tempdir().unwrap();
    let warm = WarmConfig {
        capacity_bytes: Some(50_000),
        when_full: WarmWhenFull::Refuse,
        ..WarmConfig::default()
    };
    let store = new_store(dir.path(), warm).await;
    // Below capacity when it starts, so it is taken (and takes the tier past it).
    put_in(&store, "first", Tier::Warm, &pattern(60_000, 1)).await;
    let used_before = store.status().await.unwrap().staging_used_bytes;
    let refused = store
        .put_with("second", Tier::Warm, &pattern(1_000, 2)[..], |_| {
            ready(Ok(()))
        })
        .await;
    assert!(
        matches!(
            refused,
            Err(StoreError::WarmFull {
                warm_bytes: 60_000,
                capacity_bytes: 50_000
            })
        ),
        "{refused:?}"
    );
    let status = store.status().await.unwrap();
    assert_eq!(
        status.staging_used_bytes, used_before,
        "a refused PUT wrote"
    );
    assert!(store.stat("second").await.is_err());
    put_in(&store, "cold", Tier::Cold, &pattern(1_000, 3)).await;
    // Deleting makes room again; nothing is demoted behind the operator's back.
    assert_eq!(store.demote_over_capacity().await.unwrap(), 0);
    store.delete("first").await.unwrap();
    put_in(&store, "second", Tier::Warm, &pattern(1_000, 2)).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_catalog_is_recovered_with_each_staged_object_in_the_tier_its_record_names() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(dir.path(), WarmConfig::default()).await;
    put_in(&store, "warm", Tier::Warm, &pattern(5_000, 1)).await;
    put_in(&store, "cold", Tier::Cold, &pattern(5_000, 2)).await;
    store.close().await;
    for file in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(data.join(format!("{}{file}", spinwise_store::CATALOG_FILE)));
    }
    spinwise_store::recover(&data).await.unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(store.stat("warm").await.unwrap().tier, Tier::Warm);
    assert_eq!(store.stat("cold").await.unwrap().tier, Tier::Cold);
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    assert!(is_staged(&store, "warm").await);
    store.close().await;
}
