//! [`Engine`]: the rack's behaviour between "work arrives" and "disk commands", as a state
//! machine with no clock and no IO. Every input carries `now_us`; the engine answers with
//! [`Output`]s, taken one at a time from [`Engine::next_output`], and with the time it wants to
//! be called again ([`Engine::next_wake_us`]).
//!
//! What it decides:
//! - **Units and targets.** A unit is what the policy spins up and down (`SpinUp(u)` moves
//!   `units[u]`): the layout's groups, or single disks for the simulator's random layout. A
//!   target is what a request reads (`request.group` indexes it): the groups again, or the random
//!   layout's placement sets. Every disk spins with at most one unit.
//! - **Power.** `SpinUp(u)`: each disk of `u` in unit order is booked spinning up by the
//!   [`BudgetAudit`] before it is commanded ([`Output::SpinUp`] lists the commanded disks). A disk
//!   the audit refuses is withheld ([`DiskEvent::Withheld`], a broken invariant: the policy's books
//!   guarantee the unit fits); a failed disk is charged with its unit (the safe side) and never
//!   commanded; either way it joins the unit's missing disks and the unit comes up without it. As
//!   each commanded disk answers it is booked active (or marked failed); when the last has
//!   answered the policy hears `spun_up` and [`GroupActivity::Up`] is announced. `SpinDown(u)`:
//!   every disk booked above resting and not failed is commanded down and booked resting once it
//!   answered; failed and withheld disks are booked resting at once; then `spun_down`.
//! - **Jobs.** A submission is handed to the policy and booked queued under the shell's id;
//!   `Serve(r)` becomes [`Output::Serve`] (with how long the job waited for a spin-up); the shell
//!   reports [`Engine::served`] when its work returned.
//! - **Deferral.** [`Engine::defer`] holds a job outside the policy until its target's units are
//!   up for other work (a spin-up started for something else: the job rides it, so it never costs
//!   a spin-up of its own) or until its start-by time (then it is submitted, may cause the
//!   spin-up itself, and that spin-up releases every other job deferred for the target, which
//!   share it). S3's Bulk restore tier and the simulator's Bulk reads are this. A released job
//!   the policy's full queue refuses stays held and is offered again, target by target and
//!   each target's oldest first, whenever a queue place may have freed (a job started or
//!   served). At most [`DEFAULT_DEFERRED_MAX`]
//!   ([`Engine::set_deferred_max`]) are held; one more is refused ([`Rejected::DeferralFull`]).
//!   [`Engine::next_wake_us`] includes the earliest start-by time.
//! - **Idle spin-down** is the policy's (spinwise-sched's `idle`); the engine names each
//!   spin-down's cause ([`SpinDownCause`]).
//! - **Failure.** [`Engine::mark_failed`] takes a disk out of every later power command; a disk
//!   whose spin-up or spin-down fails is marked failed too.
//! - **Shutdown.** After [`Engine::shutdown`] submissions and deferrals are refused; every job
//!   still deferred (waiting, or refused by a full queue) is handed back at once as
//!   [`Output::Withdrawn`] — it is not spun up for: a shutdown must not wait hours of start-by
//!   time, nor spin groups up early for work that agreed to wait, and its owner (a restore row)
//!   keeps the request and defers it again after a restart. Once everything the policy accepted
//!   is served, every unit still up spins down, and [`Engine::finished`] turns true.
//!
//! Invariants (asserted: a violation is a bug in the engine, the policy or the shell): `now_us`
//! never decreases (the engine keeps the largest it was given); a disk is only commanded after
//! the audit booked the change and is booked resting only after it answered; a job is served
//! only while every disk of its target is booked active, failed or missing, and a unit never
//! spins down while a job is served on one of its disks; a disk answers only a command it was
//! given; every id is queued or served at most once at a time.

use crate::audit::{AuditCounters, AuditError, AuditRefusal, BudgetAudit, DiskPower};
use crate::purpose::{Purpose, WaitingWork};
use spinwise_model::{BindError, DiskIndex, GroupIndex, Rack};
use spinwise_sched::idle::SpinDownReason;
use spinwise_sched::policy::Policy;
use spinwise_sched::scheduler::{self, Action, Request, SchedulerError};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use thiserror::Error;

/// Why an engine cannot be built.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum EngineError {
    #[error("the scheduler refuses the layout: {0}")]
    Scheduler(#[from] SchedulerError),
    #[error("the budget audit refuses the rack: {0}")]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Layout(#[from] BindError),
    #[error("unit {unit} names disk {disk}, but the rack has {disks} disks")]
    UnitDisk {
        unit: GroupIndex,
        disk: DiskIndex,
        disks: usize,
    },
    #[error("disk {disk} spins with unit {first} and unit {second}: a disk has one unit")]
    SharedDisk {
        disk: DiskIndex,
        first: GroupIndex,
        second: GroupIndex,
    },
    #[error("target {target} reads disk {disk}, which no unit spins")]
    UnspunTarget { target: GroupIndex, disk: DiskIndex },
}

/// Why a job was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Rejected {
    #[error("class {class} already queues {depth} jobs (the layout's max_queue_depth)")]
    QueueFull { class: u32, depth: u32 },
    #[error("group {group} is not in the layout ({groups} groups)")]
    UnknownGroup { group: GroupIndex, groups: u32 },
    #[error("the rack is shutting down")]
    ShuttingDown,
    #[error("{held} deferred jobs are held already (the engine's deferred_max)")]
    DeferralFull { held: usize },
}

/// Deferred jobs an engine holds at once unless told otherwise ([`Engine::set_deferred_max`]).
/// Bulk reads wait hours: at 2 reads a second, all deferred, with a 12 h wait (S3 Glacier's
/// longest Bulk promise) 86,400 wait at once; a million is ten times that, about 100 MB of
/// books (a deferred job is booked in three ordered maps), and keeps a flood of deferrals from
/// growing memory without bound.
pub const DEFAULT_DEFERRED_MAX: usize = 1_000_000;

