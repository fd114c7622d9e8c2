//! `Amount`: a resource quantity (watts, a semaphore count, Gbps …) held as an exact fixed-point
//! integer of micro-units.
//!
//! Why fixed point: the planner compares sums of per-disk costs against budgets thousands of times
//! per configuration, and the verifier must reach the same verdict independently. Floating-point
//! sums depend on summation order (1.56 × 14 + 21.53 × 2 is not the same double twice), so a
//! budget sized exactly for two spinning disks could pass in one checker and fail in another.
//! Integers make every comparison exact and order-independent.
//!
//! Invariant: an `Amount` parsed from user input is finite, non-negative and at most
//! [`Amount::MAX_UNITS`] units; inputs are rounded to the nearest micro-unit.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Micro-units per unit.
pub const MICROS_PER_UNIT: i64 = 1_000_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(i64);

impl Amount {
    /// The largest quantity accepted from a file: a million units (a megawatt, a million Gbps).
    /// In micro-units that is 10¹², so the cost of every disk of the largest rack
    /// (`limits::MAX_DISKS` = 10⁵) in its costliest state sums to at most 10¹⁷, far inside i64
    /// (9.2 × 10¹⁸), and so does any budget exploration can reach (full provisioning).
    pub const MAX_UNITS: f64 = 1e6;
    pub const ZERO: Amount = Amount(0);

    pub const fn from_micros(micros: i64) -> Amount {
        Amount(micros)
    }

    pub const fn micros(self) -> i64 {
        self.0
    }

    pub fn from_units(units: i64) -> Amount {
        Amount(units * MICROS_PER_UNIT)
    }

    /// Converts a user-supplied number, rounding to the nearest micro-unit. `None` for NaN,
    /// infinities, negatives and values above [`Amount::MAX_UNITS`].
    pub fn from_f64(value: f64) -> Option<Amount> {
        if !value.is_finite() || !(0.0..=Self::MAX_UNITS).contains(&value) {
            return None;
        }
        Some(Amount((value * MICROS_PER_UNIT as f64).round() as i64))
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_UNIT as f64
    }

    pub fn saturating_sub(self, other: Amount) -> Amount {
        Amount(self.0.saturating_sub(other.0))
    }

    /// `self × count`; panics on overflow, which input limits make impossible.
    pub fn times(self, count: u64) -> Amount {
        let count = i64::try_from(count).expect("disk counts fit in i64");
        Amount(self.0.checked_mul(count).expect("amount overflow"))
    }

    /// How many whole `step`s fit in `self` (floor). `None` when `step` is zero.
    pub fn whole_steps(self, step: Amount) -> Option<i64> {
        if step.0 <= 0 {
            return None;
        }
        Some(self.0.div_euclid(step.0))
    }
}

impl std::ops::Add for Amount {
    type Output = Amount;
    fn add(self, other: Amount) -> Amount {
        Amount(self.0.checked_add(other.0).expect("amount overflow"))
    }
}

impl std::ops::AddAssign for Amount {
    fn add_assign(&mut self, other: Amount) {
        *self = *self + other;
    }
}

impl std::ops::Sub for Amount {
    type Output = Amount;
    fn sub(self, other: Amount) -> Amount {
        Amount(self.0.checked_sub(other.0).expect("amount overflow"))
    }
}

impl std::ops::SubAssign for Amount {
    fn sub_assign(&mut self, other: Amount) {
        *self = *self - other;
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Shortest exact decimal: trailing zeros of the micro-unit fraction are dropped.
        let sign = if self.0 < 0 { "-" } else { "" };
        let magnitude = self.0.unsigned_abs();
        let whole = magnitude / MICROS_PER_UNIT as u64;
        let fraction = magnitude % MICROS_PER_UNIT as u64;
        if fraction == 0 {
            return write!(f, "{sign}{whole}");
        }
        let digits = format!("{fraction:06}");
        write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Amount, D::Error> {
        let value = f64::deserialize(deserializer)?;
        Amount::from_f64(value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{} is not a quantity: it must be a finite number between 0 and {}",
                // As written (`1e300`), not as a 301-digit integer.
                crate::quote::number(value),
                Amount::MAX_UNITS
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_decimal_costs_are_exact() {
        let standby = Amount::from_f64(1.56).unwrap();
        let spinning_up = Amount::from_f64(21.53).unwrap();
        let budget = Amount::from_f64(64.9).unwrap();
        assert_eq!(spinning_up.times(2) + standby.times(14), budget);
    }

    #[test]
    fn rejects_negative_and_non_finite_values() {
        assert!(Amount::from_f64(-0.5).is_none());
        assert!(Amount::from_f64(f64::NAN).is_none());
        assert!(Amount::from_f64(f64::INFINITY).is_none());
        assert!(Amount::from_f64(2e6).is_none());
    }

    #[test]
    fn displays_shortest_exact_decimal() {
        assert_eq!(Amount::from_f64(21.53).unwrap().to_string(), "21.53");
        assert_eq!(Amount::from_units(3).to_string(), "3");
        assert_eq!(Amount::from_micros(1).to_string(), "0.000001");
    }

    #[test]
    fn whole_steps_floors() {
        let budget = Amount::from_f64(39.94).unwrap();
        let step = Amount::from_f64(19.97).unwrap();
        assert_eq!(budget.whole_steps(step), Some(2));
        assert_eq!(budget.whole_steps(Amount::ZERO), None);
    }
}
