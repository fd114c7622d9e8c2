//! The driver: the sans-IO scheduler (spinwise-sched's [`Policy`]) run with a real clock against
//! real disks ([`Disk`]), every disk power-state change passing the [`BudgetAudit`] (booked before
//! the command when it can raise a draw, after the disk obeyed when it lowers one). It is
//! the simulator's event loop (spinwise-sim's `sim.rs`) with wall time and disk commands in place
//! of model time and model disks; the policy code is the same. docs/driver.md describes it.
//!
//! One tokio task owns the policy, the group → disks map, the audit and the jobs. It waits on a
//! bounded command channel (submissions, state queries, failed disks, shutdown), a completion
//! channel (disk commands and jobs finished on blocking threads) and the policy's next timeout,
//! and after every event polls the policy until it has nothing more to do:
//! - `SpinUp(g)`: each disk of g in layout order is booked spinning up by the audit, then its
//!   `spin_up` runs on a blocking thread (the group's disks concurrently); as each returns it is
//!   booked active; when all have returned the policy hears `spun_up` and subscribers
//!   [`GroupActivity::Up`]. A disk the audit refuses is not spun up (a broken invariant: the
//!   scheduler's books guarantee the group fits; logged, counted, [`DiskEvent::Withheld`]); a
//!   disk whose spin-up fails is marked failed ([`DiskEvent::SpinUpFailed`]); either way the
//!   group comes up with its other disks, which the work sees in [`GroupDisks::missing`] (the
//!   store reconstructs from any k).
//! - Idle spin-down is the policy's ([`DriverConfig::idle_spin_down_us`], spinwise-sched's `idle`
//!   module, the simulator's rule): the loop's timer wakes it at the first idle deadline
//!   ([`Policy::next_timeout_us`]), and each spin-down is announced with its reason
//!   ([`SpinDownCause`]: idle, making room for another group, or shutdown).
//! - `SpinDown(g)`: [`GroupActivity::GoingDown`], every spun-up disk's `spin_down` on a blocking
//!   thread, each booked resting once it returned, then `spun_down` and [`GroupActivity::Down`].
//! - With the layout's staggered switches (spinwise-sched's scheduler docs), the policy learns
//!   which classes send through one server's NIC ([`Layout::group_read_servers`]), as in the
//!   simulator, and a class may hold its idle group up while a partner switches.
//! - `Serve(request)`: the job's work runs on a blocking thread with the group's [`GroupDisks`];
//!   its output and [`JobTiming`] go to the caller's [`JobHandle`], then the policy hears `served`.
//!
//! Invariants: the policy only ever sees `now_us` that never decreases (the loop keeps the largest
//! time it has read); a job's work runs only while its group is booked active and the policy
//! holds it being served, so its disks stay up until it returns; every accepted job is served
//! before [`Driver::shutdown`] returns, which then spins every group down; a failed disk is never
//! sent another power command, but keeps being charged with its group's spin-up (the simulator's
//! rule: overstating a draw is the safe side).

use crate::audit::{AuditCounters, AuditError, AuditRefusal, BudgetAudit, DiskPower};
use crate::clock::Clock;
pub use crate::purpose::{Purpose, WaitingWork};
use spinwise_disk::{Disk, DiskError};
use spinwise_model::{BindError, DiskIndex, GroupIndex, Layout, Rack};
use spinwise_sched::idle::{DEFAULT_IDLE_SPIN_DOWN_S, SpinDownReason, idle_spin_down_us};
use spinwise_sched::policy::{FullyProvisioned, Policy};
use spinwise_sched::scheduler::{self, Action, ClassScheduler, Kind, Request, SchedulerError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use thiserror::Error;
use tokio::sync::{broadcast, mpsc, oneshot};

/// Commands (submissions, queries) waiting for the loop. The loop handles one in microseconds, so
/// the channel only absorbs bursts of concurrent callers; past it, callers wait in
/// [`Driver::submit`] (backpressure) instead of growing memory: each waiting command holds a boxed
/// closure, so 1,024 of them stay within a few hundred KiB. The channel never refuses work; the
/// scheduler's own limit, the layout's `max_queue_depth` per class, does
/// ([`Rejected::QueueFull`]).
pub const DEFAULT_COMMAND_CAPACITY: usize = 1024;

/// Announcements kept for slow subscribers of [`Driver::subscribe_activity`] and
/// [`Driver::subscribe_disk_events`]. A group cycle makes three activity events and takes at
/// least a spin-up (seconds on real disks), so 1,024 is minutes of history; a subscriber that
/// falls further behind gets `RecvError::Lagged` and resynchronises from [`Driver::state`].
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// Which scheduling policy the driver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PolicyChoice {
    /// Pelican's class scheduler (the layout's classes, reordering bound, rebuild share, queue
    /// limit).
    #[default]
    Pelican,
    /// Every group spun up once and kept up (Pelican's FP baseline): only on a rack whose hard
    /// budgets allow every disk up at once, or the audit refuses its spin-ups.
    FullyProvisioned,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverConfig {
    pub policy: PolicyChoice,
    /// See [`DEFAULT_COMMAND_CAPACITY`].
    pub command_capacity: usize,
    /// See [`DEFAULT_EVENT_CAPACITY`].
    pub event_capacity: usize,
    /// Spin a group down once it has had no work for this long, µs of the driver's clock
    /// (`None`: never; the FP policy never does). Default: spinwise-sched's
    /// `DEFAULT_IDLE_SPIN_DOWN_S`, as in the simulator. [`Driver::set_idle_spin_down_us`]
    /// changes it while the driver runs.
    pub idle_spin_down_us: Option<u64>,
}

impl Default for DriverConfig {
    fn default() -> DriverConfig {
        DriverConfig {
            policy: PolicyChoice::Pelican,
            command_capacity: DEFAULT_COMMAND_CAPACITY,
            event_capacity: DEFAULT_EVENT_CAPACITY,
            idle_spin_down_us: idle_spin_down_us(Some(DEFAULT_IDLE_SPIN_DOWN_S)),
        }
    }
}

/// Why a group spins down, as announced in [`GroupActivity::GoingDown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinDownCause {
    /// It had no work for the idle time.
    Idle,
    /// Another group needed its budget (a class switching groups, an expedited read).
    MakeRoom,
    /// The driver is shutting down.
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
            SpinDownCause::Idle => "idle for the idle spin-down time",
            SpinDownCause::MakeRoom => "making room for another group",
            SpinDownCause::Shutdown => "shutting down",
        })
    }
}

