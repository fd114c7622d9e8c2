//! Virtual-hosted-style addressing: with the server's domains configured (`spinwise serve
//! --domain s3.example.com`), a request whose `Host` is `<bucket>.s3.example.com` names the
//! bucket there and the key in its path, as AWS SDKs send by default for DNS names. Every other
//! host (the domain itself, an IP address, any other name) is path style, as without domains.
//!
//! Invariants:
//! - a host is compared without its port and case-insensitively (DNS names are), so
//!   `Photos.S3.Example.com:9000` is bucket `photos`;
//! - only a name directly below a configured domain is a bucket: the bucket part is then
//!   checked by the same S3 naming rules as a path-style bucket (by s3s and
//!   [`crate::names::check_bucket`]), so no host can name what a path could not;
//! - unlike s3s's own `SingleDomain`, an unknown host is never taken as a bucket name (a CNAME
//!   bucket): a client reaching the server by another name still works path style;
//! - domains are checked once, at start: 1–253 bytes of dot-separated labels of `a-z 0-9 -`,
//!   no two where one is a suffix of the other (a host would match both).

use s3s::S3Result;
use s3s::host::{S3Host, VirtualHost};
use thiserror::Error;

/// A domain the server cannot use for virtual-hosted-style addressing.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DomainError {
    #[error("`{0}` is not a domain name (dot-separated labels of a-z, 0-9 and -)")]
    Invalid(String),
    #[error("the domains `{0}` and `{1}` overlap: a host below one would also be below the other")]
    Overlapping(String, String),
}

/// The server's domains for virtual-hosted-style requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketDomains {
    domains: Vec<String>,
}

impl BucketDomains {
    /// Checks and keeps `domains` (lower-cased, without a trailing dot).
    pub fn new<I, S>(domains: I) -> Result<BucketDomains, DomainError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut kept: Vec<String> = Vec::new();
        for domain in domains {
            let domain = domain.as_ref().trim_end_matches('.').to_ascii_lowercase();
            if !is_domain(&domain) {
                return Err(DomainError::Invalid(domain));
            }
            if let Some(other) = kept.iter().find(|other| overlap(other, &domain)) {
                return Err(DomainError::Overlapping(other.clone(), domain));
            }
            kept.push(domain);
        }
        Ok(BucketDomains { domains: kept })
    }

    /// The bucket a `Host` header names, if it is `<bucket>.<domain>` for one of the domains.
    pub fn bucket_of(&self, host: &str) -> Option<String> {
        let name = without_port(host)
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.domains.iter().find_map(|domain| {
            let bucket = name.strip_suffix(domain.as_str())?.strip_suffix('.')?;
            (!bucket.is_empty()).then(|| bucket.to_string())
        })
    }
}

impl S3Host for BucketDomains {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<VirtualHost<'a>> {
        let virtual_host = VirtualHost::new(host);
        Ok(match self.bucket_of(host) {
            Some(bucket) => virtual_host.with_bucket(bucket),
            None => virtual_host,
        })
    }
}

fn without_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn is_domain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// Whether a host below one domain could also be below the other.
fn overlap(a: &str, b: &str) -> bool {
    a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domains() -> BucketDomains {
        BucketDomains::new(["s3.example.com", "archive.local"]).unwrap()
    }

    #[test]
    fn a_name_directly_below_a_domain_is_a_bucket_with_or_without_port_and_case() {
        let domains = domains();
        assert_eq!(
            domains.bucket_of("photos.s3.example.com"),
            Some("photos".into())
        );
        assert_eq!(
            domains.bucket_of("Photos.S3.Example.COM:9000"),
            Some("photos".into())
        );
        assert_eq!(
            domains.bucket_of("logs.archive.local:80"),
            Some("logs".into())
        );
        // Bucket names may hold dots (S3 allows them); the whole prefix is the bucket.
        assert_eq!(
            domains.bucket_of("my.dotted.bucket.s3.example.com"),
            Some("my.dotted.bucket".into())
        );
    }

    #[test]
    fn the_domain_itself_ips_and_other_names_are_path_style() {
        let domains = domains();
        for host in [
            "s3.example.com",
            "s3.example.com:9000",
            "127.0.0.1:9000",
            "[::1]:9000",
            "localhost:9000",
            "photos.example.com",
            "evils3.example.com",
            ".s3.example.com",
        ] {
            assert_eq!(domains.bucket_of(host), None, "{host}");
        }
    }

    #[test]
    fn bad_or_overlapping_domains_are_refused() {
        for bad in ["", "under_score.example", "a..b", "spaces here", "x:9000"] {
            let refused = BucketDomains::new([bad]);
            assert!(
                matches!(refused, Err(DomainError::Invalid(_))),
                "{bad}: {refused:?}"
            );
        }
        assert_eq!(
            BucketDomains::new(["example.com", "s3.example.com"]),
            Err(DomainError::Overlapping(
                "example.com".into(),
                "s3.example.com".into()
            ))
        );
        assert!(BucketDomains::new(["s3.example.com", "s3.example.org"]).is_ok());
        assert_eq!(
            BucketDomains::new(["S3.Example.com."]).unwrap(),
            BucketDomains::new(["s3.example.com"]).unwrap()
        );
    }
}
