//! `EncodingType=url` through aws-sdk-s3 (which, unlike botocore, hands back what the server
//! wrote without decoding it): ListObjectsV2, ListObjects and ListMultipartUploads encode every
//! key-like field as S3 does (`+` as `%2B`, `%` as `%25`, a space as `+`, UTF-8 as `%XX`, `/`
//! kept), echo the request's Prefix, Delimiter, StartAfter and markers encoded, and leave
//! everything as stored without it. A client that form-decodes gets the stored keys back.

use crate::common;

use aws_sdk_s3::types::EncodingType;
use common::{bucket, code, put, start, status};

const AWKWARD_KEYS: [&str; 5] = [
    "c++/a+b.txt",
    "c++/100%25.txt",
    "c++/my file #1?.txt",
    "café/日本.txt",
    "plain.txt",
];

/// Form-decoding, as botocore does for an `EncodingType=url` answer.
fn form_decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap();
            decoded.push(u8::from_str_radix(hex, 16).unwrap());
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_objects_v2_url_encodes_keys_prefixes_and_echoed_parameters() {
    let harness = start().await;
    bucket(&harness, "names").await;
    for key in AWKWARD_KEYS {
        put(&harness.client, "names", key, key.as_bytes()).await;
    }
    let listed = harness
        .client
        .list_objects_v2()
        .bucket("names")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(
        keys,
        [
            "c%2B%2B/100%2525.txt",
            "c%2B%2B/a%2Bb.txt",
            "c%2B%2B/my+file+%231%3F.txt",
            "caf%C3%A9/%E6%97%A5%E6%9C%AC.txt",
            "plain.txt",
        ]
    );
    let decoded: Vec<String> = keys.iter().map(|key| form_decode(key)).collect();
    let mut stored = AWKWARD_KEYS.map(String::from).to_vec();
    stored.sort();
    assert_eq!(decoded, stored, "a form-decoding client gets the keys back");
    assert_eq!(listed.encoding_type(), Some(&EncodingType::Url));

    let grouped = harness
        .client
        .list_objects_v2()
        .bucket("names")
        .prefix("c++/")
        .delimiter(" ")
        .start_after("c++/2")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap();
    assert_eq!(grouped.prefix(), Some("c%2B%2B/"));
    assert_eq!(grouped.delimiter(), Some("+"));
    assert_eq!(grouped.start_after(), Some("c%2B%2B/2"));
    let grouped_keys: Vec<&str> = grouped.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(grouped_keys, ["c%2B%2B/a%2Bb.txt"]);
    let prefixes: Vec<&str> = grouped
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["c%2B%2B/my+"]);

    let unencoded = harness
        .client
        .list_objects_v2()
        .bucket("names")
        .prefix("c++/")
        .send()
        .await
        .unwrap();
    let raw: Vec<&str> = unencoded
        .contents()
        .iter()
        .filter_map(|o| o.key())
        .collect();
    assert_eq!(
        raw,
        ["c++/100%25.txt", "c++/a+b.txt", "c++/my file #1?.txt"]
    );
    assert_eq!(unencoded.prefix(), Some("c++/"));
    assert_eq!(unencoded.encoding_type(), None);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_objects_v1_url_encodes_keys_and_markers() {
    let harness = start().await;
    bucket(&harness, "names").await;
    for key in AWKWARD_KEYS {
        put(&harness.client, "names", key, b"x").await;
    }
    let page = harness
        .client
        .list_objects()
        .bucket("names")
        .marker("c++/100%25.txt")
        .max_keys(1)
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = page.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["c%2B%2B/a%2Bb.txt"]);
    assert_eq!(page.marker(), Some("c%2B%2B/100%2525.txt"));
    assert_eq!(page.next_marker(), Some("c%2B%2B/a%2Bb.txt"));
    assert_eq!(page.is_truncated(), Some(true));
    // The decoded NextMarker resumes the listing where it stopped.
    let next = harness
        .client
        .list_objects()
        .bucket("names")
        .marker(form_decode(page.next_marker().unwrap()))
        .max_keys(1)
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = next.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["c++/my file #1?.txt"]);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_multipart_uploads_url_encodes_keys_prefixes_and_markers() {
    let harness = start().await;
    bucket(&harness, "names").await;
    for key in ["c++/a+b.bin", "c++/x y.bin"] {
        harness
            .client
            .create_multipart_upload()
            .bucket("names")
            .key(key)
            .send()
            .await
            .unwrap();
    }
    let listed = harness
        .client
        .list_multipart_uploads()
        .bucket("names")
        .prefix("c++/")
        .key_marker("c++/a")
        .encoding_type(EncodingType::Url)
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.uploads().iter().filter_map(|u| u.key()).collect();
    assert_eq!(keys, ["c%2B%2B/a%2Bb.bin", "c%2B%2B/x+y.bin"]);
    assert_eq!(listed.prefix(), Some("c%2B%2B/"));
    assert_eq!(listed.key_marker(), Some("c%2B%2B/a"));
    assert_eq!(listed.encoding_type(), Some(&EncodingType::Url));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_encoding_type_is_invalid_argument() {
    let harness = start().await;
    bucket(&harness, "names").await;
    let refused = harness
        .client
        .list_objects_v2()
        .bucket("names")
        .encoding_type(EncodingType::from("base64"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&refused), "InvalidArgument");
    assert_eq!(status(&refused), 400);
    harness.server.stop().await;
}
