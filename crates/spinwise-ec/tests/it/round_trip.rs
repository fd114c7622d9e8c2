//! Round trips through the public API: blob sizes at every stripe and fragment boundary,
//! arbitrary byte ranges, the streaming encoder's checks of length and content hash, and the
//! promise that a healthy range read fetches only the data fragments it covers.

use crate::common;

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use spinwise_ec::{
    BlobEncoder, Code, DEFAULT_FRAGMENT_BYTES, EncodeError, HEADER_BYTES, StripeDecoder,
    content_hash, fetch_from_stacks,
};

fn boundary_sizes(code: &Code) -> Vec<usize> {
    let fragment = code.fragment_bytes();
    let stripe = code.stripe_data_bytes() as usize;
    vec![
        0,
        1,
        fragment - 1,
        fragment,
        fragment + 1,
        stripe - 1,
        stripe,
        stripe + 1,
        3 * stripe + fragment / 2 + 17,
    ]
}

#[test]
fn blobs_at_every_fragment_and_stripe_boundary_round_trip_byte_exact() {
    for code in [
        Code::new(4, 2, 256).unwrap(),
        Code::new(15, 3, DEFAULT_FRAGMENT_BYTES).unwrap(),
        Code::new(1, 0, 64).unwrap(),
    ] {
        for size in boundary_sizes(&code) {
            let blob = common::blob(size, size as u64);
            let stacks = common::stacks(&code, &blob);
            for stack in stacks.iter().flatten() {
                assert_eq!(stack.len() as u64, code.stack_file_bytes(size as u64));
            }
            let (output, report) = common::read_all(&code, &blob, &stacks).unwrap();
            assert_eq!(output, blob, "{code:?}, {size} B");
            assert!(report.is_clean(), "{code:?}, {size} B: {report:?}");
        }
    }
}

#[test]
fn an_empty_blob_has_no_stripes_and_header_only_stack_files() {
    let code = Code::new(4, 2, 256).unwrap();
    assert_eq!(code.stripes_for(0), 0);
    let stacks = common::stacks(&code, &[]);
    assert!(
        stacks
            .iter()
            .flatten()
            .all(|stack| stack.len() == HEADER_BYTES)
    );
}

#[test]
fn the_last_stripe_is_zero_padded_in_the_data_fragments() {
    let code = Code::new(2, 1, 64).unwrap();
    let blob = vec![0xffu8; 130];
    let stacks = common::stacks(&code, &blob);
    let stripe1 = code.fragment_offset(1) as usize;
    let column0 = stacks[0].as_ref().unwrap();
    let column1 = stacks[1].as_ref().unwrap();
    assert_eq!(&column0[stripe1..stripe1 + 2], &[0xff, 0xff]);
    assert!(
        column0[stripe1 + 2..stripe1 + 64]
            .iter()
            .all(|&byte| byte == 0)
    );
    assert!(column1[stripe1..stripe1 + 64].iter().all(|&byte| byte == 0));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: RngSeed::Fixed(0x5eed),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_byte_range_reads_back_exactly_those_bytes(
        size in 1usize..6000,
        start_fraction in 0.0f64..1.0,
        length_fraction in 0.0f64..1.0,
    ) {
        let code = Code::new(3, 2, 128).unwrap();
        let blob = common::blob(size, 99);
        let stacks = common::stacks(&code, &blob);
        let start = ((size as f64 * start_fraction) as usize).min(size - 1);
        let end = start + 1 + ((size - start - 1) as f64 * length_fraction) as usize;
        let (output, report) =
            common::read_range(&code, size as u64, start as u64..end as u64, &stacks).unwrap();
        prop_assert_eq!(&output[..], &blob[start..end]);
        prop_assert!(report.is_clean());
    }
}

#[test]
fn a_healthy_range_read_fetches_only_the_data_fragments_covering_the_range() {
    let code = Code::new(4, 2, 100).unwrap();
    let blob = common::blob(2000, 3);
    let stacks = common::stacks(&code, &blob);
    // Bytes 150..420: stripe 0 columns 1..=3 (100..400) and stripe 1 column 0 (400..500).
    let location = code.locate(2000, 150..420).unwrap();
    assert_eq!((location.first_stripe, location.last_stripe), (0, 1));
    assert_eq!(location.data_columns, vec![0, 1, 2, 3]);
    let mut fetched = BTreeSet::new();
    let mut inner = fetch_from_stacks(&code, &stacks);
    let mut output = Vec::new();
    StripeDecoder::new(&code, 2000)
        .read_range(
            150..420,
            |column, stripe, buffer: &mut [u8]| {
                fetched.insert((stripe, column));
                inner(column, stripe, buffer)
            },
            &mut output,
        )
        .unwrap();
    assert_eq!(output, &blob[150..420]);
    assert_eq!(
        fetched.into_iter().collect::<Vec<_>>(),
        vec![(0, 1), (0, 2), (0, 3), (1, 0)]
    );
}

