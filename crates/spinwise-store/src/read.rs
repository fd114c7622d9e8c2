//! Reads of migrated objects (issue 4, read path): the object's bytes are a range of its blob;
//! one driver job on the blob's group reads it once the scheduler has the group up. When the
//! job starts it chooses which k of the blob's k + r columns to read ([`crate::columns`]: the
//! least busy, so reads served at once on a group spread over its disks).
//!
//! - A *spread* read (at least [`MIN_SPREAD_STRIPES`] stripes, `read_columns = "least_busy"`):
//!   a thread per chosen column and per other readable column (a standby) reads the stripes the
//!   board (`board.rs`) lets it claim, whole stripes from the range's first to its last. A standby stands
//!   in, stripe by stripe, for a chosen column that falls behind, so a disk shared with other
//!   reads does not hold the read back. A stripe whose k fragments include parity is decoded.
//! - Otherwise one thread per data column the range covers reads that column's fragments, over
//!   a channel of its own.
//!
//! Either way a thread reads its disk in stripe order, [`COLUMN_BATCH_BYTES`](crate::config::COLUMN_BATCH_BYTES) per IO, and checks
//! each fragment's crc32c while it is still in cache; the job hands the verified fragments on in
//! blob order without copying. Every disk a read takes thus streams at once, each sequentially:
//! a read gets k disks' bandwidth, as the simulator assumes and as Pelican's "15 disks
//! streaming" needs. (Until the cross-validation against the simulator, `experiment
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
//!   most `read_batch_bytes` (default [`COLUMN_BATCH_BYTES`](crate::config::COLUMN_BATCH_BYTES), at most
//!   [`crate::config::MAX_READ_BATCH_BYTES`]) + one fragment (the one in the thread's hand, and
//!   the fragments its one-batch channel holds, which may come from two); for a spread read,
//!   one run per thread and the board's window of stripes (k fragments each, 4 batches);
//!   [`READ_QUEUE_MESSAGES`] messages queued for the caller, one being filled and one being
//!   read (each at most [`READ_MESSAGE_BYTES`] plus one stripe of the range, each piece holding
//!   its batch), and the decoder's one stripe (and one stripe of scratch for decoding with
//!   parity);
//! - each column's disk is read in increasing offset order, one IO at a time (a spread read's
//!   thread skips forward over stripes other columns filled);
//! - a reader dropped early ends the job at its next chunk (the channel is closed, the sink
//!   fails, the decoder stops), so an abandoned GET never holds its group;
//! - bytes reach the caller only after their crc (or a reconstruction from crc-checked
//!   fragments) vouched for them; a stripe with fewer than k good fragments is a typed error
//!   naming every bad fragment and its disk;
//! - a whole-object read asked to check the object's BLAKE3 hashes it in subtrees when its
//!   placement allows ([`crate::subtree_hash`]): the column threads hash their data fragments,
//!   the hand-on merges in the order it hands on and hashes what it decoded itself, so the
//!   root covers exactly the bytes handed on;
//! - a read counts on the disks it reads from its choice until its column threads are done
//!   (the [`crate::columns::ReadClaim`] drops), so later reads see it.

use crate::board::{Board, Fragment, NotYet, Reader, Seat};
use crate::buffers::BufferPool;
use crate::clock::Clock;
use crate::columns::{DiskReads, MIN_SPREAD_STRIPES, ReadClaim};
use crate::config::COLUMN_BATCH_BYTES;
use crate::config::ReadColumns;
use crate::driver::{Done, GroupDisks, Job, JobHandle, Purpose};
use crate::error::{StoreError, StoreResult};
use crate::stacks::fetch_from_disks;
use crate::store::Store;
use crate::subtree_hash::{Checked, Subtree, SubtreePlan, WholeHash};
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

