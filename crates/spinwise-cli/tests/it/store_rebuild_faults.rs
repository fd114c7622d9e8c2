//! Process-level fault tests of `spinwise store rebuild` and of repair on read, through the real
//! binary:
//! - killed at the crash point `rebuild:after-stack` (a rebuilt stack written, the catalog not
//!   yet pointing at it) and with SIGKILL at seeded random moments of a rebuild slowed by the
//!   disks' time factor: after each restart every object reads back byte-exact, nothing else is
//!   visible, the catalog passes its integrity check, and a final `rebuild` leaves no task
//!   queued and no stack file on a healthy disk that the catalog does not name (no orphan);
//! - `get` of an object with a flipped byte returns exact bytes, says on stderr that it repaired
//!   the stack, leaves the stack file as it was written, and a second `get` repairs nothing.

use crate::common;

use common::{TempDir, spinwise};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_catalog::{Catalog, DiskHealth, ObjectLocation};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn pattern(size_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size_bytes)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Rewrites one `key = value` line of the data directory's store.toml (test-only tuning: smaller
/// bundles make many blobs, a larger time factor slows the disks).
fn set_store_toml(data: &Path, key: &str, value: &str) {
    let path = data.join("store.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let prefix = format!("{key} = ");
    let mut found = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with(&prefix) && !found {
                found = true;
                format!("{prefix}{value}")
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(found, "store.toml has no `{key}`");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

/// A dense-jbod-60 store with `count` objects of `size_bytes`, each migrated into its own blob
/// (bundles of one object); returns the data path and the bodies by key.
fn migrated_store(
    dir: &TempDir,
    count: usize,
    size_bytes: usize,
) -> (String, BTreeMap<String, Vec<u8>>) {
    let data = dir.join("data").to_str().unwrap().to_string();
    spinwise([
        "store",
        "--data",
        &data,
        "init",
        "--preset",
        "dense-jbod-60",
        "--time-factor",
        "0.001",
    ])
    .success();
    set_store_toml(Path::new(&data), "bundle_bytes", &size_bytes.to_string());
    let mut bodies = BTreeMap::new();
    for index in 0..count {
        let key = format!("object-{index:02}");
        let body = pattern(size_bytes, index as u64 + 1);
        let input = dir.join(&format!("input-{index}"));
        std::fs::write(&input, &body).unwrap();
        spinwise([
            "store",
            "--data",
            &data,
            "put",
            &key,
            input.to_str().unwrap(),
        ])
        .success();
        bodies.insert(key, body);
    }
    spinwise(["store", "--data", &data, "flush"]).success();
    (data, bodies)
}

/// What the library sees: the stack files the catalog names on healthy disks, the healthy
/// disks, the rebuild tasks pending, and the catalog's integrity problems.
struct CatalogView {
    expected_stacks: BTreeSet<(u32, String)>,
    healthy_disks: Vec<u32>,
    rebuild_pending: u64,
    problems: Vec<String>,
    disks_of_first: Vec<u32>,
}

fn catalog_view(data: &Path) -> CatalogView {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = spinwise_store::Store::open_sqlite(data).await.unwrap();
        let failed: BTreeSet<u32> = store
            .catalog()
            .unhealthy_disks()
            .await
            .unwrap()
            .into_iter()
            .filter(|record| record.health == DiskHealth::Failed)
            .map(|record| record.disk)
            .collect();
        let mut expected_stacks = BTreeSet::new();
        let mut disks_of_first = Vec::new();
        for object in store.list("", None, 100_000).await.unwrap() {
            let ObjectLocation::Migrated { blob, .. } = object.location else {
                panic!("`{}` is not migrated", object.key);
            };
            let blob = store.catalog().blob(blob).await.unwrap().unwrap();
            if disks_of_first.is_empty() {
                disks_of_first = blob.disks.clone();
            }
            for (column, &disk) in blob.disks.iter().enumerate() {
                if !failed.contains(&disk) {
                    let name = spinwise_store::stacks::stack_name(blob.id, column);
                    expected_stacks.insert((disk, name));
                }
            }
        }
        let view = CatalogView {
            expected_stacks,
            healthy_disks: (0..60).filter(|d| !failed.contains(d)).collect(),
            rebuild_pending: store.status().await.unwrap().rebuild_pending,
            problems: store.catalog().integrity_check().await.unwrap().problems,
            disks_of_first,
        };
        store.close().await;
        view
    })
}

/// Every `.stack` file on the given disks, as (disk, name).
fn stack_files(data: &Path, disks: &[u32]) -> BTreeSet<(u32, String)> {
    let mut found = BTreeSet::new();
    for &disk in disks {
        let dir = spinwise_store::disk_directory(data, disk as usize);
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            if name.ends_with(".stack") {
                found.insert((disk, name));
            }
        }
    }
    found
}

