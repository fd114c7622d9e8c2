//! What a candidate rack does under the requested workload, measured by spinwise-sim — never
//! estimated: its saturation throughput, and at the load the design would give it, its time to
//! first byte and its disks' mean power.
//!
//! A block is measured in at most three steps:
//! 1. **saturation**: reads offered at 1.5× an upper bound of what the rack could move (its
//!    spinning groups' data disks at full bandwidth, or its NICs if less); the delivered
//!    throughput is the rack's capability under this workload, spin-ups and seeks included;
//! 2. **at load**: reads at `min(demand, max_utilisation × saturation)`, where the demand is the
//!    read intensity (required MB/s per stored TB) times the data the rack holds;
//! 3. only if step 2 misses the first-byte target or rejects reads: a bisection of the load
//!    (at most [`LATENCY_BISECTION_STEPS`] runs) to the highest that keeps it.
//!
//! Every run is seeded and deterministic; [`SimMemo`] lets a caller keep outcomes across
//! invocations (the CLI keeps them in a directory), keyed by everything that decides the run.

use crate::candidate::Candidate;
use crate::catalogue::ReadSize;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};
use spinwise_sim::{Arrivals, BlobSizes, Operation, SimConfig, TraceRecord, simulate};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Runs of the load bisection when the first-byte target or the queue bound is missed.
pub const LATENCY_BISECTION_STEPS: u32 = 5;
/// Most trace records one run may replay (a model's reads are replayed as a trace).
pub const MAX_TRACE_RECORDS: f64 = 2_000_000.0;
/// A load whose runs reject more than this share of reads is over capacity.
pub const MAX_REJECT_RATE: f64 = 0.001;
/// Sizes drawn to estimate a file-size model's mean (seeded: the same every run).
const MEAN_SAMPLES: u32 = 200_000;
/// Reads a run at load measures at least, so its 99th percentile rests on ~20 reads above it:
/// a lightly loaded block runs longer than [`SimSettings::hours`] (up to
/// [`MAX_RUN_HOURS`]).
pub const MIN_MEASURED_READS: f64 = 2_000.0;
/// Hours of a saturation run, warm-up included: a saturated rack reaches its steady
/// throughput within minutes, and an hour of it is thousands of reads.
pub const SATURATION_HOURS: f64 = 1.5;
/// The longest run at load, hours.
pub const MAX_RUN_HOURS: f64 = 24.0 * 14.0;
/// Bumped whenever what a run measures changes, so a memo never returns a stale outcome.
const MEMO_VERSION: u32 = 2;

/// How long and with which seed every run goes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimSettings {
    pub hours: f64,
    pub warmup_hours: f64,
    pub seed: u64,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            hours: 4.0,
            warmup_hours: 0.5,
            seed: 1,
        }
    }
}

/// The read workload a run replays.
#[derive(Clone, Copy, Debug)]
pub struct ReadWorkload {
    pub size: ReadSize,
    /// The mean read, bytes (a model's from a fixed seeded sample).
    pub mean_bytes: f64,
}

impl ReadWorkload {
    pub fn new(size: ReadSize) -> ReadWorkload {
        let mean_bytes = match size {
            ReadSize::Fixed { bytes } => bytes as f64,
            ReadSize::Model(model) => {
                let mut rng = ChaCha8Rng::seed_from_u64(0x6d65_616e);
                let total: f64 = (0..MEAN_SAMPLES)
                    .map(|_| model.sample_bytes(&mut rng) as f64)
                    .sum();
                total / f64::from(MEAN_SAMPLES)
            }
        };
        ReadWorkload { size, mean_bytes }
    }

    fn describe(&self) -> String {
        match self.size {
            ReadSize::Fixed { bytes } => format!("fixed:{bytes}"),
            ReadSize::Model(model) => format!(
                "{}:{}:{}",
                model.shape.family().name(),
                model.variable.name(),
                model.params_text()
            ),
        }
    }
}

/// What one run measured that the design uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimOutcome {
    pub throughput_mb_per_s: f64,
    pub reject_rate: f64,
    pub ttfb_mean_s: f64,
    pub ttfb_p99_s: f64,
    pub disk_power_mean_w: f64,
    pub requests: u64,
}

/// Keeps run outcomes between invocations. Keys are whole descriptions of a run.
pub trait SimMemo: Sync {
    fn get(&self, key: &str) -> Option<SimOutcome>;
    fn put(&self, key: &str, outcome: &SimOutcome);
}

/// No memo: every run runs.
pub struct NoMemo;

impl SimMemo for NoMemo {
    fn get(&self, _key: &str) -> Option<SimOutcome> {
        None
    }
    fn put(&self, _key: &str, _outcome: &SimOutcome) {}
}

/// Every outcome of this process kept in memory in front of another memo (a directory, or
/// none): the sensitivity rows and the frontier measure the same saturations again and again.
pub struct InMemory<'a> {
    outcomes: Mutex<BTreeMap<String, SimOutcome>>,
    behind: &'a dyn SimMemo,
}

