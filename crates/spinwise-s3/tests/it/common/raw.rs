//! Raw requests: arbitrary bytes → an HTTP request for the s3s service, and a SigV4 signer for
//! hand-made requests. Shared by the malformed-request tests and the fuzz targets (fuzz/), so the
//! fuzzer and CI feed the service the same shape of input.
//!
//! Format of the bytes: `METHOD TARGET\n`, then `Name: value\n` header lines, a blank line, and
//! the body. Whatever hyper itself would refuse (a bad method, target, header name or value)
//! yields `None`: such bytes never reach the service in a real server either.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Uri};

/// The most body bytes a raw request carries (the fuzzer's inputs are far smaller).
const MAX_RAW_BODY_BYTES: usize = 1 << 20;

/// Parses `data` as described in the module docs.
pub fn request_from_bytes(data: &[u8]) -> Option<Request<s3s::Body>> {
    let (head, body) = match find(data, b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[][..]),
    };
    let mut lines = head.split(|&byte| byte == b'\n');
    let first = lines.next()?;
    let space = first.iter().position(|&byte| byte == b' ')?;
    let method = Method::from_bytes(&first[..space]).ok()?;
    let uri = Uri::try_from(&first[space + 1..]).ok()?;
    if uri.path().is_empty() || !uri.path().starts_with('/') {
        return None;
    }
    let mut builder = Request::builder().method(method).uri(uri);
    for line in lines {
        let colon = line.iter().position(|&byte| byte == b':')?;
        let name = HeaderName::from_bytes(&line[..colon]).ok()?;
        let value = HeaderValue::from_bytes(trim(&line[colon + 1..])).ok()?;
        builder = builder.header(name, value);
    }
    let body = &body[..body.len().min(MAX_RAW_BODY_BYTES)];
    builder
        .body(s3s::Body::from(Bytes::copy_from_slice(body)))
        .ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace());
    match (start, end) {
        (Some(start), Some(end)) => &bytes[start..=end],
        _ => &[],
    }
}
