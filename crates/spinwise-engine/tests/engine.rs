//! The rack engine on its own: a pure test shell (fixed latencies, an ordered event queue)
//! drives it on planned presets with every policy it builds, and checks what the engine promises
//! its shells: disks booked before they are commanded, a unit up only when every commanded disk
//! answered, failed disks charged but never commanded, the audit withholding what would break a
//! budget, a shutdown that serves and spins down, deferred jobs that ride spin-ups for other work
//! or go at their start-by time, and books that verify from scratch after any sequence of
//! inputs.

use proptest::prelude::*;
use spinwise_engine::{
    DiskEvent, DiskPower, Engine, GroupActivity, GroupPhase, Output, PolicyChoice, Purpose,
    Rejected, build_policy,
};
use spinwise_model::{DiskIndex, GroupIndex, Layout, Rack, parse_rack};
use spinwise_sched::scheduler::{Kind, Request};
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

fn jbod() -> &'static (Rack, Layout) {
    static PLANNED: OnceLock<(Rack, Layout)> = OnceLock::new();
    PLANNED.get_or_init(|| preset("dense-jbod-60"))
}

fn pelican() -> &'static (Rack, Layout) {
    static PLANNED: OnceLock<(Rack, Layout)> = OnceLock::new();
    PLANNED.get_or_init(|| preset("pelican"))
}

fn engine(rack: &Rack, layout: &Layout, choice: PolicyChoice) -> Engine {
    let units = layout.group_disk_indices(rack).unwrap();
    let policy = build_policy(rack, layout, choice).unwrap();
    Engine::new(rack, units, policy).unwrap()
}

fn read(id: u64, group: GroupIndex) -> Request {
    Request {
        id,
        group,
        bytes: 1_000_000,
        kind: Kind::Client,
    }
}

const SPIN_UP_US: u64 = 10_000_000;
const SPIN_DOWN_US: u64 = 1_000_000;
const SERVE_US: u64 = 500_000;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Up(GroupIndex),
    Down(GroupIndex),
    Served(u64),
}

/// A shell in model time: every command is answered after a fixed latency, in order.
struct Shell {
    engine: Engine,
    now_us: u64,
    answers: BTreeMap<(u64, u64), Answer>,
    sequence: u64,
    outputs: Vec<Output>,
    /// When each of `outputs` was carried out.
    output_times_us: Vec<u64>,
}

impl Shell {
    fn new(engine: Engine) -> Shell {
        Shell {
            engine,
            now_us: 0,
            answers: BTreeMap::new(),
            sequence: 0,
            outputs: Vec::new(),
            output_times_us: Vec::new(),
        }
    }

    fn answer_at(&mut self, at_us: u64, answer: Answer) {
        self.sequence += 1;
        self.answers.insert((at_us, self.sequence), answer);
    }

    /// Carries out every output at the current time, keeping a record of them.
    fn carry_out(&mut self) {
        while let Some(output) = self.engine.next_output(self.now_us) {
            match &output {
                Output::SpinUp { unit, .. } => {
                    self.answer_at(self.now_us + SPIN_UP_US, Answer::Up(*unit))
                }
                Output::SpinDown { unit, .. } => {
                    self.answer_at(self.now_us + SPIN_DOWN_US, Answer::Down(*unit))
                }
                Output::Serve { request, .. } => {
                    self.answer_at(self.now_us + SERVE_US, Answer::Served(request.id))
                }
                Output::Activity(_) | Output::Disk(_) | Output::Withdrawn { .. } => {}
            }
            self.outputs.push(output);
            self.output_times_us.push(self.now_us);
        }
        self.engine.audit().verify_from_scratch();
    }

