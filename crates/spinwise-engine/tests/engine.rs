//! The rack engine on its own: a pure test shell (fixed latencies, an ordered event queue)
//! drives it on planned presets with every policy it builds, and checks what the engine promises
//! its shells: disks booked before they are commanded, a unit up only when every commanded disk
//! answered, failed disks charged but never commanded, the audit withholding what would break a
//! budget, a shutdown that serves and spins down, and books that verify from scratch after any
//! sequence of inputs.

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
}

impl Shell {
    fn new(engine: Engine) -> Shell {
        Shell {
            engine,
            now_us: 0,
            answers: BTreeMap::new(),
            sequence: 0,
            outputs: Vec::new(),
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
                Output::Activity(_) | Output::Disk(_) => {}
            }
            self.outputs.push(output);
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
    Answer,
    Fail { disk_seed: u32 },
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        3 => (any::<u32>(), 0u8..3).prop_map(|(group_seed, kind)| Input::Submit { group_seed, kind }),
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
        let mut served = shell.served();
        served.sort_unstable();
        prop_assert_eq!(served, accepted);
        prop_assert_eq!(shell.engine.audit().counters().refusals, 0);
    }
}
