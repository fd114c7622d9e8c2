//! The emulated disk: one directory of a host filesystem played as a disk with real power
//! states. Spin-up, mount and unmount sleep the rack's sampled latencies times a time factor;
//! reads and writes can be throttled to the rack's bandwidth; a failed disk persists a `.failed`
//! marker so it stays failed after a restart; [`Faults`] injects the failures the store must
//! survive (short reads, a removed disk, failing writes). Each power transition is published in
//! the directory ([`crate::power_file`]) so other processes see the disk's state, as `hdparm -C`
//! shows a real drive's.
//!
//! Invariants: the file half is `files::DirectoryFiles` (shared with the block disk), so atomicity,
//! durability and capacity are those of the contract; the power gate admits file operations
//! only while `Active`. `files` is `None` only for a disk whose directory was missing at open,
//! which is `Failed` from birth, so an admitted operation always has its files. The published
//! phase is never milder than the truth: `spinning-up` is written before the spin-up sleeps and
//! `active` only after; `spinning-down` while IO is kept out and `standby` after the wind-down;
//! once the disk fails, every later publication says `failed`.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::files::{DirectoryFiles, Hooks};
use crate::gate::PowerGate;
use crate::power_file::{POWER_STATE_FILE, PowerPhase, holds_power_phase, publish_power_phase};
use crate::timeline::{Timeline, WallTimeline};
use crate::timing::{DiskTiming, LatencySampler, Throttle, check_time_factor, duration_from_s};
use crate::{Disk, DiskError, DiskIndex, Overwrite, PowerState, Space};

/// The marker a failed disk leaves in its directory (a name users cannot create).
pub const FAILED_MARKER: &str = ".failed";

/// How to build an [`EmulatedDisk`].
#[derive(Clone, Debug)]
pub struct EmulatedConfig {
    /// The directory that is the disk's platter (one per disk).
    pub directory: PathBuf,
    pub index: DiskIndex,
    pub capacity_bytes: u64,
    /// Latencies (and, for the model disk, bandwidth and seek) from the rack's disk model.
    pub timing: DiskTiming,
    /// Multiplies every latency: 0 = instant, 1 = the rack's real latencies (e.g. 0.01 in tests).
    pub time_factor: f64,
    /// Optional rate for reads and writes together, bytes/s (the rack's `bandwidth_mb_per_s` ×
    /// 10⁶ for a faithful disk); not scaled by `time_factor`. `None`: the host's speed.
    pub throttle_bytes_per_s: Option<f64>,
    /// Seeds the disk's latency stream (mixed with `index`).
    pub seed: u64,
    /// The time line the latencies and the throttle wait on; `None`: the wall clock.
    pub timeline: Option<Arc<dyn Timeline>>,
}

impl EmulatedConfig {
    /// An instant disk (no latency, no throttle): set the other fields to taste.
    pub fn new(directory: impl Into<PathBuf>, index: DiskIndex, capacity_bytes: u64) -> Self {
        EmulatedConfig {
            directory: directory.into(),
            index,
            capacity_bytes,
            timing: DiskTiming::instant(),
            time_factor: 0.0,
            throttle_bytes_per_s: None,
            seed: 0,
            timeline: None,
        }
    }
}

/// Fault injection for tests and operations drills (not for production paths): a handle shared
/// with its disk, so a test can break the disk while the store holds it.
#[derive(Clone, Debug)]
pub struct Faults {
    state: Arc<FaultState>,
    directory: PathBuf,
}

#[derive(Debug, Default)]
struct FaultState {
    short_reads: AtomicBool,
    failing_writes: AtomicU32,
}

impl Faults {
    /// While on, every read returns half the bytes it found (a lying disk: short, not at EOF).
    pub fn set_short_reads(&self, on: bool) {
        self.state.short_reads.store(on, Ordering::Release);
    }

    /// The next `count` writes fail with an IO error after their bytes reached the temporary
    /// file (so the cleanup path runs).
    pub fn fail_next_writes(&self, count: u32) {
        self.state.failing_writes.store(count, Ordering::Release);
    }

    /// Pulls the disk: deletes its directory and everything on it. The disk answers `Failed`
    /// from its next operation on.
    pub fn remove_disk(&self) -> io::Result<()> {
        fs::remove_dir_all(&self.directory)
    }
}

