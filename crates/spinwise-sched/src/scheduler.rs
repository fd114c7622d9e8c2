//! The class scheduler (Pelican §2.3), sans-IO: requests and completions in, actions out.
//!
//! One [`ClassScheduler`] owns every class of a layout (the solver's classes, or one class per
//! group when the layout has none). Per class it keeps two [`ReorderQueue`]s — rebuild and client
//! — shared by [`FairShare`], and serves up to the layout's `concurrent_requests_per_class`
//! requests at a time from the group its class has spinning ("Concurrent requests", below).
//! Switching a class to another group spins the old one down and the new one up; every
//! state change goes through [`GroupBudget`], so no hard budget is ever exceeded, including the
//! resources classes share (Pelican's trays power one spinning disk of each of two classes). When
//! a spin-up is refused, idle groups of other classes that block it are spun down.
//!
//! The caller performs every [`Action`] and reports back, passing the time of each event
//! (`now_us`, any monotonic microsecond clock; a completion before its start is asserted): `SpinUp(g)` → later [`ClassScheduler::spun_up`];
//! `SpinDown(g)` → later [`ClassScheduler::spun_down`]; `Serve(request)` → later
//! [`ClassScheduler::served`]. Nothing here reads a clock or sleeps, so the simulator and the
//! server drive the same code; its only timer is idle spin-down (below).
//!
//! # Time, not turns
//!
//! The fair share splits the class's *time* between the queues (Pelican §2.3: w is "the fraction
//! of the resources the scheduler allocates to the rebuild", and the rebuild then takes about
//! x / t × 1 / w). Each queue is charged, in microseconds of the caller's clock:
//! - the time each of its requests took, from `Serve` to `served` (a 66 MB rebuild stack, one
//!   disk's worth, weighs about as much as a 1 GB read streamed from 15 disks);
//! - the time of each group switch its head caused, from the class's spin-down of its old group
//!   (or, with no group, from the moment it wanted one) to `spun_up` of the new one. Pelican
//!   counts spin-ups in its own time estimates ("given the number of group spin ups and the volume
//!   of data", §2.3); a queue whose requests are spread over many groups pays for the spin-ups
//!   that spreading costs, instead of its switches being free time taken from the other queue.
//!
//! A queue that is chosen but cannot be served because its head is for another group keeps its
//! turn ([`FairShare::charge_out_of_turn`]): the other queue is served meanwhile (group affinity,
//! below), and the skipped queue is served first once the class switches to its group. Without
//! this, clients spread over a class's groups lost every turn that came while the rebuild's group
//! was spinning and the rebuild took ~80% of the class (docs/simulator.md).
//!
//! Charging measured time rather than an estimate makes the split exact whatever the caller's
//! disks and network do; the reordering queues still measure cost (and the bound u) in bytes.
//!
//! # Concurrent requests
//!
//! A read streams from k of its group's disks; a group wider than k (Pelican: 24 disks, k = 15)
//! leaves the others idle while it serves one read at a time, and Pelican's provisioning (§2.1:
//! "only 50 active disks are required to sustain 40 Gbps") counts on every active disk being busy.
//! So a class may serve several requests at once, up to `concurrent_requests_per_class`, all from
//! its spinning group, taken in the same order as one at a time. Once the heads of both queues are
//! for other groups, the class serves nothing new, and it switches when its last request is done.
//! Time is charged as processor sharing: while n requests are in service, each is charged 1/n
//! of the time that passes, so the queues together are charged the class's busy time once, as with
//! one request at a time.
//!
//! # Group affinity against the share
//!
//! When the fair choice's head is for another group but the
//! other queue's head is for the spinning group, the other queue is served instead (a switch costs
//! a spin-up). Unchecked, a rebuild — whose queue never runs dry and is all for one group — would
//! keep its class for the whole rebuild and starve the class's other groups. So a queue may be
//! served out of turn only until it has taken u / k of [`disk_bytes`] (disk-bytes; u the
//! reordering bound, the same allowance a request has for being overtaken within a queue) since
//! the chosen queue was last served; then the class switches to the chosen queue's group. This
//! also bounds the credit a skipped queue keeps. With Pelican's
//! u = 500 GB and k = 15 that is ~33 GB of disk time (~5 minutes at 105 MB/s) per turn, so the two
//! spin-ups of a round trip cost a few percent.
//!
//! # Expedited reads
//!
//! A [`Kind::Expedited`] read waits in its class's expedited FIFO, which is the head of the client
//! side: on the client queue's turns it is served before every standard read, whatever the
//! reordering queue holds. If its group is not the spinning one, the spinning group loses the
//! client turn (the rebuild may still use it out of turn, within the affinity bound), so the
//! class switches to the expedited read's group once the request in hand is done. The standard
//! reads it passes keep their reordering counters: the bound u limits how far reordering moves a
//! request, and expedited reads are the driver's to bound (it admits a few at a time).
//!
//! Across classes, an expedited read also goes first where the classes compete for a budget (a
//! layout with one group per class, such as the dense JBOD's, where the enclosure's power lets
//! two groups spin): `poll_action` steps classes holding an expedited read before the others,
//! so a freed budget goes to them, and when its group's spin-up is refused, the busy groups of
//! other classes (without expedited reads of their own) that stand in its way are made to yield,
//! as few as make room: a group between requests spins down at once, and a group serving one
//! yields when it is done, since the poll that follows `served` steps the expedited class
//! before the group's own class could serve it more. Who yields is decided afresh on every poll,
//! so no group spins down for room made meanwhile another way. The yielding class brings its
//! group back up when the budget allows. A spin-up may need several busy groups to yield (on the
//! dense JBOD a spinning-up group draws what about four active ones do). There is no reservation:
//! while the room is not yet made, a group whose spin-up needs less than the expedited one's
//! could take what was freed; on layouts whose groups all cost the same, as the planner's, none
//! can.
//!
//! # Staggered switches (optional, not in Pelican)
//!
//! Classes that send through one network link (Pelican: two classes per server's 20 Gbps NIC,
//! each able to fill it alone with four reads over 24 disks) lose the link only while all of
//! them switch groups at once. Left alone they drift into step: a class streaming alone while
//! its partner switches drains its batch sooner and often starts its own switch before the
//! partner's ends (on the pelican rack at 5 req/s both classes of a server were idle 17–20% of
//! the time, against 11–12% if they switched independently; docs/simulator.md). With the
//! layout's `stagger_switches_min_queue` set and the links named
//! ([`ClassScheduler::share_links`]), a class that has nothing left for its spinning group and
//! holds at least that many queued client reads does not spin its group down while
//!
//! - a class sharing a link with it is switching (spinning a group down or up, or resting with
//!   work to do) whose last batch lasted at least as long as this class's last switch, and
//! - no class sharing the link streams client reads: its own switch would leave the link idle.
//!
//! It switches once a partner streams, so its switch overlaps that partner's streaming. The
//! wait costs nothing the link could have used (the class had nothing to send), only the time
//! until the class's next batch, which grows meanwhile. What it buys depends on the batches:
//! with batches of T seconds alone on the link and switches of S, classes in step use the link
//! 2T / (S + 2T) of the time and staggered ones min(1, T / S), so staggering pays from T > S / 2.
//! A batch that shared the link lasted about 2T, one that streamed alone T, so "the partner's
//! last batch (up to its last request served, not counting its own wait) ≥ my last switch"
//! starts staggering at T ≥ S / 2 and keeps it from T ≥ S. Without that test, short batches
//! (the prototype's one-read batches against 15 s switches, or u = 50 GB on the pelican rack)
//! serialised the classes' switches: 12.5 → 8.2 Gbps at u = 50 GB (docs/experiments.md).
//!
//! With two classes on a link (Pelican's servers) a switching partner is never streaming; with
//! three (the prototype's one NIC), waiting whenever any partner switched kept a class waiting
//! while the third streamed, and the simulator's mean completion at b = 240 doubled. Below the
//! queue threshold (light load, where the link is idle anyway), with an expedited read queued,
//! and with rebuild work queued, a class never waits: a wait delays the class's next turn of
//! either queue, and the rebuild restores redundancy (waiting while a disk was being rebuilt on
//! the pelican rack at 2 req/s stretched the rebuild from 23.0 to 24.6 h). No cycle of waiting
//! can form: only a class whose group is up waits, and only for one whose switch is under way,
//! which needs nothing from it (an idle waiting group that blocks a spin-up is spun down like
//! any idle blocker).
//!
//! # Idle spin-down
//!
//! A class whose group has nothing queued or in service keeps it up (a later read for it costs
//! no spin-up) only for the idle time set by [`ClassScheduler::set_idle_spin_down_us`] (off by
//! default here; the simulator and the store set it, [`crate::idle`]). Then the group is spun
//! down although no other group wants its budget, so a rack without load rests. Work for the
//! class stops the timer. [`ClassScheduler::next_timeout_us`] is the first deadline, so drivers
//! poll then; an idle spin-down decides nothing else (it runs only when no class has anything
//! to do) and is not a switch: the time until the next group comes up is charged, as for a
//! class that had no group, from when the class wanted one.
//!
//! # Waiting for room
//!
//! A class whose next group cannot spin up for the budgets looks for idle groups in its way to
//! spin down; with none, it waits, and on a budget-bound rack most classes wait most of the
//! time, so every poll used to ask every waiting class again. Whether a spin-up is refused, and
//! which groups block it and whether they are idle, is a function of the scheduler's state
//! alone, and a refusal without an expedited read changes nothing. So the scheduler counts
//! *epochs* — every `submit`, `spun_up`, `spun_down`, `served`, setting, and every poll that
//! hands out an action moves it — and a class refused for a group is not asked again for that
//! group in the same epoch. The decisions are the same ones, call for call (simulation trace
//! hashes unchanged; a 480-disk vibration-bound rack simulates 3× faster).
//!
//! Invariants: at most one group per class is not resting; at most
//! `concurrent_requests_per_class` requests per class are being served, all by its active group;
//! requests queued per class never exceed the layout's `max_queue_depth`.

