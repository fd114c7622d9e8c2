//! `spinwise store flush` through the real binary: objects migrate into blobs (`stat --json`
//! then names the blob's group and disks), and a process killed mid-migration
//! (`SPINWISE_CRASH_AT=migrate:after-stacks`, an abort like `kill -9`) loses nothing: on restart
//! every object is still staged and reads back byte-exact, the half-written blob's stacks are
//! removed, and a new flush migrates everything; killed after the commit, the objects stay
//! migrated and recovery frees their staging space.

use crate::common;

use common::{TempDir, init_jbod_store, pattern, spinwise, stack_files};
use std::path::Path;
use std::process::Command;

fn stat_json(data: &str, key: &str) -> serde_json::Value {
    let run = spinwise(["store", "--data", data, "stat", key, "--json"]).success();
    serde_json::from_str(&run.stdout).unwrap()
}

/// A store with six objects (0 B to 300 kB) put through the binary; returns their bodies.
fn store_with_objects(dir: &TempDir, data: &str) -> Vec<Vec<u8>> {
    init_jbod_store(data);
    let bodies: Vec<Vec<u8>> = [0usize, 1, 131_071, 131_072, 131_073, 300_000]
        .iter()
        .enumerate()
        .map(|(index, &size)| pattern(size, index as u64))
        .collect();
    for (index, body) in bodies.iter().enumerate() {
        let input = dir.join(&format!("input-{index}"));
        std::fs::write(&input, body).unwrap();
        let key = format!("k{index}");
        spinwise([
            "store",
            "--data",
            data,
            "put",
            &key,
            input.to_str().unwrap(),
        ])
        .success();
    }
    bodies
}

/// Runs `flush` with the crash point armed; asserts the process died there.
fn flush_crashing_at(data: &str, point: &str) {
    let crashed = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data", data, "flush"])
        .env("SPINWISE_CRASH_AT", point)
        .output()
        .unwrap();
    assert!(
        !crashed.status.success(),
        "the crash point aborts the flush"
    );
    let stderr = String::from_utf8_lossy(&crashed.stderr);
    assert!(stderr.contains(point), "{stderr}");
}

/// Every object reads back byte-exact through the binary, in state `state`.
fn objects_read_back(dir: &TempDir, data: &str, bodies: &[Vec<u8>], state: &str) {
    for (index, body) in bodies.iter().enumerate() {
        let key = format!("k{index}");
        let stat = stat_json(data, &key);
        assert_eq!(stat["state"], state, "{stat}");
        assert_eq!(stat["size"], body.len() as u64);
        if state == "staged" {
            let output = dir.join(&format!("output-{index}"));
            spinwise([
                "store",
                "--data",
                data,
                "get",
                &key,
                output.to_str().unwrap(),
            ])
            .success();
            assert!(std::fs::read(&output).unwrap() == *body, "`{key}` differs");
        }
    }
}

