//! Real S3 clients against the real binary: starts `spinwise serve` on an ephemeral port over a
//! new data directory (time factor 0.001, upkeep migrating what has been staged for 2 s) and runs
//! scripts/s3_clients_check.py, which drives it with boto3 and the aws CLI (every supported call
//! byte-exact, multipart through `aws s3 cp` and boto3's upload_file, conditional requests, a
//! public-read bucket read anonymously, the async restore flow, error codes), then reads the
//! server's Prometheus metrics: the checks' answers by status, the restores' spin-ups and that
//! the restore gauges are served. Missing python3, boto3 or aws fails the test with the
//! install line: CI must provide them, a skipped check would prove nothing.

use crate::common;

use common::s3_server::{
    ACCESS_KEY, PIP_HINT, S3Server, SECRET_KEY, prepare_data_dir, require, script, total,
};
use std::process::Command;

#[test]
fn boto3_and_the_aws_cli_pass_every_check_against_spinwise_serve() {
    require("python3", &["--version"], PIP_HINT);
    require("python3", &["-c", "import boto3"], PIP_HINT);
    require("aws", &["--version"], PIP_HINT);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Upkeep migrates after 2 s, so the restore check sees its object turn GLACIER while the
    // server runs.
    prepare_data_dir(&data, 2.0);
    let server = S3Server::start(&data, &dir.path().join("serve.log"));
    let checked = Command::new("python3")
        .arg(script("s3_clients_check.py"))
        .args(["--endpoint", &server.endpoint()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .args(["--bucket-prefix", "clients"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let metrics = server.scrape();
    let server_log = server.stop();
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
    // tests/it/restore.rs checks the values.)
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
