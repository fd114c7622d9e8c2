//! [`SpinwiseS3`]: the s3s [`S3`] trait over the store. Buckets and per-object S3 metadata live
//! in the [`MetaDb`]; bytes and existence in the store (store key `"<bucket>/<key>"`, see
//! [`crate::names`]). Multipart calls delegate to [`crate::multipart`].
//!
//! Invariants:
//! - PUTs (and copies) of one store key run one at a time (striped key locks), so the metadata
//!   row a PUT keeps is the one of the object it committed, and the cleanup after it never
//!   removes the row of a PUT still in flight;
//! - PUTs and copies hold the bucket gate shared and DeleteBucket holds it exclusively, so an
//!   object is never committed into a bucket being deleted;
//! - GET headers describe the bytes streamed: the record comes from the reader that streams them;
//! - conditional requests (crate::conditions) are checked before a cold object's bytes are
//!   opened, so a 304/412 never waits for a spin-up, and again on the object served; conditional
//!   writes and deletes are checked under the key's lock, so none races another write;
//! - a full scheduler queue or full staging answers 503 SlowDown with Retry-After; nothing of
//!   such a request is stored.
//! - a GET (or a copy's source read) of a migrated object is served from its restored copy when
//!   one is usable, refused
//!   (403 InvalidObjectState) in an async bucket when none is, and read through the scheduler
//!   otherwise; a PUT or DELETE drops the key's restored copy ([`crate::restore`]).

use crate::body::{BodyStream, Digests, Expected, Upload, Wanted};
use crate::bucket_cache::{BucketCache, CachedBucket, Lookup};
use crate::conditions::{ReadConditions, WriteCondition, check_delete};
use crate::headers::{
    ObjectHeaders, ResponseHeaders, ResponseOverrides, object_headers, response_overrides,
    show_headers,
};
use crate::lifecycle::LifecycleSweeper;
use crate::listing::KeyEncoding;
use crate::meta::{MetaDb, MetaError, ObjectMeta};
use crate::multipart::Multipart;
use crate::multipart::expiry::UploadExpiry;
use crate::names::{
    after_prefix, bucket_prefix, check_bucket, decode_token, encode_token, store_key,
};
use crate::restore::{RestoreMode, RestoreSettings, RestoredSource, Restorer};
use base64::Engine as _;
use bytes::Bytes;
use futures::{Stream, TryStreamExt as _};
use s3s::dto::*;
use s3s::{S3, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};
use spinwise_catalog::{ObjectLocation, ObjectRecord, Tier};
use spinwise_store::staging::StagingError;
use spinwise_store::{ContentCheck, ObjectReader, SqliteStore, StoreError};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, UNIX_EPOCH};
use tokio::sync::{Mutex, RwLock, mpsc};

/// Key-lock stripes: PUTs of different keys rarely share one.
const KEY_LOCK_STRIPES: usize = 64;
/// The most keys one list page returns (S3's own cap).
const MAX_LIST_KEYS: i32 = 1000;
/// Keys one DeleteObjects request may name, as S3 allows (more is `MalformedXML`).
const MAX_DELETE_KEYS: usize = 1000;
/// Chunks a GET reads ahead of the client.
const GET_READ_AHEAD_CHUNKS: usize = 2;
/// How often a read looks again when its key's object was replaced between finding the object
/// and reading its metadata row or opening its bytes. Each look takes a few milliseconds: only a
/// key overwritten faster than that, without pause, runs out of them (503 SlowDown then).
const READ_ATTEMPTS: u32 = 16;

/// Limits and advice of the S3 layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Settings {
    /// The largest single PUT body (default 5 GiB, as S3).
    pub max_put_bytes: u64,
    /// The `Retry-After` (seconds) sent with 503 SlowDown.
    pub retry_after_s: u32,
    /// Multipart: the smallest part other than the last (default 5 MiB, as S3).
    pub min_part_bytes: u64,
    /// Multipart: the largest part (default 5 GiB, as S3).
    pub max_part_bytes: u64,
    /// The largest object a multipart upload may complete (default 5 TiB, as S3; the store's
    /// staging limit caps it in practice).
    pub max_object_bytes: u64,
    /// Multipart uploads open at once, over all buckets (default 1000).
    pub max_open_uploads: u64,
    /// Multipart: an upload started more than this many seconds ago is aborted (default 7 days,
    /// 604,800; 0: never), freeing its part files and its open-upload slot
    /// ([`crate::multipart::expiry`]).
    pub abandon_uploads_after_s: u64,
    /// The restore mode a new bucket gets (`sync`; see [`crate::restore`]).
    pub default_restore_mode: RestoreMode,
    /// The length of a RestoreObject "day" in seconds (86400; tests use less).
    pub restore_day_s: u64,
    /// The most `Days` a RestoreObject may ask for.
    pub restore_max_days: i32,
    /// The most bytes restored copies may hold (`DATA/s3-restored`); a restore over it is
    /// refused with 503 SlowDown.
    pub restore_capacity_bytes: u64,
    /// How long a Bulk restore waits for a spin-up of its group that happens anyway before it
    /// queues its read (seconds; default 12 h, the upper end of S3 Glacier's Bulk retrievals).
    pub restore_bulk_wait_s: u64,
    /// The most restores ongoing at once (each is a task and, for Bulk, a wait); one more is
    /// refused with 503 SlowDown.
    pub restore_max_ongoing: u64,
    /// The most Expedited restores ongoing at once; one more is refused with 503
    /// GlacierExpeditedRetrievalNotAvailable (each may cost a group switch that batching would
    /// have saved, so they are few; docs/s3.md "Restore tiers").
    pub restore_expedited_max_ongoing: u64,
    /// The most Expedited restores started an hour (bursts up to the ongoing limit); one more
    /// is refused with 503 GlacierExpeditedRetrievalNotAvailable and a Retry-After of when the
    /// next may start; 0 refuses every Expedited restore.
    pub restore_expedited_per_hour: u64,
    /// What a PutObject or CopyObject ETag is (multipart ETags are always S3's MD5 form).
    pub etag_mode: EtagMode,
    /// The length of a lifecycle rule's "day" in seconds (86400: rules count days and expire
    /// at midnight UTC, as S3's; tests use less). See [`crate::lifecycle`].
    pub lifecycle_day_s: u64,
    /// The tier of a write that names no storage class: `Warm`, since S3's default class is
    /// `STANDARD` (online); `Cold` makes every unclassed write go to the sleeping disks, as all
    /// writes did before tiers (`spinwise serve --default-storage-class GLACIER`).
    pub default_tier: Tier,
}

/// The default for [`S3Settings::restore_expedited_max_ongoing`]: 8. Each Expedited restore
/// may make a class switch groups once before the standard reads it passes (two transitions,
/// ~20 s on the Pelican rack), so 8 at once delay the standard reads of a class by at most a few
/// minutes, while one restore per disk group of the laptop preset can still go ahead.
pub const DEFAULT_EXPEDITED_MAX_ONGOING: u64 = 8;

/// The default for [`S3Settings::restore_expedited_per_hour`]: 36, what one AWS provisioned
/// capacity unit guarantees (three Expedited retrievals every five minutes). That is 0.01 a
/// second, a fifth of the highest steady rate that left the standard reads unharmed on the
/// pelican rack (`spinwise experiment expedited-restores`, docs/experiments.md).
pub const DEFAULT_EXPEDITED_PER_HOUR: u64 = 36;

