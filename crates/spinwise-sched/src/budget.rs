//! Group operating states under the layout's hard group constraints (Flamingo §4.3).
//!
//! The scheduler moves whole groups between operating states; this module keeps the books. Each
//! hard group constraint has a load Σ weight × cost[state of the group] over its members, which
//! starts at every group resting. A move is granted only if every constraint it touches stays
//! within its budget, so a scheduler that moves groups only through [`GroupBudget::enter`] can
//! never exceed a hard budget. Costs are exact integers (micro-units), so granting and
//! releasing in any order returns the books to exactly where they were.
//!
//! Multi-state accounting: a group spinning up is charged its spin-up cost, an active group its
//! (lower) active cost — the difference is what lets Flamingo's scheduler keep more groups
//! spinning than Pelican's conservative one. Disks of a group that finish spinning up early are
//! cheaper than charged; charging the whole group at the costlier state is the safe side.
//!
//! Invariant (asserted after every change): every hard constraint's load ≤ its budget. All of them
//! are checked when the books are built; a move then re-checks only the constraints of the moving
//! group, the only loads it changes (so the cost of a move does not grow with the rack: the
//! per-disk books of a 1,152-disk rack have ~750 constraints). Soft constraints are not tracked
//! here: exceeding them only costs bandwidth.

use spinwise_model::{GroupIndex, Layout, Rack, ResourceKind};
use thiserror::Error;

/// Index of a state in [`Layout::states`].
pub type StateIndex = usize;

/// A move refused because one hard constraint would exceed its budget.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "moving group {group} to `{state}` would load `{resource}` to {load_micros} micro-units against a budget of {budget_micros}"
)]
pub struct Refusal {
    pub group: GroupIndex,
    pub state: String,
    /// The resource of the first constraint that would be exceeded, and its index.
    pub resource: String,
    pub constraint: usize,
    /// Load after the move and the budget, in micro-units of the resource.
    pub load_micros: i64,
    pub budget_micros: i64,
}

/// The numbers before the per-state costs in each membership of [`GroupBudget`]'s `moves`: the
/// constraint's index and its budget.
const MOVE_HEADER: usize = 2;

/// One hard constraint: budget and, per state, the cost of one disk.
#[derive(Clone, Debug)]
struct Constraint {
    resource: String,
    budget: i64,
    cost: Vec<i64>,
    members: Vec<(GroupIndex, u32)>,
}

/// A what-if from [`GroupBudget::room`]: per constraint of the moving group, its load after the
/// move minus its budget, less what released groups would free.
#[derive(Clone, Debug)]
pub struct Room {
    group: GroupIndex,
    excess: Vec<(usize, i64)>,
}

impl Room {
    /// Whether the move would fit with the released groups resting.
    pub fn fits(&self) -> bool {
        self.excess.iter().all(|(_, excess)| *excess <= 0)
    }
}

#[derive(Clone, Debug)]
pub struct GroupBudget {
    states: Vec<String>,
    resting: StateIndex,
    constraints: Vec<Constraint>,
    /// Per group: (constraint, weight) for every hard constraint it is a member of.
    memberships: Vec<Vec<(usize, u32)>>,
    /// Per group, for each of its memberships in order: the constraint's index, its budget and
    /// weight × cost of every state, [`MOVE_HEADER`] + states numbers each, in one block: a move's
    /// check reads that block and the loads instead of each constraint's own cost vector (the
    /// engine's per-disk audit checks ~500,000 moves a simulated Pelican day; issue 32).
    moves: Vec<Vec<i64>>,
    state_of: Vec<StateIndex>,
    load: Vec<i64>,
}

impl GroupBudget {
    /// Books for `layout` with every group resting. The layout must have passed
    /// `Layout::from_json` (or come from the planner), so its indices are in range.
    pub fn from_layout(layout: &Layout) -> GroupBudget {
        let resting = layout
            .state_index(&layout.resting_state)
            .expect("layout states are checked on load");
        let constraints = layout
            .group_constraints
            .iter()
            .filter(|c| c.kind == ResourceKind::Hard)
            .map(|constraint| Constraint {
                resource: constraint.resource.clone(),
                budget: constraint.budget.micros(),
                cost: constraint.cost.iter().map(|c| c.micros()).collect(),
                members: constraint.members.clone(),
            })
            .collect();
        GroupBudget::with_constraints(
            layout.states.clone(),
            resting,
            layout.groups.len(),
            constraints,
        )
    }

