//! Failures and repair (issue 4 item 8): `fail_disk` marks a disk failed everywhere (catalog,
//! driver, the disk itself) and queues one rebuild task per stripe stack it held; `rebuild`
//! drains those tasks, each one a driver job of `Kind::Rebuild` (so the scheduler's rebuild
//! share applies, Pelican §2.3) that regenerates the lost stack with `StackRebuilder` from the
//! other columns onto another disk of the blob's group; `repair_stack` rewrites a damaged stack
//! in place on its own disk (used by scrub; reads repair through `write_rebuilt_stack`, crate::heal).
//!
//! Invariants: a stack is written completely (the disk's atomic `write_file`) before the
//! catalog points at it (`complete_rebuild`), so a crash in between (`rebuild:after-stack`)
//! leaves the task queued and an orphan file on the target, which the next rebuild prefers
//! as its target and replaces (`Overwrite::Replace`); a rebuild target is healthy, holds no other column of the blob, has
//! room, and keeps at most r of the blob's stacks per spread failure component; a task that
//! cannot proceed stays queued and is reported, typed.

use crate::driver::{GroupDisks, Job, Purpose};
use crate::error::{RepairFailure, StoreError, StoreResult};
use crate::heal::{FailDiskReport, HealHook, HealReport};
use crate::placement::Placement;
use crate::stacks::{blob_code, column_disks, stack_name, write_rebuilt_stack};
use crate::store::Store;
use spinwise_catalog::{BlobId, BlobRecord, Catalog, DiskHealth, RebuildTask};
use spinwise_disk::{Disk, PowerState};
use spinwise_model::DiskIndex;
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Catalog page size when listing a disk's blobs or the rebuild queue.
const PAGE: u32 = 512;

/// Where a rebuild is, for progress bars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RebuildProgress {
    /// Tasks finished (rebuilt or failed) in this run.
    pub done: u64,
    /// Tasks seen queued so far in this run (grows if more pages appear).
    pub total: u64,
    pub bytes_written: u64,
}

/// What one `rebuild` run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Each rebuilt stack and the disk it now lives on.
    pub rebuilt: Vec<(RebuildTask, DiskIndex)>,
    /// Tasks that could not proceed; they stay queued.
    pub failed: Vec<(RebuildTask, RepairFailure)>,
    pub bytes_written: u64,
}

/// The rebuild target for `blob`'s `column`: a usable disk of the group holding no other column,
/// with room, keeping the spread rule; one holding an orphan of this stack first (so a crashed
/// rebuild's file is replaced, not leaked), then most free bytes (lowest index on ties).
fn choose_target(
    placement: &Placement,
    group: &GroupDisks,
    blob: &BlobRecord,
    column: u32,
    stack_bytes: u64,
) -> Option<Arc<dyn Disk>> {
    let others: Vec<DiskIndex> = blob
        .disks
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != column as usize)
        .map(|(_, &disk)| disk)
        .collect();
    let name = stack_name(blob.id, column as usize);
    // An orphan of a rebuild that crashed before its catalog commit counts as free space there.
    let mut candidates: Vec<(bool, u64, Arc<dyn Disk>)> = group
        .usable()
        .filter(|disk| !blob.disks.contains(&disk.index()))
        .filter_map(|disk| {
            let space = disk.space().ok()?;
            let orphan_bytes = disk.file_len(&name).ok();
            let free_bytes = space.free_bytes + orphan_bytes.unwrap_or(0);
            (free_bytes >= stack_bytes).then(|| (orphan_bytes.is_some(), free_bytes, disk.clone()))
        })
        .filter(|(_, _, disk)| {
            let mut spread = others.clone();
            spread.push(disk.index());
            placement.within_redundancy(&spread)
        })
        .collect();
    // A disk holding the orphan first (the rewrite replaces it), then most free bytes.
    candidates.sort_by(|a, b| {
        (b.0, b.1)
            .cmp(&(a.0, a.1))
            .then(a.2.index().cmp(&b.2.index()))
    });
    candidates.into_iter().next().map(|(_, _, disk)| disk)
}

