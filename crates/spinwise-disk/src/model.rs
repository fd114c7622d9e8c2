//! The model disk: the simulator's idea of a disk behind the real contract. Files live in
//! memory; time is a [`VirtualClock`] that spin-up, spin-down and IO advance by the rack's
//! sampled latencies and by seek + bytes / bandwidth, instead of sleeping. It answers the same
//! calls with the same errors as the emulated disk, so the conformance suite checks both, and
//! store tests can run a rack in virtual time.
//!
//! The files keep their durability (`file_table::FileTable`): this disk syncs every write and
//! removal before acknowledging it, as the contract says; the faulty disk (`faulty`) is this
//! disk with an `Interposer` that injects faults before operations and may skip that sync, and
//! with crashes that drop what is not synced.
//!
//! Invariants: the space ledger's used bytes are the visible files' lengths plus the
//! reservations of writes in flight (a write reserves before reading its source, so `NoSpace`
//! leaves nothing) plus a faulty disk's filler; a file appears in `files` only whole (the table
//! is updated once, after the source was fully read), and a write that began before a crash
//! fails instead of landing after it. The clock only moves forward. Advances of several disks
//! sharing one clock add up, as if their operations ran one after another.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand_chacha::ChaCha8Rng;

use crate::faulty::Operation;
use crate::file_table::{CrashMode, CrashReport, FileTable, WriteSync};
use crate::gate::PowerGate;
use crate::ledger::SpaceLedger;
use crate::timing::{DiskTiming, LatencySampler};
use crate::{Disk, DiskError, DiskIndex, Overwrite, PowerState, Space, check_name};

/// A virtual clock in microseconds, shared by clones (one per rack, typically).
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    now_us: Arc<AtomicU64>,
}

impl VirtualClock {
    pub fn new() -> VirtualClock {
        VirtualClock::default()
    }

    pub fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::Acquire)
    }

    /// Moves the clock forward by `duration_us`; returns the new time.
    pub fn advance_us(&self, duration_us: u64) -> u64 {
        self.now_us.fetch_add(duration_us, Ordering::AcqRel) + duration_us
    }
}

/// Streamed sources are read this many bytes at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// What the faulty disk adds to a model disk's operations; the model disk alone adds nothing.
pub(crate) trait Interposer: std::fmt::Debug + Send + Sync {
    /// Runs once a call was admitted and its name checked (for a spin-up: once the disk spun
    /// up), before it changes anything; an error ends the call with that error.
    fn before(&self, disk: &ModelDisk, operation: Operation) -> Result<(), DiskError>;
    /// Whether writes and removals are synced before they are acknowledged.
    fn write_sync(&self) -> WriteSync;
}

/// The model disk's own interposer: no faults, every change synced (the contract).
#[derive(Debug)]
struct Faultless;

impl Interposer for Faultless {
    fn before(&self, _disk: &ModelDisk, _operation: Operation) -> Result<(), DiskError> {
        Ok(())
    }

    fn write_sync(&self) -> WriteSync {
        WriteSync::BeforeReturning
    }
}

/// An in-memory disk on a virtual clock. See the module documentation.
#[derive(Debug)]
pub struct ModelDisk {
    index: DiskIndex,
    timing: DiskTiming,
    clock: VirtualClock,
    sampler: LatencySampler,
    gate: PowerGate,
    files: Mutex<FileTable>,
    space: SpaceLedger,
    interposer: Arc<dyn Interposer>,
}

impl ModelDisk {
    /// A new, empty disk in standby. `timing` gives latencies, bandwidth and seek
    /// ([`DiskTiming::from_model`] for the rack's); `seed` its latency stream.
    pub fn new(
        index: DiskIndex,
        capacity_bytes: u64,
        timing: DiskTiming,
        clock: VirtualClock,
        seed: u64,
    ) -> Result<ModelDisk, DiskError> {
        let faultless = Arc::new(Faultless);
        ModelDisk::interposed(index, capacity_bytes, timing, clock, seed, faultless)
    }

