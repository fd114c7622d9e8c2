//! Reads of migrated objects (issue 4, read path): the object's bytes are a range of its blob;
//! one driver job on the blob's group runs the decoder over the group's disks once the
//! scheduler has the group up, fetching only the fragments that cover the range, checking each
//! fragment's crc32c and reconstructing from any k good ones. The decoded bytes stream to the
//! caller through a bounded channel. Before the job returns it hands its repair report to
//! [`crate::heal`], which queues in-place repairs of the damaged stacks on the same spin-up and
//! notes disks that answered `Failed`.
//!
//! Invariants:
//! - memory is bounded whatever the object size: [`READ_CHUNK_BYTES`] × [`READ_QUEUE_CHUNKS`]
//!   queued, plus the decoder's one stripe;
//! - a reader dropped early ends the job at its next chunk (the channel is closed, the sink
//!   fails, the decoder stops), so an abandoned GET never holds its group;
//! - bytes reach the caller only after their crc (or a reconstruction from crc-checked
//!   fragments) vouched for them; a stripe with fewer than k good fragments is a typed error
//!   naming every bad fragment and its disk.

use crate::clock::{Clock, SystemClock};
use crate::driver::{Done, GroupDisks, Job, JobHandle};
use crate::error::{StoreError, StoreResult};
use crate::stacks::fetch_from_disks;
use crate::store::Store;
use bytes::Bytes;
use spinwise_catalog::{BlobRecord, Catalog, ObjectRecord};
use spinwise_disk::Disk;
use spinwise_ec::{Code, DecodeError, RepairReport, StripeDecoder};
use spinwise_sched::scheduler::Kind;
use std::io::{self, Write};
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Bytes per chunk handed to the caller.
pub const READ_CHUNK_BYTES: usize = 1 << 20;
/// Chunks queued between the decoder and a slow caller: 8 MiB in flight per GET.
pub const READ_QUEUE_CHUNKS: usize = 8;

/// Where a GET's time went, in µs: waiting for the scheduler (of which spinning the group up),
/// to the first byte, and the whole service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadTiming {
    pub queued_us: u64,
    pub spin_up_wait_us: u64,
    pub time_to_first_byte_us: u64,
    pub service_us: u64,
}

/// The decoder's output: verified byte chunks, or the error that stopped it.
type Piece = Result<Bytes, StoreError>;

/// An `io::Write` that cuts the decoder's output into chunks for the channel.
struct ChunkSink {
    sender: mpsc::Sender<Piece>,
    buffer: Vec<u8>,
}

impl ChunkSink {
    fn send(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(READ_CHUNK_BYTES));
        self.sender
            .blocking_send(Ok(Bytes::from(chunk)))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the reader went away"))
    }
}

impl Write for ChunkSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = READ_CHUNK_BYTES - self.buffer.len();
        let taken = room.min(bytes.len());
        self.buffer.extend_from_slice(&bytes[..taken]);
        if self.buffer.len() == READ_CHUNK_BYTES {
            self.send()?;
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

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

/// The job's work: decode `range` of the blob into the channel.
fn decode_range(
    group: &GroupDisks,
    context: &ReadContext,
    sender: mpsc::Sender<Piece>,
) -> RepairReport {
    let columns: Vec<Arc<dyn Disk>> = context
        .blob
        .disks
        .iter()
        .map(|disk| {
            let found = group.disks().iter().find(|d| d.index() == *disk);
            found
                .cloned()
                .unwrap_or_else(|| context.disks[*disk as usize].clone())
        })
        .collect();
    let mut decoder = StripeDecoder::new(&context.code, context.blob.size_bytes);
    let fetch = fetch_from_disks(&context.code, context.blob.id, &columns);
    let mut sink = ChunkSink {
        sender: sender.clone(),
        buffer: Vec::with_capacity(READ_CHUNK_BYTES),
    };
    let decoded = decoder
        .read_range(context.range.clone(), fetch, &mut sink)
        .and_then(|report| sink.flush().map(|()| report).map_err(DecodeError::from));
    let report = match decoded {
        Ok(report) => report,
        Err(DecodeError::Sink(_)) => RepairReport::default(),
        Err(error) => {
            let _ = sender.blocking_send(Err(decode_failure(&context.key, &context.blob, error)));
            RepairReport::default()
        }
    };
    // Still inside the job, so the group is up: queue repairs of damaged stacks (crate::heal).
    context.heal.after_read(&context.blob, &columns, &report);
    report
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
    /// `offset`.
    pub(crate) async fn read_migrated(
        &self,
        record: &ObjectRecord,
        blob: u64,
        offset: u64,
        range: Range<u64>,
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
            Kind::Client,
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
