//! The event loop: a virtual clock in integer microseconds, a heap of `(time_us, sequence,
//! Event)` and beside it the network's one pending flow completion (with the sequence number it
//! would have had in the heap), the real scheduling policy (`ClassScheduler`, `Flamingo`, `FullyProvisioned` or
//! `RandomPlacement`), model disks ([`crate::disks`]) and the network's links
//! ([`crate::network`]). It owns the translation between scheduler actions and model time.
//!
//! Invariants: events are processed in (time, sequence) order and time never goes back; the
//! sequence number makes ties resolve in push order, so nothing depends on `Event`'s own order;
//! every random choice comes from the one `ChaCha8Rng` in a fixed call order; every accepted
//! request is served to its last byte before `simulate` returns (arrivals stop at `hours`, then
//! the queues drain), and the scheduler ends idle; after a configured disk failure, every lost
//! stripe stack is rebuilt before `simulate` returns (the rebuild outlives `hours` if it must);
//! with a deferral, every Bulk read is deferred in the engine (`Engine::defer`: submitted at its
//! group's spin-up for other work, at its start-by time, or again after a full queue refused it)
//! and served before `simulate` returns, and a run without one draws exactly what it drew before
//! deferrals existed.

use crate::agenda::{Agenda, Event};
use crate::config::{FpQueues, PolicyKind};
use crate::config::{SimConfig, SimError};
use crate::disks::Disks;
use crate::network::{FlowPath, Network};
use crate::random_layout::{PLACEMENT_SETS, random_placements};
use crate::report::{
    IdleSavings, Power, ReadTier, RebuildReport, Report, RequestRecord, Summary, TraceHash,
};
use crate::sample::{exponential_us, sample_us, seconds_to_us};
use crate::workload::{Arrivals, BlobSizes, burst_times_us, group_of_key, vhd_blob_bytes};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_engine::choice::class_scheduler;
use spinwise_engine::{Engine, GroupPhase, Output, Purpose, SpinDownCause};
use spinwise_model::{DiskIndex, GroupIndex, Layout, Rack, StateIndex};
use spinwise_sched::flamingo::Flamingo;
use spinwise_sched::idle::idle_spin_down_us;
use spinwise_sched::policy::{FullyProvisioned, Policy};
use spinwise_sched::random::RandomPlacement;
use spinwise_sched::scheduler::{Kind, Request};
use std::collections::VecDeque;

/// A request accepted by the scheduler and not yet finished.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    request: Request,
    arrival_us: u64,
    serve_us: Option<u64>,
    /// When the scheduler took it from its queue (Pelican §4.1's start of service): the start of
    /// its group's spin-up for a read among the first the switch was made for, else `serve_us`.
    dequeue_us: Option<u64>,
    first_byte_us: Option<u64>,
    /// A client read that could wait for its group's spin-up ([`crate::config::Deferral`]):
    /// deferred in the engine, in flight from its arrival.
    deferred: bool,
}

impl InFlight {
    fn new(request: Request, arrival_us: u64, deferred: bool) -> InFlight {
        InFlight {
            request,
            arrival_us,
            serve_us: None,
            dequeue_us: None,
            first_byte_us: None,
            deferred,
        }
    }
}

/// The requests in flight by id. Ids are handed out in increasing order and inserted when handed
/// out, so a window of slots from the oldest id still in flight does instead of a map: O(1)
/// insert, lookup and removal (a `BTreeMap` here cost ~7 % of a Pelican day). The window spans
/// the ids issued since the oldest request in flight arrived, rejected ones included.
#[derive(Clone, Debug, Default)]
struct InFlightTable {
    /// Id of `slots[0]`.
    first_id: u64,
    slots: VecDeque<Option<InFlight>>,
    len: usize,
}

