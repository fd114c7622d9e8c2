//! Part files of open multipart uploads: `DATA/s3-multipart/<upload id>/<part>-<generation>`.
//! Every path component comes from a parsed 128-bit upload id or from integers, never from a
//! request's text, so no key or id can name a file elsewhere.
//!
//! Invariants:
//! - a part file is complete and fsynced (file and directory) before its row names it, and never
//!   written again: a re-upload writes a new generation, so a reader of a named file sees the
//!   bytes its row describes;
//! - a completing upload streams its part files in order and checks each file's length against
//!   its row, so a damaged file fails the completion instead of storing a different object.

use crate::body::{BodyStream, Digests, Outcome, Upload};
use crate::service::ChunkStream;
use bytes::BytesMut;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{RwLock, mpsc};

/// The directory of part files inside the data directory.
pub const MULTIPART_DIR: &str = "s3-multipart";
/// Upload-lock stripes: completions of different uploads rarely share one.
const UPLOAD_LOCK_STRIPES: usize = 64;
/// The unit of part-file reads and writes.
const FILE_CHUNK_BYTES: usize = 1 << 20;
/// Chunks a completion reads ahead of the store.
const READ_AHEAD_CHUNKS: usize = 2;

/// An upload id: 128 random bits, shown as 32 lower-case hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadId([u8; 16]);

impl UploadId {
    /// A fresh id from the OS's random source.
    pub fn random() -> io::Result<UploadId> {
        let mut bits = [0; 16];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bits)?;
        Ok(UploadId(bits))
    }

    /// The id `text` names, if it is 32 hex digits.
    pub fn parse(text: &str) -> Option<UploadId> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut bits = [0; 16];
        for (index, byte) in bits.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * index..2 * index + 2], 16).ok()?;
        }
        Some(UploadId(bits))
    }

    pub fn hex(&self) -> String {
        crate::service::hex(&self.0)
    }
}

/// A fresh part-file generation from the OS's random source.
pub fn random_generation() -> io::Result<u64> {
    let mut bits = [0; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bits)?;
    Ok(u64::from_le_bytes(bits) >> 1) // fits SQLite's signed INTEGER
}

/// Where part files live, and the per-upload locks: part uploads hold their upload's lock
/// shared, Complete and Abort exclusively, so a part never lands in an upload being finished.
pub struct Multipart {
    data_dir: PathBuf,
    root: PathBuf,
    upload_locks: Vec<RwLock<()>>,
}

