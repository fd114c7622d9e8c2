//! [`Upload`]: a request body as the `AsyncRead` the store's PUT (or a part file's writer)
//! consumes, hashing as it streams — the MD5 of the ETag and BLAKE3 when [`Wanted`], and the
//! `x-amz-checksum-*` algorithms the client sent — and enforcing the body limit.
//!
//! Hashing runs inline for the first [`INLINE_HASH_BYTES`] of a body; a longer body moves its
//! hash state to a blocking thread fed through a bounded channel, so MD5 (~720 MB/s, the slowest
//! step of a PUT) runs beside the store's own writer and hasher instead of before them on the
//! task that feeds the store.
//!
//! Invariants:
//! - the consumer sees end-of-body only after every digest the client sent (Content-MD5,
//!   checksum headers, checksum trailers) matched: a mismatch, a body over the limit or a broken
//!   stream makes the read fail instead, so the store's PUT fails before its staging trailer and
//!   nothing becomes visible. The [`Outcome`] holds the digests (or the refusal) from then on;
//! - every chunk is hashed exactly once, in order, whether inline or on the thread;
//! - memory is the chunk being handed over plus at most [`HASH_QUEUE_CHUNKS`] waiting to be
//!   hashed.

use bytes::Bytes;
use futures::Stream;
use s3s::checksum::ChecksumHasher;
use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Md5, Sha1, Sha256};
use s3s::dto::Checksum;
use s3s::{S3Error, S3ErrorCode, TrailingHeaders};
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

/// Bodies up to this size hash inline (a thread hand-off would cost more than it saves).
pub const INLINE_HASH_BYTES: u64 = 1 << 20;
/// Chunks that may wait for the hashing thread before the body stops being read.
pub const HASH_QUEUE_CHUNKS: usize = 16;

/// A body stream of any origin (a request body, or a stored object being copied).
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, io::Error>> + Send + Sync>>;

/// What the client promised about the body.
#[derive(Default)]
pub struct Expected {
    /// The decoded `Content-MD5` header.
    pub content_md5: Option<[u8; 16]>,
    /// `x-amz-checksum-*` values sent as headers (base64).
    pub checksums: Checksum,
    /// Algorithms whose value arrives as a trailer (names as in `x-amz-trailer`, lower-case).
    pub trailer_names: Vec<String>,
    /// Where s3s puts the verified trailers once the body has been read.
    pub trailers: Option<TrailingHeaders>,
}

/// The digests a consumer needs besides the client's checksums.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    /// For the ETag (computed anyway when the client sent Content-MD5).
    pub md5: bool,
    /// For a part file's row (a store PUT gets BLAKE3 from the store instead).
    pub blake3: bool,
}

/// What the body turned out to be.
#[derive(Clone, Debug)]
pub struct Digests {
    /// Present when wanted or when the client sent Content-MD5.
    pub md5: Option<[u8; 16]>,
    /// Present when wanted.
    pub blake3: Option<[u8; 32]>,
    pub size_bytes: u64,
    /// The checksums the client asked for, as computed (base64).
    pub checksums: Checksum,
}

/// Where an [`Upload`] leaves its result for whoever drives the consumer: the digests once the
/// body ended well, or the refusal that failed the read. A coordinator may also record its own
/// later refusal here; the first refusal recorded is kept.
#[derive(Clone, Default)]
pub struct Outcome(Arc<Mutex<Option<Result<Digests, S3Error>>>>);

impl Outcome {
    fn set(&self, result: Result<Digests, S3Error>) {
        let mut slot = self.0.lock().expect("the outcome lock is never poisoned");
        if !matches!(*slot, Some(Err(_))) {
            *slot = Some(result);
        }
    }

    /// Records a refusal decided after the body ended (a failed metadata write).
    pub fn refuse(&self, error: S3Error) {
        self.set(Err(error));
    }

    /// The digests, if the body ended well and nothing was refused since.
    pub fn digests(&self) -> Option<Digests> {
        match &*self.0.lock().expect("the outcome lock is never poisoned") {
            Some(Ok(digests)) => Some(digests.clone()),
            _ => None,
        }
    }

    /// The refusal, if there was one.
    pub fn refusal(&self) -> Option<S3Error> {
        match self
            .0
            .lock()
            .expect("the outcome lock is never poisoned")
            .take()
        {
            Some(Err(error)) => Some(error),
            _ => None,
        }
    }
}

/// The running hash states.
struct Hashers {
    md5: Option<Md5>,
    blake3: Option<blake3::Hasher>,
    checksums: ChecksumHasher,
}

