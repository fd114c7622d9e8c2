//! Renders the exploration figure from ~300 synthetic configurations laid out as a staircase, the
//! shape Flamingo's Fig. 3(b) shows: the explorer relaxes the bottleneck resource one unit at a
//! time, so each cooling step carries a run of power configurations.
//!
//! Usage: `cargo run -p spinwise-report --example provisioning_demo [OUT_DIR]`
//! (default `target/spinwise-report-demo`); writes `provisioning.png` and `provisioning.svg`.
//! The data are synthetic and deterministic; nothing here comes from the planner.

use std::path::PathBuf;

use spinwise_report::{
    PointStatus, ProvisioningFigure, ProvisioningPoint, render_provisioning_png,
    render_provisioning_svg,
};

fn staircase() -> Vec<ProvisioningPoint> {
    let mut points = Vec::new();
    // 15 cooling steps × 20 power increments each; each run of power configurations starts a
    // little to the right of the previous one, which gives the staircase.
    for step in 0..15 {
        let y = f64::from(step + 1) / 15.0;
        for run in 0..20 {
            let x = f64::from(step) * 0.055 + f64::from(run) * 0.01 + 0.02;
            // Vibration relaxes more slowly than power; a deterministic wobble keeps it varied.
            let colour =
                (0.05 + 0.8 * x + 0.15 * f64::from((step * 7 + run * 3) % 5) / 4.0).min(1.0);
            let status = match (step + run) % 9 {
                0 | 4 => PointStatus::Inefficient,
                7 if step < 3 => PointStatus::NoSolution,
                _ => PointStatus::Efficient,
            };
            points.push(ProvisioningPoint {
                x,
                y,
                colour,
                status,
            });
        }
    }
    points
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/spinwise-report-demo"));
    std::fs::create_dir_all(&out)?;
    let figure = ProvisioningFigure {
        title: "Design space explored from the Pelican rack (synthetic demo data)".into(),
        x_label: "power provisioned (fraction of all disks spinning up)".into(),
        y_label: "cooling provisioned (fraction of all disks spinning up)".into(),
        colour_label: "vibration provisioned (fraction of all disks spinning up)".into(),
        points: staircase(),
    };
    let png = out.join("provisioning.png");
    let svg = out.join("provisioning.svg");
    render_provisioning_png(&figure, &png)?;
    render_provisioning_svg(&figure, &svg)?;
    println!("wrote {} and {}", png.display(), svg.display());
    Ok(())
}
