//! The simulator's agenda: the events still to happen, in (time, sequence) order. Every event
//! takes the next sequence number when it is queued, so ties at one microsecond resolve in the
//! order events were queued, whatever lane holds them; nothing depends on `Event`'s own order.
//!
//! Most events have a lane of their own instead of the heap, because their order is known:
//! - **the next arrival**: one pending at a time (each arrival draws the next gap);
//! - **first bytes**: every served request's seek takes the same time, so they come due in the
//!   order they were queued (a FIFO);
//! - **the network's next completion**: one at a time, replaced whenever it moves
//!   ([`Agenda::set_flow_wake`]), so a replaced wake-up never pops (the loop counts it stale).
//!
//! - **a unit's transition**: the disk events of one group's spin-up or spin-down and the
//!   group's own event after them, queued together ([`Agenda::push_batch`]), sorted once into a
//!   lane of their own. A Pelican group switch queues 25 events at a time and most of a quiet
//!   day's events are these; sorting them once and popping from a short list of such lanes cost
//!   less than a heap push and pop each (the heap was ~12% of a Pelican day at 0.25 req/s,
//!   issue 32). Small batches (the random layout's single-disk units) and batches beyond
//!   [`MAX_BATCH_LANES`] go to the heap, so a pop never scans many lanes.
//!
//! Only what is left (small transitions, policy timeouts and the failure) goes through the
//! binary heap (a heap push and pop cost more than a comparison of the lanes' heads). Popping
//! compares every lane's head by (time, sequence), so the order is exactly that of one heap
//! holding everything.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::report::TraceHash;
use spinwise_model::{DiskIndex, GroupIndex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    /// The next client read arrives (one pending at a time: each arrival draws the next gap).
    Arrive,
    /// One disk of a spinning-up group reached the active state (its mount may still run).
    DiskSpunUp { disk: DiskIndex },
    /// Every disk of the group is spun up and mounted: tell the scheduler.
    GroupSpunUp { group: GroupIndex },
    /// One disk of a spinning-down group finished unmounting: it rests (spinning down itself is
    /// taken as instant).
    DiskSpunDown { disk: DiskIndex },
    /// Every disk of the group has unmounted: tell the scheduler.
    GroupSpunDown { group: GroupIndex },
    /// The seek of a request being served is over: its flow starts.
    FirstByte { request: u64 },
    /// The network's earliest flow completion, valid only if `generation` is still the
    /// network's (one pending at a time; see [`crate::network`]).
    FlowDone { generation: u64 },
    /// The policy asked to be polled at this time (`Policy::next_timeout_us`); stale when the
    /// policy has since asked for another time.
    Timeout,
    /// The configured disk fails: its stripe stacks start being rebuilt.
    Fail,
}

impl Event {
    /// The trace hash's encoding: a tag and two fields, hashed as the tag's byte, then the two
    /// fields' little-endian bytes.
    pub(crate) fn hash_into(&self, trace: &mut TraceHash) {
        let (tag, a, b) = self.fields();
        trace.write(&[tag]);
        trace.write_u64_le(a);
        trace.write_u64_le(b);
    }

    /// A fixed encoding for the trace hash: tag, then two little-endian u64 fields.
    #[cfg(test)]
    pub(crate) fn encode(&self) -> [u8; 17] {
        let (tag, a, b) = self.fields();
        let mut bytes = [0u8; 17];
        bytes[0] = tag;
        bytes[1..9].copy_from_slice(&a.to_le_bytes());
        bytes[9..17].copy_from_slice(&b.to_le_bytes());
        bytes
    }

    /// (tag, a, b): the trace's fixed encoding of the event.
    fn fields(&self) -> (u8, u64, u64) {
        match *self {
            Event::Arrive => (0u8, 0, 0),
            Event::DiskSpunUp { disk } => (1, u64::from(disk), 0),
            Event::GroupSpunUp { group } => (2, u64::from(group), 0),
            Event::GroupSpunDown { group } => (3, u64::from(group), 0),
            Event::FirstByte { request } => (4, request, 0),
            Event::FlowDone { generation } => (5, generation, 0u64),
            Event::Timeout => (6, 0, 0),
            Event::Fail => (7, 0, 0),
            // Tag 8 was a deferred read's deadline, now the engine's (a `Timeout`).
            Event::DiskSpunDown { disk } => (9, u64::from(disk), 0),
        }
    }
}

/// When an event is due and its place among events due at the same time.
type Key = (u64, u64);

/// Batches of fewer events than this go to the heap: a lane pays off when it saves many heap
/// operations (a Pelican group has 24 disks; the random layout's units have one).
const MIN_BATCH_EVENTS: usize = 8;

/// The low bits of a batch event's order key that hold its index in the batch: batches of
/// more events, or due after 2^56 µs (2,283 years), go to the heap.
const BATCH_INDEX_BITS: u32 = 8;
const BATCH_INDEX_LIMIT: usize = 1 << BATCH_INDEX_BITS;

/// At most this many batch lanes at once (more go to the heap): every pop compares their heads.
/// A Pelican rack switches at most a few groups at a time.
const MAX_BATCH_LANES: usize = 16;

