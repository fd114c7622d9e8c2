//! The shipped rack presets (`presets/*.toml` at the workspace root), embedded at build time by
//! build.rs so any crate can load one by name without reading a file.
//!
//! Invariant: [`PRESETS`] is in the order of the files' names (`pelican-prototype.toml` before
//! `pelican.toml`), each name once, and holds each file's text as shipped; loading one
//! parses it with the same rules as a user's rack file, so a preset is never trusted more.

use crate::{Rack, RackError, parse_rack};
use thiserror::Error;

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// Why a preset could not be loaded.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PresetError {
    #[error("unknown preset `{name}`; shipped presets: {known}")]
    Unknown { name: String, known: String },
    /// A shipped file that does not parse (a broken build, caught by this crate's tests).
    #[error(transparent)]
    Rack(#[from] RackError),
}

/// The TOML text of the preset `name`, if one is shipped.
pub fn text(name: &str) -> Option<&'static str> {
    PRESETS
        .iter()
        .find(|(preset, _)| *preset == name)
        .map(|(_, text)| *text)
}

/// The preset `name`, parsed; its source in errors is `preset NAME`.
pub fn load(name: &str) -> Result<Rack, PresetError> {
    let text = text(name).ok_or_else(|| PresetError::Unknown {
        name: name.to_string(),
        known: PRESETS
            .iter()
            .map(|(preset, _)| *preset)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    Ok(parse_rack(&format!("preset {name}"), text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_preset_parses_and_each_name_is_listed_once() {
        assert!(PRESETS.iter().any(|(name, _)| *name == "pelican"));
        let names: std::collections::BTreeSet<_> = PRESETS.iter().map(|(name, _)| name).collect();
        assert_eq!(names.len(), PRESETS.len());
        for (name, _) in PRESETS {
            let rack = load(name).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert!(!rack.name.is_empty(), "{name}");
        }
    }

    #[test]
    fn an_unknown_preset_is_refused_naming_the_shipped_ones() {
        let error = load("no-such-rack").unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("unknown preset `no-such-rack`; shipped presets: "));
        assert!(message.contains("pelican"), "{message}");
    }
}
