//! Reads of migrated objects (issue 4, read path): the object's bytes are a range of its blob;
//! one driver job on the blob's group reads it once the scheduler has the group up. When the
//! job starts it chooses which k of the blob's k + r columns to read ([`crate::columns`]: the
//! least busy, so reads served at once on a group spread over its disks): the data columns
//! covering the range unless some of their disks are busier than a parity column's, in which
//! case the chosen columns read every stripe of the range and each stripe is decoded. One thread
//! per chosen column reads that column's
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
//! - memory is bounded whatever the object size: per column read at most three batches of at
//!   most `read_batch_bytes` (default [`COLUMN_BATCH_BYTES`], at most
//!   [`crate::config::MAX_READ_BATCH_BYTES`]) + one fragment (the one in the thread's hand, and
//!   the fragments its one-batch channel holds, which may come from two), [`READ_QUEUE_CHUNKS`]
//!   chunks queued for the caller (each holding at most its batch), and the decoder's one stripe
//!   (and, when a parity column stands in, one stripe of scratch for its decode);
//! - each column's disk is read in increasing offset order, one IO at a time;
//! - a reader dropped early ends the job at its next chunk (the channel is closed, the sink
//!   fails, the decoder stops), so an abandoned GET never holds its group;
//! - bytes reach the caller only after their crc (or a reconstruction from crc-checked
//!   fragments) vouched for them; a stripe with fewer than k good fragments is a typed error
//!   naming every bad fragment and its disk;
//! - a read counts on the disks it reads from its choice until its column threads are done
//!   (the [`crate::columns::ReadClaim`] drops), so later reads see it.

use crate::buffers::BufferPool;
use crate::clock::{Clock, SystemClock};
use crate::columns::{DiskReads, MIN_SPREAD_STRIPES, ReadClaim};
use crate::config::ReadColumns;
use crate::driver::{Done, GroupDisks, Job, JobHandle};
use crate::error::{StoreError, StoreResult};
use crate::stacks::fetch_from_disks;
use crate::store::Store;
use bytes::Bytes;
use spinwise_catalog::{BlobRecord, Catalog, ObjectRecord};
use spinwise_disk::Disk;
use spinwise_ec::{
    Code, DecodeError, EcError, FetchError, FragmentFault, RepairReport, RepairedFragment,
    StripeDecoder, verify_framed,
};
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

/// What a read's job hands back besides the bytes.
struct ReadOutcome {
    repairs: RepairReport,
    /// The blob's columns the read took, ascending (empty for an empty range).
    columns: Vec<usize>,
}

/// A GET of a migrated object in progress.
pub struct MigratedReader {
    chunks: mpsc::Receiver<Piece>,
    job: Option<JobHandle<ReadOutcome>>,
    clock: SystemClock,
    first_byte_us: Option<u64>,
    timing: Option<ReadTiming>,
    repairs: RepairReport,
    columns: Vec<usize>,
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
        if !output.repairs.is_clean() {
            tracing::warn!(
                repaired = output.repairs.repaired.len(),
                "read around bad fragments"
            );
        }
        self.repairs = output.repairs;
        self.columns = output.columns;
        Ok(())
    }

    pub fn timing(&self) -> Option<ReadTiming> {
        self.timing
    }

    pub fn repairs(&self) -> &RepairReport {
        &self.repairs
    }

    /// Once read to the end: the blob's columns the read took, ascending (a column ≥ k is a
    /// parity column standing in for a busier or missing data column).
    pub fn columns_read(&self) -> &[usize] {
        &self.columns
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
) -> ReadOutcome {
    let columns = column_disks(group, context);
    let mut taken = Vec::new();
    let report = match stream_range(context, group, &columns, &sender, &mut taken) {
        Ok(report) => report,
        Err(error) => {
            let _ = sender.blocking_send(Err(decode_failure(&context.key, &context.blob, error)));
            RepairReport::default()
        }
    };
    // Still inside the job, so the group is up: queue repairs of damaged stacks (crate::heal).
    context.heal.after_read(&context.blob, &columns, &report);
    ReadOutcome {
        repairs: report,
        columns: taken,
    }
}

/// The columns a read takes, and how.
struct ReadPlan {
    /// Ascending.
    columns: Vec<usize>,
    /// A parity column stands in: every chosen column reads every stripe of the range and
    /// each stripe is decoded. Otherwise each data column reads the stripes whose part of the
    /// range it holds, as [`column_stripes`] says.
    spread: bool,
}

impl ReadPlan {
    /// Chooses the columns when the job starts ([`crate::columns`]), claims their disks and
    /// counts the read.
    fn choose(
        context: &ReadContext,
        group: &GroupDisks,
        stripes: &RangeInclusive<u64>,
        first: &StripeSpan,
        last: &StripeSpan,
    ) -> (ReadPlan, ReadClaim) {
        let (plan, claim) = ReadPlan::choose_columns(context, group, stripes, first, last);
        context.reads.count_started(plan.spread);
        (plan, claim)
    }

