//! What a simulation run is asked to do ([`SimConfig`]), the limits it is held to, and the typed
//! errors for a configuration or input it refuses ([`SimError`]).
//!
//! Invariant: [`SimConfig::validate`] accepting a configuration means every quantity the event
//! loop derives from it (window bounds in µs, the Poisson arrival rate, link rate) is finite and
//! positive, the expected number of requests (Poisson, burst or trace) is within
//! [`MAX_REQUESTS`], and a configured disk failure lies in `[warmup_hours, hours)` with 1 to
//! `lost_bytes` stripe stacks, and a deferral has a fraction in [0, 1], a wait of at most
//! [`MAX_HOURS`] and a policy that spins groups, and the expedited and deferred fractions add up
//! to at most 1, and an idle spin-down time is positive and at most [`MAX_HOURS`]. Nothing in
//! the loop re-checks.

use crate::workload::{Arrivals, BURST_SPREAD_S, BlobSizes};
use serde::Serialize;
use spinwise_model::BindError;
use spinwise_model::quote::number;
pub use spinwise_sched::idle::DEFAULT_IDLE_SPIN_DOWN_S;
use spinwise_sched::random::PlacementError;
use spinwise_sched::scheduler::SchedulerError;
use thiserror::Error;

/// Most requests a run may be expected to generate (rate × duration). Every request in the
/// measurement window keeps three latency samples (8 bytes each) until the report is built, and
/// the loop costs about a microsecond per request: 5 M requests (a simulated week at 8 req/s) is
/// ~120 MB and a few seconds. Larger studies run several seeds, not one longer run.
pub const MAX_REQUESTS: f64 = 5_000_000.0;

/// How far the Bulk and Expedited shares may add up beyond 1 through rounding.
const SHARE_TOLERANCE: f64 = 1e-9;

/// Longest simulated duration, in hours (one year). Simulated time is kept in integer
/// microseconds (`u64`), far from overflow here; the bound mainly catches unit mistakes
/// (seconds given as hours).
pub const MAX_HOURS: f64 = 24.0 * 366.0;

/// Largest blob, in bytes (1 TB): flows' remaining bytes are tracked in `f64`, exact to 2^53, and
/// a blob is a bundle of ~1 GB in the product; a terabyte is already far outside the model.
pub const MAX_BLOB_BYTES: u64 = 1_000_000_000_000;
/// The slowest network a run may model, in Gbps (1 Mbps). Far slower ones gave link capacities
/// so small (subnormal floats at 1e-316 Gbps) that water-filling's sums lost their precision and
/// its capacity check failed (found 2026-12-01); between this and those, a run too slow to
/// finish meets the horizon (`SimError::Horizon`).
pub const MIN_NETWORK_GBPS: f64 = 0.001;
/// The fastest network a run may model, in Gbps (1 Pbps, thousands of times any rack's NICs):
/// `1e300` was accepted and printed as a 301-digit number (found 2026-12-01); for no NIC at
/// all, leave the network out (`--network-gbps unbounded`).
pub const MAX_NETWORK_GBPS: f64 = 1e6;

/// Default blob size: the product's bundle size (~1 GB, BRIEF "bundles").
pub const DEFAULT_BLOB_BYTES: u64 = 1_000_000_000;

/// Bytes on the failed disk by default: Pelican §4.3's failed disk, 4.28 TB.
pub const DEFAULT_FAILED_BYTES: u64 = 4_280_000_000_000;

/// Stripe stacks on the failed disk by default: Pelican §4.3, "64,329 blobs stored in the group
/// have a stripe stack on the failed disk" (so a stack is ~66.5 MB).
pub const DEFAULT_FAILED_STACKS: u64 = 64_329;

/// Most bytes a failed disk may hold (100 TB: beyond any disk in the presets; a larger value is
/// a unit mistake).
pub const MAX_FAILED_BYTES: u64 = 100_000_000_000_000;

/// One disk failing during the run; its lost stripe stacks are rebuilt inside its group.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DiskFailure {
    /// When the disk fails, in hours from the start; `None` is the end of the warm-up.
    pub at_hours: Option<f64>,
    /// Bytes the failed disk held: every one must be regenerated.
    pub lost_bytes: u64,
    /// Stripe stacks those bytes form: one rebuild request each.
    pub lost_stacks: u64,
}

