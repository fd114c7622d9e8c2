//! The upkeep task (issue 4 item 8): scrub batched with spin-ups that happen anyway, and
//! scrub-only spin-ups no more often than configured. [`Store::start_upkeep`] spawns it; it
//! holds the upkeep lock ([`crate::lock`]) until [`UpkeepHandle::stop`].
//!
//! Policy ([`UpkeepConfig`], `[upkeep]` in store.toml):
//! - **Piggyback.** When a group comes `Up` for other work ([`GroupActivity::Up`]), the task
//!   scrubs the group's blobs last verified more than *half* the scrub interval ago (never
//!   verified first, then oldest), at most `scrub_bytes_per_spin_up` of stripe stacks per spin-up
//!   (at least one blob). Scrub jobs are `Kind::Rebuild`, so the scheduler's rebuild share bounds
//!   how much they delay client work. Before each job after the first the group must still be
//!   active (driver state), so a batch does not spin a group up again after it went down.
//! - **Scrub-only spin-ups.** Every tick, a group with a blob verified longer than the whole
//!   scrub interval ago (or never) that is not up gets one budgeted batch, which spins it up —
//!   only if `scrub_min_spin_up_interval_s` has passed since this task's last scrub-only spin-up
//!   of the group *and* since the last verification of any of its blobs (durable, from the
//!   catalog: a restarted task or a recent piggyback counts). The first tick is at start; ticks
//!   come every quarter of the minimum interval or of `migrate_after_s`, whichever is shorter
//!   (between 50 ms and 60 s).
//! - **Duties** ([`crate::duties`]), first on every tick: migrate staged objects when a full
//!   bundle is staged or the oldest has waited `migrate_after_s`; rebuild queued stacks of
//!   failed disks at once.
//!
//! - **Compaction.** After each batch's scrub, while the group is still active, blobs whose
//!   dead fraction reached `compact_dead_fraction` (and blobs nothing points into) are
//!   compacted ([`crate::compact`]), at most `compact_bytes_per_spin_up` of live bytes per batch
//!   (at least one blob). Compaction never spins a group up: it runs only on a group up anyway
//!   (for other work, or for a scrub-only spin-up) and stops when the group is no longer active.
//!
//! - **The warm tier's collector** ([`crate::warm_gc`]): on every tick, after the duties, warm
//!   staging segments whose dead fraction reached `warm.collect_dead_fraction` are collected,
//!   at most [`WARM_COLLECT_BYTES_PER_TICK`] of live bytes per tick.
//!
//! Invariants: each group cycle (Up … Down) gets one batch (a group this task spun up is not
//! batched again on its `Up`), plus one per minimum interval while it stays up; a scrub-only batch starts only after the minimum interval;
//! stopping waits for the blob being scrubbed (or a migration or rebuild under way), then the
//! task ends and releases the lock.

use crate::clock::{Paced, Pacing};
use crate::compact::{CompactLimits, CompactReport};
use crate::config::UpkeepConfig;
use crate::driver::{GroupActivity, GroupPhase};
use crate::duties::{DutyClock, DutyReport};
use crate::error::StoreResult;
use crate::lock::UpkeepGuard;
use crate::scrub::{BatchLimits, ScrubLedger, ScrubReport};
use crate::store::Store;
use serde::Serialize;
use spinwise_catalog::{Catalog, GroupIndex};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// Live bytes the warm collector moves per upkeep tick (at least one segment): bounds how
/// long one tick holds the staging devices for collection.
const WARM_COLLECT_BYTES_PER_TICK: u64 = 256 << 20;

/// What the upkeep task did so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UpkeepReport {
    /// Batches run on groups that were up for other work.
    pub piggyback_batches: u64,
    /// Batches that spun a group up for scrub alone.
    pub scrub_spin_ups: u64,
    /// The groups of the scrub-only spin-ups, in order.
    pub scrub_spin_up_groups: Vec<GroupIndex>,
    /// Everything scrubbed, merged.
    pub scrub: ScrubReport,
    /// Migrations and rebuilds the task ran ([`crate::duties`]).
    pub duties: DutyReport,
    /// Compaction batches run on groups that were up (never a spin-up of its own).
    pub compact_batches: u64,
    /// Everything compacted, merged.
    pub compaction: crate::compact::CompactReport,
    /// Everything the warm collector did, merged ([`crate::warm_gc`]; on every tick, after the
    /// duties).
    pub warm_collection: crate::warm_gc::WarmCollectReport,
    /// Failures of single batches (the task goes on), one line each.
    pub errors: Vec<String>,
}