/// Messages queued between the job and a slow caller. A message is the pieces (a fragment's
/// part of the range each, not copied) of consecutive stripes.
pub const READ_QUEUE_MESSAGES: usize = 4;
/// The job sends its pieces once they reach this many bytes (the first stripe at once, so the
/// first byte waits for one fragment; and whatever it holds before it would wait for the
/// disks, so a slow read never keeps ready bytes from the caller). Why not a message per
/// piece: at 128 KiB fragments a 1 GiB GET sent 8,192 messages, each waking the caller's task,
/// and with the CLI's write per chunk the GET made ~55,000 context switches against the staged
/// GET's ~4,000 (1 MiB chunks); on two cores that was a quarter of its samples.
pub const READ_MESSAGE_BYTES: usize = 1 << 20;
/// A spread read's board holds claims this many batches ahead of the stripe being handed on
/// (and at least twice the lag): room for a standby to claim ahead of a lagging column, and
/// the bound on the fragments a read holds.
const BOARD_WINDOW_BATCHES: u64 = 4;
/// A chosen column this many batches, and at least [`MIN_STANDBY_LAG_BYTES`] of its stripes,
/// behind the leading one for [`STANDBY_GRACE`] is late, and a standby may stand in for it.
/// The bytes floor matters for small IOs (`experiment pelican-fig4` reads one small fragment
/// per IO): columns streaming at the same rate drift a few IOs apart, which is not a column
/// falling behind (a floor of 4 stripes let standbys read there and the store's service time
/// fell 20% below the simulator's at b = 240).
const STANDBY_LAG_BATCHES: u64 = 2;
const MIN_STANDBY_LAG_BYTES: u64 = 2 * COLUMN_BATCH_BYTES;
/// Longer than a thread waits for a core on a busy host (a few scheduler slices), so the
/// jitter of threads reading from the page cache does not make standbys read and stripes
/// decode for nothing (measured: a 1 GiB GET on this 2-core VM took ~30% longer without it);
/// short beside a disk shared with other reads, which falls behind for a whole read.
const STANDBY_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Where a GET's time went, in µs: waiting for the scheduler (of which spinning the group up),
/// to the first byte, and the whole service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadTiming {
    pub queued_us: u64,
    pub spin_up_wait_us: u64,
    pub time_to_first_byte_us: u64,
    pub service_us: u64,
}

/// The job's output: verified byte chunks in order, or the error that stopped it.
type Pieces = Result<Vec<Bytes>, StoreError>;

/// What a read's job hands back besides the bytes.
struct ReadOutcome {
    repairs: RepairReport,
    /// The blob's columns the read took, ascending (empty for an empty range).
    columns: Vec<usize>,
    /// The whole object's BLAKE3 built from the pieces handed on, when the read hashed in
    /// subtrees (`crate::subtree_hash`) and handed on every byte of it.
    content_hash: Option<[u8; 32]>,
}

/// A GET of a migrated object in progress.
pub struct MigratedReader {
    chunks: mpsc::Receiver<Pieces>,
    /// The rest of the last message, handed out one piece per `next_chunk`.
    ready: std::collections::VecDeque<Bytes>,
    job: Option<JobHandle<ReadOutcome>>,
    /// The store's clock, and when on it the read was submitted.
    clock: Arc<dyn Clock>,
    submitted_us: u64,
    /// Submission → the first chunk, µs.
    first_byte_us: Option<u64>,
    timing: Option<ReadTiming>,
    repairs: RepairReport,
    columns: Vec<usize>,
    /// The job hashes the whole object in subtrees ([`MigratedReader::hashes_whole`]).
    hashes_whole: bool,
    content_hash: Option<[u8; 32]>,
}

