//! s3_small_objects: the small-object S3 load generator of issue 28, the same for any S3 server
//! (Spinwise and its peer s3s-fs in `scripts/bench-s3-small.sh`). Prints one JSON line per
//! measurement:
//!
//! - latency: one client (one connection pool) PUTs N objects of each size (0 B, 4 KiB, 64 KiB,
//!   1 MiB) and then GETs them in the same order, one request at a time; warm-up requests are
//!   excluded; p50/p99/mean/max in ms;
//! - rate: C clients (C tasks, each with its own SDK client and so its own connection) GET
//!   4 KiB objects, then PUT new 4 KiB objects, for a fixed time; operations per second.
//!
//! Every GET body is compared byte for byte with what was PUT, and after the PUT rate phase each
//! client's last object is read back, so a server that answers wrongly fails the run instead of
//! scoring. With `--server-pid` each line also carries the server's CPU seconds for the phase,
//! beside the generator's own (the two share the machine's cores; the split says which side
//! the cores were busy with).
//!
//! ```sh
//! AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. cargo run --release -p spinwise-s3 \
//!   --example s3_small_objects -- --endpoint http://127.0.0.1:19100 --bucket bench \
//!   [--label NAME] [--requests 500] [--large-requests 50] [--warmup-requests 20] \
//!   [--clients 32] [--rate-seconds 10] [--server-pid PID] [--key-prefix run1] \
//!   [--phases latency,get-rate,put-rate]
//! ```
//!
//! `--phases` runs a subset, e.g. `get-rate` alone under a profiler against a server an earlier
//! run with the same `--key-prefix` filled (the GET rate reads the latency phase's objects).

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The object sizes of the latency phase (issue 28).
const LATENCY_SIZES_BYTES: [usize; 4] = [0, 4 << 10, 64 << 10, 1 << 20];
/// Sizes from here on take `--large-requests` (each 1 MiB request costs far more than a small
/// one; 50 of them give a p99 that is the second-slowest sample, not the slowest).
const LARGE_FROM_BYTES: usize = 1 << 20;
/// The object size of the rate phase.
const RATE_SIZE_BYTES: usize = 4 << 10;
/// Requests each rate client makes before the clock starts: its connection is open and its
/// first-request costs (DNS-free connect, identity cache) are paid.
const RATE_WARMUP_REQUESTS: usize = 5;
/// Linux reports process CPU in /proc/PID/stat in USER_HZ ticks, 100 per second on every
/// architecture's ABI (the kernel's own HZ may differ; USER_HZ does not).
const USER_HZ: f64 = 100.0;

struct Options {
    endpoint: String,
    bucket: String,
    label: String,
    requests: usize,
    large_requests: usize,
    warmup_requests: usize,
    clients: usize,
    rate_seconds: f64,
    server_pid: Option<u32>,
    key_prefix: String,
    phases: Vec<String>,
}