/// Why a driver cannot start.
#[derive(Debug, Error)]
pub enum DriverError {
    #[error("the scheduler refuses the layout: {0}")]
    Scheduler(#[from] SchedulerError),
    #[error("the budget audit refuses the rack: {0}")]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Layout(#[from] BindError),
    #[error("{found} disks given for a rack of {expected}")]
    DiskCount { expected: usize, found: usize },
    #[error("disk handle at position {position} has index {index}: give the disks in index order")]
    DiskOrder { position: usize, index: DiskIndex },
    #[error("the {what} capacity must be at least 1")]
    ZeroCapacity { what: &'static str },
    #[error("Driver::start must be called inside a tokio runtime")]
    NoRuntime,
}

/// Why a job was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Rejected {
    #[error("class {class} already queues {depth} jobs (the layout's max_queue_depth)")]
    QueueFull { class: u32, depth: u32 },
    #[error("group {group} is not in the layout ({groups} groups)")]
    UnknownGroup { group: GroupIndex, groups: u32 },
    #[error("the driver is shutting down")]
    ShuttingDown,
    #[error("the driver has stopped")]
    Stopped,
}

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

/// The driver's task has ended (after [`Driver::shutdown`], or a broken invariant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("the driver has stopped")]
pub struct Stopped;

/// [`Driver::mark_failed`] of a disk the rack does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("disk {disk} is not in the rack ({disks} disks)")]
pub struct UnknownDisk {
    pub disk: DiskIndex,
    pub disks: usize,
}

/// A job accepted but never finished: its work panicked, or the driver died first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("job {id} ended without a result (its work panicked or the driver stopped)")]
pub struct JobLost {
    pub id: u64,
}

/// The disks a job's work may use: its group's, in layout order, spun up and mounted except
/// those in `missing`.
#[derive(Clone)]
pub struct GroupDisks {
    group: GroupIndex,
    disks: Vec<Arc<dyn Disk>>,
    missing: BTreeSet<DiskIndex>,
}

impl GroupDisks {
    pub fn group(&self) -> GroupIndex {
        self.group
    }

    /// Every disk of the group, in layout order (missing ones included: they answer `Failed` or
    /// `NotReady`).
    pub fn disks(&self) -> &[Arc<dyn Disk>] {
        &self.disks
    }

    /// Disks not spun up for this job: failed, or withheld by the audit.
    pub fn missing(&self) -> &BTreeSet<DiskIndex> {
        &self.missing
    }

    /// The disks spun up and mounted for this job, in layout order.
    pub fn usable(&self) -> impl Iterator<Item = &Arc<dyn Disk>> {
        self.disks
            .iter()
            .filter(|disk| !self.missing.contains(&disk.index()))
    }
}

impl std::fmt::Debug for GroupDisks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let disks: Vec<DiskIndex> = self.disks.iter().map(|d| d.index()).collect();
        f.debug_struct("GroupDisks")
            .field("group", &self.group)
            .field("disks", &disks)
            .field("missing", &self.missing)
            .finish()
    }
}

type Work<T> = Box<dyn FnOnce(&GroupDisks) -> T + Send>;

/// Work for one group: what it needs (group, bytes for the reordering bound, client or rebuild)
/// and the closure to run on a blocking thread once the group is up.
pub struct Job<T> {
    pub group: GroupIndex,
    /// What the job moves, in bytes: its cost in the reordering queue.
    pub bytes: u64,
    pub kind: Kind,
    /// What it is for, as the spin-up it causes is explained ([`Job::for_purpose`]).
    pub purpose: Purpose,
    work: Work<T>,
}

