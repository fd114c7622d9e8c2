//! The Linux block-device disk: a real drive with a filesystem, driven by the operator's
//! tools. Spin-up queries the drive's power state (`hdparm -C`), wakes it with one direct read
//! if it sleeps (`dd … iflag=direct`, or `sdparm --command=start` for SCSI/SAS drives), and
//! mounts it; spin-down syncs the filesystem, unmounts it and sends the drive to standby
//! (`hdparm -y`, ATA STANDBY IMMEDIATE, or `sdparm --command=stop`). File operations are the
//! emulated disk's, on the mount point (`files::DirectoryFiles`).
//!
//! Invariants: `files` is `Some` exactly while the filesystem is mounted by us and the state is
//! `Active`; it is replaced only inside a power transition holding the gate's exclusive guard,
//! so no file operation runs on an unmounting filesystem. A command that fails is a typed
//! [`DiskError::Command`] carrying its stderr; a command that cannot be started is `Io`.
//!
//! Untested against real hardware here (the development machine has no spare block device):
//! the command lines and the output parsing are unit-tested, and the whole disk runs the
//! conformance suite with stand-in commands (tests/it/block.rs).

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::RwLock;

use crate::emulated::FAILED_MARKER;
use crate::files::{DirectoryFiles, Hooks};
use crate::gate::PowerGate;
use crate::{Disk, DiskError, DiskIndex, Overwrite, PowerState, Space};

/// Which tool controls the drive's power.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerTool {
    /// ATA/SATA drives: `hdparm -C` to query, `hdparm -y` (STANDBY IMMEDIATE) to spin down, a
    /// direct read to wake.
    Hdparm,
    /// SCSI/SAS drives: `sdparm --command=start|stop`; no power query (assumed asleep).
    Sdparm,
}

/// Where the tools are (bare names are looked up on `PATH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandPaths {
    pub hdparm: PathBuf,
    pub sdparm: PathBuf,
    pub mount: PathBuf,
    pub umount: PathBuf,
    pub sync: PathBuf,
    pub dd: PathBuf,
}

impl Default for CommandPaths {
    fn default() -> Self {
        CommandPaths {
            hdparm: "hdparm".into(),
            sdparm: "sdparm".into(),
            mount: "mount".into(),
            umount: "umount".into(),
            sync: "sync".into(),
            dd: "dd".into(),
        }
    }
}

/// How to drive one block device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockConfig {
    pub index: DiskIndex,
    /// The device, preferably a stable name (`/dev/disk/by-id/ata-…`), holding a filesystem.
    pub device: PathBuf,
    /// An existing, empty directory the filesystem is mounted on.
    pub mount_point: PathBuf,
    /// `mount -t`; `None` lets mount detect it.
    pub filesystem: Option<String>,
    /// `mount -o`, e.g. `noatime`; empty for none.
    pub mount_options: String,
    /// The bytes the store may use on this disk (at most the filesystem's size).
    pub capacity_bytes: u64,
    pub power_tool: PowerTool,
    pub commands: CommandPaths,
}

impl BlockConfig {
    /// An `hdparm` disk with default tool paths and `noatime`.
    pub fn new(
        index: DiskIndex,
        device: impl Into<PathBuf>,
        mount_point: impl Into<PathBuf>,
        capacity_bytes: u64,
    ) -> BlockConfig {
        BlockConfig {
            index,
            device: device.into(),
            mount_point: mount_point.into(),
            filesystem: None,
            mount_options: "noatime".to_string(),
            capacity_bytes,
            power_tool: PowerTool::Hdparm,
            commands: CommandPaths::default(),
        }
    }
}

/// A drive's power state as `hdparm -C` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrivePower {
    /// "active/idle", "active", "idle" (and the IDLE_A/B/C variants): spinning.
    ActiveOrIdle,
    /// "standby": spun down, wakes on the next media access.
    Standby,
    /// "sleeping": needs a reset to wake (a read does it through the kernel).
    Sleeping,
    /// "unknown" (the drive did not say) or a state this code does not know.
    Unknown,
}

