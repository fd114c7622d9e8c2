//! The event loop: a virtual clock in integer microseconds, a heap of `(time_us, sequence,
//! Event)`, the real scheduling policy (`ClassScheduler`, `Flamingo`, `FullyProvisioned` or
//! `RandomPlacement`), model disks ([`crate::disks`]) and the shared link
//! ([`crate::network`]). It owns the translation between scheduler actions and model time.
//!
//! Invariants: events are processed in (time, sequence) order and time never goes back; the
//! sequence number makes ties resolve in push order, so nothing depends on `Event`'s own order;
//! every random choice comes from the one `ChaCha8Rng` in a fixed call order; every accepted
//! request is served to its last byte before `simulate` returns (arrivals stop at `hours`, then
//! the queues drain), and the scheduler ends idle.

use crate::config::PolicyKind;
use crate::config::{SimConfig, SimError};
use crate::disks::Disks;
use crate::network::{Completion, Network};
use crate::random_layout::{PLACEMENT_SETS, random_placements};
use crate::report::{Power, Report, Summary, TraceHash};
use crate::sample::{exponential_us, sample_us, seconds_to_us};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_model::{DiskIndex, GroupIndex, Layout, Rack, StateIndex};
use spinwise_sched::flamingo::Flamingo;
use spinwise_sched::policy::{FullyProvisioned, Policy};
use spinwise_sched::random::RandomPlacement;
use spinwise_sched::scheduler::{Action, ClassScheduler, Kind, Request};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The next client read arrives (one pending at a time: each arrival draws the next gap).
    Arrive,
    /// One disk of a spinning-up group reached the active state (its mount may still run).
    DiskSpunUp { disk: DiskIndex },
    /// Every disk of the group is spun up and mounted: tell the scheduler.
    GroupSpunUp { group: GroupIndex },
    /// The group's unmount finished; its disks rest again.
    GroupSpunDown { group: GroupIndex },
    /// The seek of a request being served is over: its flow starts.
    FirstByte { request: u64 },
    /// A flow's last byte, valid only if `generation` is still the flow's.
    FlowDone { request: u64, generation: u64 },
    /// The policy asked to be polled at this time (`Policy::next_timeout_us`); stale when the
    /// policy has since asked for another time.
    Timeout,
}

impl Event {
    /// A fixed encoding for the trace hash: tag, then two little-endian u64 fields.
    fn encode(&self) -> [u8; 17] {
        let (tag, a, b) = match *self {
            Event::Arrive => (0u8, 0, 0),
            Event::DiskSpunUp { disk } => (1, u64::from(disk), 0),
            Event::GroupSpunUp { group } => (2, u64::from(group), 0),
            Event::GroupSpunDown { group } => (3, u64::from(group), 0),
            Event::FirstByte { request } => (4, request, 0),
            Event::FlowDone {
                request,
                generation,
            } => (5, request, generation),
            Event::Timeout => (6, 0, 0),
        };
        let mut bytes = [0u8; 17];
        bytes[0] = tag;
        bytes[1..9].copy_from_slice(&a.to_le_bytes());
        bytes[9..17].copy_from_slice(&b.to_le_bytes());
        bytes
    }
}

/// A request accepted by the scheduler and not yet finished.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    request: Request,
    arrival_us: u64,
    serve_us: Option<u64>,
    first_byte_us: Option<u64>,
}

/// Model constants derived once from the rack, layout and configuration.
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
    /// k data disks × disk bandwidth, bytes/µs (systematic code: a read touches k disks).
    flow_cap_bytes_per_us: f64,
}

struct Loop<'a> {
    rack: &'a Rack,
    config: &'a SimConfig,
    model: Model,
    rng: ChaCha8Rng,
    scheduler: Box<dyn Policy>,
    disks: Disks,
    network: Network,
    events: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    window_us: (u64, u64),
    next_request: u64,
    in_flight: BTreeMap<u64, InFlight>,
    spin_up_started_us: Vec<Option<u64>>,
    completions: Vec<Completion>,
    /// The policy timeout an `Event::Timeout` is queued for, if any.
    timeout_us: Option<u64>,
    // Metrics for requests arriving in the window.
    requests: u64,
    rejected: u64,
    spin_ups: u64,
    ttfb_us: Vec<u64>,
    completion_us: Vec<u64>,
    service_us: Vec<u64>,
    spin_up_us: Vec<u64>,
    processed: u64,
    stale: u64,
    trace: TraceHash,
}

