//! The continuous colour map used for the third dimension of scatter figures.
//!
//! Invariants: [`viridis`] is total — any `f64`, including NaN and values outside `0..=1`, maps to
//! a colour (clamped to the end stops; NaN to the low end), so drawing code never has to handle a
//! failure here. Input validation happens earlier, where the error can name the bad point.

use plotters::style::RGBColor;

/// Five samples of matplotlib's viridis at 0, 0.25, 0.5, 0.75 and 1. Viridis is perceptually
/// uniform and stays readable in greyscale and for the common forms of colour blindness, which
/// matters because the colour carries a quantity (e.g. vibration provisioned), not a category.
const STOPS: [(u8, u8, u8); 5] = [
    (0x44, 0x01, 0x54),
    (0x3b, 0x52, 0x8b),
    (0x21, 0x91, 0x8c),
    (0x5e, 0xc9, 0x62),
    (0xfd, 0xe7, 0x25),
];

/// Maps `t` in `0..=1` to a viridis-like colour by linear interpolation between five stops.
/// Values outside the range are clamped and NaN maps to the low end.
pub(crate) fn viridis(t: f64) -> RGBColor {
    // `clamp` keeps NaN as NaN, so handle it first: the map must be total (see module docs).
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let segments = (STOPS.len() - 1) as f64;
    let scaled = t * segments;
    // At t == 1 the floor lands on the last stop; use the last segment with fraction 1 instead.
    let index = (scaled.floor() as usize).min(STOPS.len() - 2);
    let fraction = scaled - index as f64;
    let (a, b) = (STOPS[index], STOPS[index + 1]);
    let mix = |lo: u8, hi: u8| -> u8 {
        (f64::from(lo) + (f64::from(hi) - f64::from(lo)) * fraction)
            .round()
            .clamp(0.0, 255.0) as u8
    };
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_and_middle_stops_are_exact() {
        assert_eq!(viridis(0.0), RGBColor(0x44, 0x01, 0x54));
        assert_eq!(viridis(0.5), RGBColor(0x21, 0x91, 0x8c));
        assert_eq!(viridis(1.0), RGBColor(0xfd, 0xe7, 0x25));
    }

    #[test]
    fn out_of_range_and_nan_are_clamped() {
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(7.0), viridis(1.0));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(viridis(f64::INFINITY), viridis(1.0));
    }

    #[test]
    fn interpolates_between_stops() {
        // Halfway between stop 0 (0x44,0x01,0x54) and stop 1 (0x3b,0x52,0x8b).
        assert_eq!(viridis(0.125), RGBColor(0x40, 0x2a, 0x70));
    }
}