impl MigratedReader {
    /// The next verified chunk, or `None` once the range is done.
    pub async fn next_chunk(&mut self) -> StoreResult<Option<Bytes>> {
        loop {
            if let Some(chunk) = self.ready.pop_front() {
                return Ok(Some(chunk));
            }
            match self.chunks.recv().await {
                Some(Ok(pieces)) => {
                    let since_us = self.clock.now_us().saturating_sub(self.submitted_us);
                    self.first_byte_us.get_or_insert(since_us);
                    self.ready.extend(pieces);
                }
                Some(Err(error)) => return Err(error),
                None => {
                    self.finish().await?;
                    return Ok(None);
                }
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
        let started_to_first_byte = self
            .first_byte_us
            .unwrap_or_else(|| self.clock.now_us().saturating_sub(self.submitted_us));
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
        self.content_hash = output.content_hash;
        Ok(())
    }

    /// Whether the read's job computes the whole object's BLAKE3 itself, in subtrees on the
    /// column threads (asked for with `hash_whole` and possible for this object's placement:
    /// `crate::subtree_hash`); then the caller checks [`MigratedReader::content_hash`] at the
    /// end instead of hashing the bytes again.
    pub fn hashes_whole(&self) -> bool {
        self.hashes_whole
    }

    /// Once read to the end, for a read that [`MigratedReader::hashes_whole`]: the BLAKE3 of
    /// the bytes it handed on, `None` if they were not the whole object.
    pub fn content_hash(&self) -> Option<[u8; 32]> {
        self.content_hash
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
    sender: mpsc::Sender<Pieces>,
) -> ReadOutcome {
    if let Some(timeline) = &context.timeline {
        // Reads served at one instant choose their columns one after another, in blob order.
        timeline.sleep_until_us(timeline.now_us(), (2 << 32) | context.blob.id);
    }
    let columns = column_disks(group, context);
    let mut taken = Vec::new();
    let (report, content_hash) = match stream_range(context, group, &columns, &sender, &mut taken) {
        Ok(streamed) => streamed,
        Err(error) => {
            let _ = sender.blocking_send(Err(decode_failure(&context.key, &context.blob, error)));
            (RepairReport::default(), None)
        }
    };
    // Still inside the job, so the group is up: queue repairs of damaged stacks (crate::heal).
    context.heal.after_read(&context.blob, &columns, &report);
    ReadOutcome {
        repairs: report,
        columns: taken,
        content_hash,
    }
}

/// The columns a read takes, and how.
struct ReadPlan {
    /// The k columns chosen when the read starts (all of them data columns unless `spread`),
    /// ascending.
    columns: Vec<usize>,
    /// The blob's other readable columns, which may stand in stripe by stripe ([`Board`]).
    standby: Vec<usize>,
    /// A spread read: every column reads through the [`Board`] and a stripe is decoded when a
    /// parity fragment is among its k. Otherwise each data column reads the stripes whose part
    /// of the range it holds, as [`column_stripes`] says, over a channel of its own.
    spread: bool,
}

impl ReadPlan {
    /// Chooses the columns when the job starts ([`crate::columns`]) and claims their disks.
    fn choose(
        context: &ReadContext,
        group: &GroupDisks,
        stripes: &RangeInclusive<u64>,
        first: &StripeSpan,
        last: &StripeSpan,
    ) -> (ReadPlan, ReadClaim) {
        let k = context.code.data_columns();
        let disks = &context.blob.disks;
        let stripe_count = stripes.end() - stripes.start() + 1;
        let unavailable = |disk| {
            group.missing().contains(&disk)
                || context
                    .disks
                    .get(disk as usize)
                    .is_some_and(|d| d.power_state() == spinwise_disk::PowerState::Failed)
        };
        if context.read_columns == ReadColumns::LeastBusy && stripe_count >= MIN_SPREAD_STRIPES {
            let (columns, claim) = context.reads.choose(disks, k, unavailable);
            let standby = (0..disks.len())
                .filter(|column| !columns.contains(column) && !unavailable(disks[*column]))
                .collect();
            let plan = ReadPlan {
                columns,
                standby,
                spread: true,
            };
            return (plan, claim);
        }
        let columns: Vec<usize> = (0..k)
            .filter(|&column| column_stripes(column, stripes, first, last).is_some())
            .collect();
        let claim = context
            .reads
            .claim(columns.iter().map(|&c| disks[c]).collect());
        let plan = ReadPlan {
            columns,
            standby: Vec::new(),
            spread: false,
        };
        (plan, claim)
    }

    /// The board's readers: the chosen columns as primaries, then the standbys.
    fn readers(&self) -> Vec<Reader> {
        let primaries = self.columns.iter().map(|&column| Reader {
            column,
            primary: true,
        });
        let standbys = self.standby.iter().map(|&column| Reader {
            column,
            primary: false,
        });
        primaries.chain(standbys).collect()
    }
}

/// Streams the range stripe by stripe; stops quietly (Ok) when the caller has gone. One thread
/// per data column the range covers reads that column's fragments from its disk in order,
/// [`column_batch_stripes`] at a time in one IO, and checks their crcs (see the module docs:
/// every disk of the group streams at once, each sequentially); this thread takes one stripe's
/// fragments from the columns, hands them on, and redoes a stripe with a bad fragment through
/// the decoder. Returns the repairs and, when the read hashes in subtrees, the whole object's
/// BLAKE3.
fn stream_range(
    context: &ReadContext,
    group: &GroupDisks,
    columns: &[Arc<dyn Disk>],
    sender: &mpsc::Sender<Pieces>,
    taken: &mut Vec<usize>,
) -> Result<(RepairReport, Option<[u8; 32]>), DecodeError> {
    let range = context.range.clone();
    if range.is_empty() {
        return Ok((RepairReport::default(), None));
    }
    let code = context.code.as_ref();
    let location = code.locate(context.blob.size_bytes, range.clone())?;
    let stripes = location.first_stripe..=location.last_stripe;
    let first = StripeSpan::new(code, &range, *stripes.start());
    let last = StripeSpan::new(code, &range, *stripes.end());
    let (plan, _claim) = ReadPlan::choose(context, group, &stripes, &first, &last);
    taken.clone_from(&plan.columns);
    let mut hand_on = HandOn::new(context, columns, &range);
    let outcome = if plan.spread {
        stream_on_board(context, columns, &plan, stripes, &mut hand_on, sender)
    } else {
        stream_by_column(
            context,
            columns,
            &plan,
            (stripes, &first, &last),
            &mut hand_on,
            sender,
        )
    };
    // The bytes handed on so far go out before the end, or before the error that ends it.
    hand_on.flush(sender);
    context.reads.count_read(hand_on.used_parity);
    let content_hash = hand_on.whole.as_ref().and_then(WholeHash::root);
    outcome.map(|()| (hand_on.report, content_hash))
}

/// A read of the data columns covering the range: one thread per column, each with a channel
/// at most a batch deep, taken from in stripe order.
fn stream_by_column(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    plan: &ReadPlan,
    (stripes, first, last): (RangeInclusive<u64>, &StripeSpan, &StripeSpan),
    hand_on: &mut HandOn<'_>,
    sender: &mpsc::Sender<Pieces>,
) -> Result<(), DecodeError> {
    let code = context.code.as_ref();
    // Each column thread is at most one batch ahead of the stripe being handed on, plus the
    // batch it is reading.
    let ahead = context.batch_stripes as usize;
    let buffers = BufferPool::new(pool_capacity(context, plan.columns.len()));
    std::thread::scope(|scope| {
        let receivers: Vec<Option<Receiver<Fragment>>> = (0..code.data_columns())
            .map(|column| {
                let stripes = column_stripes(column, &stripes, first, last)?;
                let (send, receive) = std::sync::mpsc::sync_channel(ahead);
                let buffers = buffers.clone();
                let blob = context.blob.id;
                let batch = context.batch_stripes;
                let subtrees = context.subtrees.as_ref();
                scope.spawn(move || {
                    let column = Column {
                        index: column,
                        stripes,
                        batch,
                    };
                    read_column(code, (blob, subtrees), columns, column, &buffers, send)
                });
                Some(receive)
            })
            .collect();
        for stripe in stripes {
            let span = StripeSpan::new(code, &hand_on.range, stripe);
            let fragments = span
                .columns
                .clone()
                .map(|column| {
                    let receiver = receivers[column]
                        .as_ref()
                        .expect("a column the range covers has a thread");
                    let fragment = match receiver.try_recv() {
                        Ok(fragment) => Ok(fragment),
                        Err(_) => {
                            // About to wait for the disk: hand on what is ready first.
                            hand_on.flush(sender);
                            receiver.recv()
                        }
                    };
                    // A column thread ends early only by panicking; the decoder reads around it.
                    let fragment = fragment.unwrap_or_else(|_| {
                        Err(FragmentFault::Unavailable("its column thread ended".into()))
                    });
                    (column, fragment)
                })
                .collect();
            if !hand_on.stripe(&span, fragments, sender)? {
                break; // the caller went away; dropping the receivers stops the threads
            }
        }
        Ok(())
    })
}

/// Buffers a read's pool keeps idle for reuse: as many as it can have in use at once (each
/// thread's run, the board's window or the column channels, the queued messages), so a
/// steady read reuses them instead of freeing and faulting in fresh ones. The pool allocates
/// only when none is idle, so this never raises what the read holds at its peak.
fn pool_capacity(context: &ReadContext, threads: usize) -> usize {
    let k = context.code.data_columns();
    let batch = context.batch_stripes as usize;
    let message_stripes = READ_MESSAGE_BYTES.div_ceil(context.code.stripe_data_bytes() as usize);
    let queued_stripes = (READ_QUEUE_MESSAGES + 2) * (message_stripes + 1);
    let window_batches = BOARD_WINDOW_BATCHES as usize + 1;
    threads * (window_batches + 1) + k * queued_stripes.div_ceil(batch) + k
}

/// A spread read: a thread per chosen and standby column, reading the stripes the [`Board`]
/// lets it claim, whole stripes from the first to the last of the range.
fn stream_on_board(
    context: &ReadContext,
    columns: &[Arc<dyn Disk>],
    plan: &ReadPlan,
    stripes: RangeInclusive<u64>,
    hand_on: &mut HandOn<'_>,
    sender: &mpsc::Sender<Pieces>,
) -> Result<(), DecodeError> {
    let code = context.code.as_ref();
    let batch = context.batch_stripes;
    let readers = plan.readers();
    let board = Board::new(
        code.data_columns(),
        (*stripes.start(), stripes.end() + 1),
        &readers,
        board_spacing(code, batch),
    );
    let board = match &context.timeline {
        Some(timeline) => board.on_timeline(timeline.clone()),
        None => board,
    };
    let buffers = BufferPool::new(pool_capacity(context, readers.len()));
    std::thread::scope(|scope| {
        for (thread, reader) in readers.iter().enumerate() {
            let (board, buffers) = (&board, buffers.clone());
            let blob = (context.blob.id, context.subtrees.as_ref());
            scope.spawn(move || {
                read_claimed(
                    code,
                    blob,
                    columns,
                    (board, thread, reader.column),
                    batch,
                    &buffers,
                )
            });
        }
        // Stop the threads however the hand-on ends: done, caller gone, or a stripe failed.
        let _stop = StopBoard(&board);
        for stripe in stripes {
            let span = StripeSpan::new(code, &hand_on.range, stripe);
            let fragments = match board.try_take() {
                Ok(taken) => taken,
                Err(NotYet) => {
                    // About to wait for the disks: hand on what is ready first.
                    if !hand_on.flush(sender) {
                        break;
                    }
                    board.take()
                }
            };
            let Some(fragments) = fragments else {
                break;
            };
            if !hand_on.stripe(&span, fragments, sender)? {
                break;
            }
        }
        Ok(())
    })
}

/// A spread read's board window, standby lag (both in stripes) and grace.
fn board_spacing(code: &Code, batch: u64) -> (u64, u64, std::time::Duration) {
    let floor = MIN_STANDBY_LAG_BYTES.div_ceil(code.framed_fragment_bytes() as u64);
    let lag = (STANDBY_LAG_BATCHES * batch).max(floor);
    let window = (BOARD_WINDOW_BATCHES * batch).max(2 * lag);
    (window, lag, STANDBY_GRACE)
}

/// Stops a board when dropped.
struct StopBoard<'a>(&'a Board);

impl Drop for StopBoard<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// A spread read's column thread: reads the runs of stripes its column claims on the board,
/// the first run one fragment (so the first byte waits for one), then up to `batch` per IO.
fn read_claimed(
    code: &Code,
    (blob, subtrees): (u64, Option<&SubtreePlan>),
    columns: &[Arc<dyn Disk>],
    (board, thread, column): (&Board, usize, usize),
    batch: u64,
    buffers: &BufferPool,
) {
    let mut seat = Seat {
        board,
        thread,
        pending: None,
    };
    let mut fetch = fetch_from_disks(code, blob, columns);
    let mut most = 1;
    while let Some((first, count)) = board.claim_run(thread, most) {
        most = batch;
        seat.pending = Some((first, count));
        let fragments = read_run(code, &mut fetch, (column, first, count), buffers, subtrees);
        seat.pending = None;
        board.deposit(thread, first, fragments);
    }
}

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
    (blob, subtrees): (u64, Option<&SubtreePlan>),
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
    // The first IO takes one fragment, so the first byte waits for one fragment, not a batch.
    let mut batch = 1;
    let mut stripe = *stripes.start();
    while stripe <= *stripes.end() {
        let count = batch.min(stripes.end() - stripe + 1);
        batch = batch_stripes;
        let run = read_run(code, &mut fetch, (column, stripe, count), buffers, subtrees);
        for fragment in run {
            if send.send(fragment).is_err() {
                return; // the stream stopped: the caller went, or a stripe failed for good
            }
        }
        stripe += count;
    }
}

/// Column `column`'s fragments of stripes `first..first + count`, read in one IO and
/// crc-checked, and each good data fragment hashed as its subtree of the object when the read
/// hashes in `subtrees` (here, while the fragment is still in cache from its crc); an IO that
/// fails as a whole is redone fragment by fragment, so one bad fragment costs only itself
/// (those go without a subtree: the hand-on hashes their bytes).
fn read_run(
    code: &Code,
    fetch: &mut impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    (column, first, count): (usize, u64, u64),
    buffers: &BufferPool,
    subtrees: Option<&SubtreePlan>,
) -> Vec<Fragment> {
    let framed_bytes = code.framed_fragment_bytes();
    let mut buffer = buffers.take_initialized(count as usize * framed_bytes);
    let whole = fetch(column, first, &mut buffer).is_ok_and(|got| got == buffer.len());
    if !whole {
        return (0..count)
            .map(|i| fetch_one(code, fetch, column, first + i, buffers))
            .collect();
    }
    let checked: Vec<Result<(), FragmentFault>> =
        buffer.chunks(framed_bytes).map(verify_framed).collect();
    let bytes = buffers.freeze(buffer);
    checked
        .into_iter()
        .enumerate()
        .map(|(i, check)| {
            let start = i * framed_bytes;
            check.map(|()| {
                let fragment = bytes.slice(start..start + framed_bytes - 4);
                let stripe = first + i as u64;
                let subtree = subtrees.and_then(|plan| plan.subtree(stripe, column, &fragment));
                Checked {
                    bytes: fragment,
                    subtree,
                }
            })
        })
        .collect()
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
    Ok(Checked::plain(
        buffers.freeze(framed).slice(..framed_bytes - 4),
    ))
}

/// Reads one framed fragment of (column, stripe) into a buffer (`stacks::fetch_from_disks`).
type BoxedFetch<'a> = Box<dyn FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError> + 'a>;

/// Hands a read's stripes on to the caller in order: the range's bytes of each stripe's
/// fragments, decoded when a parity fragment stands in, or redone by the decoder when a
/// fragment is bad (reported, with the bad fragments the decoder did not read again).
struct HandOn<'a> {
    code: &'a Code,
    range: Range<u64>,
    decoder: StripeDecoder<'a>,
    fetch: BoxedFetch<'a>,
    assembler: StripeAssembler,
    report: RepairReport,
    /// A stripe was decoded from a parity fragment (the status counts such reads).
    used_parity: bool,
    /// Pieces not yet sent, and their bytes ([`READ_MESSAGE_BYTES`]).
    outgoing: Vec<Bytes>,
    outgoing_bytes: usize,
    /// Whether a message has gone out (the first stripe goes at once).
    sent: bool,
    /// The caller has gone.
    closed: bool,
    /// The whole object's hash, built from every piece queued, when the read hashes in
    /// subtrees.
    whole: Option<WholeHash>,
}

