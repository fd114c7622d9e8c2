//! `spinwise bench`: the archival benchmark (crate spinwise-bench) against an S3 endpoint or a
//! store directory. Parsing, the file set and output only: the driver and its measurements live
//! in the library.
//!
//! Invariants: the run's objects are written under `--prefix` (by default one named after the
//! seed) and removed at the end unless `--keep`; credentials come only from the environment
//! (never a flag, so they stay out of shell history and `ps`).

use crate::error::{CliError, CliResult};
use crate::output::{errln, outln};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spinwise_bench::run::RunOptions;
use spinwise_bench::{
    BenchPlan, BenchReport, FileSpec, Placement, Progress, ReadSkew, S3Endpoint, Target,
};
use spinwise_store::Tier;
use spinwise_workload::{FileSizeModel, Shape, Variable, generate_file_set};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest manifest read (`--files-from`): ~20 million `key,size` lines. Read through
/// `read_bounded`, so a device or a pipe that never ends costs at most this much (a plain
/// `read_to_string` of `/dev/zero` grew to 22 GB and was killed, found 2026-12-01).
const MAX_MANIFEST_BYTES: usize = 1 << 30;
/// The most characters of a manifest line an error message quotes.
const QUOTED_LINE_CHARS: usize = 80;

#[derive(Args, Debug)]
#[command(
    long_about = "Runs the archival benchmark (Lee, O'Sullivan and Walker): a file set is written in \
                  sequential batches, and after each batch files are read back at random, so every step \
                  measures write and read throughput and per-request latency at a higher capacity \
                  utilisation. Every read is checked byte for byte. Objects an S3 server keeps offline \
                  (GLACIER in an `async` bucket) are restored first and the wait is reported apart.\n\n\
                  Target: --endpoint URL --bucket B (any S3 server; credentials from AWS_ACCESS_KEY_ID, \
                  AWS_SECRET_ACCESS_KEY and optionally AWS_SESSION_TOKEN; the bucket is created if \
                  missing), or --store DIR (a store made with `spinwise store init`, opened in-process).\n\n\
                  Output: a table (or --json), and with --out DIR results.csv, report.json and figures \
                  of throughput and latency against utilisation. docs/bench.md has the method."
)]
pub struct BenchArgs {
    /// S3 endpoint URL, e.g. http://127.0.0.1:9000 (with --bucket).
    #[arg(
        long,
        value_name = "URL",
        requires = "bucket",
        conflicts_with = "store"
    )]
    endpoint: Option<String>,
    /// Bucket to write in (created if it does not exist).
    #[arg(long, value_name = "NAME")]
    bucket: Option<String>,
    /// A Spinwise store directory to benchmark in-process instead of an endpoint.
    #[arg(long, value_name = "DIR", required_unless_present = "endpoint")]
    store: Option<PathBuf>,
    /// A small file set (32 MiB of capacity, 3 steps, 20 reads each) for a first look and CI.
    #[arg(long)]
    quick: bool,
    /// Capacity the utilisation is measured against, e.g. 4GiB (default 4 GiB; 32 MiB with --quick).
    #[arg(long, value_name = "SIZE", value_parser = parse_capacity)]
    capacity: Option<u64>,
    /// Share of the capacity the file set fills by its last step, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 90.0)]
    fill_percent: f64,
    /// Files to write, one `key,size_bytes` per line (a header line is allowed), e.g. the
    /// manifest.csv of `spinwise workload generate` (a fitted Gamma model, an envelope);
    /// default: a seeded lognormal set.
    #[arg(long, value_name = "FILE")]
    files_from: Option<PathBuf>,
    /// Steps of utilisation (write batches), default 5 (3 with --quick).
    #[arg(long, value_name = "N")]
    steps: Option<u32>,
    /// Random reads after each batch, default 100 (20 with --quick).
    #[arg(long, value_name = "N")]
    reads_per_step: Option<u32>,
    /// How reads pick files: `uniform`, or `zipf:S` (newest file most likely, exponent S > 0).
    #[arg(long, value_name = "SKEW", default_value = "uniform", value_parser = parse_skew)]
    read_skew: ReadSkew,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: u32,
    /// Storage class of every PUT (S3: sent as x-amz-storage-class; a store: STANDARD and the
    /// other online classes write warm, anything else cold).
    #[arg(long, value_name = "CLASS")]
    storage_class: Option<String>,
    /// With --store: erasure-code what each batch staged onto the disks before its reads,
    /// packed as the store's migrator packs them.
    #[arg(long, requires = "store")]
    migrate: bool,
    /// With --store: migrate each batch file by file, each into the group `spinwise sim
    /// --trace` gives its key, so the simulator's replay of OUT/trace.csv can be compared with
    /// what the store measured (docs/bench.md, "Against the simulator").
    #[arg(long, requires = "store", conflicts_with = "migrate")]
    migrate_like_sim: bool,
    /// Pause this long between each step's writes and its reads (e.g. for the server to move
    /// the batch offline on its own schedule, so the reads measure restores).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, value_parser = parse_read_after_s)]
    read_after_s: f64,
    /// Longest wait for one restore of an offline object.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    restore_timeout_s: u64,
    /// Region the requests are signed for (default: AWS_REGION, else us-east-1).
    #[arg(long, value_name = "REGION")]
    region: Option<String>,
    /// Key prefix of the run's objects (default: spinwise-bench/seed-<SEED>/).
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<String>,
    /// Leave the objects in place at the end.
    #[arg(long)]
    keep: bool,
    /// Seed of the file set, the payload and the reads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for results.csv, report.json and the figures.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &BenchArgs) -> CliResult<()> {
    let plan = plan(args)?;
    plan.validate().map_err(bench_error)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("starting the async runtime: {e}")))?;
    let report = runtime.block_on(run_plan(args, &plan))?;
    if let Some(out) = &args.out {
        spinwise_bench::write_outputs(&report, out).map_err(bench_error)?;
    }
    print_report(&report, args);
    Ok(())
}

