//! The start-up check: every disk of the rack is spun up group by group under the budgets,
//! checked and spun down; a removed disk is reported, and the audit never refuses a change.

use crate::common;
use spinwise_disk::PowerState;
use spinwise_store::{Store, StoreConfig};

fn config() -> StoreConfig {
    common::jbod_config()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_disk_is_checked_with_groups_spun_up_together_and_no_budget_broken() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), config())
        .await
        .unwrap();
    let progress = std::sync::Mutex::new(Vec::new());
    let report = store
        .check_disks(|done, total| progress.lock().unwrap().push((done, total)))
        .await
        .unwrap();
    assert_eq!(report.groups_checked, 10);
    assert_eq!(report.disks_ok, 60);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(progress.lock().unwrap().last(), Some(&(10, 10)));
    let audit = store.rack_io().driver.audit_counters();
    assert_eq!(audit.refusals, 0);
    // Several groups came up at once (the JBOD's power allows 12 spin-ups, a group is 6 disks),
    // and never more than its budgets allow.
    assert!(audit.max_spinning_up > 6, "{audit:?}");
    for peak in &audit.peaks {
        assert!(peak.peak_micros <= peak.budget_micros, "{peak:?}");
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_disk_is_reported_by_the_check_and_the_others_pass() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), config())
        .await
        .unwrap();
    store.rack_io().emulated[7].faults().remove_disk().unwrap();
    let report = store.check_disks(|_, _| {}).await.unwrap();
    assert_eq!(report.disks_ok, 59);
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].disk, 7);
    assert_eq!(store.rack_io().disks[7].power_state(), PowerState::Failed);
    store.close().await;
}
