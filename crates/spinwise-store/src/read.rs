//! Reads of migrated objects (issue 4, read path): the object's bytes are a range of its blob;
//! one driver job on the blob's group reads it once the scheduler has the group up, fetching
//! only the data fragments that cover the range. Reader threads ([`crate::ordered`], one per
//! core) each fetch runs of consecutive stripes straight into one buffer and check every
//! fragment's crc32c while it is still in cache; the job hands the verified runs on in order
//! without copying.
//! A stripe with an unreadable, short or corrupt fragment is redone by the
//! [`StripeDecoder`], which reconstructs from any k good fragments and reports what it read
//! around. The bytes stream to the caller through a bounded channel. Before the job returns it
//! hands its repair report to [`crate::heal`], which queues in-place repairs of the damaged
//! stacks on the same spin-up and notes disks that answered `Failed`.
//!
//! Invariants:
//! - memory is bounded whatever the object size: [`READ_QUEUE_CHUNKS`] runs queued, plus
//!   [`RUNS_AHEAD_PER_WORKER`] + 1 per reader thread, plus the decoder's one stripe, a run
//!   being consecutive stripes of at most [`RUN_TARGET_BYTES`] + one stripe;
//! - a reader dropped early ends the job at its next chunk (the channel is closed, the sink
//!   fails, the decoder stops), so an abandoned GET never holds its group;
//! - bytes reach the caller only after their crc (or a reconstruction from crc-checked
//!   fragments) vouched for them; a stripe with fewer than k good fragments is a typed error
//!   naming every bad fragment and its disk.

use crate::buffers::BufferPool;
use crate::clock::{Clock, SystemClock};
use crate::driver::{Done, GroupDisks, Job, JobHandle};
use crate::error::{StoreError, StoreResult};
use crate::stacks::fetch_from_disks;
use crate::store::Store;
use bytes::Bytes;
use spinwise_catalog::{BlobRecord, Catalog, ObjectRecord};
use spinwise_disk::Disk;
use spinwise_ec::{Code, DecodeError, FetchError, RepairReport, StripeDecoder, verify_framed};
use spinwise_sched::scheduler::Kind;
use std::ops::{ControlFlow, Range};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Runs (one chunk each) queued between the job and a slow caller.
pub const READ_QUEUE_CHUNKS: usize = 8;
/// Runs each reader thread fetches ahead of the job.
pub const RUNS_AHEAD_PER_WORKER: usize = 2;
/// A reader thread fetches consecutive stripes together until they hold at least this many
/// bytes (one stripe when a stripe is larger): with 128 KiB fragments and k = 3 a stripe is
/// 384 KiB, and handing each on alone cost ~5 thread wake-ups per stripe (14,000 context
/// switches per GiB), a sixth of the GET's CPU on the 2-core machine of docs/BENCHMARKS.md.
pub const RUN_TARGET_BYTES: u64 = 1 << 20;

/// Where a GET's time went, in µs: waiting for the scheduler (of which spinning the group up),
/// to the first byte, and the whole service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadTiming {
    pub queued_us: u64,
    pub spin_up_wait_us: u64,
    pub time_to_first_byte_us: u64,
    pub service_us: u64,
}

/// The job's output: verified byte chunks, or the error that stopped it.
type Piece = Result<Bytes, StoreError>;

/// A GET of a migrated object in progress.
pub struct MigratedReader {
    chunks: mpsc::Receiver<Piece>,
    job: Option<JobHandle<RepairReport>>,
    clock: SystemClock,
    first_byte_us: Option<u64>,
    timing: Option<ReadTiming>,
    repairs: RepairReport,
}

impl MigratedReader {
    /// The next verified chunk, or `None` once the range is done.
    pub async fn next_chunk(&mut self) -> StoreResult<Option<Bytes>> {
        match self.chunks.recv().await {
            Some(Ok(chunk)) => {
                self.first_byte_us
                    .get_or_insert_with(|| self.clock.now_us());
                Ok(Some(chunk))
            }
            Some(Err(error)) => Err(error),
            None => {
                self.finish().await?;
                Ok(None)
            }
        }
    }

    /// Collects the job's repair report and timing once the decoder is done.
    async fn finish(&mut self) -> StoreResult<()> {
        let Some(job) = self.job.take() else {
            return Ok(());
        };
        let Done { output, timing } = job
            .wait()
            .await
            .map_err(|lost| StoreError::Driver(lost.to_string()))?;
        let started_to_first_byte = self.first_byte_us.unwrap_or(self.clock.now_us());
        self.timing = Some(ReadTiming {
            queued_us: timing.queued_us,
            spin_up_wait_us: timing.spin_up_wait_us,
            time_to_first_byte_us: started_to_first_byte,
            service_us: timing.service_us,
        });
        if !output.is_clean() {
            tracing::warn!(
                repaired = output.repaired.len(),
                "read around bad fragments"
            );
        }
        self.repairs = output;
        Ok(())
    }

