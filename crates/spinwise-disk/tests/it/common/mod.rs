//! Shared by the integration tests: a disk that owns the temporary directory it lives in, so
//! conformance factories can hand out fresh disks that clean up after themselves.

use std::io::Read;

use spinwise_disk::{Disk, DiskError, DiskIndex, Overwrite, PowerState, Space};
use tempfile::TempDir;

pub struct WithTempDir<D> {
    pub disk: D,
    /// Held so the directory lives exactly as long as the disk.
    pub _directory: TempDir,
}

impl<D: Disk> Disk for WithTempDir<D> {
    fn index(&self) -> DiskIndex {
        self.disk.index()
    }
    fn power_state(&self) -> PowerState {
        self.disk.power_state()
    }
    fn spin_up(&self) -> Result<(), DiskError> {
        self.disk.spin_up()
    }
    fn spin_down(&self) -> Result<(), DiskError> {
        self.disk.spin_down()
    }
    fn mark_failed(&self) {
        self.disk.mark_failed()
    }
    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.disk.write_file(name, len_bytes, data, overwrite)
    }
    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.disk.read_at(name, offset, buffer)
    }
    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.disk.file_len(name)
    }
    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.disk.remove_file(name)
    }
    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.disk.list_files()
    }
    fn space(&self) -> Result<Space, DiskError> {
        self.disk.space()
    }
}
