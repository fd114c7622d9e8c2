//! The S3 API end to end: a real server on an ephemeral port over a temporary store, driven by
//! the aws-sdk-s3 client (SigV4, path style): buckets, PUT/GET/HEAD byte-exact at 0 B, 1 B,
//! 5 MiB and 100 MiB (whole and ranged), errors, digests, metadata, copy, listing, deletes,
//! storage classes across a flush, and keys that look like paths.

use crate::common;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketVersioningStatus, Delete, ObjectIdentifier, StorageClass, VersioningConfiguration,
};
use common::{
    bucket, code, files_under, get_bytes, md5_hex, pattern, put, start, start_with, status,
};
use spinwise_s3::{EtagMode, S3Settings};
use std::collections::BTreeSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_of_0_1_5mib_and_100mib_round_trip_byte_exact_whole_and_ranged() {
    let harness = start().await;
    bucket(&harness, "sizes").await;
    for (index, size) in [0usize, 1, 5 << 20, 100 << 20].into_iter().enumerate() {
        let key = format!("object-{size}");
        let bytes = pattern(size, index as u64);
        let etag = put(&harness.client, "sizes", &key, &bytes).await;
        assert_eq!(etag, format!("\"{}\"", md5_hex(&bytes)), "{size} B");
        let got = get_bytes(&harness.client, "sizes", &key, None).await;
        assert!(got == bytes, "{size} B object differs after GET");
        let head = harness
            .client
            .head_object()
            .bucket("sizes")
            .key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length, Some(size as i64));
        assert_eq!(head.e_tag.as_deref(), Some(etag.as_str()));
        if size == 0 {
            continue;
        }
        let ranges = [
            (0, 0),
            (size / 3, size - 1),
            (size / 2, (size / 2 + 1000).min(size - 1)),
        ];
        for (first, last) in ranges {
            let output = harness
                .client
                .get_object()
                .bucket("sizes")
                .key(&key)
                .range(format!("bytes={first}-{last}"))
                .send()
                .await
                .unwrap();
            assert_eq!(
                output.content_range.as_deref(),
                Some(format!("bytes {first}-{last}/{size}").as_str())
            );
            let got = output.body.collect().await.unwrap().into_bytes();
            assert!(
                got[..] == bytes[first..=last],
                "{size} B range {first}-{last}"
            );
        }
        let suffix = get_bytes(&harness.client, "sizes", &key, Some("bytes=-7")).await;
        assert_eq!(suffix[..], bytes[size.saturating_sub(7)..]);
    }
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_are_created_listed_headed_and_deleted_only_when_empty() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "beta").await;
    bucket(&harness, "alpha").await;
    let again = client.create_bucket().bucket("alpha").send().await;
    assert_eq!(code(&again.unwrap_err()), "BucketAlreadyOwnedByYou");
    let listed = client.list_buckets().send().await.unwrap();
    let names: Vec<&str> = listed.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    client.head_bucket().bucket("alpha").send().await.unwrap();
    let missing = client
        .head_bucket()
        .bucket("gamma")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&missing), 404);

    put(&harness.client, "alpha", "k", b"held").await;
    let refused = client.delete_bucket().bucket("alpha").send().await;
    assert_eq!(code(&refused.unwrap_err()), "BucketNotEmpty");
    client
        .delete_object()
        .bucket("alpha")
        .key("k")
        .send()
        .await
        .unwrap();
    client.delete_bucket().bucket("alpha").send().await.unwrap();
    let gone = client
        .head_bucket()
        .bucket("alpha")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&gone), 404);
    let put_gone = client
        .put_object()
        .bucket("alpha")
        .key("k")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_eq!(code(&put_gone.unwrap_err()), "NoSuchBucket");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_versioning_reads_as_never_enabled_and_cannot_be_turned_on() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "plain").await;
    let versioning = client
        .get_bucket_versioning()
        .bucket("plain")
        .send()
        .await
        .unwrap();
    assert_eq!((versioning.status(), versioning.mfa_delete()), (None, None));
    let missing = client
        .get_bucket_versioning()
        .bucket("absent")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&missing), "NoSuchBucket");
    let enable = client
        .put_bucket_versioning()
        .bucket("plain")
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&enable), "NotImplemented");
    let still = client
        .get_bucket_versioning()
        .bucket("plain")
        .send()
        .await
        .unwrap();
    assert_eq!(still.status(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_may_name_any_s3_storage_class_and_an_unknown_one_stores_nothing() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "classes").await;
    for class in [
        StorageClass::Glacier,
        StorageClass::DeepArchive,
        StorageClass::Standard,
    ] {
        client
            .put_object()
            .bucket("classes")
            .key(class.as_str())
            .storage_class(class.clone())
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        let head = client
            .head_object()
            .bucket("classes")
            .key(class.as_str())
            .send()
            .await
            .unwrap();
        // Every object starts on the staging log and goes cold by the store's upkeep.
        assert_eq!(head.storage_class, Some(StorageClass::Standard));
    }
    let frozen = client
        .put_object()
        .bucket("classes")
        .key("frozen")
        .storage_class(StorageClass::from("FROZEN"))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        (status(&frozen), code(&frozen).as_str()),
        (400, "InvalidStorageClass")
    );
    let copied = client
        .copy_object()
        .bucket("classes")
        .key("frozen")
        .copy_source("classes/GLACIER")
        .storage_class(StorageClass::from("FROZEN"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&copied), "InvalidStorageClass");
    let upload = client
        .create_multipart_upload()
        .bucket("classes")
        .key("frozen")
        .storage_class(StorageClass::from("FROZEN"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&upload), "InvalidStorageClass");
    let missing = client
        .head_object()
        .bucket("classes")
        .key("frozen")
        .send()
        .await;
    assert_eq!(status(&missing.unwrap_err()), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_bucket_unknown_key_bad_range_and_bad_keys_get_their_s3_errors() {
    let harness = start().await;
    let client = &harness.client;
    let no_bucket = client.get_object().bucket("nowhere").key("k").send().await;
    assert_eq!(code(&no_bucket.unwrap_err()), "NoSuchBucket");
    bucket(&harness, "here").await;
    let no_key = client
        .get_object()
        .bucket("here")
        .key("absent")
        .send()
        .await;
    assert_eq!(code(&no_key.unwrap_err()), "NoSuchKey");
    let head = client
        .head_object()
        .bucket("here")
        .key("absent")
        .send()
        .await;
    assert_eq!(status(&head.unwrap_err()), 404);

    put(&harness.client, "here", "small", b"0123456789").await;
    let past_end = client
        .get_object()
        .bucket("here")
        .key("small")
        .range("bytes=10-20")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&past_end), "InvalidRange");
    assert_eq!(status(&past_end), 416);
    // A suffix range of an empty object names no byte: 416, not 206 with `bytes 0-0/0`.
    put(&harness.client, "here", "empty", b"").await;
    let suffix_of_nothing = client
        .get_object()
        .bucket("here")
        .key("empty")
        .range("bytes=-1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&suffix_of_nothing), "InvalidRange");
    assert_eq!(status(&suffix_of_nothing), 416);
    client
        .delete_object()
        .bucket("here")
        .key("empty")
        .send()
        .await
        .unwrap();

    let nul = client
        .put_object()
        .bucket("here")
        .key("a\0b")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&nul), 400);
    // S3's keys are at most 1,024 bytes, whatever the bucket is called.
    let longest = "k".repeat(1024);
    put(client, "here", &longest, b"longest").await;
    assert_eq!(get_bytes(client, "here", &longest, None).await, b"longest");
    let long = client
        .put_object()
        .bucket("here")
        .key("k".repeat(1025))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&long), "KeyTooLongError");
    let listed = client
        .list_objects_v2()
        .bucket("here")
        .send()
        .await
        .unwrap();
    assert_eq!(
        listed.key_count,
        Some(2),
        "the 1,024-byte key and the one before it; refused keys stored nothing"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_is_signature_does_not_match_an_unknown_key_invalid_access_key_id_and_unsigned_requests_are_refused()
 {
    let harness = start().await;
    bucket(&harness, "locked").await;
    let intruder = common::client(
        harness.server.local_addr(),
        common::ACCESS_KEY,
        "not-the-secret",
    );
    let refused = intruder.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&refused), "SignatureDoesNotMatch");
    assert_eq!(status(&refused), 403);
    let stranger = common::client(harness.server.local_addr(), "UNKNOWNKEY", "whatever");
    let refused = stranger.list_buckets().send().await.unwrap_err();
    assert_eq!(
        code(&refused),
        "InvalidAccessKeyId",
        "S3's code for an unknown key"
    );
    assert_eq!(status(&refused), 403);

    // A bare, unsigned request.
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut socket = tokio::net::TcpStream::connect(harness.server.local_addr())
        .await
        .unwrap();
    socket
        .write_all(b"GET /locked HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("AccessDenied"), "{response}");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_md5_and_checksum_mismatches_are_refused_and_store_nothing() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "digests").await;
    let body = b"the bytes that were sent".to_vec();
    let wrong_md5 = base64_of(&[0u8; 16]);
    let refused = client
        .put_object()
        .bucket("digests")
        .key("md5")
        .content_md5(wrong_md5)
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&refused), "BadDigest");
    let malformed = client
        .put_object()
        .bucket("digests")
        .key("md5")
        .content_md5("not base64!")
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&malformed), "InvalidDigest");
    let wrong_crc = client
        .put_object()
        .bucket("digests")
        .key("crc")
        .checksum_crc32(base64_of(&[1, 2, 3, 4]))
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&wrong_crc), "BadDigest");
    for key in ["md5", "crc"] {
        let absent = client.head_object().bucket("digests").key(key).send().await;
        assert_eq!(status(&absent.unwrap_err()), 404, "{key} was stored");
    }
    assert_eq!(harness.store.status().await.unwrap().objects, 0);

    let right_md5 = {
        use s3s::crypto::Checksum as _;
        base64_of(&s3s::crypto::Md5::checksum(&body))
    };
    let sha256 = {
        use s3s::crypto::Checksum as _;
        base64_of(&s3s::crypto::Sha256::checksum(&body))
    };
    client
        .put_object()
        .bucket("digests")
        .key("md5")
        .content_md5(right_md5)
        .checksum_sha256(sha256)
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(get_bytes(client, "digests", "md5", None).await, body);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blake3_etag_mode_names_objects_by_content_hash_and_still_checks_content_md5() {
    let settings = S3Settings {
        etag_mode: EtagMode::Blake3,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    let client = &harness.client;
    bucket(&harness, "fast").await;
    // Inline-hashed and thread-hashed bodies alike.
    for (key, size_bytes) in [("small", 10), ("large", 3 << 20)] {
        let body = pattern(size_bytes, 7);
        let blake3_hex: String = blake3::hash(&body).to_hex().to_string();
        let etag = put(&harness.client, "fast", key, &body).await;
        assert_eq!(etag, format!("\"{blake3_hex}\""), "{key}");
        let head = client.head_object().bucket("fast").key(key).send().await;
        assert_eq!(head.unwrap().e_tag.unwrap(), etag);
        assert_eq!(get_bytes(client, "fast", key, None).await, body);
    }
    let copied = client
        .copy_object()
        .bucket("fast")
        .key("copy")
        .copy_source("fast/large")
        .send()
        .await
        .unwrap();
    let large_etag = format!("\"{}\"", blake3::hash(&pattern(3 << 20, 7)).to_hex());
    assert_eq!(
        copied.copy_object_result.unwrap().e_tag.unwrap(),
        large_etag
    );
    // A client's Content-MD5 is still verified (MD5 computed for it alone).
    let refused = client
        .put_object()
        .bucket("fast")
        .key("checked")
        .content_md5(base64_of(&[0u8; 16]))
        .body(ByteStream::from(pattern(2 << 20, 8)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&refused), "BadDigest");
    let absent = client
        .head_object()
        .bucket("fast")
        .key("checked")
        .send()
        .await;
    assert_eq!(status(&absent.unwrap_err()), 404);
    harness.server.stop().await;
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_class_is_standard_while_staged_and_glacier_instant_retrieval_after_a_flush_in_a_sync_bucket()
 {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "cold").await;
    let bytes = pattern(3 << 20, 7);
    put(&harness.client, "cold", "archive.bin", &bytes).await;
    let head = client
        .head_object()
        .bucket("cold")
        .key("archive.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class, Some(StorageClass::Standard));

    let report = common::cold::migrate_everything(&harness.store).await;
    assert!(report.objects_moved >= 1, "{report:?}");
    let head = client
        .head_object()
        .bucket("cold")
        .key("archive.bin")
        .send()
        .await
        .unwrap();
    // The default restore mode is sync: a GET serves the object, as Glacier Instant Retrieval.
    assert_eq!(head.storage_class, Some(StorageClass::GlacierIr));
    let listed = client
        .list_objects_v2()
        .bucket("cold")
        .send()
        .await
        .unwrap();
    assert_eq!(
        listed.contents()[0].storage_class().map(|c| c.as_str()),
        Some("GLACIER_IR")
    );
    // A cold read goes through the scheduler (a spin-up) and is still byte-exact.
    assert!(get_bytes(client, "cold", "archive.bin", None).await == bytes);
    let middle = get_bytes(client, "cold", "archive.bin", Some("bytes=1000000-1999999")).await;
    assert!(middle[..] == bytes[1_000_000..2_000_000]);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_metadata_and_content_type_round_trip_and_copies_keep_or_replace_them() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "meta").await;
    bucket(&harness, "other").await;
    client
        .put_object()
        .bucket("meta")
        .key("doc.txt")
        .content_type("text/plain; charset=utf-8")
        .metadata("owner", "ada")
        .metadata("Project", "spinwise")
        .body(ByteStream::from_static(b"hello metadata"))
        .send()
        .await
        .unwrap();
    let head = client
        .head_object()
        .bucket("meta")
        .key("doc.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("text/plain; charset=utf-8"));
    let metadata = head.metadata().unwrap();
    assert_eq!(metadata.get("owner").map(String::as_str), Some("ada"));
    assert_eq!(
        metadata.get("project").map(String::as_str),
        Some("spinwise")
    );
    let got = client
        .get_object()
        .bucket("meta")
        .key("doc.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(
        got.metadata().unwrap().get("owner").map(String::as_str),
        Some("ada")
    );

    let copied = client
        .copy_object()
        .bucket("other")
        .key("copy.txt")
        .copy_source("meta/doc.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(
        copied.copy_object_result().unwrap().e_tag(),
        Some(format!("\"{}\"", md5_hex(b"hello metadata")).as_str())
    );
    let head = client
        .head_object()
        .bucket("other")
        .key("copy.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("text/plain; charset=utf-8"));
    assert_eq!(
        head.metadata().unwrap().get("owner").map(String::as_str),
        Some("ada")
    );
    assert_eq!(
        get_bytes(client, "other", "copy.txt", None).await,
        b"hello metadata"
    );

    client
        .copy_object()
        .bucket("meta")
        .key("doc.txt")
        .copy_source("meta/doc.txt")
        .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
        .content_type("application/json")
        .metadata("owner", "grace")
        .send()
        .await
        .unwrap();
    let head = client
        .head_object()
        .bucket("meta")
        .key("doc.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_type(), Some("application/json"));
    let metadata = head.metadata().unwrap();
    assert_eq!(metadata.get("owner").map(String::as_str), Some("grace"));
    assert!(!metadata.contains_key("project"));
    let onto_itself = client
        .copy_object()
        .bucket("meta")
        .key("doc.txt")
        .copy_source("meta/doc.txt")
        .send()
        .await;
    assert_eq!(code(&onto_itself.unwrap_err()), "InvalidRequest");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_objects_v2_honours_prefix_delimiter_start_after_max_keys_and_tokens() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "tree").await;
    bucket(&harness, "treeish").await;
    let keys = [
        "a.txt",
        "dir/one",
        "dir/sub/two",
        "dir/three",
        "other/x",
        "other/y",
        "z",
    ];
    for key in keys {
        put(&harness.client, "tree", key, key.as_bytes()).await;
    }
    put(&harness.client, "treeish", "not-in-tree", b"x").await;

    let all = client
        .list_objects_v2()
        .bucket("tree")
        .send()
        .await
        .unwrap();
    let listed: Vec<&str> = all.contents().iter().filter_map(|o| o.key()).collect();
    let mut sorted = keys.to_vec();
    sorted.sort();
    assert_eq!(listed, sorted);
    assert_eq!(all.is_truncated, Some(false));
    assert_eq!(
        all.contents()[0].e_tag(),
        Some(format!("\"{}\"", md5_hex(b"a.txt")).as_str())
    );
    assert_eq!(all.contents()[0].size, Some(5));

    let top = client
        .list_objects_v2()
        .bucket("tree")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let files: Vec<&str> = top.contents().iter().filter_map(|o| o.key()).collect();
    let dirs: Vec<&str> = top
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(files, ["a.txt", "z"]);
    assert_eq!(dirs, ["dir/", "other/"]);

    let dir = client
        .list_objects_v2()
        .bucket("tree")
        .prefix("dir/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let files: Vec<&str> = dir.contents().iter().filter_map(|o| o.key()).collect();
    let dirs: Vec<&str> = dir
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(files, ["dir/one", "dir/three"]);
    assert_eq!(dirs, ["dir/sub/"]);

    let after = client
        .list_objects_v2()
        .bucket("tree")
        .start_after("dir/three")
        .send()
        .await
        .unwrap();
    let listed: Vec<&str> = after.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(listed, ["other/x", "other/y", "z"]);

    // Pages of two, with and without a delimiter, visit every entry exactly once.
    for delimiter in [None, Some("/")] {
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_objects_v2()
                .bucket("tree")
                .max_keys(2)
                .set_delimiter(delimiter.map(str::to_string))
                .set_continuation_token(token.clone())
                .send()
                .await
                .unwrap();
            assert!(page.key_count.unwrap() <= 2);
            seen.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_string)),
            );
            seen.extend(
                page.common_prefixes()
                    .iter()
                    .filter_map(|p| p.prefix().map(str::to_string)),
            );
            if page.is_truncated != Some(true) {
                break;
            }
            token = page.next_continuation_token.clone();
            assert!(token.is_some());
        }
        let expected: Vec<&str> = match delimiter {
            None => sorted.clone(),
            Some(_) => vec!["a.txt", "dir/", "other/", "z"],
        };
        let mut seen_sorted = seen.clone();
        seen_sorted.sort();
        assert_eq!(seen_sorted, expected, "delimiter {delimiter:?}");
    }
    let bad_token = client
        .list_objects_v2()
        .bucket("tree")
        .continuation_token("zz")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&bad_token), "InvalidArgument");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_object_and_delete_objects_remove_keys_and_absent_keys_are_not_errors() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "bin").await;
    for key in ["a", "b", "c", "d"] {
        put(&harness.client, "bin", key, key.as_bytes()).await;
    }
    client
        .delete_object()
        .bucket("bin")
        .key("a")
        .send()
        .await
        .unwrap();
    client
        .delete_object()
        .bucket("bin")
        .key("never-was")
        .send()
        .await
        .unwrap();
    let identifiers = ["b", "c", "missing"]
        .into_iter()
        .map(|key| ObjectIdentifier::builder().key(key).build().unwrap())
        .collect();
    let deleted = client
        .delete_objects()
        .bucket("bin")
        .delete(
            Delete::builder()
                .set_objects(Some(identifiers))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let names: BTreeSet<&str> = deleted.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(names, BTreeSet::from(["b", "c", "missing"]));
    assert!(deleted.errors().is_empty());
    let left = client.list_objects_v2().bucket("bin").send().await.unwrap();
    let keys: Vec<&str> = left.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["d"]);
    assert_eq!(harness.store.status().await.unwrap().objects, 1);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_objects_naming_more_than_1000_keys_or_none_is_malformed_and_deletes_nothing() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "many").await;
    put(&harness.client, "many", "k0", b"kept").await;
    for count in [1001, 0] {
        let identifiers = (0..count)
            .map(|index| {
                ObjectIdentifier::builder()
                    .key(format!("k{index}"))
                    .build()
                    .unwrap()
            })
            .collect();
        let refused = client
            .delete_objects()
            .bucket("many")
            .delete(
                Delete::builder()
                    .set_objects(Some(identifiers))
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&refused), "MalformedXML", "{count} keys");
    }
    assert_eq!(get_bytes(client, "many", "k0", None).await, b"kept");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_max_keys_zero_is_an_empty_page_that_is_not_truncated() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "zero").await;
    for key in ["a", "b"] {
        put(&harness.client, "zero", key, key.as_bytes()).await;
    }
    let v2 = client
        .list_objects_v2()
        .bucket("zero")
        .max_keys(0)
        .send()
        .await
        .unwrap();
    assert!(v2.contents().is_empty());
    assert_eq!(v2.key_count, Some(0));
    assert_eq!(v2.is_truncated, Some(false));
    assert_eq!(v2.next_continuation_token, None);
    let v1 = client
        .list_objects()
        .bucket("zero")
        .max_keys(0)
        .send()
        .await
        .unwrap();
    assert!(v1.contents().is_empty());
    assert_eq!(v1.is_truncated, Some(false));
    assert_eq!(v1.next_marker, None);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_with_dot_dot_and_slashes_are_plain_keys_and_create_no_files() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "paths").await;
    let before = files_under(harness.dir.path());
    let keys = [
        "../../escaped-file",
        "..",
        "a/../../../escaped-dir/x",
        "/leading/slash",
        "trailing/",
        "./dot",
    ];
    for (index, key) in keys.iter().enumerate() {
        let bytes = pattern(1000 + index, index as u64);
        put(&harness.client, "paths", key, &bytes).await;
        assert_eq!(get_bytes(client, "paths", key, None).await, bytes, "{key}");
    }
    let listed = client
        .list_objects_v2()
        .bucket("paths")
        .send()
        .await
        .unwrap();
    let listed: BTreeSet<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(listed, keys.iter().copied().collect());

    let after = files_under(harness.dir.path());
    for path in &after {
        assert!(!path.contains("escaped"), "a key became a file: {path}");
        assert!(
            path.starts_with("data"),
            "a file appeared outside the data dir: {path}"
        );
    }
    let parent = harness.dir.path().parent().unwrap();
    assert!(!parent.join("escaped-file").exists());
    assert!(!parent.join("escaped-dir").exists());
    assert!(before.iter().all(|p| after.contains(p)));
    harness.server.stop().await;
}
