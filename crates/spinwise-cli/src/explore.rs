//! `spinwise explore`: the design-space walk (Flamingo §4.1), a plan for every configuration
//! (in parallel, one configuration per task), and the files people read: configurations.csv,
//! summary.json and the provisioning figure (Flamingo Fig. 3(b)) as PNG and SVG.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::RackSource;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde_json::json;
use spinwise_model::Rack;
use spinwise_plan::explore::{DEFAULT_MAX_CONFIGURATIONS, provisioned_fraction, provisioned_share};
use spinwise_plan::{Configuration, PlanError, explore, plan};
use spinwise_report::{
    PointStatus, ProvisioningFigure, ProvisioningPoint, render_provisioning_png,
    render_provisioning_svg, write_table,
};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub source: RackSource,
    /// Directory for configurations.csv, summary.json, provisioning.png and provisioning.svg.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Stop after this many configurations.
    #[arg(long, default_value_t = DEFAULT_MAX_CONFIGURATIONS)]
    pub max_configurations: usize,
    /// Worker threads for planning configurations (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Resources on the figure's x axis, y axis and colour (default: the first three hard ones).
    #[arg(long, value_name = "RESOURCE", num_args = 3, value_names = ["X", "Y", "COLOUR"])]
    pub figure: Option<Vec<String>>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One planned configuration, flattened for the CSV and the figure.
struct Outcome {
    configuration: Configuration,
    result: Result<spinwise_plan::Plan, PlanError>,
    plan_ms: f64,
}

pub fn run(args: &ExploreArgs) -> CliResult<()> {
    if args.max_configurations == 0 {
        return Err(CliError::Usage(
            "--max-configurations must be at least 1".into(),
        ));
    }
    let rack = args.source.load()?;
    let figure_resources = figure_resources(&rack, args.figure.as_deref())?;
    std::fs::create_dir_all(&args.out).map_err(io_error(&args.out))?;
    let started = Instant::now();
    let exploration = explore(&rack, args.max_configurations);
    let explore_ms = started.elapsed().as_secs_f64() * 1e3;
    let outcomes = plan_all(&rack, exploration.configurations, args.jobs)?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    write_csv(&rack, &outcomes, &args.out)?;
    let figure = provisioning_figure(&rack, &outcomes, &figure_resources);
    render_provisioning_png(&figure, &args.out.join("provisioning.png"))?;
    render_provisioning_svg(&figure, &args.out.join("provisioning.svg"))?;
    let count = |status: PointStatus| outcomes.iter().filter(|o| status_of(o) == status).count();
    let summary = json!({
        "rack": rack.name,
        "disks": rack.disk_count(),
        "configurations": outcomes.len(),
        "efficient": count(PointStatus::Efficient),
        "inefficient": count(PointStatus::Inefficient),
        "no_solution": count(PointStatus::NoSolution),
        "truncated": exploration.truncated,
        "explore_ms": explore_ms,
        "elapsed_ms": elapsed_ms,
        "figure": { "x": figure_resources[0], "y": figure_resources[1], "colour": figure_resources[2] },
    });
    let summary_path = args.out.join("summary.json");
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary).expect("json values serialize") + "\n",
    )
    .map_err(io_error(&summary_path))?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary).expect("json values serialize")
        );
    } else {
        outln!(
            "{}: {} configurations ({} efficient, {} inefficient, {} without a solution){} in {:.1} s",
            rack.name,
            outcomes.len(),
            summary["efficient"],
            summary["inefficient"],
            summary["no_solution"],
            if exploration.truncated {
                ", truncated at --max-configurations"
            } else {
                ""
            },
            elapsed_ms / 1e3
        );
        outln!(
            "wrote {}/{{configurations.csv, summary.json, provisioning.png, provisioning.svg}}",
            args.out.display().to_string().trim_end_matches('/')
        );
    }
    Ok(())
}

