//! A blob's stripe stacks on its disks: writing all k + r of them at once from one encoder, and
//! the fetch function the decoder reads fragments through. Blocking IO: call from an IO thread
//! (the driver runs a job's work on one), only while the scheduler holds the group active.
//!
//! Invariants:
//! - Memory is bounded whatever the blob size: the encoder holds one stripe, and each column's
//!   writer queue holds at most [`WRITER_QUEUE_FRAGMENTS`] framed fragments.
//! - A write either leaves every stack durable (each `Disk::write_file` is atomic and durable)
//!   or reports which columns failed after removing the stacks it did write, so a failed
//!   migration or rebuild leaves no stack behind that the catalog does not know about — and if
//!   the process dies midway, the catalog's `Writing` blob names what to clean up.
//! - Cleanup removes only files the operation wrote: a stack is created new
//!   (`Overwrite::Refuse`, the disk's create-new link), so a file already there under the name
//!   fails that column and is never removed by the write's cleanup; cleaning up a `Writing`
//!   blob later ([`remove_own_stacks`]) removes a file only when its header names that blob,
//!   column, size and content hash.
//! - A fragment reaches the decoder only from the stack file of the right blob and column: the
//!   header of each stack is checked before its first fragment is used.
//! - A rebuilt or repaired stack ([`write_rebuilt_stack`]) replaces its file whole (atomic
//!   write) from k good columns, or reports why not, typed ([`RepairFailure`]).

use crate::error::RepairFailure;
use spinwise_catalog::{BlobId, BlobRecord};
use spinwise_disk::{Disk, DiskError, Overwrite};
use spinwise_ec::{
    BlobEncoder, Code, EncodeError, FetchError, HEADER_BYTES, StackHeader, StackRebuilder,
};
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Framed fragments queued per column writer: enough to keep every disk streaming while the
/// encoder works on the next stripe, small enough that 18 columns × 4 × 128 KiB stays ~9 MiB.
pub const WRITER_QUEUE_FRAGMENTS: usize = 4;

/// The stack file of `blob`'s `column` (same name on whichever disk holds it).
pub fn stack_name(blob: BlobId, column: usize) -> String {
    format!("blob-{blob:016x}-c{column:03}.stack")
}

/// The blob id in a stack file's name: `blob-<16 hex>-c<3 digits>.stack`, or a disk's temporary
/// file for one (`.tmp-<sequence>-` before it; docs/disks.md).
pub fn stack_blob_id(name: &str) -> Option<(BlobId, bool)> {
    stack_identity(name).map(|(blob, _, temporary)| (blob, temporary))
}

/// The blob id, column and whether it is a temporary file, from a stack file's name (the format
/// of [`stack_blob_id`]).
pub fn stack_identity(name: &str) -> Option<(BlobId, u16, bool)> {
    let (name, temporary) = match name.strip_prefix(".tmp-") {
        Some(rest) => (rest.split_once('-')?.1, true),
        None => (name, false),
    };
    let rest = name.strip_prefix("blob-")?.strip_suffix(".stack")?;
    let (hex, column) = rest.split_once("-c")?;
    let well_formed =
        hex.len() == 16 && column.len() == 3 && column.bytes().all(|byte| byte.is_ascii_digit());
    if !well_formed {
        return None;
    }
    let blob = BlobId::from_str_radix(hex, 16).ok()?;
    Some((blob, column.parse().ok()?, temporary))
}

