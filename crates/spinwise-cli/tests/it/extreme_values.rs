//! Values at the edges of what a number or a path can say, each of which once made a command
//! panic, hang, flood the machine or replace a file it should not (found 2026-12-01 by feeding
//! every command extreme input): each is now refused with exit status 1 or 2 and a message, and
//! what the command must not touch is left as it was.

use crate::common;

use common::{TempDir, init_jbod_store, spinwise};
use std::os::unix::fs::symlink;

#[test]
fn an_upkeep_run_longer_than_a_century_is_refused_not_a_panic() {
    let dir = TempDir::new("upkeep-for");
    let data = dir.join("data").display().to_string();
    init_jbod_store(&data);
    for seconds in ["1e300", "1e20"] {
        spinwise(["store", "--data", &data, "upkeep", "--for", seconds])
            .refused()
            .stderr_mentions(&["--for"]);
    }
}

#[test]
fn a_store_with_a_time_factor_past_a_thousand_is_refused_at_init() {
    let dir = TempDir::new("time-factor");
    let data = dir.join("data");
    spinwise([
        "store",
        "--data",
        data.to_str().unwrap(),
        "init",
        "--preset",
        "dense-jbod-60",
        "--time-factor",
        "1e300",
    ])
    .refused()
    .stderr_mentions(&["time_factor"]);
    assert!(!data.join("store.toml").exists(), "nothing was initialised");
}

#[test]
fn a_subnormal_network_bandwidth_is_refused_before_the_run() {
    spinwise([
        "sim",
        "--preset",
        "dense-jbod-60",
        "--rate",
        "1",
        "--hours",
        "2",
        "--network-gbps",
        "1e-316",
    ])
    .refused()
    .stderr_mentions(&["network_gbps"]);
}

#[test]
fn requests_out_never_replaces_a_link_and_never_writes_through_a_stale_partial_link() {
    let dir = TempDir::new("requests-out");
    let victim = dir.write("victim.txt", "keep me\n");
    let run = |out: &std::path::Path| {
        spinwise([
            "sim",
            "--preset",
            "dense-jbod-60",
            "--rate",
            "0.5",
            "--hours",
            "1.2",
            "--warmup-hours",
            "1",
            "--requests-out",
            out.to_str().unwrap(),
        ])
    };
    // The target is a link: renaming over it would replace it (a device node the same way).
    let link = dir.join("link.csv");
    symlink(&victim, &link).unwrap();
    run(&link)
        .refused()
        .stderr_mentions(&["not a regular file"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A stale temporary file that is a link to someone else's file: the link goes, the file
    // it pointed to stays as it was, and the output is written.
    let out = dir.join("reads.csv");
    symlink(&victim, dir.join("reads.csv.partial")).unwrap();
    run(&out).success();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("system,id,")
    );
    assert!(!dir.join("reads.csv.partial").exists());
}

#[test]
fn experiments_refuse_absurd_seed_and_thread_counts_before_starting() {
    let dir = TempDir::new("experiment-counts");
    let out = dir.join("out");
    let experiment = |flag: &str, value: &str| {
        spinwise([
            "experiment",
            "pelican-fig6",
            "--quick",
            flag,
            value,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    experiment("--seeds", "4294967295")
        .refused()
        .stderr_mentions(&["--seeds"]);
    experiment("--jobs", "100000")
        .refused()
        .stderr_mentions(&["--jobs"]);
}

#[test]
fn a_layout_whose_spin_up_path_is_empty_is_refused_by_every_reader() {
    let dir = TempDir::new("empty-path");
    let layout = dir.join("layout.json");
    spinwise([
        "plan",
        "--preset",
        "dense-jbod-60",
        "--out",
        layout.to_str().unwrap(),
    ])
    .success();
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&layout).unwrap()).unwrap();
    json["spin_up_path"] = serde_json::json!([]);
    let edited = dir.write("edited.json", &json.to_string());
    let edited = edited.to_str().unwrap();
    spinwise(["verify", edited, "--preset", "dense-jbod-60"])
        .refused()
        .stderr_mentions(&["spin_up_path"]);
    spinwise([
        "sim",
        "--preset",
        "dense-jbod-60",
        "--layout",
        edited,
        "--rate",
        "1",
        "--hours",
        "2",
    ])
    .refused()
    .stderr_mentions(&["spin_up_path"]);
}

#[test]
fn a_bench_manifest_that_never_ends_or_lists_a_key_twice_is_refused_before_any_write() {
    let dir = TempDir::new("bench-manifest");
    let store = dir.join("store").display().to_string();
    init_jbod_store(&store);
    let store = store.as_str();
    // A plain read of /dev/zero grew without bound and was killed by the OOM killer.
    spinwise([
        "bench",
        "--store",
        store,
        "--quick",
        "--files-from",
        "/dev/zero",
    ])
    .refused()
    .stderr_mentions(&["/dev/zero", "MAX_MANIFEST_BYTES"]);
    let twice = dir.write("twice.csv", "key,size_bytes\na,1\na,2\n");
    spinwise([
        "bench",
        "--store",
        store,
        "--quick",
        "--files-from",
        twice.to_str().unwrap(),
    ])
    .refused()
    .stderr_mentions(&["listed twice"]);
    let listed = spinwise(["store", "--data", store, "ls", "--json"]).success();
    assert_eq!(listed.json(), serde_json::json!([]), "nothing was written");
}
