//! `spinwise store` end to end through the real binary: init on the dense-jbod-60 preset, put
//! from a file and from stdin, byte-exact get to a file and to stdout, ranges, ls, stat and
//! status as JSON, rm, and one-line refusals with exit status 1.

use crate::common;

use common::{TempDir, pattern, spinwise};
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `spinwise` with `stdin` fed in; returns (exit code, stdout bytes, stderr).
fn spinwise_piped(args: &[&str], stdin: &[u8]) -> (Option<i32>, Vec<u8>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the spinwise binary runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        output.stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn store_commands_round_trip_objects_byte_exact_and_report_them() {
    let dir = TempDir::new("store");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    spinwise(["store", "--data", data, "init", "--preset", "dense-jbod-60"]).success();

    let body = pattern(3 * 1024 * 1024 + 7, 1);
    let input = dir.join("input.bin");
    std::fs::write(&input, &body).unwrap();
    spinwise(["store", "--data", data, "put", "photos/a.bin"]).usage_error();
    spinwise([
        "store",
        "--data",
        data,
        "put",
        "photos/a.bin",
        input.to_str().unwrap(),
    ])
    .success();
    let (code, _, stderr) =
        spinwise_piped(&["store", "--data", data, "put", "notes/empty", "-"], b"");
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) =
        spinwise_piped(&["store", "--data", data, "put", "notes/one", "-"], b"x");
    assert_eq!(code, Some(0), "{stderr}");

    let output = dir.join("output.bin");
    spinwise([
        "store",
        "--data",
        data,
        "get",
        "photos/a.bin",
        output.to_str().unwrap(),
    ])
    .success();
    assert!(std::fs::read(&output).unwrap() == body, "file GET differs");
    let (code, stdout, stderr) = spinwise_piped(
        &[
            "store",
            "--data",
            data,
            "get",
            "photos/a.bin",
            "-",
            "--range",
            "1000-2000999",
        ],
        b"",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout == body[1000..2_001_000], "ranged GET differs");
    let (_, stdout, _) = spinwise_piped(&["store", "--data", data, "get", "notes/one", "-"], b"");
    assert_eq!(stdout, b"x");

    let listed = spinwise(["store", "--data", data, "ls", "notes/", "--json"])
        .success()
        .json();
    let keys: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["notes/empty", "notes/one"]);

    let stat = spinwise(["store", "--data", data, "stat", "photos/a.bin", "--json"])
        .success()
        .json();
    assert_eq!(stat["size"], body.len() as u64);
    assert_eq!(stat["state"], "staged");
    assert!(stat["group"].is_null() && stat["disks"].is_null());
    assert_eq!(stat["blake3"], blake3_hex(&body));

    let status = spinwise(["store", "--data", data, "status", "--json"])
        .success()
        .json();
    assert_eq!(status["objects"], 3);
    assert_eq!(status["bytes"], body.len() as u64 + 1);
    assert_eq!(status["disks_active"], 0);
    assert_eq!(status["disks_failed"], 0);
    assert_eq!(status["rebuild_pending"], 0);

    spinwise(["store", "--data", data, "rm", "photos/a.bin"]).success();
    spinwise(["store", "--data", data, "stat", "photos/a.bin", "--json"])
        .refused()
        .stderr_mentions(&["no such key", "photos/a.bin"]);
    spinwise(["store", "--data", data, "rm", "photos/a.bin"]).refused();
    let status = spinwise(["store", "--data", data, "status", "--json"])
        .success()
        .json();
    assert_eq!(status["objects"], 2);
}

