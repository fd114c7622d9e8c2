//! Storage classes honoured through aws-sdk-s3: `STANDARD` and the other online classes stay in
//! the warm tier (staged, readable in an `async` bucket without a restore), `GLACIER`,
//! `DEEP_ARCHIVE` and `GLACIER_IR` go to the sleeping disks, multipart uploads and copies write
//! the class their request names, a lifecycle `Transition` moves a prefix cold (and one to an
//! online class is 501), and a full warm tier under `refuse` answers 503 SlowDown.

use crate::common;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, CompletedMultipartUpload, CompletedPart, ExpirationStatus,
    LifecycleRule, LifecycleRuleFilter, StorageClass, Transition, TransitionStorageClass,
};
use common::{bucket, code, get_bytes, pattern, put, start_with, status};
use spinwise_catalog::{ObjectLocation, Tier};
use spinwise_s3::{RestoreMode, S3Settings};
use spinwise_store::{SqliteStore, WarmConfig, WarmWhenFull};
use std::time::Duration;

async fn put_in_class(client: &Client, bucket: &str, key: &str, class: StorageClass, bytes: &[u8]) {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .storage_class(class)
        .body(ByteStream::from(bytes.to_vec()))
        .send()
        .await
        .unwrap();
}

async fn tier_of(store: &SqliteStore, bucket: &str, key: &str) -> (Tier, bool) {
    let record = store.stat(&format!("{bucket}/{key}")).await.unwrap();
    let staged = matches!(record.location, ObjectLocation::Staged { .. });
    (record.tier, staged)
}

