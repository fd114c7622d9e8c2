//! Design-space exploration (Flamingo §4.1): starting from the rack's budgets, repeatedly relax the
//! bottleneck resource by δ — the larger of the smallest increase that lets one more disk of a
//! domain reach a costlier state and the resource's minimum increase — branching when several
//! resources tie, until M = N or the bottleneck hits its upper bound.
//!
//! Breadth-first with a visited set keyed by the budget vector, so each configuration is emitted
//! once and in a deterministic order; the walk is capped at `limit` configurations.

use crate::analysis::{Analysis, analyse};
use serde::Serialize;
use spinwise_model::{Amount, Rack, Resource};
use std::collections::{BTreeSet, VecDeque};

/// Configurations one exploration may emit. Flamingo's seven racks gave 649–1,921 each; the cap
/// keeps a pathological rack (hundreds of states, tiny δ) from exhausting memory.
pub const DEFAULT_MAX_CONFIGURATIONS: usize = 50_000;

#[derive(Clone, Debug, Serialize)]
pub struct Configuration {
    pub index: usize,
    /// Budget of every resource (hard and soft), in rack order.
    pub budgets: Vec<Amount>,
    pub analysis: Analysis,
    /// The configuration this one relaxed, and the resource it relaxed.
    pub parent: Option<usize>,
    pub relaxed: Option<String>,
    /// Why the walk stopped here, when it did.
    pub terminal: Option<Terminal>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    /// M = N: every disk may be in its costliest state.
    FullyProvisioned,
    /// Every bottleneck resource is at its upper bound.
    UpperBound,
}

#[derive(Clone, Debug, Serialize)]
pub struct Exploration {
    pub configurations: Vec<Configuration>,
    /// The cap stopped the walk before it finished.
    pub truncated: bool,
}

impl Configuration {
    /// The rack with this configuration's budgets.
    pub fn rack(&self, base: &Rack) -> Rack {
        with_budgets(base, &self.budgets)
    }
}

pub fn explore(rack: &Rack, limit: usize) -> Exploration {
    let start: Vec<Amount> = rack.resources.iter().map(|r| r.budget).collect();
    let mut seen = BTreeSet::from([start.clone()]);
    let mut queue = VecDeque::from([(start, None, None)]);
    let mut configurations = Vec::new();
    while let Some((budgets, parent, relaxed)) = queue.pop_front() {
        if configurations.len() >= limit {
            return Exploration {
                configurations,
                truncated: true,
            };
        }
        let index = configurations.len();
        let current = with_budgets(rack, &budgets);
        let analysis = analyse(&current);
        let mut terminal = None;
        if analysis.max_disks_at_highest >= analysis.disks {
            terminal = Some(Terminal::FullyProvisioned);
        } else {
            let mut relaxed_any = false;
            for name in &analysis.bottleneck {
                let resource_index = current
                    .resource_index(name)
                    .expect("bottleneck names a resource");
                let resource = &current.resources[resource_index];
                let Some(delta) = relaxation_step(resource) else {
                    continue;
                };
                let budget = resource.budget + delta;
                if resource.upper_bound.is_some_and(|bound| budget > bound) {
                    continue;
                }
                relaxed_any = true;
                let mut next = budgets.clone();
                next[resource_index] = budget;
                if seen.insert(next.clone()) {
                    queue.push_back((next, Some(index), Some(name.clone())));
                }
            }
            if !relaxed_any {
                terminal = Some(Terminal::UpperBound);
            }
        }
        configurations.push(Configuration {
            index,
            budgets,
            analysis,
            parent,
            relaxed,
            terminal,
        });
    }
    Exploration {
        configurations,
        truncated: false,
    }
}

fn with_budgets(rack: &Rack, budgets: &[Amount]) -> Rack {
    let mut rack = rack.clone();
    for (resource, budget) in rack.resources.iter_mut().zip(budgets) {
        resource.budget = *budget;
    }
    rack
}

/// δ for one resource: the smallest budget increase after which one more disk of a domain can
/// reach a costlier state than it can now, raised to the resource's minimum increase. `None` when
/// every disk may already be in the costliest state.
pub fn relaxation_step(resource: &Resource) -> Option<Amount> {
    let lowest = resource.cost_lowest();
    let mut levels: Vec<Amount> = resource
        .cost
        .iter()
        .map(|c| *c - lowest)
        .filter(|step| *step > Amount::ZERO)
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let top = *levels.last()?;
    let headroom = resource.headroom();
    let at_top = headroom.whole_steps(top).expect("top step is positive");
    if at_top >= resource.domain_size() as i64 {
        return None;
    }
    let leftover = headroom - top.times(at_top.max(0) as u64);
    let smallest = levels
        .iter()
        .filter(|level| **level > leftover)
        .map(|level| *level - leftover)
        .min()
        .expect("the top level exceeds the leftover");
    Some(smallest.max(resource.minimum_increase))
}

/// Share of full provisioning of one resource under `budgets` (a configuration's, in rack order):
/// the domain headroom over what every disk of the domain in its costliest state needs,
/// (budget − N_r × cost_lowest) / (N_r × (cost_highest − cost_lowest)), clamped to 0..=1.
/// Unlike [`provisioned_fraction`], which counts whole disks (M_r / N) so configurations a
/// relaxation step apart can share a value, this is continuous in the budget: distinct budgets
/// give distinct shares (issue 29: Fig. 3(b) plotted 52 pelican configurations on 33 markers).
/// 1 for a resource whose states all cost the same; `None` for an unknown resource.
pub fn provisioned_share(rack: &Rack, budgets: &[Amount], resource: &str) -> Option<f64> {
    let index = rack.resource_index(resource)?;
    let resource = &rack.resources[index];
    let budget = *budgets.get(index)?;
    let disks = resource.domain_size() as u64;
    let step = resource.cost_highest() - resource.cost_lowest();
    if step <= Amount::ZERO || disks == 0 {
        return Some(1.0);
    }
    let headroom = budget - resource.cost_lowest().times(disks);
    Some((headroom.as_f64() / step.times(disks).as_f64()).clamp(0.0, 1.0))
}

/// Fraction of full provisioning of one resource: M_r / N.
pub fn provisioned_fraction(analysis: &Analysis, resource: &str) -> Option<f64> {
    analysis
        .resources
        .iter()
        .find(|r| r.name == resource)
        .map(|r| (r.disks_at_highest as f64 / analysis.disks as f64).min(1.0))
}
