//! How S3 names map onto store keys, and the list continuation token.
//!
//! Invariants:
//! - a store key is `"<bucket>/<key>"`, always: bucket names never contain `/` (S3 naming
//!   rules, checked here and by s3s's router), so the first `/` splits a store key back into
//!   bucket and key, and a bucket's objects are exactly the store keys with prefix `"<bucket>/"`;
//! - object keys are opaque strings: `..`, `/`, leading slashes are plain bytes of a key and never
//!   reach a file system path (the store keeps keys in its catalog only);
//! - a key containing NUL, or longer than S3's 1,024 bytes, is refused before anything is
//!   stored; every key S3 allows fits the store (a bucket name is at most 63 bytes, and the
//!   store's keys hold 1,024 + 63 + 1).

use s3s::{S3Error, S3ErrorCode};
use spinwise_store::staging::MAX_KEY_BYTES;

/// S3's longest object key, in bytes of UTF-8.
pub const MAX_OBJECT_KEY_BYTES: usize = 1024;
/// S3's longest bucket name.
const MAX_BUCKET_NAME_BYTES: usize = 63;
const _: () = assert!(MAX_BUCKET_NAME_BYTES + 1 + MAX_OBJECT_KEY_BYTES <= MAX_KEY_BYTES);

/// Checks an S3 bucket name (3–63 bytes of `a-z 0-9 . -`, starting and ending alphanumeric, no
/// `..`, not an IP address, no `xn--` prefix).
pub fn check_bucket(name: &str) -> Result<(), S3Error> {
    if s3s::path::check_bucket_name(name) {
        Ok(())
    } else {
        Err(S3Error::with_message(
            S3ErrorCode::InvalidBucketName,
            format!("`{name}` is not a valid bucket name"),
        ))
    }
}

/// The store key of `key` in `bucket`, or the S3 error refusing the key.
pub fn store_key(bucket: &str, key: &str) -> Result<String, S3Error> {
    check_bucket(bucket)?;
    if key.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "object keys are at least one byte",
        ));
    }
    if key.contains('\0') {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "object keys must not contain NUL",
        ));
    }
    if key.len() > MAX_OBJECT_KEY_BYTES {
        return Err(S3Error::with_message(
            S3ErrorCode::KeyTooLongError,
            format!(
                "object keys are at most {MAX_OBJECT_KEY_BYTES} bytes; this one is {}",
                key.len()
            ),
        ));
    }
    debug_assert!(bucket.len() <= MAX_BUCKET_NAME_BYTES, "checked above");
    Ok(format!("{bucket}/{key}"))
}

/// The store-key prefix of every object in `bucket`.
pub fn bucket_prefix(bucket: &str) -> String {
    format!("{bucket}/")
}

/// A list position: the continuation token is the hex of the S3 key (relative to the bucket)
/// that the next page starts strictly after.
pub fn encode_token(position: &str) -> String {
    position.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Reads a continuation token made by [`encode_token`].
pub fn decode_token(token: &str) -> Result<String, S3Error> {
    let invalid = || {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "the continuation token is not one this server issued",
        )
    };
    if !token.len().is_multiple_of(2) || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| invalid())?;
    String::from_utf8(bytes).map_err(|_| invalid())
}

/// The smallest string above every string starting with `prefix` (in byte order): the list
/// position that skips a whole common prefix.
pub fn after_prefix(prefix: &str) -> String {
    format!("{prefix}{}", char::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_any_utf8_key() {
        for key in ["", "a", "dir/../x", "ü/\u{10FFFF}", "a b%2F"] {
            assert_eq!(decode_token(&encode_token(key)).unwrap(), key);
        }
    }

    #[test]
    fn tokens_not_issued_here_are_refused() {
        for token in ["0", "zz", "ff", "c3"] {
            assert!(decode_token(token).is_err(), "{token}");
        }
    }

    #[test]
    fn store_keys_join_bucket_and_key_and_refuse_nul_and_length() {
        assert_eq!(store_key("photos", "../a/b").unwrap(), "photos/../a/b");
        assert_eq!(store_key("photos", "/x").unwrap(), "photos//x");
        assert_eq!(
            *store_key("photos", "a\0b").unwrap_err().code(),
            S3ErrorCode::InvalidArgument
        );
        // S3's limit is the key's alone, whatever the bucket's name.
        let longest = "k".repeat(MAX_OBJECT_KEY_BYTES);
        let longest_bucket = "b".repeat(MAX_BUCKET_NAME_BYTES);
        let joined = store_key(&longest_bucket, &longest).unwrap();
        assert!(
            joined.len() <= MAX_KEY_BYTES,
            "the store holds every key S3 allows"
        );
        let too_long = format!("{longest}k");
        assert_eq!(
            *store_key("photos", &too_long).unwrap_err().code(),
            S3ErrorCode::KeyTooLongError
        );
        assert!(store_key("Bad_Bucket", "k").is_err());
    }

    #[test]
    fn after_prefix_sorts_above_every_key_with_the_prefix() {
        let after = after_prefix("a/");
        for key in ["a/", "a/b", "a/\u{FFFF}zz", "a/~"] {
            assert!(key < after.as_str(), "{key}");
        }
        assert!("a0" > after.as_str());
    }
}
