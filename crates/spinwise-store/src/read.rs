//! Reads of migrated objects (issue 4, read path): the object's bytes are a range of its blob;
//! one driver job on the blob's group reads it once the scheduler has the group up, fetching
//! only the data fragments that cover the range. One thread per data column reads that column's
//! fragments from its disk in stripe order, [`COLUMN_BATCH_BYTES`] per IO, and checks each
//! fragment's crc32c while it is still in cache; the job hands the verified fragments on in blob
//! order without copying. Every disk of the group thus streams at once, each sequentially: a
//! group of k disks reads at k disks' bandwidth, as the simulator assumes and as Pelican's
//! "15 disks streaming" needs. (Until the cross-validation against the simulator, `experiment
//! pelican-fig4`, reader threads took whole stripes in turn, one fragment after another: on
//! disks that block while they transfer, a read ran at one or two disks' speed.)
//! A stripe with an unreadable, short or corrupt fragment is redone by the
//! [`StripeDecoder`], which reconstructs from any k good fragments and reports what it read
//! around. The bytes stream to the caller through a bounded channel. Before the job returns it
//! hands its repair report to [`crate::heal`], which queues in-place repairs of the damaged
//! stacks on the same spin-up and notes disks that answered `Failed`.
//!
//! Invariants:
//! - memory is bounded whatever the object size: per data column at most three batches of at
//!   most `read_batch_bytes` (default [`COLUMN_BATCH_BYTES`], at most
//!   [`crate::config::MAX_READ_BATCH_BYTES`]) + one fragment (the one in the thread's hand, and
//!   the fragments its one-batch channel holds, which may come from two), [`READ_QUEUE_CHUNKS`]
//!   chunks queued for the caller (each holding at most its batch), and the decoder's one stripe;
//! - each column's disk is read in increasing offset order, one IO at a time;
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
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};
use tokio::sync::mpsc;

/// Chunks (each a fragment's part of the range) queued between the job and a slow caller.
pub const READ_QUEUE_CHUNKS: usize = 8;
/// A column thread reads about this many bytes of consecutive fragments from its disk in one
/// IO (at least one fragment): large enough that a hard disk streams rather than seeks between
/// the columns' requests, small enough that k columns' read-ahead stays a few MiB per read.
/// The default of [`crate::StoreConfig::read_batch_bytes`].
pub const COLUMN_BATCH_BYTES: u64 = 512 << 10;

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

/// Streams the range stripe by stripe; stops quietly (Ok) when the caller has gone. One thread
/// per data column the range covers reads that column's fragments from its disk in order,
/// [`column_batch_stripes`] at a time in one IO, and checks their crcs (see the module docs:
/// every disk of the group streams at once, each sequentially); this thread takes one stripe's
/// fragments from the columns, hands them on, and redoes a stripe with a bad fragment through
/// the decoder.
fn stream_range(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    sender: &mpsc::Sender<Piece>,
) -> Result<RepairReport, DecodeError> {
    let range = context.range.clone();
    if range.is_empty() {
        return Ok(RepairReport::default());
    }
    let code = context.code.as_ref();
    let location = code.locate(context.blob.size_bytes, range.clone())?;
    let stripes = location.first_stripe..=location.last_stripe;
    let first = StripeSpan::new(code, &range, *stripes.start());
    let last = StripeSpan::new(code, &range, *stripes.end());
    let batch = context.batch_stripes;
    // Each column thread is at most one batch ahead of the stripe being handed on, plus the
    // batch it is reading.
    let ahead = batch as usize;
    let buffers = BufferPool::new(code.data_columns() * 2 + READ_QUEUE_CHUNKS + 1);
    std::thread::scope(|scope| {
        let receivers: Vec<Option<Receiver<Fragment>>> = (0..code.data_columns())
            .map(|column| {
                let stripes = column_stripes(column, &stripes, &first, &last)?;
                let (send, receive) = std::sync::mpsc::sync_channel(ahead);
                let buffers = buffers.clone();
                let blob = context.blob.id;
                let batch = context.batch_stripes;
                scope.spawn(move || {
                    let column = Column {
                        index: column,
                        stripes,
                        batch,
                    };
                    read_column(code, blob, columns, column, &buffers, send)
                });
                Some(receive)
            })
            .collect();
        hand_on_stripes(context, columns, &range, stripes, receivers, sender)
    })
}

/// A data column's fragment of one stripe, crc-checked (without its crc), or `None` when it
/// was unreadable, short or corrupt.
type Fragment = Option<Bytes>;

/// Stripes whose fragments a column reads in one IO of about `batch_bytes` (at least one).
pub fn column_batch_stripes(code: &Code, batch_bytes: u64) -> u64 {
    (batch_bytes / code.framed_fragment_bytes() as u64).max(1)
}

/// What a column thread reads: data column `index`'s fragments of `stripes`, `batch` per IO.
struct Column {
    index: usize,
    stripes: RangeInclusive<u64>,
    batch: u64,
}

/// The stripes of `stripes` in which the range covers `column`: all of them but perhaps the
/// first and the last (a range can start and end inside a stripe); `None` if there are none.
fn column_stripes(
    column: usize,
    stripes: &RangeInclusive<u64>,
    first: &StripeSpan,
    last: &StripeSpan,
) -> Option<RangeInclusive<u64>> {
    let (mut from, mut to) = (*stripes.start(), *stripes.end());
    if !first.columns.contains(&column) {
        from += 1;
    }
    if !last.columns.contains(&column) {
        to = to.checked_sub(1)?;
    }
    (from <= to).then_some(from..=to)
}

