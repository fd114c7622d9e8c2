//! Reads around lost, corrupt and short fragments: every loss pattern up to r columns
//! reconstructs byte-exact, r + 1 losses fail naming the columns, flipped bytes and short files
//! are detected and reported, lost stack files are rebuilt byte-exact, and scrub names every
//! bad fragment.

use crate::common;

use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_ec::{
    Code, DecodeError, FetchError, FragmentFault, HEADER_BYTES, StackHeader, StripeDecoder,
    content_hash, decode_blob, fetch_from_stacks,
};

/// Every subset of `0..columns` with at most `most` members.
fn subsets_up_to(columns: usize, most: usize) -> Vec<Vec<usize>> {
    (0u32..1 << columns)
        .filter(|mask| mask.count_ones() as usize <= most)
        .map(|mask| {
            (0..columns)
                .filter(|column| mask & (1 << column) != 0)
                .collect()
        })
        .collect()
}

/// Whether data fragment `column` of `stripe` holds at least one blob byte (parity never does).
fn holds_blob_bytes(code: &Code, blob_bytes: usize, stripe: u64, column: usize) -> bool {
    let fragment_start = (stripe as usize * code.data_columns() + column) * code.fragment_bytes();
    column < code.data_columns() && fragment_start < blob_bytes
}

fn without(stacks: &[Option<Vec<u8>>], lost: &[usize]) -> Vec<Option<Vec<u8>>> {
    let mut remaining = stacks.to_vec();
    for &column in lost {
        remaining[column] = None;
    }
    remaining
}

#[test]
fn every_combination_of_up_to_r_lost_columns_reconstructs_byte_exact_for_4_plus_2() {
    let code = Code::new(4, 2, 256).unwrap();
    let blob = common::blob(3 * 1024 + 77, 11);
    let stacks = common::stacks(&code, &blob);
    let patterns = subsets_up_to(6, 2);
    assert_eq!(patterns.len(), 1 + 6 + 15);
    for lost in patterns {
        let (output, report) = common::read_all(&code, &blob, &without(&stacks, &lost)).unwrap();
        assert_eq!(output, blob, "lost {lost:?}");
        let data_lost: Vec<usize> = lost.iter().copied().filter(|&column| column < 4).collect();
        // Every stripe reports each lost data column (parity is fetched only when needed).
        for stripe in 0..code.stripes_for(blob.len() as u64) {
            for &column in &data_lost {
                if !holds_blob_bytes(&code, blob.len(), stripe, column) {
                    continue;
                }
                assert!(
                    common::repaired_at(&report).contains(&(stripe, column)),
                    "lost {lost:?}: stripe {stripe} column {column} not reported"
                );
            }
        }
    }
}

#[test]
fn sampled_combinations_of_up_to_3_lost_columns_reconstruct_byte_exact_for_15_plus_3() {
    let code = Code::new(15, 3, 512).unwrap();
    let blob = common::blob(15 * 512 * 3 + 1000, 12);
    let stacks = common::stacks(&code, &blob);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    for _ in 0..60 {
        let losses = rng.random_range(1..=3);
        let lost = sample(&mut rng, 18, losses).into_vec();
        let (output, _) = common::read_all(&code, &blob, &without(&stacks, &lost)).unwrap();
        assert_eq!(output, blob, "lost {lost:?}");
    }
    // The worst case the benchmark measures: the first three data columns.
    let (output, _) = common::read_all(&code, &blob, &without(&stacks, &[0, 1, 2])).unwrap();
    assert_eq!(output, blob);
}