/// After a restart: the listing is exactly the objects put (each acknowledged), every one reads
/// back byte-exact, and the catalog is consistent.
fn everything_reads_back(dir: &TempDir, data: &str, bodies: &BTreeMap<String, Vec<u8>>) {
    let listing = spinwise(["store", "--data", data, "ls", "--json"]).success();
    let listing: serde_json::Value = serde_json::from_str(&listing.stdout).unwrap();
    let visible: Vec<String> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(visible, bodies.keys().cloned().collect::<Vec<_>>());
    let output = dir.join("readback.bin");
    for (key, body) in bodies {
        spinwise([
            "store",
            "--data",
            data,
            "get",
            key,
            output.to_str().unwrap(),
        ])
        .success();
        assert!(std::fs::read(&output).unwrap() == *body, "`{key}` differs");
    }
    let view = catalog_view(Path::new(data));
    assert!(
        view.problems.is_empty(),
        "catalog integrity: {:?}",
        view.problems
    );
}

/// A final rebuild completes: no task left, and the healthy disks hold exactly the stacks the
/// catalog names (orphans of killed rebuilds were replaced, not leaked).
fn a_final_rebuild_completes_without_orphans(
    dir: &TempDir,
    data: &str,
    bodies: &BTreeMap<String, Vec<u8>>,
) {
    let rebuilt = spinwise(["store", "--data", data, "rebuild", "--json"]).success();
    let report: serde_json::Value = serde_json::from_str(&rebuilt.stdout).unwrap();
    assert_eq!(report["failed"].as_array().unwrap().len(), 0, "{report}");
    let view = catalog_view(Path::new(data));
    assert_eq!(view.rebuild_pending, 0);
    assert!(view.problems.is_empty(), "{:?}", view.problems);
    assert_eq!(
        stack_files(Path::new(data), &view.healthy_disks),
        view.expected_stacks
    );
    let scrub = spinwise(["store", "--data", data, "scrub", "--json"]).success();
    let scrub: serde_json::Value = serde_json::from_str(&scrub.stdout).unwrap();
    assert_eq!(scrub["bad_fragments"], 0, "{scrub}");
    everything_reads_back(dir, data, bodies);
}

#[test]
fn a_crash_after_a_rebuilt_stack_loses_nothing_and_the_next_rebuild_replaces_the_orphan() {
    let dir = TempDir::new("store-rebuild-crash");
    let (data, bodies) = migrated_store(&dir, 4, 200_000);
    let failed = catalog_view(Path::new(&data)).disks_of_first[1];
    spinwise(["store", "--data", &data, "fail-disk", &failed.to_string()]).success();
    let pending = catalog_view(Path::new(&data)).rebuild_pending;
    assert!(pending >= 1);
    let crashed = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data", &data, "rebuild"])
        .env("SPINWISE_CRASH_AT", "rebuild:after-stack")
        .output()
        .unwrap();
    assert!(
        !crashed.status.success(),
        "the crash point aborts the rebuild"
    );
    assert!(String::from_utf8_lossy(&crashed.stderr).contains("rebuild:after-stack"));
    // The stack was written but the catalog does not point at it: one orphan, task still queued.
    let view = catalog_view(Path::new(&data));
    assert_eq!(view.rebuild_pending, pending);
    let on_disks = stack_files(Path::new(&data), &view.healthy_disks);
    let orphans: Vec<_> = on_disks.difference(&view.expected_stacks).collect();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert!(view.expected_stacks.is_subset(&on_disks));
    everything_reads_back(&dir, &data, &bodies);
    a_final_rebuild_completes_without_orphans(&dir, &data, &bodies);
}