impl<T: Send + 'static> Job<T> {
    pub fn new(
        group: GroupIndex,
        bytes: u64,
        kind: Kind,
        work: impl FnOnce(&GroupDisks) -> T + Send + 'static,
    ) -> Job<T> {
        let purpose = match kind {
            Kind::Client | Kind::Expedited => Purpose::Read,
            Kind::Rebuild => Purpose::Rebuild,
        };
        Job {
            group,
            bytes,
            kind,
            purpose,
            work: Box::new(work),
        }
    }

    /// The job, said to be for `purpose` (a new job is a read, or a rebuild if of that kind).
    pub fn for_purpose(mut self, purpose: Purpose) -> Job<T> {
        self.purpose = purpose;
        self
    }
}

/// Where a job's time went, in µs of the driver's clock (time to first byte is
/// `queued_us` plus the work's own time to its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTiming {
    /// When the driver accepted the job.
    pub submitted_us: u64,
    /// When its work started (its group was up).
    pub started_us: u64,
    /// When its work returned.
    pub finished_us: u64,
    /// `started_us − submitted_us`: everything it waited for.
    pub queued_us: u64,
    /// The part of `queued_us` spent waiting for its group's spin-up (0 if the group was up).
    pub spin_up_wait_us: u64,
    /// `finished_us − started_us`: the work.
    pub service_us: u64,
}

/// A finished job: the work's output and its timing.
#[derive(Debug)]
pub struct Done<T> {
    pub output: T,
    pub timing: JobTiming,
}

/// The caller's side of an accepted job. Dropping it does not cancel the job.
#[derive(Debug)]
pub struct JobHandle<T> {
    id: u64,
    receiver: oneshot::Receiver<Done<T>>,
}

impl<T> JobHandle<T> {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Waits for the work to have run.
    pub async fn wait(self) -> Result<Done<T>, JobLost> {
        self.receiver.await.map_err(|_| JobLost { id: self.id })
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
}

/// A snapshot of the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverState {
    pub now_us: u64,
    pub groups: Vec<GroupState>,
    pub queued_jobs: usize,
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

/// What [`Driver::shutdown`] leaves: everything resting, and the audit's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    pub jobs_served: u64,
    pub audit: AuditCounters,
}

/// A job's work made type-free: runs the work, and returns what delivers its output with timing.
type Finisher = Box<dyn FnOnce(JobTiming) + Send>;
type ErasedWork = Box<dyn FnOnce(&GroupDisks) -> Finisher + Send>;

enum Command {
    Submit {
        group: GroupIndex,
        bytes: u64,
        kind: Kind,
        purpose: Purpose,
        work: ErasedWork,
        reply: oneshot::Sender<Result<u64, Rejected>>,
    },
    State {
        reply: oneshot::Sender<DriverState>,
    },
    Shutdown {
        reply: oneshot::Sender<ShutdownReport>,
    },
    MarkFailed {
        disk: DiskIndex,
        reply: oneshot::Sender<Result<(), UnknownDisk>>,
    },
    SetIdleSpinDown {
        after_us: Option<u64>,
        reply: oneshot::Sender<()>,
    },
}

enum Completion {
    SpunUp {
        group: GroupIndex,
        disk: DiskIndex,
        result: Result<(), DiskError>,
    },
    SpunDown {
        group: GroupIndex,
        disk: DiskIndex,
        result: Result<(), DiskError>,
    },
    Served {
        id: u64,
    },
}

