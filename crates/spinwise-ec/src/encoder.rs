//! `BlobEncoder`: streams a blob from an `io::Read` one stripe at a time into `k + r` framed
//! fragments (fragment + crc32c), so a caller can write each column to its own disk.
//!
//! Invariants: memory is one stripe (`(k + r) × F` bytes plus `k + r` crcs) whatever the
//! blob size; the caller passes the blob's length and BLAKE3 up front (so every column's
//! header and file length are known before the first byte is written), and the encoder
//! refuses to hand out the last stripe unless the reader produced exactly `blob_bytes` bytes
//! whose BLAKE3 equals the promised hash.

use std::io::{self, Read, Write};

use crate::code::{Code, EcError};
use crate::header::StackHeader;

/// Why a blob could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("reading the blob failed: {0}")]
    Read(#[from] io::Error),
    #[error("the blob ended after {got_bytes} B, {expected_bytes} B were announced")]
    ShortInput { expected_bytes: u64, got_bytes: u64 },
    #[error("the blob has more than the {expected_bytes} B announced")]
    LongInput { expected_bytes: u64 },
    #[error("content hash mismatch: announced {expected}, the bytes hash to {computed}")]
    ContentHashMismatch { expected: String, computed: String },
    #[error(transparent)]
    Code(#[from] EcError),
}

/// Streams one blob through a [`Code`], a stripe at a time.
pub struct BlobEncoder<'c, R> {
    code: &'c Code,
    reader: R,
    blob_id: u64,
    blob_bytes: u64,
    content_hash: [u8; 32],
    hasher: blake3::Hasher,
    next_stripe: u64,
    stripes: u64,
    finished: bool,
    data: Vec<u8>,
    parity: Vec<u8>,
    crcs: Vec<u32>,
}

/// The `k + r` fragments of one encoded stripe, borrowed from the encoder.
pub struct EncodedStripe<'a> {
    stripe: u64,
    fragment_bytes: usize,
    data_columns: usize,
    data: &'a [u8],
    parity: &'a [u8],
    crcs: &'a [u32],
}

impl<'c, R: Read> BlobEncoder<'c, R> {
    /// An encoder for a blob of `blob_bytes` bytes whose BLAKE3 is `content_hash`.
    pub fn new(
        code: &'c Code,
        blob_id: u64,
        blob_bytes: u64,
        content_hash: [u8; 32],
        reader: R,
    ) -> BlobEncoder<'c, R> {
        BlobEncoder {
            code,
            reader,
            blob_id,
            blob_bytes,
            content_hash,
            hasher: blake3::Hasher::new(),
            next_stripe: 0,
            stripes: code.stripes_for(blob_bytes),
            finished: false,
            data: vec![0; code.data_columns() * code.fragment_bytes()],
            parity: vec![0; code.parity_columns() * code.fragment_bytes()],
            crcs: vec![0; code.columns()],
        }
    }

    /// The header of `column`'s stack file (known before any byte is encoded). Panics if
    /// `column ≥ k + r`.
    pub fn header(&self, column: usize) -> StackHeader {
        StackHeader::new(
            self.code,
            column,
            self.blob_id,
            self.blob_bytes,
            self.content_hash,
        )
    }

    /// The length of every column's stack file.
    pub fn stack_file_bytes(&self) -> u64 {
        self.code.stack_file_bytes(self.blob_bytes)
    }

    /// The number of stripes this blob has.
    pub fn stripes(&self) -> u64 {
        self.stripes
    }

    /// Reads and encodes the next stripe; `None` after the last. The last stripe is returned
    /// only after the input length and content hash are verified.
    pub fn next_stripe(&mut self) -> Result<Option<EncodedStripe<'_>>, EncodeError> {
        if self.next_stripe == self.stripes {
            self.finish()?;
            return Ok(None);
        }
        let stripe = self.next_stripe;
        let stripe_bytes = self.code.stripe_data_bytes();
        let wanted_bytes = (self.blob_bytes - stripe * stripe_bytes).min(stripe_bytes) as usize;
        let got_bytes = read_full(&mut self.reader, &mut self.data[..wanted_bytes])?;
        if got_bytes < wanted_bytes {
            return Err(EncodeError::ShortInput {
                expected_bytes: self.blob_bytes,
                got_bytes: stripe * stripe_bytes + got_bytes as u64,
            });
        }
        // The last stripe's padding must be zero; earlier stripes filled the buffer.
        self.data[wanted_bytes..].fill(0);
        self.hasher.update(&self.data[..wanted_bytes]);
        self.next_stripe += 1;
        if self.next_stripe == self.stripes {
            self.finish()?;
        }
        self.code.encode_stripe(&self.data, &mut self.parity)?;
        let fragment_bytes = self.code.fragment_bytes();
        let fragments = self
            .data
            .chunks_exact(fragment_bytes)
            .chain(self.parity.chunks_exact(fragment_bytes));
        for (crc, fragment) in self.crcs.iter_mut().zip(fragments) {
            *crc = crate::checksum::crc32c(fragment);
        }
        Ok(Some(EncodedStripe {
            stripe,
            fragment_bytes,
            data_columns: self.code.data_columns(),
            data: &self.data,
            parity: &self.parity,
            crcs: &self.crcs,
        }))
    }

    /// Checks that the input is exhausted and hashes to the promised value (once).
    fn finish(&mut self) -> Result<(), EncodeError> {
        if self.finished {
            return Ok(());
        }
        let mut probe = [0u8; 1];
        if read_full(&mut self.reader, &mut probe)? != 0 {
            return Err(EncodeError::LongInput {
                expected_bytes: self.blob_bytes,
            });
        }
        let computed = self.hasher.finalize();
        if *computed.as_bytes() != self.content_hash {
            return Err(EncodeError::ContentHashMismatch {
                expected: blake3::Hash::from_bytes(self.content_hash)
                    .to_hex()
                    .to_string(),
                computed: computed.to_hex().to_string(),
            });
        }
        self.finished = true;
        Ok(())
    }
}