#[derive(Debug, thiserror::Error)]
pub enum StackWriteError {
    #[error("encoding the blob failed: {0}")]
    Encode(#[from] EncodeError),
    #[error("writing stripe stacks failed on {} column(s): {}", .failures.len(), describe(.failures))]
    Columns { failures: Vec<(usize, DiskError)> },
}

fn describe(failures: &[(usize, DiskError)]) -> String {
    let parts: Vec<String> = failures
        .iter()
        .map(|(column, error)| format!("column {column}: {error}"))
        .collect();
    parts.join("; ")
}

/// What the encoder thread sends a column writer.
enum Piece {
    Bytes(Vec<u8>),
    End,
}

/// An `io::Read` over a column's queue. The queue closing without [`Piece::End`] is an error,
/// so a writer whose encoder failed never commits a truncated stack.
struct QueueReader {
    queue: Receiver<Piece>,
    current: Vec<u8>,
    position: usize,
    ended: bool,
}

impl Read for QueueReader {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        while self.position == self.current.len() {
            if self.ended {
                return Ok(0);
            }
            match self.queue.recv() {
                Ok(Piece::Bytes(bytes)) => {
                    self.current = bytes;
                    self.position = 0;
                }
                Ok(Piece::End) => self.ended = true,
                Err(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "the encoder stopped before the stack was complete",
                    ));
                }
            }
        }
        let count = buffer.len().min(self.current.len() - self.position);
        buffer[..count].copy_from_slice(&self.current[self.position..][..count]);
        self.position += count;
        Ok(count)
    }
}

/// Encodes `reader` (a blob of `blob_bytes` bytes whose BLAKE3 is `content_hash`) and writes
/// column `c`'s stack to `disks[c]`, all columns concurrently.
pub fn write_stacks(
    code: &Code,
    blob: BlobId,
    blob_bytes: u64,
    content_hash: [u8; 32],
    reader: impl Read,
    disks: &[Arc<dyn Disk>],
) -> Result<(), StackWriteError> {
    assert_eq!(disks.len(), code.columns(), "one disk per column");
    let mut encoder = BlobEncoder::new(code, blob, blob_bytes, content_hash, reader);
    let stack_bytes = encoder.stack_file_bytes();
    let (senders, receivers): (Vec<SyncSender<Piece>>, Vec<Receiver<Piece>>) = (0..disks.len())
        .map(|_| sync_channel(WRITER_QUEUE_FRAGMENTS))
        .unzip();
    let (encoded, written) = std::thread::scope(|scope| {
        let writers: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(column, queue)| {
                let disk = &disks[column];
                scope.spawn(move || {
                    let mut source = QueueReader {
                        queue,
                        current: Vec::new(),
                        position: 0,
                        ended: false,
                    };
                    let name = stack_name(blob, column);
                    disk.write_file(&name, stack_bytes, &mut source, Overwrite::Refuse)
                })
            })
            .collect();
        let encoded = feed_writers(&mut encoder, &senders, code);
        drop(senders);
        let written: Vec<Result<(), DiskError>> = writers
            .into_iter()
            .map(|writer| writer.join().expect("a stack writer panicked"))
            .collect();
        (encoded, written)
    });
    let failures: Vec<(usize, DiskError)> = written
        .into_iter()
        .enumerate()
        .filter_map(|(column, result)| result.err().map(|error| (column, error)))
        .collect();
    if encoded.is_err() || !failures.is_empty() {
        // Only the columns this call wrote: a column that failed may have failed because a
        // file of that name was already there (another blob's, under a reused id), not ours.
        for (column, disk) in disks.iter().enumerate() {
            let written = !failures.iter().any(|(failed, _)| *failed == column);
            if written {
                let _ = disk.remove_file(&stack_name(blob, column));
            }
        }
    }
    encoded?;
    if failures.is_empty() {
        Ok(())
    } else {
        Err(StackWriteError::Columns { failures })
    }
}

/// Sends each column its header, then every framed fragment, then the end marker. A column
/// whose writer has gone (it failed) is skipped; the others still get their whole stack so the
/// failure report names only the columns that really failed.
fn feed_writers<R: Read>(
    encoder: &mut BlobEncoder<'_, R>,
    senders: &[SyncSender<Piece>],
    code: &Code,
) -> Result<(), EncodeError> {
    for (column, sender) in senders.iter().enumerate() {
        let _ = sender.send(Piece::Bytes(encoder.header(column).encode().to_vec()));
    }
    while let Some(stripe) = encoder.next_stripe()? {
        for (column, sender) in senders.iter().enumerate() {
            let mut framed = Vec::with_capacity(code.framed_fragment_bytes());
            let (fragment, crc) = stripe.framed(column);
            framed.extend_from_slice(fragment);
            framed.extend_from_slice(&crc);
            let _ = sender.send(Piece::Bytes(framed));
        }
    }
    for sender in senders {
        let _ = sender.send(Piece::End);
    }
    Ok(())
}

