//! CRC-32C (Castagnoli, the iSCSI polynomial), the checksum of every fragment, staging frame
//! and header in Spinwise's formats, in one place so every format computes it the same way.
//!
//! Backed by crc-fast, which folds with carry-less multiplication (PCLMULQDQ/AVX2 on x86_64,
//! PMULL on aarch64, chosen at run time): 8.0–8.2 GB/s per core on the 128 KiB fragments of the
//! Zen 1 machine in docs/BENCHMARKS.md, where the `crc32` instruction loop of the crc32c crate
//! gives 5.7–6.0 GB/s. Every GET checks a crc per fragment, so this is on the read path's
//! critical thread. The values are the standard CRC-32C (check value 0xE3069283 for
//! "123456789"); a property test compares them with the crc32c crate, an independent
//! implementation.

use crc_fast::{CrcAlgorithm, Digest};

/// CRC-32C of `bytes`.
#[inline]
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(bytes)
}

/// CRC-32C of the concatenation of `parts`, without copying them together.
pub fn crc32c_of_parts(parts: &[&[u8]]) -> u32 {
    let mut digest = Digest::new(CrcAlgorithm::Crc32Iscsi);
    for part in parts {
        digest.update(part);
    }
    // A CRC-32 digest's value fits in 32 bits.
    digest.finalize() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn crc32c_gives_the_standard_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_of_parts(&[b"1234", b"", b"56789"]), 0xE306_9283);
    }

    proptest! {
        #[test]
        fn crc32c_matches_an_independent_implementation(
            bytes in proptest::collection::vec(any::<u8>(), 0..70_000),
            cut in any::<prop::sample::Index>(),
        ) {
            prop_assert_eq!(crc32c(&bytes), ::crc32c::crc32c(&bytes));
            let (head, tail) = bytes.split_at(cut.index(bytes.len() + 1));
            prop_assert_eq!(crc32c_of_parts(&[head, tail]), ::crc32c::crc32c(&bytes));
        }
    }
}
