//! The random straw-man layout's scheduler (Pelican §2.2), sans-IO: the baseline that shows why
//! Pelican groups disks.
//!
//! Each blob lives on its own *placement set* of k + r disks picked at random (the simulator's
//! `random_layout` builds them), so there are no groups to schedule: [`RandomPlacement`] works at
//! disk level. The `GroupIndex` in its `SpinUp` / `SpinDown` actions is a rack disk index, its
//! books are [`GroupBudget::per_disk`] (one singleton group per disk, one constraint per hard
//! domain of the rack), and a request's `group` field is the index of its placement set.
//!
//! Scheduling is strict FIFO, kept simple on purpose (an expedited read, [`Kind::Expedited`], goes
//! ahead of every standard request, behind earlier expedited ones): only the head request (the oldest not yet
//! served) is worked for. Its resting disks are spun up as the budgets allow; when a disk does not
//! fit, the active disks blocking it that no request in service uses and the head does not need
//! are spun down. The head is served once all its disks are active and none of them is serving
//! another request (one request per disk at a time); it then leaves the queue and the next request
//! becomes the head, so requests are served concurrently only as far as a new head's disks fit
//! beside those still serving. Disks stay active after serving until their resources are wanted.
//!
//! Cost: a poll that finds nothing to do leaves the policy *stalled*, and later polls return
//! `None` at once until something that could change the answer happens (a disk finishes a
//! transition, a request is served, or a request arrives at an empty queue and becomes the head).
//! A poll depends only on the head, the disks' phases, what they serve and the books, and only
//! those calls change them, so the actions are exactly those of re-deciding on every poll; under
//! overload (every event a rejected arrival) it is what keeps a poll O(1) instead of a walk over
//! the head's disks and their blockers.
//!
//! Bounded queue: at most `max_queued` requests wait (the simulator passes Pelican's total,
//! `max_queue_depth × classes`); beyond it `Rejected::QueueFull { class: 0, .. }` (the one FIFO).
//!
//! Invariants: no hard budget is ever exceeded (every disk state change goes through the books,
//! which assert); a disk serves at most one request at a time and only while active; every
//! placement set can have all its disks spinning up at once from a resting rack (checked in
//! [`RandomPlacement::new`]), so the head is always eventually served.

use crate::budget::{GroupBudget, StateIndex};
use crate::policy::Policy;
use crate::scheduler::{Action, Kind, Rejected, Request, SchedulerError};
use spinwise_model::{DiskIndex, GroupIndex, Rack};
use std::collections::VecDeque;
use thiserror::Error;

/// Placement sets the policy refuses.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum PlacementError {
    #[error("the rack's spin-up states: {0}")]
    SpinUp(#[from] SchedulerError),
    #[error("there are no placement sets")]
    NoSets,
    #[error("placement set {set} is empty")]
    EmptySet { set: usize },
    #[error("placement set {set} names disk {disk}, but the rack has {disks} disks")]
    UnknownDisk {
        set: usize,
        disk: DiskIndex,
        disks: usize,
    },
    #[error("placement set {set} names disk {disk} twice")]
    RepeatedDisk { set: usize, disk: DiskIndex },
    #[error(
        "placement set {set} cannot spin up all its disks at once even on a resting rack: {reason}"
    )]
    Infeasible { set: usize, reason: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Resting,
    SpinningUp,
    Active,
    SpinningDown,
}

#[derive(Debug)]
pub struct RandomPlacement {
    budget: GroupBudget,
    placements: Vec<Vec<DiskIndex>>,
    phase: Vec<Phase>,
    /// The request each disk is serving, if any.
    serving: Vec<Option<u64>>,
    /// FIFO, except that expedited reads go ahead of every standard one (behind earlier
    /// expedited reads): the first `expedited` entries are the expedited reads.
    queue: VecDeque<Request>,
    expedited: usize,
    max_queued: usize,
    in_service: usize,
    spinning_up: StateIndex,
    active: StateIndex,
    pending: VecDeque<Action>,
    /// The last poll found nothing to do and nothing that could change that has happened since.
    stalled: bool,
    /// Scratch for the idle blockers of one disk (kept to spare an allocation per disk and poll).
    idle_blockers: Vec<DiskIndex>,
}

impl RandomPlacement {
    /// A scheduler for `rack` serving blobs on `placements` (disk indices of the rack), every
    /// disk resting, at most `max_queued` requests waiting.
    pub fn new(
        rack: &Rack,
        placements: Vec<Vec<DiskIndex>>,
        max_queued: usize,
    ) -> Result<RandomPlacement, PlacementError> {
        let budget = GroupBudget::per_disk(rack);
        let path = rack.spin_up_path();
        let spinning_up = budget.spin_up_charge(&path).ok_or_else(|| {
            PlacementError::SpinUp(SchedulerError::SpinUpPath {
                path: path.iter().map(|s| rack.states[*s].name.clone()).collect(),
            })
        })?;
        let mut budget = budget;
        check_placements(&mut budget, spinning_up, &placements)?;
        let disks = rack.disk_count();
        Ok(RandomPlacement {
            budget,
            placements,
            phase: vec![Phase::Resting; disks],
            serving: vec![None; disks],
            queue: VecDeque::new(),
            expedited: 0,
            max_queued,
            in_service: 0,
            spinning_up,
            active: rack.active_state(),
            pending: VecDeque::new(),
            stalled: false,
            idle_blockers: Vec::new(),
        })
    }

