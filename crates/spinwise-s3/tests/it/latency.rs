//! Small answers leave at once: a GET of a few KiB over a kept-alive connection takes about a
//! millisecond on loopback, not the ~40 ms of Nagle's algorithm holding the body segment until
//! the client's delayed ACK of the headers (what every 100 B–16 KiB GET paid before the server
//! set TCP_NODELAY). The speed target itself is a benchmark (docs/BENCHMARKS.md,
//! scripts/bench-s3-small.sh); this only tells a millisecond from a delayed ACK, with a margin
//! wide enough for a loaded two-core machine.

use crate::common;

use common::{bucket, get_bytes, pattern, put, start};
use std::time::{Duration, Instant};

/// Sequential GETs timed; the first few warm the connection and the ACK clock and are dropped.
const TIMED_GETS: usize = 31;
const WARM_UP_GETS: usize = 5;
/// Linux delays an ACK by at least 40 ms; a median below half of that cannot be paying it.
const MEDIAN_LIMIT: Duration = Duration::from_millis(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_gets_on_a_kept_alive_connection_do_not_wait_for_delayed_acks() {
    let harness = start().await;
    bucket(&harness, "small").await;
    for size_bytes in [100, 4096, 16384] {
        let key = format!("object-{size_bytes}");
        let bytes = pattern(size_bytes, size_bytes as u64);
        put(&harness.client, "small", &key, &bytes).await;
        for _ in 0..WARM_UP_GETS {
            assert_eq!(get_bytes(&harness.client, "small", &key, None).await, bytes);
        }
        let mut took = Vec::with_capacity(TIMED_GETS);
        for _ in 0..TIMED_GETS {
            let started = Instant::now();
            let got = get_bytes(&harness.client, "small", &key, None).await;
            took.push(started.elapsed());
            assert_eq!(got, bytes);
        }
        took.sort();
        let median = took[TIMED_GETS / 2];
        assert!(
            median < MEDIAN_LIMIT,
            "GET of {size_bytes} B: median {median:?} over {TIMED_GETS} requests (all: {took:?}); \
             a median near 40 ms is a response held back by Nagle's algorithm"
        );
    }
    harness.server.stop().await;
}
