//! Malformed requests against a real server: bad XML, bad signatures, absurd lengths, NUL and
//! `..` in keys, lying Content-Length, huge headers, and thousands of mutated requests fed to the
//! service in process. Each gets an S3 error (or a plain HTTP refusal where hyper itself refuses
//! the bytes), never a crash, never a file outside the data directory, and the server keeps
//! serving afterwards.

use crate::common;

use common::raw::request_from_bytes;
use common::wire::{Answer, answer_on, exchange, send_and_hang_up, send_on, signed_headers};
use common::{ACCESS_KEY, Harness, SECRET_KEY, files_under, pattern, start};
use s3s::access::{S3Access, S3AccessContext};
use s3s::service::{S3Service, S3ServiceBuilder};
use spinwise_s3::{MetaDb, S3Settings, SpinwiseS3};
use std::sync::Arc;

async fn signed(
    harness: &Harness,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let addr = harness.server.local_addr();
    let headers = signed_headers(addr, method, target, headers, ACCESS_KEY, SECRET_KEY);
    exchange(addr, method, target, &headers, body, None).await
}

async fn assert_still_serving(harness: &Harness) {
    let buckets = harness.client.list_buckets().send().await;
    assert!(buckets.is_ok(), "the server stopped answering: {buckets:?}");
}

fn assert_error(answer: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(
        (answer.status, answer.code()),
        (status, Some(code)),
        "{what}: {answer:?}"
    );
}

fn assert_only_data_dir(harness: &Harness) {
    let outside: Vec<String> = files_under(harness.dir.path())
        .into_iter()
        .filter(|file| file != "data" && !file.starts_with("data/"))
        .collect();
    assert!(
        outside.is_empty(),
        "files outside the data directory: {outside:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_xml_bodies_are_malformed_xml_and_change_nothing() {
    let harness = start().await;
    assert_eq!(
        signed(&harness, "PUT", "/bucket", &[], b"").await.status,
        200
    );
    let answer = signed(&harness, "PUT", "/bucket/kept", &[], b"kept").await;
    assert_eq!(answer.status, 200, "{answer:?}");

    let truncated = b"<Delete><Object><Key>kept</Key></Object";
    let answer = signed(&harness, "POST", "/bucket?delete", &[], truncated).await;
    assert_error(&answer, 400, "MalformedXML", "a truncated Delete document");
    let answer = signed(&harness, "POST", "/bucket?delete", &[], b"\x00\xff<<>>").await;
    assert_error(
        &answer,
        400,
        "MalformedXML",
        "binary junk as a Delete document",
    );
    let answer = signed(
        &harness,
        "PUT",
        "/other",
        &[],
        b"<CreateBucketConfiguration>",
    )
    .await;
    assert_error(
        &answer,
        400,
        "MalformedXML",
        "a broken CreateBucketConfiguration",
    );

    let kept = signed(&harness, "GET", "/bucket/kept", &[], b"").await;
    assert_eq!((kept.status, kept.body.as_str()), (200, "kept"));
    let other = signed(&harness, "HEAD", "/other", &[], b"").await;
    assert_eq!(
        other.status, 404,
        "a refused CreateBucket created the bucket"
    );
    assert_still_serving(&harness).await;
}

/// boto3 sends PutObject with `Expect: 100-continue`; refused before the body, it sends no body
/// and reuses the connection. hyper could then read the next request's first bytes as the
/// refused body (a GET arrived as `ET /…` and failed its signature). A refusal therefore closes
/// the connection; an accepted body keeps it open for the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_body_closes_its_connection_and_an_accepted_one_keeps_it() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    assert_eq!(signed(&harness, "PUT", "/kept", &[], b"").await.status, 200);

    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let put = signed_headers(addr, "PUT", "/kept/a", &[], ACCESS_KEY, SECRET_KEY);
    send_on(&mut socket, "PUT", "/kept/a", &put, 3, b"abc").await;
    let (head, answer) = answer_on(&mut socket).await;
    assert_eq!(answer.status, 200, "{head}{answer:?}");
    assert!(!head.contains("connection: close"), "{head}");
    let get = signed_headers(addr, "GET", "/kept/a", &[], ACCESS_KEY, SECRET_KEY);
    send_on(&mut socket, "GET", "/kept/a", &get, 0, b"").await;
    let (head, answer) = answer_on(&mut socket).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, "abc"),
        "{head}"
    );

    let expect = [("expect", "100-continue")];
    for target in ["/missing/k", "/kept/too-big"] {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        let put = signed_headers(addr, "PUT", target, &expect, ACCESS_KEY, SECRET_KEY);
        // One byte into an unknown bucket (boto3's case); 6 GiB, over the single-PUT limit.
        let declared = if target == "/missing/k" { 1 } else { 6 << 30 };
        send_on(&mut socket, "PUT", target, &put, declared, b"").await;
        let (head, answer) = answer_on(&mut socket).await;
        assert!(answer.status >= 400, "{target}: {head}{answer:?}");
        assert_closes(&mut socket, &head, target).await;
    }
    let kept = signed(&harness, "GET", "/kept/a", &[], b"").await;
    assert_eq!((kept.status, kept.body.as_str()), (200, "abc"));
}

