//! The power gate every implementation shares: the disk's [`PowerState`] and the rule that file
//! operations run only while it is `Active`.
//!
//! Invariants: a file operation holds a shared `io` guard from its state check to its last byte,
//! so a spin-down (which takes the exclusive guard) waits for operations in flight and no
//! operation runs on a disk that is spinning down; operations do not serialize on each other.
//! Power transitions are serialized by `transition`. `Failed` is final for the handle.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{DiskError, DiskIndex, PowerState};

#[derive(Debug)]
pub(crate) struct PowerGate {
    disk: DiskIndex,
    state: AtomicU8,
    io: RwLock<()>,
    transition: Mutex<()>,
}

fn encode(state: PowerState) -> u8 {
    match state {
        PowerState::Standby => 0,
        PowerState::Active => 1,
        PowerState::Failed => 2,
    }
}

fn decode(code: u8) -> PowerState {
    match code {
        0 => PowerState::Standby,
        1 => PowerState::Active,
        2 => PowerState::Failed,
        _ => unreachable!("power state code {code} was never stored"),
    }
}

impl PowerGate {
    pub(crate) fn new(disk: DiskIndex, state: PowerState) -> PowerGate {
        PowerGate {
            disk,
            state: AtomicU8::new(encode(state)),
            io: RwLock::new(()),
            transition: Mutex::new(()),
        }
    }

    pub(crate) fn state(&self) -> PowerState {
        decode(self.state.load(Ordering::Acquire))
    }

    /// Sets the state unless the disk has failed (failure is final).
    pub(crate) fn set_state(&self, state: PowerState) {
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                (decode(current) != PowerState::Failed).then_some(encode(state))
            });
    }

    pub(crate) fn fail(&self) {
        self.state
            .store(encode(PowerState::Failed), Ordering::Release);
    }

    /// `Failed` for a failed disk, `Ok` otherwise: the check power commands start with.
    pub(crate) fn refuse_failed(&self) -> Result<(), DiskError> {
        match self.state() {
            PowerState::Failed => Err(DiskError::Failed { disk: self.disk }),
            _ => Ok(()),
        }
    }

    /// Admits one file operation: held until the operation ends.
    pub(crate) fn admit_io(&self) -> Result<RwLockReadGuard<'_, ()>, DiskError> {
        let guard = self.io.read().expect("io gate poisoned");
        match self.state() {
            PowerState::Active => Ok(guard),
            PowerState::Failed => Err(DiskError::Failed { disk: self.disk }),
            state => Err(DiskError::NotReady {
                disk: self.disk,
                state,
            }),
        }
    }

    /// Serializes spin-ups and spin-downs.
    pub(crate) fn begin_transition(&self) -> MutexGuard<'_, ()> {
        self.transition.lock().expect("transition lock poisoned")
    }

    /// Waits for file operations in flight and keeps new ones out while held.
    pub(crate) fn quiesce(&self) -> RwLockWriteGuard<'_, ()> {
        self.io.write().expect("io gate poisoned")
    }
}