/// A column thread: reads the column's fragments of `stripes` in order, a batch per IO after a
/// first IO of one fragment, and sends each, crc-checked, until done or until the receiver has gone. A batch that fails as a
/// whole is read again fragment by fragment, so one bad fragment costs only itself.
fn read_column(
    code: &Code,
    blob: u64,
    columns: &[Arc<dyn Disk>],
    Column {
        index: column,
        stripes,
        batch: batch_stripes,
    }: Column,
    buffers: &BufferPool,
    send: SyncSender<Fragment>,
) {
    let mut fetch = fetch_from_disks(code, blob, columns);
    let framed_bytes = code.framed_fragment_bytes();
    // The first IO takes one fragment, so the first byte waits for one fragment, not a batch.
    let mut batch = 1;
    let mut stripe = *stripes.start();
    while stripe <= *stripes.end() {
        let count = batch.min(stripes.end() - stripe + 1) as usize;
        batch = batch_stripes;
        let mut buffer = buffers.take_initialized(count * framed_bytes);
        let whole = fetch(column, stripe, &mut buffer).is_ok_and(|got| got == buffer.len());
        let fragments: Vec<Fragment> = if whole {
            let checked: Vec<bool> = buffer
                .chunks(framed_bytes)
                .map(|framed| verify_framed(framed).is_ok())
                .collect();
            let bytes = buffers.freeze(buffer);
            (0..count)
                .map(|i| {
                    let start = i * framed_bytes;
                    checked[i].then(|| bytes.slice(start..start + framed_bytes - 4))
                })
                .collect()
        } else {
            (0..count as u64)
                .map(|i| fetch_one(code, &mut fetch, column, stripe + i, buffers))
                .collect()
        };
        for fragment in fragments {
            if send.send(fragment).is_err() {
                return; // the stream stopped: the caller went, or a stripe failed for good
            }
        }
        stripe += count as u64;
    }
}

/// One fragment on its own (after its batch failed).
fn fetch_one(
    code: &Code,
    fetch: &mut impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    column: usize,
    stripe: u64,
    buffers: &BufferPool,
) -> Fragment {
    let framed_bytes = code.framed_fragment_bytes();
    let mut framed = buffers.take_initialized(framed_bytes);
    let whole = fetch(column, stripe, &mut framed).is_ok_and(|got| got == framed_bytes);
    (whole && verify_framed(&framed).is_ok())
        .then(|| buffers.freeze(framed).slice(..framed_bytes - 4))
}

/// Takes each stripe's fragments from the column threads in order and sends the range's bytes
/// in them to the caller; a stripe with a bad fragment is redone by the decoder. Returns when
/// the range is done, the caller has gone (Ok) or a stripe cannot be decoded (Err); dropping
/// the receivers then stops the column threads.
fn hand_on_stripes(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    range: &Range<u64>,
    stripes: RangeInclusive<u64>,
    receivers: Vec<Option<Receiver<Fragment>>>,
    sender: &mpsc::Sender<Piece>,
) -> Result<RepairReport, DecodeError> {
    let code = context.code.as_ref();
    let mut decoder = StripeDecoder::new(code, context.blob.size_bytes);
    let mut fetch = fetch_from_disks(code, context.blob.id, columns);
    let mut report = RepairReport::default();
    for stripe in stripes {
        let span = StripeSpan::new(code, range, stripe);
        let mut fragments = Vec::with_capacity(span.columns.len());
        for column in span.columns.clone() {
            let receiver = receivers[column]
                .as_ref()
                .expect("a column the range covers has a thread");
            // A column thread ends early only by panicking; the decoder then reads around it.
            fragments.push(receiver.recv().ok().flatten());
        }
        let pieces = match fragments.into_iter().collect::<Option<Vec<Bytes>>>() {
            Some(fragments) => span.slice(code, fragments),
            None => {
                let (bytes, repaired) =
                    redo_run(&mut decoder, std::slice::from_ref(&span), &mut fetch)?;
                report.merge(repaired);
                vec![bytes]
            }
        };
        for piece in pieces {
            if sender.blocking_send(Ok(piece)).is_err() {
                return Ok(report); // the caller went away
            }
        }
    }
    Ok(report)
}

/// The part of one stripe a range covers: blob bytes `blob_range`, in data columns `columns`.
struct StripeSpan {
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
            blob_range: start..end,
            columns: first_column as usize..last_column as usize + 1,
            within: (start - columns_start) as usize..(end - columns_start) as usize,
        }
    }

    /// The span's bytes out of its columns' whole fragments (in column order), without
    /// copying: the part of each fragment inside `within`.
    fn slice(&self, code: &Code, fragments: Vec<Bytes>) -> Vec<Bytes> {
        let fragment_bytes = code.fragment_bytes();
        fragments
            .into_iter()
            .enumerate()
            .filter_map(|(i, fragment)| {
                let start = i * fragment_bytes;
                let from = self.within.start.max(start) - start;
                let to = self
                    .within
                    .end
                    .min(start + fragment_bytes)
                    .saturating_sub(start);
                (from < to).then(|| fragment.slice(from..to))
            })
            .collect()
    }
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
    /// Stripes a column thread reads per IO ([`crate::StoreConfig::read_batch_bytes`]).
    batch_stripes: u64,
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
            batch_stripes: column_batch_stripes(&rack.code, self.config().read_batch_bytes),
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
