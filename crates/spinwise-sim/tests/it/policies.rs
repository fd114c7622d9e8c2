//! Every policy (pelican, flamingo, fp, random) driven by the simulator over random small racks
//! (`spinwise_testkit::racks::schedulable_rack`: generated as TOML and parsed, as in the planner's
//! properties, with spinning up never cheaper than active), their planned layouts, and
//! random workloads (rate, duration, seed, blob size, and for the policies that spin groups a
//! share of Bulk reads that wait for a spin-up; for every policy a share of Expedited reads that
//! go ahead of the others; for Pelican 1 to 4 requests served at once per class, pooled reads
//! above 1, and in half the cases staggered switches between classes sharing a NIC). For each
//! case and policy: the independent
//! disk-level checker finds no budget violation, every accepted request completes, and the
//! scheduler took a meaningful number of steps (the report's processed `events`; each one is
//! followed by polling the policy until it has nothing to do).
//!
//! CI runs ~600 requests per case and policy (32 cases). The long variant drives at least 10^5 steps per case
//! and policy (24 cases); run it with `cargo test -p spinwise-sim --release -- --ignored` (seconds
//! in release).
//!
//! Cases the rack itself rules out are skipped and counted, never passed silently: no layout
//! (the planner refuses the rack), a spin-up path whose charged state does not dominate (the
//! schedulers refuse the layout with a typed error), or — for the random layout only — fewer
//! domain-disjoint disks than k + r. The tests assert enough runs of every policy happened.

use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError, TestRunner};
use spinwise_plan::plan;
use spinwise_sched::random::PlacementError;
use spinwise_sched::scheduler::SchedulerError;
use spinwise_sim::{Deferral, PolicyKind, SimConfig, SimError, simulate};
use spinwise_testkit::racks::{GeneratedRack, schedulable_rack};
use std::collections::BTreeMap;

const POLICIES: [PolicyKind; 4] = [
    PolicyKind::Pelican,
    PolicyKind::Flamingo,
    PolicyKind::FullyProvisioned,
    PolicyKind::Random,
];

#[derive(Clone, Debug)]
struct Workload {
    rate_per_s: f64,
    seed: u64,
    blob_bytes: u64,
    /// Reads that may wait for a spin-up (Bulk), for every policy that spins groups.
    deferral: Option<Deferral>,
    /// The share of reads submitted as Expedited (at most 1 with the Bulk share).
    expedited_fraction: f64,
    /// Requests a Pelican class serves at once (pooled reads above 1).
    concurrent_requests: u32,
    /// Staggered switches for Pelican's classes that share a NIC: the queue length from which
    /// a class waits (capped at the layout's depth).
    stagger: Option<u32>,
}

fn workload() -> impl Strategy<Value = Workload> {
    let deferral = prop::option::of((0.0f64..=1.0, 0.0f64..2.0)).prop_map(|bulk| {
        bulk.map(|(fraction, wait_hours)| Deferral {
            fraction,
            wait_hours,
        })
    });
    // Half the cases have no Expedited reads; the others take a share of what Bulk leaves.
    let expedited = prop_oneof![Just(0.0f64), 0.0f64..=1.0];
    (
        0.05f64..3.0,
        any::<u64>(),
        10_000_000u64..2_000_000_000,
        deferral,
        expedited,
        (1u32..=4, prop::option::of(1u32..50)),
    )
        .prop_map(
            |(
                rate_per_s,
                seed,
                blob_bytes,
                deferral,
                expedited,
                (concurrent_requests, stagger),
            )| {
                Workload {
                    rate_per_s,
                    seed,
                    blob_bytes,
                    deferral,
                    expedited_fraction: expedited * (1.0 - deferral.map_or(0.0, |d| d.fraction)),
                    concurrent_requests,
                    stagger,
                }
            },
        )
}

/// Runs of each policy, and cases skipped by reason.
#[derive(Debug, Default)]
struct Tally {
    runs: BTreeMap<String, u32>,
    skipped: BTreeMap<String, u32>,
}

