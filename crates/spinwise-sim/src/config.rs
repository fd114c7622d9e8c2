//! What a simulation run is asked to do ([`SimConfig`]), the limits it is held to, and the typed
//! errors for a configuration or input it refuses ([`SimError`]).
//!
//! Invariant: [`SimConfig::validate`] accepting a configuration means every quantity the event
//! loop derives from it (window bounds in µs, arrival rate, link rate) is finite and positive, and
//! the expected number of requests is within [`MAX_REQUESTS`]. Nothing in the loop re-checks.

use serde::Serialize;
use spinwise_sched::random::PlacementError;
use spinwise_sched::scheduler::SchedulerError;
use thiserror::Error;

/// Most requests a run may be expected to generate (rate × duration). Every request in the
/// measurement window keeps three latency samples (8 bytes each) until the report is built, and
/// the loop costs about a microsecond per request: 5 M requests (a simulated week at 8 req/s) is
/// ~120 MB and a few seconds. Larger studies run several seeds, not one longer run.
pub const MAX_REQUESTS: f64 = 5_000_000.0;

/// Longest simulated duration, in hours (one year). Simulated time is kept in integer
/// microseconds (`u64`), far from overflow here; the bound mainly catches unit mistakes
/// (seconds given as hours).
pub const MAX_HOURS: f64 = 24.0 * 366.0;

/// Largest blob, in bytes (1 TB): flows' remaining bytes are tracked in `f64`, exact to 2^53, and
/// a blob is a bundle of ~1 GB in the product; a terabyte is already far outside the model.
pub const MAX_BLOB_BYTES: u64 = 1_000_000_000_000;

/// Default blob size: the product's bundle size (~1 GB, BRIEF "bundles").
pub const DEFAULT_BLOB_BYTES: u64 = 1_000_000_000;

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
    /// Capacity of the one network link all reads share; `None` is unbounded.
    pub network_gbps: Option<f64>,
    pub policy: PolicyKind,
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
        }
    }
}

#[derive(Clone, Debug, PartialEq, Error)]
pub enum SimError {
    #[error("rate_per_s must be a positive finite number, got {rate_per_s}")]
    Rate { rate_per_s: f64 },
    #[error(
        "hours ({hours}) must be finite, at most {max_hours}, and greater than warmup_hours ({warmup_hours}) which must be ≥ 0"
    )]
    Duration {
        hours: f64,
        warmup_hours: f64,
        max_hours: f64,
    },
    #[error("blob_bytes must be between 1 and {max}, got {blob_bytes}")]
    BlobBytes { blob_bytes: u64, max: u64 },
    #[error("network_gbps must be a positive finite number when given, got {network_gbps}")]
    Network { network_gbps: f64 },
    #[error(
        "{expected:.0} requests expected (rate × duration) exceed the limit of {limit:.0}; run shorter or several seeds"
    )]
    TooManyRequests { expected: f64, limit: f64 },
    #[error(
        "the layout is for rack `{layout_rack}` (fingerprint {layout_fingerprint}), not `{rack}` ({rack_fingerprint})"
    )]
    LayoutMismatch {
        layout_rack: String,
        layout_fingerprint: String,
        rack: String,
        rack_fingerprint: String,
    },
    #[error("the layout names disk id {id}, which the rack does not have")]
    UnknownDisk { id: u32 },
    #[error("the layout's state `{state}` is not a state of the rack")]
    UnknownState { state: String },
    #[error("the scheduler refused the layout: {0}")]
    Scheduler(#[from] SchedulerError),
    #[error(
        "the random layout needs {width} disks without a common hard domain, but the greedy found only {chosen}"
    )]
    RandomLayout { width: u32, chosen: u32 },
    #[error("the random layout's scheduler refused its placement sets: {0}")]
    Placement(#[from] PlacementError),
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
        if !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0) {
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
            && !(network_gbps.is_finite() && network_gbps > 0.0)
        {
            return Err(SimError::Network { network_gbps });
        }
        let expected = self.rate_per_s * self.hours * 3600.0;
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
        Ok(())
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
