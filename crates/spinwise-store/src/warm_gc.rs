//! The warm tier's collector (issue 33 items 2 and 4): reclaims the dead records that deletes
//! and overwrites of warm objects leave in the staging log. Warm records share warm-only
//! segments (crate::staging), and a segment is freed only whole, so a segment whose dead
//! bytes reach `warm.collect_dead_fraction` of its length has its live warm records copied on
//! ([`StagingLog::copy_record`]: read whole and verified, appended as a *moved* record that
//! carries the place the object was first written) and is then freed. This is Gecko's
//! cleaning: the victims are taken oldest first, from the log's head, and the copies go to the
//! log's tail (move-to-tail; with one staging directory compact-in-body writes the same place,
//! docs/store.md "The warm tier's collector").
//!
//! One record moved is one unit. Between units the collector asks spinwise-gc's policy, the one
//! the simulator and the store's compaction ask: semi-preemptive (the default) lets the PUTs
//! and staged GETs in flight when a unit comes due end first while the staging log's free
//! space is at or above
//! `warm.collect_hard_free_fraction`, for at most `warm.collect_max_yield_s` per unit;
//! non-preemptive moves a segment's records back to back.
//!
//! Per record: copy (fsynced) → `warm-gc:after-copy` → `Catalog::restage` (only if the object
//! is still at the old place) → `warm-gc:after-restage`; per segment, the staging reclaim frees
//! it once the catalog, asked after claiming it, names nothing in it.
//!
//! Invariants:
//! - never loses an acknowledged object: the object points at its old record until the
//!   restage moves it, atomically, to a copy already durable; a delete or overwrite meanwhile
//!   wins (the restage changes nothing, and the copy is a dead record, collected in turn);
//! - a copy keeps its original's origin, so a lost catalog's recovery ranks it where the
//!   original was, never above a version written after the original;
//! - a segment is freed by the staging reclaim alone (claimed, then the catalog asked);
//! - only warm objects are moved (a demoted one in a warm segment leaves with migration);
//! - memory: one page of the catalog's records of a segment and one copy's chunks; the caller
//!   holds the upkeep lock, so one process collects at a time.

use crate::compact::wait_between_units;
use crate::config::{WarmCollector, WarmConfig, check_dead_fraction};
use crate::crash;
use crate::error::{StoreError, StoreResult};
pub use crate::staging::WarmCollectReport;
use crate::staging::{Placement, StagingError};
use crate::store::Store;
use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord, SegmentId, SegmentUsage, Tier};
use spinwise_gc::{GcPolicy, GcThresholds, GcView};

/// Records of a victim read from the catalog per page.
const PAGE: u32 = 256;
/// Segments' usage read from the catalog per page: a bound on each answer (a collection weighs
/// every segment, page by page, so a log of many small segments is weighed whole).
const USAGE_PAGE: u32 = 4096;

/// Which segments one collection takes and when it stops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WarmCollectLimits {
    /// A segment is collected when its dead bytes reach this fraction of its length.
    pub min_dead_fraction: f64,
    /// Payload bytes moved before the collection stops (at least one segment is collected).
    pub budget_bytes: u64,
}

/// A segment worth collecting.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Victim {
    segment: SegmentId,
    dead_fraction: f64,
}

/// The policy asked between units: the configured mode, the hard threshold in thousandths
/// of the staging limit (soft one above: the store starts a collection by its own rule, the
/// dead fraction, so only the hard threshold plays a part; as in crate::compact).
fn warm_policy(warm: &WarmConfig) -> GcPolicy {
    let hard_free_blocks = ((warm.collect_hard_free_fraction * 1000.0).ceil() as u64).max(1);
    let thresholds = GcThresholds::new(hard_free_blocks + 1, hard_free_blocks)
        .expect("soft is one above a hard threshold of at least 1");
    GcPolicy::new(warm.collection.gc_mode(), thresholds)
}

