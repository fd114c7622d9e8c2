//! group_reads: what one Pelican group's disks deliver to reads served at once, when each read
//! takes its blob's data columns (`read_columns = "data"`) beside each read taking the k
//! least-busy of its k + r columns (the default), measured side by side in one run.
//!
//! `cargo run --release -p spinwise-store --example group_reads [-- --reads-at-once N]
//! [--objects M] [--object-mb B] [--gets G] [--scale S] [--json]`
//!
//! Two stores are created in a temporary directory on the `pelican` preset (15 + 3 blobs over
//! groups of 24 disks), with the layout's `concurrent_requests_per_class` set to N (default 4,
//! the preset's), disks throttled to 105 MB/s × S (default 0.1) and latencies at a thousandth.
//! Each puts the same M objects of B MB (default 12 × 64 MB; one blob each) and migrates them;
//! the migrator puts them in the group it has spinning, each blob on the 18 of its 24 disks with
//! the most room, so their disk sets differ as on a filled rack. Then G GETs (default 48) of
//! those objects run with N in flight at once (as one finishes the next starts; objects in
//! turn), and the run reports bytes delivered per second against the group's 24 disks' rate.
//! The simulator assumes what the default reaches (a pool of the group's disks, docs/simulator.md
//! "Concurrent requests"; its per-fragment model: ~80% of the group's rate for data columns,
//! ~97% for the least busy at four reads). `--failed-disks F` fails the group's first F disks
//! (up to r = 3) after the objects are in: reads then go around them.

use spinwise_catalog::Catalog;
#[path = "support/common.rs"]
mod common;