fn async_settings() -> S3Settings {
    S3Settings {
        default_restore_mode: RestoreMode::Async,
        lifecycle_day_s: 1,
        ..S3Settings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_classes_stay_warm_and_readable_while_cold_classes_migrate_in_an_async_bucket() {
    let harness = start_with(common::config(None), async_settings()).await;
    let client = &harness.client;
    bucket(&harness, "repo").await;
    let bytes = pattern(20_000, 1);
    put(client, "repo", "config", &bytes).await;
    put_in_class(client, "repo", "index", StorageClass::StandardIa, &bytes).await;
    put_in_class(client, "repo", "pack", StorageClass::Glacier, &bytes).await;
    put_in_class(client, "repo", "deep", StorageClass::DeepArchive, &bytes).await;
    put_in_class(client, "repo", "instant", StorageClass::GlacierIr, &bytes).await;
    let report = harness.store.flush(|_| {}).await.unwrap();
    assert_eq!(report.objects_moved, 3, "{report:?}");
    for key in ["config", "index"] {
        assert_eq!(
            tier_of(&harness.store, "repo", key).await,
            (Tier::Warm, true),
            "{key}"
        );
        // Warm objects are online: an async bucket serves them with no restore.
        assert_eq!(get_bytes(client, "repo", key, None).await, bytes, "{key}");
    }
    for key in ["pack", "deep", "instant"] {
        assert_eq!(
            tier_of(&harness.store, "repo", key).await,
            (Tier::Cold, false),
            "{key}"
        );
    }
    let refused = client.get_object().bucket("repo").key("pack").send().await;
    let error = refused.expect_err("a GLACIER object in an async bucket needs a restore");
    assert_eq!(code(&error), "InvalidObjectState");
    let listed = client
        .list_objects_v2()
        .bucket("repo")
        .send()
        .await
        .unwrap();
    let classes: Vec<(&str, &str)> = listed
        .contents()
        .iter()
        .map(|object| {
            (
                object.key().unwrap(),
                object.storage_class().unwrap().as_str(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        [
            ("config", "STANDARD"),
            ("deep", "GLACIER"),
            ("index", "STANDARD"),
            ("instant", "GLACIER"),
            ("pack", "GLACIER"),
        ]
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_uploads_and_copies_write_the_class_their_request_names() {
    let harness = start_with(common::config(None), S3Settings::default()).await;
    let client = &harness.client;
    bucket(&harness, "bucket").await;
    let created = client
        .create_multipart_upload()
        .bucket("bucket")
        .key("big")
        .storage_class(StorageClass::Glacier)
        .send()
        .await
        .unwrap();
    let upload_id = created.upload_id().unwrap();
    let part = client
        .upload_part()
        .bucket("bucket")
        .key("big")
        .upload_id(upload_id)
        .part_number(1)
        .body(ByteStream::from(pattern(10_000, 2)))
        .send()
        .await
        .unwrap();
    let parts = CompletedMultipartUpload::builder()
        .parts(
            CompletedPart::builder()
                .part_number(1)
                .e_tag(part.e_tag().unwrap())
                .build(),
        )
        .build();
    client
        .complete_multipart_upload()
        .bucket("bucket")
        .key("big")
        .upload_id(upload_id)
        .multipart_upload(parts)
        .send()
        .await
        .unwrap();
    assert_eq!(tier_of(&harness.store, "bucket", "big").await.0, Tier::Cold);
    // A copy is in the class its request names, or STANDARD: never the source's.
    let copy = |target: &'static str, class: Option<StorageClass>| {
        client
            .copy_object()
            .bucket("bucket")
            .key(target)
            .copy_source("bucket/big")
            .set_storage_class(class)
            .send()
    };
    copy("warm-copy", None).await.unwrap();
    copy("cold-copy", Some(StorageClass::DeepArchive))
        .await
        .unwrap();
    assert_eq!(
        tier_of(&harness.store, "bucket", "warm-copy").await.0,
        Tier::Warm
    );
    assert_eq!(
        tier_of(&harness.store, "bucket", "cold-copy").await.0,
        Tier::Cold
    );
    harness.server.stop().await;
}

fn transition_rule(id: &str, prefix: &str, class: TransitionStorageClass) -> LifecycleRule {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .transitions(Transition::builder().days(1).storage_class(class).build())
        .build()
        .unwrap()
}

async fn set_rule(client: &Client, bucket: &str, rule: LifecycleRule) -> Result<(), String> {
    let configuration = BucketLifecycleConfiguration::builder()
        .rules(rule)
        .build()
        .unwrap();
    client
        .put_bucket_lifecycle_configuration()
        .bucket(bucket)
        .lifecycle_configuration(configuration)
        .send()
        .await
        .map(|_| ())
        .map_err(|error| format!("{} {}", status(&error), code(&error)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lifecycle_transition_moves_its_prefix_cold_and_leaves_the_rest_warm() {
    let harness = start_with(common::config(None), async_settings()).await;
    let client = &harness.client;
    bucket(&harness, "repo").await;
    let online = transition_rule("ia", "data/", TransitionStorageClass::StandardIa);
    assert_eq!(
        set_rule(client, "repo", online).await,
        Err("501 NotImplemented".into())
    );
    let archive = transition_rule("archive", "data/", TransitionStorageClass::Glacier);
    set_rule(client, "repo", archive).await.unwrap();
    let shown = client
        .get_bucket_lifecycle_configuration()
        .bucket("repo")
        .send()
        .await
        .unwrap();
    let transition = &shown.rules()[0].transitions()[0];
    assert_eq!(transition.days(), Some(1));
    assert_eq!(
        transition.storage_class(),
        Some(&TransitionStorageClass::Glacier)
    );
    let bytes = pattern(5_000, 3);
    put(client, "repo", "data/pack-1", &bytes).await;
    put(client, "repo", "keys/key-1", &bytes).await;
    // Not yet due: a "day" here is one second, rounded up to the next whole one.
    harness.advance(Duration::from_millis(100)).await;
    assert_eq!(
        tier_of(&harness.store, "repo", "data/pack-1").await.0,
        Tier::Warm
    );
    harness.advance(Duration::from_secs(3)).await;
    assert_eq!(
        tier_of(&harness.store, "repo", "data/pack-1").await.0,
        Tier::Cold
    );
    assert_eq!(
        tier_of(&harness.store, "repo", "keys/key-1").await.0,
        Tier::Warm
    );
    let report = harness.store.flush(|_| {}).await.unwrap();
    assert_eq!(report.objects_moved, 1, "{report:?}");
    assert_eq!(get_bytes(client, "repo", "keys/key-1", None).await, bytes);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_warm_tier_under_refuse_answers_503_slow_down_and_still_takes_glacier_puts() {
    let mut config = common::config(None);
    config.warm = WarmConfig {
        capacity_bytes: Some(10_000),
        when_full: WarmWhenFull::Refuse,
        ..WarmConfig::default()
    };
    let harness = start_with(config, S3Settings::default()).await;
    let client = &harness.client;
    bucket(&harness, "bucket").await;
    put(client, "bucket", "first", &pattern(12_000, 1)).await;
    let refused = client
        .put_object()
        .bucket("bucket")
        .key("second")
        .body(ByteStream::from(pattern(100, 2)))
        .send()
        .await
        .expect_err("the warm tier is full");
    assert_eq!(
        format!("{} {}", status(&refused), code(&refused)),
        "503 SlowDown"
    );
    put_in_class(
        client,
        "bucket",
        "cold",
        StorageClass::Glacier,
        &pattern(100, 3),
    )
    .await;
    harness.server.stop().await;
}
