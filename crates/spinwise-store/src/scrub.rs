//! Scrub (issue 4 item 8): reads every fragment of every stripe of every committed blob
//! (`StripeDecoder::scrub_stripe`: all k + r fragments, crc32c-checked), group by group, in
//! one `Kind::Rebuild` job per blob (upkeep runs under the rebuild share), and rewrites each
//! stack with a bad fragment on a healthy disk with `Store::repair_stack`.
//!
//! Invariants: scrub never changes a good stack; a bad fragment on a failed disk is left to
//! rebuild (counted in `on_failed_disks`); a stripe with fewer than k good fragments is
//! counted unrepairable and its blob left as is (and not recorded as verified, so it stays due).
//! Every blob scrubbed without an unrepairable stripe is recorded verified in the catalog
//! (`Catalog::record_scrub`, durable) and in the caller's in-memory [`ScrubLedger`].
//!
//! Modes: [`ScrubMode::Forced`] (the operator's `spinwise store scrub`: every group, spun up as
//! needed) and [`ScrubMode::Piggyback`] (one group's most overdue blobs within the configured
//! byte budget: what the upkeep task runs when a group is up anyway, see [`crate::upkeep`]).
//! Both hold the upkeep lock ([`crate::lock`]).

use crate::driver::{GroupDisks, Job, Purpose};
use crate::error::RepairFailure;
use crate::error::{StoreError, StoreResult};
use crate::stacks::fetch_from_disks;
use crate::stacks::{blob_code, column_disks};
use crate::store::Store;
use spinwise_catalog::{BlobId, BlobRecord, BlobState, Catalog, GroupIndex};
use spinwise_ec::{DecodeError, RepairReport, StripeDecoder};
use spinwise_sched::scheduler::Kind;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const PAGE: u32 = 256;

/// How a scrub chooses its groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScrubMode {
    /// Every group, spun up as needed, one after another (the operator's command).
    Forced,
    /// `group`'s blobs last verified more than half the scrub interval ago, most overdue first,
    /// within `UpkeepConfig::scrub_bytes_per_spin_up` (at least one blob); meant for a group
    /// that is up anyway (it is spun up if it is not).
    Piggyback { group: GroupIndex },
}

/// What a scrub found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScrubReport {
    pub blobs: u64,
    pub stripes: u64,
    /// Fragments that were missing, short or failed their crc, in stripes beyond repair too.
    pub bad_fragments: u64,
    /// Stacks rewritten in place.
    pub stacks_repaired: u64,
    /// Bad fragments on disks marked failed (rebuild's job, not scrub's).
    pub on_failed_disks: u64,
    /// Stripes with fewer than k good fragments (every one, over all blobs).
    pub stripes_beyond_repair: u64,
    /// One line per blob with stripes beyond repair (naming them; its stacks are left as they
    /// are, since a stack is rewritten whole and that needs every stripe), and one per stack
    /// whose repair failed.
    pub unrepairable: Vec<String>,
}

/// Which blobs a batch takes and when it stops (see `Store::scrub_batch`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchLimits {
    /// Blobs verified before this (or never) are due.
    pub before_unix_ms: i64,
    /// Stripe-stack bytes read before the batch stops (at least one blob is scrubbed).
    pub budget_bytes: u64,
    /// Stop when the group is no longer active (checked before each blob after the first).
    pub only_while_active: bool,
}

/// Stripes beyond repair a blob's line names, at most.
const STRIPES_NAMED: usize = 10;

/// One blob's scrub: the bad fragments met in repairable stripes, and the stripes beyond repair.
struct BlobScrub {
    stripes: u64,
    report: RepairReport,
    beyond_repair: BeyondRepair,
}

/// A blob's stripes that could not be decoded, and their bad fragments.
#[derive(Default)]
struct BeyondRepair {
    stripes: Vec<u64>,
    bad_fragments: u64,
    /// The first stripe's error, in full.
    first_error: Option<String>,
}

impl BeyondRepair {
    fn add(&mut self, stripe: u64, bad_fragments: u64, error: &DecodeError) {
        self.stripes.push(stripe);
        self.bad_fragments += bad_fragments;
        self.first_error.get_or_insert_with(|| error.to_string());
    }

