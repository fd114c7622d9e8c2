//! Scrub (issue 4 item 8): reads every fragment of every stripe of every committed blob
//! (`StripeDecoder::scrub_stripe`: all k + r fragments, crc32c-checked), group by group, in
//! one `Kind::Rebuild` job per blob (upkeep runs under the rebuild share), and rewrites each
//! stack with a bad fragment on a healthy disk with `Store::repair_stack`.
//!
//! Invariants: scrub never changes a good stack; a bad fragment on a failed disk is left to
//! rebuild (counted in `on_failed_disks`); a stripe with fewer than k good fragments is
//! counted unrepairable and its blob left as is. The last-scrub time of each blob is kept in
//! memory only (durable scrub bookkeeping is future work).
//!
//! Only the operator's forced scrub (`ScrubMode::Forced`, `spinwise store scrub`) exists here;
//! piggyback scrubbing on spin-ups that happen anyway is not implemented yet.

use crate::driver::{GroupDisks, Job};
use crate::error::{StoreError, StoreResult};
use crate::repair::{RepairFailure, blob_code, column_disks};
use crate::stacks::fetch_from_disks;
use crate::store::Store;
use spinwise_catalog::{BlobId, BlobRecord, BlobState, Catalog, DiskHealth};
use spinwise_ec::{DecodeError, RepairReport, StripeDecoder};
use spinwise_sched::scheduler::Kind;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::SystemTime;

const PAGE: u32 = 256;

/// How a scrub chooses its groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScrubMode {
    /// Every group, spun up as needed, one after another (the operator's command).
    Forced,
}

/// What a scrub found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScrubReport {
    pub blobs: u64,
    pub stripes: u64,
    /// Fragments that were missing, short or failed their crc.
    pub bad_fragments: u64,
    /// Stacks rewritten in place.
    pub stacks_repaired: u64,
    /// Bad fragments on disks marked failed (rebuild's job, not scrub's).
    pub on_failed_disks: u64,
    /// Stripes with fewer than k good fragments, and stacks whose repair failed, one line each.
    pub unrepairable: Vec<String>,
}

/// One blob's scrub: the bad fragments met, or the stripe that was beyond repair.
struct BlobScrub {
    stripes: u64,
    report: RepairReport,
    beyond_repair: Option<String>,
}

fn scrub_blob(
    blob: &BlobRecord,
    disks: &[std::sync::Arc<dyn spinwise_disk::Disk>],
) -> Result<BlobScrub, RepairFailure> {
    let code = blob_code(blob)?;
    let stripes = code.stripes_for(blob.size_bytes);
    let mut decoder = StripeDecoder::new(&code, blob.size_bytes);
    let mut fetch = fetch_from_disks(&code, blob.id, disks);
    let mut scrub = BlobScrub {
        stripes,
        report: RepairReport::default(),
        beyond_repair: None,
    };
    for stripe in 0..stripes {
        match decoder.scrub_stripe(stripe, &mut fetch) {
            Ok(report) => scrub.report.merge(report),
            Err(error @ DecodeError::CorruptBeyondRepair { .. }) => {
                scrub.beyond_repair = Some(format!("blob {}: {error}", blob.id));
            }
            Err(error) => scrub.beyond_repair = Some(format!("blob {}: {error}", blob.id)),
        }
    }
    Ok(scrub)
}

/// Per-blob last-scrub times (in memory; lost on restart).
#[derive(Debug, Default)]
pub struct ScrubLedger {
    last_scrub: Mutex<BTreeMap<BlobId, SystemTime>>,
}

impl ScrubLedger {
    pub fn record(&self, blob: BlobId, at: SystemTime) {
        self.last_scrub
            .lock()
            .expect("scrub ledger poisoned")
            .insert(blob, at);
    }

    pub fn last_scrub(&self, blob: BlobId) -> Option<SystemTime> {
        self.last_scrub
            .lock()
            .expect("scrub ledger poisoned")
            .get(&blob)
            .copied()
    }
}

impl<C: Catalog> Store<C> {
    /// Scrubs every committed blob, group by group, repairing bad stacks on healthy disks.
    /// Records each blob's scrub time in `ledger`.
    pub async fn scrub(
        &self,
        mode: ScrubMode,
        ledger: &ScrubLedger,
        mut progress: impl FnMut(&ScrubReport),
    ) -> StoreResult<ScrubReport> {
        let ScrubMode::Forced = mode;
        let failed: BTreeSet<u32> = self
            .catalog()
            .unhealthy_disks()
            .await?
            .into_iter()
            .filter(|record| record.health == DiskHealth::Failed)
            .map(|record| record.disk)
            .collect();
        let mut report = ScrubReport::default();
        for group in 0..self.layout().groups.len() as u32 {
            let mut after = None;
            loop {
                let blobs = self.catalog().blobs_in_group(group, after, PAGE).await?;
                let Some(last) = blobs.last() else { break };
                after = Some(last.id);
                for blob in blobs.iter().filter(|b| b.state == BlobState::Committed) {
                    self.scrub_one(blob, &failed, &mut report).await?;
                    ledger.record(blob.id, SystemTime::now());
                    progress(&report);
                }
                if blobs.len() < PAGE as usize {
                    break;
                }
            }
        }
        Ok(report)
    }

    async fn scrub_one(
        &self,
        blob: &BlobRecord,
        failed: &BTreeSet<u32>,
        report: &mut ScrubReport,
    ) -> StoreResult<()> {
        let disks = column_disks(&self.rack_io().disks, blob);
        let job_blob = blob.clone();
        let bytes = blob_code(blob)?.stack_file_bytes(blob.size_bytes) * u64::from(blob.k + blob.r);
        let job = Job::new(blob.group, bytes, Kind::Rebuild, move |_: &GroupDisks| {
            scrub_blob(&job_blob, &disks)
        });
        let handle = self
            .rack_io()
            .driver
            .submit(job)
            .await
            .map_err(|error| StoreError::Driver(error.to_string()))?;
        let scrub = handle
            .wait()
            .await
            .map_err(|error| StoreError::Driver(error.to_string()))?
            .output?;
        report.blobs += 1;
        report.stripes += scrub.stripes;
        report.bad_fragments += scrub.report.repaired.len() as u64;
        if let Some(line) = scrub.beyond_repair {
            report.unrepairable.push(line);
            return Ok(());
        }
        let bad_columns: BTreeSet<usize> =
            scrub.report.repaired.iter().map(|bad| bad.column).collect();
        for column in bad_columns {
            let count = scrub
                .report
                .repaired
                .iter()
                .filter(|bad| bad.column == column)
                .count() as u64;
            if failed.contains(&blob.disks[column]) {
                report.on_failed_disks += count;
                continue;
            }
            match self.repair_stack(blob.id, column as u32).await {
                Ok(_) => report.stacks_repaired += 1,
                Err(error) => report
                    .unrepairable
                    .push(format!("blob {} column {column}: {error}", blob.id)),
            }
        }
        Ok(())
    }
}
