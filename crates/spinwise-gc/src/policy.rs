//! The garbage-collection policy: given what a device holds free and what waits, what it does
//! next. Sans-IO: the caller owns the device, the queue and the clock, and asks [`GcPolicy::decide`]
//! each time the device is free.
//!
//! The states are the slides' (Lee et al., "Level of allowed preemption"; the exact thresholds
//! are not given there, so they are configuration here):
//!
//! | state | when | foreground waiting | nothing waiting |
//! |---|---|---|---|
//! | 0, [`GcState::Idle`] | free ≥ soft, no block being collected | serve it | wait |
//! | 1, [`GcState::Preemptible`] | free < soft, or a block being collected (semi-preemptive) | serve it | one GC unit |
//! | 2, [`GcState::NonPreemptible`] | free < hard, or a block being collected (non-preemptive) | one GC unit | one GC unit |
//!
//! So both modes collect in idle time once free space falls below the soft threshold, and both
//! stop letting requests in below the hard one; they differ only inside a block's collection:
//! non-preemptive collection, once it has picked a victim, moves all its valid pages and erases
//! it before any request goes, semi-preemptive collection lets waiting requests go between any
//! two units. A unit is never interrupted (hence "semi").
//!
//! Invariant: `hard_free_blocks >= 1` and `soft_free_blocks > hard_free_blocks` (checked by
//! [`GcThresholds::new`]), so there is always a state-1 band for preemption to happen in and a
//! block held back for relocation.

use crate::GcError;

/// Whether a block's collection may be interrupted between units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GcMode {
    /// A victim, once picked, is moved and erased before any request is served.
    NonPreemptive,
    /// Waiting requests go between units while free space is at or above the hard threshold.
    SemiPreemptive,
}

impl GcMode {
    pub fn name(self) -> &'static str {
        match self {
            GcMode::NonPreemptive => "non-preemptive",
            GcMode::SemiPreemptive => "semi-preemptive",
        }
    }
}

/// Free-space thresholds, in free blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcThresholds {
    /// Below this many free blocks, collection runs (in idle time, or preemptibly).
    pub soft_free_blocks: u64,
    /// Below this many, collection runs before any request.
    pub hard_free_blocks: u64,
}

impl GcThresholds {
    pub fn new(soft_free_blocks: u64, hard_free_blocks: u64) -> Result<GcThresholds, GcError> {
        if hard_free_blocks == 0 || soft_free_blocks <= hard_free_blocks {
            return Err(GcError::Invalid(format!(
                "GC thresholds need 1 <= hard < soft free blocks, got hard {hard_free_blocks}, soft {soft_free_blocks}"
            )));
        }
        Ok(GcThresholds {
            soft_free_blocks,
            hard_free_blocks,
        })
    }
}

/// The slides' GC states (0, 1, 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GcState {
    Idle,
    Preemptible,
    NonPreemptible,
}

/// What the policy reads of the device and its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcView {
    pub free_blocks: u64,
    /// A victim has been picked and is not yet erased.
    pub collecting: bool,
    /// There is a block worth collecting (one with an invalid page), or a collection under way.
    pub work_available: bool,
    pub foreground_waiting: bool,
}

/// What the device does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve the oldest waiting request.
    Foreground,
    /// Do one unit of collection (move one valid page, or erase the victim).
    GcUnit,
    /// Nothing to do until a request arrives.
    Wait,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcPolicy {
    pub mode: GcMode,
    pub thresholds: GcThresholds,
}

impl GcPolicy {
    pub fn new(mode: GcMode, thresholds: GcThresholds) -> GcPolicy {
        GcPolicy { mode, thresholds }
    }