    /// Delivers the next answer (or wakes the engine at its timeout); `false` when neither is
    /// left.
    fn step(&mut self) -> bool {
        let next_answer_us = self.answers.keys().next().map(|(at_us, _)| *at_us);
        let wake_us = self.engine.next_wake_us();
        let at_us = match (next_answer_us, wake_us) {
            (None, None) => return false,
            (Some(a), Some(w)) => a.min(w),
            (Some(a), None) => a,
            (None, Some(w)) => w,
        };
        self.now_us = self.now_us.max(at_us);
        if next_answer_us == Some(at_us) {
            let (_, answer) = self.answers.pop_first().unwrap();
            match answer {
                Answer::Up(unit) => self.engine.unit_spun_up(self.now_us, unit),
                Answer::Down(unit) => self.engine.unit_spun_down(self.now_us, unit),
                Answer::Served(id) => self.engine.served(self.now_us, id),
            }
        }
        self.carry_out();
        true
    }

    fn run_until_quiet(&mut self) {
        for _ in 0..1_000_000 {
            if !self.step() {
                return;
            }
        }
        panic!("the engine never went quiet");
    }

    /// When each job was served, by id.
    fn served_at_us(&self) -> BTreeMap<u64, u64> {
        self.outputs
            .iter()
            .zip(&self.output_times_us)
            .filter_map(|(o, at_us)| match o {
                Output::Serve { request, .. } => Some((request.id, *at_us)),
                _ => None,
            })
            .collect()
    }

    /// When each spin-up was commanded, with its unit.
    fn spin_ups_us(&self) -> Vec<(u64, GroupIndex)> {
        self.outputs
            .iter()
            .zip(&self.output_times_us)
            .filter_map(|(o, at_us)| match o {
                Output::SpinUp { unit, .. } => Some((*at_us, *unit)),
                _ => None,
            })
            .collect()
    }

    fn served(&self) -> Vec<u64> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                Output::Serve { request, .. } => Some(request.id),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_unit_comes_up_only_when_every_commanded_disk_answered_and_each_was_booked_first() {
    let (rack, layout) = jbod();
    let mut engine = engine(rack, layout, PolicyChoice::Pelican);
    engine.submit(0, read(7, 0), Purpose::Read).unwrap();
    let mut outputs = Vec::new();
    while let Some(output) = engine.next_output(0) {
        outputs.push(output);
    }
    let disks = match &outputs[0] {
        Output::SpinUp { unit: 0, disks } => disks.clone(),
        other => panic!("expected group 0's spin-up first, got {other:?}"),
    };
    assert_eq!(disks, layout.group_disk_indices(rack).unwrap()[0]);
    assert!(matches!(
        outputs[1],
        Output::Activity(GroupActivity::SpinningUp { group: 0, .. })
    ));
    for &disk in &disks {
        assert_eq!(engine.audit().power(disk), Some(DiskPower::SpinningUp));
    }
    let (last, first) = disks.split_last().unwrap();
    for &disk in first {
        engine.disk_spun_up(5_000_000, disk, Ok(()));
        assert_eq!(engine.next_output(5_000_000), None, "up before disk {last}");
    }
    assert_eq!(engine.phase(0), GroupPhase::SpinningUp);
    engine.disk_spun_up(9_000_000, *last, Ok(()));
    let up = engine.next_output(9_000_000).unwrap();
    assert!(
        matches!(
            up,
            Output::Activity(GroupActivity::Up {
                group: 0,
                took_us: 9_000_000,
                ..
            })
        ),
        "{up:?}"
    );
    match engine.next_output(9_000_000).unwrap() {
        Output::Serve {
            request,
            purpose,
            submitted_us,
            spin_up_wait_us,
        } => {
            assert_eq!((request.id, purpose), (7, Purpose::Read));
            assert_eq!((submitted_us, spin_up_wait_us), (0, 9_000_000));
        }
        other => panic!("expected the job served, got {other:?}"),
    }
    for &disk in &disks {
        assert_eq!(engine.audit().power(disk), Some(DiskPower::Active));
    }
}

#[test]
fn a_failed_disk_is_charged_with_its_unit_but_never_commanded_and_the_job_sees_it_missing() {
    let (rack, layout) = jbod();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    let group = layout.group_disk_indices(rack).unwrap()[2].clone();
    let failed = group[1];
    assert_eq!(shell.engine.mark_failed(0, failed), Ok(true));
    assert_eq!(shell.engine.mark_failed(0, failed), Ok(false));
    assert!(shell.engine.mark_failed(0, 60).is_err());
    shell.engine.submit(0, read(1, 2), Purpose::Read).unwrap();
    shell.carry_out();
    let commanded = match &shell.outputs[0] {
        Output::SpinUp { disks, .. } => disks.clone(),
        other => panic!("{other:?}"),
    };
    assert!(!commanded.contains(&failed));
    assert_eq!(commanded.len(), group.len() - 1);
    assert_eq!(
        shell.engine.audit().power(failed),
        Some(DiskPower::SpinningUp)
    );
    assert!(shell.engine.missing(2).contains(&failed));
    shell.step();
    assert_eq!(shell.served(), vec![1]);
    // It follows its unit's states: charged active while the unit is up.
    assert_eq!(shell.engine.audit().power(failed), Some(DiskPower::Active));
    shell.engine.shutdown(shell.now_us);
    shell.carry_out();
    shell.run_until_quiet();
    assert!(shell.engine.finished());
    assert_eq!(shell.engine.audit().power(failed), Some(DiskPower::Resting));
    let spin_downs: Vec<&Output> = shell
        .outputs
        .iter()
        .filter(|o| matches!(o, Output::SpinDown { .. }))
        .collect();
    assert!(matches!(spin_downs[..], [Output::SpinDown { disks, .. }] if !disks.contains(&failed)));
}

#[test]
fn the_audit_withholds_every_disk_the_fully_provisioned_policy_would_spin_beyond_the_budget() {
    // FP spins every group up at once: on the right-provisioned JBOD that is 60 spin-ups
    // against power for 12.
    let (rack, layout) = jbod();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::FullyProvisioned));
    shell.engine.submit(0, read(0, 0), Purpose::Read).unwrap();
    shell.carry_out();
    let withheld = shell
        .outputs
        .iter()
        .filter(|o| matches!(o, Output::Disk(DiskEvent::Withheld { .. })))
        .count() as u64;
    let commanded: usize = shell
        .outputs
        .iter()
        .map(|o| match o {
            Output::SpinUp { disks, .. } => disks.len(),
            _ => 0,
        })
        .sum();
    let counters = shell.engine.audit().counters().clone();
    assert!(withheld > 0);
    assert_eq!(counters.refusals, withheld);
    assert_eq!(commanded as u64 + withheld, rack.disk_count() as u64);
    assert_eq!(counters.max_spinning_up as usize, commanded);
    shell.run_until_quiet();
    assert_eq!(shell.served(), vec![0]);
}

