//! Glacier-style restores through aws-sdk-s3, with an emulated spin-up: async buckets refuse
//! GETs of migrated objects until RestoreObject brought a verified copy back (HEAD shows the
//! restore ongoing, then its expiry), the copy serves whole and ranged GETs and expires; sync
//! buckets wait for the spin-up; bucket tagging switches the mode; concurrent restores of one
//! group share a spin-up; Bulk restores wait for a spin-up that happens anyway (or their
//! deadline, across a restart), as the restore metrics show; Expedited restores make a busy
//! group yield and finish ahead of a waiting Standard one, and beyond their limit get 503
//! GlacierExpeditedRetrievalNotAvailable; copies of a GLACIER object are refused until restored and then read
//! the copy; RestoreObject's errors; a finished restore survives a restart; a
//! restore the scheduler's full queue refuses waits and finishes later.

use crate::common;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_s3::error::BoxError;
use aws_sdk_s3::types::builders::RestoreRequestBuilder;
use aws_sdk_s3::types::{
    CompletedMultipartUpload, CompletedPart, GlacierJobParameters, RestoreRequest, StorageClass,
    Tag, Tagging, Tier,
};
use common::cold::{count_ups_during, migrated_group, rest_group};
use common::{
    Harness, code, eventually, get_bytes, get_error, pattern, put, restart, sample, start_with,
    status,
};
use spinwise_catalog::{Catalog, ObjectLocation};
use spinwise_s3::metrics::S3Metrics;
use spinwise_s3::{RestoreMode, S3Settings};
use spinwise_sched::scheduler::Kind;
use spinwise_store::StoreConfig;
use spinwise_store::driver::{GroupDisks, GroupPhase, Job, JobHandle};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Spin-ups of about 0.4 s: long enough to see a restore ongoing, short enough for CI.
const TIME_FACTOR: f64 = 0.02;
const WAIT: Duration = Duration::from_secs(60);

fn config() -> StoreConfig {
    let mut config = common::config(None);
    config.time_factor = TIME_FACTOR;
    config
}

fn settings(mode: RestoreMode, day_s: u64) -> S3Settings {
    S3Settings {
        default_restore_mode: mode,
        restore_day_s: day_s,
        ..S3Settings::default()
    }
}

/// Records the HTTP status of every response of the operation it is attached to.
#[derive(Clone, Debug, Default)]
struct Statuses(Arc<Mutex<Vec<u16>>>);

impl Intercept for Statuses {
    fn name(&self) -> &'static str {
        "Statuses"
    }
    fn read_after_transmit(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let status = context.response().status().as_u16();
        self.0.lock().unwrap().push(status);
        Ok(())
    }
}

/// RestoreObject with `days`; the HTTP status on success, the error code otherwise.
async fn restore(client: &Client, bucket: &str, key: &str, days: i32) -> Result<u16, String> {
    restore_asking(client, bucket, key, RestoreRequest::builder().days(days)).await
}

/// RestoreObject with Days 1 and `tier` as `GlacierJobParameters/Tier` (as the aws CLI sends it).
async fn restore_tier(client: &Client, bucket: &str, key: &str, tier: Tier) -> Result<u16, String> {
    let parameters = GlacierJobParameters::builder().tier(tier).build().unwrap();
    let request = RestoreRequest::builder()
        .days(1)
        .glacier_job_parameters(parameters);
    restore_asking(client, bucket, key, request).await
}

/// RestoreObject with `request`; the HTTP status on success, the error code otherwise.
async fn restore_asking(
    client: &Client,
    bucket: &str,
    key: &str,
    request: RestoreRequestBuilder,
) -> Result<u16, String> {
    let statuses = Statuses::default();
    let result = client
        .restore_object()
        .bucket(bucket)
        .key(key)
        .restore_request(request.build())
        .customize()
        .interceptor(statuses.clone())
        .send()
        .await;
    match result {
        Ok(_) => Ok(*statuses.0.lock().unwrap().last().unwrap()),
        Err(error) => Err(format!("{} {}", status(&error), code(&error))),
    }
}

async fn restore_header(client: &Client, bucket: &str, key: &str) -> Option<String> {
    let head = client
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class, Some(StorageClass::Glacier));
    head.restore
}

/// Polls HEAD until the restore is no longer ongoing (its read takes real disk time); returns
/// the final header.
async fn wait_restored(client: &Client, bucket: &str, key: &str) -> String {
    let mut last = String::new();
    eventually(&format!("the restore of {key} finished"), async || {
        let header = restore_header(client, bucket, key).await;
        last = header.unwrap_or_else(|| panic!("the restore of {key} vanished"));
        assert!(last.contains("ongoing-request="), "{last}");
        last.contains("ongoing-request=\"false\"")
    })
    .await;
    last
}

fn restored_files(data_dir: &Path) -> usize {
    std::fs::read_dir(data_dir.join(spinwise_s3::restore::RESTORED_DIR))
        .unwrap()
        .count()
}