    /// The state for `free_blocks` free and a collection under way or not.
    pub fn state(&self, free_blocks: u64, collecting: bool) -> GcState {
        if free_blocks < self.thresholds.hard_free_blocks {
            return GcState::NonPreemptible;
        }
        match (collecting, self.mode) {
            (true, GcMode::NonPreemptive) => GcState::NonPreemptible,
            (true, GcMode::SemiPreemptive) => GcState::Preemptible,
            (false, _) if free_blocks < self.thresholds.soft_free_blocks => GcState::Preemptible,
            (false, _) => GcState::Idle,
        }
    }

    pub fn decide(&self, view: GcView) -> Decision {
        let gc_or_wait = if view.work_available {
            Decision::GcUnit
        } else {
            Decision::Wait
        };
        match self.state(view.free_blocks, view.collecting) {
            GcState::Idle if view.foreground_waiting => Decision::Foreground,
            GcState::Idle => Decision::Wait,
            GcState::Preemptible if view.foreground_waiting => Decision::Foreground,
            GcState::Preemptible => gc_or_wait,
            // Nothing to collect below the hard threshold: the device is as compact as it can
            // be, so requests go (a write that finds no page then fails for space).
            GcState::NonPreemptible if !view.work_available && view.foreground_waiting => {
                Decision::Foreground
            }
            GcState::NonPreemptible => gc_or_wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: GcMode) -> GcPolicy {
        GcPolicy::new(mode, GcThresholds::new(10, 2).unwrap())
    }

    fn view(free_blocks: u64, collecting: bool, foreground_waiting: bool) -> GcView {
        GcView {
            free_blocks,
            collecting,
            work_available: true,
            foreground_waiting,
        }
    }

    #[test]
    fn thresholds_need_a_preemptible_band_and_a_held_back_block() {
        assert!(GcThresholds::new(10, 0).is_err());
        assert!(GcThresholds::new(2, 2).is_err());
        assert!(GcThresholds::new(2, 3).is_err());
        assert!(GcThresholds::new(3, 2).is_ok());
    }

    #[test]
    fn above_the_soft_threshold_requests_go_and_nothing_is_collected() {
        for mode in [GcMode::NonPreemptive, GcMode::SemiPreemptive] {
            let policy = policy(mode);
            assert_eq!(policy.decide(view(10, false, true)), Decision::Foreground);
            assert_eq!(policy.decide(view(10, false, false)), Decision::Wait);
        }
    }

    #[test]
    fn below_the_soft_threshold_both_modes_collect_in_idle_time_and_let_requests_start_first() {
        for mode in [GcMode::NonPreemptive, GcMode::SemiPreemptive] {
            let policy = policy(mode);
            assert_eq!(policy.decide(view(5, false, false)), Decision::GcUnit);
            assert_eq!(policy.decide(view(5, false, true)), Decision::Foreground);
        }
    }

    #[test]
    fn inside_a_collection_only_semi_preemptive_lets_a_waiting_request_go() {
        assert_eq!(
            policy(GcMode::NonPreemptive).decide(view(5, true, true)),
            Decision::GcUnit
        );
        assert_eq!(
            policy(GcMode::SemiPreemptive).decide(view(5, true, true)),
            Decision::Foreground
        );
        // Even above the soft threshold a started block is finished before requests in NP.
        assert_eq!(
            policy(GcMode::NonPreemptive).decide(view(12, true, true)),
            Decision::GcUnit
        );
    }

    #[test]
    fn below_the_hard_threshold_neither_mode_lets_requests_go_while_there_is_garbage() {
        for mode in [GcMode::NonPreemptive, GcMode::SemiPreemptive] {
            let policy = policy(mode);
            assert_eq!(policy.state(1, true), GcState::NonPreemptible);
            assert_eq!(policy.decide(view(1, true, true)), Decision::GcUnit);
            assert_eq!(policy.decide(view(1, false, true)), Decision::GcUnit);
            let nothing_to_collect = GcView {
                work_available: false,
                ..view(1, false, true)
            };
            assert_eq!(policy.decide(nothing_to_collect), Decision::Foreground);
        }
    }
}
