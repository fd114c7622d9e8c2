//! The faulty disk (src/faulty.rs): the conformance suite with no fault configured, then one
//! test per fault of docs/faults.md — what a crash keeps of synced and unsynced changes, how a
//! write tears, that a seed replays, and each injected fault (IO errors, latency spikes,
//! failure, a full disk) with its count.

use std::io::{self, Read};
use std::sync::Arc;

use spinwise_disk::conformance::{PatternReader, pattern_byte};
use spinwise_disk::{
    CrashMode, Disk, DiskError, DiskTiming, Fault, FaultyConfig, FaultyDisk, Operation, Overwrite,
    PowerState, SECTOR_BYTES, Trigger, UnsyncedFate, VirtualClock, WriteSync, crash_together,
};
use spinwise_model::Distribution;

const CAPACITY_BYTES: u64 = 64 << 20;

fn honest() -> FaultyDisk {
    FaultyDisk::new(FaultyConfig::new(2, CAPACITY_BYTES), VirtualClock::new()).expect("disk")
}

fn timed() -> FaultyDisk {
    let mut config = FaultyConfig::new(4, CAPACITY_BYTES);
    config.timing = DiskTiming {
        spin_up_latency_s: Distribution::Uniform { min: 0.5, max: 1.0 },
        mount_latency_s: Distribution::Fixed { value: 0.2 },
        unmount_latency_s: Distribution::Fixed { value: 0.1 },
        bandwidth_bytes_per_s: 100e6,
        seek_s: 0.008,
    };
    config.seed = 9;
    FaultyDisk::new(config, VirtualClock::new()).expect("disk")
}

spinwise_disk::conformance_tests!(faulty_without_faults, super::honest);
spinwise_disk::conformance_tests!(faulty_with_latencies, super::timed);

/// An active disk with `write_sync`, index `index`.
fn active(write_sync: WriteSync, index: u32) -> FaultyDisk {
    let mut config = FaultyConfig::new(index, CAPACITY_BYTES);
    config.write_sync = write_sync;
    config.seed = 5;
    let disk = FaultyDisk::new(config, VirtualClock::new()).expect("disk");
    disk.spin_up().expect("spin_up");
    disk
}

fn write(disk: &impl Disk, name: &str, len: u64, overwrite: Overwrite) -> Result<(), DiskError> {
    disk.write_file(name, len, &mut PatternReader::new(len), overwrite)
}

fn write_bytes(disk: &impl Disk, name: &str, bytes: &[u8], overwrite: Overwrite) {
    disk.write_file(name, bytes.len() as u64, &mut &bytes[..], overwrite)
        .expect("write");
}

fn read_all(disk: &impl Disk, name: &str) -> Vec<u8> {
    let mut buffer = vec![0u8; disk.file_len(name).expect("file_len") as usize];
    let read = disk.read_at(name, 0, &mut buffer).expect("read_at");
    buffer.truncate(read);
    buffer
}

fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(pattern_byte).collect()
}

fn free_bytes(disk: &impl Disk) -> u64 {
    disk.space().expect("space").free_bytes
}

/// Injects `fault` into the next `calls` calls of `operation`.
fn inject_next(disk: &FaultyDisk, operation: Operation, fault: Fault, calls: u64) {
    disk.inject(operation, fault, Trigger::NextCalls(calls))
        .expect("inject");
}

/// Crashes and spins the disk up again, as a restarted store would find it.
fn crash_and_restart(disk: &FaultyDisk, seed: u64, mode: CrashMode) {
    disk.crash(seed, mode);
    assert_eq!(
        disk.power_state(),
        PowerState::Standby,
        "a crash stops the disk"
    );
    disk.spin_up().expect("spin_up after the crash");
}

#[test]
fn a_crash_drops_a_write_that_was_never_synced() {
    let disk = active(WriteSync::Skipped, 0);
    write(&disk, "kept", 5000, Overwrite::Refuse).expect("write");
    disk.sync();
    write(&disk, "unsynced", 9000, Overwrite::Refuse).expect("write");
    assert_eq!(disk.unsynced_files(), vec!["unsynced"]);
    let report = disk.crash(1, CrashMode::DropUnsynced);
    assert_eq!(
        report.fates,
        vec![("unsynced".to_string(), UnsyncedFate::Lost)]
    );
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.list_files().expect("list"), vec!["kept"]);
    assert_eq!(read_all(&disk, "kept"), pattern(5000));
    assert_eq!(
        free_bytes(&disk),
        CAPACITY_BYTES - 5000,
        "the lost bytes are free"
    );
    let counts = disk.counts();
    assert_eq!((counts.unsynced_acknowledged, counts.crashes), (2, 1));
    assert_eq!(counts.unsynced_lost, 1);
}

