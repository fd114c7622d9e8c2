//! `spinwise design`: the cost-optimal archive for a design file (spinwise-design), with the
//! simulation memo kept in a directory, a progress bar, a summary or `--json`, and with `--out`
//! the tables and the cost-frontier figure.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::read_bounded;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use spinwise_design::analysis::{Context, FrontierPoint, Sensitivity, frontier, sensitivity};
use spinwise_design::block::PriceScales;
use spinwise_design::catalogue::MAX_DESIGN_FILE_BYTES;
use spinwise_design::design::{
    Binding, Refusal, Solved, bindings, design_text, measure_all, plan_candidates, price_all,
    program,
};
use spinwise_design::performance::{InMemory, NoMemo, SimMemo, SimOutcome, SimSettings};
use spinwise_design::{DesignFile, EXAMPLE_DESIGN};
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct DesignArgs {
    /// The design file: catalogue, economics and requirements (docs/design.md).
    #[arg(value_name = "DESIGN.toml", required_unless_present_any = ["example", "print_example"])]
    pub file: Option<PathBuf>,
    /// Design the worked example of docs/design.md: a 10 PB archive.
    #[arg(long, conflicts_with = "file")]
    pub example: bool,
    /// Print the example design file, to start your own from it.
    #[arg(long, conflicts_with_all = ["file", "example"])]
    pub print_example: bool,
    /// Replace the file's required capacity, TB of user data.
    #[arg(long, value_name = "TB")]
    pub capacity_tb: Option<f64>,
    /// Replace the file's required sustained read rate, MB/s.
    #[arg(long, value_name = "MB/S")]
    pub read_mb_per_s: Option<f64>,
    /// Replace the file's power cap, kW at peak.
    #[arg(long, value_name = "KW")]
    pub power_cap_kw: Option<f64>,
    /// Replace the file's budget (purchase price).
    #[arg(long)]
    pub budget: Option<f64>,
    /// Replace the file's first-byte target, seconds at the 99th percentile.
    #[arg(long, value_name = "S")]
    pub first_byte_p99_s: Option<f64>,
    /// Simulated hours of each run at load, half an hour of warm-up included (longer when a light
    /// load needs it for 2,000 reads; saturation runs take 1.5 h whatever this says).
    #[arg(long, default_value_t = 4.0)]
    pub hours: f64,
    /// Seed of every simulated run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also solve by exhaustive enumeration and fail unless the optimum is the same (small
    /// catalogues only: it is exponential).
    #[arg(long)]
    pub check: bool,
    /// Skip the sensitivity analysis (each input moved −20% and +25%).
    #[arg(long)]
    pub no_sensitivity: bool,
    /// Write design.json, blocks.csv, sensitivity.csv, frontier.csv and the cost-frontier
    /// figure (frontier.png, frontier.svg) here; the frontier is computed only then.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Keep simulation outcomes here between runs (default: $XDG_CACHE_HOME/spinwise/design or
    /// ~/.cache/spinwise/design). Outcomes are keyed by everything that decides a run.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache: Option<PathBuf>,
    /// Simulate everything afresh and keep nothing.
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// Everything a design run produced, as `--json` prints it and design.json holds it.
#[derive(Serialize)]
struct DesignReport {
    requirements: spinwise_design::catalogue::Requirements,
    economics: spinwise_design::catalogue::Economics,
    design: Solved,
    bindings: Vec<Binding>,
    sensitivity: Vec<Sensitivity>,
    enumeration_check: Option<EnumerationCheck>,
    refused: Vec<Refusal>,
    blocks: usize,
    blocks_on_front: usize,
    timing: Timing,
}

#[derive(Serialize)]
struct EnumerationCheck {
    tco: f64,
    design: String,
    identical_optimum: bool,
}

#[derive(Serialize)]
struct Timing {
    plan_s: f64,
    simulate_s: f64,
    simulations: u32,
    remembered: u32,
    solve_s: f64,
    analysis_s: f64,
}

pub fn run(args: &DesignArgs) -> CliResult<()> {
    if args.print_example {
        outln!("{}", EXAMPLE_DESIGN.trim_end());
        return Ok(());
    }
    let (file, base_dir) = load(args)?;
    let enclosure_texts = file
        .enclosures
        .iter()
        .map(|enclosure| rack_text(&enclosure.rack, &base_dir))
        .collect::<CliResult<Vec<_>>>()?;
    let kept = memo(args)?;
    let memo = InMemory::new(kept.as_ref());
    let settings = SimSettings {
        hours: args.hours,
        warmup_hours: 0.5,
        seed: args.seed,
    };
    if !(args.hours.is_finite() && args.hours > 1.0 && args.hours <= 48.0) {
        return Err(CliError::Usage(format!(
            "--hours: {} is not above 1 and at most 48",
            args.hours
        )));
    }
    let started = Instant::now();
    let candidates = plan_candidates(&file, &enclosure_texts);
    let plan_s = started.elapsed().as_secs_f64();
    let bar = progress_bar(args);
    let measurements = measure_all(
        &file,
        &candidates,
        &file.requirements,
        &settings,
        &memo,
        &|done, total| {
            if let Some(bar) = &bar {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
        },
    );
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let simulate_s = started.elapsed().as_secs_f64() - plan_s;
    let (blocks, refused) = price_all(&file, &candidates, &measurements, &PriceScales::default());
    let solving = Instant::now();
    let the_program = program(&file.requirements, &blocks);
    let blocks_on_front = the_program.front().len();
    let choice = the_program
        .solve()
        .map_err(|error| unsolvable(&error.to_string(), &refused))?;
    let solve_s = solving.elapsed().as_secs_f64();
    let intensity = file.requirements.read_mb_per_s / file.requirements.capacity_tb;
    let design = spinwise_design::design::solved(&choice, &blocks, intensity);
    let enumeration_check = args
        .check
        .then(|| check_by_enumeration(&the_program, &blocks, &design))
        .transpose()?;
    let analysing = Instant::now();
    let context = Context {
        file: &file,
        candidates: &candidates,
        settings: &settings,
        memo: &memo,
    };
    let bindings = bindings(&file.requirements, &blocks, &design);
    let sensitivity = if args.no_sensitivity {
        Vec::new()
    } else {
        sensitivity(&context, &measurements, (&design_text(&design), design.tco))
    };
    let frontier_points = args.out.as_ref().map(|_| frontier(&context));
    let analysis_s = analysing.elapsed().as_secs_f64();
    let (simulations, remembered) = measurements_counts(&blocks);
    let report = DesignReport {
        requirements: file.requirements.clone(),
        economics: file.economics.clone(),
        design,
        bindings,
        sensitivity,
        enumeration_check,
        refused,
        blocks: blocks.len(),
        blocks_on_front,
        timing: Timing {
            plan_s,
            simulate_s,
            simulations,
            remembered,
            solve_s,
            analysis_s,
        },
    };
    if let (Some(out), Some(points)) = (&args.out, &frontier_points) {
        write_outputs(out, &report, &blocks, points, &file)?;
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("a report serialises")
        );
    } else {
        print_summary(&report, &file);
    }
    Ok(())
}

/// Refused candidates an unsolvable design's error names, at most.
const REFUSALS_NAMED: usize = 8;

/// The error of a design no combination of blocks meets: the solver's reason, then every
/// candidate refused before pricing and why (until 2026-12-01 the message pointed at them, but
/// the process exited before anything printed them).
fn unsolvable(reason: &str, refused: &[Refusal]) -> CliError {
    let mut message = format!("{reason}: relax a requirement");
    if !refused.is_empty() {
        let named: Vec<String> = refused
            .iter()
            .take(REFUSALS_NAMED)
            .map(|refusal| format!("{}: {}", refusal.candidate, refusal.reason))
            .collect();
        message.push_str(&format!(
            "; {} candidate(s) refused before pricing: {}",
            refused.len(),
            named.join("; ")
        ));
        if refused.len() > REFUSALS_NAMED {
            message.push_str(&format!("; and {} more", refused.len() - REFUSALS_NAMED));
        }
    }
    CliError::Usage(message)
}

/// The design file and the directory its relative rack paths are in.
fn load(args: &DesignArgs) -> CliResult<(DesignFile, PathBuf)> {
    let (text, base_dir, shown) = match &args.file {
        Some(path) => (
            read_bounded(
                path,
                MAX_DESIGN_FILE_BYTES,
                "a design file",
                "catalogue::MAX_DESIGN_FILE_BYTES",
            )?,
            path.parent().map(Path::to_path_buf).unwrap_or_default(),
            path.display().to_string(),
        ),
        None => (
            EXAMPLE_DESIGN.to_string(),
            PathBuf::new(),
            "the example".into(),
        ),
    };
    let mut file =
        DesignFile::parse(&text).map_err(|error| CliError::Usage(format!("{shown}: {error}")))?;
    let requirements = &mut file.requirements;
    requirements.capacity_tb = args.capacity_tb.unwrap_or(requirements.capacity_tb);
    requirements.read_mb_per_s = args.read_mb_per_s.unwrap_or(requirements.read_mb_per_s);
    requirements.power_cap_kw = args.power_cap_kw.or(requirements.power_cap_kw);
    requirements.budget = args.budget.or(requirements.budget);
    requirements.first_byte_p99_s = args.first_byte_p99_s.or(requirements.first_byte_p99_s);
    file.validate()
        .map_err(|error| CliError::Usage(format!("{shown} with the flags given: {error}")))?;
    Ok((file, base_dir))
}

/// An enclosure's rack: a preset's text, or the file at `rack` (relative to the design file).
fn rack_text(rack: &str, base_dir: &Path) -> CliResult<String> {
    if let Some(text) = spinwise_model::presets::text(rack) {
        return Ok(text.to_string());
    }
    read_bounded(
        &base_dir.join(rack),
        spinwise_model::limits::MAX_RACK_FILE_BYTES,
        "a rack file",
        "limits::MAX_RACK_FILE_BYTES",
    )
}

fn check_by_enumeration(
    program: &spinwise_design::program::Program,
    blocks: &[spinwise_design::block::Block],
    design: &Solved,
) -> CliResult<EnumerationCheck> {
    let choice = program
        .enumerate()
        .map_err(|error| CliError::Usage(format!("--check: {error}")))?;
    let text = choice
        .counts
        .iter()
        .map(|&(i, n)| format!("{n} × {}", blocks[i].name))
        .collect::<Vec<_>>()
        .join(" + ");
    let identical_optimum = (choice.tco - design.tco).abs() <= 1e-6 * design.tco.max(1.0);
    if !identical_optimum {
        return Err(CliError::Usage(format!(
            "--check: enumeration found {text} at {:.2}, the solver {} at {:.2}",
            choice.tco,
            design_text(design),
            design.tco
        )));
    }
    Ok(EnumerationCheck {
        tco: choice.tco,
        design: text,
        identical_optimum,
    })
}

fn measurements_counts(blocks: &[spinwise_design::block::Block]) -> (u32, u32) {
    let mut seen = std::collections::BTreeSet::new();
    blocks
        .iter()
        .filter(|b| {
            seen.insert((
                b.parts.enclosure,
                b.parts.disk,
                b.measured.network_gbps.to_bits(),
            ))
        })
        .fold((0, 0), |(runs, remembered), b| {
            (
                runs + b.measured.simulations,
                remembered + b.measured.remembered,
            )
        })
}

fn progress_bar(args: &DesignArgs) -> Option<ProgressBar> {
    if args.json || !crate::output::stderr_is_terminal() {
        return None;
    }
    let style = ProgressStyle::with_template("simulating blocks {bar:40} {pos}/{len} eta {eta}")
        .expect("a valid template");
    Some(ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr()).with_style(style))
}

