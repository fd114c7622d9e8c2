//! `spinwise store --data DIR …`: the cold blob store on a data directory (docs/store.md).
//! Argument parsing, transfer plumbing and output only; the store library decides everything.
//! Each invocation opens the store (running staging recovery), does one thing, and closes it.
//!
//! Store failures reach the user as one line (`error: …`, exit status 1), like every other
//! refusal of this command.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::{layout_or_plan, load_preset};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord, Tier};
use spinwise_model::parse_rack;
use spinwise_store::{ContentCheck, RackSource, SqliteStore, Store, StoreConfig, StoreError};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Transfers at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;
/// Most objects `ls` prints.
const LIST_LIMIT: u32 = 100_000;

#[derive(Args)]
pub struct StoreArgs {
    /// The store's data directory (configuration, catalog, staging log).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// One process drives a data directory's disks at a time (DATA/owner.lock), so budgets hold
    /// whatever runs at once: while another command owns DIR, wait up to this many seconds for
    /// it to finish (0: refuse at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600.0)]
    pub wait_s: f64,
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Subcommand, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum StoreCommand {
    /// Create a store for a rack in DIR: store.toml (rack copied in), layout.json, catalog.
    Init(InitArgs),
    /// Store a file (or stdin with `-`) under KEY, replacing any older object of that key. It
    /// is cold (migrated to the disk groups by upkeep) unless --warm.
    Put {
        key: String,
        path: PathBuf,
        /// Keep it in the warm tier: staged on the always-on devices, never migrated until
        /// `demote` (or the warm tier's capacity policy) makes it cold (docs/store.md "Tiers").
        #[arg(long)]
        warm: bool,
    },
    /// Move KEY from the warm tier to the cold one: the next migration takes it to the disk
    /// groups. Says whether it was warm; a cold or migrated object is left as it is.
    Demote { key: String },
    /// Write KEY's bytes to a file (or stdout with `-`). Every chunk is checked against its
    /// crc32c; a damaged fragment of a migrated object is rebuilt from the others.
    Get {
        key: String,
        path: PathBuf,
        /// Only bytes A through B, both included (`A-B`), or from A to the end (`A-`).
        #[arg(long, value_name = "A-B")]
        range: Option<String>,
        /// Also check the whole object's BLAKE3 against the one recorded at PUT (one more
        /// pass over the bytes; ignored with --range). On a mismatch the command fails after
        /// writing: a file target is not created, stdout has received the bytes.
        #[arg(long)]
        verify: bool,
    },
    /// Remove KEY.
    Rm { key: String },
    /// List objects (key order), optionally only those whose keys start with PREFIX.
    Ls {
        prefix: Option<String>,
        /// One JSON array of objects instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Show one object: size, state (staged/migrated), group and disks (null while staged).
    Stat {
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Objects, bytes, staged bytes, disks active and failed, rebuild work pending, and this
    /// process's tail cache counters (`tail_cache.*`; a server's are in its metrics).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Migrate everything staged now into erasure-coded blobs on the disks, and wait.
    Flush {
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Mark disk DISK (rack index) failed and queue the rebuild of its stripe stacks.
    FailDisk { disk: u64 },
    /// Rebuild every queued stripe stack onto other disks of its group (rebuild share).
    Rebuild {
        #[arg(long)]
        json: bool,
    },
    /// Verify every fragment of every blob, group by group, repairing bad stacks in place.
    Scrub {
        #[arg(long)]
        json: bool,
    },
    /// Reclaim dead bytes (deleted or overwritten objects) in blobs: rewrite each blob whose
    /// dead fraction reached the policy (upkeep.compact_dead_fraction in store.toml, or
    /// --min-dead-fraction) as a new blob in the same group, and remove blobs nothing points
    /// into. Spins groups up as needed; holds DATA/upkeep.lock.
    Compact {
        /// Compact blobs whose dead bytes are at least this fraction of their size (0 < F <= 1).
        #[arg(long, value_name = "F")]
        min_dead_fraction: Option<f64>,
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Reclaim dead bytes (deleted or overwritten warm objects) in the staging log: copy the
    /// live warm records of each sealed segment whose dead fraction reached the policy
    /// (warm.collect_dead_fraction in store.toml, or --min-dead-fraction) to the log's tail,
    /// then free the segment. Semi-preemptive by default (warm.collection): PUTs and GETs in
    /// flight go before each record moved. Holds DATA/upkeep.lock; upkeep does the same on
    /// every tick.
    CollectWarm {
        /// Collect segments whose dead bytes are at least this fraction of their length
        /// (0 < F <= 1).
        #[arg(long, value_name = "F")]
        min_dead_fraction: Option<f64>,
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Run the upkeep task for SECONDS: scrub the overdue blobs of every group that comes up
    /// (batched with spin-ups that happen anyway, within the per-spin-up byte budget), and spin a
    /// group up for scrub alone at most once per scrub_min_spin_up_interval_s ([upkeep] in
    /// store.toml); also migrate staged objects once a full bundle is staged or the oldest has
    /// waited migrate_after_s, and rebuild the stacks of failed disks at once. Holds
    /// DATA/upkeep.lock: fails at once if another process runs flush, rebuild, scrub or
    /// upkeep. Exit status 1 if a stripe is corrupt beyond repair.
    Upkeep {
        /// How long to run (seconds).
        #[arg(long = "for", value_name = "SECONDS")]
        duration_s: f64,
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild a missing, empty or unreadable catalog from the staging log's records, the
    /// stripe stacks' headers and the blob object indexes (docs/store.md, "A lost catalog").
    /// Refused while the catalog opens; an unreadable one is moved aside, never deleted.
    Recover {
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Each disk's power state as the disk publishes it (DATA/disks/*/.power-state, as
    /// `hdparm -C` asks a real drive; docs/disks.md): read from outside whichever process
    /// drives the disks, so it works while another command or `spinwise serve` runs.
    Disks {
        #[arg(long)]
        json: bool,
    },
    /// Start-up check (Pelican §3): spin every group up, as many at once as the budgets allow,
    /// and mount, list and measure each disk; reports the disks that fail. Exit status 1 if any.
    Check {
        /// The report as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct InitArgs {
    /// A shipped rack (see `spinwise presets`).
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "rack",
        required_unless_present = "rack"
    )]
    pub preset: Option<String>,
    /// A rack description (TOML, docs/rack-format.md).
    #[arg(long, value_name = "RACK.toml")]
    pub rack: Option<PathBuf>,
    /// A layout written by `spinwise plan --out` (default: plan the rack now).
    #[arg(long, value_name = "LAYOUT.json")]
    pub layout: Option<PathBuf>,
    /// Multiplies the rack's spin-up and mount latencies on emulated disks.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub time_factor: f64,
    /// The scheduling policy the store's rack engine runs, as `spinwise sim --policy` does:
    /// Pelican's class scheduler; `flamingo` — per-group queues, as many groups spinning as the
    /// hard budgets allow (Flamingo §3.2); `fp` — every group kept spinning (only for a rack
    /// whose budgets allow every disk up at once: elsewhere the budget audit withholds the
    /// disks that would break them). Kept in store.toml as `policy`.
    #[arg(long, value_name = "POLICY", default_value = "pelican", value_parser = ["pelican", "flamingo", "fp"])]
    pub policy: String,
    /// Another always-on device for the staging log, after DATA/staging (repeat for more, in
    /// chain order; relative paths are in DATA): Gecko's chained log, where PUTs append on one
    /// device at a time and the warm collector empties the next one first (docs/store.md, "A
    /// chain of staging devices"). Kept in store.toml as `[staging] chain`; fixed once written.
    #[arg(long = "staging-chain", value_name = "DIR")]
    pub staging_chain: Vec<PathBuf>,
}

pub(crate) fn store_error(error: StoreError) -> CliError {
    CliError::Usage(error.to_string())
}

pub fn run(args: &StoreArgs) -> CliResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("starting the async runtime: {e}")))?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: &StoreArgs) -> CliResult<()> {
    if let StoreCommand::Init(init_args) = &args.command {
        return init(&args.data, init_args).await;
    }
    if let StoreCommand::Disks { json } = &args.command {
        return disks(&args.data, *json);
    }
    let limit = crate::ownership::wait_limit(args.wait_s)?;
    // A directory without a store has no disks to own; opening it reports that.
    let _owner = match args.data.join(spinwise_store::config::STORE_FILE).exists() {
        false => None,
        true => match crate::admin::settle(&args.data, limit).await? {
            crate::admin::Access::Owner(guard) => Some(guard),
            crate::admin::Access::Served(connection) => {
                return crate::admin::run_remote(connection, &args.command).await;
            }
        },
    };
    if let StoreCommand::Recover { json } = &args.command {
        return recover(&args.data, *json).await;
    }
    let store = Store::open_sqlite(&args.data).await.map_err(store_error)?;
    for problem in &store.recovery().problems {
        crate::output::errln!("warning: recovery: {problem}");
    }
    if let StoreCommand::Upkeep { duration_s, json } = &args.command {
        let store = std::sync::Arc::new(store);
        let result = upkeep(&store, *duration_s, *json).await;
        if let Ok(store) = std::sync::Arc::try_unwrap(store) {
            store.close().await;
        }
        return result;
    }
    let result = execute(&store, &args.command).await;
    store.close().await;
    result
}

/// Runs one command on an open store: here for this process's own command, or in
/// `spinwise serve` for another process's (crate::admin). Init and upkeep are not commands on
/// an open store: they are refused.
pub(crate) async fn execute(store: &SqliteStore, command: &StoreCommand) -> CliResult<()> {
    match command {
        StoreCommand::Init(_) | StoreCommand::Upkeep { .. } => Err(CliError::Usage(
            "init and upkeep do not run on an open store".to_string(),
        )),
        // A store that opened has a catalog: recover would only refuse.
        StoreCommand::Recover { .. } => Err(CliError::Usage(
            "the store is open, so its catalog is healthy: recover rebuilds only a lost one"
                .to_string(),
        )),
        StoreCommand::Put { key, path, warm } => {
            let tier = match warm {
                true => Tier::Warm,
                false => Tier::Cold,
            };
            put(store, key, path, tier).await
        }
        StoreCommand::Demote { key } => {
            let demoted = store.demote(key).await.map_err(store_error)?;
            match demoted {
                true => outln!("{key}: demoted to the cold tier; the next migration moves it"),
                false => outln!("{key}: not warm; left as it is"),
            }
            Ok(())
        }
        StoreCommand::Get {
            key,
            path,
            range,
            verify,
        } => {
            let check = match verify {
                true => ContentCheck::WholeObject,
                false => ContentCheck::ChunksOnly,
            };
            get(store, key, path, range.as_deref(), check).await
        }
        StoreCommand::Rm { key } => store.delete(key).await.map(|_| ()).map_err(store_error),
        StoreCommand::Ls { prefix, json } => {
            list(store, prefix.as_deref().unwrap_or(""), *json).await
        }
        StoreCommand::Stat { key, json } => stat(store, key, *json).await,
        StoreCommand::Status { json } => status(store, *json).await,
        StoreCommand::Flush { json } => flush(store, *json).await,
        StoreCommand::Check { json } => check(store, *json).await,
        StoreCommand::Disks { json } => disks(store.data_dir(), *json),
        StoreCommand::FailDisk { disk } => fail_disk(store, *disk).await,
        StoreCommand::Rebuild { json } => rebuild(store, *json).await,
        StoreCommand::Scrub { json } => scrub(store, *json).await,
        StoreCommand::Compact {
            min_dead_fraction,
            json,
        } => compact(store, *min_dead_fraction, *json).await,
        StoreCommand::CollectWarm {
            min_dead_fraction,
            json,
        } => collect_warm(store, *min_dead_fraction, *json).await,
    }
}

/// `disks`: every disk's published power state, without opening the store (no ownership
/// needed: it only reads what the disks publish).
fn disks(data: &Path, json: bool) -> CliResult<()> {
    let config = spinwise_store::config::read(data).map_err(store_error)?;
    let rack =
        spinwise_store::config::validate(&config, &data.join(spinwise_store::config::STORE_FILE))
            .map_err(store_error)?;
    let mut rows = Vec::with_capacity(rack.disk_count());
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for index in 0..rack.disk_count() {
        let directory = spinwise_store::disk_directory(data, index);
        let power = match spinwise_disk::read_power_state(&directory) {
            Ok(phase) => phase.name().to_string(),
            Err(error) => {
                crate::output::errln!("warning: disk {index}: {error}");
                "unreadable".to_string()
            }
        };
        *counts.entry(power.clone()).or_default() += 1;
        rows.push(serde_json::json!({ "disk": index, "power": power }));
    }
    if json {
        outln!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    for row in &rows {
        outln!(
            "disk {:>5} {}",
            row["disk"],
            row["power"].as_str().unwrap_or("")
        );
    }
    let summary: Vec<String> = counts.iter().map(|(p, n)| format!("{n} {p}")).collect();
    outln!("{} disks: {}", rows.len(), summary.join(", "));
    Ok(())
}

async fn init(data: &Path, args: &InitArgs) -> CliResult<()> {
    let (source, rack_toml) = match (&args.preset, &args.rack) {
        (_, Some(path)) => {
            let text = crate::source::read_rack_file(path)?;
            (RackSource::File(path.clone()), text)
        }
        (Some(name), None) => {
            load_preset(name)?;
            let text = crate::source::PRESETS
                .iter()
                .find(|(preset, _)| preset == name)
                .map(|(_, text)| text.to_string())
                .expect("load_preset found it");
            (RackSource::Preset(name.clone()), text)
        }
        (None, None) => unreachable!("clap requires --preset or --rack"),
    };
    let rack_name = match &source {
        RackSource::Preset(name) => format!("preset {name}"),
        RackSource::File(path) => path.display().to_string(),
    };
    let rack = parse_rack(&rack_name, &rack_toml)?;
    let layout = layout_or_plan(&rack, args.layout.as_deref())?;
    let mut config = StoreConfig::new(source, rack_toml, layout);
    config.time_factor = args.time_factor;
    config.staging_chain = args.staging_chain.clone();
    config.policy = spinwise_store::config::PolicyChoice::from_name(&args.policy)
        .ok_or_else(|| CliError::Usage(format!("unknown policy `{}`", args.policy)))?;
    let store = Store::init_sqlite(data, config)
        .await
        .map_err(store_error)?;
    let layout = store.layout();
    outln!(
        "initialized {}: rack {} ({} disks), {} groups of {}, erasure {}+{}, {} staging device(s)",
        data.display(),
        store.rack().name,
        store.rack().disk_count(),
        layout.groups.len(),
        layout.group_size,
        layout.erasure.k,
        layout.erasure.r,
        store.staging().devices().len()
    );
    store.close().await;
    Ok(())
}

fn progress_bar(total_bytes: Option<u64>) -> Option<ProgressBar> {
    if !crate::output::stderr_is_terminal() || total_bytes.is_some_and(|t| t < PROGRESS_MIN_BYTES) {
        return None;
    }
    let bar = match total_bytes {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(
                ProgressStyle::with_template(
                    "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .expect("a valid template"),
            ),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{spinner} {binary_bytes} {binary_bytes_per_sec}")
                .expect("a valid template"),
        ),
    };
    Some(bar)
}

/// Counts the bytes a PUT body yields into a progress bar.
struct Counted<R> {
    inner: R,
    bar: Option<ProgressBar>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buffer);
        if let Some(bar) = &self.bar {
            bar.inc((buffer.filled().len() - before) as u64);
        }
        polled
    }
}

async fn put(store: &SqliteStore, key: &str, path: &Path, tier: Tier) -> CliResult<()> {
    let committed = |_: &_| std::future::ready(Ok(()));
    let record = if path == Path::new("-") {
        let body = Counted {
            inner: tokio::io::stdin(),
            bar: progress_bar(None),
        };
        store.put_with(key, tier, body, committed).await
    } else {
        let file = tokio::fs::File::open(path).await.map_err(io_error(path))?;
        let size = file.metadata().await.map_err(io_error(path))?.len();
        let body = Counted {
            inner: file,
            bar: progress_bar(Some(size)),
        };
        store.put_with(key, tier, body, committed).await
    }
    .map_err(store_error)?;
    outln!("{} {} bytes", record.key, record.size_bytes);
    Ok(())
}

/// Parses `A-B` (inclusive) or `A-` into a half-open range; `size` closes `A-`.
fn parse_range(text: &str, size_bytes: u64) -> CliResult<Range<u64>> {
    let bad = || {
        CliError::Usage(format!(
            "--range `{text}`: expected A-B or A- (bytes, B included)"
        ))
    };
    let (start, end) = text.split_once('-').ok_or_else(bad)?;
    let start: u64 = start.parse().map_err(|_| bad())?;
    // A range names at least its first byte, which must be in the object (HTTP's 416): an
    // `A-` at or past the end read as an I/O error on a staged object and as an empty success
    // on a migrated one (found 2026-12-01).
    if start >= size_bytes {
        return Err(CliError::Usage(format!(
            "--range `{text}` starts at byte {start}, past the object's last byte ({})",
            match size_bytes {
                0 => "it is empty".to_string(),
                size => format!("byte {} of {size}", size - 1),
            }
        )));
    }
    let end = match end {
        "" => size_bytes,
        last => last
            .parse::<u64>()
            .map_err(|_| bad())?
            .checked_add(1)
            .ok_or_else(bad)?,
    };
    if start > end {
        return Err(bad());
    }
    Ok(start..end)
}

async fn get(
    store: &SqliteStore,
    key: &str,
    path: &Path,
    range: Option<&str>,
    check: ContentCheck,
) -> CliResult<()> {
    let range = match range {
        Some(text) => {
            let size = store.stat(key).await.map_err(store_error)?.size_bytes;
            Some(parse_range(text, size)?)
        }
        None => None,
    };
    let mut reader = store
        .get_with(key, range, check)
        .await
        .map_err(store_error)?;
    let length = reader.range().end - reader.range().start;
    let bar = progress_bar(Some(length));
    if path == Path::new("-") {
        let stdout: Box<dyn Write + Send> = Box::new(std::io::stdout());
        copy_out(&mut reader, stdout, bar.as_ref(), Path::new("stdout")).await?;
        return report_heal(store).await;
    }
    if is_special_file(path) {
        // A device or FIFO (`/dev/null`, a named pipe) is written in place: renaming a partial
        // file over it would replace the device node with a regular file.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_error(path))?;
        copy_out(&mut reader, Box::new(file), bar.as_ref(), path).await?;
        return report_heal(store).await;
    }
    // Write beside the target and rename at the end: a failed GET leaves no partial file. The
    // suffix is appended, never substituted for the extension, so it cannot clobber a sibling.
    let mut partial_name = path.as_os_str().to_owned();
    partial_name.push(".spinwise-partial");
    let partial = PathBuf::from(partial_name);
    let file = std::fs::File::create(&partial).map_err(io_error(&partial))?;
    let durable = file.try_clone().map_err(io_error(&partial))?;
    let copied = copy_out(&mut reader, Box::new(file), bar.as_ref(), &partial).await;
    if let Err(error) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(error);
    }
    durable.sync_all().map_err(io_error(&partial))?;
    std::fs::rename(&partial, path).map_err(io_error(path))?;
    report_heal(store).await
}

/// Waits for the repairs the GET queued (so the process never exits before they are durable)
/// and notes on stderr what was repaired, what could not be, and disks found failed. The bytes
/// were verified either way, so none of this fails the GET.
async fn report_heal(store: &SqliteStore) -> CliResult<()> {
    let report = store.settle_repairs().await.map_err(store_error)?;
    if !report.repaired.is_empty() {
        let stacks: Vec<String> = report
            .repaired
            .iter()
            .map(|s| format!("blob {} column {}", s.blob, s.column))
            .collect();
        crate::output::errln!(
            "repaired {} damaged stack{} ({})",
            stacks.len(),
            if stacks.len() == 1 { "" } else { "s" },
            stacks.join(", ")
        );
    }
    for (stack, reason) in &report.failed {
        crate::output::errln!(
            "warning: could not repair blob {} column {} on disk {}: {reason}",
            stack.blob,
            stack.column,
            stack.disk
        );
    }
    for failed in &report.disks_failed {
        crate::output::errln!(
            "warning: disk {} is unreadable or removed: marked failed, {} stripe stack(s) queued for rebuild",
            failed.disk,
            failed.tasks_queued
        );
    }
    Ok(())
}

/// True when `path` exists and is not a regular file (a character device, FIFO or socket).
fn is_special_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_file() && !metadata.is_dir())
}