impl FaultState {
    fn take_write_failure(&self) -> bool {
        self.failing_writes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// A directory played as a disk. See the module and crate documentation.
#[derive(Debug)]
pub struct EmulatedDisk {
    index: DiskIndex,
    directory: PathBuf,
    files: Option<DirectoryFiles>,
    gate: PowerGate,
    timing: DiskTiming,
    time_factor: f64,
    sampler: LatencySampler,
    throttle: Option<Throttle>,
    timeline: Arc<dyn Timeline>,
    faults: Arc<FaultState>,
    /// Serializes publications of the power state (a `mark_failed` may race a transition).
    publishing: Mutex<()>,
    /// Held through a whole power command, its publications included, so a transition's last
    /// word (`standby` after a spin-down) can never land after the next one's first.
    transitions: Mutex<()>,
}

impl EmulatedDisk {
    /// Creates the directory if needed (a new, empty disk) and opens it.
    pub fn create(config: EmulatedConfig) -> Result<EmulatedDisk, DiskError> {
        fs::create_dir_all(&config.directory).map_err(|source| DiskError::Io {
            disk: config.index,
            context: format!("creating {}", config.directory.display()),
            source,
        })?;
        EmulatedDisk::open(config)
    }

    /// Opens an existing disk in standby: removes temporary files a crash left and counts the
    /// bytes stored. A missing directory is a removed disk and a `.failed` marker a failed one:
    /// both open as `Failed` (so the store sees the failure instead of an error).
    pub fn open(config: EmulatedConfig) -> Result<EmulatedDisk, DiskError> {
        EmulatedDisk::open_seeing(config, &mut |_| {})
    }

    /// [`EmulatedDisk::open`], showing `seen` every name in the directory as opening lists it
    /// (temporary files included, before a leftover is removed; nothing when the directory is
    /// missing), so a caller that wants the names (the store's blob ids) lists nothing twice.
    /// The names are host metadata: seeing them spins nothing up.
    pub fn open_seeing(
        config: EmulatedConfig,
        seen: &mut dyn FnMut(&str),
    ) -> Result<EmulatedDisk, DiskError> {
        check_time_factor(config.time_factor)?;
        config.timing.check()?;
        let timeline = config
            .timeline
            .unwrap_or_else(|| Arc::new(WallTimeline::new()));
        let throttle = config
            .throttle_bytes_per_s
            .map(|rate| Throttle::new(rate, config.index, timeline.clone()))
            .transpose()?;
        // One listing answers everything opening needs: whether the disk is there, its failed
        // marker, a power-state file a previous process left, and the bytes stored.
        let listed = DirectoryFiles::list(
            config.index,
            &config.directory,
            config.capacity_bytes,
            &[FAILED_MARKER, POWER_STATE_FILE],
            seen,
        )?;
        let (files, failed, left_power_file) = match listed {
            None => (None, true, false),
            Some((files, hidden)) => (
                Some(files),
                hidden.contains(FAILED_MARKER),
                hidden.contains(POWER_STATE_FILE),
            ),
        };
        let state = if failed {
            PowerState::Failed
        } else {
            PowerState::Standby
        };
        let disk = EmulatedDisk {
            index: config.index,
            gate: PowerGate::new(config.index, state),
            sampler: LatencySampler::new(config.seed, config.index),
            directory: config.directory,
            files,
            timing: config.timing,
            time_factor: config.time_factor,
            throttle,
            timeline,
            faults: Arc::new(FaultState::default()),
            publishing: Mutex::new(()),
            transitions: Mutex::new(()),
        };
        // The opening process drives the disk from now on, and a fresh handle is in standby
        // (or failed): whatever an earlier, dead process published is stale. Standby is the
        // file's absence (`power_file`), so a disk closed cleanly costs opening nothing here;
        // a file left behind is removed without being read.
        let failed_published = || holds_power_phase(&disk.directory, PowerPhase::Failed);
        match disk.gate.state() {
            PowerState::Failed if !failed_published() => disk.publish(PowerPhase::Failed),
            PowerState::Failed => {}
            _ if left_power_file => disk.publish(PowerPhase::Standby),
            _ => {}
        }
        Ok(disk)
    }

    /// Publishes `phase` in the directory for other processes (`failed` once the disk failed).
    /// Best effort: the file is an observation of the disk, so failing to write it (a pulled
    /// disk has no directory) must not fail the power command it reports.
    fn publish(&self, phase: PowerPhase) {
        let _serialized = self.publishing.lock().unwrap_or_else(|e| e.into_inner());
        let phase = match self.gate.state() {
            PowerState::Failed => PowerPhase::Failed,
            _ => phase,
        };
        let _ = publish_power_phase(&self.directory, phase);
    }

    /// Publishes what the gate says now (after a transition ended, in success or failure).
    fn publish_gate_state(&self) {
        self.publish(match self.gate.state() {
            PowerState::Standby => PowerPhase::Standby,
            PowerState::Active => PowerPhase::Active,
            PowerState::Failed => PowerPhase::Failed,
        });
    }

    /// The fault-injection handle (tests and drills only).
    pub fn faults(&self) -> Faults {
        Faults {
            state: Arc::clone(&self.faults),
            directory: self.directory.clone(),
        }
    }

    pub fn directory(&self) -> &Path {
        &self.directory
    }

    fn sleep_scaled(&self, seconds: f64) {
        let duration = duration_from_s(seconds * self.time_factor);
        if !duration.is_zero() {
            let duration_us = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
            let at_us = self.timeline.now_us().saturating_add(duration_us);
            self.timeline.sleep_until_us(at_us, u64::from(self.index));
        }
    }

    fn hooks(&self) -> Hooks<'_> {
        Hooks {
            throttle: self.throttle.as_ref(),
            fail_write: false,
        }
    }

    /// Runs one file operation behind the power gate; an error on a disk whose directory is
    /// gone means the disk was pulled, which fails it.
    fn file_op<T>(
        &self,
        op: impl FnOnce(&DirectoryFiles) -> Result<T, DiskError>,
    ) -> Result<T, DiskError> {
        let _admitted = self.gate.admit_io()?;
        let files = self
            .files
            .as_ref()
            .expect("an admitted operation has its files (only a Failed disk lacks them)");
        op(files).map_err(|error| self.check_removed(error))
    }

    fn check_removed(&self, error: DiskError) -> DiskError {
        let maybe_removed = matches!(error, DiskError::Io { .. } | DiskError::NotFound { .. });
        if maybe_removed && !self.directory.is_dir() {
            self.gate.fail();
            DiskError::Failed { disk: self.index }
        } else {
            error
        }
    }
}

impl Disk for EmulatedDisk {
    fn index(&self) -> DiskIndex {
        self.index
    }

