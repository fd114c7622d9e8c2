//! Helpers shared by the spinwise-ec integration tests: deterministic blobs, in-memory stack
//! files and whole-blob reads through the public API.
#![allow(dead_code)]

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_ec::{
    Code, DecodeError, RepairReport, StripeDecoder, content_hash, decode_blob, encode_stacks,
    fetch_from_stacks,
};

/// `length` pseudo-random bytes from a fixed seed.
pub fn blob(length: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0; length];
    ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut bytes);
    bytes
}

/// The blob's stack files, every column present.
pub fn stacks(code: &Code, blob: &[u8]) -> Vec<Option<Vec<u8>>> {
    encode_stacks(code, 7, blob)
        .expect("encoding an in-memory blob")
        .into_iter()
        .map(Some)
        .collect()
}

/// Reads the whole blob back (verifying the content hash) from the stacks.
pub fn read_all(
    code: &Code,
    blob: &[u8],
    stacks: &[Option<Vec<u8>>],
) -> Result<(Vec<u8>, RepairReport), DecodeError> {
    let mut output = Vec::new();
    let report = decode_blob(
        code,
        blob.len() as u64,
        content_hash(blob),
        fetch_from_stacks(code, stacks),
        &mut output,
    )?;
    Ok((output, report))
}

/// Reads `range` of a blob of `blob_bytes` bytes from the stacks.
pub fn read_range(
    code: &Code,
    blob_bytes: u64,
    range: std::ops::Range<u64>,
    stacks: &[Option<Vec<u8>>],
) -> Result<(Vec<u8>, RepairReport), DecodeError> {
    let mut output = Vec::new();
    let mut decoder = StripeDecoder::new(code, blob_bytes);
    let report = decoder.read_range(range, fetch_from_stacks(code, stacks), &mut output)?;
    Ok((output, report))
}

/// The (stripe, column) pairs a report names, sorted.
pub fn repaired_at(report: &RepairReport) -> Vec<(u64, usize)> {
    let mut places: Vec<(u64, usize)> = report
        .repaired
        .iter()
        .map(|repaired| (repaired.stripe, repaired.column))
        .collect();
    places.sort_unstable();
    places.dedup();
    places
}
