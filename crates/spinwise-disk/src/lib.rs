//! spinwise-disk: the contract between the store and one physical disk, and its
//! implementations. The store never issues IO to a disk the scheduler has not made active; the
//! disk enforces it too, answering IO in standby with [`DiskError::NotReady`] (Pelican's
//! "No Access" flag), so a scheduling bug shows up as an error, not as a silent spin-up that
//! breaks a power budget.
//!
//! The trait is blocking: disk IO and power commands block the calling thread (the store runs
//! them on its IO threads). Files on a disk are stripe stacks, written once and read by range.
//!
//! Contract (every implementation, checked by the conformance suite):
//! - A new disk is in [`PowerState::Standby`]. `spin_up` returns once the disk is spun up *and
//!   mounted* ([`PowerState::Active`]); `spin_down` unmounts and returns once it is in standby.
//!   Both are idempotent. A failed disk answers every call with [`DiskError::Failed`].
//! - In any state but `Active`, every file operation fails with `NotReady` and changes nothing.
//! - `write_file` is atomic and durable: when it returns `Ok`, the whole file is on stable
//!   storage under `name` (and survives a crash or power loss); if it fails or the process dies,
//!   no file `name` exists, or the previous one is intact. It refuses to replace an existing
//!   file unless asked to.
//! - `read_at` returns exactly the bytes stored, or fewer only at end of file; a caller that
//!   needs `len` bytes treats a short read as corruption (a lying disk), see the store.
//! - `space` reports capacity and free bytes; a write that does not fit fails with `NoSpace`
//!   and leaves nothing behind. (It is a file operation too: `NotReady` unless `Active`.)
//! - Names use `[A-Za-z0-9._-]`, 1–200 characters, not starting with '.' ([`check_name`]);
//!   names starting with '.' are the implementations' own (temporary files, the failed marker).
//!   A call checks the power state first (`Failed`, `NotReady`), then the name (`BadName`).
//!
//! Implementations (docs/disks.md says how to configure each):
//! - [`EmulatedDisk`] (`emulated`): a directory played as a disk, with the rack's latencies ×
//!   a time factor, an optional bandwidth throttle, a persistent failed marker and [`Faults`]
//!   injection for tests.
//! - [`BlockDisk`] (`block`, Linux): a real drive via hdparm/sdparm and mount; its file half is
//!   the emulated disk's (`files::DirectoryFiles`), run on the mount point.
//! - [`ModelDisk`] (`model`): the simulator's disk model in memory on a [`VirtualClock`].
//! - [`FaultyDisk`] (`faulty`): the model disk with injected faults (IO errors, latency spikes,
//!   failure, a full disk) and crashes that drop or tear every change not yet synced; the fault
//!   model is docs/faults.md.
//! - [`conformance`]: the contract as generic test bodies and the
//!   [`conformance_tests!`] macro that runs them against any factory.
//!
//! Latency distributions are sampled per disk from a seeded ChaCha8 stream with the
//! simulator's semantics ([`timing`]).

use std::io::Read;

pub use spinwise_model::DiskIndex;

#[cfg(target_os = "linux")]
pub mod block;
pub mod conformance;
pub mod emulated;
pub mod faulty;
mod file_table;
mod files;
mod gate;
mod ledger;
pub mod model;
pub mod power_file;
pub mod timeline;
pub mod timing;

#[cfg(target_os = "linux")]
pub use block::{BlockConfig, BlockDisk, CommandPaths, DrivePower, PowerTool};
pub use emulated::{EmulatedConfig, EmulatedDisk, Faults};
pub use faulty::{
    Fault, FaultCounts, FaultyConfig, FaultyDisk, Operation, Trigger, crash_together,
};
pub use file_table::{CrashMode, CrashReport, SECTOR_BYTES, UnsyncedFate, WriteSync};
pub use model::{ModelDisk, VirtualClock};
pub use power_file::{PowerFileError, PowerPhase, read_power_state};
pub use timeline::{Timeline, WallTimeline};
pub use timing::DiskTiming;

