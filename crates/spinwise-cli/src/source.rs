//! Where a rack comes from (a shipped preset, embedded at build time, or a TOML file) and where
//! its layout comes from (a layout file, or the planner run on the rack).
//!
//! Invariant: every rack and layout file any subcommand reads goes through [`read_bounded`], so
//! no file costs more than its limit (`spinwise_model::limits`) in memory or reading time, and
//! none can block the command before it is read (a FIFO without a writer).

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use clap::Args;
use spinwise_model::{Layout, Rack, limits, parse_rack};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

pub use spinwise_model::presets::PRESETS;

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
                let text = read_rack_file(path)?;
                Ok(parse_rack(&path.display().to_string(), &text)?)
            }
            (Some(name), None) => load_preset(name),
            (None, None) => load_preset("pelican"),
        }
    }
}

pub fn load_preset(name: &str) -> CliResult<Rack> {
    Ok(spinwise_model::presets::load(name)?)
}

/// The text of a rack file (docs/rack-format.md), at most `limits::MAX_RACK_FILE_BYTES`.
pub fn read_rack_file(path: &Path) -> CliResult<String> {
    read_bounded(
        path,
        limits::MAX_RACK_FILE_BYTES,
        "a rack file",
        "limits::MAX_RACK_FILE_BYTES",
    )
}

/// Reads a layout file (docs/layout-format.md), at most `limits::MAX_LAYOUT_FILE_BYTES`; errors
/// name the path.
pub fn read_layout(path: &Path) -> CliResult<Layout> {
    let text = read_bounded(
        path,
        limits::MAX_LAYOUT_FILE_BYTES,
        "a layout file",
        "limits::MAX_LAYOUT_FILE_BYTES",
    )?;
    Ok(Layout::from_json(&path.display().to_string(), &text)?)
}

/// The UTF-8 text of the file at `path`, refusing it once it passes `limit` bytes. At most
/// `limit` + 1 bytes are read whatever the file claims or holds (a sparse 4 GB file, a device
/// that never ends such as `/dev/zero`), so a refusal costs at most the limit in memory.
/// Directories, FIFOs and sockets are refused before opening: opening a FIFO for reading
/// waits for a writer, which could block the command forever.
pub fn read_bounded(
    path: &Path,
    limit: usize,
    what: &'static str,
    constant: &'static str,
) -> CliResult<String> {
    let shown = || path.display().to_string();
    let file_type = std::fs::metadata(path).map_err(io_error(path))?.file_type();
    let kind = if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(kind) = kind {
        return Err(CliError::NotAFile {
            path: shown(),
            what,
            kind,
        });
    }
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    // The file's claimed size only sizes the buffer (capped): the bound is the `take`.
    let claimed = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::with_capacity(claimed.min(limit as u64 + 1) as usize);
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    if bytes.len() > limit {
        return Err(CliError::FileTooLarge {
            path: shown(),
            limit,
            what,
            constant,
        });
    }
    String::from_utf8(bytes).map_err(|error| CliError::NotUtf8 {
        path: shown(),
        offset: error.utf8_error().valid_up_to(),
    })
}

/// The layout at `path` (`--layout`), or without one the planner's layout for `rack` (which the
/// planner verified itself). A given layout is verified against `rack` as `spinwise verify`
/// does — budgets, targets and every claim — before anything runs on it: a hand-edited file
/// must not drive disks or a simulation past what the rack allows.
pub fn layout_or_plan(rack: &Rack, path: Option<&Path>) -> CliResult<Layout> {
    match path {
        Some(path) => {
            let layout = read_layout(path)?;
            spinwise_plan::verify(rack, &layout)
                .map_err(|violations| crate::plan::unverified(rack, path, &violations))?;
            Ok(layout)
        }
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