/// A running upkeep task.
pub struct UpkeepHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    report: Arc<Mutex<UpkeepReport>>,
    paced: Paced,
}

impl std::fmt::Debug for UpkeepHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpkeepHandle").finish_non_exhaustive()
    }
}

impl UpkeepHandle {
    /// A snapshot of what the task did so far.
    pub fn report(&self) -> UpkeepReport {
        self.report.lock().expect("upkeep report").clone()
    }

    /// When the task next ticks, published each time it goes back to waiting: a test that
    /// advanced the store's [`crate::clock::ManualClock`] awaits the ticks it made due.
    pub fn paced(&self) -> &Paced {
        &self.paced
    }

    /// Asks the task to stop, waits for the blob it is scrubbing, and returns its report. The
    /// upkeep lock is released.
    pub async fn stop(self) -> UpkeepReport {
        let _ = self.stop.send(true);
        if let Err(error) = self.task.await {
            tracing::error!(%error, "the upkeep task panicked");
        }
        self.report.lock().expect("upkeep report").clone()
    }
}

fn merge(total: &mut ScrubReport, part: ScrubReport) {
    total.blobs += part.blobs;
    total.stripes += part.stripes;
    total.bad_fragments += part.bad_fragments;
    total.stacks_repaired += part.stacks_repaired;
    total.on_failed_disks += part.on_failed_disks;
    total.stripes_beyond_repair += part.stripes_beyond_repair;
    total.unrepairable.extend(part.unrepairable);
}

/// How often the task looks for due duties and groups that need a scrub-only spin-up.
fn tick(config: &UpkeepConfig) -> Duration {
    let seconds = (config.scrub_min_spin_up_interval_s / 4.0).min(config.migrate_after_s / 4.0);
    Duration::from_secs_f64(seconds.clamp(0.05, 60.0))
}

/// `duration` in whole microseconds (saturating).
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// The task's state between events.
struct Upkeep<C: Catalog> {
    store: Arc<Store<C>>,
    config: UpkeepConfig,
    ledger: ScrubLedger,
    report: Arc<Mutex<UpkeepReport>>,
    stop: watch::Receiver<bool>,
    /// Publishes the next tick each time the task goes back to waiting.
    pacing: Pacing,
    /// Groups up now (from the activity events).
    up: BTreeSet<GroupIndex>,
    /// Groups batched in their current cycle (cleared on `Down`).
    batched: BTreeSet<GroupIndex>,
    /// This task's last scrub-only spin-up per group, µs of the store's clock.
    last_spin_up_us: BTreeMap<GroupIndex, u64>,
    /// This task's last batch per group, µs of the store's clock (a group that stays up gets
    /// one again after the minimum interval).
    last_batch_us: BTreeMap<GroupIndex, u64>,
    /// When a failed migration or rebuild may be tried again.
    duty_clock: DutyClock,
}

impl<C: Catalog> Store<C> {
    /// Starts the upkeep task on the current tokio runtime (see the module documentation).
    /// Takes the upkeep lock first: [`crate::StoreError::UpkeepBusy`] if another process
    /// holds it.
    pub async fn start_upkeep(self: &Arc<Self>) -> StoreResult<UpkeepHandle> {
        let guard = self.upkeep_lock()?;
        let activity = self.rack_io().driver.subscribe_activity();
        let up = match self.rack_io().driver.state().await {
            Ok(state) => state
                .groups
                .iter()
                .filter(|group| group.phase == GroupPhase::Active)
                .map(|group| group.group)
                .collect(),
            Err(_) => BTreeSet::new(),
        };
        let (stop_sender, stop) = watch::channel(false);
        let report = Arc::new(Mutex::new(UpkeepReport::default()));
        let (pacing, paced) = crate::clock::pacing();
        let upkeep = Upkeep {
            pacing,
            store: self.clone(),
            config: self.config().upkeep.clone(),
            ledger: ScrubLedger::default(),
            report: report.clone(),
            stop,
            up,
            batched: BTreeSet::new(),
            last_spin_up_us: BTreeMap::new(),
            last_batch_us: BTreeMap::new(),
            duty_clock: DutyClock::default(),
        };
        let task = tokio::spawn(upkeep.run(activity, guard));
        Ok(UpkeepHandle {
            stop: stop_sender,
            task,
            report,
            paced,
        })
    }
}

