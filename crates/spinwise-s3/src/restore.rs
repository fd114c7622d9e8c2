//! Glacier-style restores: each bucket's restore mode, bucket tagging (which sets it), and
//! [`Restorer`], which brings temporary copies of migrated objects back from sleeping disks
//! (RestoreObject), serves them, and expires them. docs/s3.md "Restore" describes the behaviour.
//!
//! - A bucket's mode is `sync` (a GET of a migrated object waits for the scheduler) or `async`
//!   (such a GET answers 403 InvalidObjectState unless a restored copy exists). New buckets get
//!   [`crate::S3Settings::default_restore_mode`]; the tag `spinwise-restore-mode` changes it.
//! - A restore reads the object through the store (so the scheduler batches it with every other
//!   read of that group: concurrent restores share a spin-up) into
//!   `DATA/s3-restored/<name>.part`, where `<name>` is the BLAKE3 of the store key, the content
//!   hash and the request time (never derived from the key as a path). Copies are plain files
//!   rather than hidden staged store objects: the store's upkeep would migrate staged objects
//!   back to sleeping disks, and a copy needs its own expiry and capacity anyway.
//!
//! Invariants:
//! - a copy is visible only once complete: its bytes are fsynced and their BLAKE3 equals the
//!   store record's content hash before the `.part` file is renamed and the row marked `done`;
//! - a row describes the store object with its key *and* content hash; overwriting or deleting
//!   the object removes the row and the file, and a restore that finishes for a row no longer
//!   there removes its own file;
//! - at most one row per store key, so at most one restore per object is ongoing;
//! - the rows' sizes (ongoing and done) never exceed the capacity: a request over it is refused
//!   with 503 SlowDown before anything is written;
//! - Expedited restores (read ahead of every standard read, [`crate::tier`]) are bounded twice:
//!   at most `expedited_max_ongoing` ongoing and `expedited_per_hour` started an hour; beyond
//!   either, 503 GlacierExpeditedRetrievalNotAvailable before anything is written;
//! - start-up restarts ongoing restores, drops expired copies and removes files no row names.

use crate::body::BodyStream;
use crate::meta::MetaDb;
use crate::server::StatusOverride;
use crate::service::{ChunkStream, ObjectView, SpinwiseS3, slow_down};
use crate::sweeper::{FirstPass, Sweep, sweep_until_dropped};
use crate::tier::{self, ExpeditedTokens, RestoreTier, Ride};
use bytes::Bytes;
use s3s::dto::{
    GetBucketTaggingOutput, GetObjectOutput, Range, RestoreObjectInput, RestoreObjectOutput, Tag,
    Tagging, Timestamp, TimestampFormat,
};
use s3s::{S3Error, S3ErrorCode, S3Response, S3Result};
use spinwise_catalog::{ObjectLocation, ObjectRecord};
use spinwise_store::clock::{Clock, Paced, pacing};
use spinwise_store::{ContentCheck, SqliteStore, StoreError};
use sqlx::Row;
use sqlx::sqlite::SqlitePool;
use std::io::{self, Read as _, Seek as _};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, UNIX_EPOCH};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::{Mutex, mpsc};

/// The bucket tag that sets the restore mode.
pub const RESTORE_MODE_TAG: &str = "spinwise-restore-mode";
/// The directory (in the data directory) holding restored copies.
pub const RESTORED_DIR: &str = "s3-restored";
/// The first wait before a restore refused by the scheduler's full queue tries again.
const BUSY_RETRY_FIRST: Duration = Duration::from_millis(500);
/// The longest wait between such tries.
const BUSY_RETRY_MAX: Duration = Duration::from_secs(60);
/// Bytes per chunk when a restored copy is served.
const SERVE_CHUNK_BYTES: usize = 1 << 20;
/// S3's limits on a bucket's tags.
const MAX_TAGS: usize = 50;
const MAX_TAG_KEY_CHARS: usize = 128;
const MAX_TAG_VALUE_CHARS: usize = 256;

/// A bucket's tags other than [`RESTORE_MODE_TAG`], as (key, value) in the order given.
pub type Tags = Vec<(String, String)>;

/// What a GET of a migrated object does in a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestoreMode {
    /// Wait for the scheduler (the group's spin-up) and stream the bytes.
    #[default]
    Sync,
    /// Glacier: 403 InvalidObjectState until RestoreObject has brought a copy back.
    Async,
}

impl RestoreMode {
    /// The storage class a migrated object reports in a bucket of this mode: `GLACIER_IR` where
    /// a GET serves it (sync: the GET waits for the spin-up, and like S3 Glacier Instant
    /// Retrieval it needs no restore, so the aws CLI and rclone download it without flags),
    /// `GLACIER` where a RestoreObject must come first (async).
    pub fn cold_storage_class(self) -> &'static str {
        match self {
            RestoreMode::Sync => s3s::dto::StorageClass::GLACIER_IR,
            RestoreMode::Async => s3s::dto::StorageClass::GLACIER,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RestoreMode::Sync => "sync",
            RestoreMode::Async => "async",
        }
    }
}

impl std::fmt::Display for RestoreMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("restore mode `{0}` is neither `sync` nor `async`")]
pub struct BadRestoreMode(pub String);

impl FromStr for RestoreMode {
    type Err = BadRestoreMode;
    fn from_str(text: &str) -> Result<RestoreMode, BadRestoreMode> {
        match text {
            "sync" => Ok(RestoreMode::Sync),
            "async" => Ok(RestoreMode::Async),
            other => Err(BadRestoreMode(other.to_string())),
        }
    }
}

/// S3's error code for an Expedited restore refused for lack of capacity (503).
pub const EXPEDITED_NOT_AVAILABLE: &str = "GlacierExpeditedRetrievalNotAvailable";