use crate::budget::{GroupBudget, StateIndex};
use crate::fair::{FairShare, FairShareError, Queue};
use crate::idle::{IdleTimer, SpinDownReason};
use crate::reorder::{CostModel, ReorderQueue};
use spinwise_model::{GroupIndex, Layout, ResourceKind};
use std::collections::VecDeque;
use thiserror::Error;

/// What a request asks of the disks, and how urgently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A client read, served in arrival order within the reordering bound.
    Client,
    /// A client read that goes ahead of every [`Kind::Client`] read (S3's Expedited restore
    /// tier). Each policy serves it next on its group and brings its group up before groups
    /// waiting only for standard reads; it still takes the client side's fair share, never the
    /// rebuild's, and never breaks a hard budget. Expedited reads are served first-in-first-out
    /// among themselves. Each one may cost a group switch that batching would have saved, so the
    /// driver bounds how many it admits (the server's `--restore-expedited-max-ongoing`).
    Expedited,
    /// Upkeep under the rebuild share: a lost stripe stack regenerated, a scrub, a compaction.
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

#[derive(Clone, Debug)]
struct Class {
    client: ReorderQueue<Request>,
    /// Expedited client reads, FIFO, served before `client` on the client side's turns.
    expedited: VecDeque<Request>,
    rebuild: ReorderQueue<Request>,
    fair: FairShare,
    /// The class's one non-resting group.
    current: Option<(GroupIndex, Phase)>,
    /// [`disk_bytes`] served from the queue the fair share did not choose (its head was for the
    /// spinning group, the chosen one's was not) since the chosen queue was last served.
    overtaken_cost: u64,
    /// The requests being served, at most `concurrent_requests_per_class`, in the order handed out.
    serving: Vec<Serving>,
    /// Up to when the requests being served have been charged their shares of the time.
    settled_us: u64,
    /// Set during a poll when an expedited read of another class needs this class's group to
    /// yield: it takes no new request, and spins down once its last one is done.
    yielding: bool,
    /// When the class's current group switch began (its spin-down, or the spin-up of a class
    /// that had no group), and the queue charged for it once known.
    switch_started_us: Option<u64>,
    switch_queue: Option<Queue>,
    /// The group a spin-up was last refused for, and the scheduler's epoch then: until the epoch
    /// moves the same attempt would be refused the same way, with nothing to spin down.
    refused: Option<(GroupIndex, u64)>,
    /// When the class's group last came up: its batch began.
    active_since_us: Option<u64>,
    /// From `active_since_us` to the last request served since: the batch so far, without the
    /// time the class then held its group waiting for a partner.
    batch_so_far_us: Option<u64>,
    /// How long the class's last batch lasted (its group up until its last request served
    /// before the class spun the group down to switch) and its last switch (spin-down begun
    /// until the next group up), in µs: what a staggering class compares (module
    /// documentation, "Staggered switches").
    last_batch_us: Option<u64>,
    last_switch_us: Option<u64>,
}

