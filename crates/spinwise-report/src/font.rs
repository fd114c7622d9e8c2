//! Registers the embedded DejaVu Sans with plotters' font table.
//!
//! Invariants: registration happens exactly once per process (guarded by a `Once`) and before any
//! text is laid out; every render entry point calls [`ensure_registered`] first. The font is
//! embedded rather than looked up on the system because plotters is built without its
//! system-font feature (no fontconfig dependency) and so that figures are identical everywhere.

use std::sync::Once;

use plotters::style::{FontStyle, register_font};

/// The family name every text style in this crate uses; plotters' own mesh labels default to it.
pub(crate) const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

pub(crate) fn ensure_registered() {
    REGISTER.call_once(|| {
        // The bytes are compiled in and checked by the test below, so a parse failure is a
        // broken build, not a runtime condition a caller could handle.
        if register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_err() {
            panic!("embedded assets/DejaVuSans.ttf is not a valid font");
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_font_registers_and_is_idempotent() {
        super::ensure_registered();
        super::ensure_registered();
    }
}
