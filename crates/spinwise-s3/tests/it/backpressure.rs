//! Backpressure: with the scheduler's queue bounded to one job per class and cold objects whose
//! group takes a while to spin up, concurrent GETs beyond the queue get 503 SlowDown with
//! Retry-After, the others are served byte-exact, and a retry after the burst succeeds.

use crate::common;

use aws_sdk_s3::primitives::ByteStream;
use common::{code, get_bytes, pattern, start_with, status};
use spinwise_s3::S3Settings;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_scheduler_queue_answers_503_slow_down_with_retry_after() {
    let mut config = common::config(Some(1));
    // Spin-ups of about 0.6 s, so concurrent GETs meet a queue still full.
    config.time_factor = 0.03;
    let harness = start_with(config, S3Settings::default()).await;
    let client = &harness.client;
    client.create_bucket().bucket("cold").send().await.unwrap();
    let objects: Vec<Vec<u8>> = (0..4).map(|i| pattern(200_000, 100 + i)).collect();
    for (index, bytes) in objects.iter().enumerate() {
        client
            .put_object()
            .bucket("cold")
            .key(format!("o{index}"))
            .body(ByteStream::from(bytes.clone()))
            .send()
            .await
            .unwrap();
    }
    common::cold::migrate_everything(&harness.store).await;

    let requests = (0..16).map(|i| {
        let client = client.clone();
        async move {
            let key = format!("o{}", i % 4);
            let result = client.get_object().bucket("cold").key(&key).send().await;
            match result {
                Ok(output) => Ok((i % 4, output.body.collect().await.unwrap().into_bytes())),
                Err(error) => Err(error),
            }
        }
    });
    let results = futures::future::join_all(requests).await;
    let mut slowed = 0;
    for result in results {
        match result {
            Ok((index, bytes)) => assert!(bytes[..] == objects[index][..]),
            Err(error) => {
                assert_eq!(code(&error), "SlowDown");
                assert_eq!(status(&error), 503);
                let retry_after = error
                    .raw_response()
                    .and_then(|r| r.headers().get("retry-after"))
                    .map(str::to_string);
                assert_eq!(retry_after.as_deref(), Some("5"));
                slowed += 1;
            }
        }
    }
    assert!(
        slowed > 0,
        "sixteen concurrent cold GETs never met the one-deep queue"
    );
    assert!(slowed < 16, "no GET was served");
    for (index, bytes) in objects.iter().enumerate() {
        assert!(get_bytes(client, "cold", &format!("o{index}"), None).await == *bytes);
    }
    harness.server.stop().await;
}