impl From<scheduler::Rejected> for Rejected {
    fn from(rejected: scheduler::Rejected) -> Rejected {
        match rejected {
            scheduler::Rejected::QueueFull { class, depth } => Rejected::QueueFull { class, depth },
            scheduler::Rejected::UnknownGroup { group, groups } => {
                Rejected::UnknownGroup { group, groups }
            }
        }
    }
}

/// [`Engine::mark_failed`] of a disk the rack does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("disk {disk} is not in the rack ({disks} disks)")]
pub struct UnknownDisk {
    pub disk: DiskIndex,
    pub disks: usize,
}

/// Why a group spins down, as announced in [`GroupActivity::GoingDown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinDownCause {
    /// It had no work for the idle time.
    Idle,
    /// Another group needed its budget (a class switching groups, an expedited read).
    MakeRoom,
    /// The rack is shutting down.
    Shutdown,
}

impl SpinDownCause {
    /// One lowercase word, for logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            SpinDownCause::Idle => "idle",
            SpinDownCause::MakeRoom => "make_room",
            SpinDownCause::Shutdown => "shutdown",
        }
    }
}

impl std::fmt::Display for SpinDownCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SpinDownCause::Idle => "idle",
            SpinDownCause::MakeRoom => "making room for another group",
            SpinDownCause::Shutdown => "shutting down",
        })
    }
}

/// Group power cycles, for work that piggybacks on spin-ups that happen anyway (migration,
/// scrub: Pelican batches with spin-ups). Submit jobs for an `Up` group to use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupActivity {
    /// The group's disks were commanded up for `work`.
    SpinningUp {
        group: GroupIndex,
        at_us: u64,
        work: WaitingWork,
    },
    /// Every disk of the group answered, `took_us` after the spin-up started; `work` is what
    /// waits for it now.
    Up {
        group: GroupIndex,
        at_us: u64,
        took_us: u64,
        work: WaitingWork,
    },
    GoingDown {
        group: GroupIndex,
        at_us: u64,
        cause: SpinDownCause,
    },
    Down {
        group: GroupIndex,
        at_us: u64,
    },
}

/// Something a disk did that the store must know about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskEvent {
    /// The disk failed to spin up; it is marked failed and not commanded again.
    SpinUpFailed {
        disk: DiskIndex,
        group: GroupIndex,
        at_us: u64,
        error: String,
    },
    /// The disk failed to spin down; it is marked failed.
    SpinDownFailed {
        disk: DiskIndex,
        group: GroupIndex,
        at_us: u64,
        error: String,
    },
    /// The audit refused the disk's spin-up (a broken invariant), so the group came up without it.
    Withheld {
        disk: DiskIndex,
        group: GroupIndex,
        at_us: u64,
        refusal: AuditRefusal,
    },
}

/// What the shell must do, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Spin these disks of `unit` up (booked spinning up already; never empty: a unit with no
    /// disk to command comes up at once); report each with [`Engine::disk_spun_up`], or all at
    /// once with [`Engine::unit_spun_up`].
    SpinUp {
        unit: GroupIndex,
        disks: Vec<DiskIndex>,
    },
    /// Spin these disks of `unit` down (never empty, as for [`Output::SpinUp`]); report each with
    /// [`Engine::disk_spun_down`], or all at once with [`Engine::unit_spun_down`].
    SpinDown {
        unit: GroupIndex,
        disks: Vec<DiskIndex>,
        cause: SpinDownCause,
    },
    /// Run the job `request` now; report [`Engine::served`] when its work returned.
    Serve {
        request: Request,
        purpose: Purpose,
        submitted_us: u64,
        /// How much of its wait was for its group's spin-up (0 if the group was up).
        spin_up_wait_us: u64,
    },
    /// Tell the subscribers.
    Activity(GroupActivity),
    /// A disk misbehaved or the audit refused one: log it and tell the subscribers.
    Disk(DiskEvent),
    /// A deferred job handed back unserved by [`Engine::shutdown`] (it never reached the
    /// policy): the shell tells its owner, who may defer it again after a restart.
    Withdrawn { request: Request, purpose: Purpose },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupPhase {
    Resting,
    SpinningUp,
    Active,
    SpinningDown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupState {
    pub group: GroupIndex,
    pub phase: GroupPhase,
    /// Jobs accepted and not yet started.
    pub queued_jobs: usize,
    /// Whether a job's work is running on the group.
    pub serving: bool,
    /// Disks the audit books active.
    pub active_disks: usize,
    /// Disks left out of the current spin-up (failed or withheld).
    pub missing_disks: Vec<DiskIndex>,
    /// The queued jobs by purpose (empty when targets are not units): what a collection asks
    /// before it takes the group for another unit (the store's semi-preemptive compaction).
    pub waiting: WaitingWork,
}

/// A snapshot of the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineState {
    pub now_us: u64,
    pub groups: Vec<GroupState>,
    pub queued_jobs: usize,
    /// Jobs deferred and not yet handed to the policy (waiting, or refused by a full queue).
    pub deferred_jobs: usize,
    pub serving_jobs: usize,
    pub jobs_served: u64,
    pub failed_disks: Vec<DiskIndex>,
    pub audit: AuditCounters,
    pub shutting_down: bool,
    /// The idle spin-down time in effect, µs (`None`: never).
    pub idle_spin_down_us: Option<u64>,
    /// Groups spun down so far because they were idle.
    pub idle_spin_downs: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Resting,
    SpinningUp {
        started_us: u64,
        pending: PendingDisks,
    },
    Active,
    /// `by_policy`: the policy asked (tell it `spun_down`); else the final spin-down of shutdown.
    SpinningDown {
        pending: PendingDisks,
        by_policy: bool,
    },
}

/// The disks of a unit that have not yet answered its spin-up or spin-down command, ascending:
/// a sorted vector rather than a `BTreeSet`, since a unit has a few dozen disks and every
/// transition of a simulated day inserts, looks up and removes each of them (the set's nodes,
/// its clone in [`Engine::unit_spun_up`] and its removals were ~5% of a Pelican day at
/// 0.25 req/s, issue 32).
#[derive(Clone, Debug, PartialEq, Eq)]
struct PendingDisks {
    disks: Vec<DiskIndex>,
}