fn figure_resources(rack: &Rack, chosen: Option<&[String]>) -> CliResult<Vec<String>> {
    let hard: Vec<String> = rack.hard_resources().map(|(_, r)| r.name.clone()).collect();
    if hard.is_empty() {
        // Until 2026-12-01 this read "--figure: `` is not a hard resource", --figure or not.
        return Err(CliError::Usage(format!(
            "{} has no hard resource: explore varies the hard budgets (the resources of kind = \"hard\"), so there is nothing to explore",
            rack.name
        )));
    }
    let names: Vec<String> = match chosen {
        Some(names) => names.to_vec(),
        None => (0..3)
            .map(|i| hard.get(i).or(hard.last()).cloned().unwrap_or_default())
            .collect(),
    };
    if let Some(unknown) = names.iter().find(|n| !hard.contains(n)) {
        return Err(CliError::Usage(format!(
            "--figure: `{unknown}` is not a hard resource of {} (hard resources: {})",
            rack.name,
            hard.join(", ")
        )));
    }
    Ok(names)
}

fn plan_all(
    rack: &Rack,
    configurations: Vec<Configuration>,
    jobs: Option<usize>,
) -> CliResult<Vec<Outcome>> {
    if let Some(jobs) = jobs
        && jobs > spinwise_experiment::MAX_JOBS
    {
        return Err(CliError::Usage(format!(
            "--jobs must be at most {} (0 or absent: one per core), got {jobs}",
            spinwise_experiment::MAX_JOBS
        )));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Usage(format!("--jobs: {e}")))?;
    let progress = ProgressBar::new(configurations.len() as u64);
    progress.set_style(ProgressStyle::with_template("{spinner} planning {pos}/{len} configurations [{bar:40}] {elapsed_precise} (eta {eta})").expect("static template").progress_chars("=> "));
    let outcomes = pool.install(|| {
        configurations
            .into_par_iter()
            .map(|configuration| {
                let started = Instant::now();
                let result = plan(&configuration.rack(rack));
                let plan_ms = started.elapsed().as_secs_f64() * 1e3;
                progress.inc(1);
                Outcome {
                    configuration,
                    result,
                    plan_ms,
                }
            })
            .collect()
    });
    progress.finish_and_clear();
    Ok(outcomes)
}

fn status_of(outcome: &Outcome) -> PointStatus {
    match &outcome.result {
        Ok(plan) if plan.layout.efficient => PointStatus::Efficient,
        Ok(_) => PointStatus::Inefficient,
        Err(_) => PointStatus::NoSolution,
    }
}

/// `configurations.csv`: one row per explored configuration (see [`csv_header`]).
fn write_csv(rack: &Rack, outcomes: &[Outcome], out: &std::path::Path) -> CliResult<()> {
    let hard: Vec<&str> = rack
        .hard_resources()
        .map(|(_, r)| r.name.as_str())
        .collect();
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|outcome| csv_row(outcome, &hard))
        .collect();
    Ok(write_table(
        &csv_header(rack, &hard),
        &rows,
        &out.join("configurations.csv"),
    )?)
}

/// The configuration and its parent, every resource's budget, each hard resource's provisioned
/// fraction, then the analysis and the plan (or why there is none).
fn csv_header(rack: &Rack, hard: &[&str]) -> Vec<String> {
    let mut header: Vec<String> = vec!["configuration".into(), "parent".into(), "relaxed".into()];
    header.extend(rack.resources.iter().map(|r| format!("budget_{}", r.name)));
    header.extend(hard.iter().map(|name| format!("provisioned_{name}")));
    header.extend(
        [
            "max_disks_at_highest",
            "bottleneck",
            "status",
            "efficient",
            "n",
            "groups",
            "k",
            "r",
            "f",
            "max_active_groups",
            "max_spinning_groups",
            "high_load_bound",
            "high_load_exact",
            "low_load_sampled",
            "high_load_sampled",
            "plan_ms",
            "reason",
        ]
        .map(String::from),
    );
    header
}