/// Removes whatever stacks of `blob` these disks hold (best effort: a disk that cannot answer
/// keeps its orphan until the catalog's `Writing` record gets it cleaned). For a committed
/// blob the catalog records (its stacks were created new by its own write, so the names are
/// its own); a `Writing` blob's cleanup uses [`remove_own_stacks`].
pub fn remove_stacks(blob: BlobId, disks: &[Arc<dyn Disk>]) {
    for (column, disk) in disks.iter().enumerate() {
        let _ = disk.remove_file(&stack_name(blob, column));
    }
}

/// What [`remove_own_stacks`] did per column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackRemoval {
    /// Columns whose stack was the blob's and is gone now.
    pub removed: Vec<usize>,
    /// Columns whose file is not the blob's (or whose header could not be read), with why:
    /// left in place.
    pub kept: Vec<(usize, String)>,
}

/// Removes the stacks of `blob` (whose columns `disks` hold, coded with `code`, of
/// `blob_bytes` bytes hashing to `content_hash`) that are its own: a file is removed only when
/// its header is exactly the one this blob's write gives that column. A file under the same
/// name that another blob wrote (a blob id reused after a lost catalog, before ids were kept
/// unique) is kept. Missing files are fine (never written). Blocking IO: call in a job.
pub fn remove_own_stacks(
    code: &Code,
    blob: BlobId,
    blob_bytes: u64,
    content_hash: [u8; 32],
    disks: &[Arc<dyn Disk>],
) -> StackRemoval {
    let mut removal = StackRemoval::default();
    for (column, disk) in disks.iter().enumerate().take(code.columns()) {
        let name = stack_name(blob, column);
        let expected = StackHeader::new(code, column, blob, blob_bytes, content_hash);
        let mut bytes = [0u8; HEADER_BYTES];
        let header = match disk.read_at(&name, 0, &mut bytes) {
            Err(DiskError::NotFound { .. }) => continue,
            Err(error) => Err(error.to_string()),
            Ok(read) => StackHeader::decode(&bytes[..read]).map_err(|error| error.to_string()),
        };
        match header {
            Ok(found) if found == expected => match disk.remove_file(&name) {
                Ok(()) | Err(DiskError::NotFound { .. }) => removal.removed.push(column),
                Err(error) => removal.kept.push((column, error.to_string())),
            },
            Ok(found) => removal.kept.push((
                column,
                format!(
                    "disk {}: {name} is another blob's (blob {}, {} bytes, column {}): kept",
                    disk.index(),
                    found.blob_id,
                    found.blob_bytes,
                    found.column
                ),
            )),
            Err(reason) => removal.kept.push((
                column,
                format!("disk {}: {name}: {reason}: kept", disk.index()),
            )),
        }
    }
    removal
}

/// A fetch function for `spinwise_ec::StripeDecoder` over `blob`'s stacks on `disks` (column
/// order). Each column's header is checked on first use: a stack of another blob or column, or
/// with a damaged header, is a fetch failure, which the decoder treats like a lost fragment.
pub fn fetch_from_disks<'a>(
    code: &'a Code,
    blob: BlobId,
    disks: &'a [Arc<dyn Disk>],
) -> impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError> + 'a {
    let mut checked = vec![false; disks.len()];
    move |column, stripe, buffer| {
        let disk = disks
            .get(column)
            .ok_or_else(|| FetchError(format!("no disk for column {column}")))?;
        let name = stack_name(blob, column);
        if !checked[column] {
            check_header(disk.as_ref(), &name, blob, column)?;
            checked[column] = true;
        }
        read_once(disk.as_ref(), &name, code.fragment_offset(stripe), buffer)
    }
}

