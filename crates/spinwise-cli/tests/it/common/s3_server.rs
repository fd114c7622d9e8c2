//! The real `spinwise serve` for tests that drive it with outside S3 clients (s3_clients.rs,
//! s3_client_matrix.rs): a new data directory whose upkeep migrates within seconds, the server on
//! ephemeral ports with fixed keys, its Prometheus metrics, and a clean SIGTERM stop. Also the
//! check that a client program is installed, which fails (never skips) a test without it.
//!
//! Invariant: a started server is stopped when its [`S3Server`] is dropped, so a failing test
//! leaves no server running behind it.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key pair every server started here accepts.
pub const ACCESS_KEY: &str = "SPINWISECLIENTSCHECK";
pub const SECRET_KEY: &str = "spinwise-clients-check-secret-0123456789";

/// How to install the Python clients, at the versions `.ci/run` pins.
pub const PIP_HINT: &str =
    "install with: pip install awscli==1.46.3 boto3==1.44.8 (as .ci/run does)";

/// A script under the workspace's scripts/ directory.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(name)
}

/// Fails the test, naming `install` (the line that installs it), unless `program args` runs and
/// succeeds: CI must provide the clients, and a skipped check would prove nothing.
pub fn require(program: &str, args: &[&str], install: &str) {
    let found = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        found,
        "`{program} {}` failed: this test drives spinwise serve with it; {install}",
        args.join(" ")
    );
}

/// A new dense-jbod-60 data directory at time factor 0.001 (spin-ups of 20 ms) whose upkeep
/// migrates staged objects after `migrate_after_s`, so a test sees its objects turn cold while
/// the server runs.
pub fn prepare_data_dir(data: &Path, migrate_after_s: f64) {
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
    let edited: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with("migrate_after_s = ") {
                format!("migrate_after_s = {migrate_after_s:?}")
            } else {
                line.to_string()
            }
        })
        .collect();
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
}

/// A running `spinwise serve`; stopped by [`S3Server::stop`], or killed when dropped.
pub struct S3Server {
    child: Option<Child>,
    log: PathBuf,
    /// `host:port` of the S3 listener.
    pub addr: String,
    /// `host:port` of the metrics listener.
    pub metrics_addr: String,
}

impl S3Server {
    /// Starts `serve` over `data` (with metrics, keys [`ACCESS_KEY`]/[`SECRET_KEY`], stderr to
    /// `log`) and reads its stdout up to the "serving S3 on http://ADDR" line.
    ///
    /// Writes that name no storage class go cold (`--default-storage-class GLACIER`): the
    /// clients these tests drive (aws CLI, rclone, restic by default) name none, and the tests
    /// read their objects back cold, through spin-ups. A check that wants warm objects names
    /// `STANDARD` itself.
    pub fn start(data: &Path, log: &Path) -> S3Server {
        S3Server::start_with(data, log, &[])
    }

    /// [`S3Server::start`] with more flags for `serve` (e.g. `--restore-mode async`).
    pub fn start_with(data: &Path, log: &Path, extra: &[&str]) -> S3Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_spinwise"))
            .args(["serve", "--data"])
            .arg(data)
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .args(["--default-storage-class", "GLACIER"])
            .args(extra)
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .env_remove("SPINWISE_ACCESS_KEY")
            .env_remove("SPINWISE_SECRET_KEY")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = Vec::new();
        let mut metrics_addr = None;
        loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                let status = child.wait().unwrap();
                panic!("serve ended ({status}) before printing its address: {printed:?}");
            };
            if let Some(rest) = line.strip_prefix("metrics on http://") {
                metrics_addr = rest.strip_suffix("/metrics").map(str::to_string);
            }
            if let Some(rest) = line.strip_prefix("serving S3 on http://") {
                let addr = rest.split_whitespace().next().unwrap().to_string();
                let metrics_addr =
                    metrics_addr.unwrap_or_else(|| panic!("no metrics address: {printed:?}"));
                return S3Server {
                    child: Some(child),
                    log: log.to_path_buf(),
                    addr,
                    metrics_addr,
                };
            }
            printed.push(line);
        }
    }

    /// `http://host:port` of the S3 listener.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `GET /metrics` from the metrics listener: the OpenMetrics text.
    pub fn scrape(&self) -> String {
        use std::io::{Read as _, Write as _};
        let mut socket = std::net::TcpStream::connect(&self.metrics_addr).unwrap();
        socket
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        answer
    }

    /// SIGTERM, then the server's log once it exited (it must exit cleanly).
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().expect("a server is stopped once");
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
                let stderr = std::fs::read_to_string(&self.log).unwrap_or_default();
                assert!(status.success(), "serve exited with {status}: {stderr}");
                return stderr;
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        // Only reached with a child when the test failed before stop(): do not leave it serving.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The sum of every sample of the metric `name` (any labels) in `text`.
pub fn total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter(|line| line[name.len()..].starts_with(['{', ' ']))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