#[test]
fn kill_nine_at_random_moments_of_a_slow_rebuild_loses_nothing_and_leaks_no_stack() {
    let dir = TempDir::new("store-rebuild-kill");
    let (data, bodies) = migrated_store(&dir, 12, 600_000);
    let failed = catalog_view(Path::new(&data)).disks_of_first[0];
    spinwise(["store", "--data", &data, "fail-disk", &failed.to_string()]).success();
    let queued = catalog_view(Path::new(&data)).rebuild_pending;
    assert!(queued >= 2, "{queued}");
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut killed_mid_rebuild = 0;
    for round in 0..3 {
        let pending_before = catalog_view(Path::new(&data)).rebuild_pending;
        if pending_before == 0 {
            break;
        }
        // Slow disks for the rebuild only: a group's spin-up takes ~0.3–0.6 s, so the rebuild
        // spans about a second and the kill lands before, during or between its stacks.
        set_store_toml(Path::new(&data), "time_factor", "0.02");
        let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
            .args(["store", "--data", &data, "rebuild"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.random_range(200..900)));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed_mid_rebuild += 1;
        }
        child.wait().unwrap();
        set_store_toml(Path::new(&data), "time_factor", "0.001");
        // After every kill: all objects exact, nothing else visible, the catalog consistent.
        everything_reads_back(&dir, &data, &bodies);
        let pending_after = catalog_view(Path::new(&data)).rebuild_pending;
        assert!(pending_after <= pending_before);
        eprintln!("round {round}: rebuild tasks {pending_before} -> {pending_after}");
    }
    assert!(
        killed_mid_rebuild > 0,
        "the seed must kill some rebuild mid-way"
    );
    a_final_rebuild_completes_without_orphans(&dir, &data, &bodies);
}

#[test]
fn get_repairs_a_flipped_byte_on_disk_and_a_second_get_repairs_nothing() {
    let dir = TempDir::new("store-read-repair");
    let (data, bodies) = migrated_store(&dir, 1, 300_000);
    let view = catalog_view(Path::new(&data));
    let (disk, name) = view
        .expected_stacks
        .iter()
        .find(|(_, name)| name.ends_with("-c000.stack"))
        .unwrap()
        .clone();
    let path = spinwise_store::disk_directory(Path::new(&data), disk as usize).join(&name);
    let original = std::fs::read(&path).unwrap();
    let mut damaged = original.clone();
    damaged[300] ^= 0x40;
    std::fs::write(&path, &damaged).unwrap();

    let output = dir.join("out.bin");
    let first = spinwise([
        "store",
        "--data",
        &data,
        "get",
        "object-00",
        output.to_str().unwrap(),
    ])
    .success();
    assert!(std::fs::read(&output).unwrap() == bodies["object-00"]);
    assert!(
        first.stderr.contains("repaired 1 damaged stack (blob ")
            && first.stderr.contains("column 0)"),
        "{}",
        first.stderr
    );
    // The process waited for the repair: the stack is back as written.
    assert!(
        std::fs::read(&path).unwrap() == original,
        "the stack is still damaged"
    );
    let second = spinwise([
        "store",
        "--data",
        &data,
        "get",
        "object-00",
        output.to_str().unwrap(),
    ])
    .success();
    assert!(!second.stderr.contains("repaired"), "{}", second.stderr);
    assert!(std::fs::read(&output).unwrap() == bodies["object-00"]);
    let scrub = spinwise(["store", "--data", &data, "scrub", "--json"]).success();
    let scrub: serde_json::Value = serde_json::from_str(&scrub.stdout).unwrap();
    assert_eq!(scrub["bad_fragments"], 0, "{scrub}");
}