fn check_header(
    disk: &dyn Disk,
    name: &str,
    blob: BlobId,
    column: usize,
) -> Result<(), FetchError> {
    let mut bytes = [0u8; HEADER_BYTES];
    let read = read_once(disk, name, 0, &mut bytes)?;
    let header = StackHeader::decode(&bytes[..read])
        .map_err(|error| FetchError(format!("disk {}: {name}: {error}", disk.index())))?;
    if header.blob_id != blob || header.column as usize != column {
        return Err(FetchError(format!(
            "disk {}: {name} holds blob {} column {}",
            disk.index(),
            header.blob_id,
            header.column
        )));
    }
    Ok(())
}

/// One `read_at`: by the disk contract a read is short only at end of file, so a short fragment
/// is what the disk has, and the decoder treats it as damaged. A disk that lies (short reads
/// before the end) is caught that way instead of being papered over by retrying.
fn read_once(
    disk: &dyn Disk,
    name: &str,
    offset: u64,
    buffer: &mut [u8],
) -> Result<usize, FetchError> {
    disk.read_at(name, offset, buffer)
        .map_err(|error| FetchError(error.to_string()))
}

/// The blob's own code (normally the store's; a record's is authoritative).
pub(crate) fn blob_code(blob: &BlobRecord) -> Result<Code, RepairFailure> {
    Code::new(
        blob.k as usize,
        blob.r as usize,
        blob.fragment_bytes as usize,
    )
    .map_err(|error| RepairFailure::Code {
        blob: blob.id,
        k: blob.k,
        r: blob.r,
        fragment_bytes: blob.fragment_bytes,
        message: error.to_string(),
    })
}

/// The disks holding the blob's columns, in column order.
pub(crate) fn column_disks(all: &[Arc<dyn Disk>], blob: &BlobRecord) -> Vec<Arc<dyn Disk>> {
    blob.disks
        .iter()
        .map(|&disk| all[disk as usize].clone())
        .collect()
}

/// Regenerates `blob`'s column `column` from the other columns into `target` (atomic write,
/// replacing an orphan or damaged file). Runs inside a job while the group is up.
pub(crate) fn write_rebuilt_stack(
    blob: &BlobRecord,
    column: u32,
    sources: &[Arc<dyn Disk>],
    target: &dyn Disk,
) -> Result<u64, RepairFailure> {
    let code = blob_code(blob)?;
    let header = StackHeader::new(
        &code,
        column as usize,
        blob.id,
        blob.size_bytes,
        blob.content_hash,
    );
    let stack_bytes = header.stack_file_bytes();
    let mut rebuilder =
        StackRebuilder::new(&code, header, fetch_from_disks(&code, blob.id, sources));
    let name = stack_name(blob.id, column as usize);
    match target.write_file(&name, stack_bytes, &mut rebuilder, Overwrite::Replace) {
        Ok(()) => Ok(stack_bytes),
        Err(error) => Err(match rebuilder.take_failure() {
            Some(decode) => RepairFailure::TooFewFragments {
                blob: blob.id,
                column,
                message: decode.to_string(),
            },
            None => RepairFailure::Write {
                blob: blob.id,
                column,
                disk: target.index(),
                message: error.to_string(),
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{stack_blob_id, stack_identity, stack_name};

    #[test]
    fn stack_names_and_their_temporary_files_give_their_blob_id_and_nothing_else_does() {
        assert_eq!(stack_blob_id(&stack_name(7, 2)), Some((7, false)));
        assert_eq!(stack_identity(&stack_name(7, 254)), Some((7, 254, false)));
        assert_eq!(
            stack_blob_id(&stack_name(u64::MAX, 254)),
            Some((u64::MAX, false))
        );
        let temporary = format!(".tmp-12-{}", stack_name(0x2a, 0));
        assert_eq!(stack_blob_id(&temporary), Some((0x2a, true)));
        for other in [
            "blob-1-c000.stack",
            "blob-000000000000000g-c000.stack",
            "blob-0000000000000001-c00.stack",
            "blob-0000000000000001-c000.stak",
            ".failed",
            "seg-0000000000000001.log",
            ".tmp-blob-0000000000000001-c000.stack",
        ] {
            assert_eq!(stack_blob_id(other), None, "{other}");
        }
    }
}
