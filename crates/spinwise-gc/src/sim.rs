//! The flash device on a simulated clock, comparing non-preemptive and semi-preemptive garbage
//! collection under one request stream. One chip behind one channel: each time the device is
//! free it asks [`GcPolicy::decide`], then serves the oldest waiting request whole, does one
//! collection unit, or waits for the next arrival.
//!
//! What is modelled, and what is not (docs/gc.md says why):
//! - A request's response time runs from its arrival to its last page; reads cost a cell read
//!   and a transfer per page, writes a transfer and a program per page.
//! - A collection unit is one valid page moved by copy-back (read + program, no transfer) or
//!   the victim's erase. A page the host overwrote since the victim was picked is skipped.
//! - A host write that finds fewer free pages than it needs (the reserved block excluded) first
//!   runs collection itself, non-preemptibly: its response time includes it (`forced_units`).
//! - Merge (the slides' technique #2, [`SimConfig::merge`]): when a unit moves a page that a
//!   waiting read asks for, the move's cell read serves it too: the page goes out over the
//!   channel after the move's read (one transfer per such read, before the program), and the
//!   read no longer reads that page itself. A read all of whose pages were delivered this way
//!   completes at its last page's transfer, whatever its place in the queue. Units run inside a
//!   host write (forced) do not merge.
//! - Pipelining (technique #3, [`SimConfig::pipeline`]): the channel and the chip's cells work
//!   at once where the slides draw it. Three overlaps, no others: (a) a unit that starts right
//!   after a served read starts when that read's last cell read ends, its cells working while
//!   the read's last page transfers out; (b) a write served right after a unit transfers its
//!   first page in while the unit's cells work (from when the channel is free and the write
//!   has arrived); (c) a merged read's transfers go out while the move programs. Each overlap
//!   is at most the shorter of the two operations; `overlapped_us` adds them up. Forced units
//!   and a request's own pages are not pipelined (both modes alike).
//! - Before the measured run the device is filled and aged with random overwrites, collection
//!   taking no time, so the run starts in the steady state of its workload; the first
//!   `warmup_requests` are then run on the clock and not measured.
//! - One chip: DiskSim's eight parallel elements are not modelled.
//!
//! Invariant: a run is a function of its [`SimConfig`]; the FTL's invariants hold after it
//! (checked at the end of every run); with `merge` and `pipeline` off the run is the one the
//! simulator made before they existed.

use crate::GcError;
use crate::flash::{FlashConfig, Ftl};
use crate::policy::{Decision, GcMode, GcPolicy, GcThresholds, GcView};
use crate::workload::{Request, Stream, Workload};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, VecDeque};

/// The most requests one run may measure.
pub const MAX_REQUESTS: u64 = 50_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    pub flash: FlashConfig,
    pub mode: GcMode,
    pub thresholds: GcThresholds,
    pub workload: Workload,
    /// Requests measured, after the warm-up.
    pub requests: u64,
    pub warmup_requests: u64,
    pub seed: u64,
    /// Random single-page overwrites before the run, in multiples of the logical space.
    pub aging_passes: f64,
    /// Serve a waiting read of a page being moved by the move's read (the slides' merge).
    pub merge: bool,
    /// Overlap channel transfers with collection's cell operations (the slides' pipeline).
    pub pipeline: bool,
}

impl SimConfig {
    /// The default device (flash::FlashConfig::DEFAULT), collection from 5% free blocks
    /// (DiskSim's SSD default) and non-preemptive below 1%, 200,000 measured requests.
    pub fn new(workload: Workload, mode: GcMode) -> SimConfig {
        let flash = FlashConfig::DEFAULT;
        let blocks = u64::from(flash.blocks);
        let thresholds = GcThresholds {
            soft_free_blocks: (blocks / 20).max(3),
            hard_free_blocks: (blocks / 100).max(2),
        };
        SimConfig {
            flash,
            mode,
            thresholds,
            workload,
            requests: 200_000,
            warmup_requests: 20_000,
            seed: 1,
            aging_passes: 2.0,
            merge: false,
            pipeline: false,
        }
    }
}