/// The events still to happen (module documentation).
#[derive(Clone, Debug, Default)]
pub(crate) struct Agenda {
    /// Disk and group transitions, timeouts and the failure.
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// The pending arrival: (time, sequence).
    arrival: Option<Key>,
    /// Pending first bytes, due in queue order: (time, sequence, request).
    first_bytes: VecDeque<(u64, u64, u64)>,
    /// The network's pending completion: (time, sequence, generation).
    flow_wake: Option<(u64, u64, u64)>,
    /// Batches of transition events ([`Agenda::push_batch`]), each sorted by *descending*
    /// (time, sequence) so its earliest event is last; never empty.
    batches: Vec<Vec<(u64, u64, Event)>>,
    /// Emptied batch storage, for the next batch.
    spare_batches: Vec<Vec<(u64, u64, Event)>>,
    /// The batch being gathered ([`Agenda::stage`]), not queued yet.
    staged: Vec<(u64, Event)>,
    /// Scratch: a batch's order keys ([`Agenda::push_batch`]).
    sort_keys: Vec<u64>,
    sequence: u64,
}

/// Where the earliest event waits.
#[derive(Clone, Copy)]
enum Lane {
    Heap,
    Arrival,
    FirstByte,
    FlowWake,
    Batch(usize),
}

impl Agenda {
    /// Queues `event` at `at_us` (not a flow completion: see [`Agenda::set_flow_wake`]).
    pub(crate) fn push(&mut self, at_us: u64, event: Event) {
        self.sequence += 1;
        let sequence = self.sequence;
        match event {
            Event::Arrive => {
                assert!(self.arrival.is_none(), "one arrival is pending at a time");
                self.arrival = Some((at_us, sequence));
            }
            Event::FirstByte { request } => {
                assert!(
                    self.first_bytes.back().is_none_or(|last| last.0 <= at_us),
                    "first bytes come due in the order they are queued"
                );
                self.first_bytes.push_back((at_us, sequence, request));
            }
            Event::FlowDone { .. } => unreachable!("a flow completion is set, not pushed"),
            _ => self.heap.push(Reverse((at_us, sequence, event))),
        }
    }

    /// Adds `event` at `at_us` to the batch [`Agenda::push_staged`] queues; it has no sequence
    /// number and cannot pop until then.
    pub(crate) fn stage(&mut self, at_us: u64, event: Event) {
        self.staged.push((at_us, event));
    }

    /// Queues the staged events as one batch ([`Agenda::push_batch`]).
    pub(crate) fn push_staged(&mut self) {
        let mut staged = std::mem::take(&mut self.staged);
        self.push_batch(&staged);
        staged.clear();
        self.staged = staged;
    }

    /// Queues `events` in the order given, each with the next sequence number, as
    /// [`Agenda::push`] one by one would; they pop in the same order too. Only transitions,
    /// timeouts and the failure (the heap's kinds) may be batched.
    fn push_batch(&mut self, events: &[(u64, Event)]) {
        let keyable = events.len() <= BATCH_INDEX_LIMIT
            && (events.iter()).all(|(at_us, _)| *at_us < 1 << (64 - BATCH_INDEX_BITS));
        if !keyable || events.len() < MIN_BATCH_EVENTS || self.batches.len() >= MAX_BATCH_LANES {
            for &(at_us, event) in events {
                self.push(at_us, event);
            }
            return;
        }
        for &(_, event) in events {
            assert!(
                !matches!(
                    event,
                    Event::Arrive | Event::FirstByte { .. } | Event::FlowDone { .. }
                ),
                "{event:?} has a lane of its own"
            );
        }
        // The i-th event given takes sequence `first + i`. Its order key is its time with its
        // index in the low bits, so sorting the keys sorts the events by (time, sequence).
        // Plain integers sort faster than the events do: sorting the events themselves (by
        // tuple comparison, or an insertion sort) was ~7% of a Pelican day at 0.25 req/s.
        let first = self.sequence + 1;
        self.sequence += events.len() as u64;
        let mut keys = std::mem::take(&mut self.sort_keys);
        keys.clear();
        keys.extend(
            (events.iter().enumerate())
                .map(|(index, (at_us, _))| at_us << BATCH_INDEX_BITS | index as u64),
        );
        keys.sort_unstable();
        let mut batch = self.spare_batches.pop().unwrap_or_default();
        batch.extend(keys.iter().rev().map(|key| {
            let index = (key & (BATCH_INDEX_LIMIT as u64 - 1)) as usize;
            let (at_us, event) = events[index];
            (at_us, first + index as u64, event)
        }));
        debug_assert!(
            batch
                .windows(2)
                .all(|w| (w[0].0, w[0].1) > (w[1].0, w[1].1))
        );
        self.batches.push(batch);
        self.sort_keys = keys;
    }

    /// Makes `(at_us, generation)` the network's pending completion, with the next sequence
    /// number; returns the time of the one it replaces, if any.
    pub(crate) fn set_flow_wake(&mut self, at_us: u64, generation: u64) -> Option<u64> {
        self.sequence += 1;
        let replaced = self.flow_wake.replace((at_us, self.sequence, generation));
        replaced.map(|(replaced_us, _, _)| replaced_us)
    }