/// The handle callers hold; cheap to clone. The loop runs until [`Driver::shutdown`] or until
/// every handle is dropped (then it drains and spins down the same way).
#[derive(Clone)]
pub struct Driver {
    commands: mpsc::Sender<Command>,
    activity: broadcast::Sender<GroupActivity>,
    disk_events: broadcast::Sender<DiskEvent>,
    /// Subscribed before the loop started and handed to the first [`Driver::subscribe_disk_events`]
    /// caller: a refusal or failure in the loop's first moments (a policy that spins groups up
    /// at once) is not lost to a subscriber that attaches right after `start`.
    first_disk_events: Arc<Mutex<Option<broadcast::Receiver<DiskEvent>>>>,
    audit: Arc<Mutex<BudgetAudit>>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Driver {
    /// Checks that `layout` belongs to `rack` and `disks` are the rack's in index order, builds
    /// the policy and the audit, and spawns the loop on the current tokio runtime.
    pub fn start(
        rack: &Rack,
        layout: &Layout,
        disks: Vec<Arc<dyn Disk>>,
        clock: Arc<dyn Clock>,
        config: DriverConfig,
    ) -> Result<Driver, DriverError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| DriverError::NoRuntime)?;
        let groups = layout.group_disk_indices(rack)?;
        check_disks(rack, &disks)?;
        for (what, capacity) in [
            ("command", config.command_capacity),
            ("event", config.event_capacity),
        ] {
            if capacity == 0 {
                return Err(DriverError::ZeroCapacity { what });
            }
        }
        let mut policy: Box<dyn Policy + Send> = match config.policy {
            PolicyChoice::Pelican => Box::new(class_scheduler(rack, layout)?),
            PolicyChoice::FullyProvisioned => Box::new(FullyProvisioned::new(layout)),
        };
        policy.set_idle_spin_down_us(config.idle_spin_down_us);
        let idle_spin_down_us = config
            .idle_spin_down_us
            .filter(|_| config.policy == PolicyChoice::Pelican);
        let audit = Arc::new(Mutex::new(BudgetAudit::new(rack)?));
        let (commands, command_receiver) = mpsc::channel(config.command_capacity);
        // Each disk has at most one power command in flight and each group at most the layout's
        // `concurrent_requests_per_class` jobs: the completion channel never makes a finished
        // task wait.
        let jobs_per_group = layout.scheduler.concurrent_requests_per_class.max(1) as usize;
        let (completions, completion_receiver) =
            mpsc::channel(disks.len() + groups.len() * jobs_per_group + 1);
        let (activity, _) = broadcast::channel(config.event_capacity);
        let (disk_events, first_disk_events) = broadcast::channel(config.event_capacity);
        let group_count = groups.len();
        let engine = Engine {
            policy,
            groups,
            disks,
            audit: audit.clone(),
            now_us: clock.now_us(),
            clock,
            phase: vec![Phase::Resting; group_count],
            missing: vec![BTreeSet::new(); group_count],
            last_spin_up_us: vec![None; group_count],
            failed: BTreeSet::new(),
            queued: BTreeMap::new(),
            queued_per_group: vec![0; group_count],
            serving: BTreeMap::new(),
            next_id: 0,
            jobs_served: 0,
            completions,
            activity: activity.clone(),
            disk_events: disk_events.clone(),
            shutting_down: false,
            shutdown_waiters: Vec::new(),
            idle_spin_down_us,
        };
        runtime.spawn(engine.run(command_receiver, completion_receiver));
        Ok(Driver {
            commands,
            activity,
            disk_events,
            first_disk_events: Arc::new(Mutex::new(Some(first_disk_events))),
            audit,
        })
    }

    /// Queues `job` with the scheduler; waits only while the command channel is full. The
    /// handle yields the work's output once the group was up and the work ran.
    pub async fn submit<T: Send + 'static>(&self, job: Job<T>) -> Result<JobHandle<T>, Rejected> {
        let (sender, receiver) = oneshot::channel();
        let user_work = job.work;
        let work: ErasedWork = Box::new(move |disks: &GroupDisks| {
            let output = user_work(disks);
            let finisher: Finisher = Box::new(move |timing| {
                // The caller may have dropped its handle: the work still ran, nothing to deliver.
                let _ = sender.send(Done { output, timing });
            });
            finisher
        });
        let (reply, answer) = oneshot::channel();
        let command = Command::Submit {
            group: job.group,
            bytes: job.bytes,
            kind: job.kind,
            purpose: job.purpose,
            work,
            reply,
        };
        self.commands
            .send(command)
            .await
            .map_err(|_| Rejected::Stopped)?;
        let id = answer.await.map_err(|_| Rejected::Stopped)??;
        Ok(JobHandle { id, receiver })
    }

    /// A snapshot: per group phase, queued jobs and active disks; failed disks; the audit.
    pub async fn state(&self) -> Result<DriverState, Stopped> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::State { reply })
            .await
            .map_err(|_| Stopped)?;
        answer.await.map_err(|_| Stopped)
    }

    /// The audit's counters now (also after the driver stopped).
    pub fn audit_counters(&self) -> AuditCounters {
        lock(&self.audit).counters().clone()
    }

    /// Group power cycles from now on.
    pub fn subscribe_activity(&self) -> broadcast::Receiver<GroupActivity> {
        self.activity.subscribe()
    }

    /// Disk failures and audit refusals from now on; the first caller gets them from the
    /// driver's start (at most `event_capacity` of them are kept until then).
    pub fn subscribe_disk_events(&self) -> broadcast::Receiver<DiskEvent> {
        let first = self
            .first_disk_events
            .lock()
            .expect("the first-subscriber slot is never poisoned")
            .take();
        first.unwrap_or_else(|| self.disk_events.subscribe())
    }

    /// Marks `disk` failed (operator action, or the store found it unreadable): the disk is told
    /// ([`Disk::mark_failed`]) and never commanded again; jobs see it in
    /// [`GroupDisks::missing`] from its group's next spin-up on. The outer error: the driver has
    /// stopped; the inner one: no such disk.
    pub async fn mark_failed(&self, disk: DiskIndex) -> Result<Result<(), UnknownDisk>, Stopped> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::MarkFailed { disk, reply })
            .await
            .map_err(|_| Stopped)?;
        answer.await.map_err(|_| Stopped)
    }

    /// Spins a group down once it has had no work for `after_us` from now on (`None`: never;
    /// groups idle now count from when they last had work). The FP policy ignores it.
    pub async fn set_idle_spin_down_us(&self, after_us: Option<u64>) -> Result<(), Stopped> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::SetIdleSpinDown { after_us, reply })
            .await
            .map_err(|_| Stopped)?;
        answer.await.map_err(|_| Stopped)
    }

    /// Refuses new jobs, serves every accepted one, spins every group down, and stops the loop.
    /// Every caller of `shutdown` gets the report; after it, calls answer [`Stopped`].
    pub async fn shutdown(&self) -> Result<ShutdownReport, Stopped> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Shutdown { reply })
            .await
            .map_err(|_| Stopped)?;
        answer.await.map_err(|_| Stopped)
    }
}