/// Runs `config` on `rack` with `layout` (planned for that rack) and reports what it measured.
/// Deterministic: the same inputs give the same report, trace hash included.
pub fn simulate(rack: &Rack, layout: &Layout, config: &SimConfig) -> Result<Report, SimError> {
    config.validate()?;
    let mut model = model(rack, layout)?;
    // FP runs the same disks on a rack provisioned for all of them; the checker and the power
    // meter then judge it against those budgets.
    let provisioned;
    let (rack, scheduler): (&Rack, Box<dyn Policy>) = match config.policy {
        PolicyKind::Pelican => (rack, Box::new(ClassScheduler::new(layout)?)),
        PolicyKind::FullyProvisioned => {
            provisioned = rack.fully_provisioned();
            (&provisioned, Box::new(FullyProvisioned::new(layout)))
        }
        PolicyKind::Flamingo => (rack, Box::new(Flamingo::new(layout)?)),
        PolicyKind::Random => (rack, random_policy(rack, layout, config, &mut model)?),
    };
    let units = model.unit_disks.len();
    let window_us = (config.warmup_us(), config.end_us());
    let mut sim = Loop {
        rack,
        config,
        model,
        rng: ChaCha8Rng::seed_from_u64(config.seed),
        scheduler,
        disks: Disks::new(rack, window_us),
        network: Network::new(config.network_gbps, window_us),
        events: BinaryHeap::new(),
        sequence: 0,
        window_us,
        next_request: 0,
        in_flight: BTreeMap::new(),
        spin_up_started_us: vec![None; units],
        completions: Vec::new(),
        timeout_us: None,
        requests: 0,
        rejected: 0,
        spin_ups: 0,
        ttfb_us: Vec::new(),
        completion_us: Vec::new(),
        service_us: Vec::new(),
        spin_up_us: Vec::new(),
        processed: 0,
        stale: 0,
        trace: TraceHash::new(),
    };
    sim.schedule_next_arrival(0);
    let last_us = sim.run();
    Ok(sim.report(last_us))
}

/// The random straw-man layout (Pelican §2.2): [`PLACEMENT_SETS`] sets of k + r disks from the
/// run's seed become the request targets, single disks the units spun up and down, and the
/// policy queues as many requests in all as Pelican's classes together.
fn random_policy(
    rack: &Rack,
    layout: &Layout,
    config: &SimConfig,
    model: &mut Model,
) -> Result<Box<dyn Policy>, SimError> {
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
    model.target_disks = placements.clone();
    Ok(Box::new(RandomPlacement::new(
        rack, placements, max_queued,
    )?))
}