/// Streams the reader into `sink`. The chunks are gathered into batches of at least
/// [`WRITE_BATCH_BYTES`] (or the end), and each batch is written on a blocking thread while the
/// next one is fetched, so the store's reads and the sink's writes overlap; at most two
/// batches are held at once. Why batches: a migrated GET hands on a fragment's part of a stripe
/// per chunk (128 KiB), and a blocking task per chunk cost two thread wake-ups each (~16,000
/// per GiB).
async fn copy_out(
    reader: &mut spinwise_store::ObjectReader,
    sink: Box<dyn Write + Send>,
    bar: Option<&ProgressBar>,
    path: &Path,
) -> CliResult<()> {
    type Pending = tokio::task::JoinHandle<(Box<dyn Write + Send>, std::io::Result<()>)>;
    let finish = |pending: Pending| async move {
        let (sink, written) = pending.await.expect("the writer thread does not panic");
        written.map(|()| sink)
    };
    let mut pending: Option<Pending> = None;
    let mut idle = Some(sink);
    loop {
        let mut batch = Vec::new();
        let mut batch_bytes = 0;
        while batch_bytes < WRITE_BATCH_BYTES {
            let Some(chunk) = reader.next_chunk().await.map_err(store_error)? else {
                break;
            };
            batch_bytes += chunk.len();
            batch.push(chunk);
        }
        if batch.is_empty() {
            break;
        }
        let mut sink = match pending.take() {
            Some(previous) => finish(previous).await.map_err(io_error(path))?,
            None => idle.take().expect("a sink when nothing is pending"),
        };
        if let Some(bar) = bar {
            bar.inc(batch_bytes as u64);
        }
        pending = Some(tokio::task::spawn_blocking(move || {
            let written = write_chunks(&mut sink, &batch);
            (sink, written)
        }));
    }
    let mut sink = match pending {
        Some(previous) => finish(previous).await.map_err(io_error(path))?,
        None => idle.take().expect("a sink when nothing is pending"),
    };
    tokio::task::spawn_blocking(move || sink.flush())
        .await
        .expect("the writer thread does not panic")
        .map_err(io_error(path))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(())
}