use common::{pattern, preset_config};
use spinwise_store::{ReadColumns, SqliteStore, Store, StoreConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const PELICAN: &str = include_str!("../../../presets/pelican.toml");

struct Options {
    reads_at_once: u32,
    objects: usize,
    object_bytes: usize,
    gets: usize,
    scale: f64,
    failed_disks: usize,
    json: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        reads_at_once: 4,
        objects: 12,
        object_bytes: 64_000_000,
        gets: 48,
        scale: 0.1,
        failed_disks: 0,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--json" {
            options.json = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = |what: &str| -> Result<f64, String> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or(format!("{what}: `{value}` is not a positive number"))
        };
        match flag.as_str() {
            "--reads-at-once" => options.reads_at_once = number(&flag)?.min(64.0) as u32,
            "--objects" => options.objects = number(&flag)? as usize,
            "--object-mb" => options.object_bytes = (number(&flag)? * 1e6) as usize,
            "--gets" => options.gets = number(&flag)? as usize,
            "--scale" => options.scale = number(&flag)?,
            "--failed-disks" => {
                options.failed_disks = value.parse().map_err(|_| {
                    format!("--failed-disks: `{value}` is not a count of disks (0 to 3)")
                })?
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(options)
}

fn store_config(options: &Options, read_columns: ReadColumns) -> StoreConfig {
    let mut config = preset_config("pelican", PELICAN, |layout| {
        layout.scheduler.concurrent_requests_per_class = options.reads_at_once.max(1);
    });
    config.disk_bandwidth_scale = Some(options.scale);
    config.bundle_bytes = options.object_bytes as u64;
    config.read_columns = read_columns;
    config
}

/// Puts and migrates the objects; returns the keys of the group holding the most of them and
/// that group's disks.
async fn fill(store: &SqliteStore, options: &Options) -> (Vec<String>, Vec<u32>) {
    let mut by_group = std::collections::BTreeMap::<u32, Vec<String>>::new();
    for index in 0..options.objects {
        let key = format!("object-{index:03}");
        let bytes = pattern(options.object_bytes, index as u64);
        store.put(&key, &bytes[..]).await.expect("put");
    }
    store.flush(|_| {}).await.expect("flush");
    for index in 0..options.objects {
        let key = format!("object-{index:03}");
        let spinwise_catalog::ObjectLocation::Migrated { blob, .. } =
            store.stat(&key).await.expect("stat").location
        else {
            panic!("{key} was not migrated");
        };
        let record = store.catalog().blob(blob).await.expect("catalog");
        let group = record.expect("the blob is catalogued").group;
        by_group.entry(group).or_default().push(key);
    }
    let (group, keys) = by_group
        .into_iter()
        .max_by_key(|(_, keys)| keys.len())
        .expect("objects were put");
    let disks = store
        .rack_io()
        .placement
        .group_disks(group)
        .expect("a group of the layout")
        .to_vec();
    (keys, disks)
}

struct Measured {
    seconds: f64,
    bytes: u64,
    gets_with_parity: usize,
    objects_in_group: usize,
}

/// G GETs with N in flight, objects taken in turn.
async fn read_group(
    store: Arc<SqliteStore>,
    keys: Arc<Vec<String>>,
    options: &Options,
) -> Measured {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    let gets = options.gets;
    let parity_before = store.rack_io().disk_reads.totals().reads_with_parity;
    for _ in 0..options.reads_at_once {
        let (store, keys, next) = (store.clone(), keys.clone(), next.clone());
        workers.spawn(async move {
            let mut bytes = 0u64;
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= gets {
                    return bytes;
                }
                let key = &keys[index % keys.len()];
                let mut reader = store.get(key, None).await.expect("get");
                while let Some(chunk) = reader.next_chunk().await.expect("chunk") {
                    bytes += chunk.len() as u64;
                }
            }
        });
    }
    let mut bytes = 0;
    while let Some(done) = workers.join_next().await {
        bytes += done.expect("a reader task");
    }
    Measured {
        seconds: started.elapsed().as_secs_f64(),
        bytes,
        // Reads that decoded a stripe from a parity fragment (chosen, or standing in).
        gets_with_parity: (store.rack_io().disk_reads.totals().reads_with_parity - parity_before)
            as usize,
        objects_in_group: keys.len(),
    }
}

async fn measure(options: &Options, read_columns: ReadColumns) -> Measured {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = store_config(options, read_columns);
    let store = Store::init_sqlite(&dir.path().join("data"), config)
        .await
        .expect("init");
    let (keys, group_disks) = fill(&store, options).await;
    // A failed disk is read around: by the decoder, stripe by stripe, when the read takes its
    // data columns; by choosing other columns otherwise.
    for &disk in group_disks.iter().take(options.failed_disks) {
        spinwise_disk::Disk::mark_failed(store.rack_io().emulated[disk as usize].as_ref());
    }
    let keys = Arc::new(keys);
    let store = Arc::new(store);
    let measured = read_group(store.clone(), keys, options).await;
    if let Ok(store) = Arc::try_unwrap(store) {
        store.close().await;
    }
    measured
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("group_reads: {message}");
            std::process::exit(2);
        }
    };
    // 24 disks per Pelican group, 105 MB/s each, scaled.
    let group_bytes_per_s = 24.0 * 105e6 * options.scale;
    let mut rows = Vec::new();
    for (name, mode) in [
        ("data", ReadColumns::Data),
        ("least_busy", ReadColumns::LeastBusy),
    ] {
        let measured = measure(&options, mode).await;
        let rate = measured.bytes as f64 / measured.seconds;
        rows.push(serde_json::json!({
            "read_columns": name,
            "reads_at_once": options.reads_at_once,
            "gets": options.gets,
            "objects_in_group": measured.objects_in_group,
            "seconds": measured.seconds,
            "mb_per_s": rate / 1e6,
            "group_fraction": rate / group_bytes_per_s,
            "gets_with_parity": measured.gets_with_parity,
        }));
    }
    if options.json {
        println!("{}", serde_json::Value::Array(rows));
        return;
    }
    println!(
        "group of 24 disks at {:.2} MB/s each ({:.1} MB/s), {} reads at once, {} GETs of {} MB",
        105.0 * options.scale,
        group_bytes_per_s / 1e6,
        options.reads_at_once,
        options.gets,
        options.object_bytes / 1_000_000
    );
    for row in rows {
        println!(
            "{:<11} {:>7.1} MB/s  {:>5.1}% of the group  {:>6.2} s  {} of {} GETs read parity ({} objects in the group)",
            row["read_columns"].as_str().unwrap_or_default(),
            row["mb_per_s"].as_f64().unwrap_or_default(),
            100.0 * row["group_fraction"].as_f64().unwrap_or_default(),
            row["seconds"].as_f64().unwrap_or_default(),
            row["gets_with_parity"],
            row["gets"],
            row["objects_in_group"],
        );
    }
}