    /// A new model disk whose operations go through `interposer` (the faulty disk's faults).
    pub(crate) fn interposed(
        index: DiskIndex,
        capacity_bytes: u64,
        timing: DiskTiming,
        clock: VirtualClock,
        seed: u64,
        interposer: Arc<dyn Interposer>,
    ) -> Result<ModelDisk, DiskError> {
        timing.check()?;
        Ok(ModelDisk {
            index,
            sampler: LatencySampler::new(seed, index),
            gate: PowerGate::new(index, PowerState::Standby),
            timing,
            clock,
            files: Mutex::new(FileTable::default()),
            space: SpaceLedger::new(index, capacity_bytes, 0),
            interposer,
        })
    }

    pub fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    fn advance_s(&self, seconds: f64) {
        self.clock.advance_us((seconds * 1e6).round() as u64);
    }

    /// One IO's time: a seek, then the bytes at the disk's bandwidth.
    fn charge_io(&self, bytes: u64) {
        self.advance_s(self.timing.seek_s + bytes as f64 / self.timing.bandwidth_bytes_per_s);
    }

    fn files(&self) -> std::sync::MutexGuard<'_, FileTable> {
        self.files.lock().expect("files lock poisoned")
    }

    fn file(&self, name: &str) -> Result<Arc<Vec<u8>>, DiskError> {
        check_name(name)?;
        self.files()
            .visible(name)
            .ok_or_else(|| self.not_found(name))
    }

    fn not_found(&self, name: &str) -> DiskError {
        DiskError::NotFound {
            disk: self.index,
            name: name.to_string(),
        }
    }

    fn already_exists(&self, name: &str) -> DiskError {
        DiskError::AlreadyExists {
            disk: self.index,
            name: name.to_string(),
        }
    }

    /// The barrier: every change not yet synced becomes durable.
    pub(crate) fn sync(&self) {
        self.files().sync_all();
    }

    /// The names whose last change is not yet synced, sorted.
    pub(crate) fn unsynced_names(&self) -> Vec<String> {
        self.files().unsynced_names()
    }

    /// Power is lost: unsynced changes meet their fate ([`FileTable::crash`]), the space
    /// ledger follows what the files now hold, and the disk is in standby (unless failed).
    pub(crate) fn lose_power(&self, mode: CrashMode, rng: &mut ChaCha8Rng) -> CrashReport {
        let report = {
            let mut files = self.files();
            let before_bytes = files.visible_bytes();
            let report = files.crash(mode, rng);
            self.space.rebook(before_bytes, files.visible_bytes());
            report
        };
        self.gate.lose_power();
        report
    }

    /// Books all but `free_bytes` of the free space as a filler; returns the bytes booked.
    pub(crate) fn fill_leaving(&self, free_bytes: u64) -> u64 {
        self.space.reserve_leaving(free_bytes)
    }

    /// Gives back `bytes` of a filler.
    pub(crate) fn release_filler(&self, bytes: u64) {
        self.space.release(bytes);
    }

    /// Reads exactly `len_bytes` from `data`, chunk by chunk.
    fn take_source(&self, name: &str, len_bytes: u64, data: &mut dyn Read) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(len_bytes.min(CHUNK_BYTES as u64) as usize);
        let copied = data.take(len_bytes).read_to_end(&mut bytes)?;
        if (copied as u64) < len_bytes {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the source for {name:?} ended after {copied} of {len_bytes} bytes"),
            ));
        }
        Ok(bytes)
    }

    /// Puts a fully read file in place, unless a crash came since the write began
    /// (`generation`): then the write fails, as the process that issued it would have died.
    fn commit(
        &self,
        name: &str,
        bytes: Vec<u8>,
        overwrite: Overwrite,
        generation: u64,
    ) -> Result<(), DiskError> {
        let mut files = self.files();
        if files.generation() != generation {
            return Err(DiskError::Io {
                disk: self.index,
                context: format!("writing {name:?}"),
                source: io::Error::other("the disk lost power while the write was in flight"),
            });
        }
        if overwrite == Overwrite::Refuse && files.contains(name) {
            return Err(self.already_exists(name));
        }
        if let Some(old_len) = files.put(name, bytes, self.interposer.write_sync()) {
            self.space.release(old_len);
        }
        Ok(())
    }
}

impl Disk for ModelDisk {
    fn index(&self) -> DiskIndex {
        self.index
    }

    fn power_state(&self) -> PowerState {
        self.gate.state()
    }

