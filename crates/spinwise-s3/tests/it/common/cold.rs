//! Cold objects for tests: which group holds a migrated object, putting a group to rest so its
//! next read needs a spin-up, and counting the spin-ups a piece of work causes.

use spinwise_sched::scheduler::Kind;
use spinwise_store::SqliteStore;
use spinwise_store::driver::{GroupActivity, GroupDisks, GroupPhase, Job};

/// The group a migrated object's blob lives in (panics if the object is still staged).
pub async fn migrated_group(store: &SqliteStore, store_key: &str) -> u32 {
    let group = store.migrated_group(store_key).await.unwrap();
    group.unwrap_or_else(|| panic!("{store_key} is still staged"))
}

/// Brings other groups up until `group` is down (the budgets keep only a few up), so the next
/// read of `group` needs a spin-up.
pub async fn rest_group(store: &SqliteStore, group: u32) {
    let driver = &store.rack_io().driver;
    for _ in 0..10 {
        let state = driver.state().await.unwrap();
        if state.groups[group as usize].phase == GroupPhase::Resting {
            return;
        }
        for other in state.groups.iter().map(|g| g.group).filter(|g| *g != group) {
            let job = Job::new(other, 0, Kind::Client, |_: &GroupDisks| ());
            driver.submit(job).await.unwrap().wait().await.unwrap();
        }
    }
    panic!("group {group} never went down");
}

/// How many spin-ups happen while `work` runs.
pub async fn count_ups_during(store: &SqliteStore, work: impl Future<Output = ()>) -> usize {
    let mut activity = store.rack_io().driver.subscribe_activity();
    work.await;
    let mut ups = 0;
    while let Ok(event) = activity.try_recv() {
        ups += usize::from(matches!(event, GroupActivity::Up { .. }));
    }
    ups
}

/// Moves every object to the cold tier and migrates it to the groups, as a lifecycle transition
/// of everything followed by upkeep's migration would: S3 writes without a storage class are
/// `STANDARD` (warm) and stay staged, so tests of cold reads start from here.
pub async fn migrate_everything(store: &SqliteStore) -> spinwise_store::FlushReport {
    let mut after: Option<String> = None;
    loop {
        let page = store.list("", after.as_deref(), 1000).await.unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.key.clone());
        for record in &page {
            store.demote_listed(record).await.unwrap();
        }
    }
    store.flush(|_| {}).await.unwrap()
}
