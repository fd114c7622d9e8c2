//! The driver: the store's shell around the rack engine (spinwise-engine's [`Engine`], the same
//! engine the simulator drives), run with a real [`Clock`] against real disks ([`Disk`]). The
//! engine decides everything between "work arrives" and "disk commands" — group phases, the
//! scheduling policy (Pelican's, Flamingo's or FP: [`PolicyChoice`]), the budget audit every
//! power-state change passes, the job books, idle spin-down, failed disks, the shutdown drain —
//! and this module only carries its decisions out. docs/driver.md describes it.
//!
//! One tokio task owns the engine, the disks and the jobs' work. It waits on a bounded command
//! channel (submissions, state queries, failed disks, shutdown), a completion channel (disk
//! commands and jobs finished on blocking threads) and the engine's next wake-up, feeds the
//! engine what happened with the clock's time, and carries out every [`Output`] it answers:
//! - `SpinUp { disks }`: each disk's `spin_up` runs on a blocking thread (the group's disks
//!   concurrently); each answer goes back to the engine, which brings the group up (announcing
//!   [`GroupActivity::Up`]) when the last has answered. A disk whose spin-up fails is told it
//!   failed ([`Disk::mark_failed`]) and the engine leaves it out ([`DiskEvent::SpinUpFailed`]);
//!   a disk the audit refused was never commanded ([`DiskEvent::Withheld`], logged as an error).
//!   The work sees the group's missing disks in [`GroupDisks::missing`] (the store reconstructs
//!   from any k).
//! - `SpinDown { disks }`: every listed disk's `spin_down` on a blocking thread, each answer
//!   back to the engine.
//! - `Serve`: the job's work runs on a blocking thread with the group's [`GroupDisks`]; its
//!   output and [`JobTiming`] go to the caller's [`JobHandle`], then the engine hears `served`.
//! - `Activity` and `Disk`: broadcast to subscribers (disk events logged first).
//! - `Withdrawn`: a deferred job the shutdown handed back; its work is dropped, so its caller's
//!   handle answers [`JobLost`].
//!
//! [`Driver::submit_deferred`] hands a job to the engine's deferral (`Engine::defer`): it waits
//! in the engine for its group's spin-up for other work or its start-by time, which the engine
//! names in its next wake-up, so the loop sleeps until it on the clock like any other wake.
//!
//! Invariants: the engine's (it asserts them); the shell's own: every accepted job's work is
//! kept until the engine serves or withdraws it, and every accepted job is served before
//! [`Driver::shutdown`] returns (except deferred jobs not yet released: withdrawn at once),
//! which then spins every group down; the loop outlives every
//! command and job it started (it waits for their completions).

use crate::clock::Clock;
use spinwise_disk::{Disk, DiskError};
pub use spinwise_engine::audit::{AuditCounters, AuditRefusal};
pub use spinwise_engine::{
    DiskEvent, EngineState as DriverState, GroupActivity, GroupPhase, GroupState, PolicyChoice,
    Purpose, SpinDownCause, UnknownDisk, WaitingWork,
};
use spinwise_engine::{Engine, EngineError, Output, build_policy};
use spinwise_model::{BindError, DiskIndex, GroupIndex, Layout, Rack};
use spinwise_sched::idle::{DEFAULT_IDLE_SPIN_DOWN_S, idle_spin_down_us};
/// A job's kind, re-exported so callers of [`Job::new`] need not depend on the scheduler.
pub use spinwise_sched::scheduler::Kind;
use spinwise_sched::scheduler::Request;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
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