#[test]
fn shutdown_serves_what_was_accepted_refuses_the_rest_then_spins_every_unit_down() {
    let (rack, layout) = pelican();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    for id in 0..40 {
        let group = (id * 7 % layout.groups.len() as u64) as GroupIndex;
        shell
            .engine
            .submit(0, read(id, group), Purpose::Read)
            .unwrap();
    }
    shell.carry_out();
    shell.engine.shutdown(0);
    assert_eq!(
        shell.engine.submit(0, read(99, 0), Purpose::Read),
        Err(Rejected::ShuttingDown)
    );
    shell.run_until_quiet();
    let mut served = shell.served();
    served.sort_unstable();
    assert_eq!(served, (0..40).collect::<Vec<u64>>());
    assert!(shell.engine.finished());
    let state = shell.engine.state();
    assert!(state.groups.iter().all(|g| g.phase == GroupPhase::Resting));
    assert_eq!(
        (state.audit.active_now, state.audit.spinning_up_now),
        (0, 0)
    );
    assert_eq!(state.audit.refusals, 0);
}

const HOUR_US: u64 = 3_600_000_000;

#[test]
fn a_deferred_job_is_released_by_a_spin_up_for_other_work() {
    let (rack, layout) = jbod();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    shell
        .engine
        .defer(0, read(1, 0), Purpose::Read, HOUR_US)
        .unwrap();
    shell.carry_out();
    assert!(shell.spin_ups_us().is_empty(), "it waits");
    assert_eq!(shell.engine.deferred_jobs(), 1);
    assert!(!shell.engine.is_idle());
    shell.now_us = 100_000_000;
    shell
        .engine
        .submit(shell.now_us, read(2, 0), Purpose::Migration)
        .unwrap();
    shell.carry_out();
    assert_eq!(shell.spin_ups_us(), vec![(100_000_000, 0)]);
    assert_eq!(
        shell.engine.deferred_jobs(),
        0,
        "released as the spin-up started"
    );
    // The spin-up's announcement counts the rider among what waits for it.
    let announced = shell.outputs.iter().find_map(|o| match o {
        Output::Activity(GroupActivity::SpinningUp { work, .. }) => Some(*work),
        _ => None,
    });
    assert_eq!(announced.unwrap().jobs(Purpose::Read), 1);
    shell.run_until_quiet();
    let served = shell.served_at_us();
    let up_us = 100_000_000 + SPIN_UP_US;
    assert!(served[&1] >= up_us && served[&1] < HOUR_US);
    assert_eq!(shell.spin_ups_us().len(), 1, "no spin-up of its own");
    // Served under its deferral time: it waited from 0.
    let submitted = shell.outputs.iter().find_map(|o| match o {
        Output::Serve {
            request,
            submitted_us,
            ..
        } if request.id == 1 => Some(*submitted_us),
        _ => None,
    });
    assert_eq!(submitted, Some(0));
}