/// Parses `hdparm -C` output (`"/dev/sda:\n drive state is:  standby\n"`); `None` when it has
/// no state line.
pub fn parse_hdparm_state(output: &str) -> Option<DrivePower> {
    let line = output.lines().find(|l| l.contains("drive state is:"))?;
    let state = line
        .split("drive state is:")
        .nth(1)?
        .trim()
        .to_ascii_lowercase();
    Some(
        if state.starts_with("active") || state.starts_with("idle") {
            DrivePower::ActiveOrIdle
        } else if state.starts_with("standby") {
            DrivePower::Standby
        } else if state.starts_with("sleeping") {
            DrivePower::Sleeping
        } else {
            DrivePower::Unknown
        },
    )
}

/// Whether `mount_point` appears as a mount point in a `/proc/self/mounts` listing (whose
/// fields escape space, tab, newline and backslash as octal `\040` …).
pub fn is_mount_point_in(mounts: &str, mount_point: &Path) -> bool {
    let wanted = mount_point.to_string_lossy();
    mounts
        .lines()
        .filter_map(|line| line.split(' ').nth(1))
        .any(|field| unescape_mount_field(field) == wanted)
}

fn unescape_mount_field(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(byte) => {
                out.push(byte as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// One step of a power transition, as a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockStep {
    /// `hdparm -C DEVICE` (none for sdparm).
    QueryPower,
    /// `dd if=DEVICE of=/dev/null bs=4096 count=1 iflag=direct`, or `sdparm --command=start`.
    Wake,
    /// `mount [-t FS] [-o OPTIONS] DEVICE MOUNT_POINT`.
    Mount,
    /// `sync -f MOUNT_POINT` (syncfs of that filesystem).
    Sync,
    /// `umount MOUNT_POINT`.
    Unmount,
    /// `hdparm -y DEVICE` (STANDBY IMMEDIATE), or `sdparm --command=stop DEVICE`.
    Standby,
}

impl BlockConfig {
    /// The command line of `step`, program first; `None` when the tool has no such step.
    pub fn command_line(&self, step: BlockStep) -> Option<Vec<OsString>> {
        let device = self.device.clone().into_os_string();
        let mount_point = self.mount_point.clone().into_os_string();
        let tools = &self.commands;
        let line = |program: &Path, args: Vec<OsString>| {
            let mut line = vec![program.as_os_str().to_os_string()];
            line.extend(args);
            Some(line)
        };
        let hdparm = self.power_tool == PowerTool::Hdparm;
        match step {
            BlockStep::QueryPower if hdparm => line(&tools.hdparm, vec!["-C".into(), device]),
            BlockStep::QueryPower => None,
            BlockStep::Wake if hdparm => {
                let mut input = OsString::from("if=");
                input.push(&device);
                let args = ["of=/dev/null", "bs=4096", "count=1", "iflag=direct"];
                line(
                    &tools.dd,
                    std::iter::once(input)
                        .chain(args.map(OsString::from))
                        .collect(),
                )
            }
            BlockStep::Wake => line(&tools.sdparm, vec!["--command=start".into(), device]),
            BlockStep::Mount => line(&tools.mount, self.mount_args(device, mount_point)),
            BlockStep::Sync => line(&tools.sync, vec!["-f".into(), mount_point]),
            BlockStep::Unmount => line(&tools.umount, vec![mount_point]),
            BlockStep::Standby if hdparm => line(&tools.hdparm, vec!["-y".into(), device]),
            BlockStep::Standby => line(&tools.sdparm, vec!["--command=stop".into(), device]),
        }
    }

    fn mount_args(&self, device: OsString, mount_point: OsString) -> Vec<OsString> {
        let mut args = Vec::new();
        if let Some(filesystem) = &self.filesystem {
            args.extend(["-t".into(), filesystem.into()]);
        }
        if !self.mount_options.is_empty() {
            args.extend(["-o".into(), self.mount_options.as_str().into()]);
        }
        args.extend([device, mount_point]);
        args
    }
}

/// A block device with a filesystem, driven by hdparm/sdparm and mount. See the module doc.
#[derive(Debug)]
pub struct BlockDisk {
    config: BlockConfig,
    gate: PowerGate,
    files: RwLock<Option<DirectoryFiles>>,
}

impl BlockDisk {
    /// A handle in standby; touches nothing (the first `spin_up` mounts).
    pub fn new(config: BlockConfig) -> BlockDisk {
        BlockDisk {
            gate: PowerGate::new(config.index, PowerState::Standby),
            files: RwLock::new(None),
            config,
        }
    }

    pub fn config(&self) -> &BlockConfig {
        &self.config
    }

    /// Asks the drive for its power state (`hdparm -C`); `Unknown` for sdparm drives.
    pub fn query_power(&self) -> Result<DrivePower, DiskError> {
        let Some(line) = self.config.command_line(BlockStep::QueryPower) else {
            return Ok(DrivePower::Unknown);
        };
        let stdout = self.run(&line)?;
        parse_hdparm_state(&stdout).ok_or_else(|| DiskError::Command {
            disk: self.config.index,
            command: display_line(&line),
            status: "succeeded".to_string(),
            stderr: format!("no drive state in its output: {stdout:?}"),
        })
    }

    /// Runs one command line; returns its stdout.
    fn run(&self, line: &[OsString]) -> Result<String, DiskError> {
        let output = Command::new(&line[0])
            .args(&line[1..])
            .output()
            .map_err(|source| DiskError::Io {
                disk: self.config.index,
                context: format!("starting {}", display_line(line)),
                source,
            })?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(DiskError::Command {
                disk: self.config.index,
                command: display_line(line),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
    }

    fn run_step(&self, step: BlockStep) -> Result<(), DiskError> {
        match self.config.command_line(step) {
            Some(line) => self.run(&line).map(drop),
            None => Ok(()),
        }
    }

    fn is_mounted(&self) -> Result<bool, DiskError> {
        let mut mounts = String::new();
        File::open("/proc/self/mounts")
            .and_then(|mut f| f.read_to_string(&mut mounts))
            .map_err(|source| DiskError::Io {
                disk: self.config.index,
                context: "reading /proc/self/mounts".to_string(),
                source,
            })?;
        Ok(is_mount_point_in(&mounts, &self.config.mount_point))
    }

    /// Wakes the drive if it sleeps and mounts it unless mounted already.
    fn wake_and_mount(&self) -> Result<(), DiskError> {
        let asleep = match self.query_power()? {
            DrivePower::ActiveOrIdle => false,
            DrivePower::Standby | DrivePower::Sleeping | DrivePower::Unknown => true,
        };
        if asleep {
            self.run_step(BlockStep::Wake)?;
        }
        if !self.is_mounted()? {
            self.run_step(BlockStep::Mount)?;
        }
        Ok(())
    }

    fn files(&self) -> std::sync::RwLockReadGuard<'_, Option<DirectoryFiles>> {
        self.files.read().expect("files lock poisoned")
    }

    fn file_op<T>(
        &self,
        op: impl FnOnce(&DirectoryFiles) -> Result<T, DiskError>,
    ) -> Result<T, DiskError> {
        let _admitted = self.gate.admit_io()?;
        let files = self.files();
        let files = files
            .as_ref()
            .expect("an active block disk is mounted (files set before Active)");
        op(files)
    }
}

fn display_line(line: &[OsString]) -> String {
    line.iter()
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

impl Disk for BlockDisk {
    fn index(&self) -> DiskIndex {
        self.config.index
    }

    fn power_state(&self) -> PowerState {
        self.gate.state()
    }

    fn spin_up(&self) -> Result<(), DiskError> {
        self.gate.spin_up(|| {
            self.wake_and_mount()?;
            let mount_point = &self.config.mount_point;
            if mount_point.join(FAILED_MARKER).exists() {
                self.gate.fail();
                return Err(DiskError::Failed {
                    disk: self.config.index,
                });
            }
            let files =
                DirectoryFiles::open(self.config.index, mount_point, self.config.capacity_bytes)?;
            *self.files.write().expect("files lock poisoned") = Some(files);
            Ok(())
        })
    }

    fn spin_down(&self) -> Result<(), DiskError> {
        self.gate.spin_down(
            || *self.files.write().expect("files lock poisoned") = None,
            || {
                self.run_step(BlockStep::Sync)?;
                self.run_step(BlockStep::Unmount)?;
                self.run_step(BlockStep::Standby)
            },
        )
    }

    fn mark_failed(&self) {
        self.gate.fail();
        // Best effort, and only on a mounted filesystem: the marker keeps the disk failed
        // after a restart (spin_up finds it).
        if let Some(files) = self.files().as_ref() {
            let _ = files.write_marker(FAILED_MARKER);
        }
    }

    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.file_op(|files| files.write_file(name, len_bytes, data, overwrite, Hooks::default()))
    }

    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.file_op(|files| files.read_at(name, offset, buffer, Hooks::default()))
    }

    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.file_op(|files| files.file_len(name))
    }

    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.file_op(|files| files.remove_file(name))
    }

    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.file_op(|files| files.list_files())
    }

    fn space(&self) -> Result<Space, DiskError> {
        self.file_op(|files| files.space())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: Option<Vec<OsString>>) -> Vec<String> {
        line.expect("a command")
            .into_iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn hdparm_power_states_are_parsed() {
        let output = |state: &str| format!("\n/dev/sdb:\n drive state is:  {state}\n");
        assert_eq!(
            parse_hdparm_state(&output("standby")),
            Some(DrivePower::Standby)
        );
        assert_eq!(
            parse_hdparm_state(&output("active/idle")),
            Some(DrivePower::ActiveOrIdle)
        );
        assert_eq!(
            parse_hdparm_state(&output("IDLE_A")),
            Some(DrivePower::ActiveOrIdle)
        );
        assert_eq!(
            parse_hdparm_state(&output("sleeping")),
            Some(DrivePower::Sleeping)
        );
        assert_eq!(
            parse_hdparm_state(&output("unknown")),
            Some(DrivePower::Unknown)
        );
        assert_eq!(parse_hdparm_state("/dev/sdb:\n"), None);
        assert_eq!(parse_hdparm_state(""), None);
    }

    #[test]
    fn hdparm_command_lines_name_the_device_and_mount_point() {
        let mut config = BlockConfig::new(4, "/dev/disk/by-id/ata-X", "/srv/spinwise/d4", 1 << 40);
        config.filesystem = Some("xfs".to_string());
        config.commands.hdparm = "/usr/sbin/hdparm".into();
        let line = |step| words(config.command_line(step));
        assert_eq!(
            line(BlockStep::QueryPower),
            ["/usr/sbin/hdparm", "-C", "/dev/disk/by-id/ata-X"]
        );
        assert_eq!(
            line(BlockStep::Wake),
            [
                "dd",
                "if=/dev/disk/by-id/ata-X",
                "of=/dev/null",
                "bs=4096",
                "count=1",
                "iflag=direct"
            ]
        );
        assert_eq!(
            line(BlockStep::Mount),
            [
                "mount",
                "-t",
                "xfs",
                "-o",
                "noatime",
                "/dev/disk/by-id/ata-X",
                "/srv/spinwise/d4"
            ]
        );
        assert_eq!(line(BlockStep::Sync), ["sync", "-f", "/srv/spinwise/d4"]);
        assert_eq!(line(BlockStep::Unmount), ["umount", "/srv/spinwise/d4"]);
        assert_eq!(
            line(BlockStep::Standby),
            ["/usr/sbin/hdparm", "-y", "/dev/disk/by-id/ata-X"]
        );
    }

    #[test]
    fn sdparm_drives_start_and_stop_and_have_no_query() {
        let mut config = BlockConfig::new(0, "/dev/sdc", "/mnt/d0", 1 << 40);
        config.power_tool = PowerTool::Sdparm;
        config.mount_options = String::new();
        assert_eq!(config.command_line(BlockStep::QueryPower), None);
        assert_eq!(
            words(config.command_line(BlockStep::Wake)),
            ["sdparm", "--command=start", "/dev/sdc"]
        );
        assert_eq!(
            words(config.command_line(BlockStep::Standby)),
            ["sdparm", "--command=stop", "/dev/sdc"]
        );
        assert_eq!(
            words(config.command_line(BlockStep::Mount)),
            ["mount", "/dev/sdc", "/mnt/d0"]
        );
    }

    #[test]
    fn mount_points_are_found_in_proc_mounts_with_escapes() {
        let mounts = "/dev/vda / ext4 rw 0 0\n/dev/sdb1 /srv/disk\\040one xfs rw,noatime 0 0\n";
        assert!(is_mount_point_in(mounts, Path::new("/srv/disk one")));
        assert!(is_mount_point_in(mounts, Path::new("/")));
        assert!(!is_mount_point_in(mounts, Path::new("/srv/disk")));
    }
}