/// Why a driver cannot start.
#[derive(Debug, Error)]
pub enum DriverError {
    #[error(transparent)]
    Engine(#[from] EngineError),
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
    #[error("{held} deferred jobs are held already (the engine's limit)")]
    DeferralFull { held: usize },
    #[error("the driver has stopped")]
    Stopped,
}

impl From<spinwise_engine::Rejected> for Rejected {
    fn from(rejected: spinwise_engine::Rejected) -> Rejected {
        match rejected {
            spinwise_engine::Rejected::QueueFull { class, depth } => {
                Rejected::QueueFull { class, depth }
            }
            spinwise_engine::Rejected::UnknownGroup { group, groups } => {
                Rejected::UnknownGroup { group, groups }
            }
            spinwise_engine::Rejected::ShuttingDown => Rejected::ShuttingDown,
            spinwise_engine::Rejected::DeferralFull { held } => Rejected::DeferralFull { held },
        }
    }
}

/// The driver's task has ended (after [`Driver::shutdown`], or a broken invariant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("the driver has stopped")]
pub struct Stopped;

/// A job accepted but never finished: its work panicked, the driver died first, or it was
/// deferred and withdrawn by the shutdown before its release.
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
        /// Deferred until this time (µs of the driver's clock) unless its group spins up for
        /// other work first; `None`: submitted at once.
        start_by_us: Option<u64>,
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
        disk: DiskIndex,
        result: Result<(), DiskError>,
    },
    SpunDown {
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
    /// The engine's audit counters, as of its last event (kept after the loop ended).
    audit: Arc<Mutex<AuditCounters>>,
    /// The loop's clock: deferred jobs' start-by times are on it ([`Driver::now_us`]).
    clock: Arc<dyn Clock>,
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
        let policy = build_policy(rack, layout, config.policy)?;
        let group_count = groups.len();
        let mut engine = Engine::new(rack, groups, policy)?;
        engine.set_idle_spin_down_us(
            config
                .idle_spin_down_us
                .filter(|_| config.policy.spins_idle_groups_down()),
        );
        let audit = Arc::new(Mutex::new(engine.audit().counters().clone()));
        let driver_clock = clock.clone();
        let (commands, command_receiver) = mpsc::channel(config.command_capacity);
        // Each disk has at most one power command in flight and each group at most the layout's
        // `concurrent_requests_per_class` jobs: the completion channel never makes a finished
        // task wait.
        let jobs_per_group = layout.scheduler.concurrent_requests_per_class.max(1) as usize;
        let (completions, completion_receiver) =
            mpsc::channel(disks.len() + group_count * jobs_per_group + 1);
        let (activity, _) = broadcast::channel(config.event_capacity);
        let (disk_events, first_disk_events) = broadcast::channel(config.event_capacity);
        let shell = Shell {
            engine,
            disks,
            audit: audit.clone(),
            clock,
            work: BTreeMap::new(),
            next_id: 0,
            completions,
            activity: activity.clone(),
            disk_events: disk_events.clone(),
            shutdown_waiters: Vec::new(),
        };
        runtime.spawn(shell.run(command_receiver, completion_receiver));
        Ok(Driver {
            commands,
            activity,
            disk_events,
            first_disk_events: Arc::new(Mutex::new(Some(first_disk_events))),
            audit,
            clock: driver_clock,
        })
    }

    /// Queues `job` with the scheduler; waits only while the command channel is full. The
    /// handle yields the work's output once the group was up and the work ran.
    pub async fn submit<T: Send + 'static>(&self, job: Job<T>) -> Result<JobHandle<T>, Rejected> {
        self.send_job(job, None).await
    }

    /// Defers `job` in the engine: it is queued when its group spins up for other work (it
    /// rides that spin-up) or at `start_by_us` on the driver's clock, whichever comes first (at
    /// once if the group is up or the time has come); then as [`Driver::submit`]. A deferred job
    /// a full queue refuses is kept and queued as places free, so it is not refused for that;
    /// [`Rejected::DeferralFull`] when the engine holds its limit of deferred jobs. A shutdown
    /// withdraws it if not yet queued (the handle answers [`JobLost`]).
    pub async fn submit_deferred<T: Send + 'static>(
        &self,
        job: Job<T>,
        start_by_us: u64,
    ) -> Result<JobHandle<T>, Rejected> {
        self.send_job(job, Some(start_by_us)).await
    }

    async fn send_job<T: Send + 'static>(
        &self,
        job: Job<T>,
        start_by_us: Option<u64>,
    ) -> Result<JobHandle<T>, Rejected> {
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
            start_by_us,
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

    /// The driver's clock now, µs: what [`Driver::submit_deferred`]'s start-by is measured on.
    pub fn now_us(&self) -> u64 {
        self.clock.now_us()
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
        lock(&self.audit).clone()
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

    /// Refuses new jobs, serves every accepted one (withdrawing deferred jobs not yet queued:
    /// [`Driver::submit_deferred`]), spins every group down, and stops the loop.
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

fn lock(audit: &Mutex<AuditCounters>) -> std::sync::MutexGuard<'_, AuditCounters> {
    // Only ever held to copy counters: a poisoned lock is a panic while copying, fatal by design.
    audit
        .lock()
        .expect("the audit counters' lock is never poisoned")
}

/// The loop's state; lives in the driver's task only. It feeds the engine what happened (with
/// the clock's time) and carries out what the engine answers: disk commands and jobs on
/// blocking threads, announcements to the subscribers.
struct Shell {
    engine: Engine,
    disks: Vec<Arc<dyn Disk>>,
    audit: Arc<Mutex<AuditCounters>>,
    clock: Arc<dyn Clock>,
    /// The work of each accepted job not yet started, by id.
    work: BTreeMap<u64, ErasedWork>,
    next_id: u64,
    completions: mpsc::Sender<Completion>,
    activity: broadcast::Sender<GroupActivity>,
    disk_events: broadcast::Sender<DiskEvent>,
    shutdown_waiters: Vec<oneshot::Sender<ShutdownReport>>,
}

impl Shell {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut completions: mpsc::Receiver<Completion>,
    ) {
        let mut commands_open = true;
        loop {
            self.carry_out();
            if self.engine.finished() {
                break;
            }
            // On the driver's clock, so a test's manual clock wakes the engine by advancing.
            let (wake_us, clock) = (self.engine.next_wake_us(), self.clock.clone());
            let timeout = async move {
                match wake_us {
                    Some(at_us) => clock.sleep_until_us(at_us).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                command = commands.recv(), if commands_open => match command {
                    Some(command) => self.handle_command(command),
                    // Every handle is gone: drain and spin down as for a shutdown.
                    None => {
                        commands_open = false;
                        self.engine.shutdown(self.clock.now_us());
                    }
                },
                Some(completion) = completions.recv() => self.handle_completion(completion),
                () = timeout => {}
            }
        }
        let report = ShutdownReport {
            jobs_served: self.engine.jobs_served(),
            audit: self.engine.audit().counters().clone(),
        };
        for waiter in self.shutdown_waiters.drain(..) {
            let _ = waiter.send(report.clone());
        }
    }

    /// Carries out the engine's outputs until it has none, then publishes the audit's counters.
    fn carry_out(&mut self) {
        while let Some(output) = self.engine.next_output(self.clock.now_us()) {
            match output {
                Output::SpinUp { disks, .. } => {
                    // The books a disk's spin-up was granted on are published before the disk
                    // is commanded: whoever reads the counters while it spins up sees it booked.
                    self.publish_audit();
                    for disk in disks {
                        self.command(disk, DiskCommand::SpinUp);
                    }
                }
                Output::SpinDown { disks, .. } => {
                    for disk in disks {
                        self.command(disk, DiskCommand::SpinDown);
                    }
                }
                Output::Serve {
                    request,
                    submitted_us,
                    spin_up_wait_us,
                    ..
                } => self.serve(request, submitted_us, spin_up_wait_us),
                // No subscriber is fine: nobody piggybacks.
                Output::Activity(activity) => {
                    let _ = self.activity.send(activity);
                }
                Output::Disk(event) => {
                    log_disk_event(&event);
                    let _ = self.disk_events.send(event);
                }
                // Dropping the work drops its result sender: the caller gets JobLost.
                Output::Withdrawn { request, .. } => {
                    tracing::info!(
                        id = request.id,
                        group = request.group,
                        "deferred job withdrawn by the shutdown"
                    );
                    self.work.remove(&request.id);
                }
            }
        }
        self.publish_audit();
    }

    fn publish_audit(&self) {
        *lock(&self.audit) = self.engine.audit().counters().clone();
    }

    fn handle_command(&mut self, command: Command) {
        let now_us = self.clock.now_us();
        match command {
            Command::Submit {
                group,
                bytes,
                kind,
                purpose,
                start_by_us,
                work,
                reply,
            } => {
                let request = Request {
                    id: self.next_id,
                    group,
                    bytes,
                    kind,
                };
                let answer = match start_by_us {
                    Some(start_by_us) => self.engine.defer(now_us, request, purpose, start_by_us),
                    None => self.engine.submit(now_us, request, purpose),
                };
                if answer.is_ok() {
                    self.next_id += 1;
                    self.work.insert(request.id, work);
                }
                let _ = reply.send(answer.map(|()| request.id).map_err(Rejected::from));
            }
            Command::State { reply } => {
                let _ = reply.send(self.engine.state());
            }
            Command::Shutdown { reply } => {
                self.engine.shutdown(now_us);
                self.shutdown_waiters.push(reply);
            }
            Command::MarkFailed { disk, reply } => {
                let _ = reply.send(self.mark_failed(now_us, disk));
            }
            Command::SetIdleSpinDown { after_us, reply } => {
                if self.engine.state().idle_spin_down_us.is_some() || after_us.is_some() {
                    tracing::info!(
                        idle_spin_down_s = after_us.map(|us| us as f64 / 1e6),
                        "idle spin-down time set"
                    );
                }
                self.engine.set_idle_spin_down_us(after_us);
                let _ = reply.send(());
            }
        }
    }

    fn mark_failed(&mut self, now_us: u64, disk: DiskIndex) -> Result<(), UnknownDisk> {
        if self.engine.mark_failed(now_us, disk)? {
            tracing::warn!(disk, "disk marked failed");
        }
        // A disk call may block: off the loop, like every other one. Nothing waits for it: the
        // engine never commands a failed disk again.
        let handle = self.disks[disk as usize].clone();
        tokio::task::spawn_blocking(move || handle.mark_failed());
        Ok(())
    }

    fn handle_completion(&mut self, completion: Completion) {
        let now_us = self.clock.now_us();
        match completion {
            Completion::SpunUp { disk, result } => {
                self.engine
                    .disk_spun_up(now_us, disk, result.map_err(|e| e.to_string()));
            }
            Completion::SpunDown { disk, result } => {
                self.engine
                    .disk_spun_down(now_us, disk, result.map_err(|e| e.to_string()));
            }
            Completion::Served { id } => self.engine.served(now_us, id),
        }
    }

    /// Runs a power command on a blocking thread; a failed spin-up marks the disk failed there.
    fn command(&self, disk: DiskIndex, command: DiskCommand) {
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
                DiskCommand::SpinUp => Completion::SpunUp { disk, result },
                DiskCommand::SpinDown => Completion::SpunDown { disk, result },
            };
            // The loop outlives every command it started (it waits for their completions).
            let _ = completions.send(completion).await;
        });
    }

    /// Runs the job's work on a blocking thread with its group's disks.
    fn serve(&mut self, request: Request, submitted_us: u64, spin_up_wait_us: u64) {
        let work = self
            .work
            .remove(&request.id)
            .expect("the engine serves only jobs the shell submitted");
        let index = request.group as usize;
        let disks = GroupDisks {
            group: request.group,
            disks: self.engine.units()[index]
                .iter()
                .map(|d| self.disks[*d as usize].clone())
                .collect(),
            missing: self.engine.missing(request.group).clone(),
        };
        let started_us = self.engine.now_us();
        let clock = self.clock.clone();
        let completions = self.completions.clone();
        let id = request.id;
        tokio::spawn(async move {
            let joined = tokio::task::spawn_blocking(move || {
                let finish = work(&disks);
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
}

/// The log line of a disk event (the engine only reports it).
fn log_disk_event(event: &DiskEvent) {
    match event {
        DiskEvent::SpinUpFailed {
            disk, group, error, ..
        } => {
            tracing::warn!(disk, group, %error, "disk failed to spin up; the group comes up without it");
        }
        DiskEvent::SpinDownFailed {
            disk, group, error, ..
        } => {
            tracing::warn!(disk, group, %error, "disk failed to spin down; marked failed");
        }
        DiskEvent::Withheld {
            disk,
            group,
            refusal,
            ..
        } => {
            tracing::error!(disk, group, %refusal, "budget audit refused a disk power-state change");
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DiskCommand {
    SpinUp,
    SpinDown,
}