    pub fn budget(&self) -> &GroupBudget {
        &self.budget
    }

    /// Disks not resting.
    pub fn busy_disks(&self) -> usize {
        self.phase.iter().filter(|p| **p != Phase::Resting).count()
    }

    /// Serves the head if all its disks are active and free.
    fn serve_head(&mut self) -> Option<Action> {
        let head = *self.queue.front()?;
        let disks = &self.placements[head.group as usize];
        let ready = disks.iter().all(|d| {
            self.phase[*d as usize] == Phase::Active && self.serving[*d as usize].is_none()
        });
        if !ready {
            return None;
        }
        for disk in disks {
            self.serving[*disk as usize] = Some(head.id);
        }
        self.queue.pop_front();
        if head.kind == Kind::Expedited {
            self.expedited -= 1;
        }
        self.in_service += 1;
        Some(Action::Serve(head))
    }

    /// Spins up the head's first resting disk that fits; otherwise spins down idle blockers.
    fn spin_up_for_head(&mut self) -> Option<Action> {
        let head = *self.queue.front()?;
        let disks = &self.placements[head.group as usize];
        for &disk in disks {
            if self.phase[disk as usize] != Phase::Resting {
                continue;
            }
            if self.budget.try_enter(disk, self.spinning_up) {
                self.phase[disk as usize] = Phase::SpinningUp;
                return Some(Action::SpinUp(disk));
            }
            let (phase, serving) = (&self.phase, &self.serving);
            let idle = |blocker: DiskIndex| {
                phase[blocker as usize] == Phase::Active
                    && serving[blocker as usize].is_none()
                    && !disks.contains(&blocker)
            };
            self.budget
                .blockers_where(disk, self.spinning_up, idle, &mut self.idle_blockers);
            for &blocker in &self.idle_blockers {
                self.phase[blocker as usize] = Phase::SpinningDown;
                self.pending.push_back(Action::SpinDown(blocker));
            }
        }
        self.pending.pop_front()
    }
}

/// Refuses sets with unknown or repeated disks, and sets that could not spin up all at once.
/// Each set is tried on `budget` itself (every disk resting) and the books are put back after it,
/// so `budget` is unchanged when this returns (a copy of the books per set cost ~0.4 s on a
/// 1,152-disk rack with 4,096 sets).
fn check_placements(
    budget: &mut GroupBudget,
    spinning_up: StateIndex,
    placements: &[Vec<DiskIndex>],
) -> Result<(), PlacementError> {
    if placements.is_empty() {
        return Err(PlacementError::NoSets);
    }
    let disks = budget.groups();
    let resting = budget.resting_state();
    for (set, placement) in placements.iter().enumerate() {
        if placement.is_empty() {
            return Err(PlacementError::EmptySet { set });
        }
        let trial = spin_up_together(budget, spinning_up, set, placement);
        for &disk in placement.iter().filter(|d| (**d as usize) < disks) {
            budget
                .enter(disk, resting)
                .expect("resting is the cheapest state");
        }
        trial?;
    }
    Ok(())
}

/// Spins up every disk of `placement` (set number `set`) on `budget`, stopping at the first that
/// is unknown, repeated or does not fit.
fn spin_up_together(
    budget: &mut GroupBudget,
    spinning_up: StateIndex,
    set: usize,
    placement: &[DiskIndex],
) -> Result<(), PlacementError> {
    let disks = budget.groups();
    for &disk in placement {
        if disk as usize >= disks {
            return Err(PlacementError::UnknownDisk { set, disk, disks });
        }
        if budget.state(disk) != budget.resting_state() {
            return Err(PlacementError::RepeatedDisk { set, disk });
        }
        budget
            .enter(disk, spinning_up)
            .map_err(|refusal| PlacementError::Infeasible {
                set,
                reason: refusal.to_string(),
            })?;
    }
    Ok(())
}

impl Policy for RandomPlacement {
    fn submit(&mut self, _now_us: u64, request: Request) -> Result<(), Rejected> {
        let sets = self.placements.len() as u32;
        if request.group >= sets {
            return Err(Rejected::UnknownGroup {
                group: request.group,
                groups: sets,
            });
        }
        if self.queue.len() >= self.max_queued {
            return Err(Rejected::QueueFull {
                class: 0,
                depth: self.queue.len() as u32,
            });
        }
        // A request behind the head changes nothing a poll looks at; a new head does.
        if request.kind == Kind::Expedited {
            self.stalled &= self.expedited > 0;
            self.queue.insert(self.expedited, request);
            self.expedited += 1;
        } else {
            self.stalled &= !self.queue.is_empty();
            self.queue.push_back(request);
        }
        Ok(())
    }

