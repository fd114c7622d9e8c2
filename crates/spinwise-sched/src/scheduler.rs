//! The class scheduler (Pelican §2.3), sans-IO: requests and completions in, actions out.
//!
//! One [`ClassScheduler`] owns every class of a layout (the solver's classes, or one class per
//! group when the layout has none). Per class it keeps two [`ReorderQueue`]s — rebuild and client
//! — shared by [`FairShare`], and serves one request at a time from the group its class has
//! spinning. Switching a class to another group spins the old one down and the new one up; every
//! state change goes through [`GroupBudget`], so no hard budget is ever exceeded, including the
//! resources classes share (Pelican's trays power one spinning disk of each of two classes). When
//! a spin-up is refused, idle groups of other classes that block it are spun down.
//!
//! The caller performs every [`Action`] and reports back:
//! `SpinUp(g)` → later [`ClassScheduler::spun_up`]; `SpinDown(g)` → later
//! [`ClassScheduler::spun_down`]; `Serve(request)` → later [`ClassScheduler::served`]. Nothing
//! here reads a clock or sleeps, so the simulator and the server drive the same code; the policy
//! needs no timers, so there is no timeout to poll.
//!
//! The fair share splits disk *time* between the queues, not bytes: each served request is charged
//! [`fair_cost`], the bytes one disk of its group moves — a client read of b bytes streams b / k
//! from each of k data disks, a rebuild request of one stripe stack reads a stack from each of k
//! disks and writes one, so it keeps a disk busy for its full size. Every disk of a group streams
//! at the same bandwidth, so this is service time up to a constant: with w = 50%, a 66 MB rebuild
//! stack weighs as much as a 1 GB read on a 15 + 3 code, and a rebuild finishes in about
//! x / t × 1 / w (Pelican §2.3). The reordering queues still measure cost (and the bound u) in
//! bytes.
//!
//! Group affinity against the share: when the fair choice's head is for another group but the
//! other queue's head is for the spinning group, the other queue is served instead (a switch costs
//! a spin-up). Unchecked, a rebuild — whose queue never runs dry and is all for one group — would
//! keep its class for the whole rebuild and starve the class's other groups. So a queue may be
//! served out of turn only until it has taken u / k of fair cost (disk-bytes; u the reordering
//! bound, the same allowance a request has for being overtaken within a queue) since the chosen
//! queue was last served; then the class switches to the chosen queue's group. With Pelican's
//! u = 500 GB and k = 15 that is ~33 GB of disk time (~5 minutes at 105 MB/s) per turn, so the two
//! spin-ups of a round trip cost a few percent.
//!
//! Invariants: at most one group per class is not resting; at most one request per class is
//! being served, and only by an active group; requests queued per class never exceed the
//! layout's `max_queue_depth`.

use crate::budget::{GroupBudget, StateIndex};
use crate::fair::{FairShare, FairShareError, Queue};
use crate::reorder::{CostModel, ReorderQueue};
use spinwise_model::{GroupIndex, Layout, ResourceKind};
use std::collections::VecDeque;
use thiserror::Error;

/// What a request asks of the disks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Client,
    Rebuild,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub group: GroupIndex,
    pub bytes: u64,
    pub kind: Kind,
}

/// What the caller must do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    SpinUp(GroupIndex),
    SpinDown(GroupIndex),
    Serve(Request),
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Rejected {
    #[error("class {class} already queues {depth} requests (the layout's max_queue_depth)")]
    QueueFull { class: u32, depth: u32 },
    #[error("group {group} is not in the layout ({groups} groups)")]
    UnknownGroup { group: GroupIndex, groups: u32 },
}