/// Bytes of chunks `copy_out` gathers before it writes them (the staging log's chunk size).
const WRITE_BATCH_BYTES: usize = 1 << 20;

/// Writes every chunk, in order, with as few `write` calls as the sink allows (vectored).
fn write_chunks<C: AsRef<[u8]>>(sink: &mut dyn Write, chunks: &[C]) -> std::io::Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> = chunks
        .iter()
        .map(|chunk| std::io::IoSlice::new(chunk.as_ref()))
        .collect();
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match sink.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => std::io::IoSlice::advance_slices(&mut slices, written),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The JSON of one object; `group` and `disks` come from its blob once migrated.
async fn object_json(store: &SqliteStore, record: &ObjectRecord) -> CliResult<serde_json::Value> {
    let (state, group, disks) = match &record.location {
        ObjectLocation::Staged { .. } => ("staged", None, None),
        ObjectLocation::Migrated { blob, .. } => {
            let blob = store
                .catalog()
                .blob(*blob)
                .await
                .map_err(|e| store_error(e.into()))?;
            (
                "migrated",
                blob.as_ref().map(|b| b.group),
                blob.map(|b| b.disks),
            )
        }
    };
    Ok(serde_json::json!({
        "key": record.key,
        "size": record.size_bytes,
        "state": state,
        "tier": record.tier.as_str(),
        "group": group,
        "disks": disks,
        "blake3": hex(&record.content_hash),
        "created_unix_ms": record.created_unix_ms,
    }))
}