/// What one run measured. Times in microseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct GcReport {
    pub workload: &'static str,
    pub mode: GcMode,
    pub requests: u64,
    pub mean_response_us: f64,
    /// Population variance of the response times, µs².
    pub response_variance_us2: f64,
    pub p50_response_us: f64,
    pub p99_response_us: f64,
    pub max_response_us: f64,
    /// Blocks collected (erased) after the warm-up.
    pub blocks_collected: u64,
    pub pages_moved: u64,
    /// Times a request was served while a block's collection was under way.
    pub preemptions: u64,
    /// Measured requests that arrived while a block was being collected (from its victim's
    /// pick to its erase's end): the requests non-preemptive collection makes wait.
    pub arrived_during_collection: u64,
    /// Collection units run inside a host write that found no room.
    pub forced_units: u64,
    pub simulated_s: f64,
    /// Share of the time after the warm-up that the device was busy (requests and collection).
    pub busy_fraction: f64,
    /// Pages of measured reads served by a collection move's read (merge).
    pub merged_pages: u64,
    /// Measured reads completed by merges alone, before their turn in the queue.
    pub reads_completed_by_merge: u64,
    /// Time after the warm-up that a transfer and a cell operation overlapped (pipeline).
    pub overlapped_us: f64,
}

/// One unit of collection.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Move { lpn: u32 },
    Erase,
}

/// A block being collected: its valid pages when it was picked, and how far the moves got.
struct Collection {
    victim: u32,
    pages: Vec<u32>,
    next: usize,
}

struct Device {
    ftl: Ftl,
    config: FlashConfig,
    collection: Option<Collection>,
    pages_moved: u64,
    blocks_collected: u64,
}

impl Device {
    fn work_available(&self) -> bool {
        self.collection.is_some() || self.ftl.pick_victim().is_some()
    }

    /// One collection unit: what it was and its duration in µs.
    fn gc_unit(&mut self) -> (Unit, f64) {
        if self.collection.is_none() {
            let victim = self
                .ftl
                .pick_victim()
                .expect("collection is only asked for when there is garbage");
            let pages = self.ftl.valid_pages(victim);
            self.collection = Some(Collection {
                victim,
                pages,
                next: 0,
            });
        }
        let collection = self.collection.as_mut().expect("set above");
        while let Some(&lpn) = collection.pages.get(collection.next) {
            collection.next += 1;
            if self.ftl.block_of(lpn) == Some(collection.victim) {
                assert!(self.ftl.write(lpn, true), "relocation always has a page");
                self.pages_moved += 1;
                return (Unit::Move { lpn }, self.config.timings.move_us());
            }
        }
        let victim = collection.victim;
        self.collection = None;
        self.ftl.erase(victim);
        self.blocks_collected += 1;
        (Unit::Erase, self.config.timings.block_erase_us)
    }

    /// Serves `request` whole, but for `delivered` pages of a read that merges already sent;
    /// its duration in µs and the collection units it had to run.
    fn serve(&mut self, request: &Request, delivered: u32) -> (f64, u64) {
        let timings = self.config.timings;
        if request.read {
            let pages = request.pages - delivered;
            return (f64::from(pages) * timings.host_read_us(), 0);
        }
        let mut elapsed_us = 0.0;
        let mut forced = 0;
        while self.ftl.host_writable_pages() < u64::from(request.pages) {
            assert!(
                self.work_available(),
                "a full device with no garbage: the logical space exceeds the physical"
            );
            elapsed_us += self.gc_unit().1;
            forced += 1;
        }
        for lpn in request.first_page..request.first_page + request.pages {
            assert!(self.ftl.write(lpn, false), "room was made for the write");
        }
        elapsed_us += f64::from(request.pages) * timings.host_write_us();
        (elapsed_us, forced)
    }

    /// Fills every logical page, then overwrites random ones, collecting whenever free space
    /// falls below the soft threshold; no time passes.
    fn age(&mut self, passes: f64, soft_free_blocks: u64, seed: u64) {
        let logical = self.ftl.logical_pages();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xa6e5_1f0c_d2b3_9487);
        let overwrites = (f64::from(logical) * passes) as u64;
        for lpn in 0..logical {
            self.age_write(lpn, soft_free_blocks);
        }
        for _ in 0..overwrites {
            let lpn = rng.random_range(0..logical);
            self.age_write(lpn, soft_free_blocks);
        }
        self.pages_moved = 0;
        self.blocks_collected = 0;
    }

    fn age_write(&mut self, lpn: u32, soft_free_blocks: u64) {
        while (self.ftl.free_blocks() < soft_free_blocks || self.ftl.host_writable_pages() == 0)
            && self.work_available()
        {
            self.gc_unit();
        }
        assert!(self.ftl.write(lpn, false), "aging found no room");
    }
}

