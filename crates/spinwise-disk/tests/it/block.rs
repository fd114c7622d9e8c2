//! The block disk with stand-in commands: shell scripts named hdparm, dd, mount, umount and sync
//! that log their arguments and keep a fake drive power state, over a plain directory as the
//! "mounted" filesystem. This checks the order of the commands, the wake-only-when-asleep rule,
//! command failures as typed errors, and the whole file contract (the conformance suite) —
//! everything except real hardware, which this machine does not have.
#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::WithTempDir;
use spinwise_disk::{BlockConfig, BlockDisk, Disk, DiskError, DrivePower, Overwrite, PowerState};
use tempfile::TempDir;

const DEVICE: &str = "/dev/disk/by-id/fake-drive";

/// Writes an executable stand-in `name` that logs `name ARGS` to `log` and then runs `body`.
fn stand_in(bin: &Path, name: &str, log: &Path, body: &str) -> PathBuf {
    let path = bin.join(name);
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --probe ] && exit 0\necho \"{name} $*\" >> '{}'\n{body}\n",
        log.display()
    );
    fs::write(&path, script).expect("write stand-in");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    // Another test thread forking while this file was open for writing can make the first exec
    // fail with "text file busy"; wait until the script runs.
    for _ in 0..100 {
        match Command::new(&path).arg("--probe").status() {
            Err(e) if e.kind() == ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => break,
        }
    }
    path
}

struct Rig {
    root: TempDir,
    config: BlockConfig,
}

impl Rig {
    fn log(&self) -> PathBuf {
        self.root.path().join("commands.log")
    }

    fn state_file(&self) -> PathBuf {
        self.root.path().join("drive-state")
    }

    /// The commands run so far, one per line, then forgets them.
    fn take_log(&self) -> Vec<String> {
        let text = fs::read_to_string(self.log()).unwrap_or_default();
        let _ = fs::remove_file(self.log());
        text.lines().map(str::to_string).collect()
    }
}

/// A rig whose `mount` runs `mount_body` (so a test can make it fail).
fn rig_with_mount(mount_body: &str) -> Rig {
    let root = TempDir::new().expect("temp");
    let bin = root.path().join("bin");
    let mount_point = root.path().join("mnt");
    fs::create_dir_all(&bin).expect("bin");
    fs::create_dir_all(&mount_point).expect("mount point");
    let log = root.path().join("commands.log");
    let state = root.path().join("drive-state");
    fs::write(&state, "standby").expect("state");
    let state = state.display();
    let hdparm_body = format!(
        "case \"$1\" in\n -C) printf '\\n%s:\\n drive state is:  %s\\n' \"$2\" \"$(cat '{state}')\" ;;\n -y) echo standby > '{state}' ;;\nesac"
    );
    let mut config = BlockConfig::new(9, DEVICE, &mount_point, 64 << 20);
    config.commands.hdparm = stand_in(&bin, "hdparm", &log, &hdparm_body);
    config.commands.dd = stand_in(&bin, "dd", &log, &format!("echo active/idle > '{state}'"));
    config.commands.mount = stand_in(&bin, "mount", &log, mount_body);
    config.commands.umount = stand_in(&bin, "umount", &log, "");
    config.commands.sync = stand_in(&bin, "sync", &log, "");
    Rig { root, config }
}

fn rig() -> Rig {
    rig_with_mount("")
}

fn mount_point(rig: &Rig) -> String {
    rig.config.mount_point.display().to_string()
}

#[test]
fn spin_up_queries_wakes_a_sleeping_drive_and_mounts_then_spin_down_syncs_unmounts_and_stands_by() {
    let rig = rig();
    let disk = BlockDisk::new(rig.config.clone());
    let mnt = mount_point(&rig);
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.power_state(), PowerState::Active);
    assert_eq!(
        rig.take_log(),
        [
            format!("hdparm -C {DEVICE}"),
            format!("dd if={DEVICE} of=/dev/null bs=4096 count=1 iflag=direct"),
            format!("mount -o noatime {DEVICE} {mnt}"),
        ]
    );
    disk.spin_down().expect("spin_down");
    assert_eq!(disk.power_state(), PowerState::Standby);
    assert_eq!(
        rig.take_log(),
        [
            format!("sync -f {mnt}"),
            format!("umount {mnt}"),
            format!("hdparm -y {DEVICE}"),
        ]
    );
    assert_eq!(disk.query_power().expect("query"), DrivePower::Standby);
}

#[test]
fn an_awake_drive_is_not_woken_again() {
    let rig = rig();
    fs::write(rig.state_file(), "active/idle").expect("state");
    let disk = BlockDisk::new(rig.config.clone());
    disk.spin_up().expect("spin_up");
    let log = rig.take_log();
    assert!(log.iter().all(|line| !line.starts_with("dd ")), "{log:?}");
    assert_eq!(log.len(), 2, "query and mount only: {log:?}");
}

#[test]
fn a_failing_mount_is_a_command_error_with_its_stderr_and_the_disk_stays_in_standby() {
    let rig = rig_with_mount("echo 'mount: special device does not exist.' >&2; exit 32");
    let disk = BlockDisk::new(rig.config.clone());
    match disk.spin_up() {
        Err(DiskError::Command {
            command, stderr, ..
        }) => {
            assert!(command.contains("mount -o noatime"), "{command}");
            assert_eq!(stderr, "mount: special device does not exist.");
        }
        other => panic!("expected a command error, got {other:?}"),
    }
    assert_eq!(disk.power_state(), PowerState::Standby);
    assert!(matches!(disk.list_files(), Err(DiskError::NotReady { .. })));
}

#[test]
fn a_missing_tool_is_an_io_error_naming_the_command() {
    let mut config = rig().config;
    config.commands.hdparm = "/nonexistent/hdparm".into();
    let disk = BlockDisk::new(config);
    match disk.spin_up() {
        Err(DiskError::Io { context, .. }) => assert!(context.contains("/nonexistent/hdparm")),
        other => panic!("expected an IO error, got {other:?}"),
    }
}

#[test]
fn files_survive_a_power_cycle_and_the_failed_marker_survives_a_new_handle() {
    let rig = rig();
    let disk = BlockDisk::new(rig.config.clone());
    disk.spin_up().expect("spin_up");
    disk.write_file("stack", 3, &mut &b"abc"[..], Overwrite::Refuse)
        .expect("write");
    disk.spin_down().expect("spin_down");
    disk.spin_up().expect("spin_up again");
    assert_eq!(disk.list_files().expect("list"), vec!["stack"]);
    disk.mark_failed();
    let again = BlockDisk::new(rig.config.clone());
    assert!(matches!(again.spin_up(), Err(DiskError::Failed { .. })));
    assert_eq!(again.power_state(), PowerState::Failed);
}

fn block_disk() -> WithTempDir<BlockDisk> {
    let rig = rig();
    WithTempDir {
        disk: BlockDisk::new(rig.config),
        _directory: rig.root,
    }
}

spinwise_disk::conformance_tests!(block_disk_with_stand_in_commands, super::block_disk);
