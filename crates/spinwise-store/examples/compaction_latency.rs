//! compaction_latency: what a compaction does to the reads and writes around it, non-preemptive
//! against semi-preemptive (issue 33), measured on equal terms in one run.
//!
//! `cargo run --release -p spinwise-store --example compaction_latency [-- --rounds R]
//! [--objects N] [--object-mb B] [--unit-mib U] [--scale S] [--reads-at-once C] [--json]`
//!
//! Each measurement creates a store in a temporary directory on the `pelican` preset with the
//! layout's `concurrent_requests_per_class` set to C (default 1: Pelican as described, §4.2
//! "only 4 [requests serviced concurrently] in Pelican", one per class), disks throttled to
//! 105 MB/s × S (default 1) and latencies at a thousandth. It puts N objects of B MB (default
//! 32 × 16 MB, one blob), migrates them and deletes every other one (half the blob dead). Then a
//! forced compaction runs while two clients loop until it ends: one GETs 1 MiB ranges of the
//! live objects (in turn, one at a time), one PUTs 1 MiB objects (staged, on the host's
//! filesystem, 20 a second). Every GET's and PUT's latency is recorded (request to last byte). Modes
//! alternate, non-preemptive then semi-preemptive, R rounds (default 2), on the same objects.

#[path = "support/common.rs"]
mod common;

use common::{
    LATENCY_HEADING, alternate_modes, beside_clients, latency_columns, mode_name, parse_flags,
    pattern, preset_config, with_latencies,
};
use spinwise_catalog::Tier;
use spinwise_store::{CompactionMode, SqliteStore, Store, StoreConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const PELICAN: &str = include_str!("../../../presets/pelican.toml");
const RANGE_BYTES: u64 = 1 << 20;
/// The PUT client's pace: 20 PUTs of 1 MiB a second.
const PUT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

struct Options {
    rounds: usize,
    objects: usize,
    object_bytes: usize,
    unit_bytes: u64,
    scale: f64,
    reads_at_once: u32,
    json: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        rounds: 2,
        objects: 32,
        object_bytes: 16_000_000,
        unit_bytes: 64 << 20,
        scale: 1.0,
        reads_at_once: 1,
        json: false,
    };
    let mut json = false;
    parse_flags(&mut json, |flag, number| {
        match flag {
            "--rounds" => options.rounds = number as usize,
            "--objects" => options.objects = (number as usize).max(2),
            "--object-mb" => options.object_bytes = (number * 1e6) as usize,
            "--unit-mib" => options.unit_bytes = (number * 1_048_576.0) as u64,
            "--scale" => options.scale = number,
            "--reads-at-once" => options.reads_at_once = number.min(64.0) as u32,
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    options.json = json;
    Ok(options)
}

fn store_config(options: &Options, mode: CompactionMode) -> StoreConfig {
    let mut config = preset_config("pelican", PELICAN, |layout| {
        layout.scheduler.concurrent_requests_per_class = options.reads_at_once.max(1);
    });
    config.disk_bandwidth_scale = Some(options.scale);
    config.bundle_bytes = (options.objects * options.object_bytes) as u64;
    config.upkeep.compaction = mode;
    config.upkeep.compact_unit_bytes = options.unit_bytes;
    config
}

/// Puts, migrates and deletes every other object; returns the live keys.
async fn fill(store: &SqliteStore, options: &Options) -> Vec<String> {
    for index in 0..options.objects {
        let bytes = pattern(options.object_bytes, index as u64);
        let key = format!("object-{index:03}");
        store.put(&key, &bytes[..]).await.expect("put");
    }
    store.flush(|_| {}).await.expect("flush");
    let mut live = Vec::new();
    for index in 0..options.objects {
        let key = format!("object-{index:03}");
        if index % 2 == 0 {
            store.delete(&key).await.expect("delete");
        } else {
            live.push(key);
        }
    }
    live
}

/// GETs of 1 MiB ranges of `keys` in turn until `done`; each one's seconds.
async fn read_loop(
    store: Arc<SqliteStore>,
    keys: Vec<String>,
    object_bytes: u64,
    done: Arc<AtomicBool>,
) -> Vec<f64> {
    // Ranges of 1 MiB (the whole object if smaller) starting anywhere it allows.
    let range_bytes = RANGE_BYTES.min(object_bytes);
    let starts = object_bytes - range_bytes + 1;
    let mut latencies = Vec::new();
    let mut turn = 0usize;
    while !done.load(Ordering::Relaxed) {
        let key = &keys[turn % keys.len()];
        let start = (turn as u64 * 7_919 * 4096) % starts;
        turn += 1;
        let began = Instant::now();
        let mut reader = store
            .get(key, Some(start..start + range_bytes))
            .await
            .expect("get");
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
    let object_bytes = options.object_bytes as u64;
    let body = pattern(RANGE_BYTES as usize, 1 << 40);
    let measured = beside_clients(
        store,
        |store, done| read_loop(store, live, object_bytes, done),
        (body, Tier::Cold, PUT_INTERVAL),
        |store| async move { store.compact(Some(0.4), |_| {}).await },
    )
    .await;
    let report = measured.result.expect("compact");
    let (compaction_s, mut gets, mut puts) = (measured.work_s, measured.gets, measured.puts);
    let row = serde_json::json!({
        "mode": mode_name(mode),
        "compaction_s": compaction_s,
        "units": report.units,
        "yields": report.yields,
        "bytes_moved": report.bytes_moved,
    });
    with_latencies(row, &mut gets, &mut puts)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("compaction_latency: {message}");
            std::process::exit(2);
        }
    };
    let rows = alternate_modes(options.rounds, |mode| measure(&options, mode)).await;
    if options.json {
        println!("{}", serde_json::Value::Array(rows));
        return;
    }
    println!(
        "pelican, {} request(s) per class, disks at {:.1} MB/s, {} × {} MB (half deleted), units of {} MiB",
        options.reads_at_once,
        105.0 * options.scale,
        options.objects,
        options.object_bytes / 1_000_000,
        options.unit_bytes >> 20
    );
    println!(
        "{:<16} {:>8} {:>5} {:>6} {LATENCY_HEADING}",
        "mode", "compact", "units", "yields"
    );
    for row in rows {
        println!(
            "{:<16} {:>7.2}s {:>5} {:>6} {}",
            row["mode"].as_str().unwrap_or_default(),
            row["compaction_s"].as_f64().unwrap_or(f64::NAN),
            row["units"].as_u64().unwrap_or(0),
            row["yields"].as_u64().unwrap_or(0),
            latency_columns(&row),
        );
    }
}
