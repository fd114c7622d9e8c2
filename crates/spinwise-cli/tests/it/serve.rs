//! `spinwise serve` as a process: first start creates the data directory and prints generated
//! credentials once, unsigned requests are refused, SIGTERM stops it cleanly, a restart reuses
//! the saved credentials, and rack flags for an existing store are refused. With --tls-cert and
//! --tls-key it serves https:// (plaintext gets no HTTP answer) and stops cleanly; a lone, missing
//! or invalid PEM file fails the start with an error naming it and creates nothing. `--help`
//! explains --abandon-uploads-after-days, which takes whole days (0: never). A configuration
//! file (`--config`) sets the data directory (relative to the file), listen address, time factor
//! and keys; the same creation settings are accepted on restart, different ones refused; a bad
//! file is refused naming it and creates nothing.

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
fn start(data: &std::path::Path, extra: &[&str]) -> (Child, String, Vec<String>) {
    let (child, url, printed) = start_serving(data, extra);
    let addr = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not plain HTTP: {url}"));
    (child, addr.to_string(), printed)
}

/// Starts `serve` and reads stdout up to its "serving S3 on URL" line; returns the URL.
fn start_serving(data: &std::path::Path, extra: &[&str]) -> (Child, String, Vec<String>) {
    let mut command = spinwise();
    command
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra);
    serve_until_address(command)
}

