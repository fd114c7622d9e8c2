//! Shared by the store's examples (each includes it with `#[path]`; cargo does not build this
//! directory as an example): deterministic object bytes, a store configuration on a preset
//! rack with its planned layout and the emulated latencies at a thousandth, and for the latency
//! examples their flags, a paced PUT client and quantiles.

// Each example uses a different subset of these helpers.
#![allow(dead_code)]

use spinwise_catalog::Tier;
use spinwise_model::Layout;
use spinwise_store::{CompactionMode, RackSource, SqliteStore, StoreConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Deterministic incompressible bytes for object `seed` (BLAKE3's extendable output).
pub fn pattern(bytes: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0; bytes];
    blake3::Hasher::new()
        .update(&seed.to_le_bytes())
        .finalize_xof()
        .fill(&mut data);
    data
}

/// The preset `name` (its TOML `rack_toml`), planned, with latencies at a thousandth;
/// `adjust` changes the layout before the configuration takes it.
pub fn preset_config(name: &str, rack_toml: &str, adjust: impl FnOnce(&mut Layout)) -> StoreConfig {
    let rack = spinwise_model::parse_rack(name, rack_toml).expect("the preset parses");
    let mut layout = spinwise_plan::plan(&rack).expect("the preset plans").layout;
    adjust(&mut layout);
    let mut config = StoreConfig::new(
        RackSource::Preset(name.into()),
        rack_toml.to_string(),
        layout,
    );
    config.time_factor = 0.001;
    config
}

/// Reads `--json` and `--FLAG NUMBER` pairs from the command line: `json` is set by `--json`,
/// every other flag's value must be a positive number and goes to `on_flag`, which refuses the
/// flags it does not know.
pub fn parse_flags(
    json: &mut bool,
    mut on_flag: impl FnMut(&str, f64) -> Result<(), String>,
) -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--json" {
            *json = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or(format!("{flag}: `{value}` is not a positive number"))?;
        on_flag(&flag, number)?;
    }
    Ok(())
}

/// The PUT client of the latency examples: `tier` PUTs of `body`, one every `interval` (or as
/// soon as the last one ended, if later), until `done`; each one's seconds. Paced, so the
/// writes load the host's disk as a client would rather than as much as it can take.
pub async fn paced_puts(
    store: Arc<SqliteStore>,
    body: Vec<u8>,
    (tier, interval): (Tier, std::time::Duration),
    done: Arc<AtomicBool>,
) -> Vec<f64> {
    let mut latencies = Vec::new();
    let mut next = tokio::time::Instant::now();
    while !done.load(Ordering::Relaxed) {
        tokio::time::sleep_until(next).await;
        next += interval;
        let key = format!("put-{:05}", latencies.len());
        let began = Instant::now();
        store
            .put_with(&key, tier, &body[..], |_| std::future::ready(Ok(())))
            .await
            .expect("put");
        latencies.push(began.elapsed().as_secs_f64());
    }
    latencies
}

/// The `fraction` quantile (nearest rank) of `values`, in milliseconds.
pub fn quantile_ms(values: &mut [f64], fraction: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((fraction * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1] * 1e3
}

/// A mode's name as store.toml spells it.
pub fn mode_name(mode: CompactionMode) -> &'static str {
    match mode {
        CompactionMode::NonPreemptive => "non-preemptive",
        CompactionMode::SemiPreemptive => "semi-preemptive",
    }
}

/// Runs `measure` `rounds` times in each mode, non-preemptive then semi-preemptive in turn, so
/// the two meet the machine's load alike; the rows in order.
pub async fn alternate_modes<Fut: std::future::Future<Output = serde_json::Value>>(
    rounds: usize,
    mut measure: impl FnMut(CompactionMode) -> Fut,
) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for _ in 0..rounds {
        for mode in [
            CompactionMode::NonPreemptive,
            CompactionMode::SemiPreemptive,
        ] {
            rows.push(measure(mode).await);
        }
    }
    rows
}

/// `row` (a JSON object) with the GETs' and PUTs' counts and p50, p99 and max latencies added.
pub fn with_latencies(
    mut row: serde_json::Value,
    gets: &mut [f64],
    puts: &mut [f64],
) -> serde_json::Value {
    let fields = row.as_object_mut().expect("a row is a JSON object");
    for (name, values) in [("get", gets), ("put", puts)] {
        fields.insert(format!("{name}s"), values.len().into());
        for (quantile, fraction) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
            let milliseconds = quantile_ms(values, fraction);
            fields.insert(format!("{name}_{quantile}_ms"), milliseconds.into());
        }
    }
    row
}

/// The table's latency columns' heading, after the example's own columns.
pub const LATENCY_HEADING: &str =
    "|  GETs    p50 ms    p99 ms    max ms |  PUTs    p50 ms    p99 ms    max ms";

/// A row's latency columns (see [`with_latencies`]).
pub fn latency_columns(row: &serde_json::Value) -> String {
    let number = |field: &str| row[field].as_f64().unwrap_or(f64::NAN);
    format!(
        "| {:>5} {:>9.1} {:>9.1} {:>9.1} | {:>5} {:>9.1} {:>9.1} {:>9.1}",
        row["gets"].as_u64().unwrap_or(0),
        number("get_p50_ms"),
        number("get_p99_ms"),
        number("get_max_ms"),
        row["puts"].as_u64().unwrap_or(0),
        number("put_p50_ms"),
        number("put_p99_ms"),
        number("put_max_ms"),
    )
}

/// What [`beside_clients`] measured: the work's result and seconds, and each GET's and PUT's
/// latency in seconds.
pub struct Beside<T> {
    pub result: T,
    pub work_s: f64,
    pub gets: Vec<f64>,
    pub puts: Vec<f64>,
}

/// Runs `work` on `store` while two clients load it until the work ends: `reader` (given the
/// store and the stop flag; returns each GET's seconds) and [`paced_puts`] of `put` = (body,
/// tier, interval). Closes the store after.
pub async fn beside_clients<T, ReadFut, WorkFut>(
    store: SqliteStore,
    reader: impl FnOnce(Arc<SqliteStore>, Arc<AtomicBool>) -> ReadFut,
    put: (Vec<u8>, Tier, std::time::Duration),
    work: impl FnOnce(Arc<SqliteStore>) -> WorkFut,
) -> Beside<T>
where
    ReadFut: std::future::Future<Output = Vec<f64>> + Send + 'static,
    WorkFut: std::future::Future<Output = T>,
{
    let store = Arc::new(store);
    let done = Arc::new(AtomicBool::new(false));
    let reads = tokio::spawn(reader(store.clone(), done.clone()));
    let (body, tier, interval) = put;
    let writes = tokio::spawn(paced_puts(
        store.clone(),
        body,
        (tier, interval),
        done.clone(),
    ));
    let began = Instant::now();
    let result = work(store.clone()).await;
    let work_s = began.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let gets = reads.await.expect("the read loop");
    let puts = writes.await.expect("the write loop");
    if let Ok(store) = Arc::try_unwrap(store) {
        store.close().await;
    }
    Beside {
        result,
        work_s,
        gets,
        puts,
    }
}