impl Hashers {
    fn update(&mut self, chunk: &[u8]) {
        if let Some(md5) = &mut self.md5 {
            md5.update(chunk);
        }
        if let Some(blake3) = &mut self.blake3 {
            blake3.update(chunk);
        }
        self.checksums.update(chunk);
    }
}

enum Hashing {
    /// Boxed: the states are kilobytes (BLAKE3's chunk stack), moved once to the thread.
    Inline(Box<Hashers>),
    /// The states moved to a blocking thread; they come back through `done` when `chunks`
    /// closes.
    Thread {
        chunks: PollSender<Bytes>,
        done: oneshot::Receiver<Box<Hashers>>,
    },
    Finished,
}

impl Hashing {
    /// Moves inline states to a blocking thread of the runtime.
    fn offload(&mut self) {
        let Hashing::Inline(_) = self else { return };
        let Hashing::Inline(mut hashers) = std::mem::replace(self, Hashing::Finished) else {
            unreachable!("matched Inline just above")
        };
        let (sender, mut receiver) = mpsc::channel::<Bytes>(HASH_QUEUE_CHUNKS);
        let (finished, done) = oneshot::channel();
        tokio::task::spawn_blocking(move || {
            while let Some(chunk) = receiver.blocking_recv() {
                hashers.update(&chunk);
            }
            let _ = finished.send(hashers);
        });
        *self = Hashing::Thread {
            chunks: PollSender::new(sender),
            done,
        };
    }
}

enum State {
    Streaming,
    /// The body ended; waiting for the hashing thread to return the states.
    Finishing(oneshot::Receiver<Box<Hashers>>),
    Done,
    Failed,
}

pub struct Upload {
    stream: BodyStream,
    pending: Bytes,
    hashing: Hashing,
    expected: Expected,
    size_bytes: u64,
    limit_bytes: u64,
    outcome: Outcome,
    state: State,
}

const TRAILER_ALGORITHMS: [&str; 5] = [
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
];

impl Upload {
    /// The upload of `stream` and the [`Outcome`] it fills at its end.
    pub fn new(
        stream: BodyStream,
        expected: Expected,
        wanted: Wanted,
        limit_bytes: u64,
    ) -> (Upload, Outcome) {
        let wants = |name: &str, header: &Option<String>| {
            header.is_some() || expected.trailer_names.iter().any(|n| n == name)
        };
        let checksums = ChecksumHasher {
            crc32: wants(TRAILER_ALGORITHMS[0], &expected.checksums.checksum_crc32)
                .then(Crc32::new),
            crc32c: wants(TRAILER_ALGORITHMS[1], &expected.checksums.checksum_crc32c)
                .then(Crc32c::new),
            crc64nvme: wants(
                TRAILER_ALGORITHMS[2],
                &expected.checksums.checksum_crc64nvme,
            )
            .then(Crc64Nvme::new),
            sha1: wants(TRAILER_ALGORITHMS[3], &expected.checksums.checksum_sha1).then(Sha1::new),
            sha256: wants(TRAILER_ALGORITHMS[4], &expected.checksums.checksum_sha256)
                .then(Sha256::new),
        };
        let hashers = Hashers {
            md5: (wanted.md5 || expected.content_md5.is_some()).then(Md5::new),
            blake3: wanted.blake3.then(blake3::Hasher::new),
            checksums,
        };
        let outcome = Outcome::default();
        let upload = Upload {
            stream,
            pending: Bytes::new(),
            hashing: Hashing::Inline(Box::new(hashers)),
            expected,
            size_bytes: 0,
            limit_bytes,
            outcome: outcome.clone(),
            state: State::Streaming,
        };
        (upload, outcome)
    }

    /// Records a refusal and fails the read.
    fn refuse(&mut self, error: S3Error) -> io::Error {
        let message = error.message().unwrap_or("upload refused").to_string();
        self.outcome.set(Err(error));
        self.state = State::Failed;
        io::Error::other(message)
    }

