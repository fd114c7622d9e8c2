//! Every integration test of spinwise-s3, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod backpressure;
mod common;
mod conditional;
mod consistency;
mod latency;
mod lifecycle;
mod listing_encoding;
mod malformed;
mod metrics;
mod multipart;
mod no_wall_clock_waits;
mod object_headers;
mod presigned;
mod public_read;
mod restore;
mod s3_api;
mod soak;
mod storage_classes;
mod tls;
mod virtual_host;
#[path = "../../../spinwise-store/tests/it/support/wall_clock.rs"]
mod wall_clock;