impl<C: Catalog> Store<C> {
    /// Collects every sealed warm segment whose dead bytes are at least `min_dead_fraction`
    /// of its length (default: `warm.collect_dead_fraction`), then frees what nothing
    /// references (see the module docs). `progress` hears the report after every record moved
    /// and when a move starts waiting for requests. Takes the upkeep lock (fails at once if
    /// another process holds it).
    pub async fn collect_warm(
        &self,
        min_dead_fraction: Option<f64>,
        progress: impl FnMut(&WarmCollectReport),
    ) -> StoreResult<WarmCollectReport> {
        let _upkeep = self.upkeep_lock()?;
        let fraction = min_dead_fraction.unwrap_or(self.config().warm.collect_dead_fraction);
        check_dead_fraction(fraction).map_err(|message| StoreError::Config {
            path: "collect-warm".into(),
            message,
        })?;
        let limits = WarmCollectLimits {
            min_dead_fraction: fraction,
            budget_bytes: u64::MAX,
        };
        self.collect_warm_within(limits, progress).await
    }

    /// Collects sealed warm segments whose dead fraction reached `limits.min_dead_fraction`,
    /// oldest first, until `limits.budget_bytes` of live bytes moved, then frees what nothing
    /// references. The caller holds the upkeep lock.
    pub(crate) async fn collect_warm_within(
        &self,
        limits: WarmCollectLimits,
        mut progress: impl FnMut(&WarmCollectReport),
    ) -> StoreResult<WarmCollectReport> {
        let mut report = WarmCollectReport::default();
        let used_before = self.staging.used_bytes();
        for victim in self.warm_victims(limits.min_dead_fraction).await? {
            if report.segments_collected > 0 && report.bytes_moved >= limits.budget_bytes {
                break;
            }
            tracing::debug!(
                segment = victim.segment,
                dead_fraction = victim.dead_fraction,
                "collecting a warm segment"
            );
            self.collect_segment(victim.segment, &mut report, &mut progress)
                .await?;
            report.segments_collected += 1;
        }
        report.segments_freed = self.reclaim_staging().await? as u64;
        report.bytes_reclaimed = used_before.saturating_sub(self.staging.used_bytes());
        progress(&report);
        let mut totals = self.warm_collected.lock().expect("warm totals lock");
        totals.merge(WarmCollectReport {
            problems: Vec::new(),
            ..report.clone()
        });
        drop(totals);
        Ok(report)
    }

    /// Sealed, unpinned segments holding warm objects whose dead fraction (1 − live payload
    /// bytes ∕ segment length) is at least `min_dead_fraction`, oldest (lowest id) first. On a
    /// chain whose tail device holds half its share or more, every warm segment of the head
    /// device comes first, whatever its dead fraction: the tail moves there next, and Gecko's
    /// collector keeps it empty by then (docs/store.md, "A chain of staging devices").
    async fn warm_victims(&self, min_dead_fraction: f64) -> StoreResult<Vec<Victim>> {
        let lengths = self.staging.freeable_lengths();
        if lengths.is_empty() {
            return Ok(Vec::new());
        }
        let chain = self.staging.chain_state();
        let clean_head =
            chain.devices >= 2 && chain.used_bytes[chain.tail] * 2 >= chain.capacity_bytes;
        let usage = self.segment_usage().await?;
        let mut victims: Vec<(bool, Victim)> = usage
            .iter()
            .filter(|used| used.warm_objects > 0)
            .filter_map(|used| {
                let length = *lengths.get(&used.segment)?;
                let dead_fraction = 1.0 - used.live_bytes as f64 / length.max(1) as f64;
                let on_head = clean_head && self.staging.device_of(used.segment) == chain.head;
                (on_head || dead_fraction >= min_dead_fraction).then_some((
                    !on_head,
                    Victim {
                        segment: used.segment,
                        dead_fraction,
                    },
                ))
            })
            .collect();
        // The head's segments first (false sorts first), each group oldest first.
        victims.sort_by_key(|(off_head, victim)| (*off_head, victim.segment));
        Ok(victims.into_iter().map(|(_, victim)| victim).collect())
    }

    /// Every segment's usage from the catalog, in segment order, [`USAGE_PAGE`] at a time.
    async fn segment_usage(&self) -> StoreResult<Vec<SegmentUsage>> {
        let mut usage = Vec::new();
        loop {
            let after = usage.last().map(|used: &SegmentUsage| used.segment);
            let page = self.catalog.segment_usage(after, USAGE_PAGE).await?;
            let full = page.len() == USAGE_PAGE as usize;
            usage.extend(page);
            if !full {
                return Ok(usage);
            }
        }
    }