#[test]
fn r_plus_one_lost_columns_fail_as_corrupt_beyond_repair_naming_the_columns() {
    let code = Code::new(4, 2, 256).unwrap();
    let blob = common::blob(5000, 13);
    let stacks = common::stacks(&code, &blob);
    for lost in subsets_up_to(6, 3)
        .into_iter()
        .filter(|lost| lost.len() == 3)
    {
        let error = common::read_all(&code, &blob, &without(&stacks, &lost)).unwrap_err();
        let DecodeError::CorruptBeyondRepair { stripe, bad } = error else {
            panic!("lost {lost:?}: unexpected {error}");
        };
        assert_eq!(stripe, 0);
        let named: Vec<usize> = bad.iter().map(|(column, _)| *column).collect();
        assert_eq!(named, lost);
        assert!(
            bad.iter()
                .all(|(_, fault)| matches!(fault, FragmentFault::Unavailable(_)))
        );
    }
}

#[test]
fn a_flipped_byte_in_any_fragment_is_detected_by_its_crc_and_repaired_on_read() {
    let code = Code::new(4, 2, 128).unwrap();
    let blob = common::blob(4 * 128 * 2 + 50, 14);
    let stacks = common::stacks(&code, &blob);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    for column in 0..6 {
        for stripe in 0..code.stripes_for(blob.len() as u64) {
            let mut damaged = stacks.clone();
            let framed_start = code.fragment_offset(stripe) as usize;
            // Any byte of the framed fragment, its crc included.
            let position = framed_start + rng.random_range(0..code.framed_fragment_bytes());
            damaged[column].as_mut().unwrap()[position] ^= 0x5a;
            if !holds_blob_bytes(&code, blob.len(), stripe, column) {
                // A full read never fetches parity (or pure padding) while the data it
                // needs is good: scrub finds the damage.
                let report = StripeDecoder::new(&code, blob.len() as u64)
                    .scrub_stripe(stripe, fetch_from_stacks(&code, &damaged))
                    .unwrap();
                assert_eq!(common::repaired_at(&report), vec![(stripe, column)]);
                continue;
            }
            let (output, report) = common::read_all(&code, &blob, &damaged).unwrap();
            assert_eq!(output, blob);
            assert_eq!(common::repaired_at(&report), vec![(stripe, column)]);
            assert!(matches!(
                report.repaired[0].fault,
                FragmentFault::Checksum { .. }
            ));
        }
    }
}

#[test]
fn a_short_stack_file_is_detected_and_its_missing_fragments_reconstructed() {
    let code = Code::new(4, 2, 128).unwrap();
    let blob = common::blob(4 * 128 * 3, 15);
    let mut stacks = common::stacks(&code, &blob);
    // Cut column 2 in the middle of stripe 1's fragment: stripe 1 is short, stripe 2 absent.
    let cut = code.fragment_offset(1) as usize + 100;
    stacks[2].as_mut().unwrap().truncate(cut);
    let (output, report) = common::read_all(&code, &blob, &stacks).unwrap();
    assert_eq!(output, blob);
    assert_eq!(common::repaired_at(&report), vec![(1, 2), (2, 2)]);
    assert!(report.repaired.iter().all(|repaired| matches!(
        repaired.fault,
        FragmentFault::Short {
            expected_bytes: 132,
            ..
        }
    )));
}

#[test]
fn a_fetch_that_lies_about_its_length_is_treated_as_short() {
    let code = Code::new(2, 1, 64).unwrap();
    let blob = common::blob(300, 16);
    let stacks = common::stacks(&code, &blob);
    let mut inner = fetch_from_stacks(&code, &stacks);
    let mut output = Vec::new();
    let report = StripeDecoder::new(&code, 300)
        .read_range(
            0..300,
            |column, stripe, buffer: &mut [u8]| {
                let read_bytes = inner(column, stripe, buffer)?;
                // Column 0 returns one byte short on every read.
                Ok(if column == 0 {
                    read_bytes - 1
                } else {
                    read_bytes
                })
            },
            &mut output,
        )
        .unwrap();
    assert_eq!(output, blob);
    assert_eq!(common::repaired_at(&report), vec![(0, 0), (1, 0), (2, 0)]);
}

