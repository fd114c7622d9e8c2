//! blob_listing: how long reading every blob of a SQLite catalog takes, group by group in pages
//! of 1,024 (as a store counted its disks' used space the first time a flush or a compaction
//! needed it, until 2026-11-30), against reading the usage the catalog keeps per disk
//! (`Catalog::disk_usage`, what the store reads now). The catalog is filled with BLOBS
//! committed 15 + 3 blobs over GROUPS groups of 24 disks (the Pelican rack's shape), then both
//! are read REPEATS times; the usage summed from the listing must equal the kept one.
//!
//! `cargo run --release -p spinwise-catalog --example blob_listing -- [BLOBS] [GROUPS] [REPEATS]`
//! (defaults 10000, 48, 5). Prints each reading's milliseconds.

use std::time::Instant;

use spinwise_catalog::{BlobRecord, BlobState, Catalog, DiskUsage, SqliteCatalog};

const PAGE: u32 = 1024;
const DISKS_PER_GROUP: u32 = 24;
const K: u32 = 15;
const R: u32 = 3;

fn argument(arguments: &[String], index: usize, default: u64) -> Result<u64, String> {
    match arguments.get(index) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("argument {}: {text:?} is not a count", index + 1)),
    }
}

/// Blob `id` of `group`: columns on consecutive disks of the group, rotated by the id.
fn blob(id: u64, group: u32) -> BlobRecord {
    let first_disk = group * DISKS_PER_GROUP;
    let disks = (0..K + R)
        .map(|column| first_disk + (column + id as u32) % DISKS_PER_GROUP)
        .collect();
    BlobRecord {
        id,
        group,
        disks,
        k: K,
        r: R,
        fragment_bytes: 131_072,
        size_bytes: 1 << 30,
        content_hash: [id as u8; 32],
        state: BlobState::Writing,
        live_bytes: 0,
    }
}

/// Every blob of every group, paged as the store used to; returns how many and the usage per
/// disk they add up to.
async fn list_every_blob(
    catalog: &SqliteCatalog,
    groups: u32,
) -> Result<(usize, Vec<DiskUsage>), String> {
    let mut listed = Vec::new();
    for group in 0..groups {
        let mut after = None;
        loop {
            let page = catalog
                .blobs_in_group(group, after, PAGE)
                .await
                .map_err(|error| error.to_string())?;
            let full = page.len() == PAGE as usize;
            after = page.last().map(|last| last.id);
            listed.extend(page);
            if !full {
                break;
            }
        }
    }
    Ok((listed.len(), DiskUsage::of(&listed)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let blobs = argument(&arguments, 0, 10_000)?;
    let groups = argument(&arguments, 1, 48)? as u32;
    let repeats = argument(&arguments, 2, 5)?;
    if groups == 0 {
        return Err("GROUPS must be at least 1".to_string());
    }
    let directory = tempfile::tempdir().map_err(|error| error.to_string())?;
    let catalog = SqliteCatalog::open(&directory.path().join("catalog.sqlite"))
        .await
        .map_err(|error| error.to_string())?;
    for index in 0..blobs {
        let id = catalog.next_blob_id().await.map_err(|e| e.to_string())?;
        let record = blob(id, (index % u64::from(groups)) as u32);
        catalog
            .begin_blob(record)
            .await
            .map_err(|e| e.to_string())?;
        catalog
            .commit_blob(id, Vec::new())
            .await
            .map_err(|e| e.to_string())?;
    }
    for _ in 0..repeats {
        let start = Instant::now();
        let (listed, summed) = list_every_blob(&catalog, groups).await?;
        let listing_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let kept = catalog.disk_usage().await.map_err(|e| e.to_string())?;
        let kept_ms = start.elapsed().as_secs_f64() * 1e3;
        if kept != summed {
            return Err("the kept disk usage differs from the listing's".to_string());
        }
        println!(
            "listed {listed} blobs of {groups} groups in {listing_ms:.1} ms; \
             the kept usage of {} disks in {kept_ms:.2} ms",
            kept.len()
        );
    }
    catalog.close().await;
    Ok(())
}
