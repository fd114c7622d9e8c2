//! Hostile rack and layout files given to the real `spinwise` binary (issue 29): each is refused
//! with exit status 1, a short message naming the file, within 64 MiB of peak memory and
//! quickly. Files larger than their limit are sparse (`File::set_len`), so the tests write
//! almost nothing; `/dev/zero` stands for a file that never ends.
//!
//! Memory is the child's own peak RSS, read with `wait4`. Linux counts in it the memory of the
//! process the child was spawned from (posix_spawn shares it until `exec`; fork copies it), and
//! this test process holds megabytes of input text, so the child is spawned by a fresh, small
//! copy of this test binary ([`measure_helper_runs_one_child_when_asked`]), which reports the
//! child's numbers on its stdout. The `--version` baseline is the floor every number includes.
//! Tests measure one at a time (a lock), so timings do not share the 2 cores. The time bound
//! asserted is generous (a loaded 2-core CI machine); the measured numbers are printed
//! (`--nocapture`) and recorded in docs/BENCHMARKS.md, "Hostile planner inputs (issue 29)".

use crate::common;

use common::{TempDir, preset_text};
use spinwise_model::limits::{MAX_LAYOUT_FILE_BYTES, MAX_RACK_FILE_BYTES, MAX_RACK_TOKENS};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The issue's bound on a refusal's peak memory.
const MAX_RSS_KIB: i64 = 64 * 1024;
/// The issue asks for 0.2 s; the assertion allows 10× that for a loaded CI machine (the
/// measured times, all far below 0.2 s in an optimized test build, are in docs/BENCHMARKS.md).
const MAX_WALL: Duration = Duration::from_secs(2);
/// A refusal is one line of at most a few hundred characters, whatever the file held.
const MAX_STDERR_BYTES: usize = 2_000;

/// Held by each test while it measures, so runs do not share the 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Measured {
    code: Option<i32>,
    stderr: String,
    wall: Duration,
    max_rss_kib: i64,
}

/// The environment variables that turn [`measure_helper_runs_one_child_when_asked`] on: the
/// arguments (one a line) and the file for the child's stderr.
const HELPER_ARGS: &str = "SPINWISE_HOSTILE_ARGS";
const HELPER_STDERR: &str = "SPINWISE_HOSTILE_STDERR";

