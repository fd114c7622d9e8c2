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
//! (rate ≤ 0 or NaN for Poisson arrivals, hours ≤ warm-up, blob of 0 bytes, more than
//! [`MAX_REQUESTS`] expected, an empty burst, a failure outside the window or of 0 bytes or
//! stacks, a layout planned for another rack). Workloads, the trace format, the failure model and
//! every metric are specified in docs/simulator.md.
//!
//! # The model, and why
//!
//! - **Workload** ([`workload`]). Client requests arrive as a Poisson process at `rate_per_s`
//!   until `hours`, as a burst of b requests at uniform times over 60 s (measured from 0 until
//!   drained), or replayed from a trace ([`parse_trace`]: CSV `time_s,operation,key,size_bytes`,
//!   a key's group is FNV-1a 64 of the key mod the group count, writes are served like reads).
//!   Poisson and burst requests go to a uniformly random target — "uniform over stored blobs"
//!   when every target stores the same number — and read `blob_bytes` or a VHD-like size
//!   (truncated log-normal, 200 MB–9 GB, mean 3.3 GB). Targets are the layout's groups, or for
//!   the random straw-man layout ([`random_layout`], Pelican §2.2) 4,096 random placement sets of
//!   k + r disks that can all spin at once, scheduled at disk level.
//! - **Policies.** [`PolicyKind`]: Pelican's class scheduler, Flamingo's constraint-aware
//!   scheduler and the random layout on the rack as described; FP on the rack fully provisioned.
//!   With the layout's `stagger_switches_min_queue` and a network, Pelican's scheduler is told
//!   which classes share a server's NIC and staggers their switches (not in the paper;
//!   docs/simulator.md, "Staggered switches").
//! - **Spin-up.** The scheduler's `SpinUp(g)` moves every disk of unit `g` (a group, or one disk
//!   for the random layout) into the rack's spin-up
//!   path state before active (for every preset the one transient state, "spinning_up"). Each
//!   disk draws its own spin-up latency (`disk_model.spin_up_latency_s`) — it is *active*, and
//!   draws active power, from then on — and its own mount latency (`mount_latency_s`, or
//!   `mount_latency_high_load_s` when the rack gives one and at least half as many flows as
//!   scheduler classes are in progress at the spin-up's start: Pelican's load-dependent mounts);
//!   the group is reported spun up to the scheduler when the slowest disk has spun up and
//!   mounted, i.e. after `max over disks of (spin-up + mount)`.
//! - **Spin-down.** Each disk of `SpinDown(g)` draws its own `unmount_latency_s`, stays active
//!   while it unmounts and rests afterwards (spinning down itself is taken as instant); the group
//!   is reported spun down to the scheduler when the slowest disk has unmounted, i.e. after
//!   `max over disks of unmount` — as the store's disks, which unmount one by one, do.
//! - **Distributions.** Fixed as is; uniform by inverse CDF; truncated normal by rejection (a
//!   Box–Muller draw outside `[min, max]` is redrawn), clamping only after 64 rejections, which on
//!   the presets' ±2σ-or-wider ranges never happens. Latencies are rounded to whole µs.
//! - **Serving.** `Serve(request)` costs one seek (`disk_model.seek_ms`) before the first byte;
//!   then the blob flows from the first k disks of its group, in the layout's order (a systematic
//!   code reads its k data fragments; which k disks of the group hold a given blob is not
//!   modelled, so every read of a group uses the same k). The scheduler serves up to the
//!   layout's `concurrent_requests_per_class` per class at a time (Flamingo: as many per active
//!   group; FP and the random layout: one per group or placement set),
//!   so at most that many flows are in progress. With more than one, a group's client reads are
//!   *pooled*: each streams k fragments spread over all the group's disks, capped at k disks'
//!   bandwidth, and together they share the group's n disks (docs/simulator.md, "Concurrent
//!   requests").
//! - **Network.** Flows share links by max-min fairness (module `network` has the details):
//!   every disk (`bandwidth_mb_per_s`), every domain of a soft resource whose unit is a bandwidth
//!   (Pelican: a 64 Gbps PCIe root per half rack), and one NIC per server. The servers are the
//!   domains of the failure domain named `server` (Pelican: two, by `x/3`), else the rack is one
//!   server; each NIC gets `network_gbps / servers`, so `--network-gbps 40` is Pelican's
//!   2 × 20 Gbps (Pelican §4: "Each server is configured with 20 Gbps network bandwidth"), 8.5 the
//!   cross-validation rack's NIC, and `unbounded` removes the NICs (disks and PCIe roots still
//!   bind: FP tops out near 2 × 64 Gbps). Why links and not one pipe: Pelican's simulator models
//!   "the PCIe/SATA and network bandwidth at flow level" (§4), and where a rack's bandwidth
//!   budgets sit decides which reads slow each other down. A read of 1 GB loads each of its
//!   k disks with 1/k of its rate, each PCIe root with the share of its disks behind it, and the
//!   NIC of the server holding most of them with all of it: alone it runs at
//!   k × 105 MB/s = 12.6 Gbps (0.635 s + the seek), two on one 20 Gbps NIC get 10 Gbps each.
//!   Rates are recomputed at every flow start and end; the network keeps one pending completion
//!   (the earliest, ties by flow id) under a generation counter, and a flow's bytes are brought
//!   up to date only when its rate changes. Completion times round up to whole µs; every byte
//!   requested is delivered (asserted at the end of a run).
//!   Not modelled: per-disk queues, SAS/HBA links not in the rack file, disk and server failures
//!   (no PCIe fail-over).
//! - **Failure and rebuild.** With [`SimConfig::failure`], one disk of a random group fails (by
//!   default at the end of the warm-up); each of its lost stripe stacks becomes a
//!   `Kind::Rebuild` request for that group, kept ≤ 8 queued and refilled whenever a queue place
//!   frees. A rebuild flow reads k stacks and writes one inside the group: the regenerated stack
//!   goes to another surviving disk of the group (rotating by stack), so a rebuild flow loads
//!   k + 1 disks and their PCIe roots, never a NIC: alone it runs at one disk's bandwidth, and
//!   its bytes are not client throughput. After the failure the group's reads use k surviving
//!   disks. The
//!   scheduler's fair share charges disk time (a client read b / k, a stack b). The report's
//!   rebuild time runs from the failure to the last stack served; the run drains it.
//! - **Bulk reads.** With [`SimConfig::deferral`], a share of the client reads may wait for a
//!   spin-up other work causes, as the S3 server's Bulk restores do: a Bulk read whose group is
//!   not up is held outside the scheduler until the policy spins that group up or its wait
//!   ends, and one a full queue refuses is tried again as places free (docs/simulator.md).
//! - **Window.** Metrics cover requests that *arrive* in `[warmup_hours, hours)` (a burst: the
//!   whole run), and time inside it (throughput = client bytes delivered inside the window / its
//!   length; power and active disks time-weighted over it; spin-ups and disk TB per disk scaled
//!   to a 365-day year). After `hours` arrivals stop and accepted work drains, so every
//!   accepted request in the window has a completion time. Time to first byte is also split by
//!   the scheduler class of the request's group ([`Report::ttfb_by_class_s`], with the failed
//!   disk's class in [`Report::rebuild_class`]) when the layout has classes.
//! - **Checker.** [`Report::budget_violations`] comes from an independent checker that re-adds,
//!   disk by disk from the rack's hard domains and each disk's physical state, the draw of every
//!   domain a state change touched. It never reads the scheduler's books; it must report 0.
//!
//! Modules: `config` (inputs, limits, errors), `workload` (arrivals, sizes, trace parser),
//! `sample` (distributions), `network` (max-min flows over disks, bandwidth domains and NICs),
//! `disks` (disk states, checker, power meter), `report` (output, trace hash), `random_layout`
//! (the straw-man placement sets), `sim` (the loop).

mod agenda;
pub mod config;
mod disks;
mod network;
pub mod random_layout;
pub mod report;
mod sample;
mod sim;
pub mod workload;

pub use config::{
    DEFAULT_BLOB_BYTES, DEFAULT_FAILED_BYTES, DEFAULT_FAILED_STACKS, DEFAULT_IDLE_SPIN_DOWN_S,
    Deferral, DiskFailure, FpQueues, MAX_BLOB_BYTES, MAX_FAILED_BYTES, MAX_HOURS, MAX_NETWORK_GBPS,
    MAX_REQUESTS, MIN_NETWORK_GBPS, PolicyKind, SimConfig, SimError,
};
pub use report::{IdleSavings, Power, ReadTier, RebuildReport, Report, RequestRecord, Summary};
pub use sim::{simulate, simulate_recording, simulate_with_baseline};
pub use workload::{
    Arrivals, BlobSizes, MAX_TRACE_LINE_BYTES, Operation, TraceError, TraceProblem, TraceRecord,
    parse_trace, read_trace,
};
