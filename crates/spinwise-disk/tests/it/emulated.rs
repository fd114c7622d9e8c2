//! What only the emulated disk promises beyond the conformance suite: persistence across
//! handles (data, the failed marker), crash cleanup at open, real latencies scaled by the time
//! factor, the bandwidth throttle, fault injection, and thread safety.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use spinwise_disk::conformance::{PatternReader, pattern_byte};
use spinwise_disk::{
    Disk, DiskError, DiskTiming, EmulatedConfig, EmulatedDisk, Overwrite, PowerState,
};
use spinwise_model::Distribution;
use tempfile::TempDir;

const CAPACITY_BYTES: u64 = 256 << 20;

fn config(root: &TempDir) -> EmulatedConfig {
    EmulatedConfig::new(root.path().join("disk-0"), 0, CAPACITY_BYTES)
}

fn active_disk(config: EmulatedConfig) -> EmulatedDisk {
    let disk = EmulatedDisk::create(config).expect("create");
    disk.spin_up().expect("spin_up");
    disk
}

fn write(disk: &EmulatedDisk, name: &str, len: u64) -> Result<(), DiskError> {
    disk.write_file(name, len, &mut PatternReader::new(len), Overwrite::Refuse)
}

/// Every entry of the directory, hidden ones included, sorted; but not the power-state file,
/// which every open disk keeps (tests/it/power_file.rs covers it).
fn raw_entries(directory: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(directory)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name != spinwise_disk::power_file::POWER_STATE_FILE)
        .collect();
    names.sort();
    names
}

#[test]
fn data_survives_a_new_handle_on_the_same_directory() {
    let root = TempDir::new().expect("temp");
    {
        let disk = active_disk(config(&root));
        write(&disk, "stack-1", 300_000).expect("write");
        write(&disk, "stack-2", 5).expect("write");
    }
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    assert_eq!(
        disk.power_state(),
        PowerState::Standby,
        "a reopened disk rests"
    );
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.list_files().expect("list"), vec!["stack-1", "stack-2"]);
    let space = disk.space().expect("space");
    assert_eq!(
        space.free_bytes,
        CAPACITY_BYTES - 300_005,
        "used bytes recounted"
    );
    let mut buffer = vec![0u8; 300_000];
    assert_eq!(
        disk.read_at("stack-1", 0, &mut buffer).expect("read"),
        300_000
    );
    assert!(
        buffer
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern_byte(i as u64))
    );
}

#[test]
fn temp_files_left_by_a_crash_are_removed_at_open_and_not_counted() {
    let root = TempDir::new().expect("temp");
    let directory: PathBuf = root.path().join("disk-0");
    {
        let disk = active_disk(config(&root));
        write(&disk, "kept", 1000).expect("write");
    }
    // What a process killed between creating and renaming its temp file leaves behind.
    fs::write(directory.join(".tmp-0-half-written"), vec![1u8; 4096]).expect("fake temp");
    fs::write(directory.join(".tmp-9-kept"), vec![2u8; 10]).expect("fake temp");
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    assert_eq!(raw_entries(&directory), vec!["kept"]);
    disk.spin_up().expect("spin_up");
    assert_eq!(
        disk.space().expect("space").free_bytes,
        CAPACITY_BYTES - 1000
    );
}

#[test]
fn a_failed_disk_stays_failed_after_reopening() {
    let root = TempDir::new().expect("temp");
    {
        let disk = active_disk(config(&root));
        write(&disk, "f", 10).expect("write");
        disk.mark_failed();
    }
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    assert_eq!(disk.power_state(), PowerState::Failed);
    assert!(matches!(disk.spin_up(), Err(DiskError::Failed { disk: 0 })));
}