/// Runs `spinwise args` from a fresh copy of this test binary (file comment) and returns what
/// the copy measured.
fn measure<I, S>(args: I) -> Measured
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let args: Vec<String> = args
        .into_iter()
        .map(|arg| arg.as_ref().to_str().expect("UTF-8 arguments").to_string())
        .collect();
    let stderr_path = std::env::temp_dir().join(format!(
        "spinwise-hostile-stderr-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let helper = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "hostile_inputs::measure_helper_runs_one_child_when_asked",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_ARGS, args.join("\n"))
        .env(HELPER_STDERR, &stderr_path)
        .output()
        .expect("the helper runs");
    let stdout = String::from_utf8_lossy(&helper.stdout);
    let line = stdout
        .lines()
        // libtest prints the test's name on the same line, before the helper's output.
        .find_map(|line| line.split_once("MEASURED ").map(|(_, numbers)| numbers))
        .unwrap_or_else(|| panic!("the helper measured nothing: {stdout}"));
    let fields: Vec<i64> = line
        .split_whitespace()
        .map(|field| field.parse().expect("numbers"))
        .collect();
    let stderr = std::fs::read(&stderr_path).expect("the child's stderr");
    std::fs::remove_file(&stderr_path).expect("removed");
    Measured {
        code: (fields[0] >= 0).then_some(fields[0] as i32),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        wall: Duration::from_nanos(fields[2] as u64),
        max_rss_kib: fields[1],
    }
}

/// Not a test of its own: run by [`measure`] with [`HELPER_ARGS`] set, it spawns `spinwise`
/// with those arguments, waits for it with `wait4` and prints `MEASURED code rss_kib wall_ns`
/// (code -1: killed by a signal). Without the variable it does nothing.
#[test]
fn measure_helper_runs_one_child_when_asked() {
    let Ok(args) = std::env::var(HELPER_ARGS) else {
        return;
    };
    let stderr_path = std::env::var(HELPER_STDERR).expect("a file for stderr");
    let stderr = std::fs::File::create(stderr_path).expect("stderr file");
    let started = Instant::now();
    // Reaped below by wait4 (which std's `wait` cannot do: it discards the rusage).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(args.split('\n'))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("spinwise starts");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data, zero is a valid value; wait4 writes both out-parameters.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    println!("MEASURED {code} {} {}", usage.ru_maxrss, wall.as_nanos());
}

/// Runs `spinwise args` on a hostile input and checks it is refused briefly, quickly and
/// within the memory bound; returns stderr for the caller's own checks.
fn refused_within_bounds(case: &str, args: &[&OsStr]) -> String {
    let run = measure(args);
    println!(
        "{case:<46} {:>7.1} ms {:>7} KiB  {}",
        run.wall.as_secs_f64() * 1e3,
        run.max_rss_kib,
        run.stderr.trim_end().chars().take(120).collect::<String>()
    );
    assert_eq!(
        run.code,
        Some(1),
        "{case}: must be refused with exit status 1; stderr: {}",
        run.stderr.chars().take(500).collect::<String>()
    );
    assert!(run.stderr.starts_with("error: "), "{case}: {}", run.stderr);
    assert!(
        run.stderr.len() <= MAX_STDERR_BYTES,
        "{case}: a refusal of {} bytes: {}…",
        run.stderr.len(),
        run.stderr.chars().take(300).collect::<String>()
    );
    assert!(
        run.max_rss_kib <= MAX_RSS_KIB,
        "{case}: peak memory {} KiB > {MAX_RSS_KIB} KiB",
        run.max_rss_kib
    );
    assert!(run.wall <= MAX_WALL, "{case}: took {:?}", run.wall);
    run.stderr
}

fn plan(path: &Path) -> Vec<OsString> {
    vec!["plan".into(), path.into()]
}

/// The minimal rack of docs/rack-format.md with `old` replaced by `new`.
fn minimal_with(old: &str, new: &str) -> String {
    let doc = include_str!("../../../../docs/rack-format.md");
    let begin = doc
        .find("<!-- minimal-example:begin -->\n```toml\n")
        .expect("docs hold the minimal example");
    let rest = &doc[begin..];
    let start = rest.find("[rack]").expect("starts with [rack]");
    let end = rest
        .find("```\n<!-- minimal-example:end -->")
        .expect("ends");
    let text = &rest[start..end];
    assert_eq!(text.matches(old).count(), 1, "`{old}` occurs once");
    text.replacen(old, new, 1)
}

fn sparse(dir: &TempDir, name: &str, bytes: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .and_then(|file| file.set_len(bytes))
        .expect("a sparse file");
    path
}

fn args(list: &[OsString]) -> Vec<&OsStr> {
    list.iter().map(OsString::as_os_str).collect()
}

#[test]
fn the_baseline_of_a_run_is_far_below_the_bound() {
    let _serial = one_at_a_time();
    let run = measure(["--version"]);
    println!(
        "{:<46} {:>7.1} ms {:>7} KiB",
        "--version (baseline)",
        run.wall.as_secs_f64() * 1e3,
        run.max_rss_kib
    );
    assert_eq!(run.code, Some(0));
    assert!(run.max_rss_kib < MAX_RSS_KIB / 2, "{} KiB", run.max_rss_kib);
}

#[test]
fn a_rack_file_of_a_gigabyte_is_refused_without_reading_it() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-1g");
    for (name, bytes) in [("1g.toml", 1u64 << 30), ("4g.toml", 4u64 << 30)] {
        let rack = sparse(&dir, name, bytes);
        let stderr = refused_within_bounds(&format!("plan: sparse {name}"), &args(&plan(&rack)));
        assert!(
            stderr.contains(&rack.display().to_string())
                && stderr.contains("the file is larger than")
                && stderr.contains(&MAX_RACK_FILE_BYTES.to_string()),
            "{stderr}"
        );
    }
}

