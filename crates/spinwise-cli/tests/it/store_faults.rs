//! Process-level fault tests of `spinwise store`: the real binary is killed with SIGKILL
//! (`Child::kill`) at seeded random moments while PUTs stream in, then the store is reopened by
//! fresh processes and checked.
//!
//! What "acknowledged" means here: a PUT process that exited with status 0. The store commits
//! the catalog row *before* the process exits, so a process killed between that commit and its
//! exit leaves a visible object that was never acknowledged. That window is real (it contains
//! the progress-bar teardown, the runtime shutdown and process exit), so the tests allow a
//! visible-but-unacknowledged key **only** if it is one this test tried to PUT and its bytes read
//! back byte-exact: the client never saw a success, and what it sees is exactly what it sent, as
//! if the acknowledgement was lost on the wire. Anything else visible (a key never sent, a short
//! or different body) fails the test.
//!
//! After the kills, every acknowledged object must read back byte-exact and the SQLite catalog
//! must pass `Catalog::integrity_check` (called through the library).

use crate::common;

use common::{TempDir, init_jbod_store, pattern, spinwise};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_catalog::Catalog;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// A PUT in flight: the process and the thread feeding its stdin slowly.
struct PendingPut {
    key: String,
    child: Child,
    feeder: JoinHandle<()>,
}

/// Starts `spinwise store put KEY -` and a thread writing `bytes` to its stdin in 64 KiB pieces,
/// pausing `pause_ms` between pieces so the kill can land mid-stream. Write errors (the process
/// was killed) end the feeder quietly.
fn start_put(data: &str, key: &str, bytes: Vec<u8>, pause_ms: u64) -> PendingPut {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data", data, "put", key, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the spinwise binary runs");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for piece in bytes.chunks(64 * 1024) {
            if stdin.write_all(piece).is_err() {
                return;
            }
            if pause_ms > 0 {
                std::thread::sleep(Duration::from_millis(pause_ms));
            }
        }
        // Dropping stdin closes the pipe: end of the body.
    });
    PendingPut {
        key: key.to_string(),
        child,
        feeder,
    }
}

/// Kills the PUT (SIGKILL) unless it already exited; returns true if it exited 0 (acknowledged).
fn kill_and_reap(mut put: PendingPut) -> bool {
    // A process that exits between `try_wait` and `kill` is a zombie: the kill is a no-op and the
    // exit status is still 0, so it counts as acknowledged, which it was.
    if put.child.try_wait().unwrap().is_none() {
        let _ = put.child.kill();
    }
    let status = put.child.wait().unwrap();
    put.feeder.join().unwrap();
    status.success()
}

/// Reads back every key the store lists and checks the fault-test contract (module docs).
fn check_store_after_faults(
    dir: &TempDir,
    data: &str,
    sent: &BTreeMap<String, Vec<u8>>,
    acknowledged: &[String],
) -> usize {
    let status = spinwise(["store", "--data", data, "status", "--json"]).success();
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let listing = spinwise(["store", "--data", data, "ls", "--json"]).success();
    let listing: serde_json::Value = serde_json::from_str(&listing.stdout).unwrap();
    let visible: Vec<String> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        status["objects"].as_u64(),
        Some(visible.len() as u64),
        "status and ls disagree: {status}"
    );
    for key in acknowledged {
        assert!(visible.contains(key), "acknowledged `{key}` is not listed");
    }
    let output = dir.join("readback.bin");
    for key in &visible {
        let expected = sent
            .get(key)
            .unwrap_or_else(|| panic!("`{key}` is visible but was never sent"));
        spinwise([
            "store",
            "--data",
            data,
            "get",
            key,
            output.to_str().unwrap(),
        ])
        .success();
        let got = std::fs::read(&output).unwrap();
        assert!(
            got == *expected,
            "`{key}` reads back {} bytes, sent {} (or the bytes differ)",
            got.len(),
            expected.len()
        );
    }
    assert_catalog_consistent(Path::new(data));
    visible.len()
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
            .expect("the store reopens after the kills");
        store.catalog().integrity_check().await.unwrap()
    });
    assert!(
        report.problems.is_empty(),
        "catalog integrity: {:?}",
        report.problems
    );
}

fn init_store(dir: &TempDir) -> String {
    let data = dir.join("data");
    let data = data.to_str().unwrap().to_string();
    init_jbod_store(&data);
    data
}

#[test]
fn kill_nine_during_puts_loses_no_acknowledged_object_and_shows_nothing_half_written() {
    let dir = TempDir::new("store-faults-put");
    let data = init_store(&dir);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let sizes_bytes = [
        0usize,
        1,
        4096,
        128 * 1024 + 1,
        1024 * 1024 + 3,
        6 * 1024 * 1024,
    ];
    let mut sent = BTreeMap::new();
    let mut acknowledged = Vec::new();
    let mut killed = 0;
    for round in 0..6 {
        let mut puts = Vec::new();
        for slot in 0..5 {
            let key = format!("round-{round}/object-{slot}");
            let size_bytes = sizes_bytes[rng.random_range(0..sizes_bytes.len())];
            let bytes = pattern(size_bytes, (round * 16 + slot) as u64 + 1);
            sent.insert(key.clone(), bytes.clone());
            // Large bodies trickle in (8 ms per 64 KiB: ~0.8 s for 6 MiB, longer than the kill
            // window of at most 0.4 + 5 × 0.04 s, so every 6 MiB PUT is killed mid-body; ~0.14 s
            // for 1 MiB, killed or not). Small bodies arrive at once and usually finish. The
            // window must not depend on how fast a PUT process starts: on a faster VM, with
            // 2 ms per 64 KiB, every PUT finished before its kill.
            let pause_ms = if size_bytes > 1024 * 1024 { 8 } else { 0 };
            puts.push(start_put(&data, &key, bytes, pause_ms));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..400)));
        for put in puts {
            // Stagger the kills so some land before, some during and some after the commit.
            std::thread::sleep(Duration::from_millis(rng.random_range(0..40)));
            let key = put.key.clone();
            if kill_and_reap(put) {
                acknowledged.push(key);
            } else {
                killed += 1;
            }
        }
    }
    assert!(killed > 0, "the seed must kill some PUTs mid-way");
    assert!(
        !acknowledged.is_empty(),
        "the seed must let some PUTs finish"
    );
    let visible = check_store_after_faults(&dir, &data, &sent, &acknowledged);
    eprintln!(
        "{} PUTs: {} acknowledged, {killed} killed, {visible} visible after restart",
        sent.len(),
        acknowledged.len()
    );

    // The store keeps working after the crashes: a new PUT lands and reads back.
    let bytes = pattern(300_000, 999);
    let input = dir.join("after.bin");
    std::fs::write(&input, &bytes).unwrap();
    spinwise([
        "store",
        "--data",
        &data,
        "put",
        "after/crash",
        input.to_str().unwrap(),
    ])
    .success();
    sent.insert("after/crash".to_string(), bytes);
    acknowledged.push("after/crash".to_string());
    check_store_after_faults(&dir, &data, &sent, &acknowledged);
}