/// The memo the flags ask for.
fn memo(args: &DesignArgs) -> CliResult<Box<dyn SimMemo>> {
    if args.no_cache {
        return Ok(Box::new(NoMemo));
    }
    let directory = match &args.cache {
        Some(directory) => directory.clone(),
        None => match std::env::var_os("XDG_CACHE_HOME").or_else(|| {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache").into_os_string())
        }) {
            Some(base) => Path::new(&base).join("spinwise").join("design"),
            None => return Ok(Box::new(NoMemo)),
        },
    };
    std::fs::create_dir_all(&directory).map_err(io_error(&directory))?;
    Ok(Box::new(DirectoryMemo { directory }))
}

/// Outcomes as one small JSON file each, named by a hash of the key and holding the key, so a
/// hash collision reads as a miss, never as another run's outcome.
struct DirectoryMemo {
    directory: PathBuf,
}

#[derive(Serialize, serde::Deserialize)]
struct MemoEntry {
    key: String,
    outcome: SimOutcome,
}

impl DirectoryMemo {
    fn path(&self, key: &str) -> PathBuf {
        // The layouts' FNV-1a fingerprint: a stable name, not a security hash.
        let hash = spinwise_model::layout::fingerprint(key.as_bytes());
        self.directory.join(format!("{hash}.json"))
    }
}

