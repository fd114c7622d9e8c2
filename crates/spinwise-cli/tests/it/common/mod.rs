//! Shared helpers of the `spinwise` integration tests: run the real binary, keep each test's files
//! in its own temporary directory, and read the shipped presets from `presets/`.
//!
//! Every invocation goes through [`spinwise`], which checks the one property every command must
//! have whatever its input: it never panics. [`s3_server`] runs `spinwise serve` for the tests
//! that drive it with outside S3 clients.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod s3_server;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The outcome of one `spinwise` run, with stdout and stderr decoded.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub args: Vec<String>,
}

impl Run {
    /// Asserts exit status 0 and returns `self` for chaining.
    pub fn success(self) -> Run {
        assert_eq!(
            self.code,
            Some(0),
            "`spinwise {}` must succeed\nstdout:\n{}\nstderr:\n{}",
            self.args.join(" "),
            self.stdout,
            self.stderr
        );
        self
    }

    /// Asserts exit status 1 (input refused), a message on stderr, and returns `self`.
    pub fn refused(self) -> Run {
        assert_eq!(
            self.code,
            Some(1),
            "`spinwise {}` must be refused with exit status 1\nstdout:\n{}\nstderr:\n{}",
            self.args.join(" "),
            self.stdout,
            self.stderr
        );
        assert!(
            self.stderr.starts_with("error: "),
            "a refusal must explain itself on stderr, starting with `error: `: {:?}",
            self.stderr
        );
        self
    }

    /// Asserts exit status 2 (clap's usage error) and returns `self`.
    pub fn usage_error(self) -> Run {
        assert_eq!(
            self.code,
            Some(2),
            "`spinwise {}` must be a usage error (exit 2)\nstderr:\n{}",
            self.args.join(" "),
            self.stderr
        );
        self
    }

    /// Asserts stderr contains every one of `needles`.
    pub fn stderr_mentions(self, needles: &[&str]) -> Run {
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr of `spinwise {}` must mention {needle:?}; it was:\n{}",
                self.args.join(" "),
                self.stderr
            );
        }
        self
    }

    /// stdout parsed as one JSON value (the whole of stdout, nothing else).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of `spinwise {}` must be one JSON value ({e}):\n{}",
                self.args.join(" "),
                self.stdout
            )
        })
    }
}

/// Checks what every invocation must satisfy: no panic message, no panic exit status (101), and
/// termination by exit rather than by a signal.
pub fn assert_no_panic(args: &[String], output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "`spinwise {}` panicked:\n{stderr}",
        args.join(" ")
    );
    assert_ne!(
        output.status.code(),
        Some(101),
        "`spinwise {}` exited with Rust's panic status 101:\n{stderr}",
        args.join(" ")
    );
    assert!(
        output.status.code().is_some(),
        "`spinwise {}` was killed by a signal: {:?}",
        args.join(" "),
        output.status
    );
}

/// Runs the real `spinwise` binary with `args` and checks it did not panic.
pub fn spinwise<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    spinwise_in(Path::new("."), args)
}

/// [`spinwise`] with `directory` as its working directory (for relative paths in `args`).
pub fn spinwise_in<I, S>(directory: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(&args)
        .current_dir(directory)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("the spinwise binary runs");
    assert_no_panic(&shown, &output);
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        args: shown,
    }
}

/// A directory of its own under the system temporary directory, removed when dropped.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "spinwise-cli-test-{label}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("creating a temporary directory");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` inside this directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `text` to `name` inside this directory and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, text).expect("writing a test file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A layout file of the dense-jbod-60 preset (small and fast to plan) written into `dir`.
pub fn small_layout(dir: &TempDir) -> PathBuf {
    let layout = dir.join("dense.json");
    spinwise([
        "plan".as_ref(),
        "--preset".as_ref(),
        "dense-jbod-60".as_ref(),
        "--out".as_ref(),
        layout.as_os_str(),
    ])
    .success();
    layout
}

/// The workspace's presets/ directory (the files build.rs embeds).
pub fn presets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets")
}

/// Names (file stems) of every `presets/*.toml`, sorted.
pub fn preset_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(presets_dir())
        .expect("presets/ is readable")
        .map(|entry| entry.expect("readable presets/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| {
            path.file_stem()
                .expect("a file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The TOML text of `presets/{name}.toml`.
pub fn preset_text(name: &str) -> String {
    std::fs::read_to_string(presets_dir().join(format!("{name}.toml")))
        .unwrap_or_else(|e| panic!("presets/{name}.toml: {e}"))
}

/// `text` with the single occurrence of `old` replaced by `new`.
pub fn edit(text: &str, old: &str, new: &str) -> String {
    assert_eq!(
        text.matches(old).count(),
        1,
        "`{old}` must occur exactly once in the text being edited"
    );
    text.replacen(old, new, 1)
}

/// 1-based number of the first line containing `needle`.
pub fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not in the text"))
        + 1
}

/// `value[key]` as a number, failing with the key's name when absent or not a number.
pub fn number(value: &serde_json::Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` must be a number in {value:#}"))
}

/// `value[key]` as an unsigned integer.
pub fn integer(value: &serde_json::Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` must be a non-negative integer in {value:#}"))
}

/// Deterministic test bytes: xorshift seeded from `seed` (any seed, 0 included).
pub fn pattern(size_bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size_bytes)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// The arguments of `spinwise store --data DATA init` on dense-jbod-60 with spin-ups 1,000×
/// faster than real (time factor 0.001), for a test that adds its own flags.
pub fn jbod_init_args(data: &str) -> Vec<&str> {
    vec![
        "store",
        "--data",
        data,
        "init",
        "--preset",
        "dense-jbod-60",
        "--time-factor",
        "0.001",
    ]
}

/// [`jbod_init_args`] run: the store every store test starts from.
pub fn init_jbod_store(data: &str) {
    spinwise(jbod_init_args(data)).success();
}

/// Every `.stack` file under the data directory's emulated disks.
pub fn stack_files(data: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![data.join("disks")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".stack") {
                found.push(path.display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// A CSV file the binary wrote, read back by column name.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn read(path: &Path) -> Table {
        let mut reader = csv::Reader::from_path(path)
            .unwrap_or_else(|e| panic!("{path:?} is not readable CSV: {e}"));
        let header = reader
            .headers()
            .expect("a header")
            .iter()
            .map(String::from)
            .collect();
        let rows = reader
            .records()
            .map(|r| r.expect("a CSV record").iter().map(String::from).collect())
            .collect();
        Table { header, rows }
    }

    pub fn column(&self, name: &str) -> Vec<&str> {
        let index = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name:?} in {:?}", self.header));
        self.rows.iter().map(|r| r[index].as_str()).collect()
    }

    pub fn numbers(&self, name: &str) -> Vec<f64> {
        self.column(name)
            .iter()
            .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} = {v:?}")))
            .collect()
    }
}