impl<C: Catalog> Store<C> {
    /// Marks `disk` failed in the catalog, the driver and the disk, and queues one rebuild task
    /// per stripe stack it holds. Idempotent. Refuses an index outside the rack.
    pub async fn fail_disk(&self, disk: u64) -> StoreResult<FailDiskReport> {
        let disks = self.rack_io().disks.len();
        let index = DiskIndex::try_from(disk)
            .ok()
            .filter(|&index| (index as usize) < disks)
            .ok_or(StoreError::UnknownDisk { disk, disks })?;
        self.catalog()
            .set_disk_health(index, DiskHealth::Failed)
            .await?;
        let _ = self.rack_io().driver.mark_failed(index).await;
        self.rack_io().disks[index as usize].mark_failed();
        let mut report = FailDiskReport {
            disk: index,
            tasks_queued: 0,
        };
        let mut after = None;
        loop {
            let blobs = self.catalog().blobs_on_disk(index, after, PAGE).await?;
            let Some(last) = blobs.last() else { break };
            after = Some(last.id);
            let tasks: Vec<RebuildTask> = blobs
                .iter()
                .flat_map(|blob| {
                    blob.disks
                        .iter()
                        .enumerate()
                        .filter(|(_, on)| **on == index)
                        .map(|(column, _)| RebuildTask {
                            blob: blob.id,
                            column: column as u32,
                            failed_disk: index,
                        })
                })
                .collect();
            report.tasks_queued += tasks.len() as u64;
            self.catalog().add_rebuild_tasks(tasks).await?;
            if blobs.len() < PAGE as usize {
                break;
            }
        }
        Ok(report)
    }

    /// Drains the rebuild queue: every task becomes a `Kind::Rebuild` job on its blob's group
    /// that writes the rebuilt stack to a new disk, then the catalog points at it. Tasks that
    /// cannot proceed are reported and stay queued. `progress` is called after each task.
    pub async fn rebuild(
        &self,
        mut progress: impl FnMut(RebuildProgress),
    ) -> StoreResult<RebuildReport> {
        let _upkeep = self.upkeep_lock()?;
        let mut report = RebuildReport::default();
        let mut seen: BTreeSet<(BlobId, u32)> = BTreeSet::new();
        let mut state = RebuildProgress::default();
        loop {
            // Failed tasks stay queued, so read past them: ask for enough to see new ones.
            let limit = PAGE + report.failed.len() as u32;
            let mut tasks: Vec<RebuildTask> = self
                .catalog()
                .rebuild_tasks(limit)
                .await?
                .into_iter()
                .filter(|task| !seen.contains(&(task.blob, task.column)))
                .collect();
            if tasks.is_empty() {
                break;
            }
            state.total += tasks.len() as u64;
            let mut blobs = Vec::with_capacity(tasks.len());
            for task in tasks.drain(..) {
                seen.insert((task.blob, task.column));
                let blob = self.catalog().blob(task.blob).await?;
                blobs.push((task, blob));
            }
            // Group by group, so each group spins up once for its batch.
            blobs.sort_by_key(|(task, blob)| (blob.as_ref().map(|b| b.group), task.clone()));
            for (task, blob) in blobs {
                match self.rebuild_one(&task, blob).await {
                    Ok((target, bytes)) => {
                        report.bytes_written += bytes;
                        state.bytes_written += bytes;
                        report.rebuilt.push((task, target));
                    }
                    Err(failure) => report.failed.push((task, failure)),
                }
                state.done += 1;
                progress(state);
            }
        }
        Ok(report)
    }

    async fn rebuild_one(
        &self,
        task: &RebuildTask,
        blob: Option<BlobRecord>,
    ) -> Result<(DiskIndex, u64), RepairFailure> {
        // Read the record again: an earlier task of this run may have moved another column.
        let fresh = match blob {
            Some(_) => self.catalog().blob(task.blob).await.ok().flatten(),
            None => None,
        };
        let blob = fresh.ok_or(RepairFailure::BlobGone {
            blob: task.blob,
            column: task.column,
        })?;
        let column = task.column;
        let code = blob_code(&blob)?;
        let stack_bytes = code.stack_file_bytes(blob.size_bytes);
        let sources = column_disks(&self.rack_io().disks, &blob);
        let placement = self.rack_io().placement.clone();
        let job_blob = blob.clone();
        let job = Job::new(
            blob.group,
            stack_bytes,
            Kind::Rebuild,
            move |group: &GroupDisks| {
                let target = choose_target(&placement, group, &job_blob, column, stack_bytes)
                    .ok_or(RepairFailure::NoTarget {
                        blob: job_blob.id,
                        column,
                        group: job_blob.group,
                    })?;
                let bytes = write_rebuilt_stack(&job_blob, column, &sources, target.as_ref())?;
                Ok::<_, RepairFailure>((target.index(), bytes))
            },
        );
        let (target, bytes) = self.run_repair_job(job, &blob, column).await?;
        crate::crash::point("rebuild:after-stack");
        self.catalog()
            .complete_rebuild(task.clone(), target)
            .await
            .map_err(|error| RepairFailure::Driver {
                blob: blob.id,
                column,
                message: format!("catalog: {error}"),
            })?;
        Ok((target, bytes))
    }