#[test]
fn a_crash_brings_back_the_synced_version_of_a_replaced_file_and_an_unsynced_removal() {
    let disk = active(WriteSync::Skipped, 0);
    write_bytes(&disk, "replaced", b"synced version", Overwrite::Refuse);
    write_bytes(&disk, "removed", b"still here", Overwrite::Refuse);
    disk.sync();
    write_bytes(&disk, "replaced", b"new", Overwrite::Replace);
    disk.remove_file("removed").expect("remove");
    assert_eq!(disk.list_files().expect("list"), vec!["replaced"]);
    crash_and_restart(&disk, 1, CrashMode::DropUnsynced);
    assert_eq!(read_all(&disk, "replaced"), b"synced version");
    assert_eq!(read_all(&disk, "removed"), b"still here");
    assert_eq!(
        free_bytes(&disk),
        CAPACITY_BYTES - 24,
        "space follows the files"
    );
}

#[test]
fn an_unsynced_removal_is_undone_or_done_whole_never_torn() {
    let mut fates = Vec::new();
    for seed in 0..16 {
        let disk = active(WriteSync::Skipped, 0);
        write(&disk, "f", 10_000, Overwrite::Refuse).expect("write");
        disk.sync();
        disk.remove_file("f").expect("remove");
        let report = disk.crash(seed, CrashMode::Arbitrary);
        let [(_, fate)] = report.fates.as_slice() else {
            panic!("seed {seed}: one unsynced removal, got {report:?}");
        };
        disk.spin_up().expect("spin_up");
        match fate {
            UnsyncedFate::Lost => assert_eq!(read_all(&disk, "f"), pattern(10_000)),
            UnsyncedFate::Landed => assert!(disk.list_files().expect("list").is_empty()),
            torn => panic!("seed {seed}: a removal was {torn:?}"),
        }
        fates.push(*fate);
    }
    assert!(fates.contains(&UnsyncedFate::Lost) && fates.contains(&UnsyncedFate::Landed));
}

#[test]
fn a_torn_write_keeps_a_sector_aligned_prefix() {
    let disk = active(WriteSync::Skipped, 0);
    let len = 10 * SECTOR_BYTES + 100;
    for seed in 0..20 {
        write(&disk, "torn", len, Overwrite::Replace).expect("write");
        let report = disk.crash(seed, CrashMode::TearUnsynced);
        let [(name, UnsyncedFate::Torn { kept_bytes })] = report.fates.as_slice() else {
            panic!(
                "seed {seed}: expected one torn write, got {:?}",
                report.fates
            );
        };
        assert_eq!(name, "torn");
        assert_eq!(kept_bytes % SECTOR_BYTES, 0, "seed {seed}: cut at a sector");
        assert!(
            *kept_bytes < len,
            "seed {seed}: a torn write loses something"
        );
        disk.spin_up().expect("spin_up");
        assert_eq!(read_all(&disk, "torn"), pattern(*kept_bytes), "seed {seed}");
        assert_eq!(
            free_bytes(&disk),
            CAPACITY_BYTES - kept_bytes,
            "seed {seed}"
        );
    }
    assert_eq!(disk.counts().unsynced_torn, 20);
}

#[test]
fn a_synced_write_survives_every_crash() {
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::TearUnsynced,
        CrashMode::Arbitrary,
    ] {
        let disk = active(WriteSync::BeforeReturning, 1);
        for round in 0..8u64 {
            let len = round * 3000 + 1;
            write(&disk, &format!("f{round}"), len, Overwrite::Refuse).expect("write");
            write(&disk, "replaced", len, Overwrite::Replace).expect("replace");
            assert!(
                disk.unsynced_files().is_empty(),
                "{mode:?}: acknowledged unsynced"
            );
            let report = disk.crash(round, mode);
            assert!(report.fates.is_empty(), "{mode:?}: {report:?}");
            disk.spin_up().expect("spin_up");
            for earlier in 0..=round {
                let name = format!("f{earlier}");
                assert_eq!(
                    read_all(&disk, &name),
                    pattern(earlier * 3000 + 1),
                    "{name}"
                );
            }
            assert_eq!(read_all(&disk, "replaced"), pattern(len));
        }
    }
}

