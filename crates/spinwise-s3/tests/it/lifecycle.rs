//! Bucket lifecycle rules through aws-sdk-s3, with one-second "days" (`lifecycle_day_s = 1`)
//! on the store's manual clock, which each test advances (`Harness::advance`, which returns once
//! the sweeps that made due are done):
//! the configuration round-trips and survives a restart and bucket tagging; objects under a
//! rule's prefix expire once their age passes its Days (migrated ones without a spin-up), others
//! and disabled rules' stay; a PUT restarts an object's age; incomplete multipart uploads are
//! aborted after DaysAfterInitiation; what cannot be honoured is 501 and changes nothing; HEAD
//! and GET say when and by which rule an object expires (`x-amz-expiration`).

use crate::common;

use aws_sdk_s3::Client;
use aws_sdk_s3::primitives::{DateTime, DateTimeFormat};
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, ExpirationStatus,
    LifecycleExpiration, LifecycleRule, LifecycleRuleFilter, Tag, Tagging,
};
use common::cold::count_ups_during;
use common::{bucket, code, put, restart, start_with, status};
use spinwise_s3::S3Settings;
use std::time::Duration;

fn settings() -> S3Settings {
    S3Settings {
        lifecycle_day_s: 1,
        ..S3Settings::default()
    }
}

fn expire_rule(id: &str, prefix: &str, days: i32, enabled: bool) -> LifecycleRule {
    let status = match enabled {
        true => ExpirationStatus::Enabled,
        false => ExpirationStatus::Disabled,
    };
    LifecycleRule::builder()
        .id(id)
        .status(status)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .expiration(LifecycleExpiration::builder().days(days).build())
        .build()
        .unwrap()
}

fn abort_rule(id: &str, prefix: &str, days: i32) -> LifecycleRule {
    LifecycleRule::builder()
        .id(id)
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build())
        .abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(days)
                .build(),
        )
        .build()
        .unwrap()
}