/// How single-PUT ETags are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EtagMode {
    /// The MD5 of the bytes, as S3 (clients such as rclone check it). MD5 runs at ~720 MB/s
    /// on one core here: on a small machine it is the most expensive step of a large PUT.
    #[default]
    Md5,
    /// The store's BLAKE3 content hash (64 hex digits), computed anyway: no MD5 unless the
    /// client sends Content-MD5. Clients that treat a 32-digit ETag as an MD5 see a 64-digit
    /// one and skip that check, as they do for multipart ETags.
    Blake3,
}

impl std::str::FromStr for EtagMode {
    type Err = String;

    fn from_str(text: &str) -> Result<EtagMode, String> {
        match text {
            "md5" => Ok(EtagMode::Md5),
            "blake3" => Ok(EtagMode::Blake3),
            other => Err(format!(
                "unknown ETag mode `{other}`: `md5` (S3's, the default) or `blake3`"
            )),
        }
    }
}

impl S3Settings {
    fn restore_settings(&self) -> RestoreSettings {
        RestoreSettings {
            default_mode: self.default_restore_mode,
            day_s: self.restore_day_s,
            max_days: self.restore_max_days,
            capacity_bytes: self.restore_capacity_bytes,
            bulk_wait_s: self.restore_bulk_wait_s,
            max_ongoing: self.restore_max_ongoing,
            expedited_max_ongoing: self.restore_expedited_max_ongoing,
            expedited_per_hour: self.restore_expedited_per_hour,
        }
    }
}

impl Default for S3Settings {
    fn default() -> S3Settings {
        S3Settings {
            max_put_bytes: 5 << 30,
            retry_after_s: 5,
            min_part_bytes: 5 << 20,
            max_part_bytes: 5 << 30,
            max_object_bytes: 5 << 40,
            max_open_uploads: 1000,
            abandon_uploads_after_s: 7 * 86_400,
            default_restore_mode: RestoreMode::Sync,
            restore_day_s: 86_400,
            restore_max_days: 30_000,
            restore_capacity_bytes: 16 << 30,
            restore_bulk_wait_s: 12 * 3600,
            restore_max_ongoing: 10_000,
            restore_expedited_max_ongoing: DEFAULT_EXPEDITED_MAX_ONGOING,
            restore_expedited_per_hour: DEFAULT_EXPEDITED_PER_HOUR,
            etag_mode: EtagMode::Md5,
            lifecycle_day_s: 86_400,
            default_tier: Tier::Warm,
        }
    }
}

/// Striped per-key locks: writes, deletes and lifecycle expiry of one key take turns.
pub(crate) struct KeyLocks(Vec<Mutex<()>>);

impl KeyLocks {
    fn new() -> KeyLocks {
        KeyLocks((0..KEY_LOCK_STRIPES).map(|_| Mutex::new(())).collect())
    }

    /// The lock of `store_key`'s stripe.
    pub(crate) fn of(&self, store_key: &str) -> &Mutex<()> {
        let mut hasher = std::hash::DefaultHasher::new();
        store_key.hash(&mut hasher);
        &self.0[(hasher.finish() % KEY_LOCK_STRIPES as u64) as usize]
    }
}

/// Why [`remove_object`] failed.
pub(crate) enum Removed {
    Store(StoreError),
    Meta(MetaError),
}

/// Deletes `store_key`'s object, its metadata rows and any restored copy; an absent key is
/// success. The caller holds the key's lock (DELETE, DeleteObjects, lifecycle expiry).
pub(crate) async fn remove_object(
    store: &SqliteStore,
    meta: &MetaDb,
    restorer: &Restorer,
    store_key: &str,
) -> Result<(), Removed> {
    match store.delete(store_key).await {
        Ok(_) | Err(StoreError::NoSuchKey { .. }) => {}
        Err(error) => return Err(Removed::Store(error)),
    }
    meta.delete_object_meta_except(store_key, None)
        .await
        .map_err(Removed::Meta)?;
    restorer.forget(store_key, None).await;
    Ok(())
}

pub struct SpinwiseS3 {
    pub(crate) store: Arc<SqliteStore>,
    pub(crate) meta: MetaDb,
    pub(crate) settings: S3Settings,
    pub(crate) key_locks: Arc<KeyLocks>,
    pub(crate) bucket_gate: RwLock<()>,
    /// Existing buckets and their lifecycle rules ([`crate::bucket_cache`]).
    pub(crate) buckets: BucketCache,
    pub(crate) multipart: Arc<Multipart>,
    restorer: Arc<Restorer>,
    /// The sweeper of abandoned multipart uploads holds a weak handle to this (`None`: never).
    pub(crate) upload_expiry: Option<Arc<UploadExpiry>>,
    /// Applies the buckets' lifecycle rules (set once the service is built); its task holds a
    /// weak handle, so dropping the service stops it.
    lifecycle: Option<Arc<LifecycleSweeper>>,
}

impl std::fmt::Debug for SpinwiseS3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinwiseS3")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What a PUT records besides the bytes.
pub(crate) struct Described {
    pub(crate) content_type: Option<String>,
    pub(crate) user_metadata: BTreeMap<String, String>,
    pub(crate) headers: ObjectHeaders,
    /// The ETag to record instead of the body's MD5 (a completed multipart upload's).
    pub(crate) etag: Option<String>,
}

/// An object as S3 shows it: the store's record and the S3 layer's row.
pub(crate) struct ObjectView {
    pub(crate) record: ObjectRecord,
    pub(crate) meta: Option<ObjectMeta>,
}

impl ObjectView {
    pub(crate) fn etag(&self) -> Option<ETag> {
        self.meta.as_ref().map(|m| ETag::Strong(m.etag.clone()))
    }
    pub(crate) fn content_type(&self) -> Option<String> {
        self.meta.as_ref().and_then(|m| m.content_type.clone())
    }
    /// The headers a GET or HEAD answers with, `overrides` applied.
    pub(crate) fn shown_headers(&self, overrides: ResponseOverrides) -> ResponseHeaders {
        let stored = self.meta.as_ref().map(|m| &m.headers);
        ResponseHeaders::shown(
            self.content_type(),
            stored.unwrap_or(&ObjectHeaders::default()),
            overrides,
        )
    }
    /// What a CopyObject with the `COPY` directive gives its target.
    pub(crate) fn described(&self) -> Described {
        let meta = self.meta.as_ref();
        Described {
            etag: None,
            content_type: self.content_type(),
            user_metadata: meta.map(|m| m.user_metadata.clone()).unwrap_or_default(),
            headers: meta.map(|m| m.headers.clone()).unwrap_or_default(),
        }
    }
    pub(crate) fn user_metadata(&self) -> Option<Metadata> {
        self.meta
            .as_ref()
            .filter(|m| !m.user_metadata.is_empty())
            .map(|m| m.user_metadata.clone().into_iter().collect())
    }
    pub(crate) fn last_modified(&self) -> Timestamp {
        last_modified(&self.record)
    }
    pub(crate) fn storage_class(&self, mode: RestoreMode) -> &'static str {
        storage_class(&self.record, mode)
    }
}

/// The storage classes S3 knows. A write may name any of them and every object is stored
/// the same way: `STANDARD` on the staging log, then cold on the sleeping disks by the store's
/// upkeep (docs/s3.md "Storage classes and cold reads"); a client asking for `GLACIER` gets what
/// it asked for, soon. Any other name is S3's `400 InvalidStorageClass`.
const KNOWN_STORAGE_CLASSES: [&str; 11] = [
    StorageClass::STANDARD,
    StorageClass::REDUCED_REDUNDANCY,
    StorageClass::STANDARD_IA,
    StorageClass::ONEZONE_IA,
    StorageClass::INTELLIGENT_TIERING,
    StorageClass::GLACIER,
    StorageClass::DEEP_ARCHIVE,
    StorageClass::GLACIER_IR,
    StorageClass::OUTPOSTS,
    StorageClass::SNOW,
    StorageClass::EXPRESS_ONEZONE,
];