    fn poll_action(&mut self, _now_us: u64) -> Option<Action> {
        if let Some(action) = self.pending.pop_front() {
            return Some(action);
        }
        if self.stalled {
            return None;
        }
        let action = self.serve_head().or_else(|| self.spin_up_for_head());
        self.stalled = action.is_none();
        action
    }

    fn spun_up(&mut self, _now_us: u64, disk: GroupIndex) {
        assert_eq!(
            self.phase[disk as usize],
            Phase::SpinningUp,
            "spun_up for a disk not spinning up"
        );
        self.budget
            .enter(disk, self.active)
            .expect("active is never costlier than spinning up");
        self.phase[disk as usize] = Phase::Active;
        self.stalled = false;
    }

    fn spun_down(&mut self, _now_us: u64, disk: GroupIndex) {
        assert_eq!(
            self.phase[disk as usize],
            Phase::SpinningDown,
            "spun_down for a disk not spinning down"
        );
        let resting = self.budget.resting_state();
        self.budget
            .enter(disk, resting)
            .expect("resting is the cheapest state");
        self.phase[disk as usize] = Phase::Resting;
        self.stalled = false;
    }

    fn served(&mut self, _now_us: u64, request: &Request) {
        for disk in &self.placements[request.group as usize] {
            assert_eq!(
                self.serving[*disk as usize],
                Some(request.id),
                "served a request not being served"
            );
            self.serving[*disk as usize] = None;
        }
        self.in_service -= 1;
        self.stalled = false;
    }

    fn next_timeout_us(&self) -> Option<u64> {
        None
    }

    fn is_idle(&self) -> bool {
        self.pending.is_empty()
            && self.queue.is_empty()
            && self.in_service == 0
            && self
                .phase
                .iter()
                .all(|p| matches!(p, Phase::Resting | Phase::Active))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::{assert_same_actions, planned};
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;
    use std::sync::OnceLock;

    /// Pelican's rack and placement sets of 18 disks: each group's first 18 and, overlapping
    /// them, the last 18 of one group and first of the next.
    fn pelican() -> &'static (Rack, Vec<Vec<DiskIndex>>) {
        static PELICAN: OnceLock<(Rack, Vec<Vec<DiskIndex>>)> = OnceLock::new();
        PELICAN.get_or_init(|| {
            let (rack, layout) = planned("pelican");
            let disk =
                |id: &u32| rack.disks.binary_search_by_key(id, |d| d.id).unwrap() as DiskIndex;
            let groups: Vec<Vec<DiskIndex>> = layout
                .groups
                .iter()
                .map(|ids| ids.iter().map(disk).collect())
                .collect();
            let mut sets: Vec<Vec<DiskIndex>> = groups.iter().map(|g| g[..18].to_vec()).collect();
            for pair in groups.windows(2) {
                let set: Vec<DiskIndex> = pair[0][pair[0].len() - 9..]
                    .iter()
                    .chain(&pair[1][..9])
                    .copied()
                    .collect();
                let mut books = GroupBudget::per_disk(&rack);
                let spinning_up = books.spin_up_charge(&rack.spin_up_path()).unwrap();
                if set.iter().all(|d| books.try_enter(*d, spinning_up)) {
                    sets.push(set);
                }
            }
            (rack, sets)
        })
    }

    #[test]
    fn checking_the_placement_sets_leaves_every_disk_resting() {
        let (rack, sets) = pelican();
        let policy = RandomPlacement::new(rack, sets.clone(), 10).unwrap();
        let untouched = GroupBudget::per_disk(rack);
        assert_eq!(policy.budget().busy_groups().count(), 0);
        assert!(policy.budget().loads().eq(untouched.loads()));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, rng_seed: RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

        #[test]
        fn random_placement_decides_the_same_with_and_without_its_memo(
            arrivals in prop::collection::vec((0u64..300_000_000, any::<u32>(), 1u64..2_000_000_000, any::<bool>()), 1..120),
            max_queued in 1usize..50,
        ) {
            let (rack, sets) = pelican();
            let arrivals: Vec<(u64, Request)> = arrivals
                .iter()
                .enumerate()
                .map(|(id, (at, set, bytes, expedited))| {
                    let group = set % sets.len() as u32;
                    let kind = if *expedited { Kind::Expedited } else { Kind::Client };
                    (*at, Request { id: id as u64, group, bytes: *bytes, kind })
                })
                .collect();
            let make = || RandomPlacement::new(rack, sets.clone(), max_queued).unwrap();
            let forget = |policy: &mut RandomPlacement| policy.stalled = false;
            let actions = assert_same_actions(&mut make(), &mut make(), forget, &arrivals);
            prop_assert!(actions >= 1);
        }
    }
}
