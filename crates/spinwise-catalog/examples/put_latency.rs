//! put_latency: measures how long `SqliteCatalog::put_object` takes with `synchronous = FULL`
//! on this machine (the PUT latency floor for small objects: the catalog commit is on every
//! PUT's path), beside the cost of one 4 KiB write + fdatasync on the same filesystem.
//!
//! `cargo run --release -p spinwise-catalog --example put_latency -- [DIR] [COUNT]`
//! DIR (default: a fresh temporary directory) must be on the filesystem of interest; the
//! example creates and removes its files there.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord, SqliteCatalog, Tier};

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index]
}

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let total: Duration = samples.iter().sum();
    let mean = total / samples.len() as u32;
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    println!(
        "{name:<28} n={:<5} mean {:.3} ms  p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        samples.len(),
        ms(mean),
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.9)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().expect("at least one sample")),
    );
}

fn fdatasync_samples(directory: &std::path::Path, count: usize) -> std::io::Result<Vec<Duration>> {
    let path = directory.join("fdatasync-probe");
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    let block = vec![0x5a_u8; 4096];
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        samples.push(start.elapsed());
    }
    std::fs::remove_file(&path)?;
    Ok(samples)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let temporary = tempfile::tempdir()?;
    let directory = arguments
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| temporary.path().to_path_buf());
    let count: usize = arguments
        .next()
        .map(|count| count.parse())
        .transpose()?
        .unwrap_or(500);
    let path = directory.join("put-latency-catalog.db");

    let catalog = SqliteCatalog::open(&path).await?;
    let mut puts = Vec::with_capacity(count);
    for index in 0..count {
        let record = ObjectRecord {
            key: format!("bench/{index:08}"),
            size_bytes: 4096,
            content_hash: [7; 32],
            created_unix_ms: 0,
            location: ObjectLocation::Staged {
                segment: 1,
                offset: index as u64 * 4096,
            },
            tier: Tier::Cold,
        };
        let start = Instant::now();
        catalog.put_object(record).await?;
        puts.push(start.elapsed());
    }
    let mut gets = Vec::with_capacity(count);
    for index in 0..count {
        let start = Instant::now();
        catalog.object(&format!("bench/{index:08}")).await?;
        gets.push(start.elapsed());
    }
    catalog.close().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }

    println!("directory {}", directory.display());
    summary("put_object (synchronous=FULL)", puts);
    summary("object (read)", gets);
    summary(
        "4 KiB write + fdatasync",
        fdatasync_samples(&directory, count)?,
    );
    Ok(())
}