#[test]
fn a_flipped_header_byte_is_caught_by_the_header_crc_and_the_column_read_around() {
    let code = Code::new(4, 2, 128).unwrap();
    let blob = common::blob(2000, 17);
    let mut stacks = common::stacks(&code, &blob);
    stacks[1].as_mut().unwrap()[30] ^= 1;
    // A reader checks each column's header first and treats a bad one as unavailable.
    let headers: Vec<_> = stacks
        .iter()
        .map(|stack| StackHeader::decode(stack.as_ref().unwrap()))
        .collect();
    assert!(headers[1].is_err());
    assert!(
        headers
            .iter()
            .enumerate()
            .all(|(column, header)| column == 1 || header.is_ok())
    );
    let mut inner = fetch_from_stacks(&code, &stacks);
    let mut output = Vec::new();
    let report = decode_blob(
        &code,
        2000,
        content_hash(&blob),
        |column, stripe, buffer: &mut [u8]| match &headers[column] {
            Err(error) => Err(FetchError(error.to_string())),
            Ok(_) => inner(column, stripe, buffer),
        },
        &mut output,
    )
    .unwrap();
    assert_eq!(output, blob);
    assert!(
        common::repaired_at(&report)
            .iter()
            .all(|&(_, column)| column == 1)
    );
    assert_eq!(common::repaired_at(&report).len(), 4);
}

#[test]
fn a_wrong_content_hash_fails_the_whole_blob_read() {
    let code = Code::new(4, 2, 128).unwrap();
    let blob = common::blob(2000, 18);
    let stacks = common::stacks(&code, &blob);
    let mut wrong = content_hash(&blob);
    wrong[31] ^= 0x80;
    let result = decode_blob(
        &code,
        2000,
        wrong,
        fetch_from_stacks(&code, &stacks),
        &mut Vec::new(),
    );
    assert!(matches!(
        result,
        Err(DecodeError::ContentHashMismatch { .. })
    ));
}

#[test]
fn rebuilt_fragments_recreate_every_lost_stack_file_byte_exact() {
    let code = Code::new(4, 2, 128).unwrap();
    let blob = common::blob(4 * 128 * 3 + 9, 19);
    let stacks = common::stacks(&code, &blob);
    for lost in 0..code.columns() {
        let mut remaining = without(&stacks, &[lost]);
        // Another column is corrupt too: still within r = 2.
        let other = (lost + 1) % code.columns();
        let middle = code.fragment_offset(1) as usize + 10;
        remaining[other].as_mut().unwrap()[middle] ^= 0xff;
        let header = StackHeader::decode(stacks[(lost + 2) % 6].as_ref().unwrap()).unwrap();
        let mut rebuilt = StackHeader {
            column: lost as u16,
            ..header
        }
        .encode()
        .to_vec();
        let mut decoder = StripeDecoder::new(&code, blob.len() as u64);
        let mut framed = vec![0; code.framed_fragment_bytes()];
        for stripe in 0..code.stripes_for(blob.len() as u64) {
            let report = decoder
                .rebuild_fragment(
                    stripe,
                    lost,
                    fetch_from_stacks(&code, &remaining),
                    &mut framed,
                )
                .unwrap();
            // Only the corrupt fragment can be reported (the lost column is the target).
            assert!(
                report
                    .repaired
                    .iter()
                    .all(|repaired| repaired.stripe == 1 && repaired.column == other)
            );
            rebuilt.extend_from_slice(&framed);
        }
        assert_eq!(&rebuilt, stacks[lost].as_ref().unwrap(), "column {lost}");
        assert_eq!(
            rebuilt.len() as u64,
            code.stack_file_bytes(blob.len() as u64)
        );
    }
}

