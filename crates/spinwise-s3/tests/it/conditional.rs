//! Conditional requests through aws-sdk-s3: GET and HEAD answer 304 / 412 by If-None-Match,
//! If-Match and the dates (a 304 carries the validators and never spins a cold object's group
//! up); PutObject and CompleteMultipartUpload with `If-None-Match: *` create a key once and
//! never overwrite it, even when racing; `If-Match` overwrites only the named version; copies
//! check their source's conditions and copy nothing when they fail; DeleteObject's If-Match and
//! DeleteObjects' per-key ETag delete only the named version.

use crate::common;

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Delete, ObjectIdentifier};
use common::cold::{count_ups_during, migrated_group, rest_group};
use common::{Harness, bucket, code, get_bytes, pattern, put, start, status};
use spinwise_store::driver::GroupPhase;

/// The object's ETag and Last-Modified (whole seconds, as sent).
async fn validators(harness: &Harness, bucket: &str, key: &str) -> (String, DateTime) {
    let head = harness
        .client
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    (head.e_tag.unwrap(), head.last_modified.unwrap())
}

fn seconds_after(time: DateTime, seconds: i64) -> DateTime {
    DateTime::from_secs(time.secs() + seconds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_answers_304_or_412_by_etag_and_date_and_the_body_otherwise() {
    let harness = start().await;
    bucket(&harness, "cond").await;
    let bytes = pattern(70_000, 1);
    put(&harness.client, "cond", "a", &bytes).await;
    let (etag, modified) = validators(&harness, "cond", "a").await;
    let client = &harness.client;
    let get = || client.get_object().bucket("cond").key("a");

    let not_modified = get().if_none_match(&etag).send().await.unwrap_err();
    assert_eq!(status(&not_modified), 304);
    let headers = not_modified.raw_response().unwrap().headers();
    assert_eq!(
        headers.get("etag"),
        Some(etag.as_str()),
        "304 carries the ETag"
    );
    assert!(
        headers.get("last-modified").is_some(),
        "304 carries Last-Modified"
    );
    let echoed_date = get().if_modified_since(modified).send().await.unwrap_err();
    assert_eq!(status(&echoed_date), 304);

    let wrong_etag = get().if_match("\"0123\"").send().await.unwrap_err();
    assert_eq!(
        (status(&wrong_etag), code(&wrong_etag).as_str()),
        (412, "PreconditionFailed")
    );
    let modified_later = get()
        .if_unmodified_since(seconds_after(modified, -3600))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&modified_later), 412);

    let matching = get().if_match(&etag).send().await.unwrap();
    let body = matching.body.collect().await.unwrap().into_bytes();
    assert!(
        body == bytes,
        "If-Match with the current ETag serves the object"
    );
    // A false If-None-Match overrides a true If-Modified-Since (S3's precedence): 200.
    let fresh = get()
        .if_none_match("\"0123\"")
        .if_modified_since(seconds_after(modified, 3600))
        .send()
        .await
        .unwrap();
    assert_eq!(fresh.content_length, Some(bytes.len() as i64));
    let ranged = get().if_match(&etag).range("bytes=10-19").send().await;
    let ranged = ranged.unwrap().body.collect().await.unwrap().into_bytes();
    assert!(ranged[..] == bytes[10..20]);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_answers_304_and_412_like_get() {
    let harness = start().await;
    bucket(&harness, "cond").await;
    put(&harness.client, "cond", "a", b"head me").await;
    let (etag, _) = validators(&harness, "cond", "a").await;
    let head = || harness.client.head_object().bucket("cond").key("a");
    assert_eq!(
        status(&head().if_none_match(&etag).send().await.unwrap_err()),
        304
    );
    assert_eq!(
        status(&head().if_match("\"ffff\"").send().await.unwrap_err()),
        412
    );
    let ok = head().if_match(&etag).send().await.unwrap();
    assert_eq!(ok.content_length, Some(7));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_if_none_match_star_creates_a_key_once_and_never_overwrites_it() {
    let harness = start().await;
    bucket(&harness, "once").await;
    let client = &harness.client;
    let put_once = |bytes: Vec<u8>| {
        client
            .put_object()
            .bucket("once")
            .key("k")
            .if_none_match("*")
            .body(ByteStream::from(bytes))
            .send()
    };
    put_once(b"first".to_vec()).await.unwrap();
    let second = put_once(b"second".to_vec()).await.unwrap_err();
    assert_eq!(
        (status(&second), code(&second).as_str()),
        (412, "PreconditionFailed")
    );
    assert_eq!(get_bytes(client, "once", "k", None).await, b"first");

    // Racing creators of a fresh key: exactly one wins, and the key holds the winner's bytes.
    let bodies: Vec<Vec<u8>> = (0..6).map(|i| pattern(50_000, 100 + i)).collect();
    let racers = bodies.iter().map(|body| {
        client
            .put_object()
            .bucket("once")
            .key("race")
            .if_none_match("*")
            .body(ByteStream::from(body.clone()))
            .send()
    });
    let outcomes = futures::future::join_all(racers).await;
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i].is_ok())
        .collect();
    assert_eq!(winners.len(), 1, "one conditional create wins");
    for outcome in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(status(outcome), 412);
    }
    let stored = get_bytes(client, "once", "race", None).await;
    assert!(
        stored == bodies[winners[0]],
        "the key holds the winner's bytes"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_if_match_overwrites_only_the_named_version_and_never_creates() {
    let harness = start().await;
    bucket(&harness, "cas").await;
    let client = &harness.client;
    let first = put(&harness.client, "cas", "k", b"version 1").await;
    let put_if = |etag: &str, bytes: &'static [u8], key: &'static str| {
        client
            .put_object()
            .bucket("cas")
            .key(key)
            .if_match(etag)
            .body(ByteStream::from_static(bytes))
            .send()
    };
    put_if(&first, b"version 2", "k").await.unwrap();
    let stale = put_if(&first, b"version 3", "k").await.unwrap_err();
    assert_eq!(status(&stale), 412);
    assert_eq!(get_bytes(client, "cas", "k", None).await, b"version 2");

    let absent = put_if(&first, b"never", "absent").await.unwrap_err();
    assert_eq!(
        (status(&absent), code(&absent).as_str()),
        (404, "NoSuchKey")
    );
    let listed = client.list_objects_v2().bucket("cas").send().await.unwrap();
    assert_eq!(
        listed.key_count,
        Some(1),
        "a failed conditional PUT stores nothing"
    );

    // S3 takes only `*` in a write's If-None-Match.
    let named = client
        .put_object()
        .bucket("cas")
        .key("k")
        .if_none_match(&first)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&named), "NotImplemented");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_check_their_source_conditions_and_copy_nothing_when_they_fail() {
    let harness = start().await;
    bucket(&harness, "copy").await;
    let client = &harness.client;
    let etag = put(&harness.client, "copy", "source", b"source bytes").await;
    let refused = client
        .copy_object()
        .bucket("copy")
        .key("target")
        .copy_source("copy/source")
        .copy_source_if_none_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        (status(&refused), code(&refused).as_str()),
        (412, "PreconditionFailed")
    );
    let target = client.head_object().bucket("copy").key("target").send();
    assert_eq!(status(&target.await.unwrap_err()), 404, "nothing copied");

    client
        .copy_object()
        .bucket("copy")
        .key("target")
        .copy_source("copy/source")
        .copy_source_if_match(&etag)
        .send()
        .await
        .unwrap();
    assert_eq!(
        get_bytes(client, "copy", "target", None).await,
        b"source bytes"
    );

    let upload = client
        .create_multipart_upload()
        .bucket("copy")
        .key("parts")
        .send()
        .await
        .unwrap();
    let part_copy = client
        .upload_part_copy()
        .bucket("copy")
        .key("parts")
        .upload_id(upload.upload_id().unwrap())
        .part_number(1)
        .copy_source("copy/source")
        .copy_source_if_match("\"0000\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&part_copy), 412);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_multipart_with_if_none_match_refuses_an_existing_key_and_keeps_the_upload() {
    let harness = start().await;
    bucket(&harness, "multi").await;
    let client = &harness.client;
    put(&harness.client, "multi", "taken", b"already here").await;
    for (key, expected_status) in [("taken", Some(412)), ("free", None)] {
        let upload = client
            .create_multipart_upload()
            .bucket("multi")
            .key(key)
            .send()
            .await
            .unwrap();
        let id = upload.upload_id().unwrap();
        let part = client
            .upload_part()
            .bucket("multi")
            .key(key)
            .upload_id(id)
            .part_number(1)
            .body(ByteStream::from_static(b"the only part"))
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
        let completed = client
            .complete_multipart_upload()
            .bucket("multi")
            .key(key)
            .upload_id(id)
            .if_none_match("*")
            .multipart_upload(parts)
            .send()
            .await;
        match expected_status {
            Some(expected) => {
                assert_eq!(status(&completed.unwrap_err()), expected);
                assert_eq!(get_bytes(client, "multi", key, None).await, b"already here");
                // The upload stays open: the client may abort it (or complete it elsewhere).
                let parts = client.list_parts().bucket("multi").key(key).upload_id(id);
                assert_eq!(parts.send().await.unwrap().parts().len(), 1);
                let abort = client.abort_multipart_upload().bucket("multi").key(key);
                abort.upload_id(id).send().await.unwrap();
            }
            None => {
                completed.unwrap();
                assert_eq!(
                    get_bytes(client, "multi", key, None).await,
                    b"the only part"
                );
            }
        }
    }
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_304_or_412_for_a_cold_object_spins_no_group_up() {
    let harness = start().await;
    bucket(&harness, "cold").await;
    let bytes = pattern(200_000, 9);
    put(&harness.client, "cold", "c", &bytes).await;
    common::cold::migrate_everything(&harness.store).await;
    let (etag, _) = validators(&harness, "cold", "c").await;
    let group = migrated_group(&harness.store, "cold/c").await;
    rest_group(&harness.store, group).await;

    let client = &harness.client;
    let get = || client.get_object().bucket("cold").key("c");
    let ups = count_ups_during(&harness.store, async {
        assert_eq!(
            status(&get().if_none_match(&etag).send().await.unwrap_err()),
            304
        );
        assert_eq!(
            status(&get().if_match("\"0\"").send().await.unwrap_err()),
            412
        );
        // A read queued and then dropped would still be queued for (or spinning up) the group:
        // the driver takes commands in order, so this snapshot comes after any such submit.
        let state = harness.store.rack_io().driver.state().await.unwrap();
        let resting = state.groups.iter().find(|g| g.group == group).unwrap();
        assert_eq!(resting.phase, GroupPhase::Resting, "{resting:?}");
        assert_eq!(resting.queued_jobs, 0, "a read was queued: {resting:?}");
    })
    .await;
    assert_eq!(ups, 0, "a failed condition must not wait for a spin-up");

    let ups = count_ups_during(&harness.store, async {
        let body = get().if_match(&etag).send().await.unwrap().body.collect();
        assert!(body.await.unwrap().into_bytes() == bytes);
    })
    .await;
    assert_eq!(ups, 1, "a GET whose condition holds reads the cold object");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_deletes_remove_only_the_named_version() {
    let harness = start().await;
    bucket(&harness, "deletes").await;
    let client = &harness.client;
    let old = put(&harness.client, "deletes", "k", b"old").await;
    let new = put(&harness.client, "deletes", "k", b"new").await;
    let stale = client
        .delete_object()
        .bucket("deletes")
        .key("k")
        .if_match(&old)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&stale), 412);
    assert_eq!(get_bytes(client, "deletes", "k", None).await, b"new");

    let identifier = |key: &str, etag: &str| {
        ObjectIdentifier::builder()
            .key(key)
            .e_tag(etag)
            .build()
            .unwrap()
    };
    let batch = Delete::builder()
        .objects(identifier("k", &old))
        .build()
        .unwrap();
    let refused = client
        .delete_objects()
        .bucket("deletes")
        .delete(batch)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.errors()[0].code(), Some("PreconditionFailed"));
    assert_eq!(get_bytes(client, "deletes", "k", None).await, b"new");

    client
        .delete_object()
        .bucket("deletes")
        .key("k")
        .if_match(&new)
        .send()
        .await
        .unwrap();
    let gone = client.head_object().bucket("deletes").key("k").send();
    assert_eq!(status(&gone.await.unwrap_err()), 404);
    // Already absent: a conditional delete succeeds, as in S3.
    let again = client
        .delete_object()
        .bucket("deletes")
        .key("k")
        .if_match(&new);
    again.send().await.unwrap();
    harness.server.stop().await;
}
