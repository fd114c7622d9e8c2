//! The emulated disk's published power state (`DIR/.power-state`): another process reading the
//! directory sees every phase a power command passes through, a failure is final, and the file
//! never shows as a stripe-stack file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use spinwise_disk::power_file::POWER_STATE_FILE;
use spinwise_disk::{
    Disk, DiskTiming, EmulatedConfig, EmulatedDisk, PowerFileError, PowerPhase, read_power_state,
};
use spinwise_model::Distribution;
use tempfile::TempDir;

const CAPACITY_BYTES: u64 = 64 << 20;

fn config(root: &TempDir) -> EmulatedConfig {
    EmulatedConfig::new(root.path().join("disk-0"), 0, CAPACITY_BYTES)
}

/// A disk whose spin-up and spin-down each take `latency_s` seconds of real time.
fn slow_config(root: &TempDir, latency_s: f64) -> EmulatedConfig {
    let mut config = config(root);
    let mut timing = DiskTiming::instant();
    timing.spin_up_latency_s = Distribution::Fixed { value: latency_s };
    timing.unmount_latency_s = Distribution::Fixed { value: latency_s };
    config.timing = timing;
    config.time_factor = 1.0;
    config
}

/// Polls the directory until `wanted` shows or two seconds pass; true if it showed.
fn wait_for_phase(directory: &std::path::Path, wanted: PowerPhase) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if read_power_state(directory).expect("readable") == wanted {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn a_new_disk_reads_standby_and_active_after_spin_up_and_standby_after_spin_down() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    let directory = disk.directory().to_path_buf();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Standby);
    disk.spin_up().unwrap();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Active);
    disk.spin_down().unwrap();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Standby);
}

#[test]
fn an_outside_reader_sees_spinning_up_and_spinning_down_while_they_last() {
    let root = TempDir::new().unwrap();
    let disk = Arc::new(EmulatedDisk::create(slow_config(&root, 0.3)).unwrap());
    let directory = disk.directory().to_path_buf();
    let spinning = Arc::clone(&disk);
    let up = std::thread::spawn(move || spinning.spin_up());
    assert!(wait_for_phase(&directory, PowerPhase::SpinningUp));
    up.join().unwrap().unwrap();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Active);
    let spinning = Arc::clone(&disk);
    let down = std::thread::spawn(move || spinning.spin_down());
    assert!(wait_for_phase(&directory, PowerPhase::SpinningDown));
    down.join().unwrap().unwrap();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Standby);
}

#[test]
fn a_failed_disk_reads_failed_even_after_a_later_power_command() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    disk.spin_up().unwrap();
    disk.mark_failed();
    assert_eq!(
        read_power_state(disk.directory()).unwrap(),
        PowerPhase::Failed
    );
    let _ = disk.spin_down();
    assert_eq!(
        read_power_state(disk.directory()).unwrap(),
        PowerPhase::Failed
    );
    let reopened = EmulatedDisk::open(config(&root)).unwrap();
    assert_eq!(
        read_power_state(reopened.directory()).unwrap(),
        PowerPhase::Failed
    );
}

#[test]
fn a_reopened_disk_replaces_a_dead_process_s_stale_active_with_standby() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    disk.spin_up().unwrap();
    drop(disk); // as if its process died with the disk spinning
    let reopened = EmulatedDisk::open(config(&root)).unwrap();
    assert_eq!(
        read_power_state(reopened.directory()).unwrap(),
        PowerPhase::Standby
    );
}

/// Standby is the file's absence: a new disk and one spun down have none, so opening a rack
/// closed cleanly reads no power-state file (issue 32: the store's open read one per disk).
#[test]
fn a_disk_at_rest_has_no_power_state_file_and_reopening_writes_none() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    let file = disk.directory().join(POWER_STATE_FILE);
    assert!(!file.exists(), "a new disk published standby as a file");
    disk.spin_up().unwrap();
    assert!(file.exists());
    disk.spin_down().unwrap();
    assert!(!file.exists(), "a spun-down disk left its file");
    drop(disk);
    let reopened = EmulatedDisk::open(config(&root)).unwrap();
    assert!(!file.exists(), "reopening wrote a file");
    assert_eq!(
        read_power_state(reopened.directory()).unwrap(),
        PowerPhase::Standby
    );
}

/// A file saying `standby` (as versions before issue 32 left at every clean close) reads the
/// same as none, and the next open removes it.
#[test]
fn a_standby_file_an_older_version_left_is_removed_at_open() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    let file = disk.directory().join(POWER_STATE_FILE);
    std::fs::write(&file, b"standby\n").unwrap();
    assert_eq!(
        read_power_state(disk.directory()).unwrap(),
        PowerPhase::Standby
    );
    drop(disk);
    let reopened = EmulatedDisk::open(config(&root)).unwrap();
    assert!(!file.exists());
    assert_eq!(
        read_power_state(reopened.directory()).unwrap(),
        PowerPhase::Standby
    );
}

#[test]
fn a_pulled_disk_reads_failed_and_a_garbled_file_is_an_error_not_a_guess() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    let directory = disk.directory().to_path_buf();
    std::fs::write(directory.join(POWER_STATE_FILE), b"warp-speed\n").unwrap();
    assert!(matches!(
        read_power_state(&directory),
        Err(PowerFileError::Malformed { .. })
    ));
    std::fs::write(directory.join(POWER_STATE_FILE), vec![b'a'; 1 << 20]).unwrap();
    assert!(read_power_state(&directory).is_err());
    disk.faults().remove_disk().unwrap();
    assert_eq!(read_power_state(&directory).unwrap(), PowerPhase::Failed);
}

#[test]
fn the_power_state_file_is_never_listed_as_a_disk_file() {
    let root = TempDir::new().unwrap();
    let disk = EmulatedDisk::create(config(&root)).unwrap();
    disk.spin_up().unwrap();
    assert!(disk.directory().join(POWER_STATE_FILE).exists());
    assert!(disk.list_files().unwrap().is_empty());
    assert_eq!(disk.space().unwrap().free_bytes, CAPACITY_BYTES);
}
