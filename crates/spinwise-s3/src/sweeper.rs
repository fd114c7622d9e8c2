//! The loop of the S3 layer's periodic sweepers (expired restored copies, abandoned multipart
//! uploads, lifecycle rules): one pass, then a wait of the sweeper's interval on the store's
//! clock ([`spinwise_store::clock`]) or until the sweeper is nudged (new lifecycle rules are
//! applied at once, not an interval later), until the sweeper is dropped.
//!
//! Invariants: the loop holds its sweeper only weakly while it waits, so dropping the service
//! stops it (and lets the store and the metadata database close); it publishes its next wake
//! ([`Pacing`]) only after a pass is done, so a test that advanced a manual clock and awaited
//! [`spinwise_store::clock::Paced::past`] sees the pass's effects.

use spinwise_store::clock::{Clock, Pacing};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// What the loop needs of a sweeper.
pub(crate) trait Sweep: Send + Sync + 'static {
    /// The wait between two passes.
    fn interval(&self) -> Duration;
    /// The clock the wait is on (the store's).
    fn clock(&self) -> Arc<dyn Clock>;
    /// One pass; it logs its own failures (the loop goes on regardless).
    fn sweep_once(&self) -> impl Future<Output = ()> + Send;
    /// What ends a wait early (`None`: only the interval does).
    fn nudges(&self) -> Option<Arc<Notify>> {
        None
    }
}

/// Whether the loop's first pass comes at once or after one interval (the caller swept
/// already).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FirstPass {
    AtOnce,
    AfterInterval,
}

/// Sweeps every interval until `sweeper` is dropped.
pub(crate) async fn sweep_until_dropped<S: Sweep>(
    sweeper: Weak<S>,
    pacing: Pacing,
    first: FirstPass,
) {
    let mut sweep_now = first == FirstPass::AtOnce;
    loop {
        let Some(strong) = sweeper.upgrade() else {
            return;
        };
        if sweep_now {
            strong.sweep_once().await;
        }
        sweep_now = true;
        let (interval, clock, nudges) = (strong.interval(), strong.clock(), strong.nudges());
        drop(strong);
        let wake_us = clock.now_us().saturating_add(micros(interval));
        pacing.waiting_until(wake_us);
        match nudges {
            Some(nudges) => {
                tokio::select! {
                    () = clock.sleep_until_us(wake_us) => {}
                    () = nudges.notified() => {}
                }
            }
            None => clock.sleep_until_us(wake_us).await,
        }
    }
}

/// `duration` in whole microseconds (saturating).
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
