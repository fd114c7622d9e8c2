//! The power gate every implementation shares: the disk's [`PowerState`] and the rule that file
//! operations run only while it is `Active`.
//!
//! Invariants: a file operation holds a shared `io` guard from its state check to its last byte,
//! so a spin-down (which takes the exclusive guard) waits for operations in flight and no
//! operation runs on a disk that is spinning down; operations do not serialize on each other.
//! Power transitions are serialized by `transition` and follow one protocol for every disk
//! ([`PowerGate::spin_up`], [`PowerGate::spin_down`]): a failed disk refuses, a disk already in
//! the wanted state does nothing, `Active` is set only after the bring-up succeeded, and
//! `Standby` is set (keeping new operations out) before the disk winds down. `Failed` is final
//! for the handle.

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

    /// Power is lost (a model disk's crash): standby at once, unless failed. Serialized with
    /// transitions, so a spin-up cannot leave the disk `Active` after it; operations in flight
    /// are not waited for (without power they cannot finish: the model disk fails their commit).
    pub(crate) fn lose_power(&self) {
        let _transition = self.begin_transition();
        self.set_state(PowerState::Standby);
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
    fn begin_transition(&self) -> MutexGuard<'_, ()> {
        self.transition.lock().expect("transition lock poisoned")
    }

    /// Waits for file operations in flight and keeps new ones out while held.
    fn quiesce(&self) -> RwLockWriteGuard<'_, ()> {
        self.io.write().expect("io gate poisoned")
    }

    /// The spin-up protocol: `bring_up` (wake, mount, sample a latency…) runs only for a disk in
    /// standby, under the transition lock; the disk turns `Active` only if it succeeded, and a
    /// failure marked meanwhile (by `bring_up` or by `mark_failed`) still wins.
    pub(crate) fn spin_up(
        &self,
        bring_up: impl FnOnce() -> Result<(), DiskError>,
    ) -> Result<(), DiskError> {
        let _transition = self.begin_transition();
        self.refuse_failed()?;
        if self.state() == PowerState::Active {
            return Ok(());
        }
        bring_up()?;
        self.set_state(PowerState::Active);
        self.refuse_failed()
    }

    /// The spin-down protocol: once operations in flight end, the disk turns `Standby` and
    /// `release` (drop the mounted files…) runs while new operations are still kept out; then
    /// `wind_down` (sync, unmount, sleep a latency…) runs outside the IO gate, so a reader sees
    /// `NotReady` at once instead of waiting for the platters.
    pub(crate) fn spin_down(
        &self,
        release: impl FnOnce(),
        wind_down: impl FnOnce() -> Result<(), DiskError>,
    ) -> Result<(), DiskError> {
        let _transition = self.begin_transition();
        self.refuse_failed()?;
        if self.state() == PowerState::Standby {
            return Ok(());
        }
        {
            let _quiet = self.quiesce();
            self.set_state(PowerState::Standby);
            release();
        }
        wind_down()?;
        self.refuse_failed()
    }
}