#[test]
fn a_deferred_job_is_released_at_its_start_by_time_and_its_spin_up_releases_the_others() {
    let (rack, layout) = jbod();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    let first_us = 60_000_000;
    shell
        .engine
        .defer(0, read(1, 0), Purpose::Read, first_us)
        .unwrap();
    shell
        .engine
        .defer(0, read(2, 0), Purpose::Read, HOUR_US)
        .unwrap();
    shell
        .engine
        .defer(0, read(3, 1), Purpose::Read, HOUR_US)
        .unwrap();
    shell.carry_out();
    assert!(shell.spin_ups_us().is_empty());
    shell.run_until_quiet();
    let served = shell.served_at_us();
    assert_eq!(shell.spin_ups_us()[0], (first_us, 0));
    // Job 2 rode job 1's spin-up, long before its own start-by; job 3's group waited.
    assert_eq!(served[&1], first_us + SPIN_UP_US);
    assert_eq!(served[&2], first_us + SPIN_UP_US + SERVE_US);
    assert!(served[&3] >= HOUR_US + SPIN_UP_US);
    assert!(shell.spin_ups_us().contains(&(HOUR_US, 1)));
    assert!(shell.engine.is_idle());
}

#[test]
fn a_deferred_job_never_causes_a_spin_up_before_its_start_by() {
    let (rack, layout) = pelican();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    let groups = layout.groups.len() as u64;
    // Every group gets deferred reads, start-by times spread over an hour from 10 min.
    for id in 0..200 {
        let group = (id * 7 % groups) as GroupIndex;
        let start_by_us = 600_000_000 + id * 17_000_000;
        shell.now_us = id * 1_000_000;
        shell
            .engine
            .defer(shell.now_us, read(id, group), Purpose::Read, start_by_us)
            .unwrap();
        shell.carry_out();
    }
    shell.run_until_quiet();
    let served = shell.served_at_us();
    assert_eq!(served.len(), 200);
    // Every spin-up is caused by a read at its start-by: the group's earliest one still waiting.
    let start_by = |id: u64| 600_000_000 + id * 17_000_000;
    let earliest_of = |group: GroupIndex| {
        (0..200u64)
            .filter(|id| id * 7 % groups == u64::from(group))
            .map(start_by)
            .min()
            .unwrap()
    };
    for (at_us, unit) in shell.spin_ups_us() {
        assert!(
            at_us >= earliest_of(unit),
            "group {unit} spun up at {at_us} µs, before any of its start-by times"
        );
    }
    for (id, at_us) in served {
        assert!(at_us >= 600_000_000 && at_us < start_by(id) + HOUR_US);
    }
}

