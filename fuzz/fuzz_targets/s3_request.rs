//! Fuzz target for the S3 request entry points: arbitrary bytes become an HTTP request (method,
//! target with query, headers, body; see tests/common/raw.rs) answered in process by the real
//! s3s service over a real store in a temporary directory. The first byte picks the service: odd
//! → `spinwise serve`'s own service (`build_service`: SigV4 and the public-read access check, so
//! it fuzzes the signature parsers and anonymous requests), even → open access (fuzzes routing,
//! query and XML parsing and every handler behind authentication).
//!
//! A crash is: a panic anywhere, a 500 Internal Error, or a file created outside the data
//! directory.

#![no_main]

#[path = "../../crates/spinwise-s3/tests/common/raw.rs"]
mod raw;

use http_body_util::BodyExt as _;
use libfuzzer_sys::fuzz_target;
use s3s::access::{S3Access, S3AccessContext};
use s3s::service::{S3Service, S3ServiceBuilder};
use spinwise_s3::{Credentials, MetaDb, S3Settings, SpinwiseS3, build_service};
use spinwise_store::staging::StagingConfig;
use spinwise_store::{RackSource, Store, StoreConfig};
use std::path::Path;
use std::sync::{Arc, OnceLock};

const RACK: &str = include_str!("../../presets/dense-jbod-60.toml");

struct Open;

#[async_trait::async_trait]
impl S3Access for Open {
    async fn check(&self, _cx: &mut S3AccessContext<'_>) -> s3s::S3Result<()> {
        Ok(())
    }
}

struct World {
    runtime: tokio::runtime::Runtime,
    open: S3Service,
    signed: S3Service,
    dir: tempfile::TempDir,
}

fn config() -> StoreConfig {
    let rack = spinwise_model::parse_rack("dense-jbod-60", RACK).expect("the preset parses");
    let layout = spinwise_plan::plan(&rack).expect("the preset plans").layout;
    let mut config = StoreConfig::new(
        RackSource::Preset("dense-jbod-60".into()),
        RACK.to_string(),
        layout,
    );
    config.time_factor = 0.0001;
    config.bundle_bytes = 1 << 20;
    config.staging = StagingConfig {
        segment_bytes: 8 << 20,
        chunk_bytes: 1 << 20,
        limit_bytes: 256 << 20,
    };
    config
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data_dir = dir.path().join("data");
        let (open, signed) = runtime.block_on(async {
            let store = Arc::new(Store::init_sqlite(&data_dir, config()).await.expect("a store"));
            let service = |access_open: bool| {
                let store = Arc::clone(&store);
                let data_dir = data_dir.clone();
                async move {
                    let name = if access_open { "open.sqlite" } else { "signed.sqlite" };
                    let meta = MetaDb::open(&data_dir.join(name)).await.expect("a metadata DB");
                    let s3 = SpinwiseS3::new(store, meta, S3Settings::default())
                        .await
                        .expect("the S3 layer");
                    if access_open {
                        let mut builder = S3ServiceBuilder::new(s3);
                        builder.set_access(Open);
                        builder.build()
                    } else {
                        let keys = Credentials::given("FUZZACCESSKEY000", "fuzz-secret-0123456789")
                            .expect("valid fuzz keys");
                        build_service(s3, &keys)
                    }
                }
            };
            (service(true).await, service(false).await)
        });
        World { runtime, open, signed, dir }
    })
}

fn only_data_dir(root: &Path) -> bool {
    std::fs::read_dir(root)
        .expect("the temporary directory")
        .all(|entry| entry.map(|entry| entry.file_name() == "data").unwrap_or(false))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Some(request) = raw::request_from_bytes(rest) else { return };
    let world = world();
    let service = if selector % 2 == 0 { &world.open } else { &world.signed };
    let status = world.runtime.block_on(async {
        let response = service.call(request).await.ok()?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut read = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, |data| data.len());
            if read > 1 << 20 {
                break;
            }
        }
        Some(status)
    });
    assert_ne!(status, Some(500), "500 Internal Error");
    assert!(only_data_dir(world.dir.path()), "a file outside the data directory");
});
