//! Pelican's reordering queue (Pelican §2.3, "Reordering"): one queue of requests that batches
//! requests for the same group behind each other, so one spin-up serves many of them, while
//! bounding how far any request falls behind its first-in-first-out position.
//!
//! # The paper's algorithm, as implemented here
//!
//! The queue keeps a counter t. A request r is tagged with a timestamp t_r (the counter when r
//! is enqueued) and a reordering counter o_r, initially t_r. o_a − t_a is how far a has moved
//! compared with a FIFO queue: positive when later requests were put ahead of it, negative when
//! it was put ahead of earlier ones. The bound u must hold for every queued request a:
//! o_a − t_a ≤ u. On inserting r:
//!
//! 1. find l, the last queued request of r's group; if there is none, append r at the tail;
//! 2. otherwise, if for any request i after l, o_i + cost(r) − t_i > u, append r at the tail;
//! 3. otherwise add cost(r) to o_i for every request i after l, insert r right after l and set
//!    o_r = t_r − Σ cost(i) over those overtaken requests.
//!
//! # Where it generalises the paper
//!
//! - **Cost instead of "one".** The paper counts requests (every o_i grows by one, the counter by
//!   one per request) and notes that this suits uniform blob sizes only; for non-uniform sizes it
//!   measures u in estimated wall-clock time. Here every request carries a cost in one unit
//!   chosen by the caller ([`CostModel`]): requests (cost 1, exactly the paper), bytes, or
//!   estimated service time in microseconds (bytes / bandwidth). The counter advances by cost(r)
//!   on each insert, overtaking adds cost(r) to each overtaken request, and o_r subtracts the
//!   overtaken costs. The bound u is in the same unit (Pelican's evaluation uses u = 500 GB).
//!   The paper's time estimate also counts the spin-ups ahead of a request; those depend on the
//!   order that reordering itself is choosing, so a per-request cost cannot include them. A caller
//!   that wants a fixed per-request overhead (a seek) adds it to the cost.
//! - **Cancellation.** The paper has no cancelled requests. [`ReorderQueue::remove_where`]
//!   removes requests and corrects the others' counters as if the removed ones had never been
//!   enqueued: a request they overtook gets its slack back, a request that overtook them loses the
//!   credit it earned by jumping ahead of them. Keeping the counters unchanged instead would still
//!   satisfy o − t ≤ u, but a request that had overtaken a cancelled one could then be overtaken
//!   by more than u (tests/it/reorder.rs, `cancelling_a_request_that_was_overtaken_takes_back_the_
//!   credit_of_those_that_overtook_it`), breaking the delay guarantee below.
//!
//! # Invariants
//!
//! - (bound) o_a − t_a ≤ u for every queued request a; asserted in debug builds after every push
//!   and removal.
//! - (meaning) o_a − t_a = G(a) − E(a), where G(a) is the total cost of requests enqueued after a
//!   and served or queued ahead of it, and E(a) the total cost of requests enqueued before a and
//!   still queued behind it (cancelled requests count in neither).
//! - (delay) From the two: G(a) ≤ u for every request, served or queued — no request waits
//!   behind more than u cost units of later requests. (Take b, the earliest-enqueued request at or
//!   behind a: E(b) = 0 and G(b) ≥ G(a), so G(a) ≤ o_b − t_b ≤ u.) With u = 0 and positive costs
//!   the queue is FIFO; with u = [`UNBOUNDED`] every group's requests form one batch, batches in
//!   the order their groups first arrived.
//!
//! [`ReorderQueue::check_invariants`] checks (bound) and the part of (meaning) the queue can see.
//!
//! # Cost of operations
//!
//! [`ReorderQueue::push`] is O(queue length): it scans for the group's last request and checks
//! every request after it. A maximum queue depth is the scheduler's business (Pelican: 1,000
//! requests per class), not this queue's. [`ReorderQueue::remove_where`] is O(queue length ×
//! removed requests).

use spinwise_model::GroupIndex;
use std::collections::VecDeque;
use std::num::NonZeroU64;

/// The bound for Pelican's u = ∞: reordering is never refused, every group is one batch.
pub const UNBOUNDED: u64 = u64::MAX;

const MICROSECONDS_PER_SECOND: u128 = 1_000_000;

/// The unit a queue measures cost (and its bound u) in. One queue must use one model for every
/// request and for its bound.
///
/// Every request costs at least one unit: no request is free to serve (it needs its group spinning
/// and a turn at the disks), and a zero cost would let a request overtake others even under u = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostModel {
    /// Cost 1 per request: the paper's formulation, for uniform blob sizes.
    Requests,
    /// Cost = the request's bytes.
    Bytes,
    /// Cost = the estimated service time in microseconds: bytes / bandwidth, rounded up.
    EstimatedTime { bytes_per_second: NonZeroU64 },
}

