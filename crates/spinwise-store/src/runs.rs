//! Work over many independent items split into runs on a few scoped threads, with the results
//! in the items' order: what opening a large rack does with its disk directories (each listing
//! waits for a read of the host's disk when cold, and threads overlap those waits).
//!
//! Invariants: the runs are contiguous and cover `items` once, in order, and their results come
//! back in that order, so the caller's merge is the same however many threads ran; at most
//! `max_threads` threads, and one (the caller's own work, on a scoped thread) unless there are
//! at least `items_per_thread` items per extra thread.

/// `work` on contiguous runs of `items`, each run on its own scoped thread, results in order.
pub(crate) fn in_runs<T: Sync, R: Send>(
    items: &[T],
    items_per_thread: usize,
    max_threads: usize,
    work: impl Fn(&[T]) -> R + Sync,
) -> Vec<R> {
    let threads = items
        .len()
        .div_ceil(items_per_thread.max(1))
        .clamp(1, max_threads.max(1));
    let run = items.len().div_ceil(threads).max(1);
    let work = &work;
    std::thread::scope(|scope| {
        let running: Vec<_> = items
            .chunks(run)
            .map(|run| scope.spawn(move || work(run)))
            .collect();
        running
            .into_iter()
            .map(|thread| thread.join().expect("a run's thread does not panic"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::in_runs;

    #[test]
    fn runs_cover_every_item_once_in_order_on_at_most_the_threads_allowed() {
        let items: Vec<u32> = (0..1000).collect();
        let runs = in_runs(&items, 128, 4, |run| run.to_vec());
        assert_eq!(runs.len(), 4);
        assert_eq!(runs.concat(), items);
        assert_eq!(in_runs(&items[..100], 128, 4, |run| run.len()), [100]);
        assert_eq!(
            in_runs(&items[..300], 128, 4, |run| run.len()),
            [100, 100, 100]
        );
        assert!(in_runs(&items[..0], 128, 4, |run| run.len()).is_empty());
    }
}
