//! `spinwise workload`: fit reads the shipped example histogram and reports every model with
//! its goodness of fit; generate writes a manifest and a trace that `spinwise sim --trace`
//! replays, the same seed gives the same bytes, envelopes order the sets, and bad input is
//! refused with a message, never a panic.

use crate::common;

use common::{TempDir, integer, spinwise};

fn example_histogram() -> String {
    format!(
        "{}/../spinwise-workload/data/example-histogram.csv",
        env!("CARGO_MANIFEST_DIR")
    )
}

const LOG2_GAMMA: &str = "shape=11.8,scale=1.38,log_scale_error=0.02";

fn generate(dir: &TempDir, name: &str, extra: &[&str]) -> serde_json::Value {
    let out = dir.join(name);
    let mut args = vec![
        "workload",
        "generate",
        "--model",
        "gamma",
        "--variable",
        "log2",
        "--params",
        LOG2_GAMMA,
        "--capacity",
        "200GB",
        "--seed",
        "5",
        "--json",
        "--out",
    ];
    let out_text = out.display().to_string();
    args.push(&out_text);
    args.extend_from_slice(extra);
    spinwise(args).success().json()
}

#[test]
fn fit_reports_every_model_best_first_with_goodness_of_fit_and_reusable_params() {
    let histogram = example_histogram();
    let report = spinwise([
        "workload",
        "fit",
        "--histogram",
        &histogram,
        "--variable",
        "log2",
        "--json",
    ])
    .success()
    .json();
    assert_eq!(integer(&report, "files"), 12_345_680);
    let fits = report["fits"].as_array().unwrap();
    assert_eq!(fits.len(), 3);
    let log_likelihoods: Vec<f64> = fits
        .iter()
        .map(|f| f["log_likelihood"].as_f64().unwrap())
        .collect();
    assert!(log_likelihoods.windows(2).all(|w| w[0] >= w[1]));
    for fit in fits {
        for key in ["chi_square", "ks_distance", "degrees_of_freedom"] {
            assert!(fit[key].is_number(), "{key} in {fit}");
        }
        assert!(fit["params"].as_str().unwrap().contains('='));
    }
    // The text summary names the models and the envelopes.
    let text = spinwise([
        "workload",
        "fit",
        "--histogram",
        &histogram,
        "--model",
        "gamma",
    ])
    .success()
    .stdout;
    assert!(text.contains("gamma") && text.contains("KS distance") && text.contains("chi-square"));
    assert!(text.contains("lower envelope") && text.contains("upper envelope"));
}

#[test]
fn generate_writes_a_trace_that_the_simulator_replays() {
    let dir = TempDir::new("workload-replay");
    let summary = generate(&dir, "set", &["--reads", "200", "--zipf", "1.0"]);
    let files = integer(&summary, "files");
    assert!(files > 100);
    assert!(integer(&summary, "total_bytes") <= 200_000_000_000);
    let manifest = std::fs::read_to_string(dir.join("set/manifest.csv")).unwrap();
    assert_eq!(manifest.lines().count() as u64, files + 1);
    let trace = dir.join("set/trace.csv");
    let report = spinwise([
        "sim",
        "--preset",
        "dense-jbod-60",
        "--trace",
        &trace.display().to_string(),
        "--hours",
        "24",
        "--warmup-hours",
        "0",
        "--json",
    ])
    .success()
    .json();
    assert_eq!(integer(&report, "requests"), files + 200);
    assert_eq!(integer(&report, "budget_violations"), 0);
}

#[test]
fn the_same_seed_writes_the_same_bytes() {
    let dir = TempDir::new("workload-seed");
    generate(&dir, "first", &["--reads", "50"]);
    generate(&dir, "again", &["--reads", "50"]);
    for file in ["manifest.csv", "trace.csv"] {
        let first = std::fs::read(dir.join(&format!("first/{file}"))).unwrap();
        let again = std::fs::read(dir.join(&format!("again/{file}"))).unwrap();
        assert_eq!(first, again, "{file}");
    }
}

#[test]
fn the_upper_envelope_generates_more_files_than_the_lower_at_the_same_capacity() {
    let dir = TempDir::new("workload-envelope");
    let upper = generate(&dir, "upper", &["--envelope", "upper"]);
    let central = generate(&dir, "central", &[]);
    let lower = generate(&dir, "lower", &["--envelope", "lower"]);
    let files = |v: &serde_json::Value| integer(v, "files");
    let median = |v: &serde_json::Value| integer(v, "median_bytes");
    assert!(files(&upper) > files(&central) && files(&central) > files(&lower));
    assert!(median(&upper) < median(&central) && median(&central) < median(&lower));
}

#[test]
fn bad_workload_input_is_refused_with_the_reason() {
    let dir = TempDir::new("workload-bad");
    let histogram = dir.write("bad.csv", "size,count\n1,2\n");
    spinwise([
        "workload",
        "fit",
        "--histogram",
        &histogram.display().to_string(),
    ])
    .refused()
    .stderr_mentions(&["bad.csv", "line 1", "bucket_log2,count"]);
    let one_bucket = dir.write("one.csv", "bucket_log2,count\n5,100\n");
    spinwise([
        "workload",
        "fit",
        "--histogram",
        &one_bucket.display().to_string(),
    ])
    .refused()
    .stderr_mentions(&["at least two buckets"]);
    spinwise(["workload", "fit", "--histogram", "/nonexistent/h.csv"])
        .refused()
        .stderr_mentions(&["/nonexistent/h.csv"]);
    let out = dir.join("out").display().to_string();
    let generate = |params: &str, capacity: &str, extra: &[&str]| {
        let mut args = vec![
            "workload",
            "generate",
            "--model",
            "gamma",
            "--params",
            params,
            "--capacity",
            capacity,
            "--out",
            &out,
        ];
        args.extend_from_slice(extra);
        spinwise(args)
    };
    generate("shape=1", "1GB", &[])
        .refused()
        .stderr_mentions(&["--params", "scale"]);
    generate("shape=1,scale=-2", "1GB", &[])
        .refused()
        .stderr_mentions(&["scale"]);
    generate("shape=1,scale=1e6", "1GB", &["--envelope", "upper"])
        .refused()
        .stderr_mentions(&["log_scale_error"]);
    generate("shape=1,scale=1e6", "ten", &[])
        .refused()
        .stderr_mentions(&["--capacity", "ten"]);
    generate("shape=1,scale=1e6", "10B", &[])
        .refused()
        .stderr_mentions(&["larger than the capacity"]);
    generate(
        "shape=1,scale=1e6",
        "1GB",
        &["--zipf", "NaN", "--reads", "5"],
    )
    .refused()
    .stderr_mentions(&["zipf"]);
    generate("shape=1,scale=10", "1PB", &[])
        .refused()
        .stderr_mentions(&["more than 5000000 files"]);
}

#[test]
fn workload_help_explains_the_files_it_writes() {
    let help = spinwise(["workload", "generate", "--help"])
        .success()
        .stdout;
    for needle in [
        "manifest.csv",
        "trace.csv",
        "--envelope",
        "--capacity",
        "Zipf",
    ] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
    let help = spinwise(["workload", "fit", "--help"]).success().stdout;
    assert!(help.contains("bucket_log2,count"));
}
