//! tail_cache: GETs of small, recently written staged objects with the tail cache on and off
//! (docs/BENCHMARKS.md, "Tail cache (issue 33)").
//!
//! `cargo run --release -p spinwise-store --example tail_cache [-- --objects N] [--object-kb K]
//! [--gets G] [--window W] [--ram-mb R] [--evict-page-cache] [--off-first] [--json]`
//!
//! For each of two stores (dense-jbod-60, time factor 0.001) — the cache with `ram_bytes` R MiB
//! (default 64) and the cache off — N objects of K KiB (default 2,000 × 16 KiB) are PUT, then G
//! GETs (default 10,000), one at a time, each of an object drawn uniformly (a fixed xorshift
//! seed, the same draws for both stores) from the last W written (default all N). Reported: the
//! GETs' hit rate from the store's counters, their latency (p50, p99, mean) and GETs/s and MB/s.
//! With `--evict-page-cache` the staging segments are dropped from the host's page cache
//! (`posix_fadvise(DONTNEED)`) after the PUTs, so a miss reads the device, not memory.
//! `--off-first` runs the store without the cache first (the cache's run goes first otherwise).

#[path = "support/common.rs"]
mod common;

use common::{pattern, preset_config};
use spinwise_store::{ContentCheck, SqliteStore, Store, StoreConfig, TailCacheConfig};
use std::time::{Duration, Instant};

const JBOD: &str = include_str!("../../../presets/dense-jbod-60.toml");

struct Options {
    objects: usize,
    object_bytes: usize,
    gets: usize,
    window: usize,
    ram_bytes: u64,
    evict_page_cache: bool,
    off_first: bool,
    json: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        objects: 2_000,
        object_bytes: 16 << 10,
        gets: 10_000,
        window: 0,
        ram_bytes: 64 << 20,
        evict_page_cache: false,
        off_first: false,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|value| value.parse().ok())
                .ok_or_else(|| format!("{name} needs a whole number"))
        };
        match arg.as_str() {
            "--objects" => options.objects = number("--objects")? as usize,
            "--object-kb" => options.object_bytes = number("--object-kb")? as usize * 1024,
            "--gets" => options.gets = number("--gets")? as usize,
            "--window" => options.window = number("--window")? as usize,
            "--ram-mb" => options.ram_bytes = number("--ram-mb")? << 20,
            "--evict-page-cache" => options.evict_page_cache = true,
            "--off-first" => options.off_first = true,
            "--json" => options.json = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.window == 0 || options.window > options.objects {
        options.window = options.objects;
    }
    if options.objects == 0 {
        return Err("--objects must be above 0".into());
    }
    Ok(options)
}

fn config(tail_cache: TailCacheConfig) -> StoreConfig {
    let mut config = preset_config("dense-jbod-60", JBOD, |_| {});
    config.tail_cache = tail_cache;
    config
}

fn evict_page_cache(store: &SqliteStore) {
    use std::os::fd::AsRawFd;
    for entry in std::fs::read_dir(store.staging().dir()).expect("the staging directory lists") {
        let file = std::fs::File::open(entry.expect("an entry").path()).expect("a segment opens");
        // SAFETY: a valid descriptor; the call only advises the kernel.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

struct Outcome {
    label: &'static str,
    put_s: f64,
    latencies: Vec<Duration>,
    total: Duration,
    hits: u64,
    misses: u64,
}

async fn run(label: &'static str, options: &Options, tail_cache: TailCacheConfig) -> Outcome {
    let dir = tempfile::tempdir_in(std::env::var("TMPDIR").unwrap_or("/tmp".into()))
        .expect("a temporary directory");
    let store = Store::init_sqlite(&dir.path().join("data"), config(tail_cache))
        .await
        .expect("the store opens");
    let started = Instant::now();
    for index in 0..options.objects {
        let bytes = pattern(options.object_bytes, index as u64);
        store
            .put(&format!("object-{index:06}"), &bytes[..])
            .await
            .expect("the PUT succeeds");
    }
    let put_s = started.elapsed().as_secs_f64();
    if options.evict_page_cache {
        evict_page_cache(&store);
    }
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let first = options.objects - options.window;
    let mut latencies = Vec::with_capacity(options.gets);
    let started = Instant::now();
    for _ in 0..options.gets {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let index = first + (state % options.window as u64) as usize;
        let began = Instant::now();
        let mut reader = store
            .get_with(
                &format!("object-{index:06}"),
                None,
                ContentCheck::ChunksOnly,
            )
            .await
            .expect("the GET opens");
        let mut length = 0;
        while let Some(chunk) = reader.next_chunk().await.expect("the GET reads") {
            length += chunk.len();
        }
        latencies.push(began.elapsed());
        assert_eq!(length, options.object_bytes);
    }
    let total = started.elapsed();
    let stats = store.tail_cache_stats();
    store.close().await;
    Outcome {
        label,
        put_s,
        latencies,
        total,
        hits: stats.ram_hits + stats.flash_hits,
        misses: stats.misses,
    }
}

fn report(options: &Options, outcome: &mut Outcome) {
    outcome.latencies.sort();
    let at = |q: f64| {
        let index =
            ((outcome.latencies.len() as f64 * q) as usize).min(outcome.latencies.len() - 1);
        outcome.latencies[index].as_secs_f64() * 1e6
    };
    let mean_us = outcome.total.as_secs_f64() * 1e6 / outcome.latencies.len().max(1) as f64;
    let gets_per_s = outcome.latencies.len() as f64 / outcome.total.as_secs_f64();
    let mb_per_s = gets_per_s * options.object_bytes as f64 / 1e6;
    let lookups = outcome.hits + outcome.misses;
    let hit_rate = if lookups == 0 {
        None
    } else {
        Some(outcome.hits as f64 / lookups as f64)
    };
    if options.json {
        println!(
            "{}",
            serde_json::json!({
                "cache": outcome.label,
                "objects": options.objects,
                "object_bytes": options.object_bytes,
                "gets": options.gets,
                "window": options.window,
                "hit_rate": hit_rate,
                "p50_us": at(0.5),
                "p99_us": at(0.99),
                "mean_us": mean_us,
                "gets_per_s": gets_per_s,
                "mb_per_s": mb_per_s,
                "put_s": outcome.put_s,
            })
        );
    } else {
        println!(
            "{:<10} hit rate {:>6}  p50 {:>7.1} µs  p99 {:>7.1} µs  mean {:>7.1} µs  {:>8.0} GETs/s  {:>7.1} MB/s  (PUTs {:.1} s)",
            outcome.label,
            hit_rate.map_or("-".into(), |rate| format!("{:.1}%", rate * 100.0)),
            at(0.5),
            at(0.99),
            mean_us,
            gets_per_s,
            mb_per_s,
            outcome.put_s,
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("tail_cache: {message}");
            std::process::exit(2);
        }
    };
    let on = TailCacheConfig {
        ram_bytes: options.ram_bytes,
        ..TailCacheConfig::default()
    };
    let off = TailCacheConfig::disabled();
    let (mut with, mut without) = if options.off_first {
        let without = run("cache off", &options, off).await;
        (run("cache on", &options, on).await, without)
    } else {
        let with = run("cache on", &options, on).await;
        (with, run("cache off", &options, off).await)
    };
    report(&options, &mut with);
    report(&options, &mut without);
}
