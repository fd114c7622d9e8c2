//! Flamingo's constraint-aware IO scheduler (Flamingo §3.2), sans-IO: requests and completions in,
//! spin-up / spin-down / serve actions out, every call carrying the driver's `now_us`.
//!
//! Unlike Pelican's class scheduler it has no classes: each group has its own queue (expedited
//! reads first, then rebuild requests, then client requests, each FIFO), every active group serves
//! up to the layout's `concurrent_requests_per_class` requests at a time (the class scheduler's
//! setting, per group here: see its "Concurrent requests"), and as many groups spin concurrently
//! as the layout's hard group constraints allow under exact multi-state accounting
//! ([`GroupBudget`]: spinning up costs more than active). A group with queued work that is
//! resting is brought up as follows:
//!
//! - **Which group.** Waiting groups are ranked by whether they hold an expedited read, then by
//!   queue depth (deepest first), then by the
//!   arrival time of their oldest queued request, then by index. A group whose oldest request has
//!   waited at least the starvation bound ([`DEFAULT_STARVATION_BOUND_US`], settable) is
//!   *starving*; the one with the oldest head goes before everything else (below).
//! - **Making room.** If the chosen group does not fit, a greedy search walks the groups blocking
//!   it ([`GroupBudget::blockers`]): groups already spinning down count as freed, then idle active
//!   groups are added, least recently used first, until the what-if ([`GroupBudget::room`])
//!   says the group fits. Only if the search succeeds are those
//!   groups spun down; otherwise nothing is spun down and the next group in rank is tried (the
//!   scheduler waits for in-flight requests or transitions, as the paper says).
//! - **Again while spare.** `poll_action` is called until it returns `None`, and each call tries
//!   the next waiting group, so every group that fits is spun up.
//! - **No starvation.** While a group is starving, only groups sharing no hard constraint with it
//!   may spin up (they cannot take what it waits for); the busy groups its
//!   greedy search needs (now including busy active groups, fewest queued first) are
//!   *held*: they finish the request in hand, start no other, and are spun down. A group that has
//!   not yet started every request queued when it became active is never held (it serves the
//!   batch it was brought up for), so starving groups cannot take the disks from each other
//!   request by request, or forever. Every request
//!   therefore waits at most the bound plus the time to drain the groups of older starving heads.
//!   [`Policy::next_timeout_us`] reports when the next head crosses the bound, so a driver polls
//!   then even if no event happens.
//!
//! Cost: a poll runs on every simulator event, so it avoids repeating work whose answer cannot
//! have changed. A pass over the waiting groups that found nothing is *stalled* until a
//! transition or a finished request (only groups that start waiting meanwhile are tried); the
//! serve and starving steps that found nothing are *settled* for that starving group until a
//! transition, a finished request or work for an active group; and the greedy search for the
//! starving group is done once per poll, not once for the held groups and again to bring it up.
//! Each shortcut skips only steps that would decide the same, so the actions are unchanged.
//!
//! **Expedited reads** ([`Kind::Expedited`]) are urgent from arrival: a resting group holding
//! one is starving at once (ranked among starving groups by when each started starving: an
//! expedited read's arrival, a standard request's arrival plus the bound), and an active group
//! serves its expedited reads before its rebuild and standard work. Groups waiting with an
//! expedited read also rank first in the pass over waiting groups.
//!
//! Idle groups stay active until their resources are wanted (a later request for them costs no
//! spin-up), or, with idle spin-down set ([`Policy::set_idle_spin_down_us`], [`crate::idle`]),
//! until they have had no work for the idle time: then a poll that has nothing else to do spins
//! them down, and [`Policy::next_timeout_us`] includes the first such deadline. Bounded queue: at most `max_queue_depth × classes` requests queued over the whole
//! rack (classes from the layout, one per group if it has none), the same total Pelican's class
//! scheduler accepts; beyond it a request is refused with `Rejected::QueueFull` carrying the
//! request's class and the rack-wide queued count.
//!
//! Invariants: no hard budget is ever exceeded (every state change goes through `GroupBudget`,
//! which asserts); a group serves only while active, at most `concurrent_requests_per_class`
//! requests at a time, and is spun down only when it serves none; the queued
//! count is the sum of the per-group queues and never exceeds the bound.

