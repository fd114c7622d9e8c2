//! The warm tier under `kill -9` through the real binaries. Warm objects share staging segments
//! only inside one process, so `spinwise serve` writes them (boto3, `StorageClass=STANDARD`)
//! and deletes every other one; then `spinwise store collect-warm` is killed
//! (`SPINWISE_CRASH_AT`, an abort like `kill -9`) after a record's copy is durable but before
//! the catalog points at it (`warm-gc:after-copy`), and after the catalog points at it but
//! before the old segment is freed (`warm-gc:after-restage`). After each kill every live
//! object reads back byte-exact, deleted ones stay absent, and a last `collect-warm` frees the
//! half-dead segment. A lifecycle transition (`demote`) killed in the middle of the migration
//! that follows it (`migrate:after-stacks`) keeps the object readable, and the next flush
//! moves it cold. `collect-warm` refuses a dead fraction outside (0, 1], naming it.

use crate::common;

use common::s3_server::{ACCESS_KEY, PIP_HINT, S3Server, SECRET_KEY, prepare_data_dir, require};
use common::{TempDir, init_jbod_store, integer, jbod_init_args, pattern, spinwise};
use std::path::Path;
use std::process::Command;

const OBJECTS: usize = 40;
const OBJECT_BYTES: usize = 6_000;

/// Puts every file of `bodies` as `warm/<name>` (STANDARD: the warm tier), then deletes the
/// even-numbered ones, all through one server process.
const PUT_AND_DELETE: &str = r#"
import boto3, os, sys
endpoint, access, secret, bodies = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access,
                  aws_secret_access_key=secret, region_name="us-east-1")
s3.create_bucket(Bucket="warm")
names = sorted(os.listdir(bodies))
for name in names:
    with open(os.path.join(bodies, name), "rb") as body:
        s3.put_object(Bucket="warm", Key=name, Body=body.read(), StorageClass="STANDARD")
for index, name in enumerate(names):
    if index % 2 == 0:
        s3.delete_object(Bucket="warm", Key=name)
"#;

fn key(index: usize) -> String {
    format!("k{index:02}")
}

/// A store whose staging log holds `OBJECTS` warm records in one segment, every other one
/// deleted; returns the bodies.
fn half_dead_warm_segment(dir: &TempDir, data: &Path) -> Vec<Vec<u8>> {
    require("python3", &["-c", "import boto3"], PIP_HINT);
    prepare_data_dir(data, 3600.0);
    let bodies_dir = dir.join("bodies");
    std::fs::create_dir_all(&bodies_dir).unwrap();
    let bodies: Vec<Vec<u8>> = (0..OBJECTS)
        .map(|index| pattern(OBJECT_BYTES, index as u64 + 101))
        .collect();
    for (index, body) in bodies.iter().enumerate() {
        std::fs::write(bodies_dir.join(key(index)), body).unwrap();
    }
    let server = S3Server::start(data, &dir.join("serve.log"));
    let script = Command::new("python3")
        .args([
            "-c",
            PUT_AND_DELETE,
            &server.endpoint(),
            ACCESS_KEY,
            SECRET_KEY,
        ])
        .arg(&bodies_dir)
        .output()
        .unwrap();
    assert!(
        script.status.success(),
        "boto3 script: {}",
        String::from_utf8_lossy(&script.stderr)
    );
    server.stop();
    bodies
}

/// Live objects read back byte-exact through the binary, deleted ones are absent.
fn warm_objects_as_acknowledged(dir: &TempDir, data: &str, bodies: &[Vec<u8>]) {
    let output = dir.join("output");
    let path = output.to_str().unwrap();
    for (index, body) in bodies.iter().enumerate() {
        let store_key = format!("warm/{}", key(index));
        if index % 2 == 0 {
            spinwise(["store", "--data", data, "get", &store_key, path])
                .refused()
                .stderr_mentions(&["no such key"]);
        } else {
            spinwise(["store", "--data", data, "get", &store_key, path]).success();
            assert!(
                std::fs::read(&output).unwrap() == *body,
                "`{store_key}` differs"
            );
        }
    }
}

/// `spinwise store put --warm KEY` of `body`, through a file in `dir`.
fn put_warm_file(dir: &TempDir, data: &str, key: &str, body: &[u8]) {
    let input = dir.join("input");
    std::fs::write(&input, body).unwrap();
    let path = input.to_str().unwrap();
    spinwise(["store", "--data", data, "put", "--warm", key, path]).success();
}

/// Runs `args` with the crash point armed; asserts the process died there.
fn crashing_at(args: &[&str], point: &str) {
    let crashed = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(args)
        .env("SPINWISE_CRASH_AT", point)
        .output()
        .unwrap();
    assert!(!crashed.status.success(), "{point} aborts {args:?}");
    let stderr = String::from_utf8_lossy(&crashed.stderr);
    assert!(stderr.contains(point), "{stderr}");
}

