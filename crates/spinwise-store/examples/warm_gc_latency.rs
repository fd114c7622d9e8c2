//! warm_gc_latency: what the warm tier's collector does to the PUTs and GETs around it,
//! non-preemptive against semi-preemptive (issue 33), measured on equal terms in one run.
//!
//! `cargo run --release -p spinwise-store --example warm_gc_latency [-- --rounds R]
//! [--objects N] [--object-mib B] [--segment-mib S] [--json]`
//!
//! Each measurement creates a store in a temporary directory (the `pelican` preset; its disks
//! play no part: everything here stays in the staging log on the host's filesystem) with
//! staging segments of S MiB (default 32) and the tail cache off, so every GET reads the log.
//! It puts N warm objects of B MiB (default 256 × 1 MiB: eight segments) and deletes every other
//! one (each sealed segment half dead). Then a collection of every segment at least 40% dead
//! runs while two clients loop until it ends: one GETs the live objects whole, in turn, one at a
//! time (closed loop); one PUTs 1 MiB warm objects, 20 a second. Every GET's and PUT's latency
//! is recorded (request to last byte, acknowledgement for a PUT). Modes alternate,
//! non-preemptive then semi-preemptive, R rounds (default 2).

#[path = "support/common.rs"]
mod common;

use common::{
    LATENCY_HEADING, alternate_modes, beside_clients, latency_columns, mode_name, parse_flags,
    pattern, preset_config, with_latencies,
};
use spinwise_catalog::Tier;
use spinwise_store::staging::StagingConfig;
use spinwise_store::{CompactionMode, SqliteStore, Store, StoreConfig};
use std::future::ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const PELICAN: &str = include_str!("../../../presets/pelican.toml");
const PUT_BYTES: usize = 1 << 20;
/// The PUT client's pace: 20 PUTs of 1 MiB a second.
const PUT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

struct Options {
    rounds: usize,
    objects: usize,
    object_bytes: usize,
    segment_bytes: u64,
    json: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        rounds: 2,
        objects: 256,
        object_bytes: 1 << 20,
        segment_bytes: 32 << 20,
        json: false,
    };
    let mut json = false;
    parse_flags(&mut json, |flag, number| {
        match flag {
            "--rounds" => options.rounds = number as usize,
            "--objects" => options.objects = (number as usize).max(2),
            "--object-mib" => options.object_bytes = (number * 1_048_576.0) as usize,
            "--segment-mib" => options.segment_bytes = (number * 1_048_576.0) as u64,
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    options.json = json;
    Ok(options)
}

fn store_config(options: &Options, mode: CompactionMode) -> StoreConfig {
    let mut config = preset_config("pelican", PELICAN, |_| {});
    config.staging = StagingConfig {
        segment_bytes: options.segment_bytes,
        limit_bytes: 64 << 30,
        ..StagingConfig::default()
    };
    config.warm.capacity_bytes = Some(32 << 30);
    config.warm.collection = mode;
    config.tail_cache.ram_bytes = 0;
    config
}

async fn put_warm(store: &SqliteStore, key: &str, bytes: &[u8]) {
    store
        .put_with(key, Tier::Warm, bytes, |_| ready(Ok(())))
        .await
        .expect("put");
}

/// Puts the warm objects and deletes every other one; returns the live keys.
async fn fill(store: &SqliteStore, options: &Options) -> Vec<String> {
    let mut live = Vec::new();
    for index in 0..options.objects {
        let key = format!("object-{index:04}");
        put_warm(store, &key, &pattern(options.object_bytes, index as u64)).await;
        if index % 2 == 0 {
            store.delete(&key).await.expect("delete");
        } else {
            live.push(key);
        }
    }
    live
}

/// Whole-object GETs of `keys` in turn until `done`; each one's seconds.
async fn read_loop(store: Arc<SqliteStore>, keys: Vec<String>, done: Arc<AtomicBool>) -> Vec<f64> {
    let mut latencies = Vec::new();
    let mut turn = 0usize;
    while !done.load(Ordering::Relaxed) {
        let key = &keys[turn % keys.len()];
        turn += 1;
        let began = Instant::now();
        let mut reader = store.get(key, None).await.expect("get");
        while reader.next_chunk().await.expect("chunk").is_some() {}
        latencies.push(began.elapsed().as_secs_f64());
    }
    latencies
}

async fn measure(options: &Options, mode: CompactionMode) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = store_config(options, mode);
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .expect("init");
    let live = fill(&store, options).await;
    let body = pattern(PUT_BYTES, 1 << 40);
    let measured = beside_clients(
        store,
        |store, done| read_loop(store, live, done),
        (body, Tier::Warm, PUT_INTERVAL),
        |store| async move { store.collect_warm(Some(0.4), |_| {}).await },
    )
    .await;
    let report = measured.result.expect("collect");
    let (collection_s, mut gets, mut puts) = (measured.work_s, measured.gets, measured.puts);
    let row = serde_json::json!({
        "mode": mode_name(mode),
        "collection_s": collection_s,
        "segments": report.segments_collected,
        "records_moved": report.records_moved,
        "yields": report.yields,
        "bytes_reclaimed": report.bytes_reclaimed,
    });
    with_latencies(row, &mut gets, &mut puts)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("warm_gc_latency: {message}");
            std::process::exit(2);
        }
    };
    let rows = alternate_modes(options.rounds, |mode| measure(&options, mode)).await;
    if options.json {
        println!("{}", serde_json::Value::Array(rows));
        return;
    }
    println!(
        "warm tier: {} × {:.1} MiB (half deleted), segments of {} MiB, tail cache off",
        options.objects,
        options.object_bytes as f64 / 1_048_576.0,
        options.segment_bytes >> 20
    );
    println!(
        "{:<16} {:>8} {:>5} {:>7} {:>6} {LATENCY_HEADING}",
        "mode", "collect", "segs", "records", "yields"
    );
    for row in rows {
        println!(
            "{:<16} {:>7.2}s {:>5} {:>7} {:>6} {}",
            row["mode"].as_str().unwrap_or_default(),
            row["collection_s"].as_f64().unwrap_or(f64::NAN),
            row["segments"].as_u64().unwrap_or(0),
            row["records_moved"].as_u64().unwrap_or(0),
            row["yields"].as_u64().unwrap_or(0),
            latency_columns(&row),
        );
    }
}