impl InFlightTable {
    fn insert(&mut self, id: u64, flight: InFlight) {
        assert!(
            id >= self.first_id + self.slots.len() as u64,
            "request ids are inserted in increasing order"
        );
        if self.slots.is_empty() {
            self.first_id = id;
        }
        while self.first_id + (self.slots.len() as u64) < id {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(flight));
        self.len += 1;
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut InFlight> {
        let index = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        self.slots.get_mut(index)?.as_mut()
    }

    fn remove(&mut self, id: u64) -> Option<InFlight> {
        let index = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        let flight = self.slots.get_mut(index)?.take()?;
        self.len -= 1;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.first_id += 1;
        }
        Some(flight)
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Model constants derived once from the rack, layout and configuration.
#[derive(Clone)]
struct Model {
    /// Rack disk indices of each unit the policy spins up and down (`SpinUp(g)` moves
    /// `unit_disks[g]`): the layout's groups, or single disks for the random layout.
    unit_disks: Vec<Vec<DiskIndex>>,
    /// Rack disk indices each request target reads from (a request's `group` indexes it; arrivals
    /// pick one uniformly): the layout's groups, or the random layout's placement sets.
    target_disks: Vec<Vec<DiskIndex>>,
    /// Rack states a disk passes through.
    resting: StateIndex,
    spinning_up: StateIndex,
    active: StateIndex,
    seek_us: u64,
    /// The code's k.
    data_disks: u32,
    /// Scheduler classes (groups when the layout has none): at most this many flows at once.
    classes: usize,
    /// The layout's class of each request target, when targets are its groups and it has
    /// classes (the report's per-class time to first byte); `None` otherwise.
    target_classes: Option<Vec<u32>>,
    /// The disks a client read of each group streams from: the group's first k disks in layout
    /// order (a systematic code reads its k data fragments; which k of the group's disks hold a
    /// blob's data is not modelled, so every blob of a group uses the same ones).
    read_disks: Vec<Vec<DiskIndex>>,
    /// When a class serves several requests at once (Pelican's or Flamingo's scheduler with the
    /// layout's `concurrent_requests_per_class` > 1): the disks each group's client reads are pooled over,
    /// all of its healthy disks ([`FlowPath::pooled_read`]). `None`: reads stream from
    /// `read_disks`.
    read_pools: Option<Vec<Vec<DiskIndex>>>,
    /// Requests a class (Flamingo: an active group) serves at once: the layout's setting for
    /// Pelican's and Flamingo's schedulers, 1 for FP and the random layout.
    concurrent_requests: u32,
    /// Staggered switches in effect ([`class_scheduler`]).
    stagger_switches_min_queue: Option<u32>,
}

/// Rebuild requests the simulator keeps queued at once after a failure. The scheduler serves a few
/// requests per class at a time and the queue is refilled at every dispatch, so one would keep it
/// non-empty; a few more cost nothing. Never more than the layout's queue depth.
const REBUILD_OUTSTANDING: u32 = 8;

/// A spin-up starts under high load when at least this fraction of the flows the scheduler can
/// have at once (classes × requests a class serves at once) are in progress: the rack is then
/// moving data for at least half of what it can serve at once.
const HIGH_LOAD_FLOW_FRACTION: f64 = 0.5;

/// Seconds in a year for "per disk per year" metrics (365 days).
const SECONDS_PER_YEAR: f64 = 365.0 * 86_400.0;
/// Simulated years after which a run that has not ended is refused ([`SimError::Horizon`]).
/// Arrivals stop within a year (the longest `hours`), so only something the inputs make too
/// slow to finish gets here (a transfer at a rack's bandwidth of 1e-12 MB/s); without the
/// guard such a run overflowed the µs clock and gave silently wrong results or a panic.
const HORIZON_YEARS: u64 = 100;
const HORIZON_US: u64 = HORIZON_YEARS * 365 * 86_400 * 1_000_000;

/// The failed disk's rebuild: one `Kind::Rebuild` request per lost stripe stack.
#[derive(Clone, Copy, Debug)]
struct Rebuild {
    lost_bytes: u64,
    lost_stacks: u64,
    /// At most this many queued (submitted, not yet dispatched).
    outstanding_max: u32,
    /// Set at the failure.
    group: Option<GroupIndex>,
    failed_disk: Option<DiskIndex>,
    failed_us: u64,
    submitted: u64,
    /// Handed out by the scheduler (`Serve`); `submitted - dispatched` are queued.
    dispatched: u64,
    served: u64,
    done_us: Option<u64>,
}

impl Rebuild {
    /// Stack `index`'s bytes: the lost bytes split as evenly as whole bytes allow.
    fn stack_bytes(&self, index: u64) -> u64 {
        self.lost_bytes / self.lost_stacks + u64::from(index < self.lost_bytes % self.lost_stacks)
    }
}

struct Loop<'a> {
    rack: &'a Rack,
    config: &'a SimConfig,
    model: Model,
    rng: ChaCha8Rng,
    /// The rack engine: the policy, the budget audit, unit phases and the job books, the same
    /// code the store's driver runs; this loop turns its commands into model events.
    engine: Engine,
    disks: Disks,
    network: Network,
    /// The events still to happen ([`crate::agenda`]).
    agenda: Agenda,
    /// The latest time of a replaced flow wake-up: the run's last event, had it popped.
    replaced_wake_us: u64,
    window_us: (u64, u64),
    /// No arrival at or after this (`SimConfig::end_us`, a float product rounded: worked out once).
    arrivals_end_us: u64,
    next_request: u64,
    in_flight: InFlightTable,
    spin_up_started_us: Vec<Option<u64>>,
    /// The policy timeout an `Event::Timeout` is queued for, if any.
    timeout_us: Option<u64>,
    /// What [`Engine::next_wake_us`] said after the engine was last polled (see
    /// [`Loop::engine_untouched`]).
    engine_wake_us: Option<u64>,
    /// Burst arrival times (empty for other arrivals), and how many arrivals have happened.
    burst_times_us: Vec<u64>,
    arrivals_made: usize,
    rebuild: Option<Rebuild>,
    /// Client reads arriving in the window drawn as deferrable, and their times to first byte.
    deferred: u64,
    deferred_ttfb_us: Vec<u64>,
    expedited: u64,
    expedited_ttfb_us: Vec<u64>,
    standard_ttfb_us: Vec<u64>,
    /// When the latest recorded client read delivered its last byte.
    last_byte_us: u64,
    /// Disks spun up in the window (a group spin-up counts each of its disks).
    disk_spin_ups: u64,
    /// Group spin-downs in the window the policy decided because the group was idle.
    idle_spin_downs: u64,
    /// The first such spin-down, in the window or not.
    first_idle_spin_down_us: Option<u64>,
    /// The idle spin-down time the policy was given (`None`: off, or a policy without it).
    idle_spin_down_s: Option<f64>,
    /// The last event that did work or happened while requests were in flight: a burst's
    /// window ends here, so the idle spin-downs after the run has drained (timeouts and the
    /// disks resting) do not stretch it.
    drained_us: u64,
    high_load_spin_ups: u64,
    // Metrics for requests arriving in the window.
    requests: u64,
    rejected: u64,
    spin_ups: u64,
    ttfb_us: Vec<u64>,
    /// Client times to first byte by class (empty without `Model::target_classes`).
    ttfb_by_class_us: Vec<Vec<u64>>,
    completion_us: Vec<u64>,
    service_us: Vec<u64>,
    /// Dequeue → last byte (Pelican §4.1's service time, spin-up included).
    service_from_dequeue_us: Vec<u64>,
    /// Per unit, when its last spin-up started and how many reads that waited for it are still
    /// to be served as dequeued at that start (the scheduler decided the switch for them):
    /// `concurrent_requests` at each `SpinUp`, one less per such read served.
    switch_dequeues: Vec<(u64, u32)>,
    spin_up_us: Vec<u64>,
    processed: u64,
    stale: u64,
    trace: TraceHash,
    /// Called with every client read the summaries count, as it completes (`None` in a fork).
    on_record: Option<&'a mut dyn FnMut(&RequestRecord)>,
    /// Whether to keep [`Loop::checkpoint`] (for [`simulate_with_baseline`]).
    checkpointing: bool,
    /// A copy of the run taken before the last event that could have brought the first idle
    /// spin-down (one at or after the engine's wake-up), with that event: while no idle
    /// spin-down has happened, the run with idle spin-down off is this copy with it turned off.
    checkpoint: Option<Box<Checkpoint<'a>>>,
}

/// A copy of a run and the event it had just taken from its agenda.
struct Checkpoint<'a> {
    run: Loop<'a>,
    next: (u64, Event),
}

/// Joules in a kilowatt-hour.
const JOULES_PER_KWH: f64 = 3.6e6;

/// [`simulate_recording`], and with idle spin-down on (for a policy that has it) the same
/// configuration and seed again with it off, to report in [`Report::idle_savings`] the energy
/// it saved and what it cost (spin-ups, first byte).
///
/// The second run repeats the first until the first idle spin-down, so it is not run from the
/// start. Idle spin-down decides nothing else (the scheduler consults its timer only when no
/// class has anything to do, `spinwise_sched::scheduler`), a poll at an idle deadline that
/// spins nothing down leaves the policy as it was, and no random draw depends on either: up to
/// the first idle spin-down both runs make the same decisions and draws. So:
/// - when no group was spun down for idleness before every quantity the savings compare was
///   final ([`Loop::idle_changed_nothing`]), the baseline's energy, power, spin-ups and
///   first bytes are the run's own;
/// - otherwise the baseline continues, with idle spin-down off, from a copy of the run taken
///   just before the event that brought the first idle spin-down ([`Loop::keep_checkpoint`]),
///   or runs from the start if the policy cannot be copied.
///
/// On a busy rack (Pelican at 8 reads/s) the first idle spin-down comes as the queues drain
/// after the last arrival, and the command takes little more than half the time it did.
/// Debug builds also run the baseline from the start and check that it agrees.
pub fn simulate_with_baseline(
    rack: &Rack,
    layout: &Layout,
    config: &SimConfig,
    on_record: &mut dyn FnMut(&RequestRecord),
) -> Result<Report, SimError> {
    run_recording(rack, layout, config, on_record, true)
}

/// What idle spin-down saved in `report` against `baseline`, the same run with it off.
fn idle_savings(report: &Report, baseline: &Report) -> IdleSavings {
    let saved_kwh = baseline.energy_kwh - report.energy_kwh;
    IdleSavings {
        baseline_energy_kwh: baseline.energy_kwh,
        saved_kwh,
        saved_fraction: if baseline.energy_kwh > 0.0 {
            saved_kwh / baseline.energy_kwh
        } else {
            0.0
        },
        baseline_power_mean_w: baseline.power_w.mean,
        baseline_spin_ups: baseline.spin_ups,
        baseline_time_to_first_byte_s: baseline.time_to_first_byte_s,
    }
}

