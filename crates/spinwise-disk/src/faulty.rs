//! The faulty disk: the model disk (`model`) behind the disk contract, with the faults a cold
//! store must survive injected on purpose and a crash that drops what was never synced. It is
//! what lets a deterministic simulation crash a store and check that every acknowledged object
//! reads back: a store's data is only as safe as what reached stable storage, and a test whose
//! "crash" leaves the page cache intact cannot tell a synced write from an unsynced one.
//! docs/faults.md writes the fault model down byte by byte.
//!
//! Design: a `FaultyDisk` is a [`ModelDisk`] (power states, virtual-clock timing, space, names:
//! one implementation) with an interposer, the fault plan, that runs before each spin-up, read
//! and write, and that says whether changes are synced before they are acknowledged. Each file
//! keeps its durable content and its pending change (`file_table`), so a crash is exact.
//!
//! Why a knob and not a `sync` in the trait: the contract makes `write_file` and `remove_file`
//! durable on return, so the store never syncs (nor should it: a trait `sync` would be a no-op
//! for every honest disk, and a store leaning on it would be relying on something the contract
//! does not ask for). Where a store's sync lives is inside the disk implementation, so that is
//! where its omission is modelled: [`WriteSync::Skipped`] acknowledges a change with its bytes
//! still pending until the next barrier ([`FaultyDisk::sync`], or a spin-down, which unmounts).
//! A harness that crashes and then checks every acknowledged write fails against such a disk
//! and passes against [`WriteSync::BeforeReturning`]: that pair is how a test shows the harness
//! bites. [`FaultyDisk::unsynced_files`] and [`FaultCounts::unsynced_acknowledged`] say which
//! acknowledged changes are at risk. Should the store one day keep append-only files on a disk
//! that need a caller's barrier, the trait gains `sync` (default `Ok`, honest writes being
//! durable already) and this disk's `sync` is its implementation.
//!
//! Invariants: faults fire only on calls the disk admitted (right power state, valid name), so
//! a script counts the calls that reach the platter; every fault that fires is counted; all
//! randomness comes from ChaCha8 streams seeded from (seed, disk index) and is drawn in a fixed
//! order (rules in the order injected, files in name order), so a seed replays exactly.

use std::io::{self, Read};
use std::sync::{Arc, Mutex, MutexGuard};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::file_table::{CrashMode, CrashReport, UnsyncedFate, WriteSync};
use crate::model::{Interposer, ModelDisk, VirtualClock};
use crate::timing::{DiskTiming, disk_stream};
use crate::{Disk, DiskError, DiskIndex, Overwrite, PowerState, Space};

/// Mixed into the seed of the fault stream, so it differs from the latency stream of the same
/// seed ("faults" in ASCII).
const FAULT_STREAM_TAG: u64 = 0x6661_756c_7473;

/// The calls a fault can be injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// A spin-up from standby (a spin-up of an active disk does nothing and draws no fault).
    SpinUp,
    /// `read_at`.
    Read,
    /// `write_file`.
    Write,
}

/// What an injected fault does to the call it fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call fails with `DiskError::Io` and changes nothing.
    IoError,
    /// The virtual clock moves `extra_us` before the call goes on (a slow, retrying disk).
    LatencySpike { extra_us: u64 },
    /// The disk fails (as `mark_failed`); the call answers `DiskError::Failed`.
    Failure,
}

/// Which admitted calls a fault fires on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// The next `n` calls of the operation.
    NextCalls(u64),
    /// Each call with this probability, drawn from the disk's seeded fault stream.
    Probability(f64),
}

/// Every fault that fired and every unsynced change a crash met, since the disk was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub spin_up_io_errors: u64,
    pub read_io_errors: u64,
    pub write_io_errors: u64,
    pub latency_spikes: u64,
    pub latency_added_us: u64,
    /// Injected failures ([`Fault::Failure`]), not `mark_failed` calls.
    pub failures: u64,
    /// Writes refused with `NoSpace` (a full disk, filled or not).
    pub no_space_refusals: u64,
    /// Writes and removals acknowledged with their change not yet synced.
    pub unsynced_acknowledged: u64,
    pub crashes: u64,
    pub unsynced_lost: u64,
    pub unsynced_torn: u64,
    pub unsynced_landed: u64,
}

/// How to build a [`FaultyDisk`].
#[derive(Clone, Debug)]
pub struct FaultyConfig {
    pub index: DiskIndex,
    pub capacity_bytes: u64,
    pub timing: DiskTiming,
    /// Seeds the latency stream and the fault stream (each mixed with `index`).
    pub seed: u64,
    pub write_sync: WriteSync,
}

impl FaultyConfig {
    /// An instant disk that honours the contract (every change synced): set the rest to taste.
    pub fn new(index: DiskIndex, capacity_bytes: u64) -> FaultyConfig {
        FaultyConfig {
            index,
            capacity_bytes,
            timing: DiskTiming::instant(),
            seed: 0,
            write_sync: WriteSync::BeforeReturning,
        }
    }
}

