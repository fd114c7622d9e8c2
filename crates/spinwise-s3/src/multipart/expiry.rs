//! Abandoned multipart uploads expire by age: the server-wide counterpart of S3's lifecycle rule
//! AbortIncompleteMultipartUpload (`DaysAfterInitiation`). An upload whose `started_unix_ms` is
//! more than `S3Settings::abandon_uploads_after_s` ago is aborted, so a client that never
//! completes nor aborts does not hold its part files (up to 10,000 × 5 GiB) and one of the
//! `max_open_uploads` slots forever. docs/s3.md ("Multipart upload") documents the rule.
//!
//! Invariants:
//! - an expired upload is aborted exactly as AbortMultipartUpload aborts it
//!   ([`super::remove_upload`]: rows in one transaction, then the part files), with the upload's
//!   lock held exclusively;
//! - the sweep only *tries* that lock: an upload with a completion (or a part upload) in flight
//!   is skipped this round and looked at again next round, so a completion is never broken and
//!   the sweep never waits behind one;
//! - age is wall-clock time since CreateMultipartUpload (as S3's rule counts from initiation,
//!   not from the last part); a setting of 0 starts no sweeper and expires nothing;
//! - one sweep aborts at most [`MAX_ABORTS_PER_SWEEP`] uploads (the oldest first); the sweeper
//!   holds the expiry only while sweeping, so dropping the service stops it.

use super::files::{Multipart, UploadId};
use super::remove_upload;
use super::rows::UploadRow;
use crate::meta::{MetaDb, MetaError};
use crate::service::SpinwiseS3;
use crate::sweeper::{FirstPass, Sweep, sweep_until_dropped};
use spinwise_store::clock::{Clock, Paced, pacing};
use std::sync::Arc;
use std::time::Duration;

/// The most uploads one sweep aborts (the default `max_open_uploads`); more wait for the next.
pub const MAX_ABORTS_PER_SWEEP: u32 = 1000;
/// Sweeps run every eighth of the age limit, but not more often than this...
const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(50);
/// ...nor less often than this (an upload outlives its limit by at most about this much).
const MAX_SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// What the expiry sweeper needs of the service: the upload rows, the part files and the
/// per-upload locks, shared with the [`SpinwiseS3`] that owns it.
pub struct UploadExpiry {
    meta: MetaDb,
    multipart: Arc<Multipart>,
    abandon_after: Duration,
    /// The store's clock: upload ages and the sweeper's wait are on it.
    clock: Arc<dyn Clock>,
    /// The sweeper task's next wake.
    paced: Paced,
}

impl std::fmt::Debug for UploadExpiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadExpiry")
            .field("abandon_after", &self.abandon_after)
            .finish_non_exhaustive()
    }
}

