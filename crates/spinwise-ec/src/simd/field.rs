//! GF(2^8) arithmetic for building the kernels' coefficients (never on the data path): ISA-L's
//! field (polynomial x^8 + x^4 + x^3 + x^2 + 1, 0x11D), its Cauchy matrix, matrix inversion, and
//! each coefficient as the 8×8 bit matrix the GFNI kernel multiplies with.
//!
//! Invariants: `gf_multiply` and `gf_inverse` are the field's operations (tested exhaustively);
//! the Cauchy coefficient of parity row `i`, data column `j` of a code with `k` data columns is
//! `1 / ((k + i) XOR j)`, ISA-L's `gf_gen_cauchy1_matrix`.

/// `a × b` (shift-and-add).
pub(crate) fn gf_multiply(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0u8;
    while b != 0 {
        if b & 1 == 1 {
            product ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= 0x1D;
        }
        b >>= 1;
    }
    product
}

/// `1 / a` (`a^254`); 0 for 0, as ISA-L's `gf_inv`.
pub(crate) fn gf_inverse(a: u8) -> u8 {
    let mut result = 1u8;
    let mut power = a;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 == 1 {
            result = gf_multiply(result, power);
        }
        power = gf_multiply(power, power);
        exponent >>= 1;
    }
    result
}

/// The Cauchy coefficient of parity row `parity_row` and data column `data_column` in a code
/// with `data_columns` data columns.
pub(crate) fn cauchy_coefficient(data_columns: usize, parity_row: usize, data_column: usize) -> u8 {
    let row = data_columns + parity_row;
    assert!(
        row < 256 && data_column < data_columns,
        "Cauchy index out of range"
    );
    gf_inverse((row ^ data_column) as u8)
}

/// The inverse of the `n × n` row-major `matrix` (Gauss-Jordan), `None` when it is singular
/// (a Cauchy code's survivor rows never are).
pub(crate) fn invert(mut matrix: Vec<u8>, n: usize) -> Option<Vec<u8>> {
    let mut inverse = vec![0u8; n * n];
    for diagonal in 0..n {
        inverse[diagonal * n + diagonal] = 1;
    }
    for column in 0..n {
        let pivot = (column..n).find(|&row| matrix[row * n + column] != 0)?;
        for index in 0..n {
            matrix.swap(pivot * n + index, column * n + index);
            inverse.swap(pivot * n + index, column * n + index);
        }
        let scale = gf_inverse(matrix[column * n + column]);
        for index in 0..n {
            matrix[column * n + index] = gf_multiply(scale, matrix[column * n + index]);
            inverse[column * n + index] = gf_multiply(scale, inverse[column * n + index]);
        }
        for row in (0..n).filter(|&row| row != column) {
            let factor = matrix[row * n + column];
            if factor == 0 {
                continue;
            }
            for index in 0..n {
                matrix[row * n + index] ^= gf_multiply(factor, matrix[column * n + index]);
                inverse[row * n + index] ^= gf_multiply(factor, inverse[column * n + index]);
            }
        }
    }
    Some(inverse)
}

/// The 8×8 bit matrix `A` for which `vgf2p8affineqb(x, A, 0)` is `c × x`: bit `i` of the
/// result is the parity of `x AND` byte `7 − i` of `A`, so byte `7 − i` lists the input bits
/// whose products with `c` have bit `i` set.
pub(crate) fn affine_matrix(coefficient: u8) -> u64 {
    let mut matrix = 0u64;
    for output_bit in 0..8 {
        let mut row = 0u8;
        for input_bit in 0..8 {
            if (gf_multiply(coefficient, 1 << input_bit) >> output_bit) & 1 == 1 {
                row |= 1 << input_bit;
            }
        }
        matrix |= u64::from(row) << (8 * (7 - output_bit));
    }
    matrix
}

/// What `vgf2p8affineqb(x, matrix, 0)` computes for one byte (the instruction's definition,
/// written out so the matrices can be checked on any CPU).
#[cfg(test)]
pub(crate) fn affine_reference(x: u8, matrix: u64) -> u8 {
    (0..8).fold(0u8, |result, output_bit| {
        let row = (matrix >> (8 * (7 - output_bit))) as u8;
        result | ((((row & x).count_ones() & 1) as u8) << output_bit)
    })
}