impl CostModel {
    /// The cost of a request moving `bytes`, in this model's unit (requests, bytes or
    /// microseconds); at least 1. A time too long for a u64 of microseconds (half a million years)
    /// saturates.
    pub fn cost(self, bytes: u64) -> u64 {
        match self {
            CostModel::Requests => 1,
            CostModel::Bytes => bytes.max(1),
            CostModel::EstimatedTime { bytes_per_second } => {
                let microseconds = (u128::from(bytes) * MICROSECONDS_PER_SECOND)
                    .div_ceil(u128::from(bytes_per_second.get()));
                u64::try_from(microseconds).unwrap_or(u64::MAX).max(1)
            }
        }
    }
}

/// One queued request with its reordering bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<T> {
    pub item: T,
    pub group: GroupIndex,
    /// In the queue's cost unit.
    pub cost: u64,
    /// t_r: the queue's counter when the request was enqueued. Timestamps of requests with
    /// positive cost are distinct; their intervals [t, t + cost) never overlap.
    pub timestamp: u64,
    /// o_r: the reordering counter.
    pub reorder: u64,
}

impl<T> Entry<T> {
    /// o − t: how far the request is behind its FIFO position (positive: that much cost of later
    /// requests goes first, net of earlier requests it overtook) or ahead of it (negative).
    pub fn displacement(&self) -> i128 {
        i128::from(self.reorder) - i128::from(self.timestamp)
    }
}

/// Pelican's reordering queue; see the module documentation.
#[derive(Clone, Debug)]
pub struct ReorderQueue<T> {
    entries: VecDeque<Entry<T>>,
    /// u, in the cost unit.
    bound: u64,
    /// t: the timestamp the next request gets.
    counter: u64,
    /// Σ cost over queued requests.
    queued_cost: u64,
}

impl<T> ReorderQueue<T> {
    /// An empty queue with reordering bound u = `bound`, in the unit of the costs that will be
    /// pushed. `0` is FIFO, [`UNBOUNDED`] is the paper's u = ∞.
    pub fn new(bound: u64) -> Self {
        ReorderQueue {
            entries: VecDeque::new(),
            bound,
            counter: 0,
            queued_cost: 0,
        }
    }

