//! `spinwise serve` as a process: first start creates the data directory and prints generated
//! credentials once, unsigned requests are refused, SIGTERM stops it cleanly, a restart reuses
//! the saved credentials, and rack flags for an existing store are refused.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spinwise() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spinwise"));
    command
        .env_remove("SPINWISE_ACCESS_KEY")
        .env_remove("SPINWISE_SECRET_KEY");
    command
}

/// Starts `serve` and reads stdout up to its "serving S3 on http://ADDR" line.
// The child is handed to the caller, whose `terminate` waits for it.
#[allow(clippy::zombie_processes)]
fn start(data: &std::path::Path, extra: &[&str]) -> (Child, String, Vec<String>) {
    let mut child = spinwise()
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
            return (child, addr, printed);
        }
        printed.push(line);
    }
}

fn terminate(mut child: Child) -> (bool, String) {
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.success(), stderr);
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_creates_its_store_refuses_unsigned_requests_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spinwise-data");
    let (child, addr, printed) = start(&data, &["--time-factor", "0.001"]);
    let printed = printed.join("\n");
    assert!(printed.contains("generated S3 credentials"), "{printed}");
    assert!(printed.contains("secret key: "), "{printed}");
    assert!(data.join("store.toml").exists());
    assert!(data.join("s3.sqlite").exists());

    let mut socket = TcpStream::connect(&addr).unwrap();
    socket
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");

    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");

    // A restart reads the saved pair and prints no secret.
    let (child, _, printed) = start(&data, &[]);
    assert!(!printed.join("\n").contains("secret key"), "{printed:?}");
    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");

    let refused = spinwise()
        .args(["serve", "--data"])
        .arg(&data)
        .args(["--listen", "127.0.0.1:0", "--preset", "pelican"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("already holds a store"), "{stderr}");
}