impl<'a> InMemory<'a> {
    pub fn new(behind: &'a dyn SimMemo) -> InMemory<'a> {
        InMemory {
            outcomes: Mutex::new(BTreeMap::new()),
            behind,
        }
    }

    fn remember(&self, key: &str, outcome: &SimOutcome) {
        self.outcomes
            .lock()
            .expect("no memo user panics holding the lock")
            .insert(key.to_string(), *outcome);
    }
}

impl SimMemo for InMemory<'_> {
    fn get(&self, key: &str) -> Option<SimOutcome> {
        let kept = self
            .outcomes
            .lock()
            .expect("no memo user panics holding the lock")
            .get(key)
            .copied();
        kept.or_else(|| {
            let found = self.behind.get(key)?;
            self.remember(key, &found);
            Some(found)
        })
    }

    fn put(&self, key: &str, outcome: &SimOutcome) {
        self.remember(key, outcome);
        self.behind.put(key, outcome);
    }
}

/// A candidate rack measured under the workload at the design's load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// Network the rack's servers have in all, Gbps.
    pub network_gbps: f64,
    pub saturation_mb_per_s: f64,
    /// The read load the block carries in the design, MB/s (0: it cannot keep the targets).
    pub load_mb_per_s: f64,
    pub load_req_per_s: f64,
    /// At that load.
    pub ttfb_mean_s: f64,
    pub ttfb_p99_s: f64,
    pub disk_power_mean_w: f64,
    /// The first-byte target or the queue bound, not the demand or the utilisation cap, set
    /// the load.
    pub limited_by_latency: bool,
    /// Runs this measurement took, and how many the memo answered.
    pub simulations: u32,
    pub remembered: u32,
}

/// One block's measurement: its candidate, network and the load its data asks for.
pub struct Trial<'a> {
    pub candidate: &'a Candidate,
    pub network_gbps: f64,
    pub demand_mb_per_s: f64,
    pub max_utilisation: f64,
    pub first_byte_p99_s: Option<f64>,
}

/// Measures `trial` (module docs: saturation, at load, bisection if needed).
pub fn measure(
    trial: &Trial,
    workload: &ReadWorkload,
    settings: &SimSettings,
    memo: &dyn SimMemo,
) -> Result<Measured, String> {
    let mut runner = Runner {
        trial,
        workload,
        settings,
        memo,
        simulations: 0,
        remembered: 0,
    };
    let saturation = runner.saturate()?;
    let saturation_mb_per_s = saturation.throughput_mb_per_s;
    let mut load = trial
        .demand_mb_per_s
        .min(trial.max_utilisation * saturation_mb_per_s);
    let mut at_load = runner.run_at(load / runner.mean_mb())?;
    if load > 0.0 && at_load.requests == 0 {
        // No read measured, so no first byte either: an empty run must not pass for one that
        // met the targets in 0 s.
        return Err(format!(
            "at {load:.3e} MB/s the at-load run measured no reads (its longest run is {MAX_RUN_HOURS} h): raise max_utilisation or the demand"
        ));
    }
    let limited_by_latency = !runner.keeps_targets(&at_load);
    if limited_by_latency {
        (load, at_load) = runner.bisect(load)?;
    }
    Ok(Measured {
        network_gbps: trial.network_gbps,
        saturation_mb_per_s,
        load_mb_per_s: load,
        load_req_per_s: load / runner.mean_mb(),
        ttfb_mean_s: at_load.ttfb_mean_s,
        ttfb_p99_s: at_load.ttfb_p99_s,
        disk_power_mean_w: at_load.disk_power_mean_w,
        limited_by_latency,
        simulations: runner.simulations,
        remembered: runner.remembered,
    })
}

struct Runner<'a> {
    trial: &'a Trial<'a>,
    workload: &'a ReadWorkload,
    settings: &'a SimSettings,
    memo: &'a dyn SimMemo,
    simulations: u32,
    remembered: u32,
}

