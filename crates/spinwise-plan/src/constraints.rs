//! Group constraints (Flamingo §4.3): every resource domain rewritten over groups. Each disk id is
//! replaced by its group id; the references to one group merge into one member whose weight counts
//! them. Constraints with exactly the same members keep only the most restrictive one; where
//! neither of two is more restrictive in every state, both are kept, so merging never loosens what
//! the scheduler enforces.

use spinwise_model::{Amount, DiskIndex, GroupConstraint, GroupIndex, Rack, ResourceKind};
use std::collections::BTreeMap;

/// Constraints with the same kind and members, indexed into the kept list.
type SameMembers = BTreeMap<(ResourceKind, Vec<(GroupIndex, u32)>), Vec<usize>>;

/// Builds the merged group constraints of `groups` (disk indices per group) over every resource.
pub fn group_constraints(rack: &Rack, groups: &[Vec<DiskIndex>]) -> Vec<GroupConstraint> {
    let mut group_of = vec![0 as GroupIndex; rack.disk_count()];
    for (group, disks) in groups.iter().enumerate() {
        for &disk in disks {
            group_of[disk as usize] = group as GroupIndex;
        }
    }
    let resting = rack.resting_state();
    let mut kept: Vec<GroupConstraint> = Vec::new();
    let mut by_members = SameMembers::new();
    for resource in &rack.resources {
        for domain in &resource.domains {
            let mut weights: BTreeMap<GroupIndex, u32> = BTreeMap::new();
            for &disk in domain {
                *weights.entry(group_of[disk as usize]).or_default() += 1;
            }
            let candidate = GroupConstraint {
                resource: resource.name.clone(),
                kind: resource.kind,
                budget: resource.budget,
                cost: resource.cost.clone(),
                members: weights.into_iter().collect(),
            };
            let slots = by_members
                .entry((candidate.kind, candidate.members.clone()))
                .or_default();
            if slots
                .iter()
                .any(|&i| at_least_as_restrictive(&kept[i], &candidate, resting))
            {
                continue;
            }
            slots.retain(|&i| !at_least_as_restrictive(&candidate, &kept[i], resting));
            slots.push(kept.len());
            kept.push(candidate);
        }
    }
    let mut survivors: Vec<usize> = by_members.into_values().flatten().collect();
    survivors.sort_unstable();
    survivors.into_iter().map(|i| kept[i].clone()).collect()
}

/// Whether `a` forbids everything `b` forbids, for constraints over the same members: in every
/// state, a disk spends at least as large a fraction of `a`'s headroom as of `b`'s.
fn at_least_as_restrictive(a: &GroupConstraint, b: &GroupConstraint, resting: usize) -> bool {
    let headroom = |c: &GroupConstraint| c.budget - c.resting_load(resting);
    let (headroom_a, headroom_b) = (headroom(a), headroom(b));
    if headroom_a <= Amount::ZERO || headroom_b <= Amount::ZERO {
        return a == b;
    }
    a.cost.iter().zip(&b.cost).all(|(cost_a, cost_b)| {
        let step_a = i128::from((*cost_a - a.cost[resting]).micros());
        let step_b = i128::from((*cost_b - b.cost[resting]).micros());
        step_a * i128::from(headroom_b.micros()) >= step_b * i128::from(headroom_a.micros())
    })
}
