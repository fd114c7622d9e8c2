//! The check behind issue 31's promise that no test of the store or S3 crates sleeps on the wall
//! clock to wait for the code under test (shared by both crates' `no_wall_clock_waits` tests).
//!
//! Rule: every sleep in a crate's `tests/` (a `thread::` or `time::` sleep, or `sleep_until`)
//! sits under a comment line starting `// wall-clock:` that says why it is not a wait for the
//! code under test: the one poll with a deadline for work that takes real time
//! (`eventually`), a fixture standing for disk work, a sampler's period. Time the code waits
//! on is moved with a `ManualClock` instead.

use std::path::{Path, PathBuf};

/// What marks a sleep as explained, on the line above it.
const REASON: &str = "// wall-clock:";

/// The sleeps under `crate_dir/tests` without a reason above them, as `file:line: text`.
pub fn unexplained_sleeps(crate_dir: &Path) -> Vec<String> {
    // Built at run time, so this file does not match itself.
    let calls = ["thread::", "time::"].map(|owner| format!("{owner}sleep"));
    let mut found = Vec::new();
    for file in rust_files(&crate_dir.join("tests")) {
        let text = std::fs::read_to_string(&file).expect("a test file is readable");
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let sleeps = calls.iter().any(|call| line.contains(call.as_str()));
            let explained = index > 0 && lines[index - 1].trim_start().starts_with(REASON);
            if sleeps && !explained && !line.trim_start().starts_with("//") {
                let shown = file.strip_prefix(crate_dir).unwrap_or(&file).display();
                found.push(format!("{shown}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    found
}

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("tests/ is listable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Fails naming every unexplained sleep of the crate at `crate_dir`.
pub fn assert_no_unexplained_sleeps(crate_dir: &str) {
    let found = unexplained_sleeps(Path::new(crate_dir));
    assert!(
        found.is_empty(),
        "tests sleep on the wall clock without a `{REASON}` reason above (advance a ManualClock \
         or await an event instead):\n{}",
        found.join("\n")
    );
}