/// The reference content hash, computed independently of the store by the blake3 crate.
fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn store_commands_refuse_bad_input_with_one_line_reasons() {
    let dir = TempDir::new("store-refusals");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    spinwise(["store", "--data", data, "status", "--json"])
        .refused()
        .stderr_mentions(&["holds no store"]);
    spinwise(["store", "--data", data, "init", "--preset", "no-such-rack"])
        .refused()
        .stderr_mentions(&["unknown preset"]);
    spinwise(["store", "--data", data, "init", "--preset", "dense-jbod-60"]).success();
    spinwise(["store", "--data", data, "init", "--preset", "dense-jbod-60"])
        .refused()
        .stderr_mentions(&["already holds a store"]);
    let input = dir.write("small.txt", "hello");
    spinwise(["store", "--data", data, "put", "k", input.to_str().unwrap()]).success();
    spinwise(["store", "--data", data, "get", "k", "-", "--range", "3-9"])
        .refused()
        .stderr_mentions(&["outside"]);
    spinwise(["store", "--data", data, "get", "k", "-", "--range", "x"])
        .refused()
        .stderr_mentions(&["--range"]);
    // `A-` at or past the end names no byte (an I/O error while staged and an empty success
    // once migrated, until 2026-12-01); both say so, and so does a range past the end.
    for range in ["5-", "9-", "5-9"] {
        spinwise(["store", "--data", data, "get", "k", "-", "--range", range])
            .refused()
            .stderr_mentions(&["past the object's last byte (byte 4 of 5)"]);
    }
    spinwise(["store", "--data", data, "flush"]).success();
    spinwise(["store", "--data", data, "get", "k", "-", "--range", "5-"])
        .refused()
        .stderr_mentions(&["past the object's last byte"]);
    let missing = dir.join("missing.bin");
    spinwise([
        "store",
        "--data",
        data,
        "put",
        "k",
        missing.to_str().unwrap(),
    ])
    .refused()
    .stderr_mentions(&["missing.bin"]);
    let run = spinwise(["store", "--data", data, "get", "nope", "-"]).refused();
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn get_writes_a_fifo_in_place_and_never_clobbers_a_sibling_file() {
    use std::os::unix::fs::FileTypeExt;
    let dir = TempDir::new("store-get-targets");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    spinwise(["store", "--data", data, "init", "--preset", "dense-jbod-60"]).success();
    let body = pattern(300 * 1024 + 5, 1);
    let (code, _, stderr) = spinwise_piped(&["store", "--data", data, "put", "k", "-"], &body);
    assert_eq!(code, Some(0), "{stderr}");

    // A FIFO (like /dev/null, not a regular file) must stay a FIFO and receive the bytes.
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(
        made.is_ok_and(|status| status.success()),
        "mkfifo (coreutils) is needed for this test"
    );
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(reader_path).unwrap());
    spinwise(["store", "--data", data, "get", "k", fifo.to_str().unwrap()]).success();
    // Checked before joining: had the FIFO been replaced, the reader would wait forever.
    let file_type = std::fs::metadata(&fifo).unwrap().file_type();
    assert!(file_type.is_fifo(), "the FIFO was replaced: {file_type:?}");
    assert_eq!(reader.join().unwrap(), body, "bytes through the FIFO");

    // `out.bin` must not be staged through `out.partial`, which may be someone's file.
    let sibling = dir.join("out.partial");
    std::fs::write(&sibling, b"keep me").unwrap();
    let target = dir.join("out.bin");
    spinwise([
        "store",
        "--data",
        data,
        "get",
        "k",
        target.to_str().unwrap(),
    ])
    .success();
    assert_eq!(std::fs::read(&target).unwrap(), body);
    assert_eq!(std::fs::read(&sibling).unwrap(), b"keep me");
}

#[test]
fn flush_migrates_past_a_damaged_staged_object_then_fails_naming_it() {
    let dir = TempDir::new("flush-damaged");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    common::init_jbod_store(data);
    let good = pattern(30_000, 1);
    let bad = pattern(30_000, 2);
    for (key, bytes) in [("good", &good), ("bad", &bad)] {
        let path = dir.join(key);
        std::fs::write(&path, bytes).unwrap();
        spinwise(["store", "--data", data, "put", key, path.to_str().unwrap()]).success();
    }
    // One flipped byte inside `bad`'s payload in its staging segment: that chunk fails its crc.
    let mut damaged_one = false;
    for entry in std::fs::read_dir(dir.join("data/staging")).unwrap() {
        let path = entry.unwrap().path();
        let mut raw = std::fs::read(&path).unwrap();
        if let Some(at) = raw.windows(64).position(|window| window == &bad[..64]) {
            raw[at + 100] ^= 0x01;
            std::fs::write(&path, raw).unwrap();
            damaged_one = true;
        }
    }
    assert!(damaged_one, "`bad`'s payload is in a staging segment");

    let run = spinwise(["store", "--data", data, "flush", "--json"])
        .refused()
        .stderr_mentions(&["1 staged object(s) are damaged", "`bad`", "crc32c"]);
    let report: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(report["objects_moved"], 1);
    assert_eq!(report["damaged"][0]["key"], "bad");
    let stat = spinwise(["store", "--data", data, "stat", "good", "--json"]).success();
    assert!(stat.stdout.contains("igrated"), "{}", stat.stdout);
    let got = dir.join("good.out");
    spinwise([
        "store",
        "--data",
        data,
        "get",
        "good",
        got.to_str().unwrap(),
    ])
    .success();
    assert!(std::fs::read(&got).unwrap() == good);
    spinwise(["store", "--data", data, "get", "bad", "-"])
        .refused()
        .stderr_mentions(&["crc32c"]);
    // Deleted, it no longer holds anything up.
    spinwise(["store", "--data", data, "rm", "bad"]).success();
    spinwise(["store", "--data", data, "flush"]).success();
}
