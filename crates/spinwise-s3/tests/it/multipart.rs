//! Multipart upload end to end through aws-sdk-s3: objects assembled from parts byte-exact
//! (whole and across part boundaries) with S3's `-N` ETag, Complete's part checks, abort,
//! ListParts / ListMultipartUploads, part replacement, UploadPartCopy, limits, DeleteBucket
//! with open uploads, the start-up sweep of part files and rows, and the expiry of abandoned
//! uploads by age (`S3Settings::abandon_uploads_after_s`).

use crate::common;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use common::{Harness, bucket, code, get_bytes, pattern, start, start_with, status};
use spinwise_s3::{MetaDb, S3Settings, SpinwiseS3};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const MIB: usize = 1 << 20;

async fn create(harness: &Harness, bucket: &str, key: &str) -> String {
    let output = harness
        .client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    output.upload_id.unwrap()
}

async fn upload_part(
    harness: &Harness,
    bucket: &str,
    key: &str,
    upload_id: &str,
    part_number: i32,
    bytes: &[u8],
) -> String {
    harness
        .client
        .upload_part()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .part_number(part_number)
        .body(ByteStream::from(bytes.to_vec()))
        .send()
        .await
        .unwrap()
        .e_tag
        .unwrap()
}

fn completed(parts: &[(i32, &str)]) -> CompletedMultipartUpload {
    let mut upload = CompletedMultipartUpload::builder();
    for (number, etag) in parts {
        upload = upload.parts(
            CompletedPart::builder()
                .part_number(*number)
                .e_tag(*etag)
                .build(),
        );
    }
    upload.build()
}

async fn complete(
    harness: &Harness,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: &[(i32, &str)],
) -> Result<String, String> {
    harness
        .client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .multipart_upload(completed(parts))
        .send()
        .await
        .map(|output| output.e_tag.unwrap())
        .map_err(|error| code(&error))
}

/// S3's multipart ETag computed independently: MD5 of the binary part MD5s, `-N`.
fn expected_etag(parts: &[&[u8]]) -> String {
    use s3s::crypto::Checksum as _;
    let mut joined = Vec::new();
    for part in parts {
        joined.extend_from_slice(&s3s::crypto::Md5::checksum(part));
    }
    let digest = s3s::crypto::Md5::checksum(&joined);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}-{}\"", parts.len())
}

