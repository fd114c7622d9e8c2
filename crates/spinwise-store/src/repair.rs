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
use crate::error::{StoreError, StoreResult};
use crate::placement::Placement;
use crate::stacks::{fetch_from_disks, stack_name};
use crate::store::Store;
use spinwise_catalog::{BlobId, BlobRecord, Catalog, DiskHealth, RebuildTask};
use spinwise_disk::{Disk, Overwrite};
use spinwise_ec::{Code, StackHeader, StackRebuilder};
use spinwise_model::DiskIndex;
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Catalog page size when listing a disk's blobs or the rebuild queue.
const PAGE: u32 = 512;

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

/// What `fail_disk` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailDiskReport {
    pub disk: DiskIndex,
    /// Rebuild tasks queued now (a repeated call queues the same tasks again, idempotently).
    pub tasks_queued: u64,
}

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

/// The blob's own code (normally the store's; a record's is authoritative).
pub(crate) fn blob_code(blob: &BlobRecord) -> Result<Code, RepairFailure> {
    Code::new(
        blob.k as usize,
        blob.r as usize,
        blob.fragment_bytes as usize,
    )
    .map_err(|error| RepairFailure::Code {
        blob: blob.id,
        k: blob.k,
        r: blob.r,
        fragment_bytes: blob.fragment_bytes,
        message: error.to_string(),
    })
}

/// The disks holding the blob's columns, in column order.
pub(crate) fn column_disks(all: &[Arc<dyn Disk>], blob: &BlobRecord) -> Vec<Arc<dyn Disk>> {
    blob.disks
        .iter()
        .map(|&disk| all[disk as usize].clone())
        .collect()
}

/// Regenerates `blob`'s column `column` from the other columns into `target` (atomic write,
/// replacing an orphan or damaged file). Runs inside a job while the group is up.
pub(crate) fn write_rebuilt_stack(
    blob: &BlobRecord,
    column: u32,
    sources: &[Arc<dyn Disk>],
    target: &dyn Disk,
) -> Result<u64, RepairFailure> {
    let code = blob_code(blob)?;
    let header = StackHeader::new(
        &code,
        column as usize,
        blob.id,
        blob.size_bytes,
        blob.content_hash,
    );
    let stack_bytes = header.stack_file_bytes();
    let mut rebuilder =
        StackRebuilder::new(&code, header, fetch_from_disks(&code, blob.id, sources));
    let name = stack_name(blob.id, column as usize);
    match target.write_file(&name, stack_bytes, &mut rebuilder, Overwrite::Replace) {
        Ok(()) => Ok(stack_bytes),
        Err(error) => Err(match rebuilder.take_failure() {
            Some(decode) => RepairFailure::TooFewFragments {
                blob: blob.id,
                column,
                message: decode.to_string(),
            },
            None => RepairFailure::Write {
                blob: blob.id,
                column,
                disk: target.index(),
                message: error.to_string(),
            },
        }),
    }
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
    pub async fn repair_stack(&self, blob: BlobId, column: u32) -> StoreResult<u64> {
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
