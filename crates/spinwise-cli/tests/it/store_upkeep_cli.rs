//! `spinwise store upkeep` and ownership across real processes: while one process runs upkeep
//! (it owns the data directory, DATA/owner.lock, and holds DATA/upkeep.lock), another's `flush`
//! and `scrub` told not to wait (`--wait-s 0`) are refused at once with a one-line reason naming
//! the owner, and a `put` waits for upkeep to end, saying so once, then succeeds with `get`,
//! `ls` and `stat` after it; upkeep's first tick scrubs the never-verified blob (a scrub-only
//! spin-up) and reports it as JSON.

use crate::common;

use common::{TempDir, init_jbod_store, integer, spinwise};
use std::fs::{File, TryLockError};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Waits until another process holds `path`'s lock (probing with a non-blocking flock).
fn wait_until_locked(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            Instant::now() < deadline,
            "{} was never locked",
            path.display()
        );
        if let Ok(file) = File::options().write(true).open(path) {
            match file.try_lock() {
                Err(TryLockError::WouldBlock) => return,
                // Got it (nobody holds it yet): dropping the file releases it.
                Ok(()) | Err(TryLockError::Error(_)) => {}
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn upkeep_owns_the_directory_so_another_flush_is_refused_and_a_put_waits_for_it() {
    let dir = TempDir::new("store-upkeep");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    init_jbod_store(data);
    let input = dir.write("input.txt", "migrated before upkeep\n");
    spinwise(["store", "--data", data, "put", "a", input.to_str().unwrap()]).success();
    spinwise(["store", "--data", data, "flush"]).success();

    let upkeep = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data", data, "upkeep", "--for", "4", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_locked(&Path::new(data).join("upkeep.lock"));
    wait_until_locked(&Path::new(data).join("owner.lock"));

    spinwise(["store", "--data", data, "--wait-s", "0", "flush"])
        .refused()
        .stderr_mentions(&["owns", "owner.lock", "--wait-s"]);
    spinwise(["store", "--data", data, "--wait-s", "0", "scrub"])
        .refused()
        .stderr_mentions(&["owner.lock"]);
    let second = dir.write("second.txt", "put while upkeep runs\n");
    let waited = spinwise([
        "store",
        "--data",
        data,
        "put",
        "b",
        second.to_str().unwrap(),
    ])
    .success();
    assert_eq!(
        waited.stderr.matches("waiting for the owner").count(),
        1,
        "{}",
        waited.stderr
    );
    let got = spinwise(["store", "--data", data, "get", "b", "-"]).success();
    assert_eq!(got.stdout, "put while upkeep runs\n");
    spinwise(["store", "--data", data, "stat", "a", "--json"]).success();
    assert_eq!(
        spinwise(["store", "--data", data, "ls"])
            .success()
            .stdout
            .lines()
            .count(),
        2
    );

    let output = upkeep.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "upkeep failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // The flush recorded its blob as verified at the commit: nothing is due, nothing spins up.
    assert_eq!(integer(&report, "scrub_spin_ups"), 0, "{report}");
    assert_eq!(integer(&report["scrub"], "blobs"), 0, "{report}");
    assert_eq!(integer(&report["scrub"], "bad_fragments"), 0, "{report}");

    // The lock is released when upkeep ends.
    spinwise(["store", "--data", data, "flush"]).success();
    spinwise(["store", "--data", data, "upkeep", "--for=-1"])
        .refused()
        .stderr_mentions(&["--for"]);
}