impl<'a> HandOn<'a> {
    fn new(context: &'a ReadContext, columns: &'a [Arc<dyn Disk>], range: &Range<u64>) -> Self {
        let code = context.code.as_ref();
        HandOn {
            code,
            range: range.clone(),
            decoder: StripeDecoder::new(code, context.blob.size_bytes),
            fetch: Box::new(fetch_from_disks(code, context.blob.id, columns)),
            assembler: StripeAssembler::default(),
            report: RepairReport::default(),
            used_parity: false,
            outgoing: Vec::new(),
            outgoing_bytes: 0,
            sent: false,
            closed: false,
            whole: context.subtrees.as_ref().map(WholeHash::new),
        }
    }

    /// Sends the pieces held, if any; `false` once the caller has gone.
    fn flush(&mut self, sender: &mpsc::Sender<Pieces>) -> bool {
        if self.closed {
            return false;
        }
        if self.outgoing.is_empty() {
            return true;
        }
        self.outgoing_bytes = 0;
        self.sent = true;
        let message = std::mem::take(&mut self.outgoing);
        self.closed = sender.blocking_send(Ok(message)).is_err();
        !self.closed
    }

    /// Queues `span`'s bytes out of its stripe's `fragments` for the caller, sending them when
    /// enough are held ([`READ_MESSAGE_BYTES`]); `Ok(false)` when the caller has gone, an error
    /// when the stripe cannot be decoded.
    fn stripe(
        &mut self,
        span: &StripeSpan,
        fragments: Vec<(usize, Fragment)>,
        sender: &mpsc::Sender<Pieces>,
    ) -> Result<bool, DecodeError> {
        let (good, bad, subtrees) = split_faults(fragments);
        let k = self.code.data_columns();
        let parity = good.iter().any(|(column, _)| *column >= k);
        let assembled = bad
            .is_empty()
            .then(|| {
                self.assembler
                    .data_fragments(self.code, &span.columns, good)
            })
            .flatten();
        let pieces: Vec<(Option<usize>, Bytes)> = match assembled {
            Some(fragments) => {
                self.used_parity |= parity;
                span.slice(self.code, fragments)
                    .into_iter()
                    .map(|(column, piece)| (Some(column), piece))
                    .collect()
            }
            None => {
                let (bytes, mut repaired) = redo_run(
                    &mut self.decoder,
                    std::slice::from_ref(span),
                    &mut self.fetch,
                )?;
                note_faults(&mut repaired, span.stripe, bad);
                self.report.merge(repaired);
                vec![(None, bytes)]
            }
        };
        for (column, piece) in pieces {
            if let Some(whole) = &mut self.whole {
                // A column thread's subtree stands for this piece only if the piece is that
                // thread's very fragment (the same buffer, from its start): a decoded one is
                // hashed here.
                let subtree = column.and_then(|column| {
                    subtrees
                        .iter()
                        .find(|(of, start, _)| *of == column && *start == piece.as_ptr())
                        .map(|(_, _, subtree)| subtree)
                });
                whole.piece(&piece, subtree);
            }
            self.outgoing_bytes += piece.len();
            self.outgoing.push(piece);
        }
        if !self.sent || self.outgoing_bytes >= READ_MESSAGE_BYTES {
            return Ok(self.flush(sender));
        }
        Ok(!self.closed)
    }
}

