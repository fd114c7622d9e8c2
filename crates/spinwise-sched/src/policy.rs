//! `Policy`: the interface every scheduling policy offers its driver (the simulator now, the
//! server later), and the fully provisioned baseline.
//!
//! A driver submits requests, performs each [`Action`] from `poll_action` and reports its end
//! (`spun_up`, `spun_down`, `served`). Policies read no clock: every call carries the driver's
//! `now_us` (microseconds on the driver's monotonic clock: model time in the simulator, time since
//! start in the server), and a policy that wants to act later without any event (a head-of-queue
//! delay growing past a threshold) says when through [`Policy::next_timeout_us`]; the driver then
//! calls `poll_action` at that time.
//!
//! [`FullyProvisioned`] is Pelican's FP baseline (§4.1): a rack with power and cooling for every
//! disk, where every group spins up once and stays spinning, and each group serves its own FIFO
//! queue, one request at a time; expedited reads ([`Kind::Expedited`]) go ahead of the group's
//! standard requests, behind its earlier expedited ones. It must run on a rack whose budgets allow that
//! (`Rack::fully_provisioned`); on a right-provisioned rack its spin-ups would break budgets,
//! which the simulator's independent checker would report.

use crate::idle::SpinDownReason;
use crate::scheduler::{Action, ClassScheduler, Kind, Rejected, Request};
use spinwise_model::{GroupIndex, Layout};
use std::collections::VecDeque;

pub trait Policy {
    /// Queues a request arriving at `now_us`, or refuses it.
    fn submit(&mut self, now_us: u64, request: Request) -> Result<(), Rejected>;
    /// The next action to perform at `now_us`, if any; call until `None` after every event.
    fn poll_action(&mut self, now_us: u64) -> Option<Action>;
    fn spun_up(&mut self, now_us: u64, group: GroupIndex);
    fn spun_down(&mut self, now_us: u64, group: GroupIndex);
    fn served(&mut self, now_us: u64, request: &Request);
    /// The earliest time at which `poll_action` may return something although no event happened
    /// (`None`: only events change the policy's mind). A driver that reaches it polls again.
    fn next_timeout_us(&self) -> Option<u64>;
    /// Nothing queued, being served or changing state.
    fn is_idle(&self) -> bool;
    /// Spin an active group down once it has had no work for `after_us` (`None` or 0: never;
    /// module [`crate::idle`]). Policies that never spin an idle group down keep their
    /// behaviour and ignore it: FP keeps every group up by design, and the random layout's
    /// disk-level scheduler spins disks down only to make room.
    fn set_idle_spin_down_us(&mut self, _after_us: Option<u64>) {}
    /// Why `group`, which `poll_action` just asked to spin down, goes down (for logs and
    /// metrics; valid until the policy hears `spun_down`).
    fn spin_down_reason(&self, _group: GroupIndex) -> SpinDownReason {
        SpinDownReason::MakeRoom
    }
    /// Groups spun down for idleness so far.
    fn idle_spin_downs(&self) -> u64 {
        0
    }
    /// A copy of this policy in its current state, for a driver that forks a run (the
    /// simulator's baseline without idle spin-down); `None` for a policy that cannot be copied.
    fn fork(&self) -> Option<Box<dyn Policy + Send>> {
        None
    }
}