    pub fn timing(&self) -> Option<ReadTiming> {
        self.timing
    }

    pub fn repairs(&self) -> &RepairReport {
        &self.repairs
    }
}

/// Turns a decoder failure into the store's error, naming the disks of the bad fragments.
fn decode_failure(key: &str, blob: &BlobRecord, error: DecodeError) -> StoreError {
    match error {
        DecodeError::CorruptBeyondRepair { stripe, bad } => {
            let fragments = bad
                .iter()
                .map(|(column, fault)| {
                    let disk = blob.disks.get(*column).copied().unwrap_or(u32::MAX);
                    format!("column {column} on disk {disk}: {fault}")
                })
                .collect::<Vec<_>>()
                .join("; ");
            StoreError::CorruptBeyondRepair {
                key: key.to_string(),
                blob: blob.id,
                stripe,
                fragments,
            }
        }
        other => StoreError::Decode {
            key: key.to_string(),
            blob: blob.id,
            message: other.to_string(),
        },
    }
}

/// The disks of the blob's columns, as the group's job sees them.
fn column_disks(group: &GroupDisks, context: &ReadContext) -> Vec<Arc<dyn Disk>> {
    context
        .blob
        .disks
        .iter()
        .map(|disk| {
            let found = group.disks().iter().find(|d| d.index() == *disk);
            found
                .cloned()
                .unwrap_or_else(|| context.disks[*disk as usize].clone())
        })
        .collect()
}

/// The job's work: read `range` of the blob into the channel.
fn decode_range(
    group: &GroupDisks,
    context: &ReadContext,
    sender: mpsc::Sender<Piece>,
) -> RepairReport {
    let columns = column_disks(group, context);
    let report = match stream_range(context, &columns, &sender) {
        Ok(report) => report,
        Err(error) => {
            let _ = sender.blocking_send(Err(decode_failure(&context.key, &context.blob, error)));
            RepairReport::default()
        }
    };
    // Still inside the job, so the group is up: queue repairs of damaged stacks (crate::heal).
    context.heal.after_read(&context.blob, &columns, &report);
    report
}

/// Streams the range run by run; stops quietly (Ok) when the caller has gone.
fn stream_range(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    sender: &mpsc::Sender<Piece>,
) -> Result<RepairReport, DecodeError> {
    let mut report = RepairReport::default();
    let range = context.range.clone();
    if range.is_empty() {
        return Ok(report);
    }
    let code = context.code.as_ref();
    let location = code.locate(context.blob.size_bytes, range.clone())?;
    let stripes = location.last_stripe - location.first_stripe + 1;
    let per_run = RUN_TARGET_BYTES
        .div_ceil(code.stripe_data_bytes())
        .clamp(1, stripes);
    let runs = stripes.div_ceil(per_run);
    let workers = crate::ordered::read_workers(runs);
    let buffers = BufferPool::new(workers * (RUNS_AHEAD_PER_WORKER + 1) + READ_QUEUE_CHUNKS + 1);
    let mut decoder = StripeDecoder::new(code, context.blob.size_bytes);
    let mut fetch = fetch_from_disks(code, context.blob.id, columns);
    let mut failure = None;
    crate::ordered::run_ordered(
        runs,
        workers,
        RUNS_AHEAD_PER_WORKER,
        || {
            let mut fetch = fetch_from_disks(code, context.blob.id, columns);
            let buffers = buffers.clone();
            let range = range.clone();
            move |run: u64| {
                let first = location.first_stripe + run * per_run;
                let last = (first + per_run - 1).min(location.last_stripe);
                let spans: Vec<StripeSpan> = (first..=last)
                    .map(|stripe| StripeSpan::new(code, &range, stripe))
                    .collect();
                let fetched = fetch_run(code, &spans, &mut fetch, &buffers);
                (spans, fetched)
            }
        },
        |(spans, fetched)| {
            let bytes = match fetched {
                Some(bytes) => bytes,
                None => match redo_run(&mut decoder, &spans, &mut fetch) {
                    Ok((bytes, repaired)) => {
                        report.merge(repaired);
                        bytes
                    }
                    Err(error) => {
                        failure = Some(error);
                        return ControlFlow::Break(());
                    }
                },
            };
            match sender.blocking_send(Ok(bytes)) {
                Ok(()) => ControlFlow::Continue(()),
                Err(_) => ControlFlow::Break(()), // the caller went away
            }
        },
    );
    failure.map_or(Ok(report), Err)
}

/// The part of one stripe a range covers: blob bytes `blob_range`, in data columns `columns`.
struct StripeSpan {
    stripe: u64,
    blob_range: Range<u64>,
    columns: Range<usize>,
    /// Where `blob_range` starts and ends relative to the first covered column's start.
    within: Range<usize>,
}