#[test]
fn spin_up_and_spin_down_take_the_sampled_latency_times_the_time_factor() {
    let root = TempDir::new().expect("temp");
    let mut config = config(&root);
    config.timing = DiskTiming {
        spin_up_latency_s: Distribution::Fixed { value: 2.0 },
        mount_latency_s: Distribution::Fixed { value: 1.0 },
        unmount_latency_s: Distribution::Fixed { value: 2.0 },
        ..DiskTiming::instant()
    };
    config.time_factor = 0.05;
    let disk = EmulatedDisk::create(config).expect("create");
    let start = Instant::now();
    disk.spin_up().expect("spin_up");
    let spin_up = start.elapsed();
    let start = Instant::now();
    disk.spin_down().expect("spin_down");
    let spin_down = start.elapsed();
    let close = |measured: Duration, expected_ms: u64| {
        let expected = Duration::from_millis(expected_ms);
        // Generous above: a loaded host wakes sleepers late; an unscaled sleep (3 s) still fails.
        measured >= expected && measured < expected + Duration::from_millis(300)
    };
    assert!(
        close(spin_up, 150),
        "spin-up + mount 3 s × 0.05: {spin_up:?}"
    );
    assert!(close(spin_down, 100), "unmount 2 s × 0.05: {spin_down:?}");
}

#[test]
fn the_throttle_holds_reads_and_writes_to_the_configured_rate() {
    // On tmpfs when there is one: fsync is free there, so the test measures the throttle, not
    // the host disk's flush time (which, on a loaded machine, alone exceeds the 20% margin).
    let shm = Path::new("/dev/shm");
    let root = if shm.is_dir() {
        TempDir::new_in(shm).expect("temp in /dev/shm")
    } else {
        TempDir::new().expect("temp")
    };
    let mut config = config(&root);
    let rate_bytes_per_s = 50e6;
    config.throttle_bytes_per_s = Some(rate_bytes_per_s);
    let disk = active_disk(config);
    let len = 8u64 << 20;
    let expected_s = len as f64 / rate_bytes_per_s;
    let start = Instant::now();
    write(&disk, "big", len).expect("write");
    let write_s = start.elapsed().as_secs_f64();
    let mut buffer = vec![0u8; 1 << 20];
    let start = Instant::now();
    for chunk in 0..8 {
        disk.read_at("big", chunk << 20, &mut buffer).expect("read");
    }
    let read_s = start.elapsed().as_secs_f64();
    for (what, measured_s) in [("write", write_s), ("read", read_s)] {
        let ratio = measured_s / expected_s;
        eprintln!("{what}: 8 MiB in {measured_s:.3} s, expected {expected_s:.3} s");
        assert!(
            (0.8..=1.2).contains(&ratio),
            "{what} of 8 MiB at 50 MB/s took {measured_s:.3} s, expected {expected_s:.3} s"
        );
    }
}

#[test]
fn short_read_fault_returns_fewer_bytes_than_stored() {
    let root = TempDir::new().expect("temp");
    let disk = active_disk(config(&root));
    write(&disk, "f", 1000).expect("write");
    let mut buffer = [0u8; 100];
    disk.faults().set_short_reads(true);
    let read = disk.read_at("f", 0, &mut buffer).expect("read");
    assert!(
        read < 100,
        "a lying disk returned {read} of 100 stored bytes"
    );
    disk.faults().set_short_reads(false);
    assert_eq!(disk.read_at("f", 0, &mut buffer).expect("read"), 100);
}

#[test]
fn a_removed_disk_answers_failed_and_reopens_failed() {
    let root = TempDir::new().expect("temp");
    let disk = active_disk(config(&root));
    write(&disk, "f", 10).expect("write");
    disk.faults().remove_disk().expect("remove");
    let read = disk.read_at("f", 0, &mut [0u8; 10]);
    assert!(matches!(read, Err(DiskError::Failed { .. })), "{read:?}");
    assert_eq!(disk.power_state(), PowerState::Failed);
    let reopened = EmulatedDisk::open(config(&root)).expect("open");
    assert_eq!(reopened.power_state(), PowerState::Failed);
}