/// Pelican's scheduler for `layout`; with staggered switches in the layout, told which classes
/// send through the same server's NIC, as the simulator tells it when it models a network (the
/// store's reads always cross one). With staggering off links change nothing, so none are named.
fn class_scheduler(rack: &Rack, layout: &Layout) -> Result<ClassScheduler, DriverError> {
    let mut scheduler = ClassScheduler::new(layout)?;
    if layout.scheduler.stagger_switches_min_queue.is_some() {
        scheduler.share_links(&layout.group_read_servers(rack)?);
    }
    Ok(scheduler)
}

fn check_disks(rack: &Rack, disks: &[Arc<dyn Disk>]) -> Result<(), DriverError> {
    if disks.len() != rack.disk_count() {
        return Err(DriverError::DiskCount {
            expected: rack.disk_count(),
            found: disks.len(),
        });
    }
    match disks
        .iter()
        .enumerate()
        .find(|(position, disk)| disk.index() as usize != *position)
    {
        Some((position, disk)) => Err(DriverError::DiskOrder {
            position,
            index: disk.index(),
        }),
        None => Ok(()),
    }
}

fn lock(audit: &Mutex<BudgetAudit>) -> MutexGuard<'_, BudgetAudit> {
    // A poisoned lock means an audit invariant assert fired: that is fatal by design.
    audit.lock().expect("the audit's invariants held")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Resting,
    SpinningUp {
        started_us: u64,
        outstanding: usize,
    },
    Active,
    /// `by_policy`: the policy asked (tell it `spun_down`); else the final spin-down of shutdown.
    SpinningDown {
        outstanding: usize,
        by_policy: bool,
    },
}

/// A job accepted and not yet started.
struct Queued {
    submitted_us: u64,
    group: GroupIndex,
    purpose: Purpose,
    work: ErasedWork,
}

/// The loop's state; lives in the driver's task only.
struct Engine {
    policy: Box<dyn Policy + Send>,
    groups: Vec<Vec<DiskIndex>>,
    disks: Vec<Arc<dyn Disk>>,
    audit: Arc<Mutex<BudgetAudit>>,
    clock: Arc<dyn Clock>,
    /// The largest time read so far: what the policy is told.
    now_us: u64,
    phase: Vec<Phase>,
    missing: Vec<BTreeSet<DiskIndex>>,
    /// Each group's last spin-up: (started, finished).
    last_spin_up_us: Vec<Option<(u64, u64)>>,
    failed: BTreeSet<DiskIndex>,
    queued: BTreeMap<u64, Queued>,
    queued_per_group: Vec<usize>,
    serving: BTreeMap<u64, Request>,
    next_id: u64,
    jobs_served: u64,
    completions: mpsc::Sender<Completion>,
    activity: broadcast::Sender<GroupActivity>,
    disk_events: broadcast::Sender<DiskEvent>,
    shutting_down: bool,
    shutdown_waiters: Vec<oneshot::Sender<ShutdownReport>>,
    /// What the policy was told (reported in snapshots).
    idle_spin_down_us: Option<u64>,
}