/// Runs `config` to completion.
pub fn simulate(config: &SimConfig) -> Result<GcReport, GcError> {
    config.workload.validate()?;
    let thresholds = GcThresholds::new(
        config.thresholds.soft_free_blocks,
        config.thresholds.hard_free_blocks,
    )?;
    if !(1..=MAX_REQUESTS).contains(&config.requests)
        || config.warmup_requests > MAX_REQUESTS
        || !(config.aging_passes.is_finite() && (0.0..=100.0).contains(&config.aging_passes))
    {
        return Err(GcError::Invalid(format!(
            "requests must be 1 to {MAX_REQUESTS} (warm-up at most as many), aging passes 0 to 100"
        )));
    }
    if thresholds.soft_free_blocks >= u64::from(config.flash.blocks) / 2 {
        return Err(GcError::Invalid(
            "the soft threshold must be below half the blocks".into(),
        ));
    }
    let ftl = Ftl::new(&config.flash)?;
    let policy = GcPolicy::new(config.mode, thresholds);
    let mut device = Device {
        ftl,
        config: config.flash,
        collection: None,
        pages_moved: 0,
        blocks_collected: 0,
    };
    device.age(
        config.aging_passes,
        thresholds.soft_free_blocks,
        config.seed,
    );
    let mut stream = Stream::new(
        config.workload,
        device.ftl.logical_pages(),
        config.flash.page_bytes,
        config.seed,
    );
    let run = run_requests(&mut device, &policy, config, &mut || stream.next_request());
    // A broken FTL invariant is a bug in this crate, not a refusal: assert it.
    if let Err(broken) = device.ftl.check() {
        panic!("the FTL's invariants hold after every run: {broken}");
    }
    Ok(report(config, run, &device))
}

/// What the clocked run collected for the report.
struct Run {
    responses_us: Vec<f64>,
    preemptions: u64,
    arrived_during_collection: u64,
    forced_units: u64,
    busy_us: f64,
    merged_pages: u64,
    reads_completed_by_merge: u64,
    overlapped_us: f64,
    /// Requests completed, warm-up included.
    completed: u64,
    /// When the warm-up's last request completed (0 without a warm-up).
    warm_at_us: f64,
    ended_us: f64,
    moved_before: u64,
    collected_before: u64,
}

impl Run {
    /// Records request `index` (arrived at `arrival_us`) completing at `completion_us`.
    fn complete(
        &mut self,
        index: u64,
        arrival_us: f64,
        completion_us: f64,
        warmup: u64,
        device: &Device,
    ) {
        self.completed += 1;
        if self.completed == warmup {
            self.warm_at_us = completion_us;
            self.moved_before = device.pages_moved;
            self.collected_before = device.blocks_collected;
        }
        if index >= warmup {
            self.responses_us.push(completion_us - arrival_us);
        }
    }
}

/// A request in the queue. Merges may complete one before its turn: it stays in place, `done`,
/// so a request's place is its index less the front's.
struct Waiting {
    index: u64,
    request: Request,
    /// Pages merges already sent to the host.
    delivered: Vec<u32>,
    done: bool,
}

/// The queue in arrival order, and (with merge) which waiting reads ask for each page.
struct Queue {
    entries: VecDeque<Waiting>,
    /// Requests waiting and not done.
    live: u64,
    readers: HashMap<u32, Vec<u64>>,
}

impl Queue {
    fn push(&mut self, index: u64, request: Request, merge: bool) {
        if merge && request.read {
            for lpn in request.first_page..request.first_page + request.pages {
                self.readers.entry(lpn).or_default().push(index);
            }
        }
        self.entries.push_back(Waiting {
            index,
            request,
            delivered: Vec::new(),
            done: false,
        });
        self.live += 1;
    }

    fn get_mut(&mut self, index: u64) -> &mut Waiting {
        let front = self.entries.front().expect("a request waits").index;
        &mut self.entries[(index - front) as usize]
    }