async fn run_plan(args: &BenchArgs, plan: &BenchPlan) -> CliResult<BenchReport> {
    if args.prefix.as_deref().is_some_and(|p| p.contains(',')) {
        // trace.csv's keys cannot be quoted (docs/simulator.md, "Trace files").
        return Err(CliError::Usage(
            "--prefix must not contain a comma (the run's trace.csv could not hold its keys)"
                .into(),
        ));
    }
    // One process drives a data directory's disks (crate::ownership); held until the store
    // is closed below.
    let _owner = match &args.store {
        Some(dir) => Some(own_store(dir)?),
        None => None,
    };
    let target = Arc::new(target(args).await?);
    let options = RunOptions {
        prefix: args
            .prefix
            .clone()
            .unwrap_or_else(|| format!("spinwise-bench/seed-{}/", args.seed)),
        keep: args.keep,
        migrate: match (args.migrate, args.migrate_like_sim) {
            (true, _) => Some(Placement::Packed),
            (_, true) => Some(Placement::LikeTheSimulator),
            _ => None,
        },
        read_after: std::time::Duration::from_secs_f64(args.read_after_s),
    };
    let bar = progress_bar(args);
    let shown = bar.clone();
    let progress = Arc::new(move |p: Progress| {
        if let Some(bar) = &shown {
            bar.set_length(p.total);
            bar.set_position(p.done);
            bar.set_message(format!("step {}/{} {}", p.step, p.steps, p.phase));
        }
    });
    let result = spinwise_bench::run(target.clone(), plan, &options, progress).await;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Ok(target) = Arc::try_unwrap(target) {
        target.close().await;
    }
    result.map_err(bench_error)
}

/// Owns a store directory for the run, or says who does.
fn own_store(dir: &Path) -> CliResult<spinwise_store::owner::OwnerGuard> {
    use spinwise_store::owner::{Claim, try_claim};
    if !dir.join(spinwise_store::config::STORE_FILE).exists() {
        return Err(CliError::Usage(format!(
            "{} holds no store: create one with `spinwise store --data {} init`",
            dir.display(),
            dir.display()
        )));
    }
    match try_claim(dir).map_err(|e| CliError::Usage(e.to_string()))? {
        Claim::Owned(guard) => Ok(guard),
        Claim::Busy { owner_pid } => Err(CliError::Usage(format!(
            "{} is in use by {}: benchmark a running server through its S3 endpoint \
             (--endpoint), or stop it first",
            dir.display(),
            owner_pid.map_or("another process".to_string(), |pid| format!(
                "process {pid}"
            ))
        ))),
    }
}