#[test]
fn scrub_names_every_bad_fragment_and_fails_only_below_k_good() {
    let code = Code::new(4, 2, 64).unwrap();
    let blob = common::blob(256, 20);
    let mut stacks = common::stacks(&code, &blob);
    stacks[0].as_mut().unwrap()[HEADER_BYTES] ^= 1;
    stacks[5] = None;
    let mut decoder = StripeDecoder::new(&code, 256);
    let report = decoder
        .scrub_stripe(0, fetch_from_stacks(&code, &stacks))
        .unwrap();
    assert_eq!(common::repaired_at(&report), vec![(0, 0), (0, 5)]);
    stacks[3] = None;
    let error = decoder
        .scrub_stripe(0, fetch_from_stacks(&code, &stacks))
        .unwrap_err();
    assert!(matches!(
        error,
        DecodeError::CorruptBeyondRepair { stripe: 0, ref bad } if bad.len() == 3
    ));
    assert!(
        decoder
            .scrub_stripe(1, fetch_from_stacks(&code, &stacks))
            .is_err()
    );
}

#[test]
fn code_reconstruct_restores_data_and_parity_in_caller_buffers_and_refuses_below_k() {
    let code = Code::new(4, 2, 64).unwrap();
    let data = common::blob(256, 21);
    let mut parity = vec![0u8; 128];
    code.encode_stripe(&data, &mut parity).unwrap();
    let mut fragments: Vec<Vec<u8>> = data
        .chunks(64)
        .chain(parity.chunks(64))
        .map(<[u8]>::to_vec)
        .collect();
    let original = fragments.clone();
    // Lose data column 1 and parity column 5; scribble over them to prove they are rewritten.
    fragments[1].fill(0xee);
    fragments[5].fill(0xee);
    let present = [true, false, true, true, true, false];
    let mut slices: Vec<&mut [u8]> = fragments.iter_mut().map(Vec::as_mut_slice).collect();
    code.reconstruct(&mut slices, &present, false).unwrap();
    assert_eq!(fragments, original);
    let mut slices: Vec<&mut [u8]> = fragments.iter_mut().map(Vec::as_mut_slice).collect();
    let too_few = [true, false, false, true, true, false];
    assert!(matches!(
        code.reconstruct(&mut slices, &too_few, true),
        Err(spinwise_ec::EcError::TooFewFragments {
            present: 3,
            needed: 4
        })
    ));
}

#[test]
fn a_stack_rebuilder_reads_as_the_lost_stack_file_and_fails_below_k() {
    use spinwise_ec::StackRebuilder;
    use std::io::Read;
    // F = 16 is smaller than the header: the reader must not confuse the two.
    let code = Code::new(3, 2, 16).unwrap();
    let blob = common::blob(3 * 16 * 5 + 7, 22);
    let stacks = common::stacks(&code, &blob);
    for lost in 0..code.columns() {
        let remaining = without(&stacks, &[lost]);
        let survivor = StackHeader::decode(remaining[(lost + 1) % 5].as_ref().unwrap()).unwrap();
        let header = StackHeader {
            column: lost as u16,
            ..survivor
        };
        let mut rebuilder =
            StackRebuilder::new(&code, header, fetch_from_stacks(&code, &remaining));
        let mut rebuilt = Vec::new();
        // Small reads exercise the buffering across header and fragments.
        let mut chunk = [0u8; 7];
        loop {
            let read_bytes = rebuilder.read(&mut chunk).unwrap();
            if read_bytes == 0 {
                break;
            }
            rebuilt.extend_from_slice(&chunk[..read_bytes]);
        }
        assert_eq!(&rebuilt, stacks[lost].as_ref().unwrap(), "column {lost}");
        assert!(rebuilder.report().is_clean());
    }
    let remaining = without(&stacks, &[0, 1]);
    let survivor = StackHeader::decode(stacks[4].as_ref().unwrap()).unwrap();
    let header = StackHeader {
        column: 2,
        ..survivor
    };
    let mut rebuilder = StackRebuilder::new(&code, header, fetch_from_stacks(&code, &remaining));
    assert!(rebuilder.read_to_end(&mut Vec::new()).is_err());
    assert!(matches!(
        rebuilder.take_failure(),
        Some(DecodeError::CorruptBeyondRepair { stripe: 0, .. })
    ));
}