impl SimMemo for DirectoryMemo {
    fn get(&self, key: &str) -> Option<SimOutcome> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let entry: MemoEntry = serde_json::from_str(&text).ok()?;
        (entry.key == key).then_some(entry.outcome)
    }

    /// Best effort: a memo that cannot be written only costs the next run its time.
    fn put(&self, key: &str, outcome: &SimOutcome) {
        let path = self.path(key);
        let entry = MemoEntry {
            key: key.to_string(),
            outcome: *outcome,
        };
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        let text = serde_json::to_string(&entry).expect("an entry serialises");
        if std::fs::write(&partial, text).is_ok() {
            let _ = std::fs::rename(&partial, &path);
        }
    }
}

fn money(file: &DesignFile, amount: f64) -> String {
    format!("{:.3} M{}", amount / 1e6, file.economics.currency)
}

fn print_summary(report: &DesignReport, file: &DesignFile) {
    let design = &report.design;
    let requirements = &report.requirements;
    outln!(
        "requirement   {:.0} TB at {:.0} MB/s{}{}{}",
        requirements.capacity_tb,
        requirements.read_mb_per_s,
        requirements
            .first_byte_p99_s
            .map_or(String::new(), |s| format!(", first byte p99 ≤ {s:.0} s")),
        requirements
            .power_cap_kw
            .map_or(String::new(), |kw| format!(", ≤ {kw:.1} kW")),
        requirements
            .budget
            .map_or(String::new(), |b| format!(", budget {}", money(file, b)))
    );
    outln!("design        {}", design_text(design));
    for line in &design.lines {
        let block = &line.block;
        outln!(
            "  {:>4} × {}: {} disks ({}+{}+{} in groups of {}), stores {:.0} of {:.0} TB{}, load {:.0} of {:.0} MB/s saturation, first byte mean {:.1} s p99 {:.1} s, {}",
            line.count,
            block.name,
            block.figures.disks,
            block.figures.k,
            block.figures.r,
            block.figures.f,
            block.figures.group_size,
            block.stored_tb,
            block.figures.usable_tb,
            if block.read_bound {
                " (read-bound)"
            } else {
                ""
            },
            block.measured.load_mb_per_s,
            block.measured.saturation_mb_per_s,
            block.measured.ttfb_mean_s,
            block.measured.ttfb_p99_s,
            money(file, block.tco)
        );
    }
    outln!(
        "cost          TCO {} = capex {} + energy {} + disk replacements {} over {} years",
        money(file, design.tco),
        money(file, design.capex),
        money(file, design.energy_cost),
        money(file, design.replacement_cost),
        file.economics.service_life_years
    );
    outln!(
        "hardware      {} disks, {} servers; stores {:.0} TB of {:.0} usable",
        design.disks,
        design.servers,
        design.stored_tb,
        design.usable_tb
    );
    outln!(
        "power         {:.1} kW peak, {:.1} kW mean at the design load",
        design.peak_kw,
        design.mean_kw
    );
    outln!(
        "predicted     {:.0} MB/s of reads simulated within the targets (saturation {:.0} MB/s); first byte mean {:.1} s, p99 {:.1} s",
        design.verified_read_mb_per_s,
        design.saturation_read_mb_per_s,
        design.ttfb_mean_s,
        design.ttfb_p99_s
    );
    for binding in &report.bindings {
        outln!(
            "binds?        {:12} {}{}",
            binding.constraint,
            if binding.binds { "binds" } else { "slack" },
            binding.relaxed_tco.map_or(String::new(), |tco| format!(
                " (without it: {})",
                money(file, tco)
            ))
        );
    }
    for row in report.sensitivity.iter().filter(|row| row.design_changes) {
        outln!(
            "sensitivity   {} ×{}: {} → {}",
            row.input,
            row.factor,
            row.tco.map_or("infeasible".into(), |tco| money(file, tco)),
            row.design
        );
    }
    if let Some(check) = &report.enumeration_check {
        outln!(
            "check         exhaustive enumeration: {} at {} (identical optimum)",
            check.design,
            money(file, check.tco)
        );
    }
    let timing = &report.timing;
    outln!(
        "timing        plan {:.2} s, simulate {:.2} s ({} runs, {} remembered), solve {:.3} s over {} blocks ({} on the front), analysis {:.2} s; {} candidates refused",
        timing.plan_s,
        timing.simulate_s,
        timing.simulations,
        timing.remembered,
        timing.solve_s,
        report.blocks,
        report.blocks_on_front,
        timing.analysis_s,
        report.refused.len()
    );
}

