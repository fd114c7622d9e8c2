//! Self-healing (issue 4 items 1 and 8): what the store does on its own when a read or a check
//! meets damage, instead of only reporting it.
//!
//! - **Repair on read.** When a migrated GET reads around a bad fragment whose disk is healthy
//!   (a flipped byte, a missing or short stack), the read's job queues a `Kind::Rebuild` job on
//!   the same group that rewrites that stack in place (the rebuild path's
//!   `write_rebuilt_stack`, `Overwrite::Replace`). It is submitted from inside the read's job,
//!   *before* that job returns, so the group still has queued work when the read ends and the
//!   scheduler serves the repair on the same spin-up: a read never spins a group up a second
//!   time for its repair. [`Store::settle_repairs`] waits for every repair queued so far and
//!   reports each (rewritten, or why not); [`Store::close`](crate::Store) calls it, so a CLI
//!   process never exits before a repair it started is durable.
//! - **Failed-disk detection.** A disk is *failed* when it is unreadable, removed or marked
//!   failed: the disk itself answers `PowerState::Failed` (the emulated disk does so when its
//!   directory vanished or it carries the failed marker; the driver marks a disk failed when its
//!   spin-up fails). A disk in standby, or one the audit withheld from a spin-up, is **not**
//!   failed. Such a disk is recorded (`Store::fail_disk`: catalog, driver, rebuild tasks for its
//!   stacks) when the store notices it: at open (a disk that opens failed), by the start-up
//!   check, and by a read whose blob has a column on it. Rebuild stays the operator's (or a
//!   daemon's) `rebuild` call: it needs the group up for a long time, under the rebuild share.
//!
//! Invariants: a repair writes only the stack of a column whose disk answered the read (active,
//! not failed) and replaces it atomically, so a crash mid-repair leaves the old (damaged) stack,
//! which the next read or scrub repairs again; a repair that cannot be queued or fails is
//! reported, never a panic, and never fails the read whose bytes were already verified.

use crate::driver::{Driver, GroupDisks, Job, JobHandle, Purpose};
use crate::error::RepairFailure;
use crate::stacks::{blob_code, write_rebuilt_stack};
use serde::Serialize;
use spinwise_catalog::{BlobId, BlobRecord};
use spinwise_disk::{Disk, DiskIndex, PowerState};
use spinwise_ec::RepairReport;
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// One stack a read found damaged on a healthy disk.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DamagedStack {
    pub blob: BlobId,
    pub column: u32,
    pub disk: DiskIndex,
}

/// What `fail_disk` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailDiskReport {
    pub disk: DiskIndex,
    /// Rebuild tasks queued now (a repeated call queues the same tasks again, idempotently).
    pub tasks_queued: u64,
}

/// What became of the repairs queued by reads, and the failed disks reads found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealReport {
    /// Stacks rewritten in place (durable when reported).
    pub repaired: Vec<DamagedStack>,
    /// Stacks that could not be repaired, and why (they stay damaged; scrub tries again).
    pub failed: Vec<(DamagedStack, String)>,
    /// Disks found failed and now recorded so, with the rebuild tasks queued for them.
    pub disks_failed: Vec<FailDiskReport>,
}

impl HealReport {
    pub fn is_empty(&self) -> bool {
        self.repaired.is_empty() && self.failed.is_empty() && self.disks_failed.is_empty()
    }
}

/// Read repairs and failed-disk findings of this process (counters for `status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HealCounters {
    pub stacks_repaired: u64,
    pub repairs_failed: u64,
    pub disks_found_failed: u64,
}

type RepairHandle = JobHandle<Result<u64, RepairFailure>>;

/// What reads have queued and found, until [`Store::settle_repairs`] collects it.
#[derive(Debug, Default)]
pub struct HealState {
    pending: Mutex<Vec<(DamagedStack, RepairHandle)>>,
    /// Repairs refused before they ran (the driver stopped, the disk was not spun up).
    refused: Mutex<Vec<(DamagedStack, String)>>,
    found_failed: Mutex<BTreeSet<DiskIndex>>,
    counters: Mutex<HealCounters>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("the heal state's lock is never held across a panic")
}