    /// Takes `index` out of the page index and counts it done.
    fn finish(&mut self, index: u64) {
        let waiting = self.get_mut(index);
        waiting.done = true;
        let request = waiting.request;
        self.live -= 1;
        if request.read {
            for lpn in request.first_page..request.first_page + request.pages {
                if let Some(indices) = self.readers.get_mut(&lpn) {
                    indices.retain(|&i| i != index);
                    if indices.is_empty() {
                        self.readers.remove(&lpn);
                    }
                }
            }
        }
    }

    /// The oldest request not done, taken out of the queue.
    fn pop_oldest(&mut self) -> Waiting {
        loop {
            let front = self.entries.front().expect("a request waits");
            if front.done {
                self.entries.pop_front();
                continue;
            }
            let index = front.index;
            self.finish(index);
            return self.entries.pop_front().expect("just seen");
        }
    }
}

/// What the device did last, for pipelining: a unit's cells may overlap a transfer next to it.
#[derive(Clone, Copy)]
enum Last {
    Nothing,
    /// A read ended with its last page's transfer, of this many µs.
    Read {
        transfer_us: f64,
    },
    /// A unit ended; the channel was free from `channel_free_us`.
    Unit {
        channel_free_us: f64,
    },
}

/// Runs `config`'s requests, drawn from `arrivals` in order, on the aged `device`.
fn run_requests(
    device: &mut Device,
    policy: &GcPolicy,
    config: &SimConfig,
    arrivals: &mut dyn FnMut() -> Request,
) -> Run {
    let warmup = config.warmup_requests;
    let total = warmup + config.requests;
    let timings = config.flash.timings;
    let mut next = arrivals();
    let mut arrived = 0u64;
    let mut queue = Queue {
        entries: VecDeque::new(),
        live: 0,
        readers: HashMap::new(),
    };
    let mut now_us = 0.0;
    let mut last = Last::Nothing;
    // The collection under way began at `current_start_us`; the last one ran over `last_us`.
    let mut current_start_us = 0.0;
    let mut last_us = (0.0, 0.0);
    let mut run = Run {
        responses_us: Vec::with_capacity(config.requests as usize),
        preemptions: 0,
        arrived_during_collection: 0,
        forced_units: 0,
        busy_us: 0.0,
        merged_pages: 0,
        reads_completed_by_merge: 0,
        overlapped_us: 0.0,
        completed: 0,
        warm_at_us: 0.0,
        ended_us: 0.0,
        moved_before: 0,
        collected_before: 0,
    };
    while run.completed < total {
        while arrived < total && next.arrival_us <= now_us {
            let during = (device.collection.is_some() && next.arrival_us >= current_start_us)
                || (last_us.0..last_us.1).contains(&next.arrival_us);
            if during && arrived >= warmup {
                run.arrived_during_collection += 1;
            }
            queue.push(arrived, next, config.merge);
            arrived += 1;
            next = arrivals();
        }
        let view = GcView {
            free_blocks: device.ftl.free_blocks(),
            collecting: device.collection.is_some(),
            work_available: device.work_available(),
            foreground_waiting: queue.live > 0,
        };
        let measuring = run.completed >= warmup;
        let mut overlapped_us = 0.0;
        let busy_us = match policy.decide(view) {
            Decision::Foreground => {
                let waiting = queue.pop_oldest();
                let request = waiting.request;
                if view.collecting && waiting.index >= warmup {
                    run.preemptions += 1;
                }
                let collections_before = (device.collection.is_some(), device.blocks_collected);
                let delivered = waiting.delivered.len() as u32;
                let (mut service_us, forced) = device.serve(&request, delivered);
                // A write right after a unit sends its first page in while the unit's cells work.
                if let (true, false, 0, Last::Unit { channel_free_us }) =
                    (config.pipeline, request.read, forced, last)
                {
                    let from_us = channel_free_us.max(request.arrival_us);
                    overlapped_us = timings.transfer_us_per_page.min(now_us - from_us).max(0.0);
                    service_us -= overlapped_us;
                }
                // A write that made room collected on its own: keep the collection's times.
                if forced > 0 {
                    if !collections_before.0 {
                        current_start_us = now_us;
                    }
                    if device.blocks_collected > collections_before.1 {
                        last_us = (current_start_us, now_us + service_us);
                        current_start_us = now_us + service_us;
                    }
                }
                now_us += service_us;
                if waiting.index >= warmup {
                    run.forced_units += forced;
                }
                last = if request.read && delivered < request.pages {
                    Last::Read {
                        transfer_us: timings.transfer_us_per_page,
                    }
                } else {
                    Last::Nothing
                };
                run.complete(waiting.index, request.arrival_us, now_us, warmup, device);
                service_us
            }
            Decision::GcUnit => {
                if device.collection.is_none() {
                    current_start_us = now_us;
                }
                let (unit, unit_us) = device.gc_unit();
                // The unit's cells start when the read before it finished its cell reads.
                let tail_us = match (config.pipeline, last) {
                    (true, Last::Read { transfer_us }) => transfer_us.min(unit_us),
                    _ => 0.0,
                };
                let begin_us = now_us - tail_us;
                let mut end_us = begin_us + unit_us;
                let mut channel_free_us = now_us;
                let mut serial_us = unit_us;
                if let (true, Unit::Move { lpn }) = (config.merge, unit) {
                    let read_done_us = begin_us + timings.page_read_us;
                    let mut channel_us = read_done_us.max(now_us);
                    let mut transfers = 0u32;
                    let readers = queue.readers.get(&lpn).cloned().unwrap_or_default();
                    for index in readers {
                        let waiting = queue.get_mut(index);
                        if waiting.done || waiting.delivered.contains(&lpn) {
                            continue;
                        }
                        transfers += 1;
                        channel_us += timings.transfer_us_per_page;
                        waiting.delivered.push(lpn);
                        let whole = waiting.delivered.len() as u32 == waiting.request.pages;
                        let arrival_us = waiting.request.arrival_us;
                        if index >= warmup {
                            run.merged_pages += 1;
                        }
                        if whole {
                            queue.finish(index);
                            if index >= warmup {
                                run.reads_completed_by_merge += 1;
                            }
                            run.complete(index, arrival_us, channel_us, warmup, device);
                        }
                    }
                    if transfers > 0 {
                        serial_us += f64::from(transfers) * timings.transfer_us_per_page;
                        channel_free_us = channel_us;
                        // The program waits for the transfers, unless pipelined beside them.
                        end_us = if config.pipeline {
                            (read_done_us + timings.page_write_us).max(channel_us)
                        } else {
                            channel_us + timings.page_write_us
                        };
                    }
                }
                let elapsed_us = end_us - now_us;
                if config.pipeline {
                    overlapped_us = serial_us - elapsed_us;
                }
                now_us = end_us;
                if device.collection.is_none() {
                    last_us = (current_start_us, now_us);
                }
                last = Last::Unit { channel_free_us };
                elapsed_us
            }
            Decision::Wait => {
                now_us = now_us.max(next.arrival_us);
                last = Last::Nothing;
                0.0
            }
        };
        if measuring {
            run.busy_us += busy_us;
            run.overlapped_us += overlapped_us;
        }
    }
    run.ended_us = now_us;
    run
}

