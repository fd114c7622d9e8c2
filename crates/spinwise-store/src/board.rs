//! The stripe board of a spread read: which column threads read which stripes, decided stripe
//! by stripe while the read runs, so a column whose disk falls behind is stood in for.
//!
//! Why: a read that fixes its k columns when it starts streams each at the pace of its slowest
//! disk. Reads of equal size that a group serves together then move in lockstep, and four 15 + 3
//! reads over 24 disks put three reads on some disk: no fixed choice of columns passes 83% of
//! the group's disks (docs/BENCHMARKS.md, "Least-busy columns"). Here the k columns chosen at
//! the start are *primaries*; the blob's other readable columns are *standbys*. A primary claims
//! every stripe it reaches that has fewer than k claims. A standby waits at the first stripe
//! that is not full and claims it only when the primaries that have not reached it yet and are
//! not late (fewer than `lag` stripes behind the leading primary) cannot fill it; a primary
//! that then reaches a full stripe skips it. Each stripe thus gets k
//! fragments from the columns that reach it first, and a disk shared with other reads gives up
//! stripes to an idle one instead of holding the read back.
//!
//! Invariants:
//! - a stripe gets at most k claims, and each claimed fragment is deposited exactly once (an
//!   error in place of the bytes if the thread panicked: its guard deposits for it);
//! - the hand-on takes stripe `next` only when every claim on it is deposited and either it
//!   has k claims or every live thread has passed it (then it has fewer, and the decoder reads
//!   around), so it never waits for a fragment nobody will read;
//! - claims lie in `[next, next + window)`, so at most `window` stripes' fragments are held,
//!   besides each thread's one run in hand;
//! - a thread that has passed the stripe being handed on claims only a whole run (`max`
//!   stripes, or all that are left) once the window has room for it: claiming whatever sliver
//!   of room a take freed made a reader behind a slower consumer read one fragment per IO and
//!   wake on every stripe (measured on a 1 GiB GET: 2/3 of its IOs one fragment, 130,000 futex
//!   calls). A thread at the stripe being handed on claims what the window holds, so the
//!   hand-on never waits for a thread that waits for room;
//! - every change a waiter could be waiting for notifies it, and only those: each wake costs
//!   a context switch and a turn at the board's lock (when every change woke every waiter, a
//!   thread waiting out a grace woke on each claim: 1,800 of the ~11,000 context switches of a
//!   1 GiB GET, and more waiting for the lock). Three condvars, and a thread's end or a stop
//!   wakes all three:
//!   - `room`, threads waiting for room in the window: a take that gives one its run (or the
//!     stripe being handed on);
//!   - `changed`, standbys waiting for a chance to claim: a claim or skip that leaves a primary
//!     newly behind (the standbys then wait out its grace), and the end of that grace. Other
//!     moves never let a standby claim: at a stripe that is not full, every live primary that
//!     is not late has claimed it or is coming to it, and a claim by one that is coming only
//!     turns a coming primary into a claim; a late primary's claims and catching up only
//!     fill the stripe more. So a standby may claim only after a primary goes late (its grace
//!     ends) or ends. A primary waits only for room;
//!   - `handed`, the hand-on: a deposit (claims never make a stripe ready: only a deposit or a
//!     thread's end does).

use crate::subtree_hash::Checked;
use spinwise_disk::{Timeline, WallTimeline};
use spinwise_ec::FragmentFault;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A column's fragment of one stripe, crc-checked (without its crc, with its subtree of the
/// whole-object hash when the read computes one: `crate::subtree_hash`), or why not.
pub(crate) type Fragment = Result<Checked, FragmentFault>;

/// [`Board::try_take`]: the next stripe is not ready yet.
#[derive(Debug)]
pub(crate) struct NotYet;

/// One column thread as the board sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reader {
    pub column: usize,
    pub primary: bool,
}

#[derive(Default)]
struct Slot {
    claimed: usize,
    fragments: Vec<(usize, Fragment)>,
}

struct ThreadState {
    reader: Reader,
    /// The next stripe it will consider (it has passed every stripe below).
    position: u64,
    alive: bool,
    /// It has claimed a run: a primary that has not is never late (threads start unevenly).
    started: bool,
    /// Since when (µs on the board's time line) a primary has been `lag` stripes or more
    /// behind the leading primary.
    behind_since: Option<u64>,
    /// While it waits for room in the window: the window's end (exclusive) its run needs.
    needs_room_to: Option<u64>,
}