/// What a disk is doing; only `Active` accepts IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PowerState {
    /// Spun down (Pelican's standby): no IO, lowest power.
    Standby,
    /// Spun up and mounted: IO allowed.
    Active,
    /// Unreadable, removed, or marked failed: nothing works until replaced.
    Failed,
}

/// Bytes on one disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    pub capacity_bytes: u64,
    pub free_bytes: u64,
}

/// What the world can do to a disk operation. IO errors are the world's, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("disk {disk} is not ready: it is {state:?}, IO needs it spun up")]
    NotReady { disk: DiskIndex, state: PowerState },
    #[error("disk {disk} has failed")]
    Failed { disk: DiskIndex },
    #[error("disk {disk} has no file {name:?}")]
    NotFound { disk: DiskIndex, name: String },
    #[error("disk {disk} already has a file {name:?}")]
    AlreadyExists { disk: DiskIndex, name: String },
    #[error("disk {disk} is full: {needed_bytes} bytes needed, {free_bytes} free")]
    NoSpace {
        disk: DiskIndex,
        needed_bytes: u64,
        free_bytes: u64,
    },
    /// The host filesystem under a directory-backed disk ran out of space (ENOSPC) before the
    /// disk's own capacity did: the host has less room than the rack says its disks have.
    #[error(
        "disk {disk}: the host filesystem under it ran out of space writing {needed_bytes} bytes, \
         though the disk's capacity is not used up: free space on the host, or describe smaller disks"
    )]
    HostFull { disk: DiskIndex, needed_bytes: u64 },
    #[error("file name {name:?} is not allowed (use [A-Za-z0-9._-], 1–200 characters)")]
    BadName { name: String },
    /// A disk built from settings it cannot honour (a negative time factor, a zero throttle…).
    #[error("bad disk configuration: {reason}")]
    BadConfig { reason: String },
    /// A power or mount command of a block disk failed (its exit status and stderr).
    #[error("disk {disk}: `{command}` failed ({status}): {stderr}")]
    Command {
        disk: DiskIndex,
        command: String,
        status: String,
        stderr: String,
    },
    #[error("disk {disk}: {context}: {source}")]
    Io {
        disk: DiskIndex,
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// Whether `write_file` may replace an existing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    Refuse,
    Replace,
}

/// One disk of the rack. See the crate documentation for the contract.
pub trait Disk: Send + Sync {
    /// The disk's index in the rack (and the layout).
    fn index(&self) -> DiskIndex;
    fn power_state(&self) -> PowerState;
    /// Spins up and mounts; returns when IO is possible.
    fn spin_up(&self) -> Result<(), DiskError>;
    /// Unmounts and spins down; returns when in standby.
    fn spin_down(&self) -> Result<(), DiskError>;
    /// Marks the disk failed (operator action or test); irreversible for this handle.
    fn mark_failed(&self);
    /// Writes `len_bytes` from `data` to `name` atomically and durably (see the contract).
    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError>;
    /// Reads up to `buffer.len()` bytes at `offset`; returns how many (short only at EOF).
    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError>;
    /// The file's length in bytes.
    fn file_len(&self, name: &str) -> Result<u64, DiskError>;
    /// Removes `name` durably; removing a missing file is `NotFound`.
    fn remove_file(&self, name: &str) -> Result<(), DiskError>;
    /// Every file's name, sorted.
    fn list_files(&self) -> Result<Vec<String>, DiskError>;
    fn space(&self) -> Result<Space, DiskError>;
}

/// Checks a file name against the contract's alphabet, so every implementation refuses the same
/// names (no path separators, no hidden or temporary-file names).
pub fn check_name(name: &str) -> Result<(), DiskError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let fine =
        (1..=200).contains(&name.len()) && !name.starts_with('.') && name.chars().all(allowed);
    if fine {
        Ok(())
    } else {
        Err(DiskError::BadName {
            name: name.to_string(),
        })
    }
}