/// Pelican's class scheduler reads `now_us` to charge its fair share the time each request and
/// group switch took; it decides on order alone, so its only timeouts are idle spin-downs.
impl Policy for ClassScheduler {
    fn submit(&mut self, now_us: u64, request: Request) -> Result<(), Rejected> {
        ClassScheduler::submit(self, now_us, request)
    }
    fn poll_action(&mut self, now_us: u64) -> Option<Action> {
        ClassScheduler::poll_action(self, now_us)
    }
    fn spun_up(&mut self, now_us: u64, group: GroupIndex) {
        ClassScheduler::spun_up(self, now_us, group)
    }
    fn spun_down(&mut self, now_us: u64, group: GroupIndex) {
        ClassScheduler::spun_down(self, now_us, group)
    }
    fn served(&mut self, now_us: u64, request: &Request) {
        ClassScheduler::served(self, now_us, request)
    }
    fn next_timeout_us(&self) -> Option<u64> {
        ClassScheduler::next_timeout_us(self)
    }
    fn is_idle(&self) -> bool {
        ClassScheduler::is_idle(self)
    }
    fn set_idle_spin_down_us(&mut self, after_us: Option<u64>) {
        ClassScheduler::set_idle_spin_down_us(self, after_us)
    }
    fn spin_down_reason(&self, group: GroupIndex) -> SpinDownReason {
        ClassScheduler::spin_down_reason(self, group)
    }
    fn idle_spin_downs(&self) -> u64 {
        ClassScheduler::idle_spin_downs(self)
    }
    fn fork(&self) -> Option<Box<dyn Policy + Send>> {
        Some(Box::new(self.clone()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spin {
    Resting,
    SpinningUp,
    Active,
}

#[derive(Debug)]
pub struct FullyProvisioned {
    spin: Vec<Spin>,
    queues: Vec<VecDeque<Request>>,
    /// Per group, how many of the queue's first requests are expedited reads.
    expedited: Vec<usize>,
    serving: Vec<Option<u64>>,
    max_queue_depth: u32,
    /// Per group, the queue budget its requests count against: the group itself, or its class
    /// when the classes' groups share one scheduler's depth ([`FullyProvisioned::per_scheduler`]).
    budget_of: Vec<usize>,
    /// Requests queued (not yet served) per budget; each at most `max_queue_depth`.
    queued_in: Vec<u32>,
    /// Groups whose spin-up has not been handed out yet (all of them, at the start).
    to_spin_up: VecDeque<GroupIndex>,
    /// Groups with a queued request and nothing being served, in the order they became ready.
    ready: VecDeque<GroupIndex>,
}

impl FullyProvisioned {
    /// Every group resting, about to be spun up once. The layout's `max_queue_depth` bounds each
    /// group's queue.
    pub fn new(layout: &Layout) -> FullyProvisioned {
        let groups = layout.groups.len();
        FullyProvisioned::with_budgets(layout, (0..groups).collect())
    }

    /// As [`FullyProvisioned::new`], but the groups of one class share the layout's
    /// `max_queue_depth`, as the requests of one of Pelican's class schedulers do (Pelican §4.1:
    /// "The maximum queue depth per scheduler is set to 1000 requests"); each group still has its
    /// own FIFO. A layout without classes keeps a depth per group.
    pub fn per_scheduler(layout: &Layout) -> FullyProvisioned {
        let budgets = match &layout.classes {
            Some(classes) => classes.iter().map(|&class| class as usize).collect(),
            None => (0..layout.groups.len()).collect(),
        };
        FullyProvisioned::with_budgets(layout, budgets)
    }

    fn with_budgets(layout: &Layout, budget_of: Vec<usize>) -> FullyProvisioned {
        let groups = layout.groups.len();
        assert_eq!(budget_of.len(), groups, "a budget per group");
        let budgets = budget_of.iter().max().map_or(0, |&last| last + 1);
        FullyProvisioned {
            budget_of,
            queued_in: vec![0; budgets],
            spin: vec![Spin::Resting; groups],
            queues: vec![VecDeque::new(); groups],
            expedited: vec![0; groups],
            serving: vec![None; groups],
            max_queue_depth: layout.scheduler.max_queue_depth,
            to_spin_up: (0..groups as GroupIndex).collect(),
            ready: VecDeque::new(),
        }
    }

    fn mark_ready(&mut self, group: GroupIndex) {
        let index = group as usize;
        if self.spin[index] == Spin::Active
            && self.serving[index].is_none()
            && !self.queues[index].is_empty()
            && !self.ready.contains(&group)
        {
            self.ready.push_back(group);
        }
    }
}

impl Policy for FullyProvisioned {
    fn submit(&mut self, _now_us: u64, request: Request) -> Result<(), Rejected> {
        let groups = self.queues.len() as u32;
        let queue = self
            .queues
            .get_mut(request.group as usize)
            .ok_or(Rejected::UnknownGroup {
                group: request.group,
                groups,
            })?;
        let budget = self.budget_of[request.group as usize];
        if self.queued_in[budget] >= self.max_queue_depth {
            return Err(Rejected::QueueFull {
                class: budget as u32,
                depth: self.queued_in[budget],
            });
        }
        self.queued_in[budget] += 1;
        if request.kind == Kind::Expedited {
            let expedited = &mut self.expedited[request.group as usize];
            queue.insert(*expedited, request);
            *expedited += 1;
        } else {
            queue.push_back(request);
        }
        self.mark_ready(request.group);
        Ok(())
    }

    fn poll_action(&mut self, _now_us: u64) -> Option<Action> {
        if let Some(group) = self.to_spin_up.pop_front() {
            self.spin[group as usize] = Spin::SpinningUp;
            return Some(Action::SpinUp(group));
        }
        let group = self.ready.pop_front()?;
        let request = self.queues[group as usize]
            .pop_front()
            .expect("a ready group has a queued request");
        if request.kind == Kind::Expedited {
            self.expedited[group as usize] -= 1;
        }
        self.queued_in[self.budget_of[group as usize]] -= 1;
        self.serving[group as usize] = Some(request.id);
        Some(Action::Serve(request))
    }

    fn spun_up(&mut self, _now_us: u64, group: GroupIndex) {
        assert_eq!(
            self.spin[group as usize],
            Spin::SpinningUp,
            "spun_up for a group not spinning up"
        );
        self.spin[group as usize] = Spin::Active;
        self.mark_ready(group);
    }

    fn spun_down(&mut self, _now_us: u64, group: GroupIndex) {
        panic!("the fully provisioned policy never spins group {group} down");
    }

    fn served(&mut self, _now_us: u64, request: &Request) {
        let group = request.group;
        assert_eq!(
            self.serving[group as usize],
            Some(request.id),
            "served a request not being served"
        );
        self.serving[group as usize] = None;
        self.mark_ready(group);
    }

    fn next_timeout_us(&self) -> Option<u64> {
        None
    }

    fn is_idle(&self) -> bool {
        self.to_spin_up.is_empty()
            && self.ready.is_empty()
            && self.serving.iter().all(Option::is_none)
            && self.spin.iter().all(|s| *s != Spin::SpinningUp)
    }
}
