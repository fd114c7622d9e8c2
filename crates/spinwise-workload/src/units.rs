//! Capacities written for people (`10TB`, `500GiB`, `1.5PB`) read into bytes.
//!
//! Invariants: a parsed capacity is a whole number of bytes in `1..=MAX_CAPACITY_BYTES`;
//! decimal prefixes are powers of 1000 and binary ones powers of 1024, as IEC 80000-13 has it.

use crate::error::CapacityError;

/// The largest capacity accepted: 1 EB (10^18 bytes), a thousand Pelican racks. Sums of sizes
/// below it never overflow u64 (1.8 × 10^19).
pub const MAX_CAPACITY_BYTES: u64 = 1_000_000_000_000_000_000;

/// Units and their bytes, longest first within a letter so `KiB` is not read as `K`.
const UNITS: [(&str, f64); 12] = [
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
    ("TiB", 1099511627776.0),
    ("PiB", 1125899906842624.0),
    ("kB", 1e3),
    ("KB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
    ("PB", 1e15),
    ("B", 1.0),
];

/// Reads `number unit` (space optional; a bare number is bytes), rounding to the nearest byte.
pub fn parse_capacity_bytes(text: &str) -> Result<u64, CapacityError> {
    let trimmed = text.trim();
    let unreadable = || CapacityError::Unreadable {
        text: trimmed.chars().take(40).collect(),
    };
    let (number_text, multiplier) = UNITS
        .iter()
        .find_map(|(unit, bytes)| trimmed.strip_suffix(unit).map(|n| (n.trim_end(), *bytes)))
        .unwrap_or((trimmed, 1.0));
    if number_text.is_empty() || !number_text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(unreadable());
    }
    let number: f64 = number_text.parse().map_err(|_| unreadable())?;
    let bytes = (number * multiplier).round();
    let out_of_range = |what| CapacityError::OutOfRange {
        text: trimmed.chars().take(40).collect(),
        what,
        max: MAX_CAPACITY_BYTES,
    };
    if !bytes.is_finite() || bytes > MAX_CAPACITY_BYTES as f64 {
        return Err(out_of_range("too large"));
    }
    if bytes < 1.0 {
        return Err(out_of_range("less than a byte"));
    }
    Ok(bytes as u64)
}
