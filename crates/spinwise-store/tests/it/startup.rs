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

/// A rack of 1152 disks (the Pelican preset) is surveyed and opened on several threads: every
/// disk still sits at its own index, and a disk failed before the open (its marker written by
/// hand) and one removed (its directory gone) open failed, wherever they fall among the runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_rack_opens_on_threads_with_every_disk_at_its_index_and_failures_kept() {
    use spinwise_store::disk_directory;
    const PELICAN_RACK: &str = include_str!("../../../../presets/pelican.toml");
    let config = common::preset_config("pelican", PELICAN_RACK, 0.000001);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    Store::init_sqlite(&data, config)
        .await
        .unwrap()
        .close()
        .await;
    std::fs::write(disk_directory(&data, 700).join(".failed"), b"").unwrap();
    std::fs::remove_dir_all(disk_directory(&data, 1151)).unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    let disks = &store.rack_io().disks;
    assert_eq!(disks.len(), 1152);
    for (index, disk) in disks.iter().enumerate() {
        assert_eq!(disk.index() as usize, index);
        let failed = disk.power_state() == PowerState::Failed;
        assert_eq!(failed, index == 700 || index == 1151, "disk {index}");
    }
    store.close().await;
}