    /// Books in which every disk of `rack` is its own group (group index = disk index), one
    /// constraint per domain of every hard resource of the rack, states the rack's. For policies
    /// that place data on arbitrary disk sets rather than on groups (the random straw-man layout
    /// of Pelican §2.2): the same accounting, at disk granularity.
    pub fn per_disk(rack: &Rack) -> GroupBudget {
        let mut constraints = Vec::new();
        for (_, resource) in rack.hard_resources() {
            for domain in &resource.domains {
                constraints.push(Constraint {
                    resource: resource.name.clone(),
                    budget: resource.budget.micros(),
                    cost: resource.cost.iter().map(|c| c.micros()).collect(),
                    members: domain.iter().map(|disk| (*disk, 1)).collect(),
                });
            }
        }
        GroupBudget::with_constraints(
            rack.states.iter().map(|s| s.name.clone()).collect(),
            rack.resting_state(),
            rack.disk_count(),
            constraints,
        )
    }

    fn with_constraints(
        states: Vec<String>,
        resting: StateIndex,
        groups: usize,
        constraints: Vec<Constraint>,
    ) -> GroupBudget {
        let mut memberships = vec![Vec::new(); groups];
        for (index, constraint) in constraints.iter().enumerate() {
            for &(group, weight) in &constraint.members {
                memberships[group as usize].push((index, weight));
            }
        }
        let load = constraints
            .iter()
            .map(|c| {
                c.members
                    .iter()
                    .map(|(_, w)| i64::from(*w) * c.cost[resting])
                    .sum()
            })
            .collect();
        let moves = memberships
            .iter()
            .map(|of_group| {
                of_group
                    .iter()
                    .flat_map(|&(index, weight)| {
                        let constraint: &Constraint = &constraints[index];
                        assert_eq!(
                            constraint.cost.len(),
                            states.len(),
                            "a constraint costs each state"
                        );
                        let header = [index as i64, constraint.budget];
                        let costs = constraint.cost.iter().map(move |c| i64::from(weight) * c);
                        header.into_iter().chain(costs)
                    })
                    .collect()
            })
            .collect();
        let budget = GroupBudget {
            states,
            resting,
            constraints,
            memberships,
            moves,
            state_of: vec![resting; groups],
            load,
        };
        budget.assert_within_budgets();
        budget
    }

    pub fn groups(&self) -> usize {
        self.state_of.len()
    }

    pub fn state(&self, group: GroupIndex) -> StateIndex {
        self.state_of[group as usize]
    }

    pub fn state_name(&self, state: StateIndex) -> &str {
        &self.states[state]
    }

    pub fn resting_state(&self) -> StateIndex {
        self.resting
    }

