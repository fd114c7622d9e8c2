//! The client matrix: the tools people point at S3 — the aws CLI's `s3 sync`, boto3's listings,
//! rclone and restic — against the real `spinwise serve`, over a tree of awkward names (`+`,
//! `%25`, spaces, `#`, `?`, unicode, a 1,024-byte key). Each test starts its own server (time
//! factor 0.001, upkeep migrating after 2 s so the downloads, `restic check --read-data` and the
//! restores read cold objects through spin-ups) and runs one check of
//! scripts/s3_client_matrix.py, which says what each check asserts. A missing client fails the
//! test with the line that installs it: CI must provide them (`.ci/run` does), and a skipped
//! check would prove nothing.

use crate::common;

use common::s3_server::{
    ACCESS_KEY, PIP_HINT, S3Server, SECRET_KEY, prepare_data_dir, require, script, total,
};
use std::process::Command;

const APT_HINT: &str =
    "install with: apt-get install rclone restic (Debian's packages; .ci/run installs them)";

/// Runs `check` of s3_client_matrix.py against a server of its own and asserts it passed, that
/// the server stopped cleanly and answered no request with 500; returns the server's metrics.
fn run_check(check: &str) -> String {
    require("python3", &["--version"], PIP_HINT);
    require("python3", &["-c", "import boto3"], PIP_HINT);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    prepare_data_dir(&data, 2.0);
    let server = S3Server::start(&data, &dir.path().join("serve.log"));
    let checked = Command::new("python3")
        .arg(script("s3_client_matrix.py"))
        .args(["--endpoint", &server.endpoint()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .args(["--only", check])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let metrics = server.scrape();
    let server_log = server.stop();
    let stdout = String::from_utf8_lossy(&checked.stdout);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(
        checked.status.success() && stdout.contains(&format!("ok   {check}")),
        "s3_client_matrix.py --only {check} failed ({}):\n{stdout}\n{stderr}\nserver log:\n{server_log}",
        checked.status
    );
    println!("{stdout}");
    let errors = total(&metrics, "spinwise_s3_responses_total{status=\"500\"}");
    assert_eq!(errors, 0.0, "answers of 500:\n{metrics}");
    assert_eq!(total(&metrics, "spinwise_budget_refusals_total"), 0.0);
    metrics
}

/// The check read migrated objects: at least one group spun up for them.
fn assert_cold_reads(metrics: &str) {
    let spin_ups = total(metrics, "spinwise_group_spin_ups_total");
    assert!(spin_ups >= 1.0, "no spin-up for the cold reads:\n{metrics}");
}

#[test]
fn aws_cli_sync_carries_awkward_names_both_ways_and_a_second_sync_transfers_nothing() {
    require("aws", &["--version"], PIP_HINT);
    assert_cold_reads(&run_check("check_aws_cli_sync"));
}

#[test]
fn aws_cli_uploads_an_empty_file_then_more_on_one_connection_without_a_stall() {
    require("aws", &["--version"], PIP_HINT);
    run_check("check_aws_cli_empty_file_then_more_on_one_connection");
}

#[test]
fn boto3_lists_awkward_names_exactly_as_written_and_reads_them_byte_exact() {
    run_check("check_boto3_listing");
}

#[test]
fn rclone_syncs_awkward_names_up_checks_them_and_syncs_them_back_byte_exact() {
    require("rclone", &["version"], APT_HINT);
    assert_cold_reads(&run_check("check_rclone"));
}

#[test]
fn restic_backs_up_checks_every_pack_diffs_and_restores_byte_exact() {
    require("restic", &["version"], APT_HINT);
    assert_cold_reads(&run_check("check_restic"));
}

#[test]
fn restic_keeps_working_with_warm_metadata_while_a_lifecycle_transition_sends_its_packs_cold() {
    require("restic", &["version"], APT_HINT);
    assert_cold_reads(&run_check("check_restic_warm_metadata_cold_packs"));
}
