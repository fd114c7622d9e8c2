//! Layout quality (Flamingo §5): the low-load and high-load metrics over many random group
//! orderings, and the symmetry heuristic.
//!
//! Low load: walk a random ordering of the groups, keeping each group that can spin up together
//! with those kept, until m_low are kept; record kept / m_low. High load: the kept groups are
//! active and each candidate must be able to spin up beside them; record kept / m_high. The
//! bounds come from the bottleneck (stored in the layout by the planner). Each trial uses a
//! distinct ordering: all of them when the group count is small enough, otherwise seeded random
//! ones with repeats skipped.

use crate::admission::Admission;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use spinwise_model::{GroupIndex, Layout, ResourceKind};
use std::collections::{BTreeSet, HashSet};

pub const DEFAULT_TRIALS: u64 = 250_000;
/// Trials accepted on the command line: 10⁸ trials of a 100-group layout is minutes of CPU.
pub const MAX_TRIALS: u64 = 100_000_000;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quality {
    /// Mean of kept / m_low over trials (1.0: every ordering reached the bound).
    pub low_load: f64,
    pub high_load: f64,
    pub low_load_min: f64,
    pub high_load_min: f64,
    /// Fraction of trials that reached each bound.
    pub low_load_at_bound: f64,
    pub high_load_at_bound: f64,
    pub low_load_bound: u32,
    pub high_load_bound: u32,
    pub trials: u64,
    pub seed: u64,
    pub symmetric: bool,
}

/// Runs `trials` trials (fewer when the layout has fewer distinct orderings).
pub fn quality(layout: &Layout, trials: u64, seed: u64) -> Quality {
    let groups = layout.groups.len();
    let resting = layout
        .state_index(&layout.resting_state)
        .expect("layout checked on load");
    let active = layout
        .state_index(&layout.active_state)
        .expect("layout checked on load");
    let path: Vec<usize> = layout
        .spin_up_path
        .iter()
        .map(|s| layout.state_index(s).expect("layout checked on load"))
        .collect();
    let mut admission = Admission::new(&layout.group_constraints, groups, &path, resting, active);
    let (low_bound, high_bound) = (
        u64::from(layout.max_active_groups_bound.max(1)),
        u64::from(layout.high_load_bound.max(1)),
    );
    let mut tally = Tally::new(low_bound, high_bound);
    let mut trial = |order: &[GroupIndex]| {
        let low = admission.low_load_trial(order, low_bound);
        let high = admission.high_load_trial(order, high_bound);
        tally.record(low, high);
    };
    match all_orderings_count(groups) {
        Some(total) if total <= trials => for_each_permutation(groups, &mut trial),
        _ => random_orderings(groups, trials, seed, &mut trial),
    }
    tally.finish(
        seed,
        is_symmetric(layout),
        layout.max_active_groups_bound,
        layout.high_load_bound,
    )
}

struct Tally {
    low_bound: u64,
    high_bound: u64,
    trials: u64,
    low_sum: f64,
    high_sum: f64,
    low_min: f64,
    high_min: f64,
    low_hits: u64,
    high_hits: u64,
}

impl Tally {
    fn new(low_bound: u64, high_bound: u64) -> Tally {
        Tally {
            low_bound,
            high_bound,
            trials: 0,
            low_sum: 0.0,
            high_sum: 0.0,
            low_min: 1.0,
            high_min: 1.0,
            low_hits: 0,
            high_hits: 0,
        }
    }

    fn record(&mut self, low: u64, high: u64) {
        let (low_fraction, high_fraction) = (
            low as f64 / self.low_bound as f64,
            high as f64 / self.high_bound as f64,
        );
        self.trials += 1;
        self.low_sum += low_fraction;
        self.high_sum += high_fraction;
        self.low_min = self.low_min.min(low_fraction);
        self.high_min = self.high_min.min(high_fraction);
        self.low_hits += u64::from(low >= self.low_bound);
        self.high_hits += u64::from(high >= self.high_bound);
    }

    fn finish(
        self,
        seed: u64,
        symmetric: bool,
        low_load_bound: u32,
        high_load_bound: u32,
    ) -> Quality {
        let trials = self.trials.max(1) as f64;
        Quality {
            low_load: self.low_sum / trials,
            high_load: self.high_sum / trials,
            low_load_min: self.low_min,
            high_load_min: self.high_min,
            low_load_at_bound: self.low_hits as f64 / trials,
            high_load_at_bound: self.high_hits as f64 / trials,
            low_load_bound,
            high_load_bound,
            trials: self.trials,
            seed,
            symmetric,
        }
    }
}

/// groups!, or `None` when it exceeds u64.
fn all_orderings_count(groups: usize) -> Option<u64> {
    (1..=groups as u64).try_fold(1u64, |product, n| product.checked_mul(n))
}

/// Every permutation of 0..groups (Heap's algorithm, iterative).
fn for_each_permutation(groups: usize, visit: &mut impl FnMut(&[GroupIndex])) {
    let mut order: Vec<GroupIndex> = (0..groups as GroupIndex).collect();
    let mut counters = vec![0usize; groups];
    visit(&order);
    let mut i = 1;
    while i < groups {
        if counters[i] < i {
            let swap_with = if i % 2 == 0 { 0 } else { counters[i] };
            order.swap(swap_with, i);
            visit(&order);
            counters[i] += 1;
            i = 1;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
}

/// `trials` distinct seeded orderings. Repeats are detected by a 128-bit fingerprint of the order.
fn random_orderings(groups: usize, trials: u64, seed: u64, visit: &mut impl FnMut(&[GroupIndex])) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<GroupIndex> = (0..groups as GroupIndex).collect();
    let mut seen: HashSet<u128> = HashSet::with_capacity(trials.min(1 << 22) as usize);
    let mut done = 0;
    while done < trials {
        order.shuffle(&mut rng);
        if seen.insert(order_fingerprint(&order)) {
            visit(&order);
            done += 1;
        }
    }
}

fn order_fingerprint(order: &[GroupIndex]) -> u128 {
    let (mut a, mut b) = (0xcbf2_9ce4_8422_2325u64, 0x8422_2325_cbf2_9ce4u64);
    for &group in order {
        a = (a ^ u64::from(group)).wrapping_mul(0x0100_0000_01b3);
        b = (b ^ u64::from(group))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    (u128::from(a) << 64) | u128::from(b)
}

/// Flamingo's symmetry heuristic: every group conflicts (shares a hard constraint) with the same
/// number of other groups.
pub fn is_symmetric(layout: &Layout) -> bool {
    conflict_counts(layout)
        .windows(2)
        .all(|pair| pair[0] == pair[1])
}

/// Conflicting-group count of each group (for reports).
pub fn conflict_counts(layout: &Layout) -> Vec<usize> {
    let mut conflicts: Vec<BTreeSet<GroupIndex>> = vec![BTreeSet::new(); layout.groups.len()];
    for constraint in layout
        .group_constraints
        .iter()
        .filter(|c| c.kind == ResourceKind::Hard)
    {
        for &(group, _) in &constraint.members {
            conflicts[group as usize].extend(
                constraint
                    .members
                    .iter()
                    .map(|(g, _)| *g)
                    .filter(|g| *g != group),
            );
        }
    }
    conflicts.iter().map(BTreeSet::len).collect()
}