impl<C: Catalog> Upkeep<C> {
    async fn run(mut self, mut activity: broadcast::Receiver<GroupActivity>, guard: UpkeepGuard) {
        // The first tick is at once: a fresh task starts with the groups that are overdue. The
        // ticks wait on the store's clock, so a test moves them by advancing it.
        let clock = self.store.clock().clone();
        let tick_us = micros(tick(&self.config));
        let mut next_tick_us = clock.now_us();
        let mut stop = self.stop.clone();
        loop {
            if *stop.borrow() {
                break;
            }
            self.pacing.waiting_until(next_tick_us);
            tokio::select! {
                biased;
                _ = stop.changed() => break,
                event = activity.recv() => match event {
                    Ok(event) => self.on_activity(event).await,
                    // Missed events: the tick catches up from the driver's state.
                    Err(broadcast::error::RecvError::Lagged(_)) => self.resync().await,
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                () = clock.sleep_until_us(next_tick_us) => {
                    // A late tick delays the next one rather than bunching them.
                    next_tick_us = clock.now_us().saturating_add(tick_us);
                    self.on_tick().await;
                }
            }
        }
        drop(guard);
    }

    /// How long ago `at_us` was on the store's clock.
    fn elapsed_us(&self, at_us: u64) -> u64 {
        self.store.clock().now_us().saturating_sub(at_us)
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    async fn on_activity(&mut self, event: GroupActivity) {
        match event {
            GroupActivity::Up { group, .. } => {
                self.up.insert(group);
                if self.batched.insert(group) {
                    self.batch(group, false).await;
                }
            }
            GroupActivity::GoingDown { group, .. } => {
                self.up.remove(&group);
            }
            GroupActivity::Down { group, .. } => {
                self.up.remove(&group);
                self.batched.remove(&group);
            }
            // Not up yet: nothing rides a spin-up before its disks answer.
            GroupActivity::SpinningUp { .. } => {}
        }
    }

    async fn resync(&mut self) {
        if let Ok(state) = self.store.rack_io().driver.state().await {
            self.up = state
                .groups
                .iter()
                .filter(|group| group.phase == GroupPhase::Active)
                .map(|group| group.group)
                .collect();
            self.batched.retain(|group| self.up.contains(group));
        }
    }

    /// Up groups not yet batched this cycle (or not for the minimum interval, if they stay up)
    /// get their batch; then every overdue group that may be spun up for scrub alone gets one, most
    /// overdue first.
    async fn on_tick(&mut self) {
        let min_interval = Duration::from_secs_f64(self.config.scrub_min_spin_up_interval_s);
        self.run_duties(min_interval).await;
        self.collect_warm().await;
        let min_interval_us = micros(min_interval);
        let pending: Vec<GroupIndex> = self
            .up
            .iter()
            .copied()
            .filter(|group| {
                !self.batched.contains(group)
                    || self
                        .last_batch_us
                        .get(group)
                        .is_none_or(|&at_us| self.elapsed_us(at_us) >= min_interval_us)
            })
            .collect();
        for group in pending {
            if self.stopping() {
                return;
            }
            self.batched.insert(group);
            self.batch(group, false).await;
        }
        // Each group batched here is not eligible again for the minimum interval.
        while !self.stopping() {
            match self.group_for_scrub_spin_up().await {
                Ok(Some(group)) => {
                    self.batched.insert(group);
                    let now_us = self.store.clock().now_us();
                    self.last_spin_up_us.insert(group, now_us);
                    self.batch(group, true).await;
                }
                Ok(None) => break,
                Err(error) => {
                    self.error(format!("choosing a group to scrub: {error}"));
                    break;
                }
            }
        }
    }

    /// The most overdue group (never-verified blobs first) that is not up, has a blob due for
    /// the whole interval, and passed the minimum interval since its last scrub spin-up and its
    /// last verification.
    async fn group_for_scrub_spin_up(&self) -> StoreResult<Option<GroupIndex>> {
        let now_ms = self.store.now_unix_ms();
        let interval_ms = (self.config.scrub_interval_s * 1000.0) as i64;
        let min_interval = Duration::from_secs_f64(self.config.scrub_min_spin_up_interval_s);
        let min_interval_us = micros(min_interval);
        let min_interval_ms = (self.config.scrub_min_spin_up_interval_s * 1000.0) as i64;
        let catalog = self.store.catalog();
        let mut best: Option<(i64, GroupIndex)> = None;
        for group in 0..self.store.layout().groups.len() as GroupIndex {
            if self.up.contains(&group)
                || self
                    .last_spin_up_us
                    .get(&group)
                    .is_some_and(|&at_us| self.elapsed_us(at_us) < min_interval_us)
            {
                continue;
            }
            let due = catalog
                .scrub_due(group, now_ms.saturating_sub(interval_ms), 1)
                .await?;
            let Some(oldest) = due.first() else { continue };
            let last = catalog.last_scrub_in_group(group).await?;
            if last.is_some_and(|last| now_ms.saturating_sub(last) < min_interval_ms) {
                continue;
            }
            let verified = oldest.verified_unix_ms.unwrap_or(0);
            if best.is_none_or(|(best_verified, _)| verified < best_verified) {
                best = Some((verified, group));
            }
        }
        Ok(best.map(|(_, group)| group))
    }

    /// One budgeted batch on `group`: blobs due for half the interval (a piggyback) or the whole
    /// interval (a scrub-only spin-up).
    async fn batch(&mut self, group: GroupIndex, spin_up: bool) {
        let interval_ms = (self.config.scrub_interval_s * 1000.0) as i64;
        let due_ms = if spin_up {
            interval_ms
        } else {
            interval_ms / 2
        };
        let before = self.store.now_unix_ms().saturating_sub(due_ms);
        let budget = self.config.scrub_bytes_per_spin_up;
        let now_us = self.store.clock().now_us();
        self.last_batch_us.insert(group, now_us);
        let mut part = ScrubReport::default();
        let stop = self.stop.clone();
        let keep_going = move || !*stop.borrow();
        // A piggyback batch is for a group up anyway: if it went down since, leave it.
        if !spin_up && !self.store.group_is_active(group).await {
            return;
        }
        let limits = BatchLimits {
            before_unix_ms: before,
            budget_bytes: budget,
            only_while_active: true,
        };
        let result = self
            .store
            .scrub_batch(group, limits, &self.ledger, &mut part, keep_going)
            .await;
        {
            let mut report = self.report.lock().expect("upkeep report");
            match result {
                Ok(0) => {}
                Ok(_) if spin_up => {
                    report.scrub_spin_ups += 1;
                    report.scrub_spin_up_groups.push(group);
                }
                Ok(_) => report.piggyback_batches += 1,
                Err(error) => report
                    .errors
                    .push(format!("scrubbing group {group}: {error}")),
            }
            merge(&mut report.scrub, part);
        }
        self.compact(group).await;
    }

    /// After the scrub batch: a budgeted compaction batch on `group`, only while it stays up
    /// (the scrub batch spun it up if it was a scrub-only spin-up; compaction never does).
    async fn compact(&mut self, group: GroupIndex) {
        let limits = CompactLimits {
            min_dead_fraction: self.config.compact_dead_fraction,
            budget_bytes: self.config.compact_bytes_per_spin_up,
            only_while_active: true,
        };
        let stop = self.stop.clone();
        let keep_going = move || !*stop.borrow();
        let mut part = CompactReport::default();
        let result = self
            .store
            .compact_group(
                group,
                limits,
                &mut part,
                &mut |_: &CompactReport| {},
                keep_going,
            )
            .await;
        let mut report = self.report.lock().expect("upkeep report");
        match result {
            Ok(0) => {}
            Ok(_) => report.compact_batches += 1,
            Err(error) => report
                .errors
                .push(format!("compacting group {group}: {error}")),
        }
        report.compaction.merge(part);
    }

    /// The warm collector, within [`WARM_COLLECT_BYTES_PER_TICK`] (the staging devices are
    /// always on: no spin-up to batch with, so it runs on every tick).
    async fn collect_warm(&mut self) {
        let limits = crate::warm_gc::WarmCollectLimits {
            min_dead_fraction: self.store.config().warm.collect_dead_fraction,
            budget_bytes: WARM_COLLECT_BYTES_PER_TICK,
        };
        match self.store.collect_warm_within(limits, |_| {}).await {
            Ok(part) => {
                let mut report = self.report.lock().expect("upkeep report");
                report.warm_collection.merge(part);
            }
            Err(error) => self.error(format!("collecting the warm tier: {error}")),
        }
    }

    /// Migration and rebuild when due ([`crate::duties`]), before this tick's scrub work.
    async fn run_duties(&mut self, retry_after: Duration) {
        let mut duties = DutyReport::default();
        let mut errors = Vec::new();
        self.store
            .run_duties(
                &mut self.duty_clock,
                self.config.migrate_after_s,
                retry_after,
                &mut duties,
                &mut errors,
            )
            .await;
        let mut report = self.report.lock().expect("upkeep report");
        report.duties.flushes += duties.flushes;
        report.duties.objects_migrated += duties.objects_migrated;
        report.duties.rebuilds += duties.rebuilds;
        report.duties.stacks_rebuilt += duties.stacks_rebuilt;
        drop(report);
        for line in errors {
            self.error(line);
        }
    }

    fn error(&self, line: String) {
        tracing::warn!(%line, "upkeep");
        self.report.lock().expect("upkeep report").errors.push(line);
    }
}