struct State {
    /// The stripe the hand-on takes next; `slots[i]` is stripe `next + i`.
    next: u64,
    /// One past the last stripe.
    end: u64,
    slots: VecDeque<Slot>,
    threads: Vec<ThreadState>,
    stopped: bool,
}

pub(crate) struct Board {
    state: Mutex<State>,
    /// Standbys wait on it for a chance to claim (module docs). Shared with the wakes a
    /// virtual time line runs when a standby's grace ends.
    changed: Arc<Condvar>,
    /// Column threads wait on it for room in the window.
    room: Condvar,
    /// The hand-on waits on it for the next stripe's fragments.
    handed: Condvar,
    k: usize,
    window: u64,
    lag: u64,
    grace_us: u64,
    /// The time the grace is measured on: the wall clock, or the run's virtual time.
    timeline: Arc<dyn Timeline>,
}

impl Board {
    /// A board for stripes `first..end`, `k` fragments each, with `readers` (one per thread,
    /// indexed in this order), at most `window` stripes ahead of the hand-on, standbys stepping
    /// in for a primary that has been `lag` stripes behind the leading one for `grace`.
    pub(crate) fn new(
        k: usize,
        (first, end): (u64, u64),
        readers: &[Reader],
        (window, lag, grace): (u64, u64, Duration),
    ) -> Board {
        assert!(
            k > 0 && window > 0 && first <= end,
            "a board needs k, a window and stripes"
        );
        let slots = (first..end.min(first + window))
            .map(|_| Slot::default())
            .collect();
        let threads = readers
            .iter()
            .map(|&reader| ThreadState {
                reader,
                position: first,
                alive: true,
                started: false,
                behind_since: None,
                needs_room_to: None,
            })
            .collect();
        Board {
            state: Mutex::new(State {
                next: first,
                end,
                slots,
                threads,
                stopped: false,
            }),
            changed: Arc::new(Condvar::new()),
            room: Condvar::new(),
            handed: Condvar::new(),
            k,
            window,
            lag,
            grace_us: u64::try_from(grace.as_micros()).unwrap_or(u64::MAX),
            timeline: Arc::new(WallTimeline::new()),
        }
    }