    fn power_state(&self) -> PowerState {
        self.gate.state()
    }

    fn spin_up(&self) -> Result<(), DiskError> {
        let _transition = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        let result = self.gate.spin_up(|| {
            if !self.directory.is_dir() {
                self.gate.fail();
                return Err(DiskError::Failed { disk: self.index });
            }
            self.publish(PowerPhase::SpinningUp);
            let latency_s = self.sampler.spin_up_s(&self.timing);
            self.sleep_scaled(latency_s);
            Ok(())
        });
        self.publish_gate_state();
        result
    }

    fn spin_down(&self) -> Result<(), DiskError> {
        let _transition = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        let result = self.gate.spin_down(
            || self.publish(PowerPhase::SpinningDown),
            || {
                let latency_s = self.sampler.spin_down_s(&self.timing);
                self.sleep_scaled(latency_s);
                Ok(())
            },
        );
        self.publish_gate_state();
        result
    }

    fn mark_failed(&self) {
        self.gate.fail();
        self.publish(PowerPhase::Failed);
        // Best effort: a pulled disk has no directory to hold the marker, and is failed anyway.
        if let Some(files) = &self.files {
            let _ = files.write_marker(FAILED_MARKER);
        }
    }

    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.file_op(|files| {
            let hooks = Hooks {
                fail_write: self.faults.take_write_failure(),
                ..self.hooks()
            };
            files.write_file(name, len_bytes, data, overwrite, hooks)
        })
    }

    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        let read = self.file_op(|files| files.read_at(name, offset, buffer, self.hooks()))?;
        if self.faults.short_reads.load(Ordering::Acquire) {
            Ok(read / 2)
        } else {
            Ok(read)
        }
    }

    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.file_op(|files| files.file_len(name))
    }

    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.file_op(|files| files.remove_file(name))
    }

    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.file_op(|files| files.list_files())
    }

    fn space(&self) -> Result<Space, DiskError> {
        // The count is in memory; look at the directory so a pulled disk is noticed here too.
        self.file_op(|files| match fs::metadata(&self.directory) {
            Ok(_) => files.space(),
            Err(source) => Err(DiskError::Io {
                disk: self.index,
                context: format!("looking at {}", self.directory.display()),
                source,
            }),
        })
    }
}