use crate::budget::{GroupBudget, StateIndex};
use crate::idle::{IdleTimer, SpinDownReason};
use crate::policy::Policy;
use crate::scheduler::{Action, Kind, Rejected, Request, SchedulerError, spin_up_state};
use spinwise_model::{GroupIndex, Layout};
use std::cmp::Reverse;
use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound;

/// How long a queued request may wait before its group preempts everything else: 10 minutes.
/// Pelican's scheduler keeps its worst time to first byte at a few minutes under loads the rack
/// sustains (~220 s at 1 request/s on the Pelican rack), so batching by queue depth is left alone
/// there; only an overloaded rack or an unlucky group reaches the bound. A bound near the typical
/// wait would make most groups starving at once and serve them nearly oldest-first, losing the
/// batching that hides spin-ups (measured: a 60 s bound lost more than half the throughput at
/// 1 request/s on the Pelican rack).
pub const DEFAULT_STARVATION_BOUND_US: u64 = 600_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Resting,
    SpinningUp,
    Active,
    SpinningDown,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    request: Request,
    arrival_us: u64,
}

#[derive(Clone, Debug)]
struct Group {
    phase: Phase,
    /// Expedited client reads: served first, and urgent from arrival (module documentation).
    expedited: VecDeque<Queued>,
    rebuild: VecDeque<Queued>,
    client: VecDeque<Queued>,
    /// Requests being served, at most the layout's `concurrent_requests_per_class`.
    serving: Vec<u64>,
    /// When the group last finished serving (or became active): least recently used first.
    idle_since_us: u64,
    /// Requests of the batch queued when the group became active that it has not started yet.
    /// Only a group that has started its whole batch may be preempted for a starving one: a
    /// group brought up serves what it was brought up for, so starving groups cannot take the
    /// disks from each other request by request (thrashing) or forever.
    batch_left: usize,
}

impl Group {
    fn depth(&self) -> usize {
        self.expedited.len() + self.rebuild.len() + self.client.len()
    }

    /// Arrival of the oldest queued request.
    fn head_arrival_us(&self) -> Option<u64> {
        [&self.expedited, &self.rebuild, &self.client]
            .into_iter()
            .filter_map(|queue| queue.front().map(|q| q.arrival_us))
            .min()
    }

    /// When the group starts starving if it still waits then: its oldest standard request's
    /// arrival plus `bound_us`, or its oldest expedited read's arrival, whichever is first.
    fn urgent_at_us(&self, bound_us: u64) -> Option<u64> {
        let standard = [&self.rebuild, &self.client]
            .into_iter()
            .filter_map(|queue| queue.front().map(|q| q.arrival_us.saturating_add(bound_us)));
        let expedited = self.expedited.front().map(|q| q.arrival_us);
        standard.chain(expedited).min()
    }

    fn idle(&self) -> bool {
        self.phase == Phase::Active && self.serving.is_empty() && self.depth() == 0
    }

    /// May be held and spun down for a starving group (see `batch_left`).
    fn preemptible(&self) -> bool {
        self.phase == Phase::Active && self.batch_left == 0
    }
}

#[derive(Clone, Debug)]
pub struct Flamingo {
    budget: GroupBudget,
    groups: Vec<Group>,
    class_of: Vec<u32>,
    spinning_up: StateIndex,
    active: StateIndex,
    max_queued: usize,
    /// Requests an active group serves at once (the layout's `concurrent_requests_per_class`).
    concurrent_requests: usize,
    queued: usize,
    starvation_bound_us: u64,
    /// Actions decided but not yet handed out (a greedy search may yield several spin-downs).
    pending: VecDeque<Action>,
    /// A pass over the waiting groups (restricted for this starving group, if any) found nothing
    /// to do, and nothing that could change that has happened since (a new waiting group, a
    /// finished transition or request). An unrestricted pass covers every restricted one.
    stalled: Option<Option<GroupIndex>>,
    /// Groups that started waiting while a pass was stalled.
    newcomers: Vec<GroupIndex>,
    /// Scratch for the greedy search's blockers (spares an allocation per search).
    blockers_scratch: std::cell::RefCell<Vec<GroupIndex>>,
    /// (when it starts starving, [`Group::urgent_at_us`], group) of every resting group with
    /// queued work: the starving group and the next timeout are its first entries, not a walk
    /// over groups.
    waiting: BTreeSet<(u64, GroupIndex)>,
    /// A poll with this starving group (or none) found no request to serve and could not bring
    /// the starving group up, and nothing those two steps look at has changed since: the next
    /// poll with the same starving group skips them (see `poll_action`).
    settled: Option<Option<GroupIndex>>,
    /// The latest `now_us` seen: a timeout must lie after it.
    now_us: u64,
    /// Idle spin-down ([`crate::idle`]); disabled until [`Policy::set_idle_spin_down_us`].
    idle: IdleTimer,
}

