//! The run-based reordering queue against the flat one it replaced (issue 32): the flat
//! implementation is kept here verbatim in behaviour — one `VecDeque` of entries, a linear scan
//! for the group's last request, the bound checked and every overtaken counter raised one by
//! one, a mid-queue insert — and both are driven through the same random operations at the
//! pelican rack's scale (a class of 12 groups, ~1 GB requests in bytes, u = 500 GB, queues of
//! up to ~1,000) and at small scales with tight bounds. After every operation the positions,
//! the popped and removed entries and every queued entry's counters must be equal.
//!
//! Proptest runs from a fixed seed; a failure prints the shrunk operation sequence.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spinwise_sched::reorder::{Entry, ReorderQueue, UNBOUNDED};
use std::collections::VecDeque;

/// The flat queue as it was before runs: O(queue length) per push.
struct FlatQueue {
    entries: VecDeque<Entry<u64>>,
    bound: u64,
    counter: u64,
}

impl FlatQueue {
    fn new(bound: u64) -> FlatQueue {
        FlatQueue {
            entries: VecDeque::new(),
            bound,
            counter: 0,
        }
    }

    fn push(&mut self, item: u64, group: u32, cost: u64) -> usize {
        let timestamp = self.counter;
        self.counter += cost;
        let tail = self.entries.len();
        let mut entry = Entry {
            item,
            group,
            cost,
            timestamp,
            reorder: timestamp,
        };
        let position = match self.entries.iter().rposition(|e| e.group == group) {
            None => tail,
            Some(last) => {
                let bound = self.bound;
                let allowed = self.entries.range(last + 1..).all(|i| {
                    u128::from(i.reorder) + u128::from(cost)
                        <= u128::from(i.timestamp) + u128::from(bound)
                });
                if allowed {
                    let mut overtaken_cost = 0u64;
                    for i in self.entries.range_mut(last + 1..) {
                        i.reorder += cost;
                        overtaken_cost += i.cost;
                    }
                    entry.reorder = timestamp - overtaken_cost;
                    last + 1
                } else {
                    tail
                }
            }
        };
        self.entries.insert(position, entry);
        position
    }

    fn remove_where(&mut self, cancelled: impl Fn(&Entry<u64>) -> bool) -> Vec<Entry<u64>> {
        let mut kept = Vec::new();
        let mut removed = Vec::new();
        let mut removed_at = Vec::new();
        for (position, entry) in std::mem::take(&mut self.entries).into_iter().enumerate() {
            if cancelled(&entry) {
                removed_at.push((position, entry.timestamp, entry.cost));
                removed.push(entry);
            } else {
                kept.push((position, entry));
            }
        }
        self.entries = kept
            .into_iter()
            .map(|(position, mut entry)| {
                for &(removed_position, removed_timestamp, removed_cost) in &removed_at {
                    if removed_cost == 0 {
                        continue;
                    }
                    let enqueued_before = removed_timestamp < entry.timestamp;
                    if removed_position < position && !enqueued_before {
                        entry.reorder -= removed_cost;
                    } else if removed_position > position && enqueued_before {
                        entry.reorder += removed_cost;
                    }
                }
                entry
            })
            .collect();
        removed
    }
}

#[derive(Clone, Debug)]
enum Operation {
    Push {
        group: u32,
        cost: u64,
    },
    Pop,
    /// Cancel every queued request whose id ≡ residue (mod modulus).
    Cancel {
        modulus: u64,
        residue: u64,
    },
}

fn operations(
    groups: u32,
    cost: BoxedStrategy<u64>,
    length: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<Operation>> {
    let operation = prop_oneof![
        60 => (0..groups, cost).prop_map(|(group, cost)| Operation::Push { group, cost }),
        38 => Just(Operation::Pop),
        1 => (7..40u64, 0..40u64).prop_map(|(modulus, residue)| Operation::Cancel {
            modulus,
            residue: residue % modulus
        }),
    ];
    prop::collection::vec(operation, length)
}

/// Drives both queues through `operations`; everything observable must agree after each.
fn same_as_flat(bound: u64, operations: &[Operation]) -> Result<(), TestCaseError> {
    let mut queue = ReorderQueue::new(bound);
    let mut flat = FlatQueue::new(bound);
    for (step, operation) in operations.iter().enumerate() {
        match operation {
            Operation::Push { group, cost } => {
                let id = step as u64;
                prop_assert_eq!(
                    queue.push(id, *group, *cost),
                    flat.push(id, *group, *cost),
                    "step {}: push position",
                    step
                );
            }
            Operation::Pop => {
                prop_assert_eq!(queue.pop_front(), flat.entries.pop_front(), "step {}", step);
            }
            Operation::Cancel { modulus, residue } => {
                let cancelled = |entry: &Entry<u64>| entry.item % modulus == *residue;
                prop_assert_eq!(
                    queue.remove_where(cancelled),
                    flat.remove_where(cancelled),
                    "step {}: removed",
                    step
                );
            }
        }
        prop_assert_eq!(queue.len(), flat.entries.len());
        prop_assert_eq!(queue.front(), flat.entries.front().cloned());
        prop_assert_eq!(queue.front_group(), flat.entries.front().map(|e| e.group));
        prop_assert_eq!(queue.counter(), flat.counter);
        if step % 16 == 0 || step + 1 == operations.len() {
            let entries: Vec<Entry<u64>> = queue.iter().collect();
            let expected: Vec<Entry<u64>> = flat.entries.iter().cloned().collect();
            prop_assert_eq!(entries, expected, "step {}: order and counters", step);
        }
    }
    queue.check_invariants();
    Ok(())
}

fn run(cases: u32, strategy: impl Strategy<Value = (u64, Vec<Operation>)>) {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    if let Err(error) = runner.run(&strategy, |(bound, operations)| {
        same_as_flat(bound, &operations)
    }) {
        panic!("{error}");
    }
}

const GIGABYTE: u64 = 1_000_000_000;

#[test]
fn at_the_pelican_racks_scale_the_run_queue_decides_exactly_as_the_flat_queue() {
    // 12 groups, reads of 0.5–1.5 GB (and the odd 64 GB), u = 50–1,000 GB: hundreds queued.
    let cost = prop_oneof![
        20 => GIGABYTE / 2..=3 * GIGABYTE / 2,
        1 => Just(64 * GIGABYTE),
    ]
    .boxed();
    let bound = prop_oneof![Just(500 * GIGABYTE), 50 * GIGABYTE..=1_000 * GIGABYTE];
    run(24, (bound, operations(12, cost, 2_000..4_000)));
}

#[test]
fn with_small_costs_and_tight_bounds_the_run_queue_decides_exactly_as_the_flat_queue() {
    let cost = prop_oneof![1 => Just(0u64), 10 => 1..=6u64].boxed();
    let bound = prop_oneof![Just(0u64), 1..=24u64, Just(UNBOUNDED)];
    run(300, (bound, operations(5, cost, 0..400)));
}