impl std::fmt::Debug for Multipart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Multipart")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Multipart {
    pub fn new(data_dir: &Path) -> Multipart {
        Multipart {
            data_dir: data_dir.to_path_buf(),
            root: data_dir.join(MULTIPART_DIR),
            upload_locks: (0..UPLOAD_LOCK_STRIPES).map(|_| RwLock::new(())).collect(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn upload_dir(&self, id: &UploadId) -> PathBuf {
        self.root.join(id.hex())
    }

    pub fn part_path(&self, id: &UploadId, part_number: u32, generation: u64) -> PathBuf {
        self.upload_dir(id)
            .join(part_file_name(part_number, generation))
    }

    pub fn lock(&self, id: &UploadId) -> &RwLock<()> {
        &self.upload_locks[usize::from(id.0[0]) % UPLOAD_LOCK_STRIPES]
    }

    /// Creates the upload's directory (and the root) durably if missing.
    pub async fn ensure_upload_dir(&self, id: &UploadId) -> io::Result<PathBuf> {
        let dir = self.upload_dir(id);
        if tokio::fs::try_exists(&dir).await? {
            return Ok(dir);
        }
        let root_existed = tokio::fs::try_exists(&self.root).await?;
        tokio::fs::create_dir_all(&dir).await?;
        sync_dir(&self.root).await?;
        if !root_existed {
            sync_dir(&self.data_dir).await?;
        }
        Ok(dir)
    }

    /// Removes an upload's directory; a missing one is fine.
    pub async fn remove_upload_dir(&self, id: &UploadId) {
        match tokio::fs::remove_dir_all(self.upload_dir(id)).await {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => tracing::warn!(%error, upload = id.hex(), "removing part files"),
        }
    }
}

pub fn part_file_name(part_number: u32, generation: u64) -> String {
    format!("{part_number}-{generation}")
}

/// The (part number, generation) a part file's name encodes.
pub fn parse_part_file_name(name: &str) -> Option<(u32, u64)> {
    let (part, generation) = name.split_once('-')?;
    let parsed = (part.parse().ok()?, generation.parse().ok()?);
    (part_file_name(parsed.0, parsed.1) == name).then_some(parsed)
}

pub async fn sync_dir(dir: &Path) -> io::Result<()> {
    tokio::fs::File::open(dir).await?.sync_all().await
}

/// Streams `upload` into a new file at `path`, fsynced. The upload reports its digests to the
/// returned gate side, which this function answers itself (part rows are written after the
/// file, not before the end of the body as for a PUT). Removes the file on failure.
pub async fn write_part_file(
    path: &Path,
    mut upload: Upload,
    outcome: Outcome,
) -> Result<Digests, s3s::S3Error> {
    let write = async move {
        let mut file = tokio::fs::File::create(path).await?;
        let mut buffer = Vec::with_capacity(FILE_CHUNK_BYTES);
        loop {
            let read = upload.read_buf(&mut buffer).await?;
            if read == 0 || buffer.len() >= FILE_CHUNK_BYTES {
                file.write_all(&buffer).await?;
                buffer.clear();
            }
            if read == 0 {
                break;
            }
        }
        file.flush().await?;
        file.sync_all().await
    };
    let written = write.await;
    let result = match (written, outcome.digests()) {
        (Ok(()), Some(digests)) => Ok(digests),
        (Ok(()), None) => Err(crate::service::internal(
            "the part ended without its digests",
        )),
        (Err(error), _) => Err(outcome
            .refusal()
            .unwrap_or_else(|| crate::service::internal(error))),
    };
    if result.is_err() {
        let _ = tokio::fs::remove_file(path).await;
    }
    result
}

/// The concatenation of `files` (path, expected length) as a body stream, read ahead by a task;
/// a file of another length ends the stream with an error.
pub fn parts_stream(files: Vec<(PathBuf, u64)>) -> BodyStream {
    let (sender, receiver) = mpsc::channel(READ_AHEAD_CHUNKS);
    tokio::spawn(async move {
        if let Err(error) = send_parts(&files, &sender).await {
            tracing::error!(%error, "reading part files to complete a multipart upload");
            let _ = sender.send(Err(error)).await;
        }
    });
    Box::pin(ChunkStream(receiver))
}

async fn send_parts(
    files: &[(PathBuf, u64)],
    sender: &mpsc::Sender<Result<bytes::Bytes, io::Error>>,
) -> io::Result<()> {
    for (path, size_bytes) in files {
        let mut file = tokio::fs::File::open(path).await?;
        let mut sent_bytes = 0u64;
        loop {
            let mut buffer = BytesMut::with_capacity(FILE_CHUNK_BYTES);
            let read = file.read_buf(&mut buffer).await?;
            if read == 0 {
                break;
            }
            sent_bytes += read as u64;
            if sent_bytes > *size_bytes {
                break;
            }
            if sender.send(Ok(buffer.freeze())).await.is_err() {
                return Ok(()); // the completion was abandoned
            }
        }
        if sent_bytes != *size_bytes {
            return Err(io::Error::other(format!(
                "part file {} holds {sent_bytes}+ bytes, its row says {size_bytes}",
                path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_ids_parse_only_32_hex_digits_and_round_trip() {
        let id = UploadId::random().unwrap();
        assert_eq!(UploadId::parse(&id.hex()), Some(id));
        assert_eq!(id.hex().len(), 32);
        assert_ne!(UploadId::random().unwrap(), id);
        for bad in [
            "",
            "../../etc",
            &"a".repeat(31),
            &"g".repeat(32),
            &"a".repeat(33),
        ] {
            assert_eq!(UploadId::parse(bad), None, "{bad}");
        }
        assert_eq!(
            UploadId::parse(&"AB".repeat(16)).unwrap().hex(),
            "ab".repeat(16)
        );
    }

    #[test]
    fn part_file_names_parse_only_in_their_canonical_form() {
        assert_eq!(parse_part_file_name("7-123"), Some((7, 123)));
        assert_eq!(
            parse_part_file_name(&part_file_name(10_000, 9)),
            Some((10_000, 9))
        );
        for bad in ["7", "7-", "-1", "07-1", "7-01", "a-1", "7-1.tmp", "7-1-2"] {
            assert_eq!(parse_part_file_name(bad), None, "{bad}");
        }
    }
}