fn write_outputs(
    out: &Path,
    report: &DesignReport,
    blocks: &[spinwise_design::block::Block],
    points: &[FrontierPoint],
    file: &DesignFile,
) -> CliResult<()> {
    std::fs::create_dir_all(out).map_err(io_error(out))?;
    let json = serde_json::to_string_pretty(report).expect("a report serialises");
    let path = out.join("design.json");
    std::fs::write(&path, json).map_err(io_error(&path))?;
    let rows: Vec<BlockRow> = blocks.iter().map(BlockRow::of).collect();
    spinwise_report::write_csv(&rows, &out.join("blocks.csv"))?;
    // --no-sensitivity leaves no rows, and an empty CSV has no header to write.
    if !report.sensitivity.is_empty() {
        spinwise_report::write_csv(&report.sensitivity, &out.join("sensitivity.csv"))?;
    }
    let frontier_rows: Vec<FrontierRow> = points.iter().map(FrontierRow::of).collect();
    spinwise_report::write_csv(&frontier_rows, &out.join("frontier.csv"))?;
    let chart = frontier_chart(points, file);
    spinwise_report::render_lines_png(&chart, &out.join("frontier.png"))?;
    spinwise_report::render_lines_svg(&chart, &out.join("frontier.svg"))?;
    Ok(())
}