    /// Groups not resting, ascending.
    pub fn busy_groups(&self) -> impl Iterator<Item = GroupIndex> + '_ {
        self.state_of
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != self.resting)
            .map(|(g, _)| g as GroupIndex)
    }

    /// Whether `group` could move to `state` now; the first constraint it would exceed otherwise.
    pub fn check(&self, group: GroupIndex, state: StateIndex) -> Result<(), Refusal> {
        assert!(state < self.states.len(), "state {state} out of range");
        let from = self.state_of[group as usize];
        for &(index, weight) in &self.memberships[group as usize] {
            let constraint = &self.constraints[index];
            let after = self.load[index]
                + i64::from(weight) * (constraint.cost[state] - constraint.cost[from]);
            if after > constraint.budget {
                return Err(Refusal {
                    group,
                    state: self.states[state].clone(),
                    resource: constraint.resource.clone(),
                    constraint: index,
                    load_micros: after,
                    budget_micros: constraint.budget,
                });
            }
        }
        Ok(())
    }

    /// The what-if behind a greedy search for groups to spin down (Flamingo §3.2): how far
    /// `group`'s move to `state` would overshoot each of its constraints. Release candidates with
    /// [`GroupBudget::release`] until [`Room::fits`].
    pub fn room(&self, group: GroupIndex, state: StateIndex) -> Room {
        let from = self.state_of[group as usize];
        let excess = self.memberships[group as usize]
            .iter()
            .map(|&(index, weight)| {
                let constraint = &self.constraints[index];
                let after = self.load[index]
                    + i64::from(weight) * (constraint.cost[state] - constraint.cost[from]);
                (index, after - constraint.budget)
            })
            .collect();
        Room { group, excess }
    }

    /// Counts `other` as resting in `room` (no effect for the room's own group or a group already
    /// resting; release each group once).
    pub fn release(&self, room: &mut Room, other: GroupIndex) {
        if other == room.group {
            return;
        }
        let state = self.state_of[other as usize];
        for &(index, weight) in &self.memberships[other as usize] {
            if let Some(entry) = room.excess.iter_mut().find(|(i, _)| *i == index) {
                let constraint = &self.constraints[index];
                entry.1 -=
                    i64::from(weight) * (constraint.cost[state] - constraint.cost[self.resting]);
            }
        }
    }

    /// Whether groups `a` and `b` are members of a common hard constraint (whether moving one can
    /// change whether the other fits).
    pub fn interact(&self, a: GroupIndex, b: GroupIndex) -> bool {
        let of_b = &self.memberships[b as usize];
        self.memberships[a as usize]
            .iter()
            .any(|(index, _)| of_b.iter().any(|(other, _)| other == index))
    }

    /// The state a spinning-up group is charged, given the spin-up path (resting first, active
    /// last): the last state before active, which must cost at least as much as every path
    /// state on every hard constraint. `None` when the path is shorter than two states or the
    /// charged state does not dominate (charging it would understate the draw).
    pub fn spin_up_charge(&self, path: &[StateIndex]) -> Option<StateIndex> {
        let charged = match path.len() {
            0 | 1 => return None,
            2 => path[1],
            n => path[n - 2],
        };
        self.constraints
            .iter()
            .all(|c| path.iter().all(|s| c.cost[*s] <= c.cost[charged]))
            .then_some(charged)
    }

    /// Whether `group` could move to `state` now: [`GroupBudget::check`] without building the
    /// refusal (no allocation; for schedulers that ask on every poll).
    pub fn fits(&self, group: GroupIndex, state: StateIndex) -> bool {
        assert!(state < self.states.len(), "state {state} out of range");
        let from = self.state_of[group as usize];
        self.moves[group as usize]
            .chunks_exact(MOVE_HEADER + self.states.len())
            .all(|m| {
                // weight × (cost[state] − cost[from]), exactly: integers far from overflow.
                self.load[m[0] as usize] + (m[MOVE_HEADER + state] - m[MOVE_HEADER + from]) <= m[1]
            })
    }

    /// Moves `group` to `state` if every hard budget allows it. Moving to a cheaper state always
    /// succeeds.
    pub fn enter(&mut self, group: GroupIndex, state: StateIndex) -> Result<(), Refusal> {
        if self.try_enter(group, state) {
            Ok(())
        } else {
            Err(self
                .check(group, state)
                .expect_err("a move that does not fit is refused"))
        }
    }

    /// [`GroupBudget::enter`] answering only whether the move was made.
    pub fn try_enter(&mut self, group: GroupIndex, state: StateIndex) -> bool {
        if !self.fits(group, state) {
            return false;
        }
        let from = self.state_of[group as usize];
        let stride = MOVE_HEADER + self.states.len();
        for m in self.moves[group as usize].chunks_exact(stride) {
            self.load[m[0] as usize] += m[MOVE_HEADER + state] - m[MOVE_HEADER + from];
        }
        self.state_of[group as usize] = state;
        self.assert_within_budgets_of(group);
        true
    }

    /// Busy groups sharing a constraint with `group` that would block its move to `state`: the
    /// candidates to spin down first (Flamingo's greedy search for groups to transition).
    pub fn blockers(&self, group: GroupIndex, state: StateIndex) -> Vec<GroupIndex> {
        let mut blockers = Vec::new();
        self.blockers_where(group, state, |_| true, &mut blockers);
        blockers
    }

    /// The [`GroupBudget::blockers`] for which `keep` holds, ascending, into `out` (cleared
    /// first): for schedulers that look for blockers on every poll and want only some of them,
    /// without allocating.
    pub fn blockers_where(
        &self,
        group: GroupIndex,
        state: StateIndex,
        keep: impl Fn(GroupIndex) -> bool,
        out: &mut Vec<GroupIndex>,
    ) {
        out.clear();
        let from = self.state_of[group as usize];
        for &(index, weight) in &self.memberships[group as usize] {
            let constraint = &self.constraints[index];
            if self.load[index]
                + i64::from(weight) * (constraint.cost[state] - constraint.cost[from])
                <= constraint.budget
            {
                continue;
            }
            for &(member, _) in &constraint.members {
                if member != group && self.state_of[member as usize] != self.resting && keep(member)
                {
                    out.push(member);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Constraint `index`'s load and budget (micro-units), in [`GroupBudget::loads`] order.
    pub fn load_of(&self, index: usize) -> (i64, i64) {
        (self.load[index], self.constraints[index].budget)
    }

    /// Every hard constraint's load and budget, in micro-units (for checkers and reports).
    pub fn loads(&self) -> impl Iterator<Item = (&str, i64, i64)> + '_ {
        self.constraints
            .iter()
            .zip(&self.load)
            .map(|(c, load)| (c.resource.as_str(), *load, c.budget))
    }

    /// The invariant on the constraints `group` is a member of (the others did not change).
    fn assert_within_budgets_of(&self, group: GroupIndex) {
        let stride = MOVE_HEADER + self.states.len();
        for m in self.moves[group as usize].chunks_exact(stride) {
            let index = m[0] as usize;
            if self.load[index] > m[1] {
                let constraint = &self.constraints[index];
                panic!(
                    "hard budget of `{}` exceeded: {} > {}",
                    constraint.resource, self.load[index], constraint.budget
                );
            }
        }
    }

    fn assert_within_budgets(&self) {
        for (constraint, load) in self.constraints.iter().zip(&self.load) {
            assert!(
                *load <= constraint.budget,
                "hard budget of `{}` exceeded: {load} > {}",
                constraint.resource,
                constraint.budget
            );
        }
    }
}