impl Runner<'_> {
    fn mean_mb(&self) -> f64 {
        self.workload.mean_bytes / 1e6
    }

    /// 1.5× the most the rack could move: its spinning groups' data disks streaming, or its
    /// NICs if they carry less.
    fn overload_req_per_s(&self) -> f64 {
        let figures = &self.trial.candidate.figures;
        let disks_mb_per_s = f64::from(figures.max_spinning_groups * figures.k)
            * self.trial.candidate.rack.disk_model.bandwidth_mb_per_s;
        let network_mb_per_s = self.trial.network_gbps * 125.0;
        1.5 * disks_mb_per_s.min(network_mb_per_s) / self.mean_mb()
    }

    fn keeps_targets(&self, outcome: &SimOutcome) -> bool {
        outcome.reject_rate <= MAX_REJECT_RATE
            && self
                .trial
                .first_byte_p99_s
                .is_none_or(|target| outcome.ttfb_p99_s <= target)
    }

    /// The highest load in (0, `failing`) that keeps the targets, or 0 with the last outcome.
    fn bisect(&mut self, failing: f64) -> Result<(f64, SimOutcome), String> {
        let (mut low, mut high) = (0.0, failing);
        let mut best = (0.0, SimOutcome::idle());
        for _ in 0..LATENCY_BISECTION_STEPS {
            let middle = (low + high) / 2.0;
            let outcome = self.run_at(middle / self.mean_mb())?;
            if self.keeps_targets(&outcome) {
                (low, best) = (middle, (middle, outcome));
            } else {
                high = middle;
            }
        }
        Ok(best)
    }

    /// The saturation run: [`SATURATION_HOURS`], however long the settings' runs are.
    fn saturate(&mut self) -> Result<SimOutcome, String> {
        self.run(self.overload_req_per_s(), SATURATION_HOURS)
    }

    /// A run at a load: the settings' hours, or longer for a light load (see
    /// [`MIN_MEASURED_READS`]).
    fn run_at(&mut self, rate_per_s: f64) -> Result<SimOutcome, String> {
        let settings = self.settings;
        let needed = settings.warmup_hours + MIN_MEASURED_READS / (rate_per_s * 3600.0);
        self.run(rate_per_s, settings.hours.max(needed.min(MAX_RUN_HOURS)))
    }

    fn run(&mut self, rate_per_s: f64, hours: f64) -> Result<SimOutcome, String> {
        if rate_per_s <= 0.0 {
            return Ok(SimOutcome::idle());
        }
        let settings = SimSettings {
            hours,
            ..*self.settings
        };
        let key = self.key(rate_per_s, &settings);
        self.simulations += 1;
        if let Some(outcome) = self.memo.get(&key) {
            self.remembered += 1;
            return Ok(outcome);
        }
        let outcome = self.simulate(rate_per_s, &settings)?;
        self.memo.put(&key, &outcome);
        Ok(outcome)
    }

    fn key(&self, rate_per_s: f64, settings: &SimSettings) -> String {
        let candidate = self.trial.candidate;
        format!(
            "v{MEMO_VERSION}|{}|{}|net={}|rate={rate_per_s:e}|{}|h={}|w={}|seed={}",
            candidate.rack.name,
            candidate.layout.rack_fingerprint,
            self.trial.network_gbps,
            self.workload.describe(),
            settings.hours,
            settings.warmup_hours,
            settings.seed
        )
    }

    fn simulate(&self, rate_per_s: f64, settings: &SimSettings) -> Result<SimOutcome, String> {
        let mut config = SimConfig {
            rate_per_s,
            hours: settings.hours,
            warmup_hours: settings.warmup_hours,
            seed: settings.seed,
            network_gbps: Some(self.trial.network_gbps),
            ..SimConfig::default()
        };
        match self.workload.size {
            ReadSize::Fixed { bytes } => {
                config.blob_bytes = bytes;
                config.blob_sizes = BlobSizes::Fixed;
            }
            ReadSize::Model(model) => {
                let expected = rate_per_s * settings.hours * 3600.0;
                if expected > MAX_TRACE_RECORDS {
                    return Err(format!(
                        "{expected:.0} reads in one run exceed the limit of {MAX_TRACE_RECORDS:.0}: \
                         the reads are too small for this rack's throughput"
                    ));
                }
                config.arrivals = Arrivals::Trace(poisson_trace(rate_per_s, settings, |rng| {
                    model.sample_bytes(rng)
                }));
            }
        }
        let candidate = self.trial.candidate;
        let report =
            simulate(&candidate.rack, &candidate.layout, &config).map_err(|e| e.to_string())?;
        assert_eq!(
            report.budget_violations, 0,
            "the simulator's checker found a budget broken on {}",
            candidate.rack.name
        );
        Ok(SimOutcome {
            throughput_mb_per_s: report.throughput_gbps * 125.0,
            reject_rate: report.reject_rate,
            ttfb_mean_s: report.time_to_first_byte_s.mean,
            ttfb_p99_s: report.time_to_first_byte_s.p99,
            disk_power_mean_w: report.power_w.mean,
            requests: report.requests,
        })
    }
}

impl SimOutcome {
    /// A run with no reads: nothing delivered, nothing waited.
    fn idle() -> SimOutcome {
        SimOutcome {
            throughput_mb_per_s: 0.0,
            reject_rate: 0.0,
            ttfb_mean_s: 0.0,
            ttfb_p99_s: 0.0,
            disk_power_mean_w: 0.0,
            requests: 0,
        }
    }
}

/// Poisson reads at `rate_per_s` over the run, each of a drawn size and a random key (the
/// simulator hashes keys to groups, so reads are uniform over groups).
fn poisson_trace(
    rate_per_s: f64,
    settings: &SimSettings,
    mut size: impl FnMut(&mut ChaCha8Rng) -> u64,
) -> Vec<TraceRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed ^ 0x0074_7261_6365);
    let gaps = Exp::new(rate_per_s).expect("a positive rate");
    let end_us = settings.hours * 3.6e9;
    let mut records = Vec::new();
    let mut time_us = 0.0;
    loop {
        time_us += gaps.sample(&mut rng) * 1e6;
        if time_us >= end_us {
            return records;
        }
        let key = format!("design-{:016x}", rng.random::<u64>());
        records.push(TraceRecord {
            time_us: time_us as u64,
            operation: Operation::Read,
            key,
            size_bytes: size(&mut rng),
        });
    }
}
