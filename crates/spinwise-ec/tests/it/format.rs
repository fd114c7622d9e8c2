//! The stripe-stack format (docs/stripe-format.md): header bytes and their strict checks,
//! fragment offsets, code shape validation, and the committed golden v1 files that guard the
//! format against accidental change.
//!
//! Regenerate the golden files only for a deliberate format change (with a new version):
//! `SPINWISE_BLESS_GOLDEN=1 cargo test -p spinwise-ec --test it format::`.

use crate::common;

use std::path::PathBuf;

use spinwise_ec::{
    Code, EcError, FORMAT_VERSION, FormatError, HEADER_BYTES, MAGIC, StackHeader, content_hash,
    encode_stacks,
};

const GOLDEN_BLOB_ID: u64 = 0x0123_4567_89ab_cdef;
const GOLDEN_BLOB_BYTES: usize = 200;

fn golden_code() -> Code {
    Code::new(2, 1, 64).unwrap()
}

/// blob[t] = (7t + 3) mod 251, as the format document says.
fn golden_blob() -> Vec<u8> {
    (0..GOLDEN_BLOB_BYTES)
        .map(|index| ((index * 7 + 3) % 251) as u8)
        .collect()
}

fn golden_path(column: usize) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("k2r1f64b200.col{column}"))
}

fn sample_header() -> StackHeader {
    let code = Code::new(15, 3, 131_072).unwrap();
    StackHeader::new(&code, 17, 42, 10_000_000, content_hash(b"sample"))
}

