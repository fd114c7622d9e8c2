//! Shared by the store's examples (each includes it with `#[path]`; cargo does not build this
//! directory as an example): deterministic object bytes, and a store configuration on a preset
//! rack with its planned layout and the emulated latencies at a thousandth.

use spinwise_model::Layout;
use spinwise_store::{RackSource, StoreConfig};

/// Deterministic incompressible bytes for object `seed` (BLAKE3's extendable output).
pub fn pattern(bytes: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0; bytes];
    blake3::Hasher::new()
        .update(&seed.to_le_bytes())
        .finalize_xof()
        .fill(&mut data);
    data
}

/// The preset `name` (its TOML `rack_toml`), planned, with latencies at a thousandth;
/// `adjust` changes the layout before the configuration takes it.
pub fn preset_config(name: &str, rack_toml: &str, adjust: impl FnOnce(&mut Layout)) -> StoreConfig {
    let rack = spinwise_model::parse_rack(name, rack_toml).expect("the preset parses");
    let mut layout = spinwise_plan::plan(&rack).expect("the preset plans").layout;
    adjust(&mut layout);
    let mut config = StoreConfig::new(
        RackSource::Preset(name.into()),
        rack_toml.to_string(),
        layout,
    );
    config.time_factor = 0.001;
    config
}
