//! `spinwise workload`: archival workloads (issue 34). `fit` reads a log2-bucket histogram of file
//! sizes and prints each model's maximum-likelihood fit with its goodness of fit and the
//! `--params` text of the fit and its envelopes; `generate` draws a file set to a capacity from
//! a model (or one of its envelopes) and writes the manifest, the simulator's trace and a
//! summary. Every decision is spinwise-workload's (docs/workload.md); this file parses, reads,
//! writes and prints.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::read_bounded;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;
use spinwise_workload::{
    DEFAULT_CONFIDENCE, Envelope, Family, FileSizeModel, Fit, Histogram, Popularity, StreamOptions,
    Variable, fit, generate_file_set, operations, parse_capacity_bytes, write_manifest,
    write_trace,
};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest histogram file read: 63 buckets take a few kilobytes; the rest is room for
/// comments. Anything larger is not a histogram.
pub const MAX_HISTOGRAM_FILE_BYTES: usize = 1 << 20;

#[derive(Args)]
pub struct WorkloadArgs {
    #[command(subcommand)]
    pub command: WorkloadCommand,
}

#[derive(Subcommand)]
pub enum WorkloadCommand {
    /// Fit file-size models to a histogram of file sizes in log2 buckets (CSV
    /// `bucket_log2,count`, bucket b holding sizes in [2^b, 2^(b+1)) bytes) by maximum likelihood
    /// on the binned counts; print each fit's parameters, standard errors, chi-square test and
    /// KS distance, and the `--params` text of the fit and of its lower and upper envelopes for
    /// `spinwise workload generate`.
    Fit(FitArgs),
    /// Draw a file set from a model until a capacity is filled (seeded: the same arguments give
    /// the same files), then write DIR/manifest.csv (`key,size_bytes`), DIR/trace.csv (the
    /// files written in sequential batches, then random reads; replay it with `spinwise sim
    /// --trace`) and DIR/workload.json (what was generated).
    Generate(GenerateArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ModelName {
    /// Gamma(shape, scale).
    Gamma,
    /// Stacy's generalised Gamma (a, d, p): Gamma is p = 1, Weibull d = p.
    Gengamma,
    /// Lognormal (mu, sigma of ln X).
    Lognormal,
}

impl ModelName {
    fn family(self) -> Family {
        match self {
            ModelName::Gamma => Family::Gamma,
            ModelName::Gengamma => Family::GeneralizedGamma,
            ModelName::Lognormal => Family::LogNormal,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum VariableName {
    /// The model describes the size in bytes.
    Bytes,
    /// The model describes log2 of the size in bytes (the histogram's axis).
    Log2,
}

impl VariableName {
    fn variable(self) -> Variable {
        match self {
            VariableName::Bytes => Variable::Bytes,
            VariableName::Log2 => Variable::Log2,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EnvelopeName {
    /// More large files: the scale at the top of its confidence interval.
    Lower,
    /// More small files: the scale at the bottom of its confidence interval.
    Upper,
}

#[derive(Args)]
pub struct FitArgs {
    /// The histogram (CSV `bucket_log2,count`; `#` comments; docs/workload.md).
    #[arg(long, value_name = "FILE.csv")]
    pub histogram: PathBuf,
    /// The model to fit (default: all three, best log-likelihood first).
    #[arg(long, value_enum)]
    pub model: Option<ModelName>,
    /// What the model describes: the size in bytes, or log2 of it.
    #[arg(long, value_enum, default_value = "bytes")]
    pub variable: VariableName,
    /// Confidence level of the envelopes printed (0 < L < 1).
    #[arg(long, value_name = "L", default_value_t = DEFAULT_CONFIDENCE)]
    pub confidence: f64,
    /// Widen the standard errors and envelopes as if the histogram held N independent files
    /// (errors × √(files/N)); without it the envelopes are the fit's statistical confidence
    /// interval, a fraction of a percent wide for millions of files (docs/workload.md).
    #[arg(long, value_name = "N")]
    pub effective_files: Option<u64>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// The model family.
    #[arg(long, value_enum)]
    pub model: ModelName,
    /// The model's parameters as `name=value,…`: gamma `shape,scale`; gengamma `a,d,p`;
    /// lognormal `mu,sigma` (in the units of --variable), plus `log_scale_error` for an
    /// envelope. `spinwise workload fit` prints this text.
    #[arg(long, value_name = "NAME=VALUE,…")]
    pub params: String,
    /// What the model describes: the size in bytes, or log2 of it.
    #[arg(long, value_enum, default_value = "bytes")]
    pub variable: VariableName,
    /// Draw from an envelope instead of the model: `lower` (more large files) or `upper` (more
    /// small files). Needs `log_scale_error` in --params.
    #[arg(long, value_enum)]
    pub envelope: Option<EnvelopeName>,
    /// Confidence level of the envelope (0 < L < 1).
    #[arg(long, value_name = "L", default_value_t = DEFAULT_CONFIDENCE, requires = "envelope")]
    pub confidence: f64,
    /// The capacity to fill: a number and a unit (10TB, 500GiB, 1.5PB; B, kB, MB, GB, TB, PB,
    /// KiB, MiB, GiB, TiB, PiB).
    #[arg(long, value_name = "SIZE")]
    pub capacity: String,
    /// Seed of every random choice: the same seed gives the same files and operations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The directory to write manifest.csv, trace.csv and workload.json in (created if needed).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Bytes per sequential-write batch: a batch closes before the file that would pass it.
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    pub batch_size: String,
    /// Seconds between batches (all files of a batch arrive together, in order).
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub batch_interval_s: f64,
    /// Random reads after the writes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub reads: u64,
    /// Mean reads per second (Poisson arrivals).
    #[arg(long, value_name = "R", default_value_t = 1.0)]
    pub read_rate: f64,
    /// Zipf-skewed reads with exponent S (0 to 10; a file of popularity rank r is read with
    /// probability ∝ r^-S, ranks a seeded shuffle of the files) instead of uniform ones.
    #[arg(long, value_name = "S")]
    pub zipf: Option<f64>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &WorkloadArgs) -> CliResult<()> {
    match &args.command {
        WorkloadCommand::Fit(args) => run_fit(args),
        WorkloadCommand::Generate(args) => run_generate(args),
    }
}

fn run_fit(args: &FitArgs) -> CliResult<()> {
    let path = &args.histogram;
    let shown = path.display().to_string();
    let text = read_bounded(
        path,
        MAX_HISTOGRAM_FILE_BYTES,
        "a histogram",
        "MAX_HISTOGRAM_FILE_BYTES",
    )?;
    let histogram = Histogram::parse(&text).map_err(|source| CliError::Histogram {
        path: shown.clone(),
        source,
    })?;
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(CliError::Usage(format!(
            "--confidence {} must lie strictly between 0 and 1",
            args.confidence
        )));
    }
    if args.effective_files == Some(0) {
        return Err(CliError::Usage(
            "--effective-files must be at least 1".into(),
        ));
    }
    let variable = args.variable.variable();
    let families: Vec<Family> = match args.model {
        Some(model) => vec![model.family()],
        None => Family::ALL.to_vec(),
    };
    let mut fits = Vec::with_capacity(families.len());
    for family in families {
        let fitted = fit(&histogram, family, variable).map_err(|source| CliError::Fit {
            path: shown.clone(),
            source,
        })?;
        fits.push(match args.effective_files {
            Some(files) => fitted.with_effective_files(files),
            None => fitted,
        });
    }
    fits.sort_by(|a, b| b.log_likelihood.total_cmp(&a.log_likelihood));
    if args.json {
        let fits: Vec<serde_json::Value> =
            fits.iter().map(|f| fit_json(f, args.confidence)).collect();
        let value = json!({
            "histogram": shown,
            "files": histogram.total_files(),
            "first_bucket_log2": histogram.first_bucket_log2,
            "last_bucket_log2": histogram.last_bucket_log2(),
            "variable": variable.name(),
            "confidence": args.confidence,
            "effective_files": args.effective_files,
            "fits": fits,
        });
        outln!("{}", serde_json::to_string_pretty(&value).expect("JSON"));
        return Ok(());
    }
    outln!(
        "{shown}: {} files in buckets {}..={} (sizes 2^{} to 2^{} bytes); models of {}",
        histogram.total_files(),
        histogram.first_bucket_log2,
        histogram.last_bucket_log2(),
        histogram.first_bucket_log2,
        histogram.last_bucket_log2() + 1,
        match variable {
            Variable::Bytes => "the size in bytes",
            Variable::Log2 => "log2 of the size in bytes",
        }
    );
    for fitted in &fits {
        print_fit(fitted, args.confidence);
    }
    Ok(())
}

fn fit_json(fitted: &Fit, confidence: f64) -> serde_json::Value {
    let family = fitted.model.shape.family();
    let names = family.parameter_names();
    let parameters: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .zip(fitted.model.shape.values())
        .map(|(name, value)| ((*name).to_string(), json!(value)))
        .collect();
    let standard_errors = fitted.standard_errors.as_ref().map(|errors| {
        names
            .iter()
            .zip(errors)
            .map(|(name, error)| ((*name).to_string(), json!(error)))
            .collect::<serde_json::Map<_, _>>()
    });
    let envelope = |which| {
        fitted
            .model
            .envelope(which, confidence)
            .ok()
            .map(|m| m.params_text())
    };
    json!({
        "model": family.name(),
        "variable": fitted.model.variable.name(),
        "parameters": parameters,
        "standard_errors": standard_errors,
        "log_scale_error": fitted.model.log_scale_error,
        "log_likelihood": fitted.log_likelihood,
        "chi_square": fitted.goodness.chi_square,
        "degrees_of_freedom": fitted.goodness.degrees_of_freedom,
        "p_value": fitted.goodness.p_value,
        "cells": fitted.goodness.cells,
        "ks_distance": fitted.goodness.ks_distance,
        "converged": fitted.converged,
        "at_search_boundary": fitted.at_search_boundary,
        "evaluations": fitted.evaluations,
        "params": fitted.model.params_text(),
        "lower_envelope_params": envelope(Envelope::Lower),
        "upper_envelope_params": envelope(Envelope::Upper),
    })
}

fn print_fit(fitted: &Fit, confidence: f64) {
    let family = fitted.model.shape.family();
    outln!("");
    outln!("{}", family.name());
    let errors = fitted.standard_errors.clone();
    for (index, (name, value)) in family
        .parameter_names()
        .iter()
        .zip(fitted.model.shape.values())
        .enumerate()
    {
        match &errors {
            Some(errors) => outln!("  {name:<8} {value:.6e} ± {:.2e}", errors[index]),
            None => outln!("  {name:<8} {value:.6e}"),
        }
    }
    let goodness = &fitted.goodness;
    outln!("  log-likelihood {:.1}", fitted.log_likelihood);
    match goodness.p_value {
        Some(p) => outln!(
            "  chi-square     {:.1} on {} df ({} cells), p = {p:.3e}",
            goodness.chi_square,
            goodness.degrees_of_freedom,
            goodness.cells
        ),
        None => outln!(
            "  chi-square     {:.1} ({} cells: too few for a p-value)",
            goodness.chi_square,
            goodness.cells
        ),
    }
    outln!("  KS distance    {:.4}", goodness.ks_distance);
    if fitted.at_search_boundary {
        outln!(
            "  (at the edge of the searched parameters: the likelihood still rises past it; for \
             the generalised Gamma over bytes this is the lognormal limit)"
        );
    }
    if !fitted.converged {
        outln!("  (the optimiser stopped at its evaluation limit before converging)");
    }
    outln!("  --params {}", fitted.model.params_text());
    if fitted.model.log_scale_error.is_none() {
        outln!("  no envelopes: the observed information is not positive definite at this fit");
        return;
    }
    for which in [Envelope::Lower, Envelope::Upper] {
        let envelope = fitted
            .model
            .envelope(which, confidence)
            .expect("the level was checked and the fit has a scale error");
        // The generate command takes the central parameters and --envelope; the envelope's own
        // parameters are printed so they can be read, and used as a model of their own.
        outln!(
            "  {} envelope ({}%, {}): {}",
            which.name(),
            confidence * 100.0,
            match which {
                Envelope::Lower => "more large files",
                Envelope::Upper => "more small files",
            },
            envelope.params_text(),
        );
    }
}

fn run_generate(args: &GenerateArgs) -> CliResult<()> {
    let variable = args.variable.variable();
    let central = FileSizeModel::parse_params(args.model.family(), variable, &args.params)
        .map_err(|source| CliError::Params {
            flag: "--params",
            source,
        })?;
    let model = match args.envelope {
        None => central,
        Some(name) => {
            let which = match name {
                EnvelopeName::Lower => Envelope::Lower,
                EnvelopeName::Upper => Envelope::Upper,
            };
            central
                .envelope(which, args.confidence)
                .map_err(|source| CliError::Params {
                    flag: "--envelope",
                    source,
                })?
        }
    };
    let capacity_bytes =
        parse_capacity_bytes(&args.capacity).map_err(|source| CliError::Capacity {
            flag: "--capacity",
            source,
        })?;
    let batch_bytes =
        parse_capacity_bytes(&args.batch_size).map_err(|source| CliError::Capacity {
            flag: "--batch-size",
            source,
        })?;
    let options = StreamOptions {
        batch_bytes,
        batch_interval_s: args.batch_interval_s,
        reads: args.reads,
        read_rate_per_s: args.read_rate,
        popularity: match args.zipf {
            Some(exponent) => Popularity::Zipf { exponent },
            None => Popularity::Uniform,
        },
    };
    let set = generate_file_set(&model, capacity_bytes, args.seed)?;
    let stream = operations(&set, &options, args.seed)?;
    std::fs::create_dir_all(&args.out).map_err(io_error(&args.out))?;
    let manifest = args.out.join("manifest.csv");
    let trace = args.out.join("trace.csv");
    let summary_path = args.out.join("workload.json");
    write_file(&manifest, |sink| write_manifest(&set, sink))?;
    write_file(&trace, |sink| write_trace(&set, &stream, sink))?;
    let mut sorted = set.sizes_bytes.clone();
    sorted.sort_unstable();
    let median_bytes = sorted[sorted.len() / 2];
    let summary = json!({
        "model": args.model.family().name(),
        "variable": variable.name(),
        "params": model.params_text(),
        "central_params": central.params_text(),
        "envelope": args.envelope.map(|e| match e {
            EnvelopeName::Lower => "lower",
            EnvelopeName::Upper => "upper",
        }),
        "confidence": args.envelope.map(|_| args.confidence),
        "seed": args.seed,
        "capacity_bytes": capacity_bytes,
        "files": set.len(),
        "total_bytes": set.total_bytes,
        "median_bytes": median_bytes,
        "mean_bytes": set.total_bytes as f64 / set.len() as f64,
        "largest_bytes": sorted.last().copied(),
        "batches": stream.batches,
        "batch_bytes": batch_bytes,
        "batch_interval_s": args.batch_interval_s,
        "reads": stream.reads,
        "read_rate_per_s": args.read_rate,
        "popularity": options.popularity,
        "duration_s": stream.operations.last().map_or(0.0, |o| o.time_s),
        "manifest": manifest.display().to_string(),
        "trace": trace.display().to_string(),
    });
    let summary_text = serde_json::to_string_pretty(&summary).expect("JSON");
    write_file(&summary_path, |sink| writeln!(sink, "{summary_text}"))?;
    if args.json {
        outln!("{summary_text}");
        return Ok(());
    }
    outln!(
        "{} files, {} bytes of {} ({:.2}%); median {} B, largest {} B",
        set.len(),
        set.total_bytes,
        capacity_bytes,
        100.0 * set.total_bytes as f64 / capacity_bytes as f64,
        median_bytes,
        sorted.last().copied().unwrap_or(0)
    );
    outln!(
        "{} write batches every {} s, then {} reads at {}/s ({})",
        stream.batches,
        args.batch_interval_s,
        stream.reads,
        args.read_rate,
        match options.popularity {
            Popularity::Uniform => "uniform".to_string(),
            Popularity::Zipf { exponent } => format!("Zipf {exponent}"),
        }
    );
    outln!("wrote {}", manifest.display());
    outln!("wrote {}", trace.display());
    outln!("wrote {}", summary_path.display());
    Ok(())
}

/// Writes `path` through a buffer as PATH.partial and renames it into place once complete, so a
/// failed or interrupted run never leaves a truncated file under the final name.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> CliResult<()> {
    let (partial, file) =
        spinwise_experiment::requests_csv::create_partial(path).map_err(io_error(path))?;
    let mut sink = std::io::BufWriter::new(file);
    write(&mut sink)
        .and_then(|()| sink.flush())
        .map_err(io_error(&partial))?;
    drop(sink);
    std::fs::rename(&partial, path).map_err(io_error(path))
}