#[test]
fn injected_write_faults_fail_exactly_n_writes_and_leave_no_temp_files() {
    let root = TempDir::new().expect("temp");
    let disk = active_disk(config(&root));
    disk.faults().fail_next_writes(2);
    for attempt in 0..2 {
        let result = write(&disk, "f", 200_000);
        assert!(
            matches!(result, Err(DiskError::Io { .. })),
            "{attempt}: {result:?}"
        );
    }
    assert!(raw_entries(disk.directory()).is_empty());
    assert_eq!(
        disk.space().expect("space").free_bytes,
        CAPACITY_BYTES,
        "failed writes released their reservation"
    );
    write(&disk, "f", 200_000).expect("the third write works");
    assert_eq!(raw_entries(disk.directory()), vec!["f"]);
}

#[test]
fn concurrent_writers_and_readers_keep_files_and_space_consistent() {
    let root = TempDir::new().expect("temp");
    let disk = Arc::new(active_disk(config(&root)));
    let threads: Vec<_> = (0..4u64)
        .map(|thread| {
            let disk = Arc::clone(&disk);
            std::thread::spawn(move || {
                for round in 0..10u64 {
                    let own = format!("t{thread}-{round}");
                    write(&disk, &own, 10_000 + round).expect("write own");
                    let len = 1000 * (thread + 1);
                    disk.write_file(
                        "shared",
                        len,
                        &mut PatternReader::new(len),
                        Overwrite::Replace,
                    )
                    .expect("replace shared");
                    let mut buffer = vec![0u8; 10_000];
                    assert_eq!(disk.read_at(&own, 0, &mut buffer).expect("read"), 10_000);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    let files = disk.list_files().expect("list");
    assert_eq!(files.len(), 41);
    let stored: u64 = files.iter().map(|f| disk.file_len(f).expect("len")).sum();
    assert_eq!(
        disk.space().expect("space").free_bytes,
        CAPACITY_BYTES - stored
    );
}

#[test]
fn settings_the_disk_cannot_honour_are_refused() {
    let root = TempDir::new().expect("temp");
    let mut negative = config(&root);
    negative.time_factor = -1.0;
    assert!(matches!(
        EmulatedDisk::create(negative),
        Err(DiskError::BadConfig { .. })
    ));
    let mut zero_rate = config(&root);
    zero_rate.throttle_bytes_per_s = Some(0.0);
    assert!(matches!(
        EmulatedDisk::create(zero_rate),
        Err(DiskError::BadConfig { .. })
    ));
}

/// A source that announces its first read, then waits for a go-ahead before giving its bytes:
/// it holds a write in the middle of its IO for as long as the test wants.
struct GatedSource {
    started: mpsc::Sender<()>,
    go: Option<mpsc::Receiver<()>>,
    bytes: &'static [u8],
}

impl Read for GatedSource {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if let Some(go) = self.go.take() {
            let _ = self.started.send(());
            go.recv().map_err(std::io::Error::other)?;
        }
        let count = buffer.len().min(self.bytes.len());
        buffer[..count].copy_from_slice(&self.bytes[..count]);
        self.bytes = &self.bytes[count..];
        Ok(count)
    }
}

#[test]
fn a_write_in_flight_blocks_no_read_of_another_file_and_spin_down_waits_for_it() {
    let root = TempDir::new().expect("temp");
    let disk = Arc::new(active_disk(config(&root)));
    write(&disk, "other", 1000).expect("write");
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel();
    let writer = {
        let disk = Arc::clone(&disk);
        std::thread::spawn(move || {
            let mut source = GatedSource {
                started: started_tx,
                go: Some(go_rx),
                bytes: b"held bytes",
            };
            disk.write_file("held", 10, &mut source, Overwrite::Refuse)
        })
    };
    started_rx.recv().expect("the write started");
    // The read runs on its own thread so a lock wrongly held across the write's IO shows up as
    // a timeout here instead of a hung test.
    let (read_tx, read_rx) = mpsc::channel();
    {
        let disk = Arc::clone(&disk);
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 1000];
            let _ = read_tx.send(disk.read_at("other", 0, &mut buffer));
        });
    }
    let read = read_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a read of another file finishes while a write is in flight");
    assert_eq!(read.expect("read"), 1000);
    let spinner = {
        let disk = Arc::clone(&disk);
        std::thread::spawn(move || disk.spin_down())
    };
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !spinner.is_finished(),
        "spin_down must wait for the write in flight"
    );
    go_tx.send(()).expect("go");
    writer
        .join()
        .expect("writer")
        .expect("the held write succeeds");
    spinner.join().expect("spinner").expect("spin_down");
    assert_eq!(disk.power_state(), PowerState::Standby);
    disk.spin_up().expect("spin_up");
    let mut held = [0u8; 10];
    assert_eq!(disk.read_at("held", 0, &mut held).expect("read"), 10);
    assert_eq!(&held, b"held bytes");
}

