//! Discrete-event virtual time for the store's cross-validation run (`experiment pelican-fig4`,
//! the `store-virtual` rows): the real store — its driver shell over spinwise-engine, its read
//! path with its column threads, its emulated disks — runs unchanged, but every latency,
//! throttle and NIC wait, and the store's [`Clock`], is a wait on this time line, which jumps to
//! the earliest wait only once nothing in the process can run any more.
//!
//! Decision (issue 31, "pelican-fig4 also runs the store on virtual time"). Three ways were
//! weighed:
//! - tokio's paused clock (`start_paused`, test-util): it advances when the runtime is idle, but
//!   `spawn_blocking` inhibits that while a blocking task runs, and the store runs every disk
//!   command and read job on blocking threads (the job's column threads live inside it), so a
//!   disk waiting on tokio time from a job would wait forever; and it knows nothing of the
//!   std threads and channels the read path hands fragments through.
//! - a serialised virtual read path (one thread, operations in turn): not the store's code, and
//!   it would lose exactly what the cross-validation checks, a group's disks streaming at once.
//! - (chosen) a coordinator every virtual-mode wait registers with — disks' spin-up, mount,
//!   unmount and throttle ([`spinwise_disk::Timeline`]), the board's standby grace, the store's
//!   clock (driver wake-ups, Bulk deadlines) and the replay's arrivals and NIC — that moves time
//!   to the earliest registered wait only when the process is *quiescent*. Counting in-flight
//!   operations would need every channel of the read path (std mpsc, tokio mpsc, the board's
//!   condvar) instrumented; instead quiescence is read from the kernel: every thread of the
//!   process but the coordinator is sleeping (`S` in `/proc/self/task/*/stat`) in two scans
//!   between which no thread ran (`/proc/self/task/*/schedstat`, run time and run count,
//!   unchanged). Any handed-on work makes its receiver runnable (a futex or eventfd wake sets
//!   the thread running before the waker returns), so work in flight always shows as a
//!   runnable thread or a registered wait; a wait on the host's clock (an idle blocking-pool
//!   thread's keep-alive, a pool reaper) only delays a step, it never makes one early.
//!
//! Determinism: waits are woken one at a time, in (instant, order, registration) order, each
//! followed by quiescence, so what one wake sets off has finished before the next. `order`
//! separates waits of one instant by what they are (a disk's index, a read job's blob, a
//! replayed read's index); registration order only decides between waits with equal instant and
//! order (two reads' throttle waits on one disk cannot end together: the throttle books them
//! one after another). What is not pinned: threads made runnable by one wake at once (the
//! driver serving several jobs on a group that came up, a board notify to several standbys) run
//! in the host's order; the read jobs choose columns in blob order (`read.rs`), but anything
//! else racing inside one instant is only as deterministic as the store makes it. The test
//! (`pelican-fig4` twice, identical rows) checks the rows, not every interleaving.
//!
//! Invariants: `now_us` never decreases; a wait is woken only once the time reaches it; at most
//! one wait is woken per quiescence; a dropped async wait is removed before it can fire.

use spinwise_disk::Timeline;
use spinwise_disk::timeline::Wake;
use spinwise_store::clock::{Clock, Sleep};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::oneshot;

/// Calendar time at virtual 0: 2026-01-01 00:00 UTC, so dates in a virtual run are the same
/// every time.
const ORIGIN_UNIX_MS: i64 = 1_767_225_600_000;
/// Orders of the async waits without one of their own: after every ordered wait of an instant.
const UNORDERED: u64 = 3 << 32;
/// How long the coordinator naps when nothing is registered (the run is between phases).
const IDLE_NAP: Duration = Duration::from_micros(500);
/// How long the coordinator naps between scans while the process is busy, leaving the cores
/// to the run (the host has two).
const BUSY_NAP: Duration = Duration::from_micros(20);

/// (instant µs, order, registration): the coordinator wakes the smallest first.
type Key = (u64, u64, u64);

enum Waiter {
    Thread(Arc<Parker>),
    Task(oneshot::Sender<()>),
    Call(Wake),
}

#[derive(Default)]
struct Parker {
    woken: Mutex<bool>,
    condvar: Condvar,
}

impl Parker {
    fn park(&self) {
        let mut woken = self.woken.lock().expect("no panic holds a parker");
        while !*woken {
            woken = self.condvar.wait(woken).expect("no panic holds a parker");
        }
    }

    fn unpark(&self) {
        *self.woken.lock().expect("no panic holds a parker") = true;
        self.condvar.notify_one();
    }
}

#[derive(Default)]
struct State {
    now_us: u64,
    waits: BTreeMap<Key, Waiter>,
    registrations: u64,
    /// Waits woken so far (the run's events).
    woken: u64,
}

struct Shared {
    state: Mutex<State>,
    stopping: AtomicBool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("no panic holds the virtual time")
    }

    fn register(&self, at_us: u64, order: u64, waiter: Waiter) -> Key {
        let mut state = self.lock();
        let key = (at_us.max(state.now_us), order, state.registrations);
        state.registrations += 1;
        state.waits.insert(key, waiter);
        key
    }
}

/// The virtual time line and its coordinator thread; a cheap handle (clones share it).
#[derive(Clone)]
pub struct VirtualTime {
    shared: Arc<Shared>,
    coordinator: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
}