#[test]
fn a_sync_or_a_spin_down_makes_skipped_writes_durable() {
    let disk = active(WriteSync::Skipped, 0);
    write(&disk, "synced", 10_000, Overwrite::Refuse).expect("write");
    disk.sync();
    write(&disk, "spun-down", 20_000, Overwrite::Refuse).expect("write");
    disk.spin_down().expect("spin_down");
    assert!(disk.unsynced_files().is_empty());
    crash_and_restart(&disk, 3, CrashMode::TearUnsynced);
    assert_eq!(read_all(&disk, "synced"), pattern(10_000));
    assert_eq!(read_all(&disk, "spun-down"), pattern(20_000));
}

/// A miniature of the later swarm: write objects, acknowledge each, crash, and count the
/// acknowledged objects that do not read back whole.
fn acknowledged_but_lost(write_sync: WriteSync, seed: u64) -> usize {
    let disk = active(write_sync, 3);
    let mut acknowledged = Vec::new();
    for object in 0..12u64 {
        let name = format!("object-{object}");
        let len = 1000 + object * 5000;
        if write(&disk, &name, len, Overwrite::Refuse).is_ok() {
            acknowledged.push((name, len));
        }
    }
    crash_and_restart(&disk, seed, CrashMode::Arbitrary);
    let intact = |(name, len): &(String, u64)| {
        disk.file_len(name).is_ok() && read_all(&disk, name) == pattern(*len)
    };
    acknowledged.iter().filter(|object| !intact(object)).count()
}

#[test]
fn a_harness_that_checks_acknowledged_writes_catches_a_skipped_sync() {
    for seed in 0..10 {
        assert_eq!(acknowledged_but_lost(WriteSync::BeforeReturning, seed), 0);
        assert!(
            acknowledged_but_lost(WriteSync::Skipped, seed) > 0,
            "seed {seed}: a disk that skips its sync lost nothing"
        );
    }
}

#[test]
fn the_same_seed_tears_the_same_way() {
    let run = |seed: u64| {
        let disk = active(WriteSync::Skipped, 6);
        for file in 0..16u64 {
            write(
                &disk,
                &format!("f{file:02}"),
                file * 7000 + 1,
                Overwrite::Refuse,
            )
            .expect("write");
        }
        let report = disk.crash(seed, CrashMode::Arbitrary);
        disk.spin_up().expect("spin_up");
        let files: Vec<(String, Vec<u8>)> = disk
            .list_files()
            .expect("list")
            .into_iter()
            .map(|name| (name.clone(), read_all(&disk, &name)))
            .collect();
        (report, files)
    };
    let (first_report, first_files) = run(42);
    let (again_report, again_files) = run(42);
    assert_eq!(first_report, again_report);
    assert_eq!(first_files, again_files);
    assert_ne!(run(43).0, first_report, "another seed tears another way");
    for fate in [UnsyncedFate::Lost, UnsyncedFate::Landed] {
        assert!(
            first_report.count(fate) > 0,
            "no {fate:?} among 16: {first_report:?}"
        );
    }
    assert!(first_report.count(UnsyncedFate::Torn { kept_bytes: 0 }) > 0);
}

#[test]
fn one_power_cut_crashes_each_disk_as_if_alone() {
    let prepare = |index| {
        let disk = active(WriteSync::Skipped, index);
        for file in 0..6u64 {
            write(&disk, &format!("f{file}"), 30_000, Overwrite::Refuse).expect("write");
        }
        disk
    };
    let (a, b) = (prepare(0), prepare(1));
    let together = crash_together(&[&a, &b], 77, CrashMode::Arbitrary);
    let alone = prepare(1).crash(77, CrashMode::Arbitrary);
    assert_eq!(together.len(), 2);
    assert_eq!(together[1], alone);
    assert_ne!(together[0], together[1], "each disk draws its own stream");
}

/// A source that cuts the disk's power half-way through, as a crash during an upload.
struct PowerCutSource {
    disk: Arc<FaultyDisk>,
    sent_bytes: u64,
}

impl Read for PowerCutSource {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.sent_bytes == 0 {
            self.disk.crash(0, CrashMode::Arbitrary);
        }
        let count = buffer.len().min(1000);
        buffer[..count].fill(7);
        self.sent_bytes += count as u64;
        Ok(count)
    }
}