/// A flush after the restart migrates every object into one blob of k + r = 5 stacks.
fn a_new_flush_migrates_everything(data_path: &Path, data: &str, bodies: &[Vec<u8>]) {
    let flushed = spinwise(["store", "--data", data, "flush", "--json"]).success();
    let report: serde_json::Value = serde_json::from_str(&flushed.stdout).unwrap();
    assert_eq!(report["blobs_written"], 1, "{report}");
    assert_eq!(report["objects_moved"], bodies.len() as u64, "{report}");
    let total: usize = bodies.iter().map(Vec::len).sum();
    assert_eq!(report["bytes_migrated"], total as u64);
    assert_eq!(stack_files(data_path).len(), 5);
    let group = report["groups_used"][0].clone();
    for index in 0..bodies.len() {
        let stat = stat_json(data, &format!("k{index}"));
        assert_eq!(stat["state"], "migrated", "{stat}");
        assert_eq!(stat["group"], group);
        assert_eq!(stat["disks"].as_array().unwrap().len(), 5, "{stat}");
    }
    let status = spinwise(["store", "--data", data, "status", "--json"]).success();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(
        (status["objects"].clone(), status["staged_objects"].clone()),
        (bodies.len().into(), 0.into())
    );
    let again = spinwise(["store", "--data", data, "flush"]).success();
    assert!(
        again.stdout.starts_with("0 blobs written"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_crash_after_the_stacks_loses_nothing_and_a_new_flush_migrates_everything() {
    let dir = TempDir::new("store-migrate-stacks");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_objects(&dir, data);
    flush_crashing_at(data, "migrate:after-stacks");
    assert_eq!(
        stack_files(&data_path).len(),
        5,
        "the crash left k + r stacks"
    );
    // Restart: every object is still staged and byte-exact; the orphan stacks are gone.
    objects_read_back(&dir, data, &bodies, "staged");
    assert_eq!(stack_files(&data_path), Vec::<String>::new());
    a_new_flush_migrates_everything(&data_path, data, &bodies);
}

#[test]
fn a_crash_after_begin_leaves_nothing_to_clean_but_the_writing_record() {
    let dir = TempDir::new("store-migrate-begin");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_objects(&dir, data);
    flush_crashing_at(data, "migrate:after-begin");
    assert_eq!(stack_files(&data_path), Vec::<String>::new());
    objects_read_back(&dir, data, &bodies, "staged");
    a_new_flush_migrates_everything(&data_path, data, &bodies);
}

#[test]
fn a_crash_after_the_commit_keeps_the_migration_and_frees_staging_on_restart() {
    let dir = TempDir::new("store-migrate-commit");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    let bodies = store_with_objects(&dir, data);
    flush_crashing_at(data, "migrate:after-commit");
    objects_read_back(&dir, data, &bodies, "migrated");
    assert_eq!(stack_files(&data_path).len(), 5);
    let status = spinwise(["store", "--data", data, "status", "--json"]).success();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["staged_objects"], 0, "{status}");
    // Freed: every segment but the highest is deleted; that one is cut to its header, so a
    // reopened log never hands its id out again (docs/staging-format.md, "Freeing space").
    assert_eq!(
        status["staging_used_bytes"],
        spinwise_store::staging::SEGMENT_HEADER_BYTES,
        "recovery freed the staging log: {status}"
    );
    let again = spinwise(["store", "--data", data, "flush"]).success();
    assert!(
        again.stdout.starts_with("0 blobs written"),
        "{}",
        again.stdout
    );
}

/// A lifecycle transition in the store's terms: `demote` of a warm object, then the migration
/// that moves it, killed mid-way (`migrate:after-stacks`, an abort like `kill -9`). After the
/// restart nothing is lost: the demoted object is still staged (cold), the warm one still warm,
/// both byte-exact; the next flush moves the demoted one only, and the warm one never.
#[test]
fn a_crash_while_a_demoted_object_migrates_loses_nothing_and_leaves_the_warm_tier_alone() {
    let dir = TempDir::new("store-migrate-demoted");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    init_jbod_store(data);
    let bodies = [pattern(70_000, 1), pattern(90_000, 2)];
    for (key, body) in ["moving", "staying"].iter().zip(&bodies) {
        let input = dir.join(&format!("{key}.bin"));
        std::fs::write(&input, body).unwrap();
        let path = input.to_str().unwrap();
        spinwise(["store", "--data", data, "put", key, path, "--warm"]).success();
    }
    let flushed = spinwise(["store", "--data", data, "flush", "--json"]).success();
    let report: serde_json::Value = serde_json::from_str(&flushed.stdout).unwrap();
    assert_eq!(
        report["objects_moved"], 0,
        "a flush moved warm objects: {report}"
    );
    let demoted = spinwise(["store", "--data", data, "demote", "moving"]).success();
    assert!(demoted.stdout.contains("demoted"), "{}", demoted.stdout);
    flush_crashing_at(data, "migrate:after-stacks");
    let status = spinwise(["store", "--data", data, "status", "--json"]).success();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["warm_objects"], 1, "{status}");
    assert_eq!(status["staged_objects"], 2, "{status}");
    for (key, body) in ["moving", "staying"].iter().zip(&bodies) {
        assert_eq!(stat_json(data, key)["state"], "staged");
        let output = dir.join(&format!("{key}.out"));
        let path = output.to_str().unwrap();
        spinwise(["store", "--data", data, "get", key, path]).success();
        assert!(std::fs::read(&output).unwrap() == *body, "`{key}` differs");
    }
    let flushed = spinwise(["store", "--data", data, "flush", "--json"]).success();
    let report: serde_json::Value = serde_json::from_str(&flushed.stdout).unwrap();
    assert_eq!(report["objects_moved"], 1, "{report}");
    assert_eq!(stat_json(data, "moving")["state"], "migrated");
    assert_eq!(stat_json(data, "staying")["state"], "staged");
    let again = spinwise(["store", "--data", data, "demote", "moving"]).success();
    assert!(again.stdout.contains("not warm"), "{}", again.stdout);
}