impl std::fmt::Debug for VirtualTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("VirtualTime")
            .field("now_us", &state.now_us)
            .field("waits", &state.waits.len())
            .finish()
    }
}

impl VirtualTime {
    /// Starts at 0 µs, with its coordinator running; [`VirtualTime::stop`] ends it.
    pub fn start() -> std::io::Result<VirtualTime> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            stopping: AtomicBool::new(false),
        });
        let handle = std::thread::Builder::new()
            .name("virtual-time".into())
            .spawn({
                let shared = shared.clone();
                move || coordinate(&shared)
            })?;
        Ok(VirtualTime {
            shared,
            coordinator: Arc::new(Mutex::new(Some(handle))),
        })
    }

    /// Stops the coordinator (waits still registered are never woken); returns the waits it
    /// woke over the run.
    pub fn stop(&self) -> u64 {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let handle = self
            .coordinator
            .lock()
            .expect("no panic holds the handle")
            .take();
        if let Some(handle) = handle {
            // The coordinator only panics on a broken invariant, already reported.
            let _ = handle.join();
        }
        self.shared.lock().woken
    }

    /// This time line for blocking threads (disks, the read path).
    pub fn timeline(&self) -> Arc<dyn Timeline> {
        Arc::new(self.clone())
    }

    fn async_wait(&self, at_us: u64, order: u64) -> VirtualSleep {
        let (sender, receiver) = oneshot::channel();
        let key = self.shared.register(at_us, order, Waiter::Task(sender));
        VirtualSleep {
            shared: self.shared.clone(),
            key: Some(key),
            receiver,
        }
    }
}

/// Wakes the earliest wait each time the process is quiescent, until stopped.
fn coordinate(shared: &Shared) {
    let me = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    while !shared.stopping.load(Ordering::SeqCst) {
        if !quiescent(&me) {
            std::thread::sleep(BUSY_NAP);
            continue;
        }
        let next = {
            let mut state = shared.lock();
            match state.waits.pop_first() {
                Some(((at_us, _, _), waiter)) => {
                    assert!(at_us >= state.now_us, "a wait lies in the past");
                    state.now_us = at_us;
                    state.woken += 1;
                    Some(waiter)
                }
                None => None,
            }
        };
        match next {
            Some(Waiter::Thread(parker)) => parker.unpark(),
            // A task that went away dropped its receiver; nothing to wake.
            Some(Waiter::Task(sender)) => {
                let _ = sender.send(());
            }
            Some(Waiter::Call(wake)) => wake(),
            None => std::thread::sleep(IDLE_NAP),
        }
    }
}

/// Whether every thread of the process but `me` sleeps, in two scans with no run between.
fn quiescent(me: &str) -> bool {
    match (threads(me), threads(me)) {
        (Some(first), Some(second)) => first == second,
        _ => false,
    }
}

/// Every other thread's id and schedstat (run time, wait time, runs), or `None` when one is not
/// sleeping (or vanished while read).
fn threads(me: &str) -> Option<Vec<(String, String)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let name = entry.ok()?.file_name().to_string_lossy().into_owned();
        if name == me {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/self/task/{name}/stat")).ok()?;
        // The state follows the command name, which is in parentheses and may hold spaces.
        let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
        if state != 'S' {
            return None;
        }
        let runs = std::fs::read_to_string(format!("/proc/self/task/{name}/schedstat")).ok()?;
        found.push((name, runs));
    }
    found.sort();
    Some(found)
}

/// An async wait; removed from the time line if dropped before it fired.
struct VirtualSleep {
    shared: Arc<Shared>,
    key: Option<Key>,
    receiver: oneshot::Receiver<()>,
}

impl Future for VirtualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        match Pin::new(&mut self.receiver).poll(context) {
            Poll::Ready(_) => {
                self.key = None;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for VirtualSleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.shared.lock().waits.remove(&key);
        }
    }
}

impl Timeline for VirtualTime {
    fn now_us(&self) -> u64 {
        self.shared.lock().now_us
    }

    fn sleep_until_us(&self, at_us: u64, order: u64) {
        let parker = Arc::new(Parker::default());
        self.shared
            .register(at_us, order, Waiter::Thread(parker.clone()));
        parker.park();
    }

    fn schedule_wake(&self, at_us: u64, order: u64, wake: Wake) -> bool {
        self.shared.register(at_us, order, Waiter::Call(wake));
        true
    }
}

impl Clock for VirtualTime {
    fn now_us(&self) -> u64 {
        self.shared.lock().now_us
    }

    fn unix_ms(&self) -> i64 {
        ORIGIN_UNIX_MS + i64::try_from(Clock::now_us(self) / 1000).unwrap_or(i64::MAX)
    }

    fn unix_us(&self) -> u64 {
        (ORIGIN_UNIX_MS as u64 * 1000).saturating_add(Clock::now_us(self))
    }

    fn sleep_until_us(&self, at_us: u64) -> Sleep<'_> {
        if at_us <= Clock::now_us(self) {
            return Box::pin(std::future::ready(()));
        }
        Box::pin(self.async_wait(at_us, UNORDERED))
    }

    fn sleep_until_us_ordered(&self, at_us: u64, order: u64) -> Sleep<'_> {
        Box::pin(self.async_wait(at_us, order))
    }

    fn timeline(&self) -> Option<Arc<dyn Timeline>> {
        Some(VirtualTime::timeline(self))
    }
}