#[test]
fn a_deferred_job_a_full_queue_refused_is_retried_when_a_place_frees() {
    let (rack, layout) = jbod();
    let mut layout = layout.clone();
    layout.scheduler.max_queue_depth = 2;
    let mut shell = Shell::new(engine(rack, &layout, PolicyChoice::Pelican));
    shell.engine.submit(0, read(1, 0), Purpose::Read).unwrap();
    shell.engine.submit(0, read(2, 0), Purpose::Read).unwrap();
    assert!(matches!(
        shell.engine.submit(0, read(3, 0), Purpose::Read),
        Err(Rejected::QueueFull { .. })
    ));
    // Due at once, but the class's queue is full: held, not refused.
    shell.engine.defer(0, read(4, 0), Purpose::Read, 0).unwrap();
    shell.engine.defer(0, read(5, 0), Purpose::Read, 0).unwrap();
    assert_eq!(shell.engine.deferred_jobs(), 2);
    shell.carry_out();
    shell.run_until_quiet();
    let served = shell.served_at_us();
    assert_eq!(served.keys().copied().collect::<Vec<_>>(), vec![1, 2, 4, 5]);
    // Offered again, oldest first, as the first job's start freed a place.
    assert!(served[&4] < served[&5]);
    assert_eq!(shell.engine.deferred_jobs(), 0);
}

#[test]
fn the_wake_time_names_the_earliest_start_by() {
    let (rack, layout) = jbod();
    let mut engine = engine(rack, layout, PolicyChoice::Pelican);
    assert_eq!(engine.next_wake_us(), None);
    engine
        .defer(0, read(1, 0), Purpose::Read, 500_000_000)
        .unwrap();
    engine
        .defer(0, read(2, 3), Purpose::Read, 200_000_000)
        .unwrap();
    engine
        .defer(0, read(3, 5), Purpose::Read, 900_000_000)
        .unwrap();
    assert_eq!(engine.next_output(0), None);
    assert_eq!(engine.next_wake_us(), Some(200_000_000));
    // At that time job 2 goes (its group spins up), and the next start-by is named.
    let mut outputs = Vec::new();
    while let Some(output) = engine.next_output(200_000_000) {
        outputs.push(output);
    }
    assert!(matches!(outputs[0], Output::SpinUp { unit: 3, .. }));
    assert_eq!(engine.deferred_jobs(), 2);
    assert_eq!(engine.next_wake_us(), Some(500_000_000));
}

#[test]
fn shutdown_withdraws_deferred_jobs_without_spinning_up_for_them() {
    let (rack, layout) = jbod();
    let mut shell = Shell::new(engine(rack, layout, PolicyChoice::Pelican));
    shell
        .engine
        .defer(0, read(1, 0), Purpose::Read, HOUR_US)
        .unwrap();
    shell
        .engine
        .defer(0, read(2, 4), Purpose::Read, HOUR_US)
        .unwrap();
    shell.carry_out();
    shell.engine.shutdown(1_000);
    assert_eq!(
        shell
            .engine
            .defer(1_000, read(3, 0), Purpose::Read, HOUR_US),
        Err(Rejected::ShuttingDown)
    );
    shell.carry_out();
    shell.run_until_quiet();
    let withdrawn: Vec<u64> = shell
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Withdrawn { request, .. } => Some(request.id),
            _ => None,
        })
        .collect();
    assert_eq!(withdrawn, vec![1, 2]);
    assert!(shell.spin_ups_us().is_empty() && shell.served().is_empty());
    assert!(shell.engine.finished());
}

#[test]
fn deferrals_beyond_the_limit_are_refused_with_the_count_held() {
    let (rack, layout) = jbod();
    let mut engine = engine(rack, layout, PolicyChoice::Pelican);
    engine.set_deferred_max(2);
    engine.defer(0, read(1, 0), Purpose::Read, HOUR_US).unwrap();
    engine.defer(0, read(2, 1), Purpose::Read, HOUR_US).unwrap();
    assert_eq!(
        engine.defer(0, read(3, 2), Purpose::Read, HOUR_US),
        Err(Rejected::DeferralFull { held: 2 })
    );
    // Due at once and accepted by the policy: nothing to hold, so not refused.
    engine.defer(0, read(4, 2), Purpose::Read, 0).unwrap();
    assert_eq!(engine.deferred_jobs(), 2);
}