impl Flamingo {
    /// A scheduler for `layout`, all groups resting, with the default starvation bound.
    pub fn new(layout: &Layout) -> Result<Flamingo, SchedulerError> {
        let spinning_up = spin_up_state(layout)?;
        let active = layout
            .state_index(&layout.active_state)
            .expect("layout states are checked on load");
        let group_count = layout.groups.len();
        let class_of: Vec<u32> = layout
            .classes
            .clone()
            .unwrap_or_else(|| (0..group_count as u32).collect());
        assert_eq!(class_of.len(), group_count, "one class per group");
        let classes = class_of.iter().max().map_or(0, |c| *c as usize + 1);
        let groups = (0..group_count)
            .map(|_| Group {
                phase: Phase::Resting,
                expedited: VecDeque::new(),
                rebuild: VecDeque::new(),
                client: VecDeque::new(),
                serving: Vec::new(),
                idle_since_us: 0,
                batch_left: 0,
            })
            .collect();
        Ok(Flamingo {
            budget: GroupBudget::from_layout(layout),
            groups,
            class_of,
            spinning_up,
            active,
            max_queued: layout.scheduler.max_queue_depth as usize * classes,
            concurrent_requests: layout.scheduler.concurrent_requests_per_class.max(1) as usize,
            queued: 0,
            starvation_bound_us: DEFAULT_STARVATION_BOUND_US,
            pending: VecDeque::new(),
            stalled: None,
            newcomers: Vec::new(),
            waiting: BTreeSet::new(),
            blockers_scratch: std::cell::RefCell::new(Vec::new()),
            settled: None,
            now_us: 0,
            idle: IdleTimer::new(None),
        })
    }

    /// The same scheduler with another starvation bound (at least 1 µs).
    pub fn with_starvation_bound_us(mut self, bound_us: u64) -> Flamingo {
        self.starvation_bound_us = bound_us.max(1);
        self
    }

    pub fn budget(&self) -> &GroupBudget {
        &self.budget
    }