impl Default for DiskFailure {
    fn default() -> Self {
        DiskFailure {
            at_hours: None,
            lost_bytes: DEFAULT_FAILED_BYTES,
            lost_stacks: DEFAULT_FAILED_STACKS,
        }
    }
}

/// Client reads that may wait for their group to spin up for other work before they are
/// queued: S3 RestoreObject's `Bulk` tier as the server implements it (docs/s3.md "Restore
/// tiers"), through the same rack-engine deferral (`Engine::defer`). Such a read arriving
/// while its group is resting is held by the engine outside the scheduler until the group is
/// spun up for another request (the policy's `SpinUp`), or until `wait_hours` after its
/// arrival, when it is submitted anyway.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Deferral {
    /// The share of client reads that may wait, each drawn independently (0 to 1).
    pub fraction: f64,
    /// The longest a read waits before it is submitted, in hours.
    pub wait_hours: f64,
}

/// Which scheduling policy runs the rack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Pelican's class scheduler on the rack as described.
    #[default]
    Pelican,
    /// Pelican's FP baseline: the same rack with power and cooling for every disk; every group
    /// spins up once and stays spinning, each serving its own FIFO queue.
    FullyProvisioned,
    /// Flamingo's constraint-aware scheduler (per-group queues, as many groups spinning as the
    /// hard budgets allow) on the rack as described.
    Flamingo,
    /// The random straw-man layout of Pelican §2.2: each blob on k + r random disks that can
    /// all spin at once ([`crate::random_layout`]), scheduled FIFO at disk level on the rack as described.
    Random,
}

/// How the fully provisioned baseline bounds its queues (each group keeps its own FIFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FpQueues {
    /// Each group's FIFO holds up to the layout's `max_queue_depth` (Spinwise's default).
    #[default]
    PerGroup,
    /// The groups of one class share `max_queue_depth`, as Pelican §4.1 states it ("The maximum
    /// queue depth per scheduler is set to 1000 requests", a scheduler per class).
    PerScheduler,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimConfig {
    /// Mean client reads per second (Poisson arrivals).
    pub rate_per_s: f64,
    /// Simulated duration, warm-up included. Arrivals stop here; work accepted before it drains.
    pub hours: f64,
    /// Leading part of the run excluded from every metric (queues and spun-up groups start empty).
    pub warmup_hours: f64,
    pub seed: u64,
    /// Bytes read per request (one blob).
    pub blob_bytes: u64,
    /// Total NIC capacity, split evenly over the rack's servers (see the crate docs,
    /// "Network"); `None` is unbounded (no NIC links).
    pub network_gbps: Option<f64>,
    pub policy: PolicyKind,
    /// When client requests arrive (Poisson at `rate_per_s`, a burst, or a trace).
    pub arrivals: Arrivals,
    /// Request sizes for Poisson and burst arrivals.
    pub blob_sizes: BlobSizes,
    /// A disk failure and its rebuild, if any.
    pub failure: Option<DiskFailure>,
    /// Client reads that may wait for a spin-up that happens anyway (Bulk restores), if any.
    pub deferral: Option<Deferral>,
    /// The share of client reads submitted as [`spinwise_sched::scheduler::Kind::Expedited`]
    /// (Expedited restores: ahead of the standard reads), each drawn independently; 0 to 1, and
    /// at most 1 with the deferred share (a read is Bulk, Expedited or standard).
    pub expedited_fraction: f64,
    /// Idle spin-down: Pelican's and Flamingo's schedulers spin a group down once it has had no
    /// work for this many seconds (`None`: never; FP and the random layout never do). Default
    /// [`DEFAULT_IDLE_SPIN_DOWN_S`], the store's (spinwise-sched's `idle` module).
    pub idle_spin_down_s: Option<f64>,
    /// How [`PolicyKind::FullyProvisioned`] bounds its queues (other policies ignore it).
    pub fp_queues: FpQueues,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            rate_per_s: 1.0,
            hours: 24.0,
            warmup_hours: 1.0,
            seed: 0,
            blob_bytes: DEFAULT_BLOB_BYTES,
            network_gbps: None,
            policy: PolicyKind::Pelican,
            arrivals: Arrivals::Poisson,
            blob_sizes: BlobSizes::Fixed,
            failure: None,
            deferral: None,
            expedited_fraction: 0.0,
            idle_spin_down_s: Some(DEFAULT_IDLE_SPIN_DOWN_S),
            fp_queues: FpQueues::PerGroup,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Error)]
