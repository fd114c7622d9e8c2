//! The `spinwise` command. Argument parsing and output only: every decision is made by the
//! library crates (spinwise-plan for planning, spinwise-report for files people read).
//!
//! Exit status: 0 on success, 1 when the input is refused (bad rack, bad layout, unplannable
//! configuration), 2 on a usage error (clap's convention).

// CliError wraps RackError by value; it is built once, just before the process exits.
#![allow(clippy::result_large_err)]

mod admin;
mod bench;
mod design;
mod error;
mod experiment;
mod explore;
mod output;
mod ownership;
mod plan;
mod quality;
mod serve;
mod serve_config;
mod sim;
mod source;
mod store;
mod workload;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "spinwise",
    version,
    about = "Cold storage for racks that cannot spin every disk at once",
    long_about = "Spinwise plans and runs cold storage on racks whose power, cooling and vibration budgets let only a \
                  few disks spin at once.\n\nTo store data, start `spinwise serve`: an S3 endpoint on 127.0.0.1:9000 over a \
                  small emulated rack (docs/s3.md). To design a rack, start with `spinwise plan --preset pelican`, \
                  `spinwise sim --preset pelican --rate 2`, or `spinwise presets` to see the shipped racks. Rack \
                  files are TOML, specified in docs/rack-format.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Synthesize a layout for a rack: group size, erasure code, disk → group assignment and the
    /// scheduler's group constraints, checked by an independent verifier.
    Plan(plan::PlanArgs),
    /// Measure a layout's quality (Flamingo §5): how many groups random orderings can spin up
    /// together (low load) and keep active while one more spins up (high load).
    Quality(quality::QualityArgs),
    /// Explore the rack design space: relax the bottleneck resource step by step, plan every
    /// configuration, and write a CSV, a JSON summary and a provisioning figure (PNG and SVG).
    Explore(explore::ExploreArgs),
    /// Simulate the rack under a read workload with the scheduler the server runs (or Flamingo's,
    /// fully provisioned or the random layout, `--policy`): throughput, latency, spin-ups, power
    /// and budget checks.
    Sim(sim::SimArgs),
    /// Reproduce a figure of a paper's evaluation (Pelican, Flamingo, the semi-preemptive GC
    /// and Gecko slides): a sweep of simulations on both cores, written as results.csv, PNG and
    /// SVG figures and a summary.md beside the paper's numbers (`--list` names them).
    Experiment(experiment::ExperimentArgs),
    /// Check a layout file against a rack with the independent verifier.
    Verify(plan::VerifyArgs),
    /// List the shipped rack presets.
    Presets(source::PresetsArgs),
    /// The cold blob store on a data directory: init, put, get, rm, ls, stat, status.
    Store(store::StoreArgs),
    /// The S3-compatible server over a data directory (created on first start): buckets, objects,
    /// ranges, storage classes STANDARD (staged) and GLACIER_IR or GLACIER (migrated, by the
    /// bucket's restore mode); flags or a --config file; docs/s3.md.
    Serve(serve::ServeArgs),
    /// Archival workloads (docs/workload.md): fit file-size models (Gamma, generalised Gamma,
    /// lognormal) to a log2-bucket histogram, and generate seeded file sets to a capacity with
    /// sequential-write batches and random reads, written as a manifest and a trace that
    /// `spinwise sim --trace` replays.
    Workload(workload::WorkloadArgs),
    /// Benchmark an archive the way it is used (Lee, O'Sullivan and Walker): files written in
    /// sequential batches and read back at random at rising capacity utilisation, against any
    /// S3 endpoint or a store directory; results.csv, figures and --json.
    Bench(bench::BenchArgs),
    /// The cost-optimal archive for a catalogue of disks, enclosures, servers and NICs (Lee,
    /// O'Sullivan and Walker): every candidate rack planned and simulated under the requested
    /// workload, then a mixed-integer program picks the least total cost of ownership; the bill
    /// of materials, what binds, sensitivity and a cost frontier (docs/design.md; `--example`
    /// designs a 10 PB archive).
    Design(design::DesignArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args),
        Command::Quality(args) => quality::run(&args),
        Command::Explore(args) => explore::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Experiment(args) => experiment::run(&args),
        Command::Verify(args) => plan::run_verify(&args),
        Command::Presets(args) => source::run_presets(&args),
        Command::Store(args) => store::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Workload(args) => workload::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Design(args) => design::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