impl PendingDisks {
    /// The commanded disks (each once, in any order).
    fn new(mut disks: Vec<DiskIndex>) -> PendingDisks {
        disks.sort_unstable();
        debug_assert!(
            disks.windows(2).all(|w| w[0] < w[1]),
            "a disk is commanded once"
        );
        PendingDisks { disks }
    }

    fn contains(&self, disk: DiskIndex) -> bool {
        self.disks.binary_search(&disk).is_ok()
    }

    fn remove(&mut self, disk: DiskIndex) {
        if let Ok(position) = self.disks.binary_search(&disk) {
            self.disks.remove(position);
        }
    }

    fn is_empty(&self) -> bool {
        self.disks.is_empty()
    }
}

/// A job accepted and not yet started.
#[derive(Clone, Copy, Debug)]
struct Queued {
    submitted_us: u64,
    purpose: Purpose,
}

/// Jobs by id, ascending: a sorted ring buffer rather than a `BTreeMap`, since ids mostly
/// arrive in increasing order (a new job is appended) and leave oldest first (from the front,
/// O(1) where a vector moved every job behind it). It holds the queued jobs of one target (a
/// queue's depth at most: the map's search was ~5% of a simulated Pelican day, issue 32) and
/// the jobs being served (a few dozen: the map's inserts and removals were ~4% of the
/// pelican-fig5 sweep). A lookup is a binary search over at most two contiguous runs, and an id
/// above the newest is known absent without one.
#[derive(Clone, Debug)]
struct JobsById<T> {
    jobs: VecDeque<(u64, T)>,
}

impl<T> Default for JobsById<T> {
    fn default() -> JobsById<T> {
        JobsById {
            jobs: VecDeque::new(),
        }
    }
}

impl<T> JobsById<T> {
    fn contains(&self, id: u64) -> bool {
        if self.is_newer(id) {
            return false;
        }
        self.jobs.binary_search_by_key(&id, |(i, _)| *i).is_ok()
    }

    /// Whether `id` is above every booked id (a fresh id, the usual case).
    fn is_newer(&self, id: u64) -> bool {
        self.jobs.back().is_none_or(|(last, _)| *last < id)
    }

    /// Books job `id`, replacing its booking if it had one (as a map would); returns that one.
    fn insert(&mut self, id: u64, job: T) -> Option<T> {
        if self.is_newer(id) {
            self.jobs.push_back((id, job));
            return None;
        }
        match self.jobs.binary_search_by_key(&id, |(i, _)| *i) {
            Ok(position) => Some(std::mem::replace(&mut self.jobs[position].1, job)),
            Err(position) => {
                self.jobs.insert(position, (id, job));
                None
            }
        }
    }

    fn remove(&mut self, id: u64) -> Option<T> {
        if self.jobs.front().is_some_and(|(first, _)| *first == id) {
            return self.jobs.pop_front().map(|(_, job)| job);
        }
        let position = self.jobs.binary_search_by_key(&id, |(i, _)| *i).ok()?;
        self.jobs.remove(position).map(|(_, job)| job)
    }

    fn len(&self) -> usize {
        self.jobs.len()
    }

    fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The jobs in id order.
    fn values(&self) -> impl Iterator<Item = &T> {
        self.jobs.iter().map(|(_, job)| job)
    }
}

/// The queued jobs of one target by id.
type QueuedJobs = JobsById<Queued>;

/// A job deferred ([`Engine::defer`]) and not yet handed to the policy.
#[derive(Clone, Copy, Debug)]
struct Deferred {
    request: Request,
    purpose: Purpose,
    /// When it was deferred: its submission time for the books ([`Output::Serve`]).
    deferred_us: u64,
    start_by_us: u64,
}

/// The deferred jobs: waiting for a spin-up or their start-by time, and released but refused by
/// a full queue. Every job is in exactly one of `waiting` and `refused`, under its deferral
/// order (a counter: oldest first everywhere).
#[derive(Clone, Debug, Default)]
struct Deferrals {
    waiting: BTreeMap<u64, Deferred>,
    /// Per target, the orders of its waiting jobs.
    waiting_by_target: Vec<BTreeSet<u64>>,
    /// (start-by time, order) of every waiting job: the earliest is the next wake.
    start_by: BTreeSet<(u64, u64)>,
    /// Per target, the released jobs its class's full queue refused, oldest first.
    refused: Vec<VecDeque<(u64, Deferred)>>,
    refused_jobs: usize,
    next_order: u64,
    max: usize,
    /// A queue place may have freed since the refused jobs were last offered.
    place_freed: bool,
}

impl Deferrals {
    fn held(&self) -> usize {
        self.waiting.len() + self.refused_jobs
    }

    fn hold(&mut self, deferred: Deferred) {
        let order = self.next_order;
        self.next_order += 1;
        self.waiting_by_target[deferred.request.group as usize].insert(order);
        self.start_by.insert((deferred.start_by_us, order));
        self.waiting.insert(order, deferred);
    }

    fn take(&mut self, order: u64) -> Deferred {
        let deferred = self
            .waiting
            .remove(&order)
            .expect("a deferral order names a waiting job");
        self.waiting_by_target[deferred.request.group as usize].remove(&order);
        self.start_by.remove(&(deferred.start_by_us, order));
        deferred
    }

    fn refuse(&mut self, order: u64, deferred: Deferred) {
        self.refused[deferred.request.group as usize].push_back((order, deferred));
        self.refused_jobs += 1;
    }
}

