//! Idle spin-down (issue 30): the timer a policy keeps for its active groups that have no work,
//! so that a group left idle for `idle_spin_down_us` is spun down instead of spinning until
//! another group needs its budget. Sans-IO like the rest of the crate: the policy tells the
//! timer when a group became idle or busy (with the caller's `now_us`), asks which group is due
//! at a poll, and reports the earliest deadline through [`crate::policy::Policy::next_timeout_us`]
//! so the driver (the simulator's event queue, the store's timer) polls then.
//!
//! Why in the scheduler and not in each driver: the simulator and the store then spin down the
//! same groups at the same times for the same inputs, so the energy the simulator reports saved
//! is what the store saves.
//!
//! Invariants: a group has at most one deadline (its idle start plus the idle time); the
//! deadlines are kept ordered (`BTreeSet`), so the next one is the first; a disabled timer
//! (`None`, or 0) holds no deadlines; a group spun down for idleness is remembered until the
//! policy hears `spun_down`, so a driver can ask why ([`SpinDownReason`]).

use spinwise_model::GroupIndex;
use std::collections::{BTreeMap, BTreeSet};

/// The idle time after which the store and the simulator spin an idle group down by default, in
/// seconds. Chosen by measurement (docs/BENCHMARKS.md, "Idle spin-down"): on sessions of reads
/// to one group with think times up to a minute, 120 s saves within 1-4 points of the best
/// energy saving of any idle time (25-27% on the Pelican rack, 52-58% on the 60-bay JBOD) while
/// adding 7-39% (Pelican) and 30-64% (JBOD) spin-ups over never spinning down, where 60 s adds
/// 14-97% and 36-142%; it is 2-8× the time a spin-up's extra energy takes to repay (15 s
/// Pelican, 58 s JBOD), so a spin-down undone by the next read wastes little.
pub const DEFAULT_IDLE_SPIN_DOWN_S: f64 = 120.0;

/// Why a policy asked a group to spin down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinDownReason {
    /// It had no work for the idle time ([`IdleTimer`]).
    Idle,
    /// Another group needed its budget: a class switching groups, a waiting or starving group,
    /// an expedited read.
    MakeRoom,
}

impl SpinDownReason {
    /// The reason as one lowercase word, for logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            SpinDownReason::Idle => "idle",
            SpinDownReason::MakeRoom => "make_room",
        }
    }
}

/// Converts an idle time in seconds to the timer's microseconds: `None` (never) for `None`, 0,
/// or anything not a positive finite number; at least 1 µs otherwise.
pub fn idle_spin_down_us(idle_spin_down_s: Option<f64>) -> Option<u64> {
    let seconds = idle_spin_down_s.filter(|s| s.is_finite() && *s > 0.0)?;
    // `as` saturates: an absurdly long idle time is "practically never", not an overflow.
    Some(((seconds * 1e6).round() as u64).max(1))
}

/// Per active group without work, since when; and the resulting deadlines in order.
#[derive(Clone, Debug, Default)]
pub struct IdleTimer {
    after_us: Option<u64>,
    since_us: BTreeMap<GroupIndex, u64>,
    deadlines: BTreeSet<(u64, GroupIndex)>,
    /// Groups spun down for idleness whose `spun_down` has not been heard yet.
    going_down: BTreeSet<GroupIndex>,
    /// Idle spin-downs decided so far.
    spin_downs: u64,
}

impl IdleTimer {
    /// A timer spinning groups down after `after_us` idle (`None` or 0: never).
    pub fn new(after_us: Option<u64>) -> IdleTimer {
        IdleTimer {
            after_us: after_us.filter(|us| *us > 0),
            ..IdleTimer::default()
        }
    }

    pub fn after_us(&self) -> Option<u64> {
        self.after_us
    }

    /// Changes the idle time; groups idle now keep their idle start and get new deadlines.
    pub fn set_after_us(&mut self, after_us: Option<u64>) {
        self.after_us = after_us.filter(|us| *us > 0);
        self.deadlines.clear();
        if let Some(after_us) = self.after_us {
            for (group, since_us) in &self.since_us {
                self.deadlines
                    .insert((since_us.saturating_add(after_us), *group));
            }
        }
    }