async fn list(store: &SqliteStore, prefix: &str, json: bool) -> CliResult<()> {
    let records = store
        .list(prefix, None, LIST_LIMIT)
        .await
        .map_err(store_error)?;
    if json {
        let mut rows = Vec::with_capacity(records.len());
        for record in &records {
            rows.push(object_json(store, record).await?);
        }
        outln!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    for record in records {
        let state = match record.location {
            ObjectLocation::Staged { .. } => "staged",
            ObjectLocation::Migrated { .. } => "migrated",
        };
        outln!("{:>14} {state:<8} {}", record.size_bytes, record.key);
    }
    Ok(())
}

async fn stat(store: &SqliteStore, key: &str, json: bool) -> CliResult<()> {
    let record = store.stat(key).await.map_err(store_error)?;
    let value = object_json(store, &record).await?;
    if json {
        outln!("{value}");
        return Ok(());
    }
    for (name, field) in value.as_object().expect("an object") {
        outln!("{name}: {field}");
    }
    Ok(())
}

async fn status(store: &SqliteStore, json: bool) -> CliResult<()> {
    let status = store.status().await.map_err(store_error)?;
    let value = serde_json::to_value(&status).expect("status serializes");
    if json {
        outln!("{value}");
        return Ok(());
    }
    // A group of counters (the tail cache's) reads as one line each, `group.name: value`.
    for (name, field) in value.as_object().expect("an object") {
        match field.as_object() {
            Some(group) => {
                for (inner, field) in group {
                    outln!("{name}.{inner}: {field}");
                }
            }
            None => outln!("{name}: {field}"),
        }
    }
    Ok(())
}

/// `flush`: migrates, with a bar of bytes encoded when stderr is a terminal, then reports.
async fn flush(store: &SqliteStore, json: bool) -> CliResult<()> {
    let bar: std::sync::OnceLock<Option<ProgressBar>> = std::sync::OnceLock::new();
    let report = store
        .flush(|progress| {
            let bar = bar.get_or_init(|| {
                crate::output::stderr_is_terminal().then(|| {
                    ProgressBar::with_draw_target(
                        Some(progress.bytes_staged),
                        ProgressDrawTarget::stderr(),
                    )
                    .with_style(
                        ProgressStyle::with_template(
                            "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {msg}",
                        )
                        .expect("a valid template"),
                    )
                })
            });
            if let Some(bar) = bar {
                // Objects staged during the flush can push past the starting total.
                bar.set_length(progress.bytes_staged.max(progress.bytes_done));
                bar.set_position(progress.bytes_done);
                bar.set_message(format!("{} blobs", progress.blobs_written));
            }
        })
        .await;
    if let Some(Some(bar)) = bar.get() {
        bar.finish_and_clear();
    }
    let report = report.map_err(store_error)?;
    if json {
        outln!(
            "{}",
            serde_json::to_value(&report).expect("the report serializes")
        );
    } else {
        outln!(
            "{} blobs written, {} objects moved ({} deleted meanwhile), {} bytes, groups {:?}, {:.2} s",
            report.blobs_written,
            report.objects_moved,
            report.objects_dead,
            report.bytes_migrated,
            report.groups_used,
            report.seconds
        );
    }
    damaged_staged(&report.damaged)
}

/// Staged objects listed in a damaged report, at most this many by name.
const DAMAGED_NAMED: usize = 10;

/// A flush that left damaged objects staged fails after its report (exit 1), naming them: the
/// rest of the log migrated, but those objects need a delete or a new PUT.
fn damaged_staged(damaged: &[spinwise_store::DamagedStaged]) -> CliResult<()> {
    if damaged.is_empty() {
        return Ok(());
    }
    let mut named: Vec<String> = damaged
        .iter()
        .take(DAMAGED_NAMED)
        .map(|object| format!("`{}` ({})", object.key, object.reason))
        .collect();
    if damaged.len() > DAMAGED_NAMED {
        named.push(format!("and {} more", damaged.len() - DAMAGED_NAMED));
    }
    Err(CliError::Usage(format!(
        "{} staged object(s) are damaged and stay staged (the rest migrated; delete or PUT them again): {}",
        damaged.len(),
        named.join("; ")
    )))
}

/// `recover`: rebuilds the lost catalog (spinwise_store::recover); what it could not recover
/// is printed as warnings, so a partial recovery is never silent.
async fn recover(data: &Path, json: bool) -> CliResult<()> {
    let report = spinwise_store::recover(data)
        .await
        .map_err(|error| CliError::Usage(error.to_string()))?;
    for skipped in &report.skipped {
        eprintln!(
            "warning: not recovered: {}: {}",
            skipped.what, skipped.reason
        );
    }
    for damaged in &report.stacks_to_repair {
        eprintln!(
            "warning: recovered without this stack (a read or `store scrub` repairs it): {}: {}",
            damaged.what, damaged.reason
        );
    }
    if json {
        let value = serde_json::to_value(&report).expect("the report serializes");
        outln!("{value}");
        return Ok(());
    }
    outln!(
        "catalog rebuilt (it was {}): {} staged and {} migrated objects in {} blobs, {} older versions not restored, {} things skipped",
        report.catalog_was,
        report.staged_objects,
        report.migrated_objects,
        report.blobs,
        report.versions_replaced,
        report.skipped.len()
    );
    if let Some(moved) = &report.catalog_moved_to {
        outln!("the old catalog files were moved to {moved}");
    }
    Ok(())
}

/// `check`: every disk, group by group under the budgets; a bar of groups on a terminal.
async fn check(store: &SqliteStore, json: bool) -> CliResult<()> {
    let groups = store.layout().groups.len() as u64;
    let bar = crate::output::stderr_is_terminal().then(|| {
        ProgressBar::with_draw_target(Some(groups), ProgressDrawTarget::stderr()).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} groups checked {elapsed}")
                .expect("a valid template"),
        )
    });
    let report = store
        .check_disks(|done, _| {
            if let Some(bar) = &bar {
                bar.set_position(u64::from(done));
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        outln!(
            "{}",
            serde_json::to_value(&report).expect("the report serializes")
        );
    } else {
        outln!(
            "checked {} groups: {} disks passed, {} failed, {} files, {:.1} s",
            report.groups_checked,
            report.disks_ok,
            report.problems.len(),
            report.files,
            report.elapsed_s
        );
        for problem in &report.problems {
            outln!(
                "disk {} (group {}): {}",
                problem.disk,
                problem.group,
                problem.reason
            );
        }
        if !report.disks_marked_failed.is_empty() {
            outln!(
                "marked failed: disks {:?}; {} stripe stack(s) queued for rebuild",
                report.disks_marked_failed,
                report.rebuild_tasks_queued
            );
        }
    }
    match report.problems.len() {
        0 => Ok(()),
        failed => Err(CliError::Usage(format!(
            "{failed} disk(s) failed the check"
        ))),
    }
}

/// A task counter on stderr when it is a terminal.
fn count_bar(message: &'static str) -> Option<ProgressBar> {
    if !crate::output::stderr_is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
        ProgressStyle::with_template("{spinner} {msg} {pos}/{len}").expect("a valid template"),
    );
    bar.set_message(message);
    Some(bar)
}