    /// The board with its grace measured, and waited out, on `timeline`.
    pub(crate) fn on_timeline(mut self, timeline: Arc<dyn Timeline>) -> Board {
        self.timeline = timeline;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few field writes under the lock; a panic between them is a broken
        // invariant the hand-on's checks surface, so a poisoned state is still worth reading.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(state)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes everyone: the column threads and the hand-on.
    fn notify_everyone(&self) {
        self.changed.notify_all();
        self.room.notify_all();
        self.handed.notify_all();
    }

    /// A thread claimed or skipped: notes which primaries are behind now, and wakes the
    /// standbys if one just fell behind, so they wait out its grace (module docs).
    fn moved(&self, state: &mut State, now: u64) {
        let (_, fell_behind) = self.note_behind(state, now);
        if fell_behind {
            self.changed.notify_all();
        }
    }

    /// Thread `thread`'s next run to read: up to `max` consecutive stripes it has claimed, as
    /// (first stripe, count); `None` when it has nothing left (the range is done for it, or the
    /// read stopped). Blocks while it may claim nothing yet.
    pub(crate) fn claim_run(&self, thread: usize, max: u64) -> Option<(u64, u64)> {
        let mut state = self.lock();
        loop {
            if state.stopped {
                return None;
            }
            let limit = state.end.min(state.next + self.window);
            let before = state.threads[thread].position;
            let mut position = before.max(state.next);
            while position < limit && state.slot(position).claimed >= self.k {
                position += 1;
            }
            state.threads[thread].position = position;
            if position >= state.end {
                return None;
            }
            let now = self.timeline.now_us();
            // Past the stripe being handed on, wait for room for a whole run (module docs).
            let run_end = state.end.min(position + max.max(1));
            if position > state.next && limit < run_end {
                if position != before {
                    self.moved(&mut state, now);
                }
                state.threads[thread].needs_room_to = Some(run_end);
                state = self
                    .room
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                state.threads[thread].needs_room_to = None;
                continue;
            }
            let (recheck, _) = self.note_behind(&mut state, now);
            if position < limit && self.may_claim(&state, thread, position, now) {
                let mut count = 0;
                while count < max.max(1)
                    && position + count < limit
                    && self.may_claim(&state, thread, position + count, now)
                {
                    state.slot_mut(position + count).claimed += 1;
                    count += 1;
                }
                state.threads[thread].position = position + count;
                state.threads[thread].started = true;
                self.moved(&mut state, now);
                return Some((position, count));
            }
            if position != before {
                self.moved(&mut state, now);
            }
            // Only a standby gets here: a primary may claim any stripe that is not full, and
            // past the stripe being handed on it waited for room above (at that stripe the
            // window always has room).
            state = match recheck {
                // A primary is behind but not late yet: look again when its grace ends.
                Some(after_us) if !state.threads[thread].reader.primary => {
                    self.wait_for(state, (thread, now, after_us))
                }
                _ => self.wait(state),
            };
        }
    }

    /// Waits for a change, or `after_us` from `now_us`: on the wall clock with the condvar's
    /// own timeout; on another time line, by a wake it runs at that time (which may come after
    /// the thread went on: a spurious wake, which every waiter here tolerates).
    fn wait_for<'a>(
        &self,
        state: MutexGuard<'a, State>,
        (thread, now_us, after_us): (usize, u64, u64),
    ) -> MutexGuard<'a, State> {
        let changed = self.changed.clone();
        let at_us = now_us.saturating_add(after_us);
        // Ranked after the disks' waits (their order is a disk index) at the same instant.
        let order = (1 << 32) | thread as u64;
        if self.timeline.is_wall()
            || !self
                .timeline
                .schedule_wake(at_us, order, Box::new(move || changed.notify_all()))
        {
            return self
                .changed
                .wait_timeout(state, Duration::from_micros(after_us))
                .map(|(state, _)| state)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
        self.wait(state)
    }

    /// Marks when each started primary fell `lag` stripes behind the leader (clears it when it
    /// caught up); returns the shortest time until a primary behind becomes late, if any, and
    /// whether a primary fell behind just now.
    fn note_behind(&self, state: &mut State, now: u64) -> (Option<u64>, bool) {
        let leader = primary_leader(state);
        let mut soonest: Option<u64> = None;
        let mut fell_behind = false;
        for thread in state.threads.iter_mut() {
            let behind = thread.alive
                && thread.reader.primary
                && thread.started
                && thread.position + self.lag <= leader;
            if !behind {
                thread.behind_since = None;
                continue;
            }
            fell_behind |= thread.behind_since.is_none();
            let since = *thread.behind_since.get_or_insert(now);
            let left = self.grace_us.saturating_sub(now.saturating_sub(since));
            if left > 0 {
                soonest = Some(soonest.map_or(left, |s| s.min(left)));
            }
        }
        (soonest, fell_behind)
    }

    /// Whether `thread` may claim `stripe` now: it is not full, and the thread is a primary or
    /// the primaries that can still reach it in time cannot fill it.
    fn may_claim(&self, state: &State, thread: usize, stripe: u64, now: u64) -> bool {
        let claimed = state.slot(stripe).claimed;
        if claimed >= self.k {
            return false;
        }
        if state.threads[thread].reader.primary {
            return true;
        }
        // A primary is late when it has been `lag` stripes or more behind the leading primary
        // for `grace` (`note_behind`).
        let late = |other: &ThreadState| {
            other
                .behind_since
                .is_some_and(|since| now.saturating_sub(since) >= self.grace_us)
        };
        let coming = state
            .threads
            .iter()
            .filter(|other| {
                other.alive && other.reader.primary && other.position <= stripe && !late(other)
            })
            .count();
        claimed + coming < self.k
    }

