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
//! - a read's bytes are counted, not kept; times come from the given [`Clock`] only (the wall
//!   clock, or the cross-validation's virtual time, `crate::virtual_time`), and so do the
//!   arrivals' and the NIC's waits (ranked by the read's index among waits of one instant);
//! - a read given a [`Nic`] takes each chunk only after the NIC has sent the one before: the
//!   NIC sends chunks one at a time in the order they were offered, at its rate, so reads that
//!   share it split it evenly (a read slower than its share takes less and leaves the rest), as
//!   the simulator's max-min fair flows do; the store's bounded read queue then holds the
//!   disks back, as a full socket would.

use spinwise_store::clock::Clock;
use spinwise_store::driver::GroupActivity;
use spinwise_store::{SqliteStore, StoreError};
use std::sync::{Arc, Mutex};

/// The most reads one replay issues.
pub const MAX_REPLAY_READS: usize = 100_000;
/// How long after its last send a NIC still counts as busy, so that the next send starts where
/// the last one ended: tokio's timer wakes a paced read a millisecond late or more (several on a
/// host whose two cores also run the store's column threads), and without this the NIC would
/// lose that time on every chunk (at 2 ms, a saturated NIC lost ~7% of its rate). The price: a
/// read starting within this of the NIC going quiet gets up to this much time early. A NIC idle
/// for longer starts its next send now, with no credit for the idle time.
const NIC_LATE_WAKE_US: f64 = 10_000.0;
/// How far a read may run ahead of its NIC before it sleeps. Tokio's timer has millisecond
/// ticks: a sleep shorter than one, or until a time already past but inside the current tick,
/// still waits for the next tick, which at a 32 KiB chunk per 0.3 ms would cost most of the
/// NIC's rate. Sleeping only when a tick or more ahead keeps every sleep worth its tick; the
/// reservations still hold the rate to the NIC's.
const NIC_AHEAD_US: u64 = 2_000;

/// One read to replay: its key, when to issue it (in µs from the replay's start), and the NIC
/// its bytes leave by (an index into the replay's NICs; `None`: no NIC, read as fast as the
/// store delivers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayRead {
    pub key: String,
    pub arrival_us: u64,
    pub nic: Option<usize>,
}

/// A network interface the replay's reads send their bytes through, one chunk at a time.
#[derive(Debug)]
pub struct Nic {
    bytes_per_s: f64,
    /// When the chunks offered so far will all have been sent, µs on the replay's clock
    /// (fractional, so rounding never accumulates over chunks).
    sent_until_us: Mutex<Option<f64>>,
}

impl Nic {
    /// A NIC of `bytes_per_s` (finite and positive: an unbounded network has no NIC).
    pub fn new(bytes_per_s: f64) -> Nic {
        assert!(
            bytes_per_s.is_finite() && bytes_per_s > 0.0,
            "a NIC has a positive rate"
        );
        Nic {
            bytes_per_s,
            sent_until_us: Mutex::new(None),
        }
    }

    /// Queues `bytes` behind the chunks offered before and waits on `clock` until they are
    /// sent, or nearly ([`NIC_AHEAD_US`]); returns when they are sent, µs. `order` ranks the
    /// wait among others ending at the same instant (the read's index).
    async fn send(&self, bytes: usize, clock: &dyn Clock, order: u64) -> u64 {
        let now_us = clock.now_us();
        let done_us = {
            let mut sent_until = self.sent_until_us.lock().expect("no panic holds the NIC");
            let start_us = match *sent_until {
                Some(until_us) if until_us + NIC_LATE_WAKE_US >= now_us as f64 => until_us,
                _ => now_us as f64,
            };
            let done_us = start_us + bytes as f64 / self.bytes_per_s * 1e6;
            *sent_until = Some(done_us);
            done_us.ceil() as u64
        };
        if done_us > now_us + NIC_AHEAD_US {
            clock.sleep_until_us_ordered(done_us, order).await;
        }
        done_us
    }
}

