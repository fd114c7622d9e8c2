//! Hand-made HTTP/1.1 exchanges with the server: requests signed with SigV4 (aws-sigv4, payload
//! unsigned) or deliberately broken, written byte for byte on a TCP socket, so tests can send what
//! no SDK would (bad XML, lying Content-Length, huge headers, NUL in keys).

#![allow(dead_code)]

use super::ACCESS_KEY;
use aws_sigv4::http_request::{
    PercentEncodingMode, SignableBody, SignableRequest, SigningSettings, UriPathNormalizationMode,
    sign,
};
use aws_sigv4::sign::v4;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// The longest a test waits for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// An answer: status, and the body as text (lossy) and as bytes.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub body_bytes: Vec<u8>,
}

impl Answer {
    /// The `<Code>` of an S3 error document, if the body is one.
    pub fn code(&self) -> Option<&str> {
        let start = self.body.find("<Code>")? + "<Code>".len();
        let end = self.body[start..].find("</Code>")? + start;
        Some(&self.body[start..end])
    }
}

/// The headers SigV4 adds for `method target` with `headers` (name, value), signed with the keys.
pub fn signed_headers(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    access_key: &str,
    secret_key: &str,
) -> Vec<(String, String)> {
    let host = addr.to_string();
    signed_headers_for_host(&host, method, target, headers, access_key, secret_key)
}

/// [`signed_headers`] with `host` as the `Host` header (a virtual-hosted-style request).
pub fn signed_headers_for_host(
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    access_key: &str,
    secret_key: &str,
) -> Vec<(String, String)> {
    let keys = (access_key, secret_key);
    sign_headers(host, method, target, headers, keys, "UNSIGNED-PAYLOAD")
}

