//! A lost catalog's recovery ranks the versions of a key by when their PUTs began (the stamp
//! each staging record carries), then by where they were written: two versions written one
//! after the other come back as the later one even when concurrent PUTs left it in a lower
//! segment, and a recovered object keeps its PUT's creation time.

use crate::common::{self, is_staged, lose_the_catalog_and_recover, pattern, read_to_end};
use spinwise_catalog::{Catalog, ObjectLocation, Tier};
use spinwise_store::{SqliteStore, Store};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;

const OBJECT_BYTES: usize = 5_000;

/// A PUT of `key` whose body arrives only as the test writes it: once the returned writer's
/// first two bytes are taken (the pipe holds one), the PUT has its staging segment and holds
/// it until the writer is dropped.
async fn held_put(
    store: &Arc<SqliteStore>,
    key: &'static str,
) -> (tokio::io::DuplexStream, JoinHandle<()>) {
    let (mut writer, reader) = tokio::io::duplex(1);
    let store = Arc::clone(store);
    let put = tokio::spawn(async move {
        store.put(key, reader).await.unwrap();
    });
    writer.write_all(b"ab").await.unwrap();
    (writer, put)
}

async fn new_store(data: &std::path::Path) -> SqliteStore {
    Store::init_sqlite(data, common::jbod_config())
        .await
        .unwrap()
}

async fn staged_place(store: &SqliteStore, key: &str) -> (u64, u64) {
    match store.catalog().object(key).await.unwrap().unwrap().location {
        ObjectLocation::Staged { segment, offset } => (segment, offset),
        ObjectLocation::Migrated { .. } => panic!("{key} was migrated"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_version_left_in_a_lower_segment_by_concurrent_puts_is_the_one_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Arc::new(new_store(&data).await);
    let (first, second) = (pattern(OBJECT_BYTES, 1), pattern(OBJECT_BYTES, 2));
    // An unrelated PUT holds a segment, so the first version opens a newer one.
    let (writer, unrelated) = held_put(&store, "unrelated-1").await;
    store.put("key", &first[..]).await.unwrap();
    let first_place = staged_place(&store, "key").await;
    drop(writer);
    unrelated.await.unwrap();
    // Another unrelated PUT takes the newest idle segment (the first version's), so the
    // second version, begun after the first was acknowledged, lands in the older one.
    let (writer, unrelated) = held_put(&store, "unrelated-2").await;
    store.put("key", &second[..]).await.unwrap();
    let second_place = staged_place(&store, "key").await;
    drop(writer);
    unrelated.await.unwrap();
    assert!(
        second_place < first_place,
        "the scenario needs the later version below the earlier: {second_place:?} {first_place:?}"
    );
    let store = Arc::into_inner(store).expect("the PUTs are done");
    store.close().await;

    let report = lose_the_catalog_and_recover(&data).await;
    let store = Store::open_sqlite(&data).await.unwrap();
    let bytes = read_to_end(&store, "key", None).await.unwrap().0;
    assert!(
        bytes == second,
        "the earlier version came back, ranked by place: {report:?}"
    );
    assert_eq!(staged_place(&store, "key").await, second_place);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_object_keeps_the_creation_time_of_its_put() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(&data).await;
    let migrated = store.put("migrated", &pattern(10, 1)[..]).await.unwrap();
    // Sealed, so the flush frees the segment: only the blob (and its index) holds the object.
    store.staging().seal_idle(Tier::Cold);
    assert_eq!(store.flush(|_| {}).await.unwrap().objects_moved, 1);
    let staged = store.put("staged", &pattern(10, 2)[..]).await.unwrap();
    store.close().await;

    lose_the_catalog_and_recover(&data).await;
    let store = Store::open_sqlite(&data).await.unwrap();
    assert!(!is_staged(&store, "migrated").await);
    assert!(is_staged(&store, "staged").await);
    for (key, put) in [("staged", &staged), ("migrated", &migrated)] {
        let recovered = store.catalog().object(key).await.unwrap().unwrap();
        assert_eq!(recovered.created_unix_ms, put.created_unix_ms, "{key}");
        assert_eq!(recovered.content_hash, put.content_hash, "{key}");
    }
    store.close().await;
}