pub struct Engine {
    policy: Box<dyn Policy + Send>,
    audit: BudgetAudit,
    units: Vec<Vec<DiskIndex>>,
    targets: Vec<Vec<DiskIndex>>,
    /// Whether targets are the units (a layout's groups): spin-ups can then be explained by
    /// the work queued for them, and a job's spin-up wait measured.
    targets_are_units: bool,
    unit_of: Vec<Option<GroupIndex>>,
    now_us: u64,
    phase: Vec<Phase>,
    missing: Vec<BTreeSet<DiskIndex>>,
    /// Each unit's last spin-up: (started, finished).
    last_spin_up_us: Vec<Option<(u64, u64)>>,
    failed: BTreeSet<DiskIndex>,
    /// Per target, its queued jobs by id.
    queued: Vec<QueuedJobs>,
    queued_jobs: usize,
    serving: JobsById<Request>,
    /// Per disk, jobs being served on a target that reads it.
    serving_on: Vec<u32>,
    jobs_served: u64,
    shutting_down: bool,
    /// Shut down with everything served: the final spin-downs are out, the policy is done.
    closing: bool,
    idle_spin_down_us: Option<u64>,
    deferrals: Deferrals,
    outputs: VecDeque<Output>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("now_us", &self.now_us)
            .field("units", &self.units.len())
            .field("queued_jobs", &self.queued_jobs)
            .field("deferred_jobs", &self.deferrals.held())
            .field("serving", &self.serving.len())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// A copy of this engine in its current state, its policy's included
    /// ([`Policy::fork`]), for a driver that continues one run two ways (the simulator's
    /// baseline without idle spin-down); `None` when the policy cannot be copied.
    pub fn fork(&self) -> Option<Engine> {
        Some(Engine {
            policy: self.policy.fork()?,
            audit: self.audit.clone(),
            units: self.units.clone(),
            targets: self.targets.clone(),
            targets_are_units: self.targets_are_units,
            unit_of: self.unit_of.clone(),
            now_us: self.now_us,
            phase: self.phase.clone(),
            missing: self.missing.clone(),
            last_spin_up_us: self.last_spin_up_us.clone(),
            failed: self.failed.clone(),
            queued: self.queued.clone(),
            queued_jobs: self.queued_jobs,
            serving: self.serving.clone(),
            serving_on: self.serving_on.clone(),
            jobs_served: self.jobs_served,
            shutting_down: self.shutting_down,
            closing: self.closing,
            idle_spin_down_us: self.idle_spin_down_us,
            deferrals: self.deferrals.clone(),
            outputs: self.outputs.clone(),
        })
    }

    /// An engine for `rack` whose `policy` spins `units` (request targets are the units): every
    /// disk resting, nothing queued, idle spin-down as the policy was built.
    pub fn new(
        rack: &Rack,
        units: Vec<Vec<DiskIndex>>,
        policy: Box<dyn Policy + Send>,
    ) -> Result<Engine, EngineError> {
        Engine::with_targets(rack, units, None, policy)
    }

    /// As [`Engine::new`], with requests reading `targets` other than the units (the random
    /// layout's placement sets over single-disk units); every target disk must spin with a unit.
    pub fn with_targets(
        rack: &Rack,
        units: Vec<Vec<DiskIndex>>,
        targets: Option<Vec<Vec<DiskIndex>>>,
        policy: Box<dyn Policy + Send>,
    ) -> Result<Engine, EngineError> {
        let disks = rack.disk_count();
        let unit_of = unit_of(&units, disks)?;
        let targets_are_units = targets.is_none();
        let targets = targets.unwrap_or_else(|| units.clone());
        for (target, members) in targets.iter().enumerate() {
            if let Some(&disk) = members
                .iter()
                .find(|d| unit_of.get(**d as usize).copied().flatten().is_none())
            {
                return Err(EngineError::UnspunTarget {
                    target: target as GroupIndex,
                    disk,
                });
            }
        }
        let unit_count = units.len();
        let target_count = targets.len();
        Ok(Engine {
            policy,
            audit: BudgetAudit::new(rack)?,
            queued: vec![QueuedJobs::default(); targets.len()],
            units,
            targets,
            targets_are_units,
            unit_of,
            now_us: 0,
            phase: vec![Phase::Resting; unit_count],
            missing: vec![BTreeSet::new(); unit_count],
            last_spin_up_us: vec![None; unit_count],
            failed: BTreeSet::new(),
            queued_jobs: 0,
            serving: JobsById::default(),
            serving_on: vec![0; disks],
            jobs_served: 0,
            shutting_down: false,
            closing: false,
            idle_spin_down_us: None,
            deferrals: Deferrals {
                waiting_by_target: vec![BTreeSet::new(); target_count],
                refused: vec![VecDeque::new(); target_count],
                max: DEFAULT_DEFERRED_MAX,
                ..Deferrals::default()
            },
            outputs: VecDeque::new(),
        })
    }

    /// Tells the policy to spin a unit down once it had no work for `after_us` (`None` or 0:
    /// never); policies without idle spin-down ignore it.
    pub fn set_idle_spin_down_us(&mut self, after_us: Option<u64>) {
        self.policy.set_idle_spin_down_us(after_us);
        self.idle_spin_down_us = after_us.filter(|us| *us > 0);
    }

    /// Whether a new job may be taken: refused while shutting down or for an unknown target;
    /// an id already queued or served is a broken invariant of the shell (`twice` says how).
    fn admit(&self, request: &Request, twice: &str) -> Result<(), Rejected> {
        if self.shutting_down {
            return Err(Rejected::ShuttingDown);
        }
        let Some(queue) = self.queued.get(request.group as usize) else {
            return Err(Rejected::UnknownGroup {
                group: request.group,
                groups: self.targets.len() as u32,
            });
        };
        assert!(
            !queue.contains(request.id) && !self.serving.contains(request.id),
            "job id {} {twice}",
            request.id
        );
        Ok(())
    }

    /// Books a job under the shell's `request.id` and hands it to the policy, or refuses it.
    pub fn submit(
        &mut self,
        now_us: u64,
        request: Request,
        purpose: Purpose,
    ) -> Result<(), Rejected> {
        self.advance(now_us);
        self.admit(&request, "submitted twice")?;
        self.hand_over(request, purpose, self.now_us)
    }

    /// Hands `request` to the policy and books it queued as submitted at `submitted_us`.
    fn hand_over(
        &mut self,
        request: Request,
        purpose: Purpose,
        submitted_us: u64,
    ) -> Result<(), Rejected> {
        self.policy.submit(self.now_us, request)?;
        self.queued[request.group as usize].insert(
            request.id,
            Queued {
                submitted_us,
                purpose,
            },
        );
        self.queued_jobs += 1;
        Ok(())
    }

    /// At most `deferred_max` deferred jobs are held from now on (jobs held beyond it are kept;
    /// only new deferrals are refused). Default: [`DEFAULT_DEFERRED_MAX`].
    pub fn set_deferred_max(&mut self, deferred_max: usize) {
        self.deferrals.max = deferred_max;
    }