/// A model disk with injected faults and crashes. See the module documentation.
#[derive(Debug)]
pub struct FaultyDisk {
    model: ModelDisk,
    plan: Arc<FaultPlan>,
    /// Bytes booked by [`FaultyDisk::fill_leaving`], given back by [`FaultyDisk::clear_filler`].
    filler_bytes: Mutex<u64>,
}

#[derive(Debug)]
struct FaultPlan {
    write_sync: WriteSync,
    rules: Mutex<Rules>,
    counts: Mutex<FaultCounts>,
}

#[derive(Debug)]
struct Rules {
    list: Vec<Rule>,
    stream: ChaCha8Rng,
}

#[derive(Debug)]
struct Rule {
    operation: Operation,
    fault: Fault,
    trigger: Trigger,
}

/// What the rules decided for one call.
#[derive(Debug, Default)]
struct Verdict {
    spikes: u64,
    extra_us: u64,
    failure: Option<Fault>,
}

impl Rule {
    /// Whether the rule fires on this call; a `NextCalls` rule uses one of its calls up.
    fn fires(&mut self, stream: &mut ChaCha8Rng) -> bool {
        match &mut self.trigger {
            Trigger::NextCalls(remaining) => {
                let fires = *remaining > 0;
                *remaining = remaining.saturating_sub(1);
                fires
            }
            Trigger::Probability(probability) => stream.random_bool(*probability),
        }
    }
}

impl Rules {
    /// Asks each rule of `operation`, in the order injected: spikes add up, and the first IO
    /// error or failure ends the call (later rules are not asked, so draw nothing).
    fn judge(&mut self, operation: Operation) -> Verdict {
        let mut verdict = Verdict::default();
        let relevant = self.list.iter_mut().filter(|r| r.operation == operation);
        for rule in relevant {
            if !rule.fires(&mut self.stream) {
                continue;
            }
            match rule.fault {
                Fault::LatencySpike { extra_us } => {
                    verdict.spikes += 1;
                    verdict.extra_us = verdict.extra_us.saturating_add(extra_us);
                }
                failing => {
                    verdict.failure = Some(failing);
                    break;
                }
            }
        }
        verdict
    }
}

impl FaultPlan {
    fn counts(&self) -> MutexGuard<'_, FaultCounts> {
        self.counts.lock().expect("fault counts lock poisoned")
    }

    fn rules(&self) -> MutexGuard<'_, Rules> {
        self.rules.lock().expect("fault rules lock poisoned")
    }

    fn injected_io_error(disk: &ModelDisk, operation: Operation) -> DiskError {
        DiskError::Io {
            disk: disk.index(),
            context: format!("{operation:?}"),
            source: io::Error::other("injected IO error"),
        }
    }
}

impl FaultCounts {
    fn count_io_error(&mut self, operation: Operation) {
        match operation {
            Operation::SpinUp => self.spin_up_io_errors += 1,
            Operation::Read => self.read_io_errors += 1,
            Operation::Write => self.write_io_errors += 1,
        }
    }

    fn count_crash(&mut self, report: &CrashReport) {
        self.crashes += 1;
        self.unsynced_lost += report.count(UnsyncedFate::Lost);
        self.unsynced_torn += report.count(UnsyncedFate::Torn { kept_bytes: 0 });
        self.unsynced_landed += report.count(UnsyncedFate::Landed);
    }
}

impl Interposer for FaultPlan {
    fn before(&self, disk: &ModelDisk, operation: Operation) -> Result<(), DiskError> {
        let verdict = self.rules().judge(operation);
        disk.clock().advance_us(verdict.extra_us);
        let mut counts = self.counts();
        counts.latency_spikes += verdict.spikes;
        counts.latency_added_us += verdict.extra_us;
        match verdict.failure {
            None => Ok(()),
            Some(Fault::Failure) => {
                counts.failures += 1;
                disk.mark_failed();
                Err(DiskError::Failed { disk: disk.index() })
            }
            Some(_) => {
                counts.count_io_error(operation);
                Err(FaultPlan::injected_io_error(disk, operation))
            }
        }
    }

    fn write_sync(&self) -> WriteSync {
        self.write_sync
    }
}

impl FaultyDisk {
    /// A new, empty disk in standby, with no fault injected, on `clock`.
    pub fn new(config: FaultyConfig, clock: VirtualClock) -> Result<FaultyDisk, DiskError> {
        let plan = Arc::new(FaultPlan {
            write_sync: config.write_sync,
            rules: Mutex::new(Rules {
                list: Vec::new(),
                stream: disk_stream(config.seed ^ FAULT_STREAM_TAG, config.index),
            }),
            counts: Mutex::new(FaultCounts::default()),
        });
        let model = ModelDisk::interposed(
            config.index,
            config.capacity_bytes,
            config.timing,
            clock,
            config.seed,
            Arc::clone(&plan) as Arc<dyn Interposer>,
        )?;
        Ok(FaultyDisk {
            model,
            plan,
            filler_bytes: Mutex::new(0),
        })
    }

