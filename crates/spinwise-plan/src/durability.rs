//! The failure model that picks the erasure parameters (k, r) and the spares f (Flamingo §4.2;
//! written out with its assumptions in docs/durability.md).
//!
//! - Data loss needs r + 1 failures among a stripe's k + r disks within overlapping rebuild
//!   windows. Disks fail independently at rate λ (from the annual failure rate); a failed disk's
//!   fragments are rebuilt onto the group's other disks within T = capacity / (bandwidth ×
//!   rebuild share). The standard Markov approximation gives a loss rate of
//!   w (w−1) … (w−r) λ^(r+1) T^r per stripe (w = k + r), valid while λT ≪ 1.
//! - Component failures (tray, chassis …) make disks unreachable, not lost; they are an
//!   availability matter: a stripe must stay readable after any one failure of a component type
//!   marked `spread`, so no such component may hold more than r of its fragments. With D domains
//!   of that type, an evenly spread stripe puts ⌈w / D⌉ fragments in one.
//! - f is the number of a group's disks that fail within a service interval, exceeded with
//!   probability at most `spare_exhaustion_probability` (Poisson with mean n λ_year × interval).
//!
//! Everything here is closed-form and deterministic.

use serde::Serialize;
use spinwise_model::Rack;

/// Largest k considered: wider stripes gain little overhead and cost memory per read.
pub const MAX_DATA_FRAGMENTS: u32 = 64;
/// Largest r considered: codes beyond this are not used for disk racks.
pub const MAX_REDUNDANCY_FRAGMENTS: u32 = 16;

const HOURS_PER_YEAR: f64 = 8_760.0;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErasureCandidate {
    pub k: u32,
    pub r: u32,
    /// Probability that a given blob is lost over the deployment lifetime.
    pub lifetime_loss_probability: f64,
}

impl ErasureCandidate {
    pub fn width(&self) -> u32 {
        self.k + self.r
    }

    /// Orders by capacity overhead r / (k + r), then by narrower stripes; exact (cross-multiplied).
    fn rank_key(&self, other: &ErasureCandidate) -> std::cmp::Ordering {
        let left = u64::from(self.r) * u64::from(other.width());
        let right = u64::from(other.r) * u64::from(self.width());
        left.cmp(&right)
            .then(self.width().cmp(&other.width()))
            .then(self.k.cmp(&other.k))
    }
}

/// Hours to rebuild one disk's data onto the rest of its group.
pub fn rebuild_time_hours(rack: &Rack) -> f64 {
    let disk = &rack.disk_model;
    let megabytes = disk.capacity_tb.mean() * 1e6;
    megabytes / (disk.bandwidth_mb_per_s * rack.targets.fairness.rebuild_share) / 3_600.0
}

/// Disk failure rate per hour from an annual failure rate (exponential lifetimes).
fn hourly_rate(annual_failure_rate: f64) -> f64 {
    -(1.0 - annual_failure_rate.min(0.999_999)).ln() / HOURS_PER_YEAR
}

/// Probability that a blob striped as (k, r) is lost over the deployment lifetime.
pub fn lifetime_loss_probability(rack: &Rack, k: u32, r: u32) -> f64 {
    let width = f64::from(k + r);
    let rate = hourly_rate(rack.disk_model.annual_failure_rate);
    let window = rebuild_time_hours(rack);
    let mut loss_rate_per_hour = rate;
    for failed_before in 0..r {
        loss_rate_per_hour *= (width - f64::from(failed_before)) * rate * window;
    }
    loss_rate_per_hour *= width - f64::from(r);
    let hours = rack.targets.deployment_lifetime_years * HOURS_PER_YEAR;
    -(-loss_rate_per_hour * hours).exp_m1()
}

/// Whether a stripe of `width` fragments with `r` redundancy survives any single failure of every
/// component type marked `spread`.
pub fn survives_component_failures(rack: &Rack, width: u32, r: u32) -> bool {
    rack.failure_domains
        .iter()
        .filter(|d| d.spread && d.annual_failure_rate > 0.0)
        .all(|domain| {
            let domains = domain.domains.len() as u32;
            width.div_ceil(domains) <= r
        })
}

/// The smallest k whose k disks streaming together reach the rack's per-read bandwidth floor.
/// One formula for the planner and the verifier, so they agree at the boundary.
pub fn minimum_data_fragments(rack: &Rack) -> u32 {
    (rack.targets.file_bandwidth_floor_mb_per_s / rack.disk_model.bandwidth_mb_per_s)
        .ceil()
        .max(1.0) as u32
}

/// The largest lifetime loss probability of a blob the durability target allows: 10^-nines.
pub fn allowed_loss_probability(rack: &Rack) -> f64 {
    10f64.powf(-rack.targets.durability_nines)
}

/// All (k, r) that meet the durability target, the bandwidth floor, the overhead ceiling and the
/// component-failure rule, best first (lowest capacity overhead, then narrowest).
pub fn erasure_candidates(rack: &Rack) -> Vec<ErasureCandidate> {
    let targets = &rack.targets;
    let allowed_loss = allowed_loss_probability(rack);
    let minimum_k = minimum_data_fragments(rack);
    let maximum_width = rack.disk_count() as u32;
    let mut candidates = Vec::new();
    for r in 1..=MAX_REDUNDANCY_FRAGMENTS {
        for k in minimum_k..=MAX_DATA_FRAGMENTS {
            let width = k + r;
            if width > maximum_width
                || f64::from(r) / f64::from(width) > targets.capacity_overhead_max
            {
                continue;
            }
            if !survives_component_failures(rack, width, r) {
                continue;
            }
            let loss = lifetime_loss_probability(rack, k, r);
            if loss <= allowed_loss {
                candidates.push(ErasureCandidate {
                    k,
                    r,
                    lifetime_loss_probability: loss,
                });
            }
        }
    }
    candidates.sort_by(|a, b| a.rank_key(b));
    candidates
}

/// f for a group of `group_size` disks: the smallest count of failures within one service interval
/// that is exceeded with probability at most the target.
pub fn spares_for_group(rack: &Rack, group_size: u32) -> u32 {
    let interval_years = rack.targets.service_interval_days / 365.0;
    let mean = f64::from(group_size)
        * hourly_rate(rack.disk_model.annual_failure_rate)
        * HOURS_PER_YEAR
        * interval_years;
    let allowed = rack.targets.spare_exhaustion_probability;
    let mut term = (-mean).exp();
    let mut cumulative = term;
    let mut spares = 0;
    while 1.0 - cumulative > allowed && spares < group_size {
        spares += 1;
        term *= mean / f64::from(spares);
        cumulative += term;
    }
    spares
}