async fn set_rules(client: &Client, bucket: &str, rules: Vec<LifecycleRule>) -> Result<(), String> {
    let configuration = BucketLifecycleConfiguration::builder()
        .set_rules(Some(rules))
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

/// The rules as GetBucketLifecycleConfiguration shows them: (id, prefix, days, enabled).
async fn rules_of(
    client: &Client,
    bucket: &str,
) -> Result<Vec<(String, String, i32, bool)>, String> {
    let output = client
        .get_bucket_lifecycle_configuration()
        .bucket(bucket)
        .send()
        .await
        .map_err(|error| format!("{} {}", status(&error), code(&error)))?;
    Ok(output
        .rules()
        .iter()
        .map(|rule| {
            let prefix = rule.filter().and_then(|f| f.prefix()).unwrap_or_default();
            let days = rule.expiration().and_then(|e| e.days()).unwrap_or(0);
            let enabled = rule.status() == &ExpirationStatus::Enabled;
            (
                rule.id().unwrap_or_default().to_string(),
                prefix.to_string(),
                days,
                enabled,
            )
        })
        .collect())
}

async fn exists(client: &Client, bucket: &str, key: &str) -> bool {
    client
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .is_ok()
}

/// Asserts that each of `keys` is there (`true`) or gone (`false`).
async fn assert_exist(client: &Client, bucket: &str, keys: &[&str], there: bool) {
    for key in keys {
        let what = if there {
            "expired early"
        } else {
            "did not expire"
        };
        assert_eq!(exists(client, bucket, key).await, there, "{key} {what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_round_trips_survives_tagging_and_a_restart_and_goes_with_its_bucket() {
    let harness = start_with(common::config(None), settings()).await;
    let client = &harness.client;
    bucket(&harness, "archive").await;
    assert_eq!(
        rules_of(client, "archive").await,
        Err("404 NoSuchLifecycleConfiguration".into())
    );
    let rules = vec![
        expire_rule("logs", "logs/", 30, true),
        expire_rule("paused", "tmp/", 1, false),
    ];
    set_rules(client, "archive", rules).await.unwrap();
    let expected = vec![
        ("logs".to_string(), "logs/".to_string(), 30, true),
        ("paused".to_string(), "tmp/".to_string(), 1, false),
    ];
    assert_eq!(rules_of(client, "archive").await.unwrap(), expected);

    // Bucket tagging shares the row; it must not drop the rules.
    let tag = Tag::builder().key("team").value("ops").build().unwrap();
    let tagging = Tagging::builder().tag_set(tag).build().unwrap();
    client
        .put_bucket_tagging()
        .bucket("archive")
        .tagging(tagging)
        .send()
        .await
        .unwrap();
    assert_eq!(rules_of(client, "archive").await.unwrap(), expected);

    // A rule that cannot be honoured is refused and the stored rules stay.
    let tagged = LifecycleRule::builder()
        .id("tagged")
        .status(ExpirationStatus::Enabled)
        .filter(
            LifecycleRuleFilter::builder()
                .tag(Tag::builder().key("k").value("v").build().unwrap())
                .build(),
        )
        .expiration(LifecycleExpiration::builder().days(1).build())
        .build()
        .unwrap();
    assert_eq!(
        set_rules(client, "archive", vec![tagged]).await,
        Err("501 NotImplemented".into())
    );
    let harness = restart(harness, settings()).await;
    let client = &harness.client;
    assert_eq!(rules_of(client, "archive").await.unwrap(), expected);
    assert_eq!(
        set_rules(client, "absent", vec![expire_rule("x", "", 1, true)]).await,
        Err("404 NoSuchBucket".into())
    );

    client
        .delete_bucket_lifecycle()
        .bucket("archive")
        .send()
        .await
        .unwrap();
    assert_eq!(
        rules_of(client, "archive").await,
        Err("404 NoSuchLifecycleConfiguration".into())
    );
    set_rules(client, "archive", vec![expire_rule("x", "", 5, true)])
        .await
        .unwrap();
    client
        .delete_bucket()
        .bucket("archive")
        .send()
        .await
        .unwrap();
    bucket(&harness, "archive").await;
    assert_eq!(
        rules_of(client, "archive").await,
        Err("404 NoSuchLifecycleConfiguration".into()),
        "a new bucket of the same name inherited the rules"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_under_a_rules_prefix_expire_without_a_spin_up_and_the_others_stay() {
    let harness = start_with(common::config(None), settings()).await;
    let client = &harness.client;
    bucket(&harness, "archive").await;
    for key in ["logs/a", "logs/b", "keep/c", "tmp/d", "logsx"] {
        put(client, "archive", key, key.as_bytes()).await;
    }
    // Migrated: their expiry must not wait for, nor cause, a spin-up.
    common::cold::migrate_everything(&harness.store).await;
    let rules = vec![
        expire_rule("logs", "logs/", 2, true),
        expire_rule("paused", "tmp/", 1, false),
    ];
    set_rules(client, "archive", rules).await.unwrap();
    // 2 days, rounded up to the next day boundary: gone after 3.5 days, not after 1.
    let ups = count_ups_during(&harness.store, async {
        harness.advance(Duration::from_secs(1)).await;
        assert_exist(client, "archive", &["logs/a", "logs/b"], true).await;
        harness.advance(Duration::from_millis(2500)).await;
        assert_exist(client, "archive", &["logs/a", "logs/b"], false).await;
    })
    .await;
    assert_eq!(ups, 0, "expiring migrated objects spun a group up");
    // Two more sweeps' worth of "days": the others are still there.
    harness.advance(Duration::from_millis(2500)).await;
    assert_exist(client, "archive", &["keep/c", "tmp/d", "logsx"], true).await;
    let listed = client
        .list_objects_v2()
        .bucket("archive")
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["keep/c", "logsx", "tmp/d"]);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_and_get_say_when_and_by_which_rule_an_object_expires() {
    let harness = start_with(common::config(None), S3Settings::default()).await;
    let client = &harness.client;
    bucket(&harness, "archive").await;
    put(client, "archive", "logs/a", b"log").await;
    put(client, "archive", "keep/b", b"kept").await;
    let rules = vec![
        expire_rule("logs", "logs/", 30, true),
        expire_rule("short-but-off", "logs/", 1, false),
    ];
    set_rules(client, "archive", rules).await.unwrap();

    let head = client
        .head_object()
        .bucket("archive")
        .key("logs/a")
        .send()
        .await
        .unwrap();
    let written_s = u64::try_from(head.last_modified().unwrap().secs()).unwrap();
    // Creation plus 30 days, rounded up to the next midnight UTC.
    let expiry_s = (written_s + 30 * 86_400).div_ceil(86_400) * 86_400;
    let date = DateTime::from_secs(i64::try_from(expiry_s).unwrap())
        .fmt(DateTimeFormat::HttpDate)
        .unwrap();
    let expected = format!("expiry-date=\"{date}\", rule-id=\"logs\"");
    assert_eq!(head.expiration(), Some(expected.as_str()));
    let get = client
        .get_object()
        .bucket("archive")
        .key("logs/a")
        .send()
        .await
        .unwrap();
    assert_eq!(get.expiration(), Some(expected.as_str()));
    let other = client
        .head_object()
        .bucket("archive")
        .key("keep/b")
        .send()
        .await
        .unwrap();
    assert_eq!(other.expiration(), None, "no rule covers keep/");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_restarts_an_objects_age() {
    let mut settings = settings();
    settings.lifecycle_day_s = 2;
    let harness = start_with(common::config(None), settings).await;
    let client = &harness.client;
    bucket(&harness, "archive").await;
    set_rules(client, "archive", vec![expire_rule("all", "", 1, true)])
        .await
        .unwrap();
    // With 2 s days an object lives 2 to 4 s; rewriting it every second keeps it young.
    for _ in 0..5 {
        put(client, "archive", "hot", b"rewritten").await;
        harness.advance(Duration::from_secs(1)).await;
        assert_exist(client, "archive", &["hot"], true).await;
    }
    harness.advance(Duration::from_secs(4)).await;
    assert_exist(client, "archive", &["hot"], false).await;
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incomplete_multipart_uploads_under_the_prefix_are_aborted_after_their_days() {
    let harness = start_with(common::config(None), settings()).await;
    let client = &harness.client;
    bucket(&harness, "archive").await;
    let start = |key: &'static str| async move {
        let created = client
            .create_multipart_upload()
            .bucket("archive")
            .key(key)
            .send()
            .await
            .unwrap();
        created.upload_id().unwrap().to_string()
    };
    let stale = start("uploads/big").await;
    let kept = start("other/big").await;
    set_rules(client, "archive", vec![abort_rule("stale", "uploads/", 1)])
        .await
        .unwrap();
    let open_ids = async || {
        let open = client
            .list_multipart_uploads()
            .bucket("archive")
            .send()
            .await
            .unwrap();
        let mut ids: Vec<String> = open
            .uploads()
            .iter()
            .filter_map(|u| u.upload_id().map(String::from))
            .collect();
        ids.sort();
        ids
    };
    let mut both = vec![stale.clone(), kept.clone()];
    both.sort();
    // A day is 1 s, rounded up to the next day boundary: not aborted before it, aborted
    // (the one outside the prefix kept) once two have passed.
    harness.advance(Duration::from_millis(500)).await;
    assert_eq!(open_ids().await, both, "aborted before its day");
    harness.advance(Duration::from_millis(2000)).await;
    assert_eq!(
        open_ids().await,
        [kept.as_str()],
        "the stale upload was not aborted"
    );
    let part = client
        .upload_part()
        .bucket("archive")
        .key("uploads/big")
        .upload_id(&stale)
        .part_number(1)
        .body(b"late".to_vec().into())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&part), "NoSuchUpload");
    harness.server.stop().await;
}
