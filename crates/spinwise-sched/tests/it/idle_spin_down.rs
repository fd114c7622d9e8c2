//! Idle spin-down (issue 30) in Pelican's and Flamingo's schedulers: a group with no work spins
//! down exactly its idle time after it last had some, never while work for it (for Pelican: for
//! its class) is queued or in service, and a rack left alone ends with every group resting.
//! With idle spin-down off, the policies keep idle groups up as before.

use crate::common;

use common::{BYTES_PER_US, SPIN_UP_US, drive_policy, poll_all, preset, read};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use spinwise_model::Layout;
use spinwise_sched::flamingo::Flamingo;
use spinwise_sched::idle::SpinDownReason;
use spinwise_sched::policy::Policy;
use spinwise_sched::scheduler::{Action, ClassScheduler, Request};
use std::collections::BTreeMap;

const IDLE_US: u64 = 30_000_000;

fn pelican(layout: &Layout, idle_us: Option<u64>) -> ClassScheduler {
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    scheduler.set_idle_spin_down_us(idle_us);
    scheduler
}

fn flamingo(layout: &Layout, idle_us: Option<u64>) -> Flamingo {
    let mut scheduler = Flamingo::new(layout).unwrap();
    scheduler.set_idle_spin_down_us(idle_us);
    scheduler
}

/// One read for group 0 at time 0, brought up and served by hand; returns when it was served.
fn serve_one_read<P: Policy>(policy: &mut P) -> u64 {
    policy.submit(0, read(0, 0)).unwrap();
    assert_eq!(poll_all(policy, 0), vec![Action::SpinUp(0)]);
    policy.spun_up(SPIN_UP_US, 0);
    let request = read(0, 0);
    assert_eq!(poll_all(policy, SPIN_UP_US), vec![Action::Serve(request)]);
    let served_us = SPIN_UP_US + request.bytes / BYTES_PER_US;
    policy.served(served_us, &request);
    served_us
}

fn assert_spins_down_after_the_idle_time_and_not_before<P: Policy>(policy: &mut P) {
    let served_us = serve_one_read(policy);
    let deadline_us = served_us + IDLE_US;
    assert_eq!(poll_all(policy, served_us), vec![]);
    assert_eq!(policy.next_timeout_us(), Some(deadline_us));
    assert_eq!(poll_all(policy, deadline_us - 1), vec![], "spun down early");
    assert_eq!(poll_all(policy, deadline_us), vec![Action::SpinDown(0)]);
    assert_eq!(policy.spin_down_reason(0), SpinDownReason::Idle);
    assert_eq!(policy.idle_spin_downs(), 1);
    policy.spun_down(deadline_us + 1, 0);
    assert_eq!(policy.next_timeout_us(), None);
    assert!(policy.is_idle());
}

#[test]
fn pelican_spins_an_idle_group_down_after_the_idle_time_and_not_before() {
    let (_, layout) = preset("pelican");
    assert_spins_down_after_the_idle_time_and_not_before(&mut pelican(&layout, Some(IDLE_US)));
}

#[test]
fn flamingo_spins_an_idle_group_down_after_the_idle_time_and_not_before() {
    let (_, layout) = preset("ocp-cold-storage");
    assert_spins_down_after_the_idle_time_and_not_before(&mut flamingo(&layout, Some(IDLE_US)));
}

fn assert_work_restarts_the_idle_time<P: Policy>(policy: &mut P) {
    let served_us = serve_one_read(policy);
    // A second read arrives just before the deadline: the group serves it instead.
    let second = Request {
        id: 1,
        ..read(1, 0)
    };
    let arrival_us = served_us + IDLE_US - 1;
    policy.submit(arrival_us, second).unwrap();
    assert_eq!(poll_all(policy, arrival_us), vec![Action::Serve(second)]);
    assert_eq!(poll_all(policy, served_us + IDLE_US), vec![]);
    let done_us = arrival_us + second.bytes / BYTES_PER_US;
    policy.served(done_us, &second);
    assert_eq!(policy.next_timeout_us(), Some(done_us + IDLE_US));
}

#[test]
fn a_read_for_an_idle_group_keeps_it_up_and_restarts_its_idle_time() {
    let (_, layout) = preset("pelican");
    assert_work_restarts_the_idle_time(&mut pelican(&layout, Some(IDLE_US)));
    assert_work_restarts_the_idle_time(&mut flamingo(&layout, Some(IDLE_US)));
}

