//! The owner lock: `DATA/owner.lock`, an exclusive advisory lock (`flock` through std's
//! `File::try_lock`) held by the one process that drives a data directory's disks — a
//! `spinwise store` command for its run, `spinwise serve` for its lifetime. Budgets are audited
//! inside one process; only one process spinning disks makes them hold for the data directory.
//!
//! Invariants: the holder writes its pid (decimal ASCII and `\n`) into the file after locking,
//! so a waiter can say whom it waits for; the pid is a hint only (read without the lock, at
//! most [`MAX_OWNER_FILE_BYTES`] bytes; an unreadable one is `None`), the flock is the truth.
//! The kernel releases the lock when the holder dies (kill -9 included), so a dead owner never
//! keeps the directory. Within one process a second claim fails too (flock locks belong to an
//! open file, not a process): a process claims once and shares the guard.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The owner lock file's name in the data directory.
pub const OWNER_LOCK_FILE: &str = "owner.lock";
/// The most bytes read from the lock file for the owner's pid.
pub const MAX_OWNER_FILE_BYTES: u64 = 32;

/// Why ownership could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// Holds `DATA/owner.lock` while alive; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub struct OwnerGuard {
    path: PathBuf,
    _file: File,
}

impl OwnerGuard {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The answer of one attempt to own a data directory.
#[derive(Debug)]
pub enum Claim {
    Owned(OwnerGuard),
    /// Another process owns it; its pid if it wrote one.
    Busy {
        owner_pid: Option<u32>,
    },
}

/// The lock file of `data_dir`.
pub fn owner_lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join(OWNER_LOCK_FILE)
}

/// Tries once to own `data_dir` (which must exist), without waiting.
pub fn try_claim(data_dir: &Path) -> Result<Claim, OwnerError> {
    let path = owner_lock_path(data_dir);
    let io_error = |source| OwnerError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Ok(Claim::Busy {
                owner_pid: read_owner_pid(data_dir),
            });
        }
        Err(TryLockError::Error(error)) => return Err(io_error(error)),
    }
    write_pid(&mut file).map_err(io_error)?;
    Ok(Claim::Owned(OwnerGuard {
        path: path.clone(),
        _file: file,
    }))
}

fn write_pid(file: &mut File) -> io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())
}

/// The pid the owner of `data_dir` wrote, if the file holds one.
pub fn read_owner_pid(data_dir: &Path) -> Option<u32> {
    let file = File::open(owner_lock_path(data_dir)).ok()?;
    let mut text = String::new();
    file.take(MAX_OWNER_FILE_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    text.trim_end().parse().ok()
}