impl Engine {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut completions: mpsc::Receiver<Completion>,
    ) {
        let mut commands_open = true;
        loop {
            self.tick();
            self.drive();
            if self.finished() {
                break;
            }
            // On the driver's clock, so a test's manual clock wakes the engine by advancing.
            let (wake_us, clock) = (self.policy.next_timeout_us(), self.clock.clone());
            let timeout = async move {
                match wake_us {
                    Some(at_us) => clock.sleep_until_us(at_us).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                command = commands.recv(), if commands_open => match command {
                    Some(command) => {
                        self.tick();
                        self.handle_command(command);
                    }
                    // Every handle is gone: drain and spin down as for a shutdown.
                    None => {
                        commands_open = false;
                        self.shutting_down = true;
                    }
                },
                Some(completion) = completions.recv() => {
                    self.tick();
                    self.handle_completion(completion);
                }
                () = timeout => {}
            }
        }
        let report = ShutdownReport {
            jobs_served: self.jobs_served,
            audit: lock(&self.audit).counters().clone(),
        };
        for waiter in self.shutdown_waiters.drain(..) {
            let _ = waiter.send(report.clone());
        }
    }

    fn tick(&mut self) {
        self.now_us = self.now_us.max(self.clock.now_us());
    }

    /// Performs the policy's actions until it has none; during shutdown, once everything accepted
    /// is served, spins the groups still up down.
    fn drive(&mut self) {
        while let Some(action) = self.policy.poll_action(self.now_us) {
            match action {
                Action::SpinUp(group) => self.spin_up(group),
                Action::SpinDown(group) => {
                    let cause = match self.policy.spin_down_reason(group) {
                        SpinDownReason::Idle => SpinDownCause::Idle,
                        SpinDownReason::MakeRoom => SpinDownCause::MakeRoom,
                    };
                    self.announce(GroupActivity::GoingDown {
                        group,
                        at_us: self.now_us,
                        cause,
                    });
                    self.spin_down(group, true);
                }
                Action::Serve(request) => self.serve(request),
            }
        }
        if self.shutting_down && self.drained() {
            for group in 0..self.groups.len() as GroupIndex {
                if self.phase[group as usize] == Phase::Active {
                    self.announce(GroupActivity::GoingDown {
                        group,
                        at_us: self.now_us,
                        cause: SpinDownCause::Shutdown,
                    });
                    self.spin_down(group, false);
                }
            }
        }
    }

    /// Nothing queued, served or changing state.
    fn drained(&self) -> bool {
        self.queued.is_empty()
            && self.serving.is_empty()
            && self.policy.is_idle()
            && self
                .phase
                .iter()
                .all(|p| matches!(p, Phase::Resting | Phase::Active))
    }

    fn finished(&self) -> bool {
        self.shutting_down && self.drained() && self.phase.iter().all(|p| *p == Phase::Resting)
    }

    fn handle_command(&mut self, command: Command) {
        match command {
            Command::Submit {
                group,
                bytes,
                kind,
                purpose,
                work,
                reply,
            } => {
                let answer = self.accept(
                    Request {
                        id: 0,
                        group,
                        bytes,
                        kind,
                    },
                    purpose,
                    work,
                );
                let _ = reply.send(answer);
            }
            Command::State { reply } => {
                let _ = reply.send(self.snapshot());
            }
            Command::Shutdown { reply } => {
                self.shutting_down = true;
                self.shutdown_waiters.push(reply);
            }
            Command::MarkFailed { disk, reply } => {
                let _ = reply.send(self.mark_failed(disk));
            }
            Command::SetIdleSpinDown { after_us, reply } => {
                self.policy.set_idle_spin_down_us(after_us);
                if self.idle_spin_down_us.is_some() || after_us.is_some() {
                    tracing::info!(
                        idle_spin_down_s = after_us.map(|us| us as f64 / 1e6),
                        "idle spin-down time set"
                    );
                }
                self.idle_spin_down_us = after_us.filter(|us| *us > 0);
                let _ = reply.send(());
            }
        }
    }

    fn mark_failed(&mut self, disk: DiskIndex) -> Result<(), UnknownDisk> {
        let handle = self.disks.get(disk as usize).ok_or(UnknownDisk {
            disk,
            disks: self.disks.len(),
        })?;
        // A disk call may block: off the loop, like every other one. Nothing waits for it: the
        // loop never commands a disk in `failed` again.
        let handle = handle.clone();
        tokio::task::spawn_blocking(move || handle.mark_failed());
        if self.failed.insert(disk) {
            tracing::warn!(disk, "disk marked failed");
        }
        Ok(())
    }

    /// Hands `request` (its id assigned here) to the policy and queues its work.
    fn accept(
        &mut self,
        request: Request,
        purpose: Purpose,
        work: ErasedWork,
    ) -> Result<u64, Rejected> {
        if self.shutting_down {
            return Err(Rejected::ShuttingDown);
        }
        let request = Request {
            id: self.next_id,
            ..request
        };
        self.policy.submit(self.now_us, request)?;
        self.next_id += 1;
        self.queued_per_group[request.group as usize] += 1;
        self.queued.insert(
            request.id,
            Queued {
                submitted_us: self.now_us,
                group: request.group,
                purpose,
                work,
            },
        );
        Ok(request.id)
    }

    /// What is queued for `group` now, by purpose.
    fn waiting_work(&self, group: GroupIndex) -> WaitingWork {
        let mut work = WaitingWork::default();
        if self.queued_per_group[group as usize] == 0 {
            return work;
        }
        for queued in self.queued.values().filter(|q| q.group == group) {
            work.add(
                queued.purpose,
                self.now_us.saturating_sub(queued.submitted_us),
            );
        }
        work
    }

    fn handle_completion(&mut self, completion: Completion) {
        match completion {
            Completion::SpunUp {
                group,
                disk,
                result,
            } => self.disk_spun_up(group, disk, result),
            Completion::SpunDown {
                group,
                disk,
                result,
            } => self.disk_spun_down(group, disk, result),
            Completion::Served { id } => {
                let request = self
                    .serving
                    .remove(&id)
                    .expect("a served job was being served");
                self.policy.served(self.now_us, &request);
                self.jobs_served += 1;
            }
        }
    }

    /// Books each disk spinning up, then commands it; disks the audit refuses or that failed
    /// before stay out of this spin-up.
    fn spin_up(&mut self, group: GroupIndex) {
        let index = group as usize;
        assert_eq!(self.phase[index], Phase::Resting, "spin-up of a busy group");
        let mut outstanding = 0;
        for position in 0..self.groups[index].len() {
            let disk = self.groups[index][position];
            if let Err(refusal) = lock(&self.audit).change(disk, DiskPower::SpinningUp) {
                self.missing[index].insert(disk);
                self.report(DiskEvent::Withheld {
                    disk,
                    group,
                    at_us: self.now_us,
                    refusal,
                });
                continue;
            }
            if self.failed.contains(&disk) {
                // Charged with its group (safe side), never commanded.
                self.missing[index].insert(disk);
                continue;
            }
            outstanding += 1;
            self.command(group, disk, DiskCommand::SpinUp);
        }
        self.phase[index] = Phase::SpinningUp {
            started_us: self.now_us,
            outstanding,
        };
        self.announce(GroupActivity::SpinningUp {
            group,
            at_us: self.now_us,
            work: self.waiting_work(group),
        });
        if outstanding == 0 {
            self.group_up(group);
        }
    }

    fn disk_spun_up(&mut self, group: GroupIndex, disk: DiskIndex, result: Result<(), DiskError>) {
        match result {
            // Active never costs more than spinning up (checked when the audit was built), so
            // a refusal here is the audit's own invariant failing; it logged and counted it, and
            // the disk stays charged as spinning up, the dearer state.
            Ok(()) => {
                let _ = lock(&self.audit).change(disk, DiskPower::Active);
            }
            Err(error) => {
                tracing::warn!(disk, group, %error, "disk failed to spin up; the group comes up without it");
                self.failed.insert(disk);
                self.missing[group as usize].insert(disk);
                self.report(DiskEvent::SpinUpFailed {
                    disk,
                    group,
                    at_us: self.now_us,
                    error: error.to_string(),
                });
            }
        }
        let Phase::SpinningUp {
            started_us,
            outstanding,
        } = self.phase[group as usize]
        else {
            panic!("a disk spun up in group {group}, which is not spinning up");
        };
        self.phase[group as usize] = Phase::SpinningUp {
            started_us,
            outstanding: outstanding - 1,
        };
        if outstanding == 1 {
            self.group_up(group);
        }
    }

    fn group_up(&mut self, group: GroupIndex) {
        let Phase::SpinningUp { started_us, .. } = self.phase[group as usize] else {
            panic!("group {group} came up without spinning up");
        };
        self.phase[group as usize] = Phase::Active;
        self.last_spin_up_us[group as usize] = Some((started_us, self.now_us));
        self.policy.spun_up(self.now_us, group);
        self.announce(GroupActivity::Up {
            group,
            at_us: self.now_us,
            took_us: self.now_us.saturating_sub(started_us),
            work: self.waiting_work(group),
        });
    }

    /// Commands every disk that was spun up to spin down; failed and withheld disks need no
    /// command and are booked resting at once.
    fn spin_down(&mut self, group: GroupIndex, by_policy: bool) {
        let index = group as usize;
        assert_eq!(
            self.phase[index],
            Phase::Active,
            "spin-down of a group not up"
        );
        let mut outstanding = 0;
        for position in 0..self.groups[index].len() {
            let disk = self.groups[index][position];
            let power = lock(&self.audit).power(disk).expect("a rack disk");
            if power == DiskPower::Resting {
                continue;
            }
            if self.failed.contains(&disk) {
                self.book_resting(disk);
                continue;
            }
            outstanding += 1;
            self.command(group, disk, DiskCommand::SpinDown);
        }
        self.phase[index] = Phase::SpinningDown {
            outstanding,
            by_policy,
        };
        if outstanding == 0 {
            self.group_down(group);
        }
    }

    fn disk_spun_down(
        &mut self,
        group: GroupIndex,
        disk: DiskIndex,
        result: Result<(), DiskError>,
    ) {
        if let Err(error) = result {
            // Its state is unknown; like the simulator's failed disk it follows its group's
            // books from now on (docs/driver.md).
            tracing::warn!(disk, group, %error, "disk failed to spin down; marked failed");
            self.failed.insert(disk);
            self.report(DiskEvent::SpinDownFailed {
                disk,
                group,
                at_us: self.now_us,
                error: error.to_string(),
            });
        }
        self.book_resting(disk);
        let Phase::SpinningDown {
            outstanding,
            by_policy,
        } = self.phase[group as usize]
        else {
            panic!("a disk spun down in group {group}, which is not spinning down");
        };
        self.phase[group as usize] = Phase::SpinningDown {
            outstanding: outstanding - 1,
            by_policy,
        };
        if outstanding == 1 {
            self.group_down(group);
        }
    }

    fn book_resting(&mut self, disk: DiskIndex) {
        lock(&self.audit)
            .change(disk, DiskPower::Resting)
            .expect("resting is the cheapest state and follows every other");
    }

    fn group_down(&mut self, group: GroupIndex) {
        let Phase::SpinningDown { by_policy, .. } = self.phase[group as usize] else {
            panic!("group {group} went down without spinning down");
        };
        self.phase[group as usize] = Phase::Resting;
        self.missing[group as usize].clear();
        if by_policy {
            self.policy.spun_down(self.now_us, group);
        }
        self.announce(GroupActivity::Down {
            group,
            at_us: self.now_us,
        });
    }

    /// Runs a power command on a blocking thread; a failed spin-up marks the disk failed there.
    fn command(&self, group: GroupIndex, disk: DiskIndex, command: DiskCommand) {
        let handle = self.disks[disk as usize].clone();
        let completions = self.completions.clone();
        tokio::spawn(async move {
            let joined = tokio::task::spawn_blocking(move || match command {
                DiskCommand::SpinUp => {
                    let result = handle.spin_up();
                    if result.is_err() {
                        handle.mark_failed();
                    }
                    result
                }
                DiskCommand::SpinDown => handle.spin_down(),
            })
            .await;
            let result = joined.unwrap_or_else(|join_error| {
                Err(DiskError::Io {
                    disk,
                    context: format!("{command:?} panicked"),
                    source: std::io::Error::other(join_error.to_string()),
                })
            });
            let completion = match command {
                DiskCommand::SpinUp => Completion::SpunUp {
                    group,
                    disk,
                    result,
                },
                DiskCommand::SpinDown => Completion::SpunDown {
                    group,
                    disk,
                    result,
                },
            };
            // The loop outlives every command it started (it waits for their completions).
            let _ = completions.send(completion).await;
        });
    }

    fn serve(&mut self, request: Request) {
        let queued = self
            .queued
            .remove(&request.id)
            .expect("the policy serves only submitted requests");
        let index = request.group as usize;
        assert_eq!(self.phase[index], Phase::Active, "served by a group not up");
        self.queued_per_group[index] -= 1;
        let disks = GroupDisks {
            group: request.group,
            disks: self.groups[index]
                .iter()
                .map(|d| self.disks[*d as usize].clone())
                .collect(),
            missing: self.missing[index].clone(),
        };
        let submitted_us = queued.submitted_us;
        let started_us = self.now_us;
        let spin_up_wait_us = self.last_spin_up_us[index]
            .filter(|(_, up_us)| *up_us > submitted_us)
            .map_or(0, |(from_us, up_us)| up_us - from_us.max(submitted_us));
        self.serving.insert(request.id, request);
        let clock = self.clock.clone();
        let completions = self.completions.clone();
        let id = request.id;
        tokio::spawn(async move {
            let joined = tokio::task::spawn_blocking(move || {
                let finish = (queued.work)(&disks);
                let finished_us = clock.now_us().max(started_us);
                finish(JobTiming {
                    submitted_us,
                    started_us,
                    finished_us,
                    queued_us: started_us - submitted_us,
                    spin_up_wait_us,
                    service_us: finished_us - started_us,
                });
            })
            .await;
            if let Err(error) = joined {
                tracing::error!(id, %error, "a job's work panicked; its caller gets JobLost");
            }
            let _ = completions.send(Completion::Served { id }).await;
        });
    }

    fn announce(&self, activity: GroupActivity) {
        // No subscriber is fine: nobody piggybacks.
        let _ = self.activity.send(activity);
    }

    fn report(&self, event: DiskEvent) {
        let _ = self.disk_events.send(event);
    }

    fn snapshot(&self) -> DriverState {
        let audit = lock(&self.audit);
        let serving_groups: BTreeSet<GroupIndex> = self.serving.values().map(|r| r.group).collect();
        let groups = (0..self.groups.len())
            .map(|index| GroupState {
                group: index as GroupIndex,
                phase: match self.phase[index] {
                    Phase::Resting => GroupPhase::Resting,
                    Phase::SpinningUp { .. } => GroupPhase::SpinningUp,
                    Phase::Active => GroupPhase::Active,
                    Phase::SpinningDown { .. } => GroupPhase::SpinningDown,
                },
                queued_jobs: self.queued_per_group[index],
                serving: serving_groups.contains(&(index as GroupIndex)),
                active_disks: self.groups[index]
                    .iter()
                    .filter(|d| audit.power(**d) == Some(DiskPower::Active))
                    .count(),
                missing_disks: self.missing[index].iter().copied().collect(),
            })
            .collect();
        DriverState {
            now_us: self.now_us,
            groups,
            queued_jobs: self.queued.len(),
            serving_jobs: self.serving.len(),
            jobs_served: self.jobs_served,
            failed_disks: self.failed.iter().copied().collect(),
            audit: audit.counters().clone(),
            shutting_down: self.shutting_down,
            idle_spin_down_us: self.idle_spin_down_us,
            idle_spin_downs: self.policy.idle_spin_downs(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DiskCommand {
    SpinUp,
    SpinDown,
}