    /// Moves every warm object of `segment`, one unit each, asking the policy before each.
    async fn collect_segment(
        &self,
        segment: SegmentId,
        report: &mut WarmCollectReport,
        progress: &mut impl FnMut(&WarmCollectReport),
    ) -> StoreResult<()> {
        let mut after: Option<(u64, String)> = None;
        loop {
            let position = after.as_ref().map(|(offset, key)| (*offset, key.as_str()));
            let page = self
                .catalog
                .staged_in_segment(segment, position, PAGE)
                .await?;
            let Some(last) = page.last() else {
                return Ok(());
            };
            after = Some((staged_offset(last), last.key.clone()));
            for object in page.iter().filter(|object| object.tier == Tier::Warm) {
                self.wait_for_staging_turn(report, progress).await;
                self.move_record(object, report).await?;
                progress(report);
            }
        }
    }

    /// One unit: copies `object`'s record and repoints the catalog at the copy if the object
    /// is still where it was read from.
    async fn move_record(
        &self,
        object: &ObjectRecord,
        report: &mut WarmCollectReport,
    ) -> StoreResult<()> {
        let ObjectLocation::Staged { segment, offset } = object.location else {
            return Ok(()); // listed as staged; migrated since by a demotion and a flush
        };
        let placement = match self.config().warm.collector {
            WarmCollector::MoveToTail => Placement::Tail,
            WarmCollector::CompactInBody => Placement::Body,
        };
        let copied = self
            .staging
            .copy_record(
                (segment, offset),
                &object.key,
                object.size_bytes,
                (Tier::Warm, placement),
            )
            .await;
        let copy = match copied {
            Ok(copy) => copy,
            Err(StagingError::Corrupt { detail, .. }) => {
                report.problems.push(format!(
                    "warm record of `{}` at segment {segment}, offset {offset} not moved: {detail}",
                    object.key
                ));
                return Ok(());
            }
            // Freed under us: the object was deleted or overwritten (its segment went with it).
            Err(StagingError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                report.records_dead += 1;
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        };
        if copy.content_hash != object.content_hash {
            report.problems.push(format!(
                "warm record of `{}` at segment {segment}, offset {offset} holds another BLAKE3 \
                 than the catalog's; not moved",
                object.key
            ));
            return Ok(());
        }
        crash::point("warm-gc:after-copy");
        let moved = self
            .catalog
            .restage(&object.key, (segment, offset), (copy.segment, copy.offset))
            .await?;
        // Committed (or refused): the copy's segment may be unpinned now.
        drop(copy);
        crash::point("warm-gc:after-restage");
        if moved {
            report.records_moved += 1;
            report.bytes_moved += object.size_bytes;
        } else {
            report.records_dead += 1;
        }
        Ok(())
    }

    /// Before a unit: the policy decides whether PUTs and staged GETs in flight go first.
    async fn wait_for_staging_turn(
        &self,
        report: &mut WarmCollectReport,
        progress: &mut impl FnMut(&WarmCollectReport),
    ) {
        let warm = &self.config().warm;
        let policy = warm_policy(warm);
        let max_wait_us = (warm.collect_max_yield_s * 1e6) as u64;
        let limit_bytes = self.staging.config().limit_bytes.max(1);
        // The requests in flight when the unit came due go first; requests that start while
        // it waits do not hold it further (they queue behind it, as on the slides' device,
        // where a waiting request is served before the next unit and the unit after it).
        let (in_flight_then, ended_then) = self.staging_requests.counts();
        let view = || {
            let free_bytes = limit_bytes.saturating_sub(self.staging.used_bytes());
            let (in_flight, ended) = self.staging_requests.counts();
            std::future::ready(GcView {
                free_blocks: (free_bytes as u128 * 1000 / limit_bytes as u128) as u64,
                collecting: true,
                work_available: true,
                foreground_waiting: in_flight > 0 && ended < ended_then + in_flight_then,
            })
        };
        let on_yield = || {
            report.yields += 1;
            progress(report);
        };
        wait_between_units(self.clock().as_ref(), &policy, max_wait_us, view, on_yield).await;
    }
}

/// The staging offset of a record listed as staged (0 for one that is not: it sorts first and
/// only bounds the next page).
fn staged_offset(record: &ObjectRecord) -> u64 {
    match record.location {
        ObjectLocation::Staged { offset, .. } => offset,
        ObjectLocation::Migrated { .. } => 0,
    }
}
