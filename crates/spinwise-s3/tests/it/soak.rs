//! 32 concurrent clients doing mixed PUT/GET/DELETE, and now and then a RestoreObject (Standard,
//! Bulk or Expedited), through a real server while the store's upkeep migrates staged objects underneath
//! them (GETs of migrated objects wait for emulated spin-ups, or read a restored copy). A GET
//! must return the bytes last acknowledged even when a restored copy of an older version exists.
//! Afterwards every acknowledged object reads back byte-exact and the bucket lists exactly the
//! acknowledged keys; the only errors allowed during the run are the documented 503 SlowDown
//! (and RestoreObject's documented answers for a staged object, a restore under way or no
//! Expedited capacity left);
//! resident memory stays flat.
//!
//! `SPINWISE_SOAK_SECONDS` sets the run's length (default 15 for CI; docs/BENCHMARKS.md records a
//! several-minute run: `SPINWISE_SOAK_SECONDS=300 cargo test --release -p spinwise-s3 --test it soak::
//! -- --nocapture`).

use crate::common;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{GlacierJobParameters, RestoreRequest, Tier};
use common::{Harness, code, config, pattern, start_with, status};
use spinwise_s3::S3Settings;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: u64 = 32;
const BUCKET: &str = "soak";

/// What a client believes its key holds: the length and seed of the pattern last acknowledged.
type Expected = BTreeMap<String, (usize, u64)>;

#[derive(Debug, Default)]
struct Tally {
    puts: u64,
    gets: u64,
    deletes: u64,
    restores: u64,
    /// RestoreObject answered 403 (the object was still staged) or 409 (one under way).
    restores_refused: u64,
    slow_downs: u64,
    bytes_put: u64,
}

fn soak_seconds() -> u64 {
    std::env::var("SPINWISE_SOAK_SECONDS")
        .ok()
        .map(|text| {
            text.parse()
                .expect("SPINWISE_SOAK_SECONDS is a whole number")
        })
        .unwrap_or(15)
}

fn resident_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib / 1024
}

struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }

    /// Mostly small objects, one in sixteen of 1 to 4 MiB.
    fn size_bytes(&mut self) -> usize {
        if self.roll(16) == 0 {
            (1 << 20) + self.roll(3 << 20) as usize
        } else {
            self.roll(256 << 10) as usize
        }
    }
}