#[test]
fn a_rack_file_one_byte_over_the_limit_is_refused_and_one_at_it_is_read() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-edge");
    let over = sparse(&dir, "over.toml", MAX_RACK_FILE_BYTES as u64 + 1);
    let stderr = refused_within_bounds("plan: limit + 1 bytes", &args(&plan(&over)));
    assert!(stderr.contains("the file is larger than"), "{stderr}");
    // Exactly the limit is read and handed to the parser (zero bytes are not TOML).
    let at = sparse(&dir, "at.toml", MAX_RACK_FILE_BYTES as u64);
    let stderr = refused_within_bounds("plan: limit bytes of zeros", &args(&plan(&at)));
    assert!(!stderr.contains("the file is larger than"), "{stderr}");
}

#[test]
fn dev_zero_as_a_rack_or_a_layout_is_refused_at_the_limit() {
    let _serial = one_at_a_time();
    let zero = Path::new("/dev/zero");
    let stderr = refused_within_bounds("plan /dev/zero", &args(&plan(zero)));
    assert!(stderr.contains("the file is larger than"), "{stderr}");
    let stderr = refused_within_bounds(
        "quality /dev/zero",
        &[OsStr::new("quality"), zero.as_os_str()],
    );
    assert!(
        stderr.contains(&MAX_LAYOUT_FILE_BYTES.to_string()),
        "{stderr}"
    );
}

#[test]
fn a_trace_or_a_serve_configuration_of_dev_zero_or_a_gigabyte_is_refused_cheaply() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-trace");
    let zero = OsStr::new("/dev/zero");
    let big = sparse(&dir, "1g.csv", 1 << 30);
    let o = OsStr::new;
    for (case, trace) in [
        ("sim --trace /dev/zero", zero),
        ("sim --trace 1 GB", big.as_os_str()),
    ] {
        let stderr = refused_within_bounds(
            case,
            &[
                o("sim"),
                o("--preset"),
                o("dense-jbod-60"),
                o("--trace"),
                trace,
            ],
        );
        // A line with no newline in sight is refused at the line limit, not read whole.
        assert!(stderr.contains("line 1"), "{case}: {stderr}");
    }
    let data = dir.join("data");
    for (case, config) in [
        ("serve --config /dev/zero", zero),
        ("serve --config 1 GB", big.as_os_str()),
    ] {
        let stderr = refused_within_bounds(
            case,
            &[
                o("serve"),
                o("--data"),
                data.as_os_str(),
                o("--config"),
                config,
            ],
        );
        assert!(
            stderr.contains("the file is larger than"),
            "{case}: {stderr}"
        );
    }
}

#[test]
fn a_fifo_or_a_directory_given_as_the_file_is_refused_without_blocking() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-fifo");
    let fifo = dir.join("rack.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().expect("UTF-8 path")).expect("no NUL");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let stderr = refused_within_bounds("plan: a FIFO", &args(&plan(&fifo)));
    assert!(stderr.contains("FIFO"), "{stderr}");
    let stderr = refused_within_bounds(
        "verify --layout a FIFO",
        &[
            OsStr::new("verify"),
            fifo.as_os_str(),
            OsStr::new("--preset"),
            OsStr::new("dense-jbod-60"),
        ],
    );
    assert!(stderr.contains("FIFO"), "{stderr}");
    let directory = dir.join("rack.toml");
    std::fs::create_dir(&directory).expect("mkdir");
    let stderr = refused_within_bounds("plan: a directory", &args(&plan(&directory)));
    assert!(stderr.contains("a directory"), "{stderr}");
}

#[test]
fn a_rack_of_non_utf8_bytes_is_refused_naming_the_offset() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-utf8");
    let mut bytes = minimal_with("two-trays", "two-trays").into_bytes();
    let at = bytes.len() / 2;
    bytes[at] = 0xff;
    let rack = dir.join("latin1.toml");
    std::fs::write(&rack, bytes).expect("write");
    let stderr = refused_within_bounds("plan: a 0xff byte", &args(&plan(&rack)));
    assert!(
        stderr.contains("not UTF-8") && stderr.contains(&format!("offset {at}")),
        "{stderr}"
    );
}

