//! Real S3 clients against the real binary: starts `spinwise serve` on an ephemeral port over a
//! new data directory (time factor 0.001, upkeep migrating what has been staged for 2 s) and runs
//! scripts/s3_clients_check.py, which drives it with boto3 and the aws CLI (every supported call
//! byte-exact, multipart through `aws s3 cp` and boto3's upload_file, conditional requests, a
//! public-read bucket read anonymously, the async restore flow, error codes), then reads the
//! server's Prometheus metrics: the checks' answers by status, the restores' spin-ups and that
//! the restore gauges are served. Missing python3, boto3 or aws fails the test with the
//! install line: CI must provide them, a skipped check would prove nothing.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ACCESS_KEY: &str = "SPINWISECLIENTSCHECK";
const SECRET_KEY: &str = "spinwise-clients-check-secret-0123456789";
const INSTALL_HINT: &str = "install with: pip install awscli boto3";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/s3_clients_check.py")
}

/// Fails (never skips) when a client the script needs is missing.
fn require_clients() {
    let probes: [(&str, &[&str]); 3] = [
        ("python3", &["--version"]),
        ("python3", &["-c", "import boto3"]),
        ("aws", &["--version"]),
    ];
    for (program, args) in probes {
        let found = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        assert!(
            found,
            "`{program} {}` failed: the S3 client check needs python3 with boto3 and the aws CLI; {INSTALL_HINT}",
            args.join(" ")
        );
    }
}

/// A new data directory at time factor 0.001 whose upkeep migrates staged objects after 2 s, so
/// the restore check sees its object turn GLACIER while the server runs.
fn prepare_data_dir(data: &Path) {
    let init = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["store", "--data"])
        .arg(data)
        .args([
            "init",
            "--preset",
            "dense-jbod-60",
            "--time-factor",
            "0.001",
        ])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "store init failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    let path = data.join("store.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .any(|line| line.starts_with("migrate_after_s = ")),
        "store.toml has no migrate_after_s line:\n{text}"
    );
    let edited: Vec<&str> = text
        .lines()
        .map(|line| {
            if line.starts_with("migrate_after_s = ") {
                "migrate_after_s = 2.0"
            } else {
                line
            }
        })
        .collect();
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
}

/// Starts `serve` (with metrics) and reads stdout up to its "serving S3 on http://ADDR" line;
/// returns the S3 and the metrics address.
// The child is handed to the caller, who stops it.
#[allow(clippy::zombie_processes)]
fn start(data: &Path, log: &Path) -> (Child, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .env_remove("SPINWISE_ACCESS_KEY")
        .env_remove("SPINWISE_SECRET_KEY")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let mut metrics = None;
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            let status = child.wait().unwrap();
            panic!("serve ended ({status}) before printing its address: {printed:?}");
        };
        if let Some(rest) = line.strip_prefix("metrics on http://") {
            metrics = rest.strip_suffix("/metrics").map(str::to_string);
        }
        if let Some(rest) = line.strip_prefix("serving S3 on http://") {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            let metrics = metrics.unwrap_or_else(|| panic!("no metrics address: {printed:?}"));
            return (child, addr, metrics);
        }
        printed.push(line);
    }
}

/// `GET /metrics` from the server's metrics listener: the OpenMetrics text.
fn scrape(addr: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
}

/// The sum of every sample of the metric `name` (any labels) in `text`.
fn total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter(|line| line[name.len()..].starts_with(['{', ' ']))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// SIGTERM, then the server's log once it exited (it must exit cleanly).
fn stop(mut child: Child, log: &Path) -> String {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(log).unwrap_or_default();
            assert!(status.success(), "serve exited with {status}: {stderr}");
            return stderr;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn boto3_and_the_aws_cli_pass_every_check_against_spinwise_serve() {
    require_clients();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    prepare_data_dir(&dir.path().join("data"));
    let (child, addr, metrics_addr) = start(&dir.path().join("data"), &log);
    let checked = Command::new("python3")
        .arg(script())
        .args(["--endpoint", &format!("http://{addr}")])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .args(["--bucket-prefix", "clients"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let metrics = scrape(&metrics_addr);
    let server_log = stop(child, &log);
    let stdout = String::from_utf8_lossy(&checked.stdout);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        checked.status.success(),
        "s3_clients_check.py failed ({}):\n{stdout}\n{stderr}\nserver log:\n{server_log}",
        checked.status
    );
    println!("{stdout}");
    for check in [
        "check_buckets",
        "check_objects_byte_exact",
        "check_multipart_low_level",
        "check_multipart_upload_file",
        "check_aws_cli",
        "check_errors",
        "check_restore_async",
    ] {
        assert!(
            stdout.contains(&format!("ok   {check}")),
            "{check} did not run: {stdout}"
        );
    }
    // The metrics saw the checks: their answers, the restores' spin-ups, no budget refusal.
    let ok_answers = total(&metrics, "spinwise_s3_responses_total{status=\"200\"}");
    assert!(
        ok_answers > 100.0,
        "{ok_answers} answers of 200:\n{metrics}"
    );
    assert!(total(&metrics, "spinwise_s3_responses_total{status=\"403\"}") > 0.0);
    let spin_ups = total(&metrics, "spinwise_group_spin_ups_total");
    assert!(spin_ups >= 1.0, "cold reads spun a group up:\n{metrics}");
    assert_eq!(total(&metrics, "spinwise_budget_refusals_total"), 0.0);
    // serve wires the restore gauges: every state and tier has a series. (The checks delete
    // their buckets at the end, which drops their restores, so the counts are 0 by now;
    // tests/restore.rs checks the values.)
    let restore_series = metrics
        .lines()
        .filter(|line| line.starts_with("spinwise_restores{state="))
        .count();
    assert_eq!(restore_series, 9, "{metrics}");
    assert!(
        metrics.contains("spinwise_restores_waiting_for_spin_up 0"),
        "{metrics}"
    );
}
