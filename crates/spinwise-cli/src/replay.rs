//! Replays a trace's reads against a store: every read is issued at its arrival time (from the
//! replay's start), read to its last byte, and timed the way the simulator times it — arrival →
//! first byte, arrival → last byte, and the scheduler's service (the read job's run time). This
//! is the store half of the cross-validation of Pelican §4.4 ("a test harness ... reads a trace
//! file and performs the read operations"; `experiment pelican-fig4`), so it only reads: the
//! objects must already be stored.
//!
//! Invariants:
//! - every record gets exactly one [`ReadOutcome`], in trace order, whatever happened to it: a
//!   refusal by the scheduler (a full class queue, `StoreError::Busy`) is `rejected`, any other
//!   error is kept as text and the replay goes on, so one bad key never hides the others' times;
//! - at most [`MAX_REPLAY_READS`] records are replayed (a limit on the tasks and their
//!   buffers: each read in flight holds its reader's bounded queue);
//! - a read's bytes are counted, not kept; times come from the tokio clock only.

use spinwise_store::driver::GroupActivity;
use spinwise_store::{SqliteStore, StoreError};
use std::sync::Arc;
use tokio::time::{Duration, Instant};

/// The most reads one replay issues.
pub const MAX_REPLAY_READS: usize = 100_000;

/// One read to replay: its key and when to issue it, in µs from the replay's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayRead {
    pub key: String,
    pub arrival_us: u64,
}

/// What became of one read; times in µs from its arrival.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    pub bytes: u64,
    /// `None` when nothing was delivered (an empty object delivers its end at once).
    pub first_byte_us: Option<u64>,
    /// Arrival → last byte; `None` unless the read completed.
    pub completion_us: Option<u64>,
    /// The read job's run on its spun-up group (`ReadTiming::service_us`); `None` for a staged
    /// object or a read that did not complete.
    pub service_us: Option<u64>,
    /// When the last byte came, in µs from the replay's start.
    pub last_byte_at_us: Option<u64>,
    pub rejected: bool,
    pub error: Option<String>,
}

/// The whole replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    pub reads: Vec<ReadOutcome>,
    /// Group spin-ups the driver completed while the replay ran.
    pub spin_ups: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("a replay issues at most {MAX_REPLAY_READS} reads; this one has {found}")]
    TooManyReads { found: usize },
}

/// Issues every read at its arrival time and waits for all of them.
pub async fn replay(
    store: Arc<SqliteStore>,
    reads: &[ReplayRead],
) -> Result<ReplayReport, ReplayError> {
    if reads.len() > MAX_REPLAY_READS {
        return Err(ReplayError::TooManyReads { found: reads.len() });
    }
    let mut activity = store.rack_io().driver.subscribe_activity();
    let started = Instant::now();
    let tasks: Vec<_> = reads
        .iter()
        .map(|read| {
            let store = store.clone();
            let key = read.key.clone();
            let arrival = started + Duration::from_micros(read.arrival_us);
            tokio::spawn(async move {
                tokio::time::sleep_until(arrival).await;
                read_one(&store, &key, arrival, started).await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        outcomes.push(task.await.unwrap_or_else(|join| ReadOutcome {
            error: Some(format!("the read task failed: {join}")),
            ..ReadOutcome::default()
        }));
    }
    let mut spin_ups = 0;
    while let Ok(event) = activity.try_recv() {
        if matches!(event, GroupActivity::Up { .. }) {
            spin_ups += 1;
        }
    }
    Ok(ReplayReport {
        reads: outcomes,
        spin_ups,
    })
}

/// Reads `key` to its end, timing it from `arrival`.
async fn read_one(
    store: &SqliteStore,
    key: &str,
    arrival: Instant,
    started: Instant,
) -> ReadOutcome {
    let since = |at: Instant, from: Instant| at.saturating_duration_since(from).as_micros() as u64;
    let mut outcome = ReadOutcome::default();
    let mut reader = match store.get(key, None).await {
        Ok(reader) => reader,
        Err(StoreError::Busy { .. }) => {
            outcome.rejected = true;
            return outcome;
        }
        Err(error) => {
            outcome.error = Some(error.to_string());
            return outcome;
        }
    };
    loop {
        match reader.next_chunk().await {
            Ok(Some(chunk)) => {
                outcome
                    .first_byte_us
                    .get_or_insert_with(|| since(Instant::now(), arrival));
                outcome.bytes += chunk.len() as u64;
            }
            Ok(None) => break,
            Err(error) => {
                outcome.error = Some(error.to_string());
                return outcome;
            }
        }
    }
    let done = Instant::now();
    outcome
        .first_byte_us
        .get_or_insert_with(|| since(done, arrival));
    outcome.completion_us = Some(since(done, arrival));
    outcome.last_byte_at_us = Some(since(done, started));
    outcome.service_us = reader.timing().map(|timing| timing.service_us);
    outcome
}
