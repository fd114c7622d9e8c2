//! [`StoreError`]: everything the store refuses or fails at, each with the message a user needs
//! (the CLI prints it as its one-line reason).

use crate::staging::StagingError;
use spinwise_catalog::{BlobId, CatalogError};
use spinwise_model::DiskIndex;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Staging log failures, among them `StagingError::Full` (staging limit reached; nothing of
    /// the PUT became visible) and `StagingError::Corrupt` (a chunk failed its crc32c).
    #[error(transparent)]
    Staging(#[from] StagingError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Config { path: String, message: String },
    #[error("{path} already holds a store (store.toml exists)")]
    AlreadyInitialized { path: String },
    #[error("{path} holds no store (no store.toml); run `spinwise store --data DIR init` first")]
    NotInitialized { path: String },
    /// The catalog is missing, empty or unreadable while the data directory holds what only a
    /// catalog can name (see [`crate::survey`]): the store refuses to open and deleted nothing.
    #[error(
        "catalog {catalog} is {condition}, but {data_dir} holds {staging_segments} staging segment(s) and {stripe_stacks} stripe stack(s) that only a catalog can name; nothing was deleted; restore the catalog file (e.g. from a backup) or run `spinwise store --data {data_dir} recover` to rebuild it from them"
    )]
    CatalogLost {
        data_dir: String,
        catalog: String,
        /// `missing`, `empty`, or `unreadable (why)`.
        condition: String,
        staging_segments: u64,
        stripe_stacks: u64,
    },
    #[error(
        "object keys are 1 to {max} bytes of UTF-8; this one is {length_bytes} bytes",
        max = crate::staging::MAX_KEY_BYTES
    )]
    KeyLength { length_bytes: usize },
    #[error("no such key: `{key}`")]
    NoSuchKey { key: String },
    #[error("range {start}..{end} is outside `{key}`'s {size_bytes} bytes")]
    Range {
        key: String,
        start: u64,
        end: u64,
        size_bytes: u64,
    },
    #[error(transparent)]
    Disk(#[from] spinwise_disk::DiskError),
    #[error("the disk driver: {0}")]
    Driver(String),
    #[error(
        "`{key}` (blob {blob}) is corrupt beyond repair in stripe {stripe}: fewer than k good fragments ({fragments})"
    )]
    CorruptBeyondRepair {
        key: String,
        blob: BlobId,
        stripe: u64,
        fragments: String,
    },
    #[error("reading `{key}` (blob {blob}) failed: {message}")]
    Decode {
        key: String,
        blob: BlobId,
        message: String,
    },
    /// A whole-object read with `ContentCheck::WholeObject` returned bytes whose BLAKE3 is not
    /// the one recorded at PUT (every chunk passed its crc32c: a fault above the checksums).
    #[error(
        "`{key}` failed its whole-object BLAKE3 check: the bytes read are not the bytes stored"
    )]
    ContentHashMismatch { key: String },
    /// A warm PUT met a full warm tier under `warm.when_full = "refuse"`: nothing was written.
    #[error(
        "the warm tier holds {warm_bytes} bytes, at or above its capacity of {capacity_bytes}: warm PUTs are refused until lifecycle transitions or deletes make room (cold PUTs still go through); retry later"
    )]
    WarmFull {
        warm_bytes: u64,
        capacity_bytes: u64,
    },
    #[error("the scheduler refused to queue `{key}`: {reason}; retry later")]
    Busy { key: String, reason: String },
    /// The caller's `before_commit` step of [`crate::Store::put_with`] failed: nothing was
    /// committed.
    #[error("the PUT of `{key}` was abandoned before its commit: {reason}")]
    CommitRefused { key: String, reason: String },
    /// No group has k + r healthy disks with room for the blob (or its group cannot spread it).
    #[error(transparent)]
    Placement(#[from] crate::placement::PlacementError),
    /// Writing a blob's stripe stacks failed; its objects stay staged and readable.
    #[error("migrating blob {blob} failed (its objects stay staged): {reason}")]
    Migration { blob: BlobId, reason: String },
    #[error("compacting blob {blob} failed (its objects stay where they are): {reason}")]
    Compaction { blob: BlobId, reason: String },
    #[error("disk {disk} is not in the rack (it has {disks} disks, 0..{disks})")]
    UnknownDisk { disk: u64, disks: usize },
    #[error("blob {blob} is not in the catalog")]
    UnknownBlob { blob: BlobId },
    #[error("blob {blob} has no column {column} (it has {columns})")]
    UnknownColumn {
        blob: BlobId,
        column: u32,
        columns: usize,
    },
    #[error(transparent)]
    Repair(#[from] RepairFailure),
    /// Another process holds `DATA/upkeep.lock` (it runs flush, rebuild, scrub or upkeep).
    #[error(
        "another process holds the upkeep lock {path} (a flush, rebuild, scrub or upkeep is running there); try again when it ends"
    )]
    UpkeepBusy { path: String },
}

/// Why one stack could not be rebuilt or repaired (the task stays queued).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepairFailure {
    #[error("blob {blob} column {column}: too few good fragments to rebuild: {message}")]
    TooFewFragments {
        blob: BlobId,
        column: u32,
        message: String,
    },
    #[error(
        "blob {blob} column {column}: no disk of group {group} is healthy, free of the blob, roomy and within the failure-domain spread"
    )]
    NoTarget {
        blob: BlobId,
        column: u32,
        group: u32,
    },
    #[error("blob {blob} column {column}: writing the stack to disk {disk} failed: {message}")]
    Write {
        blob: BlobId,
        column: u32,
        disk: DiskIndex,
        message: String,
    },
    #[error("blob {blob} column {column}: the blob is gone from the catalog")]
    BlobGone { blob: BlobId, column: u32 },
    #[error("blob {blob} column {column}: the driver lost or refused the job: {message}")]
    Driver {
        blob: BlobId,
        column: u32,
        message: String,
    },
    #[error("blob {blob}: its code ({k}+{r}, {fragment_bytes} B) is invalid: {message}")]
    Code {
        blob: BlobId,
        k: u32,
        r: u32,
        fragment_bytes: u32,
        message: String,
    },
}

pub type StoreResult<T> = Result<T, StoreError>;

pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}
