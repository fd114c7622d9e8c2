//! Where a rack comes from: a shipped preset (embedded at build time) or a TOML file.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use clap::Args;
use spinwise_model::{Rack, parse_rack};
use std::path::PathBuf;

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