const PHASES: [&str; 3] = ["latency", "get-rate", "put-rate"];

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        endpoint: String::new(),
        bucket: String::new(),
        label: "server".into(),
        requests: 500,
        large_requests: 50,
        warmup_requests: 20,
        clients: 32,
        rate_seconds: 10.0,
        server_pid: None,
        key_prefix: "bench".into(),
        phases: PHASES.iter().map(|phase| phase.to_string()).collect(),
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let value = arguments
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |value: &str| -> Result<usize, String> {
            value
                .parse()
                .map_err(|_| format!("{flag}: not a whole number: {value}"))
        };
        match flag.as_str() {
            "--endpoint" => options.endpoint = value,
            "--bucket" => options.bucket = value,
            "--label" => options.label = value,
            "--requests" => options.requests = number(&value)?,
            "--large-requests" => options.large_requests = number(&value)?,
            "--warmup-requests" => options.warmup_requests = number(&value)?,
            "--clients" => options.clients = number(&value)?,
            "--rate-seconds" => {
                options.rate_seconds = value
                    .parse()
                    .map_err(|_| format!("--rate-seconds: not a number: {value}"))?
            }
            "--server-pid" => {
                options.server_pid = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--server-pid: not a process id: {value}"))?,
                )
            }
            "--key-prefix" => options.key_prefix = value,
            "--phases" => {
                options.phases = value.split(',').map(str::to_string).collect();
                if let Some(unknown) = options
                    .phases
                    .iter()
                    .find(|phase| !PHASES.contains(&phase.as_str()))
                {
                    return Err(format!("--phases: unknown phase {unknown}"));
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if options.endpoint.is_empty() || options.bucket.is_empty() {
        return Err("--endpoint and --bucket are required".into());
    }
    if options.requests == 0 || options.large_requests == 0 || options.clients == 0 {
        return Err("--requests, --large-requests and --clients must be positive".into());
    }
    Ok(options)
}

/// One SDK client with a connection pool of its own, as one application would hold it: path
/// style, static keys from the environment, and no retries, so a failed request fails the run
/// rather than being retried inside a timing. Everything else is the SDK's default (TCP_NODELAY
/// on, a CRC32 of each PUT body), the same for every server.
fn new_client(endpoint: &str, access_key: &str, secret_key: &str) -> Client {
    let http = aws_smithy_http_client::Builder::new().build_http();
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(
            access_key,
            secret_key,
            None,
            None,
            "environment",
        ))
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .http_client(http)
        .build();
    Client::from_conf(config)
}

