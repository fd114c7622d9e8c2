//! Standard object headers through aws-sdk-s3: what PutObject, CreateMultipartUpload and
//! CopyObject send as Cache-Control, Content-Disposition, Content-Encoding, Content-Language and
//! Expires comes back on GET and HEAD (staged, migrated, from a restored copy, after a restart),
//! without the `aws-chunked` framing the SDK streams bodies with; CopyObject keeps them or takes
//! the request's by its directive; `response-*` overrides change one signed GET or HEAD and
//! never the object, and an anonymous read with one is refused.

use crate::common;

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    BucketCannedAcl, CompletedMultipartUpload, CompletedPart, MetadataDirective, RestoreRequest,
};
use common::wire::{aws_chunked, exchange, signed_streaming_headers};
use common::{bucket, get_bytes, pattern, restart, start, start_with};
use spinwise_s3::{RestoreMode, S3Settings};

const DISPOSITION: &str = "attachment; filename=\"report 2026.pdf\"";
/// 2026-10-21 07:28:00 UTC, whole seconds as an HTTP-date carries.
const EXPIRES_EPOCH_S: i64 = 1_792_567_680;

/// The five headers as a GET or HEAD shows them (`None` where absent).
#[derive(Debug, PartialEq, Eq)]
struct Shown {
    cache_control: Option<String>,
    content_disposition: Option<String>,
    content_encoding: Option<String>,
    content_language: Option<String>,
    expires_epoch_s: Option<i64>,
}

fn sent() -> Shown {
    Shown {
        cache_control: Some("max-age=86400, immutable".into()),
        content_disposition: Some(DISPOSITION.into()),
        content_encoding: Some("gzip".into()),
        content_language: Some("de-CH".into()),
        expires_epoch_s: Some(EXPIRES_EPOCH_S),
    }
}

/// Shows the five headers of a GetObject or HeadObject output (distinct generated types).
macro_rules! shown {
    ($output:expr) => {{
        let output = &$output;
        #[allow(deprecated)] // `expires`: the SDK keeps it, deprecated for `expires_string`
        let expires_epoch_s = output.expires().map(|date| date.secs());
        Shown {
            cache_control: output.cache_control().map(str::to_string),
            content_disposition: output.content_disposition().map(str::to_string),
            content_encoding: output.content_encoding().map(str::to_string),
            content_language: output.content_language().map(str::to_string),
            expires_epoch_s,
        }
    }};
}