#[derive(Serialize)]
struct BlockRow {
    block: String,
    disks: u32,
    k: u32,
    r: u32,
    f: u32,
    usable_tb: f64,
    stored_tb: f64,
    network_gbps: f64,
    saturation_mb_per_s: f64,
    load_mb_per_s: f64,
    ttfb_mean_s: f64,
    ttfb_p99_s: f64,
    disk_power_mean_w: f64,
    peak_w: f64,
    capex: f64,
    energy_cost: f64,
    replacement_cost: f64,
    tco: f64,
    tco_per_stored_tb: f64,
}

impl BlockRow {
    fn of(block: &spinwise_design::block::Block) -> BlockRow {
        BlockRow {
            block: block.name.clone(),
            disks: block.figures.disks,
            k: block.figures.k,
            r: block.figures.r,
            f: block.figures.f,
            usable_tb: block.figures.usable_tb,
            stored_tb: block.stored_tb,
            network_gbps: block.measured.network_gbps,
            saturation_mb_per_s: block.measured.saturation_mb_per_s,
            load_mb_per_s: block.measured.load_mb_per_s,
            ttfb_mean_s: block.measured.ttfb_mean_s,
            ttfb_p99_s: block.measured.ttfb_p99_s,
            disk_power_mean_w: block.measured.disk_power_mean_w,
            peak_w: block.peak_w,
            capex: block.capex,
            energy_cost: block.energy_cost,
            replacement_cost: block.replacement_cost,
            tco: block.tco,
            tco_per_stored_tb: if block.stored_tb > 0.0 {
                block.tco / block.stored_tb
            } else {
                f64::INFINITY
            },
        }
    }
}

#[derive(Serialize)]
struct FrontierRow {
    read_mb_per_s: f64,
    best_tco: Option<f64>,
    best_design: String,
    by_enclosure: String,
}

