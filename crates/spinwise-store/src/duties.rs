//! The upkeep task's duties besides scrub, so a long-running store (the S3 server) needs no
//! operator: migrating staged objects by policy and rebuilding the stacks of failed disks.
//!
//! - **Demotion** keeps the warm tier (objects written `Warm`, which stay staged) within its
//!   capacity under `warm.when_full = "demote_oldest"`: the oldest warm objects become cold
//!   until the warm bytes are at most [`crate::StoreConfig::warm_capacity_bytes`]. It runs
//!   first, so what it demotes migrates on the same tick.
//! - **Migration** is due when staging holds at least a full bundle (`bundle_bytes`) of cold
//!   objects or its oldest cold object has been staged `migrate_after_s` seconds
//!   ([`crate::UpkeepConfig`]); the task then runs [`Store::flush`], which spins up the groups
//!   it writes to (that is the point: staging holds the warm tier and the cold objects on
//!   their way, the groups are the cold tier).
//! - **Rebuild** is due as soon as a rebuild task is queued (a disk was failed by an operator,
//!   found failed at open, by the check or by a read): the task runs [`Store::rebuild`], whose
//!   jobs go through the scheduler's rebuild share like any rebuild.
//!
//! Invariants: a duty that failed (or left tasks it could not do) is not retried before
//! `scrub_min_spin_up_interval_s` has passed, so a rack that cannot take a blob or a rebuild
//! target is not spun up again on every tick; the duties run on the task's ticks, one at a time,
//! under the upkeep lock the task already holds.

use crate::config::WarmWhenFull;
use crate::error::StoreResult;
use crate::store::Store;
use spinwise_catalog::{Catalog, Tier};
use std::time::Duration;

/// Warm objects read per catalog page while demoting.
const DEMOTION_PAGE: u32 = 256;

/// What the duties did so far (part of [`crate::UpkeepReport`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DutyReport {
    /// Flushes the task started because migration was due.
    pub flushes: u64,
    /// Objects those flushes moved into blobs.
    pub objects_migrated: u64,
    /// Warm objects demoted to cold because the warm tier was over its capacity.
    pub objects_demoted: u64,
    /// Rebuild runs the task started because tasks were queued.
    pub rebuilds: u64,
    /// Stripe stacks those runs rebuilt.
    pub stacks_rebuilt: u64,
}

/// When each duty may run again after a failure, in µs of the store's clock.
#[derive(Debug, Default)]
pub(crate) struct DutyClock {
    migrate_not_before_us: Option<u64>,
    rebuild_not_before_us: Option<u64>,
}

/// How a due migration ended.
enum Migrated {
    /// Not due, or everything staged before it migrated.
    Clean,
    /// It left damaged objects staged (`FlushReport::damaged`).
    LeftDamaged,
}

/// Whether `not_before_us` has passed at `now_us` (or was never set).
fn may_run(not_before_us: Option<u64>, now_us: u64) -> bool {
    not_before_us.is_none_or(|at_us| now_us >= at_us)
}

impl<C: Catalog> Store<C> {
    /// Whether staging holds a full bundle of cold objects or a cold object older than
    /// `migrate_after_s`.
    pub(crate) async fn migration_due(&self, migrate_after_s: f64) -> StoreResult<bool> {
        let stats = self.catalog().stats().await?;
        if stats.staged_objects == stats.warm_objects {
            return Ok(false);
        }
        if stats.staged_bytes.saturating_sub(stats.warm_bytes) >= self.config().bundle_bytes {
            return Ok(true);
        }
        let oldest = self.catalog().staged_objects(Some(Tier::Cold), 1).await?;
        let age_limit_ms = (migrate_after_s * 1000.0) as i64;
        Ok(oldest.first().is_some_and(|object| {
            self.now_unix_ms().saturating_sub(object.created_unix_ms) >= age_limit_ms
        }))
    }