#[test]
fn a_write_in_flight_when_the_power_goes_leaves_nothing() {
    for write_sync in [WriteSync::BeforeReturning, WriteSync::Skipped] {
        let disk = Arc::new(active(write_sync, 0));
        let mut source = PowerCutSource {
            disk: Arc::clone(&disk),
            sent_bytes: 0,
        };
        let result = disk.write_file("cut", 50_000, &mut source, Overwrite::Refuse);
        assert!(matches!(result, Err(DiskError::Io { .. })), "{result:?}");
        assert_eq!(disk.power_state(), PowerState::Standby);
        disk.spin_up().expect("spin_up");
        assert!(
            disk.list_files().expect("list").is_empty(),
            "{write_sync:?}"
        );
        assert_eq!(free_bytes(&*disk), CAPACITY_BYTES, "{write_sync:?}");
    }
}

#[test]
fn a_crash_leaves_a_failed_disk_failed() {
    let disk = active(WriteSync::Skipped, 0);
    disk.mark_failed();
    disk.crash(0, CrashMode::DropUnsynced);
    assert_eq!(disk.power_state(), PowerState::Failed);
}

#[test]
fn an_injected_write_error_fails_exactly_the_next_calls_and_leaves_nothing() {
    let disk = active(WriteSync::BeforeReturning, 0);
    inject_next(&disk, Operation::Write, Fault::IoError, 2);
    for attempt in 0..2 {
        let result = write(&disk, "f", 20_000, Overwrite::Refuse);
        assert!(
            matches!(result, Err(DiskError::Io { .. })),
            "{attempt}: {result:?}"
        );
    }
    assert!(disk.list_files().expect("list").is_empty());
    assert_eq!(free_bytes(&disk), CAPACITY_BYTES);
    write(&disk, "f", 20_000, Overwrite::Refuse).expect("the third write works");
    assert_eq!(disk.counts().write_io_errors, 2);
}

#[test]
fn an_injected_read_error_fails_the_read_and_the_data_stays() {
    let disk = active(WriteSync::BeforeReturning, 0);
    write(&disk, "f", 100, Overwrite::Refuse).expect("write");
    inject_next(&disk, Operation::Read, Fault::IoError, 1);
    let failed = disk.read_at("f", 0, &mut [0u8; 10]);
    assert!(matches!(failed, Err(DiskError::Io { .. })), "{failed:?}");
    assert_eq!(read_all(&disk, "f"), pattern(100));
    assert_eq!(disk.counts().read_io_errors, 1);
}

#[test]
fn an_injected_spin_up_error_leaves_the_disk_in_standby_until_a_retry() {
    let disk = honest();
    inject_next(&disk, Operation::SpinUp, Fault::IoError, 1);
    assert!(matches!(disk.spin_up(), Err(DiskError::Io { .. })));
    assert_eq!(disk.power_state(), PowerState::Standby);
    disk.spin_up().expect("the retry spins up");
    assert_eq!(disk.power_state(), PowerState::Active);
    assert_eq!(disk.counts().spin_up_io_errors, 1);
}

#[test]
fn faults_fire_only_on_calls_the_disk_admitted() {
    let disk = honest();
    inject_next(&disk, Operation::Read, Fault::IoError, 1);
    let refused = disk.read_at("f", 0, &mut [0u8; 1]);
    assert!(
        matches!(refused, Err(DiskError::NotReady { .. })),
        "{refused:?}"
    );
    disk.spin_up().expect("spin_up");
    let bad_name = disk.read_at(".hidden", 0, &mut [0u8; 1]);
    assert!(
        matches!(bad_name, Err(DiskError::BadName { .. })),
        "{bad_name:?}"
    );
    let injected = disk.read_at("f", 0, &mut [0u8; 1]);
    assert!(
        matches!(injected, Err(DiskError::Io { .. })),
        "{injected:?}"
    );
    assert_eq!(disk.counts().read_io_errors, 1);
}

#[test]
fn a_latency_spike_adds_its_virtual_time_to_the_call() {
    let disk = active(WriteSync::BeforeReturning, 0);
    write(&disk, "f", 100, Overwrite::Refuse).expect("write");
    let spike = Fault::LatencySpike {
        extra_us: 2_500_000,
    };
    inject_next(&disk, Operation::Read, spike, 1);
    let before_us = disk.clock().now_us();
    assert_eq!(disk.read_at("f", 0, &mut [0u8; 100]).expect("read"), 100);
    assert_eq!(
        disk.clock().now_us() - before_us,
        2_500_000,
        "instant disk + spike"
    );
    disk.read_at("f", 0, &mut [0u8; 100]).expect("read");
    assert_eq!(
        disk.clock().now_us() - before_us,
        2_500_000,
        "one spike only"
    );
    let counts = disk.counts();
    assert_eq!(
        (counts.latency_spikes, counts.latency_added_us),
        (1, 2_500_000)
    );
}