#[test]
#[should_panic(expected = "answered while its unit")]
fn a_disk_answering_a_command_it_was_never_given_is_a_shell_bug() {
    let (rack, layout) = jbod();
    let mut engine = engine(rack, layout, PolicyChoice::Pelican);
    engine.disk_spun_up(0, 0, Ok(()));
}

#[test]
fn units_sharing_a_disk_or_naming_a_disk_outside_the_rack_are_refused() {
    let (rack, layout) = jbod();
    let policy = || build_policy(rack, layout, PolicyChoice::Pelican).unwrap();
    let shared = Engine::new(rack, vec![vec![0, 1], vec![1, 2]], policy());
    assert!(
        shared
            .unwrap_err()
            .to_string()
            .contains("disk 1 spins with unit 0 and unit 1")
    );
    let outside = Engine::new(rack, vec![vec![0, 60]], policy());
    assert!(
        outside
            .unwrap_err()
            .to_string()
            .contains("the rack has 60 disks")
    );
}

/// What a random input stream does, one step at a time.
#[derive(Clone, Debug)]
enum Input {
    Submit { group_seed: u32, kind: u8 },
    Defer { group_seed: u32, wait_s: u64 },
    Answer,
    Fail { disk_seed: u32 },
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        3 => (any::<u32>(), 0u8..3).prop_map(|(group_seed, kind)| Input::Submit { group_seed, kind }),
        1 => (any::<u32>(), 0u64..120).prop_map(|(group_seed, wait_s)| Input::Defer { group_seed, wait_s }),
        3 => Just(Input::Answer),
        1 => any::<u32>().prop_map(|disk_seed| Input::Fail { disk_seed }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_input_stream_keeps_the_books_balanced_within_budgets_and_serves_every_accepted_job(
        inputs in prop::collection::vec(input(), 1..200),
        choice in prop_oneof![Just(PolicyChoice::Pelican), Just(PolicyChoice::Flamingo)],
        on_pelican in any::<bool>(),
    ) {
        let (rack, layout) = if on_pelican { pelican() } else { jbod() };
        let mut engine = engine(rack, layout, choice);
        engine.set_idle_spin_down_us(Some(30_000_000));
        let mut shell = Shell::new(engine);
        let mut accepted = Vec::new();
        for (id, input) in inputs.into_iter().enumerate() {
            match input {
                Input::Submit { group_seed, kind } => {
                    let group = group_seed % layout.groups.len() as u32;
                    let kind = [Kind::Client, Kind::Expedited, Kind::Rebuild][kind as usize];
                    let request = Request { kind, ..read(id as u64, group) };
                    if shell.engine.submit(shell.now_us, request, Purpose::Read).is_ok() {
                        accepted.push(id as u64);
                    }
                }
                Input::Defer { group_seed, wait_s } => {
                    let group = group_seed % layout.groups.len() as u32;
                    let start_by_us = shell.now_us + wait_s * 1_000_000;
                    if shell.engine.defer(shell.now_us, read(id as u64, group), Purpose::Read, start_by_us).is_ok() {
                        accepted.push(id as u64);
                    }
                }
                Input::Answer => {
                    shell.step();
                }
                Input::Fail { disk_seed } => {
                    let disk = (disk_seed % rack.disk_count() as u32) as DiskIndex;
                    shell.engine.mark_failed(shell.now_us, disk).unwrap();
                }
            }
            shell.carry_out();
        }
        shell.engine.shutdown(shell.now_us);
        shell.carry_out();
        shell.run_until_quiet();
        prop_assert!(shell.engine.finished());
        // Every accepted job was served, or (deferred, not yet released) withdrawn at shutdown.
        let mut served = shell.served();
        served.extend(shell.outputs.iter().filter_map(|o| match o {
            Output::Withdrawn { request, .. } => Some(request.id),
            _ => None,
        }));
        served.sort_unstable();
        prop_assert_eq!(served, accepted);
        prop_assert_eq!(shell.engine.audit().counters().refusals, 0);
    }
}