    /// At the end of the body: the digests, or the first promise the body broke.
    fn finish(&mut self, hashers: Box<Hashers>) -> Result<Digests, S3Error> {
        let md5 = hashers.md5.map(Md5::finalize);
        if let Some(expected) = self.expected.content_md5
            && Some(expected) != md5
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BadDigest,
                "the Content-MD5 you specified did not match what was received",
            ));
        }
        let computed = hashers.checksums.finalize();
        let mut promised = self.expected.checksums.clone();
        if let Some(trailers) = self.expected.trailers.as_ref().and_then(|t| t.take()) {
            let value = |name: &str| {
                trailers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            promised.checksum_crc32 = promised.checksum_crc32.or(value(TRAILER_ALGORITHMS[0]));
            promised.checksum_crc32c = promised.checksum_crc32c.or(value(TRAILER_ALGORITHMS[1]));
            promised.checksum_crc64nvme =
                promised.checksum_crc64nvme.or(value(TRAILER_ALGORITHMS[2]));
            promised.checksum_sha1 = promised.checksum_sha1.or(value(TRAILER_ALGORITHMS[3]));
            promised.checksum_sha256 = promised.checksum_sha256.or(value(TRAILER_ALGORITHMS[4]));
        }
        let pairs = [
            ("CRC32", &promised.checksum_crc32, &computed.checksum_crc32),
            (
                "CRC32C",
                &promised.checksum_crc32c,
                &computed.checksum_crc32c,
            ),
            (
                "CRC64NVME",
                &promised.checksum_crc64nvme,
                &computed.checksum_crc64nvme,
            ),
            ("SHA1", &promised.checksum_sha1, &computed.checksum_sha1),
            (
                "SHA256",
                &promised.checksum_sha256,
                &computed.checksum_sha256,
            ),
        ];
        for (name, promised, computed) in pairs {
            if let Some(promised) = promised
                && Some(promised) != computed.as_ref()
            {
                return Err(S3Error::with_message(
                    S3ErrorCode::BadDigest,
                    format!("the {name} you specified did not match the calculated checksum"),
                ));
            }
        }
        Ok(Digests {
            md5,
            blake3: hashers.blake3.map(|hasher| *hasher.finalize().as_bytes()),
            size_bytes: self.size_bytes,
            checksums: computed,
        })
    }

    fn take_chunk(&mut self, buf: &mut ReadBuf<'_>) {
        let count = self.pending.len().min(buf.remaining());
        buf.put_slice(&self.pending.split_to(count));
    }
}

impl Upload {
    /// Hashes `chunk` (inline, or queued on the slot [`Upload::poll_room`] reserved), moving
    /// the hashing to a thread once the body outgrows [`INLINE_HASH_BYTES`].
    fn hash(&mut self, chunk: &Bytes) -> Result<(), S3Error> {
        if let Hashing::Inline(hashers) = &mut self.hashing {
            hashers.update(chunk);
            if self.size_bytes > INLINE_HASH_BYTES {
                self.hashing.offload();
            }
            return Ok(());
        }
        let Hashing::Thread { chunks, .. } = &mut self.hashing else {
            unreachable!("no chunk is hashed after the end of the body")
        };
        chunks
            .send_item(chunk.clone())
            .map_err(|_| internal_refusal("the hashing thread stopped"))
    }

    /// Ready when the next chunk can be hashed without waiting (always, inline).
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S3Error>> {
        match &mut self.hashing {
            Hashing::Thread { chunks, .. } => chunks
                .poll_reserve(cx)
                .map_err(|_| internal_refusal("the hashing thread stopped")),
            _ => Poll::Ready(Ok(())),
        }
    }

    /// The body ended: the hash states, now or once the thread has hashed what it was given.
    fn end_of_body(&mut self) -> Result<(), S3Error> {
        match std::mem::replace(&mut self.hashing, Hashing::Finished) {
            Hashing::Inline(hashers) => {
                let digests = self.finish(hashers)?;
                self.outcome.set(Ok(digests));
                self.state = State::Done;
            }
            Hashing::Thread { mut chunks, done } => {
                chunks.close();
                self.state = State::Finishing(done);
            }
            Hashing::Finished => unreachable!("the body ends once"),
        }
        Ok(())
    }

    /// The next chunk from the client, hashed and counted against the limit; `None` at the end.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, S3Error>> {
        ready!(self.poll_room(cx))?;
        let chunk = match ready!(self.stream.as_mut().poll_next(cx)) {
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => {
                return Poll::Ready(Err(S3Error::with_message(
                    S3ErrorCode::IncompleteBody,
                    format!("reading the request body: {error}"),
                )));
            }
            None => return Poll::Ready(Ok(None)),
        };
        self.size_bytes += chunk.len() as u64;
        if self.size_bytes > self.limit_bytes {
            return Poll::Ready(Err(S3Error::with_message(
                S3ErrorCode::EntityTooLarge,
                format!(
                    "the body exceeds this server's limit of {} bytes",
                    self.limit_bytes
                ),
            )));
        }
        self.hash(&chunk)?;
        Poll::Ready(Ok(Some(chunk)))
    }
}

fn internal_refusal(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, message.to_string())
}

