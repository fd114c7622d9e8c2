//! Shared helpers for the planner's integration tests: loading the presets from `presets/` (found
//! by listing the directory, so a new preset is tested without editing any list).

#![allow(dead_code)] // each test crate uses a different subset of these helpers

use spinwise_model::{Rack, parse_rack};
use std::path::PathBuf;

/// The workspace's `presets/` directory.
pub fn presets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../presets")
}

/// Every `*.toml` file in `presets/`, sorted by file name (deterministic order).
pub fn preset_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(presets_dir())
        .expect("presets/ is readable")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "presets/ holds no .toml file");
    paths
}

/// The text of preset `name` (file name without `.toml`).
pub fn preset_text(name: &str) -> String {
    let path = presets_dir().join(format!("{name}.toml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses preset `name`, panicking with the rack error if it does not parse.
pub fn preset(name: &str) -> Rack {
    parse_rack(&format!("preset:{name}"), &preset_text(name))
        .unwrap_or_else(|e| panic!("preset {name} does not parse: {e}"))
}

/// Every preset, parsed, with its file stem.
pub fn all_presets() -> Vec<(String, Rack)> {
    preset_paths()
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("preset file names are UTF-8")
                .to_string();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let rack = parse_rack(&path.display().to_string(), &text)
                .unwrap_or_else(|e| panic!("preset {name} does not parse: {e}"));
            (name, rack)
        })
        .collect()
}