/// The restore settings (part of [`crate::S3Settings`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreSettings {
    /// The mode a new bucket gets.
    pub default_mode: RestoreMode,
    /// The length of a restore "day" in seconds (86400; tests use less).
    pub day_s: u64,
    /// The most `Days` a RestoreObject may ask for.
    pub max_days: i32,
    /// The most bytes restored copies (ongoing and finished) may hold together.
    pub capacity_bytes: u64,
    /// How long a Bulk restore waits for a spin-up of its group that happens anyway before it
    /// queues its read (seconds; [`crate::tier`]).
    pub bulk_wait_s: u64,
    /// The most restores ongoing at once.
    pub max_ongoing: u64,
    /// The most Expedited restores ongoing at once (also counted in `max_ongoing`).
    pub expedited_max_ongoing: u64,
    /// The most Expedited restores started an hour, with bursts of up to
    /// `expedited_max_ongoing` (`crate::tier::ExpeditedTokens`); 0 refuses them all.
    pub expedited_per_hour: u64,
}

/// S3's `503 GlacierExpeditedRetrievalNotAvailable` with Retry-After.
fn expedited_not_available(message: String, retry_after_s: u32) -> S3Error {
    let mut error = slow_down(message, retry_after_s);
    error.set_code(S3ErrorCode::Custom(EXPEDITED_NOT_AVAILABLE.into()));
    // A code s3s does not know has no status of its own.
    error.set_status_code(http::StatusCode::SERVICE_UNAVAILABLE);
    error
}

/// Why a restore failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("reading the object from the store: {0}")]
    Store(#[from] StoreError),
    #[error("writing the restored copy: {0}")]
    Io(#[from] io::Error),
    #[error("the restores table: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("the object was replaced while it was being restored")]
    Replaced,
    #[error("the restored bytes do not hash to the object's content hash")]
    HashMismatch,
    #[error("the restores table holds a bad row for `{key}`: {message}")]
    Corrupt { key: String, message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ongoing,
    Done,
    Failed,
}

impl State {
    fn parse(text: &str) -> Option<State> {
        match text {
            "ongoing" => Some(State::Ongoing),
            "done" => Some(State::Done),
            "failed" => Some(State::Failed),
            _ => None,
        }
    }
}

/// One row of the `restores` table.
#[derive(Clone, Debug)]
struct RestoreRow {
    store_key: String,
    content_hash: [u8; 32],
    file_name: String,
    size_bytes: u64,
    days: i64,
    state: State,
    error: Option<String>,
    expiry_unix_ms: Option<i64>,
    tier: RestoreTier,
    requested_unix_ms: i64,
}

impl RestoreRow {
    fn usable_at(&self, now_unix_ms: i64) -> bool {
        self.state == State::Done && self.expiry_unix_ms.is_some_and(|e| e > now_unix_ms)
    }
}

/// What RestoreObject did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requested {
    /// A restore started (202 Accepted).
    Started,
    /// A finished copy's expiry was extended (200 OK).
    Extended,
}

fn http_date(unix_ms: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(unix_ms).unwrap_or(0));
    let mut text = Vec::new();
    Timestamp::from(at)
        .format(TimestampFormat::HttpDate, &mut text)
        .expect("a time after 1970 formats");
    String::from_utf8(text).expect("an HTTP date is ASCII")
}

fn invalid_state(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidObjectState, message.to_string())
}

/// A restored copy opened for reading: its bytes, the range of the object they are, and the
/// object's view.
pub(crate) struct RestoredSource {
    pub(crate) stream: BodyStream,
    pub(crate) bytes: std::ops::Range<u64>,
    pub(crate) view: ObjectView,
}

/// The restores, their copies and the sweeper that expires them.
pub struct Restorer {
    store: Arc<SqliteStore>,
    pool: SqlitePool,
    dir: PathBuf,
    settings: RestoreSettings,
    retry_after_s: u32,
    /// Serializes RestoreObject decisions (state check, capacity checks, row insert), and holds
    /// the Expedited rate limit they take from.
    deciding: Mutex<ExpeditedTokens>,
    /// Bulk restores waiting for a spin-up now (shared with their waits, which hold the
    /// restorer only weakly).
    waiting: Arc<AtomicUsize>,
    /// The expiry sweeper's next wake ([`crate::sweeper`]).
    paced: Paced,
}

/// How many restores are in one state and tier, and the bytes of their objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreCensus {
    /// `ongoing`, `done` or `failed`.
    pub state: String,
    pub tier: RestoreTier,
    pub restores: u64,
    pub bytes: u64,
}