/// Runs `config` on `rack` with `layout` (planned for that rack) and reports what it measured.
/// Deterministic: the same inputs give the same report, trace hash included.
pub fn simulate(rack: &Rack, layout: &Layout, config: &SimConfig) -> Result<Report, SimError> {
    simulate_recording(rack, layout, config, &mut |_| {})
}

/// [`simulate`], also handing `on_record` each client read the report's summaries count
/// ([`RequestRecord`]), in completion order, as it completes. The records are not kept, so a
/// run of millions of reads can stream them out; recording changes nothing in the run.
pub fn simulate_recording(
    rack: &Rack,
    layout: &Layout,
    config: &SimConfig,
    on_record: &mut dyn FnMut(&RequestRecord),
) -> Result<Report, SimError> {
    run_recording(rack, layout, config, on_record, false)
}

/// [`simulate_recording`], and with `with_baseline` what [`simulate_with_baseline`] adds.
fn run_recording(
    rack: &Rack,
    layout: &Layout,
    config: &SimConfig,
    on_record: &mut dyn FnMut(&RequestRecord),
    with_baseline: bool,
) -> Result<Report, SimError> {
    config.validate()?;
    let mut model = model(rack, layout)?;
    // FP runs the same disks on a rack provisioned for all of them; the checker and the power
    // meter then judge it against those budgets.
    let provisioned;
    // Pelican's and Flamingo's schedulers serve the layout's requests per class (Flamingo: per
    // active group) at once; their reads are pooled when that is more than one.
    if matches!(config.policy, PolicyKind::Pelican | PolicyKind::Flamingo) {
        let concurrent = layout.scheduler.concurrent_requests_per_class.max(1);
        model.concurrent_requests = concurrent;
        if concurrent > 1 {
            model.read_pools = Some(model.target_disks.clone());
        }
    }
    let (rack, scheduler): (&Rack, Box<dyn Policy + Send>) = match config.policy {
        PolicyKind::Pelican => {
            // Links are shared only when a network is modelled: without NICs nothing is shared
            // that one class could fill.
            let scheduler = class_scheduler(rack, layout, config.network_gbps.is_some())?;
            model.stagger_switches_min_queue = layout
                .scheduler
                .stagger_switches_min_queue
                .filter(|_| scheduler.staggers_switches());
            (rack, Box::new(scheduler))
        }
        PolicyKind::FullyProvisioned => {
            provisioned = rack.fully_provisioned();
            let policy = match config.fp_queues {
                FpQueues::PerGroup => FullyProvisioned::new(layout),
                FpQueues::PerScheduler => FullyProvisioned::per_scheduler(layout),
            };
            (&provisioned, Box::new(policy))
        }
        PolicyKind::Flamingo => (rack, Box::new(Flamingo::new(layout)?)),
        PolicyKind::Random => (rack, random_policy(rack, layout, config, &mut model)?),
    };
    let targets = (model.target_disks != model.unit_disks).then(|| model.target_disks.clone());
    let mut engine = Engine::with_targets(rack, model.unit_disks.clone(), targets, scheduler)?;
    // FP keeps every group up by design and the random layout's scheduler works on disks: only
    // Pelican's and Flamingo's schedulers spin idle groups down.
    let idle_spin_down_s = config
        .idle_spin_down_s
        .filter(|_| matches!(config.policy, PolicyKind::Pelican | PolicyKind::Flamingo));
    engine.set_idle_spin_down_us(idle_spin_down_us(idle_spin_down_s));
    let window_us = config.window_us();
    let units = model.unit_disks.len();
    let class_count = model.target_classes.as_ref().map_or(0, |_| model.classes);
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let burst_times_us = match config.arrivals {
        Arrivals::Burst { requests } => burst_times_us(requests, &mut rng),
        _ => Vec::new(),
    };
    let rebuild = config.failure.map(|failure| Rebuild {
        lost_bytes: failure.lost_bytes,
        lost_stacks: failure.lost_stacks,
        outstanding_max: REBUILD_OUTSTANDING.min(layout.scheduler.max_queue_depth),
        group: None,
        failed_disk: None,
        failed_us: 0,
        submitted: 0,
        dispatched: 0,
        served: 0,
        done_us: None,
    });
    let mut sim = Loop {
        rack,
        config,
        model,
        rng,
        engine,
        disks: Disks::new(rack, window_us),
        network: Network::new(rack, config.network_gbps, window_us)?,
        agenda: Agenda::default(),
        replaced_wake_us: 0,
        window_us,
        arrivals_end_us: config.end_us(),
        next_request: 0,
        in_flight: InFlightTable::default(),
        spin_up_started_us: vec![None; units],
        timeout_us: None,
        engine_wake_us: None,
        burst_times_us,
        arrivals_made: 0,
        rebuild,
        deferred: 0,
        deferred_ttfb_us: Vec::new(),
        expedited: 0,
        expedited_ttfb_us: Vec::new(),
        standard_ttfb_us: Vec::new(),
        last_byte_us: 0,
        disk_spin_ups: 0,
        idle_spin_downs: 0,
        first_idle_spin_down_us: None,
        idle_spin_down_s,
        drained_us: 0,
        high_load_spin_ups: 0,
        requests: 0,
        rejected: 0,
        spin_ups: 0,
        ttfb_us: Vec::new(),
        ttfb_by_class_us: vec![Vec::new(); class_count],
        completion_us: Vec::new(),
        service_us: Vec::new(),
        service_from_dequeue_us: Vec::new(),
        switch_dequeues: Vec::new(),
        spin_up_us: Vec::new(),
        processed: 0,
        stale: 0,
        trace: TraceHash::new(),
        on_record: Some(on_record),
        checkpointing: false,
        checkpoint: None,
    };
    if let Some(pools) = &sim.model.read_pools {
        sim.network.pool_groups(pools);
    }
    sim.schedule_next_arrival(0);
    if let Some(failure_us) = config.failure_us() {
        sim.push(failure_us, Event::Fail);
    }
    let with_baseline = with_baseline && sim.idle_spin_down_s.is_some();
    sim.checkpointing = with_baseline;
    let last_us = sim.run()?;
    let mut report = sim.report(last_us);
    if with_baseline {
        let never = SimConfig {
            idle_spin_down_s: None,
            ..config.clone()
        };
        let baseline = match sim.baseline(&report)? {
            Some(baseline) => {
                if cfg!(debug_assertions) {
                    let from_start = simulate(rack, layout, &never)?;
                    assert_eq!(
                        idle_savings(&report, &baseline),
                        idle_savings(&report, &from_start),
                        "the baseline without idle spin-down differs from that run from the start"
                    );
                }
                baseline
            }
            None => simulate(rack, layout, &never)?,
        };
        report.idle_savings = Some(idle_savings(&report, &baseline));
    }
    Ok(report)
}

/// The random straw-man layout (Pelican §2.2): [`PLACEMENT_SETS`] sets of k + r disks from the
/// run's seed become the request targets, single disks the units spun up and down, and the
/// policy queues as many requests in all as Pelican's classes together.
fn random_policy(
    rack: &Rack,
    layout: &Layout,
    config: &SimConfig,
    model: &mut Model,
) -> Result<Box<dyn Policy + Send>, SimError> {
    let placements = random_placements(
        rack,
        layout.erasure.stripe_width(),
        PLACEMENT_SETS,
        config.seed,
    )?;
    let classes = layout
        .classes
        .as_ref()
        .and_then(|c| c.iter().max())
        .map_or(layout.groups.len(), |c| *c as usize + 1);
    let max_queued = layout.scheduler.max_queue_depth as usize * classes;
    model.unit_disks = (0..rack.disk_count() as DiskIndex)
        .map(|disk| vec![disk])
        .collect();
    model.read_disks = read_disks_of(&placements, layout.erasure.k);
    model.target_disks = placements.clone();
    // Placement sets are not groups: no class to attribute a request to.
    model.target_classes = None;
    Ok(Box::new(RandomPlacement::new(
        rack, placements, max_queued,
    )?))
}

