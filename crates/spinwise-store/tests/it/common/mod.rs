//! Fixtures shared by the store's tests: the dense-jbod-60 test configuration, deterministic
//! bytes, a blob placed by hand in a chosen group (as the migrator would, step by step), a
//! whole-blob decode through the driver, a byte flipped in a stack file, and the store on a
//! [`ManualClock`] with the waits that go with it: advancing it and awaiting the upkeep task's
//! ticks, or a state of its report, instead of sleeping.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use spinwise_catalog::{BlobId, BlobRecord, BlobState, Catalog, Migration};
use spinwise_disk::Disk;
use spinwise_ec::{Code, RepairReport, content_hash, decode_blob};
use spinwise_sched::scheduler::Kind;
use spinwise_store::clock::ManualClock;
use spinwise_store::disk_directory;
use spinwise_store::driver::{GroupDisks, Job};
use spinwise_store::placement::DiskRoom;
use spinwise_store::stacks::{fetch_from_disks, stack_name, write_stacks};
use spinwise_store::{RackSource, SqliteStore, StoreConfig, UpkeepHandle, UpkeepReport};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::poll;
#[allow(unused_imports)]
pub use poll::{WAIT, eventually};

/// `store` on a fresh manual clock (its calendar starting at the wall clock's reading).
pub fn on_manual_clock(store: SqliteStore) -> (SqliteStore, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new());
    (store.with_clock(clock.clone()), clock)
}

/// Moves `clock` on by `delta` and waits until `upkeep` has run the ticks that made due (their
/// effects are visible when this returns); returns the clock's new time in µs.
pub async fn advance_upkeep(clock: &ManualClock, upkeep: &UpkeepHandle, delta: Duration) -> u64 {
    let now_us = clock.advance(delta);
    tokio::time::timeout(WAIT, upkeep.paced().past(now_us))
        .await
        .expect("the upkeep task never finished its tick");
    now_us
}

/// Waits until `upkeep`'s report satisfies `done` (looked at each time the task goes back to
/// waiting); fails naming `what` after [`WAIT`].
pub async fn upkeep_until(upkeep: &UpkeepHandle, what: &str, done: impl Fn(&UpkeepReport) -> bool) {
    let reached = tokio::time::timeout(WAIT, upkeep.paced().until(|| done(&upkeep.report()))).await;
    assert_eq!(reached, Ok(true), "never {what}: {:?}", upkeep.report());
}

const JBOD_RACK: &str = include_str!("../../../../../presets/dense-jbod-60.toml");

/// The test store: the dense-jbod-60 rack (60 disks, k = 3, r = 2) with its planned layout and
/// the emulated latencies at a thousandth; each test sets what else it needs.
pub fn jbod_config() -> StoreConfig {
    preset_config("dense-jbod-60", JBOD_RACK, 0.001)
}

/// A store on the preset `name` (its TOML `rack_toml`) with its planned layout and the
/// emulated latencies times `time_factor`.
pub fn preset_config(name: &str, rack_toml: &str, time_factor: f64) -> StoreConfig {
    let rack = spinwise_model::parse_rack(name, rack_toml).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    let mut config = StoreConfig::new(
        RackSource::Preset(name.into()),
        rack_toml.to_string(),
        layout,
    );
    config.time_factor = time_factor;
    config
}

/// Deterministic test bytes: xorshift seeded from `seed` (any seed, 0 included).
pub fn pattern(size_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size_bytes)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Puts `data` under `key`, then migrates it into its own blob in `group` as the migrator will.
pub async fn migrate(store: &SqliteStore, key: &str, data: &[u8], group: u32) -> BlobRecord {
    let staged = store.put(key, data).await.unwrap();
    let io = store.rack_io();
    let code = io.code.clone();
    let blob = store.catalog().next_blob_id().await.unwrap();
    let stack_bytes = code.stack_file_bytes(data.len() as u64);
    let room: BTreeMap<u32, DiskRoom> = io
        .placement
        .group_disks(group)
        .unwrap()
        .iter()
        .map(|&disk| {
            let room = DiskRoom {
                free_bytes: 1 << 40,
                healthy: true,
            };
            (disk, room)
        })
        .collect();
    let disks = io
        .placement
        .choose_disks(group, stack_bytes, &room)
        .unwrap();
    let record = BlobRecord {
        id: blob,
        group,
        disks: disks.clone(),
        k: code.data_columns() as u32,
        r: code.parity_columns() as u32,
        fragment_bytes: code.fragment_bytes() as u32,
        size_bytes: data.len() as u64,
        content_hash: content_hash(data),
        state: BlobState::Writing,
        live_bytes: 0,
    };
    store.catalog().begin_blob(record.clone()).await.unwrap();
    let column_disks: Vec<Arc<dyn Disk>> = disks
        .iter()
        .map(|&d| io.disks[d as usize].clone())
        .collect();
    let bytes = data.to_vec();
    let hash = record.content_hash;
    let job = Job::new(group, stack_bytes, Kind::Client, move |_: &GroupDisks| {
        write_stacks(
            &code,
            blob,
            bytes.len() as u64,
            hash,
            &bytes[..],
            &column_disks,
        )
    });
    let done = io.driver.submit(job).await.unwrap().wait().await.unwrap();
    done.output.unwrap();
    let moves = vec![Migration {
        key: key.to_string(),
        from: staged.location,
        blob_offset: 0,
    }];
    assert_eq!(store.catalog().commit_blob(blob, moves).await.unwrap(), 1);
    store.catalog().blob(blob).await.unwrap().unwrap()
}

