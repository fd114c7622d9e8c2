//! An ordered parallel pipeline for reads: `workers` threads compute items `0..items` (item
//! `i` on worker `i % workers`, each worker in increasing order) and the consumer receives the
//! results in item order. Staged GETs use it with a chunk per item (migrated GETs read with a
//! thread per disk instead, crate::read), so reading and crc32c checking run on every core
//! instead of one: on the
//! 2-core machine of docs/BENCHMARKS.md a single reader thread spent half its time in crc32c
//! and a third in the kernel's copy, each ~5 GB/s, slower than `dd` alone.
//!
//! Invariants:
//! - memory is bounded: each worker is at most `depth` results ahead of the consumer (a
//!   bounded channel per worker), so at most `workers × (depth + 1)` results exist at once;
//! - the consumer sees item `i` only after every item before it;
//! - when the consumer stops (returns `Break`) the channels close, every worker ends at its
//!   next send, and [`run_ordered`] returns only after all of them have ended;
//! - a worker's per-thread state (an open file, a fetch function) is made by `make_worker` on
//!   that worker's thread and never shared;
//! - a run of at most one item starts no thread: the caller computes it (a thread costs more
//!   than reading one chunk of a small object).

use std::ops::ControlFlow;
use std::sync::mpsc;

/// The most reader threads one read uses, whatever the core count: past a few the filesystem
/// and memory bandwidth, not the crc, are the limit, and many concurrent GETs share the cores.
pub const MAX_READ_WORKERS: usize = 4;

/// Reader threads for one read of `items` items: one per core up to [`MAX_READ_WORKERS`], never
/// more than the items, at least one.
pub fn read_workers(items: u64) -> usize {
    cores()
        .min(MAX_READ_WORKERS)
        .min(usize::try_from(items).unwrap_or(usize::MAX))
        .max(1)
}

/// The cores this process may use, asked once: `available_parallelism` reads the cgroup files
/// on every call, which costs more than a small GET.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Runs `make_worker()`'s function over `0..items` on `workers` threads and hands the results
/// to `consume` in item order until it returns `Break` or the items run out.
pub fn run_ordered<T, W, M, C>(
    items: u64,
    workers: usize,
    depth: usize,
    make_worker: M,
    mut consume: C,
) where
    T: Send,
    M: Fn() -> W + Sync,
    W: FnMut(u64) -> T,
    C: FnMut(T) -> ControlFlow<()>,
{
    assert!(
        workers >= 1 && depth >= 1,
        "{workers} workers, depth {depth}"
    );
    if items <= 1 {
        // Nothing could run beside a single item: compute it here instead of on a thread.
        if items == 1 {
            let _ = consume(make_worker()(0));
        }
        return;
    }
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(workers);
        for first in 0..workers {
            let (sender, receiver) = mpsc::sync_channel(depth);
            receivers.push(receiver);
            let make_worker = &make_worker;
            scope.spawn(move || {
                let mut work = make_worker();
                let mut item = first as u64;
                while item < items && sender.send(work(item)).is_ok() {
                    item += workers as u64;
                }
            });
        }
        consume_in_order(items, &receivers, consume);
        // Dropping the receivers ends workers still blocked on a full channel.
        drop(receivers);
    });
}

fn consume_in_order<T>(
    items: u64,
    receivers: &[mpsc::Receiver<T>],
    mut consume: impl FnMut(T) -> ControlFlow<()>,
) {
    let workers = receivers.len() as u64;
    for item in 0..items {
        // A worker sends every one of its items unless the consumer stopped first, so a
        // closed channel here means the worker panicked: the scope re-raises that panic.
        let Ok(result) = receivers[(item % workers) as usize].recv() else {
            return;
        };
        if consume(result).is_break() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn results_arrive_in_item_order_whatever_the_worker_count() {
        for workers in 1..=5 {
            let mut seen = Vec::new();
            run_ordered(
                23,
                workers,
                2,
                || {
                    |item: u64| {
                        // Uneven work so workers finish out of order.
                        std::thread::sleep(std::time::Duration::from_micros((item % 3) * 200));
                        item * 10
                    }
                },
                |value| {
                    seen.push(value);
                    ControlFlow::Continue(())
                },
            );
            assert_eq!(seen, (0..23).map(|i| i * 10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_consumer_that_stops_ends_every_worker_without_computing_all_items() {
        let computed = AtomicU64::new(0);
        let mut taken = 0;
        run_ordered(
            10_000,
            3,
            2,
            || {
                |item: u64| {
                    computed.fetch_add(1, Ordering::Relaxed);
                    item
                }
            },
            |_| {
                taken += 1;
                if taken == 5 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        assert_eq!(taken, 5);
        // Each worker may be at most depth + 1 items past what was taken.
        assert!(computed.load(Ordering::Relaxed) <= 5 + 3 * 3);
    }

    #[test]
    fn a_single_item_is_computed_on_the_callers_thread() {
        let caller = std::thread::current().id();
        let mut seen = Vec::new();
        run_ordered(
            1,
            4,
            1,
            || |item: u64| (item, std::thread::current().id()),
            |result| {
                seen.push(result);
                ControlFlow::Continue(())
            },
        );
        assert_eq!(seen, vec![(0, caller)]);
    }

    #[test]
    fn no_items_means_no_results() {
        let mut calls = 0;
        run_ordered(
            0,
            2,
            1,
            || |item: u64| item,
            |_| {
                calls += 1;
                ControlFlow::Continue(())
            },
        );
        assert_eq!(calls, 0);
    }

    #[test]
    fn read_workers_is_at_least_one_and_never_more_than_the_items() {
        assert_eq!(read_workers(0), 1);
        assert_eq!(read_workers(1), 1);
        assert!(read_workers(1_000) <= MAX_READ_WORKERS);
    }
}
