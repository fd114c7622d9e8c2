//! `spinwise bench` end to end: against a store directory and against `spinwise serve`, its
//! files and its refusals.

use crate::common::s3_server::{ACCESS_KEY, S3Server, SECRET_KEY, prepare_data_dir};
use crate::common::{Table, TempDir, init_jbod_store, spinwise};
use std::process::Command;

#[test]
fn bench_on_a_store_directory_writes_a_row_per_step_and_its_figures() {
    let dir = TempDir::new("bench-store");
    let data = dir.join("data");
    init_jbod_store(data.to_str().unwrap());
    let out = dir.join("out");
    let run = spinwise([
        "bench",
        "--store",
        data.to_str().unwrap(),
        "--quick",
        "--migrate",
        "--read-skew",
        "zipf:1.1",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ])
    .success();
    let report = run.json();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["read"]["requests"], 20);
        assert!(row["migrated_bytes"].as_u64().unwrap() > 0, "{row}");
    }
    let table = Table::read(&out.join("results.csv"));
    assert_eq!(table.len(), 3);
    let utilisation = table.numbers("utilisation_percent");
    assert!(
        utilisation.windows(2).all(|w| w[0] < w[1]),
        "{utilisation:?}"
    );
    // The set ends at the first drawn file that would pass 90% of the capacity.
    assert!((80.0..=90.0).contains(&utilisation[2]), "{utilisation:?}");
    for file in [
        "report.json",
        "throughput.png",
        "throughput.svg",
        "latency.png",
        "latency.svg",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    // requests.csv holds every write and read with what it took; trace.csv the same requests
    // as issued, which the simulator replays.
    let files = report["files"].as_u64().unwrap();
    let requests = Table::read(&out.join("requests.csv"));
    assert_eq!(requests.len() as u64, files + 3 * 20);
    assert!(requests.numbers("latency_s").iter().all(|s| *s > 0.0));
    let trace = std::fs::read_to_string(out.join("trace.csv")).unwrap();
    let records: Vec<&str> = trace.lines().skip(1).collect();
    assert_eq!(records.len() as u64, files + 3 * 20);
    let writes = records.iter().filter(|r| r.contains(",write,")).count() as u64;
    assert_eq!(writes, files);
    let trace_path = out.join("trace.csv");
    let replay = spinwise([
        "sim",
        "--preset",
        "dense-jbod-60",
        "--trace",
        trace_path.to_str().unwrap(),
        "--hours",
        "1",
        "--warmup-hours",
        "0",
        "--json",
    ])
    .success()
    .json();
    assert_eq!(replay["requests"].as_u64().unwrap(), files + 60, "{replay}");
    assert_eq!(
        replay["completion_s"]["count"].as_u64().unwrap(),
        files + 60
    );
}

#[test]
fn bench_runs_unchanged_against_spinwise_serve() {
    let dir = TempDir::new("bench-s3");
    let data = dir.join("data");
    prepare_data_dir(&data, 3600.0);
    let server = S3Server::start(&data, &dir.join("serve.log"));
    let report = bench_json(
        &server,
        "archive",
        &["--quick", "--steps", "2", "--storage-class", "STANDARD"],
    );
    assert!(report["target"].as_str().unwrap().starts_with("s3 http://"));
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["migrated_bytes"].is_null()));
    assert!(rows.iter().all(|r| r["read"]["requests"] == 20));
}

#[test]
fn bench_restores_what_an_async_bucket_moved_offline_and_reads_it_back_exactly() {
    let dir = TempDir::new("bench-restore");
    let data = dir.join("data");
    // Upkeep migrates a staged cold object 0.2 s after its PUT (ticks of 0.05 s).
    prepare_data_dir(&data, 0.2);
    let server = S3Server::start_with(&data, &dir.join("serve.log"), &["--restore-mode", "async"]);
    let report = bench_json(
        &server,
        "vault",
        &[
            "--quick",
            "--steps",
            "2",
            "--reads-per-step",
            "6",
            "--storage-class",
            "GLACIER",
            "--read-after-s",
            "3",
            "--restore-timeout-s",
            "60",
        ],
    );
    for row in report["rows"].as_array().unwrap() {
        // Every read found its object offline (GLACIER, migrated 3 s earlier) and restored it;
        // a second read of an already restored key needs no restore.
        let restores = row["restores"].as_u64().unwrap();
        assert!(restores >= 1, "{row}");
        assert!(row["restore_wait_max_s"].as_f64().unwrap() > 0.0, "{row}");
        assert_eq!(row["read"]["requests"], 6);
    }
}

/// `spinwise bench --json` against `server`'s `bucket` with the test keys; its report.
fn bench_json(server: &S3Server, bucket: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args([
            "bench",
            "--endpoint",
            &server.endpoint(),
            "--bucket",
            bucket,
        ])
        .args(args)
        .arg("--json")
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn bench_without_credentials_says_which_variables_to_set() {
    let output = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args([
            "bench",
            "--endpoint",
            "http://127.0.0.1:9",
            "--bucket",
            "b",
            "--quick",
        ])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("AWS_ACCESS_KEY_ID"), "{stderr}");
}

#[test]
fn bench_refuses_bad_flags_with_their_reason() {
    let dir = TempDir::new("bench-flags");
    spinwise(["bench", "--store", "x", "--read-skew", "zipf:-1"])
        .usage_error()
        .stderr_mentions(&["exponent"]);
    spinwise(["bench", "--store", "x", "--capacity", "12 parsecs"])
        .usage_error()
        .stderr_mentions(&["12 parsecs"]);
    spinwise(["bench", "--quick"]).usage_error();
    spinwise([
        "bench",
        "--store",
        dir.join("nothing-here").to_str().unwrap(),
        "--quick",
    ])
    .refused()
    .stderr_mentions(&["holds no store", "init"]);
    let manifest = dir.write("files.csv", "key,size_bytes\na,10\nb,ten\n");
    spinwise([
        "bench",
        "--store",
        "x",
        "--files-from",
        manifest.to_str().unwrap(),
    ])
    .refused()
    .stderr_mentions(&["files.csv:3", "whole number"]);
}