    /// Requests queued (not yet being served) over the whole rack.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Groups not resting (spinning up, active or spinning down).
    pub fn busy_groups(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| g.phase != Phase::Resting)
            .count()
    }

    /// The resting group with queued work that has been starving longest, if any (ties: lower
    /// index): a standard request starves once it has waited the starvation bound, an expedited
    /// read from its arrival.
    fn starving(&self, now_us: u64) -> Option<GroupIndex> {
        // The first waiting group starves first: if it does not starve yet, none does.
        self.waiting
            .first()
            .filter(|(urgent_at_us, _)| *urgent_at_us <= now_us)
            .map(|&(_, group)| group)
    }

    /// Moves `group` to `phase`, keeping `waiting` (the groups resting with queued work).
    fn set_phase(&mut self, group: GroupIndex, phase: Phase) {
        let state = &mut self.groups[group as usize];
        let was_resting = state.phase == Phase::Resting;
        state.phase = phase;
        if was_resting != (phase == Phase::Resting)
            && let Some(at) = state.urgent_at_us(self.starvation_bound_us)
        {
            if was_resting {
                self.waiting.remove(&(at, group));
            } else {
                self.waiting.insert((at, group));
            }
        }
    }

    /// Groups to spin down so that `group` can spin up, found greedily, and whether they make
    /// enough room (if not, they are every eligible blocker). Eligible: idle active groups, plus —
    /// when `preempt` — preemptible busy ones (after the idle ones, fewest queued first).
    fn room_for(&self, group: GroupIndex, preempt: bool) -> (Vec<GroupIndex>, bool) {
        // Only blockers spinning down or eligible matter (collected into a scratch buffer).
        let groups = &self.groups;
        let useful = |b: GroupIndex| {
            let g = &groups[b as usize];
            g.phase == Phase::SpinningDown || g.idle() || (preempt && g.preemptible())
        };
        let mut blockers = std::mem::take(&mut *self.blockers_scratch.borrow_mut());
        self.budget
            .blockers_where(group, self.spinning_up, useful, &mut blockers);
        let mut room = self.budget.room(group, self.spinning_up);
        for &blocker in &blockers {
            if self.groups[blocker as usize].phase == Phase::SpinningDown {
                self.budget.release(&mut room, blocker);
            }
        }
        let mut candidates: Vec<(bool, usize, u64, GroupIndex)> = blockers
            .iter()
            .map(|b| (*b, &self.groups[*b as usize]))
            .filter(|(_, g)| g.idle() || (preempt && g.preemptible()))
            .map(|(b, g)| (!g.idle(), g.depth(), g.idle_since_us, b))
            .collect();
        *self.blockers_scratch.borrow_mut() = blockers;
        candidates.sort_unstable();
        let mut chosen = Vec::new();
        for (_, _, _, candidate) in candidates {
            if room.fits() {
                break;
            }
            self.budget.release(&mut room, candidate);
            chosen.push(candidate);
        }
        (chosen, room.fits())
    }

    /// Whether `group` could spin up with every group of `released` resting.
    fn fits_releasing(&self, group: GroupIndex, released: &[GroupIndex]) -> bool {
        let mut room = self.budget.room(group, self.spinning_up);
        for &other in released {
            self.budget.release(&mut room, other);
        }
        room.fits()
    }

    /// Serves the head of an active, free group that is not `held` (expedited reads first, then
    /// rebuild work).
    fn serve(&mut self, held: &[GroupIndex]) -> Option<Action> {
        let concurrent_requests = self.concurrent_requests;
        let index = self.groups.iter().enumerate().position(|(index, g)| {
            g.phase == Phase::Active
                && g.serving.len() < concurrent_requests
                && g.depth() > 0
                && !held.contains(&(index as GroupIndex))
        })?;
        let group = &mut self.groups[index];
        let queued = (group.expedited.pop_front())
            .or_else(|| group.rebuild.pop_front())
            .or_else(|| group.client.pop_front())
            .expect("the group has queued work");
        group.serving.push(queued.request.id);
        group.batch_left = group.batch_left.saturating_sub(1);
        self.queued -= 1;
        Some(Action::Serve(queued.request))
    }

    /// Spins `group` up if it fits; otherwise spins down the idle groups a successful greedy
    /// search found (when `preempt`, also those of an unsuccessful one: a starving group needs
    /// them gone either way). Returns the first action, if any.
    fn bring_up(&mut self, group: GroupIndex, preempt: bool) -> Option<Action> {
        self.bring_up_with(group, preempt, None)
    }

    /// [`Flamingo::bring_up`] given `room_for(group, preempt)` if already found in this state.
    fn bring_up_with(
        &mut self,
        group: GroupIndex,
        preempt: bool,
        known_room: Option<(Vec<GroupIndex>, bool)>,
    ) -> Option<Action> {
        if self.budget.try_enter(group, self.spinning_up) {
            self.set_phase(group, Phase::SpinningUp);
            return Some(Action::SpinUp(group));
        }
        let (chosen, fits) = known_room.unwrap_or_else(|| self.room_for(group, preempt));
        if fits || preempt {
            for blocker in chosen {
                let other = &mut self.groups[blocker as usize];
                // Busy groups are held by the caller and spun down once their request is done.
                if other.phase == Phase::Active && other.serving.is_empty() {
                    other.phase = Phase::SpinningDown;
                    self.pending.push_back(Action::SpinDown(blocker));
                }
            }
        }
        self.pending.pop_front()
    }

    /// One pass over the waiting groups in rank order; the first that acts wins. With a starving
    /// group, only groups sharing no hard constraint with it are considered: they cannot take
    /// what it waits for.
    fn bring_up_best(&mut self, starving: Option<GroupIndex>) -> Option<Action> {
        let everyone: Vec<GroupIndex> = self.waiting.iter().map(|&(_, group)| group).collect();
        self.bring_up_first_of(&everyone, starving)
    }

    /// The pass of [`Flamingo::bring_up_best`] over `groups` only (the others are known to have
    /// nothing to do).
    fn bring_up_first_of(
        &mut self,
        groups: &[GroupIndex],
        starving: Option<GroupIndex>,
    ) -> Option<Action> {
        type Rank = (Reverse<bool>, Reverse<usize>, u64, GroupIndex);
        let mut waiting: Vec<Rank> = groups
            .iter()
            .map(|group| (*group, &self.groups[*group as usize]))
            .filter(|(_, g)| g.phase == Phase::Resting)
            .filter_map(|(group, g)| {
                let at = g.head_arrival_us()?;
                let expedited = !g.expedited.is_empty();
                Some((Reverse(expedited), Reverse(g.depth()), at, group))
            })
            .filter(|(_, _, _, group)| {
                starving.is_none_or(|c| c != *group && !self.budget.interact(c, *group))
            })
            .collect();
        if waiting.is_empty() {
            return None;
        }
        waiting.sort_unstable();
        // Only idle or spinning-down groups can make room (without any, only try what fits). A
        // group that would not fit even with all of them resting is passed over without the
        // greedy search, whose answer would be the same: releasing more never hurts, and every
        // releasable group sharing a constraint the move exceeds is one of its blockers.
        let releasable: Vec<GroupIndex> = (0..self.groups.len() as GroupIndex)
            .filter(|g| {
                let g = &self.groups[*g as usize];
                g.idle() || g.phase == Phase::SpinningDown
            })
            .collect();
        for (_, _, _, group) in waiting {
            let action = if self.budget.try_enter(group, self.spinning_up) {
                self.set_phase(group, Phase::SpinningUp);
                Some(Action::SpinUp(group))
            } else if !releasable.is_empty() && self.fits_releasing(group, &releasable) {
                self.bring_up(group, false)
            } else {
                None
            };
            if action.is_some() {
                return action;
            }
        }
        None
    }
}