impl UploadExpiry {
    /// Sweeps once (the uploads that expired while the server was down), then starts the
    /// sweeper task; `None` (and nothing swept) when `abandon_after_s` is 0, "never".
    pub async fn start(
        meta: MetaDb,
        multipart: Arc<Multipart>,
        abandon_after_s: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Option<Arc<UploadExpiry>>, MetaError> {
        if abandon_after_s == 0 {
            return Ok(None);
        }
        let (pacing, paced) = pacing();
        let expiry = Arc::new(UploadExpiry {
            meta,
            multipart,
            abandon_after: Duration::from_secs(abandon_after_s),
            clock,
            paced,
        });
        expiry.sweep().await?;
        let weak = Arc::downgrade(&expiry);
        tokio::spawn(sweep_until_dropped(weak, pacing, FirstPass::AfterInterval));
        Ok(Some(expiry))
    }

    /// When the sweeper task next sweeps.
    pub fn paced(&self) -> &Paced {
        &self.paced
    }

    /// Aborts up to [`MAX_ABORTS_PER_SWEEP`] uploads started more than the limit ago, oldest
    /// first, skipping any whose lock is held; returns how many it aborted.
    pub async fn sweep(&self) -> Result<usize, MetaError> {
        let now_ms = self.clock.unix_ms();
        let limit_ms = i64::try_from(self.abandon_after.as_millis()).unwrap_or(i64::MAX);
        let cutoff_unix_ms = now_ms.saturating_sub(limit_ms);
        let expired = self
            .meta
            .uploads_started_before(cutoff_unix_ms, MAX_ABORTS_PER_SWEEP)
            .await?;
        abort_uploads(
            &self.meta,
            &self.multipart,
            &expired,
            now_ms,
            "abandon_uploads_after_s",
        )
        .await
    }

    fn sweep_interval(&self) -> Duration {
        sweep_interval(self.abandon_after)
    }
}

/// Aborts `uploads` as AbortMultipartUpload would, skipping any whose lock is held (a
/// completion or part in flight: looked at again next sweep); `why` names the limit or
/// lifecycle rule in the log. Returns how many it aborted.
pub(crate) async fn abort_uploads(
    meta: &MetaDb,
    multipart: &Multipart,
    uploads: &[UploadRow],
    now_ms: i64,
    why: &str,
) -> Result<usize, MetaError> {
    let mut aborted = 0;
    for upload in uploads {
        let Some(id) = UploadId::parse(&upload.upload_id) else {
            continue; // rows are only ever written with parsed ids
        };
        let Ok(_held) = multipart.lock(&id).try_write() else {
            tracing::debug!(
                upload = upload.upload_id,
                "an expired multipart upload is busy (completion or part in flight); next sweep"
            );
            continue;
        };
        // A completion may have finished between the listing and the lock: then the rows are
        // gone and there is nothing to abort.
        if remove_upload(meta, multipart, &id).await? {
            aborted += 1;
            tracing::info!(
                bucket = upload.bucket,
                key = upload.object_key,
                upload = upload.upload_id,
                age_s = now_ms.saturating_sub(upload.started_unix_ms) / 1000,
                why,
                "aborted an abandoned multipart upload"
            );
        }
    }
    Ok(aborted)
}

/// How often the sweeper runs for an age limit: an eighth of it, within 50 ms..=1 h.
pub fn sweep_interval(abandon_after: Duration) -> Duration {
    (abandon_after / 8).clamp(MIN_SWEEP_INTERVAL, MAX_SWEEP_INTERVAL)
}

/// The sweeper task ([`crate::sweeper`]) holds the expiry only while sweeping, so the
/// metadata database can be closed once the server is gone.
impl Sweep for UploadExpiry {
    fn interval(&self) -> Duration {
        self.sweep_interval()
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    async fn sweep_once(&self) {
        if let Err(error) = self.sweep().await {
            tracing::warn!(%error, "expiring abandoned multipart uploads");
        }
    }
}

impl SpinwiseS3 {
    /// Starts the expiry of abandoned uploads (a first sweep now) per the settings.
    pub(crate) async fn start_upload_expiry(&mut self) -> Result<(), MetaError> {
        self.upload_expiry = UploadExpiry::start(
            self.meta.clone(),
            Arc::clone(&self.multipart),
            self.settings.abandon_uploads_after_s,
            self.store.clock().clone(),
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multipart::rows::{PartRow, UploadRow};

    /// An expiry over a fresh database in `dir` with a one-second limit (no sweeper task).
    async fn expiry_in(dir: &std::path::Path) -> UploadExpiry {
        let meta = MetaDb::open(&dir.join(crate::META_FILE)).await.unwrap();
        UploadExpiry {
            meta,
            multipart: Arc::new(Multipart::new(dir)),
            abandon_after: Duration::from_secs(1),
            clock: Arc::new(spinwise_store::clock::ManualClock::new()),
            paced: pacing().1,
        }
    }

    /// Records an upload started at `started_unix_ms` with one part file; returns its id.
    async fn open_upload(expiry: &UploadExpiry, started_unix_ms: i64) -> UploadId {
        let id = UploadId::random().unwrap();
        let row = UploadRow {
            upload_id: id.hex(),
            bucket: "b".into(),
            object_key: format!("k{started_unix_ms}"),
            content_type: None,
            user_metadata: Default::default(),
            headers: Default::default(),
            started_unix_ms,
        };
        assert!(expiry.meta.insert_upload(&row, 10).await.unwrap());
        expiry.multipart.ensure_upload_dir(&id).await.unwrap();
        std::fs::write(expiry.multipart.part_path(&id, 1, 7), b"part").unwrap();
        let part = PartRow {
            part_number: 1,
            generation: 7,
            size_bytes: 4,
            etag: "00".repeat(16),
            content_hash: [0; 32],
            written_unix_ms: started_unix_ms,
        };
        expiry.meta.put_part(&id.hex(), &part).await.unwrap();
        id
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sweep_skips_a_locked_upload_until_its_lock_is_free_and_spares_young_ones() {
        let dir = tempfile::tempdir().unwrap();
        let expiry = expiry_in(dir.path()).await;
        let now_unix_ms = expiry.clock.unix_ms();
        let old = open_upload(&expiry, now_unix_ms - 60_000).await;
        let young = open_upload(&expiry, now_unix_ms).await;

        // A completion in flight holds the old upload's lock: the sweep leaves it alone.
        let completing = expiry.multipart.lock(&old).write().await;
        assert_eq!(expiry.sweep().await.unwrap(), 0);
        assert!(expiry.meta.upload(&old.hex()).await.unwrap().is_some());
        assert!(expiry.multipart.upload_dir(&old).exists());
        drop(completing);

        assert_eq!(expiry.sweep().await.unwrap(), 1);
        assert_eq!(expiry.meta.upload(&old.hex()).await.unwrap(), None);
        assert!(
            expiry
                .meta
                .parts(&old.hex(), 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(!expiry.multipart.upload_dir(&old).exists());
        assert!(expiry.meta.upload(&young.hex()).await.unwrap().is_some());
        assert!(expiry.multipart.part_path(&young, 1, 7).exists());
        assert_eq!(expiry.sweep().await.unwrap(), 0, "nothing left to expire");
        expiry.meta.close().await;
    }

    #[test]
    fn sweeps_run_every_eighth_of_the_limit_within_50_ms_and_an_hour() {
        assert_eq!(
            sweep_interval(Duration::from_secs(8)),
            Duration::from_secs(1)
        );
        assert_eq!(
            sweep_interval(Duration::from_secs(1)),
            Duration::from_millis(125)
        );
        assert_eq!(
            sweep_interval(Duration::from_millis(100)),
            MIN_SWEEP_INTERVAL
        );
        assert_eq!(
            sweep_interval(Duration::from_secs(7 * 86_400)),
            MAX_SWEEP_INTERVAL
        );
    }
}