/// The request a class is serving and how to charge it when it is done.
#[derive(Clone, Copy, Debug)]
struct Serving {
    request: Request,
    queue: Queue,
    /// Served for the fair choice (true) or out of turn for group affinity (false).
    in_turn: bool,
    /// Its share of the class's busy time so far, µs (module documentation, "Concurrent
    /// requests").
    charge_us: u64,
}

#[derive(Clone, Debug)]
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
    /// Requests one class serves at once (the layout's `concurrent_requests_per_class`).
    concurrent_requests: usize,
    spinning_up: StateIndex,
    active: StateIndex,
    /// Actions decided but not yet handed out (a switch yields spin-down then spin-up).
    pending: VecDeque<Action>,
    /// Staggered switches: the client queue length from which a class waits for a partner's
    /// switch, and each class's partners (classes sharing a link with it, ascending). No
    /// partners until [`ClassScheduler::share_links`].
    stagger_min_queue: Option<usize>,
    partners: Vec<Vec<usize>>,
    /// Idle spin-down (module documentation, "Idle spin-down"); disabled until
    /// [`ClassScheduler::set_idle_spin_down_us`].
    idle: IdleTimer,
    /// The blockers of the last refused spin-up, kept so a class waiting for room (polled on
    /// every event of a budget-bound rack) looks them up without allocating.
    blockers: Vec<GroupIndex>,
    /// Moves on every change of the scheduler's state: each call but a poll that hands out
    /// nothing. A spin-up refused in one epoch is refused again in it (module documentation,
    /// "Waiting for room"), so a waiting class is not asked again until it moves.
    epoch: u64,
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
                    expedited: VecDeque::new(),
                    rebuild: ReorderQueue::new(bound_bytes),
                    fair: FairShare::new(share)?,
                    current: None,
                    overtaken_cost: 0,
                    serving: Vec::new(),
                    settled_us: 0,
                    yielding: false,
                    switch_started_us: None,
                    refused: None,
                    switch_queue: None,
                    active_since_us: None,
                    batch_so_far_us: None,
                    last_batch_us: None,
                    last_switch_us: None,
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
            concurrent_requests: layout.scheduler.concurrent_requests_per_class.max(1) as usize,
            spinning_up,
            active,
            pending: VecDeque::new(),
            stagger_min_queue: layout
                .scheduler
                .stagger_switches_min_queue
                .map(|depth| depth as usize),
            partners: vec![Vec::new(); class_count],
            idle: IdleTimer::new(None),
            blockers: Vec::new(),
            epoch: 0,
        })
    }

    /// Names the network link each group's reads leave by (`link_of_group[g]`, any numbering),
    /// so staggered switches know which classes share one: two classes are partners when some
    /// group of each uses the same link. Without the layout's `stagger_switches_min_queue` this
    /// changes nothing. Panics unless there is one entry per group.
    pub fn share_links(&mut self, link_of_group: &[usize]) {
        self.epoch += 1;
        assert_eq!(
            link_of_group.len(),
            self.class_of.len(),
            "one link per group"
        );
        let classes = self.classes.len();
        let mut links_of_class = vec![std::collections::BTreeSet::new(); classes];
        for (group, link) in link_of_group.iter().enumerate() {
            links_of_class[self.class_of[group] as usize].insert(*link);
        }
        self.partners = (0..classes)
            .map(|class| {
                (0..classes)
                    .filter(|other| {
                        *other != class
                            && !links_of_class[class].is_disjoint(&links_of_class[*other])
                    })
                    .collect()
            })
            .collect();
    }

    /// Whether staggered switches are in effect: the layout asks for them and some class shares
    /// a link with another.
    pub fn staggers_switches(&self) -> bool {
        self.stagger_min_queue.is_some() && self.partners.iter().any(|p| !p.is_empty())
    }

    /// Whether `class_index`, about to switch away from its group, waits for a partner's switch
    /// (module documentation, "Staggered switches"): only while its switch would leave the link
    /// idle, some partner switching whose last batch lasted at least as long as this class's
    /// last switch and none streaming client reads, and never with expedited reads or rebuild
    /// work queued.
    fn waits_for_partner(&self, class_index: usize) -> bool {
        let class = &self.classes[class_index];
        let loaded = self
            .stagger_min_queue
            .is_some_and(|depth| class.client.len() >= depth);
        let partners = || self.partners[class_index].iter().map(|p| &self.classes[*p]);
        let covers_a_switch = |partner: &Class| {
            (partner.last_batch_us.zip(class.last_switch_us))
                .is_some_and(|(batch_us, switch_us)| batch_us >= switch_us)
        };
        loaded
            && class.expedited.is_empty()
            && class.rebuild.is_empty()
            && partners().any(|partner| partner.is_switching() && covers_a_switch(partner))
            && !partners().any(Class::streams_client_reads)
    }

    /// The disk-bytes of `request` under this layout's k: what counts against the affinity bound.
    pub fn disk_bytes(&self, request: &Request) -> u64 {
        disk_bytes(request, self.data_disks)
    }

    /// Σ time charged to each queue of `class` so far (rebuild, client), in µs: serving and the
    /// group switches each caused (module documentation, "Time, not turns").
    pub fn charged_time_us(&self, class: u32) -> (u128, u128) {
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
        self.classes.iter().map(Class::depth).sum()
    }

    /// Spins a class's group down once the class has had nothing queued or in service for
    /// `after_us` (`None` or 0: never, the default).
    pub fn set_idle_spin_down_us(&mut self, after_us: Option<u64>) {
        self.epoch += 1;
        self.idle.set_after_us(after_us);
    }

    /// The earliest time an idle group's idle time runs out, if any: poll then.
    pub fn next_timeout_us(&self) -> Option<u64> {
        self.idle.next_deadline_us()
    }

    /// Why `group`, just handed out in a `SpinDown`, goes down.
    pub fn spin_down_reason(&self, group: GroupIndex) -> SpinDownReason {
        self.idle.reason(group)
    }

    /// Groups spun down for idleness so far.
    pub fn idle_spin_downs(&self) -> u64 {
        self.idle.spin_downs()
    }

    /// Whether nothing is queued, served or changing state.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty()
            && self.classes.iter().all(|c| {
                c.depth() == 0
                    && c.serving.is_empty()
                    && !matches!(
                        c.current,
                        Some((_, Phase::SpinningUp | Phase::SpinningDown))
                    )
            })
    }

    /// Queues a request, or refuses it when its class is full.
    pub fn submit(&mut self, _now_us: u64, request: Request) -> Result<(), Rejected> {
        self.epoch += 1;
        let groups = self.class_of.len() as u32;
        if request.group >= groups {
            return Err(Rejected::UnknownGroup {
                group: request.group,
                groups,
            });
        }
        let class_index = self.class_of[request.group as usize];
        let class = &mut self.classes[class_index as usize];
        let depth = class.depth() as u32;
        if depth >= self.max_queue_depth {
            return Err(Rejected::QueueFull {
                class: class_index,
                depth,
            });
        }
        // Any work keeps the class's group up: it is served there, or the class switches.
        if let Some((group, _)) = class.current {
            self.idle.busy(group);
        }
        let cost = self.cost_model.cost(request.bytes);
        match request.kind {
            Kind::Client => {
                class.client.push(request, request.group, cost);
            }
            Kind::Expedited => class.expedited.push_back(request),
            Kind::Rebuild => {
                class.rebuild.push(request, request.group, cost);
            }
        }
        Ok(())
    }

    /// The group's disks finished spinning up at `now_us`. The switch's time, from its start to
    /// now, is charged to the queue whose head asked for the group.
    pub fn spun_up(&mut self, now_us: u64, group: GroupIndex) {
        self.epoch += 1;
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
        if class.depth() == 0 {
            self.idle.idle(group, now_us);
        }
        class.active_since_us = Some(now_us);
        class.batch_so_far_us = None;
        let started_us = class.switch_started_us.take().unwrap_or(now_us);
        let switch_us = elapsed_us(started_us, now_us);
        class.last_switch_us = Some(switch_us);
        if let Some(queue) = class.switch_queue.take() {
            class.fair.charge(queue, switch_us);
        }
    }

    /// The group's disks are resting again.
    pub fn spun_down(&mut self, _now_us: u64, group: GroupIndex) {
        self.epoch += 1;
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
        self.idle.spun_down(group);
    }

    /// The request handed out by `Serve` is finished at `now_us`; its queue is charged its share
    /// of the time it took (in turn, or out of turn for group affinity).
    pub fn served(&mut self, now_us: u64, request: &Request) {
        self.epoch += 1;
        let class = &mut self.classes[self.class_of[request.group as usize] as usize];
        class.settle(now_us);
        let position = class
            .serving
            .iter()
            .position(|s| s.request.id == request.id);
        let serving = class
            .serving
            .remove(position.expect("served a request not being served"));
        let took_us = serving.charge_us.max(1);
        if let Some(since_us) = class.active_since_us {
            class.batch_so_far_us = Some(elapsed_us(since_us, now_us));
        }
        if serving.in_turn {
            class.fair.charge(serving.queue, took_us);
        } else {
            // The chosen queue was backlogged but blocked on another group: it keeps its turn
            // (module documentation, "Time, not turns").
            class.fair.charge_out_of_turn(serving.queue, took_us);
        }
        if let Some((group, Phase::Active)) = class.current
            && class.serving.is_empty()
            && class.depth() == 0
        {
            self.idle.idle(group, now_us);
        }
    }

    /// The next thing to do, if any. Call until `None` after every submit and completion, and
    /// at [`ClassScheduler::next_timeout_us`].
    pub fn poll_action(&mut self, now_us: u64) -> Option<Action> {
        let action = self.decide(now_us).or_else(|| self.spin_down_idle(now_us));
        if action.is_some() {
            self.epoch += 1;
        }
        if let Some(Action::SpinDown(group)) = action {
            // Whatever the reason, a group going down is no longer idle-active.
            if self.idle.reason(group) == SpinDownReason::MakeRoom {
                self.idle.busy(group);
            }
        }
        action
    }

    /// Spins down the first group whose idle time has run out by `now_us`, if it is still
    /// active with nothing queued or in service (a stale deadline is dropped).
    fn spin_down_idle(&mut self, now_us: u64) -> Option<Action> {
        while let Some(group) = self.idle.due(now_us) {
            let class = &mut self.classes[self.class_of[group as usize] as usize];
            let idle = class.current == Some((group, Phase::Active))
                && class.serving.is_empty()
                && class.depth() == 0;
            if !idle {
                self.idle.busy(group);
                continue;
            }
            class.current = Some((group, Phase::SpinningDown));
            class.active_since_us = None;
            class.last_batch_us = class.batch_so_far_us.take();
            self.idle.spinning_down(group);
            return Some(Action::SpinDown(group));
        }
        None
    }

    /// [`ClassScheduler::poll_action`] before idle spin-down: pending actions, then each class.
    fn decide(&mut self, now_us: u64) -> Option<Action> {
        if let Some(action) = self.pending.pop_front() {
            return Some(action);
        }
        // Classes with an expedited read first: a freed budget goes to them, and a busy group
        // that finished its request yields to them before its own class serves it more.
        for class in &mut self.classes {
            class.yielding = false;
        }
        for urgent in [true, false] {
            for class_index in 0..self.classes.len() {
                if self.classes[class_index].expedited.is_empty() != urgent
                    && let Some(action) = self.step(class_index, now_us)
                {
                    return Some(action);
                }
            }
        }
        None
    }

    /// Decides for one class: serve its head, switch groups, or nothing.
    fn step(&mut self, class_index: usize, now_us: u64) -> Option<Action> {
        let data_disks = self.data_disks;
        let affinity_bound = self.affinity_bound;
        let concurrent_requests = self.concurrent_requests;
        let class = &mut self.classes[class_index];
        if class.serving.len() >= concurrent_requests || class.yielding {
            return None;
        }
        let chosen = class
            .fair
            .choose(!class.rebuild.is_empty(), class.has_client_work())?;
        let head_of = Class::head_group;
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
                    if !class.serving.is_empty() {
                        // The class switches once its requests in service are done.
                        return None;
                    }
                    if self.waits_for_partner(class_index) {
                        return None;
                    }
                    let class = &mut self.classes[class_index];
                    class.current = Some((group, Phase::SpinningDown));
                    class.switch_started_us = Some(now_us);
                    class.active_since_us = None;
                    class.last_batch_us = class.batch_so_far_us.take();
                    return Some(Action::SpinDown(group));
                };
                let request = class
                    .pop_head(queue)
                    .expect("the queue's head was just seen");
                let in_turn = queue == chosen;
                class.overtaken_cost = if in_turn {
                    0
                } else {
                    let cost = disk_bytes(&request, data_disks);
                    class.overtaken_cost.saturating_add(cost)
                };
                class.settle(now_us);
                class.serving.push(Serving {
                    request,
                    queue,
                    in_turn,
                    charge_us: 0,
                });
                Some(Action::Serve(request))
            }
            Some(_) => None,
            None => {
                let head = head_of(class, chosen).expect("the chosen queue is not empty");
                class.switch_started_us.get_or_insert(now_us);
                // Without an expedited read, a refused spin-up changes nothing (the one with
                // one may make other classes yield), so it can be skipped until the epoch moves.
                let plain = class.expedited.is_empty();
                if plain && class.refused == Some((head, self.epoch)) {
                    return None;
                }
                let action = self.try_spin_up(class_index, head);
                if action.is_none() && plain {
                    self.classes[class_index].refused = Some((head, self.epoch));
                }
                if action == Some(Action::SpinUp(head)) {
                    // The queue whose head needs the group pays for the switch (at `spun_up`).
                    self.classes[class_index].switch_queue = Some(chosen);
                }
                action
            }
        }
    }

    /// Spins `group` up if the budgets allow; otherwise spins down idle groups of other classes
    /// that stand in its way, and waits. For an expedited read, busy groups that stand in its way
    /// are made to yield too, as few as make room (module documentation, "Expedited reads").
    fn try_spin_up(&mut self, class_index: usize, group: GroupIndex) -> Option<Action> {
        // `try_enter`, not `enter`: a refusal here is the common case on a budget-bound rack,
        // and `enter` explains it with owned strings nobody reads.
        if self.budget.try_enter(group, self.spinning_up) {
            self.classes[class_index].current = Some((group, Phase::SpinningUp));
            return Some(Action::SpinUp(group));
        }
        let class = &self.classes[class_index];
        let expedited = class.expedited.front().is_some_and(|r| r.group == group);
        // What the idle blockers and those already spinning down free, for an expedited read.
        let mut room = expedited.then(|| self.budget.room(group, self.spinning_up));
        let mut busy = Vec::new();
        let mut blockers = std::mem::take(&mut self.blockers);
        self.budget
            .blockers_where(group, self.spinning_up, |_| true, &mut blockers);
        for &blocker in &blockers {
            let other = &mut self.classes[self.class_of[blocker as usize] as usize];
            let phase = other.current.filter(|(g, _)| *g == blocker).map(|(_, p)| p);
            let idle = other.serving.is_empty() && !wanted(other, blocker);
            let freed = match phase {
                Some(Phase::Active) if idle => {
                    other.current = Some((blocker, Phase::SpinningDown));
                    self.pending.push_back(Action::SpinDown(blocker));
                    true
                }
                // A group serving requests yields once they are done: meanwhile it takes no new
                // one, and the poll after its last `served` steps this class before its own.
                Some(Phase::Active) => {
                    if expedited && other.expedited.is_empty() {
                        busy.push(blocker);
                    }
                    false
                }
                Some(Phase::SpinningDown) => true,
                _ => false,
            };
            if let (true, Some(room)) = (freed, room.as_mut()) {
                self.budget.release(room, blocker);
            }
        }
        self.blockers = blockers;
        if let Some(room) = room.as_mut() {
            self.make_room_for_expedited(room, &busy);
        }
        self.pending.pop_front()
    }

    /// Makes busy groups of `busy` (of classes without expedited reads) yield, in order, until
    /// `room` fits: one between requests spins down now; one serving requests takes no new one
    /// during this poll, and is asked again on the next.
    fn make_room_for_expedited(&mut self, room: &mut crate::budget::Room, busy: &[GroupIndex]) {
        for &blocker in busy {
            if room.fits() {
                return;
            }
            self.budget.release(room, blocker);
            let other = &mut self.classes[self.class_of[blocker as usize] as usize];
            if other.serving.is_empty() {
                other.current = Some((blocker, Phase::SpinningDown));
                self.pending.push_back(Action::SpinDown(blocker));
            } else {
                other.yielding = true;
            }
        }
    }
}

