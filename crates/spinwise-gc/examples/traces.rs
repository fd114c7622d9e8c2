//! The slides' four traces on the default device, non-preemptive against semi-preemptive:
//! mean and variance of response time and the improvement of each.
//! `cargo run --release -p spinwise-gc --example traces [SEED]`

use spinwise_gc::{GcMode, SimConfig, TRACES, simulate};

fn main() {
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("SEED is a whole number"))
        .unwrap_or(1);
    println!(
        "| trace | NP mean µs | SP mean µs | mean −% | NP variance µs² | SP variance µs² | variance −% | NP p99 µs | SP p99 µs | blocks collected | preemptions | busy |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for workload in TRACES {
        let run = |mode| {
            let config = SimConfig {
                seed,
                ..SimConfig::new(*workload, mode)
            };
            simulate(&config).expect("the default configuration runs")
        };
        let np = run(GcMode::NonPreemptive);
        let sp = run(GcMode::SemiPreemptive);
        let drop = |before: f64, after: f64| 100.0 * (before - after) / before;
        println!(
            "| {} | {:.0} | {:.0} | {:.1} | {:.3e} | {:.3e} | {:.1} | {:.0} | {:.0} | {} | {} | {:.3} |",
            workload.name,
            np.mean_response_us,
            sp.mean_response_us,
            drop(np.mean_response_us, sp.mean_response_us),
            np.response_variance_us2,
            sp.response_variance_us2,
            drop(np.response_variance_us2, sp.response_variance_us2),
            np.p99_response_us,
            sp.p99_response_us,
            np.blocks_collected,
            sp.preemptions,
            np.busy_fraction,
        );
    }
}