#[test]
fn a_warm_collection_killed_after_a_copy_or_after_its_restage_loses_no_warm_object() {
    let dir = TempDir::new("warm-gc-kill");
    let data_path = dir.join("data");
    let bodies = half_dead_warm_segment(&dir, &data_path);
    let data = data_path.to_str().unwrap();
    let collect = [
        "store",
        "--data",
        data,
        "collect-warm",
        "--min-dead-fraction",
        "0.3",
    ];
    for point in ["warm-gc:after-copy", "warm-gc:after-restage"] {
        crashing_at(&collect, point);
        warm_objects_as_acknowledged(&dir, data, &bodies);
    }
    let mut json = collect.to_vec();
    json.push("--json");
    let report = spinwise(json).success().json();
    assert!(integer(&report, "records_moved") > 0, "{report:#}");
    assert!(integer(&report, "segments_freed") > 0, "{report:#}");
    warm_objects_as_acknowledged(&dir, data, &bodies);
    let status = spinwise(["store", "--data", data, "status", "--json"])
        .success()
        .json();
    assert_eq!(
        integer(&status, "warm_objects"),
        (OBJECTS / 2) as u64,
        "{status:#}"
    );
}

#[test]
fn a_transition_killed_in_the_migration_after_it_keeps_the_object_and_the_next_flush_moves_it_cold()
{
    let dir = TempDir::new("transition-kill");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    init_jbod_store(data);
    let body = pattern(200_000, 7);
    put_warm_file(&dir, data, "k", &body);
    spinwise(["store", "--data", data, "demote", "k"]).success();
    crashing_at(&["store", "--data", data, "flush"], "migrate:after-stacks");
    let output = dir.join("output");
    let path = output.to_str().unwrap();
    spinwise(["store", "--data", data, "get", "k", path]).success();
    assert!(
        std::fs::read(&output).unwrap() == body,
        "`k` differs after the kill"
    );
    let flushed = spinwise(["store", "--data", data, "flush", "--json"])
        .success()
        .json();
    assert_eq!(integer(&flushed, "objects_moved"), 1, "{flushed:#}");
    let stat = spinwise(["store", "--data", data, "stat", "k", "--json"])
        .success()
        .json();
    assert_eq!(
        (&stat["tier"], &stat["state"]),
        (&"cold".into(), &"migrated".into()),
        "{stat:#}"
    );
    spinwise(["store", "--data", data, "get", "k", path]).success();
    assert!(
        std::fs::read(&output).unwrap() == body,
        "`k` differs once migrated"
    );
}

#[test]
fn collect_warm_refuses_a_dead_fraction_outside_zero_to_one_and_changes_nothing() {
    let dir = TempDir::new("collect-warm-bad");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    init_jbod_store(data);
    for fraction in ["0", "1.5", "nan"] {
        spinwise([
            "store",
            "--data",
            data,
            "collect-warm",
            "--min-dead-fraction",
            fraction,
        ])
        .refused()
        .stderr_mentions(&["dead fraction"]);
    }
    let report = spinwise(["store", "--data", data, "collect-warm", "--json"])
        .success()
        .json();
    assert_eq!(integer(&report, "records_moved"), 0, "{report:#}");
}

#[test]
fn init_with_a_staging_chain_puts_warm_objects_on_the_tail_device_and_refuses_a_device_named_twice()
{
    let dir = TempDir::new("staging-chain");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let mut init = jbod_init_args(data);
    let twice = dir.join("twice");
    let mut refused = init.clone();
    refused[2] = twice.to_str().unwrap();
    refused.extend(["--staging-chain", "ssd-1", "--staging-chain", "ssd-1"]);
    spinwise(refused)
        .refused()
        .stderr_mentions(&["staging.chain names `ssd-1` twice"]);
    init.extend(["--staging-chain", "ssd-1", "--staging-chain", "ssd-2"]);
    let initialized = spinwise(init).success();
    assert!(
        initialized.stdout.contains("3 staging device(s)"),
        "{}",
        initialized.stdout
    );
    let store_toml = std::fs::read_to_string(dir.join("data/store.toml")).unwrap();
    assert!(
        store_toml.contains("chain = [\"ssd-1\", \"ssd-2\"]"),
        "{store_toml}"
    );
    let body = pattern(10_000, 3);
    put_warm_file(&dir, data, "k", &body);
    let status = spinwise(["store", "--data", data, "status", "--json"])
        .success()
        .json();
    let used = status["staging_device_used_bytes"].as_array().unwrap();
    assert_eq!(used.len(), 3, "{status:#}");
    let output = dir.join("output");
    spinwise([
        "store",
        "--data",
        data,
        "get",
        "k",
        output.to_str().unwrap(),
    ])
    .success();
    assert!(std::fs::read(&output).unwrap() == body);
}
