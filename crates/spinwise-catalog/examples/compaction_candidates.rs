//! compaction_candidates: how long a compaction takes to find a group's blobs with dead bytes,
//! paging through every blob of the group and filtering (as `compact_group` did until
//! 2026-11-30) against reading the partial index `blobs_dead` (`Catalog::blobs_with_dead_bytes`,
//! what it reads now). The catalog is filled with BLOBS committed 15 + 3 blobs in one group of
//! 24 disks, each holding one object of its whole size; then every EVERY-th blob's object is
//! deleted, so those blobs are all dead bytes. Both readings run REPEATS times and must find the
//! same blobs.
//!
//! `cargo run --release -p spinwise-catalog --example compaction_candidates -- [BLOBS] [EVERY]
//! [REPEATS]` (defaults 20000, 100, 5). Prints each reading's milliseconds.

use std::time::Instant;

use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, Catalog, Migration, ObjectLocation, ObjectRecord, SqliteCatalog,
    Tier,
};

const PAGE: u32 = 1024;
const K: u32 = 15;
const R: u32 = 3;
const DISKS: u32 = 24;
const BLOB_BYTES: u64 = 1 << 30;

fn argument(arguments: &[String], index: usize, default: u64) -> Result<u64, String> {
    match arguments.get(index) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("argument {}: {text:?} is not a count", index + 1)),
    }
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// Blob `id` of group 0 while it is written: columns rotated over the group's disks.
fn writing_blob(id: BlobId) -> BlobRecord {
    BlobRecord {
        id,
        group: 0,
        disks: (0..K + R)
            .map(|column| (column + id as u32) % DISKS)
            .collect(),
        k: K,
        r: R,
        fragment_bytes: 131_072,
        size_bytes: BLOB_BYTES,
        content_hash: [id as u8; 32],
        state: BlobState::Writing,
        live_bytes: 0,
    }
}

/// Stages object `key` of a whole blob's size, writes blob `id` and commits the object into it.
async fn migrated_blob(catalog: &SqliteCatalog, id: BlobId, key: &str) -> Result<(), String> {
    let staged = ObjectLocation::Staged {
        segment: id,
        offset: 0,
    };
    let object = ObjectRecord {
        key: key.to_string(),
        size_bytes: BLOB_BYTES,
        content_hash: [id as u8; 32],
        created_unix_ms: 1_700_000_000_000,
        location: staged.clone(),
        tier: Tier::Cold,
    };
    catalog.put_object(object).await.map_err(text)?;
    catalog.begin_blob(writing_blob(id)).await.map_err(text)?;
    let migration = Migration {
        key: key.to_string(),
        from: staged,
        blob_offset: 0,
    };
    catalog
        .commit_blob(id, vec![migration])
        .await
        .map_err(text)?;
    Ok(())
}

/// The group's blobs with dead bytes found by paging through all of them.
async fn paging_every_blob(catalog: &SqliteCatalog) -> Result<Vec<BlobId>, String> {
    let (mut found, mut after) = (Vec::new(), None);
    loop {
        let page = catalog.blobs_in_group(0, after, PAGE).await.map_err(text)?;
        after = page.last().map(|blob| blob.id);
        let full = page.len() == PAGE as usize;
        found.extend(
            page.iter()
                .filter(|blob| blob.state == BlobState::Committed)
                .filter(|blob| blob.live_bytes < blob.size_bytes || blob.live_bytes == 0)
                .map(|blob| blob.id),
        );
        if !full {
            return Ok(found);
        }
    }
}

/// The same from the partial index.
async fn from_the_index(catalog: &SqliteCatalog) -> Result<Vec<BlobId>, String> {
    let (mut found, mut after) = (Vec::new(), None);
    loop {
        let page = catalog
            .blobs_with_dead_bytes(0, after, PAGE)
            .await
            .map_err(text)?;
        after = page.last().map(|blob| blob.id);
        let full = page.len() == PAGE as usize;
        found.extend(page.iter().map(|blob| blob.id));
        if !full {
            return Ok(found);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let blobs = argument(&arguments, 0, 20_000)?;
    let every = argument(&arguments, 1, 100)?.max(1);
    let repeats = argument(&arguments, 2, 5)?;
    let directory = tempfile::tempdir().map_err(text)?;
    let catalog = SqliteCatalog::open(&directory.path().join("catalog.sqlite"))
        .await
        .map_err(text)?;
    let mut dead = Vec::new();
    for index in 0..blobs {
        let id = catalog.next_blob_id().await.map_err(text)?;
        let key = format!("object-{id}");
        migrated_blob(&catalog, id, &key).await?;
        if index % every == 0 {
            catalog.delete_object(&key).await.map_err(text)?;
            dead.push(id);
        }
    }
    for _ in 0..repeats {
        let start = Instant::now();
        let paged = paging_every_blob(&catalog).await?;
        let paging_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let indexed = from_the_index(&catalog).await?;
        let index_ms = start.elapsed().as_secs_f64() * 1e3;
        if paged != dead || indexed != dead {
            return Err("the two readings found different blobs".to_string());
        }
        println!(
            "{} of {blobs} blobs with dead bytes: paging every blob {paging_ms:.1} ms, \
             the partial index {index_ms:.2} ms",
            dead.len()
        );
    }
    catalog.close().await;
    Ok(())
}
