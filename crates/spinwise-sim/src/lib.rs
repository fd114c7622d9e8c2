//! spinwise-sim: a deterministic discrete-event simulator of one rack running the real
//! `spinwise_sched::scheduler::ClassScheduler` (issue 3, first slice). Pure: a virtual clock in
//! integer microseconds, no IO, no threads, no wall clock; one seeded `ChaCha8Rng` decides every
//! random quantity; only ordered maps are iterated; the event queue is a
//! `BinaryHeap<Reverse<(time_us, sequence, Event)>>`, so ties resolve in push order. The same
//! inputs give the same [`Report`], down to its trace hash (FNV-1a 64 over every processed
//! (time, event)).
//!
//! # Running it from Rust
//!
//! ```no_run
//! use spinwise_sim::{SimConfig, simulate};
//!
//! let path = "presets/pelican.toml";
//! let rack = spinwise_model::parse_rack(path, &std::fs::read_to_string(path).unwrap()).unwrap();
//! let layout = spinwise_plan::plan(&rack).unwrap().layout; // or Layout::from_json(...)
//! let config = SimConfig {
//!     network_gbps: Some(40.0),
//!     ..SimConfig::new(8.0, 24.0, 1.0, 42) // 8 req/s for 24 h, first hour is warm-up, seed 42
//! };
//! let report = simulate(&rack, &layout, &config).unwrap();
//! assert_eq!(report.budget_violations, 0);
//! println!("{}", serde_json::to_string_pretty(&report).unwrap());
//! ```
//!
//! `cargo run --release -p spinwise-sim --example day` runs that day on Pelican and prints the
//! report and the wall time. A run refuses a bad configuration with a [`SimError`]
//! (rate ≤ 0 or NaN, hours ≤ warm-up, blob of 0 bytes, more than [`MAX_REQUESTS`] expected, a
//! layout planned for another rack).
//!
//! # The model, and why
//!
//! - **Workload.** Client reads arrive as a Poisson process at `rate_per_s` until `hours`; each
//!   reads one blob of `blob_bytes` from a uniformly random target — the stand-in for "uniform over
//!   stored blobs" when every target stores the same number of blobs. Targets are the layout's
//!   groups, or for the random straw-man layout ([`random_layout`], Pelican §2.2) 4,096 random
//!   placement sets of k + r disks that can all spin at once, scheduled at disk level. No writes, no
//!   rebuild.
//! - **Policies.** [`PolicyKind`]: Pelican's class scheduler, Flamingo's constraint-aware
//!   scheduler and the random layout on the rack as described; FP on the rack fully provisioned.
//! - **Spin-up.** The scheduler's `SpinUp(g)` moves every disk of unit `g` (a group, or one disk
//!   for the random layout) into the rack's spin-up
//!   path state before active (for every preset the one transient state, "spinning_up"). Each
//!   disk draws its own spin-up latency (`disk_model.spin_up_latency_s`) — it is *active*, and
//!   draws active power, from then on — and its own mount latency (`mount_latency_s`); the group
//!   is reported spun up to the scheduler when the slowest disk has spun up and mounted,
//!   i.e. after `max over disks of (spin-up + mount)`.
//! - **Spin-down.** `SpinDown(g)` completes after one `unmount_latency_s` sample; the disks stay
//!   active while unmounting and rest afterwards (spinning down itself is taken as instant).
//! - **Distributions.** Fixed as is; uniform by inverse CDF; truncated normal by rejection (a
//!   Box–Muller draw outside `[min, max]` is redrawn), clamping only after 64 rejections, which on
//!   the presets' ±2σ-or-wider ranges never happens. Latencies are rounded to whole µs.
//! - **Serving.** `Serve(request)` costs one seek (`disk_model.seek_ms`) before the first byte;
//!   then the blob flows at up to `k × bandwidth_mb_per_s` (a systematic code reads the data
//!   fragments from k disks). All flows share one network link of `network_gbps` by max-min
//!   fairness (water-filling), recomputed whenever a flow starts or ends; each flow has one
//!   completion event, invalidated by a generation counter when its rate changes. The scheduler
//!   serves one request per class at a time, so at most one flow per class is in progress.
//!   Not modelled: PCIe/SAS/server limits (the rack's soft resources), per-disk queues, failures.
//! - **Window.** Metrics cover requests that *arrive* in `[warmup_hours, hours)`, and time inside
//!   it (throughput = bytes delivered inside the window / its length; power and active disks
//!   time-weighted over it). After `hours` arrivals stop and accepted work drains, so every
//!   accepted request in the window has a completion time.
//! - **Checker.** [`Report::budget_violations`] comes from an independent checker that re-adds,
//!   disk by disk from the rack's hard domains and each disk's physical state, the draw of every
//!   domain a state change touched. It never reads the scheduler's books; it must report 0.
//!
//! Modules: `config` (inputs, limits, errors), `sample` (distributions), `network` (max-min
//! flows), `disks` (disk states, checker, power meter), `report` (output, trace hash),
//! `random_layout` (the straw-man placement sets), `sim` (the loop).

pub mod config;
mod disks;
mod network;
pub mod random_layout;
pub mod report;
mod sample;
mod sim;

pub use config::{
    DEFAULT_BLOB_BYTES, MAX_BLOB_BYTES, MAX_HOURS, MAX_REQUESTS, PolicyKind, SimConfig, SimError,
};
pub use report::{Power, Report, Summary};
pub use sim::simulate;
