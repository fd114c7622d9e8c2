//! The one poll the store's and S3 crates' tests keep (shared by both `tests/common`): for work
//! that takes real time, or that gives no event to await (the emulated disks' reads and
//! spin-ups, a writer thread's bytes reaching a file). Whatever waits on the store's clock is
//! moved with a `ManualClock` instead.

use std::time::{Duration, Instant};

/// How long a poll may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(60);

/// Polls `done` every 10 ms until it holds; fails the test after [`WAIT`], naming `what`.
pub async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < WAIT, "timed out waiting until {what}");
        // wall-clock: the one poll, for work that takes real time, with a deadline.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
