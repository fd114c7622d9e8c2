//! Simulates a day of Pelican at a few rates behind a 40 Gbps link and prints each report's
//! headline numbers with the wall time of the run (this binary, unlike the library, reads the
//! clock: timing the simulator is its point).
//!
//! `cargo run --release -p spinwise-sim --example day -- [RATE_PER_S ...]` (default 0.1 1 4 8).

use spinwise_sim::{SimConfig, simulate};
use std::time::Instant;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets/pelican.toml");
    let text = std::fs::read_to_string(path).expect("the pelican preset");
    let rack = spinwise_model::parse_rack(path, &text).expect("the preset parses");
    let layout = spinwise_plan::plan(&rack).expect("the preset plans").layout;
    let mut rates: Vec<f64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a rate in requests per second"))
        .collect();
    if rates.is_empty() {
        rates = vec![0.1, 1.0, 4.0, 8.0];
    }
    for rate_per_s in rates {
        let config = SimConfig {
            network_gbps: Some(40.0),
            ..SimConfig::new(rate_per_s, 24.0, 1.0, 42)
        };
        let started = Instant::now();
        let report = simulate(&rack, &layout, &config).expect("a valid configuration");
        let wall_s = started.elapsed().as_secs_f64();
        println!(
            "rate {rate_per_s} req/s: throughput {:.2} Gbps, ttfb mean {:.2} s p99 {:.2} s, completion mean {:.2} s, \
             requests {} rejected {}, spin-ups {}, spin-up mean {:.2} s, power mean {:.0} W peak {:.0} W, \
             max active disks {}, violations {}, events {} (stale {}), trace {:016x}, wall {:.3} s",
            report.throughput_gbps,
            report.time_to_first_byte_s.mean,
            report.time_to_first_byte_s.p99,
            report.completion_time_s.mean,
            report.requests,
            report.rejected,
            report.spin_ups,
            report.spin_up_s.mean,
            report.power_w.mean,
            report.power_w.peak,
            report.max_active_disks,
            report.budget_violations,
            report.events,
            report.stale_events,
            report.trace_hash,
            wall_s,
        );
    }
}