/// [`signed_headers`] for an `aws-chunked` body with unsigned chunks and trailers
/// (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`), as the SDKs stream bodies whose checksum they send
/// last; the caller frames the body ([`aws_chunked`]).
pub fn signed_streaming_headers(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> Vec<(String, String)> {
    let host = addr.to_string();
    let keys = (ACCESS_KEY, super::SECRET_KEY);
    let payload = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
    sign_headers(&host, method, target, headers, keys, payload)
}

/// `data` as one unsigned `aws-chunked` chunk, the closing chunk and the `trailers`.
pub fn aws_chunked(data: &[u8], trailers: &[(&str, &str)]) -> Vec<u8> {
    let mut body = format!("{:x}\r\n", data.len()).into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(b"\r\n0\r\n");
    for (name, value) in trailers {
        body.extend_from_slice(format!("{name}:{value}\r\n").as_bytes());
    }
    body.extend_from_slice(b"\r\n");
    body
}

fn sign_headers(
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    (access_key, secret_key): (&str, &str),
    payload: &str,
) -> Vec<(String, String)> {
    let mut all: Vec<(&str, &str)> = vec![("host", host), ("x-amz-content-sha256", payload)];
    all.extend_from_slice(headers);
    let identity =
        aws_credential_types::Credentials::new(access_key, secret_key, None, None, "wire").into();
    let params: aws_sigv4::http_request::SigningParams<'_> = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(SystemTime::now())
        .settings(s3_settings())
        .build()
        .expect("complete signing parameters")
        .into();
    let url = format!("http://{host}{target}");
    let signable = SignableRequest::new(
        method,
        url.as_str(),
        all.iter().copied(),
        SignableBody::Precomputed(payload.to_string()),
    )
    .expect("a signable request");
    let (instructions, _signature) = sign(signable, &params).expect("signing").into_parts();
    let (added, _query) = instructions.into_parts();
    let mut out: Vec<(String, String)> = all
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    out.extend(
        added
            .into_iter()
            .map(|header| (header.name().to_string(), header.value().to_string())),
    );
    out
}

/// `target` (a path, maybe with a query) presigned for `method` with SigV4 query parameters
/// valid for `lifetime` from `signed_at`, as `aws s3 presign` makes them: only `host` is signed
/// and the payload is unsigned. The SDK's presigner refuses lifetimes over a week; this one
/// does not, so tests can send what an old or hostile client would.
pub fn presigned_target(
    addr: SocketAddr,
    method: &str,
    target: &str,
    (signed_at, lifetime): (SystemTime, Duration),
    secret_key: &str,
) -> String {
    let host = addr.to_string();
    let identity =
        aws_credential_types::Credentials::new(ACCESS_KEY, secret_key, None, None, "wire").into();
    let mut settings = s3_settings();
    settings.signature_location = aws_sigv4::http_request::SignatureLocation::QueryParams;
    settings.expires_in = Some(lifetime);
    let params: aws_sigv4::http_request::SigningParams<'_> = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(signed_at)
        .settings(settings)
        .build()
        .expect("complete signing parameters")
        .into();
    let url = format!("http://{host}{target}");
    let headers = [("host", host.as_str())];
    let signable = SignableRequest::new(
        method,
        url.as_str(),
        headers.iter().copied(),
        SignableBody::UnsignedPayload,
    )
    .expect("a signable request");
    let (instructions, _signature) = sign(signable, &params).expect("signing").into_parts();
    let (_headers, query) = instructions.into_parts();
    let separator = if target.contains('?') { '&' } else { '?' };
    let query: Vec<String> = query
        .into_iter()
        .map(|(name, value)| format!("{name}={}", percent_encode(&value)))
        .collect();
    format!("{target}{separator}{}", query.join("&"))
}

/// Percent-encodes everything but S3's unreserved characters (a query parameter's value).
fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// S3's way: the path signed as sent (no second percent-encoding, no `..` normalization).
fn s3_settings() -> SigningSettings {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings
}

/// Writes `head` lines and `body` as one HTTP/1.1 request (`Connection: close`) and reads the
/// whole answer. `content_length` overrides the real length when a test wants to lie.
pub async fn exchange(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
    content_length: Option<&str>,
) -> Answer {
    let mut request = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    let length = content_length
        .map(str::to_string)
        .unwrap_or_else(|| body.len().to_string());
    request.extend_from_slice(
        format!("content-length: {length}\r\nconnection: close\r\n\r\n").as_bytes(),
    );
    request.extend_from_slice(body);
    tokio::time::timeout(ANSWER_TIMEOUT, send(addr, &request, false))
        .await
        .unwrap_or_else(|_| panic!("no answer within {ANSWER_TIMEOUT:?} to {method} {target}"))
}

/// Writes one request on an open connection, without `Connection: close`: `headers` as given
/// (signed by the caller), a `content-length` of `declared_length`, and `body` (which may be
/// shorter, as a client waiting for `100 Continue` sends nothing yet).
pub async fn send_on(
    socket: &mut TcpStream,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    declared_length: usize,
    body: &[u8],
) {
    let mut request = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    request.extend_from_slice(format!("content-length: {declared_length}\r\n\r\n").as_bytes());
    request.extend_from_slice(body);
    socket.write_all(&request).await.expect("writing a request");
}

/// Reads one answer (its head, lower-cased, and its `content-length` body) from an open
/// connection, leaving the connection open.
pub async fn answer_on(socket: &mut TcpStream) -> (String, Answer) {
    tokio::time::timeout(ANSWER_TIMEOUT, read_one_answer(socket))
        .await
        .unwrap_or_else(|_| panic!("no answer within {ANSWER_TIMEOUT:?}"))
}

async fn read_one_answer(socket: &mut TcpStream) -> (String, Answer) {
    let mut raw = Vec::new();
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.expect("reading an answer");
        assert!(read > 0, "the connection closed before an answer's head");
        raw.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| {
            value.trim().parse().expect("a numeric content-length")
        });
    while raw.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await.expect("reading an answer");
        assert!(read > 0, "the connection closed inside an answer's body");
        raw.extend_from_slice(&chunk[..read]);
    }
    let answer = parse_answer(&raw[..head_end + length]);
    (head, answer)
}

/// Writes `request` (raw bytes, maybe cut short) and closes the sending side, as a client that
/// dies mid-request; returns whatever the server answered.
pub async fn send_and_hang_up(addr: SocketAddr, request: &[u8]) -> Answer {
    tokio::time::timeout(ANSWER_TIMEOUT, send(addr, request, true))
        .await
        .unwrap_or_else(|_| panic!("the server kept a hung-up connection over {ANSWER_TIMEOUT:?}"))
}

async fn send(addr: SocketAddr, request: &[u8], hang_up: bool) -> Answer {
    let mut socket = TcpStream::connect(addr).await.expect("connecting");
    // The server may answer and close before reading everything (a refused body): a failed
    // write is then expected, and the answer is still read.
    let _ = socket.write_all(request).await;
    if hang_up {
        let _ = socket.shutdown().await;
    }
    let mut raw = Vec::new();
    let _ = socket.read_to_end(&mut raw).await;
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let head_end = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map_or(raw.len(), |end| end + 4);
    let status = String::from_utf8_lossy(&raw[..head_end])
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body_bytes = raw[head_end..].to_vec();
    let body = String::from_utf8_lossy(&body_bytes).into_owned();
    Answer {
        status,
        body,
        body_bytes,
    }
}
