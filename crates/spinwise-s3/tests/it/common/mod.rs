//! A real server on an ephemeral port over a temporary dense-jbod-60 store (time factor 0.001,
//! 1 MiB bundles), and an aws-sdk-s3 client for it (path style, fixed region, static keys,
//! no retries so errors reach the test as sent), plain HTTP or over TLS with the test's own root.
//!
//! The store runs on a [`ManualClock`]: dates, restore expiry, lifecycle days, upload ages and
//! every background sweeper wait on it, and [`Harness::advance`] moves it (the disks and their
//! driver keep real time). No test sleeps to let time pass; [`eventually`] is the one place
//! that polls, for work that takes real time (disk reads at the time factor), with a deadline.

#![allow(dead_code)]

pub mod cold;
pub mod raw;
pub mod wire;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials as SdkCredentials, Region};
use spinwise_s3::{
    BucketDomains, Credentials, MetaDb, Restorer, RunningServer, S3Settings, SpinwiseS3, TlsConfig,
    build_service_with,
};
use spinwise_store::clock::{Clock, ManualClock, Paced};
use spinwise_store::staging::StagingConfig;
use spinwise_store::{RackSource, SqliteStore, Store, StoreConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub const ACCESS_KEY: &str = "SPINWISETESTACCESS01";
pub const SECRET_KEY: &str = "spinwise-test-secret-key-0123456789";
pub const RACK: &str = include_str!("../../../../../presets/dense-jbod-60.toml");

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub data_dir: PathBuf,
    pub store: Arc<SqliteStore>,
    /// The server's restores (holds the store: dropped before a restart closes it).
    pub restorer: Arc<Restorer>,
    pub server: RunningServer,
    pub client: Client,
    /// The store's clock (kept over a restart).
    pub clock: Arc<ManualClock>,
    /// The server's background sweepers' next wakes.
    pub sweepers: Vec<Paced>,
}

#[path = "../../../../spinwise-store/tests/it/support/poll.rs"]
mod poll;
pub use poll::{WAIT, eventually};

impl Harness {
    /// Moves the store's clock on by `delta`, then waits until every sweeper has run the passes
    /// that made due (their effects are visible when this returns).
    pub async fn advance(&self, delta: Duration) {
        let now_us = self.clock.advance(delta);
        let passes = futures::future::join_all(self.sweepers.iter().map(|s| s.past(now_us)));
        tokio::time::timeout(WAIT, passes)
            .await
            .expect("the sweepers never finished the passes the advance made due");
    }

    /// The store's calendar time.
    pub fn now_unix_ms(&self) -> i64 {
        self.clock.unix_ms()
    }
}

pub fn config(max_queue_depth: Option<u32>) -> StoreConfig {
    let rack = spinwise_model::parse_rack("dense-jbod-60", RACK).unwrap();
    let mut layout = spinwise_plan::plan(&rack).unwrap().layout;
    if let Some(depth) = max_queue_depth {
        layout.scheduler.max_queue_depth = depth;
    }
    let mut config = StoreConfig::new(
        RackSource::Preset("dense-jbod-60".into()),
        RACK.to_string(),
        layout,
    );
    config.time_factor = 0.001;
    config.bundle_bytes = 1 << 20;
    config.staging = StagingConfig {
        segment_bytes: 8 << 20,
        chunk_bytes: 1 << 20,
        limit_bytes: 1 << 30,
    };
    config
}

pub async fn start() -> Harness {
    start_with(config(None), S3Settings::default()).await
}

pub async fn start_with(config: StoreConfig, settings: S3Settings) -> Harness {
    start_serving(config, settings, None, None).await
}

/// The harness with virtual-hosted-style addressing below `domains`.
pub async fn start_with_domains(domains: BucketDomains) -> Harness {
    start_serving(config(None), S3Settings::default(), None, Some(domains)).await
}

/// The harness over TLS: the server uses `tls`, the client trusts `root_pem` only and reaches
/// the server as `https://127.0.0.1:PORT` (the certificate must name that address).
pub async fn start_tls(tls: TlsConfig, root_pem: &str) -> Harness {
    start_serving(
        config(None),
        S3Settings::default(),
        Some((tls, root_pem)),
        None,
    )
    .await
}

async fn start_serving(
    config: StoreConfig,
    settings: S3Settings,
    tls: Option<(TlsConfig, &str)>,
    domains: Option<BucketDomains>,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let clock = Arc::new(ManualClock::new());
    let store = Store::init_sqlite(&data_dir, config).await.unwrap();
    let store = Arc::new(store.with_clock(clock.clone()));
    let (listener, service, restorer, sweepers) =
        service_over(&store, &data_dir, settings, domains).await;
    let (server, client) = match tls {
        None => {
            let server = RunningServer::start(listener, service).unwrap();
            let client = client(server.local_addr(), ACCESS_KEY, SECRET_KEY);
            (server, client)
        }
        Some((tls, root_pem)) => {
            let server = RunningServer::start_with(listener, service, Some(tls)).unwrap();
            let client = tls_client(server.local_addr(), root_pem);
            (server, client)
        }
    };
    Harness {
        dir,
        data_dir,
        store,
        restorer,
        server,
        client,
        clock,
        sweepers,
    }
}