fn multipart_root(harness: &Harness) -> PathBuf {
    harness.data_dir.join(spinwise_s3::multipart::MULTIPART_DIR)
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(read) => read
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_parts_complete_into_one_byte_exact_object_with_an_s3_multipart_etag() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "mpu").await;
    let upload_id = client
        .create_multipart_upload()
        .bucket("mpu")
        .key("dir/big.bin")
        .content_type("application/x-test")
        .metadata("origin", "multipart")
        .send()
        .await
        .unwrap()
        .upload_id
        .unwrap();
    assert_eq!(upload_id.len(), 32);
    assert!(upload_id.bytes().all(|b| b.is_ascii_hexdigit()));
    let parts = [pattern(5 * MIB, 1), pattern(5 * MIB, 2), pattern(1234, 3)];
    let mut etags = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        let number = index as i32 + 1;
        etags.push(upload_part(&harness, "mpu", "dir/big.bin", &upload_id, number, part).await);
    }
    assert_eq!(etags[2], format!("\"{}\"", common::md5_hex(&parts[2])));
    let named: Vec<(i32, &str)> = (1..=3).zip(etags.iter().map(String::as_str)).collect();
    let etag = complete(&harness, "mpu", "dir/big.bin", &upload_id, &named)
        .await
        .unwrap();
    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    assert_eq!(etag, expected_etag(&slices));
    assert!(etag.ends_with("-3\""));

    let whole = parts.concat();
    assert!(get_bytes(client, "mpu", "dir/big.bin", None).await == whole);
    let (first, last) = (5 * MIB - 1000, 10 * MIB + 500);
    let crossing = get_bytes(
        client,
        "mpu",
        "dir/big.bin",
        Some(&format!("bytes={first}-{last}")),
    )
    .await;
    assert!(crossing[..] == whole[first..=last]);
    let head = client
        .head_object()
        .bucket("mpu")
        .key("dir/big.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(head.e_tag.as_deref(), Some(etag.as_str()));
    assert_eq!(head.content_length, Some(whole.len() as i64));
    assert_eq!(head.content_type.as_deref(), Some("application/x-test"));
    assert_eq!(
        head.metadata.unwrap().get("origin").map(String::as_str),
        Some("multipart")
    );
    // One store object whose content hash is BLAKE3 of the whole, like any PUT.
    let record = harness.store.stat("mpu/dir/big.bin").await.unwrap();
    assert_eq!(record.content_hash, *blake3::hash(&whole).as_bytes());
    // The upload is finished: no rows, no files, and a second Complete is NoSuchUpload.
    let open = client
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap();
    assert!(open.uploads().is_empty());
    assert!(entries(&multipart_root(&harness)).is_empty());
    let again = complete(&harness, "mpu", "dir/big.bin", &upload_id, &named).await;
    assert_eq!(again, Err("NoSuchUpload".to_string()));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mib_object_uploaded_as_10_concurrent_parts_round_trips() {
    let harness = start().await;
    bucket(&harness, "large").await;
    let upload_id = create(&harness, "large", "hundred").await;
    let whole = pattern(100 * MIB, 9);
    let uploads = whole.chunks(10 * MIB).enumerate().map(|(index, part)| {
        let (harness, upload_id) = (&harness, &upload_id);
        async move {
            let number = index as i32 + 1;
            (
                number,
                upload_part(harness, "large", "hundred", upload_id, number, part).await,
            )
        }
    });
    let etags = futures::future::join_all(uploads).await;
    let named: Vec<(i32, &str)> = etags.iter().map(|(n, e)| (*n, e.as_str())).collect();
    let etag = complete(&harness, "large", "hundred", &upload_id, &named)
        .await
        .unwrap();
    let slices: Vec<&[u8]> = whole.chunks(10 * MIB).collect();
    assert_eq!(etag, expected_etag(&slices));
    assert!(get_bytes(&harness.client, "large", "hundred", None).await == whole);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_refuses_no_parts_unknown_parts_wrong_etags_disorder_and_small_parts() {
    let harness = start().await;
    bucket(&harness, "checks").await;
    let key = "checked";
    let upload_id = create(&harness, "checks", key).await;
    let small = pattern(MIB, 1);
    let big = pattern(5 * MIB, 2);
    let tail = pattern(10, 3);
    let e1 = upload_part(&harness, "checks", key, &upload_id, 1, &small).await;
    let e2 = upload_part(&harness, "checks", key, &upload_id, 2, &big).await;
    let e3 = upload_part(&harness, "checks", key, &upload_id, 3, &tail).await;
    let cases: [(&[(i32, &str)], &str); 6] = [
        (&[], "MalformedXML"),
        (&[(4, &e3)], "InvalidPart"),
        (&[(2, &e3)], "InvalidPart"),
        (&[(3, &e3), (2, &e2)], "InvalidPartOrder"),
        (&[(2, &e2), (2, &e2)], "InvalidPartOrder"),
        (&[(1, &e1), (2, &e2)], "EntityTooSmall"),
    ];
    for (parts, expected) in cases {
        let outcome = complete(&harness, "checks", key, &upload_id, parts).await;
        assert_eq!(outcome, Err(expected.to_string()), "{parts:?}");
    }
    assert!(matches!(
        harness.store.stat("checks/checked").await,
        Err(spinwise_store::StoreError::NoSuchKey { .. })
    ));
    // Refusals leave the upload open; a valid subset (parts 2 and 3) completes it.
    let etag = complete(&harness, "checks", key, &upload_id, &[(2, &e2), (3, &e3)])
        .await
        .unwrap();
    assert_eq!(etag, expected_etag(&[&big, &tail]));
    let whole = [big, tail].concat();
    assert!(get_bytes(&harness.client, "checks", key, None).await == whole);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_finished_foreign_and_malformed_upload_ids_are_no_such_upload() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "abort").await;
    let upload_id = create(&harness, "abort", "k").await;
    let part = pattern(100, 1);
    let etag = upload_part(&harness, "abort", "k", &upload_id, 1, &part).await;
    assert_eq!(entries(&multipart_root(&harness)), vec![upload_id.clone()]);
    // The id belongs to "k": another key of the bucket does not see it.
    let foreign = complete(&harness, "abort", "other", &upload_id, &[(1, &etag)]).await;
    assert_eq!(foreign, Err("NoSuchUpload".to_string()));
    client
        .abort_multipart_upload()
        .bucket("abort")
        .key("k")
        .upload_id(&upload_id)
        .send()
        .await
        .unwrap();
    assert!(entries(&multipart_root(&harness)).is_empty());
    let after = complete(&harness, "abort", "k", &upload_id, &[(1, &etag)]).await;
    assert_eq!(after, Err("NoSuchUpload".to_string()));
    let late_part = client
        .upload_part()
        .bucket("abort")
        .key("k")
        .upload_id(&upload_id)
        .part_number(2)
        .body(ByteStream::from(part.clone()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&late_part), "NoSuchUpload");
    assert_eq!(status(&late_part), 404);
    let aborted_twice = client
        .abort_multipart_upload()
        .bucket("abort")
        .key("k")
        .upload_id(&upload_id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&aborted_twice), "NoSuchUpload");
    for bad in ["../../etc", "0123", &"z".repeat(32)] {
        let listed = client
            .list_parts()
            .bucket("abort")
            .key("k")
            .upload_id(bad)
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&listed), "NoSuchUpload", "{bad}");
    }
    assert!(matches!(
        harness.store.stat("abort/k").await,
        Err(spinwise_store::StoreError::NoSuchKey { .. })
    ));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_parts_and_list_multipart_uploads_page_through_open_uploads() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "lists").await;
    let first = create(&harness, "lists", "a").await;
    let second = create(&harness, "lists", "a").await;
    let under_dir = create(&harness, "lists", "d/x").await;
    create(&harness, "lists", "d/y").await;
    let sizes = [3usize, 1, 4];
    let mut etags = Vec::new();
    for (index, size) in sizes.iter().enumerate() {
        let bytes = pattern(*size, index as u64);
        etags.push(upload_part(&harness, "lists", "a", &first, index as i32 + 1, &bytes).await);
    }
    let page = client
        .list_parts()
        .bucket("lists")
        .key("a")
        .upload_id(&first)
        .max_parts(2)
        .send()
        .await
        .unwrap();
    assert_eq!(page.is_truncated, Some(true));
    let numbers: Vec<i32> = page.parts().iter().filter_map(|p| p.part_number).collect();
    assert_eq!(numbers, [1, 2]);
    assert_eq!(page.parts()[0].size, Some(3));
    assert_eq!(page.parts()[1].e_tag.as_deref(), Some(etags[1].as_str()));
    let rest = client
        .list_parts()
        .bucket("lists")
        .key("a")
        .upload_id(&first)
        .part_number_marker(page.next_part_number_marker().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(rest.is_truncated, Some(false));
    assert_eq!(rest.parts().len(), 1);
    assert_eq!(rest.parts()[0].part_number, Some(3));
    assert_eq!(rest.parts()[0].size, Some(4));

    let all = client
        .list_multipart_uploads()
        .bucket("lists")
        .send()
        .await
        .unwrap();
    let listed: Vec<(&str, &str)> = all
        .uploads()
        .iter()
        .map(|u| (u.key().unwrap(), u.upload_id().unwrap()))
        .collect();
    let mut a_ids = [first.as_str(), second.as_str()];
    a_ids.sort();
    assert_eq!(listed.len(), 4);
    assert_eq!(&listed[..2], [("a", a_ids[0]), ("a", a_ids[1])]);
    assert_eq!(listed[2].0, "d/x");
    let grouped = client
        .list_multipart_uploads()
        .bucket("lists")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    assert_eq!(grouped.uploads().len(), 2);
    assert_eq!(grouped.common_prefixes()[0].prefix(), Some("d/"));
    let under = client
        .list_multipart_uploads()
        .bucket("lists")
        .prefix("d/x")
        .send()
        .await
        .unwrap();
    assert_eq!(under.uploads().len(), 1);
    assert_eq!(under.uploads()[0].upload_id(), Some(under_dir.as_str()));
    let paged = client
        .list_multipart_uploads()
        .bucket("lists")
        .max_uploads(1)
        .send()
        .await
        .unwrap();
    assert_eq!(paged.is_truncated, Some(true));
    let next = client
        .list_multipart_uploads()
        .bucket("lists")
        .key_marker(paged.next_key_marker().unwrap())
        .upload_id_marker(paged.next_upload_id_marker().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(next.uploads().len(), 3);
    assert_eq!(next.uploads()[0].upload_id(), Some(a_ids[1]));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_uploading_a_part_number_replaces_its_bytes_and_etag() {
    let harness = start().await;
    bucket(&harness, "replace").await;
    let upload_id = create(&harness, "replace", "k").await;
    let old = pattern(300, 1);
    let new = pattern(200, 2);
    let old_etag = upload_part(&harness, "replace", "k", &upload_id, 1, &old).await;
    let new_etag = upload_part(&harness, "replace", "k", &upload_id, 1, &new).await;
    assert_ne!(old_etag, new_etag);
    let parts = harness
        .client
        .list_parts()
        .bucket("replace")
        .key("k")
        .upload_id(&upload_id)
        .send()
        .await
        .unwrap();
    assert_eq!(parts.parts().len(), 1);
    assert_eq!(parts.parts()[0].e_tag.as_deref(), Some(new_etag.as_str()));
    assert_eq!(parts.parts()[0].size, Some(200));
    // The replaced part's file is gone: one file in the upload's directory.
    let dir = multipart_root(&harness).join(&upload_id);
    assert_eq!(entries(&dir).len(), 1);
    let stale = complete(&harness, "replace", "k", &upload_id, &[(1, &old_etag)]).await;
    assert_eq!(stale, Err("InvalidPart".to_string()));
    complete(&harness, "replace", "k", &upload_id, &[(1, &new_etag)])
        .await
        .unwrap();
    assert!(get_bytes(&harness.client, "replace", "k", None).await == new);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_honour_content_md5_part_numbers_and_the_part_limit() {
    let settings = S3Settings {
        max_part_bytes: 1000,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    let client = &harness.client;
    bucket(&harness, "limits").await;
    let upload_id = create(&harness, "limits", "k").await;
    let bytes = pattern(500, 1);
    let wrong_md5 = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode([0u8; 16])
    };
    let refused = client
        .upload_part()
        .bucket("limits")
        .key("k")
        .upload_id(&upload_id)
        .part_number(1)
        .content_md5(wrong_md5)
        .body(ByteStream::from(bytes.clone()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&refused), "BadDigest");
    for number in [0, 10_001] {
        let refused = client
            .upload_part()
            .bucket("limits")
            .key("k")
            .upload_id(&upload_id)
            .part_number(number)
            .body(ByteStream::from(bytes.clone()))
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&refused), "InvalidArgument", "part {number}");
    }
    let too_large = client
        .upload_part()
        .bucket("limits")
        .key("k")
        .upload_id(&upload_id)
        .part_number(1)
        .body(ByteStream::from(pattern(1001, 2)))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&too_large), "EntityTooLarge");
    let listed = client
        .list_parts()
        .bucket("limits")
        .key("k")
        .upload_id(&upload_id)
        .send()
        .await
        .unwrap();
    assert!(listed.parts().is_empty(), "refused parts are not recorded");
    let dir = multipart_root(&harness).join(&upload_id);
    assert!(entries(&dir).is_empty(), "refused parts leave no file");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_uploads_are_capped_and_keep_their_bucket_from_deletion() {
    let settings = S3Settings {
        max_open_uploads: 2,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    let client = &harness.client;
    bucket(&harness, "cap").await;
    let first = create(&harness, "cap", "a").await;
    create(&harness, "cap", "b").await;
    let third = client
        .create_multipart_upload()
        .bucket("cap")
        .key("c")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&third), "SlowDown");
    assert_eq!(status(&third), 503);
    let deleted = client
        .delete_bucket()
        .bucket("cap")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&deleted), "BucketNotEmpty");
    client
        .abort_multipart_upload()
        .bucket("cap")
        .key("a")
        .upload_id(&first)
        .send()
        .await
        .unwrap();
    create(&harness, "cap", "c").await; // a slot is free again
    let unknown = client
        .create_multipart_upload()
        .bucket("no-such-bucket")
        .key("k")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&unknown), "NoSuchBucket");
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_part_copy_assembles_an_object_from_ranges_of_another() {
    let settings = S3Settings {
        min_part_bytes: 1,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    let client = &harness.client;
    bucket(&harness, "copy").await;
    let source = pattern(3000, 5);
    client
        .put_object()
        .bucket("copy")
        .key("source")
        .body(ByteStream::from(source.clone()))
        .send()
        .await
        .unwrap();
    let upload_id = create(&harness, "copy", "target").await;
    let mut etags = Vec::new();
    for (number, range) in [(1, "bytes=2000-2999"), (2, "bytes=0-999")] {
        let output = client
            .upload_part_copy()
            .bucket("copy")
            .key("target")
            .upload_id(&upload_id)
            .part_number(number)
            .copy_source("copy/source")
            .copy_source_range(range)
            .send()
            .await
            .unwrap();
        etags.push(output.copy_part_result.unwrap().e_tag.unwrap());
    }
    let tail = pattern(7, 6);
    etags.push(upload_part(&harness, "copy", "target", &upload_id, 3, &tail).await);
    let named: Vec<(i32, &str)> = (1..=3).zip(etags.iter().map(String::as_str)).collect();
    complete(&harness, "copy", "target", &upload_id, &named)
        .await
        .unwrap();
    let expected = [&source[2000..3000], &source[..1000], &tail[..]].concat();
    assert!(get_bytes(client, "copy", "target", None).await == expected);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_sweeps_stray_part_files_and_rows_without_files_but_keeps_open_uploads() {
    let harness = start().await;
    bucket(&harness, "sweep").await;
    let upload_id = create(&harness, "sweep", "k").await;
    let kept = pattern(50, 1);
    let kept_etag = upload_part(&harness, "sweep", "k", &upload_id, 1, &kept).await;
    upload_part(&harness, "sweep", "k", &upload_id, 2, &pattern(60, 2)).await;
    let root = multipart_root(&harness);
    let dir = root.join(&upload_id);
    // A crash's leftovers: a part file no row names, a directory of no open upload, and a
    // row whose file is gone.
    std::fs::write(dir.join("1-12345"), b"stray").unwrap();
    std::fs::create_dir_all(root.join("0".repeat(32))).unwrap();
    std::fs::write(root.join("0".repeat(32)).join("1-1"), b"stray").unwrap();
    let part_two = entries(&dir)
        .into_iter()
        .find(|name| name.starts_with("2-"))
        .unwrap();
    std::fs::remove_file(dir.join(part_two)).unwrap();

    // A second service over the same store and database runs the start-up sweep.
    let meta = MetaDb::open(&harness.data_dir.join(spinwise_s3::META_FILE))
        .await
        .unwrap();
    let restarted = SpinwiseS3::new(Arc::clone(&harness.store), meta, S3Settings::default())
        .await
        .unwrap();
    assert_eq!(entries(&root), vec![upload_id.clone()]);
    assert_eq!(entries(&dir).len(), 1);
    assert!(entries(&dir)[0].starts_with("1-"));
    drop(restarted);
    let parts = harness
        .client
        .list_parts()
        .bucket("sweep")
        .key("k")
        .upload_id(&upload_id)
        .send()
        .await
        .unwrap();
    let numbers: Vec<i32> = parts.parts().iter().filter_map(|p| p.part_number).collect();
    assert_eq!(numbers, [1], "the row of the lost part file is gone");
    complete(&harness, "sweep", "k", &upload_id, &[(1, &kept_etag)])
        .await
        .unwrap();
    assert!(get_bytes(&harness.client, "sweep", "k", None).await == kept);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_part_file_fails_complete_before_the_commit_and_leaves_the_upload_open() {
    let settings = S3Settings {
        min_part_bytes: 1,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    bucket(&harness, "damage").await;
    let upload_id = create(&harness, "damage", "k").await;
    let first = pattern(4000, 1);
    let second = pattern(3000, 2);
    let e1 = upload_part(&harness, "damage", "k", &upload_id, 1, &first).await;
    let e2 = upload_part(&harness, "damage", "k", &upload_id, 2, &second).await;
    let dir = multipart_root(&harness).join(&upload_id);
    let part_one = entries(&dir)
        .into_iter()
        .find(|name| name.starts_with("1-"))
        .unwrap();
    std::fs::write(dir.join(part_one), &first[..100]).unwrap();

    let refused = complete(&harness, "damage", "k", &upload_id, &[(1, &e1), (2, &e2)]).await;
    assert_eq!(refused, Err("InternalError".to_string()));
    assert!(
        matches!(
            harness.store.stat("damage/k").await,
            Err(spinwise_store::StoreError::NoSuchKey { .. })
        ),
        "no partial object is stored"
    );
    // Still open: re-upload the damaged part and complete.
    let e1 = upload_part(&harness, "damage", "k", &upload_id, 1, &first).await;
    complete(&harness, "damage", "k", &upload_id, &[(1, &e1), (2, &e2)])
        .await
        .unwrap();
    let whole = [first, second].concat();
    assert!(get_bytes(&harness.client, "damage", "k", None).await == whole);
    harness.server.stop().await;
}

/// The ids of the open uploads of `bucket`, as ListMultipartUploads shows them.
async fn open_upload_ids(harness: &Harness, bucket: &str) -> Vec<String> {
    let open = harness
        .client
        .list_multipart_uploads()
        .bucket(bucket)
        .send()
        .await
        .unwrap();
    open.uploads()
        .iter()
        .filter_map(|upload| upload.upload_id.clone())
        .collect()
}

/// How UploadPart, ListParts and Complete answer for `upload_id` of `bucket`/`key`.
async fn upload_calls(harness: &Harness, bucket: &str, key: &str, upload_id: &str) -> [String; 3] {
    let client = &harness.client;
    let part = client
        .upload_part()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .part_number(2)
        .body(ByteStream::from(b"late".to_vec()))
        .send()
        .await
        .map(|_| "ok".to_string())
        .unwrap_or_else(|error| format!("{} {}", status(&error), code(&error)));
    let parts = client
        .list_parts()
        .bucket(bucket)
        .key(key)
        .upload_id(upload_id)
        .send()
        .await
        .map(|_| "ok".to_string())
        .unwrap_or_else(|error| format!("{} {}", status(&error), code(&error)));
    let completed = complete(harness, bucket, key, upload_id, &[(1, "\"00\"")])
        .await
        .map(|_| "ok".to_string())
        .unwrap_or_else(|code| code);
    [part, parts, completed]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_uploads_are_aborted_once_their_age_passes_the_limit_and_free_their_slot() {
    const LIMIT: Duration = Duration::from_secs(2);
    let settings = S3Settings {
        abandon_uploads_after_s: LIMIT.as_secs(),
        max_open_uploads: 1,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    bucket(&harness, "expire").await;
    let old = create(&harness, "expire", "old").await;
    upload_part(&harness, "expire", "old", &old, 1, &pattern(1000, 1)).await;
    assert_eq!(open_upload_ids(&harness, "expire").await, [old.as_str()]);
    let old_dir = multipart_root(&harness).join(&old);
    assert_eq!(entries(&old_dir).len(), 1, "the part's file");
    let no_slot = harness
        .client
        .create_multipart_upload()
        .bucket("expire")
        .key("young")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&no_slot), "SlowDown", "the one slot is taken");

    // The sweeper runs every LIMIT/8; the upload goes once it is LIMIT old, not before.
    harness.advance(LIMIT - Duration::from_millis(1)).await;
    assert_eq!(
        open_upload_ids(&harness, "expire").await,
        [old.as_str()],
        "aborted before its age reached the limit"
    );
    harness.advance(LIMIT / 8 + Duration::from_millis(1)).await;
    assert!(
        open_upload_ids(&harness, "expire").await.is_empty(),
        "not aborted within a sweep of passing the limit"
    );
    assert!(!old_dir.exists(), "its part files are removed");
    assert_eq!(
        upload_calls(&harness, "expire", "old", &old).await,
        ["404 NoSuchUpload", "404 NoSuchUpload", "NoSuchUpload"].map(String::from)
    );

    // The slot is free; a fresh upload lives through several sweeps and completes.
    let young = create(&harness, "expire", "young").await;
    let bytes = pattern(3000, 2);
    let etag = upload_part(&harness, "expire", "young", &young, 1, &bytes).await;
    harness.advance(LIMIT / 2).await;
    assert_eq!(open_upload_ids(&harness, "expire").await, [young.as_str()]);
    complete(&harness, "expire", "young", &young, &[(1, &etag)])
        .await
        .unwrap();
    assert!(get_bytes(&harness.client, "expire", "young", None).await == bytes);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_limit_never_expires_uploads_and_a_restart_with_a_limit_aborts_old_ones_at_once() {
    let settings = S3Settings {
        abandon_uploads_after_s: 0,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    bucket(&harness, "keep").await;
    let upload_id = create(&harness, "keep", "k").await;
    upload_part(&harness, "keep", "k", &upload_id, 1, &pattern(500, 3)).await;
    // Older than a 1 s limit would allow, yet still open with its part.
    harness.advance(Duration::from_millis(1500)).await;
    assert_eq!(
        open_upload_ids(&harness, "keep").await,
        [upload_id.as_str()]
    );
    let dir = multipart_root(&harness).join(&upload_id);
    assert_eq!(entries(&dir).len(), 1);

    // A service over the same store and database with a 1 s limit aborts it while starting.
    let meta = MetaDb::open(&harness.data_dir.join(spinwise_s3::META_FILE))
        .await
        .unwrap();
    let limited = S3Settings {
        abandon_uploads_after_s: 1,
        ..S3Settings::default()
    };
    let restarted = SpinwiseS3::new(Arc::clone(&harness.store), meta, limited)
        .await
        .unwrap();
    assert!(restarted.upload_expiry().is_some());
    assert_eq!(
        restarted.meta().upload(&upload_id).await.unwrap(),
        None,
        "aborted by the start-up sweep"
    );
    assert!(!dir.exists());
    drop(restarted);
    assert!(open_upload_ids(&harness, "keep").await.is_empty());
    harness.server.stop().await;
}