/// Deterministic bytes for object `index` of `size_bytes` (xorshift), so a GET can be checked
/// without keeping every body.
fn pattern(size_bytes: usize, index: u64) -> Bytes {
    let mut state = (index ^ size_bytes as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = Vec::with_capacity(size_bytes + 8);
    while bytes.len() < size_bytes {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        bytes.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    bytes.truncate(size_bytes);
    Bytes::from(bytes)
}

/// CPU seconds (user + system) a process has used so far, from /proc/PID/stat.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, so 11 and 12 after the name.
    let user_ticks: f64 = fields.get(11)?.parse().ok()?;
    let system_ticks: f64 = fields.get(12)?.parse().ok()?;
    Some((user_ticks + system_ticks) / USER_HZ)
}

/// CPU use of the generator and (when known) the server across one phase.
struct CpuMeter {
    server_pid: Option<String>,
    client_start_s: f64,
    server_start_s: Option<f64>,
}

impl CpuMeter {
    fn start(server_pid: Option<u32>) -> CpuMeter {
        let server_pid = server_pid.map(|pid| pid.to_string());
        CpuMeter {
            client_start_s: cpu_seconds("self").unwrap_or(0.0),
            server_start_s: server_pid.as_deref().and_then(cpu_seconds),
            server_pid,
        }
    }

    /// (generator CPU s, server CPU s) since `start`.
    fn stop(&self) -> (f64, Option<f64>) {
        let client = ticks(cpu_seconds("self").unwrap_or(0.0) - self.client_start_s);
        let server = match (&self.server_pid, self.server_start_s) {
            (Some(pid), Some(start)) => cpu_seconds(pid).map(|now| ticks(now - start)),
            _ => None,
        };
        (client, server)
    }
}

/// Milliseconds to the microsecond: finer digits are below what one loopback request repeats to.
fn milliseconds(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// CPU seconds to the USER_HZ tick they are counted in.
fn ticks(seconds: f64) -> f64 {
    (seconds * USER_HZ).round() / USER_HZ
}

/// The nearest-rank percentile of sorted samples: the smallest sample with at least `fraction`
/// of all samples at or below it (p99 of 500 is the 495th).
fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn latency_fields(mut samples: Vec<Duration>) -> serde_json::Value {
    samples.sort();
    let total: Duration = samples.iter().sum();
    serde_json::json!({
        "samples": samples.len(),
        "p50_ms": milliseconds(percentile(&samples, 0.50)),
        "p99_ms": milliseconds(percentile(&samples, 0.99)),
        "mean_ms": milliseconds(total / samples.len() as u32),
        "max_ms": milliseconds(*samples.last().expect("at least one sample")),
    })
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn put(client: &Client, bucket: &str, key: &str, body: Bytes) -> Result<(), Failure> {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .map_err(|error| format!("PUT {key}: {}", DisplayErrorContext(error)))?;
    Ok(())
}

/// GETs `key` whole and checks it is exactly `expected`.
async fn get_checked(
    client: &Client,
    bucket: &str,
    key: &str,
    expected: &[u8],
) -> Result<(), Failure> {
    let output = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|error| format!("GET {key}: {}", DisplayErrorContext(error)))?;
    let body = output.body.collect().await?.into_bytes();
    if body.as_ref() != expected {
        return Err(format!(
            "GET {key}: {} bytes that differ from the {} bytes PUT",
            body.len(),
            expected.len()
        )
        .into());
    }
    Ok(())
}

fn latency_key(options: &Options, size_bytes: usize, index: usize) -> String {
    format!("{}/latency/{size_bytes}/{index:06}", options.key_prefix)
}

/// One client: for each size, warm-up + N PUTs, then warm-up + N GETs of the same keys.
async fn latency_phase(options: &Options, client: &Client) -> Result<(), Failure> {
    for size_bytes in LATENCY_SIZES_BYTES {
        let measured = if size_bytes >= LARGE_FROM_BYTES {
            options.large_requests
        } else {
            options.requests
        };
        let total = options.warmup_requests + measured;
        let bodies: Vec<Bytes> = (0..total)
            .map(|index| pattern(size_bytes, index as u64))
            .collect();
        for operation in ["PUT", "GET"] {
            let mut samples = Vec::with_capacity(measured);
            let cpu = CpuMeter::start(options.server_pid);
            for (index, body) in bodies.iter().enumerate() {
                let key = latency_key(options, size_bytes, index);
                let start = Instant::now();
                if operation == "PUT" {
                    put(client, &options.bucket, &key, body.clone()).await?;
                } else {
                    get_checked(client, &options.bucket, &key, body).await?;
                }
                let elapsed = start.elapsed();
                if index >= options.warmup_requests {
                    samples.push(elapsed);
                }
            }
            let (client_cpu_s, server_cpu_s) = cpu.stop();
            let mut line = serde_json::json!({
                "server": options.label,
                "measurement": "latency",
                "operation": operation,
                "size_bytes": size_bytes,
                "warmup_requests": options.warmup_requests,
                "client_cpu_s": client_cpu_s,
                "server_cpu_s": server_cpu_s,
            });
            merge(&mut line, latency_fields(samples));
            println!("{line}");
        }
    }
    Ok(())
}

fn merge(line: &mut serde_json::Value, fields: serde_json::Value) {
    if let (Some(line), serde_json::Value::Object(fields)) = (line.as_object_mut(), fields) {
        line.extend(fields);
    }
}

/// C clients, each on its own connection, do `operation` on 4 KiB objects until the time is
/// up. GETs read the latency phase's 4 KiB objects (client c reads c, c + C, c + 2C, ...);
/// PUTs write new keys. Ops/s = completed operations / time from the start until the last
/// client's last operation ended.
async fn rate_phase(
    options: &Arc<Options>,
    clients: &[Client],
    operation: &'static str,
) -> Result<(), Failure> {
    let latency_objects = options.warmup_requests + options.requests;
    let bodies: Arc<Vec<Bytes>> = Arc::new(
        (0..latency_objects)
            .map(|index| pattern(RATE_SIZE_BYTES, index as u64))
            .collect(),
    );
    let start_gate = Arc::new(tokio::sync::Barrier::new(clients.len() + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(clients.len());
    for (client_index, client) in clients.iter().enumerate() {
        let client = client.clone();
        let options = Arc::clone(options);
        let bodies = Arc::clone(&bodies);
        let start_gate = Arc::clone(&start_gate);
        let stop = Arc::clone(&stop);
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut last_put = None;
            let mut request = 0usize;
            let one = |request: usize| {
                let object = (client_index + request * options.clients) % bodies.len();
                let key = if operation == "GET" {
                    latency_key(&options, RATE_SIZE_BYTES, object)
                } else {
                    format!(
                        "{}/rate-put/{client_index:03}/{request:07}",
                        options.key_prefix
                    )
                };
                (key, object)
            };
            for _ in 0..RATE_WARMUP_REQUESTS {
                let (key, object) = one(request);
                request += 1;
                if operation == "GET" {
                    get_checked(&client, &options.bucket, &key, &bodies[object]).await?;
                } else {
                    put(&client, &options.bucket, &key, bodies[object].clone()).await?;
                }
            }
            start_gate.wait().await;
            while !stop.load(Ordering::Relaxed) {
                let (key, object) = one(request);
                request += 1;
                let start = Instant::now();
                if operation == "GET" {
                    get_checked(&client, &options.bucket, &key, &bodies[object]).await?;
                } else {
                    put(&client, &options.bucket, &key, bodies[object].clone()).await?;
                    last_put = Some((key, object));
                }
                samples.push(start.elapsed());
            }
            Ok::<_, Failure>((samples, last_put))
        }));
    }
    start_gate.wait().await;
    let cpu = CpuMeter::start(options.server_pid);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.rate_seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    let mut last_puts = Vec::new();
    for task in tasks {
        let (client_samples, last_put) = task.await??;
        samples.extend(client_samples);
        last_puts.extend(last_put);
    }
    let elapsed = start.elapsed();
    let (client_cpu_s, server_cpu_s) = cpu.stop();
    // The PUTs were acknowledged; check they hold what was sent (one object per client).
    for (key, object) in &last_puts {
        get_checked(&clients[0], &options.bucket, key, &bodies[*object]).await?;
    }
    let operations = samples.len();
    let mut line = serde_json::json!({
        "server": options.label,
        "measurement": "rate",
        "operation": operation,
        "size_bytes": RATE_SIZE_BYTES,
        "clients": clients.len(),
        "seconds": (elapsed.as_secs_f64() * 1e3).round() / 1e3,
        "operations": operations,
        "ops_per_s": (operations as f64 / elapsed.as_secs_f64() * 10.0).round() / 10.0,
        "client_cpu_s": client_cpu_s,
        "server_cpu_s": server_cpu_s,
    });
    merge(&mut line, latency_fields(samples));
    println!("{line}");
    Ok(())
}

async fn run(options: Options) -> Result<(), Failure> {
    let access_key = std::env::var("AWS_ACCESS_KEY_ID").map_err(|_| "AWS_ACCESS_KEY_ID unset")?;
    let secret_key =
        std::env::var("AWS_SECRET_ACCESS_KEY").map_err(|_| "AWS_SECRET_ACCESS_KEY unset")?;
    let options = Arc::new(options);
    let single = new_client(&options.endpoint, &access_key, &secret_key);
    let bucket_exists = single
        .head_bucket()
        .bucket(&options.bucket)
        .send()
        .await
        .is_ok();
    if !bucket_exists {
        single
            .create_bucket()
            .bucket(&options.bucket)
            .send()
            .await
            .map_err(|error| {
                format!(
                    "creating bucket {}: {}",
                    options.bucket,
                    DisplayErrorContext(error)
                )
            })?;
    }
    let runs = |phase: &str| options.phases.iter().any(|wanted| wanted == phase);
    if runs("latency") {
        latency_phase(&options, &single).await?;
    }
    let clients: Vec<Client> = (0..options.clients)
        .map(|_| new_client(&options.endpoint, &access_key, &secret_key))
        .collect();
    if runs("get-rate") {
        rate_phase(&options, &clients, "GET").await?;
    }
    if runs("put-rate") {
        rate_phase(&options, &clients, "PUT").await?;
    }
    Ok(())
}

fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("s3_small_objects: {message}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(error) = runtime.block_on(run(options)) {
        eprintln!("s3_small_objects: {error}");
        std::process::exit(1);
    }
}