#[test]
fn rack_text_built_to_be_expensive_is_refused_cheaply() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-text");
    let near_limit = MAX_RACK_FILE_BYTES - 4_096;
    let disk = "{ id = 1, at = [0, 0] },\n";
    let cases: Vec<(&str, String)> = vec![
        (
            "a bad line just under the byte limit",
            minimal_with(
                "budget = 23.0",
                &format!("budget = 23.0 {}", "x".repeat(near_limit)),
            ),
        ),
        (
            "a string just under the byte limit",
            minimal_with(
                "budget = 23.0",
                &format!("budget = \"{}\"", "x".repeat(near_limit)),
            ),
        ),
        (
            "a key just under the byte limit",
            minimal_with(
                "budget = 23.0",
                &format!("budget = 23.0\n{} = 1", "k".repeat(near_limit)),
            ),
        ),
        (
            "disks listed up to the byte limit",
            minimal_with(
                "grid = true",
                &format!("list = [\n{}]", disk.repeat(near_limit / disk.len())),
            ),
        ),
        (
            "inline tables just under the token limit",
            // The costliest tokens for the parser (a table per 6 tokens), refused after parsing
            // (an unknown key): the worst memory a rack file can reach the parser with.
            minimal_with(
                "budget = 23.0",
                &format!(
                    "budget = 23.0\nextra = [{}]",
                    "{a=1},".repeat(MAX_RACK_TOKENS / 6 - 400)
                ),
            ),
        ),
        (
            "arrays 200,000 deep",
            minimal_with(
                "budget = 23.0",
                &format!("budget = {}{}", "[".repeat(200_000), "]".repeat(200_000)),
            ),
        ),
        (
            "arrays 90,000 deep (under the token limit)",
            minimal_with(
                "budget = 23.0",
                &format!("budget = {}{}", "[".repeat(90_000), "]".repeat(90_000)),
            ),
        ),
        (
            "inline tables 40,000 deep",
            minimal_with(
                "budget = 23.0",
                &format!("budget = {}1{}", "{a=".repeat(40_000), "}".repeat(40_000)),
            ),
        ),
        (
            "budget = nan",
            minimal_with("budget = 23.0", "budget = nan"),
        ),
        (
            "budget = inf",
            minimal_with("budget = 23.0", "budget = inf"),
        ),
        ("budget = -5", minimal_with("budget = 23.0", "budget = -5")),
        (
            "budget = 1e300",
            minimal_with("budget = 23.0", "budget = 1e300"),
        ),
        (
            "two disks at one position",
            minimal_with(
                "grid = true",
                "list = [{ id = 0, at = [0, 0] }, { id = 1, at = [0, 0] }]",
            ),
        ),
    ];
    // Written, then dropped: the children are forked from this process (file comment).
    let files: Vec<(&str, PathBuf)> = cases
        .into_iter()
        .enumerate()
        .map(|(index, (case, text))| {
            assert!(text.len() <= MAX_RACK_FILE_BYTES, "{case}: {}", text.len());
            (case, dir.write(&format!("case-{index}.toml"), &text))
        })
        .collect();
    for (case, rack) in &files {
        let stderr = refused_within_bounds(&format!("plan: {case}"), &args(&plan(rack)));
        assert!(stderr.contains(&rack.display().to_string()), "{stderr}");
        if case.contains("1e300") {
            assert!(stderr.contains("1e300 is not a quantity"), "{stderr}");
        }
        if case.contains("one position") {
            assert!(stderr.contains("disks 0 and 1 are both at"), "{stderr}");
        }
    }
}