    /// `group` is active with no work from `now_us` (kept if it was already idle: its idle time
    /// runs from when it last had work).
    pub fn idle(&mut self, group: GroupIndex, now_us: u64) {
        if self.since_us.contains_key(&group) {
            return;
        }
        self.since_us.insert(group, now_us);
        if let Some(after_us) = self.after_us {
            self.deadlines
                .insert((now_us.saturating_add(after_us), group));
        }
    }

    /// `group` has work, or is no longer active: its idle time stops.
    pub fn busy(&mut self, group: GroupIndex) {
        if let Some(since_us) = self.since_us.remove(&group)
            && let Some(after_us) = self.after_us
        {
            self.deadlines
                .remove(&(since_us.saturating_add(after_us), group));
        }
    }

    /// The group whose idle time ran out first, if any has by `now_us`.
    pub fn due(&self, now_us: u64) -> Option<GroupIndex> {
        self.deadlines
            .first()
            .filter(|(deadline_us, _)| *deadline_us <= now_us)
            .map(|&(_, group)| group)
    }

    /// The earliest deadline (the driver polls then); `None` when no group is idle or the timer
    /// is disabled. A deadline that saturated is never reached and not reported.
    pub fn next_deadline_us(&self) -> Option<u64> {
        self.deadlines
            .first()
            .map(|&(deadline_us, _)| deadline_us)
            .filter(|deadline_us| *deadline_us != u64::MAX)
    }

    /// The policy spins `group` down because it was idle: its timer stops and the reason is
    /// kept until [`IdleTimer::spun_down`].
    pub fn spinning_down(&mut self, group: GroupIndex) {
        self.busy(group);
        self.going_down.insert(group);
        self.spin_downs += 1;
    }

    /// `group` rests again.
    pub fn spun_down(&mut self, group: GroupIndex) {
        self.busy(group);
        self.going_down.remove(&group);
    }

    /// Why `group`, which the policy asked to spin down, is going down.
    pub fn reason(&self, group: GroupIndex) -> SpinDownReason {
        if self.going_down.contains(&group) {
            SpinDownReason::Idle
        } else {
            SpinDownReason::MakeRoom
        }
    }

    /// Idle spin-downs decided so far.
    pub fn spin_downs(&self) -> u64 {
        self.spin_downs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_due_at_its_idle_start_plus_the_idle_time_and_not_before() {
        let mut timer = IdleTimer::new(Some(1_000));
        timer.idle(3, 500);
        assert_eq!(timer.next_deadline_us(), Some(1_500));
        assert_eq!(timer.due(1_499), None);
        assert_eq!(timer.due(1_500), Some(3));
    }

    #[test]
    fn work_stops_the_idle_time_and_a_later_idle_start_restarts_it() {
        let mut timer = IdleTimer::new(Some(1_000));
        timer.idle(0, 0);
        timer.busy(0);
        assert_eq!(timer.next_deadline_us(), None);
        timer.idle(0, 700);
        timer.idle(0, 900);
        assert_eq!(timer.next_deadline_us(), Some(1_700));
    }

    #[test]
    fn a_disabled_timer_has_no_deadline_and_enabling_it_counts_from_the_idle_start() {
        let mut timer = IdleTimer::new(Some(0));
        timer.idle(1, 100);
        assert_eq!(timer.next_deadline_us(), None);
        timer.set_after_us(Some(50));
        assert_eq!(timer.next_deadline_us(), Some(150));
    }

    #[test]
    fn the_reason_is_idle_only_between_an_idle_spin_down_and_its_end() {
        let mut timer = IdleTimer::new(Some(10));
        assert_eq!(timer.reason(2), SpinDownReason::MakeRoom);
        timer.spinning_down(2);
        assert_eq!(timer.reason(2), SpinDownReason::Idle);
        timer.spun_down(2);
        assert_eq!(timer.reason(2), SpinDownReason::MakeRoom);
        assert_eq!(timer.spin_downs(), 1);
    }

    #[test]
    fn idle_times_in_seconds_convert_with_zero_and_nonsense_meaning_never() {
        assert_eq!(idle_spin_down_us(Some(1.5)), Some(1_500_000));
        for never in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            assert_eq!(idle_spin_down_us(never), None);
        }
    }
}
