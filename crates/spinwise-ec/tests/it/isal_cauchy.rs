//! The parity is ISA-L's Cauchy code: an independent scalar GF(2^8) implementation of ISA-L's
//! `gf_gen_cauchy1_matrix` (coefficient `1 / (i XOR j)` for parity row `i ≥ k`, data column
//! `j`, polynomial 0x11d) must produce the same bytes as the crate's SIMD encoder. No
//! ISA-L-generated vector is available offline here, so this checks the construction, not a
//! vector produced by ISA-L itself.

use crate::common;

use spinwise_ec::Code;

/// Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1 (shift and add).
fn gf_multiply(mut left: u8, mut right: u8) -> u8 {
    let mut product = 0u8;
    while right != 0 {
        if right & 1 != 0 {
            product ^= left;
        }
        let carry = left & 0x80 != 0;
        left <<= 1;
        if carry {
            left ^= 0x1d;
        }
        right >>= 1;
    }
    product
}

fn gf_inverse(value: u8) -> u8 {
    (1..=255u8)
        .find(|&candidate| gf_multiply(value, candidate) == 1)
        .expect("every non-zero element has an inverse")
}

/// Parity by the textbook definition: P[p][t] = Σ_j inv((k + p) ^ j) · D[j][t].
fn oracle_parity(data_columns: usize, parity_columns: usize, data: &[u8]) -> Vec<u8> {
    let fragment_bytes = data.len() / data_columns;
    let mut parity = vec![0u8; parity_columns * fragment_bytes];
    for row in 0..parity_columns {
        for column in 0..data_columns {
            let coefficient = gf_inverse(((data_columns + row) ^ column) as u8);
            for byte in 0..fragment_bytes {
                parity[row * fragment_bytes + byte] ^=
                    gf_multiply(coefficient, data[column * fragment_bytes + byte]);
            }
        }
    }
    parity
}

#[test]
fn the_field_arithmetic_of_the_oracle_is_isa_l_s() {
    // 2^8 = x^4 + x^3 + x^2 + 1 = 0x1d in ISA-L's field; 2 · 0x8e = 1, so inv(2) = 0x8e.
    assert_eq!(gf_multiply(0x80, 2), 0x1d);
    assert_eq!(gf_inverse(2), 0x8e);
    assert_eq!(gf_multiply(3, 7), 9);
}

#[test]
fn parity_equals_isa_l_cauchy1_parity_for_the_layouts_in_use() {
    for (data_columns, parity_columns, fragment_bytes) in [
        (2, 1, 64),
        (3, 2, 100),
        (4, 2, 256),
        (10, 4, 1000),
        (15, 3, 4096),
    ] {
        let code = Code::new(data_columns, parity_columns, fragment_bytes).unwrap();
        let data = common::blob(data_columns * fragment_bytes, data_columns as u64);
        let mut parity = vec![0u8; parity_columns * fragment_bytes];
        code.encode_stripe(&data, &mut parity).unwrap();
        assert_eq!(
            parity,
            oracle_parity(data_columns, parity_columns, &data),
            "{data_columns}+{parity_columns}"
        );
    }
}

#[test]
fn a_pinned_15_plus_3_parity_vector_is_unchanged() {
    // Data fragment j is all bytes j + 1; each parity byte is then a fixed field sum. The
    // values come from the oracle above and pin them against a silent change of codec.
    let code = Code::new(15, 3, 64).unwrap();
    let data: Vec<u8> = (0..15u8).flat_map(|column| [column + 1; 64]).collect();
    let mut parity = vec![0u8; 3 * 64];
    code.encode_stripe(&data, &mut parity).unwrap();
    let first_bytes = [parity[0], parity[64], parity[128]];
    assert_eq!(
        first_bytes.to_vec(),
        oracle_parity(15, 3, &data)
            .chunks(64)
            .map(|row| row[0])
            .collect::<Vec<_>>()
    );
    assert_eq!(first_bytes, PINNED_15_3_FIRST_BYTES);
}

const PINNED_15_3_FIRST_BYTES: [u8; 3] = [0xa6, 0xd5, 0x8e];
