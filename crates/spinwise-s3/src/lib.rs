//! spinwise-s3: the S3-compatible HTTP API over the cold blob store (issue 5),
//! built on s3s 0.14.1 and served by hyper 1. docs/s3.md has the coverage table, the error
//! codes, the key mapping and the metadata database layout.
//! - [`service`] holds [`SpinwiseS3`], the s3s `S3` trait over a [`spinwise_store::SqliteStore`]:
//!   buckets, PUT/GET (ranges)/HEAD/DELETE/DeleteObjects/Copy, ListObjectsV2, storage classes
//!   (`STANDARD` staged, `GLACIER` migrated), 503 SlowDown when the scheduler queue or staging
//!   is full;
//! - [`meta`] holds [`MetaDb`], the S3 layer's SQLite database (`DATA/s3.sqlite`): buckets and
//!   per-object ETag, Content-Type, standard headers and user metadata, written between the store's staging fsync
//!   and its catalog commit (`Store::put_with`), keyed by the BLAKE3 the store computed;
//! - [`metrics`] holds [`metrics::S3Metrics`]: Prometheus metrics of a running server (groups'
//!   phases and spin counts, queued jobs, disks active against the budget, S3 answers by status)
//!   and the `GET /metrics` listener;
//! - [`multipart`] holds multipart upload (create, parts, copy parts, complete, abort, list):
//!   open uploads and parts as rows of the [`MetaDb`], part bytes as files in
//!   `DATA/s3-multipart/`, completion as one store PUT through the PutObject path; uploads
//!   older than `S3Settings::abandon_uploads_after_s` are aborted by a sweeper
//!   ([`multipart::expiry`]);
//! - [`body`] streams a request body into the store, hashing what S3 needs (MD5 for the ETag
//!   unless `EtagMode::Blake3`, `x-amz-checksum-*`; a large body on a thread of its own) and
//!   refusing bad digests and bodies over the limit before anything is committed;
//! - [`headers`] holds the standard object headers (Cache-Control, Content-Disposition,
//!   Content-Encoding, Content-Language, Expires) kept with each object, and the `response-*`
//!   overrides of a signed GET or HEAD;
//! - [`lifecycle`] holds bucket lifecycle rules (expiry by age or date, abort of incomplete
//!   multipart uploads, by prefix) and the sweeper that applies them;
//! - `conditions` evaluates conditional requests (`If-Match`, `If-None-Match`,
//!   `If-(Un)Modified-Since`, the copy-source forms, and conditional writes);
//! - [`hosts`] holds [`BucketDomains`]: virtual-hosted-style addressing (`<bucket>.<domain>`
//!   hosts) for the server's configured domains;
//! - [`names`] maps bucket and key to the store key `"<bucket>/<key>"` (keys never become paths);
//! - [`restore`] holds the per-bucket restore mode (`sync`/`async`, set by bucket tagging) and
//!   [`Restorer`]: RestoreObject, restored copies in `DATA/s3-restored`, their expiry;
//! - [`tier`] holds [`RestoreTier`]: what RestoreObject's Tier means here, and the wait of a
//!   Bulk restore for a spin-up of its group that happens anyway;
//! - [`access`] holds public-read buckets: each bucket's ACL (`private` or `public-read`, set by
//!   CreateBucket's `x-amz-acl` or PutBucketAcl) and [`PublicReadAccess`], the s3s access check
//!   that lets anonymous clients read (GET, HEAD, list) a public-read bucket and nothing else;
//! - [`credentials`] holds the server's key pair (given, saved, or generated once);
//! - [`server`] serves the s3s service with SigV4 authentication (anonymous reads of public-read
//!   buckets aside), over plain HTTP or TLS, and
//!   stops gracefully;
//! - [`tls`] holds [`TlsConfig`]: the optional rustls (ring) configuration from PEM files and the
//!   handshake timeout.
//!
//! Dependencies point one way: spinwise-cli → spinwise-s3 → spinwise-store.

pub mod access;
pub mod body;
pub mod bucket_cache;
pub(crate) mod conditions;
pub mod credentials;
pub mod headers;
pub mod hosts;
pub mod lifecycle;
pub(crate) mod listing;
pub mod meta;
pub mod metrics;
pub mod multipart;
pub mod names;
pub mod restore;
pub mod server;
pub mod service;
pub(crate) mod sweeper;
pub mod tier;
pub mod tls;

pub use access::{BucketAcl, MAX_PRESIGNED_LIFETIME_S, PublicReadAccess};
pub use credentials::{CredentialSource, Credentials, CredentialsError};
pub use hosts::{BucketDomains, DomainError};
pub use meta::{META_FILE, MetaDb, MetaError};
pub use restore::{RestoreMode, Restorer};
pub use server::{RunningServer, build_service, build_service_with};
pub use service::{
    DEFAULT_EXPEDITED_MAX_ONGOING, DEFAULT_EXPEDITED_PER_HOUR, EtagMode, S3Settings, SpinwiseS3,
};
pub use tier::RestoreTier;
pub use tls::{TlsConfig, TlsError};