    fn spin_up(&self) -> Result<(), DiskError> {
        self.gate.spin_up(|| {
            let latency_s = self.sampler.spin_up_s(&self.timing);
            self.advance_s(latency_s);
            self.interposer.before(self, Operation::SpinUp)
        })
    }

    fn spin_down(&self) -> Result<(), DiskError> {
        self.gate.spin_down(
            // Unmounting syncs the filesystem: the barrier for changes left pending.
            || self.sync(),
            || {
                let latency_s = self.sampler.spin_down_s(&self.timing);
                self.advance_s(latency_s);
                Ok(())
            },
        )
    }

    fn mark_failed(&self) {
        self.gate.fail();
    }

    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        let _admitted = self.gate.admit_io()?;
        check_name(name)?;
        self.interposer.before(self, Operation::Write)?;
        let generation = {
            let files = self.files();
            if overwrite == Overwrite::Refuse && files.contains(name) {
                return Err(self.already_exists(name));
            }
            files.generation()
        };
        self.space.reserve(len_bytes)?;
        let written = self
            .take_source(name, len_bytes, data)
            .map_err(|source| DiskError::Io {
                disk: self.index,
                context: format!("writing {name:?}"),
                source,
            })
            .and_then(|bytes| self.commit(name, bytes, overwrite, generation));
        if written.is_err() {
            self.space.release(len_bytes);
        }
        self.charge_io(len_bytes);
        written
    }

    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        let _admitted = self.gate.admit_io()?;
        check_name(name)?;
        self.interposer.before(self, Operation::Read)?;
        let file = self.file(name)?;
        let start = offset.min(file.len() as u64) as usize;
        let count = buffer.len().min(file.len() - start);
        buffer[..count].copy_from_slice(&file[start..start + count]);
        self.charge_io(count as u64);
        Ok(count)
    }

    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        let _admitted = self.gate.admit_io()?;
        Ok(self.file(name)?.len() as u64)
    }

    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        let _admitted = self.gate.admit_io()?;
        check_name(name)?;
        let removed = self.files().remove(name, self.interposer.write_sync());
        let removed_bytes = removed.ok_or_else(|| self.not_found(name))?;
        self.space.release(removed_bytes);
        Ok(())
    }

    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        let _admitted = self.gate.admit_io()?;
        Ok(self.files().names())
    }

    fn space(&self) -> Result<Space, DiskError> {
        let _admitted = self.gate.admit_io()?;
        Ok(self.space.space())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spinwise_model::Distribution;

    fn timed_disk(clock: &VirtualClock) -> ModelDisk {
        let timing = DiskTiming {
            spin_up_latency_s: Distribution::Fixed { value: 8.0 },
            mount_latency_s: Distribution::Fixed { value: 2.0 },
            unmount_latency_s: Distribution::Fixed { value: 1.5 },
            bandwidth_bytes_per_s: 100e6,
            seek_s: 0.01,
        };
        ModelDisk::new(0, 1 << 30, timing, clock.clone(), 1).expect("model disk")
    }

    #[test]
    fn spin_up_spin_down_and_io_advance_the_virtual_clock_by_the_models_times() {
        let clock = VirtualClock::new();
        let disk = timed_disk(&clock);
        disk.spin_up().expect("spin_up");
        assert_eq!(clock.now_us(), 10_000_000, "spin-up 8 s + mount 2 s");
        disk.spin_up().expect("idempotent spin_up");
        assert_eq!(
            clock.now_us(),
            10_000_000,
            "an active disk spins up for free"
        );
        let bytes = vec![7u8; 50_000_000];
        disk.write_file("f", bytes.len() as u64, &mut &bytes[..], Overwrite::Refuse)
            .expect("write");
        assert_eq!(
            clock.now_us(),
            10_000_000 + 10_000 + 500_000,
            "seek + 50 MB at 100 MB/s"
        );
        let mut buffer = vec![0u8; 1_000_000];
        disk.read_at("f", 0, &mut buffer).expect("read");
        assert_eq!(clock.now_us(), 10_510_000 + 10_000 + 10_000);
        disk.spin_down().expect("spin_down");
        assert_eq!(clock.now_us(), 10_530_000 + 1_500_000);
    }
}