pub enum SimError {
    #[error("rate_per_s must be a positive finite number, got {}", number(*.rate_per_s))]
    Rate { rate_per_s: f64 },
    #[error(
        "hours ({}) must be finite, at most {max_hours}, and greater than warmup_hours ({}) which must be ≥ 0",
        number(*.hours),
        number(*.warmup_hours)
    )]
    Duration {
        hours: f64,
        warmup_hours: f64,
        max_hours: f64,
    },
    #[error("blob_bytes must be between 1 and {max}, got {blob_bytes}")]
    BlobBytes { blob_bytes: u64, max: u64 },
    #[error(
        "network_gbps must be from {MIN_NETWORK_GBPS} (1 Mbps) to {MAX_NETWORK_GBPS} (1 Pbps) when given, got {}; leave it out for no NIC",
        number(*.network_gbps)
    )]
    Network { network_gbps: f64 },
    #[error(
        "{} requests expected (rate × duration) exceed the limit of {limit:.0}; run shorter or several seeds",
        number(expected.round())
    )]
    TooManyRequests { expected: f64, limit: f64 },
    #[error(transparent)]
    Layout(#[from] BindError),
    #[error("the layout's state `{state}` is not a state of the rack")]
    UnknownState { state: String },
    #[error("a burst must have between 1 and {limit:.0} requests, got {requests}")]
    Burst { requests: u64, limit: f64 },
    #[error(
        "the disk failure at {} h must lie in [warmup_hours, hours) = [{warmup_hours}, {hours})",
        number(*.at_hours)
    )]
    FailureTime {
        at_hours: f64,
        warmup_hours: f64,
        hours: f64,
    },
    #[error(
        "the failed disk must hold 1 to {max} bytes in 1 to min(bytes, {limit:.0}) stripe stacks, got {lost_bytes} bytes in {lost_stacks}"
    )]
    FailureSize {
        lost_bytes: u64,
        lost_stacks: u64,
        max: u64,
        limit: f64,
    },
    #[error("the scheduler refused the layout: {0}")]
    Scheduler(#[from] SchedulerError),
    #[error("the rack engine refused the run: {0}")]
    Engine(spinwise_engine::EngineError),
    #[error(
        "the random layout needs {width} disks without a common hard domain, but the greedy found only {chosen}"
    )]
    RandomLayout { width: u32, chosen: u32 },
    #[error("the random layout's scheduler refused its placement sets: {0}")]
    Placement(#[from] PlacementError),
    #[error(
        "a deferral needs a fraction in [0, 1] and a wait of 0 to {max_hours} hours, got {} and {}",
        number(*.fraction),
        number(*.wait_hours)
    )]
    Deferral {
        fraction: f64,
        wait_hours: f64,
        max_hours: f64,
    },
    #[error(
        "deferred reads wait for their group's spin-up; the random layout spins single disks, not groups"
    )]
    DeferralPolicy,
    #[error(
        "the expedited share must lie in [0, 1] and add up to at most 1 with the Bulk share ({}), got {}",
        number(*.bulk_fraction),
        number(*.expedited_fraction)
    )]
    Expedited {
        expedited_fraction: f64,
        bulk_fraction: f64,
    },
    #[error(
        "idle_spin_down_s must be a positive number of seconds up to {max_s} (or absent: never), got {}",
        number(*.idle_spin_down_s)
    )]
    IdleSpinDown { idle_spin_down_s: f64, max_s: f64 },
    #[error(
        "soft resource `{resource}` is a bandwidth ({unit}) with a budget of {budget}: a link of no capacity carries no byte; give it a positive budget"
    )]
    BandwidthBudget {
        resource: String,
        unit: String,
        budget: f64,
    },
    #[error(
        "the run reached {horizon_years} years of simulated time (an event due at {at_us} µs) without ending: something the rack or the configuration implies is too slow to finish, such as a transfer at a bandwidth far below the disks' or the network's usual"
    )]
    Horizon { at_us: u64, horizon_years: u64 },
}