    /// Enqueues `item` for `group` at `cost`, following the paper's insertion rule, and returns
    /// the position it was inserted at (0 is the front). O(queue length).
    ///
    /// Panics if the counter would pass `u64::MAX` (16 EiB pushed through one queue in bytes).
    pub fn push(&mut self, item: T, group: GroupIndex, cost: u64) -> usize {
        let timestamp = self.counter;
        self.counter = timestamp
            .checked_add(cost)
            .expect("the reordering counter overflows u64");
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
                // u128: o_i + cost and t_i + u may each exceed u64 when u is huge.
                let allowed = self.entries.range(last + 1..).all(|i| {
                    u128::from(i.reorder) + u128::from(cost)
                        <= u128::from(i.timestamp) + u128::from(bound)
                });
                if allowed {
                    let mut overtaken_cost = 0u64;
                    for i in self.entries.range_mut(last + 1..) {
                        // o_i ≤ t_i + u and o_i stays within the counter (invariant (meaning)).
                        i.reorder = i
                            .reorder
                            .checked_add(cost)
                            .expect("an overtaken request's reordering counter overflows");
                        overtaken_cost = overtaken_cost
                            .checked_add(i.cost)
                            .expect("overtaken costs overflow");
                    }
                    // The overtaken requests were enqueued before r with disjoint intervals
                    // [t_i, t_i + cost_i) below t_r, so their costs sum to at most t_r.
                    entry.reorder = timestamp
                        .checked_sub(overtaken_cost)
                        .expect("overtaken costs exceed the new request's timestamp");
                    last + 1
                } else {
                    tail
                }
            }
        };
        self.entries.insert(position, entry);
        self.queued_cost += cost;
        debug_assert!(self.bound_holds(), "push broke the reordering bound");
        position
    }

    /// Removes and returns the request at the front: the next to serve.
    pub fn pop_front(&mut self) -> Option<Entry<T>> {
        let entry = self.entries.pop_front()?;
        self.queued_cost -= entry.cost;
        Some(entry)
    }

    pub fn front(&self) -> Option<&Entry<T>> {
        self.entries.front()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The queued requests, front (next to serve) first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Entry<T>> + ExactSizeIterator {
        self.entries.iter()
    }

    /// u, in the cost unit.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// t: the timestamp the next pushed request will get (the total cost ever pushed).
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Σ cost over queued requests, in the cost unit.
    pub fn queued_cost(&self) -> u64 {
        self.queued_cost
    }

    /// The group of each batch (maximal run of same-group requests), front first: the order in
    /// which groups would spin up if the queue were served as it stands. A group appears more than
    /// once when the bound sent some of its requests to the tail.
    pub fn groups_in_order(&self) -> impl Iterator<Item = GroupIndex> + '_ {
        let mut previous = None;
        self.entries.iter().filter_map(move |entry| {
            let starts_batch = previous != Some(entry.group);
            previous = Some(entry.group);
            starts_batch.then_some(entry.group)
        })
    }

    /// Removes every request for which `cancelled` is true (cancelled requests), returning them
    /// front first, and corrects the remaining counters as if the removed requests had never been
    /// enqueued (module documentation, "Cancellation"). The bound keeps holding: with the
    /// corrections, o_a − t_a = G(a) − E(a) ≤ G(a) ≤ u. O(queue length × removed requests).
    pub fn remove_where(&mut self, mut cancelled: impl FnMut(&Entry<T>) -> bool) -> Vec<Entry<T>> {
        let mut kept = VecDeque::with_capacity(self.entries.len());
        let mut removed = Vec::new();
        // (position among all entries, timestamp, cost) of each removed request.
        let mut removed_at = Vec::new();
        for (position, entry) in std::mem::take(&mut self.entries).into_iter().enumerate() {
            if cancelled(&entry) {
                removed_at.push((position, entry.timestamp, entry.cost));
                self.queued_cost -= entry.cost;
                removed.push(entry);
            } else {
                kept.push_back((position, entry));
            }
        }
        self.entries = kept
            .into_iter()
            .map(|(position, mut entry)| {
                for &(removed_position, removed_timestamp, removed_cost) in &removed_at {
                    // A zero-cost request moved nobody. For a positive cost, "enqueued before a"
                    // is exactly t_x < t_a, since intervals [t, t + cost) are disjoint.
                    if removed_cost == 0 {
                        continue;
                    }
                    let enqueued_before = removed_timestamp < entry.timestamp;
                    if removed_position < position && !enqueued_before {
                        // A later request ahead of a: it counted in G(a).
                        entry.reorder = entry
                            .reorder
                            .checked_sub(removed_cost)
                            .expect("a cancelled overtaker is not counted in the counter");
                    } else if removed_position > position && enqueued_before {
                        // An earlier request behind a: it counted in E(a).
                        entry.reorder = entry
                            .reorder
                            .checked_add(removed_cost)
                            .expect("reordering counter overflows on cancellation");
                    }
                }
                entry
            })
            .collect();
        debug_assert!(
            self.bound_holds(),
            "cancellation broke the reordering bound"
        );
        removed
    }

    /// Panics unless the queue's invariants hold: (bound) o_a − t_a ≤ u for every queued a; every
    /// timestamp interval [t, t + cost) lies below the counter and positive-cost intervals are
    /// disjoint; queued costs add up; and (meaning) o_a − t_a + E(a) − G_queued(a) ≥ 0, the cost of
    /// served requests that overtook a. O(queue length²): for tests and debugging.
    pub fn check_invariants(&self) {
        assert!(self.bound_holds(), "a request exceeds the reordering bound");
        let mut queued_cost = 0u64;
        for (position, a) in self.entries.iter().enumerate() {
            queued_cost += a.cost;
            assert!(
                u128::from(a.timestamp) + u128::from(a.cost) <= u128::from(self.counter),
                "request at {position} was enqueued beyond the counter"
            );
            assert!(
                a.reorder <= self.counter,
                "request at {position} has a reordering counter beyond the counter"
            );
            let mut later_ahead = 0i128;
            let mut earlier_behind = 0i128;
            for (other_position, x) in self.entries.iter().enumerate() {
                if other_position == position || x.cost == 0 {
                    continue;
                }
                let (a_start, x_start) = (u128::from(a.timestamp), u128::from(x.timestamp));
                let overlaps = x_start < a_start + u128::from(a.cost)
                    && a_start < x_start + u128::from(x.cost);
                assert!(
                    a.cost == 0 || !overlaps,
                    "requests at {position} and {other_position} have overlapping timestamps"
                );
                let enqueued_before = x.timestamp < a.timestamp;
                if other_position < position && !enqueued_before {
                    later_ahead += i128::from(x.cost);
                } else if other_position > position && enqueued_before {
                    earlier_behind += i128::from(x.cost);
                }
            }
            let served_ahead = a.displacement() + earlier_behind - later_ahead;
            assert!(
                served_ahead >= 0,
                "request at {position}: displacement {} is below its queued overtakers {} minus \
                 the earlier requests behind it {}",
                a.displacement(),
                later_ahead,
                earlier_behind
            );
        }
        assert_eq!(queued_cost, self.queued_cost, "queued cost books disagree");
    }

    /// (bound): o_a − t_a ≤ u for every queued a. O(queue length).
    fn bound_holds(&self) -> bool {
        self.entries
            .iter()
            .all(|a| u128::from(a.reorder) <= u128::from(a.timestamp) + u128::from(self.bound))
    }
}