    /// Runs whichever duty is due (migration, then rebuild); failures become `errors` lines.
    pub(crate) async fn run_duties(
        &self,
        clock: &mut DutyClock,
        migrate_after_s: f64,
        retry_after: Duration,
        report: &mut DutyReport,
        errors: &mut Vec<String>,
    ) {
        let retry_after_us = u64::try_from(retry_after.as_micros()).unwrap_or(u64::MAX);
        let retry_at_us = || self.clock().now_us().saturating_add(retry_after_us);
        match self.demote_over_capacity().await {
            Ok(demoted) => report.objects_demoted += demoted,
            Err(error) => errors.push(format!(
                "demoting warm objects over the warm capacity: {error}"
            )),
        }
        if may_run(clock.migrate_not_before_us, self.clock().now_us()) {
            match self.migrate_if_due(migrate_after_s, report).await {
                Ok(Migrated::Clean) => {}
                Ok(Migrated::LeftDamaged) => {
                    // A damaged object stays at the head of the log, old enough to make
                    // migration due at every tick: flush at most once per `migrate_after_s`
                    // instead, as if the oldest object had just been staged.
                    let wait_us = (migrate_after_s * 1e6) as u64;
                    clock.migrate_not_before_us =
                        Some(self.clock().now_us().saturating_add(wait_us));
                }
                Err(error) => {
                    errors.push(format!("migrating staged objects: {error}"));
                    clock.migrate_not_before_us = Some(retry_at_us());
                }
            }
        }
        if may_run(clock.rebuild_not_before_us, self.clock().now_us()) {
            match self.rebuild_if_queued(report).await {
                Ok(0) => {}
                Ok(left) => {
                    errors.push(format!(
                        "rebuild: {left} task(s) could not proceed; retried later"
                    ));
                    clock.rebuild_not_before_us = Some(retry_at_us());
                }
                Err(error) => {
                    errors.push(format!("rebuild: {error}"));
                    clock.rebuild_not_before_us = Some(retry_at_us());
                }
            }
        }
    }

    /// Under `demote_oldest`, demotes the oldest warm objects until the warm tier is within its
    /// capacity; returns how many it demoted. A page at a time, so memory stays bounded.
    pub async fn demote_over_capacity(&self) -> StoreResult<u64> {
        if self.config().warm.when_full != WarmWhenFull::DemoteOldest {
            return Ok(0);
        }
        let capacity_bytes = self.config().warm_capacity_bytes();
        let mut warm_bytes = self.catalog().stats().await?.warm_bytes;
        let mut demoted = 0u64;
        while warm_bytes > capacity_bytes {
            let oldest = self.catalog().warm_objects(DEMOTION_PAGE).await?;
            if oldest.is_empty() {
                break;
            }
            let demoted_before = demoted;
            for object in oldest {
                if warm_bytes <= capacity_bytes {
                    break;
                }
                // A newer version of the key (or a delete) since the page was read is left.
                if self.catalog().demote(&object.key, &object.location).await? {
                    warm_bytes = warm_bytes.saturating_sub(object.size_bytes);
                    demoted += 1;
                }
            }
            if demoted == demoted_before {
                // Every object of the page changed under us: the next tick tries again.
                break;
            }
            // Re-read: PUTs and deletes may have changed the total meanwhile.
            warm_bytes = self.catalog().stats().await?.warm_bytes;
        }
        if demoted > 0 {
            tracing::info!(
                objects = demoted,
                capacity_bytes,
                "upkeep demoted the oldest warm objects to cold"
            );
        }
        Ok(demoted)
    }

    async fn migrate_if_due(
        &self,
        migrate_after_s: f64,
        report: &mut DutyReport,
    ) -> StoreResult<Migrated> {
        if !self.migration_due(migrate_after_s).await? {
            return Ok(Migrated::Clean);
        }
        let flushed = self.flush(|_| {}).await?;
        tracing::info!(
            objects = flushed.objects_moved,
            blobs = flushed.blobs_written,
            damaged = flushed.damaged.len(),
            "upkeep migrated staged objects"
        );
        report.flushes += 1;
        report.objects_migrated += flushed.objects_moved;
        Ok(if flushed.damaged.is_empty() {
            Migrated::Clean
        } else {
            Migrated::LeftDamaged
        })
    }

    /// Rebuilds every queued task; returns how many could not proceed.
    async fn rebuild_if_queued(&self, report: &mut DutyReport) -> StoreResult<usize> {
        if self.catalog().rebuild_tasks(1).await?.is_empty() {
            return Ok(0);
        }
        let rebuilt = self.rebuild(|_| {}).await?;
        tracing::info!(
            stacks = rebuilt.rebuilt.len(),
            failed = rebuilt.failed.len(),
            "upkeep rebuilt the stacks of failed disks"
        );
        report.rebuilds += 1;
        report.stacks_rebuilt += rebuilt.rebuilt.len() as u64;
        Ok(rebuilt.failed.len())
    }
}