impl AsyncRead for Upload {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Done => return Poll::Ready(Ok(())),
                State::Failed => return Poll::Ready(Err(io::Error::other("upload refused"))),
                State::Finishing(done) => {
                    let Ok(hashers) = ready!(Pin::new(done).poll(cx)) else {
                        let refusal = internal_refusal("the hashing thread stopped");
                        return Poll::Ready(Err(this.refuse(refusal)));
                    };
                    match this.finish(hashers) {
                        Ok(digests) => {
                            this.outcome.set(Ok(digests));
                            this.state = State::Done;
                        }
                        Err(refusal) => return Poll::Ready(Err(this.refuse(refusal))),
                    }
                    continue;
                }
                State::Streaming => {}
            }
            if !this.pending.is_empty() {
                this.take_chunk(buf);
                return Poll::Ready(Ok(()));
            }
            match ready!(this.poll_chunk(cx)) {
                Ok(Some(chunk)) => this.pending = chunk,
                Ok(None) => {
                    if let Err(refusal) = this.end_of_body() {
                        return Poll::Ready(Err(this.refuse(refusal)));
                    }
                }
                Err(refusal) => return Poll::Ready(Err(this.refuse(refusal))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn body(data: &[u8], chunk_bytes: usize) -> BodyStream {
        let chunks: Vec<Result<Bytes, io::Error>> = data
            .chunks(chunk_bytes.max(1))
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect();
        Box::pin(futures::stream::iter(chunks))
    }

    fn pattern(size_bytes: usize) -> Vec<u8> {
        (0..size_bytes as u64)
            .map(|i| (i * 31 + i / 977) as u8)
            .collect()
    }

    fn md5_of(data: &[u8]) -> [u8; 16] {
        let mut md5 = Md5::new();
        md5.update(data);
        md5.finalize()
    }

    async fn read_all(upload: &mut Upload) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        upload.read_to_end(&mut out).await?;
        Ok(out)
    }

    const BOTH: Wanted = Wanted {
        md5: true,
        blake3: true,
    };

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn digests_are_the_same_whether_hashed_inline_or_on_the_thread() {
        // 0 B, inline, exactly at the hand-off, and well past it in odd chunk sizes.
        for size_bytes in [0, 1, INLINE_HASH_BYTES as usize, 5 * (1 << 20) + 7] {
            let data = pattern(size_bytes);
            let (mut upload, outcome) =
                Upload::new(body(&data, 65_537), Expected::default(), BOTH, u64::MAX);
            assert!(read_all(&mut upload).await.unwrap() == data);
            let digests = outcome
                .digests()
                .expect("a body that ended well has digests");
            assert_eq!(digests.size_bytes, size_bytes as u64);
            assert_eq!(digests.md5, Some(md5_of(&data)));
            assert_eq!(digests.blake3, Some(*blake3::hash(&data).as_bytes()));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unwanted_digests_are_not_computed() {
        let data = pattern(3 << 20);
        let (mut upload, outcome) = Upload::new(
            body(&data, 1 << 16),
            Expected::default(),
            Wanted::default(),
            u64::MAX,
        );
        read_all(&mut upload).await.unwrap();
        let digests = outcome.digests().unwrap();
        assert_eq!((digests.md5, digests.blake3), (None, None));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrong_content_md5_fails_the_read_before_its_end_even_when_hashed_on_the_thread() {
        for size_bytes in [10, 4 << 20] {
            let data = pattern(size_bytes);
            let mut wrong = md5_of(&data);
            wrong[0] ^= 1;
            let expected = Expected {
                content_md5: Some(wrong),
                ..Expected::default()
            };
            let (mut upload, outcome) =
                Upload::new(body(&data, 1 << 16), expected, Wanted::default(), u64::MAX);
            assert!(read_all(&mut upload).await.is_err());
            assert!(outcome.digests().is_none());
            let refusal = outcome.refusal().expect("the refusal is recorded");
            assert_eq!(*refusal.code(), S3ErrorCode::BadDigest);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_body_over_the_limit_is_refused_as_entity_too_large() {
        let data = pattern(3 << 20);
        let (mut upload, outcome) =
            Upload::new(body(&data, 1 << 16), Expected::default(), BOTH, 2 << 20);
        assert!(read_all(&mut upload).await.is_err());
        assert_eq!(
            *outcome.refusal().unwrap().code(),
            S3ErrorCode::EntityTooLarge
        );
    }

    #[test]
    fn a_later_refusal_replaces_digests_but_never_an_earlier_refusal() {
        let outcome = Outcome::default();
        outcome.set(Ok(Digests {
            md5: None,
            blake3: None,
            size_bytes: 1,
            checksums: Checksum::default(),
        }));
        outcome.refuse(S3Error::new(S3ErrorCode::InternalError));
        outcome.refuse(S3Error::new(S3ErrorCode::BadDigest));
        assert!(outcome.digests().is_none());
        assert_eq!(
            *outcome.refusal().unwrap().code(),
            S3ErrorCode::InternalError
        );
    }
}