#[test]
fn without_idle_spin_down_an_idle_group_stays_up() {
    let (_, layout) = preset("pelican");
    assert_stays_up(&mut pelican(&layout, None));
    assert_stays_up(&mut flamingo(&layout, None));
}

fn assert_stays_up<P: Policy>(policy: &mut P) {
    let served_us = serve_one_read(policy);
    assert_eq!(policy.next_timeout_us(), None);
    assert_eq!(poll_all(policy, served_us + 100 * IDLE_US), vec![]);
    assert_eq!(policy.idle_spin_downs(), 0);
}

/// Checks every idle spin-down of a run: `unit_of` maps a group to what must have no work (its
/// class for Pelican, itself for Flamingo).
fn check_idle_spin_downs(
    arrivals: &[(u64, Request)],
    trace: &common::Trace,
    idle_flags: &[bool],
    unit_of: impl Fn(u32) -> u32,
) -> Result<(), TestCaseError> {
    let mut ups = BTreeMap::<u32, i64>::new();
    for (index, (at_us, action)) in trace.actions.iter().enumerate() {
        match action {
            Action::SpinUp(group) => *ups.entry(*group).or_default() += 1,
            Action::SpinDown(group) => *ups.entry(*group).or_default() -= 1,
            Action::Serve(_) => {}
        }
        let Action::SpinDown(group) = action else {
            continue;
        };
        if !idle_flags[index] {
            continue;
        }
        let unit = unit_of(*group);
        let arrived = arrivals
            .iter()
            .filter(|(a, r)| *a < *at_us && unit_of(r.group) == unit)
            .count();
        let served = trace
            .served
            .iter()
            .filter(|(s, r)| *s <= *at_us && unit_of(r.group) == unit)
            .count();
        prop_assert_eq!(
            arrived,
            served,
            "group {} spun down idle with work queued",
            group
        );
        let last_served_us = trace
            .served
            .iter()
            .filter(|(s, r)| *s <= *at_us && unit_of(r.group) == unit)
            .map(|(s, _)| *s)
            .max();
        let last_up_us = trace.actions[..index]
            .iter()
            .filter(|(_, a)| *a == Action::SpinUp(*group))
            .map(|(t, _)| t + SPIN_UP_US)
            .max();
        let idle_from_us = last_served_us.max(last_up_us).unwrap();
        prop_assert_eq!(
            *at_us,
            idle_from_us + IDLE_US,
            "group {} spun down idle at the wrong time",
            group
        );
    }
    // Left alone, every group that came up went down again.
    prop_assert!(
        ups.values().all(|net| *net == 0),
        "groups left up: {:?}",
        ups
    );
    Ok(())
}

fn arrivals_of(raw: &[(u64, u32)], groups: u32) -> Vec<(u64, Request)> {
    raw.iter()
        .enumerate()
        .map(|(id, (at_us, group))| {
            // Odd microseconds: never at the same time as a spin-down (at whole seconds).
            let request = Request {
                id: id as u64,
                ..read(id as u64, group % groups)
            };
            (at_us * 2 + 1, request)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, rng_seed: RngSeed::Fixed(0x1d1e), .. ProptestConfig::default() })]

    #[test]
    fn idle_groups_spin_down_exactly_after_the_idle_time_and_never_with_work_queued(
        raw in prop::collection::vec((0u64..300_000_000, any::<u32>()), 1..40),
        use_flamingo in any::<bool>(),
    ) {
        let (_, layout) = preset("pelican");
        let arrivals = arrivals_of(&raw, layout.groups.len() as u32);
        let mut idle_flags = Vec::new();
        let mut seen = 0;
        let mut flag = |idle_spin_downs: u64| {
            idle_flags.push(idle_spin_downs > seen);
            seen = idle_spin_downs;
        };
        let trace = if use_flamingo {
            drive_policy(&mut flamingo(&layout, Some(IDLE_US)), &arrivals, |p| flag(p.idle_spin_downs()))
        } else {
            drive_policy(&mut pelican(&layout, Some(IDLE_US)), &arrivals, |p| flag(p.idle_spin_downs()))
        };
        prop_assert_eq!(trace.rejected, 0);
        prop_assert!(idle_flags.iter().any(|f| *f), "no idle spin-down at all");
        let classes = layout.classes.clone().unwrap();
        if use_flamingo {
            check_idle_spin_downs(&arrivals, &trace, &idle_flags, |g| g)?;
        } else {
            check_idle_spin_downs(&arrivals, &trace, &idle_flags, |g| classes[g as usize])?;
        }
    }
}
