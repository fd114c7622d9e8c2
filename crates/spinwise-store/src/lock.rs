//! The upkeep lock: `DATA/upkeep.lock`, an exclusive advisory lock (`flock` through std's
//! `File::try_lock`) held by whichever process runs background work that rewrites or removes
//! stripe stacks — flush (migration), rebuild, scrub, the upkeep task — and by open's cleanup of
//! half-written blobs. A second process asking for it fails at once with
//! [`StoreError::UpkeepBusy`] naming the lock file; PUT, GET, ls, stat and rm never take it, so
//! many processes can still put and get at once.
//!
//! Invariants: within one process the lock is shared (a count): the first guard takes the file
//! lock, the last guard dropped releases it, both under one mutex, so a guard being dropped never
//! races a new acquisition into a spurious "busy". The kernel releases the lock when the process
//! dies (kill -9 included), so a crash never leaves the data directory locked.

use crate::error::{StoreError, StoreResult, io_error};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The lock file's name in the data directory.
pub const UPKEEP_LOCK_FILE: &str = "upkeep.lock";

#[derive(Debug, Default)]
struct Held {
    guards: usize,
    file: Option<File>,
}

/// One store's handle on `DATA/upkeep.lock`.
#[derive(Debug)]
pub struct UpkeepLock {
    path: PathBuf,
    held: Arc<Mutex<Held>>,
}

/// Holds the upkeep lock while alive (shared by every guard of the same store).
#[derive(Debug)]
pub struct UpkeepGuard {
    held: Arc<Mutex<Held>>,
}

impl UpkeepLock {
    pub fn new(data_dir: &Path) -> UpkeepLock {
        UpkeepLock {
            path: data_dir.join(UPKEEP_LOCK_FILE),
            held: Arc::new(Mutex::new(Held::default())),
        }
    }

    /// Takes the lock, or fails with [`StoreError::UpkeepBusy`] if another process holds it.
    pub fn acquire(&self) -> StoreResult<UpkeepGuard> {
        let mut held = self.held.lock().expect("upkeep lock poisoned");
        if held.guards == 0 {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&self.path)
                .map_err(io_error(&self.path))?;
            match file.try_lock() {
                Ok(()) => held.file = Some(file),
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::UpkeepBusy {
                        path: self.path.display().to_string(),
                    });
                }
                Err(TryLockError::Error(error)) => return Err(io_error(&self.path)(error)),
            }
        }
        held.guards += 1;
        Ok(UpkeepGuard {
            held: self.held.clone(),
        })
    }
}

impl Drop for UpkeepGuard {
    fn drop(&mut self) {
        let mut held = self.held.lock().expect("upkeep lock poisoned");
        held.guards -= 1;
        if held.guards == 0 {
            // Closing the file releases the flock.
            held.file = None;
        }
    }
}