/// The S3 service over `store` (its metadata database in `data_dir`, the test keys) and an
/// ephemeral port to serve it on.
async fn service_over(
    store: &Arc<SqliteStore>,
    data_dir: &std::path::Path,
    settings: S3Settings,
    domains: Option<BucketDomains>,
) -> (
    tokio::net::TcpListener,
    s3s::service::S3Service,
    Arc<Restorer>,
    Vec<Paced>,
) {
    let meta = MetaDb::open(&data_dir.join(spinwise_s3::META_FILE))
        .await
        .unwrap();
    let s3 = SpinwiseS3::new(Arc::clone(store), meta, settings)
        .await
        .unwrap();
    let credentials = Credentials::given(ACCESS_KEY, SECRET_KEY).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let restorer = Arc::clone(s3.restorer());
    let sweepers = s3.sweepers();
    (
        listener,
        build_service_with(s3, &credentials, domains),
        restorer,
        sweepers,
    )
}

/// Stops the server, closes the store once nothing else holds it, and serves the same data
/// directory again with `settings` and the same keys: what a process restart sees.
pub async fn restart(harness: Harness, settings: S3Settings) -> Harness {
    let Harness {
        dir,
        data_dir,
        store,
        restorer,
        server,
        clock,
        sweepers,
        ..
    } = harness;
    server.stop().await;
    drop(restorer);
    drop(sweepers);
    // The server's tasks let go of the store as they notice it stopped.
    let mut shared = Some(store);
    let mut closed = None;
    eventually("the store is no longer in use", async || {
        match Arc::try_unwrap(shared.take().expect("kept until unwrapped")) {
            Ok(store) => closed = Some(store),
            Err(store) => shared = Some(store),
        }
        closed.is_some()
    })
    .await;
    closed.expect("unwrapped").close().await;
    let store = Store::open_sqlite(&data_dir).await.unwrap();
    let store = Arc::new(store.with_clock(clock.clone()));
    let (listener, service, restorer, sweepers) =
        service_over(&store, &data_dir, settings, None).await;
    let server = RunningServer::start(listener, service).unwrap();
    let client = client(server.local_addr(), ACCESS_KEY, SECRET_KEY);
    Harness {
        dir,
        data_dir,
        store,
        restorer,
        server,
        client,
        clock,
        sweepers,
    }
}

pub fn client(addr: SocketAddr, access_key: &str, secret_key: &str) -> Client {
    let http = aws_smithy_http_client::Builder::new().build_http();
    sdk_client(format!("http://{addr}"), http, access_key, secret_key)
}

/// An aws-sdk-s3 client over rustls (ring) whose only trusted root is `root_pem`.
pub fn tls_client(addr: SocketAddr, root_pem: &str) -> Client {
    use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
    let trust = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(root_pem.as_bytes());
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .tls_context(
            TlsContext::builder()
                .with_trust_store(trust)
                .build()
                .unwrap(),
        )
        .build_https();
    sdk_client(format!("https://{addr}"), http, ACCESS_KEY, SECRET_KEY)
}

fn sdk_client(
    endpoint: String,
    http: aws_sdk_s3::config::SharedHttpClient,
    access_key: &str,
    secret_key: &str,
) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(SdkCredentials::new(
            access_key, secret_key, None, None, "test",
        ))
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .http_client(http)
        .build();
    Client::from_conf(config)
}

/// Deterministic test bytes (xorshift).
pub fn pattern(size_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = Vec::with_capacity(size_bytes + 8);
    while bytes.len() < size_bytes {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        bytes.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    bytes.truncate(size_bytes);
    bytes
}

pub fn md5_hex(bytes: &[u8]) -> String {
    use s3s::crypto::Checksum as _;
    let digest = s3s::crypto::Md5::checksum(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The S3 error code of a failed SDK call.
pub fn code<E, R>(error: &aws_sdk_s3::error::SdkError<E, R>) -> String
where
    E: aws_sdk_s3::error::ProvideErrorMetadata,
{
    error
        .as_service_error()
        .and_then(|e| e.code())
        .unwrap_or("<not a service error>")
        .to_string()
}

/// The HTTP status of a failed SDK call.
pub fn status<E>(
    error: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> u16 {
    error
        .raw_response()
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

/// Creates bucket `name` (it must not exist).
pub async fn bucket(harness: &Harness, name: &str) {
    harness
        .client
        .create_bucket()
        .bucket(name)
        .send()
        .await
        .unwrap();
}

/// PUTs `bytes` as `key` in `bucket`; returns the ETag (quoted, as sent).
pub async fn put(client: &Client, bucket: &str, key: &str, bytes: &[u8]) -> String {
    let output = client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(aws_sdk_s3::primitives::ByteStream::from(bytes.to_vec()))
        .send()
        .await
        .unwrap();
    output.e_tag.unwrap()
}

/// The status and code of a GET that must fail (`"403 AccessDenied"`).
pub async fn get_error(client: &Client, bucket: &str, key: &str) -> String {
    let error = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .expect_err("the GET should fail");
    format!("{} {}", status(&error), code(&error))
}

pub async fn get_bytes(client: &Client, bucket: &str, key: &str, range: Option<&str>) -> Vec<u8> {
    let mut request = client.get_object().bucket(bucket).key(key);
    if let Some(range) = range {
        request = request.range(range);
    }
    let output = request.send().await.unwrap();
    output.body.collect().await.unwrap().into_bytes().to_vec()
}

/// Every path under `root`, relative to it.
pub fn files_under(root: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(root).unwrap().display().to_string());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    found
}

/// The value of the metrics sample `name{labels}` in `text` (labels as the encoder writes them).
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