fn report(config: &SimConfig, mut run: Run, device: &Device) -> GcReport {
    let count = run.responses_us.len() as f64;
    let mean = run.responses_us.iter().sum::<f64>() / count;
    let variance = run
        .responses_us
        .iter()
        .map(|r| (r - mean) * (r - mean))
        .sum::<f64>()
        / count;
    run.responses_us.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let rank = ((q * count).ceil() as usize).clamp(1, run.responses_us.len());
        run.responses_us[rank - 1]
    };
    let span_us = (run.ended_us - run.warm_at_us).max(f64::MIN_POSITIVE);
    GcReport {
        workload: config.workload.name,
        mode: config.mode,
        requests: run.responses_us.len() as u64,
        mean_response_us: mean,
        response_variance_us2: variance,
        p50_response_us: quantile(0.5),
        p99_response_us: quantile(0.99),
        max_response_us: *run.responses_us.last().expect("at least one request"),
        blocks_collected: device.blocks_collected - run.collected_before,
        pages_moved: device.pages_moved - run.moved_before,
        preemptions: run.preemptions,
        arrived_during_collection: run.arrived_during_collection,
        forced_units: run.forced_units,
        simulated_s: span_us / 1e6,
        busy_fraction: (run.busy_us / span_us).min(1.0),
        merged_pages: run.merged_pages,
        reads_completed_by_merge: run.reads_completed_by_merge,
        overlapped_us: run.overlapped_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(workload: &str, mode: GcMode) -> SimConfig {
        SimConfig {
            requests: 20_000,
            warmup_requests: 2_000,
            flash: FlashConfig {
                blocks: 256,
                ..FlashConfig::DEFAULT
            },
            thresholds: GcThresholds::new(12, 3).unwrap(),
            ..SimConfig::new(Workload::trace(workload).unwrap(), mode)
        }
    }

    #[test]
    fn a_run_is_a_function_of_its_configuration() {
        let config = quick("financial", GcMode::SemiPreemptive);
        assert_eq!(simulate(&config).unwrap(), simulate(&config).unwrap());
        let other_seed = SimConfig { seed: 2, ..config };
        assert_ne!(simulate(&config).unwrap(), simulate(&other_seed).unwrap());
    }

    #[test]
    fn semi_preemption_shortens_the_wait_of_requests_arriving_during_collection() {
        for workload in ["financial", "cello"] {
            let np = simulate(&quick(workload, GcMode::NonPreemptive)).unwrap();
            let sp = simulate(&quick(workload, GcMode::SemiPreemptive)).unwrap();
            assert!(
                np.blocks_collected > 100,
                "{workload}: collection runs: {np:?}"
            );
            assert_eq!(np.preemptions, 0, "{workload}: nothing preempts NP");
            assert!(
                sp.preemptions > 0,
                "{workload}: requests went mid-collection"
            );
            assert!(
                sp.mean_response_us < np.mean_response_us,
                "{workload}: mean {} vs {}",
                sp.mean_response_us,
                np.mean_response_us
            );
            assert!(
                sp.response_variance_us2 < np.response_variance_us2,
                "{workload}: variance {} vs {}",
                sp.response_variance_us2,
                np.response_variance_us2
            );
        }
    }

    #[test]
    fn at_a_low_rate_only_non_preemptive_requests_wait_out_a_whole_block() {
        // At 5 requests a second the queue is nearly always empty, so a request's worst wait
        // is what it arrives behind: a whole block's collection (moves and an erase) under
        // NP, one unit (at most an erase) under SP.
        let config = SimConfig {
            workload: Workload {
                arrivals_per_s: 5.0,
                ..Workload::trace("financial").unwrap()
            },
            ..quick("financial", GcMode::SemiPreemptive)
        };
        let timings = config.flash.timings;
        let full_block_us = 64.0 * timings.move_us() + timings.block_erase_us;
        let sp = simulate(&config).unwrap();
        let np = simulate(&SimConfig {
            mode: GcMode::NonPreemptive,
            ..config
        })
        .unwrap();
        assert_eq!((sp.forced_units, np.forced_units), (0, 0));
        assert!(sp.max_response_us < full_block_us, "{sp:?}");
        assert!(
            np.max_response_us > sp.max_response_us + timings.block_erase_us,
            "NP {np:?}, SP {sp:?}"
        );
    }

    /// A small aged device in the middle of nothing, and the victim its next collection takes.
    fn aged_device(seed: u64) -> (Device, SimConfig, Vec<u32>) {
        let flash = FlashConfig {
            blocks: 16,
            pages_per_block: 16,
            over_provision_fraction: 0.25,
            ..FlashConfig::DEFAULT
        };
        let config = SimConfig {
            flash,
            requests: 1,
            warmup_requests: 0,
            seed,
            ..SimConfig::new(Workload::trace("cello").unwrap(), GcMode::NonPreemptive)
        };
        let mut device = Device {
            ftl: Ftl::new(&flash).unwrap(),
            config: flash,
            collection: None,
            pages_moved: 0,
            blocks_collected: 0,
        };
        device.age(2.0, 3, seed);
        let victim = device.ftl.pick_victim().unwrap();
        let pages = device.ftl.valid_pages(victim);
        (device, config, pages)
    }

    /// The response time of one read of `lpn` arriving 1 µs into a non-preemptive collection
    /// that starts at once (the policy's soft threshold is above the free blocks).
    fn read_during_collection(merge: bool, lpn: u32) -> f64 {
        let (mut device, config, _) = aged_device(11);
        let config = SimConfig { merge, ..config };
        let soft = device.ftl.free_blocks() + 1;
        let policy = GcPolicy::new(GcMode::NonPreemptive, GcThresholds::new(soft, 1).unwrap());
        let read = Request {
            arrival_us: 1.0,
            read: true,
            first_page: lpn,
            pages: 1,
        };
        let run = run_requests(&mut device, &policy, &config, &mut || read);
        assert_eq!(run.responses_us.len(), 1);
        assert_eq!(run.merged_pages, u64::from(merge));
        run.responses_us[0]
    }

    #[test]
    fn with_merge_a_read_of_a_page_being_moved_completes_at_the_moves_read() {
        let (_, config, pages) = aged_device(11);
        assert!(pages.len() >= 3, "the victim has pages to move: {pages:?}");
        let timings = config.flash.timings;
        // The read arrives during the first move and asks for the page the second one moves.
        let merged = read_during_collection(true, pages[1]);
        let expected_us = timings.move_us() + timings.host_read_us() - 1.0;
        assert!(
            (merged - expected_us).abs() < 1e-6,
            "{merged} vs {expected_us}"
        );
        // Without merge it waits out the whole block (every move and the erase), then reads.
        let waited = read_during_collection(false, pages[1]);
        let block_us = pages.len() as f64 * timings.move_us() + timings.block_erase_us;
        assert!((waited - (block_us + timings.host_read_us() - 1.0)).abs() < 1e-6);
    }

    #[test]
    fn merge_serves_waiting_reads_and_lowers_their_response_time() {
        let config = SimConfig {
            workload: Workload {
                arrivals_per_s: 400.0,
                ..Workload::trace("tpc-h").unwrap()
            },
            ..quick("tpc-h", GcMode::NonPreemptive)
        };
        let plain = simulate(&config).unwrap();
        let merged = simulate(&SimConfig {
            merge: true,
            ..config
        })
        .unwrap();
        assert_eq!((plain.merged_pages, plain.reads_completed_by_merge), (0, 0));
        assert!(merged.merged_pages > 0, "{merged:?}");
        assert!(merged.reads_completed_by_merge > 0, "{merged:?}");
        assert!(merged.mean_response_us < plain.mean_response_us);
    }

    #[test]
    fn pipelining_lowers_busy_time_for_the_same_requests() {
        for workload in ["financial", "tpc-h"] {
            let config = quick(workload, GcMode::SemiPreemptive);
            let plain = simulate(&config).unwrap();
            let piped = simulate(&SimConfig {
                pipeline: true,
                ..config
            })
            .unwrap();
            let busy_us = |r: &GcReport| r.busy_fraction * r.simulated_s * 1e6;
            assert_eq!(plain.overlapped_us, 0.0);
            assert!(piped.overlapped_us > 0.0, "{workload}: {piped:?}");
            assert!(
                busy_us(&piped) < busy_us(&plain),
                "{workload}: busy {} vs {}",
                busy_us(&piped),
                busy_us(&plain)
            );
        }
    }

    #[test]
    fn a_run_with_every_option_is_a_function_of_its_configuration() {
        let config = SimConfig {
            merge: true,
            pipeline: true,
            workload: Workload {
                arrivals: crate::Arrivals::Bursty {
                    burst_factor: 8.0,
                    mean_burst_requests: 32.0,
                },
                ..Workload::trace("cello").unwrap()
            },
            ..quick("cello", GcMode::SemiPreemptive)
        };
        let report = simulate(&config).unwrap();
        assert_eq!(report, simulate(&config).unwrap());
        assert_ne!(report, simulate(&SimConfig { seed: 2, ..config }).unwrap());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = quick("cello", GcMode::NonPreemptive);
        let zero = SimConfig {
            requests: 0,
            ..config
        };
        assert!(simulate(&zero).is_err());
        let thresholds = SimConfig {
            thresholds: GcThresholds {
                soft_free_blocks: 2,
                hard_free_blocks: 4,
            },
            ..config
        };
        assert!(simulate(&thresholds).is_err());
        let aging = SimConfig {
            aging_passes: f64::INFINITY,
            ..config
        };
        assert!(simulate(&aging).is_err());
        let bursts = SimConfig {
            workload: Workload {
                arrivals: crate::Arrivals::Bursty {
                    burst_factor: 0.0,
                    mean_burst_requests: 8.0,
                },
                ..config.workload
            },
            ..config
        };
        assert!(matches!(simulate(&bursts), Err(GcError::Invalid(_))));
    }
}
