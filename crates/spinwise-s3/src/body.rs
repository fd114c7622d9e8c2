//! [`Upload`]: a request body as the `AsyncRead` the store's PUT consumes, hashing as it streams
//! (MD5 for the ETag, BLAKE3 to name the metadata row, and the `x-amz-checksum-*` algorithms the
//! client sent) and enforcing the body limit.
//!
//! Invariants:
//! - the store sees end-of-body only after every digest the client sent (Content-MD5, checksum
//!   headers, checksum trailers) matched and the metadata row was written: at the end of the
//!   stream the reader reports the digests to the PUT's coordinator and waits for its go-ahead.
//!   A mismatch, a body over the limit or a failed metadata write makes the read fail instead,
//!   so the store's PUT fails before its catalog commit and nothing becomes visible;
//! - memory is one body chunk at a time.

use bytes::Bytes;
use futures::Stream;
use s3s::checksum::ChecksumHasher;
use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Md5, Sha1, Sha256};
use s3s::dto::Checksum;
use s3s::{S3Error, S3ErrorCode, TrailingHeaders};
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::oneshot;

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

/// What the body turned out to be.
#[derive(Clone, Debug)]
pub struct Digests {
    pub md5: [u8; 16],
    pub blake3: [u8; 32],
    pub size_bytes: u64,
    /// The checksums the client asked for, as computed (base64).
    pub checksums: Checksum,
}

enum State {
    Streaming,
    /// Digests reported; waiting for the metadata row.
    Waiting(oneshot::Receiver<bool>),
    Done,
    Failed,
}

pub struct Upload {
    stream: BodyStream,
    pending: Bytes,
    md5: Md5,
    blake3: blake3::Hasher,
    checksums: ChecksumHasher,
    expected: Expected,
    size_bytes: u64,
    limit_bytes: u64,
    report: Option<oneshot::Sender<Result<Digests, S3Error>>>,
    proceed: Option<oneshot::Receiver<bool>>,
    state: State,
}

/// The coordinator's side of an [`Upload`]: the digests (or the refusal) at the end of the body,
/// and the go-ahead to send once the metadata row is durable.
pub struct UploadGate {
    pub report: oneshot::Receiver<Result<Digests, S3Error>>,
    pub proceed: oneshot::Sender<bool>,
}

const TRAILER_ALGORITHMS: [&str; 5] = [
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
];

impl Upload {
    pub fn new(stream: BodyStream, expected: Expected, limit_bytes: u64) -> (Upload, UploadGate) {
        let (report_sender, report) = oneshot::channel();
        let (proceed, proceed_receiver) = oneshot::channel();
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
        let upload = Upload {
            stream,
            pending: Bytes::new(),
            md5: Md5::new(),
            blake3: blake3::Hasher::new(),
            checksums,
            expected,
            size_bytes: 0,
            limit_bytes,
            report: Some(report_sender),
            proceed: Some(proceed_receiver),
            state: State::Streaming,
        };
        (upload, UploadGate { report, proceed })
    }

    /// Reports a refusal to the coordinator and fails the read.
    fn refuse(&mut self, error: S3Error) -> io::Error {
        let message = error.message().unwrap_or("upload refused").to_string();
        if let Some(report) = self.report.take() {
            let _ = report.send(Err(error));
        }
        self.state = State::Failed;
        io::Error::other(message)
    }

    /// At the end of the body: the digests, or the first promise the body broke.
    fn finish(&mut self) -> Result<Digests, S3Error> {
        let md5 = std::mem::take(&mut self.md5).finalize();
        if let Some(expected) = self.expected.content_md5
            && expected != md5
        {
            return Err(S3Error::with_message(
                S3ErrorCode::BadDigest,
                "the Content-MD5 you specified did not match what was received",
            ));
        }
        let computed = std::mem::take(&mut self.checksums).finalize();
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
            blake3: *self.blake3.finalize().as_bytes(),
            size_bytes: self.size_bytes,
            checksums: computed,
        })
    }

    fn take_chunk(&mut self, buf: &mut ReadBuf<'_>) {
        let count = self.pending.len().min(buf.remaining());
        buf.put_slice(&self.pending.split_to(count));
    }
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
                State::Waiting(proceed) => {
                    return match ready!(Pin::new(proceed).poll(cx)) {
                        Ok(true) => {
                            this.state = State::Done;
                            Poll::Ready(Ok(()))
                        }
                        _ => {
                            this.state = State::Failed;
                            Poll::Ready(Err(io::Error::other(
                                "writing the object's S3 metadata failed",
                            )))
                        }
                    };
                }
                State::Streaming => {}
            }
            if !this.pending.is_empty() {
                this.take_chunk(buf);
                return Poll::Ready(Ok(()));
            }
            match ready!(this.stream.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    this.size_bytes += chunk.len() as u64;
                    if this.size_bytes > this.limit_bytes {
                        let error = S3Error::with_message(
                            S3ErrorCode::EntityTooLarge,
                            format!(
                                "the body exceeds this server's limit of {} bytes",
                                this.limit_bytes
                            ),
                        );
                        return Poll::Ready(Err(this.refuse(error)));
                    }
                    this.md5.update(&chunk);
                    this.blake3.update(&chunk);
                    this.checksums.update(&chunk);
                    this.pending = chunk;
                }
                Some(Err(error)) => {
                    let refusal = S3Error::with_message(
                        S3ErrorCode::IncompleteBody,
                        format!("reading the request body: {error}"),
                    );
                    return Poll::Ready(Err(this.refuse(refusal)));
                }
                None => match this.finish() {
                    Ok(digests) => {
                        if let Some(report) = this.report.take() {
                            let _ = report.send(Ok(digests));
                        }
                        let proceed = this.proceed.take().expect("the end is reached once");
                        this.state = State::Waiting(proceed);
                    }
                    Err(error) => return Poll::Ready(Err(this.refuse(error))),
                },
            }
        }
    }
}