/// One configuration's cells, in [`csv_header`]'s order.
fn csv_row(outcome: &Outcome, hard: &[&str]) -> Vec<String> {
    let c = &outcome.configuration;
    let mut row = vec![
        c.index.to_string(),
        c.parent.map(|p| p.to_string()).unwrap_or_default(),
        c.relaxed.clone().unwrap_or_default(),
    ];
    row.extend(c.budgets.iter().map(ToString::to_string));
    row.extend(hard.iter().map(|name| {
        format!(
            "{:.4}",
            provisioned_fraction(&c.analysis, name).unwrap_or(f64::NAN)
        )
    }));
    row.push(c.analysis.max_disks_at_highest.to_string());
    row.push(c.analysis.bottleneck.join("+"));
    let (status, efficient) = match status_of(outcome) {
        PointStatus::Efficient => ("efficient", "true"),
        PointStatus::Inefficient => ("inefficient", "false"),
        PointStatus::NoSolution => ("no_solution", ""),
    };
    row.extend([status.to_string(), efficient.to_string()]);
    match &outcome.result {
        Ok(plan) => {
            let l = &plan.layout;
            let cells = [
                l.group_size,
                l.groups.len() as u32,
                l.erasure.k,
                l.erasure.r,
                l.erasure.f,
                l.max_active_groups,
                l.max_spinning_groups,
                l.high_load_bound,
            ];
            row.extend(cells.iter().map(ToString::to_string));
            // Whether the high-load search completed: otherwise the two figures before it are a
            // lower bound and a proven upper bound (docs/layout-format.md).
            row.push(plan.high_load.exact.to_string());
            row.push(format!("{:.4}", l.solver.low_load_sampled));
            row.push(format!("{:.4}", l.solver.high_load_sampled));
            row.push(format!("{:.1}", outcome.plan_ms));
            row.push(String::new());
        }
        Err(error) => {
            row.extend(std::iter::repeat_n(String::new(), 11));
            row.push(format!("{:.1}", outcome.plan_ms));
            row.push(error.to_string());
        }
    }
    row
}

fn provisioning_figure(
    rack: &Rack,
    outcomes: &[Outcome],
    resources: &[String],
) -> ProvisioningFigure {
    let configurations: Vec<(&Configuration, PointStatus)> = outcomes
        .iter()
        .map(|o| (&o.configuration, status_of(o)))
        .collect();
    figure_of(rack, &configurations, resources)
}

/// The figure's data: one point per configuration, each resource at its exact provisioned share
/// (continuous in the budget, not whole disks, so configurations a step apart stay apart; the
/// plotter spreads any that still coincide).
fn figure_of(
    rack: &Rack,
    configurations: &[(&Configuration, PointStatus)],
    resources: &[String],
) -> ProvisioningFigure {
    let share = |configuration: &Configuration, name: &str| {
        provisioned_share(rack, &configuration.budgets, name).unwrap_or(0.0)
    };
    ProvisioningFigure {
        title: format!(
            "{}: {} configurations explored",
            rack.name,
            configurations.len()
        ),
        x_label: format!(
            "{} provisioned (share of every disk in its costliest state)",
            resources[0]
        ),
        y_label: format!("{} provisioned", resources[1]),
        colour_label: format!("{} provisioned", resources[2]),
        points: configurations
            .iter()
            .map(|(c, status)| ProvisioningPoint {
                x: share(c, &resources[0]),
                y: share(c, &resources[1]),
                colour: share(c, &resources[2]),
                status: *status,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spinwise_report::marker_positions;
    use std::collections::BTreeSet;

    /// Flamingo's Fig. 3(b) has one marker per configuration: pelican's 52 explored
    /// configurations must give 52 markers at 52 distinct positions (whole-disk fractions put
    /// them on 33).
    #[test]
    fn the_pelican_figure_has_one_distinct_marker_per_explored_configuration() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets/pelican.toml");
        let text = std::fs::read_to_string(&path).expect("preset readable");
        let rack = spinwise_model::parse_rack("preset:pelican", &text).expect("preset parses");
        let exploration = explore(&rack, DEFAULT_MAX_CONFIGURATIONS);
        assert_eq!(exploration.configurations.len(), 52);
        let configurations: Vec<(&Configuration, PointStatus)> = exploration
            .configurations
            .iter()
            .map(|c| (c, PointStatus::Efficient))
            .collect();
        let resources = figure_resources(&rack, None).expect("three hard resources");
        let figure = figure_of(&rack, &configurations, &resources);
        let key = |(x, y): (f64, f64)| (x.to_bits(), y.to_bits());
        let data: BTreeSet<_> = figure.points.iter().map(|p| key((p.x, p.y))).collect();
        let markers: BTreeSet<_> = marker_positions(&figure.points)
            .into_iter()
            .map(key)
            .collect();
        assert_eq!(figure.points.len(), 52);
        assert_eq!(markers.len(), 52, "{} distinct data positions", data.len());
    }
}