#[test]
fn an_injected_failure_fails_the_disk_at_that_call() {
    let disk = active(WriteSync::BeforeReturning, 0);
    write(&disk, "f", 100, Overwrite::Refuse).expect("write");
    inject_next(&disk, Operation::Write, Fault::Failure, 1);
    let result = write(&disk, "g", 100, Overwrite::Refuse);
    assert!(
        matches!(result, Err(DiskError::Failed { .. })),
        "{result:?}"
    );
    assert_eq!(disk.power_state(), PowerState::Failed);
    assert!(matches!(
        disk.read_at("f", 0, &mut [0u8; 1]),
        Err(DiskError::Failed { .. })
    ));
    assert!(matches!(disk.spin_up(), Err(DiskError::Failed { .. })));
    assert_eq!(disk.counts().failures, 1);
}

#[test]
fn a_full_disk_refuses_and_leaves_nothing() {
    let disk = active(WriteSync::BeforeReturning, 0);
    write(&disk, "a", 5000, Overwrite::Refuse).expect("write");
    disk.fill_leaving(1000);
    assert_eq!(free_bytes(&disk), 1000);
    let refused = write(&disk, "b", 1001, Overwrite::Refuse);
    match refused {
        Err(DiskError::NoSpace {
            needed_bytes,
            free_bytes,
            ..
        }) => assert_eq!((needed_bytes, free_bytes), (1001, 1000)),
        other => panic!("expected NoSpace, got {other:?}"),
    }
    assert_eq!(disk.list_files().expect("list"), vec!["a"]);
    assert_eq!(free_bytes(&disk), 1000, "the refused write left nothing");
    write(&disk, "b", 1000, Overwrite::Refuse).expect("exactly the free bytes fit");
    assert_eq!(disk.counts().no_space_refusals, 1);
    disk.clear_filler();
    assert_eq!(free_bytes(&disk), CAPACITY_BYTES - 6000);
}

#[test]
fn a_full_disk_stays_full_through_a_crash() {
    let disk = active(WriteSync::Skipped, 0);
    write(&disk, "a", 5000, Overwrite::Refuse).expect("write");
    disk.fill_leaving(0);
    crash_and_restart(&disk, 0, CrashMode::DropUnsynced);
    assert_eq!(
        free_bytes(&disk),
        5000,
        "the lost write's bytes are free again"
    );
    disk.clear_filler();
    assert_eq!(free_bytes(&disk), CAPACITY_BYTES);
}

#[test]
fn a_seeded_error_probability_fails_the_same_calls_for_the_same_seed() {
    let failing_calls = |seed: u64| {
        let mut config = FaultyConfig::new(0, CAPACITY_BYTES);
        config.seed = seed;
        let disk = FaultyDisk::new(config, VirtualClock::new()).expect("disk");
        disk.spin_up().expect("spin_up");
        write(&disk, "f", 10, Overwrite::Refuse).expect("write");
        disk.inject(Operation::Read, Fault::IoError, Trigger::Probability(0.3))
            .expect("inject");
        let calls: Vec<bool> = (0..64)
            .map(|_| disk.read_at("f", 0, &mut [0u8; 10]).is_err())
            .collect();
        let failed = calls.iter().filter(|f| **f).count() as u64;
        assert_eq!(disk.counts().read_io_errors, failed);
        calls
    };
    let first = failing_calls(1);
    assert_eq!(first, failing_calls(1));
    assert_ne!(first, failing_calls(2));
    let failed = first.iter().filter(|f| **f).count();
    assert!((5..=35).contains(&failed), "{failed} of 64 at p = 0.3");
}

#[test]
fn a_probability_outside_zero_to_one_is_refused() {
    let disk = honest();
    for probability in [-0.1, 1.5, f64::NAN] {
        let result = disk.inject(
            Operation::Read,
            Fault::IoError,
            Trigger::Probability(probability),
        );
        assert!(
            matches!(result, Err(DiskError::BadConfig { .. })),
            "{probability}"
        );
    }
}