/// The disks a read of each target streams from: its first k disks.
pub(crate) fn read_disks_of(targets: &[Vec<DiskIndex>], k: u32) -> Vec<Vec<DiskIndex>> {
    targets
        .iter()
        .map(|disks| disks[..(k as usize).min(disks.len())].to_vec())
        .collect()
}

fn model(rack: &Rack, layout: &Layout) -> Result<Model, SimError> {
    let unit_disks = layout.group_disk_indices(rack)?;
    // The layout's state names must be the rack's (the scheduler's books use the layout's).
    for state in &layout.states {
        if !rack.states.iter().any(|s| &s.name == state) {
            return Err(SimError::UnknownState {
                state: state.clone(),
            });
        }
    }
    // The rack's own spin-up path, not the layout's: the checker must not take the scheduler's
    // view. A disk spends its whole spin-up latency in the path's last state before active (on
    // every preset the path is resting → spinning up → active, so this is the one transient state).
    let path = rack.spin_up_path();
    assert!(
        path.len() >= 2,
        "the parser guarantees resting → … → active"
    );
    let spinning_up = path[if path.len() == 2 { 1 } else { path.len() - 2 }];
    let read_disks = read_disks_of(&unit_disks, layout.erasure.k);
    Ok(Model {
        target_disks: unit_disks.clone(),
        unit_disks,
        resting: rack.resting_state(),
        spinning_up,
        active: rack.active_state(),
        seek_us: seconds_to_us(rack.disk_model.seek_ms / 1e3),
        data_disks: layout.erasure.k,
        classes: layout
            .classes
            .as_ref()
            .and_then(|c| c.iter().max())
            .map_or(layout.groups.len(), |c| *c as usize + 1),
        // A class list of the wrong length would be refused by the class scheduler; the other
        // policies ignore classes, so such a layout just gets no per-class split.
        target_classes: layout
            .classes
            .clone()
            .filter(|classes| classes.len() == layout.groups.len()),
        read_disks,
        read_pools: None,
        concurrent_requests: 1,
        stagger_switches_min_queue: None,
    })
}

