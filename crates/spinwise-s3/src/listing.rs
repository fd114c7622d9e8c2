//! `EncodingType=url` of the list calls (ListObjectsV2, ListObjects, ListMultipartUploads): the
//! key-like strings of an answer URL-encoded as S3 encodes them, so keys XML cannot carry and
//! keys with `+`, `%` or spaces reach the client intact.
//!
//! Invariants:
//! - [`url_encode`] is S3's form: ASCII letters, digits and `-_.*/` pass, a space becomes `+`,
//!   every other byte of the UTF-8 is `%XX` (uppercase hex). Clients decode it with
//!   form-decoding (botocore's `unquote_plus`), so a `+` in a key must leave as `%2B` and a
//!   literal `%25` as `%2525`; `/` and `*` stay as S3 leaves them;
//! - only `url` is an encoding; any other value is 400 InvalidArgument before anything is
//!   listed, as S3 answers;
//! - what is encoded is what S3 encodes: Key, Prefix, Delimiter, StartAfter, Marker, NextMarker,
//!   KeyMarker, NextKeyMarker and CommonPrefixes' Prefix. Continuation tokens and upload ids are
//!   opaque and never encoded.

use s3s::dto::EncodingType;
use s3s::{S3Error, S3ErrorCode, S3Result};
use std::fmt::Write as _;

/// How the key-like strings of one list answer are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyEncoding {
    /// As stored (no `EncodingType` asked for).
    Plain,
    /// `EncodingType=url`: [`url_encode`].
    Url,
}

impl KeyEncoding {
    /// The encoding a request asked for; anything but `url` is S3's 400 InvalidArgument.
    pub(crate) fn of_request(requested: Option<&EncodingType>) -> S3Result<KeyEncoding> {
        match requested.map(EncodingType::as_str) {
            None => Ok(KeyEncoding::Plain),
            Some(EncodingType::URL) => Ok(KeyEncoding::Url),
            Some(other) => Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!(
                    "Invalid Encoding Method specified in Request: {:?} (only \"url\" is one)",
                    truncated(other)
                ),
            )),
        }
    }

    /// `text` as this answer writes it.
    pub(crate) fn encode(self, text: &str) -> String {
        match self {
            KeyEncoding::Plain => text.to_string(),
            KeyEncoding::Url => url_encode(text),
        }
    }

    /// [`Self::encode`] of an optional field.
    pub(crate) fn encode_option(self, text: Option<String>) -> Option<String> {
        text.map(|text| match self {
            KeyEncoding::Plain => text,
            KeyEncoding::Url => url_encode(&text),
        })
    }

    /// What the answer's `<EncodingType>` says: the request's value when it encoded.
    pub(crate) fn answered(self) -> Option<EncodingType> {
        match self {
            KeyEncoding::Plain => None,
            KeyEncoding::Url => Some(EncodingType::from_static(EncodingType::URL)),
        }
    }
}

/// S3's URL encoding of a listed string (see the module's invariants).
pub(crate) fn url_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len() + text.len() / 2);
    for &byte in text.as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' | b'/' => {
                encoded.push(byte as char)
            }
            b' ' => encoded.push('+'),
            _ => write!(encoded, "%{byte:02X}").expect("writing to a String cannot fail"),
        }
    }
    encoded
}

/// At most 64 characters of a client's value, for an error message.
fn truncated(text: &str) -> &str {
    match text.char_indices().nth(64) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client does with the answer: form-decoding (space for `+`, then `%XX`).
    fn form_decode(text: &str) -> String {
        let bytes = text.as_bytes();
        let mut decoded = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b'+' => decoded.push(b' '),
                b'%' => {
                    let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap();
                    decoded.push(u8::from_str_radix(hex, 16).unwrap());
                    at += 2;
                }
                other => decoded.push(other),
            }
            at += 1;
        }
        String::from_utf8(decoded).unwrap()
    }

    #[test]
    fn url_encoding_writes_what_s3_writes() {
        assert_eq!(url_encode("c++/a+b.txt"), "c%2B%2B/a%2Bb.txt");
        assert_eq!(url_encode("100%25.txt"), "100%2525.txt");
        assert_eq!(url_encode("my file #1?.txt"), "my+file+%231%3F.txt");
        assert_eq!(url_encode("café/日"), "caf%C3%A9/%E6%97%A5");
        assert_eq!(url_encode("a~b*c-d_e.f/"), "a%7Eb*c-d_e.f/");
        assert_eq!(url_encode("tab\there\u{1}"), "tab%09here%01");
    }

    #[test]
    fn every_key_survives_a_clients_form_decoding() {
        for key in [
            "c++/a+b.txt",
            "100%25.txt",
            "100%.txt",
            "spaces  and+plus",
            "#?&=;:@$,!'()[]",
            "日本/café \u{1}\u{7f}",
            "",
        ] {
            assert_eq!(form_decode(&url_encode(key)), key, "{key:?}");
        }
    }

    #[test]
    fn only_url_is_an_encoding_and_plain_changes_nothing() {
        assert_eq!(KeyEncoding::of_request(None).unwrap(), KeyEncoding::Plain);
        let url = EncodingType::from_static(EncodingType::URL);
        assert_eq!(
            KeyEncoding::of_request(Some(&url)).unwrap(),
            KeyEncoding::Url
        );
        let other = EncodingType::from("base64".to_string());
        let refused = KeyEncoding::of_request(Some(&other)).unwrap_err();
        assert_eq!(refused.code(), &S3ErrorCode::InvalidArgument);
        assert_eq!(KeyEncoding::Plain.encode("a+b c"), "a+b c");
        assert_eq!(KeyEncoding::Url.answered(), Some(url));
        assert_eq!(KeyEncoding::Plain.answered(), None);
    }
}