    /// The report's line for `blob`, or `None` when every stripe decoded.
    fn line(&self, blob: BlobId) -> Option<String> {
        let first = self.first_error.as_ref()?;
        let mut named: Vec<String> = self
            .stripes
            .iter()
            .take(STRIPES_NAMED)
            .map(u64::to_string)
            .collect();
        if self.stripes.len() > STRIPES_NAMED {
            named.push(format!("and {} more", self.stripes.len() - STRIPES_NAMED));
        }
        Some(format!(
            "blob {blob}: {} stripe(s) beyond repair ({}), its stacks left as they are; first: {first}",
            self.stripes.len(),
            named.join(", ")
        ))
    }
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
        beyond_repair: BeyondRepair::default(),
    };
    for stripe in 0..stripes {
        match decoder.scrub_stripe(stripe, &mut fetch) {
            Ok(report) => scrub.report.merge(report),
            Err(error) => {
                let bad = match &error {
                    DecodeError::CorruptBeyondRepair { bad, .. } => bad.len() as u64,
                    _ => 0,
                };
                scrub.beyond_repair.add(stripe, bad, &error);
            }
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
    /// Scrubs committed blobs (every one for `Forced`, a budgeted batch of one group's most
    /// overdue for `Piggyback`), repairing bad stacks on healthy disks. Records each verified
    /// blob's scrub time in the catalog and in `ledger`. Holds the upkeep lock.
    pub async fn scrub(
        &self,
        mode: ScrubMode,
        ledger: &ScrubLedger,
        mut progress: impl FnMut(&ScrubReport),
    ) -> StoreResult<ScrubReport> {
        let _upkeep = self.upkeep_lock()?;
        if let ScrubMode::Piggyback { group } = mode {
            let upkeep = &self.config().upkeep;
            let half_interval_ms = (upkeep.scrub_interval_s * 500.0) as i64;
            let before = self.now_unix_ms().saturating_sub(half_interval_ms);
            let budget = upkeep.scrub_bytes_per_spin_up;
            let mut report = ScrubReport::default();
            let limits = BatchLimits {
                before_unix_ms: before,
                budget_bytes: budget,
                only_while_active: false,
            };
            self.scrub_batch(group, limits, ledger, &mut report, || true)
                .await?;
            progress(&report);
            return Ok(report);
        }
        let failed = self.failed_disks().await?;
        let mut report = ScrubReport::default();
        for group in 0..self.layout().groups.len() as u32 {
            let mut after = None;
            loop {
                let blobs = self.catalog().blobs_in_group(group, after, PAGE).await?;
                let Some(last) = blobs.last() else { break };
                after = Some(last.id);
                for blob in blobs.iter().filter(|b| b.state == BlobState::Committed) {
                    self.scrub_and_record(blob, &failed, ledger, &mut report)
                        .await?;
                    progress(&report);
                }
                if blobs.len() < PAGE as usize {
                    break;
                }
            }
        }
        Ok(report)
    }

    pub(crate) async fn failed_disks(&self) -> StoreResult<BTreeSet<u32>> {
        crate::rack::failed_disks(self.catalog()).await
    }

    pub(crate) async fn group_is_active(&self, group: GroupIndex) -> bool {
        self.group_phase(group).await == Some(crate::driver::GroupPhase::Active)
    }

    /// Stripe-stack bytes a scrub of `blob` reads (all k + r stacks).
    pub(crate) fn scrub_cost_bytes(blob: &BlobRecord) -> StoreResult<u64> {
        Ok(blob_code(blob)?.stack_file_bytes(blob.size_bytes) * u64::from(blob.k + blob.r))
    }

    /// Scrubs `group`'s committed blobs verified before `before_unix_ms` (never verified first),
    /// most overdue first, until `budget_bytes` of stacks were read (at least one blob) or
    /// `keep_going` says stop (checked before each blob after the first; so is, with
    /// `only_while_active`, that the group is still active: a job for a group that went down
    /// would spin it up again). Returns how many.
    pub(crate) async fn scrub_batch(
        &self,
        group: GroupIndex,
        limits: BatchLimits,
        ledger: &ScrubLedger,
        report: &mut ScrubReport,
        mut keep_going: impl FnMut() -> bool,
    ) -> StoreResult<u64> {
        let BatchLimits {
            before_unix_ms,
            budget_bytes,
            only_while_active,
        } = limits;
        let failed = self.failed_disks().await?;
        let due = self
            .catalog()
            .scrub_due(group, before_unix_ms, PAGE)
            .await?;
        let mut spent_bytes = 0u64;
        let mut scrubbed = 0;
        for entry in due {
            if scrubbed > 0 && (spent_bytes >= budget_bytes || !keep_going()) {
                break;
            }
            if scrubbed > 0 && only_while_active && !self.group_is_active(group).await {
                break;
            }
            spent_bytes += Self::scrub_cost_bytes(&entry.blob)?;
            self.scrub_and_record(&entry.blob, &failed, ledger, report)
                .await?;
            scrubbed += 1;
        }
        Ok(scrubbed)
    }

    /// [`Self::scrub_one`], then the blob is recorded verified unless a stripe was beyond repair.
    async fn scrub_and_record(
        &self,
        blob: &BlobRecord,
        failed: &BTreeSet<u32>,
        ledger: &ScrubLedger,
        report: &mut ScrubReport,
    ) -> StoreResult<()> {
        let unrepairable_before = report.unrepairable.len();
        self.scrub_one(blob, failed, report).await?;
        ledger.record(
            blob.id,
            UNIX_EPOCH + Duration::from_millis(self.now_unix_ms().max(0) as u64),
        );
        if report.unrepairable.len() == unrepairable_before {
            // The blob may have been removed meanwhile (compaction, deletes): not an error.
            match self
                .catalog()
                .record_scrub(blob.id, self.now_unix_ms().max(1))
                .await
            {
                Ok(()) | Err(spinwise_catalog::CatalogError::UnknownBlob { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    async fn scrub_one(
        &self,
        blob: &BlobRecord,
        failed: &BTreeSet<u32>,
        report: &mut ScrubReport,
    ) -> StoreResult<()> {
        let disks = column_disks(&self.rack_io().disks, blob);
        let job_blob = blob.clone();
        let bytes = Self::scrub_cost_bytes(blob)?;
        let job = Job::new(blob.group, bytes, Kind::Rebuild, move |_: &GroupDisks| {
            scrub_blob(&job_blob, &disks)
        })
        .for_purpose(Purpose::Scrub);
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
        report.bad_fragments +=
            scrub.report.repaired.len() as u64 + scrub.beyond_repair.bad_fragments;
        report.stripes_beyond_repair += scrub.beyond_repair.stripes.len() as u64;
        if let Some(line) = scrub.beyond_repair.line(blob.id) {
            // Until 2026-12-01 only the blob's last such stripe was named and none of their bad
            // fragments counted, so the summary read "0 bad fragment(s)" beside a lost stripe.
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