fn model(rack: &Rack, layout: &Layout) -> Result<Model, SimError> {
    let rack_fingerprint = rack.fingerprint();
    if layout.rack_fingerprint != rack_fingerprint {
        return Err(SimError::LayoutMismatch {
            layout_rack: layout.rack.clone(),
            layout_fingerprint: layout.rack_fingerprint.clone(),
            rack: rack.name.clone(),
            rack_fingerprint,
        });
    }
    let unit_disks: Vec<Vec<DiskIndex>> = layout
        .groups
        .iter()
        .map(|ids| {
            ids.iter()
                .map(|id| {
                    rack.disks
                        .binary_search_by_key(id, |d| d.id)
                        .map(|index| index as DiskIndex)
                        .map_err(|_| SimError::UnknownDisk { id: *id })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
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
    let bandwidth_mb_per_s = rack.disk_model.bandwidth_mb_per_s;
    Ok(Model {
        target_disks: unit_disks.clone(),
        unit_disks,
        resting: rack.resting_state(),
        spinning_up,
        active: rack.active_state(),
        seek_us: seconds_to_us(rack.disk_model.seek_ms / 1e3),
        // MB/s = bytes/µs.
        flow_cap_bytes_per_us: f64::from(layout.erasure.k) * bandwidth_mb_per_s,
    })
}

impl Loop<'_> {
    fn push(&mut self, at_us: u64, event: Event) {
        self.sequence += 1;
        self.events.push(Reverse((at_us, self.sequence, event)));
    }

    fn in_window(&self, at_us: u64) -> bool {
        (self.window_us.0..self.window_us.1).contains(&at_us)
    }

    fn schedule_next_arrival(&mut self, now_us: u64) {
        let at_us = now_us + exponential_us(self.config.rate_per_s, &mut self.rng);
        if at_us < self.window_us.1 {
            self.push(at_us, Event::Arrive);
        }
    }

    /// Processes events until none is left; returns the time of the last one.
    fn run(&mut self) -> u64 {
        let mut now_us = 0;
        while let Some(Reverse((at_us, _, event))) = self.events.pop() {
            debug_assert!(at_us >= now_us, "time went back");
            now_us = at_us;
            if !self.handle(now_us, event) {
                self.stale += 1;
                continue;
            }
            self.processed += 1;
            self.trace.write(&now_us.to_le_bytes());
            self.trace.write(&event.encode());
            while let Some(action) = self.scheduler.poll_action(now_us) {
                self.perform(now_us, action);
            }
            self.schedule_timeout(now_us);
        }
        assert!(self.scheduler.is_idle(), "the scheduler ended with work");
        assert!(self.in_flight.is_empty(), "accepted requests left unserved");
        assert_eq!(self.network.flows(), 0, "flows left running");
        now_us
    }

    /// Queues a wake-up for the policy's next timeout unless one is queued for that time already.
    /// A timeout at or before `now_us` would be a policy asking to be polled again for nothing.
    fn schedule_timeout(&mut self, now_us: u64) {
        let wanted_us = self.scheduler.next_timeout_us();
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
            Event::Arrive => {
                let id = self.next_request;
                self.next_request += 1;
                let group = self.rng.random_range(0..self.model.target_disks.len()) as GroupIndex;
                let request = Request {
                    id,
                    group,
                    bytes: self.config.blob_bytes,
                    kind: Kind::Client,
                };
                let counted = self.in_window(now_us);
                self.requests += u64::from(counted);
                match self.scheduler.submit(now_us, request) {
                    Ok(()) => {
                        self.in_flight.insert(
                            id,
                            InFlight {
                                request,
                                arrival_us: now_us,
                                serve_us: None,
                                first_byte_us: None,
                            },
                        );
                    }
                    Err(_) => self.rejected += u64::from(counted),
                }
                self.schedule_next_arrival(now_us);
            }
            Event::DiskSpunUp { disk } => {
                self.disks
                    .set(self.rack, now_us, &[disk], self.model.active);
            }
            Event::GroupSpunUp { group } => {
                self.scheduler.spun_up(now_us, group);
                let started_us = self.spin_up_started_us[group as usize]
                    .take()
                    .expect("a spin-up was started");
                if self.in_window(started_us) {
                    self.spin_up_us.push(now_us - started_us);
                }
            }
            Event::GroupSpunDown { group } => {
                self.disks.set(
                    self.rack,
                    now_us,
                    &self.model.unit_disks[group as usize],
                    self.model.resting,
                );
                self.scheduler.spun_down(now_us, group);
            }
            Event::FirstByte { request } => {
                let flight = self.in_flight.get_mut(&request).expect("being served");
                flight.first_byte_us = Some(now_us);
                let bytes = flight.request.bytes;
                self.network.start(
                    now_us,
                    request,
                    bytes,
                    self.model.flow_cap_bytes_per_us,
                    &mut self.completions,
                );
                self.schedule_completions();
            }
            Event::FlowDone {
                request,
                generation,
            } => {
                if !self
                    .network
                    .finish(now_us, request, generation, &mut self.completions)
                {
                    return false;
                }
                self.schedule_completions();
                let flight = self.in_flight.remove(&request).expect("being served");
                self.scheduler.served(now_us, &flight.request);
                if self.in_window(flight.arrival_us) {
                    let serve_us = flight.serve_us.expect("served");
                    let first_byte_us = flight.first_byte_us.expect("flow started");
                    self.ttfb_us.push(first_byte_us - flight.arrival_us);
                    self.completion_us.push(now_us - flight.arrival_us);
                    self.service_us.push(now_us - serve_us);
                }
            }
        }
        true
    }

    fn schedule_completions(&mut self) {
        let completions = std::mem::take(&mut self.completions);
        for completion in &completions {
            self.push(
                completion.done_us,
                Event::FlowDone {
                    request: completion.id,
                    generation: completion.generation,
                },
            );
        }
        self.completions = completions;
        self.completions.clear();
    }

    /// Carries out one scheduler action in model time.
    fn perform(&mut self, now_us: u64, action: Action) {
        match action {
            Action::SpinUp(group) => {
                self.spin_ups += u64::from(self.in_window(now_us));
                self.spin_up_started_us[group as usize] = Some(now_us);
                let disks = std::mem::take(&mut self.model.unit_disks[group as usize]);
                self.disks
                    .set(self.rack, now_us, &disks, self.model.spinning_up);
                // Each disk spins up and mounts on its own; the group is ready when the slowest
                // disk is (draws in disk order: spin-up, then mount).
                let mut ready_us = 0;
                for &disk in &disks {
                    let spin_up_us =
                        sample_us(&self.rack.disk_model.spin_up_latency_s, &mut self.rng);
                    let mount_us = sample_us(&self.rack.disk_model.mount_latency_s, &mut self.rng);
                    self.push(now_us + spin_up_us, Event::DiskSpunUp { disk });
                    ready_us = ready_us.max(spin_up_us + mount_us);
                }
                self.model.unit_disks[group as usize] = disks;
                self.push(now_us + ready_us, Event::GroupSpunUp { group });
            }
            Action::SpinDown(group) => {
                // Disks stay active (and drawing) while the group unmounts; one unmount sample per
                // group, the disks then spin down together.
                let unmount_us = sample_us(&self.rack.disk_model.unmount_latency_s, &mut self.rng);
                self.push(now_us + unmount_us, Event::GroupSpunDown { group });
            }
            Action::Serve(request) => {
                let flight = self.in_flight.get_mut(&request.id).expect("accepted");
                flight.serve_us = Some(now_us);
                self.push(
                    now_us + self.model.seek_us,
                    Event::FirstByte {
                        request: request.id,
                    },
                );
            }
        }
    }

    fn report(&mut self, last_us: u64) -> Report {
        self.disks.finish(last_us);
        let window_s = (self.window_us.1 - self.window_us.0) as f64 / 1e6;
        let (power_mean_w, power_peak_w) = self.disks.power_w();
        Report {
            rack: self.rack.name.clone(),
            seed: self.config.seed,
            rate_per_s: self.config.rate_per_s,
            window_s,
            requests: self.requests,
            completed: self.completion_us.len() as u64,
            rejected: self.rejected,
            time_to_first_byte_s: Summary::of_us(&mut self.ttfb_us),
            completion_time_s: Summary::of_us(&mut self.completion_us),
            service_time_s: Summary::of_us(&mut self.service_us),
            spin_up_s: Summary::of_us(&mut self.spin_up_us),
            throughput_gbps: self.network.delivered_in_window_bytes() * 8.0 / window_s / 1e9,
            spin_ups: self.spin_ups,
            power_w: Power {
                mean: power_mean_w,
                peak: power_peak_w,
            },
            max_active_disks: self.disks.max_not_resting(),
            budget_violations: self.disks.violations(),
            events: self.processed,
            stale_events: self.stale,
            trace_hash: self.trace.finish(),
        }
    }
}