/// The disk-bytes of `request` on a code with `data_disks` (k) data fragments: the bytes one disk
/// of the group moves while serving it, proportional to its service time, which is what group
/// affinity's bound u / k counts (module documentation). A client read of b bytes: ⌈b / k⌉; a
/// rebuild of one stack of b bytes: b. At least 1, like every cost.
pub fn disk_bytes(request: &Request, data_disks: u32) -> u64 {
    let bytes = request.bytes.max(1);
    match request.kind {
        Kind::Client | Kind::Expedited => bytes.div_ceil(u64::from(data_disks.max(1))),
        Kind::Rebuild => bytes,
    }
}

/// Time from `start_us` to `end_us`, at least 1 µs (every charge is positive, like every cost).
fn elapsed_us(start_us: u64, end_us: u64) -> u64 {
    assert!(
        end_us >= start_us,
        "time ran backwards: {start_us} µs then {end_us} µs"
    );
    (end_us - start_us).max(1)
}

/// Whether a class still has queued work for `group` at the head of either queue.
fn wanted(class: &Class, group: GroupIndex) -> bool {
    [Queue::Client, Queue::Rebuild]
        .into_iter()
        .any(|queue| class.head_group(queue) == Some(group))
}

impl Class {
    /// Charges the requests in service their shares of the time since the last settlement
    /// (module documentation, "Concurrent requests"); the remainder of an uneven split goes to
    /// the earliest handed out.
    fn settle(&mut self, now_us: u64) {
        let passed_us = now_us
            .checked_sub(self.settled_us)
            .expect("time ran backwards");
        self.settled_us = now_us;
        let count = self.serving.len() as u64;
        if count == 0 {
            return;
        }
        let (share_us, remainder_us) = (passed_us / count, passed_us % count);
        for (index, serving) in self.serving.iter_mut().enumerate() {
            let extra_us = u64::from((index as u64) < remainder_us);
            serving.charge_us = serving.charge_us.saturating_add(share_us + extra_us);
        }
    }