impl StripeSpan {
    fn new(code: &Code, range: &Range<u64>, stripe: u64) -> StripeSpan {
        let stripe_start = stripe * code.stripe_data_bytes();
        let start = range.start.max(stripe_start);
        let end = range.end.min(stripe_start + code.stripe_data_bytes());
        let fragment_bytes = code.fragment_bytes() as u64;
        let first_column = (start - stripe_start) / fragment_bytes;
        let last_column = (end - 1 - stripe_start) / fragment_bytes;
        let columns_start = stripe_start + first_column * fragment_bytes;
        StripeSpan {
            stripe,
            blob_range: start..end,
            columns: first_column as usize..last_column as usize + 1,
            within: (start - columns_start) as usize..(end - columns_start) as usize,
        }
    }
}

/// Fetches a run of consecutive stripes' spans into one buffer, fragment after fragment (each
/// read with its crc, which the next fragment then overwrites), checking each crc while the
/// bytes are hot. Inside a range every span but the first starts at its stripe's first column
/// and every span but the last ends at its stripe's end, so the covered columns lie in blob
/// order. `None` when a fragment is unreadable, short or corrupt: the decoder redoes the run.
fn fetch_run(
    code: &Code,
    spans: &[StripeSpan],
    fetch: &mut impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    buffers: &BufferPool,
) -> Option<Bytes> {
    let fragment_bytes = code.fragment_bytes();
    let framed_bytes = code.framed_fragment_bytes();
    let fragments: usize = spans.iter().map(|span| span.columns.len()).sum();
    let mut buffer = buffers.take_initialized(fragments * fragment_bytes + 4);
    let mut slot = 0;
    for span in spans {
        for column in span.columns.clone() {
            let framed = &mut buffer[slot * fragment_bytes..][..framed_bytes];
            let whole = fetch(column, span.stripe, framed).is_ok_and(|got| got == framed_bytes);
            if !whole || verify_framed(framed).is_err() {
                return None;
            }
            slot += 1;
        }
    }
    let (first, last) = (spans.first()?, spans.last()?);
    let last_start = (fragments - last.columns.len()) * fragment_bytes;
    Some(
        buffers
            .freeze(buffer)
            .slice(first.within.start..last_start + last.within.end),
    )
}

/// Decodes a run's spans with the [`StripeDecoder`] (reconstructing around bad fragments).
fn redo_run(
    decoder: &mut StripeDecoder<'_>,
    spans: &[StripeSpan],
    fetch: &mut impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
) -> Result<(Bytes, RepairReport), DecodeError> {
    let length: u64 = spans
        .iter()
        .map(|span| span.blob_range.end - span.blob_range.start)
        .sum();
    let mut bytes = Vec::with_capacity(length as usize);
    let mut report = RepairReport::default();
    for span in spans {
        report.merge(decoder.read_range(span.blob_range.clone(), &mut *fetch, &mut bytes)?);
    }
    Ok((Bytes::from(bytes), report))
}

/// What a read job needs, moved onto its blocking thread.
struct ReadContext {
    key: String,
    blob: BlobRecord,
    range: Range<u64>,
    code: Arc<Code>,
    disks: Vec<Arc<dyn Disk>>,
    heal: crate::heal::HealHook,
}

impl<C: Catalog> Store<C> {
    /// Starts reading `range` (object bytes) of the migrated object `record` in `blob` at
    /// `offset`, as a scheduler request of `kind` (a client read of either urgency).
    pub(crate) async fn read_migrated(
        &self,
        record: &ObjectRecord,
        blob: u64,
        offset: u64,
        range: Range<u64>,
        kind: Kind,
    ) -> StoreResult<MigratedReader> {
        let blob = self.catalog().blob(blob).await?.ok_or_else(|| {
            StoreError::Driver(format!(
                "blob {blob} of `{}` is not in the catalog",
                record.key
            ))
        })?;
        let rack = self.rack_io();
        let context = ReadContext {
            key: record.key.clone(),
            range: offset + range.start..offset + range.end,
            code: rack.code.clone(),
            disks: rack.disks.clone(),
            heal: self.heal_hook(),
            blob,
        };
        let (sender, chunks) = mpsc::channel(READ_QUEUE_CHUNKS);
        let clock = SystemClock::new();
        let job = Job::new(
            context.blob.group,
            range.end - range.start,
            kind,
            move |group: &GroupDisks| decode_range(group, &context, sender),
        );
        let job = rack
            .driver
            .submit(job)
            .await
            .map_err(|refusal| StoreError::Busy {
                key: record.key.clone(),
                reason: refusal.to_string(),
            })?;
        Ok(MigratedReader {
            chunks,
            job: Some(job),
            clock,
            first_byte_us: None,
            timing: None,
            repairs: RepairReport::default(),
        })
    }
}