async fn head(client: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Shown {
    let output = client
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    shown!(output)
}

async fn get(client: &aws_sdk_s3::Client, bucket: &str, key: &str) -> (Shown, Vec<u8>) {
    let output = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let shown = shown!(output);
    (shown, output.body.collect().await.unwrap().to_vec())
}

async fn put_with_headers(client: &aws_sdk_s3::Client, bucket: &str, key: &str, bytes: &[u8]) {
    #[allow(deprecated)]
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .cache_control("max-age=86400, immutable")
        .content_disposition(DISPOSITION)
        .content_encoding("gzip")
        .content_language("de-CH")
        .expires(DateTime::from_secs(EXPIRES_EPOCH_S))
        .body(ByteStream::from(bytes.to_vec()))
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_headers_come_back_on_get_and_head_staged_migrated_and_after_a_restart() {
    let harness = start().await;
    bucket(&harness, "docs").await;
    let bytes = pattern(2 << 20, 5);
    put_with_headers(&harness.client, "docs", "report.pdf.gz", &bytes).await;
    assert_eq!(head(&harness.client, "docs", "report.pdf.gz").await, sent());
    let (shown, body) = get(&harness.client, "docs", "report.pdf.gz").await;
    assert_eq!(shown, sent());
    assert!(body == bytes);

    common::cold::migrate_everything(&harness.store).await;
    let (shown, body) = get(&harness.client, "docs", "report.pdf.gz").await;
    assert_eq!(shown, sent(), "a migrated object");
    assert!(body == bytes);

    let harness = restart(harness, S3Settings::default()).await;
    assert_eq!(head(&harness.client, "docs", "report.pdf.gz").await, sent());
    // An object sent without them shows none.
    common::put(&harness.client, "docs", "plain.txt", b"plain").await;
    let none = Shown {
        cache_control: None,
        content_disposition: None,
        content_encoding: None,
        content_language: None,
        expires_epoch_s: None,
    };
    assert_eq!(head(&harness.client, "docs", "plain.txt").await, none);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multipart_upload_gives_its_object_the_headers_create_was_sent() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "docs").await;
    #[allow(deprecated)]
    let created = client
        .create_multipart_upload()
        .bucket("docs")
        .key("big.gz")
        .cache_control("max-age=86400, immutable")
        .content_disposition(DISPOSITION)
        .content_encoding("gzip")
        .content_language("de-CH")
        .expires(DateTime::from_secs(EXPIRES_EPOCH_S))
        .send()
        .await
        .unwrap();
    let upload_id = created.upload_id().unwrap();
    let parts = [pattern(5 << 20, 1), pattern(1000, 2)];
    let mut completed = Vec::new();
    for (number, part) in (1..).zip(&parts) {
        let uploaded = client
            .upload_part()
            .bucket("docs")
            .key("big.gz")
            .upload_id(upload_id)
            .part_number(number)
            .body(ByteStream::from(part.clone()))
            .send()
            .await
            .unwrap();
        completed.push(
            CompletedPart::builder()
                .part_number(number)
                .e_tag(uploaded.e_tag().unwrap())
                .build(),
        );
    }
    client
        .complete_multipart_upload()
        .bucket("docs")
        .key("big.gz")
        .upload_id(upload_id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(completed))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let (shown, body) = get(client, "docs", "big.gz").await;
    assert_eq!(shown, sent());
    assert!(body == parts.concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aws_chunked_body_stores_only_the_objects_own_content_encoding() {
    let harness = start().await;
    bucket(&harness, "docs").await;
    let addr = harness.server.local_addr();
    let put = |key: &'static str, encoding: &'static str| async move {
        let headers = [
            ("content-encoding", encoding),
            ("x-amz-decoded-content-length", "5"),
            ("x-amz-trailer", "x-amz-checksum-crc32"),
        ];
        let target = format!("/docs/{key}");
        let signed = signed_streaming_headers(addr, "PUT", &target, &headers);
        // CRC-32 of "hello" is 0x3610a686.
        let body = aws_chunked(b"hello", &[("x-amz-checksum-crc32", "NhCmhg==")]);
        exchange(addr, "PUT", &target, &signed, &body, None).await
    };
    let answer = put("gzipped", "aws-chunked,gzip").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = put("framed", "aws-chunked").await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    let client = &harness.client;
    let (shown, body) = get(client, "docs", "gzipped").await;
    assert_eq!(
        (shown.content_encoding.as_deref(), &body[..]),
        (Some("gzip"), &b"hello"[..])
    );
    let (shown, body) = get(client, "docs", "framed").await;
    assert_eq!((shown.content_encoding, &body[..]), (None, &b"hello"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_keeps_the_source_headers_and_replace_takes_the_requests() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "docs").await;
    put_with_headers(client, "docs", "source", b"body").await;
    client
        .copy_object()
        .bucket("docs")
        .key("kept")
        .copy_source("docs/source")
        .send()
        .await
        .unwrap();
    assert_eq!(head(client, "docs", "kept").await, sent());

    client
        .copy_object()
        .bucket("docs")
        .key("replaced")
        .copy_source("docs/source")
        .metadata_directive(MetadataDirective::Replace)
        .content_disposition("inline")
        .send()
        .await
        .unwrap();
    let replaced = head(client, "docs", "replaced").await;
    assert_eq!(replaced.content_disposition.as_deref(), Some("inline"));
    assert_eq!(
        (replaced.cache_control, replaced.content_encoding),
        (None, None),
        "REPLACE takes only what the request sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_overrides_change_one_signed_get_or_head_and_never_the_object() {
    let harness = start().await;
    let client = &harness.client;
    bucket(&harness, "docs").await;
    put_with_headers(client, "docs", "report", b"%PDF").await;
    #[allow(deprecated)]
    let overridden = client
        .get_object()
        .bucket("docs")
        .key("report")
        .response_content_type("application/pdf")
        .response_content_disposition("inline")
        .response_cache_control("no-store")
        .response_content_language("en")
        .response_content_encoding("identity")
        .response_expires(DateTime::from_secs(EXPIRES_EPOCH_S + 3600))
        .send()
        .await
        .unwrap();
    assert_eq!(overridden.content_type(), Some("application/pdf"));
    assert_eq!(
        shown!(overridden),
        Shown {
            cache_control: Some("no-store".into()),
            content_disposition: Some("inline".into()),
            content_encoding: Some("identity".into()),
            content_language: Some("en".into()),
            expires_epoch_s: Some(EXPIRES_EPOCH_S + 3600),
        }
    );
    let head = client
        .head_object()
        .bucket("docs")
        .key("report")
        .response_content_disposition("attachment; filename=\"other.pdf\"")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.content_disposition(),
        Some("attachment; filename=\"other.pdf\"")
    );
    assert_eq!(head.cache_control(), Some("max-age=86400, immutable"));
    let (stored, body) = get(client, "docs", "report").await;
    assert_eq!(stored, sent(), "an override changed the stored headers");
    assert_eq!(body, b"%PDF");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_read_with_an_override_is_invalid_request() {
    let harness = start().await;
    let client = &harness.client;
    client
        .create_bucket()
        .bucket("open")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    common::put(client, "open", "file.txt", b"for everyone").await;
    let addr = harness.server.local_addr();
    let headers = [("host".to_string(), addr.to_string())];
    let plain = exchange(addr, "GET", "/open/file.txt", &headers, b"", None).await;
    assert_eq!((plain.status, plain.body.as_str()), (200, "for everyone"));
    for method in ["GET", "HEAD"] {
        let target = "/open/file.txt?response-content-disposition=attachment";
        let refused = exchange(addr, method, target, &headers, b"", None).await;
        assert_eq!(refused.status, 400, "{method}: {refused:?}");
    }
    let refused = exchange(
        addr,
        "GET",
        "/open/file.txt?response-content-type=text/html",
        &headers,
        b"",
        None,
    )
    .await;
    assert_eq!(refused.code(), Some("InvalidRequest"), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_copy_serves_the_objects_headers_and_the_overrides() {
    let mut config = common::config(None);
    config.time_factor = 0.02;
    let settings = S3Settings {
        default_restore_mode: RestoreMode::Async,
        ..S3Settings::default()
    };
    let harness = start_with(config, settings).await;
    let client = &harness.client;
    bucket(&harness, "vault").await;
    let bytes = pattern(1 << 20, 9);
    put_with_headers(client, "vault", "tape.gz", &bytes).await;
    common::cold::migrate_everything(&harness.store).await;
    client
        .restore_object()
        .bucket("vault")
        .key("tape.gz")
        .restore_request(RestoreRequest::builder().days(1).build())
        .send()
        .await
        .unwrap();
    common::eventually("the restore finished", async || {
        head_restore(client)
            .await
            .contains("ongoing-request=\"false\"")
    })
    .await;
    let (shown, body) = get(client, "vault", "tape.gz").await;
    assert_eq!(shown, sent(), "the restored copy's GET");
    assert!(body == bytes);
    let overridden = client
        .get_object()
        .bucket("vault")
        .key("tape.gz")
        .response_content_disposition("inline")
        .send()
        .await
        .unwrap();
    assert_eq!(overridden.content_disposition(), Some("inline"));
    assert!(get_bytes(client, "vault", "tape.gz", Some("bytes=0-9")).await == bytes[..10]);
}

async fn head_restore(client: &aws_sdk_s3::Client) -> String {
    let head = client
        .head_object()
        .bucket("vault")
        .key("tape.gz")
        .send()
        .await
        .unwrap();
    head.restore().unwrap_or_default().to_string()
}
