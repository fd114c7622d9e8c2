//! `spinwise quality`: the layout's low- and high-load metrics (Flamingo §5), measured only after
//! the layout verifies against its rack.
//!
//! Why verify first: the metrics divide by the bounds the layout file claims
//! (`max_active_groups_bound`, `high_load_bound`), so a hand-edited bound made the metric lie
//! (issue 29: an inflated bound of 48 on Pelican's layout read as a quality of 0.083). The rack
//! is the one given (`RACK.toml` or `--preset`), else the shipped preset the layout's rack
//! fingerprint names; a layout of any other rack is refused until its rack is given.

use crate::error::{CliError, CliResult};
use crate::output::outln;
use crate::plan::unverified;
use crate::source::{PRESETS, RackSource, load_preset, read_layout};
use clap::Args;
use serde_json::json;
use spinwise_model::{Layout, Rack};
use spinwise_plan::quality::{DEFAULT_TRIALS, MAX_TRIALS, quality};
use spinwise_plan::verify;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct QualityArgs {
    /// A layout written by `spinwise plan --out`.
    #[arg(value_name = "LAYOUT.json")]
    pub layout: PathBuf,
    /// The rack the layout was planned for (TOML); the layout is verified against it first.
    /// Without it or --preset: the shipped preset whose description the layout was planned for.
    #[arg(value_name = "RACK.toml")]
    pub rack: Option<PathBuf>,
    /// The shipped rack the layout was planned for (see `spinwise presets`).
    #[arg(long, value_name = "NAME", conflicts_with = "rack")]
    pub preset: Option<String>,
    /// Random group orderings to try (each distinct; all of them when there are fewer).
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    pub trials: u64,
    /// Seed of the orderings: the same seed gives the same result.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &QualityArgs) -> CliResult<()> {
    if args.trials == 0 || args.trials > MAX_TRIALS {
        return Err(CliError::Usage(format!(
            "--trials must be between 1 and {MAX_TRIALS}"
        )));
    }
    let layout = read_layout(&args.layout)?;
    let rack = rack_of(args, &layout)?;
    if let Err(violations) = verify(&rack, &layout) {
        return Err(unverified(&rack, &args.layout, &violations));
    }
    let started = Instant::now();
    let measured = quality(&layout, args.trials, args.seed);
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if args.json {
        let mut value = serde_json::to_value(&measured).expect("quality serializes");
        value["elapsed_ms"] = json!(elapsed_ms);
        value["rack"] = json!(layout.rack);
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("json values serialize")
        );
        return Ok(());
    }
    outln!(
        "layout      {} ({} groups of {})",
        layout.rack,
        layout.groups.len(),
        layout.group_size
    );
    outln!(
        "low load    {:.4} (min {:.3}; {:.2}% of trials reached {} groups)",
        measured.low_load,
        measured.low_load_min,
        measured.low_load_at_bound * 100.0,
        measured.low_load_bound
    );
    outln!(
        "high load   {:.4} (min {:.3}; {:.2}% of trials reached {} groups)",
        measured.high_load,
        measured.high_load_min,
        measured.high_load_at_bound * 100.0,
        measured.high_load_bound
    );
    outln!("symmetric   {}", measured.symmetric);
    outln!(
        "trials      {} (seed {}) in {elapsed_ms:.0} ms",
        measured.trials,
        measured.seed
    );
    Ok(())
}

/// The rack to verify `layout` against: the one given, else the shipped preset with the layout's
/// rack fingerprint.
fn rack_of(args: &QualityArgs, layout: &Layout) -> CliResult<Rack> {
    if args.rack.is_some() || args.preset.is_some() {
        let source = RackSource {
            preset: args.preset.clone(),
            rack: args.rack.clone(),
        };
        return source.load();
    }
    for (name, _) in PRESETS {
        let rack = load_preset(name)?;
        if rack.fingerprint() == layout.rack_fingerprint {
            return Ok(rack);
        }
    }
    Err(CliError::Usage(format!(
        "{}: the layout was planned for rack `{}`, which is not a shipped preset; give its rack file (`spinwise quality {} RACK.toml`) so the layout's claims can be verified before they are measured",
        args.layout.display(),
        layout.rack,
        args.layout.display()
    )))
}
