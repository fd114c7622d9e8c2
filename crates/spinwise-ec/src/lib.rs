//! spinwise-ec: erasure coding, checksums and the stripe-stack byte format (issue 4).
//!
//! Owns the bytes of a blob on disk (docs/stripe-format.md, format version 1): a blob of `B`
//! bytes is cut into stripes of `k` data fragments of `F` bytes (128 KiB by default, last
//! stripe zero-padded), each stripe gets `r` parity fragments (systematic Cauchy Reed-Solomon,
//! byte-identical to ISA-L's `gf_gen_cauchy1_matrix` code: parity and reconstruction by our
//! GFNI kernel (AVX-512 or AVX2) where the CPU has GFNI (`simd/`), else by rustfs-erasure-codec),
//! and column `c` of every stripe forms one stripe-stack file: an 84-byte header (with the
//! blob's BLAKE3) then, per stripe, the fragment and its crc32c.
//!
//! - [`checksum`]: CRC-32C for every checksum of the formats.
//! - [`Code`]: a validated `k + r` shape with its layout arithmetic and [`Code::encode_stripe`].
//! - [`StackHeader`] / [`FormatError`]: the header, encoded and strictly decoded.
//! - [`BlobEncoder`]: an `io::Read` in, framed fragments out, one stripe of memory.
//! - [`StripeDecoder`] / [`decode_blob`]: verified reads of any byte range, reconstruction
//!   from any `k` good fragments, a [`RepairReport`] of what was bad, a typed
//!   [`DecodeError::CorruptBeyondRepair`] when fewer than `k` are good; fragment rebuild and
//!   scrub for the store's upkeep.
//! - [`StackRebuilder`]: an `io::Read` that yields a lost column's whole stack file.
//! - [`Code::reconstruct`]: the bare codec step for callers with their own buffers.
//! - [`Kernel`]: which implementation computes (the fastest the CPU has, or a chosen one).
//!
//! Invariants: pure (no IO besides the `Read`/`Write` traits the caller hands in, no clock,
//! no threads: the codec runs with one job); bounded memory (one stripe per encoder or
//! decoder, whatever the blob size); bytes reach a reader only after their crc (or a
//! reconstruction from crc-checked fragments) vouches for them; bad input is a typed error.

pub mod checksum;
mod code;
mod decoder;
mod encoder;
mod header;
mod rebuild;
mod simd;

pub use code::{
    Code, DEFAULT_FRAGMENT_BYTES, EcError, FRAGMENT_CRC_BYTES, MAX_COLUMNS, MAX_FRAGMENT_BYTES,
    RangeLocation,
};
pub use decoder::{
    DecodeError, FetchError, FragmentFault, RepairReport, RepairedFragment, StripeDecoder,
    decode_blob, fetch_from_stacks, verify_framed,
};
pub use encoder::{BlobEncoder, EncodeError, EncodedStripe, content_hash, encode_stacks};
pub use header::{FORMAT_VERSION, FormatError, HEADER_BYTES, MAGIC, StackHeader};
pub use rebuild::StackRebuilder;
pub use simd::Kernel;
