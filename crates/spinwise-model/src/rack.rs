//! The validated rack description: disks, operating states, resources with their domains and
//! budgets, failure domains, the disk model and the performance targets.
//!
//! A `Rack` is only built by [`crate::parse_rack`], which checks every rule in docs/rack-format.md,
//! so code holding a `Rack` may rely on these invariants:
//! - disks are indexed `0..disks.len()` in ascending id order; ids are unique;
//! - exactly one resting and one active state; the active state is reachable from the resting one;
//! - every resource partitions the disks: each disk is in exactly one domain, all domains have the
//!   same size, and `domain_of[disk]` names it;
//! - the resting state is the cheapest state of every hard resource, and every hard budget lets at
//!   least one disk of each domain walk the spin-up path while the others rest.

use crate::amount::Amount;
use serde::{Deserialize, Serialize};

/// Index of a disk in [`Rack::disks`] (dense, `0..N`). Not the user's disk id.
pub type DiskIndex = u32;
/// Index of a state in [`Rack::states`].
pub type StateIndex = usize;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rack {
    pub name: String,
    pub description: String,
    pub sources: Vec<String>,
    pub axes: Vec<Axis>,
    pub disks: Vec<Disk>,
    pub states: Vec<State>,
    pub transitions: Vec<(StateIndex, StateIndex)>,
    pub resources: Vec<Resource>,
    pub failure_domains: Vec<FailureDomain>,
    pub disk_model: DiskModel,
    pub targets: Targets,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub size: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Disk {
    /// The id the operator uses (printed on the tray, used in explicit domain lists).
    pub id: u32,
    /// One coordinate per axis, in axis order; empty when the rack declares no axes.
    pub coordinates: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub name: String,
    /// Disks rest here when idle; the cheapest state of every hard resource.
    pub resting: bool,
    /// The one state in which a disk serves IO.
    pub active: bool,
    /// A state a disk passes through and cannot stay in (spinning up).
    pub transient: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    /// Exceeding the budget damages hardware or trips a fuse: never allowed.
    Hard,
    /// Exceeding the budget only costs performance (bandwidth).
    Soft,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    pub name: String,
    pub kind: ResourceKind,
    pub unit: String,
    /// Cost of one disk in each state, indexed by [`StateIndex`].
    pub cost: Vec<Amount>,
    /// Each domain's disks, ascending. All domains have the same size.
    pub domains: Vec<Vec<DiskIndex>>,
    /// `domain_of[disk]` is the domain holding that disk.
    pub domain_of: Vec<u32>,
    /// Budget of every domain of this resource.
    pub budget: Amount,
    /// Exploration never raises the budget above this.
    pub upper_bound: Option<Amount>,
    /// Exploration raises the budget by at least this much per step.
    pub minimum_increase: Amount,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureDomain {
    pub name: String,
    pub domains: Vec<Vec<DiskIndex>>,
    pub annual_failure_rate: f64,
    /// Whether stripes must be spread so one failure of this component leaves every stripe
    /// readable (false for a component the rack cannot ride through, such as its only server).
    pub spread: bool,
}

/// A quantity that is either fixed or drawn from a distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "lowercase", deny_unknown_fields)]
pub enum Distribution {
    Fixed {
        value: f64,
    },
    Uniform {
        min: f64,
        max: f64,
    },
    /// A normal distribution truncated to `[min, max]`.
    Normal {
        mean: f64,
        stddev: f64,
        min: f64,
        max: f64,
    },
}

impl Distribution {
    pub fn mean(&self) -> f64 {
        match *self {
            Distribution::Fixed { value } => value,
            Distribution::Uniform { min, max } => (min + max) / 2.0,
            // Truncation is symmetric in every preset; the untruncated mean is close enough for the
            // durability model, which only needs the typical rebuild time.
            Distribution::Normal { mean, .. } => mean,
        }
    }

    pub fn min(&self) -> f64 {
        match *self {
            Distribution::Fixed { value } => value,
            Distribution::Uniform { min, .. } | Distribution::Normal { min, .. } => min,
        }
    }

    /// The distribution of `factor` × X for X drawn from `self`: every parameter scales, so the
    /// shape (and, for a truncated normal, where the bounds cut it) is kept. A sensitivity sweep
    /// uses it to shorten or lengthen a latency without changing its spread relative to its mean.
    ///
    /// # Panics
    /// If `factor` is not finite and positive: a scaled latency must stay a valid distribution
    /// (the parser's rules), and the callers pass constants.
    pub fn scaled(&self, factor: f64) -> Distribution {
        assert!(
            factor.is_finite() && factor > 0.0,
            "distribution scale factor {factor} must be finite and positive"
        );
        match *self {
            Distribution::Fixed { value } => Distribution::Fixed {
                value: value * factor,
            },
            Distribution::Uniform { min, max } => Distribution::Uniform {
                min: min * factor,
                max: max * factor,
            },
            Distribution::Normal {
                mean,
                stddev,
                min,
                max,
            } => Distribution::Normal {
                mean: mean * factor,
                stddev: stddev * factor,
                min: min * factor,
                max: max * factor,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskModel {
    pub capacity_tb: Distribution,
    pub bandwidth_mb_per_s: f64,
    pub seek_ms: f64,
    pub spin_up_latency_s: Distribution,
    pub mount_latency_s: Distribution,
    /// Mount latency under high load (Pelican §4.1: mount delays depend on the system's load);
    /// `None`: `mount_latency_s` at every load. What counts as high load is the simulator's rule
    /// (docs/simulator.md). Skipped when absent so racks without it keep their fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_latency_high_load_s: Option<Distribution>,
    pub unmount_latency_s: Distribution,
    pub annual_failure_rate: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Targets {
    /// A blob is lost over the deployment lifetime with probability at most 10^-durability_nines.
    pub durability_nines: f64,
    /// Days between technician visits; failed disks stay failed until then.
    pub service_interval_days: f64,
    pub deployment_lifetime_years: f64,
    /// k × disk bandwidth must reach this, so one blob streams at least this fast.
    pub file_bandwidth_floor_mb_per_s: f64,
    /// Minimum number of groups that must be able to spin up concurrently.
    pub io_concurrency_target: u32,
    /// Ceiling on r / (k + r).
    pub capacity_overhead_max: f64,
    /// f is the smallest count of failed disks per group that is exceeded within a service interval
    /// with probability at most this.
    pub spare_exhaustion_probability: f64,
    pub fairness: Fairness,
}

/// The latency-versus-throughput trade-off handed to the scheduler (Pelican §2.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// How far a request may be overtaken by later ones batched ahead of it (Pelican's u).
    pub reordering_bound_gb: f64,
    /// Share of a class's disk time rebuild may take when clients also wait.
    pub rebuild_share: f64,
    /// Requests queued per class before new ones are refused.
    pub max_queue_depth: u32,
    /// Requests a class serves at once from its spinning group (1: one after another, as
    /// Pelican's prototype). More keep a group wider than k busy: each read streams from k of
    /// its disks, and concurrent reads of different blobs use the others. Left out of the
    /// serialized rack when 1, so a rack written before the setting existed keeps its
    /// fingerprint and the layouts planned for it (a store's `layout.json`) still bind.
    #[serde(default = "one_request", skip_serializing_if = "is_one_request")]
    pub concurrent_requests_per_class: u32,
    /// Staggered switches (docs/simulator.md, "Staggered switches"; not in Pelican): a class
    /// queueing at least this many client reads does not start a group switch while another
    /// class sending through the same network link is switching and none streams. `None`:
    /// classes switch independently, as Pelican §2.3's. Left out of the serialized rack when
    /// `None`, so racks written before the setting existed keep their fingerprints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stagger_switches_min_queue: Option<u32>,
}

/// A fairness setting outside the range a scheduler accepts: the key (without its table), the
/// value as written, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairnessOutOfRange {
    pub key: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl Fairness {
    /// The first setting outside its range (docs/rack-format.md), if any. The rack parser
    /// (`[targets.fairness]`) and the layout reader (`scheduler`) both check with this one
    /// table, so a hand-edited layout cannot hand a scheduler what a rack could not.
    pub fn out_of_range(&self) -> Option<FairnessOutOfRange> {
        let refuse = |key, value: String, expected| {
            Some(FairnessOutOfRange {
                key,
                value,
                expected,
            })
        };
        let bound = self.reordering_bound_gb;
        if !(bound.is_finite() && bound >= 0.0) {
            return refuse(
                "reordering_bound_gb",
                crate::quote::number(bound),
                "a finite number of GB ≥ 0",
            );
        }
        let share = self.rebuild_share;
        if !(share > 0.0 && share <= 1.0) {
            return refuse(
                "rebuild_share",
                crate::quote::number(share),
                "a share in (0, 1]",
            );
        }
        if self.max_queue_depth == 0 {
            return refuse("max_queue_depth", "0".into(), "at least 1 request");
        }
        let concurrent = self.concurrent_requests_per_class;
        if !(1..=crate::limits::MAX_CONCURRENT_REQUESTS_PER_CLASS).contains(&concurrent) {
            return refuse(
                "concurrent_requests_per_class",
                concurrent.to_string(),
                "1 to 64 requests",
            );
        }
        if let Some(depth) = self.stagger_switches_min_queue
            && !(1..=self.max_queue_depth).contains(&depth)
        {
            return refuse(
                "stagger_switches_min_queue",
                depth.to_string(),
                "1 to max_queue_depth requests",
            );
        }
        None
    }
}

fn one_request() -> u32 {
    1
}

fn is_one_request(count: &u32) -> bool {
    *count == 1
}

/// Which server each disk is attached to ([`Rack::servers`]). A client read leaves the rack by
/// one server's NIC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Servers {
    /// `of_disk[disk]`: the server the disk is attached to, below `count`.
    pub of_disk: Vec<u32>,
    /// At least one.
    pub count: usize,
}

impl Servers {
    /// The server whose NIC a read of `disks_read` leaves by: the first among those holding the
    /// most of its disks (server 0 for a read of no disks).
    pub fn read_server(&self, disks_read: &[DiskIndex]) -> usize {
        let mut disks_per_server = vec![0usize; self.count];
        for &disk in disks_read {
            disks_per_server[self.of_disk[disk as usize] as usize] += 1;
        }
        let most = *disks_per_server.iter().max().expect("at least one server");
        disks_per_server
            .iter()
            .position(|&n| n == most)
            .expect("the max is present")
    }
}

impl Rack {
    pub fn disk_count(&self) -> usize {
        self.disks.len()
    }

    /// The servers the disks hang off: the domains of the failure domain named `server`, else one
    /// server for the whole rack.
    pub fn servers(&self) -> Servers {
        let mut of_disk = vec![0u32; self.disk_count()];
        let Some(domain) = self.failure_domains.iter().find(|f| f.name == "server") else {
            return Servers { of_disk, count: 1 };
        };
        for (server, members) in domain.domains.iter().enumerate() {
            for &disk in members {
                of_disk[disk as usize] = server as u32;
            }
        }
        let count = domain.domains.len().max(1);
        Servers { of_disk, count }
    }

    pub fn resting_state(&self) -> StateIndex {
        self.states
            .iter()
            .position(|s| s.resting)
            .expect("validated: one resting state")
    }

    pub fn active_state(&self) -> StateIndex {
        self.states
            .iter()
            .position(|s| s.active)
            .expect("validated: one active state")
    }

    /// States a disk passes through from resting to active, both ends included: the shortest path
    /// in the transition graph (breadth-first, ties broken by declaration order).
    pub fn spin_up_path(&self) -> Vec<StateIndex> {
        let start = self.resting_state();
        let goal = self.active_state();
        let mut previous: Vec<Option<StateIndex>> = vec![None; self.states.len()];
        let mut seen = vec![false; self.states.len()];
        let mut queue = std::collections::VecDeque::from([start]);
        seen[start] = true;
        while let Some(state) = queue.pop_front() {
            for &(from, to) in &self.transitions {
                if from == state && !seen[to] {
                    seen[to] = true;
                    previous[to] = Some(state);
                    queue.push_back(to);
                }
            }
        }
        assert!(
            seen[goal],
            "validated: active state reachable from resting state"
        );
        let mut path = vec![goal];
        while let Some(step) = previous[*path.last().expect("path is never empty")] {
            path.push(step);
        }
        path.reverse();
        path
    }

    pub fn hard_resources(&self) -> impl Iterator<Item = (usize, &Resource)> {
        self.resources
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == ResourceKind::Hard)
    }

    pub fn resource_index(&self, name: &str) -> Option<usize> {
        self.resources.iter().position(|r| r.name == name)
    }

    /// The same rack with every hard budget raised to let every disk be in its costliest state
    /// at once: Pelican's fully provisioned (FP) comparison point. Budgets already that large
    /// are kept.
    pub fn fully_provisioned(&self) -> Rack {
        let mut rack = self.clone();
        for resource in rack
            .resources
            .iter_mut()
            .filter(|r| r.kind == ResourceKind::Hard)
        {
            let full = resource.cost_highest().times(resource.domain_size() as u64);
            resource.budget = resource.budget.max(full);
        }
        rack
    }

    /// A copy with one resource's budget replaced (exploration).
    pub fn with_budget(&self, resource: usize, budget: Amount) -> Rack {
        let mut rack = self.clone();
        rack.resources[resource].budget = budget;
        rack
    }
}

impl Resource {
    pub fn domain_size(&self) -> usize {
        self.domains.first().map_or(0, Vec::len)
    }

    /// The cheapest cost (the resting state's, for a hard resource).
    pub fn cost_lowest(&self) -> Amount {
        *self
            .cost
            .iter()
            .min()
            .expect("validated: at least one state")
    }

    /// The costliest state's cost (Flamingo's cost_highest).
    pub fn cost_highest(&self) -> Amount {
        *self
            .cost
            .iter()
            .max()
            .expect("validated: at least one state")
    }

    /// What a domain can spend above every disk resting: budget − N_r × cost_lowest.
    pub fn headroom(&self) -> Amount {
        self.budget - self.cost_lowest().times(self.domain_size() as u64)
    }

    /// Flamingo eq. 1: disks of one domain that can be in the costliest state at once.
    /// `None` when every state costs the same (the resource never binds).
    pub fn disks_at_highest_per_domain(&self) -> Option<u64> {
        let step = self.cost_highest() - self.cost_lowest();
        let steps = self.headroom().whole_steps(step)?;
        Some(steps.clamp(0, self.domain_size() as i64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::Distribution;

    #[test]
    fn a_scaled_distribution_scales_every_parameter_and_so_its_mean_and_bounds() {
        let normal = Distribution::Normal {
            mean: 10.0,
            stddev: 1.0,
            min: 8.0,
            max: 14.0,
        };
        assert_eq!(
            normal.scaled(0.25),
            Distribution::Normal {
                mean: 2.5,
                stddev: 0.25,
                min: 2.0,
                max: 3.5,
            }
        );
        let uniform = Distribution::Uniform { min: 1.0, max: 2.0 };
        assert_eq!(uniform.scaled(0.5).mean(), 0.75);
        assert_eq!(uniform.scaled(0.5).min(), 0.5);
        assert_eq!(
            Distribution::Fixed { value: 3.0 }.scaled(2.0),
            Distribution::Fixed { value: 6.0 }
        );
    }

    #[test]
    #[should_panic(expected = "must be finite and positive")]
    fn a_distribution_refuses_a_zero_scale() {
        let _ = Distribution::Fixed { value: 3.0 }.scaled(0.0);
    }
}