    /// Books a job under the shell's `request.id` that may wait for its target to be up for
    /// other work, up to `start_by_us`: it is handed to the policy at once if the target's
    /// units are spinning up or up, or `start_by_us` has come; else held until a spin-up of
    /// the target for other work, or `start_by_us` (see the module's "Deferral"). A job the
    /// policy's full queue refuses on its release is held and offered again as places free; so
    /// `Ok` means the job will be served (unless withdrawn by [`Engine::shutdown`]). Refused:
    /// shutting down, an unknown target, or [`Rejected::DeferralFull`] when it would have to be
    /// held and `deferred_max` are held already.
    pub fn defer(
        &mut self,
        now_us: u64,
        request: Request,
        purpose: Purpose,
        start_by_us: u64,
    ) -> Result<(), Rejected> {
        self.advance(now_us);
        self.admit(&request, "deferred while queued or served")?;
        let deferred = Deferred {
            request,
            purpose,
            deferred_us: self.now_us,
            start_by_us,
        };
        let full = self.deferrals.held() >= self.deferrals.max;
        if start_by_us <= self.now_us || self.target_up(request.group) {
            return match self.hand_over(request, purpose, self.now_us) {
                Ok(()) => Ok(()),
                Err(Rejected::QueueFull { .. }) if !full => {
                    let order = self.deferrals.next_order;
                    self.deferrals.next_order += 1;
                    self.deferrals.refuse(order, deferred);
                    Ok(())
                }
                Err(Rejected::QueueFull { .. }) => Err(Rejected::DeferralFull {
                    held: self.deferrals.held(),
                }),
                Err(other) => Err(other),
            };
        }
        if full {
            return Err(Rejected::DeferralFull {
                held: self.deferrals.held(),
            });
        }
        self.deferrals.hold(deferred);
        Ok(())
    }

    /// Whether every unit `target` reads is spinning up or up (a job for it costs no spin-up).
    fn target_up(&self, target: GroupIndex) -> bool {
        let up = |unit: GroupIndex| {
            matches!(
                self.phase[unit as usize],
                Phase::SpinningUp { .. } | Phase::Active
            )
        };
        if self.targets_are_units {
            return up(target);
        }
        self.targets[target as usize]
            .iter()
            .all(|disk| self.unit_of[*disk as usize].is_some_and(up))
    }

    /// Hands the waiting job `order` to the policy; a full queue's refusal keeps it held.
    fn release(&mut self, order: u64) {
        let deferred = self.deferrals.take(order);
        if self
            .hand_over(deferred.request, deferred.purpose, deferred.deferred_us)
            .is_err()
        {
            self.deferrals.refuse(order, deferred);
        }
    }

    /// Releases every job waiting for a target `unit`'s spin-up makes up (it is spinning up).
    fn release_riders(&mut self, unit: GroupIndex) {
        if self.deferrals.waiting.is_empty() {
            return;
        }
        let targets: Vec<GroupIndex> = if self.targets_are_units {
            vec![unit]
        } else {
            (0..self.targets.len() as GroupIndex)
                .filter(|t| {
                    !self.deferrals.waiting_by_target[*t as usize].is_empty() && self.target_up(*t)
                })
                .collect()
        };
        for target in targets {
            let orders: Vec<u64> = self.deferrals.waiting_by_target[target as usize]
                .iter()
                .copied()
                .collect();
            for order in orders {
                self.release(order);
            }
        }
    }

    /// Releases every waiting job whose start-by time has come, earliest first.
    fn release_due(&mut self) {
        while let Some(&(start_by_us, order)) = self.deferrals.start_by.first() {
            if start_by_us > self.now_us {
                return;
            }
            self.release(order);
        }
    }

    /// Offers the jobs full queues refused again, target by target in index order, each
    /// target's oldest first, moving on at a target's first refusal (its class's queue is full).
    /// Filling a freed place with one group's backlog before another's keeps a class on fewer
    /// groups, so fewer switches: offering the oldest job of any target first instead spun the
    /// pelican rack up four times as often at 2 reads/s, every read Bulk with a 4 h wait (685
    /// against 174 spin-ups in 4 measured hours), for a Bulk first byte 13% sooner on average.
    fn retry_refused(&mut self) {
        if !std::mem::take(&mut self.deferrals.place_freed) || self.deferrals.refused_jobs == 0 {
            return;
        }
        for target in 0..self.deferrals.refused.len() {
            while let Some(&(_, deferred)) = self.deferrals.refused[target].front() {
                if self
                    .hand_over(deferred.request, deferred.purpose, deferred.deferred_us)
                    .is_err()
                {
                    break;
                }
                self.deferrals.refused[target].pop_front();
                self.deferrals.refused_jobs -= 1;
            }
        }
    }

    /// Hands every deferred job back ([`Output::Withdrawn`]), oldest first.
    fn withdraw_deferred(&mut self) {
        let mut withdrawn: Vec<(u64, Deferred)> = std::mem::take(&mut self.deferrals.waiting)
            .into_iter()
            .collect();
        for target in 0..self.targets.len() {
            self.deferrals.waiting_by_target[target].clear();
            withdrawn.extend(std::mem::take(&mut self.deferrals.refused[target]));
        }
        self.deferrals.start_by.clear();
        self.deferrals.refused_jobs = 0;
        withdrawn.sort_unstable_by_key(|(order, _)| *order);
        for (_, deferred) in withdrawn {
            self.outputs.push_back(Output::Withdrawn {
                request: deferred.request,
                purpose: deferred.purpose,
            });
        }
    }

    /// The next thing to do at `now_us`, if any: call until `None` after every input.
    pub fn next_output(&mut self, now_us: u64) -> Option<Output> {
        self.advance(now_us);
        loop {
            if let Some(output) = self.outputs.pop_front() {
                return Some(output);
            }
            if self.closing {
                return None;
            }
            self.release_due();
            self.retry_refused();
            if let Some(action) = self.policy.poll_action(self.now_us) {
                self.perform(action);
                continue;
            }
            if self.shutting_down && self.drained() {
                self.closing = true;
                self.spin_down_for_shutdown();
                continue;
            }
            return None;
        }
    }