    fn choose_columns(
        context: &ReadContext,
        group: &GroupDisks,
        stripes: &RangeInclusive<u64>,
        first: &StripeSpan,
        last: &StripeSpan,
    ) -> (ReadPlan, ReadClaim) {
        let k = context.code.data_columns();
        let disks = &context.blob.disks;
        let stripe_count = stripes.end() - stripes.start() + 1;
        if context.read_columns == ReadColumns::LeastBusy && stripe_count >= MIN_SPREAD_STRIPES {
            let unavailable = |disk| {
                group.missing().contains(&disk)
                    || context
                        .disks
                        .get(disk as usize)
                        .is_some_and(|d| d.power_state() == spinwise_disk::PowerState::Failed)
            };
            let (columns, claim) = context.reads.choose(disks, k, unavailable);
            let spread = columns.iter().any(|&column| column >= k);
            return (ReadPlan { columns, spread }, claim);
        }
        let columns: Vec<usize> = (0..k)
            .filter(|&column| column_stripes(column, stripes, first, last).is_some())
            .collect();
        let claim = context
            .reads
            .claim(columns.iter().map(|&c| disks[c]).collect());
        (
            ReadPlan {
                columns,
                spread: false,
            },
            claim,
        )
    }

    /// The stripes column `column` reads (`None`: not read).
    fn column_stripes(
        &self,
        column: usize,
        stripes: &RangeInclusive<u64>,
        first: &StripeSpan,
        last: &StripeSpan,
    ) -> Option<RangeInclusive<u64>> {
        if !self.columns.contains(&column) {
            return None;
        }
        if self.spread {
            return Some(stripes.clone());
        }
        column_stripes(column, stripes, first, last)
    }

    /// The columns whose fragments of a stripe the hand-on takes.
    fn stripe_columns(&self, span: &StripeSpan) -> Vec<usize> {
        if self.spread {
            self.columns.clone()
        } else {
            span.columns.clone().collect()
        }
    }
}