#[test]
fn layout_text_built_to_be_expensive_is_refused_cheaply() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-layout");
    let near_limit = MAX_LAYOUT_FILE_BYTES - 4_096;
    let head = r#"{"format": "spinwise-layout", "version": 1, "#;
    let cases: Vec<(&str, String)> = vec![
        (
            "a string just under the byte limit",
            format!("{head}\"rack\": 7, \"x\": \"{}\"}}", "x".repeat(near_limit)),
        ),
        (
            "empty groups up to the byte limit",
            format!("{head}\"groups\": [{}[]]}}", "[],".repeat(near_limit / 3)),
        ),
        (
            "one group of ids up to the byte limit",
            format!("{head}\"groups\": [[{}0]]}}", "0,".repeat(near_limit / 2)),
        ),
        (
            "empty state names up to the byte limit",
            format!(
                "{head}\"states\": [{}\"\"]}}",
                "\"\",".repeat(near_limit / 3)
            ),
        ),
        (
            "arrays 200,000 deep as the format",
            format!(
                "{{\"format\": {}{}}}",
                "[".repeat(200_000),
                "]".repeat(200_000)
            ),
        ),
        (
            "version 1e300",
            r#"{"format": "spinwise-layout", "version": 1e300}"#.to_string(),
        ),
    ];
    let files: Vec<(&str, PathBuf)> = cases
        .into_iter()
        .enumerate()
        .map(|(index, (case, text))| {
            assert!(
                text.len() <= MAX_LAYOUT_FILE_BYTES,
                "{case}: {}",
                text.len()
            );
            (case, dir.write(&format!("case-{index}.json"), &text))
        })
        .collect();
    for (case, layout) in &files {
        for command in ["quality", "verify"] {
            let mut list: Vec<&OsStr> = vec![OsStr::new(command), layout.as_os_str()];
            if command == "verify" {
                list.extend([OsStr::new("--preset"), OsStr::new("dense-jbod-60")]);
            }
            let stderr = refused_within_bounds(&format!("{command}: {case}"), &list);
            assert!(stderr.contains(&layout.display().to_string()), "{stderr}");
        }
    }
    let big = sparse(&dir, "1g.json", 1 << 30);
    let stderr = refused_within_bounds(
        "quality: sparse 1 GB layout",
        &[OsStr::new("quality"), big.as_os_str()],
    );
    assert!(stderr.contains("the file is larger than"), "{stderr}");
}

#[test]
fn every_command_that_reads_a_rack_or_a_layout_reads_it_bounded() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-commands");
    let rack = sparse(&dir, "1g.toml", 1 << 30);
    let layout = sparse(&dir, "1g.json", 1 << 30);
    let good_rack = dir.write("jbod.toml", &preset_text("dense-jbod-60"));
    let out = dir.join("out");
    let data = dir.join("data");
    let o = |s: &str| OsString::from(s);
    let p = |path: &Path| path.as_os_str().to_os_string();
    let runs: Vec<(&str, Vec<OsString>)> = vec![
        ("plan RACK", vec![o("plan"), p(&rack)]),
        (
            "explore RACK",
            vec![o("explore"), p(&rack), o("--out"), p(&out)],
        ),
        ("sim RACK", vec![o("sim"), p(&rack), o("--rate"), o("1")]),
        (
            "sim --layout",
            vec![
                o("sim"),
                p(&good_rack),
                o("--rate"),
                o("1"),
                o("--layout"),
                p(&layout),
            ],
        ),
        (
            "verify LAYOUT RACK",
            vec![o("verify"), p(&layout), p(&rack)],
        ),
        (
            "verify LAYOUT (good rack)",
            vec![o("verify"), p(&layout), p(&good_rack)],
        ),
        ("quality LAYOUT", vec![o("quality"), p(&layout)]),
        (
            "store init --rack",
            vec![
                o("store"),
                o("--data"),
                p(&data),
                o("init"),
                o("--rack"),
                p(&rack),
            ],
        ),
        (
            "store init --layout",
            vec![
                o("store"),
                o("--data"),
                p(&data),
                o("init"),
                o("--rack"),
                p(&good_rack),
                o("--layout"),
                p(&layout),
            ],
        ),
        (
            "serve --rack",
            vec![o("serve"), o("--data"), p(&data), o("--rack"), p(&rack)],
        ),
        (
            "serve --layout",
            vec![
                o("serve"),
                o("--data"),
                p(&data),
                o("--rack"),
                p(&good_rack),
                o("--layout"),
                p(&layout),
            ],
        ),
    ];
    for (case, list) in &runs {
        let stderr = refused_within_bounds(case, &args(list));
        assert!(
            stderr.contains("the file is larger than"),
            "{case}: {stderr}"
        );
    }
}
