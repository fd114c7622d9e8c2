//! The flash device on a simulated clock, comparing non-preemptive and semi-preemptive garbage
//! collection under one request stream. One operation at a time (one chip behind one channel):
//! each time the device is free it asks [`GcPolicy::decide`], then serves the oldest waiting
//! request whole, does one collection unit, or waits for the next arrival.
//!
//! What is modelled, and what is not (docs/gc.md says why):
//! - A request's response time runs from its arrival to its last page; reads cost a cell read
//!   and a transfer per page, writes a transfer and a program per page.
//! - A collection unit is one valid page moved by copy-back (read + program, no transfer) or
//!   the victim's erase. A page the host overwrote since the victim was picked is skipped.
//! - A host write that finds fewer free pages than it needs (the reserved block excluded) first
//!   runs collection itself, non-preemptibly: its response time includes it (`forced_units`).
//! - The slides' merge (a waiting read of a page being moved served by the move's read) and
//!   pipelining (a move's cell operations overlapped with a request's transfer) are not
//!   modelled: both modes here differ only in preemption.
//! - Before the measured run the device is filled and aged with random overwrites, collection
//!   taking no time, so the run starts in the steady state of its workload; the first
//!   `warmup_requests` are then run on the clock and not measured.
//!
//! Invariant: a run is a function of its [`SimConfig`]; the FTL's invariants hold after it
//! (checked at the end of every run).

use crate::GcError;
use crate::flash::{FlashConfig, Ftl};
use crate::policy::{Decision, GcMode, GcPolicy, GcThresholds, GcView};
use crate::workload::{Request, Stream, Workload};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

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

    /// One collection unit; its duration in µs.
    fn gc_unit(&mut self) -> f64 {
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
                return self.config.timings.move_us();
            }
        }
        let victim = collection.victim;
        self.collection = None;
        self.ftl.erase(victim);
        self.blocks_collected += 1;
        self.config.timings.block_erase_us
    }

    /// Serves `request` whole; its duration in µs and the collection units it had to run.
    fn serve(&mut self, request: &Request) -> (f64, u64) {
        let timings = self.config.timings;
        if request.read {
            return (f64::from(request.pages) * timings.host_read_us(), 0);
        }
        let mut elapsed_us = 0.0;
        let mut forced = 0;
        while self.ftl.host_writable_pages() < u64::from(request.pages) {
            assert!(
                self.work_available(),
                "a full device with no garbage: the logical space exceeds the physical"
            );
            elapsed_us += self.gc_unit();
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
    let run = run_requests(&mut device, &policy, config);
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
    /// When the warm-up's last request completed (0 without a warm-up).
    warm_at_us: f64,
    ended_us: f64,
    moved_before: u64,
    collected_before: u64,
}

fn run_requests(device: &mut Device, policy: &GcPolicy, config: &SimConfig) -> Run {
    let total = config.warmup_requests + config.requests;
    let mut stream = Stream::new(
        config.workload,
        device.ftl.logical_pages(),
        config.flash.page_bytes,
        config.seed,
    );
    let mut next = stream.next_request();
    let mut arrived = 0u64;
    let mut completed = 0u64;
    let mut queue: VecDeque<(u64, Request)> = VecDeque::new();
    let mut now_us = 0.0;
    // The collection under way began at `current_start_us`; the last one ran over `last_us`.
    let mut current_start_us = 0.0;
    let mut last_us = (0.0, 0.0);
    let mut run = Run {
        responses_us: Vec::with_capacity(config.requests as usize),
        preemptions: 0,
        arrived_during_collection: 0,
        forced_units: 0,
        busy_us: 0.0,
        warm_at_us: 0.0,
        ended_us: 0.0,
        moved_before: 0,
        collected_before: 0,
    };
    while completed < total {
        while arrived < total && next.arrival_us <= now_us {
            let during = (device.collection.is_some() && next.arrival_us >= current_start_us)
                || (last_us.0..last_us.1).contains(&next.arrival_us);
            if during && arrived >= config.warmup_requests {
                run.arrived_during_collection += 1;
            }
            queue.push_back((arrived, next));
            arrived += 1;
            next = stream.next_request();
        }
        let view = GcView {
            free_blocks: device.ftl.free_blocks(),
            collecting: device.collection.is_some(),
            work_available: device.work_available(),
            foreground_waiting: !queue.is_empty(),
        };
        let measuring = completed >= config.warmup_requests;
        let busy_us = match policy.decide(view) {
            Decision::Foreground => {
                let (index, request) = queue.pop_front().expect("a request waits");
                if view.collecting && index >= config.warmup_requests {
                    run.preemptions += 1;
                }
                let collections_before = (device.collection.is_some(), device.blocks_collected);
                let (service_us, forced) = device.serve(&request);
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
                completed += 1;
                if completed == config.warmup_requests {
                    run.warm_at_us = now_us;
                    run.moved_before = device.pages_moved;
                    run.collected_before = device.blocks_collected;
                }
                if index >= config.warmup_requests {
                    run.responses_us.push(now_us - request.arrival_us);
                    run.forced_units += forced;
                }
                service_us
            }
            Decision::GcUnit => {
                if device.collection.is_none() {
                    current_start_us = now_us;
                }
                let unit_us = device.gc_unit();
                now_us += unit_us;
                if device.collection.is_none() {
                    last_us = (current_start_us, now_us);
                }
                unit_us
            }
            Decision::Wait => {
                now_us = now_us.max(next.arrival_us);
                0.0
            }
        };
        if measuring {
            run.busy_us += busy_us;
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
    }
}