#[test]
fn only_regular_files_with_contract_names_count_as_the_disks_files() {
    let root = TempDir::new().expect("temp");
    let directory = root.path().join("disk-0");
    fs::create_dir_all(directory.join("lost+found")).expect("operator dir");
    fs::create_dir_all(directory.join("subdir")).expect("a directory with a valid name");
    fs::write(directory.join("stack"), b"12345").expect("a file");
    let disk = active_disk(config(&root));
    assert_eq!(disk.list_files().expect("list"), vec!["stack"]);
    assert_eq!(disk.space().expect("space").free_bytes, CAPACITY_BYTES - 5);
}

/// A reopened disk sizes its files on first use, not at open; whatever that first use is, the
/// files found are counted once: a removal first releases exactly the removed file's bytes,
/// a replacement first releases the old length, and a file added behind the disk's back before
/// the first use is counted too.
#[test]
fn a_reopened_disk_counts_its_files_once_whatever_it_does_first() {
    let root = TempDir::new().expect("temp");
    {
        let disk = active_disk(config(&root));
        write(&disk, "stack-1", 300_000).expect("write");
        write(&disk, "stack-2", 5_000).expect("write");
    }
    let used = |disk: &EmulatedDisk| CAPACITY_BYTES - disk.space().expect("space").free_bytes;
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    disk.spin_up().expect("spin_up");
    disk.remove_file("stack-1").expect("remove first");
    assert_eq!(used(&disk), 5_000);
    drop(disk);
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    disk.spin_up().expect("spin_up");
    let mut data = PatternReader::new(700);
    disk.write_file("stack-2", 700, &mut data, Overwrite::Replace)
        .expect("replace first");
    assert_eq!(used(&disk), 700);
    drop(disk);
    let disk = EmulatedDisk::open(config(&root)).expect("reopen");
    fs::write(root.path().join("disk-0").join("stack-3"), vec![0u8; 42]).expect("behind");
    disk.spin_up().expect("spin_up");
    assert_eq!(used(&disk), 742);
}

/// Starts `disk.write_file(name, …, overwrite)` of `bytes` on its own thread, held in the middle
/// of its IO until the returned sender says go; returns once the write has started.
fn held_write(
    disk: &Arc<EmulatedDisk>,
    name: &'static str,
    bytes: &'static [u8],
    overwrite: Overwrite,
) -> (
    mpsc::Sender<()>,
    std::thread::JoinHandle<Result<(), DiskError>>,
) {
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel();
    let writer = {
        let disk = Arc::clone(disk);
        std::thread::spawn(move || {
            let mut source = GatedSource {
                started: started_tx,
                go: Some(go_rx),
                bytes,
            };
            disk.write_file(name, bytes.len() as u64, &mut source, overwrite)
        })
    };
    started_rx.recv().expect("the write started");
    (go_tx, writer)
}