#[test]
fn a_range_outside_the_blob_is_a_typed_error() {
    let code = Code::new(4, 2, 100).unwrap();
    let stacks = common::stacks(&code, &common::blob(500, 1));
    assert!(common::read_range(&code, 500, 400..501, &stacks).is_err());
    assert!(code.locate(500, 10..10).is_err());
}

#[test]
fn the_encoder_refuses_input_that_does_not_hash_to_the_announced_content_hash() {
    let code = Code::new(4, 2, 64).unwrap();
    let blob = common::blob(1000, 5);
    let mut wrong_hash = content_hash(&blob);
    wrong_hash[0] ^= 1;
    let mut encoder = BlobEncoder::new(&code, 1, 1000, wrong_hash, &blob[..]);
    let stripes = encoder.stripes();
    for _ in 0..stripes - 1 {
        assert!(encoder.next_stripe().unwrap().is_some());
    }
    // The last stripe is withheld: the caller's column files must not be completed.
    assert!(matches!(
        encoder.next_stripe(),
        Err(EncodeError::ContentHashMismatch { .. })
    ));
}

#[test]
fn the_encoder_refuses_input_shorter_or_longer_than_announced() {
    let code = Code::new(4, 2, 64).unwrap();
    let blob = common::blob(1000, 5);
    let hash = content_hash(&blob);
    let mut short = BlobEncoder::new(&code, 1, 1001, hash, &blob[..]);
    let short_error = loop {
        match short.next_stripe() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a short input was accepted"),
            Err(error) => break error,
        }
    };
    assert!(matches!(
        short_error,
        EncodeError::ShortInput {
            expected_bytes: 1001,
            got_bytes: 1000
        }
    ));
    let mut long = BlobEncoder::new(&code, 1, 999, content_hash(&blob[..999]), &blob[..]);
    let long_error = loop {
        match long.next_stripe() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a long input was accepted"),
            Err(error) => break error,
        }
    };
    assert!(matches!(
        long_error,
        EncodeError::LongInput {
            expected_bytes: 999
        }
    ));
}

#[test]
fn the_empty_blob_encoder_still_checks_the_content_hash() {
    let code = Code::new(4, 2, 64).unwrap();
    let mut encoder = BlobEncoder::new(&code, 1, 0, [0; 32], &[][..]);
    assert!(matches!(
        encoder.next_stripe(),
        Err(EncodeError::ContentHashMismatch { .. })
    ));
    let mut encoder = BlobEncoder::new(&code, 1, 0, content_hash(&[]), &[][..]);
    assert!(encoder.next_stripe().unwrap().is_none());
}

#[test]
fn streamed_framed_fragments_carry_their_crc32c_little_endian() {
    let code = Code::new(3, 2, 64).unwrap();
    let blob = common::blob(500, 8);
    let mut encoder = BlobEncoder::new(&code, 1, 500, content_hash(&blob), &blob[..]);
    while let Some(stripe) = encoder.next_stripe().unwrap() {
        for column in 0..code.columns() {
            let (fragment, crc) = stripe.framed(column);
            assert_eq!(fragment.len(), 64);
            assert_eq!(u32::from_le_bytes(crc), crc32c::crc32c(fragment));
            assert_eq!(stripe.crc32c(column), crc32c::crc32c(fragment));
        }
        let data_start = stripe.stripe() as usize * 192;
        let data_end = (data_start + 192).min(500);
        let data: Vec<u8> = (0..3)
            .flat_map(|column| stripe.fragment(column).to_vec())
            .collect();
        assert_eq!(&data[..data_end - data_start], &blob[data_start..data_end]);
    }
}

#[test]
fn a_code_can_be_shared_across_the_store_s_blocking_threads() {
    fn shareable<T: Send + Sync>(_: &T) {}
    let code = Code::new(15, 3, DEFAULT_FRAGMENT_BYTES).unwrap();
    shareable(&code);
    let decoder = StripeDecoder::new(&code, 1);
    fn sendable<T: Send>(_: &T) {}
    sendable(&decoder);
}