/// An empty PUT that asked `Expect: 100-continue` is answered without a `100 Continue` (there is
/// no body to wait for). botocore before 1.43.77, which the aws CLI 1.46 bundles, then misreads
/// the next answer on that connection (`aws s3 sync` stalled 30 s and failed an upload part), so
/// that answer closes the connection; the same empty PUT without `Expect` keeps it open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_put_that_expected_continue_closes_its_connection_after_its_answer() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    assert_eq!(signed(&harness, "PUT", "/kept", &[], b"").await.status, 200);

    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let put = signed_headers(addr, "PUT", "/kept/empty", &[], ACCESS_KEY, SECRET_KEY);
    send_on(&mut socket, "PUT", "/kept/empty", &put, 0, b"").await;
    let (head, answer) = answer_on(&mut socket).await;
    assert_eq!(answer.status, 200, "{head}{answer:?}");
    assert!(!head.contains("connection: close"), "{head}");

    let expect = [("expect", "100-continue")];
    let put = signed_headers(addr, "PUT", "/kept/empty", &expect, ACCESS_KEY, SECRET_KEY);
    send_on(&mut socket, "PUT", "/kept/empty", &put, 0, b"").await;
    let (head, answer) = answer_on(&mut socket).await;
    assert_eq!(answer.status, 200, "{head}{answer:?}");
    assert!(
        !head.contains(" 100 "),
        "a 100 Continue for no body: {head}"
    );
    assert_closes(&mut socket, &head, "the empty PUT").await;
    let kept = signed(&harness, "GET", "/kept/empty", &[], b"").await;
    assert_eq!((kept.status, kept.body.as_str()), (200, ""));
}

