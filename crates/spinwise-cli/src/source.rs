//! Where a rack comes from (a shipped preset, embedded at build time, or a TOML file) and where
//! its layout comes from (a layout file, or the planner run on the rack).

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use clap::Args;
use spinwise_model::{Layout, Rack, parse_rack};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// `--preset NAME` or a rack file; the default is the `pelican` preset.
#[derive(Args, Clone, Debug)]
pub struct RackSource {
    /// A shipped rack (see `spinwise presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "rack")]
    pub preset: Option<String>,
    /// A rack description (TOML, docs/rack-format.md).
    #[arg(value_name = "RACK.toml")]
    pub rack: Option<PathBuf>,
}

impl RackSource {
    pub fn load(&self) -> CliResult<Rack> {
        match (&self.preset, &self.rack) {
            (_, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(io_error(path))?;
                Ok(parse_rack(&path.display().to_string(), &text)?)
            }
            (Some(name), None) => load_preset(name),
            (None, None) => load_preset("pelican"),
        }
    }
}

pub fn load_preset(name: &str) -> CliResult<Rack> {
    let (_, text) = PRESETS
        .iter()
        .find(|(preset, _)| *preset == name)
        .ok_or_else(|| CliError::UnknownPreset {
            name: name.to_string(),
            known: PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    Ok(parse_rack(&format!("preset {name}"), text)?)
}

/// Reads a layout file (docs/layout-format.md); errors name the path.
pub fn read_layout(path: &Path) -> CliResult<Layout> {
    let text = std::fs::read_to_string(path).map_err(io_error(path))?;
    Ok(Layout::from_json(&path.display().to_string(), &text)?)
}

/// The layout at `path` (`--layout`), or without one the planner's layout for `rack`. Whether a
/// given layout fits the rack is the consumer's check (`Layout::group_disk_indices`).
pub fn layout_or_plan(rack: &Rack, path: Option<&Path>) -> CliResult<Layout> {
    match path {
        Some(path) => read_layout(path),
        None => Ok(spinwise_plan::plan(rack)
            .map_err(|source| CliError::Plan {
                rack: rack.name.clone(),
                source,
            })?
            .layout),
    }
}

#[derive(Args)]
pub struct PresetsArgs {
    /// Print one JSON object per preset instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run_presets(args: &PresetsArgs) -> CliResult<()> {
    let mut rows = Vec::new();
    for (name, _) in PRESETS {
        let rack = load_preset(name)?;
        rows.push(serde_json::json!({ "name": name, "disks": rack.disk_count(), "description": rack.description }));
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("json values serialize")
        );
        return Ok(());
    }
    for row in rows {
        let name = row["name"].as_str().unwrap_or("");
        let disks = row["disks"].as_u64().unwrap_or(0);
        outln!(
            "{name:<20} {disks:>5} disks  {}",
            row["description"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