    /// Hands in the fragments of a run `thread` claimed, in stripe order.
    pub(crate) fn deposit(&self, thread: usize, first: u64, fragments: Vec<Fragment>) {
        let mut state = self.lock();
        let column = state.threads[thread].reader.column;
        for (offset, fragment) in fragments.into_iter().enumerate() {
            let stripe = first + offset as u64;
            assert!(
                stripe >= state.next,
                "stripe {stripe} was taken before its claimed fragment came"
            );
            state.slot_mut(stripe).fragments.push((column, fragment));
        }
        // Only the hand-on looks at deposits.
        self.handed.notify_all();
    }

    /// Thread `thread` has ended; it claims nothing more.
    pub(crate) fn finish(&self, thread: usize) {
        let mut state = self.lock();
        state.threads[thread].alive = false;
        self.notify_everyone();
    }

    /// The next stripe's fragments (column, fragment), blocking until they are all in; `None`
    /// after the last stripe or once stopped.
    pub(crate) fn take(&self) -> Option<Vec<(usize, Fragment)>> {
        let mut state = self.lock();
        loop {
            if let Ok(taken) = self.take_ready(&mut state) {
                return taken;
            }
            state = self
                .handed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// [`Board::take`] without blocking: `Err(NotYet)` when it would wait.
    pub(crate) fn try_take(&self) -> Result<Option<Vec<(usize, Fragment)>>, NotYet> {
        self.take_ready(&mut self.lock())
    }

    /// Takes the next stripe if it is ready (the common part of `take` and `try_take`).
    fn take_ready(&self, state: &mut State) -> Result<Option<Vec<(usize, Fragment)>>, NotYet> {
        if state.stopped || state.next >= state.end {
            return Ok(None);
        }
        if !self.is_final(state) {
            return Err(NotYet);
        }
        let slot = state
            .slots
            .pop_front()
            .expect("a slot for every stripe left");
        state.next += 1;
        let refill = state.next + self.window - 1;
        if refill < state.end {
            state.slots.push_back(Slot::default());
        }
        // A take changes only the window's end for the column threads: wake them when one
        // waiting for room now has it, or has the stripe being handed on (it then claims what
        // the window holds).
        let (next, limit) = (state.next, state.end.min(state.next + self.window));
        let room = state.threads.iter().any(|thread| {
            thread
                .needs_room_to
                .is_some_and(|to| to <= limit || thread.position <= next)
        });
        if room {
            self.room.notify_all();
        }
        Ok(Some(slot.fragments))
    }

    fn is_final(&self, state: &State) -> bool {
        let slot = state.slot(state.next);
        let all_in = slot.fragments.len() == slot.claimed;
        let passed = state
            .threads
            .iter()
            .all(|thread| !thread.alive || thread.position > state.next);
        all_in && (slot.claimed >= self.k || passed)
    }

    /// Stops every thread at its next claim (the hand-on has gone).
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.notify_everyone();
    }
}

/// The position of the leading live primary (0 if none).
fn primary_leader(state: &State) -> u64 {
    state
        .threads
        .iter()
        .filter(|thread| thread.alive && thread.reader.primary)
        .map(|thread| thread.position)
        .max()
        .unwrap_or(0)
}

impl State {
    fn slot(&self, stripe: u64) -> &Slot {
        &self.slots[(stripe - self.next) as usize]
    }

    fn slot_mut(&mut self, stripe: u64) -> &mut Slot {
        let index = (stripe - self.next) as usize;
        &mut self.slots[index]
    }
}

/// A column thread's hold on the board: ends the thread there when dropped, depositing an
/// error for a run it claimed but did not hand in (a panic while reading).
pub(crate) struct Seat<'a> {
    pub board: &'a Board,
    pub thread: usize,
    pub pending: Option<(u64, u64)>,
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        if let Some((first, count)) = self.pending.take() {
            let lost = (0..count)
                .map(|_| Err(FragmentFault::Unavailable("its column thread ended".into())))
                .collect();
            self.board.deposit(self.thread, first, lost);
        }
        self.board.finish(self.thread);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::time::Instant;

    fn readers(primaries: &[usize], standbys: &[usize]) -> Vec<Reader> {
        let primary = primaries.iter().map(|&column| Reader {
            column,
            primary: true,
        });
        let standby = standbys.iter().map(|&column| Reader {
            column,
            primary: false,
        });
        primary.chain(standby).collect()
    }