impl<'a> Loop<'a> {
    /// A copy of the run in its current state that records nothing and keeps no checkpoint;
    /// `None` if the policy cannot be copied ([`Engine::fork`]).
    fn fork(&self) -> Option<Loop<'a>> {
        Some(Loop {
            rack: self.rack,
            config: self.config,
            model: self.model.clone(),
            rng: self.rng.clone(),
            engine: self.engine.fork()?,
            disks: self.disks.clone(),
            network: self.network.clone(),
            agenda: self.agenda.clone(),
            replaced_wake_us: self.replaced_wake_us,
            window_us: self.window_us,
            arrivals_end_us: self.arrivals_end_us,
            next_request: self.next_request,
            in_flight: self.in_flight.clone(),
            spin_up_started_us: self.spin_up_started_us.clone(),
            timeout_us: self.timeout_us,
            engine_wake_us: self.engine_wake_us,
            burst_times_us: self.burst_times_us.clone(),
            arrivals_made: self.arrivals_made,
            rebuild: self.rebuild,
            deferred: self.deferred,
            deferred_ttfb_us: self.deferred_ttfb_us.clone(),
            expedited: self.expedited,
            expedited_ttfb_us: self.expedited_ttfb_us.clone(),
            standard_ttfb_us: self.standard_ttfb_us.clone(),
            last_byte_us: self.last_byte_us,
            disk_spin_ups: self.disk_spin_ups,
            idle_spin_downs: self.idle_spin_downs,
            first_idle_spin_down_us: self.first_idle_spin_down_us,
            idle_spin_down_s: self.idle_spin_down_s,
            drained_us: self.drained_us,
            high_load_spin_ups: self.high_load_spin_ups,
            requests: self.requests,
            rejected: self.rejected,
            spin_ups: self.spin_ups,
            ttfb_us: self.ttfb_us.clone(),
            ttfb_by_class_us: self.ttfb_by_class_us.clone(),
            completion_us: self.completion_us.clone(),
            service_us: self.service_us.clone(),
            service_from_dequeue_us: self.service_from_dequeue_us.clone(),
            switch_dequeues: self.switch_dequeues.clone(),
            spin_up_us: self.spin_up_us.clone(),
            processed: self.processed,
            stale: self.stale,
            trace: self.trace,
            on_record: None,
            checkpointing: false,
            checkpoint: None,
        })
    }

    fn push(&mut self, at_us: u64, event: Event) {
        self.agenda.push(at_us, event);
    }

    fn in_window(&self, at_us: u64) -> bool {
        (self.window_us.0..self.window_us.1).contains(&at_us)
    }

    /// Queues the next client arrival, if any is left before `hours`.
    fn schedule_next_arrival(&mut self, now_us: u64) {
        let end_us = self.arrivals_end_us;
        let at_us = match &self.config.arrivals {
            Arrivals::Poisson => {
                // Saturating: at a rate of 1e-300 per second a gap is past the clock's range.
                Some(now_us.saturating_add(exponential_us(self.config.rate_per_s, &mut self.rng)))
                    .filter(|at_us| *at_us < end_us)
            }
            // A burst ignores `hours`: all of it arrives within its 60 s.
            Arrivals::Burst { .. } => self.burst_times_us.get(self.arrivals_made).copied(),
            Arrivals::Trace(records) => records
                .get(self.arrivals_made)
                .map(|r| r.time_us)
                .filter(|at_us| *at_us < end_us),
        };
        if let Some(at_us) = at_us {
            self.push(at_us, Event::Arrive);
        }
    }

    /// The group and bytes of the arrival happening now (the `arrivals_made`-th). Draw order:
    /// group, then size — Poisson runs with fixed sizes draw exactly as before workloads existed.
    fn next_client_request(&mut self) -> (GroupIndex, u64) {
        let groups = self.model.target_disks.len();
        if let Arrivals::Trace(records) = &self.config.arrivals {
            let record = &records[self.arrivals_made];
            return (group_of_key(&record.key, groups as u32), record.size_bytes);
        }
        let group = self.rng.random_range(0..groups) as GroupIndex;
        let bytes = match self.config.blob_sizes {
            BlobSizes::Fixed => self.config.blob_bytes,
            BlobSizes::VhdLike => vhd_blob_bytes(&mut self.rng),
        };
        (group, bytes)
    }

    /// Processes events until none is left; returns the time of the last one (a replaced flow
    /// wake-up included, as when it popped as a stale event).
    fn run(&mut self) -> Result<u64, SimError> {
        self.run_from(None)
    }

    /// [`Loop::run`], handling `first` (an event already taken from the agenda) before the
    /// agenda's.
    fn run_from(&mut self, mut first: Option<(u64, Event)>) -> Result<u64, SimError> {
        let mut now_us = 0;
        while let Some((at_us, event)) = first.take().or_else(|| self.agenda.pop()) {
            if at_us > HORIZON_US {
                return Err(SimError::Horizon {
                    at_us,
                    horizon_years: HORIZON_YEARS,
                });
            }
            debug_assert!(at_us >= now_us, "time went back");
            now_us = at_us;
            self.keep_checkpoint(at_us, event);
            self.disks.mark_possible_end(now_us);
            if !self.handle(now_us, event) {
                self.stale += 1;
                continue;
            }
            self.processed += 1;
            let idle_tail = matches!(
                event,
                Event::Timeout | Event::DiskSpunDown { .. } | Event::GroupSpunDown { .. }
            ) && self.in_flight.is_empty();
            if !idle_tail {
                self.drained_us = now_us;
                self.disks.keep_possible_end();
            }
            self.trace.write_u64_le(now_us);
            event.hash_into(&mut self.trace);
            if self.engine_untouched(now_us, event) {
                continue;
            }
            while let Some(output) = self.engine.next_output(now_us) {
                self.perform(now_us, output);
            }
            self.schedule_timeout(now_us);
        }
        let now_us = now_us.max(self.replaced_wake_us);
        assert!(self.engine.is_idle(), "the engine ended with work");
        assert!(self.in_flight.is_empty(), "accepted requests left unserved");
        assert_eq!(self.network.flows(), 0, "flows left running");
        if let Some(rebuild) = &self.rebuild {
            assert!(
                rebuild.group.is_none() || rebuild.done_us.is_some(),
                "the rebuild was left unfinished"
            );
        }
        let (delivered, requested) = (
            self.network.delivered_bytes(),
            self.network.requested_bytes(),
        );
        assert!(
            (delivered - requested).abs() <= requested * 1e-9,
            "delivered {delivered} bytes of {requested}"
        );
        Ok(now_us)
    }

    /// The report of this run (just ended, `report`) with idle spin-down off
    /// ([`simulate_with_baseline`]): `report` itself when idle spin-down changed nothing it
    /// measured, else the checkpoint run on with idle spin-down off; `None`: the baseline must
    /// run from the start (the policy could not be copied).
    fn baseline(&mut self, report: &Report) -> Result<Option<Report>, SimError> {
        if self.idle_changed_nothing() {
            return Ok(Some(report.clone()));
        }
        if let Some(checkpoint) = self.checkpoint.take() {
            let Checkpoint { mut run, next } = *checkpoint;
            run.engine.set_idle_spin_down_us(None);
            run.idle_spin_down_s = None;
            run.engine_wake_us = run.engine.next_wake_us();
            let last_us = run.run_from(Some(next))?;
            return Ok(Some(run.report(last_us)));
        }
        Ok(None)
    }

    /// Whether no idle spin-down (in or out of the window) came before the last quantity the
    /// idle savings compare was final: the end of the metered window (energy, power, spin-ups)
    /// or the last event while requests were in flight (every first byte), whichever is later.
    /// The same run with idle spin-down off would then measure what this one did.
    fn idle_changed_nothing(&self) -> bool {
        let metrics_final_us = self.window_end_us().max(self.drained_us);
        self.first_idle_spin_down_us
            .is_none_or(|first_us| first_us > metrics_final_us)
    }

    /// Keeps a copy of the run before `event` (just taken from the agenda, due at `at_us`) if it
    /// could bring the first idle spin-down: none has happened yet and the event is due at or
    /// after the engine's wake-up (an idle deadline is one; other events never make the policy
    /// spin a group down for idleness, module `spinwise_sched::idle`). On a busy rack such
    /// events are rare (four in a day of Pelican at 8 reads/s).
    fn keep_checkpoint(&mut self, at_us: u64, event: Event) {
        if !self.checkpointing
            || self.first_idle_spin_down_us.is_some()
            || self.engine_wake_us.is_none_or(|wake_us| at_us < wake_us)
        {
            return;
        }
        self.checkpoint = self.fork().map(|run| {
            Box::new(Checkpoint {
                run,
                next: (at_us, event),
            })
        });
        if self.checkpoint.is_none() {
            // The policy cannot be copied: the baseline runs from the start.
            self.checkpointing = false;
        }
    }

    /// Whether `event` (processed at `now_us`) left the engine with nothing to say: it gave the
    /// engine no input (a disk of a switching group reached its state, or a seek ended and a
    /// flow started) and the engine's wake-up is still ahead. The engine's contract
    /// ([`Engine::next_wake_us`]) is that only inputs and that time change what
    /// [`Engine::next_output`] returns, so polling it, and asking again for the wake-up it named
    /// after the last poll, would change nothing. About two events in five are of these kinds;
    /// skipping their polls leaves every decision, draw and report as it was. Debug builds poll
    /// anyway and check the contract.
    fn engine_untouched(&mut self, now_us: u64, event: Event) -> bool {
        let no_input = matches!(
            event,
            Event::DiskSpunUp { .. } | Event::DiskSpunDown { .. } | Event::FirstByte { .. }
        );
        let untouched = no_input && self.engine_wake_us.is_none_or(|wake_us| wake_us > now_us);
        if cfg!(debug_assertions) && untouched {
            assert!(
                self.engine.next_output(now_us).is_none(),
                "the engine acted at {now_us} µs without an input or a wake-up"
            );
        }
        untouched
    }

    /// Queues a wake-up for the policy's next timeout unless one is queued for that time already.
    /// A timeout at or before `now_us` would be a policy asking to be polled again for nothing.
    fn schedule_timeout(&mut self, now_us: u64) {
        let wanted_us = self.engine.next_wake_us();
        self.engine_wake_us = wanted_us;
        if let Some(at_us) = wanted_us {
            assert!(at_us > now_us, "a policy timeout must lie in the future");
            if self.timeout_us != Some(at_us) {
                self.timeout_us = Some(at_us);
                self.push(at_us, Event::Timeout);
            }
        }
    }

    /// Applies one event; `false` for a stale flow completion or timeout (nothing happened).
    fn handle(&mut self, now_us: u64, event: Event) -> bool {
        match event {
            Event::Timeout => {
                if self.timeout_us != Some(now_us) {
                    return false;
                }
                self.timeout_us = None;
            }
            Event::Fail => self.fail(now_us),
            Event::Arrive => self.arrive(now_us),
            Event::DiskSpunUp { disk } => {
                self.disks
                    .set(self.rack, now_us, &[disk], self.model.active);
            }
            Event::GroupSpunUp { group } => {
                // A unit none of whose disks could be commanded came up at once.
                if self.engine.phase(group) == GroupPhase::SpinningUp {
                    self.engine.unit_spun_up(now_us, group);
                }
                let started_us = self.spin_up_started_us[group as usize]
                    .take()
                    .expect("a spin-up was started");
                if self.in_window(started_us) {
                    self.spin_up_us.push(now_us - started_us);
                }
            }
            Event::DiskSpunDown { disk } => {
                self.disks
                    .set(self.rack, now_us, &[disk], self.model.resting);
            }
            Event::GroupSpunDown { group } => {
                if self.engine.phase(group) == GroupPhase::SpinningDown {
                    self.engine.unit_spun_down(now_us, group);
                }
            }
            Event::FirstByte { request } => {
                let flight = self.in_flight.get_mut(request).expect("being served");
                flight.first_byte_us = Some(now_us);
                let flow = flight.request;
                self.start_flow(now_us, &flow);
                self.schedule_flow_wake();
            }
            Event::FlowDone { generation } => return self.flow_done(now_us, generation),
        }
        true
    }

    /// A client request arrives: a Bulk read is deferred in the engine (it waits there for its
    /// group's next spin-up or its start-by time, `deferral_wait_us` after arrival), any other
    /// read is submitted now; either is in flight once accepted. A read refused (a full queue,
    /// or for a Bulk read the engine's deferral limit) is rejected and has used up its id, as
    /// it always has. The next arrival is drawn.
    fn arrive(&mut self, now_us: u64) {
        let (group, bytes) = self.next_client_request();
        self.arrivals_made += 1;
        let counted = self.in_window(now_us);
        self.requests += u64::from(counted);
        let tier = self.draw_tier();
        let deferred = tier == ReadTier::Bulk;
        self.deferred += u64::from(deferred && counted);
        self.expedited += u64::from(tier == ReadTier::Expedited && counted);
        let kind = match tier {
            ReadTier::Expedited => Kind::Expedited,
            ReadTier::Standard | ReadTier::Bulk => Kind::Client,
        };
        let request = Request {
            id: self.next_request,
            group,
            bytes,
            kind,
        };
        self.next_request += 1;
        let accepted = if deferred {
            let start_by_us = now_us + self.config.deferral_wait_us();
            self.engine
                .defer(now_us, request, Purpose::Read, start_by_us)
        } else {
            self.engine.submit(now_us, request, Purpose::Read)
        };
        match accepted {
            Ok(()) => {
                let flight = InFlight::new(request, now_us, deferred);
                self.in_flight.insert(request.id, flight);
            }
            Err(_) => self.rejected += u64::from(counted),
        }
        self.schedule_next_arrival(now_us);
    }

    /// A client read's tier: one uniform draw u, Bulk below the Bulk share, Expedited in the
    /// next `expedited_fraction`. Drawn only when a tier is configured: other runs draw exactly
    /// as before, and a run with Bulk reads only draws what it drew before Expedited existed.
    fn draw_tier(&mut self) -> ReadTier {
        if !self.config.draws_tiers() {
            return ReadTier::Standard;
        }
        let draw = self.rng.random::<f64>();
        let bulk_fraction = self.config.bulk_fraction();
        if draw < bulk_fraction {
            ReadTier::Bulk
        } else if draw < bulk_fraction + self.config.expedited_fraction {
            ReadTier::Expedited
        } else {
            ReadTier::Standard
        }
    }

    /// A flow ended (`false` if the network had already rescheduled it: a stale wake-up). The
    /// request is served: its latencies are recorded, and the freed queue place may take a
    /// rebuild stack.
    fn flow_done(&mut self, now_us: u64, generation: u64) -> bool {
        let Some(request) = self.network.complete(now_us, generation) else {
            return false;
        };
        self.schedule_flow_wake();
        let flight = self.in_flight.remove(request).expect("being served");
        self.engine.served(now_us, request);
        if flight.request.kind == Kind::Rebuild {
            self.rebuild_stack_served(now_us);
        } else if self.in_window(flight.arrival_us) {
            self.record_client_latencies(now_us, &flight);
        }
        // A completion freed a place in some class's queue (the engine offers it to the Bulk
        // reads a full queue refused once this event's inputs are in).
        self.submit_rebuild_stacks(now_us);
        true
    }

    /// Time to first byte (overall, per tier and per class), completion and service time of a
    /// client read that arrived inside the measured window and has just completed; its record.
    fn record_client_latencies(&mut self, now_us: u64, flight: &InFlight) {
        let serve_us = flight.serve_us.expect("served");
        let first_byte_us = flight.first_byte_us.expect("flow started");
        let ttfb_us = first_byte_us - flight.arrival_us;
        let tier = if flight.deferred {
            ReadTier::Bulk
        } else if flight.request.kind == Kind::Expedited {
            ReadTier::Expedited
        } else {
            ReadTier::Standard
        };
        self.ttfb_us.push(ttfb_us);
        match tier {
            ReadTier::Bulk => self.deferred_ttfb_us.push(ttfb_us),
            ReadTier::Expedited => self.expedited_ttfb_us.push(ttfb_us),
            ReadTier::Standard => self.standard_ttfb_us.push(ttfb_us),
        }
        let group = flight.request.group;
        let class = self
            .model
            .target_classes
            .as_ref()
            .map(|c| c[group as usize]);
        if let Some(class) = class {
            self.ttfb_by_class_us[class as usize].push(ttfb_us);
        }
        self.completion_us.push(now_us - flight.arrival_us);
        self.service_us.push(now_us - serve_us);
        self.service_from_dequeue_us
            .push(now_us - flight.dequeue_us.expect("served"));
        self.last_byte_us = self.last_byte_us.max(now_us);
        let Some(on_record) = self.on_record.as_mut() else {
            return;
        };
        on_record(&RequestRecord {
            id: flight.request.id,
            tier,
            target: group,
            class,
            bytes: flight.request.bytes,
            arrival_us: flight.arrival_us,
            serve_us,
            first_byte_us,
            last_byte_us: now_us,
        });
    }

    /// Starts the flow of a request whose seek is over. A client read streams from its group's
    /// read disks through the PCIe root and NIC of their server; a rebuild stack stays inside its
    /// group: k stacks read from the group's surviving read disks, one regenerated stack written
    /// to another surviving disk of the group (rotating by stack, as the spare capacity is spread
    /// over the group), never crossing the NIC.
    fn start_flow(&mut self, now_us: u64, request: &Request) {
        let group = request.group as usize;
        let sources = &self.model.read_disks[group];
        let path = match (request.kind, &self.model.read_pools) {
            (Kind::Client | Kind::Expedited, Some(pools)) => {
                FlowPath::pooled_read(&pools[group], self.model.data_disks)
            }
            (Kind::Client | Kind::Expedited, None) => FlowPath::client_read(sources),
            (Kind::Rebuild, _) => {
                let failed = self.rebuild.as_ref().and_then(|r| r.failed_disk);
                let targets: Vec<DiskIndex> = self.model.target_disks[group]
                    .iter()
                    .copied()
                    .filter(|d| Some(*d) != failed && !sources.contains(d))
                    .collect();
                // A group no wider than k + 1 has no disk besides the sources: write onto one
                // of them (the flow then charges that disk twice, once read and once written).
                let written = if targets.is_empty() {
                    sources[request.id as usize % sources.len()]
                } else {
                    targets[request.id as usize % targets.len()]
                };
                FlowPath::rebuild(sources, written)
            }
        };
        self.network.start(now_us, request.id, request.bytes, path);
    }

    /// The disk fails: a uniformly drawn group loses its first disk, and the rebuild of its
    /// stripe stacks begins. Reads of that group keep touching k of its remaining disks (the
    /// flow model does not name disks, so nothing else changes); the failed disk keeps following
    /// its group's states, which can only overstate the draw the budget checker sees.
    fn fail(&mut self, now_us: u64) {
        let group = self.rng.random_range(0..self.model.target_disks.len()) as GroupIndex;
        let failed_disk = self.model.target_disks[group as usize][0];
        // Reads of the group now stream from k of its surviving disks.
        let k = self.model.data_disks as usize;
        let survivors = &self.model.target_disks[group as usize][1..];
        self.model.read_disks[group as usize] = survivors[..k.min(survivors.len())].to_vec();
        if let Some(pools) = self.model.read_pools.as_mut() {
            pools[group as usize] = survivors.to_vec();
        }
        self.engine
            .mark_failed(now_us, failed_disk)
            .expect("the failed disk is a rack disk");
        let rebuild = self.rebuild.as_mut().expect("a failure is configured");
        rebuild.group = Some(group);
        rebuild.failed_disk = Some(failed_disk);
        rebuild.failed_us = now_us;
        self.submit_rebuild_stacks(now_us);
    }

    /// Keeps up to `outstanding_max` rebuild requests queued; stops at the first refusal (the
    /// class queue is full) and tries again at the next dispatch or completion. Refilling when a
    /// place frees (before any later arrival) matters under overload: the class's queue is full
    /// of client requests, and a rebuild that waited for a completion would find each place it
    /// left taken by an arrival during its own transfer, and drain.
    fn submit_rebuild_stacks(&mut self, now_us: u64) {
        let Some(rebuild) = self.rebuild.as_mut() else {
            return;
        };
        let Some(group) = rebuild.group else {
            return;
        };
        while rebuild.submitted < rebuild.lost_stacks
            && rebuild.submitted - rebuild.dispatched < u64::from(rebuild.outstanding_max)
        {
            let request = Request {
                id: self.next_request,
                group,
                bytes: rebuild.stack_bytes(rebuild.submitted),
                kind: Kind::Rebuild,
            };
            if self
                .engine
                .submit(now_us, request, Purpose::Rebuild)
                .is_err()
            {
                break;
            }
            self.next_request += 1;
            rebuild.submitted += 1;
            self.in_flight
                .insert(request.id, InFlight::new(request, now_us, false));
        }
    }

    fn rebuild_stack_served(&mut self, now_us: u64) {
        let rebuild = self
            .rebuild
            .as_mut()
            .expect("rebuild requests come from a failure");
        rebuild.served += 1;
        if rebuild.served == rebuild.lost_stacks {
            rebuild.done_us = Some(now_us);
        }
    }

    /// Whether a spin-up starting now is under high load (see [`HIGH_LOAD_FLOW_FRACTION`]).
    fn high_load(&self) -> bool {
        let flows = self.network.flows();
        let at_once = self.model.classes as f64 * f64::from(self.model.concurrent_requests);
        flows as f64 >= HIGH_LOAD_FLOW_FRACTION * at_once
    }

    /// Queues the network's next flow completion if it moved. The one it replaces would have
    /// popped as a stale event: it is counted as one now.
    fn schedule_flow_wake(&mut self) {
        if let Some(wake) = self.network.take_wake() {
            let replaced = self.agenda.set_flow_wake(wake.at_us, wake.generation);
            if let Some(replaced_us) = replaced {
                self.stale += 1;
                self.replaced_wake_us = self.replaced_wake_us.max(replaced_us);
            }
        }
    }

    /// Carries out one engine command in model time. Every disk of a unit follows its unit's
    /// spin-up and spin-down in the model (with its latency draws, in disk order), the failed
    /// disk included: it overstates the draw the independent checker sees, the safe side.
    fn perform(&mut self, now_us: u64, output: Output) {
        match output {
            Output::SpinUp { unit: group, .. } => {
                let in_window = self.in_window(now_us);
                self.spin_ups += u64::from(in_window);
                self.spin_up_started_us[group as usize] = Some(now_us);
                let unit = group as usize;
                if self.switch_dequeues.len() <= unit {
                    self.switch_dequeues.resize(unit + 1, (0, 0));
                }
                self.switch_dequeues[unit] = (now_us, self.model.concurrent_requests);
                let disks = std::mem::take(&mut self.model.unit_disks[group as usize]);
                self.disk_spin_ups += if in_window { disks.len() as u64 } else { 0 };
                let rack = self.rack;
                let disk_model = &rack.disk_model;
                let mount_latency_s = match &disk_model.mount_latency_high_load_s {
                    Some(high) if self.high_load() => {
                        self.high_load_spin_ups += u64::from(in_window);
                        high
                    }
                    _ => &disk_model.mount_latency_s,
                };
                self.disks
                    .set(self.rack, now_us, &disks, self.model.spinning_up);
                // Each disk spins up and mounts on its own; the group is ready when the slowest
                // disk is (draws in disk order: spin-up, then mount).
                // Queued as one batch, in the order of the pushes it stands for
                // ([`Agenda::push_staged`]).
                let mut ready_us = 0;
                for &disk in &disks {
                    let spin_up_us =
                        sample_us(&self.rack.disk_model.spin_up_latency_s, &mut self.rng);
                    let mount_us = sample_us(mount_latency_s, &mut self.rng);
                    self.agenda
                        .stage(now_us + spin_up_us, Event::DiskSpunUp { disk });
                    ready_us = ready_us.max(spin_up_us + mount_us);
                }
                self.model.unit_disks[group as usize] = disks;
                self.agenda
                    .stage(now_us + ready_us, Event::GroupSpunUp { group });
                self.agenda.push_staged();
            }
            Output::SpinDown {
                unit: group, cause, ..
            } => {
                let idle = cause == SpinDownCause::Idle;
                self.idle_spin_downs += u64::from(idle && self.in_window(now_us));
                if idle {
                    self.first_idle_spin_down_us.get_or_insert(now_us);
                }
                self.spin_down(now_us, group);
            }
            Output::Serve {
                request,
                spin_up_wait_us,
                ..
            } => {
                let arrival_us = self
                    .in_flight
                    .get_mut(request.id)
                    .expect("accepted")
                    .arrival_us;
                let dequeue_us =
                    self.dequeue_us(now_us, arrival_us, request.group, spin_up_wait_us);
                let flight = self.in_flight.get_mut(request.id).expect("accepted");
                flight.serve_us = Some(now_us);
                flight.dequeue_us = Some(dequeue_us);
                self.push(
                    now_us + self.model.seek_us,
                    Event::FirstByte {
                        request: request.id,
                    },
                );
                // Dispatching a request frees a place in its class's queue: refill the rebuild
                // queue before a later arrival takes it.
                if let (Kind::Rebuild, Some(rebuild)) = (request.kind, self.rebuild.as_mut()) {
                    rebuild.dispatched += 1;
                }
                self.submit_rebuild_stacks(now_us);
            }
            // Announcements are for a store's piggybacked work; the model has none. A disk the
            // audit withheld is still counted in the report (`audit_refusals`).
            Output::Activity(_) | Output::Disk(_) => {}
            Output::Withdrawn { .. } => unreachable!("the simulator never shuts the engine down"),
        }
    }

    /// When the scheduler dequeued a read served now that waited `spin_up_wait_us` for its
    /// group's spin-up: when that spin-up started (or the read arrived, if later) for the first
    /// `concurrent_requests` reads that waited for it (the switch was decided for them), else
    /// now (a read behind them in the same group is dequeued when a place frees, as in
    /// Pelican's classes that serve one request at a time).
    fn dequeue_us(&mut self, now_us: u64, arrival_us: u64, unit: u32, spin_up_wait_us: u64) -> u64 {
        match self.switch_dequeues.get_mut(unit as usize) {
            Some((started_us, left)) if *left > 0 && spin_up_wait_us > 0 => {
                *left -= 1;
                (*started_us).max(arrival_us).min(now_us)
            }
            _ => now_us,
        }
    }

    /// Each disk unmounts on its own, staying active (and drawing) until it has, then rests; the
    /// group is reported spun down when the slowest disk has unmounted. The scheduler keeps
    /// counting every disk of the group until then, so its accounting stays conservative.
    fn spin_down(&mut self, now_us: u64, group: GroupIndex) {
        let disks = std::mem::take(&mut self.model.unit_disks[group as usize]);
        let mut done_us = 0;
        for &disk in &disks {
            let unmount_us = sample_us(&self.rack.disk_model.unmount_latency_s, &mut self.rng);
            self.agenda
                .stage(now_us + unmount_us, Event::DiskSpunDown { disk });
            done_us = done_us.max(unmount_us);
        }
        self.model.unit_disks[group as usize] = disks;
        // Queued after every disk's event, so a tie still rests the disks first.
        self.agenda
            .stage(now_us + done_us, Event::GroupSpunDown { group });
        self.agenda.push_staged();
    }

    /// The end of the metered window. Poisson arrivals go on, by definition, until `hours`: a
    /// run that drained earlier only drew no arrival in the last gap, and its idle time up to
    /// `hours` (with the idle spin-downs in it) is part of what it measures. A burst's window,
    /// and a trace's whose records stop early, are open until the run has drained (idle
    /// spin-downs after that are not part of it: see `drained_us`).
    fn window_end_us(&self) -> u64 {
        if self.config.arrivals == Arrivals::Poisson {
            return self.window_us.1;
        }
        self.window_us
            .1
            .min(self.drained_us.max(self.window_us.0 + 1))
    }

    fn report(&mut self, last_us: u64) -> Report {
        let window_end_us = self.window_end_us();
        self.disks.close_window(window_end_us);
        self.disks.finish(last_us);
        let window_s = (window_end_us - self.window_us.0) as f64 / 1e6;
        let disks = self.rack.disk_count() as f64;
        let per_disk_year = SECONDS_PER_YEAR / window_s / disks;
        // Disk bytes: a client read moves its bytes off k disks; a rebuild stack is read from k
        // disks and written to one.
        let disk_bytes = self.network.delivered_in_window_bytes()
            + self.network.internal_in_window_bytes() * f64::from(self.model.data_disks + 1);
        let (power_mean_w, power_peak_w) = self.disks.power_w();
        Report {
            rack: self.rack.name.clone(),
            seed: self.config.seed,
            concurrent_requests: self.model.concurrent_requests,
            stagger_switches_min_queue: self.model.stagger_switches_min_queue,
            rate_per_s: self.config.offered_rate_per_s(),
            window_s,
            requests: self.requests,
            completed: self.completion_us.len() as u64,
            rejected: self.rejected,
            reject_rate: if self.requests == 0 {
                0.0
            } else {
                self.rejected as f64 / self.requests as f64
            },
            time_to_first_byte_s: Summary::of_us(&mut self.ttfb_us),
            ttfb_by_class_s: self
                .ttfb_by_class_us
                .iter_mut()
                .map(|samples| Summary::of_us(samples))
                .collect(),
            completion_time_s: Summary::of_us(&mut self.completion_us),
            service_time_s: Summary::of_us(&mut self.service_us),
            service_from_dequeue_s: Summary::of_us(&mut self.service_from_dequeue_us),
            spin_up_s: Summary::of_us(&mut self.spin_up_us),
            deferred: self.deferred,
            deferred_ttfb_s: Summary::of_us(&mut self.deferred_ttfb_us),
            expedited: self.expedited,
            expedited_ttfb_s: Summary::of_us(&mut self.expedited_ttfb_us),
            standard_ttfb_s: Summary::of_us(&mut self.standard_ttfb_us),
            last_byte_s: self.last_byte_us as f64 / 1e6,
            throughput_gbps: self.network.delivered_in_window_bytes() * 8.0 / window_s / 1e9,
            spin_ups: self.spin_ups,
            spin_ups_per_disk_per_year: self.disk_spin_ups as f64 * per_disk_year,
            tb_per_disk_per_year: disk_bytes / 1e12 * per_disk_year,
            high_load_spin_ups: self.high_load_spin_ups,
            rebuild: self.rebuild.as_ref().and_then(|rebuild| {
                let group = rebuild.group?;
                let done_us = rebuild.done_us.expect("the run drains the rebuild");
                Some(RebuildReport {
                    group,
                    failed_disk: self.rack.disks[rebuild.failed_disk? as usize].id,
                    stacks: rebuild.lost_stacks,
                    bytes: rebuild.lost_bytes,
                    failed_at_s: rebuild.failed_us as f64 / 1e6,
                    time_s: (done_us - rebuild.failed_us) as f64 / 1e6,
                })
            }),
            rebuild_class: self.rebuild.as_ref().and_then(|rebuild| {
                let group = rebuild.group?;
                Some(self.model.target_classes.as_ref()?[group as usize])
            }),
            power_w: Power {
                mean: power_mean_w,
                peak: power_peak_w,
            },
            max_active_disks: self.disks.max_not_resting(),
            budget_violations: self.disks.violations(),
            audit_refusals: self.engine.audit().counters().refusals,
            events: self.processed,
            stale_events: self.stale,
            trace_hash: self.trace.finish(),
            idle_spin_down_s: self.idle_spin_down_s,
            idle_spin_downs: self.idle_spin_downs,
            energy_kwh: power_mean_w * window_s / JOULES_PER_KWH,
            idle_savings: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight(id: u64) -> InFlight {
        let request = Request {
            id,
            group: 0,
            bytes: 1,
            kind: Kind::Client,
        };
        InFlight::new(request, id, false)
    }

    #[test]
    fn an_event_hashes_as_its_seventeen_byte_encoding() {
        let events = [
            Event::Arrive,
            Event::DiskSpunUp { disk: 1_151 },
            Event::GroupSpunUp { group: 47 },
            Event::DiskSpunDown { disk: 0 },
            Event::GroupSpunDown { group: 3 },
            Event::FirstByte { request: 662_639 },
            Event::FlowDone {
                generation: u64::MAX,
            },
            Event::Timeout,
            Event::Fail,
        ];
        for event in events {
            let (mut encoded, mut hashed) = (TraceHash::new(), TraceHash::new());
            encoded.write(&event.encode());
            event.hash_into(&mut hashed);
            assert_eq!(hashed.finish(), encoded.finish(), "{event:?}");
        }
    }

    #[test]
    fn the_in_flight_table_finds_and_removes_requests_in_any_order_and_forgets_old_slots() {
        let mut table = InFlightTable::default();
        for id in [3, 4, 7, 8] {
            table.insert(id, flight(id));
        }
        assert!(table.get_mut(5).is_none(), "a gap (a rejected id) is empty");
        assert!(table.get_mut(2).is_none() && table.get_mut(9).is_none());
        assert_eq!(table.remove(7).unwrap().arrival_us, 7);
        assert!(table.remove(7).is_none());
        assert_eq!(table.remove(3).unwrap().arrival_us, 3);
        // The oldest in flight is now 4: the window starts there.
        assert_eq!((table.first_id, table.slots.len()), (4, 5));
        table.get_mut(8).unwrap().serve_us = Some(10);
        assert_eq!(table.remove(4).unwrap().arrival_us, 4);
        assert_eq!(table.remove(8).unwrap().serve_us, Some(10));
        assert!(table.is_empty() && table.slots.is_empty());
        table.insert(20, flight(20));
        assert_eq!(table.get_mut(20).unwrap().arrival_us, 20);
    }
}