async fn fail_disk(store: &SqliteStore, disk: u64) -> CliResult<()> {
    let report = store.fail_disk(disk).await.map_err(store_error)?;
    outln!(
        "disk {} failed; {} stripe stack(s) queued for rebuild",
        report.disk,
        report.tasks_queued
    );
    Ok(())
}

async fn rebuild(store: &SqliteStore, json: bool) -> CliResult<()> {
    let bar = count_bar("rebuilding stacks");
    let report = store
        .rebuild(|progress| {
            if let Some(bar) = &bar {
                bar.set_length(progress.total);
                bar.set_position(progress.done);
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let failed: Vec<String> = report.failed.iter().map(|(_, f)| f.to_string()).collect();
    if json {
        let value = serde_json::json!({
            "rebuilt": report.rebuilt.len(),
            "failed": failed,
            "bytes_written": report.bytes_written,
        });
        outln!("{value}");
    } else {
        outln!(
            "rebuilt {} stack(s), {} bytes written",
            report.rebuilt.len(),
            report.bytes_written
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "{} stack(s) could not be rebuilt (still queued): {}",
            failed.len(),
            failed.join("; ")
        )))
    }
}

async fn scrub(store: &SqliteStore, json: bool) -> CliResult<()> {
    let bar = count_bar("scrubbing blobs");
    let ledger = spinwise_store::ScrubLedger::default();
    let report = store
        .scrub(spinwise_store::ScrubMode::Forced, &ledger, |so_far| {
            if let Some(bar) = &bar {
                bar.set_position(so_far.blobs);
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        let value = serde_json::to_value(&report).expect("the report serializes");
        outln!("{value}");
    } else {
        outln!(
            "scrubbed {} blob(s), {} stripe(s): {} bad fragment(s), {} stack(s) repaired, {} on failed disks, {} stripe(s) beyond repair",
            report.blobs,
            report.stripes,
            report.bad_fragments,
            report.stacks_repaired,
            report.on_failed_disks,
            report.stripes_beyond_repair
        );
    }
    if report.unrepairable.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "corrupt beyond repair: {}",
            report.unrepairable.join("; ")
        )))
    }
}