    fn fragment(stripe: u64) -> Fragment {
        Ok(Checked::plain(Bytes::from(stripe.to_le_bytes().to_vec())))
    }

    fn deposit_run(board: &Board, thread: usize, (first, count): (u64, u64)) {
        board.deposit(
            thread,
            first,
            (first..first + count).map(fragment).collect(),
        );
    }

    #[test]
    fn primaries_on_time_fill_every_stripe_and_a_standby_claims_nothing() {
        let board = Board::new(2, (0, 4), &readers(&[0, 1], &[2]), (4, 2, Duration::ZERO));
        assert_eq!(board.claim_run(0, 4), Some((0, 4)));
        assert_eq!(board.claim_run(1, 4), Some((0, 4)));
        // Every stripe is full: the standby has nothing to read.
        assert_eq!(board.claim_run(2, 4), None);
        deposit_run(&board, 0, (0, 4));
        deposit_run(&board, 1, (0, 4));
        for _ in 0..4 {
            let columns: Vec<usize> = board.take().unwrap().iter().map(|(c, _)| *c).collect();
            assert_eq!(columns, vec![0, 1]);
        }
        assert!(board.take().is_none());
    }

    #[test]
    fn a_standby_takes_the_stripes_a_late_primary_has_not_reached_and_the_primary_skips_them() {
        let board = Board::new(2, (0, 6), &readers(&[0, 1], &[2]), (6, 3, Duration::ZERO));
        // Both primaries read stripe 0; then primary 0 runs ahead to stripe 3.
        assert_eq!(board.claim_run(0, 1), Some((0, 1)));
        assert_eq!(board.claim_run(1, 1), Some((0, 1)));
        assert_eq!(board.claim_run(0, 2), Some((1, 2)));
        // Primary 1 is two stripes behind the leader: not late (lag 3), so the standby, at the
        // first stripe that is not full, waits.
        let (board, standby) = {
            let board = std::sync::Arc::new(board);
            let waiting = board.clone();
            (board, std::thread::spawn(move || waiting.claim_run(2, 4)))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !standby.is_finished(),
            "the standby claimed while primary 1 was on time"
        );
        // Primary 0 reaches stripe 4: primary 1 is three behind, late. The standby takes
        // stripes 1 to 4 (a run of four): 1 to 3 were waiting for primary 1 only, and at 4
        // only primary 0 is still coming.
        assert_eq!(board.claim_run(0, 1), Some((3, 1)));
        assert_eq!(standby.join().unwrap(), Some((1, 4)));
        // Primary 1 finds stripes 1 to 3 full and goes on at 4.
        assert_eq!(board.claim_run(1, 4), Some((4, 2)));
        assert_eq!(board.claim_run(0, 4), Some((5, 1)));
        deposit_run(&board, 0, (0, 1));
        deposit_run(&board, 1, (0, 1));
        deposit_run(&board, 0, (1, 3));
        deposit_run(&board, 2, (1, 4));
        deposit_run(&board, 1, (4, 2));
        deposit_run(&board, 0, (5, 1));
        let mut taken = Vec::new();
        while let Some(fragments) = board.take() {
            let mut columns: Vec<usize> = fragments.iter().map(|(c, _)| *c).collect();
            columns.sort_unstable();
            taken.push(columns);
        }
        let (both, stood_in) = (vec![0, 1], vec![0, 2]);
        let expected = vec![
            both.clone(),
            stood_in.clone(),
            stood_in.clone(),
            stood_in,
            vec![1, 2],
            both,
        ];
        assert_eq!(taken, expected);
    }

    #[test]
    fn a_standby_waits_out_the_grace_before_standing_in_for_a_primary_behind() {
        let grace = Duration::from_millis(60);
        let board = std::sync::Arc::new(Board::new(
            2,
            (0, 6),
            &readers(&[0, 1], &[2]),
            (6, 3, grace),
        ));
        assert_eq!(board.claim_run(0, 1), Some((0, 1)));
        assert_eq!(board.claim_run(1, 1), Some((0, 1)));
        // Primary 0 runs three stripes ahead of primary 1: primary 1 is behind from now.
        assert_eq!(board.claim_run(0, 3), Some((1, 3)));
        let behind_at = Instant::now();
        let standby = {
            let board = board.clone();
            std::thread::spawn(move || (board.claim_run(2, 4), Instant::now()))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !standby.is_finished(),
            "the standby stood in within the grace"
        );
        let (run, at) = standby.join().unwrap();
        assert_eq!(run, Some((1, 4)));
        assert!(at.duration_since(behind_at) >= grace);
    }

