//! Real S3 clients against the real binary: starts `spinwise serve` on an ephemeral port over a
//! new data directory (time factor 0.001, upkeep migrating what has been staged for 2 s) and runs
//! scripts/s3_clients_check.py, which drives it with boto3 and the aws CLI (every supported call
//! byte-exact, multipart through `aws s3 cp` and boto3's upload_file, conditional requests, a
//! public-read bucket read anonymously, the async restore flow, error codes). Missing python3, boto3 or aws fails the test with the
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

/// Starts `serve` and reads stdout up to its "serving S3 on http://ADDR" line.
// The child is handed to the caller, who stops it.
#[allow(clippy::zombie_processes)]
fn start(data: &Path, log: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .env_remove("SPINWISE_ACCESS_KEY")
        .env_remove("SPINWISE_SECRET_KEY")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            let status = child.wait().unwrap();
            panic!("serve ended ({status}) before printing its address: {printed:?}");
        };
        if let Some(rest) = line.strip_prefix("serving S3 on http://") {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            return (child, addr);
        }
        printed.push(line);
    }
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
    let (child, addr) = start(&dir.path().join("data"), &log);
    let checked = Command::new("python3")
        .arg(script())
        .args(["--endpoint", &format!("http://{addr}")])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .args(["--bucket-prefix", "clients"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
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
}