/// What became of one read; times in µs from its arrival.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    pub bytes: u64,
    /// `None` when nothing was delivered (an empty object delivers its end at once).
    pub first_byte_us: Option<u64>,
    /// Arrival → last byte; `None` unless the read completed.
    pub completion_us: Option<u64>,
    /// Arrival → the read handed to the scheduler: the catalog lookup and the submission, which
    /// the simulator does not have (its reads reach the scheduler on arrival). `None` when the
    /// store refused or failed the read before.
    pub submitted_us: Option<u64>,
    /// From the read job's start on its spun-up group to the last byte (the simulator's service:
    /// serve → end of the flow): arrival → last byte less `submitted_us` and the wait for the
    /// scheduler (`ReadTiming::queued_us`); behind a NIC it includes the chunks still queued for
    /// it when the job ended. `None` for a staged object or a read that did not complete.
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
    #[error("read `{key}` names NIC {nic}, but the replay has {nics}")]
    UnknownNic {
        key: String,
        nic: usize,
        nics: usize,
    },
}

/// Issues every read at its arrival time on `clock`, sending its bytes through its NIC of
/// `nics`, and waits for all of them.
pub async fn replay(
    store: Arc<SqliteStore>,
    reads: &[ReplayRead],
    nics: Vec<Nic>,
    clock: Arc<dyn Clock>,
) -> Result<ReplayReport, ReplayError> {
    if reads.len() > MAX_REPLAY_READS {
        return Err(ReplayError::TooManyReads { found: reads.len() });
    }
    let unknown = |read: &ReplayRead| read.nic.filter(|&nic| nic >= nics.len());
    if let Some((read, nic)) = reads.iter().find_map(|r| unknown(r).map(|nic| (r, nic))) {
        return Err(ReplayError::UnknownNic {
            key: read.key.clone(),
            nic,
            nics: nics.len(),
        });
    }
    let nics: Arc<[Nic]> = nics.into();
    let mut activity = store.rack_io().driver.subscribe_activity();
    let started_us = clock.now_us();
    let tasks: Vec<_> = reads
        .iter()
        .enumerate()
        .map(|(index, read)| {
            let (store, clock) = (store.clone(), clock.clone());
            let key = read.key.clone();
            let arrival_us = started_us + read.arrival_us;
            let (nics, nic) = (nics.clone(), read.nic);
            tokio::spawn(async move {
                let order = index as u64;
                clock.sleep_until_us_ordered(arrival_us, order).await;
                let nic = nic.map(|index| &nics[index]);
                let times = (clock.as_ref(), order, arrival_us, started_us);
                read_one(&store, &key, nic, times).await
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

/// Reads `key` to its end through `nic`, timing it on `clock` from `arrival_us` (`order` ranks
/// its NIC waits). The first byte is timed when the store delivers it (the simulator's first
/// byte is its seek's end, before the network); the last when the NIC has sent it (read off
/// the NIC's books, not the timer's late wake-up).
async fn read_one(
    store: &SqliteStore,
    key: &str,
    nic: Option<&Nic>,
    (clock, order, arrival_us, started_us): (&dyn Clock, u64, u64, u64),
) -> ReadOutcome {
    let since = |at_us: u64, from_us: u64| at_us.saturating_sub(from_us);
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
    outcome.submitted_us = Some(since(clock.now_us(), arrival_us));
    let mut sent = None;
    loop {
        match reader.next_chunk().await {
            Ok(Some(chunk)) => {
                outcome
                    .first_byte_us
                    .get_or_insert_with(|| since(clock.now_us(), arrival_us));
                outcome.bytes += chunk.len() as u64;
                if let Some(nic) = nic {
                    sent = Some(nic.send(chunk.len(), clock, order).await);
                }
            }
            Ok(None) => break,
            Err(error) => {
                outcome.error = Some(error.to_string());
                return outcome;
            }
        }
    }
    let done_us = sent.map_or_else(|| clock.now_us(), |sent| sent.max(clock.now_us()));
    outcome
        .first_byte_us
        .get_or_insert_with(|| since(done_us, arrival_us));
    let completion_us = since(done_us, arrival_us);
    outcome.completion_us = Some(completion_us);
    outcome.last_byte_at_us = Some(since(done_us, started_us));
    let submitted_us = outcome.submitted_us.unwrap_or(0);
    outcome.service_us = reader
        .timing()
        .map(|timing| completion_us.saturating_sub(submitted_us + timing.queued_us));
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use spinwise_store::clock::Sleep;
    use tokio::time::{Duration, Instant};

    /// Tokio's clock as the replay's, so the tests run on its paused time.
    #[derive(Debug)]
    struct TokioClock {
        origin: Instant,
    }

    impl Clock for TokioClock {
        fn now_us(&self) -> u64 {
            self.origin.elapsed().as_micros() as u64
        }

        fn unix_ms(&self) -> i64 {
            0
        }

        fn sleep_until_us(&self, at_us: u64) -> Sleep<'_> {
            Box::pin(tokio::time::sleep_until(
                self.origin + Duration::from_micros(at_us),
            ))
        }
    }

    const CHUNK_BYTES: usize = 32 << 10;
    const NIC_BYTES_PER_S: f64 = 1e6;

    /// Sends `bytes` through `nic` in chunks, as a replayed read does; returns when the NIC has
    /// sent the last one.
    async fn send_all(nic: &Nic, clock: &TokioClock, bytes: usize) -> u64 {
        let mut sent_us = clock.now_us();
        for start in (0..bytes).step_by(CHUNK_BYTES) {
            sent_us = nic.send(CHUNK_BYTES.min(bytes - start), clock, 0).await;
        }
        sent_us
    }

    fn seconds_since(from_us: u64, to_us: u64) -> f64 {
        (to_us - from_us) as f64 / 1e6
    }

    fn clock() -> TokioClock {
        TokioClock {
            origin: Instant::now(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_nic_sends_one_reads_bytes_at_its_rate() {
        let (nic, clock) = (Nic::new(NIC_BYTES_PER_S), clock());
        let start = clock.now_us();
        let sent = send_all(&nic, &clock, 1_000_000).await;
        let seconds = seconds_since(start, sent);
        assert!(
            (seconds - 1.0).abs() < 2e-6,
            "1 MB at 1 MB/s took {seconds} s"
        );
        // The read waited for its bytes, give or take the NIC_AHEAD_US it may run ahead.
        assert!(clock.now_us() + NIC_AHEAD_US >= sent);
    }

    #[tokio::test(start_paused = true)]
    async fn two_reads_sharing_a_nic_each_get_half_of_it() {
        let (nic, clock) = (Nic::new(NIC_BYTES_PER_S), clock());
        let start = clock.now_us();
        let (first, second) = tokio::join!(
            send_all(&nic, &clock, 1_000_000),
            send_all(&nic, &clock, 1_000_000)
        );
        for sent in [first, second] {
            let seconds = seconds_since(start, sent);
            // Interleaved, not one after the other: both end near 2 s, neither near 1 s.
            assert!(
                (1.95..=2.0 + 2e-6).contains(&seconds),
                "ended at {seconds} s"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_nic_gives_no_credit_for_its_idle_time() {
        let (nic, clock) = (Nic::new(NIC_BYTES_PER_S), clock());
        send_all(&nic, &clock, CHUNK_BYTES).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let start = clock.now_us();
        let sent = send_all(&nic, &clock, 1_000_000).await;
        let seconds = seconds_since(start, sent);
        assert!(
            (seconds - 1.0).abs() < 2e-6,
            "after idling, 1 MB took {seconds} s"
        );
    }
}
