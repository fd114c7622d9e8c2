//! Where the benchmark writes and reads: an S3 endpoint (any server that speaks S3 with SigV4:
//! Spinwise's `serve`, s3s-fs, MinIO, AWS) or a Spinwise store directory opened in-process.
//! Both offer the same four operations, so the driver and its numbers do not depend on which.
//!
//! Invariants:
//! - Every read compares the bytes it receives with the bytes expected, chunk by chunk as they
//!   arrive (no whole-object buffer), and a short or long read is a mismatch.
//! - An S3 object the server keeps offline (`InvalidObjectState`) is restored (RestoreObject,
//!   one day) and polled with HEAD until its `x-amz-restore` says the restore is done, then read;
//!   the wait is reported apart from the transfer. A restore that outlasts the timeout is an
//!   error, not a slow read.
//! - S3 requests are never retried: a refusal stops the run with the server's code and
//!   message instead of being timed as a slow request.
//! - A store target's `migrate` erasure-codes every staged cold object onto the disks (the
//!   archive's own migration); S3 targets have no such step and report none.

use crate::{BenchError, BenchResult};
use aws_credential_types::Credentials;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{RestoreRequest, StorageClass};
use bytes::Bytes;
use spinwise_sim::workload::group_of_key;
use spinwise_store::{SqliteStore, Tier};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a restore in progress is polled.
const RESTORE_POLL: Duration = Duration::from_millis(250);

/// An S3 endpoint and how to sign for it.
#[derive(Clone, Debug)]
pub struct S3Endpoint {
    /// `http://host:port` or `https://…`; path-style addressing.
    pub url: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
    /// The `x-amz-storage-class` of every PUT (`None`: the server's default).
    pub storage_class: Option<String>,
    /// Longest wait for one restore.
    pub restore_timeout_s: u64,
}

/// A benchmark target.
pub enum Target {
    S3 {
        client: Client,
        endpoint: S3Endpoint,
    },
    Store {
        // Boxed: a store is far larger than a client, and a target lives once per run.
        store: Box<SqliteStore>,
        tier: Tier,
    },
}

/// Where a store target's migration puts each file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Packed into bundles, placed as the store's migrator places them (the product's way).
    #[default]
    Packed,
    /// Each file alone in the group the simulator's trace replay gives its key
    /// (`spinwise_sim::group_of_key`: FNV-1a 64 modulo the groups), so a replay of the run's
    /// trace.csv spins up the groups the store spun up (Pelican's cross-validation).
    LikeTheSimulator,
}

/// What one read cost beyond its transfer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadOutcome {
    /// Time from the first refusal to the object being online again, when it was offline.
    pub restore_wait: Option<Duration>,
}

