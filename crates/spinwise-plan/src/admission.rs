//! Admission over group constraints: can this set of groups be spinning up or active together?
//!
//! This is the scheduler's view of a layout (Flamingo §4.3): each hard group constraint has a
//! headroom (budget minus the cost of all its disks resting) and each member group spends
//! weight × step-cost of it. Loads are kept as exact integers, so adding and removing a group is
//! exact and the checks are order-independent. Soft constraints are ignored: exceeding them only
//! costs bandwidth.

use crate::analysis::step_costs;
use spinwise_model::{GroupConstraint, GroupIndex, Rack, ResourceKind};

/// How a group's disks are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Anywhere on the spin-up path: charged the path's costliest state.
    Spinning,
    /// In the active state.
    Active,
}

#[derive(Clone, Debug)]
pub struct Admission {
    /// Headroom of each hard constraint, in micro-units.
    headroom: Vec<i64>,
    /// Per group: (constraint, spinning charge, active charge).
    charges: Vec<Vec<(u32, i64, i64)>>,
    load: Vec<i64>,
}

impl Admission {
    /// Compiles the hard constraints for `groups` groups. `path`, `resting` and `active` index the
    /// constraints' cost vectors.
    pub fn new(
        constraints: &[GroupConstraint],
        groups: usize,
        path: &[usize],
        resting: usize,
        active: usize,
    ) -> Admission {
        let mut headroom = Vec::new();
        let mut charges = vec![Vec::new(); groups];
        for constraint in constraints.iter().filter(|c| c.kind == ResourceKind::Hard) {
            let index = headroom.len() as u32;
            headroom.push((constraint.budget - constraint.resting_load(resting)).micros());
            let steps = step_costs(&constraint.cost, path, resting, active);
            for &(group, weight) in &constraint.members {
                let weight = u64::from(weight);
                charges[group as usize].push((
                    index,
                    steps.spinning.times(weight).micros(),
                    steps.active.times(weight).micros(),
                ));
            }
        }
        let load = vec![0; headroom.len()];
        Admission {
            headroom,
            charges,
            load,
        }
    }

    /// Compiles the rack's hard domains directly for a disk → group assignment, without building
    /// (and merging) group constraints: the same admission answers, cheaper, for scoring the
    /// solver's candidates. `group_of[disk]` is each disk's group.
    pub fn from_rack(rack: &Rack, group_of: &[GroupIndex], groups: usize) -> Admission {
        let path = rack.spin_up_path();
        let (resting, active) = (rack.resting_state(), rack.active_state());
        let mut headroom = Vec::new();
        let mut charges = vec![Vec::new(); groups];
        let mut weight = vec![0u64; groups];
        let mut touched = Vec::new();
        for (_, resource) in rack.hard_resources() {
            let steps = step_costs(&resource.cost, &path, resting, active);
            let domain_headroom = resource.headroom().micros();
            for domain in &resource.domains {
                let index = headroom.len() as u32;
                headroom.push(domain_headroom);
                for &disk in domain {
                    let group = group_of[disk as usize] as usize;
                    if weight[group] == 0 {
                        touched.push(group);
                    }
                    weight[group] += 1;
                }
                for group in touched.drain(..) {
                    let disks = std::mem::take(&mut weight[group]);
                    charges[group].push((
                        index,
                        steps.spinning.times(disks).micros(),
                        steps.active.times(disks).micros(),
                    ));
                }
            }
        }
        let load = vec![0; headroom.len()];
        Admission {
            headroom,
            charges,
            load,
        }
    }

    pub fn groups(&self) -> usize {
        self.charges.len()
    }

    /// Whether `group` fits in `mode` on top of the current load.
    pub fn fits(&self, group: GroupIndex, mode: Mode) -> bool {
        self.charges[group as usize]
            .iter()
            .all(|&(constraint, spinning, active)| {
                let charge = if mode == Mode::Spinning {
                    spinning
                } else {
                    active
                };
                self.load[constraint as usize] + charge <= self.headroom[constraint as usize]
            })
    }