/// `compact`: compacts every due blob with a count bar when stderr is a terminal, then reports.
async fn compact(store: &SqliteStore, min_dead_fraction: Option<f64>, json: bool) -> CliResult<()> {
    let bar = count_bar("compacting blobs");
    let started = std::time::Instant::now();
    let report = store
        .compact(min_dead_fraction, |so_far| {
            if let Some(bar) = &bar {
                bar.set_position(so_far.blobs_compacted + so_far.blobs_removed);
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        let value = serde_json::to_value(&report).expect("the report serializes");
        outln!("{value}");
    } else {
        outln!(
            "compacted {} blob(s), removed {} dead blob(s): {} bytes reclaimed, {} objects moved ({} deleted meanwhile) in {} unit(s), {} waited for reads, {:.2} s",
            report.blobs_compacted,
            report.blobs_removed,
            report.bytes_reclaimed,
            report.objects_moved,
            report.objects_dead,
            report.units,
            report.yields,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `collect-warm`: collects every due warm segment with a count bar of records moved when
/// stderr is a terminal, then reports.
async fn collect_warm(
    store: &SqliteStore,
    min_dead_fraction: Option<f64>,
    json: bool,
) -> CliResult<()> {
    let bar = count_bar("moving warm records");
    let started = std::time::Instant::now();
    let report = store
        .collect_warm(min_dead_fraction, |so_far| {
            if let Some(bar) = &bar {
                bar.set_position(so_far.records_moved + so_far.records_dead);
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    for problem in &report.problems {
        eprintln!("warning: {problem}");
    }
    if json {
        let value = serde_json::to_value(&report).expect("the report serializes");
        outln!("{value}");
    } else {
        outln!(
            "collected {} warm segment(s), freed {}: {} bytes reclaimed, {} record(s) moved ({} deleted or overwritten meanwhile), {} waited for requests, {:.2} s",
            report.segments_collected,
            report.segments_freed,
            report.bytes_reclaimed,
            report.records_moved,
            report.records_dead,
            report.yields,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

async fn upkeep(store: &std::sync::Arc<SqliteStore>, duration_s: f64, json: bool) -> CliResult<()> {
    if !spinwise_store::config::seconds_in_range(duration_s, false) {
        return Err(CliError::Usage(format!(
            "--for takes a number of seconds from 0 to {}, not {duration_s}",
            spinwise_store::config::MAX_SETTING_S
        )));
    }
    let handle = store.start_upkeep().await.map_err(store_error)?;
    tokio::time::sleep(std::time::Duration::from_secs_f64(duration_s)).await;
    let report = handle.stop().await;
    if json {
        let value = serde_json::to_value(&report).expect("the report serializes");
        outln!("{value}");
    } else {
        outln!(
            "upkeep: {} piggyback batch(es), {} scrub-only spin-up(s); scrubbed {} blob(s), {} bad fragment(s), {} stack(s) repaired; compacted {} blob(s), removed {}, {} bytes reclaimed",
            report.piggyback_batches,
            report.scrub_spin_ups,
            report.scrub.blobs,
            report.scrub.bad_fragments,
            report.scrub.stacks_repaired,
            report.compaction.blobs_compacted,
            report.compaction.blobs_removed,
            report.compaction.bytes_reclaimed
        );
        outln!(
            "upkeep: {} migration(s) moving {} object(s), {} rebuild run(s) restoring {} stack(s)",
            report.duties.flushes,
            report.duties.objects_migrated,
            report.duties.rebuilds,
            report.duties.stacks_rebuilt
        );
    }
    let mut problems = report.scrub.unrepairable.clone();
    problems.extend(report.errors.iter().cloned());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!("upkeep: {}", problems.join("; "))))
    }
}