async fn target(args: &BenchArgs) -> CliResult<Target> {
    if let Some(dir) = &args.store {
        // The S3 layer's own mapping, with the store's default (cold) when none is named.
        let tier = spinwise_s3::service::tier_of_class(args.storage_class.as_deref(), Tier::Cold);
        return Target::store(dir, tier).await.map_err(bench_error);
    }
    let url = args
        .endpoint
        .clone()
        .expect("clap requires --endpoint or --store");
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(access_key), Some(secret_key)) =
        (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"))
    else {
        return Err(CliError::Usage(
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to the endpoint's credentials".into(),
        ));
    };
    let endpoint = S3Endpoint {
        url,
        bucket: args.bucket.clone().expect("clap requires --bucket"),
        region: args
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .unwrap_or_else(|| "us-east-1".into()),
        access_key,
        secret_key,
        session_token: env("AWS_SESSION_TOKEN"),
        storage_class: args.storage_class.clone(),
        restore_timeout_s: args.restore_timeout_s,
    };
    Target::s3(endpoint).await.map_err(bench_error)
}

/// The plan the flags describe.
fn plan(args: &BenchArgs) -> CliResult<BenchPlan> {
    let capacity_bytes = args
        .capacity
        .unwrap_or(if args.quick { 32 << 20 } else { 4 << 30 });
    if !(args.fill_percent > 0.0 && args.fill_percent <= 100.0) {
        return Err(CliError::Usage(format!(
            "--fill-percent {}: it must be in (0, 100]",
            args.fill_percent
        )));
    }
    let files = match &args.files_from {
        Some(path) => read_manifest(path)?,
        None => {
            let target_bytes = (capacity_bytes as f64 * args.fill_percent / 100.0) as u64;
            default_files(target_bytes, args.seed)?
        }
    };
    Ok(BenchPlan {
        files,
        capacity_bytes,
        steps: args.steps.unwrap_or(if args.quick { 3 } else { 5 }),
        reads_per_step: args
            .reads_per_step
            .unwrap_or(if args.quick { 20 } else { 100 }),
        read_skew: args.read_skew,
        concurrency: args.concurrency,
        seed: args.seed,
    })
}

/// The default file set's model: sizes in bytes lognormal with median 64 KiB and σ = 1.5 in
/// natural log (file sizes are roughly lognormal, Downey over 562 file systems: most files
/// small, most bytes in the large ones).
const DEFAULT_MEDIAN_BYTES: f64 = 64.0 * 1024.0;
const DEFAULT_LOG_SIGMA: f64 = 1.5;

/// A seeded file set of the default model filling up to `target_bytes`
/// (`spinwise_workload::generate_file_set`, keys `file-NNNNNNNN`).
fn default_files(target_bytes: u64, seed: u64) -> CliResult<Vec<FileSpec>> {
    let model = FileSizeModel::new(
        Shape::LogNormal {
            mu: DEFAULT_MEDIAN_BYTES.ln(),
            sigma: DEFAULT_LOG_SIGMA,
        },
        Variable::Bytes,
    );
    let set = generate_file_set(&model, target_bytes, seed)
        .map_err(|e| CliError::Usage(format!("making the file set: {e}")))?;
    Ok(set
        .sizes_bytes
        .iter()
        .enumerate()
        .map(|(index, &size_bytes)| FileSpec {
            key: spinwise_workload::key(index),
            size_bytes,
        })
        .collect())
}

