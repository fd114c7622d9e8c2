//! Commands served by the owner (issue 30 item 1): while `spinwise serve` owns a data directory,
//! `spinwise store flush`, `status`, `ls` and the rest run inside it through DATA/admin.sock
//! (mode 0600) instead of being refused by its locks or opening the disks a second time; put
//! and get of a file are served, of standard input or output refused with a pointer to S3; after the server is killed (-9), its stale socket
//! blocks nobody and the next command owns the directory itself. With no load, a group the
//! flush spun up spins down after the idle time, and the server logs why (issue 30 item 2).

use crate::common;

use common::s3_server::{S3Server, prepare_data_dir};
use common::{TempDir, spinwise, spinwise_in};
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;

#[test]
fn flush_and_status_work_while_serve_runs_and_a_killed_server_s_socket_blocks_nobody() {
    let dir = TempDir::new("served-commands");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    prepare_data_dir(&data_path, 3600.0);
    let input = dir.write("input.txt", "staged before the server started\n");
    spinwise(["store", "--data", data, "put", "a", input.to_str().unwrap()]).success();

    let server = S3Server::start(&data_path, &dir.join("serve.log"));
    let socket = data_path.join("admin.sock");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the admin socket is the owner's only");

    let flushed = spinwise(["store", "--data", data, "--wait-s", "5", "flush", "--json"])
        .success()
        .json();
    assert_eq!(flushed["objects_moved"], 1, "{flushed}");
    assert_eq!(flushed["blobs_written"], 1, "{flushed}");
    let status = spinwise(["store", "--data", data, "--wait-s", "5", "status", "--json"])
        .success()
        .json();
    assert_eq!(status["objects"], 1, "{status}");
    let disks = spinwise(["store", "--data", data, "--wait-s", "0", "disks", "--json"])
        .success()
        .json();
    let disks = disks.as_array().unwrap();
    assert_eq!(disks.len(), 60, "every disk of dense-jbod-60");
    assert!(disks.iter().all(|d| d["power"].is_string()), "{disks:?}");
    let listed = spinwise(["store", "--data", data, "--wait-s", "5", "ls"]).success();
    assert!(listed.stdout.contains("migrated"), "{}", listed.stdout);
    spinwise(["store", "--data", data, "--wait-s", "5", "stat", "missing"]).refused();
    // put and get of a file are served: the paths are relative to this process's directory,
    // which the server does not share, so the client makes them absolute.
    let second = dir.write("second.bin", &"served put\n".repeat(1000));
    let relative = |path: &std::path::Path| {
        path.strip_prefix(dir.path())
            .expect("inside the test directory")
            .to_path_buf()
    };
    let put: [&OsStr; 7] = [
        "store".as_ref(),
        "--data".as_ref(),
        data.as_ref(),
        "--wait-s".as_ref(),
        "5".as_ref(),
        "put".as_ref(),
        "b".as_ref(),
    ];
    let second_relative = relative(&second);
    let args = put.iter().copied().chain([second_relative.as_os_str()]);
    spinwise_in(dir.path(), args).success();
    let fetched = dir.join("fetched.bin");
    let fetched_relative = relative(&fetched);
    let get = ["store", "--data", data, "--wait-s", "5", "get", "b"];
    let args = get
        .iter()
        .map(OsStr::new)
        .chain([fetched_relative.as_os_str()]);
    spinwise_in(dir.path(), args).success();
    assert_eq!(
        std::fs::read(&fetched).unwrap(),
        std::fs::read(&second).unwrap(),
        "a served get writes the served put's bytes"
    );
    spinwise(["store", "--data", data, "--wait-s", "5", "put", "c", "-"])
        .refused()
        .stderr_mentions(&["spinwise serve", "file path", "S3"]);
    let log = server.stop();
    assert!(log.contains("serving an admin command"), "{log}");
    assert!(!socket.exists(), "a stopped server removes its socket");

    // kill -9: the socket file stays, the owner lock goes with the process.
    let killed = S3Server::start(&data_path, &dir.join("serve-killed.log"));
    drop(killed);
    assert!(socket.exists(), "a killed server leaves its socket behind");
    let status = spinwise(["store", "--data", data, "--wait-s", "5", "status", "--json"])
        .success()
        .json();
    assert_eq!(status["objects"], 2, "{status}");
    let got = spinwise(["store", "--data", data, "--wait-s", "5", "get", "a", "-"]).success();
    assert_eq!(got.stdout, "staged before the server started\n");
}

/// `spinwise store disks --json`: how many disks are not in standby.
fn disks_not_resting(data: &str) -> usize {
    let disks = spinwise(["store", "--data", data, "--wait-s", "0", "disks", "--json"])
        .success()
        .json();
    let disks = disks.as_array().expect("a list of disks").clone();
    disks.iter().filter(|d| d["power"] != "standby").count()
}

#[test]
fn under_serve_with_no_load_a_group_spins_down_after_the_idle_time_saying_why() {
    let dir = TempDir::new("served-idle");
    let data_path = dir.join("data");
    let data = data_path.to_str().unwrap();
    prepare_data_dir(&data_path, 3600.0);
    // Top-level keys precede every table, so the line goes first (docs/store.md).
    let config = data_path.join("store.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("idle_spin_down_s = 1.0\n{text}")).unwrap();
    let input = dir.write("input.txt", "flushed through the server\n");
    spinwise(["store", "--data", data, "put", "a", input.to_str().unwrap()]).success();

    let server = S3Server::start(&data_path, &dir.join("serve.log"));
    // The flush writes the blob to one group, which it spins up; nothing asks for it after.
    let flushed = spinwise(["store", "--data", data, "--wait-s", "5", "flush", "--json"])
        .success()
        .json();
    assert_eq!(flushed["blobs_written"], 1, "{flushed}");
    let started = std::time::Instant::now();
    assert!(
        disks_not_resting(data) > 0,
        "the flushed group is still up right after the flush"
    );
    while disks_not_resting(data) > 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "an idle group must spin down about 1 s after its last job, not stay up 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let log = server.stop();
    assert!(log.contains("group spinning down"), "{log}");
    assert!(log.contains("idle"), "the log names the reason: {log}");
}