    async fn run_repair_job<T: Send + 'static>(
        &self,
        job: Job<Result<T, RepairFailure>>,
        blob: &BlobRecord,
        column: u32,
    ) -> Result<T, RepairFailure> {
        let lost = |message: String| RepairFailure::Driver {
            blob: blob.id,
            column,
            message,
        };
        let handle = self
            .rack_io()
            .driver
            .submit(job)
            .await
            .map_err(|error| lost(error.to_string()))?;
        let done = handle
            .wait()
            .await
            .map_err(|error| lost(error.to_string()))?;
        done.output
    }

    /// Rewrites `blob`'s column `column` in place on its own disk from the other columns
    /// (`Overwrite::Replace`), under the rebuild share. For a damaged stack on a healthy disk.
    pub(crate) async fn repair_stack(&self, blob: BlobId, column: u32) -> StoreResult<u64> {
        let record = self
            .catalog()
            .blob(blob)
            .await?
            .ok_or(StoreError::UnknownBlob { blob })?;
        let disk = *record
            .disks
            .get(column as usize)
            .ok_or(StoreError::UnknownColumn {
                blob,
                column,
                columns: record.disks.len(),
            })?;
        let code = blob_code(&record)?;
        let stack_bytes = code.stack_file_bytes(record.size_bytes);
        let sources = column_disks(&self.rack_io().disks, &record);
        let target = self.rack_io().disks[disk as usize].clone();
        let job_blob = record.clone();
        let job = Job::new(
            record.group,
            stack_bytes,
            Kind::Rebuild,
            move |_: &GroupDisks| write_rebuilt_stack(&job_blob, column, &sources, target.as_ref()),
        )
        .for_purpose(Purpose::Repair);
        Ok(self.run_repair_job(job, &record, column).await?)
    }
}

/// Heal's side of the store (crate::heal): the hook reads call, and settling what they queued.
impl<C: Catalog> Store<C> {
    /// The hook a read's job calls when it is done (see the module documentation).
    pub(crate) fn heal_hook(&self) -> HealHook {
        HealHook {
            driver: self.rack_io().driver.clone(),
            state: self.heal_state().clone(),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Waits for every repair reads queued so far and records every failed disk they found
    /// (`fail_disk`: catalog, driver, rebuild tasks). Returns what happened since the last call.
    pub async fn settle_repairs(&self) -> StoreResult<HealReport> {
        let disks_failed = self.record_failed_disks().await?;
        Ok(self.heal_state().settle(disks_failed).await)
    }

    /// Records as failed every disk found failed (by reads, checks, or at open) that the
    /// catalog still lists healthy; returns what `fail_disk` queued for each.
    pub(crate) async fn record_failed_disks(&self) -> StoreResult<Vec<FailDiskReport>> {
        let found = self.heal_state().take_found_failed();
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let known = crate::rack::failed_disks(self.catalog()).await?;
        let mut reports = Vec::new();
        for disk in found.difference(&known) {
            tracing::warn!(
                disk,
                "disk found failed (unreadable or removed): queueing its rebuild"
            );
            reports.push(self.fail_disk(u64::from(*disk)).await?);
        }
        Ok(reports)
    }

    /// At open: every disk that opened failed (its directory is gone, or it carries the failed
    /// marker) is recorded failed. No disk IO: the disks report it without spinning up.
    pub(crate) async fn record_disks_failed_at_open(&self) -> StoreResult<Vec<FailDiskReport>> {
        for disk in &self.rack_io().disks {
            if disk.power_state() == PowerState::Failed {
                self.heal_state().found_failed(disk.index());
            }
        }
        self.record_failed_disks().await
    }
}
