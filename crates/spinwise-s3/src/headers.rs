//! Standard object headers: the HTTP headers S3 keeps with an object besides Content-Type and
//! `x-amz-meta-*` (Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
//! Expires), and the `response-*` query parameters that override them, and Content-Type, for one
//! signed GET or HEAD (how a presigned download link names its file). docs/s3.md "Object
//! headers" describes the behaviour; [`ObjectHeaders`] is stored as JSON in the metadata
//! database (`object_meta.headers`, `multipart_uploads.headers`).
//!
//! Invariants:
//! - what a PutObject, CreateMultipartUpload or CopyObject (`REPLACE`) sent is what GET and HEAD
//!   return, except `aws-chunked`, which is how the request body was framed, not how the object
//!   is encoded: S3 drops it from the stored Content-Encoding, and so does [`ObjectHeaders`];
//! - an override changes one response only, never the stored headers;
//! - overrides need a signed request (S3: "Request specific response headers cannot be used for
//!   anonymous GET requests"): an anonymous read of a public-read bucket with one is refused
//!   with `400 InvalidRequest`, before any disk is spun up.

use s3s::dto::{Timestamp, TimestampFormat};
use s3s::{S3Error, S3ErrorCode, S3Result};
use serde::{Deserialize, Serialize};

/// The Content-Encoding token of an `aws-chunked` request body (a framing, not an encoding).
const AWS_CHUNKED: &str = "aws-chunked";

/// The standard headers kept with an object (Content-Type has a column of its own).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectHeaders {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_disposition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_language: Option<String>,
    /// `Expires` as an HTTP-date (RFC 7231 IMF-fixdate), as S3 sends it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// The `x-amz-storage-class` the write named (never a response header: it picks the tier
    /// the object is written to, [`crate::service::tier_of_class`]). Kept with an open multipart
    /// upload so its completion writes the class CreateMultipartUpload asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
}

impl ObjectHeaders {
    /// The headers a write request sent, `aws-chunked` removed from Content-Encoding.
    pub fn from_request(
        cache_control: Option<String>,
        content_disposition: Option<String>,
        content_encoding: Option<String>,
        content_language: Option<String>,
        expires: Option<Timestamp>,
    ) -> ObjectHeaders {
        ObjectHeaders {
            cache_control,
            content_disposition,
            content_encoding: content_encoding.and_then(|value| without_aws_chunked(&value)),
            content_language,
            expires: expires.map(|timestamp| http_date(&timestamp)),
            storage_class: None,
        }
    }

    /// The JSON stored in the metadata database (`{}` when no header was sent).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("string fields serialize")
    }

    /// Reads [`ObjectHeaders::to_json`]'s output back; an error names what is wrong.
    pub fn from_json(json: &str) -> Result<ObjectHeaders, String> {
        let headers: ObjectHeaders =
            serde_json::from_str(json).map_err(|error| error.to_string())?;
        if let Some(expires) = &headers.expires {
            parse_http_date(expires).ok_or_else(|| format!("Expires {expires:?}"))?;
        }
        Ok(headers)
    }
}

/// The six headers a GET or HEAD answers with: the `response-*` query parameters a request
/// gave (its overrides), or what the response shows ([`ResponseHeaders::shown`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHeaders {
    pub content_type: Option<String>,
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    pub expires: Option<Timestamp>,
}

/// The `response-*` parameters of one request.
pub type ResponseOverrides = ResponseHeaders;

impl ResponseHeaders {
    fn is_empty(&self) -> bool {
        *self == ResponseHeaders::default()
    }

    /// Refuses overrides on an anonymous request, as S3 does.
    pub fn check_allowed(&self, signed: bool) -> S3Result<()> {
        if signed || self.is_empty() {
            return Ok(());
        }
        Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "Request specific response headers cannot be used for anonymous GET requests.",
        ))
    }

    /// What a response shows: the stored headers, each replaced by its override.
    pub fn shown(
        content_type: Option<String>,
        stored: &ObjectHeaders,
        overrides: ResponseOverrides,
    ) -> ResponseHeaders {
        let stored = stored.clone();
        ResponseHeaders {
            content_type: overrides.content_type.or(content_type),
            cache_control: overrides.cache_control.or(stored.cache_control),
            content_disposition: overrides.content_disposition.or(stored.content_disposition),
            content_encoding: overrides.content_encoding.or(stored.content_encoding),
            content_language: overrides.content_language.or(stored.content_language),
            expires: overrides
                .expires
                .or_else(|| stored.expires.as_deref().and_then(parse_http_date)),
        }
    }
}

/// [`ObjectHeaders`] from a write input with S3's five header fields (PutObject,
/// CreateMultipartUpload, CopyObject): their inputs are distinct generated types.
macro_rules! object_headers {
    ($input:expr) => {
        $crate::headers::ObjectHeaders {
            storage_class: $input
                .storage_class
                .as_ref()
                .map(|class| class.as_str().to_owned()),
            ..$crate::headers::ObjectHeaders::from_request(
                $input.cache_control,
                $input.content_disposition,
                $input.content_encoding,
                $input.content_language,
                $input.expires,
            )
        }
    };
}