    pub fn add(&mut self, group: GroupIndex, mode: Mode) {
        for &(constraint, spinning, active) in &self.charges[group as usize] {
            self.load[constraint as usize] += if mode == Mode::Spinning {
                spinning
            } else {
                active
            };
        }
    }

    pub fn remove(&mut self, group: GroupIndex, mode: Mode) {
        for &(constraint, spinning, active) in &self.charges[group as usize] {
            self.load[constraint as usize] -= if mode == Mode::Spinning {
                spinning
            } else {
                active
            };
        }
    }

    /// Empties the rack (every group resting).
    pub fn clear(&mut self) {
        self.load.iter_mut().for_each(|l| *l = 0);
    }

    /// Whether every group in `set` can spin up at once.
    pub fn set_fits(&mut self, set: &[GroupIndex]) -> bool {
        self.clear();
        let mut fits = true;
        for &group in set {
            if !self.fits(group, Mode::Spinning) {
                fits = false;
                break;
            }
            self.add(group, Mode::Spinning);
        }
        self.clear();
        fits
    }

    /// Low-load trial (Flamingo §5): walk `order`, keeping each group that can spin up together
    /// with those kept so far, until `bound` are kept. Returns how many were kept.
    pub fn low_load_trial(&mut self, order: &[GroupIndex], bound: u64) -> u64 {
        self.greedy(order, bound, Mode::Spinning)
    }

    /// High-load trial: the kept groups are active, and each candidate must be able to spin up
    /// beside them; a group that can is kept (it becomes active).
    pub fn high_load_trial(&mut self, order: &[GroupIndex], bound: u64) -> u64 {
        self.greedy(order, bound, Mode::Active)
    }

    fn greedy(&mut self, order: &[GroupIndex], bound: u64, kept_mode: Mode) -> u64 {
        self.clear();
        let mut kept = 0;
        for &group in order {
            if kept >= bound {
                break;
            }
            if self.fits(group, Mode::Spinning) {
                self.add(group, kept_mode);
                kept += 1;
            }
        }
        self.clear();
        kept
    }

    /// Groups kept by one greedy pass in `order`, each admitted spinning up beside those kept
    /// before it, which are held in `kept_mode`. With `Mode::Spinning` the result can all spin up
    /// together; with `Mode::Active` the last group spins up while the others are active.
    pub fn greedy_set(
        &mut self,
        order: &[GroupIndex],
        bound: u64,
        kept_mode: Mode,
    ) -> Vec<GroupIndex> {
        self.clear();
        let mut kept = Vec::new();
        for &group in order {
            if kept.len() as u64 >= bound {
                break;
            }
            if self.fits(group, Mode::Spinning) {
                self.add(group, kept_mode);
                kept.push(group);
            }
        }
        self.clear();
        kept
    }

    /// The most groups that can spin up together, by exhaustive branch and bound. Exponential:
    /// only for small layouts (tests, tiny racks). `bound` caps the search.
    pub fn exact_maximum(&mut self, bound: u64) -> Vec<GroupIndex> {
        self.clear();
        let mut best = Vec::new();
        let mut current = Vec::new();
        self.branch(0, bound, &mut current, &mut best);
        self.clear();
        best
    }

    fn branch(
        &mut self,
        next: usize,
        bound: u64,
        current: &mut Vec<GroupIndex>,
        best: &mut Vec<GroupIndex>,
    ) {
        if current.len() > best.len() {
            *best = current.clone();
        }
        let groups = self.groups();
        if best.len() as u64 >= bound || current.len() + (groups - next) <= best.len() {
            return;
        }
        for group in next..groups {
            let group = group as GroupIndex;
            if current.len() + (groups - group as usize) <= best.len() {
                return;
            }
            if self.fits(group, Mode::Spinning) {
                self.add(group, Mode::Spinning);
                current.push(group);
                self.branch(group as usize + 1, bound, current, best);
                current.pop();
                self.remove(group, Mode::Spinning);
                if best.len() as u64 >= bound {
                    return;
                }
            }
        }
    }
}
