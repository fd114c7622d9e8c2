//! Test support (compiled only for tests): drives two instances of a policy in lockstep through
//! the same arrivals and fixed latencies, one as built and one made to forget its memos before
//! every poll, and asserts they hand out the same actions and ask for the same timeouts. This is
//! how the policies' shortcuts (skipping work whose answer cannot have changed) are shown not to
//! change a single decision.

use crate::policy::Policy;
use crate::scheduler::{Action, Request};
use spinwise_model::{Layout, Rack, parse_rack};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

const SPIN_UP_US: u64 = 10_000_000;
const SPIN_DOWN_US: u64 = 1_000_000;
const BYTES_PER_US: u64 = 1_000;

/// A preset rack and the planner's layout for it.
pub(crate) fn planned(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrive(usize),
    SpunUp(u32),
    SpunDown(u32),
    Served(u64),
    Timeout,
}

/// Runs `arrivals` through `memo` and `fresh` (on which `forget` is called before every poll);
/// returns how many actions they agreed on.
pub(crate) fn assert_same_actions<P: Policy>(
    memo: &mut P,
    fresh: &mut P,
    forget: impl Fn(&mut P),
    arrivals: &[(u64, Request)],
) -> usize {
    let mut events = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        sequence += 1;
        events.push(Reverse((at, sequence, event)));
    };
    for (index, (at, _)) in arrivals.iter().enumerate() {
        push(&mut events, *at, Event::Arrive(index));
    }
    let mut serving: BTreeMap<u64, Request> = BTreeMap::new();
    let mut timeout_us = None;
    let mut actions = 0;
    while let Some(Reverse((now, _, event))) = events.pop() {
        if event == Event::Timeout && timeout_us != Some(now) {
            continue;
        }
        for policy in [&mut *memo, &mut *fresh] {
            match event {
                Event::Arrive(index) => {
                    let _ = policy.submit(now, arrivals[index].1);
                }
                Event::SpunUp(unit) => policy.spun_up(now, unit),
                Event::SpunDown(unit) => policy.spun_down(now, unit),
                Event::Served(id) => policy.served(now, &serving[&id]),
                Event::Timeout => {}
            }
        }
        match event {
            Event::Served(id) => {
                serving.remove(&id);
            }
            Event::Timeout => timeout_us = None,
            _ => {}
        }
        loop {
            forget(fresh);
            let action = memo.poll_action(now);
            assert_eq!(action, fresh.poll_action(now), "at {now} µs");
            let Some(action) = action else { break };
            actions += 1;
            match action {
                Action::SpinUp(unit) => push(&mut events, now + SPIN_UP_US, Event::SpunUp(unit)),
                Action::SpinDown(unit) => {
                    push(&mut events, now + SPIN_DOWN_US, Event::SpunDown(unit))
                }
                Action::Serve(request) => {
                    serving.insert(request.id, request);
                    let done_us = now + request.bytes.div_ceil(BYTES_PER_US);
                    push(&mut events, done_us, Event::Served(request.id));
                }
            }
        }
        let wanted_us = memo.next_timeout_us();
        assert_eq!(wanted_us, fresh.next_timeout_us(), "timeout at {now} µs");
        match wanted_us {
            Some(at) if timeout_us != Some(at) => {
                timeout_us = Some(at);
                push(&mut events, at, Event::Timeout);
            }
            Some(_) => {}
            None => timeout_us = None,
        }
    }
    assert!(memo.is_idle() && fresh.is_idle(), "work left behind");
    actions
}