/// Simulates every policy on one generated rack; `expected_requests` sets the duration and
/// `min_events` the steps each run must take.
fn every_policy_keeps_budgets(
    generated: &GeneratedRack,
    workload: &Workload,
    expected_requests: f64,
    min_events: u64,
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let rack = generated.parse();
    let Ok(planned) = plan(&rack) else {
        *tally.skipped.entry("no layout".into()).or_default() += 1;
        return Ok(());
    };
    let mut layout = planned.layout;
    layout.scheduler.concurrent_requests_per_class = workload.concurrent_requests;
    let depth = layout.scheduler.max_queue_depth;
    layout.scheduler.stagger_switches_min_queue = workload.stagger.map(|n| n.min(depth));
    for policy in POLICIES {
        let config = SimConfig {
            rate_per_s: workload.rate_per_s,
            hours: expected_requests / workload.rate_per_s / 3600.0,
            warmup_hours: 0.0,
            seed: workload.seed,
            blob_bytes: workload.blob_bytes,
            network_gbps: Some(40.0),
            policy,
            // The random layout spins single disks: reads cannot wait for a group there.
            deferral: workload.deferral.filter(|_| policy != PolicyKind::Random),
            expedited_fraction: workload.expedited_fraction,
            ..SimConfig::default()
        };
        let report = match simulate(&rack, &layout, &config) {
            Ok(report) => report,
            Err(
                SimError::Scheduler(SchedulerError::SpinUpPath { .. })
                | SimError::Placement(PlacementError::SpinUp(SchedulerError::SpinUpPath { .. })),
            ) => {
                *tally.skipped.entry("spin-up path".into()).or_default() += 1;
                continue;
            }
            Err(SimError::RandomLayout { .. }) if policy == PolicyKind::Random => {
                *tally
                    .skipped
                    .entry("too few disjoint disks".into())
                    .or_default() += 1;
                continue;
            }
            Err(error) => return Err(TestCaseError::fail(format!("{policy:?}: {error}"))),
        };
        prop_assert_eq!(report.budget_violations, 0, "{:?}", policy);
        prop_assert_eq!(
            report.completed + report.rejected,
            report.requests,
            "{:?}: an accepted request did not complete",
            policy
        );
        prop_assert!(
            report.events >= min_events,
            "{:?}: only {} steps",
            policy,
            report.events
        );
        *tally.runs.entry(format!("{policy:?}")).or_default() += 1;
    }
    Ok(())
}

fn run_cases(cases: u32, expected_requests: f64, min_events: u64) -> Tally {
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x5eed),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let tally = std::cell::RefCell::new(Tally::default());
    let strategy = (schedulable_rack(), workload());
    let result = runner.run(&strategy, |(generated, workload)| {
        every_policy_keeps_budgets(
            &generated,
            &workload,
            expected_requests,
            min_events,
            &mut tally.borrow_mut(),
        )
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    let tally = tally.into_inner();
    // Shown with --nocapture: how many runs each policy had and why cases were skipped.
    eprintln!("{tally:?}");
    tally
}

/// Every policy ran in at least `least` cases (shrinking may add runs, never remove them).
fn assert_every_policy_ran(tally: &Tally, least: u32) {
    for policy in POLICIES {
        let runs = tally.runs.get(&format!("{policy:?}")).copied().unwrap_or(0);
        assert!(runs >= least, "{policy:?} ran {runs} times: {tally:?}");
    }
}

#[test]
fn every_policy_keeps_every_hard_budget_and_completes_what_it_accepts_on_random_racks() {
    // ~600 requests per run (Poisson: fewer than 450 is out of the question), each at least one
    // arrival event.
    let tally = run_cases(32, 600.0, 450);
    assert_every_policy_ran(&tally, 16);
}

#[test]
#[ignore = "long: at least 10^5 scheduler steps per case and policy; run with --release -- --ignored"]
fn every_policy_keeps_every_hard_budget_over_a_hundred_thousand_steps_per_case() {
    // ~110,000 requests per run: at least 10^5 arrival events alone.
    let tally = run_cases(24, 110_000.0, 100_000);
    assert_every_policy_ran(&tally, 12);
}