/// Spawns `command` (a `serve`) and reads stdout up to its "serving S3 on URL" line.
// The child is handed to the caller, whose `terminate` waits for it.
#[allow(clippy::zombie_processes)]
fn serve_until_address(mut command: Command) -> (Child, String, Vec<String>) {
    let mut child = command
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
        if let Some(rest) = line.strip_prefix("serving S3 on ") {
            let url = rest.split_whitespace().next().unwrap().to_string();
            return (child, url, printed);
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
    // The refusal is the client's business: s3s's ERROR line for it is filtered out by default.
    assert!(!stderr.contains("s3s"), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");

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
    assert!(
        stderr.contains("its rack is the dense-jbod-60 preset"),
        "{stderr}"
    );
    assert!(stderr.contains("leave out --preset/--rack"), "{stderr}");
}

/// Runs `serve` with `extra` flags that must make it fail at once; returns its stderr.
fn refused_start(data: &std::path::Path, extra: &[&str]) -> String {
    let output = spinwise()
        .args(["serve", "--data"])
        .arg(data)
        .args(["--listen", "127.0.0.1:0", "--time-factor", "0.001"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(!output.status.success(), "serve started: {stderr}");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("serving S3"),
        "{stderr}"
    );
    stderr
}

#[test]
fn serve_refuses_a_lone_missing_or_invalid_tls_file_naming_it_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spinwise-data");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "this is not PEM\n").unwrap();
    let garbage = garbage.to_str().unwrap();
    let missing = dir.path().join("missing-cert.pem");
    let missing = missing.to_str().unwrap();

    let stderr = refused_start(&data, &["--tls-cert", garbage]);
    assert!(stderr.contains("--tls-key"), "{stderr}");
    let stderr = refused_start(&data, &["--tls-key", garbage]);
    assert!(stderr.contains("--tls-cert"), "{stderr}");

    let stderr = refused_start(&data, &["--tls-cert", missing, "--tls-key", garbage]);
    assert!(stderr.contains("missing-cert.pem"), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");

    let stderr = refused_start(&data, &["--tls-cert", garbage, "--tls-key", garbage]);
    assert!(stderr.contains("garbage.pem"), "{stderr}");
    assert!(stderr.contains("no PEM certificate"), "{stderr}");

    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let certificate = dir.path().join("cert.pem");
    std::fs::write(&certificate, made.cert.pem()).unwrap();
    let stderr = refused_start(
        &data,
        &[
            "--tls-cert",
            certificate.to_str().unwrap(),
            "--tls-key",
            garbage,
        ],
    );
    assert!(stderr.contains("private key"), "{stderr}");
    assert!(stderr.contains("garbage.pem"), "{stderr}");

    assert!(
        !data.exists(),
        "a refused start must not create the data directory"
    );
}

#[test]
fn serve_with_a_certificate_serves_https_refuses_plaintext_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spinwise-data");
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let certificate = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&certificate, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let (child, url, _) = start_serving(
        &data,
        &[
            "--time-factor",
            "0.001",
            "--tls-cert",
            certificate.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let addr = url
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("not HTTPS: {url}"));

    // Plaintext HTTP on the TLS port: the connection is closed without an HTTP answer.
    let mut socket = TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    socket
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[test]
fn serve_help_explains_abandon_uploads_after_days_and_the_flag_takes_whole_days() {
    let help = spinwise().args(["serve", "--help"]).output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("--abandon-uploads-after-days <DAYS>"),
        "{text}"
    );
    assert!(text.contains("multipart uploads still open"), "{text}");
    assert!(text.contains("[default: 7]"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spinwise-data");
    let stderr = refused_start(&data, &["--abandon-uploads-after-days", "a week"]);
    assert!(stderr.contains("--abandon-uploads-after-days"), "{stderr}");
    assert!(!data.exists(), "a refused flag creates nothing");

    let (child, _, _) = start(
        &data,
        &[
            "--time-factor",
            "0.001",
            "--abandon-uploads-after-days",
            "0",
        ],
    );
    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");
}

#[test]
fn serve_takes_its_settings_from_a_configuration_file_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let conf_dir = dir.path().join("conf");
    std::fs::create_dir(&conf_dir).unwrap();
    let conf = conf_dir.join("serve.toml");
    std::fs::write(
        &conf,
        "data = \"from-file\"\nlisten = \"127.0.0.1:0\"\ntime_factor = 0.001\n\
         access_key = \"CONFIGFILEKEY0000001\"\nsecret_key = \"config-file-secret-0123456789\"\n",
    )
    .unwrap();
    let serve_with = |extra: &[&str]| {
        let mut command = spinwise();
        // Another working directory: the file's relative `data` must not follow it.
        command.current_dir(dir.path()).args(["serve", "--config"]);
        command.arg(&conf).args(extra);
        command
    };
    let data = conf_dir.join("from-file");

    let (child, url, printed) = serve_until_address(serve_with(&[]));
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(
        data.join("store.toml").exists(),
        "data is relative to the file"
    );
    assert!(!printed.join("\n").contains("secret key"), "{printed:?}");
    assert!(
        !data.join("s3-credentials.toml").exists(),
        "the file's keys are used and never written to the data directory"
    );
    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");

    // Restarting with the same file: its time factor is the store's, so it is accepted.
    let (child, _, _) = serve_until_address(serve_with(&[]));
    let (clean, stderr) = terminate(child);
    assert!(clean, "{stderr}");

    // A flag overrides the file, and a time factor other than the store's is refused.
    let refused = serve_with(&["--time-factor", "0.5"]).output().unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("already holds a store"), "{stderr}");
    assert!(stderr.contains("time factor 0.5"), "{stderr}");
    // The refusal says what to do instead: serve the store as it is, or make another.
    assert!(stderr.contains("leave out --time-factor"), "{stderr}");
    assert!(
        stderr.contains("give another data directory (e.g. --data "),
        "{stderr}"
    );

    // A bad file is refused, naming the file and the line, and creates nothing.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "data = \"never\"\nlisten_on = \"127.0.0.1:0\"\n").unwrap();
    let refused = spinwise()
        .current_dir(dir.path())
        .args(["serve", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("listen_on"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("never").exists(),
        "a refused file creates nothing"
    );
}

#[test]
fn a_log_filter_that_does_not_parse_is_refused_by_name_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("spinwise-data");
    let refused = spinwise()
        .env("SPINWISE_LOG", "info,s3s=loud")
        .args(["serve", "--data"])
        .arg(&data)
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("SPINWISE_LOG `info,s3s=loud`"), "{stderr}");
    assert!(!data.exists(), "nothing was created");
}
