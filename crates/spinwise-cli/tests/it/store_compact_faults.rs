//! `spinwise store compact` through the real binary, killed (`SPINWISE_CRASH_AT`, an abort like
//! `kill -9`) at each compaction crash point: `compact:after-begin`, `compact:after-stacks`
//! (the new blob `Writing`) and `compact:after-commit` (objects moved, the old blob not yet
//! removed). After the restart every live object reads back byte-exact, deleted ones stay
//! absent, the catalog passes its integrity check, `status` reports what is reclaimable, and a
//! second `compact` finishes the job: one blob of the live bytes, no stack file the catalog does
//! not name, no dead bytes. A semi-preemptive compaction killed between two units
//! (`compact:between-units`) keeps the unit it committed and the second `compact` moves the rest.

use crate::common;

use common::{TempDir, init_jbod_store, integer, pattern, spinwise, stack_files};
use spinwise_catalog::Catalog;
use std::path::Path;
use std::process::Command;

/// Object sizes: keys `k0`..`k5`; k1, k3 and k5 (the big ones) are deleted before compaction.
const SIZES: [usize; 6] = [1, 200_000, 131_073, 300_000, 0, 150_000];
const DELETED: [usize; 3] = [1, 3, 5];

/// A store with one blob holding the six objects, three of them deleted since; returns the
/// bodies.
fn store_with_dead_bytes(dir: &TempDir, data: &str) -> Vec<Vec<u8>> {
    init_jbod_store(data);
    let bodies: Vec<Vec<u8>> = SIZES
        .iter()
        .enumerate()
        .map(|(index, &size)| pattern(size, index as u64 + 11))
        .collect();
    for (index, body) in bodies.iter().enumerate() {
        let input = dir.join(&format!("input-{index}"));
        std::fs::write(&input, body).unwrap();
        let key = format!("k{index}");
        let path = input.to_str().unwrap();
        spinwise(["store", "--data", data, "put", &key, path]).success();
    }
    let flushed = spinwise(["store", "--data", data, "flush", "--json"]).success();
    assert_eq!(integer(&flushed.json(), "blobs_written"), 1);
    for index in DELETED {
        spinwise(["store", "--data", data, "rm", &format!("k{index}")]).success();
    }
    bodies
}

fn dead_bytes() -> u64 {
    DELETED.iter().map(|&index| SIZES[index] as u64).sum()
}

fn status(data: &str) -> serde_json::Value {
    spinwise(["store", "--data", data, "status", "--json"])
        .success()
        .json()
}

/// Runs `compact` with the crash point armed; asserts the process died there.
fn compact_crashing_at(data: &str, point: &str) {
    let crashed = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data", data, "compact"])
        .env("SPINWISE_CRASH_AT", point)
        .output()
        .unwrap();
    assert!(!crashed.status.success(), "the crash point aborts compact");
    let stderr = String::from_utf8_lossy(&crashed.stderr);
    assert!(stderr.contains(point), "{stderr}");
}

/// Live objects read back byte-exact, deleted ones are absent.
fn objects_as_acknowledged(dir: &TempDir, data: &str, bodies: &[Vec<u8>]) {
    for (index, body) in bodies.iter().enumerate() {
        let key = format!("k{index}");
        let output = dir.join(&format!("output-{index}"));
        let path = output.to_str().unwrap();
        if DELETED.contains(&index) {
            spinwise(["store", "--data", data, "get", &key, path])
                .refused()
                .stderr_mentions(&["no such key"]);
        } else {
            spinwise(["store", "--data", data, "get", &key, path]).success();
            assert!(std::fs::read(&output).unwrap() == *body, "`{key}` differs");
        }
    }
}

/// Opens the store through the library and runs the catalog's integrity check.
fn assert_catalog_consistent(data: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = runtime.block_on(async {
        let store = spinwise_store::Store::open_sqlite(data)
            .await
            .expect("the store reopens after the crash");
        let report = store.catalog().integrity_check().await.unwrap();
        store.close().await;
        report
    });
    assert!(report.problems.is_empty(), "catalog: {:?}", report.problems);
}