impl EncodedStripe<'_> {
    /// The stripe's index in the blob.
    pub fn stripe(&self) -> u64 {
        self.stripe
    }

    /// Fragment `column` (`F` bytes; data columns first, then parity). Panics if
    /// `column ≥ k + r`.
    pub fn fragment(&self, column: usize) -> &[u8] {
        let fragment_bytes = self.fragment_bytes;
        if column < self.data_columns {
            &self.data[column * fragment_bytes..][..fragment_bytes]
        } else {
            &self.parity[(column - self.data_columns) * fragment_bytes..][..fragment_bytes]
        }
    }

    /// The crc32c of fragment `column`.
    pub fn crc32c(&self, column: usize) -> u32 {
        self.crcs[column]
    }

    /// Fragment `column` and its little-endian crc: the `F + 4` bytes the stack file holds.
    pub fn framed(&self, column: usize) -> (&[u8], [u8; 4]) {
        (self.fragment(column), self.crcs[column].to_le_bytes())
    }

    /// Writes fragment `column` and its crc (the framed fragment) to `sink`.
    pub fn write_framed(&self, column: usize, sink: &mut dyn Write) -> io::Result<()> {
        let (fragment, crc) = self.framed(column);
        sink.write_all(fragment)?;
        sink.write_all(&crc)
    }
}

/// BLAKE3 of `bytes` (the content hash a header carries).
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// Encodes a whole in-memory blob into its `k + r` stack files (for small blobs and tests;
/// the store streams with [`BlobEncoder`] instead).
pub fn encode_stacks(code: &Code, blob_id: u64, blob: &[u8]) -> Result<Vec<Vec<u8>>, EncodeError> {
    let blob_bytes = blob.len() as u64;
    let mut encoder = BlobEncoder::new(code, blob_id, blob_bytes, content_hash(blob), blob);
    let file_bytes = encoder.stack_file_bytes() as usize;
    let mut stacks: Vec<Vec<u8>> = (0..code.columns())
        .map(|column| {
            let mut stack = Vec::with_capacity(file_bytes);
            stack.extend_from_slice(&encoder.header(column).encode());
            stack
        })
        .collect();
    while let Some(stripe) = encoder.next_stripe()? {
        for (column, stack) in stacks.iter_mut().enumerate() {
            stripe.write_framed(column, stack)?;
        }
    }
    Ok(stacks)
}

/// Reads until `buffer` is full or the reader ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read_bytes) => filled += read_bytes,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}