/// Refuses a write's `x-amz-storage-class` that S3 does not know.
pub(crate) fn check_storage_class(class: Option<&StorageClass>) -> S3Result<()> {
    match class {
        Some(class) if !KNOWN_STORAGE_CLASSES.contains(&class.as_str()) => {
            Err(S3Error::with_message(
                S3ErrorCode::InvalidStorageClass,
                format!(
                    "The storage class you specified is not valid: {}",
                    class.as_str()
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// The classes whose objects go to the sleeping disks; every other class S3 knows is online
/// and stays in the warm tier (docs/s3.md "Storage classes").
const COLD_STORAGE_CLASSES: [&str; 3] = [
    StorageClass::GLACIER,
    StorageClass::DEEP_ARCHIVE,
    StorageClass::GLACIER_IR,
];

/// The tier of a write naming `class`, for a server's default (`serve --default-storage-class`):
/// an error names the classes S3 knows when `class` is none of them.
pub fn tier_of_known_class(class: &str) -> Result<Tier, String> {
    if KNOWN_STORAGE_CLASSES.contains(&class) {
        Ok(tier_of_class(Some(class), Tier::Warm))
    } else {
        Err(format!(
            "{class:?} is not a storage class S3 knows ({})",
            KNOWN_STORAGE_CLASSES.join(", ")
        ))
    }
}

/// The tier a write naming `class` goes to (`default` when it names none).
pub fn tier_of_class(class: Option<&str>, default: Tier) -> Tier {
    match class {
        None => default,
        Some(class) if COLD_STORAGE_CLASSES.contains(&class) => Tier::Cold,
        Some(_) => Tier::Warm,
    }
}

/// `STANDARD` while the object is staged; once migrated to sleeping disks, the cold class of its
/// bucket's restore mode ([`RestoreMode::cold_storage_class`]).
pub fn storage_class(record: &ObjectRecord, mode: RestoreMode) -> &'static str {
    match record.location {
        ObjectLocation::Staged { .. } => StorageClass::STANDARD,
        ObjectLocation::Migrated { .. } => mode.cold_storage_class(),
    }
}

fn last_modified(record: &ObjectRecord) -> Timestamp {
    let ms = u64::try_from(record.created_unix_ms).unwrap_or(0);
    Timestamp::from(UNIX_EPOCH + Duration::from_millis(ms))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 503 SlowDown for a read that found `store_key` replaced on every look ([`READ_ATTEMPTS`]).
fn overwritten(store_key: &str, retry_after_s: u32) -> S3Error {
    slow_down(
        format!("{store_key:?} is being overwritten faster than it can be read; retry"),
        retry_after_s,
    )
}

pub(crate) fn internal(error: impl std::fmt::Display) -> S3Error {
    tracing::error!(%error, "S3 request failed");
    S3Error::with_message(S3ErrorCode::InternalError, error.to_string())
}

pub(crate) fn meta_error(error: MetaError) -> S3Error {
    internal(error)
}

/// 503 SlowDown with `Retry-After`.
pub(crate) fn slow_down(message: String, retry_after_s: u32) -> S3Error {
    let mut error = S3Error::with_message(S3ErrorCode::SlowDown, message);
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from(retry_after_s),
    );
    error.set_headers(headers);
    error
}

/// The S3 error for a store failure.
pub fn store_error(error: StoreError, retry_after_s: u32) -> S3Error {
    match error {
        StoreError::NoSuchKey { .. } => S3Error::new(S3ErrorCode::NoSuchKey),
        StoreError::KeyLength { .. } | StoreError::Staging(StagingError::KeyLength { .. }) => {
            S3Error::with_message(S3ErrorCode::KeyTooLongError, error.to_string())
        }
        StoreError::Range { .. } | StoreError::Staging(StagingError::Range { .. }) => {
            S3Error::with_message(S3ErrorCode::InvalidRange, error.to_string())
        }
        StoreError::Busy { .. }
        | StoreError::WarmFull { .. }
        | StoreError::Staging(StagingError::Full { .. }) => {
            slow_down(error.to_string(), retry_after_s)
        }
        other => internal(other),
    }
}

pub(crate) fn decode_content_md5(text: &str) -> S3Result<[u8; 16]> {
    let invalid = || {
        S3Error::with_message(
            S3ErrorCode::InvalidDigest,
            "the Content-MD5 you specified is not the base64 of 16 bytes",
        )
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| invalid())?;
    <[u8; 16]>::try_from(bytes.as_slice()).map_err(|_| invalid())
}

/// The `x-amz-checksum-*` headers of a PutObject or UploadPart input (the same fields in both).
macro_rules! checksum_headers {
    ($input:expr) => {
        s3s::dto::Checksum {
            checksum_crc32: $input.checksum_crc32,
            checksum_crc32c: $input.checksum_crc32c,
            checksum_crc64nvme: $input.checksum_crc64nvme,
            checksum_sha1: $input.checksum_sha1,
            checksum_sha256: $input.checksum_sha256,
            ..Default::default()
        }
    };
}
pub(crate) use checksum_headers;

/// What a body's sender promised: its Content-MD5, checksum headers, and the trailers it
/// announced (checked by [`crate::body`] once the body has been read).
pub(crate) fn expected_of(
    content_md5: Option<&str>,
    checksums: Checksum,
    trailer_names: Vec<String>,
    trailers: Option<s3s::TrailingHeaders>,
) -> S3Result<Expected> {
    Ok(Expected {
        content_md5: content_md5.map(decode_content_md5).transpose()?,
        checksums,
        trailer_names,
        trailers,
    })
}

/// The bucket and key a CopyObject or UploadPartCopy reads from (access points: not supported).
pub(crate) fn copy_source(source: &CopySource) -> S3Result<(String, String)> {
    match source {
        CopySource::Bucket { bucket, key, .. } => Ok((bucket.to_string(), key.to_string())),
        _ => Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "copies from access points are not supported",
        )),
    }
}

/// A request body as the byte stream the store reads (no body: empty).
pub(crate) fn body_stream(body: Option<StreamingBlob>) -> BodyStream {
    match body {
        Some(body) => Box::pin(body.map_err(|error| io::Error::other(error.to_string()))),
        None => Box::pin(futures::stream::empty()),
    }
}

/// The checksum algorithms announced as trailers (`x-amz-trailer`), lower-case.
pub(crate) fn trailer_names(headers: &http::HeaderMap) -> Vec<String> {
    headers
        .get_all("x-amz-trailer")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

/// A store GET as a body stream: a task reads ahead a few chunks, so a client that goes away
/// stops the read (the channel closes).
pub(crate) fn reader_stream(mut reader: ObjectReader) -> BodyStream {
    let (sender, receiver) = mpsc::channel(GET_READ_AHEAD_CHUNKS);
    tokio::spawn(async move {
        loop {
            let next = reader.next_chunk().await;
            let end = !matches!(next, Ok(Some(_)));
            let item = match next {
                Ok(Some(chunk)) => Ok(chunk),
                Ok(None) => break,
                Err(error) => {
                    tracing::error!(%error, "reading an object for S3");
                    Err(io::Error::other(error.to_string()))
                }
            };
            if sender.send(item).await.is_err() || end {
                break;
            }
        }
    });
    Box::pin(ChunkStream(receiver))
}

pub(crate) struct ChunkStream(pub(crate) mpsc::Receiver<Result<Bytes, io::Error>>);

impl Stream for ChunkStream {
    type Item = Result<Bytes, io::Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

impl SpinwiseS3 {
    /// The S3 layer over `store`, its metadata database at `meta`. Sweeps metadata rows that
    /// describe no stored object (left by PUTs a crash or a refusal interrupted), aborts
    /// multipart uploads older than `settings.abandon_uploads_after_s` and starts their sweeper.
    pub async fn new(
        store: Arc<SqliteStore>,
        meta: MetaDb,
        settings: S3Settings,
    ) -> Result<SpinwiseS3, MetaError> {
        let store_dir = store.data_dir().to_path_buf();
        let restorer = Restorer::start(
            Arc::clone(&store),
            &meta,
            settings.restore_settings(),
            settings.retry_after_s,
        )
        .await?;
        let mut service = SpinwiseS3 {
            store,
            meta,
            settings,
            restorer,
            key_locks: Arc::new(KeyLocks::new()),
            bucket_gate: RwLock::new(()),
            buckets: BucketCache::default(),
            multipart: Arc::new(Multipart::new(&store_dir)),
            upload_expiry: None,
            lifecycle: None,
        };
        let swept = service.sweep_orphans().await?;
        if swept > 0 {
            tracing::info!(
                rows = swept,
                "removed S3 metadata rows of objects not stored"
            );
        }
        service.sweep_multipart().await?;
        service.start_upload_expiry().await?;
        service.lifecycle = Some(LifecycleSweeper::start(&service));
        Ok(service)
    }

    pub fn store(&self) -> &Arc<SqliteStore> {
        &self.store
    }
    pub fn meta(&self) -> &MetaDb {
        &self.meta
    }
    /// The sweeper applying the buckets' lifecycle rules.
    pub fn lifecycle(&self) -> Option<&Arc<LifecycleSweeper>> {
        self.lifecycle.as_ref()
    }

    /// The restores (RestoreObject, restored copies, bucket restore modes).
    pub fn restorer(&self) -> &Arc<Restorer> {
        &self.restorer
    }
    /// The expiry of abandoned multipart uploads (`None` when they never expire).
    pub fn upload_expiry(&self) -> Option<&Arc<UploadExpiry>> {
        self.upload_expiry.as_ref()
    }

    /// The next wakes of the background sweepers (restore expiry, abandoned uploads, lifecycle
    /// rules): a test that advanced the store's manual clock awaits each past it.
    pub fn sweepers(&self) -> Vec<spinwise_store::clock::Paced> {
        let restore = Some(self.restorer.paced().clone());
        let uploads = self.upload_expiry.as_ref().map(|e| e.paced().clone());
        let lifecycle = self.lifecycle.as_ref().map(|l| l.paced().clone());
        [restore, uploads, lifecycle]
            .into_iter()
            .flatten()
            .collect()
    }

    /// Removes metadata rows whose (key, content hash) the store does not hold; returns how many.
    pub async fn sweep_orphans(&self) -> Result<u64, MetaError> {
        let mut removed = 0;
        let mut after: Option<(String, [u8; 32])> = None;
        loop {
            let page = self
                .meta
                .object_meta_page(after.as_ref().map(|(k, h)| (k.as_str(), h)), 256)
                .await?;
            let Some(last) = page.last().cloned() else {
                return Ok(removed);
            };
            for (key, hash) in &page {
                let stored = match self.store.stat(key).await {
                    Ok(record) => Some(record.content_hash),
                    Err(StoreError::NoSuchKey { .. }) => None,
                    Err(error) => {
                        tracing::warn!(%error, key, "sweeping S3 metadata: leaving the row");
                        continue;
                    }
                };
                if stored.as_ref() != Some(hash) {
                    self.meta.delete_one(key, hash).await?;
                    removed += 1;
                }
            }
            after = Some(last);
        }
    }

    fn key_lock(&self, store_key: &str) -> &Mutex<()> {
        self.key_locks.of(store_key)
    }

    pub(crate) fn store_error(&self, error: StoreError) -> S3Error {
        store_error(error, self.settings.retry_after_s)
    }

    pub(crate) async fn require_bucket(&self, bucket: &str) -> S3Result<()> {
        self.existing_bucket(bucket).await.map(drop)
    }

    /// `bucket` and its lifecycle rules (NoSuchBucket when it does not exist), from the
    /// [`BucketCache`] when it knows them.
    pub(crate) async fn existing_bucket(&self, bucket: &str) -> S3Result<CachedBucket> {
        check_bucket(bucket)?;
        let epoch = match self.buckets.lookup(bucket) {
            Lookup::Hit(cached) => return Ok(cached),
            Lookup::Miss(epoch) => epoch,
        };
        if self
            .meta
            .bucket(bucket)
            .await
            .map_err(meta_error)?
            .is_none()
        {
            return Err(S3Error::with_message(
                S3ErrorCode::NoSuchBucket,
                format!("no bucket `{bucket}`"),
            ));
        }
        let lifecycle = self.meta.lifecycle(bucket).await.map_err(meta_error)?;
        let cached = CachedBucket {
            lifecycle: lifecycle.map(Arc::new),
        };
        self.buckets.fill(bucket, epoch, cached.clone());
        Ok(cached)
    }

    /// Streams `stream` into the store under `store_key`, its metadata row written between the
    /// store's staging fsync and its catalog commit ([`Store::put_with`]), so a committed object
    /// always has its row, keyed by the BLAKE3 the store computed. Returns the record, the ETag
    /// and the checksums the client asked for.
    pub(crate) async fn ingest(
        &self,
        target: WriteTarget<'_>,
        stream: BodyStream,
        expected: Expected,
        described: Described,
        limit_bytes: u64,
    ) -> S3Result<Ingested> {
        let WriteTarget {
            bucket,
            store_key,
            condition,
        } = target;
        let _bucket_open = self.bucket_gate.read().await;
        self.require_bucket(bucket).await?;
        let _key_held = self.key_lock(store_key).lock().await;
        self.check_write(store_key, &condition).await?;
        let etag_mode = self.settings.etag_mode;
        let wanted = Wanted {
            md5: described.etag.is_none() && etag_mode == EtagMode::Md5,
            blake3: false,
        };
        let given_etag = described.etag.clone();
        let stored_class = described.headers.storage_class.clone();
        let (upload, outcome) = Upload::new(stream, expected, wanted, limit_bytes);
        let meta = &self.meta;
        let write_row = |record: &ObjectRecord| {
            let digests = outcome.digests();
            let record = record.clone();
            let outcome = outcome.clone();
            async move {
                let digests = digests.ok_or("the upload ended without its digests")?;
                let etag = described
                    .etag
                    .unwrap_or_else(|| made_etag(etag_mode, &digests, &record));
                let row = ObjectMeta {
                    store_key: record.key,
                    content_hash: record.content_hash,
                    size_bytes: record.size_bytes,
                    etag,
                    content_type: described.content_type,
                    user_metadata: described.user_metadata,
                    headers: described.headers,
                    written_unix_ms: self.store.now_unix_ms(),
                };
                meta.put_object_meta(&row).await.map_err(|error| {
                    let reason = error.to_string();
                    outcome.refuse(meta_error(error));
                    reason
                })
            }
        };
        let tier = tier_of_class(stored_class.as_deref(), self.settings.default_tier);
        let record = match self
            .store
            .put_with(store_key, tier, upload, write_row)
            .await
        {
            Ok(record) => record,
            Err(error) => {
                return Err(outcome.refusal().unwrap_or_else(|| self.store_error(error)));
            }
        };
        let digests = outcome
            .digests()
            .expect("a committed PUT wrote its row from these digests");
        self.forget_replaced(&record).await;
        let etag = given_etag.unwrap_or_else(|| made_etag(etag_mode, &digests, &record));
        Ok(Ingested {
            record,
            etag,
            checksums: digests.checksums,
        })
    }

    /// After a commit of `record`: drops what belonged to the object it replaced (metadata rows
    /// of other content, a restored copy). A failure leaves only a stale row or copy behind,
    /// which never describes the committed object (both are keyed by content hash), so it is
    /// logged rather than failing a PUT that is already durable.
    async fn forget_replaced(&self, record: &ObjectRecord) {
        let store_key = record.key.as_str();
        if let Err(error) = self
            .meta
            .delete_object_meta_except(store_key, Some(&record.content_hash))
            .await
        {
            tracing::warn!(%error, store_key, "removing replaced S3 metadata rows");
        }
        self.restorer
            .forget(store_key, Some(&record.content_hash))
            .await;
    }

    /// Checks a conditional write against the key's current object. Called under the key's
    /// lock, so no other write of the key lands between this check and the commit.
    async fn check_write(&self, store_key: &str, condition: &WriteCondition) -> S3Result<()> {
        if *condition == WriteCondition::Always {
            return Ok(());
        }
        let current = self.current_view(store_key).await?;
        let etag = current.as_ref().map(ObjectView::etag);
        condition.check(etag.as_ref().map(Option::as_ref))
    }

    /// The key's object, if it holds one.
    async fn current_view(&self, store_key: &str) -> S3Result<Option<ObjectView>> {
        match self.stat_view(store_key).await {
            Ok(view) => Ok(Some(view)),
            Err(error) if *error.code() == S3ErrorCode::NoSuchKey => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Checks read `conditions` against the key's current object before any of its bytes are
    /// opened, so a request that fails them never waits for a spin-up. (The served object is
    /// checked again: it may be replaced in between.)
    pub(crate) async fn precheck(
        &self,
        store_key: &str,
        conditions: &ReadConditions,
    ) -> S3Result<()> {
        if conditions.is_empty() {
            return Ok(());
        }
        let view = self.stat_view(store_key).await?;
        check_read(conditions, view.etag().as_ref(), &view.last_modified())
    }

    /// A copy's source (CopyObject, UploadPartCopy): `conditions` checked before the bytes are
    /// opened and again on the object opened. A migrated source is read from its restored copy
    /// when there is one and refused in an async bucket when there is not (S3 copies a GLACIER
    /// object only once restored); otherwise the store streams it.
    pub(crate) async fn open_copy_source(
        &self,
        source_bucket: &str,
        store_key: &str,
        range: Option<&Range>,
        conditions: &ReadConditions,
    ) -> S3Result<RestoredSource> {
        self.precheck(store_key, conditions).await?;
        let found = self.stat_record(store_key).await?;
        let source = match self.restored_source(source_bucket, &found, range).await? {
            Some(restored) => restored,
            None => {
                let (reader, view) = self.open_read(found, range).await?;
                RestoredSource {
                    bytes: reader.range(),
                    stream: reader_stream(reader),
                    view,
                }
            }
        };
        let view = &source.view;
        check_read(conditions, view.etag().as_ref(), &view.last_modified())?;
        Ok(source)
    }

    /// Opens the object `found` was read for (all, or `range`): the reader and the view of the
    /// object it streams. `found` is the key's record as the caller last read it; when the key
    /// has moved on by the time the bytes are opened, its record is read again.
    pub(crate) async fn open_read(
        &self,
        found: ObjectRecord,
        range: Option<&Range>,
    ) -> S3Result<(ObjectReader, ObjectView)> {
        let store_key = found.key.clone();
        let mut found = Some(found);
        for _ in 0..READ_ATTEMPTS {
            let record = match found.take() {
                Some(record) => record,
                None => self.stat_record(&store_key).await?,
            };
            let bytes = match range {
                // A range naming no byte is unsatisfiable too (RFC 9110 §14.1.1: a suffix range
                // of an empty object): it was answered 206 with `Content-Range: bytes 0-0/0`,
                // a last byte past the end (found 2026-12-01).
                Some(range) => Some(
                    range
                        .check(record.size_bytes)
                        .ok()
                        .filter(|bytes| !bytes.is_empty())
                        .ok_or_else(|| {
                            S3Error::with_message(
                                S3ErrorCode::InvalidRange,
                                format!(
                                    "the range is outside the object's {} bytes",
                                    record.size_bytes
                                ),
                            )
                        })?,
                ),
                None => None,
            };
            let reader = self
                .store
                .get_with(&store_key, bytes, ContentCheck::ChunksOnly)
                .await
                .map_err(|e| self.store_error(e))?;
            if reader.record().content_hash != record.content_hash {
                continue; // replaced meanwhile: the range was checked against other bytes
            }
            if let Some(view) = self.view(reader.record().clone()).await? {
                return Ok((reader, view));
            }
        }
        Err(overwritten(&store_key, self.settings.retry_after_s))
    }

    /// `record` with the metadata row written with it, or `None` when the key no longer holds
    /// that object (replaced or deleted since `record` was read: its row went with it).
    ///
    /// A PUT writes its row before the catalog commits the object, and drops the rows of what
    /// it replaced only after that commit; a DELETE drops the rows after the object. So a row is
    /// missing only for an object the key has left, which a reader must not describe with
    /// another version's row nor with none (it looks again), or for an object that never had
    /// one (a broken invariant: logged, served without).
    pub(crate) async fn view(&self, record: ObjectRecord) -> S3Result<Option<ObjectView>> {
        if let Some(meta) = self.object_meta(&record).await? {
            return Ok(Some(ObjectView {
                record,
                meta: Some(meta),
            }));
        }
        match self.store.stat(&record.key).await {
            Ok(current) if current.content_hash == record.content_hash => {}
            Ok(_) | Err(StoreError::NoSuchKey { .. }) => return Ok(None),
            Err(error) => return Err(self.store_error(error)),
        }
        // Still the key's content: written again meanwhile (with a new row), or never described.
        let meta = self.object_meta(&record).await?;
        if meta.is_none() {
            tracing::warn!(key = record.key, "a stored object has no S3 metadata row");
        }
        Ok(Some(ObjectView { record, meta }))
    }

    async fn object_meta(&self, record: &ObjectRecord) -> S3Result<Option<ObjectMeta>> {
        self.meta
            .object_meta(&record.key, &record.content_hash)
            .await
            .map_err(meta_error)
    }

    /// `bucket`'s restore mode (the server's default for a bucket never configured).
    pub(crate) async fn restore_mode(&self, bucket: &str) -> S3Result<RestoreMode> {
        let (mode, _) = self
            .restorer
            .bucket_config(bucket)
            .await
            .map_err(internal)?;
        Ok(mode)
    }

    /// The storage class `record` reports in `bucket`; the bucket's mode is read only for a
    /// migrated object, so a staged GET or HEAD costs no extra query.
    pub(crate) async fn storage_class_in(
        &self,
        bucket: &str,
        record: &ObjectRecord,
    ) -> S3Result<&'static str> {
        match record.location {
            ObjectLocation::Staged { .. } => Ok(StorageClass::STANDARD),
            ObjectLocation::Migrated { .. } => {
                Ok(self.restore_mode(bucket).await?.cold_storage_class())
            }
        }
    }

    /// The key's current object and its row (NoSuchKey when there is none).
    async fn stat_view(&self, store_key: &str) -> S3Result<ObjectView> {
        for _ in 0..READ_ATTEMPTS {
            let record = self.stat_record(store_key).await?;
            if let Some(view) = self.view(record).await? {
                return Ok(view);
            }
        }
        Err(overwritten(store_key, self.settings.retry_after_s))
    }

    /// The store's record of `store_key` (NoSuchKey when there is none).
    async fn stat_record(&self, store_key: &str) -> S3Result<ObjectRecord> {
        self.store
            .stat(store_key)
            .await
            .map_err(|e| self.store_error(e))
    }

    /// Deletes one object (absent is success, as in S3); with `if_match`, only if the object
    /// has that ETag (checked under the key's lock, so no write slips in between).
    async fn delete_one(&self, store_key: &str, if_match: Option<&ETagCondition>) -> S3Result<()> {
        let _key_held = self.key_lock(store_key).lock().await;
        if let Some(wanted) = if_match {
            let current = self.current_view(store_key).await?;
            let etag = current.as_ref().map(ObjectView::etag);
            check_delete(wanted, etag.as_ref().map(Option::as_ref))?;
        }
        remove_object(&self.store, &self.meta, &self.restorer, store_key)
            .await
            .map_err(|error| match error {
                Removed::Store(error) => self.store_error(error),
                Removed::Meta(error) => meta_error(error),
            })
    }

    /// One page of a bucket listing (ListObjectsV2 and ListObjects share it).
    async fn list_page(&self, bucket: &str, query: ListQuery<'_>) -> S3Result<ListPage> {
        self.require_bucket(bucket).await?;
        let base = bucket_prefix(bucket);
        let full_prefix = format!("{base}{}", query.prefix);
        let delimiter = query.delimiter.filter(|d| !d.is_empty());
        let mut position = query.after.map(|after| format!("{base}{after}"));
        let mut page = ListPage {
            mode: self.restore_mode(bucket).await?,
            ..ListPage::default()
        };
        let max_keys = query.max_keys.clamp(0, MAX_LIST_KEYS) as usize;
        if max_keys == 0 {
            // An empty page that is complete, as AWS answers: `IsTruncated` true with no token
            // to go on (as until 2026-12-01) sends a paginating client round forever.
            return Ok(page);
        }
        while page.objects.len() + page.prefixes.len() < max_keys {
            let wanted = (max_keys - page.objects.len() - page.prefixes.len()) as u32;
            let records = self
                .store
                .list(&full_prefix, position.as_deref(), wanted)
                .await
                .map_err(|e| self.store_error(e))?;
            if records.is_empty() {
                return Ok(page);
            }
            for record in records {
                let key = record.key[base.len()..].to_string();
                let rest = &key[query.prefix.len()..];
                if let Some(delimiter) = delimiter
                    && let Some(at) = rest.find(delimiter)
                {
                    let common = key[..query.prefix.len() + at + delimiter.len()].to_string();
                    position = Some(format!("{base}{}", after_prefix(&common)));
                    page.last = Some(after_prefix(&common));
                    page.prefixes.push(common);
                    break; // list again past the whole common prefix
                }
                position = Some(record.key.clone());
                page.last = Some(key);
                let store_key = record.key.clone();
                let view = match self.view(record).await? {
                    Some(view) => Some(view),
                    // Replaced while listed: list what the key holds now, if anything.
                    None => self.current_view(&store_key).await?,
                };
                page.objects.extend(view);
                if page.objects.len() + page.prefixes.len() == max_keys {
                    break;
                }
            }
        }
        let more = self
            .store
            .list(&full_prefix, position.as_deref(), 1)
            .await
            .map_err(|e| self.store_error(e))?;
        page.truncated = !more.is_empty();
        Ok(page)
    }
}

struct ListQuery<'a> {
    prefix: &'a str,
    delimiter: Option<&'a str>,
    /// List keys strictly after this one (relative to the bucket).
    after: Option<&'a str>,
    max_keys: i32,
}

#[derive(Default)]
struct ListPage {
    objects: Vec<ObjectView>,
    prefixes: Vec<String>,
    truncated: bool,
    /// The position after the last entry (relative to the bucket).
    last: Option<String>,
    /// The bucket's restore mode, which names the migrated objects' storage class.
    mode: RestoreMode,
}

impl ListPage {
    fn contents(&self, encoding: KeyEncoding) -> Vec<Object> {
        self.objects
            .iter()
            .map(|view| Object {
                key: Some(encoding.encode(view.record.key.split_once('/').map_or("", |(_, k)| k))),
                size: Some(view.record.size_bytes as i64),
                e_tag: view.etag(),
                last_modified: Some(view.last_modified()),
                storage_class: Some(ObjectStorageClass::from_static(
                    view.storage_class(self.mode),
                )),
                ..Default::default()
            })
            .collect()
    }
    fn common_prefixes(&self, encoding: KeyEncoding) -> Option<Vec<CommonPrefix>> {
        (!self.prefixes.is_empty()).then(|| {
            self.prefixes
                .iter()
                .map(|prefix| CommonPrefix {
                    prefix: Some(encoding.encode(prefix)),
                })
                .collect()
        })
    }
}

/// A single PUT's ETag in `mode`.
fn made_etag(mode: EtagMode, digests: &Digests, record: &ObjectRecord) -> String {
    match mode {
        EtagMode::Md5 => hex(&digests.md5.expect("wanted in MD5 mode")),
        EtagMode::Blake3 => hex(&record.content_hash),
    }
}

/// Where an [`SpinwiseS3::ingest`] writes, and on what condition.
pub(crate) struct WriteTarget<'a> {
    pub bucket: &'a str,
    pub store_key: &'a str,
    pub condition: WriteCondition,
}

/// [`ReadConditions::check`], with the object's validators on a `304 Not Modified` (S3 sends
/// ETag and Last-Modified with it, so a cache can refresh its copy's headers).
pub(crate) fn check_read(
    conditions: &ReadConditions,
    etag: Option<&ETag>,
    last_modified: &Timestamp,
) -> S3Result<()> {
    conditions.check(etag, last_modified).map_err(|mut error| {
        if *error.code() == S3ErrorCode::NotModified {
            let mut headers = http::HeaderMap::new();
            if let Some(value) = etag.and_then(|etag| etag.to_http_header().ok()) {
                headers.insert(http::header::ETAG, value);
            }
            let mut date = Vec::new();
            if last_modified
                .format(TimestampFormat::HttpDate, &mut date)
                .is_ok()
                && let Ok(value) = http::HeaderValue::from_bytes(&date)
            {
                headers.insert(http::header::LAST_MODIFIED, value);
            }
            error.set_headers(headers);
        }
        error
    })
}

/// What an [`SpinwiseS3::ingest`] committed.
pub(crate) struct Ingested {
    pub record: ObjectRecord,
    pub etag: String,
    /// The `x-amz-checksum-*` values the client asked for, as computed.
    pub checksums: s3s::dto::Checksum,
}

pub(crate) fn described_from(
    content_type: Option<String>,
    metadata: Option<Metadata>,
    headers: ObjectHeaders,
) -> Described {
    Described {
        etag: None,
        content_type,
        headers,
        user_metadata: metadata
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), value))
            .collect(),
    }
}

#[async_trait::async_trait]
impl S3 for SpinwiseS3 {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        // Refused before anything is created: an ACL this server cannot honour creates no bucket.
        let acl = crate::access::from_create_bucket(&req.input)?;
        let bucket = req.input.bucket;
        check_bucket(&bucket)?;
        let _changing = self.buckets.change(&bucket);
        if !self
            .meta
            .create_bucket_with_acl(&bucket, self.store.now_unix_ms(), acl)
            .await
            .map_err(meta_error)?
        {
            return Err(S3Error::new(S3ErrorCode::BucketAlreadyOwnedByYou));
        }
        self.restorer.init_bucket(&bucket).await.map_err(internal)?;
        tracing::info!(bucket, "bucket created");
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{bucket}")),
        }))
    }

    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let buckets = self.meta.buckets().await.map_err(meta_error)?;
        let buckets = buckets
            .into_iter()
            .map(|row| Bucket {
                name: Some(row.name),
                creation_date: Some(Timestamp::from(
                    UNIX_EPOCH + Duration::from_millis(row.created_unix_ms.max(0) as u64),
                )),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            ..Default::default()
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.require_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.require_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    /// Versioning was never enabled on any bucket (this server keeps one version per key), which
    /// S3 answers with an empty configuration: no `Status`. Clients that probe versioning
    /// (Cyberduck, Terraform, backup tools checking for object lock) then carry on.
    /// PutBucketVersioning stays `501 NotImplemented`.
    async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        self.require_bucket(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketVersioningOutput::default()))
    }

    async fn put_bucket_lifecycle_configuration(
        &self,
        req: S3Request<PutBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
        let input = req.input;
        self.put_lifecycle(&input.bucket, input.lifecycle_configuration)
            .await?;
        Ok(S3Response::new(
            PutBucketLifecycleConfigurationOutput::default(),
        ))
    }

    async fn get_bucket_lifecycle_configuration(
        &self,
        req: S3Request<GetBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
        let rules = self.get_lifecycle(&req.input.bucket).await?;
        Ok(S3Response::new(GetBucketLifecycleConfigurationOutput {
            rules: Some(rules),
            ..Default::default()
        }))
    }

    async fn delete_bucket_lifecycle(
        &self,
        req: S3Request<DeleteBucketLifecycleInput>,
    ) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
        self.delete_lifecycle(&req.input.bucket).await?;
        Ok(S3Response::new(DeleteBucketLifecycleOutput::default()))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let bucket = req.input.bucket;
        let _no_puts = self.bucket_gate.write().await;
        self.require_bucket(&bucket).await?;
        let _changing = self.buckets.change(&bucket);
        let held = self
            .store
            .list(&bucket_prefix(&bucket), None, 1)
            .await
            .map_err(|e| self.store_error(e))?;
        if !held.is_empty() {
            return Err(S3Error::with_message(
                S3ErrorCode::BucketNotEmpty,
                format!("bucket `{bucket}` still holds objects"),
            ));
        }
        if self
            .meta
            .bucket_has_uploads(&bucket)
            .await
            .map_err(meta_error)?
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BucketNotEmpty,
                format!("bucket `{bucket}` has open multipart uploads: complete or abort them"),
            ));
        }
        self.meta.delete_bucket(&bucket).await.map_err(meta_error)?;
        self.restorer
            .forget_bucket(&bucket)
            .await
            .map_err(internal)?;
        tracing::info!(bucket, "bucket deleted");
        Ok(S3Response::new(DeleteBucketOutput {}))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let trailer_names = trailer_names(&req.headers);
        let trailers = req.trailing_headers;
        let input = req.input;
        let store_key = store_key(&input.bucket, &input.key)?;
        check_storage_class(input.storage_class.as_ref())?;
        self.require_bucket(&input.bucket).await?;
        if let Some(length) = input.content_length
            && u64::try_from(length).unwrap_or(0) > self.settings.max_put_bytes
        {
            return Err(S3Error::with_message(
                S3ErrorCode::EntityTooLarge,
                format!(
                    "{length} bytes exceed this server's single-PUT limit of {} bytes",
                    self.settings.max_put_bytes
                ),
            ));
        }
        let expected = expected_of(
            input.content_md5.as_deref(),
            checksum_headers!(input),
            trailer_names,
            trailers,
        )?;
        let condition = WriteCondition::of(input.if_match, input.if_none_match)?;
        let stream = body_stream(input.body);
        let headers = object_headers!(input);
        let described = described_from(input.content_type, input.metadata, headers);
        let target = WriteTarget {
            bucket: &input.bucket,
            store_key: &store_key,
            condition,
        };
        let Ingested {
            record,
            etag,
            checksums,
        } = self
            .ingest(
                target,
                stream,
                expected,
                described,
                self.settings.max_put_bytes,
            )
            .await?;
        tracing::debug!(key = record.key, size_bytes = record.size_bytes, "PUT");
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(ETag::Strong(etag)),
            size: Some(record.size_bytes as i64),
            checksum_crc32: checksums.checksum_crc32,
            checksum_crc32c: checksums.checksum_crc32c,
            checksum_crc64nvme: checksums.checksum_crc64nvme,
            checksum_sha1: checksums.checksum_sha1,
            checksum_sha256: checksums.checksum_sha256,
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        let store_key = store_key(&input.bucket, &input.key)?;
        let overrides = response_overrides!(input);
        overrides.check_allowed(req.credentials.is_some())?;
        self.require_bucket(&input.bucket).await?;
        let conditions = ReadConditions::for_read(
            input.if_match,
            input.if_none_match,
            input.if_modified_since,
            input.if_unmodified_since,
        );
        self.precheck(&store_key, &conditions).await?;
        let found = self.stat_record(&store_key).await?;
        if let Some((mut restored, record)) = self
            .get_restored(&input.bucket, &found, input.range.as_ref(), &overrides)
            .await?
        {
            let last_modified = restored.last_modified.clone().unwrap_or_default();
            check_read(&conditions, restored.e_tag.as_ref(), &last_modified)?;
            restored.expiration = self.expiration_header(&input.bucket, &record).await?;
            return Ok(S3Response::new(restored));
        }
        let (reader, view) = self.open_read(found, input.range.as_ref()).await?;
        check_read(&conditions, view.etag().as_ref(), &view.last_modified())?;
        let range = reader.range();
        let content_range = input.range.as_ref().map(|_| {
            format!(
                "bytes {}-{}/{}",
                range.start,
                range.end.saturating_sub(1),
                view.record.size_bytes
            )
        });
        let storage_class = self.storage_class_in(&input.bucket, &view.record).await?;
        let expiration = self.expiration_header(&input.bucket, &view.record).await?;
        let output = GetObjectOutput {
            expiration,
            body: Some(StreamingBlob::wrap(reader_stream(reader))),
            content_length: Some((range.end - range.start) as i64),
            content_range,
            accept_ranges: Some("bytes".into()),
            e_tag: view.etag(),
            last_modified: Some(view.last_modified()),
            metadata: view.user_metadata(),
            storage_class: Some(StorageClass::from_static(storage_class)),
            ..Default::default()
        };
        Ok(S3Response::new(show_headers!(
            output,
            view.shown_headers(overrides)
        )))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        let store_key = store_key(&input.bucket, &input.key)?;
        let overrides = response_overrides!(input);
        overrides.check_allowed(req.credentials.is_some())?;
        self.require_bucket(&input.bucket).await?;
        let view = self.stat_view(&store_key).await?;
        let conditions = ReadConditions::for_read(
            input.if_match,
            input.if_none_match,
            input.if_modified_since,
            input.if_unmodified_since,
        );
        check_read(&conditions, view.etag().as_ref(), &view.last_modified())?;
        let restore = self.restorer.restore_header(&view.record).await?;
        let storage_class = self.storage_class_in(&input.bucket, &view.record).await?;
        let expiration = self.expiration_header(&input.bucket, &view.record).await?;
        let output = HeadObjectOutput {
            expiration,
            restore,
            content_length: Some(view.record.size_bytes as i64),
            accept_ranges: Some("bytes".into()),
            e_tag: view.etag(),
            last_modified: Some(view.last_modified()),
            metadata: view.user_metadata(),
            storage_class: Some(StorageClass::from_static(storage_class)),
            ..Default::default()
        };
        Ok(S3Response::new(show_headers!(
            output,
            view.shown_headers(overrides)
        )))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let input = req.input;
        let store_key = store_key(&input.bucket, &input.key)?;
        self.require_bucket(&input.bucket).await?;
        self.delete_one(&store_key, input.if_match.as_ref()).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        self.require_bucket(&input.bucket).await?;
        let count = input.delete.objects.len();
        if !(1..=MAX_DELETE_KEYS).contains(&count) {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                format!(
                    "DeleteObjects takes 1 to {MAX_DELETE_KEYS} keys; this request has {count}"
                ),
            ));
        }
        let quiet = input.delete.quiet.unwrap_or(false);
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for object in input.delete.objects {
            let outcome = match store_key(&input.bucket, &object.key) {
                Ok(store_key) => {
                    let if_match = object.e_tag.clone().map(ETagCondition::ETag);
                    self.delete_one(&store_key, if_match.as_ref()).await
                }
                Err(error) => Err(error),
            };
            match outcome {
                Ok(()) if quiet => {}
                Ok(()) => deleted.push(DeletedObject {
                    key: Some(object.key),
                    ..Default::default()
                }),
                Err(error) => errors.push(Error {
                    code: Some(error.code().as_str().to_string()),
                    key: Some(object.key),
                    message: error.message().map(str::to_string),
                    ..Default::default()
                }),
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: (!errors.is_empty()).then_some(errors),
            ..Default::default()
        }))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let input = req.input;
        let (source_bucket, source_key) = copy_source(&input.copy_source)?;
        let source = store_key(&source_bucket, &source_key)?;
        let target = store_key(&input.bucket, &input.key)?;
        check_storage_class(input.storage_class.as_ref())?;
        self.require_bucket(&source_bucket).await?;
        self.require_bucket(&input.bucket).await?;
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if source == target && !replace {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "copying an object onto itself needs the REPLACE metadata directive",
            ));
        }
        let conditions = ReadConditions::for_copy_source(
            input.copy_source_if_match,
            input.copy_source_if_none_match,
            input.copy_source_if_modified_since,
            input.copy_source_if_unmodified_since,
        );
        let RestoredSource { stream, view, .. } = self
            .open_copy_source(&source_bucket, &source, None, &conditions)
            .await?;
        let mut described = match replace {
            true => {
                let headers = object_headers!(input);
                described_from(input.content_type, input.metadata, headers)
            }
            false => view.described(),
        };
        // As S3: the copy is in the class the request names (its default when none), never
        // the source's.
        described.headers.storage_class = input
            .storage_class
            .as_ref()
            .map(|class| class.as_str().to_owned());
        let target = WriteTarget {
            bucket: &input.bucket,
            store_key: &target,
            condition: WriteCondition::Always,
        };
        let Ingested { record, etag, .. } = self
            .ingest(
                target,
                stream,
                Expected::default(),
                described,
                self.settings.max_put_bytes,
            )
            .await?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(ETag::Strong(etag)),
                last_modified: Some(last_modified(&record)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        let encoding = KeyEncoding::of_request(input.encoding_type.as_ref())?;
        let token = input
            .continuation_token
            .as_deref()
            .map(decode_token)
            .transpose()?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let after = token.as_deref().or(input.start_after.as_deref());
        let max_keys = input.max_keys.unwrap_or(MAX_LIST_KEYS);
        let query = ListQuery {
            prefix: &prefix,
            delimiter: input.delimiter.as_deref(),
            after,
            max_keys,
        };
        let page = self.list_page(&input.bucket, query).await?;
        let contents = page.contents(encoding);
        let common_prefixes = page.common_prefixes(encoding);
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket),
            prefix: encoding.encode_option(input.prefix),
            delimiter: encoding.encode_option(input.delimiter),
            max_keys: Some(max_keys.clamp(0, MAX_LIST_KEYS)),
            key_count: Some((page.objects.len() + page.prefixes.len()) as i32),
            continuation_token: input.continuation_token,
            start_after: encoding.encode_option(input.start_after),
            is_truncated: Some(page.truncated),
            next_continuation_token: page
                .truncated
                .then(|| page.last.as_deref().map(encode_token))
                .flatten(),
            contents: Some(contents),
            common_prefixes,
            encoding_type: encoding.answered(),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let encoding = KeyEncoding::of_request(input.encoding_type.as_ref())?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let max_keys = input.max_keys.unwrap_or(MAX_LIST_KEYS);
        // A marker that is a common prefix we returned resumes past all of that prefix.
        let after = input.marker.as_deref().map(|marker| {
            match input.delimiter.as_deref().filter(|d| !d.is_empty()) {
                Some(delimiter) if marker.starts_with(&prefix) && marker.ends_with(delimiter) => {
                    after_prefix(marker)
                }
                _ => marker.to_string(),
            }
        });
        let query = ListQuery {
            prefix: &prefix,
            delimiter: input.delimiter.as_deref(),
            after: after.as_deref(),
            max_keys,
        };
        let page = self.list_page(&input.bucket, query).await?;
        // S3's NextMarker is the last key or common prefix returned (not its successor).
        let next_marker = match (page.objects.last(), page.prefixes.last()) {
            (_, Some(prefix)) if page.last.as_deref() == Some(&after_prefix(prefix)) => {
                Some(prefix.clone())
            }
            (Some(view), _) => view.record.key.split_once('/').map(|(_, k)| k.to_string()),
            _ => None,
        };
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket),
            prefix: encoding.encode_option(input.prefix),
            delimiter: encoding.encode_option(input.delimiter),
            marker: encoding.encode_option(input.marker),
            max_keys: Some(max_keys.clamp(0, MAX_LIST_KEYS)),
            is_truncated: Some(page.truncated),
            next_marker: encoding.encode_option(page.truncated.then_some(next_marker).flatten()),
            contents: Some(page.contents(encoding)),
            common_prefixes: page.common_prefixes(encoding),
            encoding_type: encoding.answered(),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.multipart_create(req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        self.multipart_upload_part(req).await
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        self.multipart_upload_part_copy(req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.multipart_complete(req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.multipart_abort(req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        self.multipart_list_parts(req).await
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        self.multipart_list_uploads(req).await
    }

    async fn restore_object(
        &self,
        req: S3Request<RestoreObjectInput>,
    ) -> S3Result<S3Response<RestoreObjectOutput>> {
        self.restore(req.input).await
    }

    async fn put_bucket_tagging(
        &self,
        req: S3Request<PutBucketTaggingInput>,
    ) -> S3Result<S3Response<PutBucketTaggingOutput>> {
        let input = req.input;
        self.put_tagging(&input.bucket, input.tagging).await?;
        Ok(S3Response::new(PutBucketTaggingOutput::default()))
    }

    async fn get_bucket_tagging(
        &self,
        req: S3Request<GetBucketTaggingInput>,
    ) -> S3Result<S3Response<GetBucketTaggingOutput>> {
        Ok(S3Response::new(self.get_tagging(&req.input.bucket).await?))
    }

    async fn delete_bucket_tagging(
        &self,
        req: S3Request<DeleteBucketTaggingInput>,
    ) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
        self.delete_tagging(&req.input.bucket).await?;
        Ok(S3Response::new(DeleteBucketTaggingOutput::default()))
    }

    async fn put_bucket_acl(
        &self,
        req: S3Request<PutBucketAclInput>,
    ) -> S3Result<S3Response<PutBucketAclOutput>> {
        self.put_acl(&req.input).await?;
        Ok(S3Response::new(PutBucketAclOutput::default()))
    }

    async fn get_bucket_acl(
        &self,
        req: S3Request<GetBucketAclInput>,
    ) -> S3Result<S3Response<GetBucketAclOutput>> {
        Ok(S3Response::new(self.get_acl(&req.input.bucket).await?))
    }
}
