//! Rack analysis (Flamingo §4.1, eq. 1–2): for every hard resource, how many disks may be in their
//! costliest state per domain (m_r) and rack-wide (M_r); the bottleneck resources (smallest M_r);
//! the bound on groups spinning up together and the high-load target the solver scores against.
//!
//! Costs are exact [`Amount`]s, so two resources tie only when they truly tie.

use serde::Serialize;
use spinwise_model::{Amount, Rack, Resource, ResourceKind};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceAnalysis {
    pub name: String,
    /// N_r: disks per domain.
    pub domain_size: u64,
    pub domains: u64,
    /// m_r (eq. 1): disks of one domain that may be in the costliest state at once.
    pub disks_at_highest_per_domain: u64,
    /// M_r (eq. 2) = (N / N_r) × m_r.
    pub disks_at_highest: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    pub disks: u64,
    pub resources: Vec<ResourceAnalysis>,
    /// Names of the hard resources with the smallest M_r (several on a tie).
    pub bottleneck: Vec<String>,
    /// M: disks that may be in their costliest state at once (the bottleneck's M_r, at most N).
    pub max_disks_at_highest: u64,
}

/// Analyses the hard resources of `rack`. A resource whose states all cost the same never binds and
/// counts as allowing every disk.
pub fn analyse(rack: &Rack) -> Analysis {
    let disks = rack.disk_count() as u64;
    let resources: Vec<ResourceAnalysis> = rack
        .resources
        .iter()
        .filter(|r| r.kind == ResourceKind::Hard)
        .map(|resource| {
            let domain_size = resource.domain_size() as u64;
            let per_domain = resource
                .disks_at_highest_per_domain()
                .unwrap_or(domain_size);
            ResourceAnalysis {
                name: resource.name.clone(),
                domain_size,
                domains: resource.domains.len() as u64,
                disks_at_highest_per_domain: per_domain,
                disks_at_highest: resource.domains.len() as u64 * per_domain,
            }
        })
        .collect();
    let max_disks_at_highest = resources
        .iter()
        .map(|r| r.disks_at_highest)
        .min()
        .unwrap_or(disks)
        .min(disks);
    let bottleneck = resources
        .iter()
        .filter(|r| r.disks_at_highest == max_disks_at_highest && max_disks_at_highest < disks)
        .map(|r| r.name.clone())
        .collect();
    Analysis {
        disks,
        resources,
        bottleneck,
        max_disks_at_highest,
    }
}

/// Per-resource costs above resting that a group's disks incur, in the two modes the scheduler
/// and the quality metrics use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepCosts {
    /// While spinning up: the costliest state on the spin-up path, minus resting.
    pub spinning: Amount,
    /// Once active: the active state's cost, minus resting.
    pub active: Amount,
}

/// Step costs of each resource, indexed like `costs` (one cost vector per resource).
pub fn step_costs(cost: &[Amount], path: &[usize], resting: usize, active: usize) -> StepCosts {
    let rest = cost[resting];
    let spinning = path
        .iter()
        .map(|s| cost[*s])
        .max()
        .expect("path is never empty")
        - rest;
    StepCosts {
        spinning,
        active: cost[active] - rest,
    }
}

/// Upper bound on groups of `group_size` disks spinning up together: each hard resource's domains
/// hold ⌊headroom / spinning-step⌋ such disks (eq. 1 with the spin-up path's costliest state).
pub fn low_load_bound(rack: &Rack, group_size: u64) -> u64 {
    let groups = rack.disk_count() as u64 / group_size;
    rack.hard_resources()
        .map(|(_, resource)| {
            spinning_per_domain(rack, resource) * resource.domains.len() as u64 / group_size
        })
        .min()
        .unwrap_or(groups)
        .min(groups)
}

/// Disks of one domain of `resource` that may be on the spin-up path at once (eq. 1 with the
/// path's costliest state), every other disk resting; the whole domain when no state costs more
/// than resting.
pub fn spinning_per_domain(rack: &Rack, resource: &Resource) -> u64 {
    let step = step_costs(
        &resource.cost,
        &rack.spin_up_path(),
        rack.resting_state(),
        rack.active_state(),
    )
    .spinning;
    let domain_size = resource.domain_size() as u64;
    resource
        .headroom()
        .whole_steps(step)
        .map_or(domain_size, |disks| (disks.max(0) as u64).min(domain_size))
}

/// Flamingo's m for the high-load metric, from the bottleneck (eq. 1–2), with one disk of every
/// domain spinning up and the others active: per domain 1 + ⌊(headroom − spinning step) / active
/// step⌋ disks, summed over the domains, divided by n. An estimate, not a bound: it charges a
/// spin-up in every domain, where the spinning group misses most of them, so a layout can do
/// better (issue 29: ocp-cold-storage fits 5 where this says 4). The solver scores candidates
/// against it before any layout exists; a finished layout's `high_load_bound` is the proven figure
/// of [`crate::high_load::high_load_maximum`].
pub fn high_load_target(rack: &Rack, group_size: u64) -> u64 {
    let path = rack.spin_up_path();
    let (resting, active) = (rack.resting_state(), rack.active_state());
    let groups = rack.disk_count() as u64 / group_size;
    rack.hard_resources()
        .map(|(_, resource)| {
            let steps = step_costs(&resource.cost, &path, resting, active);
            let domain_size = resource.domain_size() as u64;
            let after_spinning = resource.headroom() - steps.spinning;
            let per_domain = match after_spinning.whole_steps(steps.active) {
                _ if after_spinning < Amount::ZERO => 0,
                None => domain_size,
                Some(active_disks) => (1 + active_disks as u64).min(domain_size),
            };
            per_domain * resource.domains.len() as u64 / group_size
        })
        .min()
        .unwrap_or(groups)
        .min(groups)
}