impl Flamingo {
    /// A poll before idle spin-down: pending actions, serving, rescuing a starving group,
    /// bringing waiting groups up.
    fn decide(&mut self, now_us: u64) -> Option<Action> {
        if let Some(action) = self.pending.pop_front() {
            return Some(action);
        }
        let starving = self.starving(now_us);
        if self.settled != Some(starving) {
            self.settled = None;
            if let Some(action) = self.serve_or_rescue(starving) {
                return Some(action);
            }
            self.settled = Some(starving);
        }
        let action = self.bring_up_waiting(starving);
        if action.is_some() {
            self.settled = None;
        }
        action
    }

    /// Spins down the first group whose idle time has run out by `now_us`, if it is still idle
    /// (a stale deadline is dropped). A group going down can make room for a waiting one, so the
    /// memo of passes that found nothing is forgotten.
    fn spin_down_idle(&mut self, now_us: u64) -> Option<Action> {
        while let Some(group) = self.idle.due(now_us) {
            if !self.groups[group as usize].idle() {
                self.idle.busy(group);
                continue;
            }
            self.groups[group as usize].phase = Phase::SpinningDown;
            self.idle.spinning_down(group);
            self.stalled = None;
            self.settled = None;
            return Some(Action::SpinDown(group));
        }
        None
    }

    /// The first two steps of a poll: serve a free active group that is not held for the
    /// `starving` group, else bring the starving group up (or spin down what it needs). The
    /// greedy search for the starving group is done once and serves both steps: serving nothing
    /// changes no state it reads.
    fn serve_or_rescue(&mut self, starving: Option<GroupIndex>) -> Option<Action> {
        let concurrent_requests = self.concurrent_requests;
        let servable = self.groups.iter().any(|g| {
            g.phase == Phase::Active && g.serving.len() < concurrent_requests && g.depth() > 0
        });
        let room = starving
            .filter(|_| servable)
            .map(|group| self.room_for(group, true));
        if servable {
            let held = room
                .as_ref()
                .map_or(&[][..], |(chosen, _)| chosen.as_slice());
            if let Some(action) = self.serve(held) {
                return Some(action);
            }
        }
        let group = starving?;
        self.bring_up_with(group, true, room)
    }