impl HealState {
    pub fn counters(&self) -> HealCounters {
        *lock(&self.counters)
    }

    /// Notes a disk that answered `Failed` (recorded in the catalog by `settle_repairs`).
    pub(crate) fn found_failed(&self, disk: DiskIndex) {
        lock(&self.found_failed).insert(disk);
    }

    /// The disks found failed since the last call.
    pub(crate) fn take_found_failed(&self) -> BTreeSet<DiskIndex> {
        std::mem::take(&mut *lock(&self.found_failed))
    }

    /// Waits for every repair queued so far and reports each (rewritten, or why not), with
    /// `disks_failed` (what recording the failed disks found did); adds all to the counters.
    pub(crate) async fn settle(&self, disks_failed: Vec<FailDiskReport>) -> HealReport {
        let mut report = HealReport {
            disks_failed,
            ..HealReport::default()
        };
        let pending = std::mem::take(&mut *lock(&self.pending));
        for (damaged, handle) in pending {
            match handle.wait().await {
                Ok(done) => match done.output {
                    Ok(_) => report.repaired.push(damaged),
                    Err(failure) => report.failed.push((damaged, failure.to_string())),
                },
                Err(lost) => report.failed.push((damaged, lost.to_string())),
            }
        }
        report
            .failed
            .extend(std::mem::take(&mut *lock(&self.refused)));
        let mut counters = lock(&self.counters);
        counters.stacks_repaired += report.repaired.len() as u64;
        counters.repairs_failed += report.failed.len() as u64;
        counters.disks_found_failed += report.disks_failed.len() as u64;
        report
    }
}

/// What a read's job needs to queue repairs: the driver, the shared state and the runtime (the
/// job runs on a blocking thread, outside the runtime's async context).
#[derive(Clone)]
pub(crate) struct HealHook {
    pub driver: Driver,
    pub state: Arc<HealState>,
    pub runtime: tokio::runtime::Handle,
}

impl HealHook {
    /// Runs at the end of a read's job, while its group is still up: notes every column disk
    /// that answers `Failed`, and queues an in-place repair of every stack with a bad fragment
    /// on an active disk. `columns` are the blob's disks in column order.
    pub(crate) fn after_read(
        &self,
        blob: &BlobRecord,
        columns: &[Arc<dyn Disk>],
        report: &RepairReport,
    ) {
        for disk in columns {
            if disk.power_state() == PowerState::Failed {
                self.state.found_failed(disk.index());
            }
        }
        let bad: BTreeSet<usize> = report.repaired.iter().map(|bad| bad.column).collect();
        for column in bad {
            let Some(disk) = columns.get(column) else {
                continue;
            };
            let damaged = DamagedStack {
                blob: blob.id,
                column: column as u32,
                disk: disk.index(),
            };
            match disk.power_state() {
                PowerState::Failed => {}
                PowerState::Standby => lock(&self.state.refused).push((
                    damaged,
                    "its disk was not spun up for the read (withheld)".to_string(),
                )),
                PowerState::Active => self.queue_repair(blob, columns, damaged),
            }
        }
    }

    fn queue_repair(&self, blob: &BlobRecord, columns: &[Arc<dyn Disk>], damaged: DamagedStack) {
        let stack_bytes = match blob_code(blob) {
            Ok(code) => code.stack_file_bytes(blob.size_bytes),
            Err(failure) => {
                lock(&self.state.refused).push((damaged, failure.to_string()));
                return;
            }
        };
        let sources = columns.to_vec();
        let target = columns[damaged.column as usize].clone();
        let job_blob = blob.clone();
        let column = damaged.column;
        let job = Job::new(
            blob.group,
            stack_bytes,
            Kind::Rebuild,
            move |_: &GroupDisks| write_rebuilt_stack(&job_blob, column, &sources, target.as_ref()),
        )
        .for_purpose(Purpose::Repair);
        // A blocking thread of the runtime: `block_on` is allowed here, and waits only for the
        // driver to accept the job (not for the job to run).
        match self.runtime.block_on(self.driver.submit(job)) {
            Ok(handle) => lock(&self.state.pending).push((damaged, handle)),
            Err(refused) => lock(&self.state.refused).push((damaged, refused.to_string())),
        }
    }
}
