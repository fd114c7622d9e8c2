//! Reads of migrated objects through the scheduler: byte-exact for every size and range, up to
//! r failed disks read around and reported, r + 1 a typed error naming the fragments, a flipped
//! byte and a lying disk detected, a dropped reader leaves the group usable, and memory stays
//! bounded.

use crate::common;

use common::{pattern, put_and_flush};
use spinwise_disk::Disk;
use spinwise_store::{SqliteStore, Store, StoreConfig, StoreError};
use std::path::Path;

fn config() -> StoreConfig {
    let mut config = common::jbod_config();
    config.bundle_bytes = 4 << 20;
    config
}

async fn new_store(dir: &Path) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config())
        .await
        .unwrap()
}

async fn get_all(
    store: &SqliteStore,
    key: &str,
    range: Option<std::ops::Range<u64>>,
) -> Result<(Vec<u8>, usize), StoreError> {
    let (bytes, reader) = common::read_to_end(store, key, range).await?;
    Ok((bytes, reader.repairs().repaired.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrated_objects_of_every_size_and_any_range_read_back_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let fragment = 128 * 1024;
    let sizes = [
        0,
        1,
        fragment - 1,
        fragment,
        fragment + 1,
        3 * fragment + 7,
        5 << 20,
    ];
    let objects: Vec<(String, Vec<u8>)> = sizes
        .iter()
        .enumerate()
        .map(|(index, &size)| (format!("object-{index}"), pattern(size, index as u64)))
        .collect();
    let borrowed: Vec<(&str, Vec<u8>)> = objects
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    put_and_flush(&store, &borrowed).await;
    for (key, bytes) in &objects {
        let (read, repaired) = get_all(&store, key, None).await.unwrap();
        assert_eq!(&read, bytes, "{key}");
        assert_eq!(repaired, 0);
    }
    // Ranges crossing fragment, stripe and object boundaries inside the bundle.
    let (key, bytes) = &objects[5];
    for range in [
        0..1,
        5..fragment as u64 + 9,
        fragment as u64 - 3..3 * fragment as u64 + 2,
    ] {
        let (read, _) = get_all(&store, key, Some(range.clone())).await.unwrap();
        assert_eq!(read, &bytes[range.start as usize..range.end as usize]);
    }
    // Ranges of the 5 MiB object crossing and ending on the edges of the batches of stripes
    // that column threads read in one IO (StoreConfig::read_batch_bytes).
    let (key, bytes) = &objects[6];
    let code = &store.rack_io().code;
    let stripe = code.stripe_data_bytes();
    let batch_bytes = store.config().read_batch_bytes;
    let run = spinwise_store::column_batch_stripes(code, batch_bytes) * stripe;
    for range in [
        run - 1..run + 1,
        run..2 * run,
        stripe + 3..3 * run + stripe - 3,
        2 * run - stripe..bytes.len() as u64,
    ] {
        let (read, _) = get_all(&store, key, Some(range.clone())).await.unwrap();
        assert!(
            read == bytes[range.start as usize..range.end as usize],
            "{range:?}"
        );
    }
    // The read waited for its group through the scheduler, and no budget was broken.
    let mut reader = store.get(&objects[6].0, None).await.unwrap();
    while reader.next_chunk().await.unwrap().is_some() {}
    let timing = reader.timing().expect("a migrated read is timed");
    assert!(timing.service_us > 0);
    assert_eq!(store.rack_io().driver.audit_counters().refusals, 0);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_to_r_failed_disks_are_read_around_and_r_plus_one_names_the_fragments() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let bytes = pattern(600_000, 9);
    let disks = put_and_flush(&store, &[("x", bytes.clone())]).await;
    let emulated = &store.rack_io().emulated;
    // r = 2 on this rack: two disks holding data columns fail.
    emulated[disks[0] as usize].mark_failed();
    emulated[disks[1] as usize].mark_failed();
    let (read, repaired) = get_all(&store, "x", None).await.unwrap();
    assert_eq!(read, bytes);
    assert!(repaired >= 2, "{repaired}");
    emulated[disks[2] as usize].mark_failed();
    match get_all(&store, "x", None).await {
        Err(StoreError::CorruptBeyondRepair { fragments, .. }) => {
            assert!(
                fragments.contains(&format!("on disk {}", disks[0])),
                "{fragments}"
            );
        }
        other => panic!(
            "expected CorruptBeyondRepair, got {:?}",
            other.map(|(b, r)| (b.len(), r))
        ),
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_and_a_lying_disk_are_detected_and_read_around() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let bytes = pattern(400_000, 3);
    let disks = put_and_flush(&store, &[("y", bytes.clone())]).await;
    let emulated = &store.rack_io().emulated;
    let stack = std::fs::read_dir(emulated[disks[0] as usize].directory())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "stack"))
        .unwrap();
    let mut raw = std::fs::read(&stack).unwrap();
    raw[200] ^= 0x01;
    std::fs::write(&stack, raw).unwrap();
    let (read, repaired) = get_all(&store, "y", None).await.unwrap();
    assert_eq!(read, bytes);
    assert!(repaired >= 1);
    // The read queued a repair of the flipped stack (crate::heal); once it is done, the only
    // damage left is the lying disk's, and a read must catch it as short fragments of its column.
    assert_eq!(store.settle_repairs().await.unwrap().repaired.len(), 1);
    emulated[disks[1] as usize].faults().set_short_reads(true);
    let mut reader = store.get("y", None).await.unwrap();
    let mut read = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        read.extend_from_slice(&chunk);
    }
    assert_eq!(read, bytes);
    let report = reader.repairs();
    assert!(!report.is_clean(), "the lying disk went unnoticed");
    for bad in &report.repaired {
        assert_eq!(bad.column, 1, "{report:?}");
        // Short: the fragment, or already the stack's header (then the column is unavailable).
        let short = match &bad.fault {
            spinwise_ec::FragmentFault::Short { .. } => true,
            spinwise_ec::FragmentFault::Unavailable(why) => why.contains("header needs"),
            spinwise_ec::FragmentFault::Checksum { .. } => false,
        };
        assert!(short, "{report:?}");
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_stripe_inside_a_long_read_is_reconstructed_in_order_and_reported_once() {
    // Reader threads fetch stripes in parallel; the bad one is redone by the decoder between
    // good ones, and the stream must stay in blob order. With the data columns only: a spread
    // read may take a damaged stripe from a standby column instead and never meet the damage
    // (tests/it/spread.rs covers damage on that path).
    let dir = tempfile::tempdir().unwrap();
    let mut data_columns = config();
    data_columns.read_columns = spinwise_store::ReadColumns::Data;
    let store = Store::init_sqlite(&dir.path().join("data"), data_columns)
        .await
        .unwrap();
    let code = store.rack_io().code.clone();
    let stripe_bytes = code.stripe_data_bytes() as usize;
    let bytes = pattern(40 * stripe_bytes + 12_345, 9);
    let disks = put_and_flush(&store, &[("long", bytes.clone())]).await;
    let spinwise_catalog::ObjectLocation::Migrated { blob, .. } =
        store.stat("long").await.unwrap().location
    else {
        panic!("not migrated");
    };
    let bad_stripe = 17;
    common::flip_byte(
        &store,
        disks[1],
        blob,
        1,
        code.fragment_offset(bad_stripe) + 10,
    );
    let (read, repaired) = get_all(&store, "long", None).await.unwrap();
    assert!(read == bytes, "whole read differs");
    assert_eq!(repaired, 1);
    // That read queued the stack's repair (crate::heal); damage another stripe for a ranged read.
    assert_eq!(store.settle_repairs().await.unwrap().repaired.len(), 1);
    common::flip_byte(
        &store,
        disks[2],
        blob,
        2,
        code.fragment_offset(bad_stripe + 1) + 99,
    );
    let range = (16 * stripe_bytes + 5) as u64..(19 * stripe_bytes + 77) as u64;
    let mut reader = store.get("long", Some(range.clone())).await.unwrap();
    let mut read = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        read.extend_from_slice(&chunk);
    }
    assert!(read[..] == bytes[range.start as usize..range.end as usize]);
    let report = reader.repairs();
    assert_eq!(report.repaired.len(), 1, "{report:?}");
    assert_eq!(
        (report.repaired[0].stripe, report.repaired[0].column),
        (bad_stripe + 1, 2)
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_dropped_after_one_chunk_leaves_the_group_usable() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path()).await;
    let bytes = pattern(12 << 20, 4);
    store.put("big", &bytes[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let mut reader = store.get("big", None).await.unwrap();
    assert!(reader.next_chunk().await.unwrap().is_some());
    drop(reader);
    let (read, _) = get_all(&store, "big", Some(0..1000)).await.unwrap();
    assert_eq!(read, &bytes[..1000]);
    store.close().await;
}

fn peak_resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_a_large_migrated_object_keeps_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config();
    config.bundle_bytes = 1 << 30;
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .unwrap();
    let size: u64 = 192 << 20;
    let source = tokio::io::AsyncReadExt::take(tokio::io::repeat(0x5a), size);
    store.put("large", source).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    let before_kib = peak_resident_kib();
    let mut reader = store.get("large", None).await.unwrap();
    let mut total = 0u64;
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        assert!(chunk.iter().all(|&b| b == 0x5a));
        total += chunk.len() as u64;
    }
    assert_eq!(total, size);
    let grown_kib = peak_resident_kib().saturating_sub(before_kib);
    // The read holds one decoder stripe (3 × 128 KiB), the board's window and at most six
    // messages of about 1 MiB (four queued, one being filled, one being read), each piece
    // holding its batch; 64 MiB leaves room for the allocator and runtime, and is a third of
    // the object.
    assert!(
        grown_kib < 64 * 1024,
        "peak resident memory grew by {grown_kib} KiB"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_one_fragment_per_io_are_byte_exact_and_the_setting_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut small_ios = config();
    small_ios.read_batch_bytes = 1;
    let store = Store::init_sqlite(&data, small_ios).await.unwrap();
    let code = store.rack_io().code.clone();
    assert_eq!(spinwise_store::column_batch_stripes(&code, 1), 1);
    let bytes = pattern(3 << 20, 11);
    put_and_flush(&store, &[("one-fragment-ios", bytes.clone())]).await;
    let (read, _) = get_all(&store, "one-fragment-ios", None).await.unwrap();
    assert_eq!(read, bytes);
    let stripe = code.stripe_data_bytes();
    let range = stripe - 5..3 * stripe + 5;
    let (read, _) = get_all(&store, "one-fragment-ios", Some(range.clone()))
        .await
        .unwrap();
    assert_eq!(read, &bytes[range.start as usize..range.end as usize]);
    store.close().await;
    let text = std::fs::read_to_string(data.join("store.toml")).unwrap();
    assert!(text.contains("read_batch_bytes = 1\n"), "{text}");
    let reopened = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(reopened.config().read_batch_bytes, 1);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_batch_of_zero_or_above_the_limit_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let limit = spinwise_store::config::MAX_READ_BATCH_BYTES;
    for (index, bytes) in [0, limit + 1].into_iter().enumerate() {
        let mut bad = config();
        bad.read_batch_bytes = bytes;
        let data = dir.path().join(format!("data-{index}"));
        match Store::init_sqlite(&data, bad).await {
            Err(StoreError::Config { message, .. }) => {
                assert!(message.contains("read_batch_bytes"), "{message}")
            }
            Err(other) => panic!("{bytes}: a config error, not {other}"),
            Ok(_) => panic!("read_batch_bytes {bytes} was accepted"),
        }
    }
    // The default writes no key: store.toml stays as stores before the setting wrote it.
    let data = dir.path().join("default");
    let store = Store::init_sqlite(&data, config()).await.unwrap();
    store.close().await;
    let text = std::fs::read_to_string(data.join("store.toml")).unwrap();
    assert!(!text.contains("read_batch_bytes"), "{text}");
    assert!(!text.contains("latency_seed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fragments_smaller_than_a_page_are_refused_by_name() {
    // 1-byte fragments were accepted and made a small flush crawl (found 2026-12-01).
    let dir = tempfile::tempdir().unwrap();
    let smallest = spinwise_store::config::MIN_FRAGMENT_BYTES;
    for bytes in [0, 1, smallest - 1] {
        let mut bad = config();
        bad.fragment_bytes = bytes;
        match Store::init_sqlite(&dir.path().join(format!("data-{bytes}")), bad).await {
            Err(StoreError::Config { message, .. }) => {
                assert!(message.contains("fragment_bytes"), "{message}")
            }
            Err(other) => panic!("{bytes}: a config error, not {other}"),
            Ok(_) => panic!("fragment_bytes {bytes} was accepted"),
        }
    }
    let mut page = config();
    page.fragment_bytes = smallest;
    let store = Store::init_sqlite(&dir.path().join("page"), page)
        .await
        .unwrap();
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_seed_round_trips_through_store_toml() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut seeded = config();
    seeded.latency_seed = 7;
    let store = Store::init_sqlite(&data, seeded).await.unwrap();
    store.close().await;
    let text = std::fs::read_to_string(data.join("store.toml")).unwrap();
    assert!(text.contains("latency_seed = 7\n"), "{text}");
    let reopened = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(reopened.config().latency_seed, 7);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_round_trips_through_store_toml_and_an_unknown_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut flamingo = config();
    flamingo.policy = spinwise_store::config::PolicyChoice::Flamingo;
    let store = Store::init_sqlite(&data, flamingo).await.unwrap();
    store.close().await;
    let toml_path = data.join("store.toml");
    let text = std::fs::read_to_string(&toml_path).unwrap();
    assert!(text.contains("policy = \"flamingo\"\n"), "{text}");
    let reopened = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(
        reopened.config().policy,
        spinwise_store::config::PolicyChoice::Flamingo
    );
    // Flamingo's scheduler serves a read through the store.
    let bytes = vec![7u8; 1000];
    reopened.put("under-flamingo", &bytes[..]).await.unwrap();
    reopened.flush(|_| {}).await.unwrap();
    let mut reader = reopened.get("under-flamingo", None).await.unwrap();
    let mut read = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        read.extend_from_slice(&chunk);
    }
    assert_eq!(read, bytes);
    reopened.close().await;
    std::fs::write(&toml_path, text.replace("\"flamingo\"", "\"fastest\"")).unwrap();
    let refused = match Store::open_sqlite(&data).await {
        Err(error) => error.to_string(),
        Ok(_) => panic!("an unknown policy was accepted"),
    };
    assert!(
        refused.contains("policy `fastest` is not one of pelican, flamingo, fp"),
        "{refused}"
    );
}