/// Decodes the whole blob from its disks (per the catalog) inside a driver job.
pub async fn read_blob(store: &SqliteStore, blob: BlobId) -> (Vec<u8>, RepairReport) {
    let record = store.catalog().blob(blob).await.unwrap().unwrap();
    let io = store.rack_io();
    let code: Arc<Code> = io.code.clone();
    let disks: Vec<Arc<dyn Disk>> = record
        .disks
        .iter()
        .map(|&d| io.disks[d as usize].clone())
        .collect();
    let job = Job::new(
        record.group,
        record.size_bytes,
        Kind::Client,
        move |_: &GroupDisks| {
            let mut out = Vec::new();
            let report = decode_blob(
                &code,
                record.size_bytes,
                record.content_hash,
                fetch_from_disks(&code, record.id, &disks),
                &mut out,
            )
            .unwrap();
            (out, report)
        },
    );
    io.driver
        .submit(job)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap()
        .output
}

pub fn flip_byte(store: &SqliteStore, disk: u32, blob: BlobId, column: usize, offset: u64) {
    let path = disk_directory(store.data_dir(), disk as usize).join(stack_name(blob, column));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset as usize] ^= 0x5a;
    std::fs::write(&path, bytes).unwrap();
}

/// Puts `objects`, migrates them and returns the blob's disks of the first object.
pub async fn put_and_flush(store: &SqliteStore, objects: &[(&str, Vec<u8>)]) -> Vec<u32> {
    for (key, bytes) in objects {
        store.put(key, &bytes[..]).await.unwrap();
    }
    let report = store.flush(|_| {}).await.unwrap();
    assert_eq!(report.objects_moved, objects.len() as u64);
    let record = store.stat(objects[0].0).await.unwrap();
    let spinwise_catalog::ObjectLocation::Migrated { blob, .. } = record.location else {
        panic!("{} was not migrated", objects[0].0);
    };
    store.catalog().blob(blob).await.unwrap().unwrap().disks
}

/// Reads `range` of `key` (all of it with `None`) to the end: its bytes, and the reader, which
/// then knows its repairs, timing and the columns it took.
pub async fn read_to_end(
    store: &SqliteStore,
    key: &str,
    range: Option<std::ops::Range<u64>>,
) -> Result<(Vec<u8>, spinwise_store::ObjectReader), spinwise_store::StoreError> {
    let mut reader = store.get(key, range).await?;
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, reader))
}

/// Asserts the catalog's own integrity check finds nothing, naming what it found if it does.
pub async fn assert_catalog_consistent<C: Catalog>(store: &spinwise_store::Store<C>) {
    let report = store.catalog().integrity_check().await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Whether the catalog has `key` staged (warm, or cold and not yet migrated).
pub async fn is_staged(store: &SqliteStore, key: &str) -> bool {
    matches!(
        store.stat(key).await.unwrap().location,
        spinwise_catalog::ObjectLocation::Staged { .. }
    )
}

/// Removes the catalog and its WAL, as a lost disk would, and rebuilds it from the directory.
pub async fn lose_the_catalog_and_recover(data: &std::path::Path) -> spinwise_store::RecoverReport {
    for file in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(data.join(format!("{}{file}", spinwise_store::CATALOG_FILE)));
    }
    spinwise_store::recover(data).await.unwrap()
}