    /// The next event in (time, sequence) order, and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, Event)> {
        let mut earliest: Option<(Key, Lane)> = None;
        let mut consider = |key: Option<Key>, lane: Lane| {
            if let Some(key) = key
                && earliest.is_none_or(|(best, _)| key < best)
            {
                earliest = Some((key, lane));
            }
        };
        consider(
            self.heap
                .peek()
                .map(|Reverse((at_us, sequence, _))| (*at_us, *sequence)),
            Lane::Heap,
        );
        consider(self.arrival, Lane::Arrival);
        consider(
            self.first_bytes
                .front()
                .map(|(at_us, sequence, _)| (*at_us, *sequence)),
            Lane::FirstByte,
        );
        consider(
            self.flow_wake.map(|(at_us, sequence, _)| (at_us, sequence)),
            Lane::FlowWake,
        );
        for (index, batch) in self.batches.iter().enumerate() {
            consider(
                batch.last().map(|(at_us, sequence, _)| (*at_us, *sequence)),
                Lane::Batch(index),
            );
        }
        let ((at_us, _), lane) = earliest?;
        let event = match lane {
            Lane::Heap => self.heap.pop().expect("peeked").0.2,
            Lane::Arrival => {
                self.arrival = None;
                Event::Arrive
            }
            Lane::FirstByte => {
                let (_, _, request) = self.first_bytes.pop_front().expect("seen");
                Event::FirstByte { request }
            }
            Lane::FlowWake => {
                let (_, _, generation) = self.flow_wake.take().expect("seen");
                Event::FlowDone { generation }
            }
            Lane::Batch(index) => {
                let batch = &mut self.batches[index];
                let (_, _, event) = batch.pop().expect("batches are never empty");
                if batch.is_empty() {
                    // Lanes are compared by their heads' keys, so their order does not matter.
                    let emptied = self.batches.swap_remove(index);
                    self.spare_batches.push(emptied);
                }
                event
            }
        };
        Some((at_us, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Drives the agenda and one heap of everything through the same random pushes and pops.
    #[test]
    fn the_agenda_pops_events_in_the_order_one_heap_of_them_all_would() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        for _ in 0..200 {
            let (mut agenda, mut heap) = (Agenda::default(), BinaryHeap::new());
            let (mut sequence, mut now_us, mut last_first_byte_us) = (0u64, 0u64, 0u64);
            let mut wake: Option<(u64, u64)> = None;
            for _ in 0..300 {
                match rng.random_range(0..6) {
                    0 if agenda.arrival.is_none() => {
                        let at_us = now_us + rng.random_range(0..5);
                        agenda.push(at_us, Event::Arrive);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, Event::Arrive)));
                    }
                    1 => {
                        let at_us = (now_us + 3).max(last_first_byte_us);
                        last_first_byte_us = at_us;
                        let event = Event::FirstByte { request: sequence };
                        agenda.push(at_us, event);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, event)));
                    }
                    2 => {
                        let at_us = now_us + rng.random_range(0..4);
                        let generation = sequence;
                        agenda.set_flow_wake(at_us, generation);
                        sequence += 1;
                        wake = Some((at_us, sequence));
                        heap.push(Reverse((at_us, sequence, Event::FlowDone { generation })));
                    }
                    3 if rng.random_bool(0.5) => {
                        let at_us = now_us + rng.random_range(0..6);
                        let event = Event::DiskSpunUp {
                            disk: rng.random_range(0..9),
                        };
                        agenda.push(at_us, event);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, event)));
                    }
                    3 => {
                        // A transition: disk events with ties, then the group's at the latest.
                        let size = rng.random_range(1..30);
                        let mut batch: Vec<(u64, Event)> = (0..size)
                            .map(|disk| {
                                let at_us = now_us + rng.random_range(0..8);
                                (at_us, Event::DiskSpunDown { disk })
                            })
                            .collect();
                        let last_us = batch.iter().map(|(at_us, _)| *at_us).max().unwrap();
                        batch.push((last_us, Event::GroupSpunDown { group: size }));
                        for &(at_us, event) in &batch {
                            agenda.stage(at_us, event);
                        }
                        agenda.push_staged();
                        for (at_us, event) in batch {
                            sequence += 1;
                            heap.push(Reverse((at_us, sequence, event)));
                        }
                    }
                    _ => {
                        // The one heap also holds replaced wake-ups: skip them as the loop does.
                        let expected = loop {
                            match heap.pop() {
                                Some(Reverse((at_us, seq, Event::FlowDone { .. })))
                                    if wake != Some((at_us, seq)) => {}
                                Some(Reverse((at_us, _, event))) => {
                                    if matches!(event, Event::FlowDone { .. }) {
                                        wake = None;
                                    }
                                    break Some((at_us, event));
                                }
                                None => break None,
                            }
                        };
                        let popped = agenda.pop();
                        assert_eq!(popped, expected);
                        if let Some((at_us, _)) = popped {
                            now_us = at_us;
                        }
                    }
                }
            }
        }
    }
}