/// Rewrites the header crc after an edit, so a test reaches the check behind the crc.
fn with_fresh_crc(mut bytes: [u8; HEADER_BYTES]) -> [u8; HEADER_BYTES] {
    let crc = crc32c::crc32c(&bytes[..80]);
    bytes[80..84].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn a_header_decodes_to_what_was_encoded() {
    let header = sample_header();
    let bytes = header.encode();
    assert_eq!(bytes.len(), 84);
    assert_eq!(&bytes[0..8], &MAGIC);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
    assert_eq!(StackHeader::decode(&bytes).unwrap(), header);
    assert_eq!(header.stripe_count, 10_000_000u64.div_ceil(15 * 131_072));
    assert_eq!(
        header.stack_file_bytes(),
        84 + header.stripe_count * 131_076
    );
}

#[test]
fn every_single_flipped_header_byte_is_rejected() {
    let bytes = sample_header().encode();
    for position in 0..HEADER_BYTES {
        let mut damaged = bytes;
        damaged[position] ^= 0x01;
        assert!(
            StackHeader::decode(&damaged).is_err(),
            "flip at byte {position} accepted"
        );
    }
    let mut damaged = bytes;
    damaged[50] ^= 0x10;
    assert!(matches!(
        StackHeader::decode(&damaged),
        Err(FormatError::HeaderChecksum { .. })
    ));
}

#[test]
fn an_unknown_format_version_is_rejected_before_anything_else_is_trusted() {
    let mut bytes = sample_header().encode();
    bytes[8..10].copy_from_slice(&2u16.to_le_bytes());
    assert_eq!(
        StackHeader::decode(&with_fresh_crc(bytes)),
        Err(FormatError::UnsupportedVersion { version: 2 })
    );
    // Even a future header of another length, or one cut short, says "unknown version".
    assert_eq!(
        StackHeader::decode(&bytes[..20]),
        Err(FormatError::UnsupportedVersion { version: 2 })
    );
}

#[test]
fn malformed_headers_get_typed_errors() {
    let bytes = sample_header().encode();
    assert_eq!(
        StackHeader::decode(&bytes[..5]),
        Err(FormatError::TooShort { got_bytes: 5 })
    );
    assert_eq!(
        StackHeader::decode(&bytes[..83]),
        Err(FormatError::TooShort { got_bytes: 83 })
    );
    let mut bad_magic = bytes;
    bad_magic[0] = b'X';
    assert_eq!(StackHeader::decode(&bad_magic), Err(FormatError::BadMagic));
    let mut bad_length = bytes;
    bad_length[10..12].copy_from_slice(&100u16.to_le_bytes());
    assert_eq!(
        StackHeader::decode(&with_fresh_crc(bad_length)),
        Err(FormatError::BadHeaderLength { header_bytes: 100 })
    );
    let mut reserved = bytes;
    reserved[18] = 1;
    assert_eq!(
        StackHeader::decode(&with_fresh_crc(reserved)),
        Err(FormatError::Reserved { value: 1 })
    );
    for (offset, value) in [(40usize, 9u64), (32, 1 << 40)] {
        let mut inconsistent = bytes;
        inconsistent[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
        assert!(matches!(
            StackHeader::decode(&with_fresh_crc(inconsistent)),
            Err(FormatError::Inconsistent(_))
        ));
    }
    let mut column_outside = bytes;
    column_outside[12..14].copy_from_slice(&18u16.to_le_bytes());
    assert!(matches!(
        StackHeader::decode(&with_fresh_crc(column_outside)),
        Err(FormatError::Inconsistent(_))
    ));
}

#[test]
fn code_shapes_outside_the_format_are_typed_errors() {
    assert!(matches!(
        Code::new(0, 2, 64),
        Err(EcError::InvalidShape { .. })
    ));
    assert!(matches!(
        Code::new(200, 56, 64),
        Err(EcError::InvalidShape { .. })
    ));
    assert!(matches!(
        Code::new(4, 2, 0),
        Err(EcError::InvalidFragmentBytes { .. })
    ));
    assert!(matches!(
        Code::new(4, 2, 64 * 1024 * 1024 + 1),
        Err(EcError::InvalidFragmentBytes { .. })
    ));
    assert!(Code::new(250, 5, 1).is_ok());
    assert!(Code::new(3, 0, 100).is_ok());
    // Fragment sizes need not be multiples of anything.
    let odd = Code::new(3, 2, 33).unwrap();
    let blob = common::blob(1000, 4);
    let (output, _) = common::read_all(&odd, &blob, &common::stacks(&odd, &blob)).unwrap();
    assert_eq!(output, blob);
}

#[test]
fn encode_stripe_rejects_buffers_of_the_wrong_size() {
    let code = Code::new(4, 2, 64).unwrap();
    let mut parity = vec![0; 128];
    assert!(matches!(
        code.encode_stripe(&[0; 255], &mut parity),
        Err(EcError::BufferSize { what: "data", .. })
    ));
    assert!(matches!(
        code.encode_stripe(&[0; 256], &mut parity[..127]),
        Err(EcError::BufferSize { what: "parity", .. })
    ));
}

#[test]
fn fragment_i_of_every_column_sits_at_header_length_plus_i_framed_fragments() {
    let code = Code::new(3, 2, 100).unwrap();
    let blob = common::blob(1234, 6);
    let stacks = encode_stacks(&code, 1, &blob).unwrap();
    for stripe in 0..code.stripes_for(1234) {
        let offset = code.fragment_offset(stripe) as usize;
        assert_eq!(offset, 84 + stripe as usize * 104);
        for (column, stack) in stacks.iter().enumerate() {
            let fragment = &stack[offset..offset + 100];
            let crc = u32::from_le_bytes(stack[offset + 100..offset + 104].try_into().unwrap());
            assert_eq!(crc, crc32c::crc32c(fragment));
            if column < 3 {
                let start = (stripe as usize * 3 + column) * 100;
                let end = (start + 100).min(1234);
                if start < 1234 {
                    assert_eq!(&fragment[..end - start], &blob[start..end]);
                }
            }
        }
    }
}

#[test]
fn locate_names_the_stripes_and_data_columns_of_a_byte_range() {
    // The worked example of docs/stripe-format.md: k = 2, F = 64, bytes 100..150.
    let code = golden_code();
    let location = code.locate(200, 100..150).unwrap();
    assert_eq!((location.first_stripe, location.last_stripe), (0, 1));
    assert_eq!(location.data_columns, vec![0, 1]);
    let inside = code.locate(200, 70..90).unwrap();
    assert_eq!((inside.first_stripe, inside.last_stripe), (0, 0));
    assert_eq!(inside.data_columns, vec![1]);
    assert_eq!(code.stack_file_bytes(200), 220);
    assert_eq!(code.fragment_offset(1), 152);
}

#[test]
fn the_committed_golden_v1_stack_files_decode_to_the_known_blob() {
    let code = golden_code();
    let blob = golden_blob();
    if std::env::var_os("SPINWISE_BLESS_GOLDEN").is_some() {
        let stacks = encode_stacks(&code, GOLDEN_BLOB_ID, &blob).unwrap();
        for (column, stack) in stacks.iter().enumerate() {
            std::fs::write(golden_path(column), stack).unwrap();
        }
    }
    let stacks: Vec<Option<Vec<u8>>> = (0..3)
        .map(|column| Some(std::fs::read(golden_path(column)).expect("golden file")))
        .collect();
    for (column, stack) in stacks.iter().enumerate() {
        let stack = stack.as_ref().unwrap();
        assert_eq!(stack.len(), 220);
        let header = StackHeader::decode(stack).unwrap();
        assert_eq!(usize::from(header.column), column);
        assert_eq!(header.blob_id, GOLDEN_BLOB_ID);
        assert_eq!(header.blob_bytes, 200);
        assert_eq!(header.stripe_count, 2);
        assert_eq!(header.content_hash, content_hash(&blob));
    }
    let (output, report) = common::read_all(&code, &blob, &stacks).unwrap();
    assert_eq!(output, blob);
    assert!(report.is_clean());
    // And from the parity column with a data column gone.
    let mut degraded = stacks.clone();
    degraded[0] = None;
    assert_eq!(common::read_all(&code, &blob, &degraded).unwrap().0, blob);
}

#[test]
fn encoding_the_golden_blob_reproduces_the_committed_files_byte_for_byte() {
    let stacks = encode_stacks(&golden_code(), GOLDEN_BLOB_ID, &golden_blob()).unwrap();
    for (column, stack) in stacks.iter().enumerate() {
        let committed = std::fs::read(golden_path(column)).expect("golden file");
        assert_eq!(stack, &committed, "column {column}");
    }
}