/// A stripe's good fragments by column.
type GoodFragments = Vec<(usize, Bytes)>;
/// The subtrees the column threads computed for a stripe's good fragments: column, where the
/// fragment's bytes start, subtree.
type FragmentSubtrees = Vec<(usize, *const u8, Subtree)>;
/// A stripe's bad fragments: column and fault.
type Faults = Vec<(usize, FragmentFault)>;

/// The good fragments of a stripe, the bad ones' columns and faults, and the good ones'
/// subtrees.
fn split_faults(fragments: Vec<(usize, Fragment)>) -> (GoodFragments, Faults, FragmentSubtrees) {
    let mut good = Vec::with_capacity(fragments.len());
    let mut bad = Vec::new();
    let mut subtrees = Vec::new();
    for (column, fragment) in fragments {
        match fragment {
            Ok(Checked { bytes, subtree }) => {
                if let Some(subtree) = subtree {
                    subtrees.push((column, bytes.as_ptr(), subtree));
                }
                good.push((column, bytes));
            }
            Err(fault) => bad.push((column, fault)),
        }
    }
    (good, bad, subtrees)
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

    /// The span's bytes out of its columns' whole fragments (in column order), without
    /// copying: the part of each fragment inside `within`, with its column.
    fn slice(&self, code: &Code, fragments: Vec<Bytes>) -> Vec<(usize, Bytes)> {
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
                (from < to).then(|| (self.columns.start + i, fragment.slice(from..to)))
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
    /// The store clock's time line for blocking threads, when it has its own (a virtual one):
    /// the standbys' grace is measured on it, and jobs starting at one instant start in blob
    /// order on it (`decode_range`), so a virtual run does not depend on which thread the host
    /// ran first.
    timeline: Option<Arc<dyn spinwise_disk::Timeline>>,
    /// Where the whole object's hash subtrees lie, when the read computes its BLAKE3
    /// (`crate::subtree_hash`).
    subtrees: Option<SubtreePlan>,
}

impl<C: Catalog> Store<C> {
    /// Starts reading `range` (object bytes) of the migrated object `record` in `blob` at
    /// `offset`, as a scheduler request of `kind` (a client read of either urgency). With
    /// `hash_whole` (a whole-object read to be checked against its BLAKE3) the job hashes the
    /// object in subtrees when its placement allows ([`MigratedReader::hashes_whole`]).
    pub(crate) async fn read_migrated(
        &self,
        record: &ObjectRecord,
        (blob, offset): (u64, u64),
        range: Range<u64>,
        kind: Kind,
        hash_whole: bool,
    ) -> StoreResult<MigratedReader> {
        let blob = self.catalog().blob(blob).await?.ok_or_else(|| {
            StoreError::Driver(format!(
                "blob {blob} of `{}` is not in the catalog",
                record.key
            ))
        })?;
        let rack = self.rack_io();
        let blob_range = offset + range.start..offset + range.end;
        let subtrees = hash_whole
            .then(|| {
                let code = &rack.code;
                SubtreePlan::for_read(
                    blob_range.clone(),
                    code.fragment_bytes(),
                    code.data_columns(),
                )
            })
            .flatten();
        let hashes_whole = subtrees.is_some();
        let context = ReadContext {
            key: record.key.clone(),
            range: blob_range,
            code: rack.code.clone(),
            disks: rack.disks.clone(),
            heal: self.heal_hook(),
            batch_stripes: column_batch_stripes(&rack.code, self.config().read_batch_bytes),
            read_columns: self.config().read_columns,
            reads: rack.disk_reads.clone(),
            timeline: self.clock().timeline(),
            blob,
            subtrees,
        };
        let (sender, chunks) = mpsc::channel(READ_QUEUE_MESSAGES);
        let clock = self.clock().clone();
        let submitted_us = clock.now_us();
        let job = Job::new(
            context.blob.group,
            range.end - range.start,
            kind,
            move |group: &GroupDisks| decode_range(group, &context, sender),
        )
        .for_purpose(Purpose::Read);
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
            ready: std::collections::VecDeque::new(),
            job: Some(job),
            clock,
            submitted_us,
            first_byte_us: None,
            timing: None,
            repairs: RepairReport::default(),
            columns: Vec::new(),
            hashes_whole,
            content_hash: None,
        })
    }
}