/// Several processes open one data directory (a CLI command beside a running server), and each
/// opens every disk. A temporary file is a crash's leftover only when no live handle is writing
/// it: opening the disk elsewhere while a write is in flight leaves that write's file alone, and
/// the write lands.
#[test]
fn opening_the_disk_elsewhere_leaves_a_write_in_flight_alone() {
    let root = TempDir::new().expect("temp");
    let directory = root.path().join("disk-0");
    let disk = Arc::new(active_disk(config(&root)));
    let (go, writer) = held_write(&disk, "held", b"held bytes", Overwrite::Refuse);
    let elsewhere = EmulatedDisk::open(config(&root)).expect("a second handle opens");
    let entries = raw_entries(&directory);
    assert!(
        entries.iter().any(|name| name.starts_with(".tmp-")),
        "the write in flight keeps its temporary file: {entries:?}"
    );
    go.send(()).expect("go");
    writer
        .join()
        .expect("writer")
        .expect("the write in flight lands although the disk was opened elsewhere");
    elsewhere.spin_up().expect("spin_up");
    let mut held = [0u8; 10];
    assert_eq!(elsewhere.read_at("held", 0, &mut held).expect("read"), 10);
    assert_eq!(&held, b"held bytes");
    drop((disk, elsewhere));
    EmulatedDisk::open(config(&root)).expect("reopen");
    assert_eq!(
        raw_entries(&directory),
        vec!["held"],
        "nothing is left behind"
    );
}

/// Two handles on one directory (two processes) number their temporary files independently, so
/// both may pick the same temporary name for one file: the second takes the next number instead
/// of failing, and the last commit wins.
#[test]
fn two_handles_replacing_one_file_at_once_both_succeed() {
    let root = TempDir::new().expect("temp");
    let first = Arc::new(active_disk(config(&root)));
    let second = EmulatedDisk::open(config(&root)).expect("a second handle");
    second.spin_up().expect("spin_up");
    let (go, writer) = held_write(&first, "shared", b"first", Overwrite::Replace);
    let mut data: &[u8] = b"second";
    second
        .write_file("shared", 6, &mut data, Overwrite::Replace)
        .expect("the second handle's replacement lands while the first is in flight");
    go.send(()).expect("go");
    writer.join().expect("writer").expect("the first lands too");
    let mut bytes = [0u8; 5];
    assert_eq!(second.read_at("shared", 0, &mut bytes).expect("read"), 5);
    assert_eq!(&bytes, b"first", "the last commit wins");
}

/// A handle's space ledger counts the files it found when it first sized them plus its own
/// writes; another handle (another process) may grow a file since. Removing or replacing that
/// file is the world changing under the handle, not a broken caller: no panic, and the ledger
/// stays within its capacity.
#[test]
fn a_file_another_handle_grew_is_removed_or_replaced_without_a_panic() {
    let root = TempDir::new().expect("temp");
    let first = active_disk(config(&root));
    write(&first, "grown", 5).expect("write");
    write(&first, "replaced", 5).expect("write");
    let second = active_disk(config(&root));
    for name in ["grown", "replaced"] {
        let mut data = PatternReader::new(100_000);
        second
            .write_file(name, 100_000, &mut data, Overwrite::Replace)
            .expect("the other handle grows the file");
    }
    first.remove_file("grown").expect("removed");
    let mut data = PatternReader::new(7);
    first
        .write_file("replaced", 7, &mut data, Overwrite::Replace)
        .expect("replaced");
    let free_bytes = first.space().expect("space").free_bytes;
    assert!(
        (CAPACITY_BYTES - 7..=CAPACITY_BYTES).contains(&free_bytes),
        "the ledger holds at most the replacement: {free_bytes} free"
    );
    assert_eq!(first.list_files().expect("list"), vec!["replaced"]);
}