    /// Requests queued, of every kind.
    fn depth(&self) -> usize {
        self.client.len() + self.expedited.len() + self.rebuild.len()
    }

    /// Between groups: spinning one down or up, or resting with work that needs a group. A
    /// class resting with nothing to do is not switching (its partners need not wait for it).
    fn is_switching(&self) -> bool {
        match self.current {
            Some((_, Phase::SpinningUp | Phase::SpinningDown)) => true,
            Some((_, Phase::Active)) => false,
            None => self.has_client_work() || !self.rebuild.is_empty(),
        }
    }

    /// Serving a client read, whose bytes cross the network (rebuild reads stay in the rack).
    fn streams_client_reads(&self) -> bool {
        self.serving
            .iter()
            .any(|serving| serving.queue == Queue::Client)
    }

    fn has_client_work(&self) -> bool {
        !self.expedited.is_empty() || !self.client.is_empty()
    }

    /// The group of `queue`'s next request; on the client side an expedited read comes first.
    fn head_group(&self, queue: Queue) -> Option<GroupIndex> {
        match queue {
            Queue::Rebuild => self.rebuild.front_group(),
            Queue::Client => {
                (self.expedited.front().map(|r| r.group)).or_else(|| self.client.front_group())
            }
        }
    }

    /// Takes `queue`'s next request (the one [`Class::head_group`] names).
    fn pop_head(&mut self, queue: Queue) -> Option<Request> {
        match queue {
            Queue::Rebuild => self.rebuild.pop_front().map(|e| e.item),
            Queue::Client => {
                (self.expedited.pop_front()).or_else(|| self.client.pop_front().map(|e| e.item))
            }
        }
    }
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