/// Asserts that the answer whose head is `head` said `Connection: close` and that the server
/// then ended the connection (within 10 s).
async fn assert_closes(socket: &mut tokio::net::TcpStream, head: &str, what: &str) {
    assert!(head.contains("connection: close"), "{what}: {head}");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::io::AsyncReadExt::read_to_end(socket, &mut rest),
    )
    .await;
    assert!(
        matches!(closed, Ok(Ok(0))),
        "{what}: the connection stayed open: {closed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signatures_are_refused_with_s3_errors() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    let mut headers = signed_headers(addr, "GET", "/", &[], ACCESS_KEY, SECRET_KEY);
    let authorization = headers
        .iter_mut()
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .expect("the signer adds an Authorization header");
    let good = authorization.1.clone();

    let mut flipped = good.clone().into_bytes();
    let last = flipped.len() - 1;
    flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
    authorization.1 = String::from_utf8(flipped).unwrap();
    let answer = exchange(addr, "GET", "/", &headers, b"", None).await;
    assert_error(
        &answer,
        403,
        "SignatureDoesNotMatch",
        "one flipped signature digit",
    );

    let broken_forms = [
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 Credential=, SignedHeaders=, Signature=",
        "AWS4-HMAC-SHA256 Credential=x/y/z, SignedHeaders=host, Signature=zz",
        "Bearer 123",
    ];
    for form in broken_forms {
        let mut headers = headers.clone();
        for (name, value) in headers.iter_mut() {
            if name.eq_ignore_ascii_case("authorization") {
                *value = form.to_string();
            }
        }
        let answer = exchange(addr, "GET", "/", &headers, b"", None).await;
        assert!(
            (400..500).contains(&answer.status) && answer.code().is_some(),
            "Authorization `{form}` got {answer:?}"
        );
    }

    let presigned = "/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=SPINWISETESTACCESS01%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
    let answer = exchange(
        addr,
        "GET",
        presigned,
        &[("host".into(), addr.to_string())],
        b"",
        None,
    )
    .await;
    assert!(
        (400..500).contains(&answer.status) && answer.code().is_some(),
        "a bad presigned URL got {answer:?}"
    );
    assert_still_serving(&harness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_and_lying_lengths_store_nothing() {
    let harness = start().await;
    assert_eq!(
        signed(&harness, "PUT", "/bucket", &[], b"").await.status,
        200
    );
    let addr = harness.server.local_addr();

    let headers = signed_headers(addr, "PUT", "/bucket/huge", &[], ACCESS_KEY, SECRET_KEY);
    let terabytes = (10u64 << 40).to_string();
    let answer = exchange(
        addr,
        "PUT",
        "/bucket/huge",
        &headers,
        b"x",
        Some(&terabytes),
    )
    .await;
    assert_error(&answer, 400, "EntityTooLarge", "a 10 TiB Content-Length");

    let answer = exchange(
        addr,
        "PUT",
        "/bucket/huge",
        &headers,
        b"x",
        Some("99999999999999999999999"),
    )
    .await;
    assert_eq!(
        answer.status, 400,
        "an unparsable Content-Length: {answer:?}"
    );

    // A client that promises 1 MiB, sends 1 KiB and dies: nothing of it is stored.
    let headers = signed_headers(addr, "PUT", "/bucket/cut", &[], ACCESS_KEY, SECRET_KEY);
    let mut request = b"PUT /bucket/cut HTTP/1.1\r\n".to_vec();
    for (name, value) in &headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(b"content-length: 1048576\r\n\r\n");
    request.extend_from_slice(&pattern(1024, 7));
    let _ = send_and_hang_up(addr, &request).await;

    for key in ["huge", "cut"] {
        let answer = signed(&harness, "HEAD", &format!("/bucket/{key}"), &[], b"").await;
        assert_eq!(answer.status, 404, "`{key}` exists after a refused PUT");
    }
    let status = harness.store.status().await.unwrap();
    assert_eq!(status.objects, 0, "the store holds a refused object");
    assert_still_serving(&harness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_and_dot_dot_keys_and_huge_headers_touch_nothing_outside_the_data_dir() {
    let harness = start().await;
    assert_eq!(
        signed(&harness, "PUT", "/bucket", &[], b"").await.status,
        200
    );

    let answer = signed(&harness, "PUT", "/bucket/a%00b", &[], b"nul").await;
    assert!(
        answer.status == 400 && answer.code().is_some(),
        "a key with NUL got {answer:?}"
    );
    for key in [
        "..%2F..%2Fescaped",
        "../../escaped",
        "%2E%2E/%2E%2E/escaped",
        "a/../../b",
    ] {
        let target = format!("/bucket/{key}");
        let answer = signed(&harness, "PUT", &target, &[], b"dots").await;
        // `%2F` inside a segment is signed differently by clients and s3s (403): still an S3
        // error, and what matters here is that no path outside the data directory is touched.
        assert!(
            answer.status == 200
                || ((400..500).contains(&answer.status) && answer.code().is_some()),
            "PUT {target} got {answer:?}"
        );
    }
    let long_key = "k".repeat(1025);
    let answer = signed(&harness, "PUT", &format!("/bucket/{long_key}"), &[], b"x").await;
    assert_error(&answer, 400, "KeyTooLongError", "a 1025-byte key");

    let addr = harness.server.local_addr();
    let mut headers = signed_headers(addr, "GET", "/", &[], ACCESS_KEY, SECRET_KEY);
    headers.push(("x-amz-meta-huge".into(), "v".repeat(1 << 20)));
    let answer = exchange(addr, "GET", "/", &headers, b"", None).await;
    assert!(
        (400..500).contains(&answer.status),
        "a 1 MiB header got {answer:?}"
    );

    assert_only_data_dir(&harness);
    assert_still_serving(&harness).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nonsense_ranges_list_parameters_and_tokens_get_s3_errors_or_sane_answers() {
    let harness = start().await;
    assert_eq!(
        signed(&harness, "PUT", "/bucket", &[], b"").await.status,
        200
    );
    assert_eq!(
        signed(&harness, "PUT", "/bucket/key", &[], b"0123456789")
            .await
            .status,
        200
    );

    for range in [
        "bytes=abc",
        "bytes=5-2",
        "bytes=-",
        "bits=0-1",
        "bytes=0-1,3-4",
    ] {
        let answer = signed(&harness, "GET", "/bucket/key", &[("range", range)], b"").await;
        assert!(
            answer.status == 200 && answer.body == "0123456789"
                || (400..500).contains(&answer.status) && answer.code().is_some(),
            "Range `{range}` got {answer:?}"
        );
    }
    let answer = signed(
        &harness,
        "GET",
        "/bucket/key",
        &[("range", "bytes=99999999999-")],
        b"",
    )
    .await;
    assert_error(&answer, 416, "InvalidRange", "a range past the end");

    for query in [
        "list-type=2&max-keys=-5",
        "list-type=2&max-keys=99999999999999999999",
        "list-type=2&continuation-token=%FF%FE",
        "list-type=2&continuation-token=bm90IGEgdG9rZW4",
        "list-type=2&prefix=%00",
    ] {
        let answer = signed(&harness, "GET", &format!("/bucket?{query}"), &[], b"").await;
        assert!(
            answer.status == 200 || (400..500).contains(&answer.status) && answer.code().is_some(),
            "ListObjectsV2 `{query}` got {answer:?}"
        );
    }
    assert_still_serving(&harness).await;
}

/// Lets every request through: the mutated requests below are unsigned, and the point is to reach
/// the handlers and parsers behind authentication.
struct Open;

#[async_trait::async_trait]
impl S3Access for Open {
    async fn check(&self, _cx: &mut S3AccessContext<'_>) -> s3s::S3Result<()> {
        Ok(())
    }
}

/// Requests the mutations start from: one per kind of call, unsigned.
const SEEDS: &[&str] = &[
    "PUT /fuzz\n\n",
    "PUT /fuzz/a/b.txt\ncontent-type: text/plain\nx-amz-meta-one: 1\n\nhello",
    "GET /fuzz/a/b.txt\nrange: bytes=1-3\n\n",
    "HEAD /fuzz/a/b.txt\n\n",
    "GET /fuzz?list-type=2&prefix=a/&delimiter=/&max-keys=2\n\n",
    "GET /fuzz?list-type=2&continuation-token=YQ&start-after=a\n\n",
    "POST /fuzz?delete\n\n<Delete><Object><Key>a/b.txt</Key></Object><Quiet>true</Quiet></Delete>",
    "PUT /fuzz/copy\nx-amz-copy-source: /fuzz/a/b.txt\nx-amz-metadata-directive: REPLACE\n\n",
    "DELETE /fuzz/a/b.txt\n\n",
    "GET /\n\n",
    "PUT /fuzz/md5\ncontent-md5: XrY7u+Ae7tCTyyK7j1rNww==\n\nhello world",
    "PUT /fuzz/sum\nx-amz-checksum-crc32: DUoRhQ==\n\nhello world",
    "POST /fuzz/a/b.txt?restore\n\n<RestoreRequest><Days>1</Days></RestoreRequest>",
    "POST /fuzz/big?uploads\n\n",
    "DELETE /fuzz\n\n",
];

/// Fragments spliced in by the mutator: the places parsers are most likely to trip.
const TOKENS: &[&[u8]] = &[
    b"..",
    b"%00",
    b"%2F",
    b"%",
    b"?",
    b"&",
    b"=",
    b"\n",
    b"/",
    b"<",
    b">",
    b"</Key>",
    b"<Object>",
    b"range: bytes=",
    b"x-amz-copy-source: ",
    b"content-length: 18446744073709551615",
    b"max-keys=",
    b"99999999999999999999",
    b"-1",
    b"uploadId=",
    b"partNumber=0",
    b"?uploads",
    b"?delete",
    b"?restore",
    b"?tagging",
    b"x-amz-meta-",
    b"\xff\xfe",
    b"&#0;",
    b"]]>",
];

struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut bytes = seed.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(bytes.len() + 1);
            match self.below(4) {
                0 if !bytes.is_empty() => {
                    let at = at.min(bytes.len() - 1);
                    bytes[at] = self.next() as u8;
                }
                1 => {
                    let end = (at + self.below(8)).min(bytes.len());
                    bytes.drain(at..end);
                }
                _ => {
                    let token = TOKENS[self.below(TOKENS.len())];
                    bytes.splice(at..at, token.iter().copied());
                }
            }
        }
        bytes
    }
}

async fn open_service(harness: &Harness) -> S3Service {
    let meta = MetaDb::open(&harness.data_dir.join("fuzz-meta.sqlite"))
        .await
        .unwrap();
    let s3 = SpinwiseS3::new(Arc::clone(&harness.store), meta, S3Settings::default())
        .await
        .unwrap();
    let mut builder = S3ServiceBuilder::new(s3);
    builder.set_access(Open);
    builder.build()
}

/// Answers `request` and reads at most 1 MiB of the body; the status, or why there was none.
async fn answer_in_process(
    service: &S3Service,
    request: http::Request<s3s::Body>,
) -> Result<u16, String> {
    use http_body_util::BodyExt as _;
    let response = service
        .call(request)
        .await
        .map_err(|error| format!("{error:?}"))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        read += frame.data_ref().map_or(0, |data| data.len());
        if read > 1 << 20 {
            break;
        }
    }
    Ok(status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_mutated_requests_never_crash_or_escape_the_data_dir() {
    let harness = start().await;
    let service = open_service(&harness).await;
    let mut mutator = Mutator(0x5eed_5eed_5eed_5eed);
    let mut answered = 0u32;
    for case in 0..2_000u32 {
        let seed = SEEDS[case as usize % SEEDS.len()].as_bytes();
        let bytes = if case < SEEDS.len() as u32 {
            seed.to_vec()
        } else {
            mutator.mutate(seed)
        };
        let Some(request) = request_from_bytes(&bytes) else {
            continue;
        };
        let status = answer_in_process(&service, request)
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "case {case} {:?}: the service failed: {error}",
                    String::from_utf8_lossy(&bytes)
                )
            });
        assert!(
            status != 500,
            "case {case} {:?}: 500 Internal Error",
            String::from_utf8_lossy(&bytes)
        );
        answered += 1;
    }
    // Most mutations of the request line or a header name make bytes hyper itself would refuse;
    // a quarter reaching the service is thousands of handler and parser calls over the run.
    assert!(
        answered > 500,
        "only {answered} of 2000 mutations reached the service"
    );
    assert_only_data_dir(&harness);
    assert_still_serving(&harness).await;
}