/// Streams the range stripe by stripe; stops quietly (Ok) when the caller has gone. One thread
/// per data column the range covers reads that column's fragments from its disk in order,
/// [`column_batch_stripes`] at a time in one IO, and checks their crcs (see the module docs:
/// every disk of the group streams at once, each sequentially); this thread takes one stripe's
/// fragments from the columns, hands them on, and redoes a stripe with a bad fragment through
/// the decoder.
fn stream_range(
    context: &ReadContext,
    group: &GroupDisks,
    columns: &[Arc<dyn Disk>],
    sender: &mpsc::Sender<Piece>,
    taken: &mut Vec<usize>,
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
    let (plan, _claim) = ReadPlan::choose(context, group, &stripes, &first, &last);
    taken.clone_from(&plan.columns);
    let batch = context.batch_stripes;
    // Each column thread is at most one batch ahead of the stripe being handed on, plus the
    // batch it is reading.
    let ahead = batch as usize;
    let buffers = BufferPool::new(plan.columns.len() * 2 + READ_QUEUE_CHUNKS + 1);
    std::thread::scope(|scope| {
        let receivers: Vec<Option<Receiver<Fragment>>> = (0..code.columns())
            .map(|column| {
                let stripes = plan.column_stripes(column, &stripes, &first, &last)?;
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
        hand_on_stripes(
            context,
            columns,
            &range,
            (&plan, stripes),
            receivers,
            sender,
        )
    })
}

/// A column's fragment of one stripe, crc-checked (without its crc), or why it was
/// unreadable, short or corrupt.
type Fragment = Result<Bytes, FragmentFault>;

/// Stripes whose fragments a column reads in one IO of about `batch_bytes` (at least one).
pub fn column_batch_stripes(code: &Code, batch_bytes: u64) -> u64 {
    (batch_bytes / code.framed_fragment_bytes() as u64).max(1)
}

/// What a column thread reads: column `index`'s fragments of `stripes`, `batch` per IO.
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
            let checked: Vec<Result<(), FragmentFault>> =
                buffer.chunks(framed_bytes).map(verify_framed).collect();
            let bytes = buffers.freeze(buffer);
            checked
                .into_iter()
                .enumerate()
                .map(|(i, check)| {
                    let start = i * framed_bytes;
                    check.map(|()| bytes.slice(start..start + framed_bytes - 4))
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
    let got_bytes = fetch(column, stripe, &mut framed)
        .map_err(|error| FragmentFault::Unavailable(error.to_string()))?;
    if got_bytes != framed_bytes {
        return Err(FragmentFault::Short {
            got_bytes,
            expected_bytes: framed_bytes,
        });
    }
    verify_framed(&framed)?;
    Ok(buffers.freeze(framed).slice(..framed_bytes - 4))
}

/// Takes each stripe's fragments from the column threads in order and sends the range's bytes
/// in them to the caller (decoding the stripe when a parity column stands in); a stripe with a
/// bad fragment is redone by the decoder. Returns when the range is done, the caller has gone
/// (Ok) or a stripe cannot be decoded (Err); dropping the receivers then stops the column
/// threads.
fn hand_on_stripes(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    range: &Range<u64>,
    (plan, stripes): (&ReadPlan, RangeInclusive<u64>),
    receivers: Vec<Option<Receiver<Fragment>>>,
    sender: &mpsc::Sender<Piece>,
) -> Result<RepairReport, DecodeError> {
    let code = context.code.as_ref();
    let mut decoder = StripeDecoder::new(code, context.blob.size_bytes);
    let mut fetch = fetch_from_disks(code, context.blob.id, columns);
    let mut assembler = StripeAssembler::default();
    let mut report = RepairReport::default();
    for stripe in stripes {
        let span = StripeSpan::new(code, range, stripe);
        let wanted = plan.stripe_columns(&span);
        let mut fragments = Vec::with_capacity(wanted.len());
        for column in wanted {
            let receiver = receivers[column]
                .as_ref()
                .expect("a column the plan reads has a thread");
            // A column thread ends early only by panicking; the decoder then reads around it.
            let fragment = receiver.recv().unwrap_or_else(|_| {
                Err(FragmentFault::Unavailable("its column thread ended".into()))
            });
            fragments.push((column, fragment));
        }
        let (good, bad) = split_faults(fragments);
        let assembled = bad
            .is_empty()
            .then(|| assembler.data_fragments(code, &span.columns, good))
            .flatten();
        let pieces = match assembled {
            Some(fragments) => span.slice(code, fragments),
            None => {
                let (bytes, mut repaired) =
                    redo_run(&mut decoder, std::slice::from_ref(&span), &mut fetch)?;
                note_faults(&mut repaired, stripe, bad);
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

/// A stripe's good fragments by column.
type GoodFragments = Vec<(usize, Bytes)>;
/// A stripe's bad fragments: column and fault.
type Faults = Vec<(usize, FragmentFault)>;

/// The good fragments of a stripe, and the bad ones' columns and faults.
fn split_faults(fragments: Vec<(usize, Fragment)>) -> (GoodFragments, Faults) {
    let mut good = Vec::with_capacity(fragments.len());
    let mut bad = Vec::new();
    for (column, fragment) in fragments {
        match fragment {
            Ok(bytes) => good.push((column, bytes)),
            Err(fault) => bad.push((column, fault)),
        }
    }
    (good, bad)
}

/// Adds to a redone stripe's report the bad fragments its column threads met that the decoder
/// did not read again (a parity column standing in, which the decoder needs only when a data
/// fragment is bad too), so the heal hook repairs their stacks as well.
fn note_faults(report: &mut RepairReport, stripe: u64, faults: Faults) {
    for (column, fault) in faults {
        let known = report
            .repaired
            .iter()
            .any(|bad| bad.stripe == stripe && bad.column == column);
        if !known {
            report.repaired.push(RepairedFragment {
                stripe,
                column,
                fault,
            });
        }
    }
}

/// Builds a stripe's data fragments from the fragments of the columns a read took: as they
/// are when the span's data columns are among them, else by decoding the stripe from them
/// (k crc-checked fragments; the scratch stripe is allocated on the first decode).
#[derive(Default)]
struct StripeAssembler {
    scratch: Vec<Vec<u8>>,
    present: Vec<bool>,
}

impl StripeAssembler {
    /// The fragments of data columns `span` in order, or `None` when the received (good)
    /// fragments cannot give them (the caller then redoes the stripe through the decoder).
    fn data_fragments(
        &mut self,
        code: &Code,
        span: &Range<usize>,
        received: Vec<(usize, Bytes)>,
    ) -> Option<Vec<Bytes>> {
        let find = |column: usize| {
            received
                .iter()
                .find(|(taken, _)| *taken == column)
                .map(|(_, bytes)| bytes.clone())
        };
        if let Some(fragments) = span.clone().map(find).collect::<Option<Vec<Bytes>>>() {
            return Some(fragments);
        }
        self.decode(code, &received).ok()?;
        Some(
            span.clone()
                .map(|column| {
                    find(column).unwrap_or_else(|| Bytes::copy_from_slice(&self.scratch[column]))
                })
                .collect(),
        )
    }

    /// Reconstructs the data fragments the received ones lack into `scratch`.
    fn decode(&mut self, code: &Code, received: &[(usize, Bytes)]) -> Result<(), EcError> {
        if self.scratch.is_empty() {
            self.scratch = vec![vec![0; code.fragment_bytes()]; code.columns()];
            self.present = vec![false; code.columns()];
        }
        self.present.fill(false);
        for (column, bytes) in received {
            self.scratch[*column].copy_from_slice(bytes);
            self.present[*column] = true;
        }
        let mut fragments: Vec<&mut [u8]> =
            self.scratch.iter_mut().map(|f| f.as_mut_slice()).collect();
        code.reconstruct(&mut fragments, &self.present, true)
    }
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
    /// Which columns to read ([`crate::StoreConfig::read_columns`]), and the reads in progress
    /// that decide it.
    read_columns: ReadColumns,
    reads: Arc<DiskReads>,
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
            read_columns: self.config().read_columns,
            reads: rack.disk_reads.clone(),
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
            columns: Vec::new(),
        })
    }
}
