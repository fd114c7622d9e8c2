//! Two stores open on one data directory, as two processes are (segment locks are `flock`s,
//! which belong to an open file description, so two opens in one process conflict exactly as
//! two processes do): one store is in the middle of a PUT — its body only partly written —
//! while the other opens (staging recovery) or reclaims staging. The PUT then finishes and its
//! object must read back byte-exact, from either store and after a fresh open. The pause
//! mid-body is an explicit condition (the bytes so far are in the segment file), not a race.

use crate::common;

use common::pattern;
use spinwise_store::staging::{SEGMENT_HEADER_BYTES, StagingConfig};
use spinwise_store::{SqliteStore, Store, StoreConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

const CHUNK_BYTES: usize = 4096;

fn config() -> StoreConfig {
    let mut config = common::jbod_config();
    // Big segments: every PUT of a test lands in the same open segment of its store.
    config.staging = StagingConfig {
        segment_bytes: 16 << 20,
        chunk_bytes: CHUNK_BYTES as u32,
        limit_bytes: 256 << 20,
    };
    config
}

async fn read_all(store: &SqliteStore, key: &str) -> Vec<u8> {
    let mut reader = store
        .get(key, None)
        .await
        .unwrap_or_else(|error| panic!("GET {key}: {error}"));
    let mut bytes = Vec::new();
    while let Some(chunk) = reader
        .next_chunk()
        .await
        .unwrap_or_else(|error| panic!("GET {key}: {error}"))
    {
        bytes.extend_from_slice(&chunk);
    }
    bytes
}

fn staging_bytes_on_disk(data: &Path) -> u64 {
    std::fs::read_dir(data.join("staging"))
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

/// A PUT of `body` into `store` whose first `written_chunks` chunks are sent and are in the
/// segment file when this returns; the rest is sent by [`PausedPut::finish`].
struct PausedPut {
    body: Vec<u8>,
    sent_bytes: usize,
    client: tokio::io::DuplexStream,
    put: tokio::task::JoinHandle<spinwise_catalog::ObjectRecord>,
}

impl PausedPut {
    async fn start(store: &Arc<SqliteStore>, data: &Path, key: &str, body: Vec<u8>) -> PausedPut {
        let written_chunks = 3;
        let staged_before = staging_bytes_on_disk(data);
        let (mut client, server) = tokio::io::duplex(CHUNK_BYTES);
        let putting = Arc::clone(store);
        let put_key = key.to_string();
        let put = tokio::spawn(async move {
            putting
                .put(&put_key, server)
                .await
                .unwrap_or_else(|error| panic!("PUT {put_key}: {error}"))
        });
        let sent_bytes = written_chunks * CHUNK_BYTES;
        client.write_all(&body[..sent_bytes]).await.unwrap();
        // The chunks are framed and written by the PUT's writer thread: wait until they are
        // in the file (the next chunk is incomplete, so the PUT cannot go further).
        let framed_bytes = (written_chunks * (CHUNK_BYTES + 8)) as u64;
        common::eventually("the paused PUT's chunks reached the disk", async || {
            staging_bytes_on_disk(data) >= staged_before + framed_bytes
        })
        .await;
        PausedPut {
            body,
            sent_bytes,
            client,
            put,
        }
    }

    async fn finish(mut self) -> spinwise_catalog::ObjectRecord {
        self.client
            .write_all(&self.body[self.sent_bytes..])
            .await
            .unwrap();
        drop(self.client); // end of the body
        self.put.await.unwrap()
    }
}

async fn new_data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    Store::init_sqlite(&data, config())
        .await
        .unwrap()
        .close()
        .await;
    (dir, data)
}

async fn reads_back_everywhere(data: &Path, stores: [&SqliteStore; 2], expected: &[(&str, &[u8])]) {
    let fresh = SqliteStore::open_sqlite(data).await.unwrap();
    assert!(
        fresh.recovery().problems.is_empty(),
        "{:?}",
        fresh.recovery().problems
    );
    for store in stores.into_iter().chain([&fresh]) {
        for (key, bytes) in expected {
            assert!(
                read_all(store, key).await == *bytes,
                "{key} reads back other bytes than its acknowledged PUT"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_in_a_second_store_never_deletes_a_segment_another_store_is_appending_to() {
    let (_dir, data) = new_data_dir().await;
    let writer = Arc::new(SqliteStore::open_sqlite(&data).await.unwrap());
    let body = pattern(10 * CHUNK_BYTES + 123, 1);
    // The writer's segment holds nothing but this PUT's partial record: nothing the catalog
    // references, so a recovery that does not respect the writer deletes the whole file.
    let paused = PausedPut::start(&writer, &data, "in-flight", body.clone()).await;
    let opener = SqliteStore::open_sqlite(&data).await.unwrap();
    assert!(opener.recovery().staging.segments_deleted.is_empty());
    assert_eq!(opener.recovery().staging.bytes_truncated, 0);
    assert_eq!(opener.recovery().staging.segments_in_use.len(), 1);
    paused.finish().await;
    reads_back_everywhere(&data, [&writer, &opener], &[("in-flight", &body)]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_in_a_second_store_never_cuts_a_record_another_store_is_appending() {
    let (_dir, data) = new_data_dir().await;
    let writer = Arc::new(SqliteStore::open_sqlite(&data).await.unwrap());
    let committed = pattern(5000, 2);
    writer.put("committed", &committed[..]).await.unwrap();
    let body = pattern(10 * CHUNK_BYTES + 7, 3);
    // Same segment: a committed record, then the in-flight one, which such a recovery cuts.
    let paused = PausedPut::start(&writer, &data, "in-flight", body.clone()).await;
    let opener = SqliteStore::open_sqlite(&data).await.unwrap();
    assert_eq!(opener.recovery().staging.bytes_truncated, 0);
    assert_eq!(opener.recovery().staging.segments_in_use.len(), 1);
    let record = paused.finish().await;
    assert_eq!(
        writer.stat("committed").await.unwrap().location,
        opener.stat("committed").await.unwrap().location
    );
    assert_eq!(record.size_bytes, body.len() as u64);
    reads_back_everywhere(
        &data,
        [&writer, &opener],
        &[("committed", &committed), ("in-flight", &body)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reclaim_in_a_second_store_never_deletes_a_segment_another_store_still_appends_to() {
    let (_dir, data) = new_data_dir().await;
    let writer = Arc::new(SqliteStore::open_sqlite(&data).await.unwrap());
    writer.put("old", &pattern(5000, 4)[..]).await.unwrap();
    // The reclaimer knows the writer's open segment from its open (referenced then, so kept).
    let reclaimer = SqliteStore::open_sqlite(&data).await.unwrap();
    assert!(reclaimer.recovery().staging.segments_deleted.is_empty());
    let body = pattern(10 * CHUNK_BYTES + 99, 5);
    let paused = PausedPut::start(&writer, &data, "in-flight", body.clone()).await;
    // Deleting the only committed object leaves the segment unreferenced in the catalog while
    // the writer is still appending to it; the delete reclaims staging.
    reclaimer.delete("old").await.unwrap();
    assert_eq!(reclaimer.reclaim_staging().await.unwrap(), 0);
    paused.finish().await;
    reads_back_everywhere(&data, [&writer, &reclaimer], &[("in-flight", &body)]).await;
    // Once the writer is gone (its locks with it), the reclaimer may free what is unreferenced.
    writer.delete("in-flight").await.unwrap();
    Arc::into_inner(writer).unwrap().close().await;
    assert_eq!(reclaimer.reclaim_staging().await.unwrap(), 1);
    // Freed: the highest segment is emptied to its header rather than deleted (staging.rs).
    assert_eq!(staging_bytes_on_disk(&data), SEGMENT_HEADER_BYTES);
}
