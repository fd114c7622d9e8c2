//! One owner of a data directory's disks (issue 30 item 1), checked from outside the processes:
//! a sampler reads every emulated disk's published power state (`DIR/.power-state`, as
//! `hdparm -C` asks a real drive) every few milliseconds and checks each sample, on its own,
//! against the rack's hard budgets, while ten `spinwise store get` processes read one object
//! each from ten different groups at once. One process at a time drives the disks, so no
//! sample exceeds a budget, and every GET returns its bytes exactly.

use crate::common;

use common::{TempDir, preset_text, spinwise};
use spinwise_disk::{PowerPhase, read_power_state};
use spinwise_model::{Amount, Rack, ResourceKind, parse_rack};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PRESET: &str = "dense-jbod-60";
/// Spin-ups of ~0.45 s (20 s + mount × 0.02): long enough for the sampler to see many samples
/// of each, short enough for ten in a row.
const TIME_FACTOR: &str = "0.02";
const GROUPS_WANTED: usize = 10;
const SAMPLE_INTERVAL: Duration = Duration::from_millis(3);

/// Deterministic bytes for object `seed`.
fn object_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A disk's draw on one resource in `phase`: a disk spinning up is charged its spin-up path's
/// costliest state (as the budget audit and the verifier charge it), one spinning down its
/// active state (it still spins), a failed or standby disk its resting state.
fn phase_cost(rack: &Rack, resource: usize, phase: PowerPhase) -> Amount {
    let cost = &rack.resources[resource].cost;
    match phase {
        PowerPhase::Standby | PowerPhase::Failed => cost[rack.resting_state()],
        PowerPhase::Active | PowerPhase::SpinningDown => cost[rack.active_state()],
        PowerPhase::SpinningUp => rack
            .spin_up_path()
            .into_iter()
            .map(|state| cost[state])
            .max()
            .expect("a path has states"),
    }
}

/// The budgets one sample of the rack's power states exceeds, as readable lines.
fn violations(rack: &Rack, phases: &[PowerPhase]) -> Vec<String> {
    let mut found = Vec::new();
    for (index, resource) in rack.hard_resources() {
        for (domain, disks) in resource.domains.iter().enumerate() {
            let load = disks.iter().fold(Amount::from_units(0), |sum, &disk| {
                sum + phase_cost(rack, index, phases[disk as usize])
            });
            if load > resource.budget {
                found.push(format!(
                    "{} domain {domain}: {load} {} > budget {}",
                    resource.name, resource.unit, resource.budget
                ));
            }
        }
    }
    found
}

/// What the sampler saw.
#[derive(Debug, Default)]
struct Sampled {
    samples: u64,
    /// The most disks seen spinning up (or active) in one sample.
    most_spinning_up: usize,
    most_active: usize,
    /// The first samples over a budget, with what they exceeded.
    over_budget: Vec<String>,
    over_budget_samples: u64,
}

/// Samples every disk's power state until `stop`, checking each sample against the budgets.
fn sample(rack: &Rack, disk_directories: &[PathBuf], stop: &AtomicBool) -> Sampled {
    let mut sampled = Sampled::default();
    while !stop.load(Ordering::Acquire) {
        let phases: Vec<PowerPhase> = disk_directories
            .iter()
            .map(|directory| read_power_state(directory).expect("a readable power state"))
            .collect();
        sampled.samples += 1;
        let count = |wanted| phases.iter().filter(|p| **p == wanted).count();
        sampled.most_spinning_up = sampled.most_spinning_up.max(count(PowerPhase::SpinningUp));
        sampled.most_active = sampled.most_active.max(count(PowerPhase::Active));
        let over = violations(rack, &phases);
        if !over.is_empty() {
            sampled.over_budget_samples += 1;
            if sampled.over_budget.len() < 5 {
                sampled.over_budget.push(over.join("; "));
            }
        }
        std::thread::sleep(SAMPLE_INTERVAL);
    }
    sampled
}

/// Puts and flushes objects one at a time until `GROUPS_WANTED` groups each hold one;
/// returns each group's object key and bytes.
fn objects_in_distinct_groups(dir: &TempDir, data: &str) -> BTreeMap<u64, (String, Vec<u8>)> {
    let mut by_group = BTreeMap::new();
    for seed in 0..(GROUPS_WANTED as u64 * 4) {
        if by_group.len() == GROUPS_WANTED {
            break;
        }
        let key = format!("object-{seed}");
        let bytes = object_bytes(seed, 300_000 + seed as usize * 1_000);
        let path = dir.join(&key);
        std::fs::write(&path, &bytes).unwrap();
        spinwise(["store", "--data", data, "put", &key, path.to_str().unwrap()]).success();
        spinwise(["store", "--data", data, "flush"]).success();
        let stat = spinwise(["store", "--data", data, "stat", &key, "--json"])
            .success()
            .json();
        let group = stat["group"]
            .as_u64()
            .expect("a migrated object has a group");
        by_group.entry(group).or_insert((key, bytes));
    }
    assert_eq!(
        by_group.len(),
        GROUPS_WANTED,
        "flushes reached only groups {:?}",
        by_group.keys().collect::<Vec<_>>()
    );
    by_group
}

fn disk_directories(data: &Path, disks: usize) -> Vec<PathBuf> {
    (0..disks)
        .map(|index| data.join("disks").join(format!("disk-{index:05}")))
        .collect()
}

#[test]
fn ten_concurrent_gets_on_ten_groups_never_exceed_a_hard_budget_and_return_exact_bytes() {
    let rack = parse_rack(PRESET, &preset_text(PRESET)).unwrap();
    assert!(rack.resources.iter().any(|r| r.kind == ResourceKind::Hard));
    let dir = TempDir::new("one-owner-gets");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    spinwise([
        "store",
        "--data",
        data,
        "init",
        "--preset",
        PRESET,
        "--time-factor",
        TIME_FACTOR,
    ])
    .success();
    let objects = objects_in_distinct_groups(&dir, data);

    let directories = disk_directories(&data_path, rack.disk_count());
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (rack, stop) = (rack.clone(), Arc::clone(&stop));
        std::thread::spawn(move || sample(&rack, &directories, &stop))
    };
    let started = Instant::now();
    let children: Vec<_> = objects
        .values()
        .map(|(key, _)| {
            let out = dir.join(&format!("{key}.out"));
            let child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
                .args(["store", "--data", data, "get", key])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (key.clone(), out, child)
        })
        .collect();
    for (key, out, child) in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "get {key}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let expected = &objects.values().find(|(k, _)| *k == key).unwrap().1;
        assert!(
            std::fs::read(&out).unwrap() == *expected,
            "{key}: bytes differ"
        );
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    let sampled = sampler.join().unwrap();
    eprintln!("ten gets in {elapsed_s:.2} s; sampled: {sampled:?}");
    assert!(sampled.samples >= 100, "too few samples: {sampled:?}");
    assert!(
        sampled.most_spinning_up > 0,
        "the sampler never saw a spin-up: {sampled:?}"
    );
    assert!(
        sampled.over_budget.is_empty(),
        "{} of {} samples exceeded a hard budget, e.g. {:?}",
        sampled.over_budget_samples,
        sampled.samples,
        sampled.over_budget
    );
}