    #[test]
    fn a_stripe_nobody_can_fill_is_handed_on_short_once_every_live_thread_has_passed_it() {
        let board = Board::new(2, (0, 2), &readers(&[0, 1], &[]), (2, 1, Duration::ZERO));
        assert_eq!(board.claim_run(0, 2), Some((0, 2)));
        board.finish(1); // primary 1 ended without reading (a panic before its first claim)
        deposit_run(&board, 0, (0, 2));
        assert_eq!(board.claim_run(0, 2), None);
        board.finish(0);
        assert_eq!(board.take().unwrap().len(), 1);
        assert_eq!(board.take().unwrap().len(), 1);
        assert!(board.take().is_none());
    }

    #[test]
    fn claims_stay_inside_the_window_and_a_seat_deposits_for_a_run_it_dropped() {
        let board = Board::new(1, (0, 10), &readers(&[0], &[]), (3, 1, Duration::ZERO));
        assert_eq!(
            board.claim_run(0, 8),
            Some((0, 3)),
            "three stripes of window"
        );
        {
            let _seat = Seat {
                board: &board,
                thread: 0,
                pending: Some((0, 3)),
            };
        }
        for _ in 0..3 {
            let fragments = board.take().unwrap();
            assert!(matches!(
                fragments[..],
                [(0, Err(FragmentFault::Unavailable(_)))]
            ));
        }
        // The thread has ended, so the stripes past the window go on empty.
        assert!(board.take().unwrap().is_empty());
    }

    #[test]
    fn a_thread_past_the_hand_on_waits_for_room_for_a_whole_run() {
        let board = std::sync::Arc::new(Board::new(
            1,
            (0, 8),
            &readers(&[0], &[]),
            (4, 2, Duration::ZERO),
        ));
        assert_eq!(board.claim_run(0, 2), Some((0, 2)));
        assert_eq!(board.claim_run(0, 2), Some((2, 2)));
        deposit_run(&board, 0, (0, 4));
        // The window (stripes 0 to 3) is full: the thread waits at stripe 4.
        let waiter = {
            let board = board.clone();
            std::thread::spawn(move || board.claim_run(0, 2))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished());
        // One take frees room for one stripe only: the thread goes on waiting, instead of
        // reading one fragment now and one after the next take.
        assert!(board.take().is_some());
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "claimed a sliver of a run");
        assert!(board.take().is_some());
        assert_eq!(waiter.join().unwrap(), Some((4, 2)));
    }

    #[test]
    fn a_thread_waiting_for_room_claims_what_the_window_holds_once_it_is_handed_on_to() {
        // A window narrower than a run: the thread cannot get a whole run past the hand-on,
        // so it waits until the hand-on reaches it, then takes what the window holds.
        let board = std::sync::Arc::new(Board::new(
            1,
            (0, 8),
            &readers(&[0], &[]),
            (3, 1, Duration::ZERO),
        ));
        assert_eq!(board.claim_run(0, 2), Some((0, 2)));
        deposit_run(&board, 0, (0, 2));
        let waiter = {
            let board = board.clone();
            std::thread::spawn(move || board.claim_run(0, 4))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished());
        assert!(board.take().is_some());
        assert!(board.take().is_some());
        assert_eq!(waiter.join().unwrap(), Some((2, 3)));
    }

    #[test]
    fn stopping_ends_waiting_threads_and_the_hand_on() {
        let board = std::sync::Arc::new(Board::new(
            1,
            (0, 4),
            &readers(&[0], &[]),
            (1, 1, Duration::ZERO),
        ));
        assert_eq!(board.claim_run(0, 4), Some((0, 1)));
        let waiter = {
            let board = board.clone();
            std::thread::spawn(move || board.claim_run(0, 4))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        board.stop();
        assert_eq!(waiter.join().unwrap(), None);
        assert!(board.take().is_none());
    }
}