fn crash_then_compact_again(point: &str) {
    let dir = TempDir::new(&format!("store-compact-{}", point.replace(':', "-")));
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_dead_bytes(&dir, data);
    assert_eq!(integer(&status(data), "dead_bytes"), dead_bytes());
    compact_crashing_at(data, point);

    objects_as_acknowledged(&dir, data, &bodies);
    assert_catalog_consistent(&data_path);
    let reclaimable = integer(&status(data), "dead_bytes");
    if point == "compact:after-commit" {
        // The old blob is left with nothing live: all of it is reclaimable now.
        let total: u64 = SIZES.iter().map(|&size| size as u64).sum();
        assert_eq!(reclaimable, total);
    } else {
        assert_eq!(reclaimable, dead_bytes());
    }

    let report = spinwise(["store", "--data", data, "compact", "--json"])
        .success()
        .json();
    let finished = integer(&report, "blobs_compacted") + integer(&report, "blobs_removed");
    assert_eq!(finished, 1, "{report}");
    objects_as_acknowledged(&dir, data, &bodies);
    assert_catalog_consistent(&data_path);
    let after = status(data);
    assert_eq!(integer(&after, "dead_bytes"), 0, "{after}");
    assert_eq!(integer(&after, "objects"), 3, "{after}");
    // One blob of k + r = 5 stacks is left: nothing orphaned, nothing half-written.
    assert_eq!(stack_files(&data_path).len(), 5);
    let again = spinwise(["store", "--data", data, "compact", "--json"])
        .success()
        .json();
    assert_eq!(integer(&again, "blobs_compacted"), 0, "{again}");
    assert_eq!(integer(&again, "blobs_removed"), 0, "{again}");
}

#[test]
fn a_crash_after_begin_loses_nothing_and_a_second_compact_finishes() {
    crash_then_compact_again("compact:after-begin");
}

#[test]
fn a_crash_after_the_stacks_loses_nothing_and_a_second_compact_finishes() {
    crash_then_compact_again("compact:after-stacks");
}

#[test]
fn a_crash_after_the_commit_leaves_a_dead_blob_that_a_second_compact_removes() {
    crash_then_compact_again("compact:after-commit");
}

/// Semi-preemptive compaction in units of 64 KiB (k0 alone, then k2 with the empty k4), killed
/// between the two units: k0 already moved into a blob of its own, k2 and k4 still in the old
/// blob. Nothing acknowledged is lost, and a second `compact` moves the rest.
#[test]
fn a_crash_between_two_units_loses_nothing_and_a_second_compact_moves_the_rest() {
    let dir = TempDir::new("store-compact-between-units");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_dead_bytes(&dir, data);
    let toml_path = data_path.join("store.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    let default_unit = "compact_unit_bytes = 67108864";
    assert!(toml.contains(default_unit), "{toml}");
    std::fs::write(
        &toml_path,
        toml.replace(default_unit, "compact_unit_bytes = 65536"),
    )
    .unwrap();
    compact_crashing_at(data, "compact:between-units");

    objects_as_acknowledged(&dir, data, &bodies);
    assert_catalog_consistent(&data_path);
    // k0 (1 byte) left the old blob: its bytes there are dead too now.
    assert_eq!(integer(&status(data), "dead_bytes"), dead_bytes() + 1);
    let report = spinwise(["store", "--data", data, "compact", "--json"])
        .success()
        .json();
    assert_eq!(integer(&report, "blobs_compacted"), 1, "{report}");
    assert_eq!(integer(&report, "units"), 1, "{report}");
    objects_as_acknowledged(&dir, data, &bodies);
    assert_catalog_consistent(&data_path);
    let after = status(data);
    assert_eq!(integer(&after, "dead_bytes"), 0, "{after}");
    assert_eq!(integer(&after, "objects"), 3, "{after}");
    // Two blobs (the first unit's, the second compaction's) of k + r = 5 stacks each.
    assert_eq!(stack_files(&data_path).len(), 10);
}

#[test]
fn compact_reports_blobs_compacted_and_bytes_reclaimed() {
    let dir = TempDir::new("store-compact-plain");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_dead_bytes(&dir, data);
    let run = spinwise(["store", "--data", data, "compact"]).success();
    assert!(
        run.stdout.starts_with(&format!(
            "compacted 1 blob(s), removed 0 dead blob(s): {} bytes reclaimed",
            dead_bytes()
        )),
        "{}",
        run.stdout
    );
    objects_as_acknowledged(&dir, data, &bodies);
    spinwise([
        "store",
        "--data",
        data,
        "compact",
        "--min-dead-fraction",
        "0",
    ])
    .refused()
    .stderr_mentions(&["dead fraction"]);
}