impl Target {
    /// A client for `endpoint`; the bucket is created if it does not exist.
    pub async fn s3(endpoint: S3Endpoint) -> BenchResult<Target> {
        use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
        // rustls with ring, as the S3 tests use: `https://` endpoints verified against the
        // platform's roots, and plain `http://` for a local server.
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(Provider::Rustls(CryptoMode::Ring))
            .build_https();
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(endpoint.region.clone()))
            .endpoint_url(endpoint.url.clone())
            .force_path_style(true)
            .credentials_provider(Credentials::new(
                endpoint.access_key.clone(),
                endpoint.secret_key.clone(),
                endpoint.session_token.clone(),
                None,
                "spinwise-bench",
            ))
            .http_client(http)
            // No retries: a retried request would be timed as one slow request and hide the
            // refusal; a benchmark reports what the server answered.
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
            .build();
        let client = Client::from_conf(config);
        ensure_bucket(&client, &endpoint.bucket).await?;
        Ok(Target::S3 { client, endpoint })
    }

    /// An initialised Spinwise store at `data_dir`, written in `tier`.
    pub async fn store(data_dir: &Path, tier: Tier) -> BenchResult<Target> {
        let store = SqliteStore::open_sqlite(data_dir).await.map_err(|error| {
            BenchError::Target(format!(
                "cannot open the store at {}: {error} (create one with `spinwise store init`)",
                data_dir.display()
            ))
        })?;
        Ok(Target::Store {
            store: Box::new(store),
            tier,
        })
    }

    /// A short name for reports: `s3 <url>/<bucket>` or `store <dir>`.
    pub fn describe(&self) -> String {
        match self {
            Target::S3 { endpoint, .. } => format!("s3 {}/{}", endpoint.url, endpoint.bucket),
            Target::Store { .. } => "spinwise store".into(),
        }
    }

    /// Writes `body` under `key`.
    pub async fn put(&self, key: &str, body: Bytes) -> BenchResult<()> {
        let failed = |reason: String| BenchError::Operation {
            operation: "PUT",
            key: key.into(),
            reason,
        };
        match self {
            Target::S3 { client, endpoint } => {
                let mut request = client
                    .put_object()
                    .bucket(&endpoint.bucket)
                    .key(key)
                    .body(ByteStream::from(body));
                if let Some(class) = &endpoint.storage_class {
                    request = request.storage_class(StorageClass::from(class.as_str()));
                }
                request.send().await.map_err(|e| failed(describe_sdk(&e)))?;
            }
            Target::Store { store, tier } => {
                store
                    .put_with(key, *tier, &body[..], |_| std::future::ready(Ok(())))
                    .await
                    .map_err(|e| failed(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Reads `key` and checks it is exactly `expected`.
    pub async fn get(&self, key: &str, expected: &Bytes) -> BenchResult<ReadOutcome> {
        match self {
            Target::S3 { client, endpoint } => s3_get(client, endpoint, key, expected).await,
            Target::Store { store, .. } => {
                let failed = |e: spinwise_store::StoreError| BenchError::Operation {
                    operation: "GET",
                    key: key.into(),
                    reason: e.to_string(),
                };
                let mut reader = store.get(key, None).await.map_err(failed)?;
                let mut check = Check::new(key, expected);
                while let Some(chunk) = reader.next_chunk().await.map_err(failed)? {
                    check.chunk(&chunk)?;
                }
                check.finish()?;
                Ok(ReadOutcome::default())
            }
        }
    }

    /// Removes `key` (the run's own objects, when it does not keep them).
    pub async fn delete(&self, key: &str) -> BenchResult<()> {
        let failed = |reason: String| BenchError::Operation {
            operation: "DELETE",
            key: key.into(),
            reason,
        };
        match self {
            Target::S3 { client, endpoint } => {
                client
                    .delete_object()
                    .bucket(&endpoint.bucket)
                    .key(key)
                    .send()
                    .await
                    .map_err(|e| failed(describe_sdk(&e)))?;
            }
            Target::Store { store, .. } => {
                store.delete(key).await.map_err(|e| failed(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Migrates what was staged onto the disks, where the target has such a step: the bytes
    /// moved, or `None` for an S3 endpoint (its server migrates on its own schedule). Packed
    /// as the store's migrator packs them, or each file alone in the simulator's group for its
    /// key (see [`Placement`]).
    pub async fn migrate(&self, placement: Placement) -> BenchResult<Option<u64>> {
        let Target::Store { store, .. } = self else {
            return Ok(None);
        };
        let groups = store.layout().groups.len() as u32;
        let flushed = match placement {
            Placement::Packed => store.flush(|_| {}).await,
            Placement::LikeTheSimulator => {
                store
                    .flush_placed(|object| Some(group_of_key(&object.key, groups)), |_| {})
                    .await
            }
        };
        let report = flushed.map_err(|e| BenchError::Target(format!("flush failed: {e}")))?;
        Ok(Some(report.bytes_migrated))
    }

    /// Closes the target (a store's catalog is closed cleanly).
    pub async fn close(self) {
        if let Target::Store { store, .. } = self {
            (*store).close().await;
        }
    }
}

/// Creates `bucket` unless it exists.
async fn ensure_bucket(client: &Client, bucket: &str) -> BenchResult<()> {
    match client.head_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(()),
        Err(error)
            if error
                .raw_response()
                .is_some_and(|r| r.status().as_u16() == 404) =>
        {
            client
                .create_bucket()
                .bucket(bucket)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    BenchError::Target(format!(
                        "cannot create bucket {bucket}: {}",
                        describe_sdk(&e)
                    ))
                })
        }
        Err(error) => Err(BenchError::Target(format!(
            "cannot reach bucket {bucket}: {}",
            describe_sdk(&error)
        ))),
    }
}

/// A GET, restoring the object first if the server keeps it offline.
async fn s3_get(
    client: &Client,
    endpoint: &S3Endpoint,
    key: &str,
    expected: &Bytes,
) -> BenchResult<ReadOutcome> {
    let failed = |reason: String| BenchError::Operation {
        operation: "GET",
        key: key.into(),
        reason,
    };
    let mut outcome = ReadOutcome::default();
    let response = match client
        .get_object()
        .bucket(&endpoint.bucket)
        .key(key)
        .send()
        .await
    {
        Ok(response) => response,
        Err(error) if sdk_code(&error) == Some("InvalidObjectState") => {
            outcome.restore_wait = Some(restore(client, endpoint, key).await?);
            client
                .get_object()
                .bucket(&endpoint.bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| failed(describe_sdk(&e)))?
        }
        Err(error) => return Err(failed(describe_sdk(&error))),
    };
    let mut body = response.body;
    let mut check = Check::new(key, expected);
    while let Some(chunk) = body.next().await {
        check.chunk(&chunk.map_err(|e| failed(e.to_string()))?)?;
    }
    check.finish()?;
    Ok(outcome)
}

/// Asks for `key` to be restored and waits until HEAD says it is.
async fn restore(client: &Client, endpoint: &S3Endpoint, key: &str) -> BenchResult<Duration> {
    let started = Instant::now();
    let failed = |reason: String| BenchError::Operation {
        operation: "RestoreObject",
        key: key.into(),
        reason,
    };
    let request = RestoreRequest::builder().days(1).build();
    match client
        .restore_object()
        .bucket(&endpoint.bucket)
        .key(key)
        .restore_request(request)
        .send()
        .await
    {
        Ok(_) => {}
        // Another reader of the same key asked first: wait for that restore.
        Err(error) if sdk_code(&error) == Some("RestoreAlreadyInProgress") => {}
        Err(error) => return Err(failed(describe_sdk(&error))),
    }
    let timeout = Duration::from_secs(endpoint.restore_timeout_s);
    loop {
        let head = client
            .head_object()
            .bucket(&endpoint.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| failed(describe_sdk(&e)))?;
        if head
            .restore()
            .is_some_and(|r| r.contains("ongoing-request=\"false\""))
        {
            return Ok(started.elapsed());
        }
        if started.elapsed() >= timeout {
            return Err(BenchError::RestoreTimeout {
                key: key.into(),
                timeout_s: endpoint.restore_timeout_s,
            });
        }
        tokio::time::sleep(RESTORE_POLL).await;
    }
}

/// Compares a stream of chunks with the expected bytes.
struct Check<'a> {
    key: &'a str,
    expected: &'a Bytes,
    offset: usize,
}

impl<'a> Check<'a> {
    fn new(key: &'a str, expected: &'a Bytes) -> Check<'a> {
        Check {
            key,
            expected,
            offset: 0,
        }
    }

    fn chunk(&mut self, chunk: &[u8]) -> BenchResult<()> {
        let end = self.offset + chunk.len();
        if end > self.expected.len() {
            return Err(self.mismatch(format!(
                "longer than the {} bytes written",
                self.expected.len()
            )));
        }
        if chunk != &self.expected[self.offset..end] {
            return Err(self.mismatch(format!("with other bytes in {}..{end}", self.offset)));
        }
        self.offset = end;
        Ok(())
    }

    fn finish(self) -> BenchResult<()> {
        if self.offset != self.expected.len() {
            return Err(self.mismatch(format!(
                "short: {} of {} bytes",
                self.offset,
                self.expected.len()
            )));
        }
        Ok(())
    }

    fn mismatch(&self, reason: String) -> BenchError {
        BenchError::Mismatch {
            key: self.key.into(),
            reason,
        }
    }
}

/// The S3 error code of a failed SDK call, if the server sent one.
fn sdk_code<E, R>(error: &aws_sdk_s3::error::SdkError<E, R>) -> Option<&str>
where
    E: aws_sdk_s3::error::ProvideErrorMetadata,
{
    error.as_service_error().and_then(|e| e.code())
}

/// An SDK error with its S3 code and message when the server gave them (the SDK's own
/// `Display` says only "service error").
fn describe_sdk<E, R>(error: &aws_sdk_s3::error::SdkError<E, R>) -> String
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match error.as_service_error() {
        Some(service) => format!(
            "{}: {}",
            service.code().unwrap_or("error"),
            service.message().unwrap_or("(no message)")
        ),
        None => format!("{}", aws_sdk_s3::error::DisplayErrorContext(error)),
    }
}