#[derive(Clone, Debug, PartialEq, Error)]
pub enum SchedulerError {
    #[error("the layout's rebuild share: {0}")]
    RebuildShare(#[from] FairShareError),
    #[error("the layout's spin-up path {path:?} is not resting → (transient states) → active")]
    SpinUpPath { path: Vec<String> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    SpinningUp,
    Active,
    SpinningDown,
}

#[derive(Debug)]
struct Class {
    client: ReorderQueue<Request>,
    rebuild: ReorderQueue<Request>,
    fair: FairShare,
    /// The class's one non-resting group.
    current: Option<(GroupIndex, Phase)>,
    /// Fair cost served from the queue the fair share did not choose (its head was for the
    /// spinning group, the chosen one's was not) since the chosen queue was last served.
    overtaken_cost: u64,
    serving: Option<Request>,
}

#[derive(Debug)]
pub struct ClassScheduler {
    budget: GroupBudget,
    class_of: Vec<u32>,
    classes: Vec<Class>,
    cost_model: CostModel,
    /// The code's k: a client read streams from k data disks.
    data_disks: u32,
    /// How much fair cost one queue may be served out of turn for group affinity: the reordering
    /// bound u (client bytes) in disk-bytes, u / k. See the module documentation.
    affinity_bound: u64,
    max_queue_depth: u32,
    spinning_up: StateIndex,
    active: StateIndex,
    /// Actions decided but not yet handed out (a switch yields spin-down then spin-up).
    pending: VecDeque<Action>,
}

impl ClassScheduler {
    /// A scheduler for `layout`, all groups resting. Reordering is bounded by the layout's
    /// `reordering_bound_gb` in bytes (Pelican's evaluation: 500 GB).
    pub fn new(layout: &Layout) -> Result<ClassScheduler, SchedulerError> {
        let spinning_up = spin_up_state(layout)?;
        let active = layout
            .state_index(&layout.active_state)
            .expect("layout states are checked on load");
        let groups = layout.groups.len();
        let class_of: Vec<u32> = layout
            .classes
            .clone()
            .unwrap_or_else(|| (0..groups as u32).collect());
        assert_eq!(class_of.len(), groups, "one class per group");
        let class_count = class_of.iter().max().map_or(0, |c| *c as usize + 1);
        let bound_bytes = (layout.scheduler.reordering_bound_gb * 1e9) as u64;
        let share = layout.scheduler.rebuild_share;
        let classes = (0..class_count)
            .map(|_| {
                Ok(Class {
                    client: ReorderQueue::new(bound_bytes),
                    rebuild: ReorderQueue::new(bound_bytes),
                    fair: FairShare::new(share)?,
                    current: None,
                    overtaken_cost: 0,
                    serving: None,
                })
            })
            .collect::<Result<Vec<_>, SchedulerError>>()?;
        Ok(ClassScheduler {
            budget: GroupBudget::from_layout(layout),
            class_of,
            classes,
            cost_model: CostModel::Bytes,
            data_disks: layout.erasure.k.max(1),
            affinity_bound: bound_bytes / u64::from(layout.erasure.k.max(1)),
            max_queue_depth: layout.scheduler.max_queue_depth,
            spinning_up,
            active,
            pending: VecDeque::new(),
        })
    }

    /// What serving `request` is charged in the fair share: [`fair_cost`] under this layout's k.
    pub fn fair_cost(&self, request: &Request) -> u64 {
        fair_cost(request, self.data_disks)
    }

    /// Σ fair cost served from each queue of `class` so far (rebuild, client): disk-bytes, see
    /// the module documentation.
    pub fn served_fair_cost(&self, class: u32) -> (u128, u128) {
        let fair = &self.classes[class as usize].fair;
        (
            fair.served_cost(Queue::Rebuild),
            fair.served_cost(Queue::Client),
        )
    }

    pub fn budget(&self) -> &GroupBudget {
        &self.budget
    }

    /// Requests queued (not yet being served) across all classes.
    pub fn queued(&self) -> usize {
        self.classes
            .iter()
            .map(|c| c.client.len() + c.rebuild.len())
            .sum()
    }

    /// Whether nothing is queued, served or changing state.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty()
            && self.classes.iter().all(|c| {
                c.client.is_empty()
                    && c.rebuild.is_empty()
                    && c.serving.is_none()
                    && !matches!(
                        c.current,
                        Some((_, Phase::SpinningUp | Phase::SpinningDown))
                    )
            })
    }

    /// Queues a request, or refuses it when its class is full.
    pub fn submit(&mut self, request: Request) -> Result<(), Rejected> {
        let groups = self.class_of.len() as u32;
        if request.group >= groups {
            return Err(Rejected::UnknownGroup {
                group: request.group,
                groups,
            });
        }
        let class_index = self.class_of[request.group as usize];
        let class = &mut self.classes[class_index as usize];
        let depth = (class.client.len() + class.rebuild.len()) as u32;
        if depth >= self.max_queue_depth {
            return Err(Rejected::QueueFull {
                class: class_index,
                depth,
            });
        }
        let cost = self.cost_model.cost(request.bytes);
        match request.kind {
            Kind::Client => class.client.push(request, request.group, cost),
            Kind::Rebuild => class.rebuild.push(request, request.group, cost),
        };
        Ok(())
    }

    /// The group's disks finished spinning up.
    pub fn spun_up(&mut self, group: GroupIndex) {
        let class = &mut self.classes[self.class_of[group as usize] as usize];
        assert_eq!(
            class.current,
            Some((group, Phase::SpinningUp)),
            "spun_up for a group not spinning up"
        );
        // Active costs no more than spinning up on any hard resource (checked in `new`).
        self.budget
            .enter(group, self.active)
            .expect("active is never costlier than spinning up");
        class.current = Some((group, Phase::Active));
    }

    /// The group's disks are resting again.
    pub fn spun_down(&mut self, group: GroupIndex) {
        let class = &mut self.classes[self.class_of[group as usize] as usize];
        assert_eq!(
            class.current,
            Some((group, Phase::SpinningDown)),
            "spun_down for a group not spinning down"
        );
        let resting = self.budget.resting_state();
        self.budget
            .enter(group, resting)
            .expect("resting is the cheapest state");
        class.current = None;
    }

    /// The request handed out by `Serve` is finished.
    pub fn served(&mut self, request: &Request) {
        let class = &mut self.classes[self.class_of[request.group as usize] as usize];
        assert_eq!(
            class.serving.as_ref().map(|r| r.id),
            Some(request.id),
            "served a request not being served"
        );
        class.serving = None;
    }

    /// The next thing to do, if any. Call until `None` after every submit and completion.
    pub fn poll_action(&mut self) -> Option<Action> {
        if let Some(action) = self.pending.pop_front() {
            return Some(action);
        }
        for class_index in 0..self.classes.len() {
            if let Some(action) = self.step(class_index) {
                return Some(action);
            }
        }
        None
    }

    /// Decides for one class: serve its head, switch groups, or nothing.
    fn step(&mut self, class_index: usize) -> Option<Action> {
        let data_disks = self.data_disks;
        let affinity_bound = self.affinity_bound;
        let class = &mut self.classes[class_index];
        if class.serving.is_some() {
            return None;
        }
        let chosen = class
            .fair
            .choose(!class.rebuild.is_empty(), !class.client.is_empty())?;
        let head_of = |class: &Class, queue: Queue| match queue {
            Queue::Rebuild => class.rebuild.front().map(|e| e.group),
            Queue::Client => class.client.front().map(|e| e.group),
        };
        match class.current {
            Some((group, Phase::Active)) => {
                // Work for the spinning group first: the fair choice if its head is for this
                // group, else the other queue's head if that is. Switching groups costs a spin-up,
                // and the request that caused this spin-up is at one of the heads.
                let other = if chosen == Queue::Rebuild {
                    Queue::Client
                } else {
                    Queue::Rebuild
                };
                // The other queue may take the chosen one's turn only until it has been served
                // `affinity_bound` beyond the fair order; then the class switches groups.
                let may_overtake = class.overtaken_cost < affinity_bound;
                let Some(queue) = [chosen, other]
                    .into_iter()
                    .find(|q| head_of(class, *q) == Some(group) && (*q == chosen || may_overtake))
                else {
                    class.current = Some((group, Phase::SpinningDown));
                    return Some(Action::SpinDown(group));
                };
                let entry = match queue {
                    Queue::Rebuild => class.rebuild.pop_front(),
                    Queue::Client => class.client.pop_front(),
                }
                .expect("the queue's head was just seen");
                let cost = fair_cost(&entry.item, data_disks);
                class.overtaken_cost = if queue == chosen {
                    0
                } else {
                    class.overtaken_cost.saturating_add(cost)
                };
                class.fair.charge(queue, cost);
                class.serving = Some(entry.item);
                Some(Action::Serve(entry.item))
            }
            Some(_) => None,
            None => {
                let head = head_of(class, chosen).expect("the chosen queue is not empty");
                self.try_spin_up(class_index, head)
            }
        }
    }

    /// Spins `group` up if the budgets allow; otherwise spins down idle groups of other classes
    /// that stand in its way, and waits.
    fn try_spin_up(&mut self, class_index: usize, group: GroupIndex) -> Option<Action> {
        if self.budget.enter(group, self.spinning_up).is_ok() {
            self.classes[class_index].current = Some((group, Phase::SpinningUp));
            return Some(Action::SpinUp(group));
        }
        for blocker in self.budget.blockers(group, self.spinning_up) {
            let other = &mut self.classes[self.class_of[blocker as usize] as usize];
            let idle = other.serving.is_none()
                && other.current == Some((blocker, Phase::Active))
                && !wanted(other, blocker);
            if idle {
                other.current = Some((blocker, Phase::SpinningDown));
                self.pending.push_back(Action::SpinDown(blocker));
            }
        }
        self.pending.pop_front()
    }
}

/// The fair-share charge of `request` on a code with `data_disks` (k) data fragments: the bytes
/// one disk of the group moves while serving it, proportional to its service time (module
/// documentation). A client read of b bytes: ⌈b / k⌉; a rebuild of one stack of b bytes: b. At
/// least 1, like every cost.
pub fn fair_cost(request: &Request, data_disks: u32) -> u64 {
    let bytes = request.bytes.max(1);
    match request.kind {
        Kind::Client => bytes.div_ceil(u64::from(data_disks.max(1))),
        Kind::Rebuild => bytes,
    }
}

/// Whether a class still has queued work for `group` at the head of either queue.
fn wanted(class: &Class, group: GroupIndex) -> bool {
    class.client.front().is_some_and(|e| e.group == group)
        || class.rebuild.front().is_some_and(|e| e.group == group)
}

/// The state a spinning-up group is charged: the last state before active on the spin-up path.
/// It must cost at least as much as every earlier path state and as active on every hard
/// constraint, or charging it would understate the draw.
pub(crate) fn spin_up_state(layout: &Layout) -> Result<StateIndex, SchedulerError> {
    let refused = || SchedulerError::SpinUpPath {
        path: layout.spin_up_path.clone(),
    };
    let path: Vec<StateIndex> = layout
        .spin_up_path
        .iter()
        .map(|s| {
            layout
                .state_index(s)
                .expect("layout states are checked on load")
        })
        .collect();
    if path.len() < 2 {
        return Err(refused());
    }
    let charged = if path.len() == 2 {
        path[1]
    } else {
        path[path.len() - 2]
    };
    let dominates = layout
        .group_constraints
        .iter()
        .filter(|c| c.kind == ResourceKind::Hard)
        .all(|c| path.iter().all(|s| c.cost[*s] <= c.cost[charged]));
    if dominates {
        Ok(charged)
    } else {
        Err(refused())
    }
}