impl SimConfig {
    /// A configuration with the default blob size and an unbounded network.
    pub fn new(rate_per_s: f64, hours: f64, warmup_hours: f64, seed: u64) -> SimConfig {
        SimConfig {
            rate_per_s,
            hours,
            warmup_hours,
            seed,
            ..SimConfig::default()
        }
    }

    /// Refuses a configuration the loop could not run meaningfully; see the module invariant.
    pub fn validate(&self) -> Result<(), SimError> {
        // Written as "not (finite and positive)" so NaN is refused too.
        let poisson = self.arrivals == Arrivals::Poisson;
        if poisson && !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0) {
            return Err(SimError::Rate {
                rate_per_s: self.rate_per_s,
            });
        }
        let duration_ok = self.hours.is_finite()
            && self.warmup_hours.is_finite()
            && self.warmup_hours >= 0.0
            && self.hours > self.warmup_hours
            && self.hours <= MAX_HOURS;
        if !duration_ok {
            return Err(SimError::Duration {
                hours: self.hours,
                warmup_hours: self.warmup_hours,
                max_hours: MAX_HOURS,
            });
        }
        if self.blob_bytes == 0 || self.blob_bytes > MAX_BLOB_BYTES {
            return Err(SimError::BlobBytes {
                blob_bytes: self.blob_bytes,
                max: MAX_BLOB_BYTES,
            });
        }
        if let Some(network_gbps) = self.network_gbps
            && !(MIN_NETWORK_GBPS..=MAX_NETWORK_GBPS).contains(&network_gbps)
        {
            return Err(SimError::Network { network_gbps });
        }
        if let Arrivals::Burst { requests } = self.arrivals
            && !(1..=MAX_REQUESTS as u64).contains(&requests)
        {
            return Err(SimError::Burst {
                requests,
                limit: MAX_REQUESTS,
            });
        }
        let expected = self.expected_requests();
        if expected > MAX_REQUESTS {
            return Err(SimError::TooManyRequests {
                expected,
                limit: MAX_REQUESTS,
            });
        }
        // A window shorter than a microsecond would have zero length in the loop's clock.
        if hours_to_us(self.hours) <= hours_to_us(self.warmup_hours) {
            return Err(SimError::Duration {
                hours: self.hours,
                warmup_hours: self.warmup_hours,
                max_hours: MAX_HOURS,
            });
        }
        if let Some(failure) = &self.failure {
            self.validate_failure(failure)?;
        }
        if let Some(deferral) = &self.deferral {
            self.validate_deferral(deferral)?;
        }
        if let Some(idle_spin_down_s) = self.idle_spin_down_s {
            let max_s = MAX_HOURS * 3600.0;
            if !(idle_spin_down_s > 0.0 && idle_spin_down_s <= max_s) {
                return Err(SimError::IdleSpinDown {
                    idle_spin_down_s,
                    max_s,
                });
            }
        }
        let bulk_fraction = self.bulk_fraction();
        let expedited_fraction = self.expedited_fraction;
        // The tolerance takes a share computed as 1 − bulk back to exactly what is left.
        let fits = expedited_fraction + bulk_fraction <= 1.0 + SHARE_TOLERANCE;
        if !((0.0..=1.0).contains(&expedited_fraction) && fits) {
            return Err(SimError::Expedited {
                expedited_fraction,
                bulk_fraction,
            });
        }
        Ok(())
    }

    /// The share of client reads that may wait for a spin-up (0 without a deferral).
    pub(crate) fn bulk_fraction(&self) -> f64 {
        self.deferral.map_or(0.0, |d| d.fraction)
    }

    /// Whether a read's tier is drawn at all: runs with neither Bulk nor Expedited reads draw
    /// exactly what they drew before tiers existed.
    pub(crate) fn draws_tiers(&self) -> bool {
        self.deferral.is_some() || self.expedited_fraction > 0.0
    }

    fn validate_deferral(&self, deferral: &Deferral) -> Result<(), SimError> {
        let ok = (0.0..=1.0).contains(&deferral.fraction)
            && (0.0..=MAX_HOURS).contains(&deferral.wait_hours);
        if !ok {
            return Err(SimError::Deferral {
                fraction: deferral.fraction,
                wait_hours: deferral.wait_hours,
                max_hours: MAX_HOURS,
            });
        }
        if self.policy == PolicyKind::Random {
            return Err(SimError::DeferralPolicy);
        }
        Ok(())
    }

    fn validate_failure(&self, failure: &DiskFailure) -> Result<(), SimError> {
        let at_hours = failure.at_hours.unwrap_or(self.warmup_hours);
        if !(at_hours >= self.warmup_hours && at_hours < self.hours) {
            return Err(SimError::FailureTime {
                at_hours,
                warmup_hours: self.warmup_hours,
                hours: self.hours,
            });
        }
        let stacks_limit = failure.lost_bytes.min(MAX_REQUESTS as u64);
        if !(1..=MAX_FAILED_BYTES).contains(&failure.lost_bytes)
            || !(1..=stacks_limit).contains(&failure.lost_stacks)
        {
            return Err(SimError::FailureSize {
                lost_bytes: failure.lost_bytes,
                lost_stacks: failure.lost_stacks,
                max: MAX_FAILED_BYTES,
                limit: MAX_REQUESTS,
            });
        }
        Ok(())
    }

    /// Client requests the arrivals will generate (expected, for Poisson).
    fn expected_requests(&self) -> f64 {
        match &self.arrivals {
            Arrivals::Poisson => self.rate_per_s * self.hours * 3600.0,
            Arrivals::Burst { requests } => *requests as f64,
            Arrivals::Trace(records) => records.len() as f64,
        }
    }

    /// The offered request rate a report states: `rate_per_s` for Poisson, b / 60 s for a burst,
    /// and for a trace the records replayed (before `hours`) per second of `hours`.
    pub fn offered_rate_per_s(&self) -> f64 {
        match &self.arrivals {
            Arrivals::Poisson => self.rate_per_s,
            Arrivals::Burst { requests } => *requests as f64 / BURST_SPREAD_S,
            Arrivals::Trace(records) => {
                let end_us = self.end_us();
                let replayed = records.iter().filter(|r| r.time_us < end_us).count();
                replayed as f64 / (self.hours * 3600.0)
            }
        }
    }

    /// The measured window in µs. Poisson and trace runs measure `[warmup_hours, hours)`. A burst
    /// measures everything from 0 until the run has drained: its end is open here
    /// (`u64::MAX`) and the report closes it at the last event.
    pub(crate) fn window_us(&self) -> (u64, u64) {
        match self.arrivals {
            Arrivals::Burst { .. } => (0, u64::MAX),
            _ => (self.warmup_us(), self.end_us()),
        }
    }

    /// When the configured disk fails, in µs.
    pub(crate) fn failure_us(&self) -> Option<u64> {
        self.failure
            .map(|f| hours_to_us(f.at_hours.unwrap_or(self.warmup_hours)))
    }

    /// How long a deferred read waits at most, in µs (0 without a deferral).
    pub(crate) fn deferral_wait_us(&self) -> u64 {
        self.deferral.map_or(0, |d| hours_to_us(d.wait_hours))
    }

    pub(crate) fn warmup_us(&self) -> u64 {
        hours_to_us(self.warmup_hours)
    }

    pub(crate) fn end_us(&self) -> u64 {
        hours_to_us(self.hours)
    }
}

fn hours_to_us(hours: f64) -> u64 {
    (hours * 3600.0 * 1e6).round() as u64
}

/// The engine's own refusals keep their names; the scheduler's and the layout's read as before.
impl From<spinwise_engine::EngineError> for SimError {
    fn from(error: spinwise_engine::EngineError) -> SimError {
        match error {
            spinwise_engine::EngineError::Scheduler(error) => SimError::Scheduler(error),
            spinwise_engine::EngineError::Layout(error) => SimError::Layout(error),
            other => SimError::Engine(other),
        }
    }
}