/// [`ResponseOverrides`] from a GetObject or HeadObject input's `response_*` fields.
macro_rules! response_overrides {
    ($input:expr) => {
        $crate::headers::ResponseOverrides {
            content_type: $input.response_content_type,
            cache_control: $input.response_cache_control,
            content_disposition: $input.response_content_disposition,
            content_encoding: $input.response_content_encoding,
            content_language: $input.response_content_language,
            expires: $input.response_expires,
        }
    };
}

/// Sets a GetObject or HeadObject output's six header fields from a [`ResponseHeaders`].
macro_rules! show_headers {
    ($output:expr, $shown:expr) => {{
        let shown: $crate::headers::ResponseHeaders = $shown;
        let mut output = $output;
        output.content_type = shown.content_type;
        output.cache_control = shown.cache_control;
        output.content_disposition = shown.content_disposition;
        output.content_encoding = shown.content_encoding;
        output.content_language = shown.content_language;
        output.expires = shown.expires;
        output
    }};
}

pub(crate) use {object_headers, response_overrides, show_headers};

/// Content-Encoding without its `aws-chunked` token(s); `None` when nothing else is left.
fn without_aws_chunked(value: &str) -> Option<String> {
    let kept: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|token| !token.is_empty() && !token.eq_ignore_ascii_case(AWS_CHUNKED))
        .collect();
    (!kept.is_empty()).then(|| kept.join(", "))
}

pub(crate) fn http_date(timestamp: &Timestamp) -> String {
    let mut text = Vec::new();
    timestamp
        .format(TimestampFormat::HttpDate, &mut text)
        .expect("a parsed timestamp formats as an HTTP-date");
    String::from_utf8(text).expect("an HTTP-date is ASCII")
}

fn parse_http_date(text: &str) -> Option<Timestamp> {
    Timestamp::parse(TimestampFormat::HttpDate, text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> Timestamp {
        parse_http_date(text).expect("a valid HTTP-date")
    }

    #[test]
    fn aws_chunked_is_framing_and_is_not_stored_as_an_encoding() {
        let encoding = |value: &str| {
            ObjectHeaders::from_request(None, None, Some(value.into()), None, None).content_encoding
        };
        assert_eq!(encoding("aws-chunked"), None);
        assert_eq!(encoding("gzip"), Some("gzip".into()));
        assert_eq!(encoding("aws-chunked,gzip"), Some("gzip".into()));
        assert_eq!(encoding("gzip, AWS-CHUNKED, br"), Some("gzip, br".into()));
    }

    #[test]
    fn stored_headers_round_trip_through_json_and_none_is_an_empty_object() {
        assert_eq!(ObjectHeaders::default().to_json(), "{}");
        assert_eq!(
            ObjectHeaders::from_json("{}").unwrap(),
            ObjectHeaders::default()
        );
        let headers = ObjectHeaders::from_request(
            Some("max-age=3600".into()),
            Some("attachment; filename=\"a b.pdf\"".into()),
            Some("gzip".into()),
            Some("de-CH".into()),
            Some(date("Wed, 21 Oct 2026 07:28:00 GMT")),
        );
        assert_eq!(
            headers.expires.as_deref(),
            Some("Wed, 21 Oct 2026 07:28:00 GMT")
        );
        assert_eq!(
            ObjectHeaders::from_json(&headers.to_json()).unwrap(),
            headers
        );
        assert!(ObjectHeaders::from_json(r#"{"expires":"soon"}"#).is_err());
        assert!(ObjectHeaders::from_json("[").is_err());
    }

    #[test]
    fn an_override_replaces_its_header_for_one_response_and_leaves_the_others() {
        let stored = ObjectHeaders {
            cache_control: Some("no-cache".into()),
            content_language: Some("en".into()),
            expires: Some("Wed, 21 Oct 2026 07:28:00 GMT".into()),
            ..ObjectHeaders::default()
        };
        let overrides = ResponseOverrides {
            content_type: Some("application/pdf".into()),
            content_disposition: Some("attachment".into()),
            cache_control: Some("max-age=60".into()),
            ..ResponseOverrides::default()
        };
        let shown = ResponseHeaders::shown(Some("text/plain".into()), &stored, overrides);
        assert_eq!(shown.content_type.as_deref(), Some("application/pdf"));
        assert_eq!(shown.content_disposition.as_deref(), Some("attachment"));
        assert_eq!(shown.cache_control.as_deref(), Some("max-age=60"));
        assert_eq!(shown.content_language.as_deref(), Some("en"));
        assert_eq!(shown.content_encoding, None);
        assert_eq!(shown.expires, Some(date("Wed, 21 Oct 2026 07:28:00 GMT")));
    }

    #[test]
    fn overrides_need_a_signed_request() {
        let none = ResponseOverrides::default();
        assert!(none.check_allowed(false).is_ok());
        let some = ResponseOverrides {
            content_disposition: Some("attachment".into()),
            ..ResponseOverrides::default()
        };
        assert!(some.check_allowed(true).is_ok());
        let refused = some.check_allowed(false).unwrap_err();
        assert_eq!(refused.code(), &S3ErrorCode::InvalidRequest);
    }
}