impl FrontierRow {
    fn of(point: &FrontierPoint) -> FrontierRow {
        FrontierRow {
            read_mb_per_s: point.read_mb_per_s,
            best_tco: point.best_tco,
            best_design: point.best_design.clone(),
            by_enclosure: point
                .by_enclosure
                .iter()
                .map(|tco| tco.map_or("infeasible".into(), |t| format!("{t:.0}")))
                .collect::<Vec<_>>()
                .join(";"),
        }
    }
}

/// Least TCO (M) against the read rate: the best design, and each enclosure alone.
fn frontier_chart(points: &[FrontierPoint], file: &DesignFile) -> LineChart {
    let series_of = |name: String, style, tco: &dyn Fn(&FrontierPoint) -> Option<f64>| Series {
        name,
        style,
        points: points
            .iter()
            .filter_map(|p| tco(p).map(|t| LinePoint::new(p.read_mb_per_s / 1000.0, t / 1e6)))
            .collect(),
    };
    let mut series = vec![series_of(
        "best design".into(),
        SeriesStyle::LineWithMarkers,
        &|p| p.best_tco,
    )];
    for (index, enclosure) in file.enclosures.iter().enumerate().take(7) {
        series.push(series_of(
            format!("{} only", enclosure.name),
            SeriesStyle::Dashed,
            &|p| p.by_enclosure[index],
        ));
    }
    series.retain(|s| !s.points.is_empty());
    LineChart {
        title: format!(
            "Cost frontier: {:.0} TB, least TCO against the read rate",
            file.requirements.capacity_tb
        ),
        x_label: "required read rate (GB/s)".into(),
        y_label: format!("total cost of ownership (M{})", file.economics.currency),
        y_scale: YScale::Linear,
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes come back bit for bit: serde_json's default float parser may miss the last bit,
    /// which changed a remembered saturation by one ulp, so the load derived from it, so the key
    /// of the next run, and a cached design simulated again (the `float_roundtrip` feature).
    #[test]
    fn the_directory_memo_gives_back_every_outcome_bit_for_bit() {
        let directory =
            std::env::temp_dir().join(format!("spinwise-design-memo-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let memo = DirectoryMemo {
            directory: directory.clone(),
        };
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            // splitmix64: values spread over many magnitudes and every mantissa bit.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let z = z ^ (z >> 31);
            f64::from_bits((z >> 12) | (0x3f0_u64 + (z & 0x3f)) << 52)
        };
        for index in 0..2_000 {
            let outcome = SimOutcome {
                throughput_mb_per_s: next(),
                reject_rate: next(),
                ttfb_mean_s: next(),
                ttfb_p99_s: next(),
                disk_power_mean_w: next(),
                requests: index,
            };
            let key = format!("key {index}");
            memo.put(&key, &outcome);
            let back = memo.get(&key).expect("just written");
            assert_eq!(
                (
                    back.throughput_mb_per_s.to_bits(),
                    back.reject_rate.to_bits(),
                    back.ttfb_mean_s.to_bits(),
                    back.ttfb_p99_s.to_bits(),
                    back.disk_power_mean_w.to_bits()
                ),
                (
                    outcome.throughput_mb_per_s.to_bits(),
                    outcome.reject_rate.to_bits(),
                    outcome.ttfb_mean_s.to_bits(),
                    outcome.ttfb_p99_s.to_bits(),
                    outcome.disk_power_mean_w.to_bits()
                ),
                "{outcome:?} came back as {back:?}"
            );
        }
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn an_unsolvable_design_names_the_candidates_refused_before_pricing_and_why() {
        let refused: Vec<Refusal> = (0..10)
            .map(|index| Refusal {
                candidate: format!("enclosure{index}+disk"),
                reason: format!("reason {index}"),
            })
            .collect();
        let message = unsolvable("no design meets the requirements", &refused).to_string();
        assert!(message.starts_with("no design meets the requirements: relax a requirement"));
        assert!(
            message.contains("10 candidate(s) refused before pricing"),
            "{message}"
        );
        assert!(message.contains("enclosure0+disk: reason 0"), "{message}");
        assert!(message.contains("enclosure7+disk: reason 7"), "{message}");
        assert!(!message.contains("enclosure8+disk"), "{message}");
        assert!(message.ends_with("and 2 more"), "{message}");
        let none = unsolvable("no design meets the requirements", &[]).to_string();
        assert!(!none.contains("refused"), "{none}");
    }
}