/// Counts one Bulk restore as waiting while it lives.
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn new(count: &Arc<AtomicUsize>) -> Waiting {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(Arc::clone(count))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Restorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Restorer")
            .field("dir", &self.dir)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Restorer {
    /// Opens the restores of `store`'s data directory: creates `s3-restored/`, drops expired
    /// or stale copies and orphan files, restarts ongoing restores and starts the sweeper.
    pub async fn start(
        store: Arc<SqliteStore>,
        meta: &MetaDb,
        settings: RestoreSettings,
        retry_after_s: u32,
    ) -> Result<Arc<Restorer>, RestoreError> {
        let dir = store.data_dir().join(RESTORED_DIR);
        tokio::fs::create_dir_all(&dir).await?;
        let expedited = ExpeditedTokens::new(
            settings.expedited_per_hour,
            settings
                .expedited_max_ongoing
                .min(settings.expedited_per_hour),
            store.clock().now_us(),
        );
        let (pacing, paced) = pacing();
        let restorer = Arc::new(Restorer {
            store,
            pool: meta.pool().clone(),
            dir,
            settings,
            retry_after_s,
            deciding: Mutex::new(expedited),
            waiting: Arc::new(AtomicUsize::new(0)),
            paced,
        });
        restorer.recover().await?;
        let weak = Arc::downgrade(&restorer);
        tokio::spawn(sweep_until_dropped(weak, pacing, FirstPass::AfterInterval));
        Ok(restorer)
    }

    pub fn settings(&self) -> &RestoreSettings {
        &self.settings
    }

    /// When the expiry sweeper next sweeps (see [`crate::sweeper`]).
    pub fn paced(&self) -> &Paced {
        &self.paced
    }

    /// Calendar time on the store's clock: every expiry and request time is on it.
    fn now_unix_ms(&self) -> i64 {
        self.store.now_unix_ms()
    }

    pub(crate) fn store(&self) -> &Arc<SqliteStore> {
        &self.store
    }

    /// Bulk restores waiting for a spin-up of their group now.
    pub fn waiting_for_spin_up(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The restores by state and tier (the rows of the restores table; done rows include
    /// copies expired but not yet swept).
    pub async fn census(&self) -> Result<Vec<RestoreCensus>, RestoreError> {
        let rows = sqlx::query(
            "SELECT state, tier, COUNT(*), COALESCE(SUM(size_bytes), 0) FROM restores \
             GROUP BY state, tier ORDER BY state, tier",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let tier: String = row.get(1);
                let count: i64 = row.get(2);
                let bytes: i64 = row.get(3);
                Ok(RestoreCensus {
                    state: row.get(0),
                    tier: tier.parse().map_err(|message| RestoreError::Corrupt {
                        key: "(census)".into(),
                        message,
                    })?,
                    restores: u64::try_from(count).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn recover(self: &Arc<Self>) -> Result<(), RestoreError> {
        let now = self.now_unix_ms();
        let mut kept = std::collections::BTreeSet::new();
        for row in self.rows().await? {
            let current = match self.store.stat(&row.store_key).await {
                Ok(record) => Some(record.content_hash),
                Err(StoreError::NoSuchKey { .. }) => None,
                Err(error) => return Err(error.into()),
            };
            let stale = current != Some(row.content_hash)
                || (row.state == State::Done && !row.usable_at(now));
            if stale {
                self.remove_row(&row).await?;
                continue;
            }
            kept.insert(row.file_name.clone());
            if row.state == State::Ongoing {
                tracing::info!(key = row.store_key, "restarting an interrupted restore");
                let _ = tokio::fs::remove_file(self.part_path(&row.file_name)).await;
                tokio::spawn(Arc::clone(self).run(row));
            }
        }
        let mut entries = tokio::fs::read_dir(&self.dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let base = name.strip_suffix(".part").unwrap_or(&name);
            let in_flight = name.ends_with(".part") && kept.contains(base);
            if !kept.contains(&name) && !in_flight {
                tracing::info!(file = name, "removing a restored copy no restore names");
                let _ = tokio::fs::remove_file(entry.path()).await;
            }
        }
        Ok(())
    }

    fn copy_path(&self, file_name: &str) -> PathBuf {
        self.dir.join(file_name)
    }
    fn part_path(&self, file_name: &str) -> PathBuf {
        self.dir.join(format!("{file_name}.part"))
    }

    // ---- buckets ----

    /// Gives a new bucket the default mode, no tags and no lifecycle rules (replacing what a
    /// deleted bucket of the same name left).
    pub async fn init_bucket(&self, bucket: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT OR REPLACE INTO bucket_config (bucket, restore_mode, tags) VALUES (?, ?, '[]')",
        )
        .bind(bucket)
        .bind(self.settings.default_mode.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn forget_bucket(&self, bucket: &str) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM bucket_config WHERE bucket = ?")
            .bind(bucket)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The bucket's mode and its other tags (a bucket without a row has the default mode).
    pub async fn bucket_config(&self, bucket: &str) -> Result<(RestoreMode, Tags), RestoreError> {
        let row = sqlx::query("SELECT restore_mode, tags FROM bucket_config WHERE bucket = ?")
            .bind(bucket)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok((self.settings.default_mode, Vec::new()));
        };
        let corrupt = |message: String| RestoreError::Corrupt {
            key: bucket.to_string(),
            message,
        };
        let mode: String = row.get(0);
        let tags: String = row.get(1);
        let mode = mode
            .parse()
            .map_err(|e: BadRestoreMode| corrupt(e.to_string()))?;
        let tags = serde_json::from_str(&tags).map_err(|e| corrupt(e.to_string()))?;
        Ok((mode, tags))
    }

    async fn set_bucket_config(
        &self,
        bucket: &str,
        mode: RestoreMode,
        tags: &[(String, String)],
    ) -> Result<(), sqlx::Error> {
        let tags = serde_json::to_string(tags).expect("string pairs serialize");
        // An upsert, not a replace: the row also holds the bucket's lifecycle rules.
        sqlx::query(
            "INSERT INTO bucket_config (bucket, restore_mode, tags) VALUES (?, ?, ?) \
             ON CONFLICT (bucket) DO UPDATE SET \
             restore_mode = excluded.restore_mode, tags = excluded.tags",
        )
        .bind(bucket)
        .bind(mode.as_str())
        .bind(tags)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    // ---- rows ----

    async fn rows(&self) -> Result<Vec<RestoreRow>, RestoreError> {
        let rows = sqlx::query(
            "SELECT store_key, content_hash, file_name, size_bytes, days, state, error, \
             expiry_unix_ms, tier, requested_unix_ms FROM restores ORDER BY store_key",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(parse_row).collect()
    }

    async fn row(&self, store_key: &str) -> Result<Option<RestoreRow>, RestoreError> {
        let row = sqlx::query(
            "SELECT store_key, content_hash, file_name, size_bytes, days, state, error, \
             expiry_unix_ms, tier, requested_unix_ms FROM restores WHERE store_key = ?",
        )
        .bind(store_key)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(parse_row).transpose()
    }

    /// The row describing exactly this object (key and content hash).
    async fn row_for(&self, record: &ObjectRecord) -> Result<Option<RestoreRow>, RestoreError> {
        Ok(self
            .row(&record.key)
            .await?
            .filter(|row| row.content_hash == record.content_hash))
    }

    /// Removes the row (if it is still this one) and then its files.
    async fn remove_row(&self, row: &RestoreRow) -> Result<(), RestoreError> {
        sqlx::query("DELETE FROM restores WHERE store_key = ? AND file_name = ?")
            .bind(&row.store_key)
            .bind(&row.file_name)
            .execute(&self.pool)
            .await?;
        self.remove_files(&row.file_name).await;
        Ok(())
    }

    async fn remove_files(&self, file_name: &str) {
        for path in [self.copy_path(file_name), self.part_path(file_name)] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => {
                    tracing::warn!(%error, path = %path.display(), "removing a restored copy")
                }
            }
        }
    }

    /// Drops the restored copy of `store_key` unless it describes `keep` (the content hash the
    /// key now holds; `None` after a delete).
    pub async fn forget(&self, store_key: &str, keep: Option<&[u8; 32]>) {
        let row = match self.row(store_key).await {
            Ok(Some(row)) if Some(&row.content_hash) != keep => row,
            Ok(_) => return,
            Err(error) => {
                tracing::warn!(%error, store_key, "looking up a restored copy to drop");
                return;
            }
        };
        if let Err(error) = self.remove_row(&row).await {
            tracing::warn!(%error, store_key, "dropping a restored copy");
        }
    }

    async fn used_bytes(&self, except_key: &str) -> Result<u64, sqlx::Error> {
        let used: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(size_bytes), 0) FROM restores \
             WHERE state IN ('ongoing', 'done') AND store_key <> ?",
        )
        .bind(except_key)
        .fetch_one(&self.pool)
        .await?;
        Ok(u64::try_from(used).unwrap_or(0))
    }

    // ---- requests ----

    /// RestoreObject for the migrated object `record`, kept for `days` days once restored:
    /// `RestoreAlreadyInProgress` while a restore of this version runs, an extended expiry for
    /// a usable copy, otherwise (no copy, an expired or failed one, or a copy of an older
    /// version) a new restore if the staging budget has room for it.
    pub async fn request(
        self: &Arc<Self>,
        record: &ObjectRecord,
        days: i32,
        tier: RestoreTier,
    ) -> S3Result<Requested> {
        let mut deciding = self.deciding.lock().await;
        let now = self.now_unix_ms();
        let existing = self.row(&record.key).await.map_err(internal)?;
        if let Some(row) = existing
            .as_ref()
            .filter(|r| r.content_hash == record.content_hash)
        {
            match row.state {
                State::Ongoing => {
                    return Err(S3Error::with_message(
                        S3ErrorCode::RestoreAlreadyInProgress,
                        "a restore of this object is already in progress",
                    ));
                }
                State::Done if row.usable_at(now) => {
                    self.extend(row, days, now).await?;
                    return Ok(Requested::Extended);
                }
                State::Done | State::Failed => {}
            }
        }
        self.check_room_for(record).await?;
        if tier == RestoreTier::Expedited {
            self.check_expedited_capacity().await?;
            let taken = deciding.take(self.store.clock().now_us());
            taken.map_err(|wait_s| self.expedited_rate_exceeded(wait_s))?;
        }
        if let Some(old) = &existing {
            self.remove_row(old).await.map_err(internal)?;
        }
        let row = self.insert_ongoing(record, days, tier, now).await?;
        tracing::info!(
            key = row.store_key,
            days,
            tier = tier.as_str(),
            "restore requested"
        );
        tokio::spawn(Arc::clone(self).run(row));
        Ok(Requested::Started)
    }

    /// A restored copy stays `days` days from `now`, or longer if it was already to.
    async fn extend(&self, row: &RestoreRow, days: i32, now: i64) -> S3Result<()> {
        let wanted = now.saturating_add(self.day_ms(i64::from(days)));
        sqlx::query(
            "UPDATE restores SET expiry_unix_ms = MAX(expiry_unix_ms, ?), days = ? \
             WHERE store_key = ? AND file_name = ?",
        )
        .bind(wanted)
        .bind(i64::from(days))
        .bind(&row.store_key)
        .bind(&row.file_name)
        .execute(&self.pool)
        .await
        .map_err(sql_error)?;
        Ok(())
    }

    /// `SlowDown` with Retry-After when [`RestoreSettings::max_ongoing`] restores are ongoing
    /// already, or when the restored copies (other than this key's) and this object would not
    /// fit the staging budget for restores.
    async fn check_room_for(&self, record: &ObjectRecord) -> S3Result<()> {
        let ongoing: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM restores WHERE state = 'ongoing'")
                .fetch_one(&self.pool)
                .await
                .map_err(sql_error)?;
        if u64::try_from(ongoing).unwrap_or(0) >= self.settings.max_ongoing {
            return Err(slow_down(
                format!(
                    "{ongoing} restores are ongoing, the most this server runs at once (retry later)"
                ),
                self.retry_after_s,
            ));
        }
        let used = self.used_bytes(&record.key).await.map_err(sql_error)?;
        if used.saturating_add(record.size_bytes) <= self.settings.capacity_bytes {
            return Ok(());
        }
        Err(slow_down(
            format!(
                "restored copies hold {used} of {} bytes; this object needs {} more (retry after copies expire)",
                self.settings.capacity_bytes, record.size_bytes
            ),
            self.retry_after_s,
        ))
    }

    /// S3's `503 GlacierExpeditedRetrievalNotAvailable` (with Retry-After) when
    /// [`RestoreSettings::expedited_max_ongoing`] Expedited restores are ongoing already: S3
    /// answers so when it lacks the capacity for one more, and here each one may cost a group
    /// switch. The client may retry later or ask for Standard.
    async fn check_expedited_capacity(&self) -> S3Result<()> {
        let ongoing: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM restores WHERE state = 'ongoing' AND tier = 'Expedited'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(sql_error)?;
        if u64::try_from(ongoing).unwrap_or(0) < self.settings.expedited_max_ongoing {
            return Ok(());
        }
        Err(expedited_not_available(
            format!(
                "{ongoing} Expedited restores are ongoing, the most this server runs at once; \
                 retry later or ask for Standard"
            ),
            self.retry_after_s,
        ))
    }

    /// The 503 for an Expedited restore over [`RestoreSettings::expedited_per_hour`], with a
    /// Retry-After of when the next one may start (`None`: never, the rate is 0).
    fn expedited_rate_exceeded(&self, wait_s: Option<u64>) -> S3Error {
        let per_hour = self.settings.expedited_per_hour;
        let retry_after_s = wait_s.map_or(self.retry_after_s, |s| {
            u32::try_from(s.max(1)).unwrap_or(u32::MAX)
        });
        let message = match wait_s {
            Some(_) => format!(
                "Expedited restores are limited to {per_hour} an hour here; retry later or ask \
                 for Standard"
            ),
            None => "Expedited restores are switched off here; ask for Standard".to_string(),
        };
        expedited_not_available(message, retry_after_s)
    }

    /// Records a new ongoing restore of `record` (its copy named for this request's time).
    async fn insert_ongoing(
        &self,
        record: &ObjectRecord,
        days: i32,
        tier: RestoreTier,
        now: i64,
    ) -> S3Result<RestoreRow> {
        let row = RestoreRow {
            store_key: record.key.clone(),
            content_hash: record.content_hash,
            file_name: copy_name(&record.key, &record.content_hash, now),
            size_bytes: record.size_bytes,
            days: i64::from(days),
            state: State::Ongoing,
            error: None,
            expiry_unix_ms: None,
            tier,
            requested_unix_ms: now,
        };
        sqlx::query(
            "INSERT INTO restores (store_key, content_hash, file_name, size_bytes, days, state, \
             requested_unix_ms, tier) VALUES (?, ?, ?, ?, ?, 'ongoing', ?, ?)",
        )
        .bind(&row.store_key)
        .bind(&row.content_hash[..])
        .bind(&row.file_name)
        .bind(row.size_bytes as i64)
        .bind(row.days)
        .bind(now)
        .bind(tier.as_str())
        .execute(&self.pool)
        .await
        .map_err(sql_error)?;
        Ok(row)
    }

    fn day_ms(&self, days: i64) -> i64 {
        let day_ms = i64::try_from(self.settings.day_s.saturating_mul(1000)).unwrap_or(i64::MAX);
        days.saturating_mul(day_ms)
    }

    /// Copies the object, then publishes the copy (or records the failure). A read the
    /// scheduler's full queue refuses is tried again after [`BUSY_RETRY_FIRST`], doubling up to
    /// [`BUSY_RETRY_MAX`], with the row still ongoing: a restore is a background job the client
    /// polls with HEAD, so a busy rack delays it rather than failing it. While it waits the task
    /// holds the restorer only weakly, so a stopping server is not kept alive by it (start-up
    /// resumes the ongoing row).
    async fn run(self: Arc<Self>, row: RestoreRow) {
        let Some(mut restorer) = self.wait_for_tier(&row).await else {
            return;
        };
        let mut wait = BUSY_RETRY_FIRST;
        loop {
            match restorer.copy(&row).await {
                Err(RestoreError::Store(StoreError::Busy { reason, .. })) => {
                    tracing::info!(
                        key = row.store_key,
                        %reason,
                        retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        "restore waits: the scheduler's queue is full"
                    );
                    let weak = Arc::downgrade(&restorer);
                    let clock = restorer.store.clock().clone();
                    drop(restorer);
                    clock.sleep(wait).await;
                    let Some(again) = weak.upgrade() else {
                        return;
                    };
                    restorer = again;
                    if !restorer.still_ongoing(&row).await {
                        return; // the object was replaced or deleted: its row is gone
                    }
                    wait = (wait * 2).min(BUSY_RETRY_MAX);
                }
                outcome => return restorer.record(&row, outcome).await,
            }
        }
    }

    /// A Bulk restore's wait for a spin-up of its group that happens anyway, up to its
    /// start-by time ([`crate::tier`]); other tiers go at once. `None` when the server stopped
    /// meanwhile or the row is gone (the object was replaced or deleted).
    async fn wait_for_tier(self: Arc<Self>, row: &RestoreRow) -> Option<Arc<Self>> {
        if row.tier != RestoreTier::Bulk {
            return Some(self);
        }
        let Some(group) = tier::group_of(&self.store, &row.store_key).await else {
            return Some(self); // no longer migrated: the read says what happened
        };
        let start_by =
            tier::start_by_unix_ms(row.tier, row.requested_unix_ms, self.settings.bulk_wait_s);
        let waiting = Waiting::new(&self.waiting);
        let weak = Arc::downgrade(&self);
        drop(self);
        let ride = tier::wait_for_spin_up(weak.clone(), group, start_by).await;
        drop(waiting);
        let restorer = weak.upgrade()?;
        if ride == Ride::Stopped || !restorer.still_ongoing(row).await {
            return None;
        }
        tracing::info!(
            key = row.store_key,
            group,
            ride = ?ride,
            "bulk restore queues its read"
        );
        Some(restorer)
    }

    /// True unless `row` is provably no longer this restore's ongoing row (a failed lookup
    /// keeps it going: the outcome is recorded with a conditional update anyway).
    async fn still_ongoing(&self, row: &RestoreRow) -> bool {
        match self.row(&row.store_key).await {
            Ok(Some(current)) => {
                current.file_name == row.file_name && current.state == State::Ongoing
            }
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Marks the row done (with its expiry) or failed; removes the files of a failed restore or
    /// of one whose row went away meanwhile.
    async fn record(&self, row: &RestoreRow, outcome: Result<(), RestoreError>) {
        let now = self.now_unix_ms();
        let recorded =
            match &outcome {
                Ok(()) => sqlx::query(
                    "UPDATE restores SET state = 'done', completed_unix_ms = ?, expiry_unix_ms = ? \
                     WHERE store_key = ? AND file_name = ? AND state = 'ongoing'",
                )
                .bind(now)
                .bind(now.saturating_add(self.day_ms(row.days)))
                .bind(&row.store_key)
                .bind(&row.file_name)
                .execute(&self.pool)
                .await,
                Err(error) => {
                    tracing::warn!(%error, key = row.store_key, "restore failed");
                    sqlx::query(
                        "UPDATE restores SET state = 'failed', error = ?, completed_unix_ms = ? \
                     WHERE store_key = ? AND file_name = ? AND state = 'ongoing'",
                    )
                    .bind(error.to_string())
                    .bind(now)
                    .bind(&row.store_key)
                    .bind(&row.file_name)
                    .execute(&self.pool)
                    .await
                }
            };
        match recorded {
            Ok(done) if done.rows_affected() == 1 && outcome.is_ok() => {
                tracing::info!(key = row.store_key, "restore finished");
            }
            Ok(done) if done.rows_affected() == 1 => self.remove_files(&row.file_name).await,
            // The object was overwritten or deleted meanwhile: its row is gone.
            Ok(_) => self.remove_files(&row.file_name).await,
            Err(error) => {
                tracing::error!(%error, key = row.store_key, "recording a restore's outcome");
                self.remove_files(&row.file_name).await;
            }
        }
    }

    /// Reads the object through the store into `<name>.part`, checks its BLAKE3, fsyncs and
    /// renames it to `<name>`.
    async fn copy(&self, row: &RestoreRow) -> Result<(), RestoreError> {
        let part = self.part_path(&row.file_name);
        let priority = row.tier.read_priority();
        let mut reader = self
            .store
            .get_prioritized(&row.store_key, None, ContentCheck::WholeObject, priority)
            .await?;
        if reader.record().content_hash != row.content_hash {
            return Err(RestoreError::Replaced);
        }
        let mut file = tokio::fs::File::create(&part).await?;
        let mut hasher = blake3::Hasher::new();
        while let Some(chunk) = reader.next_chunk().await? {
            hasher.update(&chunk);
            file.write_all(&chunk).await?;
        }
        file.sync_all().await?;
        drop(file);
        if *hasher.finalize().as_bytes() != row.content_hash {
            return Err(RestoreError::HashMismatch);
        }
        tokio::fs::rename(&part, self.copy_path(&row.file_name)).await?;
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || std::fs::File::open(dir)?.sync_all())
            .await
            .map_err(io::Error::other)??;
        Ok(())
    }

    // ---- reads ----

    /// The `x-amz-restore` header for `record` once a restore was requested.
    pub async fn restore_header(&self, record: &ObjectRecord) -> S3Result<Option<String>> {
        let Some(row) = self.row_for(record).await.map_err(internal)? else {
            return Ok(None);
        };
        Ok(match row.state {
            State::Ongoing => Some("ongoing-request=\"true\"".into()),
            State::Done => row
                .expiry_unix_ms
                .filter(|e| *e > self.now_unix_ms())
                .map(|e| {
                    format!(
                        "ongoing-request=\"false\", expiry-date=\"{}\"",
                        http_date(e)
                    )
                }),
            State::Failed => Some("ongoing-request=\"false\"".into()),
        })
    }

    /// The error a failed restore of `record` recorded.
    pub async fn failure(&self, record: &ObjectRecord) -> S3Result<Option<String>> {
        let row = self.row_for(record).await.map_err(internal)?;
        Ok(row
            .filter(|r| r.state == State::Failed)
            .and_then(|r| r.error))
    }

    /// Opens the finished, unexpired copy of `record` at `range` (checked against its size).
    async fn open_copy(
        &self,
        record: &ObjectRecord,
        range: Option<&Range>,
    ) -> S3Result<Option<(ChunkStream, std::ops::Range<u64>)>> {
        let Some(row) = self.row_for(record).await.map_err(internal)? else {
            return Ok(None);
        };
        if !row.usable_at(self.now_unix_ms()) {
            return Ok(None);
        }
        let bytes = match range {
            Some(range) => range.check(row.size_bytes).map_err(|_| {
                S3Error::with_message(
                    S3ErrorCode::InvalidRange,
                    format!("the range is outside the object's {} bytes", row.size_bytes),
                )
            })?,
            None => 0..row.size_bytes,
        };
        let file = match std::fs::File::open(self.copy_path(&row.file_name)) {
            Ok(file) => file,
            // Expired and swept between the lookup and the open.
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(internal(error)),
        };
        Ok(Some((file_stream(file, bytes.clone()), bytes)))
    }

    /// Removes copies whose expiry has passed; returns how many.
    pub async fn sweep_expired(&self) -> Result<usize, RestoreError> {
        let now = self.now_unix_ms();
        let expired: Vec<RestoreRow> = self
            .rows()
            .await?
            .into_iter()
            .filter(|row| row.state == State::Done && !row.usable_at(now))
            .collect();
        for row in &expired {
            tracing::info!(key = row.store_key, "a restored copy expired");
            self.remove_row(row).await?;
        }
        Ok(expired.len())
    }

    fn sweep_interval(&self) -> Duration {
        Duration::from_millis(self.settings.day_s.saturating_mul(1000) / 8)
            .clamp(Duration::from_millis(50), Duration::from_secs(60))
    }
}

/// The sweeper task ([`crate::sweeper`]) holds the restorer only while sweeping, so the store
/// can be closed once the server is gone.
impl Sweep for Restorer {
    fn interval(&self) -> Duration {
        self.sweep_interval()
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.store.clock().clone()
    }

    async fn sweep_once(&self) {
        if let Err(error) = self.sweep_expired().await {
            tracing::warn!(%error, "sweeping expired restored copies");
        }
    }
}

fn parse_row(row: &sqlx::sqlite::SqliteRow) -> Result<RestoreRow, RestoreError> {
    let store_key: String = row.get(0);
    let corrupt = |message: &str| RestoreError::Corrupt {
        key: store_key.clone(),
        message: message.to_string(),
    };
    let hash: Vec<u8> = row.get(1);
    let content_hash =
        <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| corrupt("hash is not 32 bytes"))?;
    let size_bytes: i64 = row.get(3);
    let state: String = row.get(5);
    let tier: String = row.get(8);
    Ok(RestoreRow {
        content_hash,
        file_name: row.get(2),
        size_bytes: u64::try_from(size_bytes).map_err(|_| corrupt("negative size"))?,
        days: row.get(4),
        state: State::parse(&state).ok_or_else(|| corrupt("unknown state"))?,
        error: row.get(6),
        expiry_unix_ms: row.get(7),
        tier: tier.parse().map_err(|_| corrupt("unknown tier"))?,
        requested_unix_ms: row.get(9),
        store_key,
    })
}

/// The tier of a RestoreRequest: `GlacierJobParameters/Tier` (what the aws CLI and SDK
/// examples send for GLACIER objects) or the request's own `Tier`; Standard when neither is
/// given. Two different tiers, or a name S3 does not know, are `InvalidArgument`.
fn requested_tier(request: &s3s::dto::RestoreRequest) -> S3Result<RestoreTier> {
    let named = [
        request.glacier_job_parameters.as_ref().map(|p| &p.tier),
        request.tier.as_ref(),
    ];
    let mut tiers = named.into_iter().flatten().map(|tier| {
        tier.as_str()
            .parse::<RestoreTier>()
            .map_err(|message| S3Error::with_message(S3ErrorCode::InvalidArgument, message))
    });
    let first = tiers.next().transpose()?.unwrap_or_default();
    match tiers.next().transpose()? {
        Some(second) if second != first => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!(
                "GlacierJobParameters asks for tier {} and the request for {}",
                first.as_str(),
                second.as_str()
            ),
        )),
        _ => Ok(first),
    }
}

/// A failed restores-table statement, as the client's 500.
fn sql_error(error: sqlx::Error) -> S3Error {
    internal(RestoreError::Sql(error))
}

/// A copy's file name: hex BLAKE3 of the key, the content hash and the request time.
fn copy_name(store_key: &str, content_hash: &[u8; 32], requested_unix_ms: i64) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(store_key.as_bytes());
    hasher.update(&[0]);
    hasher.update(content_hash);
    hasher.update(&requested_unix_ms.to_le_bytes());
    hasher.finalize().to_hex().to_string()
}

/// `bytes` of `file`, read on a blocking thread a chunk ahead of the client.
fn file_stream(mut file: std::fs::File, bytes: std::ops::Range<u64>) -> ChunkStream {
    let (sender, receiver) = mpsc::channel(2);
    tokio::task::spawn_blocking(move || {
        if let Err(error) = file.seek(io::SeekFrom::Start(bytes.start)) {
            let _ = sender.blocking_send(Err(error));
            return;
        }
        let mut left = bytes.end - bytes.start;
        while left > 0 {
            let mut chunk = vec![0; SERVE_CHUNK_BYTES.min(left as usize)];
            let item = file.read_exact(&mut chunk).map(|()| Bytes::from(chunk));
            let failed = item.is_err();
            if sender.blocking_send(item).is_err() || failed {
                return;
            }
            left -= SERVE_CHUNK_BYTES.min(left as usize) as u64;
        }
    });
    ChunkStream(receiver)
}

fn internal(error: impl std::fmt::Display) -> S3Error {
    tracing::error!(%error, "a restore request failed");
    S3Error::with_message(S3ErrorCode::InternalError, error.to_string())
}

/// Checks a tag set: S3's limits, unique keys, and a valid `spinwise-restore-mode`.
fn check_tags(tagging: Tagging) -> S3Result<(Option<RestoreMode>, Tags)> {
    let invalid = |message: String| S3Error::with_message(S3ErrorCode::InvalidTag, message);
    if tagging.tag_set.len() > MAX_TAGS {
        return Err(invalid(format!("more than {MAX_TAGS} tags")));
    }
    let mut mode = None;
    let mut tags: Tags = Vec::new();
    for Tag { key, value } in tagging.tag_set {
        let key = key.unwrap_or_default();
        let value = value.unwrap_or_default();
        if key.is_empty() || key.chars().count() > MAX_TAG_KEY_CHARS {
            return Err(invalid(format!("tag key `{key}` is empty or too long")));
        }
        if value.chars().count() > MAX_TAG_VALUE_CHARS {
            return Err(invalid(format!("the value of tag `{key}` is too long")));
        }
        if tags.iter().any(|(k, _)| *k == key) || (key == RESTORE_MODE_TAG && mode.is_some()) {
            return Err(invalid(format!("tag `{key}` is given twice")));
        }
        if key == RESTORE_MODE_TAG {
            mode = Some(
                value
                    .parse::<RestoreMode>()
                    .map_err(|e| invalid(e.to_string()))?,
            );
        } else {
            tags.push((key, value));
        }
    }
    Ok((mode, tags))
}

fn tag(key: &str, value: &str) -> Tag {
    Tag {
        key: Some(key.to_string()),
        value: Some(value.to_string()),
    }
}

/// The S3 operations of this module, delegated to from [`SpinwiseS3`]'s `S3` implementation.
impl SpinwiseS3 {
    /// PutBucketTagging: stores the tags; `spinwise-restore-mode` sets the bucket's mode (a tag
    /// set without it leaves the mode as it is).
    pub(crate) async fn put_tagging(&self, bucket: &str, tagging: Tagging) -> S3Result<()> {
        self.require_bucket(bucket).await?;
        let (mode, tags) = check_tags(tagging)?;
        let restorer = self.restorer();
        let (current, _) = restorer.bucket_config(bucket).await.map_err(internal)?;
        let mode = mode.unwrap_or(current);
        restorer
            .set_bucket_config(bucket, mode, &tags)
            .await
            .map_err(internal)?;
        tracing::info!(bucket, %mode, tags = tags.len(), "bucket tagging set");
        Ok(())
    }

    /// GetBucketTagging: the stored tags and `spinwise-restore-mode` with the bucket's mode.
    pub(crate) async fn get_tagging(&self, bucket: &str) -> S3Result<GetBucketTaggingOutput> {
        self.require_bucket(bucket).await?;
        let (mode, tags) = self
            .restorer()
            .bucket_config(bucket)
            .await
            .map_err(internal)?;
        let mut tag_set = vec![tag(RESTORE_MODE_TAG, mode.as_str())];
        tag_set.extend(tags.iter().map(|(k, v)| tag(k, v)));
        Ok(GetBucketTaggingOutput { tag_set })
    }

    /// DeleteBucketTagging: removes the other tags; the mode stays.
    pub(crate) async fn delete_tagging(&self, bucket: &str) -> S3Result<()> {
        self.require_bucket(bucket).await?;
        let restorer = self.restorer();
        let (mode, _) = restorer.bucket_config(bucket).await.map_err(internal)?;
        restorer
            .set_bucket_config(bucket, mode, &[])
            .await
            .map_err(internal)
    }

    /// RestoreObject: 202 when a restore starts, 200 when a finished copy's expiry is extended.
    pub(crate) async fn restore(
        &self,
        input: RestoreObjectInput,
    ) -> S3Result<S3Response<RestoreObjectOutput>> {
        let store_key = crate::names::store_key(&input.bucket, &input.key)?;
        self.require_bucket(&input.bucket).await?;
        let request = input.restore_request.ok_or_else(|| {
            S3Error::with_message(S3ErrorCode::MalformedXML, "RestoreRequest is missing")
        })?;
        if request.type_.is_some() || request.select_parameters.is_some() {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "SELECT restores are not supported",
            ));
        }
        let max_days = self.restorer().settings.max_days;
        let days = request.days.ok_or_else(|| {
            S3Error::with_message(S3ErrorCode::MalformedXML, "RestoreRequest needs Days")
        })?;
        if !(1..=max_days).contains(&days) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!("Days must be 1 to {max_days}, not {days}"),
            ));
        }
        let tier = requested_tier(&request)?;
        let record = self
            .store()
            .stat(&store_key)
            .await
            .map_err(|e| self.store_error(e))?;
        if matches!(record.location, ObjectLocation::Staged { .. }) {
            return Err(invalid_state(
                "the object is in storage class STANDARD: it needs no restore",
            ));
        }
        let mut response = S3Response::new(RestoreObjectOutput::default());
        if self.restorer().request(&record, days, tier).await? == Requested::Started {
            response
                .extensions
                .insert(StatusOverride(http::StatusCode::ACCEPTED));
        }
        Ok(response)
    }

    /// The bytes of a migrated object's restored copy (all, or `range`) with the object's view
    /// and the byte range they cover; refused in an async bucket when there is no usable copy.
    /// `None` when the store should serve the bytes (staged, or a sync bucket without a copy).
    /// GETs, CopyObject and UploadPartCopy all read a cold source through this, so an async
    /// bucket's GLACIER objects are unreadable by every path until restored, as in S3.
    pub(crate) async fn restored_source(
        &self,
        bucket: &str,
        record: &ObjectRecord,
        range: Option<&Range>,
    ) -> S3Result<Option<RestoredSource>> {
        if matches!(record.location, ObjectLocation::Staged { .. }) {
            return Ok(None);
        }
        let restorer = self.restorer();
        let Some((stream, bytes)) = restorer.open_copy(record, range).await? else {
            let (mode, _) = restorer.bucket_config(bucket).await.map_err(internal)?;
            return match mode {
                RestoreMode::Sync => Ok(None),
                RestoreMode::Async => Err(invalid_state(
                    "the object is in storage class GLACIER: restore it first (RestoreObject)",
                )),
            };
        };
        let Some(view) = self.view(record.clone()).await? else {
            // Replaced since it was found: a new PUT is staged, so the store serves it.
            return Ok(None);
        };
        Ok(Some(RestoredSource {
            stream: Box::pin(stream),
            bytes,
            view,
        }))
    }

    /// The GET of a migrated object served from its restored copy (see
    /// [`SpinwiseS3::restored_source`]).
    pub(crate) async fn get_restored(
        &self,
        bucket: &str,
        record: &ObjectRecord,
        range: Option<&Range>,
        overrides: &crate::headers::ResponseOverrides,
    ) -> S3Result<Option<(GetObjectOutput, ObjectRecord)>> {
        let Some(RestoredSource {
            stream,
            bytes,
            view,
        }) = self.restored_source(bucket, record, range).await?
        else {
            return Ok(None);
        };
        let content_range = range.map(|_| {
            format!(
                "bytes {}-{}/{}",
                bytes.start,
                bytes.end.saturating_sub(1),
                view.record.size_bytes
            )
        });
        let output = GetObjectOutput {
            body: Some(s3s::dto::StreamingBlob::wrap(stream)),
            content_length: Some((bytes.end - bytes.start) as i64),
            content_range,
            accept_ranges: Some("bytes".into()),
            e_tag: view.etag(),
            last_modified: Some(view.last_modified()),
            metadata: view.user_metadata(),
            storage_class: Some(s3s::dto::StorageClass::from_static(
                self.storage_class_in(bucket, &view.record).await?,
            )),
            restore: self.restorer().restore_header(&view.record).await?,
            ..Default::default()
        };
        let shown = view.shown_headers(overrides.clone());
        let output = crate::headers::show_headers!(output, shown);
        Ok(Some((output, view.record)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_modes_parse_their_names_and_nothing_else() {
        assert_eq!("sync".parse::<RestoreMode>().unwrap(), RestoreMode::Sync);
        assert_eq!("async".parse::<RestoreMode>().unwrap(), RestoreMode::Async);
        assert!("ASYNC".parse::<RestoreMode>().is_err());
        assert!("".parse::<RestoreMode>().is_err());
    }

    #[test]
    fn an_invalid_restore_mode_tag_or_a_repeated_key_is_invalid_tag() {
        let set = |tags: &[(&str, &str)]| Tagging {
            tag_set: tags.iter().map(|(k, v)| tag(k, v)).collect(),
        };
        let error = check_tags(set(&[(RESTORE_MODE_TAG, "later")])).unwrap_err();
        assert_eq!(*error.code(), S3ErrorCode::InvalidTag);
        let error = check_tags(set(&[("a", "1"), ("a", "2")])).unwrap_err();
        assert_eq!(*error.code(), S3ErrorCode::InvalidTag);
        let (mode, tags) = check_tags(set(&[("team", "x"), (RESTORE_MODE_TAG, "async")])).unwrap();
        assert_eq!(mode, Some(RestoreMode::Async));
        assert_eq!(tags, vec![("team".to_string(), "x".to_string())]);
    }

    #[test]
    fn copy_names_are_hex_and_never_contain_the_key() {
        let name = copy_name("bucket/../../etc/passwd", &[7; 32], 1);
        assert_eq!(name.len(), 64);
        assert!(name.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(name, copy_name("bucket/../../etc/passwd", &[7; 32], 2));
    }

    #[test]
    fn expiry_dates_are_rfc_1123_gmt() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