    /// The last step of a poll: bring up the best waiting group that can act (see
    /// [`Flamingo::bring_up_best`]), or only the newcomers if a pass has stalled since.
    fn bring_up_waiting(&mut self, starving: Option<GroupIndex>) -> Option<Action> {
        if self.stalled == Some(None) || self.stalled == Some(starving) {
            // Only groups that started waiting since the stalled pass can have changed.
            let newcomers = std::mem::take(&mut self.newcomers);
            let action = self.bring_up_first_of(&newcomers, starving);
            if action.is_some() {
                self.stalled = None;
            }
            return action;
        }
        self.newcomers.clear();
        let action = self.bring_up_best(starving);
        if action.is_none() {
            self.stalled = Some(starving);
        }
        action
    }
}

impl Policy for Flamingo {
    fn submit(&mut self, now_us: u64, request: Request) -> Result<(), Rejected> {
        self.now_us = self.now_us.max(now_us);
        let groups = self.groups.len() as u32;
        if request.group >= groups {
            return Err(Rejected::UnknownGroup {
                group: request.group,
                groups,
            });
        }
        if self.queued >= self.max_queued {
            return Err(Rejected::QueueFull {
                class: self.class_of[request.group as usize],
                depth: self.queued as u32,
            });
        }
        let group = &mut self.groups[request.group as usize];
        // A new waiting group can act although a stalled pass found nothing: it is tried alone
        // (`newcomers`). More work for a group already waiting changes nothing (fitting does not
        // depend on depth).
        if group.depth() == 0 && group.phase == Phase::Resting && self.stalled.is_some() {
            self.newcomers.push(request.group);
        }
        // Work for an active group may be served now, and changes the order in which busy groups
        // are held; groups in other phases are neither served nor held.
        if group.phase == Phase::Active {
            self.settled = None;
            self.idle.busy(request.group);
        }
        let queued = Queued {
            request,
            arrival_us: now_us,
        };
        let bound_us = self.starvation_bound_us;
        let head_before_us = group.urgent_at_us(bound_us);
        match request.kind {
            Kind::Expedited => group.expedited.push_back(queued),
            Kind::Rebuild => group.rebuild.push_back(queued),
            Kind::Client => group.client.push_back(queued),
        }
        let head_us = group.urgent_at_us(bound_us).expect("just queued");
        if group.phase == Phase::Resting && head_before_us != Some(head_us) {
            if let Some(before_us) = head_before_us {
                self.waiting.remove(&(before_us, request.group));
            }
            self.waiting.insert((head_us, request.group));
        }
        self.queued += 1;
        Ok(())
    }

    fn poll_action(&mut self, now_us: u64) -> Option<Action> {
        self.now_us = self.now_us.max(now_us);
        let action = self.decide(now_us).or_else(|| self.spin_down_idle(now_us));
        if let Some(Action::SpinDown(group)) = action
            && self.idle.reason(group) == SpinDownReason::MakeRoom
        {
            // Spun down to make room: no longer idle-active.
            self.idle.busy(group);
        }
        action
    }

    fn spun_up(&mut self, now_us: u64, group: GroupIndex) {
        self.now_us = self.now_us.max(now_us);
        let state = &mut self.groups[group as usize];
        assert_eq!(
            state.phase,
            Phase::SpinningUp,
            "spun_up for a group not spinning up"
        );
        // Active costs no more than spinning up on any hard resource (checked in `new`).
        self.budget
            .enter(group, self.active)
            .expect("active is never costlier than spinning up");
        state.phase = Phase::Active;
        state.idle_since_us = now_us;
        state.batch_left = state.depth();
        if state.depth() == 0 {
            self.idle.idle(group, now_us);
        }
        self.stalled = None;
        self.settled = None;
    }

    fn spun_down(&mut self, now_us: u64, group: GroupIndex) {
        self.now_us = self.now_us.max(now_us);
        assert_eq!(
            self.groups[group as usize].phase,
            Phase::SpinningDown,
            "spun_down for a group not spinning down"
        );
        let resting = self.budget.resting_state();
        self.budget
            .enter(group, resting)
            .expect("resting is the cheapest state");
        self.set_phase(group, Phase::Resting);
        self.idle.spun_down(group);
        self.stalled = None;
        self.settled = None;
    }