fn is_slow_down<E: aws_sdk_s3::error::ProvideErrorMetadata>(
    error: &aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> bool {
    status(error) == 503 && code(error) == "SlowDown"
}

async fn client_loop(client: Client, id: u64, until: Instant) -> (Expected, Tally) {
    let mut dice = Dice(0x5eed ^ (id + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut expected = Expected::new();
    let mut tally = Tally::default();
    let mut sequence = 0u64;
    while Instant::now() < until {
        sequence += 1;
        let key = format!("client-{id}/key-{}", dice.roll(24));
        match dice.roll(10) {
            0..=4 => {
                let size = dice.size_bytes();
                let seed = id << 32 | sequence;
                let body = ByteStream::from(pattern(size, seed));
                let put = client
                    .put_object()
                    .bucket(BUCKET)
                    .key(&key)
                    .body(body)
                    .send()
                    .await;
                match put {
                    Ok(_) => {
                        expected.insert(key, (size, seed));
                        tally.puts += 1;
                        tally.bytes_put += size as u64;
                    }
                    Err(error) if is_slow_down(&error) => tally.slow_downs += 1,
                    Err(error) => panic!("client {id}: PUT {key}: {error:?}"),
                }
            }
            5..=8 => {
                let Some(&(size, seed)) = expected.get(&key) else {
                    continue;
                };
                match client.get_object().bucket(BUCKET).key(&key).send().await {
                    Ok(output) => {
                        let bytes = output
                            .body
                            .collect()
                            .await
                            .expect("a GET body")
                            .into_bytes();
                        assert!(
                            bytes.len() == size && bytes[..] == pattern(size, seed)[..],
                            "client {id}: GET {key} returned other bytes"
                        );
                        tally.gets += 1;
                    }
                    Err(error) if is_slow_down(&error) => tally.slow_downs += 1,
                    Err(error) => panic!("client {id}: GET {key}: {error:?}"),
                }
            }
            _ if dice.roll(4) == 0 => {
                if expected.contains_key(&key) {
                    let tiers = [Tier::Standard, Tier::Bulk, Tier::Expedited];
                    let tier = tiers[dice.roll(3) as usize].clone();
                    restore(&client, id, &key, tier, &mut tally).await;
                }
            }
            _ => match client.delete_object().bucket(BUCKET).key(&key).send().await {
                Ok(_) => {
                    expected.remove(&key);
                    tally.deletes += 1;
                }
                Err(error) if is_slow_down(&error) => tally.slow_downs += 1,
                Err(error) => panic!("client {id}: DELETE {key}: {error:?}"),
            },
        }
    }
    (expected, tally)
}

/// RestoreObject of an acknowledged key: started, extended, already under way, refused as
/// staged (`STANDARD` needs no restore), slowed down, or (Expedited) refused for lack of
/// Expedited capacity are all documented answers.
async fn restore(client: &Client, id: u64, key: &str, tier: Tier, tally: &mut Tally) {
    let parameters = GlacierJobParameters::builder().tier(tier).build().unwrap();
    let request = RestoreRequest::builder()
        .days(1)
        .glacier_job_parameters(parameters)
        .build();
    let asked = client
        .restore_object()
        .bucket(BUCKET)
        .key(key)
        .restore_request(request)
        .send()
        .await;
    match asked {
        Ok(_) => tally.restores += 1,
        Err(error) if is_slow_down(&error) => tally.slow_downs += 1,
        Err(error) => {
            let answer = (status(&error), code(&error));
            let documented = [
                (403, "InvalidObjectState".to_string()),
                (409, "RestoreAlreadyInProgress".to_string()),
                (503, "GlacierExpeditedRetrievalNotAvailable".to_string()),
            ];
            assert!(
                documented.contains(&answer),
                "client {id}: RestoreObject {key}: {error:?}"
            );
            tally.restores_refused += 1;
        }
    }
}

async fn listed_keys(client: &Client) -> Vec<String> {
    let mut keys = Vec::new();
    let mut pages = client
        .list_objects_v2()
        .bucket(BUCKET)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.expect("a listing page");
        keys.extend(
            page.contents()
                .iter()
                .filter_map(|object| object.key().map(str::to_string)),
        );
    }
    keys
}

async fn sample_memory(stop: Arc<std::sync::atomic::AtomicBool>) -> Vec<u64> {
    let mut samples = Vec::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        samples.push(resident_mib());
        // wall-clock: the sampler's period; the load runs on its own and is awaited elsewhere.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    samples
}

/// The soak is a load of real duration: while it runs, the store's clock (the harness's manual
/// clock) follows the wall clock, so upkeep's half-second ticks and two-second migration age
/// happen as they would in a server.
async fn follow_wall_clock(
    clock: Arc<spinwise_store::clock::ManualClock>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut last = Instant::now();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        // wall-clock: the soak's store clock follows real time (the load has a real duration).
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Instant::now();
        clock.advance(now - last);
        last = now;
    }
}

async fn start_soak_server() -> Harness {
    let mut store_config = config(None);
    // Ticks every half second, migrating whatever has been staged for two seconds.
    store_config.upkeep.migrate_after_s = 2.0;
    // The soak's PUTs name no storage class; they go cold (as `serve --default-storage-class
    // GLACIER` makes them) so that upkeep migrates underneath the load.
    let settings = S3Settings {
        default_tier: spinwise_catalog::Tier::Cold,
        ..S3Settings::default()
    };
    start_with(store_config, settings).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_mixing_puts_gets_and_deletes_lose_nothing_and_memory_stays_flat() {
    let harness = start_soak_server().await;
    let upkeep = harness.store.start_upkeep().await.unwrap();
    harness
        .client
        .create_bucket()
        .bucket(BUCKET)
        .send()
        .await
        .unwrap();
    let seconds = soak_seconds();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let stop_sampling = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = tokio::spawn(sample_memory(Arc::clone(&stop_sampling)));
    let follower = tokio::spawn(follow_wall_clock(
        harness.clock.clone(),
        Arc::clone(&stop_sampling),
    ));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client_loop(harness.client.clone(), id, until)))
        .collect();
    let mut expected = Expected::new();
    let mut total = Tally::default();
    for client in clients {
        let (keys, tally) = client.await.expect("a client task");
        expected.extend(keys);
        total.puts += tally.puts;
        total.gets += tally.gets;
        total.deletes += tally.deletes;
        total.restores += tally.restores;
        total.restores_refused += tally.restores_refused;
        total.slow_downs += tally.slow_downs;
        total.bytes_put += tally.bytes_put;
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    stop_sampling.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.await.unwrap();
    follower.await.unwrap();
    let report = upkeep.stop().await;
    let status_now = harness.store.status().await.unwrap();
    println!(
        "soak: {seconds} s, {CLIENTS} clients: {total:?}, {:.0} requests/s, {:.1} MB/s put; \
         upkeep: {} objects migrated, errors {:?}; store: {} objects, {} staged",
        (total.puts + total.gets + total.deletes + total.restores + total.restores_refused) as f64
            / elapsed_s,
        total.bytes_put as f64 / elapsed_s / 1e6,
        report.duties.objects_migrated,
        report.errors,
        status_now.objects,
        status_now.staged_objects,
    );

    assert!(
        total.puts > CLIENTS && total.gets > CLIENTS,
        "too little work: {total:?}"
    );
    assert!(
        report.duties.objects_migrated > 0,
        "nothing migrated under load: {report:?}"
    );
    let mut listed = listed_keys(&harness.client).await;
    listed.sort();
    let acknowledged: Vec<String> = expected.keys().cloned().collect();
    assert_eq!(
        listed, acknowledged,
        "the bucket lists other keys than were acknowledged"
    );
    for (key, &(size, seed)) in &expected {
        let output = harness
            .client
            .get_object()
            .bucket(BUCKET)
            .key(key)
            .send()
            .await
            .unwrap();
        let bytes = output.body.collect().await.unwrap().into_bytes();
        assert!(
            bytes[..] == pattern(size, seed)[..],
            "{key} reads back other bytes"
        );
    }

    let quarter = samples.len() / 4;
    let settled_mib = samples[..quarter.max(1)].iter().max().copied().unwrap_or(0);
    let late_mib = samples[samples.len() / 2..]
        .iter()
        .max()
        .copied()
        .unwrap_or(0);
    println!(
        "soak: resident MiB: peak of the first quarter {settled_mib}, of the second half {late_mib}, samples {samples:?}"
    );
    assert!(
        late_mib <= settled_mib + 64,
        "memory grew from {settled_mib} MiB to {late_mib} MiB"
    );
}
