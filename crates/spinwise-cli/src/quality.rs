//! `spinwise quality`.

use crate::error::{CliError, CliResult};
use crate::output::outln;
use crate::source::read_layout;
use clap::Args;
use serde_json::json;
use spinwise_plan::quality::{DEFAULT_TRIALS, MAX_TRIALS, quality};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct QualityArgs {
    /// A layout written by `spinwise plan --out`.
    #[arg(value_name = "LAYOUT.json")]
    pub layout: PathBuf,
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