    /// When to call [`Engine::next_output`] again although no input arrived (`None`: only
    /// inputs change anything).
    pub fn next_wake_us(&self) -> Option<u64> {
        if self.closing {
            return None;
        }
        let start_by_us = self.deferrals.start_by.first().map(|(at_us, _)| *at_us);
        match (self.policy.next_timeout_us(), start_by_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// One commanded disk of a spinning-up unit answered: booked active, or on an error marked
    /// failed and left out of the unit. The last answer brings the unit up.
    pub fn disk_spun_up(&mut self, now_us: u64, disk: DiskIndex, result: Result<(), String>) {
        self.advance(now_us);
        let unit = self.unit_answering(disk);
        match result {
            // Active never costs more than spinning up (checked when the audit was built), so a
            // refusal here is the audit's own invariant failing; it counted it, and the disk
            // stays charged as spinning up, the dearer state.
            Ok(()) => {
                let _ = self.audit.change(disk, DiskPower::Active);
            }
            Err(error) => {
                self.failed.insert(disk);
                self.missing[unit as usize].insert(disk);
                self.outputs
                    .push_back(Output::Disk(DiskEvent::SpinUpFailed {
                        disk,
                        group: unit,
                        at_us: self.now_us,
                        error,
                    }));
            }
        }
        let Phase::SpinningUp { pending, .. } = &mut self.phase[unit as usize] else {
            unreachable!("unit_answering checked the phase");
        };
        pending.remove(disk);
        if pending.is_empty() {
            self.unit_up(unit);
        }
    }

    /// Every disk [`Output::SpinUp`] commanded for `unit` answered that it is up.
    pub fn unit_spun_up(&mut self, now_us: u64, unit: GroupIndex) {
        let pending = match &mut self.phase[unit as usize] {
            Phase::SpinningUp { pending, .. } => std::mem::take(&mut pending.disks),
            phase => panic!("unit {unit} reported up while {phase:?}"),
        };
        // What `disk_spun_up(now_us, disk, Ok(()))` does for each pending disk in ascending
        // order, the last bringing the unit up, without finding each disk among the pending
        // ones again (~8% of a Pelican day at 0.25 req/s went to that, issue 32).
        self.advance(now_us);
        for &disk in &pending {
            // As in `disk_spun_up`: a refusal is the audit's own invariant failing, counted.
            let _ = self.audit.change(disk, DiskPower::Active);
        }
        if !pending.is_empty() {
            self.unit_up(unit);
        }
    }

    /// One commanded disk of a spinning-down unit answered (an error marks it failed; its state
    /// is unknown, and like a failed disk it follows its unit's books from now on).
    pub fn disk_spun_down(&mut self, now_us: u64, disk: DiskIndex, result: Result<(), String>) {
        self.advance(now_us);
        let unit = self.unit_answering(disk);
        if let Err(error) = result {
            self.failed.insert(disk);
            self.outputs
                .push_back(Output::Disk(DiskEvent::SpinDownFailed {
                    disk,
                    group: unit,
                    at_us: self.now_us,
                    error,
                }));
        }
        self.book_resting(disk);
        let Phase::SpinningDown { pending, .. } = &mut self.phase[unit as usize] else {
            unreachable!("unit_answering checked the phase");
        };
        pending.remove(disk);
        if pending.is_empty() {
            self.unit_down(unit);
        }
    }

    /// Every disk [`Output::SpinDown`] commanded for `unit` answered that it rests.
    pub fn unit_spun_down(&mut self, now_us: u64, unit: GroupIndex) {
        let pending = match &mut self.phase[unit as usize] {
            Phase::SpinningDown { pending, .. } => std::mem::take(&mut pending.disks),
            phase => panic!("unit {unit} reported down while {phase:?}"),
        };
        // What `disk_spun_down(now_us, disk, Ok(()))` does for each pending disk in ascending
        // order, the last taking the unit down (as in `unit_spun_up`).
        self.advance(now_us);
        for &disk in &pending {
            self.book_resting(disk);
        }
        if !pending.is_empty() {
            self.unit_down(unit);
        }
    }

    /// The work of job `id` returned: the policy hears it.
    pub fn served(&mut self, now_us: u64, id: u64) {
        self.advance(now_us);
        let request = self
            .serving
            .remove(id)
            .unwrap_or_else(|| panic!("job {id} reported served but was not being served"));
        for &disk in &self.targets[request.group as usize] {
            self.serving_on[disk as usize] -= 1;
        }
        self.policy.served(self.now_us, &request);
        self.jobs_served += 1;
        self.deferrals.place_freed = true;
    }

    /// Marks `disk` failed: never commanded again, charged with its unit, missing from its
    /// unit's next spin-up. `Ok(true)` when it was not failed before.
    pub fn mark_failed(&mut self, now_us: u64, disk: DiskIndex) -> Result<bool, UnknownDisk> {
        self.advance(now_us);
        if disk as usize >= self.audit.disks() {
            return Err(UnknownDisk {
                disk,
                disks: self.audit.disks(),
            });
        }
        Ok(self.failed.insert(disk))
    }

    /// Refuses submissions and deferrals from now on and withdraws every deferred job not yet
    /// handed to the policy ([`Output::Withdrawn`]); what the policy accepted is still served,
    /// then every unit spins down.
    pub fn shutdown(&mut self, now_us: u64) {
        self.advance(now_us);
        if !self.shutting_down {
            self.withdraw_deferred();
        }
        self.shutting_down = true;
    }

    /// Shut down, everything served and every unit resting.
    pub fn finished(&self) -> bool {
        self.shutting_down && self.drained() && self.phase.iter().all(|p| *p == Phase::Resting)
    }

    /// Nothing deferred, queued, being served or changing state, for the engine and its policy.
    pub fn is_idle(&self) -> bool {
        self.queued_jobs == 0
            && self.deferrals.held() == 0
            && self.serving.is_empty()
            && self.policy.is_idle()
    }

    /// Jobs deferred and not yet handed to the policy.
    pub fn deferred_jobs(&self) -> usize {
        self.deferrals.held()
    }

    pub fn now_us(&self) -> u64 {
        self.now_us
    }

    pub fn units(&self) -> &[Vec<DiskIndex>] {
        &self.units
    }

    /// The disks left out of `unit`'s current spin-up (failed or withheld).
    pub fn missing(&self, unit: GroupIndex) -> &BTreeSet<DiskIndex> {
        &self.missing[unit as usize]
    }

    pub fn failed(&self) -> &BTreeSet<DiskIndex> {
        &self.failed
    }

    pub fn audit(&self) -> &BudgetAudit {
        &self.audit
    }

    pub fn phase(&self, unit: GroupIndex) -> GroupPhase {
        match self.phase[unit as usize] {
            Phase::Resting => GroupPhase::Resting,
            Phase::SpinningUp { .. } => GroupPhase::SpinningUp,
            Phase::Active => GroupPhase::Active,
            Phase::SpinningDown { .. } => GroupPhase::SpinningDown,
        }
    }

    pub fn jobs_served(&self) -> u64 {
        self.jobs_served
    }

    /// A snapshot: per unit its phase, queued jobs and active disks; failed disks; the audit.
    pub fn state(&self) -> EngineState {
        let groups = (0..self.units.len())
            .map(|index| self.unit_state(index as GroupIndex))
            .collect();
        EngineState {
            now_us: self.now_us,
            groups,
            queued_jobs: self.queued_jobs,
            deferred_jobs: self.deferrals.held(),
            serving_jobs: self.serving.len(),
            jobs_served: self.jobs_served,
            failed_disks: self.failed.iter().copied().collect(),
            audit: self.audit.counters().clone(),
            shutting_down: self.shutting_down,
            idle_spin_down_us: self.idle_spin_down_us,
            idle_spin_downs: self.policy.idle_spin_downs(),
        }
    }

    fn unit_state(&self, unit: GroupIndex) -> GroupState {
        let index = unit as usize;
        let disks = &self.units[index];
        GroupState {
            group: unit,
            phase: self.phase(unit),
            queued_jobs: if self.targets_are_units {
                self.queued[index].len()
            } else {
                0
            },
            serving: disks.iter().any(|d| self.serving_on[*d as usize] > 0),
            active_disks: disks
                .iter()
                .filter(|d| self.audit.power(**d) == Some(DiskPower::Active))
                .count(),
            missing_disks: self.missing[index].iter().copied().collect(),
            waiting: self.waiting_work(unit),
        }
    }

    fn advance(&mut self, now_us: u64) {
        self.now_us = self.now_us.max(now_us);
    }

    fn perform(&mut self, action: Action) {
        match action {
            Action::SpinUp(unit) => self.spin_up(unit),
            Action::SpinDown(unit) => {
                let cause = match self.policy.spin_down_reason(unit) {
                    SpinDownReason::Idle => SpinDownCause::Idle,
                    SpinDownReason::MakeRoom => SpinDownCause::MakeRoom,
                };
                self.spin_down(unit, cause);
            }
            Action::Serve(request) => self.serve(request),
        }
    }

    /// During shutdown with nothing left to serve: spins every unit still up down. The policy is
    /// not polled again (it would still count those units up, and its idle timers would ask to
    /// spin them down a second time).
    fn spin_down_for_shutdown(&mut self) {
        for unit in 0..self.units.len() as GroupIndex {
            if self.phase[unit as usize] == Phase::Active {
                self.spin_down(unit, SpinDownCause::Shutdown);
            }
        }
    }

    fn drained(&self) -> bool {
        self.is_idle()
            && self
                .phase
                .iter()
                .all(|p| matches!(p, Phase::Resting | Phase::Active))
    }

    /// Books each disk spinning up and commands it; disks the audit refuses or that failed
    /// before stay out of this spin-up.
    fn spin_up(&mut self, unit: GroupIndex) {
        let index = unit as usize;
        assert_eq!(self.phase[index], Phase::Resting, "spin-up of a busy unit");
        let mut commanded = Vec::with_capacity(self.units[index].len());
        for position in 0..self.units[index].len() {
            let disk = self.units[index][position];
            if let Err(refusal) = self.audit.change(disk, DiskPower::SpinningUp) {
                self.missing[index].insert(disk);
                self.outputs.push_back(Output::Disk(DiskEvent::Withheld {
                    disk,
                    group: unit,
                    at_us: self.now_us,
                    refusal,
                }));
                continue;
            }
            if self.failed.contains(&disk) {
                // Charged with its unit (the safe side), never commanded.
                self.missing[index].insert(disk);
                continue;
            }
            commanded.push(disk);
        }
        self.phase[index] = Phase::SpinningUp {
            started_us: self.now_us,
            pending: PendingDisks::new(commanded.clone()),
        };
        // A unit with no disk to command (all failed or withheld) is up at once: no command,
        // nothing for the shell to answer.
        let up_at_once = commanded.is_empty();
        if !up_at_once {
            self.outputs.push_back(Output::SpinUp {
                unit,
                disks: commanded,
            });
        }
        // Jobs deferred for this unit ride its spin-up (and count in what waits for it).
        self.release_riders(unit);
        let work = self.waiting_work(unit);
        self.outputs
            .push_back(Output::Activity(GroupActivity::SpinningUp {
                group: unit,
                at_us: self.now_us,
                work,
            }));
        if up_at_once {
            self.unit_up(unit);
        }
    }

    fn unit_up(&mut self, unit: GroupIndex) {
        let Phase::SpinningUp { started_us, .. } = self.phase[unit as usize] else {
            unreachable!("unit {unit} came up without spinning up");
        };
        self.phase[unit as usize] = Phase::Active;
        self.follow_unit(unit, DiskPower::Active);
        self.last_spin_up_us[unit as usize] = Some((started_us, self.now_us));
        self.policy.spun_up(self.now_us, unit);
        let work = self.waiting_work(unit);
        self.outputs.push_back(Output::Activity(GroupActivity::Up {
            group: unit,
            at_us: self.now_us,
            took_us: self.now_us.saturating_sub(started_us),
            work,
        }));
    }

    /// Commands every disk that was spun up to spin down; failed and withheld disks need no
    /// command and are booked resting at once.
    fn spin_down(&mut self, unit: GroupIndex, cause: SpinDownCause) {
        let index = unit as usize;
        assert_eq!(
            self.phase[index],
            Phase::Active,
            "spin-down of a unit not up"
        );
        assert!(
            self.units[index]
                .iter()
                .all(|d| self.serving_on[*d as usize] == 0),
            "unit {unit} spun down while a job is served on it"
        );
        self.outputs
            .push_back(Output::Activity(GroupActivity::GoingDown {
                group: unit,
                at_us: self.now_us,
                cause,
            }));
        let mut commanded = Vec::with_capacity(self.units[index].len());
        for position in 0..self.units[index].len() {
            let disk = self.units[index][position];
            if self.audit.power(disk) == Some(DiskPower::Resting) {
                continue;
            }
            if self.failed.contains(&disk) {
                self.book_resting(disk);
                continue;
            }
            commanded.push(disk);
        }
        self.phase[index] = Phase::SpinningDown {
            pending: PendingDisks::new(commanded.clone()),
            by_policy: cause != SpinDownCause::Shutdown,
        };
        let down_at_once = commanded.is_empty();
        if !down_at_once {
            self.outputs.push_back(Output::SpinDown {
                unit,
                disks: commanded,
                cause,
            });
        }
        if down_at_once {
            self.unit_down(unit);
        }
    }

    /// Books the failed disks of `unit` that were charged with its spin-up in `power` too: a
    /// failed disk follows its unit's states (its real draw is unknown; charging it as its
    /// unit's healthy disks overstates nothing the policy's books do not also count).
    fn follow_unit(&mut self, unit: GroupIndex, power: DiskPower) {
        for position in 0..self.units[unit as usize].len() {
            let disk = self.units[unit as usize][position];
            if self.failed.contains(&disk) && self.audit.power(disk) == Some(DiskPower::SpinningUp)
            {
                // Active never costs more than spinning up: a refusal is the audit's own
                // invariant failing, counted there, and the dearer state stays booked.
                let _ = self.audit.change(disk, power);
            }
        }
    }

    fn book_resting(&mut self, disk: DiskIndex) {
        self.audit
            .change(disk, DiskPower::Resting)
            .expect("resting is the cheapest state and follows every other");
    }

    fn unit_down(&mut self, unit: GroupIndex) {
        let Phase::SpinningDown { by_policy, .. } = self.phase[unit as usize] else {
            unreachable!("unit {unit} went down without spinning down");
        };
        self.phase[unit as usize] = Phase::Resting;
        self.missing[unit as usize].clear();
        if by_policy {
            self.policy.spun_down(self.now_us, unit);
        }
        self.outputs
            .push_back(Output::Activity(GroupActivity::Down {
                group: unit,
                at_us: self.now_us,
            }));
    }

    fn serve(&mut self, request: Request) {
        let target = request.group as usize;
        let queued = self.queued[target]
            .remove(request.id)
            .expect("the policy serves only submitted requests");
        self.queued_jobs -= 1;
        for &disk in &self.targets[target] {
            assert!(
                self.audit.power(disk) == Some(DiskPower::Active)
                    || self.failed.contains(&disk)
                    || self.missing_from_its_unit(disk),
                "job {} served while disk {disk} of target {target} is not up",
                request.id
            );
            self.serving_on[disk as usize] += 1;
        }
        let spin_up_wait_us = if self.targets_are_units {
            self.last_spin_up_us[target]
                .filter(|(_, up_us)| *up_us > queued.submitted_us)
                .map_or(0, |(from_us, up_us)| {
                    up_us - from_us.max(queued.submitted_us)
                })
        } else {
            0
        };
        assert!(
            self.serving.insert(request.id, request).is_none(),
            "job {} served twice at once",
            request.id
        );
        // Starting a job freed its queue place.
        self.deferrals.place_freed = true;
        self.outputs.push_back(Output::Serve {
            request,
            purpose: queued.purpose,
            submitted_us: queued.submitted_us,
            spin_up_wait_us,
        });
    }

    fn missing_from_its_unit(&self, disk: DiskIndex) -> bool {
        self.unit_of[disk as usize].is_some_and(|unit| self.missing[unit as usize].contains(&disk))
    }

    /// The unit of `disk`, which must have a command outstanding to it.
    fn unit_answering(&self, disk: DiskIndex) -> GroupIndex {
        let unit = self
            .unit_of
            .get(disk as usize)
            .copied()
            .flatten()
            .unwrap_or_else(|| panic!("disk {disk} answered, but it spins with no unit"));
        let pending = match &self.phase[unit as usize] {
            Phase::SpinningUp { pending, .. } | Phase::SpinningDown { pending, .. } => pending,
            phase => panic!("disk {disk} answered while its unit {unit} is {phase:?}"),
        };
        assert!(
            pending.contains(disk),
            "disk {disk} answered a command it was not given"
        );
        unit
    }

    /// What is queued for `unit` now, by purpose (targets are units), else nothing.
    fn waiting_work(&self, unit: GroupIndex) -> WaitingWork {
        let mut work = WaitingWork::default();
        if !self.targets_are_units {
            return work;
        }
        for queued in self.queued[unit as usize].values() {
            work.add(
                queued.purpose,
                self.now_us.saturating_sub(queued.submitted_us),
            );
        }
        work
    }
}

/// Each disk's unit, checking every disk is in the rack and in at most one unit.
fn unit_of(units: &[Vec<DiskIndex>], disks: usize) -> Result<Vec<Option<GroupIndex>>, EngineError> {
    let mut unit_of = vec![None; disks];
    for (unit, members) in units.iter().enumerate() {
        let unit = unit as GroupIndex;
        for &disk in members {
            let slot = unit_of
                .get_mut(disk as usize)
                .ok_or(EngineError::UnitDisk { unit, disk, disks })?;
            if let Some(first) = *slot {
                return Err(EngineError::SharedDisk {
                    disk,
                    first,
                    second: unit,
                });
            }
            *slot = Some(unit);
        }
    }
    Ok(unit_of)
}