/// `key,size_bytes` lines; a first line that does not parse as a size is a header.
fn read_manifest(path: &Path) -> CliResult<Vec<FileSpec>> {
    let text =
        crate::source::read_bounded(path, MAX_MANIFEST_BYTES, "a manifest", "MAX_MANIFEST_BYTES")?;
    let mut files = Vec::new();
    let mut keys = std::collections::BTreeSet::new();
    for (index, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = |why: &str| {
            let quoted: String = line.chars().take(QUOTED_LINE_CHARS).collect();
            CliError::Usage(format!(
                "{}:{}: {why}: {quoted:?}",
                path.display(),
                index + 1
            ))
        };
        let [key, size] = fields[..] else {
            return Err(bad("expected `key,size_bytes`"));
        };
        match size.parse::<u64>() {
            // A key listed twice would be written twice and read back as the second.
            Ok(_) if !key.is_empty() && !keys.insert(key) => {
                return Err(bad("the key is listed twice"));
            }
            Ok(size_bytes) if !key.is_empty() => files.push(FileSpec {
                key: key.to_string(),
                size_bytes,
            }),
            Ok(_) => return Err(bad("empty key")),
            Err(_) if index == 0 => {}
            Err(_) => return Err(bad("size_bytes is not a whole number of bytes")),
        }
    }
    Ok(files)
}

fn progress_bar(args: &BenchArgs) -> Option<ProgressBar> {
    if args.json || !crate::output::stderr_is_terminal() {
        return None;
    }
    let style = ProgressStyle::with_template("{msg:22} {bar:40} {pos}/{len} eta {eta}")
        .expect("a valid template");
    Some(ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr()).with_style(style))
}

fn print_report(report: &BenchReport, args: &BenchArgs) {
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(report).expect("a report serialises")
        );
        return;
    }
    outln!(
        "{}: {} files, {:.1} MB, capacity {:.1} MB, {} steps, {} reads per step, concurrency {}",
        report.target,
        report.files,
        report.total_bytes as f64 / 1e6,
        report.capacity_bytes as f64 / 1e6,
        report.steps,
        report.reads_per_step,
        report.concurrency
    );
    outln!(
        "{:>4} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "step",
        "util %",
        "write MB/s",
        "w p50 ms",
        "w p99 ms",
        "read MB/s",
        "r p50 ms",
        "r p99 ms",
        "restores"
    );
    for row in &report.rows {
        outln!(
            "{:>4} {:>7.1} {:>10.1} {:>10.2} {:>10.2} {:>10.1} {:>10.2} {:>10.2} {:>8}",
            row.step,
            row.utilisation_percent,
            row.write.mb_per_s,
            row.write.latency_p50_ms,
            row.write.latency_p99_ms,
            row.read.mb_per_s,
            row.read.latency_p50_ms,
            row.read.latency_p99_ms,
            row.restores
        );
    }
    if let Some(out) = &args.out {
        errln!(
            "wrote {}/{{results.csv, report.json, requests.csv, trace.csv, throughput.png, throughput.svg, latency.png, latency.svg}}",
            out.display()
        );
    }
}

fn bench_error(error: spinwise_bench::BenchError) -> CliError {
    CliError::Usage(error.to_string())
}

/// A capacity such as `4GiB` or `10TB` (`spinwise_workload::parse_capacity_bytes`).
fn parse_capacity(text: &str) -> Result<u64, String> {
    spinwise_workload::parse_capacity_bytes(text).map_err(|e| e.to_string())
}

/// The longest pause `--read-after-s` takes (a day), so a typo cannot park a run for years.
const MAX_READ_AFTER_S: f64 = 86_400.0;

/// Seconds in `0..=MAX_READ_AFTER_S`.
fn parse_read_after_s(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if (0.0..=MAX_READ_AFTER_S).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "{text:?}: a number of seconds from 0 to {MAX_READ_AFTER_S}"
        )),
    }
}

/// `uniform` or `zipf:S`.
fn parse_skew(text: &str) -> Result<ReadSkew, String> {
    match text.split_once(':') {
        None if text == "uniform" => Ok(ReadSkew::Uniform),
        Some(("zipf", exponent)) => match exponent.parse::<f64>() {
            Ok(exponent) if exponent.is_finite() && exponent > 0.0 => {
                Ok(ReadSkew::Zipf { exponent })
            }
            _ => Err(format!(
                "zipf:{exponent}: the exponent must be a number > 0"
            )),
        },
        _ => Err(format!(
            "{text:?}: use `uniform` or `zipf:S` (e.g. zipf:1.1)"
        )),
    }
}