    pub fn clock(&self) -> &VirtualClock {
        self.model.clock()
    }

    /// Adds a fault: it fires on the admitted calls of `operation` that `trigger` picks.
    /// Faults are asked in the order injected. A probability outside [0, 1] is `BadConfig`.
    pub fn inject(
        &self,
        operation: Operation,
        fault: Fault,
        trigger: Trigger,
    ) -> Result<(), DiskError> {
        if let Trigger::Probability(probability) = trigger
            && !(0.0..=1.0).contains(&probability)
        {
            return Err(DiskError::BadConfig {
                reason: format!("a fault probability lies in [0, 1], got {probability}"),
            });
        }
        let rule = Rule {
            operation,
            fault,
            trigger,
        };
        self.plan.rules().list.push(rule);
        Ok(())
    }

    /// Removes every injected fault (the counts stay).
    pub fn clear_faults(&self) {
        self.plan.rules().list.clear();
    }

    /// Makes the disk full but for `free_bytes`, as if something else filled it: writes that
    /// do not fit are refused with `NoSpace`. Adds to an earlier filler.
    pub fn fill_leaving(&self, free_bytes: u64) {
        let booked = self.model.fill_leaving(free_bytes);
        *self.filler() += booked;
    }

    /// Gives back the space [`FaultyDisk::fill_leaving`] took.
    pub fn clear_filler(&self) {
        let mut filler = self.filler();
        self.model.release_filler(*filler);
        *filler = 0;
    }

    fn filler(&self) -> MutexGuard<'_, u64> {
        self.filler_bytes.lock().expect("filler lock poisoned")
    }

    /// The barrier: every change not yet synced becomes durable (as `syncfs`, or the kernel
    /// flushing its cache). Works in any power state: it is the harness's, not the store's.
    pub fn sync(&self) {
        self.model.sync();
    }

    /// The files whose last acknowledged change a crash could still drop or tear, sorted.
    pub fn unsynced_files(&self) -> Vec<String> {
        self.model.unsynced_names()
    }

    /// Power is lost: every unsynced change meets the fate `mode` gives it, drawn from the
    /// stream of (`seed`, this disk's index); the disk is in standby (unless failed), and a
    /// write in flight fails. The files then hold what a restart would find.
    pub fn crash(&self, seed: u64, mode: CrashMode) -> CrashReport {
        self.crash_with(mode, &mut disk_stream(seed, self.model.index()))
    }

    /// [`FaultyDisk::crash`] drawing from the caller's stream (one stream for a whole rack).
    pub fn crash_with(&self, mode: CrashMode, stream: &mut ChaCha8Rng) -> CrashReport {
        let report = self.model.lose_power(mode, stream);
        self.plan.counts().count_crash(&report);
        report
    }

    /// Every fault that fired so far.
    pub fn counts(&self) -> FaultCounts {
        *self.plan.counts()
    }

    /// Counts what the trait call's outcome says about faults: a refusal for space, or a
    /// change acknowledged before it was synced.
    fn count_outcome(&self, result: &Result<(), DiskError>) {
        let mut counts = self.plan.counts();
        match result {
            Err(DiskError::NoSpace { .. }) => counts.no_space_refusals += 1,
            Ok(()) if self.plan.write_sync == WriteSync::Skipped => {
                counts.unsynced_acknowledged += 1
            }
            _ => {}
        }
    }
}

/// One power cut for several disks: each loses power in turn, drawing from the stream of
/// (`seed`, its index), so the outcome does not depend on how many disks share the cut.
pub fn crash_together(disks: &[&FaultyDisk], seed: u64, mode: CrashMode) -> Vec<CrashReport> {
    disks.iter().map(|disk| disk.crash(seed, mode)).collect()
}

impl Disk for FaultyDisk {
    fn index(&self) -> DiskIndex {
        self.model.index()
    }

    fn power_state(&self) -> PowerState {
        self.model.power_state()
    }

    fn spin_up(&self) -> Result<(), DiskError> {
        self.model.spin_up()
    }

    fn spin_down(&self) -> Result<(), DiskError> {
        self.model.spin_down()
    }

    fn mark_failed(&self) {
        self.model.mark_failed();
    }

    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        let result = self.model.write_file(name, len_bytes, data, overwrite);
        self.count_outcome(&result);
        result
    }

    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.model.read_at(name, offset, buffer)
    }

    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.model.file_len(name)
    }

    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        let result = self.model.remove_file(name);
        self.count_outcome(&result);
        result
    }

    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.model.list_files()
    }

    fn space(&self) -> Result<Space, DiskError> {
        self.model.space()
    }
}