/// Creates `bucket` with `keys` (each `size_bytes` of a pattern seeded from `first_seed` on)
/// and migrates them together; returns the keys with their bytes.
async fn migrated_objects<'k>(
    harness: &Harness,
    bucket: &str,
    keys: &[&'k str],
    first_seed: u64,
    size_bytes: usize,
) -> Vec<(&'k str, Vec<u8>)> {
    let client = &harness.client;
    client.create_bucket().bucket(bucket).send().await.unwrap();
    let objects: Vec<(&str, Vec<u8>)> = keys
        .iter()
        .zip(first_seed..)
        .map(|(key, seed)| (*key, pattern(size_bytes, seed)))
        .collect();
    for (key, bytes) in &objects {
        put(client, bucket, key, bytes).await;
    }
    common::cold::migrate_everything(&harness.store).await;
    objects
}

async fn cold_object(harness: &Harness, bucket: &str, key: &str, bytes: &[u8]) {
    let client = &harness.client;
    client.create_bucket().bucket(bucket).send().await.unwrap();
    put(client, bucket, key, bytes).await;
    common::cold::migrate_everything(&harness.store).await;
    let group = migrated_group(&harness.store, &format!("{bucket}/{key}")).await;
    rest_group(&harness.store, group).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_bucket_refuses_cold_gets_until_a_restore_then_serves_the_copy_until_it_expires() {
    // A restore "day" of 3 s.
    let harness = start_with(config(), settings(RestoreMode::Async, 3)).await;
    let client = &harness.client;
    let bytes = pattern(3 << 20, 11);
    cold_object(&harness, "vault", "tape.bin", &bytes).await;

    assert_eq!(
        get_error(client, "vault", "tape.bin").await,
        "403 InvalidObjectState"
    );
    assert_eq!(restore_header(client, "vault", "tape.bin").await, None);

    assert_eq!(restore(client, "vault", "tape.bin", 1).await, Ok(202));
    let ongoing = restore_header(client, "vault", "tape.bin").await;
    assert_eq!(ongoing.as_deref(), Some("ongoing-request=\"true\""));
    assert_eq!(
        restore(client, "vault", "tape.bin", 1).await,
        Err("409 RestoreAlreadyInProgress".into())
    );
    assert_eq!(
        get_error(client, "vault", "tape.bin").await,
        "403 InvalidObjectState"
    );

    let done = wait_restored(client, "vault", "tape.bin").await;
    assert!(
        done.starts_with("ongoing-request=\"false\", expiry-date=\""),
        "{done}"
    );
    assert!(done.ends_with(" GMT\""), "{done}");
    assert!(get_bytes(client, "vault", "tape.bin", None).await == bytes);
    let middle = get_bytes(client, "vault", "tape.bin", Some("bytes=1000000-2099999")).await;
    assert!(middle[..] == bytes[1_000_000..2_100_000]);
    let tail = get_bytes(client, "vault", "tape.bin", Some("bytes=-10")).await;
    assert!(tail[..] == bytes[bytes.len() - 10..]);
    let get = client
        .get_object()
        .bucket("vault")
        .key("tape.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(get.storage_class, Some(StorageClass::Glacier));
    assert_eq!(restored_files(&harness.data_dir), 1);

    // Asked again once finished: 200 and the expiry moves out (never in).
    harness.advance(Duration::from_millis(1100)).await;
    assert_eq!(restore(client, "vault", "tape.bin", 1).await, Ok(200));
    let extended = restore_header(client, "vault", "tape.bin").await.unwrap();
    assert_ne!(extended, done, "the expiry was not extended");

    // Until its extended expiry (a 3 s day from the second request) the copy serves GETs...
    harness.advance(Duration::from_millis(2999)).await;
    assert_eq!(get_error_or_bytes(client).await, Ok(()), "expired early");
    // ...then it is gone: GET refuses again and the sweeper removed the file.
    harness.advance(Duration::from_millis(2)).await;
    assert_eq!(
        get_error(client, "vault", "tape.bin").await,
        "403 InvalidObjectState"
    );
    assert_eq!(restore_header(client, "vault", "tape.bin").await, None);
    // Within one sweep (a day/8) of the expiry, the sweeper removes the file.
    harness.advance(Duration::from_millis(375)).await;
    assert_eq!(
        restored_files(&harness.data_dir),
        0,
        "the sweeper did not remove the copy"
    );
    harness.server.stop().await;
}

async fn get_error_or_bytes(client: &Client) -> Result<(), ()> {
    match client
        .get_object()
        .bucket("vault")
        .key("tape.bin")
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(_) => Err(()),
    }
}

fn tagging(tags: &[(&str, &str)]) -> Tagging {
    let tags = tags
        .iter()
        .map(|(k, v)| Tag::builder().key(*k).value(*v).build().unwrap())
        .collect();
    Tagging::builder().set_tag_set(Some(tags)).build().unwrap()
}

/// The storage class HEAD and ListObjectsV2 report for `key` (asserted to agree).
async fn storage_class_of(client: &Client, bucket: &str, key: &str) -> String {
    let head = client
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let listed = client
        .list_objects_v2()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .unwrap();
    let class = head.storage_class.expect("HEAD names a storage class");
    assert_eq!(
        listed.contents()[0].storage_class().map(|c| c.as_str()),
        Some(class.as_str())
    );
    class.as_str().to_string()
}

async fn tags_of(client: &Client, bucket: &str) -> Vec<(String, String)> {
    let output = client
        .get_bucket_tagging()
        .bucket(bucket)
        .send()
        .await
        .unwrap();
    let mut tags: Vec<(String, String)> = output
        .tag_set()
        .iter()
        .map(|t| (t.key().to_string(), t.value().to_string()))
        .collect();
    tags.sort();
    tags
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_bucket_gets_wait_for_the_spin_up_and_tagging_switches_the_mode_and_storage_class() {
    let harness = start_with(config(), settings(RestoreMode::Sync, 86_400)).await;
    let client = &harness.client;
    let bytes = pattern(1 << 20, 12);
    cold_object(&harness, "mixed", "a.bin", &bytes).await;
    let ups = count_ups_during(&harness.store, async {
        assert!(get_bytes(client, "mixed", "a.bin", None).await == bytes);
    })
    .await;
    assert_eq!(ups, 1, "the sync GET did not wait for a spin-up");
    assert_eq!(
        tags_of(client, "mixed").await,
        vec![("spinwise-restore-mode".into(), "sync".into())]
    );
    // A GET serves it, so it is Glacier Instant Retrieval to clients (no restore needed).
    assert_eq!(
        storage_class_of(client, "mixed", "a.bin").await,
        "GLACIER_IR"
    );

    client
        .put_bucket_tagging()
        .bucket("mixed")
        .tagging(tagging(&[
            ("team", "archive"),
            ("spinwise-restore-mode", "async"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(
        tags_of(client, "mixed").await,
        vec![
            ("spinwise-restore-mode".into(), "async".into()),
            ("team".into(), "archive".into())
        ]
    );
    assert_eq!(
        get_error(client, "mixed", "a.bin").await,
        "403 InvalidObjectState"
    );
    assert_eq!(storage_class_of(client, "mixed", "a.bin").await, "GLACIER");
    // A staged object is served in either mode.
    put(client, "mixed", "fresh.bin", b"staged bytes").await;
    assert_eq!(
        get_bytes(client, "mixed", "fresh.bin", None).await,
        b"staged bytes"
    );

    let bad = client
        .put_bucket_tagging()
        .bucket("mixed")
        .tagging(tagging(&[("spinwise-restore-mode", "sometimes")]))
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&bad), code(&bad).as_str()), (400, "InvalidTag"));

    // Deleting the tags keeps the mode; tagging `sync` brings cold GETs back.
    client
        .delete_bucket_tagging()
        .bucket("mixed")
        .send()
        .await
        .unwrap();
    assert_eq!(
        tags_of(client, "mixed").await,
        vec![("spinwise-restore-mode".into(), "async".into())]
    );
    client
        .put_bucket_tagging()
        .bucket("mixed")
        .tagging(tagging(&[("spinwise-restore-mode", "sync")]))
        .send()
        .await
        .unwrap();
    assert!(get_bytes(client, "mixed", "a.bin", None).await == bytes);
    assert_eq!(
        storage_class_of(client, "mixed", "a.bin").await,
        "GLACIER_IR"
    );
    assert_eq!(
        storage_class_of(client, "mixed", "fresh.bin").await,
        "STANDARD"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_restores_of_objects_in_one_group_share_one_spin_up() {
    let harness = start_with(config(), settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    client.create_bucket().bucket("pair").send().await.unwrap();
    let first = pattern(300_000, 21);
    let second = pattern(400_000, 22);
    put(client, "pair", "first", &first).await;
    put(client, "pair", "second", &second).await;
    common::cold::migrate_everything(&harness.store).await;
    let group = migrated_group(&harness.store, "pair/first").await;
    assert_eq!(
        migrated_group(&harness.store, "pair/second").await,
        group,
        "one bundle, one group"
    );
    rest_group(&harness.store, group).await;

    let ups = count_ups_during(&harness.store, async {
        let (a, b) = tokio::join!(
            restore(client, "pair", "first", 1),
            restore(client, "pair", "second", 1)
        );
        assert_eq!((a, b), (Ok(202), Ok(202)));
        wait_restored(client, "pair", "first").await;
        wait_restored(client, "pair", "second").await;
    })
    .await;
    assert_eq!(ups, 1, "two restores in one group took {ups} spin-ups");
    assert!(get_bytes(client, "pair", "first", None).await == first);
    assert!(get_bytes(client, "pair", "second", None).await == second);
    harness.server.stop().await;
}

/// CopyObject of `source` in bucket "vault" to `target`: the error as "status code" if refused.
async fn copy(client: &Client, source: &str, target: &str) -> Result<(), String> {
    let copied = client
        .copy_object()
        .bucket("vault")
        .key(target)
        .copy_source(format!("vault/{source}"))
        .send()
        .await;
    copied
        .map(|_| ())
        .map_err(|error| format!("{} {}", status(&error), code(&error)))
}

/// UploadPartCopy of bytes 1000.. of `source` as part 1 of a new upload to `target`, then
/// CompleteMultipartUpload: the error as "status code" if the part copy is refused.
async fn part_copy(client: &Client, source: &str, target: &str) -> Result<(), String> {
    let upload = client
        .create_multipart_upload()
        .bucket("vault")
        .key(target)
        .send()
        .await
        .unwrap();
    let upload_id = upload.upload_id().unwrap();
    let part = client
        .upload_part_copy()
        .bucket("vault")
        .key(target)
        .upload_id(upload_id)
        .part_number(1)
        .copy_source(format!("vault/{source}"))
        .copy_source_range("bytes=1000-")
        .send()
        .await
        .map_err(|error| format!("{} {}", status(&error), code(&error)))?;
    let etag = part.copy_part_result().and_then(|r| r.e_tag()).unwrap();
    let parts = CompletedMultipartUpload::builder()
        .parts(CompletedPart::builder().part_number(1).e_tag(etag).build())
        .build();
    client
        .complete_multipart_upload()
        .bucket("vault")
        .key(target)
        .upload_id(upload_id)
        .multipart_upload(parts)
        .send()
        .await
        .unwrap();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_a_glacier_object_are_refused_until_restored_then_read_the_copy_without_a_spin_up()
 {
    let harness = start_with(config(), settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    let bytes = pattern(2 << 20, 31);
    cold_object(&harness, "vault", "tape.bin", &bytes).await;
    let group = migrated_group(&harness.store, "vault/tape.bin").await;

    let refused = count_ups_during(&harness.store, async {
        let refusal = Err("403 InvalidObjectState".to_string());
        assert_eq!(copy(client, "tape.bin", "copy.bin").await, refusal);
        assert_eq!(part_copy(client, "tape.bin", "part.bin").await, refusal);
    })
    .await;
    assert_eq!(refused, 0, "a refused copy spun a group up");
    assert_eq!(
        get_error(client, "vault", "copy.bin").await,
        "404 NoSuchKey"
    );

    assert_eq!(restore(client, "vault", "tape.bin", 1).await, Ok(202));
    wait_restored(client, "vault", "tape.bin").await;
    rest_group(&harness.store, group).await;
    let ups = count_ups_during(&harness.store, async {
        assert_eq!(copy(client, "tape.bin", "copy.bin").await, Ok(()));
        assert_eq!(part_copy(client, "tape.bin", "part.bin").await, Ok(()));
    })
    .await;
    assert_eq!(ups, 0, "copies of a restored object spun {ups} groups up");
    assert!(get_bytes(client, "vault", "copy.bin", None).await == bytes);
    assert!(get_bytes(client, "vault", "part.bin", None).await[..] == bytes[1000..]);
    harness.server.stop().await;
}

/// Is the restore of `key` still ongoing?
async fn ongoing(client: &Client, bucket: &str, key: &str) -> bool {
    let header = restore_header(client, bucket, key).await;
    header.as_deref() == Some("ongoing-request=\"true\"")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_restores_wait_for_a_spin_up_that_happens_anyway_and_ride_it() {
    let harness = start_with(config(), settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    let objects =
        migrated_objects(&harness, "bulk", &["first", "second", "third"], 21, 300_000).await;
    let group = migrated_group(&harness.store, "bulk/first").await;
    for (key, _) in &objects {
        let store_key = format!("bulk/{key}");
        assert_eq!(migrated_group(&harness.store, &store_key).await, group);
    }
    rest_group(&harness.store, group).await;
    let metrics =
        S3Metrics::new(Arc::clone(&harness.store)).with_restores(Arc::clone(&harness.restorer));

    // Two Bulk restores queue nothing: after several spin-up times they still wait.
    let waited = count_ups_during(&harness.store, async {
        assert_eq!(
            restore_tier(client, "bulk", "first", Tier::Bulk).await,
            Ok(202)
        );
        assert_eq!(
            restore_tier(client, "bulk", "second", Tier::Bulk).await,
            Ok(202)
        );
        // Most of the 12-hour Bulk wait passes on the store's clock: nothing is queued yet.
        harness.advance(Duration::from_secs(12 * 3600 - 60)).await;
        assert!(ongoing(client, "bulk", "first").await);
        assert!(ongoing(client, "bulk", "second").await);
    })
    .await;
    assert_eq!(waited, 0, "Bulk restores spun their group up on their own");
    let scraped = metrics.scrape().await.unwrap();
    let waiting = sample(&scraped, "spinwise_restores_waiting_for_spin_up");
    assert_eq!(waiting, Some(2.0), "{scraped}");
    let ongoing_bulk = "spinwise_restores{state=\"ongoing\",tier=\"Bulk\"}";
    assert_eq!(sample(&scraped, ongoing_bulk), Some(2.0), "{scraped}");

    // A Standard restore in the same group spins it up; the Bulk ones ride that spin-up.
    let ridden = count_ups_during(&harness.store, async {
        let standard = restore_tier(client, "bulk", "third", Tier::Standard).await;
        assert_eq!(standard, Ok(202));
        for (key, _) in &objects {
            wait_restored(client, "bulk", key).await;
        }
    })
    .await;
    assert_eq!(
        ridden, 1,
        "three restores in one group took {ridden} spin-ups"
    );
    let scraped = metrics.scrape().await.unwrap();
    let expected = [
        ("spinwise_restores_waiting_for_spin_up", 0.0),
        ("spinwise_restores{state=\"ongoing\",tier=\"Bulk\"}", 0.0),
        ("spinwise_restores{state=\"done\",tier=\"Bulk\"}", 2.0),
        ("spinwise_restores{state=\"done\",tier=\"Standard\"}", 1.0),
        (
            "spinwise_restore_bytes{state=\"done\",tier=\"Bulk\"}",
            600_000.0,
        ),
    ];
    for (series, value) in expected {
        assert_eq!(
            sample(&scraped, series),
            Some(value),
            "{series}:\n{scraped}"
        );
    }
    for (key, bytes) in &objects {
        assert!(get_bytes(client, "bulk", key, None).await == *bytes);
    }
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_beyond_the_ongoing_limit_is_slowed_down_and_starts_nothing() {
    let settings = S3Settings {
        restore_max_ongoing: 1,
        ..settings(RestoreMode::Async, 86_400)
    };
    let harness = start_with(config(), settings).await;
    let client = &harness.client;
    client.create_bucket().bucket("few").send().await.unwrap();
    put(client, "few", "waits", &pattern(100_000, 61)).await;
    put(client, "few", "next", &pattern(100_000, 62)).await;
    common::cold::migrate_everything(&harness.store).await;
    let group = migrated_group(&harness.store, "few/waits").await;
    rest_group(&harness.store, group).await;

    // A Bulk restore of a resting group stays ongoing: the one restore allowed.
    assert_eq!(
        restore_tier(client, "few", "waits", Tier::Bulk).await,
        Ok(202)
    );
    assert_eq!(
        restore(client, "few", "next", 1).await,
        Err("503 SlowDown".into())
    );
    assert!(ongoing(client, "few", "waits").await);
    assert_eq!(restore_header(client, "few", "next").await, None);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_restore_no_spin_up_comes_for_starts_at_its_deadline_even_across_a_restart() {
    let settings = S3Settings {
        restore_bulk_wait_s: 4,
        ..settings(RestoreMode::Async, 86_400)
    };
    let harness = start_with(config(), settings.clone()).await;
    let bytes = pattern(700_000, 51);
    cold_object(&harness, "late", "tape.bin", &bytes).await;
    let asked = restore_tier(&harness.client, "late", "tape.bin", Tier::Bulk).await;
    assert_eq!(asked, Ok(202));
    harness.advance(Duration::from_secs(1)).await;
    assert!(ongoing(&harness.client, "late", "tape.bin").await);

    // The wait survives a restart and keeps its deadline (request time + 4 s): a millisecond
    // before it nothing spins up, at it the read is queued and spins the group up once.
    let harness = restart(harness, settings).await;
    let client = &harness.client;
    assert!(ongoing(client, "late", "tape.bin").await);
    let early = count_ups_during(&harness.store, async {
        harness.advance(Duration::from_millis(2999)).await;
        assert!(ongoing(client, "late", "tape.bin").await);
    })
    .await;
    assert_eq!(early, 0, "started before its deadline");
    let ups = count_ups_during(&harness.store, async {
        harness.advance(Duration::from_millis(1)).await;
        wait_restored(client, "late", "tape.bin").await;
    })
    .await;
    assert_eq!(ups, 1, "the deadline was not kept");
    assert!(get_bytes(client, "late", "tape.bin", None).await == bytes);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_object_refuses_standard_objects_unknown_keys_bad_days_and_overflowing_capacity() {
    let mut settings = settings(RestoreMode::Async, 86_400);
    settings.restore_capacity_bytes = 1 << 20;
    settings.restore_max_days = 10;
    let harness = start_with(config(), settings).await;
    let client = &harness.client;
    let big = pattern(2 << 20, 31);
    cold_object(&harness, "rules", "big.bin", &big).await;
    put(client, "rules", "staged.txt", b"still warm").await;

    assert_eq!(
        restore(client, "rules", "staged.txt", 1).await,
        Err("403 InvalidObjectState".into())
    );
    assert_eq!(
        restore(client, "rules", "missing", 1).await,
        Err("404 NoSuchKey".into())
    );
    assert_eq!(
        restore(client, "rules", "big.bin", 0).await,
        Err("400 InvalidArgument".into())
    );
    assert_eq!(
        restore(client, "rules", "big.bin", 11).await,
        Err("400 InvalidArgument".into())
    );
    assert_eq!(
        restore_tier(client, "rules", "big.bin", Tier::from("Fast")).await,
        Err("400 InvalidArgument".into())
    );
    let two_tiers = RestoreRequest::builder()
        .days(1)
        .tier(Tier::Bulk)
        .glacier_job_parameters(
            GlacierJobParameters::builder()
                .tier(Tier::Standard)
                .build()
                .unwrap(),
        );
    assert_eq!(
        restore_asking(client, "rules", "big.bin", two_tiers).await,
        Err("400 InvalidArgument".into())
    );
    // 2 MiB does not fit the 1 MiB of restored copies.
    assert_eq!(
        restore(client, "rules", "big.bin", 1).await,
        Err("503 SlowDown".into())
    );
    assert_eq!(restore_header(client, "rules", "big.bin").await, None);
    assert_eq!(restored_files(&harness.data_dir), 0);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_restore_survives_a_restart_and_deleting_the_object_drops_its_copy() {
    let settings = settings(RestoreMode::Async, 86_400);
    let harness = start_with(config(), settings.clone()).await;
    let bytes = pattern(1_500_000, 41);
    cold_object(&harness, "keep", "doc.bin", &bytes).await;
    assert_eq!(
        restore(&harness.client, "keep", "doc.bin", 2).await,
        Ok(202)
    );
    let done = wait_restored(&harness.client, "keep", "doc.bin").await;

    let harness = restart(harness, settings).await;
    let client = &harness.client;
    assert_eq!(restore_header(client, "keep", "doc.bin").await, Some(done));
    assert_eq!(
        tags_of(client, "keep").await,
        vec![("spinwise-restore-mode".into(), "async".into())]
    );
    let ups = count_ups_during(&harness.store, async {
        assert!(get_bytes(client, "keep", "doc.bin", None).await == bytes);
    })
    .await;
    assert_eq!(ups, 0, "the restored copy was not what served the GET");

    client
        .delete_object()
        .bucket("keep")
        .key("doc.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(restored_files(&harness.data_dir), 0);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_that_cannot_read_the_object_fails_shows_no_expiry_and_can_be_retried() {
    let harness = start_with(config(), settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    let bytes = pattern(500_000, 51);
    cold_object(&harness, "lost", "gone.bin", &bytes).await;
    // Three of the blob's five stacks removed: more than erasure 3 + 2 can rebuild.
    let record = harness.store.stat("lost/gone.bin").await.unwrap();
    let ObjectLocation::Migrated { blob, .. } = record.location else {
        panic!("staged");
    };
    let blob = harness.store.catalog().blob(blob).await.unwrap().unwrap();
    for (column, &disk) in blob.disks.iter().enumerate().take(3) {
        let path = spinwise_store::disk_directory(&harness.data_dir, disk as usize)
            .join(spinwise_store::stacks::stack_name(blob.id, column));
        std::fs::remove_file(path).unwrap();
    }

    assert_eq!(restore(client, "lost", "gone.bin", 1).await, Ok(202));
    let failed = wait_restored(client, "lost", "gone.bin").await;
    assert_eq!(
        failed, "ongoing-request=\"false\"",
        "a failure shows no expiry"
    );
    assert_eq!(
        get_error(client, "lost", "gone.bin").await,
        "403 InvalidObjectState"
    );
    assert_eq!(restored_files(&harness.data_dir), 0);
    // A new request retries (and, the bytes still being lost, fails again).
    assert_eq!(restore(client, "lost", "gone.bin", 1).await, Ok(202));
    let again = wait_restored(client, "lost", "gone.bin").await;
    assert_eq!(again, "ongoing-request=\"false\"");
    harness.server.stop().await;
}

/// A gate the test opens once; jobs wait on it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refused_by_a_full_scheduler_queue_waits_and_finishes_once_there_is_room() {
    let mut config = common::config(Some(1));
    config.time_factor = TIME_FACTOR;
    let harness = start_with(config, settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    let bytes = pattern(300_000, 61);
    cold_object(&harness, "busy", "later.bin", &bytes).await;
    let group = migrated_group(&harness.store, "busy/later.bin").await;
    // Jobs on the object's group that hold it until the gate opens, submitted until the
    // one-deep queue refuses one.
    let gate = Arc::new(Gate::default());
    let driver = &harness.store.rack_io().driver;
    let mut held = Vec::new();
    loop {
        let gate = gate.clone();
        let job = Job::new(group, 0, Kind::Client, move |_: &GroupDisks| gate.wait());
        match driver.submit(job).await {
            Ok(handle) => held.push(handle),
            Err(_) => break,
        }
        assert!(held.len() < 100, "the scheduler's queue never filled");
    }

    assert_eq!(restore(client, "busy", "later.bin", 1).await, Ok(202));
    // The restore's read is refused (the queue is full) and tried again later, every time
    // the store's clock passes its back-off; it stays ongoing instead of failing.
    for _ in 0..3 {
        harness.advance(Duration::from_secs(60)).await;
        assert_eq!(
            restore_header(client, "busy", "later.bin").await.as_deref(),
            Some("ongoing-request=\"true\"")
        );
    }
    assert_eq!(
        get_error(client, "busy", "later.bin").await,
        "403 InvalidObjectState"
    );
    gate.open();
    for handle in held {
        handle.wait().await.unwrap();
    }
    // Time moves on while the test waits: the next retry finds room.
    let mut header = String::new();
    eventually("the restore retried and finished", async || {
        harness.advance(Duration::from_secs(60)).await;
        header = restore_header(client, "busy", "later.bin").await.unwrap();
        header.contains("ongoing-request=\"false\"")
    })
    .await;
    assert!(header.contains("expiry-date"), "{header}");
    assert!(get_bytes(client, "busy", "later.bin", None).await == bytes);
    harness.server.stop().await;
}

/// Puts `key` (`bytes`) in `bucket` and migrates it into a group not in `taken` (migration
/// prefers a spinning group, so those are put to rest first); returns that group.
async fn cold_object_outside(
    harness: &Harness,
    bucket: &str,
    key: &str,
    bytes: &[u8],
    taken: &[u32],
) -> u32 {
    for _ in 0..5 {
        for group in taken {
            rest_group(&harness.store, *group).await;
        }
        put(&harness.client, bucket, key, bytes).await;
        common::cold::migrate_everything(&harness.store).await;
        let group = migrated_group(&harness.store, &format!("{bucket}/{key}")).await;
        if !taken.contains(&group) {
            return group;
        }
    }
    panic!("{key} never landed outside groups {taken:?}");
}

/// Submits a job on `group` that holds it until `gate` opens, and waits until it is served
/// (the group is up and busy).
async fn hold_group(harness: &Harness, group: u32, gate: &Arc<Gate>) -> JobHandle<()> {
    let started = Arc::new(tokio::sync::Notify::new());
    let (job_gate, job_started) = (gate.clone(), started.clone());
    let job = Job::new(group, 0, Kind::Client, move |_: &GroupDisks| {
        job_started.notify_one();
        job_gate.wait();
    });
    let handle = harness.store.rack_io().driver.submit(job).await.unwrap();
    tokio::time::timeout(WAIT, started.notified())
        .await
        .unwrap_or_else(|_| panic!("group {group} never served"));
    handle
}

/// Jobs in each stream of [`an_expedited_restore_makes_a_busy_group_yield_and_finishes_while_a_standard_one_waits`].
const JOBS_PER_STREAM: usize = 80;

/// Waits until no group has been spinning up for 600 ms: the groups that fit the budget are up.
async fn wait_for_full_budget(harness: &Harness) {
    let driver = &harness.store.rack_io().driver;
    let (since, mut quiet_since) = (Instant::now(), Instant::now());
    while quiet_since.elapsed() < Duration::from_millis(600) {
        let state = driver.state().await.unwrap();
        if state
            .groups
            .iter()
            .any(|g| g.phase == GroupPhase::SpinningUp)
        {
            quiet_since = Instant::now();
        }
        assert!(since.elapsed() < WAIT, "groups never stopped spinning up");
        // wall-clock: the emulated disks spin up in real time; quiet means none did for 600 ms.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expedited_restore_makes_a_busy_group_yield_and_finishes_while_a_standard_one_waits() {
    let harness = start_with(config(), settings(RestoreMode::Async, 86_400)).await;
    let client = &harness.client;
    client.create_bucket().bucket("tiers").send().await.unwrap();
    let (urgent, patient) = (pattern(400_000, 71), pattern(400_000, 72));
    let urgent_group = cold_object_outside(&harness, "tiers", "urgent", &urgent, &[]).await;
    let patient_group =
        cold_object_outside(&harness, "tiers", "patient", &patient, &[urgent_group]).await;
    let others: Vec<u32> = (0..10)
        .filter(|g| ![urgent_group, patient_group].contains(g))
        .collect();

    // Every other group streams 80 short jobs (~3 s each) queued behind each other: more
    // groups than the enclosure's power lets spin. Once the budget is full (no spin-up for
    // 600 ms), groups that are up stay up until their streams end.
    let driver = &harness.store.rack_io().driver;
    let streamed: Vec<Arc<AtomicUsize>> = others.iter().map(|_| Arc::default()).collect();
    let mut stream = Vec::new();
    for _ in 0..JOBS_PER_STREAM {
        for (&group, streamed) in others.iter().zip(&streamed) {
            let streamed = streamed.clone();
            let job = Job::new(group, 0, Kind::Client, move |_: &GroupDisks| {
                // wall-clock: the job stands for 40 ms of disk work holding the group.
                std::thread::sleep(Duration::from_millis(40));
                streamed.fetch_add(1, Ordering::SeqCst);
            });
            stream.push(driver.submit(job).await.unwrap());
        }
    }
    wait_for_full_budget(&harness).await;

    // A Standard restore waits for a stream to end.
    let standard = restore_tier(client, "tiers", "patient", Tier::Standard).await;
    assert_eq!(standard, Ok(202));
    // The streams hold the disks for real time, and no event says "not yet": 600 ms of them
    // wall-clock: a negative window showing the Standard restore is not served ahead.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(ongoing(client, "tiers", "patient").await);

    // An Expedited restore makes streaming groups yield after their jobs in hand and finishes
    // long before a stream would have: the Standard one is still waiting.
    assert_eq!(
        restore_tier(client, "tiers", "urgent", Tier::Expedited).await,
        Ok(202)
    );
    wait_restored(client, "tiers", "urgent").await;
    let done: Vec<usize> = streamed.iter().map(|s| s.load(Ordering::SeqCst)).collect();
    assert!(
        done.iter().all(|jobs| *jobs < JOBS_PER_STREAM),
        "a stream ended before the Expedited restore (jobs done per stream: {done:?})"
    );
    assert!(
        ongoing(client, "tiers", "patient").await,
        "the Standard restore finished before the Expedited one"
    );
    assert!(get_bytes(client, "tiers", "urgent", None).await == urgent);

    for handle in stream {
        handle.wait().await.unwrap();
    }
    wait_restored(client, "tiers", "patient").await;
    assert!(get_bytes(client, "tiers", "patient", None).await == patient);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expedited_restores_beyond_their_limit_get_glacier_expedited_retrieval_not_available() {
    let settings = S3Settings {
        restore_expedited_max_ongoing: 1,
        ..settings(RestoreMode::Async, 86_400)
    };
    let harness = start_with(config(), settings).await;
    let client = &harness.client;
    let objects = migrated_objects(&harness, "scarce", &["first", "second"], 81, 200_000).await;
    let group = migrated_group(&harness.store, "scarce/first").await;

    // The first Expedited restore stays ongoing behind a job that holds its group.
    let gate = Arc::new(Gate::default());
    let held = hold_group(&harness, group, &gate).await;
    let first = restore_tier(client, "scarce", "first", Tier::Expedited).await;
    assert_eq!(first, Ok(202));
    assert!(ongoing(client, "scarce", "first").await);

    // One more Expedited restore is refused and starts nothing; a Standard one is not limited.
    assert_eq!(
        restore_tier(client, "scarce", "second", Tier::Expedited).await,
        Err("503 GlacierExpeditedRetrievalNotAvailable".into())
    );
    assert_eq!(restore_header(client, "scarce", "second").await, None);
    assert_eq!(
        restore_tier(client, "scarce", "second", Tier::Standard).await,
        Ok(202)
    );

    gate.open();
    held.wait().await.unwrap();
    for (key, bytes) in &objects {
        wait_restored(client, "scarce", key).await;
        assert!(get_bytes(client, "scarce", key, None).await == *bytes);
    }
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expedited_restores_beyond_their_hourly_rate_get_503_with_the_wait_in_retry_after() {
    let settings = S3Settings {
        restore_expedited_per_hour: 1,
        ..settings(RestoreMode::Async, 86_400)
    };
    let harness = start_with(config(), settings).await;
    let client = &harness.client;
    let objects = migrated_objects(&harness, "rate", &["first", "second"], 91, 100_000).await;

    // One an hour: the first is started and finishes; the next, though none is ongoing, waits
    // for the hour's token, and the answer says how long.
    let first = restore_tier(client, "rate", "first", Tier::Expedited).await;
    assert_eq!(first, Ok(202));
    wait_restored(client, "rate", "first").await;
    let parameters = GlacierJobParameters::builder()
        .tier(Tier::Expedited)
        .build()
        .unwrap();
    let refused = client
        .restore_object()
        .bucket("rate")
        .key("second")
        .restore_request(
            RestoreRequest::builder()
                .days(1)
                .glacier_job_parameters(parameters)
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        (status(&refused), code(&refused)),
        (503, "GlacierExpeditedRetrievalNotAvailable".to_string())
    );
    let retry_after: u64 = refused
        .raw_response()
        .and_then(|r| r.headers().get("retry-after"))
        .expect("a Retry-After header")
        .parse()
        .unwrap();
    assert!(
        (3500..=3600).contains(&retry_after),
        "Retry-After {retry_after} s for a token an hour"
    );
    assert_eq!(restore_header(client, "rate", "second").await, None);

    // Standard restores are not rate-limited.
    let standard = restore_tier(client, "rate", "second", Tier::Standard).await;
    assert_eq!(standard, Ok(202));
    wait_restored(client, "rate", "second").await;
    assert!(get_bytes(client, "rate", "second", None).await == objects[1].1);
    harness.server.stop().await;
}