    fn served(&mut self, now_us: u64, request: &Request) {
        self.now_us = self.now_us.max(now_us);
        let group = &mut self.groups[request.group as usize];
        let position = group.serving.iter().position(|id| *id == request.id);
        group
            .serving
            .remove(position.expect("served a request not being served"));
        group.idle_since_us = now_us;
        let idle = group.idle();
        self.settled = None;
        // A group that ran dry may now be spun down to make room for a waiting one.
        if group.depth() == 0 {
            self.stalled = None;
        }
        if idle {
            self.idle.idle(request.group, now_us);
        }
    }

    fn next_timeout_us(&self) -> Option<u64> {
        // The first group that starts starving after `now_us`.
        let after = Bound::Excluded((self.now_us, GroupIndex::MAX));
        let starving_us = self
            .waiting
            .range((after, Bound::Unbounded))
            .next()
            .map(|&(urgent_at_us, _)| urgent_at_us)
            // A bound so long that the time saturates is never reached.
            .filter(|urgent_at_us| *urgent_at_us != u64::MAX);
        let idle_us = self.idle.next_deadline_us();
        starving_us.into_iter().chain(idle_us).min()
    }

    fn set_idle_spin_down_us(&mut self, after_us: Option<u64>) {
        self.idle.set_after_us(after_us);
    }

    fn spin_down_reason(&self, group: GroupIndex) -> SpinDownReason {
        self.idle.reason(group)
    }

    fn idle_spin_downs(&self) -> u64 {
        self.idle.spin_downs()
    }
    fn fork(&self) -> Option<Box<dyn Policy + Send>> {
        Some(Box::new(self.clone()))
    }

    fn is_idle(&self) -> bool {
        self.pending.is_empty()
            && self.queued == 0
            && self
                .groups
                .iter()
                .all(|g| g.serving.is_empty() && matches!(g.phase, Phase::Resting | Phase::Active))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::{assert_same_actions, planned};
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;
    use std::sync::OnceLock;

    fn layouts() -> &'static [Layout] {
        static LAYOUTS: OnceLock<Vec<Layout>> = OnceLock::new();
        LAYOUTS.get_or_init(|| {
            ["ocp-cold-storage", "pelican"]
                .map(|name| planned(name).1)
                .to_vec()
        })
    }

    /// Forgets the memo and checks the waiting index against the groups themselves.
    fn forget(flamingo: &mut Flamingo) {
        flamingo.settled = None;
        let waiting: BTreeSet<(u64, GroupIndex)> = (0..flamingo.groups.len() as GroupIndex)
            .filter(|g| flamingo.groups[*g as usize].phase == Phase::Resting)
            .filter_map(|g| {
                let urgent_at_us =
                    flamingo.groups[g as usize].urgent_at_us(flamingo.starvation_bound_us)?;
                Some((urgent_at_us, g))
            })
            .collect();
        assert_eq!(flamingo.waiting, waiting, "the waiting index is stale");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, rng_seed: RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

        #[test]
        fn flamingo_decides_the_same_with_and_without_its_memo(
            preset in 0usize..2,
            arrivals in prop::collection::vec((0u64..600_000_000, any::<u32>(), 0u8..3, 1u64..3_000_000_000), 1..200),
            bound_s in 1u64..300,
            idle_s in prop::option::of(1u64..600),
        ) {
            let layout = &layouts()[preset];
            let groups = layout.groups.len() as u32;
            let arrivals: Vec<(u64, Request)> = arrivals
                .iter()
                .enumerate()
                .map(|(id, (at, group, kind, bytes))| {
                    let kind = [Kind::Client, Kind::Rebuild, Kind::Expedited][*kind as usize];
                    (*at, Request { id: id as u64, group: group % groups, bytes: *bytes, kind })
                })
                .collect();
            let make = || {
                let mut flamingo = Flamingo::new(layout).unwrap().with_starvation_bound_us(bound_s * 1_000_000);
                flamingo.set_idle_spin_down_us(idle_s.map(|s| s * 1_000_000));
                flamingo
            };
            let actions = assert_same_actions(&mut make(), &mut make(), forget, &arrivals);
            prop_assert!(actions >= arrivals.len().min(1));
        }
    }
}
